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
//!
//! The files: `event_loop` (the loop and batching), `route` and `gate` (when a reply may
//! go out: the durability gate, pure), `log_path` (group commit and append outcomes),
//! `replica` (tailing and reloads), `election` (the lease machine's actions), `busy` (a
//! script that outlasts an engine call), `rebuild`
//! (a new engine after a crash or a refused append), `facts` (what the engine is told of
//! its role and cluster).

mod blocking;
mod busy;
mod cohort;
mod election;
mod event_loop;
mod facts;
mod gate;
mod log_path;
mod migrate;
mod rebuild;
mod replica;
mod route;
mod save;
mod scrape;
mod stats;
mod tracker;
mod wait;
#[cfg(test)]
mod sim;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memoria_core::protocol::batch::BatchWriter;
use memoria_log::{Appended, LogError, LogHandle};
use tokio::sync::mpsc::{UnboundedSender, WeakUnboundedSender, unbounded_channel};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::durable::ShardLog;
use crate::lease::{self, Action, AppendToken, Event, Lease};
use crate::limits::HostLimits;
use crate::snapshot::SnapshotStore;
use crate::wasm::{EngineFactory, ShardEngine};

use self::blocking::Blocking;
use self::election::Elect;
use self::facts::ClusterView;
use self::gate::Gate;
use self::replica::{ReplicaState, watch_peers};

/// Replies for one connection, in order.
pub struct ReplyMsg {
    pub data: Vec<u8>,
    /// Close the connection after writing `data` (QUIT, engine crash, lost log).
    pub close: bool,
    /// How many commands these replies answer (flow control on the connection).
    pub answered: usize,
    /// The client is subscribed (pub/sub output limits, no idle timeout).
    pub pubsub: bool,
    /// The client must still authenticate (`batch::OUT_AUTH_REQUIRED`): its requests are
    /// framed one at a time with the unauthenticated limits, its output is bounded.
    pub auth_required: bool,
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
        /// Came through the stable endpoint (handoff.rs): served only while this node is
        /// the primary, closed at once otherwise (the client reconnects and reaches it).
        primary_only: bool,
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
    /// A WAIT (or SAVE) of `client` is answered with `reply`.
    WaitDone {
        client: u64,
        token: u64,
        reply: Vec<u8>,
    },
    /// A MIGRATE's transfer ended: the REC_MIGRATED payload for `client`.
    Migrated {
        client: u64,
        outcome: Vec<u8>,
    },
    /// The snapshot SAVE/BGSAVE started is published (or failed, and why).
    Saved {
        result: Result<(), String>,
    },
    /// A scrape for the node's `/metrics`: the shard's families, as Prometheus text.
    Metrics {
        reply: oneshot::Sender<String>,
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

/// Starts the shard as a task on the current runtime. `engine` is already recovered from
/// `log` when there is one.
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
    saver: Option<crate::snapshot::schedule::Runner>,
) -> (ShardHandle, JoinHandle<()>) {
    let (tx, rx) = unbounded_channel();
    let self_tx = tx.downgrade();
    let (standing, source) = match role {
        Role::Primary(log) => {
            let source = log.as_ref().map(|l| (l.api.clone(), l.name.clone()));
            (Standing::Primary(log), source)
        }
        Role::Replica { primary, applied, api, name } => {
            (Standing::Replica(ReplicaState { primary, applied, tail: applied, stopped: None }), Some((api, name)))
        }
    };
    let mut pending = VecDeque::new();
    let election = election.map(|e| {
        let applied = standing.replica().map_or(0, |r| r.applied);
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
            gate: Gate::new(memoria_core::commands::table::index(), Instant::now()),
            standing,
            inflight: None,
            cohort: cohort::Cohort::default(),
            reported_offset: u64::MAX,
            self_tx,
            migrations: Default::default(),
            source,
            tail: None,
            tail_gen: 0,
            reload_due: false,
            election,
            pending,
            freeze: None,
            node: me.node,
            cluster: me.cluster.then(|| ClusterView { peers: Vec::new(), shard: me.shard, shared: me.shared, reported_version: 0 }),
            peers_task: None,
            snapshots,
            blocking: Blocking::new(),
            host,
            resign: false,
            held: VecDeque::new(),
            batch_suspects: Vec::new(),
            events: stats::HostEvents::default(),
            saves: save::Saves::new(saver),
        };
        if s.cluster.is_some()
            && let Some((api, name)) = s.source.clone()
        {
            s.peers_task = Some(tokio::spawn(watch_peers(api, name, s.self_tx.clone())));
        }
        s.send_facts();
        if let Some(rep) = s.standing.replica() {
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

/// The append in flight: its task, the last tracker sequence it makes durable (0 for a
/// renewal or a claim), and its lease token (with an election).
struct Inflight {
    task: JoinHandle<Result<Appended, LogError>>,
    last_seq: u64,
    token: Option<AppendToken>,
    started: Instant,
}

/// What this node is for its shard now.
enum Standing {
    /// Writes; with a log, appends its effects to it (`None`: in memory only).
    Primary(Option<ShardLog>),
    /// Applies the primary's log.
    Replica(ReplicaState),
}

impl Standing {
    fn log(&self) -> Option<&ShardLog> {
        match self {
            Standing::Primary(l) => l.as_ref(),
            Standing::Replica(_) => None,
        }
    }
    fn log_mut(&mut self) -> Option<&mut ShardLog> {
        match self {
            Standing::Primary(l) => l.as_mut(),
            Standing::Replica(_) => None,
        }
    }
    fn replica(&self) -> Option<&ReplicaState> {
        match self {
            Standing::Replica(r) => Some(r),
            Standing::Primary(_) => None,
        }
    }
    fn replica_mut(&mut self) -> Option<&mut ReplicaState> {
        match self {
            Standing::Replica(r) => Some(r),
            Standing::Primary(_) => None,
        }
    }
    fn is_replica(&self) -> bool {
        matches!(self, Standing::Replica(_))
    }
}

struct Shard {
    /// The log offset last reported to the engine (INFO replication, ROLE).
    reported_offset: u64,
    id: usize,
    factory: EngineFactory,
    engine: ShardEngine,
    clients: ClientMap<UnboundedSender<ReplyMsg>>,
    batch: BatchWriter,
    facts: ServerFacts,
    /// Primary (with its log, if any) or replica (with its progress through the log).
    standing: Standing,
    /// The durability gate: held replies, the key tracker, effects queued for the log.
    gate: Gate,
    /// Engine calls made (mixed into each call's seed).
    seq: u64,
    inflight: Option<Inflight>,
    /// Whether the next append waits for the clients the last answer released.
    cohort: cohort::Cohort,
    /// Our own queue, for the tail task.
    self_tx: WeakUnboundedSender<ShardMsg>,
    /// MIGRATE transfers running, by client: stopped when the client goes.
    migrations: std::collections::HashMap<u64, tokio::task::AbortHandle>,
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
    /// A FAILOVER was accepted: step down once its reply is out.
    resign: bool,
    /// Messages that came while a script ran and wait for its end (`busy`), or that hold
    /// a suspect of the watchdog and wait for a batch of their own (`poison.rs`).
    held: VecDeque<ShardMsg>,
    /// The watchdog's suspects in the batch being gathered: it takes nothing more.
    batch_suspects: Vec<crate::poison::Fingerprint>,
    /// Latency events of the host for the engine's monitor, and the last append's time.
    events: stats::HostEvents,
    /// SAVE and BGSAVE: how to take a snapshot, and the one being taken.
    saves: save::Saves,
}
