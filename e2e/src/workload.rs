//! A load driver for end-to-end tests: N clients doing a random mix of GET/SET/INCR/APPEND
//! on a few register keys, plus SETs on ledger keys, against one node or a list of nodes,
//! recording the [`History`] and the [`Ledger`] of acknowledged writes.
//!
//! Riding through failovers: a client uses a node only after `ROLE` says it is a master.
//! On a connection error, a timeout, or a reply that is not the command's result
//! (`-READONLY`, `-MOVED`, "-ERR write outcome unknown…"), it drops the connection and looks
//! for a master again, starting with the next node. Nothing is ever retried: a retried
//! INCR could apply twice, and the history must say exactly what was sent. The client
//! speaks RESP2 itself for the same reason (no library retries or reconnects behind its
//! back).
//!
//! Register keys rotate: after about `ops_per_key` operations per key, and after every
//! Unknown outcome (a failure), clients move to fresh keys. Each key's history stays small
//! and holds the Unknowns of at most about one failure — every Unknown INCR or APPEND
//! multiplies the states a failing search must rule out — and old keys are left alone, so
//! the final reads ([`Config::final_reads`]) show whether their last values survived.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use memoria_core::util::Rng;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use crate::history::{Clock, History, Op, Operation, Outcome, Ret, classify_error, is_result_error, show};

/// Relative weights of the operations a client picks.
#[derive(Clone, Debug)]
pub struct Mix {
    pub get: u32,
    pub set: u32,
    pub incr: u32,
    pub append: u32,
    /// A SET on a ledger key (not in the history; checked by [`Ledger::verify`]).
    pub ledger_set: u32,
}

impl Default for Mix {
    fn default() -> Self {
        Mix { get: 30, set: 20, incr: 20, append: 15, ledger_set: 15 }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Node addresses ("127.0.0.1:6379"); clients find the master among them.
    pub nodes: Vec<String>,
    pub clients: usize,
    /// Register keys in use at a time.
    pub keys: usize,
    /// Move to fresh register keys after about this many operations per key, and after
    /// any Unknown outcome (0: never, not even after failures).
    pub ops_per_key: u64,
    /// Ledger keys per client, overwritten in turn; 0: every ledger SET writes a new key
    /// (a lost write is then always visible: nothing later overwrites it).
    pub ledger_keys_per_client: u64,
    pub mix: Mix,
    /// A reply that takes longer makes the operation Unknown and drops the connection.
    pub op_timeout: Duration,
    pub connect_timeout: Duration,
    /// Pause after trying every node without finding a master.
    pub retry_pause: Duration,
    pub seed: u64,
    /// Namespace of every key this run writes (unique per run by default).
    pub prefix: String,
    /// After stopping, read every register key once more (as one more client), so a lost
    /// write to a key nobody touched again still shows in the history.
    pub final_reads: bool,
    /// How long `stop` and `Ledger::verify` look for a master before giving up.
    pub settle_timeout: Duration,
}

impl Config {
    /// Defaults for a short run against `nodes`.
    pub fn new<S: Into<String>>(nodes: impl IntoIterator<Item = S>) -> Config {
        static RUN: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        let seed = nanos ^ ((std::process::id() as u64) << 32);
        Config {
            nodes: nodes.into_iter().map(Into::into).collect(),
            clients: 4,
            keys: 3,
            ops_per_key: 200,
            ledger_keys_per_client: 0,
            mix: Mix::default(),
            op_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_millis(500),
            retry_pause: Duration::from_millis(20),
            seed,
            prefix: format!("e2e:{:x}:{}", seed, RUN.fetch_add(1, Ordering::Relaxed)),
            final_reads: true,
            settle_timeout: Duration::from_secs(30),
        }
    }
}

/// Counters, readable while the run goes on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Register operations that got their result (including INCR's error results).
    pub ok: u64,
    pub failed: u64,
    pub unknown: u64,
    /// Ledger SETs acknowledged / with unknown outcome.
    pub ledger_acked: u64,
    pub ledger_unknown: u64,
    /// Connections made to a master.
    pub connects: u64,
    /// Replies of a shape the command never gives (a bug somewhere; counted as Unknown).
    pub odd_replies: u64,
}

#[derive(Default)]
struct Counters {
    ok: AtomicU64,
    failed: AtomicU64,
    unknown: AtomicU64,
    ledger_acked: AtomicU64,
    ledger_unknown: AtomicU64,
    connects: AtomicU64,
    odd_replies: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> Stats {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            ok: g(&self.ok),
            failed: g(&self.failed),
            unknown: g(&self.unknown),
            ledger_acked: g(&self.ledger_acked),
            ledger_unknown: g(&self.ledger_unknown),
            connects: g(&self.connects),
            odd_replies: g(&self.odd_replies),
        }
    }
}

/// What a run produced.
#[derive(Debug)]
pub struct RunResult {
    pub history: History,
    pub ledger: Ledger,
    pub stats: Stats,
}

/// A running load. Dropping it without [`Workload::stop`] leaves the clients running
/// until the runtime shuts down.
pub struct Workload {
    cfg: Arc<Config>,
    clock: Clock,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
    tasks: Vec<JoinHandle<(Vec<Operation>, Ledger)>>,
}

impl Workload {
    /// Starts the clients on the current tokio runtime.
    pub fn start(cfg: Config) -> Workload {
        assert!(!cfg.nodes.is_empty() && cfg.clients > 0 && cfg.keys > 0, "a workload needs nodes, clients and keys");
        let cfg = Arc::new(cfg);
        let clock = Clock::new();
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let keygen = Arc::new(KeyGen::default());
        let tasks = (0..cfg.clients)
            .map(|id| {
                let c = ClientTask {
                    id: id as u32,
                    cfg: cfg.clone(),
                    clock: clock.clone(),
                    stop: stop.clone(),
                    counters: counters.clone(),
                    keygen: keygen.clone(),
                };
                tokio::spawn(c.run())
            })
            .collect();
        Workload { cfg, clock, stop, counters, tasks }
    }

    /// The run's time base (for marking drill events on the history's time line).
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    pub fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    /// Waits until at least `n` register operations have succeeded in all (ledger SETs
    /// not counted); false if `timeout` passes first.
    pub async fn wait_for_ok(&self, n: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.counters.ok.load(Ordering::Relaxed) < n {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    /// Signals the clients to stop (each finishes or times out its operation in flight),
    /// does the final reads, and returns everything recorded.
    pub async fn stop(mut self) -> RunResult {
        self.stop.store(true, Ordering::Relaxed);
        let mut history = History::new();
        let mut ledger = Ledger::default();
        for t in std::mem::take(&mut self.tasks) {
            let (ops, l) = t.await.expect("workload client task panicked");
            history.ops.extend(ops);
            ledger.merge(l);
        }
        if self.cfg.final_reads {
            self.final_reads(&mut history).await;
        }
        RunResult { history, ledger, stats: self.counters.snapshot() }
    }

    /// One GET of every register key, by a client id no other client has.
    async fn final_reads(&self, history: &mut History) {
        let mut keys: Vec<Vec<u8>> = history.ops.iter().map(|o| o.op.key().to_vec()).collect();
        keys.sort();
        keys.dedup();
        let client = self.cfg.clients as u32;
        let deadline = Instant::now() + self.cfg.settle_timeout;
        let mut node = 0;
        let mut conn: Option<Conn> = None;
        for key in keys {
            let op = Op::Get { key };
            // A read that fails says nothing: try again on a fresh connection.
            while Instant::now() < deadline {
                if conn.is_none() {
                    conn = find_master(&self.cfg, &mut node, || Instant::now() >= deadline).await;
                    if conn.is_none() {
                        break;
                    }
                    self.counters.connects.fetch_add(1, Ordering::Relaxed);
                }
                let c = conn.as_mut().expect("connected above");
                let (o, keep) = execute(c, client, &op, &self.clock, self.cfg.op_timeout, &self.counters).await;
                if !keep {
                    conn = None;
                    node += 1;
                }
                if matches!(o.outcome, Outcome::Ok(_)) {
                    history.push(o);
                    break;
                }
            }
        }
    }
}

/// Runs a workload for `duration` and stops it.
pub async fn run_for(cfg: Config, duration: Duration) -> RunResult {
    let w = Workload::start(cfg);
    tokio::time::sleep(duration).await;
    w.stop().await
}

struct ClientTask {
    id: u32,
    cfg: Arc<Config>,
    clock: Clock,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
    keygen: Arc<KeyGen>,
}

/// The generation of register keys in use (shared by the clients; approximate on purpose).
#[derive(Default)]
struct KeyGen {
    current: AtomicU64,
    ops: AtomicU64,
}

impl KeyGen {
    /// The generation for the next operation; moves on after `limit` operations.
    fn next(&self, limit: u64) -> u64 {
        let g = self.current.load(Ordering::Relaxed);
        if limit > 0 && self.ops.fetch_add(1, Ordering::Relaxed) + 1 >= limit {
            self.bump(g);
        }
        g
    }

    /// Moves past generation `g` (once, however many clients ask).
    fn bump(&self, g: u64) {
        if self.current.compare_exchange(g, g + 1, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            self.ops.store(0, Ordering::Relaxed);
        }
    }
}

impl ClientTask {
    async fn run(self) -> (Vec<Operation>, Ledger) {
        let cfg = &self.cfg;
        let mut rng = Rng::new(cfg.seed ^ (self.id as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut ops = Vec::new();
        let mut ledger = Ledger::default();
        let mut seq: u64 = 0;
        let mut node = self.id as usize % cfg.nodes.len();
        let mut conn: Option<Conn> = None;
        let m = &cfg.mix;
        let total = (m.get + m.set + m.incr + m.append + m.ledger_set).max(1) as u64;
        while !self.stop.load(Ordering::Relaxed) {
            if conn.is_none() {
                conn = find_master(cfg, &mut node, || self.stop.load(Ordering::Relaxed)).await;
                let Some(_) = conn else { break };
                self.counters.connects.fetch_add(1, Ordering::Relaxed);
            }
            let c = conn.as_mut().expect("connected above");
            seq += 1;
            // Values are unique per (client, seq): distinct states keep the search small,
            // and a read names the write it saw.
            let mut pick = rng.below(total) as u32;
            if pick < m.ledger_set {
                let idx = if cfg.ledger_keys_per_client == 0 { seq } else { seq % cfg.ledger_keys_per_client };
                let key = format!("{}:l{}:{}", cfg.prefix, self.id, idx).into_bytes();
                let val = format!("c{}.{}", self.id, seq).into_bytes();
                let op = Op::Set { key: key.clone(), val: val.clone() };
                let (o, keep) = execute(c, self.id, &op, &self.clock, cfg.op_timeout, &self.counters).await;
                match o.outcome {
                    Outcome::Ok(_) => {
                        self.counters.ledger_acked.fetch_add(1, Ordering::Relaxed);
                        ledger.acked(key, val);
                    }
                    Outcome::Unknown(_) => {
                        self.counters.ledger_unknown.fetch_add(1, Ordering::Relaxed);
                        ledger.maybe(key, val);
                    }
                    Outcome::Failed(_) => {}
                }
                if !keep {
                    conn = None;
                    node += 1;
                }
                continue;
            }
            pick -= m.ledger_set;
            let generation = self.keygen.next(cfg.ops_per_key * cfg.keys as u64);
            let key = format!("{}:r{}:{}", cfg.prefix, generation, rng.below(cfg.keys as u64)).into_bytes();
            let op = if pick < m.get {
                Op::Get { key }
            } else if pick < m.get + m.set {
                // Mostly integers (so INCR succeeds), sometimes not (so it fails).
                let val = if rng.below(10) < 8 { (self.id as u64 * 1_000_000_000 + seq).to_string() } else { format!("s{}.{}", self.id, seq) };
                Op::Set { key, val: val.into_bytes() }
            } else if pick < m.get + m.set + m.incr {
                Op::Incr { key }
            } else {
                // A digit keeps an integer an integer (until it outgrows i64); a letter ends it.
                let val = if rng.below(10) < 7 { vec![b'1' + rng.below(9) as u8] } else { b"a".to_vec() };
                Op::Append { key, val }
            };
            let (o, keep) = execute(c, self.id, &op, &self.clock, cfg.op_timeout, &self.counters).await;
            let counter = match o.outcome {
                Outcome::Ok(_) => &self.counters.ok,
                Outcome::Failed(_) => &self.counters.failed,
                Outcome::Unknown(_) => {
                    if cfg.ops_per_key > 0 {
                        self.keygen.bump(generation);
                    }
                    &self.counters.unknown
                }
            };
            counter.fetch_add(1, Ordering::Relaxed);
            ops.push(o);
            if !keep {
                conn = None;
                node += 1;
            }
        }
        (ops, ledger)
    }
}

/// Sends one command and classifies what came back (see [`crate::history`]). The bool
/// says whether the connection may be used again.
async fn execute(c: &mut Conn, client: u32, op: &Op, clock: &Clock, timeout: Duration, counters: &Counters) -> (Operation, bool) {
    let invoke_ns = clock.now_ns();
    let r = tokio::time::timeout(timeout, c.request(&op.argv())).await;
    let return_ns = clock.now_ns();
    let (outcome, keep) = match r {
        Err(_) => (Outcome::Unknown(format!("no reply within {timeout:?}")), false),
        Ok(Err(e)) => (Outcome::Unknown(format!("connection: {e}")), false),
        Ok(Ok(Reply::Error(msg))) if is_result_error(op, &msg) => (Outcome::Ok(Ret::Err(msg)), true),
        Ok(Ok(Reply::Error(msg))) => match classify_error(&msg) {
            Some(why) => (Outcome::Failed(why), false),
            None => (Outcome::Unknown(msg), false),
        },
        Ok(Ok(reply)) => match to_ret(op, reply) {
            Ok(ret) => (Outcome::Ok(ret), true),
            Err(odd) => {
                counters.odd_replies.fetch_add(1, Ordering::Relaxed);
                (Outcome::Unknown(format!("unexpected reply {odd}")), false)
            }
        },
    };
    (Operation { client, op: op.clone(), invoke_ns, return_ns, outcome }, keep)
}

fn to_ret(op: &Op, r: Reply) -> Result<Ret, String> {
    match (op, r) {
        (Op::Get { .. }, Reply::Bulk(None)) => Ok(Ret::Nil),
        (Op::Get { .. }, Reply::Bulk(Some(v))) => Ok(Ret::Bulk(v)),
        (Op::Set { .. }, Reply::Simple(s)) if s == "OK" => Ok(Ret::Ok),
        (Op::Incr { .. } | Op::Append { .. }, Reply::Int(i)) => Ok(Ret::Int(i)),
        (_, r) => Err(format!("{r:?}")),
    }
}

/// Tries the nodes in turn from `*node` until one answers `ROLE` as a master; pauses after
/// each full round. None once `give_up()` says so.
async fn find_master(cfg: &Config, node: &mut usize, give_up: impl Fn() -> bool) -> Option<Conn> {
    loop {
        for _ in 0..cfg.nodes.len() {
            if give_up() {
                return None;
            }
            *node %= cfg.nodes.len();
            let addr = &cfg.nodes[*node];
            if let Ok(Ok(mut c)) = tokio::time::timeout(cfg.connect_timeout, Conn::connect(addr)).await
                && let Ok(Ok(Reply::Array(Some(role)))) = tokio::time::timeout(cfg.op_timeout, c.request(&[b"ROLE"])).await
                && matches!(role.first(), Some(Reply::Bulk(Some(r))) if r == b"master")
            {
                return Some(c);
            }
            *node += 1;
        }
        if give_up() {
            return None;
        }
        tokio::time::sleep(cfg.retry_pause).await;
    }
}

/// A RESP2 reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

/// A bare RESP2 connection: one request, one reply, no retries.
pub struct Conn {
    io: BufReader<TcpStream>,
}

/// Replies larger than this are refused (nothing in a workload comes close).
const MAX_BULK: usize = 64 << 20;

impl Conn {
    pub async fn connect(addr: &str) -> io::Result<Conn> {
        let s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        Ok(Conn { io: BufReader::new(s) })
    }

    /// Sends one command and reads its reply.
    pub async fn request(&mut self, argv: &[&[u8]]) -> io::Result<Reply> {
        self.send(argv).await?;
        self.read_reply().await
    }

    /// Sends one command without waiting for its reply (read it with `read_reply`).
    pub async fn send(&mut self, argv: &[&[u8]]) -> io::Result<()> {
        let mut buf = Vec::new();
        memoria_core::protocol::resp::encode_command(&mut buf, argv);
        self.io.get_mut().write_all(&buf).await
    }

    /// Sends several commands at once and reads all their replies (for verification).
    pub async fn pipeline(&mut self, cmds: &[Vec<&[u8]>]) -> io::Result<Vec<Reply>> {
        let mut buf = Vec::new();
        for argv in cmds {
            memoria_core::protocol::resp::encode_command(&mut buf, argv);
        }
        self.io.get_mut().write_all(&buf).await?;
        let mut out = Vec::with_capacity(cmds.len());
        for _ in cmds {
            out.push(self.read_reply().await?);
        }
        Ok(out)
    }

    /// Reads the next reply.
    pub fn read_reply(&mut self) -> Pin<Box<dyn Future<Output = io::Result<Reply>> + Send + '_>> {
        Box::pin(async move {
            let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
            let mut line = Vec::new();
            self.io.read_until(b'\n', &mut line).await?;
            if line.is_empty() {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
            }
            if !line.ends_with(b"\r\n") {
                return Err(bad("truncated reply line"));
            }
            let body = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
            let num = || body.parse::<i64>().map_err(|_| bad("bad length or integer"));
            match line[0] {
                b'+' => Ok(Reply::Simple(body)),
                b'-' => Ok(Reply::Error(body)),
                b':' => Ok(Reply::Int(num()?)),
                b'$' => {
                    let n = num()?;
                    if n < 0 {
                        return Ok(Reply::Bulk(None));
                    }
                    let n = n as usize;
                    if n > MAX_BULK {
                        return Err(bad("bulk reply too large"));
                    }
                    let mut v = vec![0; n + 2];
                    self.io.read_exact(&mut v).await?;
                    v.truncate(n);
                    Ok(Reply::Bulk(Some(v)))
                }
                b'*' => {
                    let n = num()?;
                    if n < 0 {
                        return Ok(Reply::Array(None));
                    }
                    let mut items = Vec::with_capacity((n as usize).min(1024));
                    for _ in 0..n {
                        items.push(self.read_reply().await?);
                    }
                    Ok(Reply::Array(Some(items)))
                }
                _ => Err(bad("unknown reply type")),
            }
        })
    }
}

/// Acknowledged writes to ledger keys.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    pub keys: BTreeMap<Vec<u8>, LedgerEntry>,
}

/// What one ledger key may hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LedgerEntry {
    /// The last acknowledged value (None: never acknowledged).
    pub acked: Option<Vec<u8>>,
    /// Values of writes with unknown outcome: any may have landed, even after a later
    /// acknowledged write (a request can sit in a frozen server's socket buffer).
    pub maybe: Vec<Vec<u8>>,
}

impl Ledger {
    /// Records an acknowledged write (each key has one writer, so "last" is well defined).
    pub fn acked(&mut self, key: Vec<u8>, val: Vec<u8>) {
        self.keys.entry(key).or_default().acked = Some(val);
    }

    /// Records a write whose outcome is unknown.
    pub fn maybe(&mut self, key: Vec<u8>, val: Vec<u8>) {
        self.keys.entry(key).or_default().maybe.push(val);
    }

    fn merge(&mut self, other: Ledger) {
        // Clients write disjoint keys.
        self.keys.extend(other.keys);
    }

    /// Keys with an acknowledged value.
    pub fn acked_count(&self) -> usize {
        self.keys.values().filter(|e| e.acked.is_some()).count()
    }

    /// Reads every ledger key back from the master among `nodes` and compares.
    pub async fn verify<S: AsRef<str>>(&self, nodes: &[S], timeout: Duration) -> Result<LedgerReport, String> {
        let mut cfg = Config::new(nodes.iter().map(|s| s.as_ref().to_string()));
        cfg.op_timeout = timeout;
        let deadline = Instant::now() + timeout;
        let mut node = 0;
        let mut conn = find_master(&cfg, &mut node, || Instant::now() >= deadline).await.ok_or("no master found to verify the ledger against")?;
        let mut report = LedgerReport::default();
        let keys: Vec<(&Vec<u8>, &LedgerEntry)> = self.keys.iter().collect();
        for chunk in keys.chunks(500) {
            let cmds: Vec<Vec<&[u8]>> = chunk.iter().map(|(k, _)| vec![&b"GET"[..], k.as_slice()]).collect();
            let replies = tokio::time::timeout(timeout, conn.pipeline(&cmds))
                .await
                .map_err(|_| "ledger read timed out".to_string())?
                .map_err(|e| format!("ledger read: {e}"))?;
            for ((key, LedgerEntry { acked, maybe }), reply) in chunk.iter().zip(replies) {
                report.checked += 1;
                let got = match reply {
                    Reply::Bulk(v) => v,
                    other => return Err(format!("GET {} answered {other:?}", show(key))),
                };
                let possible = |v: &Vec<u8>| acked.as_ref() == Some(v) || maybe.contains(v);
                match (&got, acked) {
                    (Some(v), _) if possible(v) => {}
                    (None, None) => {}
                    (None, Some(a)) => report.missing.push(((*key).clone(), a.clone())),
                    (Some(v), _) => report.wrong.push(Wrong { key: (*key).clone(), acked: acked.clone(), found: v.clone() }),
                }
            }
        }
        Ok(report)
    }
}

/// What [`Ledger::verify`] found.
#[derive(Clone, Debug, Default)]
pub struct LedgerReport {
    pub checked: usize,
    /// Acknowledged, but the key is gone: (key, acknowledged value).
    pub missing: Vec<(Vec<u8>, Vec<u8>)>,
    /// Values that no acknowledged or in-doubt write put there.
    pub wrong: Vec<Wrong>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wrong {
    pub key: Vec<u8>,
    pub acked: Option<Vec<u8>>,
    pub found: Vec<u8>,
}

impl LedgerReport {
    pub fn is_clean(&self) -> bool {
        self.missing.is_empty() && self.wrong.is_empty()
    }
}

impl fmt::Display for LedgerReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "ledger: {} keys checked, {} missing, {} wrong", self.checked, self.missing.len(), self.wrong.len())?;
        for (k, v) in self.missing.iter().take(20) {
            writeln!(f, "  missing {} (acknowledged {})", show(k), show(v))?;
        }
        for w in self.wrong.iter().take(20) {
            writeln!(f, "  wrong {}: found {}, acknowledged {}", show(&w.key), show(&w.found), w.acked.as_deref().map_or("nothing".into(), show))?;
        }
        Ok(())
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ok, {} failed, {} unknown; ledger {} acked, {} unknown; {} connects, {} odd replies",
            self.ok, self.failed, self.unknown, self.ledger_acked, self.ledger_unknown, self.connects, self.odd_replies
        )
    }
}
