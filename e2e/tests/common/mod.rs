//! Real processes for the drills: `memoria up` (the supervisor, its SQLite log, one node
//! process per node) and what its cluster.json says.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `memoria` binary of this build (e2e/test-all builds every target first).
pub fn memoria_bin() -> PathBuf {
    binary("memoria")
}

pub fn binary(name: &str) -> PathBuf {
    // Test executables live in <target>/<profile>/deps; binaries one level up.
    let exe = std::env::current_exe().expect("test executable path");
    let p = exe.parent().and_then(Path::parent).map(|d| d.join(name)).expect("target dir");
    assert!(p.exists(), "{} is missing: build it first with `cargo build --release --workspace` (e2e/test-all does)", p.display());
    p
}

/// This crate's directory. `cargo test` sets it when it runs a test; the compile-time
/// value is only the fallback, because a warm target dir shared by two checkouts (a CI
/// clone and a working tree) can hand one checkout a test binary built in the other.
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

pub fn free_port() -> u16 {
    free_port_run(1)
}

/// A candidate port below the kernel's ephemeral range (32768-60999 by default): a port
/// handed to a process that binds it later must not be taken meanwhile as the source port
/// of an outgoing connection (a node's long poll to its log kept a restarted node from
/// ever binding its port again).
fn candidate_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let k = NEXT.fetch_add(1, Ordering::Relaxed);
    let mix = std::process::id().wrapping_mul(2_654_435_761) ^ nanos ^ k.wrapping_mul(40_503);
    20_000 + (mix % 12_000) as u16
}

/// `n` consecutive free ports (node ports are consecutive), below the ephemeral range.
pub fn free_port_run(n: u16) -> u16 {
    for _ in 0..1000 {
        let base = candidate_port();
        if base as u32 + n as u32 > 32_000 {
            continue;
        }
        if (0..n).all(|i| std::net::TcpListener::bind(("127.0.0.1", base + i)).is_ok()) && handed_out(base, n) {
            return base;
        }
    }
    panic!("no run of {n} free ports between 20000 and 32000");
}

/// True when none of `base..base + n` was handed out before in this process, and then
/// marks them. Tests of one binary run in parallel: two given the same free ports (both
/// probed them before either bound them) would start two servers on one port.
fn handed_out(base: u16, n: u16) -> bool {
    static HANDED: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut handed = HANDED.lock().unwrap_or_else(|e| e.into_inner());
    if (base..base + n).any(|p| handed.contains(&p)) {
        return false;
    }
    handed.extend(base..base + n);
    true
}

/// A test's own directory under the system temp dir, removed when the test ends well and
/// kept (its path printed) when it fails, for the logs inside. Declared before whatever
/// runs in it (an `Up`, `Nodes`), so those processes are stopped first.
pub struct TestDir(PathBuf);

impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TestDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept for a look: {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

pub fn tempdir(tag: &str) -> TestDir {
    let d = std::env::temp_dir().join(format!("memoria-e2e-{tag}-{}-{}", std::process::id(), free_port()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TestDir(d)
}

#[derive(Clone, Debug, serde::Deserialize)]
pub struct NodeStatus {
    pub name: String,
    pub port: u16,
    pub pid: Option<u32>,
    pub role: String,
    pub epoch: Option<u64>,
    pub restarts: u32,
    #[serde(default)]
    pub shard: u16,
}

#[derive(Clone, Debug, serde::Deserialize)]
pub struct LogFacts {
    pub url: String,
}

#[derive(Clone, Debug, serde::Deserialize)]
pub struct ClusterFile {
    pub endpoint: String,
    pub log: Option<LogFacts>,
    pub supervisor_pid: u32,
    pub primary: Option<String>,
    pub nodes: Vec<NodeStatus>,
}

/// A `memoria up` run. Dropping it kills the supervisor (SIGKILL), and with it its nodes.
pub struct Up {
    child: Option<Child>,
    pub dir: PathBuf,
    pub port: u16,
    pub node_base: u16,
    pub replicas: usize,
    pub lease_ms: Option<u64>,
    pub shards: u16,
    /// Node process i's Prometheus port is `metrics_base + i`.
    pub metrics_base: u16,
    /// More flags for `memoria up` (the drills run it with --no-console).
    pub extra: Vec<String>,
    /// Environment for `memoria up` (test hooks).
    pub env: Vec<(String, String)>,
}

impl Up {
    /// `lease_ms` None: memoria's default lease.
    pub fn start(dir: &Path, replicas: usize, lease_ms: Option<u64>) -> Up {
        Up::start_sharded(dir, 1, replicas, lease_ms)
    }

    /// Like `start`, with more flags for `memoria up` (the console's tests).
    pub fn start_with(dir: &Path, replicas: usize, lease_ms: Option<u64>, extra: Vec<String>) -> Up {
        Up::start_sharded_with(dir, 1, replicas, lease_ms, extra)
    }

    /// `memoria up --shards <shards>`: node process i serves shard s on
    /// `node_base + i * shards + s`.
    pub fn start_sharded(dir: &Path, shards: u16, replicas: usize, lease_ms: Option<u64>) -> Up {
        Up::start_sharded_with(dir, shards, replicas, lease_ms, vec!["--no-console".into()])
    }

    pub fn start_sharded_with(dir: &Path, shards: u16, replicas: usize, lease_ms: Option<u64>, extra: Vec<String>) -> Up {
        Up::start_full(dir, shards, replicas, lease_ms, extra, Vec::new())
    }

    pub fn start_full(dir: &Path, shards: u16, replicas: usize, lease_ms: Option<u64>, extra: Vec<String>, env: Vec<(String, String)>) -> Up {
        let port = free_port();
        let node_base = free_port_run((replicas as u16 + 1) * shards);
        let metrics_base = free_port_run(replicas as u16 + 1);
        let mut up = Up { child: None, dir: dir.to_path_buf(), port, node_base, replicas, lease_ms, shards, metrics_base, extra, env };
        up.spawn();
        up
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.join("up.log")).unwrap();
        let child = Command::new(memoria_bin())
            .args(["up", "--port", &self.port.to_string(), "--node-port-base", &self.node_base.to_string()])
            .args(["--replicas", &self.replicas.to_string(), "--shards", &self.shards.to_string()])
            .args(["--metrics-port-base", &self.metrics_base.to_string()])
            .args(self.lease_ms.map(|l| ["--lease-ms".to_string(), l.to_string()]).into_iter().flatten())
            .arg("--data-dir")
            .arg(&self.dir)
            .args(&self.extra)
            .env("RUST_BACKTRACE", "0")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn memoria up");
        self.child = Some(child);
    }

    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn node_addrs(&self) -> Vec<String> {
        (0..(self.replicas + 1) * self.shards as usize).map(|i| format!("127.0.0.1:{}", self.node_base + i as u16)).collect()
    }

    pub fn cluster(&self) -> Option<ClusterFile> {
        let b = std::fs::read(self.dir.join("cluster.json")).ok()?;
        serde_json::from_slice(&b).ok()
    }

    /// The serving primary, once cluster.json names one (with a pid).
    pub fn wait_primary(&self, timeout: Duration, not: Option<&str>) -> NodeStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(c) = self.cluster()
                && Some(c.supervisor_pid) == self.child.as_ref().map(|c| c.id())
                && let Some(p) = c.primary.as_deref()
                && Some(p) != not
                && let Some(n) = c.nodes.iter().find(|n| n.name == p && n.pid.is_some())
            {
                return n.clone();
            }
            assert!(Instant::now() < deadline, "no primary within {timeout:?}; cluster.json: {:?}\n{}", self.cluster(), self.tail_log());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Every node up, as primary or replica.
    pub fn wait_all_serving(&self, timeout: Duration) -> ClusterFile {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(c) = self.cluster()
                && Some(c.supervisor_pid) == self.child.as_ref().map(|c| c.id())
                && c.nodes.iter().all(|n| n.role == "primary" || n.role == "replica")
                && (0..self.shards).all(|s| c.nodes.iter().filter(|n| n.role == "primary" && n.shard == s).count() == 1)
            {
                return c;
            }
            assert!(Instant::now() < deadline, "nodes not all serving within {timeout:?}: {:?}\n{}", self.cluster(), self.tail_log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether the snapshot scheduler has truncated the log (deleted entries behind a
    /// snapshot), from `up.log`.
    pub fn truncated_log(&self) -> bool {
        let log = strip_ansi(&std::fs::read_to_string(self.dir.join("up.log")).unwrap_or_default());
        log.lines().any(|l| l.contains("truncated the log below the snapshots") && !l.contains("deleted=0 "))
    }

    pub fn tail_log(&self) -> String {
        let s = std::fs::read_to_string(self.dir.join("up.log")).unwrap_or_default();
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// SIGTERM: the supervisor stops its nodes and exits.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            signal(c.id(), "TERM");
            let _ = c.wait();
        }
    }

    /// Starts `memoria up` again on the same data dir and ports.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    pub fn kill9_supervisor(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Sends a signal ("KILL", "STOP", "CONT", "TERM") to a process we started.
pub fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill").args([&format!("-{sig}"), &pid.to_string()]).status().map(|s| s.success()).unwrap_or(false);
    assert!(ok, "kill -{sig} {pid} failed");
}

/// Percentiles of durations, for the printed distributions.
pub fn distribution(name: &str, xs: &[Duration]) -> String {
    let mut v: Vec<f64> = xs.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if v.is_empty() {
        return format!("{name}: no samples");
    }
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    format!(
        "{name} (ms, n={}): min {:.0}  p50 {:.0}  p90 {:.0}  max {:.0}   all: {}",
        v.len(),
        v[0],
        q(0.5),
        q(0.9),
        v[v.len() - 1],
        v.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(" ")
    )
}

/// `memoria server` nodes against log services the test runs (the three-AZ shape, or a
/// log behind a relay the test can cut). The test plays the supervisor: it restarts what
/// it kills.
pub struct Nodes {
    pub ports: Vec<u16>,
    pub log_urls: Vec<Vec<String>>,
    pub token: String,
    pub lease_ms: Option<u64>,
    pub dir: PathBuf,
    children: Vec<Option<Child>>,
}

impl Nodes {
    /// Node i talks to the log services `log_urls[i]`.
    pub fn start(dir: &Path, log_urls: Vec<Vec<String>>, token: &str, lease_ms: Option<u64>) -> Nodes {
        let base = free_port_run(log_urls.len() as u16);
        let mut n = Nodes {
            ports: (0..log_urls.len() as u16).map(|i| base + i).collect(),
            log_urls,
            token: token.into(),
            lease_ms,
            dir: dir.to_path_buf(),
            children: Vec::new(),
        };
        for i in 0..n.ports.len() {
            let c = n.spawn(i);
            n.children.push(Some(c));
        }
        n
    }

    fn spawn(&self, i: usize) -> Child {
        let port = self.ports[i];
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.join(format!("node-{i}.log"))).unwrap();
        Command::new(memoria_bin())
            .args(["server", "--port", &port.to_string(), "--node-name", &format!("127.0.0.1:{port}"), "--cluster"])
            .args(self.lease_ms.map(|l| ["--lease-ms".to_string(), l.to_string()]).into_iter().flatten())
            .args(["--log-url", &self.log_urls[i].join(",")])
            .arg("--data-dir")
            .arg(self.dir.join(format!("node-{i}")))
            .env("MEMORIA_LOG_TOKEN", &self.token)
            .env("RUST_BACKTRACE", "0")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn memoria server")
    }

    pub fn addrs(&self) -> Vec<String> {
        self.ports.iter().map(|p| format!("127.0.0.1:{p}")).collect()
    }

    pub fn pid(&self, i: usize) -> u32 {
        self.children[i].as_ref().expect("node running").id()
    }

    pub fn kill9(&mut self, i: usize) {
        if let Some(mut c) = self.children[i].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn restart(&mut self, i: usize) {
        self.kill9(i);
        let c = self.spawn(i);
        self.children[i] = Some(c);
    }

    /// The node whose INFO says it is the primary (the highest epoch if several do).
    pub fn primary(&self) -> Option<usize> {
        let mut best: Option<(usize, u64)> = None;
        for (i, p) in self.ports.iter().enumerate() {
            if self.children[i].is_none() {
                continue;
            }
            if let Some(info) = info_replication(*p)
                && info.contains("role:master")
            {
                let epoch = info.lines().find_map(|l| l.strip_prefix("memoria_epoch:")).and_then(|e| e.trim().parse().ok()).unwrap_or(0);
                if best.is_none_or(|(_, e)| epoch > e) {
                    best = Some((i, epoch));
                }
            }
        }
        best.map(|(i, _)| i)
    }

    pub fn wait_primary(&self, timeout: Duration, not: Option<usize>) -> usize {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(p) = self.primary()
                && Some(p) != not
            {
                return p;
            }
            assert!(Instant::now() < deadline, "no primary among {:?} within {timeout:?}", self.ports);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Every node answers, as primary or replica.
    pub fn wait_all_up(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.ports.iter().all(|p| info_replication(*p).is_some()) {
            assert!(Instant::now() < deadline, "nodes {:?} not all up within {timeout:?}", self.ports);
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for c in self.children.iter_mut().flatten() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// INFO replication of the node on `port` (blocking, short timeouts).
pub fn info_replication(port: u16) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(300)).ok()?;
    s.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
    s.write_all(b"*2\r\n$4\r\nINFO\r\n$11\r\nreplication\r\n").ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf);
        if let Some(head) = text.strip_prefix('$')
            && let Some((len, rest)) = head.split_once("\r\n")
            && let Ok(len) = len.parse::<usize>()
            && rest.len() >= len
        {
            return Some(rest[..len].to_string());
        }
        if buf.first() == Some(&b'-') {
            return None;
        }
    }
}

/// A memoria-log service process on SQLite.
pub struct LogService {
    pub url: String,
    child: Child,
}

impl LogService {
    pub fn sqlite(dir: &Path, token: &str) -> LogService {
        let port = free_port();
        let log = std::fs::File::create(dir.join("memoria-log.out")).unwrap();
        let child = Command::new(binary("memoria-log"))
            .args(["--listen", &format!("127.0.0.1:{port}"), "--token", token, "--sqlite"])
            .arg(dir.join("log.sqlite"))
            .env("RUST_BACKTRACE", "0")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn memoria-log");
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "memoria-log did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        LogService { url: format!("http://127.0.0.1:{port}"), child }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for LogService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `e2e/pg3az` for one test: three PostgreSQL instances (one per simulated AZ, quorum
/// synchronous replication) and one memoria-log service per AZ; torn down on drop.
pub struct Pg3Az {
    pub dir: PathBuf,
    pub pg_port: u16,
    pub svc_port: u16,
    pub token: String,
}

impl Pg3Az {
    /// Brings the three AZs up on fresh ports; a failed attempt (a port taken meanwhile on
    /// a busy machine) is torn down and tried again on others, twice at most.
    pub fn up() -> Pg3Az {
        let mut last = String::new();
        for attempt in 0..3 {
            let dir = std::env::temp_dir().join(format!("memoria-pg3az-e2e-{}-{}", std::process::id(), free_port()));
            let pg_port = free_port_run(3);
            let svc_port = loop {
                let p = free_port_run(3);
                if p.abs_diff(pg_port) > 3 {
                    break p;
                }
            };
            let me = Pg3Az { dir, pg_port, svc_port, token: "e2e-pg3az-token".into() };
            match me.try_run(&["up"]) {
                Ok(_) => return me,
                Err(e) => {
                    eprintln!("pg3az up, attempt {}: {e}", attempt + 1);
                    last = e;
                }
            }
        }
        panic!("e2e/pg3az up failed three times; last: {last}");
    }

    fn try_run(&self, args: &[&str]) -> Result<String, String> {
        let script = manifest_dir().join("pg3az");
        let out = Command::new(script)
            .args(args)
            .env("PG3AZ_DIR", &self.dir)
            .env("PG3AZ_PG_PORT", self.pg_port.to_string())
            .env("PG3AZ_SVC_PORT", self.svc_port.to_string())
            .env("PG3AZ_TOKEN", &self.token)
            .env("MEMORIA_LOG_BIN", binary("memoria-log"))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("run e2e/pg3az: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() { Ok(stdout) } else { Err(format!("pg3az {args:?} failed: {stdout}{}", String::from_utf8_lossy(&out.stderr))) }
    }

    pub fn run(&self, args: &[&str]) -> String {
        self.try_run(args).unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn urls(&self) -> Vec<String> {
        (0..3).map(|i| format!("http://127.0.0.1:{}", self.svc_port + i)).collect()
    }
}

impl Drop for Pg3Az {
    fn drop(&mut self) {
        let _ = self.try_run(&["down"]);
    }
}

/// A TCP relay in front of a log service that the test can cut, as a network partition
/// between one node and its log would: existing connections are dropped and new ones
/// refused until it is healed.
pub struct Relay {
    pub url: String,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    generation: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Where connections go (`host:port`); empty: nowhere yet (they are dropped).
    target: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Relay {
    pub fn start(rt: &tokio::runtime::Runtime, target_url: &str) -> Relay {
        let r = Relay::start_later(rt);
        r.set_target(target_url);
        r
    }

    /// A relay whose target is set later (`set_target`): for a log service whose address
    /// is known only once the nodes that use the relay have been started.
    pub fn start_later(rt: &tokio::runtime::Runtime) -> Relay {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let port = free_port();
        let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let cut = std::sync::Arc::new(AtomicBool::new(false));
        let generation = std::sync::Arc::new(AtomicU64::new(0));
        let target = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (c, g, t) = (cut.clone(), generation.clone(), target.clone());
        rt.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else { continue };
                let target = t.lock().unwrap().clone();
                if c.load(Ordering::SeqCst) || target.is_empty() {
                    drop(inbound);
                    continue;
                }
                let (c, g) = (c.clone(), g.clone());
                let born = g.load(Ordering::SeqCst);
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await else { return };
                    let watch = async {
                        while !c.load(Ordering::SeqCst) && g.load(Ordering::SeqCst) == born {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = watch => {}
                    }
                });
            }
        });
        Relay { url: format!("http://127.0.0.1:{port}"), cut, generation, target }
    }

    pub fn set_target(&self, url: &str) {
        *self.target.lock().unwrap() = url.trim_start_matches("http://").to_string();
    }

    pub fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
        self.generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn heal(&self) {
        self.cut.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// What every drill promises: no acknowledged write lost (read back from the primary
/// among `nodes`) and a linearizable history.
pub async fn assert_no_loss_and_linearizable(nodes: &[String], r: &memoria_e2e::workload::RunResult, what: &str) {
    use memoria_e2e::linearizability::{self, Budget};
    println!("{what}: {}", r.stats);
    assert!(r.ledger.acked_count() > 0, "{what}: no write was acknowledged at all");
    let report = r.ledger.verify(nodes, Duration::from_secs(30)).await.expect("ledger verification ran");
    print!("{report}");
    assert!(report.is_clean(), "{what}: acknowledged writes lost\n{report}");
    let lin = linearizability::check(&r.history, Budget::default());
    println!("{what}: linearizability over {} operations: {lin}", r.history.len());
    assert!(lin.violations().is_empty(), "{what}: linearizability violated\n{lin}");
    assert!(lin.is_linearizable(), "{what}: the checker could not decide every key within its budget\n{lin}");
}

/// A redis-server without persistence on a loopback port; killed (SIGKILL) on drop.
pub struct Redis {
    child: Child,
    pub port: u16,
}

impl Redis {
    pub fn start(port: u16) -> Redis {
        Self::start_with(port, &[])
    }

    pub fn start_with(port: u16, extra: &[&str]) -> Redis {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed (apt-get install redis-server)");
        let mut redis = Redis { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        // Whoever else holds the port would answer as well: the pid says it is this child.
        // A listening port is not yet a server that answers (a CI run once saw INFO fail
        // right after the connect went through), so errors are retried until the deadline.
        loop {
            assert!(redis.child.try_wait().ok().flatten().is_none(), "redis-server exited: port {port} is taken");
            match redis.info_pid() {
                Ok(pid) => {
                    assert_eq!(pid, Some(redis.child.id()), "port {port} is served by another process");
                    return redis;
                }
                Err(e) => assert!(Instant::now() < deadline, "redis-server did not answer INFO on port {port}: {e}"),
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// `process_id` from INFO server on this server's port.
    pub fn info_pid(&self) -> Result<Option<u32>, redis::RedisError> {
        let client = redis::Client::open(format!("redis://{}/", self.addr()))?;
        let mut con = client.get_connection_with_timeout(Duration::from_secs(10))?;
        con.set_read_timeout(Some(Duration::from_secs(10)))?;
        let info: redis::InfoDict = redis::cmd("INFO").arg("server").query(&mut con)?;
        Ok(info.get("process_id"))
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A current-thread runtime for a test's async parts.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// A command line split on spaces, as RESP arguments.
pub fn words(line: &str) -> Vec<&[u8]> {
    line.split(' ').map(str::as_bytes).collect()
}

/// GET `url` (with a bearer token if given), not following redirects: (status, body), or
/// (0, the error) when nothing answered.
pub async fn get(url: &str, bearer: Option<&str>) -> (u16, String) {
    let c = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let mut r = c.get(url);
    if let Some(t) = bearer {
        r = r.bearer_auth(t);
    }
    match r.send().await {
        Ok(resp) => {
            let status = resp.status().as_u16();
            (status, resp.text().await.unwrap_or_default())
        }
        Err(e) => (0, e.to_string()),
    }
}

/// The log's text without terminal colour codes (tracing colours field names).
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `memoria up` flags that snapshot after a few log entries and truncate the log right
/// behind each snapshot (tests that restart from a snapshot), with no console.
pub fn snapshot_often_args() -> Vec<String> {
    [
        "--snapshot-min-log-bytes",
        "0",
        "--snapshot-min-entries",
        "20",
        "--snapshot-growth-ratio",
        "0",
        "--snapshot-min-interval-ms",
        "200",
        "--snapshot-truncate-margin",
        "0",
        "--no-console",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// A connection to `addr`, retried until `deadline` (a node may still be starting).
pub async fn connect_by(addr: &str, deadline: Instant, what: &str) -> memoria_e2e::workload::Conn {
    loop {
        match memoria_e2e::workload::Conn::connect(addr).await {
            Ok(c) => return c,
            Err(e) => assert!(Instant::now() < deadline, "{what}: cannot connect to {addr}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Repeats `argv` until it answers `want` (a replica may still be applying the tail);
/// fails at `deadline`.
pub async fn wait_for_reply(c: &mut memoria_e2e::workload::Conn, argv: &[&[u8]], want: &memoria_e2e::workload::Reply, deadline: Instant, what: &str) {
    loop {
        let got = c.request(argv).await.unwrap();
        if &got == want {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: {:?} answers {got:?}, want {want:?}", String::from_utf8_lossy(argv[0]));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
