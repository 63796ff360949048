//! A simulated world for the durability gate, the way `lease.rs` is tested with simulated
//! time: the real engine (native) and the real routing and gate code, with clients
//! pipelining writes and reads of a few shared keys, and a fake log that answers the one
//! append in flight after a random delay (so its answers land between arbitrary batches)
//! and acknowledges, rejects, or loses it (landed or not). A refused or lost append is
//! handled as `log_path::log_failed` does: every held reply fails, every client is
//! dropped, and the engine is rebuilt from what the log holds.
//!
//! Checked on every reply released, over many seeds:
//! - no write is answered before the log holds it (each SET writes a value no other
//!   command writes; a released `+OK` names a value the log holds; DEL and FLUSHDB are
//!   counted against the log's DELs and FLUSHDBs),
//! - no read returns a value the log does not hold,
//! - after a refused or lost append, every command not yet answered gets the error and
//!   its connection closes,
//! - and in the end every command got exactly one reply, in order.
//!
//! `MEMORIA_SIM_SEEDS` (default 300) and `MEMORIA_SIM_STEPS` (default 400) size the run.

use std::collections::{HashSet, VecDeque};
use std::time::Instant;

use memoria_core::engine::Engine;
use memoria_core::protocol::batch::{self, BatchWriter, EffectReader};
use memoria_core::protocol::resp::{encode_command, read_command};
use memoria_core::util::Rng;

use super::blocking::Blocking;
use super::gate::Gate;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Outcome {
    Acked,
    /// Refused (a conflict): nothing landed.
    Rejected,
    /// The answer was lost; the entries landed.
    LostLanded,
    /// The answer was lost; nothing landed.
    LostNotLanded,
}

struct Append {
    last_seq: u64,
    entries: Vec<Vec<u8>>,
    due: u32,
    outcome: Outcome,
}

#[derive(Clone, Debug)]
enum Cmd {
    Set(String, String),
    Mset(Vec<(String, String)>),
    Get(String),
    Mget(Vec<String>),
    Del(String),
    Flush,
}

impl Cmd {
    fn argv(&self) -> Vec<String> {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        match self {
            Cmd::Set(k, x) => v(&["SET", k, x]),
            Cmd::Mset(kv) => std::iter::once("MSET".to_string()).chain(kv.iter().flat_map(|(k, x)| [k.clone(), x.clone()])).collect(),
            Cmd::Get(k) => v(&["GET", k]),
            Cmd::Mget(ks) => std::iter::once("MGET".to_string()).chain(ks.iter().cloned()).collect(),
            Cmd::Del(k) => v(&["DEL", k]),
            Cmd::Flush => v(&["FLUSHDB"]),
        }
    }
}

/// A reply, parsed.
#[derive(Debug, PartialEq)]
enum Reply {
    Status(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Reply>),
}

/// Parses one reply off the front of `b`: the reply and its length, or None if incomplete.
fn parse_reply(b: &[u8]) -> Option<(Reply, usize)> {
    let nl = b.windows(2).position(|w| w == b"\r\n")?;
    let line = &b[1..nl];
    let num = || std::str::from_utf8(line).ok()?.parse::<i64>().ok();
    match b[0] {
        b'+' => Some((Reply::Status(line.to_vec()), nl + 2)),
        b'-' => Some((Reply::Error(line.to_vec()), nl + 2)),
        b':' => Some((Reply::Int(num()?), nl + 2)),
        b'$' => {
            let n = num()?;
            if n < 0 {
                return Some((Reply::Bulk(None), nl + 2));
            }
            let end = nl + 2 + n as usize;
            (b.len() >= end + 2).then(|| (Reply::Bulk(Some(b[nl + 2..end].to_vec())), end + 2))
        }
        b'*' => {
            let mut at = nl + 2;
            let mut items = Vec::new();
            for _ in 0..num()? {
                let (r, n) = parse_reply(&b[at..])?;
                items.push(r);
                at += n;
            }
            Some((Reply::Array(items), at))
        }
        other => panic!("not a RESP reply: byte {other}"),
    }
}

struct Client {
    id: u64,
    /// Commands sent and not yet answered, in order.
    sent: VecDeque<Cmd>,
    /// Released bytes not yet parsed into whole replies.
    buf: Vec<u8>,
}

/// What the log holds: the effects of every entry that landed.
#[derive(Default)]
struct LogModel {
    entries: Vec<Vec<u8>>,
    /// Every argument of every effect (values are unique: a value here is durable).
    values: HashSet<Vec<u8>>,
    dels: usize,
    flushes: usize,
}

impl LogModel {
    fn land(&mut self, entries: &[Vec<u8>]) {
        for e in entries {
            let mut args = Vec::new();
            for fx in EffectReader::new(e) {
                args.clear();
                read_command(fx.command, &mut args).expect("effects are RESP");
                let argv: Vec<&[u8]> = args.iter().map(|&(a, b)| &fx.command[a..b]).collect();
                match argv[0].to_ascii_uppercase().as_slice() {
                    b"DEL" | b"UNLINK" => self.dels += 1,
                    b"FLUSHDB" | b"FLUSHALL" => self.flushes += 1,
                    _ => {}
                }
                self.values.extend(argv[1..].iter().map(|a| a.to_vec()));
            }
            self.entries.push(e.clone());
        }
    }
}

const KEYS: u64 = 6;
const FAILED: &[u8] = b"ERR write not durable: the log refused it (simulated); reconnect and retry";

struct World {
    rng: Rng,
    engine: Engine,
    gate: Gate,
    blocking: Blocking,
    log: LogModel,
    inflight: Option<Append>,
    step: u32,
    now_us: i64,
    clients: Vec<Client>,
    next_id: u64,
    next_value: u64,
    /// Connections opened since the last batch (REC_CONNECT goes in the next one).
    connecting: Vec<u64>,
    /// Successful DEL (n > 0) and FLUSHDB replies released so far.
    dels_answered: usize,
    flushes_answered: usize,
    /// Replies checked, failures seen (to show the run exercised something).
    replies: usize,
    failures: usize,
}

impl World {
    fn new(seed: u64, clients: usize) -> World {
        let mut w = World {
            rng: Rng::new(seed),
            engine: Engine::new(seed),
            gate: Gate::new(memoria_core::commands::table::index(), Instant::now()),
            blocking: Blocking::new(),
            log: LogModel::default(),
            inflight: None,
            step: 0,
            now_us: 1_700_000_000_000_000,
            clients: Vec::new(),
            next_id: 1,
            next_value: 0,
            connecting: Vec::new(),
            dels_answered: 0,
            flushes_answered: 0,
            replies: 0,
            failures: 0,
        };
        for _ in 0..clients {
            w.connect();
        }
        w
    }

    fn connect(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        self.clients.push(Client { id, sent: VecDeque::new(), buf: Vec::new() });
        self.connecting.push(id);
    }

    fn key(&mut self) -> String {
        format!("k{}", self.rng.below(KEYS))
    }

    fn value(&mut self) -> String {
        self.next_value += 1;
        format!("v{}", self.next_value)
    }

    fn random_cmd(&mut self) -> Cmd {
        match self.rng.below(100) {
            0..35 => {
                let (k, v) = (self.key(), self.value());
                Cmd::Set(k, v)
            }
            35..42 => {
                let n = 2 + self.rng.below(2);
                Cmd::Mset((0..n).map(|_| (self.key(), self.value())).collect())
            }
            42..80 => Cmd::Get(self.key()),
            80..90 => {
                let n = 2 + self.rng.below(3);
                Cmd::Mget((0..n).map(|_| self.key()).collect())
            }
            90..98 => Cmd::Del(self.key()),
            _ => Cmd::Flush,
        }
    }

    /// Some clients send a few commands each; the engine runs them as one batch.
    fn run_batch(&mut self) {
        let n = self.clients.len() as u64;
        let mut cmds = Vec::new();
        for _ in 0..1 + self.rng.below(n) {
            let c = self.rng.below(n) as usize;
            for _ in 0..1 + self.rng.below(4) {
                cmds.push((self.clients[c].id, self.random_cmd()));
            }
        }
        self.send(cmds);
    }

    /// Runs `cmds` (client id, command) as one batch and routes the output.
    fn send(&mut self, cmds: Vec<(u64, Cmd)>) {
        let mut b = BatchWriter::new();
        for id in std::mem::take(&mut self.connecting) {
            b.record(batch::REC_CONNECT, id, b"127.0.0.1:1\n127.0.0.1:6379");
        }
        for (id, cmd) in cmds {
            let argv = cmd.argv();
            let argv: Vec<&str> = argv.iter().map(|s| s.as_str()).collect();
            b.begin(batch::REC_COMMAND, id);
            encode_command(&mut b.buf, &argv);
            b.end();
            self.clients.iter_mut().find(|c| c.id == id).expect("a connected client").sent.push_back(cmd);
        }
        self.now_us += 1000;
        let out = self.engine.execute(&b.buf, self.now_us, self.rng.next_u64());
        let routed = self.gate.route(&b.buf, &out, true, &mut self.blocking, |_| true);
        assert!(routed.config.is_empty() && routed.failovers.is_empty() && routed.dropped.is_empty() && routed.waits.is_empty());
    }

    /// Group commit: everything queued goes out as the next append, if none is in flight.
    fn start_append(&mut self) {
        if self.inflight.is_some() {
            return;
        }
        let Some((last_seq, entries)) = self.gate.take_append() else { return };
        let outcome = match self.rng.below(100) {
            0..4 => Outcome::Rejected,
            4..6 => Outcome::LostLanded,
            6..8 => Outcome::LostNotLanded,
            _ => Outcome::Acked,
        };
        let due = self.step + self.rng.below(6) as u32;
        self.inflight = Some(Append { last_seq, entries, due, outcome });
    }

    /// The log answers the append in flight, if it is due.
    fn log_answers(&mut self, force_ack: bool) {
        let Some(a) = self.inflight.as_ref() else { return };
        if a.due > self.step && !force_ack {
            return;
        }
        let a = self.inflight.take().expect("checked");
        let outcome = if force_ack { Outcome::Acked } else { a.outcome };
        match outcome {
            Outcome::Acked => {
                self.log.land(&a.entries);
                assert!(self.gate.ack(a.last_seq).is_empty(), "no WAIT in this world");
            }
            Outcome::LostLanded => {
                self.log.land(&a.entries);
                self.log_failed();
            }
            Outcome::Rejected | Outcome::LostNotLanded => self.log_failed(),
        }
    }

    /// As `log_path::log_failed`: fail every held reply, drop every client, rebuild the
    /// engine from the log.
    fn log_failed(&mut self) {
        self.failures += 1;
        let msg = [b"-", FAILED, b"\r\n"].concat();
        let ids: Vec<u64> = self.clients.iter().map(|c| c.id).collect();
        self.gate.fail_all(&msg, ids.into_iter());
        self.deliver();
        assert!(self.clients.is_empty(), "every client was closed");
        self.engine = Engine::new(self.rng.next_u64());
        for e in &self.log.entries {
            self.engine.apply(e, self.now_us).expect("the log's effects apply");
        }
        for _ in 0..2 + self.rng.below(3) {
            self.connect();
        }
    }

    /// Hands what the gate released to the clients and checks every reply.
    fn deliver(&mut self) {
        let out: Vec<(u64, super::ReplyMsg)> = self.gate.take_out().collect();
        for (id, m) in out {
            let Some(at) = self.clients.iter().position(|c| c.id == id) else { panic!("reply for unknown client {id}") };
            self.clients[at].buf.extend_from_slice(&m.data);
            let mut answered = 0;
            while let Some((reply, n)) = parse_reply(&self.clients[at].buf) {
                self.clients[at].buf.drain(..n);
                let cmd = self.clients[at].sent.pop_front().unwrap_or_else(|| panic!("client {id}: a reply for no command: {reply:?}"));
                self.check(&cmd, &reply);
                answered += 1;
            }
            assert!(self.clients[at].buf.is_empty(), "client {id}: a partial reply was released");
            assert_eq!(answered, m.answered, "client {id}: `answered` disagrees with the replies");
            if m.close {
                assert!(self.clients[at].sent.is_empty(), "client {id} closed with commands unanswered");
                self.clients.remove(at);
            }
        }
    }

    fn durable(&self, v: &[u8]) -> bool {
        self.log.values.contains(v)
    }

    fn check(&mut self, cmd: &Cmd, reply: &Reply) {
        self.replies += 1;
        if let Reply::Error(e) = reply {
            assert_eq!(e.as_slice(), FAILED, "{cmd:?}: unexpected error");
            return;
        }
        match (cmd, reply) {
            (Cmd::Set(_, v), Reply::Status(s)) => {
                assert_eq!(s, b"OK");
                assert!(self.durable(v.as_bytes()), "SET {v} answered before the log held it");
            }
            (Cmd::Mset(kv), Reply::Status(_)) => {
                for (_, v) in kv {
                    assert!(self.durable(v.as_bytes()), "MSET {v} answered before the log held it");
                }
            }
            (Cmd::Get(_), Reply::Bulk(v)) => {
                if let Some(v) = v {
                    assert!(self.durable(v), "GET answered {} before the log held it", String::from_utf8_lossy(v));
                }
            }
            (Cmd::Mget(_), Reply::Array(items)) => {
                for it in items {
                    if let Reply::Bulk(Some(v)) = it {
                        assert!(self.durable(v), "MGET answered {} before the log held it", String::from_utf8_lossy(v));
                    }
                }
            }
            (Cmd::Del(_), Reply::Int(n)) => {
                if *n > 0 {
                    self.dels_answered += 1;
                    assert!(self.dels_answered <= self.log.dels, "a DEL answered before the log held it");
                }
            }
            (Cmd::Flush, Reply::Status(_)) => {
                self.flushes_answered += 1;
                assert!(self.flushes_answered <= self.log.flushes, "a FLUSHDB answered before the log held it");
            }
            (cmd, reply) => panic!("{cmd:?}: unexpected reply {reply:?}"),
        }
    }
}

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn run(seed: u64, steps: u32) -> (usize, usize) {
    let mut w = World::new(seed, 1 + (seed % 4) as usize);
    while w.step < steps {
        w.step += 1;
        // Client traffic and the log's answers interleave in a seeded order.
        if w.rng.below(100) < 60 {
            w.run_batch();
        }
        w.log_answers(false);
        w.start_append();
        w.deliver();
        if w.clients.is_empty() {
            w.connect();
        }
    }
    // The log recovers: everything still pending lands, and every command is answered.
    while w.inflight.is_some() || w.gate.has_queued() {
        w.start_append();
        w.log_answers(true);
        w.deliver();
    }
    for c in &w.clients {
        assert!(c.sent.is_empty(), "seed {seed}: client {} has {} commands never answered", c.id, c.sent.len());
    }
    (w.replies, w.failures)
}

#[test]
fn no_reply_leaves_before_the_log_holds_what_it_shows() {
    let seeds = knob("MEMORIA_SIM_SEEDS", 300);
    let steps = knob("MEMORIA_SIM_STEPS", 400) as u32;
    let (mut replies, mut failures) = (0, 0);
    for seed in 0..seeds {
        let (r, f) =
            std::panic::catch_unwind(|| run(seed, steps)).unwrap_or_else(|_| panic!("seed {seed} failed (MEMORIA_SIM_SEEDS, MEMORIA_SIM_STEPS size the run)"));
        replies += r;
        failures += f;
    }
    // The run exercised both paths: many replies, and refused or lost appends.
    assert!(replies > seeds as usize * 100, "only {replies} replies checked");
    assert!(failures > seeds as usize / 2, "only {failures} refused or lost appends");
}

#[test]
fn a_read_of_an_unacknowledged_write_is_held() {
    let mut w = World::new(7, 2);
    let (a, b) = (w.clients[0].id, w.clients[1].id);
    w.send(vec![(a, Cmd::Set("k".into(), "v1".into())), (b, Cmd::Get("k".into())), (b, Cmd::Get("other".into()))]);
    // Nothing may leave but the connect answers (no reply in them: they tell each
    // connection it may frame): the SET is not durable, the GET saw it, and b's second
    // reply stays behind its first.
    let out: Vec<_> = w.gate.take_out().collect();
    assert!(out.iter().all(|(_, m)| m.answered == 0 && m.data.is_empty() && !m.auth_required), "only connect answers: {}", out.len());
    assert_eq!(out.len(), 2);
    let (seq, entries) = w.gate.take_append().expect("the SET's effects are queued");
    w.log.land(&entries);
    w.gate.ack(seq);
    w.deliver();
    assert!(w.clients.iter().all(|c| c.sent.is_empty()), "everything answered once the log acknowledged");
}

#[test]
fn a_refused_append_fails_every_held_command() {
    let mut w = World::new(9, 1);
    let id = w.clients[0].id;
    w.send(vec![(id, Cmd::Set("k".into(), "v1".into())), (id, Cmd::Get("k".into()))]);
    w.gate.take_append().expect("queued");
    let failures_before = w.replies;
    w.log_failed();
    assert_eq!(w.replies - failures_before, 2, "both held commands were answered (with the error)");
    assert!(!w.clients.iter().any(|c| c.id == id), "the client was closed");
    let mut e = Engine::new(1);
    for x in &w.log.entries {
        e.apply(x, w.now_us).expect("apply");
    }
    assert_eq!(e.total_keys(), 0, "nothing of the refused append is in the rebuilt engine");
}
