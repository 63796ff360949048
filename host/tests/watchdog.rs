//! The watchdog: an engine call that runs past `engine-call-timeout` is interrupted, its
//! clients get an error, the engine is rebuilt from the log (nothing acknowledged is lost,
//! nothing of the interrupted batch is applied) and the shard serves again.

mod common;

use std::process::Command;

use common::Raw;

struct Node(std::process::Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_call_past_engine_call_timeout_is_interrupted_and_the_shard_serves_again() {
    let port = common::free_port();
    let dir = tempfile::tempdir().unwrap();
    let log = tempfile::NamedTempFile::new().unwrap();
    let _node = Node(
        Command::new(env!("CARGO_BIN_EXE_memoria"))
            .args(["up", "--single-process", "--no-snapshots", "--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--data-dir", dir.path().to_str().unwrap(), "--engine-call-timeout", "1000"])
            .stdout(log.reopen().unwrap())
            .stderr(log.reopen().unwrap())
            .spawn()
            .expect("memoria binary"),
    );
    common::wait_listening(port);
    let mut c = Raw::connect(port);
    assert_eq!(c.cmd(&["CONFIG", "GET", "engine-call-timeout"]), b"*2\r\n$19\r\nengine-call-timeout\r\n$4\r\n1000\r\n");
    assert_eq!(c.cmd(&["SET", "acknowledged", "before"]), b"+OK\r\n");
    common::push_big_list(&mut c, "big", 100);
    // One SORT is well within the limit; hundreds in one batch (one engine call) are not.
    assert!(c.cmd(&["SORT", "big", "ALPHA", "LIMIT", "0", "1"]).starts_with(b"*1"));
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
