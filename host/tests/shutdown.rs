//! `memoria up` stops on SIGTERM even while its shard is stuck in a long engine call: the
//! signal is seen on a thread of its own, and past the grace period
//! (`MEMORIA_SHUTDOWN_GRACE_MS`) the process exits instead of waiting for the call.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::Raw;

#[test]
fn sigterm_stops_a_node_whose_shard_is_busy() {
    let port = common::free_port();
    let stderr = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_memoria"))
        .args(["up", "--in-memory", "--bind", "127.0.0.1", "--port", &port.to_string()])
        .env("MEMORIA_SHUTDOWN_GRACE_MS", "1000")
        .stdout(Stdio::null())
        .stderr(stderr.reopen().unwrap())
        .spawn()
        .expect("memoria binary");
    common::wait_listening(port);
    let mut c = Raw::connect(port);
    // A script without a budget (busy-reply-threshold 0) that never ends inside pcall,
    // where it cannot yield: one engine call that keeps the shard busy for as long as the
    // process lives, whatever the machine's speed.
    assert_eq!(c.cmd(&["CONFIG", "SET", "busy-reply-threshold", "0"]), b"+OK\r\n");
    c.send(&["EVAL", "pcall(function() while true do end end)", "0"]);
    // Wait until the script holds the shard: a PING that comes after it goes unanswered.
    // Counted in probes, not in time: a script that never holds the shard fails the test.
    for probe in 0.. {
        assert!(probe < 120, "the script never held the shard ({probe} PINGs answered)");
        let mut other = Raw::connect(port);
        other.s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        other.send(&["PING"]);
        let mut answer = [0u8; 16];
        if !std::io::Read::read(&mut other.s, &mut answer).is_ok_and(|n| n > 0) {
            break;
        }
    }

    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    // The script never ends, so the process can only be gone by the forced stop, which it
    // reports: the exit and that line are the events checked, not how long they took.
    let status = child.wait().unwrap();
    let err = std::fs::read_to_string(stderr.path()).unwrap();
    assert!(!status.success(), "a forced stop exits with an error status");
    assert!(err.contains("shutdown did not finish within 1000 ms; exiting now"), "stderr: {err}");
}

#[test]
fn the_shutdown_command_stops_the_node() {
    let port = common::free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_memoria"))
        .args(["up", "--in-memory", "--bind", "127.0.0.1", "--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("memoria binary");
    common::wait_listening(port);
    let mut c = Raw::connect(port);
    // What does not stop it (the replies are redis-server's: host/tests/memory.rs).
    assert_eq!(c.cmd(&["SHUTDOWN", "ABORT"]), b"-ERR No shutdown in progress.\r\n");
    assert_eq!(c.cmd(&["SHUTDOWN", "NOSAVE", "SAVE"]), b"-ERR syntax error\r\n");
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
    // SHUTDOWN: no reply, the connection closes, the process exits cleanly.
    c.send(&["SHUTDOWN", "NOSAVE"]);
    assert!(c.closed(), "SHUTDOWN answered instead of closing");
    // The exit itself is the event: a clean status.
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}
