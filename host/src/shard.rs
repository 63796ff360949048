//! The shard task: owns one engine instance, drains everything queued by all clients
//! and makes ONE engine call per batch, then routes the replies back.
//!
//! With a log, it is also the write-behind logger: the effects of each batch are appended
//! (one append in flight; whatever arrives meanwhile goes into the next one), a write's
//! reply is held until its append is acknowledged, and the tracker holds back replies
//! that observed a write not yet durable.
//!
//! It runs on the same single-threaded runtime as its connections (like Redis's event
//! loop): handing commands over is a queue push, not a cross-thread wake-up.
//!
//! With an [`Election`] (automatic failover), leadership follows the pure lease machine in
//! [`crate::lease`]: every node starts as a replica tailing the log, claims the shard when
//! the machine says the old primary's lease has surely run out, renews its lease every
//! lease/3 as primary (data appends count as renewals; one append in flight in all), stops
//! serving when the lease lapses, and steps down to a replica, rebuilt from the log, when
//! an append of its is rejected. Without one (`memoria up`, a single node), the primary
//! leads forever and a refused append rebuilds the engine and re-claims, as before.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memoria_core::protocol::batch::{self, BatchReader, BatchWriter, EffectReader, OutputReader};
use memoria_core::server::spec::{CommandIndex, flags};
use memoria_log::{Appended, Kind, LeasePayload, LogApi, LogError, LogHandle, NewEntry};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, WeakUnboundedSender, unbounded_channel};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::blocking::Blocking;
use crate::clock::{now_us, seed};
use crate::durable::{self, ShardLog};
use crate::lease::{self, Action, AppendToken, EntryKind, Event, Lease, StepDownReason};
use crate::limits::HostLimits;
use crate::snapshot::SnapshotStore;
use crate::tracker::Tracker;
use crate::wasm::{EngineFactory, ShardEngine};

/// Replies for one connection, in order.
pub struct ReplyMsg {
    pub data: Vec<u8>,
    /// Close the connection after writing `data` (QUIT, engine crash, lost log).
    pub close: bool,
    /// How many commands these replies answer (flow control on the connection).
    pub answered: usize,
    /// The client is subscribed (pub/sub output limits, no idle timeout).
    pub pubsub: bool,
}

impl ReplyMsg {
    fn extend(&mut self, data: &[u8], close: bool, answered: usize) {
        self.data.extend_from_slice(data);
        self.close |= close;
        self.answered += answered;
    }
}

pub enum ShardMsg {
    Connect {
        id: u64,
        addr: String,
        laddr: String,
        tx: UnboundedSender<ReplyMsg>,
    },
    /// Batch records (kind REC_COMMAND) already framed and validated by the connection.
    Commands {
        id: u64,
        records: Vec<u8>,
    },
    Disconnect {
        id: u64,
    },
    /// The client closed its side while commands were in flight (a blocked one is dropped).
    Eof {
        id: u64,
    },
    /// Replicas: one read of the shard's log by tail task `gen`: its entries, in order
    /// (none when a long poll found nothing new), and the log's tail id at that read.
    /// `applied` is answered once they are in the engine: the tail task reads on only
    /// then, so the position it reports to the log service is what this node has applied.
    Apply {
        generation: u64,
        entries: Vec<memoria_log::Entry>,
        tail_id: u64,
        applied: Option<oneshot::Sender<()>>,
    },
    /// Replicas: tail task `generation` found the entries it needs truncated away; the
    /// engine is reloaded from the newest snapshot and the log after it.
    Reload {
        generation: u64,
    },
    /// A WAIT of `client` found `count` replicas.
    WaitDone {
        client: u64,
        token: u64,
        count: i64,
    },
    /// Cluster mode: the nodes tailing the shard's log, as the log service saw them.
    Peers(Vec<memoria_log::ReaderInfo>),
    /// Test hook: the shard stops (like a SIGSTOP'd process) until `until` resolves or is
    /// dropped. Its append and tail tasks keep running; it sees their results on resuming.
    #[doc(hidden)]
    Freeze {
        until: oneshot::Receiver<()>,
    },
    Shutdown,
}

/// How this shard node relates to its log.
pub enum Role {
    /// Writes, appending effects to the log (or keeping them in memory without one).
    Primary(Option<ShardLog>),
    /// Applies the log `name` written by the primary named `primary`; `applied` is the
    /// last id already in the engine. The shard tails the log from there itself.
    Replica { primary: String, applied: u64, api: LogHandle, name: String },
}

/// Automatic failover: the shard starts as a replica ([`Role::Replica`]) and takes part in
/// elections through the log.
pub struct Election {
    pub cfg: lease::Config,
    /// This node's name in its claims and renewals.
    pub node: String,
    /// The log's tail when the engine was replayed, and the highest epoch it read.
    pub tail_id: u64,
    pub max_epoch: u64,
}

#[derive(Clone)]
pub struct ShardHandle {
    tx: UnboundedSender<ShardMsg>,
}

impl ShardHandle {
    pub fn send(&self, m: ShardMsg) -> bool {
        self.tx.send(m).is_ok()
    }
}

/// Facts the engine reports in INFO server.
pub struct ServerFacts {
    pub text: String,
}

const TICK: Duration = Duration::from_millis(100);
/// Stop draining the queue once a batch is this large, so one call stays short.
const MAX_BATCH_BYTES: usize = 8 << 20;

/// Starts the shard as a task on the current runtime. `engine` is already recovered from
/// `log` when there is one.
/// What a shard tells about itself and its peers.
pub struct Identity {
    /// This node's name in the log (its `host:port` under `memoria up`).
    pub node: String,
    /// Cluster mode: CLUSTER SLOTS/SHARDS/NODES and -MOVED for writes sent to a replica.
    pub cluster: bool,
    /// Which shard this node serves.
    pub shard: u16,
    /// Cluster mode across shards: the slot map and the other shards' nodes.
    pub shared: Option<std::sync::Arc<crate::cluster::Shared>>,
}

#[allow(clippy::too_many_arguments)]
pub fn spawn(
    shard_id: usize,
    factory: EngineFactory,
    engine: ShardEngine,
    role: Role,
    election: Option<Election>,
    facts: ServerFacts,
    me: Identity,
    snapshots: Option<SnapshotStore>,
    host: Arc<HostLimits>,
) -> (ShardHandle, JoinHandle<()>) {
    let (tx, rx) = unbounded_channel();
    let self_tx = tx.downgrade();
    let (log, replica, source) = match role {
        Role::Primary(log) => {
            let source = log.as_ref().map(|l| (l.api.clone(), l.name.clone()));
            (log, None, source)
        }
        Role::Replica { primary, applied, api, name } => (None, Some(ReplicaState { primary, applied, tail: applied, stopped: None }), Some((api, name))),
    };
    let mut pending = VecDeque::new();
    let election = election.map(|e| {
        let applied = replica.as_ref().map_or(0, |r| r.applied);
        let mut m = Lease::starting_at(e.cfg, 0, applied, e.max_epoch).expect("lease config validated by the caller");
        pending.extend(m.handle(Event::TailReached { tail_id: e.tail_id, now_ms: 0 }));
        Elect { m, t0: Instant::now(), node: e.node }
    });
    let join = tokio::spawn(async move {
        let mut s = Shard {
            id: shard_id,
            factory,
            engine,
            clients: ClientMap::default(),
            batch: BatchWriter::new(),
            facts,
            seq: 0,
            index: memoria_core::commands::table::index(),
            tracker: Tracker::new(),
            held: ClientMap::default(),
            log,
            queued: Vec::new(),
            inflight: None,
            out: Vec::new(),
            out_at: ClientMap::default(),
            replica,
            reported_offset: u64::MAX,
            self_tx,
            source,
            tail: None,
            tail_gen: 0,
            reload_due: false,
            election,
            pending,
            freeze: None,
            node: me.node,
            wait_seq: 0,
            cluster: me.cluster.then(|| ClusterView { peers: Vec::new(), shard: me.shard, shared: me.shared, reported_version: 0 }),
            peers_task: None,
            snapshots,
            blocking: Blocking::new(),
            host,
            pubsub_clients: HashSet::default(),
            stats: crate::stats::Latency::new(Instant::now()),
            batch_t0: Instant::now(),
            resign: false,
        };
        if s.cluster.is_some()
            && let Some((api, name)) = s.source.clone()
        {
            s.peers_task = Some(tokio::spawn(watch_peers(api, name, s.self_tx.clone())));
        }
        s.send_facts();
        if let Some(rep) = s.replica.as_ref() {
            let after = rep.applied;
            s.spawn_tail(after);
        }
        s.run(rx).await;
        if let Some(t) = s.tail.take() {
            t.abort();
        }
        if let Some(t) = s.peers_task.take() {
            t.abort();
        }
    });
    (ShardHandle { tx }, join)
}

/// Per connection id (ids are ours, not client data: a fast hasher is safe).
type ClientMap<V> = HashMap<u64, V, foldhash::fast::RandomState>;

/// Replies (or pub/sub messages: `answered` 0) waiting for the log to acknowledge
/// sequence `need`: consecutive ones of a batch share one buffer.
struct Held {
    need: u64,
    data: Vec<u8>,
    close: bool,
    /// A WAIT: once `need` is durable, it waits for replicas before its reply (and every
    /// later reply of the client) goes out.
    wait: Option<HeldWait>,
    answered: usize,
    /// When its batch reached the shard (latency statistics).
    since: Instant,
}

struct HeldWait {
    req: crate::wait::WaitRequest,
    /// Distinguishes this WAIT's answer from a stale one.
    token: u64,
    started: bool,
}

/// The append in flight: its task, the last tracker sequence it makes durable (0 for a
/// renewal or a claim), and its lease token (with an election).
struct Inflight {
    task: JoinHandle<Result<Appended, LogError>>,
    last_seq: u64,
    token: Option<AppendToken>,
}

/// The lease machine of a shard with automatic failover, and its clock.
struct Elect {
    m: Lease,
    /// Local monotonic time zero of the machine's milliseconds.
    t0: Instant,
    node: String,
}

impl Elect {
    fn now(&self) -> u64 {
        self.t0.elapsed().as_millis() as u64
    }
}

/// What the lease machine needs to know of an entry's kind.
fn entry_kind(k: Kind) -> EntryKind {
    match k {
        Kind::Data => EntryKind::Data,
        Kind::LeaseRenewal => EntryKind::LeaseRenewal,
        Kind::LeaderClaim => EntryKind::LeaderClaim,
        _ => EntryKind::Other,
    }
}

/// Replicas read the log, never the primary: long-poll the shard log and hand every read
/// to the shard task, in order (empty ones too: they tell the lease machine it is at the
/// tail).
async fn tail_log(api: LogHandle, name: String, reader: String, mut after: u64, generation: u64, shard: WeakUnboundedSender<ShardMsg>) {
    loop {
        match api.read_as(&name, after, 1000, Duration::from_secs(1), &reader).await {
            Ok(b) => {
                if let Some(last) = b.entries.last() {
                    after = last.id;
                }
                let Some(tx) = shard.upgrade() else { return };
                let (done, applied) = oneshot::channel();
                if tx.send(ShardMsg::Apply { generation, entries: b.entries, tail_id: b.tail_id, applied: Some(done) }).is_err() {
                    return;
                }
                drop(tx);
                // A dropped answer means the shard is gone or moved on; either way go on.
                let _ = applied.await;
            }
            Err(e @ LogError::Truncated { .. }) => {
                // Fell behind the truncation: only a snapshot can bring it back.
                tracing::warn!(error = %e, "this replica fell behind the log's truncation; reloading from the newest snapshot");
                if let Some(tx) = shard.upgrade() {
                    let _ = tx.send(ShardMsg::Reload { generation });
                }
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the log failed; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// A replica's progress through the primary's log.
struct ReplicaState {
    primary: String,
    applied: u64,
    /// The log's tail at the newest read: `tail - applied` is the lag in entries.
    tail: u64,
    /// Applying stopped (an entry in a newer format, or the log truncated past it with no
    /// snapshot to reload from): why.
    stopped: Option<String>,
}

struct Shard {
    /// Set on replicas.
    replica: Option<ReplicaState>,
    /// The log offset last reported to the engine (INFO replication, ROLE).
    reported_offset: u64,
    id: usize,
    factory: EngineFactory,
    engine: ShardEngine,
    clients: ClientMap<UnboundedSender<ReplyMsg>>,
    batch: BatchWriter,
    facts: ServerFacts,
    seq: u64,
    index: CommandIndex,
    tracker: Tracker,
    /// Per client, replies held behind the log, in order.
    held: ClientMap<VecDeque<Held>>,
    log: Option<ShardLog>,
    /// Effects of batches not yet sent to the log: (tracker sequence, effects).
    queued: Vec<(u64, Vec<u8>)>,
    inflight: Option<Inflight>,
    /// Replies ready to send this round, coalesced per client.
    out: Vec<(u64, ReplyMsg)>,
    /// Where each client's message is in `out`.
    out_at: ClientMap<usize>,
    /// Our own queue, for the tail task.
    self_tx: WeakUnboundedSender<ShardMsg>,
    /// The shard's log, whatever the role.
    source: Option<(LogHandle, String)>,
    /// Replicas: the task tailing the log, and its generation (reads of older ones are
    /// ignored).
    tail: Option<JoinHandle<()>>,
    tail_gen: u64,
    /// The tail task found its next entries truncated away (see `reload_behind_truncation`).
    reload_due: bool,
    /// Automatic failover: the lease machine.
    election: Option<Elect>,
    /// Its actions not yet carried out.
    pending: VecDeque<Action>,
    freeze: Option<oneshot::Receiver<()>>,
    /// This node's name in the log.
    node: String,
    /// WAITs started (their tokens).
    wait_seq: u64,
    /// Cluster mode: the nodes tailing the shard's log (its replicas), as the log service
    /// last listed them.
    cluster: Option<ClusterView>,
    peers_task: Option<JoinHandle<()>>,
    /// Where rebuilds start from (the newest usable snapshot), if anywhere.
    snapshots: Option<SnapshotStore>,
    /// Clients blocked by BLPOP & co.: their waiting commands and deadlines.
    blocking: Blocking,
    /// Connection limits: the engine's CONFIG SETs land here (see `crate::limits`).
    host: Arc<HostLimits>,
    /// Clients subscribed to something (`batch::OUT_PUBSUB`).
    pubsub_clients: HashSet<u64, foldhash::fast::RandomState>,
    /// Reply latency per one-second window (INFO replication `memoria_latency_*`).
    stats: crate::stats::Latency,
    /// When the batch being run reached the shard.
    batch_t0: Instant,
    /// A FAILOVER was accepted: step down once its reply is out.
    resign: bool,
}

struct ClusterView {
    peers: Vec<memoria_log::ReaderInfo>,
    shard: u16,
    shared: Option<std::sync::Arc<crate::cluster::Shared>>,
    /// The shared view's version last reported to the engine.
    reported_version: u64,
}

/// Cluster mode: learns every second which nodes tail the shard's log (the replicas).
async fn watch_peers(api: LogHandle, name: String, shard: WeakUnboundedSender<ShardMsg>) {
    loop {
        if let Ok(mut peers) = api.readers(&name).await {
            peers.retain(crate::wait::is_live);
            let Some(tx) = shard.upgrade() else { return };
            if tx.send(ShardMsg::Peers(peers)).is_err() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

impl Shard {
    /// Cluster facts for REC_ROLE: this node, the primary, then the replicas.
    fn cluster_lines(&self, t: &mut String) {
        let Some(c) = self.cluster.as_ref() else { return };
        let peers = &c.peers;
        t.push_str("cluster_enabled:1\n");
        t.push_str(&format!("cluster_myself:{}\n", self.node));
        let primary = match (&self.replica, &self.log) {
            (Some(r), _) => (!r.primary.is_empty()).then(|| (r.primary.clone(), 0u64)),
            (None, Some(l)) => Some((self.node.clone(), l.prev_id)),
            (None, None) => Some((self.node.clone(), 0)),
        };
        if let Some((p, off)) = &primary {
            t.push_str(&format!("cluster_node:{p} master {off}\n"));
        }
        for peer in peers {
            if primary.as_ref().is_some_and(|(p, _)| *p == peer.name) {
                continue;
            }
            t.push_str(&format!("cluster_node:{} replica {}\n", peer.name, peer.applied));
        }
        let mut replicas: Vec<(String, u64)> =
            c.peers.iter().filter(|p| primary.as_ref().is_none_or(|(n, _)| *n != p.name)).map(|p| (p.name.clone(), p.applied)).collect();
        if self.replica.is_some() && !c.peers.iter().any(|p| p.name == self.node) {
            let applied = self.replica.as_ref().map_or(0, |r| r.applied);
            t.push_str(&format!("cluster_node:{} replica {applied}\n", self.node));
            replicas.push((self.node.clone(), applied));
        }
        if let Some(sh) = c.shared.as_ref() {
            // Tell the other shards of this process who serves this one, and learn theirs.
            replicas.sort();
            sh.publish(c.shard, crate::cluster::ShardView { primary: primary.clone(), replicas });
            t.push_str(&sh.facts(c.shard));
        }
    }

    /// Gives a (new) engine its static facts and its role. The role is in force before
    /// the first client command reaches the engine, so a replica never takes a write.
    fn send_facts(&mut self) {
        let mut b = BatchWriter::new();
        b.record(batch::REC_SERVER_INFO, 0, self.facts.text.as_bytes());
        let (offset, role) = self.role_text();
        b.record(batch::REC_ROLE, 0, role.as_bytes());
        // The connection limits in force (a rebuilt engine keeps CONFIG SETs of them).
        b.record(batch::REC_CONFIG, 0, self.host.lines().as_bytes());
        self.reported_offset = offset;
        if let Err(e) = self.engine.execute(&b.buf, now_us(), 0) {
            tracing::error!(shard = self.id, error = %e, "engine refused its facts and role");
        }
    }

    fn take(&mut self, m: ShardMsg) -> bool {
        match m {
            ShardMsg::Connect { id, addr, laddr, tx } => {
                self.clients.insert(id, tx);
                self.batch.record(batch::REC_CONNECT, id, format!("{addr}\n{laddr}").as_bytes());
            }
            ShardMsg::Commands { id, records } => {
                if self.blocking.is_blocked(id) {
                    self.blocking.defer_records(id, &records);
                } else {
                    self.batch.buf.extend_from_slice(&records);
                    self.batch.records += 1;
                }
            }
            ShardMsg::Disconnect { id } => {
                self.clients.remove(&id);
                self.pubsub_clients.remove(&id);
                self.held.remove(&id);
                self.blocking.forget(id);
                self.batch.record(batch::REC_DISCONNECT, id, b"");
            }
            ShardMsg::Eof { id } => {
                if self.blocking.closed(id) {
                    self.drop_blocked(id);
                }
            }
            ShardMsg::Apply { generation, entries, tail_id, applied } => {
                if generation == self.tail_gen && self.replica.is_some() {
                    self.absorb(&entries, tail_id);
                    // Hand out the keyspace notifications the applied effects raised.
                    self.batch.record(batch::REC_DELIVER, 0, b"");
                }
                if let Some(a) = applied {
                    let _ = a.send(());
                }
            }
            ShardMsg::Reload { generation } => self.reload_due |= generation == self.tail_gen && self.replica.is_some(),
            ShardMsg::WaitDone { client, token, count } => {
                if let Some(h) = self.held.get_mut(&client).and_then(|q| q.front_mut())
                    && h.wait.as_ref().is_some_and(|w| w.token == token)
                {
                    h.wait = None;
                    h.data = format!(":{count}\r\n").into_bytes();
                    self.release();
                    self.flush();
                }
            }
            ShardMsg::Peers(p) => {
                if let Some(c) = self.cluster.as_mut()
                    && c.peers != p
                {
                    c.peers = p;
                    // Re-announce the role (and with it the cluster's nodes) to the engine.
                    self.reported_offset = u64::MAX;
                }
            }
            ShardMsg::Freeze { until } => self.freeze = Some(until),
            ShardMsg::Shutdown => return false,
        }
        true
    }

    /// Applies entries read from the log (a replica's tail, or a rebuild's replay) and,
    /// with an election, tells the lease machine what was read. A newer format stops
    /// applying (and says so in INFO, ROLE and the logs) instead of misreading it.
    /// Returns the last id applied (`None`: applying has stopped).
    fn absorb(&mut self, entries: &[memoria_log::Entry], tail_id: u64) -> Option<u64> {
        if self.replica.as_ref().is_some_and(|r| r.stopped.is_some()) {
            return None;
        }
        let from = self.replica.as_ref().map_or(0, |r| r.applied);
        let mut r = crate::replay::Replayed { last_id: from, tail_id, max_epoch: 0, data_entries: 0, effects: 0, leader: None };
        let result = crate::replay::apply_entries(&mut self.engine, entries, &mut r);
        if let Some(rep) = self.replica.as_mut() {
            rep.applied = r.last_id;
            rep.tail = rep.tail.max(tail_id).max(r.last_id);
            if let Some(leader) = r.leader.take() {
                rep.primary = leader;
            }
        }
        if let Some(el) = self.election.as_mut() {
            let now = el.now();
            if entries.is_empty() {
                self.pending.extend(el.m.handle(Event::TailReached { tail_id, now_ms: now }));
            }
            for e in entries.iter().take_while(|e| e.id <= r.last_id && e.format <= memoria_log::FORMAT_VERSION) {
                let payload = matches!(e.kind, Kind::LeaseRenewal | Kind::LeaderClaim).then(|| LeasePayload::decode(&e.payload)).flatten();
                let ev = Event::EntryRead {
                    id: e.id,
                    epoch: e.epoch,
                    kind: entry_kind(e.kind),
                    lease_ms: payload.map(|p| p.lease_ms),
                    at_tail: e.id >= tail_id,
                    now_ms: now,
                };
                self.pending.extend(el.m.handle(ev));
            }
            if result.is_err() {
                self.pending.extend(el.m.handle(Event::FormatTooNew { now_ms: now }));
            }
        }
        match result {
            Ok(()) => Some(r.last_id),
            Err(e) => {
                tracing::error!(shard = self.id, error = %e, applied = r.last_id, "stopped applying the log");
                if let Some(rep) = self.replica.as_mut() {
                    rep.stopped = Some(e.to_string());
                }
                self.reported_offset = u64::MAX;
                None
            }
        }
    }

    /// Starts (or restarts) tailing the log after `after`.
    fn spawn_tail(&mut self, after: u64) {
        self.stop_tail();
        let Some((api, name)) = self.source.clone() else { return };
        let reader = self.node.clone();
        self.tail = Some(tokio::spawn(tail_log(api, name, reader, after, self.tail_gen, self.self_tx.clone())));
    }

    fn stop_tail(&mut self) {
        if let Some(t) = self.tail.take() {
            t.abort();
        }
        // Reads already queued by the old task are ignored from here.
        self.tail_gen += 1;
    }

    /// Queues a REC_ROLE record when the offset moved since the last report.
    fn role_record(&mut self) {
        let rolled = self.stats.roll(Instant::now());
        // Read the shared version first: a change racing with this report is seen next time.
        let version = self.cluster.as_ref().and_then(|c| c.shared.as_ref()).map_or(0, |s| s.version());
        let (offset, text) = self.role_text();
        let moved = self.cluster.as_mut().is_some_and(|c| std::mem::replace(&mut c.reported_version, version) != version);
        if offset != self.reported_offset || moved || rolled {
            self.reported_offset = offset;
            self.batch.record(batch::REC_ROLE, 0, text.as_bytes());
        }
    }

    /// The node's role and log offset, as REC_ROLE text.
    fn role_text(&self) -> (u64, String) {
        let (offset, mut t) = self.base_role_text();
        self.cluster_lines(&mut t);
        self.stats.lines(&mut t);
        (offset, t)
    }

    fn base_role_text(&self) -> (u64, String) {
        match (&self.replica, &self.log) {
            (Some(r), _) => {
                let link = if r.stopped.is_some() { "down" } else { "up" };
                let (host, port) = r.primary.rsplit_once(':').unwrap_or((r.primary.as_str(), "0"));
                let mut t = format!(
                    "replica\nmaster_host:{host}\nmaster_port:{port}\nmaster_link_status:{link}\noffset:{0}\nslave_repl_offset:{0}\nslave_read_repl_offset:{0}\nmemoria_log_tail:{1}\nmemoria_lag_entries:{2}\n",
                    r.applied,
                    r.tail,
                    r.tail.saturating_sub(r.applied)
                );
                if let Some(why) = &r.stopped {
                    t.push_str(&format!("memoria_apply_stopped:{}\n", why.replace(['\n', '\r'], " ")));
                }
                (r.applied, t)
            }
            (None, Some(l)) => {
                (l.prev_id, format!("primary\noffset:{0}\nmaster_repl_offset:{0}\nmemoria_log:{1}\nmemoria_epoch:{2}\n", l.prev_id, l.name, l.epoch))
            }
            (None, None) => (0, "primary\noffset:0\nmaster_repl_offset:0\nmemoria_log:none\n".to_string()),
        }
    }

    /// When the loop must wake up by itself: the engine's tick, or the lease machine's.
    fn next_wake(&self, last_tick: Instant) -> Instant {
        let mut wake = last_tick + TICK;
        if self.blocking.has_resubmit() {
            // Commands released by an unblock run at once.
            return Instant::now();
        }
        if let Some(d) = self.blocking.next_deadline() {
            let ms = (d - now_us() / 1000).max(0) as u64;
            wake = wake.min(Instant::now() + Duration::from_millis(ms));
        }
        if let Some(el) = self.election.as_ref()
            && let Some(ms) = el.m.next_wakeup()
        {
            let at = el.t0 + Duration::from_millis(ms);
            // Never spin: at least a millisecond from now.
            wake = wake.min(at.max(Instant::now() + Duration::from_millis(1)));
        }
        wake
    }

    async fn run(&mut self, mut rx: UnboundedReceiver<ShardMsg>) {
        let mut last_tick = Instant::now();
        self.run_actions().await;
        self.flush();
        loop {
            let has_inflight = self.inflight.is_some();
            let wake = self.next_wake(last_tick);
            let inflight = self.inflight.as_mut().map(|i| &mut i.task);
            let first = tokio::select! {
                m = rx.recv() => match m {
                    Some(m) => Some(m),
                    None => return,
                },
                r = async { inflight.unwrap().await }, if has_inflight => {
                    let done = self.inflight.take().unwrap();
                    let r = r.unwrap_or_else(|e| Err(LogError::Internal(format!("append task: {e}"))));
                    self.appended(done.last_seq, done.token, r).await;
                    self.start_append();
                    self.run_actions().await;
                    self.flush();
                    None
                }
                _ = tokio::time::sleep_until(wake.into()) => None,
            };
            self.batch.clear();
            // Commands of just-unblocked clients come before anything newer of theirs.
            self.blocking.take_resubmit(&mut self.batch);
            if let Some(m) = first {
                self.batch_t0 = Instant::now();
                if !self.take(m) {
                    return self.drain_before_exit().await;
                }
                while self.batch.buf.len() < MAX_BATCH_BYTES {
                    match rx.try_recv() {
                        Ok(m) => {
                            if !self.take(m) {
                                return self.drain_before_exit().await;
                            }
                        }
                        Err(_) => break,
                    }
                }
            }
            if let Some(until) = self.freeze.take() {
                tracing::warn!(shard = self.id, "shard frozen (test hook)");
                let _ = until.await;
                tracing::warn!(shard = self.id, "shard resumed");
            }
            if std::mem::take(&mut self.reload_due) {
                self.reload_behind_truncation().await;
                self.batch.clear();
                self.flush();
                continue;
            }
            // With an election, time passes for the lease first: a primary whose lease
            // lapsed (a freeze, a stall) steps down before it could serve this batch, and
            // the batch, whose clients it drops, is not run at all.
            if let Some(el) = self.election.as_mut() {
                let now = el.now();
                self.pending.extend(el.m.handle(Event::Tick { now_ms: now }));
            }
            if self.run_actions().await {
                self.batch.clear();
                self.flush();
                continue;
            }
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                self.batch.record(batch::REC_TICK, 0, b"");
                self.role_record();
            }
            self.blocking.fire_deadlines(now_us() / 1000, &mut self.batch);
            if self.batch.is_empty() {
                continue;
            }
            self.seq = self.seq.wrapping_add(1);
            let batch_seed = seed() ^ self.seq;
            let input = std::mem::take(&mut self.batch.buf);
            match self.engine.execute(&input, now_us(), batch_seed) {
                Ok(out) => self.route(&input, &out),
                Err(e) => self.crashed(e).await,
            }
            self.batch.buf = input;
            self.start_append();
            self.run_actions().await;
            self.flush();
            if self.stats.immediate > 0 {
                let n = std::mem::take(&mut self.stats.immediate);
                self.stats.record(self.batch_t0.elapsed(), n);
            }
            if std::mem::take(&mut self.resign) {
                self.resign_now().await;
            }
        }
    }

    /// FAILOVER: the primary steps down (its reply went out first) and holds off for a
    /// second backoff, so the election through the log makes a replica the primary.
    async fn resign_now(&mut self) {
        let Some(el) = self.election.as_mut() else { return };
        let now = el.now();
        let hold = el.m.config().backoff_ms;
        tracing::warn!(shard = self.id, "FAILOVER: stepping down so that a replica takes over");
        self.pending.extend(el.m.resign(now, hold));
        self.run_actions().await;
        self.flush();
    }

    /// On shutdown, waits for the append in flight so acknowledged-looking writes land.
    async fn drain_before_exit(&mut self) {
        if let Some(i) = self.inflight.take() {
            let r = i.task.await.unwrap_or_else(|e| Err(LogError::Internal(format!("append task: {e}"))));
            self.appended(i.last_seq, i.token, r).await;
        }
        self.start_append();
        if let Some(i) = self.inflight.take() {
            let r = i.task.await.unwrap_or_else(|e| Err(LogError::Internal(format!("append task: {e}"))));
            self.appended(i.last_seq, i.token, r).await;
        }
        self.flush();
    }

    /// Decides, per command, when its reply may go out, and queues the batch's effects.
    /// Extra REC_UNBLOCKED records (a blocked client served) answer no input record.
    fn route(&mut self, input: &[u8], out: &[u8]) {
        let durable = self.log.is_some();
        let mut batch_seq = 0u64;
        let mut batch_fx: Vec<u8> = Vec::new();
        let mut args: Vec<(usize, usize)> = Vec::new();
        let mut inputs = BatchReader::new(input);
        // Pub/sub messages wait for what the record that caused them waits for.
        let mut need = 0;
        for rec in OutputReader::new(out) {
            if rec.kind == batch::REC_PUSH {
                self.deliver_push(rec.client, need, rec.reply);
                continue;
            }
            if rec.kind == batch::REC_CONFIG {
                // A CONFIG SET: the connection limits take effect now.
                self.host.apply(&String::from_utf8_lossy(rec.reply));
                continue;
            }
            if rec.kind == batch::REC_COMMAND && rec.flags & (batch::OUT_BLOCKED | batch::OUT_DEFERRED) == 0 {
                if rec.flags & batch::OUT_PUBSUB != 0 {
                    self.pubsub_clients.insert(rec.client);
                } else if !self.pubsub_clients.is_empty() {
                    self.pubsub_clients.remove(&rec.client);
                }
            }
            // A served blocked client (REC_UNBLOCKED) answers no input record.
            let inp = if rec.kind == batch::REC_UNBLOCKED {
                None
            } else {
                let Some(i) = inputs.next() else { break };
                Some(i)
            };
            let parked = rec.flags & (batch::OUT_BLOCKED | batch::OUT_DEFERRED) != 0;
            need = 0;
            if durable {
                // A write waits for its own entry, which follows every pending one: the
                // keys it read need no lookup then.
                if rec.kind == batch::REC_COMMAND && rec.effects.is_empty() && !parked {
                    need = inp.as_ref().map_or(0, |i| self.need_of(i.payload, &mut args));
                } else if rec.flags & batch::OUT_UNBLOCKED != 0 && rec.effects.is_empty() {
                    // A blocked command's answer: what it read is not known here.
                    need = self.tracker.need_all();
                }
                if !rec.effects.is_empty() {
                    if batch_seq == 0 {
                        batch_seq = self.tracker.next_seq();
                    }
                    need = batch_seq;
                    self.track_effects(batch_seq, rec.effects, &mut args);
                    batch_fx.extend_from_slice(rec.effects);
                }
            }
            if rec.flags & batch::OUT_DEFERRED != 0 {
                if let Some(i) = inp {
                    self.blocking.defer(rec.client, i.payload);
                }
            } else if rec.flags & batch::OUT_BLOCKED != 0 {
                if self.blocking.park(rec.client, rec.reply) {
                    self.drop_blocked(rec.client);
                }
            } else if rec.flags & batch::OUT_UNBLOCKED != 0 {
                self.blocking.unpark(rec.client);
                self.deliver(rec.client, need, rec.reply, false);
            } else if rec.kind == batch::REC_CONNECT && !rec.reply.is_empty() {
                // Refused at connect (protected mode): the message, then the close.
                self.deliver_n(rec.client, 0, rec.reply, rec.flags & batch::OUT_CLOSE != 0, 0);
            } else if rec.kind == batch::REC_COMMAND {
                let close = rec.flags & batch::OUT_CLOSE != 0;
                // A WAIT the engine accepted (an integer reply) on a primary with a log.
                if durable
                    && rec.reply.first() == Some(&b':')
                    && let Some(i) = inp.as_ref()
                    && let Some(req) = crate::wait::parse(i.payload, &mut args)
                {
                    self.wait_seq += 1;
                    let wait = HeldWait { req, token: self.wait_seq, started: false };
                    let need = self.tracker.need_all();
                    self.held.entry(rec.client).or_default().push_back(Held {
                        need,
                        data: Vec::new(),
                        close,
                        wait: Some(wait),
                        answered: 1,
                        since: self.batch_t0,
                    });
                    self.release();
                    continue;
                }
                if rec.reply == b"+OK\r\n" && inp.as_ref().is_some_and(|i| is_failover(i.payload)) {
                    if self.election.is_none() || self.log.is_none() {
                        self.deliver(rec.client, need, b"-ERR FAILOVER needs automatic failover: this node was not elected through a log\r\n", close);
                        continue;
                    }
                    self.resign = true;
                }
                self.deliver(rec.client, need, rec.reply, close);
            }
        }
        if batch_seq != 0 {
            self.queued.push((batch_seq, batch_fx));
        }
    }

    /// A blocked client whose connection is gone: forget it here and in the engine.
    fn drop_blocked(&mut self, id: u64) {
        self.clients.remove(&id);
        self.held.remove(&id);
        self.blocking.drop_client(id);
    }

    /// The sequence a command's reply must wait for, from the keys it reads.
    fn need_of(&self, cmd: &[u8], args: &mut Vec<(usize, usize)>) -> u64 {
        if self.tracker.is_clear() {
            // Nothing pending (every read of a read-only load): no need to look.
            return 0;
        }
        args.clear();
        if memoria_core::protocol::resp::read_command(cmd, args).is_none() || args.is_empty() {
            return 0;
        }
        let argv: Vec<&[u8]> = args.iter().map(|&(a, b)| &cmd[a..b]).collect();
        let Some(spec) = self.index.resolve(&argv) else { return 0 };
        // Whole-keyspace reads, and EXEC (whose queued reads the host does not see), wait
        // for every pending write.
        if spec.flags & (flags::KEYSPACE | flags::EXEC) != 0 {
            return self.tracker.need_all();
        }
        let mut idx = Vec::new();
        spec.key_indexes_argv(&argv, &mut idx);
        self.tracker.need_for(idx.iter().map(|&i| argv[i]))
    }

    /// Records the keys each effect writes (databases are not told apart: a false share
    /// only makes a read wait a little, never return early).
    fn track_effects(&mut self, seq: u64, effects: &[u8], args: &mut Vec<(usize, usize)>) {
        let mut reader = EffectReader::new(effects);
        let mut argv: Vec<&[u8]> = Vec::new();
        let mut idx = Vec::new();
        while let Some(fx) = reader.next_with_args(args) {
            argv.clear();
            argv.extend(args.iter().map(|&(a, b)| &fx.command[a..b]));
            let Some(spec) = self.index.resolve(&argv) else {
                // Cannot happen (the engine wrote it); if it did, hold every read.
                self.tracker.record_everything(seq);
                continue;
            };
            idx.clear();
            spec.key_indexes_argv(&argv, &mut idx);
            if writes_everything(idx.len()) {
                self.tracker.record_everything(seq);
            }
            for &i in &idx {
                self.tracker.record(seq, argv[i]);
            }
        }
    }

    fn deliver(&mut self, client: u64, need: u64, reply: &[u8], close: bool) {
        self.deliver_n(client, need, reply, close, 1);
    }

    /// A pub/sub message for `client`: ordered with its replies, answering no command.
    fn deliver_push(&mut self, client: u64, need: u64, msg: &[u8]) {
        if self.clients.contains_key(&client) {
            self.deliver_n(client, need, msg, false, 0);
        }
    }

    fn deliver_n(&mut self, client: u64, need: u64, reply: &[u8], close: bool, answered: usize) {
        let queue_empty = self.held.get(&client).is_none_or(|q| q.is_empty());
        if need <= self.tracker.acked() && queue_empty {
            self.stats.immediate += answered;
            self.push_out(client, reply, close, answered);
        } else {
            let q = self.held.entry(client).or_default();
            // Replies of one batch that wait for the same entry go out together: one
            // buffer for a client's whole pipeline, not one per reply.
            match q.back_mut() {
                Some(last) if last.need == need && last.since == self.batch_t0 && last.wait.is_none() && !last.close => {
                    last.data.extend_from_slice(reply);
                    last.close = close;
                    last.answered += answered;
                }
                _ => q.push_back(Held { need, data: reply.to_vec(), close, wait: None, answered, since: self.batch_t0 }),
            }
        }
    }

    fn push_out(&mut self, client: u64, data: &[u8], close: bool, answered: usize) {
        match self.out_at.get(&client) {
            Some(&at) => self.out[at].1.extend(data, close, answered),
            None => self.push_out_owned(client, data.to_vec(), close, answered),
        }
    }

    /// Like `push_out`, taking the buffer (moved, not copied, when it is the client's
    /// first message this round).
    fn push_out_owned(&mut self, client: u64, data: Vec<u8>, close: bool, answered: usize) {
        match self.out_at.get(&client) {
            Some(&at) => self.out[at].1.extend(&data, close, answered),
            None => {
                self.out_at.insert(client, self.out.len());
                self.out.push((client, ReplyMsg { data, close, answered, pubsub: false }));
            }
        }
    }

    fn flush(&mut self) {
        self.out_at.clear();
        let any_pubsub = !self.pubsub_clients.is_empty();
        for (id, mut m) in self.out.drain(..) {
            if any_pubsub {
                m.pubsub = self.pubsub_clients.contains(&id);
            }
            if let Some(tx) = self.clients.get(&id) {
                let _ = tx.send(m);
            }
        }
    }

    /// Sends the queued effects as one append if none is in flight (group commit).
    fn start_append(&mut self) {
        if self.inflight.is_some() || self.queued.is_empty() {
            return;
        }
        let Some(log) = self.log.as_ref() else {
            self.queued.clear();
            return;
        };
        // With an election the machine decides (one append in flight, renewals included,
        // and none once the lease has lapsed); its time is read before the append is sent.
        let (prev_id, epoch, token) = match self.election.as_mut() {
            Some(el) => {
                let now = el.now();
                match el.m.start_data_append(now) {
                    Some(t) => (t.prev_id, t.epoch, Some(t.token)),
                    None => return,
                }
            }
            None => (log.prev_id, log.epoch, None),
        };
        let last_seq = self.queued.last().map(|(s, _)| *s).unwrap_or(0);
        let entries: Vec<NewEntry> = self.queued.drain(..).map(|(_, fx)| NewEntry::data(fx)).collect();
        let task = tokio::spawn(durable::append_settled(log.api.clone(), log.name.clone(), prev_id, epoch, entries));
        self.inflight = Some(Inflight { task, last_seq, token });
    }

    /// The append in flight finished.
    async fn appended(&mut self, last_seq: u64, token: Option<AppendToken>, r: Result<Appended, LogError>) {
        if let (Some(el), Some(token)) = (self.election.as_mut(), token) {
            let ev = append_event(token, el.now(), &r);
            self.pending.extend(el.m.handle(ev));
            // A lapsed lease or a rejection steps down here, failing every held reply.
            self.run_actions().await;
            let primary = self.replica.is_none() && self.log.is_some();
            let Some(el) = self.election.as_ref() else { return };
            if !primary || last_seq == 0 && r.is_err() {
                // A stale outcome (from before a step-down), or a renewal or claim that
                // did not land: the machine has it; no reply depends on it.
                return;
            }
            match r {
                Ok(a) if el.m.can_ack_writes(el.now()) => {
                    if let Some(log) = self.log.as_mut() {
                        log.prev_id = a.last_id;
                    }
                    if last_seq != 0 {
                        self.tracker.ack(last_seq);
                        self.release();
                    }
                }
                Ok(_) => {
                    // Past the lease: nothing may be acknowledged any more.
                    self.fail_everything(
                        b"-ERR write outcome unknown: this node's lease as primary lapsed before the log acknowledged it; reconnect and retry\r\n",
                    );
                }
                // A data append that did not land (or could not be settled): the engine
                // holds writes the log does not. Still the leader: `rebuild` reloads from
                // the log without claiming again.
                Err(e) => self.log_failed(e).await,
            }
            return;
        }
        match r {
            Ok(a) => {
                if let Some(log) = self.log.as_mut() {
                    log.prev_id = a.last_id;
                }
                self.tracker.ack(last_seq);
                self.release();
            }
            Err(e) => self.log_failed(e).await,
        }
    }

    /// Releases held replies whose writes are now durable, in each client's order.
    fn release(&mut self) {
        let acked = self.tracker.acked();
        let now = Instant::now();
        let mut starts = Vec::new();
        // Taken out so each queue can hand its replies to `push_out_owned` in place.
        let mut held = std::mem::take(&mut self.held);
        held.retain(|&id, q| {
            while let Some(h) = q.front_mut()
                && h.need <= acked
            {
                if let Some(w) = h.wait.as_mut() {
                    // The client's writes are durable: now count the replicas that have
                    // them. Its later replies stay behind the WAIT's.
                    if !w.started {
                        w.started = true;
                        starts.push((id, w.token, w.req));
                    }
                    break;
                }
                let h = q.pop_front().expect("checked");
                self.stats.record(now.saturating_duration_since(h.since), h.answered);
                self.push_out_owned(id, h.data, h.close, h.answered);
            }
            !q.is_empty()
        });
        self.held = held;
        for (id, token, req) in starts {
            self.start_wait(id, token, req);
        }
    }

    /// Asks the log service, in a task, how many replicas have applied everything this
    /// primary has logged so far (which includes the waiting client's writes).
    fn start_wait(&self, client: u64, token: u64, req: crate::wait::WaitRequest) {
        let (Some(log), Some(tx)) = (self.log.as_ref(), self.self_tx.upgrade()) else { return };
        let (api, name, me, target) = (log.api.clone(), log.name.clone(), self.node.clone(), log.prev_id);
        tokio::spawn(async move {
            let count = crate::wait::count_replicas(api, name, me, target, req).await;
            let _ = tx.send(ShardMsg::WaitDone { client, token, count });
        });
    }

    /// The log refused or lost an append. The engine holds writes that are not in the log,
    /// so nothing it says can be trusted: fail every held reply (no client is told OK for
    /// a write that is not durable), drop the clients, and rebuild the engine from the log.
    async fn log_failed(&mut self, e: LogError) {
        let fenced = matches!(e, LogError::Conflict { .. });
        tracing::error!(shard = self.id, error = %e, fenced, "log append failed; failing held replies and rebuilding from the log");
        let msg = format!("-ERR write not durable: the log refused it ({e}); reconnect and retry\r\n");
        self.fail_everything(msg.as_bytes());
        self.rebuild().await;
    }

    /// Abandons everything not yet durable: every held reply fails with `msg`, every
    /// client is dropped, and the tracker and queued effects are forgotten.
    fn fail_everything(&mut self, msg: &[u8]) {
        self.tracker.reset();
        self.queued.clear();
        self.blocking.clear();
        let held: Vec<(u64, VecDeque<Held>)> = self.held.drain().collect();
        for (id, q) in held {
            // Held pub/sub messages are dropped; each held reply becomes the error.
            let n: usize = q.iter().map(|h| h.answered).sum();
            let mut data = Vec::new();
            for _ in 0..n {
                data.extend_from_slice(msg);
            }
            self.push_out_owned(id, data, true, n);
        }
        let ids: Vec<u64> = self.clients.keys().copied().collect();
        for id in ids {
            self.push_out_owned(id, Vec::new(), true, 0);
        }
        self.flush();
        self.clients.clear();
        self.pubsub_clients.clear();
    }

    /// Replaces the engine with a fresh one; with a log, replays it and re-claims the shard
    /// (with an election: replays it and keeps the role the lease machine gives it).
    async fn rebuild(&mut self) {
        if self.election.is_some() {
            return self.reload_engine().await;
        }
        let mut eng = match self.factory.instantiate(seed()) {
            Ok(e) => e,
            Err(e) => {
                tracing::error!(shard = self.id, error = %e, "could not instantiate a new engine");
                return;
            }
        };
        if let Some(log) = self.log.take() {
            let (api, name, node) = (log.api.clone(), log.name.clone(), log.node.clone());
            // Nothing can be served until the engine is whole again, so the shard awaits
            // recovery inline.
            match durable::recover(api, &name, &node, crate::lease::DEFAULT_LEASE_MS, self.snapshots.as_ref(), &mut eng).await {
                Ok(r) => {
                    tracing::info!(shard = self.id, entries = r.applied_entries, "engine rebuilt from the log");
                    self.log = Some(r.log);
                }
                Err(e) => {
                    tracing::error!(shard = self.id, error = %e, "recovery from the log failed; the shard keeps its old log position");
                    self.log = Some(log);
                }
            }
        }
        self.engine = eng;
        self.send_facts();
    }

    /// A trap destroyed the instance: fail the batch, drop this shard's clients (their
    /// MULTI/SELECT state went with it) and rebuild — from the log when there is one.
    async fn crashed(&mut self, e: crate::wasm::EngineError) {
        tracing::error!(shard = self.id, error = %e, "engine trapped; rebuilding the shard's engine");
        self.fail_everything(b"-ERR shard engine crashed while running this batch; reconnect\r\n");
        self.rebuild().await;
    }

    /// With an election: a fresh engine, replayed from the whole log (the lease machine
    /// reads along). Waits for the append in flight first, so the replay includes it if it
    /// landed. A replica then tails on from where the replay ended.
    async fn reload_engine(&mut self) {
        self.settle_inflight().await;
        self.stop_tail();
        match self.factory.instantiate(seed()) {
            Ok(e) => self.engine = e,
            Err(e) => {
                tracing::error!(shard = self.id, error = %e, "could not instantiate a new engine");
                return;
            }
        }
        let Some((api, name)) = self.source.clone() else { return };
        // From the newest usable snapshot when there is one; the lease machine reads along
        // from there (it keeps what it learnt of the entries before).
        let after = match crate::snapshot::restore::start(self.snapshots.as_ref(), &api, &name, &mut self.engine).await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(shard = self.id, error = %e, "could not start from a snapshot; replaying the whole log");
                if let Err(e) = self.engine.reset(seed()) {
                    tracing::error!(shard = self.id, error = %e, "could not instantiate a new engine");
                    return;
                }
                0
            }
        };
        self.replay_and_tail(api, name, after).await;
    }

    /// Waits for the append in flight (if any) and tells the lease machine its outcome.
    async fn settle_inflight(&mut self) {
        if let Some(i) = self.inflight.take() {
            let r = i.task.await.unwrap_or_else(|e| Err(LogError::Internal(format!("append task: {e}"))));
            if let (Some(el), Some(token)) = (self.election.as_mut(), i.token) {
                let ev = append_event(token, el.now(), &r);
                self.pending.extend(el.m.handle(ev));
            }
        }
    }

    /// A replica whose next entries were truncated away: the newest snapshot and the log
    /// after it replace the engine. The snapshot is loaded into a new engine first: with
    /// none usable the replica keeps its data and clients and stops applying (INFO says
    /// why) rather than serve an empty engine. The clients' state (MULTI, SELECT,
    /// subscriptions) lives in the engine being replaced, so their connections close, as
    /// after a step-down.
    async fn reload_behind_truncation(&mut self) {
        metrics::counter!("memoria_replica_snapshot_reloads_total").increment(1);
        self.settle_inflight().await;
        self.stop_tail();
        let Some((api, name)) = self.source.clone() else { return };
        let mut fresh = match self.factory.instantiate(seed()) {
            Ok(e) => e,
            Err(e) => return self.stop_applying(format!("could not instantiate an engine to reload into: {e}")),
        };
        let after = match crate::snapshot::restore::start(self.snapshots.as_ref(), &api, &name, &mut fresh).await {
            Ok(a) if a > 0 => a,
            Ok(_) => {
                return self.stop_applying(
                    "the log was truncated past this replica and no usable snapshot covers the gap (give the node --snapshot-store, or restart it)".into(),
                );
            }
            Err(e) => return self.stop_applying(format!("the log was truncated past this replica and loading the newest snapshot failed: {e}")),
        };
        self.fail_everything(b"-LOADING this replica fell behind the log's truncation and is reloading from a snapshot; reconnect\r\n");
        self.engine = fresh;
        self.replay_and_tail(api, name, after).await;
    }

    /// A replica stops applying the log (INFO replication, ROLE and the logs say why) and
    /// serves what it holds.
    fn stop_applying(&mut self, why: String) {
        tracing::error!(shard = self.id, %why, "stopped applying the log");
        if let Some(rep) = self.replica.as_mut() {
            rep.stopped = Some(why);
        }
        self.reported_offset = u64::MAX;
        self.send_facts();
    }

    /// Applies the log after `after` (where the engine is) up to its tail, then a replica
    /// tails on.
    async fn replay_and_tail(&mut self, api: LogHandle, name: String, mut after: u64) {
        if let Some(rep) = self.replica.as_mut() {
            rep.applied = after;
            rep.stopped = None;
        }
        loop {
            let batch = match api.read(&name, after, 1000, Duration::ZERO).await {
                Ok(b) => b,
                Err(e @ LogError::Truncated { .. }) => {
                    // Truncated again while a snapshot loaded (or no snapshot covers the
                    // gap): no read can succeed from here.
                    self.stop_applying(format!("cannot catch up: {e}"));
                    break;
                }
                Err(e) => {
                    tracing::warn!(shard = self.id, error = %e, "reading the log to rebuild failed; retrying");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            let done = batch.entries.is_empty() || batch.entries.last().is_some_and(|e| e.id >= batch.tail_id);
            match self.absorb(&batch.entries, batch.tail_id) {
                Some(last) => after = last,
                None => break,
            }
            if done {
                break;
            }
        }
        if let (Some(log), Some(el)) = (self.log.as_mut(), self.election.as_ref()) {
            log.prev_id = el.m.last_id();
        }
        tracing::info!(shard = self.id, applied = after, "engine rebuilt from the log");
        self.send_facts();
        if self.replica.as_ref().is_some_and(|r| r.stopped.is_none()) {
            self.spawn_tail(after);
        }
    }

    /// Carries out the lease machine's actions. True if the engine was replaced (the
    /// node stepped down): whatever batch is being gathered belongs to dropped clients.
    async fn run_actions(&mut self) -> bool {
        let mut replaced = false;
        while let Some(a) = self.pending.pop_front() {
            match a {
                Action::AppendRenewal { token, prev_id, epoch, lease_ms } => self.send_lease_entry(Kind::LeaseRenewal, token, prev_id, epoch, lease_ms),
                Action::AppendClaim { token, prev_id, epoch, lease_ms } => {
                    let applied = self.replica.as_ref().filter(|r| r.stopped.is_none()).map(|r| r.applied);
                    if applied != Some(prev_id) {
                        // The engine must hold exactly what the claim says was read.
                        tracing::warn!(shard = self.id, prev_id, ?applied, "not claiming: the engine is not at the claim's position");
                        if let Some(el) = self.election.as_mut() {
                            let now = el.now();
                            self.pending.extend(el.m.handle(Event::AppendFailed { token, now_ms: now }));
                        }
                        continue;
                    }
                    tracing::info!(shard = self.id, prev_id, epoch, "claiming the shard: the primary's lease has run out");
                    self.send_lease_entry(Kind::LeaderClaim, token, prev_id, epoch, lease_ms);
                }
                Action::BecomePrimary { epoch, last_id } => self.become_primary(epoch, last_id),
                Action::StepDown { reason, resume_after } => {
                    self.step_down(reason, resume_after).await;
                    replaced = true;
                }
                Action::ClaimLost { resume_after } => tracing::info!(shard = self.id, resume_after, "claim lost; staying a replica"),
                Action::ServeReads(on) => tracing::debug!(shard = self.id, on, "serving reads as primary"),
                Action::Stopped => tracing::error!(shard = self.id, "the log needs a newer build: this node stopped applying and takes no part in elections"),
            }
        }
        replaced
    }

    /// Sends a renewal or a claim (the machine allows one append in flight in all).
    fn send_lease_entry(&mut self, kind: Kind, token: AppendToken, prev_id: u64, epoch: u64, lease_ms: u64) {
        let (Some((api, name)), Some(el)) = (self.source.clone(), self.election.as_mut()) else { return };
        if self.inflight.is_some() {
            // Cannot happen: every append goes through the machine. Never send two.
            tracing::error!(shard = self.id, "lease append while another is in flight; skipped");
            let now = el.now();
            self.pending.extend(el.m.handle(Event::AppendFailed { token, now_ms: now }));
            return;
        }
        let entry = NewEntry::new(kind, LeasePayload { node: el.node.clone(), lease_ms }.encode());
        let task = tokio::spawn(durable::append_settled(api, name, prev_id, epoch, vec![entry]));
        self.inflight = Some(Inflight { task, last_seq: 0, token: Some(token) });
    }

    /// The claim landed: the engine already holds everything before it.
    fn become_primary(&mut self, epoch: u64, last_id: u64) {
        let Some((api, name)) = self.source.clone() else { return };
        let node = self.election.as_ref().map(|e| e.node.clone()).unwrap_or_default();
        self.stop_tail();
        self.replica = None;
        self.tracker.reset();
        self.queued.clear();
        self.log = Some(ShardLog { api, name, node, prev_id: last_id, epoch });
        tracing::warn!(shard = self.id, epoch, last_id, "this node is now the primary");
        self.send_facts();
    }

    /// Deposed, or the lease lapsed: stop serving at once (held replies fail, clients are
    /// dropped), and rejoin as a replica rebuilt from the log, since memory may hold
    /// effects of appends that never landed. No claim: only an election makes a leader.
    async fn step_down(&mut self, reason: StepDownReason, resume_after: u64) {
        tracing::warn!(shard = self.id, ?reason, resume_after, "stepping down: no longer the primary");
        let why = match reason {
            StepDownReason::Deposed => "another node now leads the shard",
            StepDownReason::LeaseExpired => "its lease as primary lapsed",
            StepDownReason::FormatTooNew => "the log holds entries of a newer format",
            StepDownReason::Resigned => "FAILOVER asked it to step down",
        };
        let msg = format!("-ERR write outcome unknown: this node stopped being the primary ({why}); reconnect and retry\r\n");
        self.fail_everything(msg.as_bytes());
        self.log = None;
        self.replica = Some(ReplicaState { primary: String::new(), applied: 0, tail: 0, stopped: None });
        self.reload_engine().await;
    }
}

/// An effect that names no key changes what any read could see (FLUSHALL, FLUSHDB; also
/// ACL SETUSER, MIGRATION IMPORT, whose keys are inside its records): until it is durable,
/// every read waits for it. Only the keys it names count otherwise: SORT … STORE has the
/// KEYSPACE flag for what it reads, but writes only its destination.
fn writes_everything(keys: usize) -> bool {
    keys == 0
}

/// FAILOVER (the engine checked its arguments and answered +OK on a primary). Looked at
/// for every +OK reply, so it reads only the command name's bytes (commands reach the
/// shard as multibulk: `*<n>\r\n$8\r\nFAILOVER\r\n…`).
fn is_failover(cmd: &[u8]) -> bool {
    let Some(nl) = cmd.iter().take(12).position(|&b| b == b'\n') else { return false };
    cmd.get(nl + 1..nl + 5) == Some(b"$8\r\n") && cmd.get(nl + 5..nl + 13).is_some_and(|n| n.eq_ignore_ascii_case(b"failover"))
}

/// What an append's outcome means to the lease machine.
fn append_event(token: AppendToken, now_ms: u64, r: &Result<Appended, LogError>) -> Event {
    match r {
        Ok(a) => Event::AppendAcked { token, last_id: a.last_id, now_ms },
        Err(LogError::Conflict { tail_id, tail_epoch, .. }) => Event::AppendRejected { token, tail_id: *tail_id, tail_epoch: *tail_epoch, now_ms },
        Err(_) => Event::AppendFailed { token, now_ms },
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn failover_is_recognised_by_its_name() {
        assert!(super::is_failover(b"*1\r\n$8\r\nFAILOVER\r\n"));
        assert!(super::is_failover(b"*3\r\n$8\r\nfailover\r\n$7\r\nTIMEOUT\r\n$2\r\n10\r\n"));
        assert!(!super::is_failover(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"));
        assert!(!super::is_failover(b"*1\r\n$8\r\nFAILOVEX\r\n"));
        assert!(!super::is_failover(b""));
    }

    #[test]
    fn flushes_and_keyless_writes_hold_every_read() {
        let index = memoria_core::commands::table::index();
        let scope = |argv: &[&[u8]]| {
            let spec = index.resolve(argv).expect("a known command");
            let mut idx = Vec::new();
            spec.key_indexes_argv(argv, &mut idx);
            super::writes_everything(idx.len())
        };
        assert!(scope(&[b"FLUSHALL"]));
        assert!(scope(&[b"FLUSHDB"]));
        assert!(!scope(&[b"SET", b"k", b"v"]));
        assert!(!scope(&[b"DEL", b"a", b"b"]));
        assert!(!scope(&[b"LMOVE", b"a", b"b", b"LEFT", b"RIGHT"]));
        assert!(!scope(&[b"SORT", b"a", b"BY", b"w_*", b"STORE", b"b"]), "SORT reads the keyspace but writes only b");
    }
}
