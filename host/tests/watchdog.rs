//! The watchdog: an engine call that runs past `engine-call-timeout` is interrupted, its
//! clients get an error, the engine is rebuilt from the log (nothing acknowledged is lost,
//! nothing of the interrupted batch is applied) and the shard serves again.

mod common;

use std::process::Command;

use common::Raw;

/// A node process, killed when dropped, and its data dir, removed after it.
struct Node {
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `memoria up --single-process` with `args`, its output in a file the test reads; the
/// data dir lives as long as the node.
fn single_node(args: &[&str]) -> (u16, Node, tempfile::NamedTempFile) {
    let port = common::free_port();
    let dir = tempfile::tempdir().unwrap();
    let log = tempfile::NamedTempFile::new().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_memoria"))
        .args(["up", "--single-process", "--no-snapshots", "--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--data-dir", dir.path().to_str().unwrap()])
        .args(args)
        .stdout(log.reopen().unwrap())
        .stderr(log.reopen().unwrap())
        .spawn()
        .expect("memoria binary");
    common::wait_listening(port);
    (port, Node { child, _dir: dir }, log)
}

#[test]
fn a_call_past_engine_call_timeout_is_interrupted_and_the_shard_serves_again() {
    let (port, _node, log) = single_node(&["--engine-call-timeout", "1000"]);
    let mut c = Raw::connect(port);
    assert_eq!(c.cmd(&["CONFIG", "GET", "engine-call-timeout"]), b"*2\r\n$19\r\nengine-call-timeout\r\n$4\r\n1000\r\n");
    assert_eq!(c.cmd(&["SET", "acknowledged", "before"]), b"+OK\r\n");
    common::push_big_list(&mut c, "big", 100);
    // One SORT answers (with the watchdog off, so however slow the machine); hundreds in
    // one batch (one engine call) run far past the limit on any machine.
    assert_eq!(c.cmd(&["CONFIG", "SET", "engine-call-timeout", "0"]), b"+OK\r\n");
    assert!(c.cmd(&["SORT", "big", "ALPHA", "LIMIT", "0", "1"]).starts_with(b"*1"));
    assert_eq!(c.cmd(&["CONFIG", "SET", "engine-call-timeout", "1000"]), b"+OK\r\n");
    let mut pipeline = Vec::new();
    memoria_core::protocol::resp::encode_command(&mut pipeline, &["SET", "in-the-batch", "x"]);
    for _ in 0..2000 {
        memoria_core::protocol::resp::encode_command(&mut pipeline, &["SORT", "big", "ALPHA", "LIMIT", "0", "1"]);
    }
    c.send_raw(&pipeline);
    let first = c.read_reply();
    assert!(first.starts_with(b"-ERR command interrupted: the shard's engine ran past engine-call-timeout (1000 ms)"), "{}", String::from_utf8_lossy(&first));
    // The shard serves again, from the log: the acknowledged write is there, the list too,
    // and nothing of the interrupted batch.
    let mut d = Raw::connect(port);
    assert_eq!(d.cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(d.cmd(&["GET", "acknowledged"]), b"$6\r\nbefore\r\n");
    assert_eq!(d.cmd(&["LLEN", "big"]), b":100000\r\n");
    assert_eq!(d.cmd(&["EXISTS", "in-the-batch"]), b":0\r\n");
    // The node's log names the clients and commands of the interrupted call.
    let text = std::fs::read_to_string(log.path()).unwrap();
    assert!(text.contains("the watchdog interrupted an engine call") && text.contains(": SORT"), "node log: {text}");
}

/// What CONFIG SET changed outlives the engine instance: after an interrupt the rebuilt
/// engine has the same parameters (the host gives it every one a CONFIG SET changed, not
/// only the connection limits it enforces itself), new-key events (`n`, which the shown
/// value omits after `A`) included.
#[test]
fn a_rebuilt_engine_keeps_what_config_set_changed() {
    let (port, _node, _log) = single_node(&["--engine-call-timeout", "1000", "--enable-debug-command", "yes"]);
    let mut c = Raw::connect(port);
    let changed = [
        ("latency-monitor-threshold", "100"),
        ("slowlog-max-len", "7"),
        ("maxmemory-policy", "allkeys-lru"),
        ("hash-max-listpack-entries", "3"),
        ("notify-keyspace-events", "AKEn"),
        ("timeout", "3600"),
    ];
    for (name, value) in changed {
        assert_eq!(c.cmd(&["CONFIG", "SET", name, value]), b"+OK\r\n", "{name}");
    }
    let shown = |c: &mut Raw| changed.map(|(name, _)| String::from_utf8(c.cmd(&["CONFIG", "GET", name])).unwrap());
    let before = shown(&mut c);
    assert!(before[4].ends_with("$3\r\nAKE\r\n"), "{}", before[4]);
    assert!(interrupted_at(&c.cmd(&["DEBUG", "SLEEP", "30"]), 1000));
    let mut d = Raw::connect(port);
    assert_eq!(shown(&mut d), before);
    assert_eq!(d.cmd(&["HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4"]), b":4\r\n");
    assert_eq!(d.cmd(&["OBJECT", "ENCODING", "h"]), b"$9\r\nhashtable\r\n");
    let mut sub = Raw::connect(port);
    sub.cmd(&["SUBSCRIBE", "__keyevent@0__:new"]);
    assert_eq!(d.cmd(&["SET", "fresh", "1"]), b"+OK\r\n");
    assert_eq!(sub.read_reply(), b"*3\r\n$7\r\nmessage\r\n$18\r\n__keyevent@0__:new\r\n$5\r\nfresh\r\n");
}

/// A command the watchdog interrupted is refused when it comes back, so a client that
/// retries it cannot stall the shard again (`poison.rs`). `DEBUG SLEEP` spins in the
/// engine, as a runaway command would.
#[test]
fn an_interrupted_command_is_refused_when_it_comes_back() {
    // A limit far above what the test's ordinary commands take, so only the sleeps hit it.
    let (port, _node, log) = single_node(&["--engine-call-timeout", "1000", "--enable-debug-command", "yes"]);
    let interrupted = |r: &[u8]| interrupted_at(r, 1000);
    let refused =
        |r: &[u8], name: &str| r.starts_with(format!("-ERR command refused: this {name} ran past engine-call-timeout before and was interrupted").as_bytes());

    // Alone in its engine call: refused from its first interruption on, and the refusal
    // comes in order, after the client's earlier replies, on a connection that stays open.
    let mut c = Raw::connect(port);
    let r = c.cmd(&["DEBUG", "SLEEP", "30"]);
    assert!(interrupted(&r), "{}", String::from_utf8_lossy(&r));
    let mut c = Raw::connect(port);
    let mut pipeline = Vec::new();
    for cmd in [&["SET", "before", "1"][..], &["DEBUG", "SLEEP", "30"], &["GET", "before"]] {
        memoria_core::protocol::resp::encode_command(&mut pipeline, cmd);
    }
    c.send_raw(&pipeline);
    assert_eq!(c.read_reply(), b"+OK\r\n");
    let r = c.read_reply();
    assert!(refused(&r, "DEBUG"), "{}", String::from_utf8_lossy(&r));
    assert_eq!(c.read_reply(), b"$1\r\n1\r\n");
    // Inline, the same command is the same poison; other arguments are another command.
    c.send_raw(b"DEBUG SLEEP 30\r\n");
    assert!(refused(&c.read_reply(), "DEBUG"));
    assert_eq!(c.cmd(&["DEBUG", "SLEEP", "0"]), b"+OK\r\n");

    // Pipelined behind another command: both are suspects after the first interruption.
    // The other one runs fine on its own (cleared); the sleep comes back with it, runs in
    // a batch of its own, and is refused from its second interruption on, while the
    // command that was only with it is not.
    let with = |c: &mut Raw| {
        let mut p = Vec::new();
        memoria_core::protocol::resp::encode_command(&mut p, &["SET", "with", "x"]);
        memoria_core::protocol::resp::encode_command(&mut p, &["DEBUG", "SLEEP", "40"]);
        c.send_raw(&p);
        (c.read_reply(), c.read_reply())
    };
    let mut c = Raw::connect(port);
    let (a, b) = with(&mut c);
    assert!(interrupted(&a) && interrupted(&b), "{} {}", String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
    let mut c = Raw::connect(port);
    assert_eq!(c.cmd(&["SET", "with", "x"]), b"+OK\r\n");
    let mut c = Raw::connect(port);
    let (a, _) = with(&mut c);
    assert!(interrupted(&a), "{}", String::from_utf8_lossy(&a));
    let mut c = Raw::connect(port);
    assert!(refused(&c.cmd(&["DEBUG", "SLEEP", "40"]), "DEBUG"));
    assert_eq!(c.cmd(&["SET", "with", "y"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["SET", "with", "x"]), b"+OK\r\n");

    // INFO tells of it, and so does the node's log.
    // (The host's figures reach INFO with its next report to the engine.)
    memoria_info_shows(&mut c, &["engine_interrupts:3", "poisoned_commands:2", "poison_refusals:3"]);
    let text = std::fs::read_to_string(log.path()).unwrap();
    assert!(text.lines().any(|l| l.contains("refusing these commands from now on") && l.contains("DEBUG")), "node log: {text}");

    // A new engine-call-timeout judges anew: the list is emptied, and the command runs
    // again (interrupted under the new limit, not refused).
    assert_eq!(c.cmd(&["CONFIG", "SET", "engine-call-timeout", "2000"]), b"+OK\r\n");
    memoria_info_shows(&mut c, &["poisoned_commands:0"]);
    let mut d = Raw::connect(port);
    assert!(interrupted_at(&d.cmd(&["DEBUG", "SLEEP", "30"]), 2000));
    assert!(refused(&Raw::connect(port).cmd(&["DEBUG", "SLEEP", "30"]), "DEBUG"));
    memoria_info_shows(&mut Raw::connect(port), &["poisoned_commands:1"]);
}

fn memoria_info_shows(c: &mut Raw, fields: &[&str]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let info = String::from_utf8(c.cmd(&["INFO", "memoria"])).unwrap();
        if fields.iter().all(|f| info.lines().any(|l| l == *f)) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{fields:?} in {info}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn interrupted_at(r: &[u8], ms: u64) -> bool {
    r.starts_with(format!("-ERR command interrupted: the shard's engine ran past engine-call-timeout ({ms} ms)").as_bytes())
}

/// One request on a fresh connection to `port`: the first line of its reply, or why there
/// was none (the connection closed: its primary moved or failed it).
fn one_request(port: u16, args: &[&str]) -> Result<String, String> {
    use std::io::{BufRead, BufReader, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    let mut req = Vec::new();
    memoria_core::protocol::resp::encode_command(&mut req, args);
    s.write_all(&req).map_err(|e| format!("write: {e}"))?;
    let mut line = String::new();
    match BufReader::new(s).read_line(&mut line) {
        Ok(0) => Err("closed".into()),
        Ok(_) => Ok(line.trim_end().to_string()),
        Err(e) => Err(format!("read: {e}")),
    }
}

/// Across failovers: a primary stuck longer than its lease loses it, and the client's
/// retry reaches the next primary, which gets stuck too. Each node that interrupted the
/// command refuses it from then on, so retries stall the shard at most once per node,
/// not forever; the shard then serves, with what was acknowledged before.
#[test]
fn a_poison_outliving_the_lease_stalls_each_node_at_most_once() {
    let (_up, port) = common::memoria_up(&[
        "--replicas",
        "1",
        "--no-console",
        "--no-snapshots",
        "--no-metrics",
        "--lease-ms",
        "1000",
        "--engine-call-timeout",
        "3000",
        "--enable-debug-command",
        "yes",
    ]);
    let until_ok = |args: &[&str], want: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            match one_request(port, args) {
                Ok(r) if r == want => return,
                r => assert!(std::time::Instant::now() < deadline, "{args:?}: {r:?}"),
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    until_ok(&["SET", "acknowledged", "before"], "+OK");
    let mut stalls = Vec::new();
    loop {
        match one_request(port, &["DEBUG", "SLEEP", "30"]) {
            Ok(r) if r.starts_with("-ERR command refused: this DEBUG ran past engine-call-timeout") => break,
            other => stalls.push(other),
        }
        assert!(stalls.len() <= 2, "more stalls than nodes: {stalls:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    eprintln!("stalls before the refusal: {stalls:?}");
    // Refused on whichever node leads now, and the shard serves.
    until_ok(&["GET", "acknowledged"], "$6");
    until_ok(&["SET", "after", "1"], "+OK");
    assert!(one_request(port, &["DEBUG", "SLEEP", "30"]).unwrap().starts_with("-ERR command refused"));
}
