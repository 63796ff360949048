//! `memoria up` stops on SIGTERM even while its shard is stuck in a long engine call: the
//! signal is seen on a thread of its own, and past the grace period
//! (`MEMORIA_SHUTDOWN_GRACE_MS`) the process exits instead of waiting for the call.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    common::push_big_list(&mut c, "big", 1000);
    let t = Instant::now();
    assert!(c.cmd(&["SORT", "big", "ALPHA", "LIMIT", "0", "1"]).starts_with(b"*1"));
    let one = t.elapsed().max(Duration::from_millis(1));
    // Enough of them to keep the shard busy for ten minutes, in one write (a few hundred
    // bytes): one batch, one engine call, nothing else runs on the node's loop meanwhile.
    let n = (Duration::from_secs(600).as_micros() / one.as_micros()).clamp(10, 5000) as usize;
    let mut pipeline = Vec::new();
    for _ in 0..n {
        memoria_core::protocol::resp::encode_command(&mut pipeline, &["SORT", "big", "ALPHA", "LIMIT", "0", "1"]);
    }
    c.send_raw(&pipeline);
    // Let the batch reach the engine: a PING on another connection goes unanswered.
    std::thread::sleep(Duration::from_millis(500));
    let mut other = Raw::connect(port);
    other.s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    other.send(&["PING"]);
    let mut probe = [0u8; 16];
    let answered = std::io::Read::read(&mut other.s, &mut probe).is_ok_and(|n| n > 0);
    assert!(!answered, "the shard was not busy (SORT took {one:?}; {n} pipelined)");

    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    // The queued work would take minutes; the process must be gone well before.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("memoria up did not stop within 60 s of SIGTERM while its shard was busy");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(stderr.path()).unwrap();
    assert!(!status.success(), "a forced stop exits with an error status");
    assert!(err.contains("shutdown did not finish within 1000 ms; exiting now"), "stderr: {err}");
}
