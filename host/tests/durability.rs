//! Durability with the embedded SQLite log: acknowledged writes survive a clean restart
//! and `kill -9`, and no read ever returned a value that was later lost.

mod common;

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Raw, free_port};

struct Node {
    child: Child,
    port: u16,
}

/// `memoria up` as a user runs it (the supervisor, its log, a primary and a replica as
/// processes), or with `--single-process` (one process holding the log: kill -9 of it is
/// a crash of everything at once).
fn start_node(dir: &std::path::Path, port: u16) -> Node {
    start_with(dir, port, &[])
}

fn start_single(dir: &std::path::Path, port: u16) -> Node {
    start_with(dir, port, &["--single-process"])
}

fn start_with(dir: &std::path::Path, port: u16, extra: &[&str]) -> Node {
    // Two nodes listen on base and base + 1: both must be free.
    let base = loop {
        let b = common::free_port();
        if b < u16::MAX && std::net::TcpListener::bind(("127.0.0.1", b + 1)).is_ok() {
            break b;
        }
    };
    let metrics = loop {
        let b = common::free_port();
        if b < u16::MAX && b.abs_diff(base) > 1 && std::net::TcpListener::bind(("127.0.0.1", b + 1)).is_ok() {
            break b;
        }
    };
    let child = Command::new(env!("CARGO_BIN_EXE_memoria"))
        .args(["up", "--port", &port.to_string(), "--node-port-base", &base.to_string()])
        .args(["--metrics-port-base", &metrics.to_string()])
        .args(extra)
        .arg("--data-dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn memoria");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            drop(s);
            break;
        }
        assert!(Instant::now() < deadline, "memoria did not start on port {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Node { child, port }
}

impl Node {
    fn kill9(self) {
        // Drop sends SIGKILL.
    }
    fn stop(mut self) {
        unsafe_sigterm(self.child.id());
        let _ = self.child.wait();
    }
}

impl Drop for Node {
    /// A failing assertion must not leave the node running after the test.
    fn drop(&mut self) {
        let _ = self.child.kill(); // SIGKILL (a no-op once it has exited)
        let _ = self.child.wait();
    }
}

fn unsafe_sigterm(pid: u32) {
    let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
}

fn bulk_of(reply: &[u8]) -> Option<String> {
    let s = String::from_utf8_lossy(reply);
    if s.starts_with("$-1") {
        return None;
    }
    s.split("\r\n").nth(1).map(|x| x.to_string())
}

#[test]
fn clean_restart_keeps_everything() {
    let dir = tempdir();
    let port = free_port();
    let n = start_node(dir.path(), port);
    let mut c = Raw::connect(n.port);
    for i in 0..200 {
        assert_eq!(c.cmd(&["SET", &format!("k{i}"), &format!("v{i}")]), b"+OK\r\n");
    }
    c.cmd(&["HSET", "h", "a", "1", "b", "2"]);
    c.cmd(&["SET", "ttl", "x", "EX", "1000"]);
    c.cmd(&["MULTI"]);
    c.cmd(&["INCR", "ctr"]);
    c.cmd(&["INCRBYFLOAT", "ctr", "0.5"]);
    assert_eq!(c.cmd(&["EXEC"]), b"*2\r\n:1\r\n$3\r\n1.5\r\n");
    c.cmd(&["DEL", "k0"]);
    c.cmd(&["SELECT", "3"]);
    c.cmd(&["SET", "in3", "yes"]);
    drop(c);
    n.stop();

    let n = start_node(dir.path(), port);
    let mut c = Raw::connect(n.port);
    assert_eq!(c.cmd(&["GET", "k0"]), b"$-1\r\n");
    for i in 1..200 {
        assert_eq!(bulk_of(&c.cmd(&["GET", &format!("k{i}")])), Some(format!("v{i}")));
    }
    assert_eq!(c.cmd(&["HGET", "h", "b"]), b"$1\r\n2\r\n");
    assert_eq!(c.cmd(&["GET", "ctr"]), b"$3\r\n1.5\r\n");
    let ttl = String::from_utf8_lossy(&c.cmd(&["TTL", "ttl"])).to_string();
    assert!(ttl.starts_with(':') && ttl.trim_start_matches(':').trim().parse::<i64>().unwrap() > 900, "TTL survived: {ttl}");
    c.cmd(&["SELECT", "3"]);
    assert_eq!(c.cmd(&["GET", "in3"]), b"$3\r\nyes\r\n");
    drop(c);
    n.kill9();
}

/// A fresh directory, removed when the test ends.
fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("memoria-durability-").tempdir().unwrap()
}

/// Writers SET `key = <writer>:<i>` with i increasing and record what was acknowledged;
/// readers record every value they saw. After each kill -9 and restart, every key must
/// hold its last acknowledged value or a later one, and every value any reader saw must
/// be at or below what survived (a read never returned a value that was then lost).
#[test]
fn kill9_under_load_loses_no_acknowledged_write() {
    let dir = tempdir();
    let port = free_port();
    let rounds = std::env::var("MEMORIA_KILL_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    // key -> highest acknowledged index
    let acked: Arc<Mutex<HashMap<String, u64>>> = Arc::new(Mutex::new(HashMap::new()));
    // key -> highest index any reader observed
    let seen: Arc<Mutex<HashMap<String, u64>>> = Arc::new(Mutex::new(HashMap::new()));
    let mut next_index = 0u64;
    for round in 0..rounds {
        let node = start_single(dir.path(), port);
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for w in 0..6u64 {
            let (acked, stop) = (acked.clone(), stop.clone());
            let base = next_index;
            threads.push(std::thread::spawn(move || {
                // On a loaded machine the kill can come before this thread connects.
                let Some(mut c) = Raw::try_connect(port) else { return };
                let mut i = base;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    // Each key has one writer, so its acknowledged values only grow.
                    let key = format!("key{}", w * 4 + i % 4);
                    let val = format!("{w}:{i}");
                    c.send(&["SET", &key, &val]);
                    // A reply that never comes (the node died) is simply not acknowledged.
                    let r = match read_or_dead(&mut c) {
                        Some(r) => r,
                        None => return,
                    };
                    if r == b"+OK\r\n" {
                        let mut a = acked.lock().unwrap();
                        let e = a.entry(key).or_insert(0);
                        *e = (*e).max(i);
                    }
                }
            }));
        }
        for _ in 0..2 {
            let (seen, stop) = (seen.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                let Some(mut c) = Raw::try_connect(port) else { return };
                let mut k = 0;
                while !stop.load(Ordering::Relaxed) {
                    k += 1;
                    let key = format!("key{}", k % 24);
                    c.send(&["GET", &key]);
                    let Some(r) = read_or_dead(&mut c) else { return };
                    if let Some(v) = bulk_of(&r) {
                        let idx: u64 = v.split(':').nth(1).unwrap().parse().unwrap();
                        let mut s = seen.lock().unwrap();
                        let e = s.entry(key).or_insert(0);
                        *e = (*e).max(idx);
                    }
                }
            }));
        }
        // Let load build up, then kill the node without warning.
        std::thread::sleep(Duration::from_millis(300 + 100 * round as u64));
        node.kill9();
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().unwrap();
        }
        next_index += 10_000_000;

        // Restart and check the ledger.
        let node = start_single(dir.path(), port);
        let mut c = Raw::connect(port);
        let acked = acked.lock().unwrap();
        let seen = seen.lock().unwrap();
        assert!(!acked.is_empty(), "round {round}: no write was acknowledged");
        for k in 0..24 {
            let key = format!("key{k}");
            let survived = bulk_of(&c.cmd(&["GET", &key])).map(|v| v.split(':').nth(1).unwrap().parse::<u64>().unwrap()).unwrap_or(0);
            if let Some(&a) = acked.get(&key) {
                assert!(survived >= a, "round {round}: {key} lost acknowledged write {a} (has {survived})");
            }
            if let Some(&s) = seen.get(&key) {
                assert!(survived >= s, "round {round}: {key}: a reader saw {s}, but only {survived} survived");
            }
        }
        drop(c);
        node.kill9();
    }
}

/// Reads one reply, or None if the connection died (the node was killed).
fn read_or_dead(c: &mut Raw) -> Option<Vec<u8>> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.read_reply())).ok()
}
