//! Test helpers: an in-process Memoria server on its own thread and runtime (as in
//! production: one event-loop thread), and a redis-server started by the test.
#![allow(dead_code)]

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use memoria_host::limits::ConnLimits;
use memoria_host::server::{self, ServerOptions};

pub struct Memoria {
    pub port: u16,
    /// Freezes the node's shard (test hook: commands sent meanwhile form one batch).
    pub freezer: memoria_host::server::Freezer,
    /// The shard's handle (for the metrics endpoint).
    pub handle: memoria_host::shard::ShardHandle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Memoria {
    pub fn start() -> Memoria {
        Self::start_with(ConnLimits::default())
    }

    pub fn start_with(limits: ConnLimits) -> Memoria {
        Self::start_full(limits, Default::default())
    }

    /// A node started with `--requirepass` / protected-mode options.
    pub fn start_with_auth(auth: memoria_host::acl::AuthOptions) -> Memoria {
        Self::start_full(ConnLimits::default(), auth)
    }

    pub fn start_full(limits: ConnLimits, auth: memoria_host::acl::AuthOptions) -> Memoria {
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let srv = server::start(ServerOptions {
                    bind: "127.0.0.1".into(),
                    port: 0,
                    data_dir: "/nonexistent".into(),
                    limits,
                    log: None,
                    node: "test".into(),
                    replica_of: None,
                    lease_ms: None,
                    cluster: false,
                    snapshots: None,
                    auth,
                })
                .await
                .expect("server starts");
                port_tx.send((srv.addr.port(), srv.freezer(), srv.shard_handle())).unwrap();
                let _ = stop_rx.await;
                srv.shutdown().await;
            });
        });
        let (port, freezer, handle) = port_rx.recv_timeout(Duration::from_secs(60)).expect("memoria did not start");
        Memoria { port, freezer, handle, stop: Some(stop_tx), thread: Some(thread) }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Memoria {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A throwaway redis-server on a free loopback port (Debian's 7.0.x).
pub struct RedisServer {
    pub port: u16,
    child: Child,
}

/// A free loopback port below the kernel's ephemeral range (32768+), where the servers
/// this process binds to port 0 and its outgoing connections never land.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    loop {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let mix = std::process::id().wrapping_mul(2_654_435_761) ^ nanos ^ NEXT.fetch_add(1, Ordering::Relaxed).wrapping_mul(40_503);
        let port = 20_000 + (mix % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() && handed_out(port) {
            return port;
        }
    }
}

/// True the first time this process hands out `port`. Tests of one binary run in
/// parallel: two of them given the same free port (both probed it before either bound it)
/// would start two servers on it, and the one that lost the bind would serve its test
/// through the other's process, which may end first (CI saw `connect` fail that way).
fn handed_out(port: u16) -> bool {
    static HANDED: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
    if handed.contains(&port) {
        return false;
    }
    handed.push(port);
    true
}

impl RedisServer {
    pub fn start(extra: &[&str]) -> RedisServer {
        let bin = which("redis-server")
            .unwrap_or_else(|| panic!("redis-server is required for this test: install it with `apt-get install -y redis-server redis-tools`"));
        for _ in 0..20 {
            let port = free_port();
            // Memoria's maxmemory defaults to its engine's 3 GiB ceiling (as a 32-bit
            // redis-server's does): the oracle starts with the same.
            let mut child = Command::new(&bin)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no"])
                .args(["--maxmemory", "3221225472"])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server");
            if serves_on(&mut child, port) {
                return RedisServer { port, child };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("redis-server did not start on any of 20 free ports");
    }
}

/// Whether `child` itself answers on `port`. A port found free can be handed out again
/// before the child binds it (to another test's server in this process): the child then
/// exits, and whoever holds the port would answer in its place, so INFO must show the
/// child's pid.
fn serves_on(child: &mut Child, port: u16) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if child.try_wait().ok().flatten().is_some() {
            return false;
        }
        match info_pid(port) {
            Some(pid) => return pid == child.id(),
            // Not listening yet, or the listener went away mid-probe: look again.
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

/// `process_id` from INFO server on `port`; None on any connection or reply error.
fn info_pid(port: u16) -> Option<u32> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).ok()?;
    let mut con = client.get_connection_with_timeout(Duration::from_secs(10)).ok()?;
    con.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let info: redis::InfoDict = redis::cmd("INFO").arg("server").query(&mut con).ok()?;
    info.get("process_id")
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|p| p.is_file()))
}

/// A minimal blocking RESP client that returns raw reply bytes, so tests compare exactly
/// what a client would see (error texts included).
pub struct Raw {
    pub s: TcpStream,
    buf: Vec<u8>,
}

impl Raw {
    pub fn connect(port: u16) -> Raw {
        Raw::try_connect(port).expect("connect")
    }

    /// Connects, or `None` when nothing listens (a node a test has just killed).
    pub fn try_connect(port: u16) -> Option<Raw> {
        let s = TcpStream::connect(("127.0.0.1", port)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
        s.set_nodelay(true).ok()?;
        Some(Raw { s, buf: Vec::new() })
    }

    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        use std::io::Write;
        let mut out = Vec::new();
        memoria_core::protocol::resp::encode_command(&mut out, args);
        self.s.write_all(&out).unwrap();
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.s.write_all(bytes).unwrap();
    }

    /// Reads one complete reply (any RESP2/RESP3 type) and returns its bytes.
    pub fn read_reply(&mut self) -> Vec<u8> {
        use std::io::Read;
        loop {
            if let Some(n) = reply_len(&self.buf, 0) {
                let r = self.buf[..n].to_vec();
                self.buf.drain(..n);
                return r;
            }
            let mut tmp = [0u8; 65536];
            let n = self.s.read(&mut tmp).expect("read reply");
            assert!(n > 0, "connection closed while waiting for a reply; have {:?}", String::from_utf8_lossy(&self.buf));
            self.buf.extend_from_slice(&tmp[..n]);
        }
    }

    /// True once the server closed the connection (reads EOF).
    pub fn closed(&mut self) -> bool {
        use std::io::Read;
        let mut tmp = [0u8; 1024];
        matches!(self.s.read(&mut tmp), Ok(0) | Err(_))
    }

    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Vec<u8> {
        self.send(args);
        self.read_reply()
    }
}

/// Length of the complete RESP value starting at `pos`, or None if incomplete.
pub fn reply_len(b: &[u8], pos: usize) -> Option<usize> {
    let line_end = |from: usize| -> Option<usize> { b[from..].windows(2).position(|w| w == b"\r\n").map(|p| from + p) };
    if pos >= b.len() {
        return None;
    }
    let end = line_end(pos)?;
    let head = &b[pos + 1..end];
    let num = || std::str::from_utf8(head).ok()?.parse::<i64>().ok();
    let after = end + 2;
    match b[pos] {
        b'+' | b'-' | b':' | b',' | b'#' | b'_' | b'(' => Some(after - pos),
        b'$' | b'=' | b'!' => {
            let n = num()?;
            if n < 0 {
                return Some(after - pos);
            }
            let total = after + n as usize + 2;
            if b.len() < total { None } else { Some(total - pos) }
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = num()?;
            if n < 0 {
                return Some(after - pos);
            }
            let items = if b[pos] == b'%' || b[pos] == b'|' { n * 2 } else { n };
            let mut p = after;
            for _ in 0..items {
                p += reply_len(b, p)?;
            }
            Some(p - pos)
        }
        _ => Some(after - pos),
    }
}

/// A primary and a replica of it, each a server on its own runtime thread.
pub struct LoggedPair {
    pub primary: u16,
    pub replica: u16,
    pub log: memoria_log::LogCore,
    /// Removed when the pair is dropped (the servers, which live until the test process
    /// ends, keep their open files).
    _dir: tempfile::TempDir,
}

/// A primary and a replica in one process, sharing one embedded SQLite log.
pub fn start_logged_pair(tag: &str) -> LoggedPair {
    start_logged_pair_with_lease(tag, None)
}

/// `start_logged_pair`, with elections on a lease of `lease_ms` when given (which node
/// leads is then the election's, not fixed).
pub fn start_logged_pair_with_lease(tag: &str, lease_ms: Option<u64>) -> LoggedPair {
    let dir = tempfile::Builder::new().prefix(&format!("memoria-{tag}-")).tempdir().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let path = dir.path().join("log.sqlite");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let log = memoria_log::LogCore::open_sqlite(&path).await.unwrap();
            let opts = |log: memoria_log::LogHandle, replica_of: Option<String>| ServerOptions {
                bind: "127.0.0.1".into(),
                port: 0,
                data_dir: "/nonexistent".into(),
                limits: ConnLimits::default(),
                log: Some(log),
                node: "n".into(),
                replica_of,
                lease_ms,
                cluster: false,
                snapshots: None,
                auth: Default::default(),
            };
            let p = server::start(opts(memoria_log::LogHandle::Embedded(log.clone()), None)).await.unwrap();
            let r = server::start(opts(memoria_log::LogHandle::Embedded(log.clone()), Some(p.addr.to_string()))).await.unwrap();
            tx.send((p.addr.port(), r.addr.port(), log)).unwrap();
            std::future::pending::<()>().await;
        });
    });
    let (primary, replica, log) = rx.recv_timeout(Duration::from_secs(60)).expect("servers start");
    LoggedPair { primary, replica, log, _dir: dir }
}

/// INFO's blocked_clients as seen by a fresh connection.
pub fn blocked_clients(port: u16) -> usize {
    let mut c = Raw::connect(port);
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "clients"])).into_owned();
    info.lines().find_map(|l| l.strip_prefix("blocked_clients:")).and_then(|v| v.trim().parse().ok()).expect("blocked_clients in INFO")
}

/// Waits (up to 10 s, a liveness bound) until exactly `n` clients are blocked.
pub fn wait_blocked(port: u16, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while blocked_clients(port) != n {
        assert!(Instant::now() < deadline, "expected {n} blocked clients, have {}", blocked_clients(port));
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until something listens on loopback `port` (a `memoria` process starting).
pub fn wait_listening(port: u16) {
    wait_listening_unless(port, || None);
}

/// `wait_listening`, failing at once with what `ended` says when it says something (the
/// process that was to listen has exited).
fn wait_listening_unless(port: u16, mut ended: impl FnMut() -> Option<String>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(why) = ended() {
            panic!("{why}");
        }
        assert!(Instant::now() < deadline, "memoria did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Fills list `key` with `thousands` × 1000 distinct-looking members (a list whose SORT
/// ALPHA takes a while: a legitimate request, just a slow one).
pub fn push_big_list(c: &mut Raw, key: &str, thousands: usize) {
    for chunk in 0..thousands {
        let mut args = vec!["RPUSH".to_string(), key.to_string()];
        args.extend((0..1000).map(|i| format!("member-{}", (chunk * 7919 + i * 104729) % 1_000_003)));
        assert!(c.cmd(&args).starts_with(b":"));
    }
}

/// Every data payload in the log so far, concatenated.
pub fn log_bytes(log: &memoria_log::LogCore) -> Vec<u8> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut all = Vec::new();
        let mut after = 0;
        loop {
            let b = memoria_log::LogApi::read(log, "shard-0", after, 1000, Duration::ZERO).await.unwrap();
            let Some(last) = b.entries.last() else { break };
            after = last.id;
            for e in &b.entries {
                all.extend_from_slice(&e.payload);
            }
        }
        all
    })
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Runs `conversation` (what one scripted exchange saw, one line per step) against a
/// fresh redis-server and a fresh Memoria, and asserts both saw the same, listing every
/// step that differs.
pub fn same_as_redis(what: &str, conversation: impl Fn(u16) -> Vec<String>) {
    let redis = RedisServer::start(&[]);
    let memoria = Memoria::start();
    let want = conversation(redis.port);
    let got = conversation(memoria.port);
    assert_eq!(want.len(), got.len(), "{what}: the conversations took different turns");
    let diffs: Vec<String> = want.iter().zip(&got).filter(|(w, g)| w != g).map(|(w, g)| format!("  redis:   {w}\n  memoria: {g}")).collect();
    assert!(diffs.is_empty(), "{what} differs from redis-server:\n{}", diffs.join("\n"));
}

/// `writers` threads, each on its own connection, SET `w<thread>-<i>` to `v` for i below
/// `each`, every one acknowledged; join them when done.
pub fn spawn_writers(port: u16, writers: usize, each: usize) -> Vec<std::thread::JoinHandle<()>> {
    (0..writers)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                for i in 0..each {
                    assert_eq!(c.cmd(&["SET", &format!("w{t}-{i}"), "v"]), b"+OK\r\n");
                }
            })
        })
        .collect()
}

/// A `memoria up` process on a free loopback port, killed when dropped, and the data dir
/// `memoria_up` made for it (None: the test gave its own), removed after it.
pub struct UpProcess(pub Child, Option<tempfile::TempDir>);

impl Drop for UpProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `memoria up --bind 127.0.0.1 --port <free> <args>` and waits for its port.
/// Without `--data-dir` in `args` it runs in a fresh temporary one: never in the default
/// `./memoria-data` of the test's working directory, where runs would share a log.
pub fn memoria_up(args: &[&str]) -> (UpProcess, u16) {
    let port = free_port();
    let own_dir = (!args.contains(&"--data-dir")).then(|| tempfile::tempdir().unwrap());
    // Its stderr goes to a file, shown if it ends before it listens (a bad flag, a port
    // taken meanwhile by another process).
    let stderr = tempfile::NamedTempFile::new().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_memoria"))
        .args(["up", "--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(own_dir.iter().flat_map(|d| [std::ffi::OsStr::new("--data-dir"), d.path().as_os_str()]))
        .args(args)
        .stdout(Stdio::null())
        .stderr(stderr.reopen().unwrap())
        .spawn()
        .expect("memoria binary");
    let mut up = UpProcess(child, own_dir);
    wait_listening_unless(port, || {
        let status = up.0.try_wait().ok().flatten()?;
        Some(format!("memoria up {args:?} ended ({status}) before it listened on {port}: {}", std::fs::read_to_string(stderr.path()).unwrap_or_default()))
    });
    (up, port)
}
