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

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use memoria_core::batch::{self, BatchReader, BatchWriter, EffectReader, OutputReader};
use memoria_core::table::{CommandIndex, flags};
use memoria_log::{Appended, LogError, NewEntry};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

use crate::durable::{self, ShardLog};
use crate::tracker::Tracker;
use crate::wasm::{EngineFactory, ShardEngine};

/// Replies for one connection, in order.
pub struct ReplyMsg {
    pub data: Vec<u8>,
    /// Close the connection after writing `data` (QUIT, engine crash, lost log).
    pub close: bool,
    /// How many commands these replies answer (flow control on the connection).
    pub answered: usize,
}

pub enum ShardMsg {
    Connect { id: u64, addr: String, laddr: String, tx: UnboundedSender<ReplyMsg> },
    /// Batch records (kind REC_COMMAND) already framed and validated by the connection.
    Commands { id: u64, records: Vec<u8> },
    Disconnect { id: u64 },
    /// Replicas: entries read from the shard's log, in order, to apply.
    Apply { entries: Vec<memoria_log::Entry> },
    Shutdown,
}

/// How this shard node relates to its log.
pub enum Role {
    /// Writes, appending effects to the log (or keeping them in memory without one).
    Primary(Option<ShardLog>),
    /// Applies the log written by the primary named `primary`; `applied` is the last id.
    Replica { primary: String, applied: u64 },
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

fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

/// Starts the shard as a task on the current runtime. `engine` is already recovered from
/// `log` when there is one.
pub fn spawn(shard_id: usize, factory: EngineFactory, engine: ShardEngine, role: Role, facts: ServerFacts) -> (ShardHandle, JoinHandle<()>) {
    let (tx, rx) = unbounded_channel();
    let (log, replica) = match role {
        Role::Primary(log) => (log, None),
        Role::Replica { primary, applied } => (None, Some(ReplicaState { primary, applied, stopped: None })),
    };
    let join = tokio::spawn(async move {
        let mut s = Shard {
            id: shard_id,
            factory,
            engine,
            clients: HashMap::new(),
            batch: BatchWriter::new(),
            facts,
            seq: 0,
            index: CommandIndex::new(),
            tracker: Tracker::new(),
            held: HashMap::new(),
            log,
            queued: Vec::new(),
            inflight: None,
            out: Vec::new(),
            replica,
            reported_offset: u64::MAX,
        };
        s.send_facts();
        s.run(rx).await;
    });
    (ShardHandle { tx }, join)
}

pub fn seed() -> u64 {
    // The engine has no RNG: per-batch seeds come from here.
    let t = now_us() as u64;
    let addr = &t as *const u64 as u64;
    t.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ addr.rotate_left(17)
}

/// A reply waiting for the log to acknowledge sequence `need`.
struct Held {
    need: u64,
    data: Vec<u8>,
    close: bool,
}

/// The append in flight: its task and the last tracker sequence it makes durable.
struct Inflight {
    task: JoinHandle<Result<Appended, LogError>>,
    last_seq: u64,
}

/// A replica's progress through the primary's log.
struct ReplicaState {
    primary: String,
    applied: u64,
    /// Applying stopped (an entry in a newer format): why.
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
    clients: HashMap<u64, UnboundedSender<ReplyMsg>>,
    batch: BatchWriter,
    facts: ServerFacts,
    seq: u64,
    index: CommandIndex,
    tracker: Tracker,
    /// Per client, replies held behind the log, in order.
    held: HashMap<u64, VecDeque<Held>>,
    log: Option<ShardLog>,
    /// Effects of batches not yet sent to the log: (tracker sequence, effects).
    queued: Vec<(u64, Vec<u8>)>,
    inflight: Option<Inflight>,
    /// Replies ready to send this round, coalesced per client.
    out: Vec<(u64, ReplyMsg)>,
}

impl Shard {
    /// Gives a (new) engine its static facts and its role. The role is in force before
    /// the first client command reaches the engine, so a replica never takes a write.
    fn send_facts(&mut self) {
        let mut b = BatchWriter::new();
        b.record(batch::REC_SERVER_INFO, 0, self.facts.text.as_bytes());
        let (offset, role) = self.role_text();
        b.record(batch::REC_ROLE, 0, role.as_bytes());
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
            ShardMsg::Commands { id: _, records } => {
                self.batch.buf.extend_from_slice(&records);
                self.batch.records += 1;
            }
            ShardMsg::Disconnect { id } => {
                self.clients.remove(&id);
                self.held.remove(&id);
                self.batch.record(batch::REC_DISCONNECT, id, b"");
            }
            ShardMsg::Apply { entries } => self.apply(entries),
            ShardMsg::Shutdown => return false,
        }
        true
    }

    /// Replica: applies the primary's entries. A newer format stops applying (and says
    /// so in INFO, ROLE and the logs) instead of misreading it.
    fn apply(&mut self, entries: Vec<memoria_log::Entry>) {
        let Some(rep) = self.replica.as_mut() else { return };
        if rep.stopped.is_some() {
            return;
        }
        let mut r = durable::Replayed { last_id: rep.applied, tail_id: rep.applied, max_epoch: 0, data_entries: 0, effects: 0 };
        let result = durable::apply_entries(&mut self.engine, &entries, &mut r);
        rep.applied = r.last_id;
        if let Err(e) = result {
            tracing::error!(shard = self.id, error = %e, applied = rep.applied, "replica stopped applying the log");
            rep.stopped = Some(e.to_string());
            self.reported_offset = u64::MAX;
        }
    }

    /// Queues a REC_ROLE record when the offset moved since the last report.
    fn role_record(&mut self) {
        let (offset, text) = self.role_text();
        if offset != self.reported_offset {
            self.reported_offset = offset;
            self.batch.record(batch::REC_ROLE, 0, text.as_bytes());
        }
    }

    /// The node's role and log offset, as REC_ROLE text.
    fn role_text(&self) -> (u64, String) {
        match (&self.replica, &self.log) {
            (Some(r), _) => {
                let link = if r.stopped.is_some() { "down" } else { "up" };
                let (host, port) = r.primary.rsplit_once(':').unwrap_or((r.primary.as_str(), "0"));
                let mut t = format!("replica\nmaster_host:{host}\nmaster_port:{port}\nmaster_link_status:{link}\noffset:{0}\nslave_repl_offset:{0}\nslave_read_repl_offset:{0}\n", r.applied);
                if let Some(why) = &r.stopped {
                    t.push_str(&format!("memoria_apply_stopped:{}\n", why.replace(['\n', '\r'], " ")));
                }
                (r.applied, t)
            }
            (None, Some(l)) => (l.prev_id, format!("primary\noffset:{0}\nmaster_repl_offset:{0}\nmemoria_log:{1}\nmemoria_epoch:{2}\n", l.prev_id, l.name, l.epoch)),
            (None, None) => (0, "primary\noffset:0\nmaster_repl_offset:0\nmemoria_log:none\n".to_string()),
        }
    }

    async fn run(&mut self, mut rx: UnboundedReceiver<ShardMsg>) {
        let mut last_tick = Instant::now();
        loop {
            let has_inflight = self.inflight.is_some();
            let inflight = self.inflight.as_mut().map(|i| &mut i.task);
            let first = tokio::select! {
                m = rx.recv() => match m {
                    Some(m) => Some(m),
                    None => return,
                },
                r = async { inflight.unwrap().await }, if has_inflight => {
                    let done = self.inflight.take().unwrap();
                    let r = r.unwrap_or_else(|e| Err(LogError::Internal(format!("append task: {e}"))));
                    self.appended(done.last_seq, r).await;
                    self.flush();
                    None
                }
                _ = tokio::time::sleep_until((last_tick + TICK).into()) => None,
            };
            self.batch.clear();
            if let Some(m) = first {
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
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                self.batch.record(batch::REC_TICK, 0, b"");
                self.role_record();
            }
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
            self.flush();
        }
    }

    /// On shutdown, waits for the append in flight so acknowledged-looking writes land.
    async fn drain_before_exit(&mut self) {
        if let Some(i) = self.inflight.take() {
            let r = i.task.await.unwrap_or_else(|e| Err(LogError::Internal(format!("append task: {e}"))));
            self.appended(i.last_seq, r).await;
        }
        self.start_append();
        if let Some(i) = self.inflight.take() {
            let r = i.task.await.unwrap_or_else(|e| Err(LogError::Internal(format!("append task: {e}"))));
            self.appended(i.last_seq, r).await;
        }
        self.flush();
    }

    /// Decides, per command, when its reply may go out, and queues the batch's effects.
    fn route(&mut self, input: &[u8], out: &[u8]) {
        let durable = self.log.is_some();
        let mut batch_seq = 0u64;
        let mut batch_fx: Vec<u8> = Vec::new();
        let mut args: Vec<(usize, usize)> = Vec::new();
        for (inp, rec) in BatchReader::new(input).zip(OutputReader::new(out)) {
            let mut need = 0;
            if durable {
                if rec.kind == batch::REC_COMMAND {
                    need = self.need_of(inp.payload, &mut args);
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
            if rec.kind == batch::REC_COMMAND {
                let close = rec.flags & batch::OUT_CLOSE != 0;
                self.deliver(rec.client, need, rec.reply, close);
            }
        }
        if batch_seq != 0 {
            self.queued.push((batch_seq, batch_fx));
        }
    }

    /// The sequence a command's reply must wait for, from the keys it reads.
    fn need_of(&self, cmd: &[u8], args: &mut Vec<(usize, usize)>) -> u64 {
        args.clear();
        if memoria_core::resp::read_command(cmd, args).is_none() || args.is_empty() {
            return 0;
        }
        let argv: Vec<&[u8]> = args.iter().map(|&(a, b)| &cmd[a..b]).collect();
        let Some(spec) = self.index.resolve(&argv) else { return 0 };
        // Whole-keyspace reads, and EXEC (whose queued reads the host does not see), wait
        // for every pending write.
        if spec.flags & flags::KEYSPACE != 0 || spec.name == "exec" {
            return self.tracker.need_all();
        }
        let mut idx = Vec::new();
        spec.key_indexes(argv.len(), &mut idx);
        self.tracker.need_for(idx.iter().map(|&i| argv[i]))
    }

    /// Records the keys each effect writes (databases are not told apart: a false share
    /// only makes a read wait a little, never return early).
    fn track_effects(&mut self, seq: u64, effects: &[u8], args: &mut Vec<(usize, usize)>) {
        for fx in EffectReader::new(effects) {
            args.clear();
            if memoria_core::resp::read_command(fx.command, args).is_none() {
                continue;
            }
            let argv: Vec<&[u8]> = args.iter().map(|&(a, b)| &fx.command[a..b]).collect();
            let Some(spec) = self.index.resolve(&argv) else { continue };
            let mut idx = Vec::new();
            spec.key_indexes(argv.len(), &mut idx);
            for i in idx {
                self.tracker.record(seq, argv[i]);
            }
        }
    }

    fn deliver(&mut self, client: u64, need: u64, reply: &[u8], close: bool) {
        let queue_empty = self.held.get(&client).is_none_or(|q| q.is_empty());
        if need <= self.tracker.acked() && queue_empty {
            self.push_out(client, reply, close, 1);
        } else {
            self.held.entry(client).or_default().push_back(Held { need, data: reply.to_vec(), close });
        }
    }

    fn push_out(&mut self, client: u64, data: &[u8], close: bool, answered: usize) {
        match self.out.iter_mut().rev().find(|(id, _)| *id == client) {
            Some((_, m)) => {
                m.data.extend_from_slice(data);
                m.close |= close;
                m.answered += answered;
            }
            None => self.out.push((client, ReplyMsg { data: data.to_vec(), close, answered })),
        }
    }

    fn flush(&mut self) {
        for (id, m) in self.out.drain(..) {
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
        let last_seq = self.queued.last().map(|(s, _)| *s).unwrap_or(0);
        let entries: Vec<NewEntry> = self.queued.drain(..).map(|(_, fx)| NewEntry::data(fx)).collect();
        let task = tokio::spawn(durable::append_settled(log.api.clone(), log.name.clone(), log.prev_id, log.epoch, entries));
        self.inflight = Some(Inflight { task, last_seq });
    }

    /// The append covering sequences up to `last_seq` finished.
    async fn appended(&mut self, last_seq: u64, r: Result<Appended, LogError>) {
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
        let ids: Vec<u64> = self.held.keys().copied().collect();
        for id in ids {
            let mut ready: Vec<Held> = Vec::new();
            if let Some(q) = self.held.get_mut(&id) {
                while q.front().is_some_and(|h| h.need <= acked) {
                    ready.push(q.pop_front().unwrap());
                }
                if q.is_empty() {
                    self.held.remove(&id);
                }
            }
            for h in ready {
                self.push_out(id, &h.data, h.close, 1);
            }
        }
    }

    /// The log refused or lost an append. The engine holds writes that are not in the log,
    /// so nothing it says can be trusted: fail every held reply (no client is told OK for
    /// a write that is not durable), drop the clients, and rebuild the engine from the log.
    async fn log_failed(&mut self, e: LogError) {
        let fenced = matches!(e, LogError::Conflict { .. });
        tracing::error!(shard = self.id, error = %e, fenced, "log append failed; failing held replies and rebuilding from the log");
        let msg = format!("-ERR write not durable: the log refused it ({e}); reconnect and retry\r\n");
        self.fail_everything(msg.as_bytes());
        self.tracker.reset();
        self.queued.clear();
        self.rebuild().await;
    }

    fn fail_everything(&mut self, msg: &[u8]) {
        let held: Vec<(u64, VecDeque<Held>)> = self.held.drain().collect();
        for (id, q) in held {
            let n = q.len();
            let mut data = Vec::new();
            for _ in 0..n {
                data.extend_from_slice(msg);
            }
            self.push_out(id, &data, true, n);
        }
        for (id, _) in self.clients.iter() {
            if !self.out.iter().any(|(c, _)| c == id) {
                self.out.push((*id, ReplyMsg { data: Vec::new(), close: true, answered: 0 }));
            }
        }
        self.flush();
        self.clients.clear();
    }

    /// Replaces the engine with a fresh one; with a log, replays it and re-claims the shard.
    async fn rebuild(&mut self) {
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
            match durable::recover(api, &name, &node, durable::LEASE_MS, &mut eng).await {
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
        self.tracker.reset();
        self.queued.clear();
        self.rebuild().await;
    }
}
