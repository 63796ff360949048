//! Randomized simulation: three nodes, one log with conditional append, simulated real
//! time in ms, a local clock per node with an offset and a rate drift within the bound,
//! and injected faults: random delays (some far longer than the lease), lost requests and
//! responses (appends that land with the writer never told), freezes (SIGSTOP: the clock
//! runs on, the process hears nothing) and partitions from the log.
//!
//! Invariants, checked at every simulated ms:
//! * at most one node can serve reads / acknowledge writes;
//! * a node that can serve leads the newest epoch in the log (no claim landed after its
//!   own), so it never serves a stale read;
//! * a write is acknowledged to a client only while its primary leads the newest epoch
//!   (never after a new leader's claim);
//! * an epoch has at most one primary, claims raise the epoch, and epochs in the log never
//!   go down.
//!
//! And liveness: once the faults stop, some node leads within a few backoffs.

use std::collections::{BTreeMap, HashMap, HashSet};

use proptest::prelude::*;

use super::super::*;

pub const N: usize = 3;
const LEASE: u64 = 300;
/// 5% drift: far worse than real clocks, to stress the bound.
const DRIFT: u32 = 50_000;
const FAULTS_END: u64 = 8_000;
const END: u64 = 12_000;
/// A node gives up on an append after this long (real ms) and reports it failed; the
/// request may still land later.
const TIMEOUT: u64 = 150;

/// The tightest safe configuration.
pub fn sim_config() -> Config {
    let mut c = Config::with_drift(LEASE, DRIFT);
    c.backoff_ms = Config::min_backoff_ms(LEASE, DRIFT);
    c
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    Freeze,
    Partition,
}

#[derive(Clone, Copy, Debug)]
pub struct Fault {
    pub node: usize,
    pub kind: FaultKind,
    pub start: u64,
    pub len: u64,
}

#[derive(Clone, Debug)]
pub struct Params {
    pub drift_ppm: [i64; N],
    pub offset: [u64; N],
    pub tick_every: [u64; N],
    /// Whether the node keeps tailing the log while it is primary.
    pub primary_tails: [bool; N],
    pub max_delay: u64,
    pub slow_pct: u64,
    pub slow_delay: u64,
    pub drop_pct: u64,
    pub read_delay: u64,
    pub write_pct: u64,
    pub faults: Vec<Fault>,
    pub seed: u64,
}

#[derive(Default, Debug, Clone)]
pub struct Stats {
    pub elections: u64,
    pub deposed: u64,
    pub expired: u64,
    pub claims_lost: u64,
    pub write_acks: u64,
    pub late_acks_refused: u64,
    pub entries: u64,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    fn pct(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
}

struct LogEntry {
    epoch: u64,
    kind: EntryKind,
    lease_ms: Option<u64>,
    visible: [u64; N],
}

#[derive(Clone, Copy)]
struct Append {
    node: usize,
    token: AppendToken,
    prev_id: u64,
    epoch: u64,
    kind: EntryKind,
    lease_ms: Option<u64>,
}

enum Msg {
    /// An append reaches the log.
    Arrive { append: Append, resp_delay: Option<u64> },
    /// The log's answer reaches the node.
    Response { node: usize, ev: Event },
    /// The node's append timer fires.
    Timeout { node: usize, token: AppendToken },
}

struct Node {
    sm: Lease,
    cursor: u64,
    pending: HashSet<AppendToken>,
    data_tokens: HashSet<AppendToken>,
}

struct Sim<'a> {
    p: &'a Params,
    t: u64,
    rng: Rng,
    log: Vec<LogEntry>,
    max_epoch: u64,
    nodes: Vec<Node>,
    queue: BTreeMap<(u64, u64), Msg>,
    seq: u64,
    primaries: HashMap<u64, usize>,
    stats: Stats,
}

impl Sim<'_> {
    fn local(&self, node: usize, t: u64) -> u64 {
        let rate = 1_000_000i128 + self.p.drift_ppm[node] as i128;
        self.p.offset[node] + (t as i128 * rate / 1_000_000) as u64
    }

    fn in_fault(&self, node: usize, kind: FaultKind, t: u64) -> Option<u64> {
        self.p.faults.iter().filter(|f| f.node == node && f.kind == kind && f.start <= t && t < f.start + f.len).map(|f| f.start + f.len).max()
    }

    fn frozen_until(&self, node: usize, t: u64) -> Option<u64> {
        // Overlapping freezes chain.
        let mut end = self.in_fault(node, FaultKind::Freeze, t)?;
        while let Some(e) = self.in_fault(node, FaultKind::Freeze, end) {
            end = e;
        }
        Some(end)
    }

    fn partitioned(&self, node: usize, t: u64) -> bool {
        self.in_fault(node, FaultKind::Partition, t).is_some()
    }

    fn schedule(&mut self, at: u64, msg: Msg) {
        self.seq += 1;
        self.queue.insert((at, self.seq), msg);
    }

    fn delay(&mut self) -> u64 {
        if self.t < FAULTS_END && self.rng.pct(self.p.slow_pct) { self.rng.below(self.p.slow_delay + 1) } else { self.rng.below(self.p.max_delay + 1) }
    }

    fn dropped(&mut self) -> bool {
        self.t < FAULTS_END && self.rng.pct(self.p.drop_pct)
    }

    fn send(&mut self, node: usize, token: AppendToken, prev_id: u64, epoch: u64, kind: EntryKind, lease_ms: Option<u64>) {
        self.nodes[node].pending.insert(token);
        self.schedule(self.t + TIMEOUT, Msg::Timeout { node, token });
        if self.partitioned(node, self.t) || self.dropped() {
            return;
        }
        let arrive = self.t + self.delay();
        let resp_delay = if self.dropped() { None } else { Some(self.delay()) };
        let append = Append { node, token, prev_id, epoch, kind, lease_ms };
        self.schedule(arrive, Msg::Arrive { append, resp_delay });
    }

    fn perform(&mut self, node: usize, actions: Vec<Action>) -> Result<(), String> {
        for a in actions {
            match a {
                Action::AppendRenewal { token, prev_id, epoch, lease_ms } => self.send(node, token, prev_id, epoch, EntryKind::LeaseRenewal, Some(lease_ms)),
                Action::AppendClaim { token, prev_id, epoch, lease_ms } => self.send(node, token, prev_id, epoch, EntryKind::LeaderClaim, Some(lease_ms)),
                Action::BecomePrimary { epoch, last_id } => {
                    self.stats.elections += 1;
                    if let Some(other) = self.primaries.insert(epoch, node) {
                        return Err(format!("t={}: epoch {epoch} has two primaries: {other} and {node}", self.t));
                    }
                    if epoch != self.max_epoch {
                        return Err(format!("t={}: node {node} became primary of {epoch}, log is at {}", self.t, self.max_epoch));
                    }
                    // A primary appends from last_id; tailing (if it does) goes on from there.
                    self.nodes[node].cursor = self.nodes[node].cursor.max(last_id + 1);
                }
                Action::StepDown { reason, resume_after } => {
                    match reason {
                        StepDownReason::Deposed => self.stats.deposed += 1,
                        StepDownReason::LeaseExpired => self.stats.expired += 1,
                        StepDownReason::FormatTooNew | StepDownReason::Resigned => {}
                    }
                    self.nodes[node].cursor = resume_after + 1;
                }
                Action::ClaimLost { resume_after } => {
                    self.stats.claims_lost += 1;
                    self.nodes[node].cursor = resume_after + 1;
                }
                Action::ServeReads(_) | Action::Stopped => {}
            }
        }
        Ok(())
    }

    fn deliver(&mut self, node: usize, ev: Event) -> Result<(), String> {
        let (token, acked) = match ev {
            Event::AppendAcked { token, .. } => (Some(token), true),
            Event::AppendRejected { token, .. } | Event::AppendFailed { token, .. } => (Some(token), false),
            _ => (None, false),
        };
        if let Some(token) = token {
            // Exactly one outcome per append: whichever of answer and timeout comes first.
            if !self.nodes[node].pending.remove(&token) {
                return Ok(());
            }
        }
        let actions = self.nodes[node].sm.handle(ev);
        self.perform(node, actions)?;
        if let Some(token) = token
            && self.nodes[node].data_tokens.remove(&token)
            && acked
        {
            let now = ev.now_ms();
            if self.nodes[node].sm.can_ack_writes(now) {
                self.stats.write_acks += 1;
                let e = self.nodes[node].sm.epoch();
                if e != self.max_epoch {
                    return Err(format!("t={}: node {node} (epoch {e}) acked a write after the claim of epoch {}", self.t, self.max_epoch));
                }
            } else {
                self.stats.late_acks_refused += 1;
            }
        }
        Ok(())
    }

    fn arrive(&mut self, a: Append, resp_delay: Option<u64>) -> Result<(), String> {
        let Append { node, token, prev_id, epoch, kind, lease_ms } = a;
        let tail = self.log.len() as u64;
        let ev = if prev_id == tail {
            if epoch < self.max_epoch || (kind == EntryKind::LeaderClaim && epoch == self.max_epoch) {
                return Err(format!("t={}: node {node} appended {kind:?} of epoch {epoch} after epoch {}", self.t, self.max_epoch));
            }
            self.max_epoch = epoch;
            let mut visible = [0; N];
            for v in &mut visible {
                *v = self.t + self.rng.below(self.p.read_delay + 1);
            }
            self.log.push(LogEntry { epoch, kind, lease_ms, visible });
            self.stats.entries += 1;
            Event::AppendAcked { token, last_id: tail + 1, now_ms: 0 }
        } else {
            Event::AppendRejected { token, tail_id: tail, tail_epoch: self.max_epoch, now_ms: 0 }
        };
        if let Some(d) = resp_delay {
            self.schedule(self.t + d, Msg::Response { node, ev });
        }
        Ok(())
    }

    fn step(&mut self) -> Result<(), String> {
        let t = self.t;
        // Messages due now, in order; those for a frozen node wait for it to thaw.
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 > t {
                break;
            }
            let msg = entry.remove();
            let node = match &msg {
                Msg::Arrive { .. } => None,
                Msg::Response { node, .. } | Msg::Timeout { node, .. } => Some(*node),
            };
            if let Some(n) = node
                && let Some(until) = self.frozen_until(n, t)
            {
                self.schedule(until, msg);
                continue;
            }
            match msg {
                Msg::Arrive { append, resp_delay } => self.arrive(append, resp_delay)?,
                Msg::Response { node, ev } => {
                    if self.partitioned(node, t) {
                        continue; // lost; the timeout will report it
                    }
                    let now = self.local(node, t);
                    let ev = match ev {
                        Event::AppendAcked { token, last_id, .. } => Event::AppendAcked { token, last_id, now_ms: now },
                        Event::AppendRejected { token, tail_id, tail_epoch, .. } => Event::AppendRejected { token, tail_id, tail_epoch, now_ms: now },
                        other => other,
                    };
                    self.deliver(node, ev)?;
                }
                Msg::Timeout { node, token } => {
                    let now = self.local(node, t);
                    self.deliver(node, Event::AppendFailed { token, now_ms: now })?;
                }
            }
        }
        for node in 0..N {
            if self.frozen_until(node, t).is_some() {
                continue;
            }
            let now = self.local(node, t);
            let partitioned = self.partitioned(node, t);
            let tails = self.nodes[node].sm.role() != Role::Primary || self.p.primary_tails[node];
            // Tail reads: entries in order, each once it is visible to this node.
            if !partitioned && tails {
                loop {
                    let c = self.nodes[node].cursor;
                    let Some(e) = self.log.get(c as usize - 1) else { break };
                    if e.visible[node] > t {
                        break;
                    }
                    let ev = Event::EntryRead { id: c, epoch: e.epoch, kind: e.kind, lease_ms: e.lease_ms, at_tail: c == self.log.len() as u64, now_ms: now };
                    self.nodes[node].cursor = c + 1;
                    self.deliver(node, ev)?;
                    if self.nodes[node].sm.role() == Role::Primary && !self.p.primary_tails[node] {
                        break;
                    }
                }
            }
            if !t.is_multiple_of(self.p.tick_every[node]) {
                continue;
            }
            self.deliver(node, Event::Tick { now_ms: now })?;
            let c = self.nodes[node].cursor;
            let nothing_visible = self.log.get(c as usize - 1).is_none_or(|e| e.visible[node] > t);
            if !partitioned && nothing_visible && self.nodes[node].sm.role() != Role::Primary {
                // An empty long-poll: the tail as this node can see it.
                self.deliver(node, Event::TailReached { tail_id: c - 1, now_ms: now })?;
            }
            if self.rng.pct(self.p.write_pct)
                && let Some(a) = self.nodes[node].sm.start_data_append(now)
            {
                self.nodes[node].data_tokens.insert(a.token);
                self.send(node, a.token, a.prev_id, a.epoch, EntryKind::Data, None);
            }
        }
        self.check()
    }

    fn check(&self) -> Result<(), String> {
        let mut serving = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let now = self.local(i, self.t);
            let s = n.sm.can_serve_reads(now);
            if s != n.sm.can_ack_writes(now) {
                return Err(format!("t={}: node {i}: reads and writes disagree", self.t));
            }
            if s {
                serving.push(i);
                if n.sm.epoch() != self.max_epoch {
                    return Err(format!("t={}: node {i} serves as epoch {} but the log has a claim of epoch {}", self.t, n.sm.epoch(), self.max_epoch));
                }
            }
        }
        if serving.len() > 1 {
            return Err(format!("t={}: nodes {serving:?} serve at once", self.t));
        }
        Ok(())
    }
}

/// Runs one schedule. `Err` describes the first invariant broken.
pub fn run(p: &Params, cfg: Config) -> Result<Stats, String> {
    let nodes = (0..N)
        .map(|i| Node { sm: Lease::unchecked(cfg.clone(), p.offset[i], 0, 0), cursor: 1, pending: HashSet::new(), data_tokens: HashSet::new() })
        .collect();
    let mut sim = Sim {
        p,
        t: 0,
        rng: Rng(p.seed),
        log: Vec::new(),
        max_epoch: 0,
        nodes,
        queue: BTreeMap::new(),
        seq: 0,
        primaries: HashMap::new(),
        stats: Stats::default(),
    };
    let mut last_leader = 0;
    while sim.t < END {
        sim.step()?;
        if sim.nodes.iter().enumerate().any(|(i, n)| n.sm.can_serve_reads(sim.local(i, sim.t))) {
            last_leader = sim.t;
        }
        sim.t += 1;
    }
    // Liveness: quiet since FAULTS_END (slow messages sent before it are at most
    // slow_delay late), so a leader must have emerged and held by the end.
    if last_leader + 1 < END {
        return Err(format!("no leader at the end (last at {last_leader}); stats {:?}", sim.stats));
    }
    Ok(sim.stats)
}

const MAXP: i64 = DRIFT as i64;

fn fault() -> impl Strategy<Value = Fault> {
    (0..N, prop_oneof![Just(FaultKind::Freeze), Just(FaultKind::Partition)], 0u64..FAULTS_END, 1u64..1500).prop_map(|(node, kind, start, len)| Fault {
        node,
        kind,
        start,
        len: len.min(FAULTS_END - start),
    })
}

pub fn params() -> impl Strategy<Value = Params> {
    (
        prop::array::uniform3(prop_oneof![Just(-MAXP), Just(MAXP), -MAXP..=MAXP]),
        prop::array::uniform3(0u64..1_000_000_000),
        prop::array::uniform3(prop_oneof![Just(1u64), 1u64..=25]),
        prop::array::uniform3(any::<bool>()),
        (0u64..=20, 0u64..=10, 0u64..=3 * LEASE, 0u64..=25, 0u64..=30, 0u64..=80),
        prop::collection::vec(fault(), 0..8),
        any::<u64>(),
    )
        .prop_map(|(drift_ppm, offset, tick_every, primary_tails, (max_delay, slow_pct, slow_delay, drop_pct, read_delay, write_pct), faults, seed)| {
            Params { drift_ppm, offset, tick_every, primary_tails, max_delay, slow_pct, slow_delay, drop_pct, read_delay, write_pct, faults, seed }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn no_two_nodes_ever_serve_at_once(p in params()) {
        if let Err(e) = run(&p, sim_config()) {
            prop_assert!(false, "{e}\n{p:#?}");
        }
    }
}

/// Fixed schedules from a seed, for the exploration and mutation checks.
fn seeded(seed: u64) -> Params {
    let mut r = Rng(seed);
    let mut drift = [0i64; N];
    for d in &mut drift {
        *d = match r.below(3) {
            0 => -MAXP,
            1 => MAXP,
            _ => r.below(2 * MAXP as u64 + 1) as i64 - MAXP,
        };
    }
    let faults = (0..r.below(8))
        .map(|_| {
            let start = r.below(FAULTS_END);
            Fault {
                node: r.below(N as u64) as usize,
                kind: if r.pct(50) { FaultKind::Freeze } else { FaultKind::Partition },
                start,
                len: (1 + r.below(1500)).min(FAULTS_END - start),
            }
        })
        .collect();
    Params {
        drift_ppm: drift,
        offset: [r.below(1 << 30), r.below(1 << 30), r.below(1 << 30)],
        tick_every: [1 + r.below(10), 1 + r.below(10), 1 + r.below(10)],
        primary_tails: [r.pct(50), r.pct(50), r.pct(50)],
        max_delay: r.below(21),
        slow_pct: r.below(11),
        slow_delay: r.below(3 * LEASE + 1),
        drop_pct: r.below(26),
        read_delay: r.below(31),
        write_pct: r.below(81),
        faults,
        seed: r.next(),
    }
}

#[test]
fn the_simulation_exercises_failovers() {
    let mut total = Stats::default();
    for seed in 0..40 {
        let s = run(&seeded(seed), sim_config()).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        total.elections += s.elections;
        total.deposed += s.deposed;
        total.expired += s.expired;
        total.claims_lost += s.claims_lost;
        total.write_acks += s.write_acks;
        total.late_acks_refused += s.late_acks_refused;
        total.entries += s.entries;
    }
    eprintln!("{total:?}");
    assert!(total.elections > 80, "{total:?}");
    assert!(total.deposed > 0 && total.expired > 0 && total.claims_lost > 0, "{total:?}");
    assert!(total.write_acks > 1000 && total.late_acks_refused > 0, "{total:?}");
}

#[test]
fn the_simulation_catches_a_backoff_that_ignores_drift() {
    // Mutation check: a backoff just over the lease (what a design without the drift
    // bound would pick) must be caught by the same invariants on some schedule.
    let mut bad = sim_config();
    bad.backoff_ms = LEASE + 2;
    let caught = (0..300).find_map(|seed| run(&seeded(seed), bad.clone()).err());
    let msg = caught.expect("a backoff that ignores clock drift went unnoticed");
    assert!(msg.contains("serve") || msg.contains("acked"), "{msg}");
}
