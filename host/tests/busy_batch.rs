//! A script that runs long stops its batch, not the clients that shared it. Found by the
//! runaway-script e2e test, which hung about once in 25 runs: the client that was to send
//! SCRIPT KILL had a GET in the same batch as the script, after it, and that GET waited
//! for the script (forever). In Redis it gets -BUSY once the script is past
//! `busy-reply-threshold`; and a reply to a command sent before the script is not held
//! behind it. The shard is frozen while the commands are sent so they form one batch.

mod common;

use std::time::Duration;

use common::{Memoria, Raw};

const SPIN: &str = "local i = 0 while true do i = i + 1 end";
const BUSY: &[u8] = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";

#[test]
fn clients_sharing_a_runaway_scripts_batch_are_answered_and_can_kill_it() {
    let m = Memoria::start();
    let mut other = Raw::connect(m.port);
    assert_eq!(other.cmd(&["CONFIG", "SET", "busy-reply-threshold", "100"]), b"+OK\r\n");
    let mut runner = Raw::connect(m.port);
    // A connection frames nothing before the shard has seen it connect.
    assert_eq!(runner.cmd(&["PING"]), b"+PONG\r\n");
    // Connections made, shard frozen: what both send now goes into one batch.
    let thaw = m.freezer.freeze();
    std::thread::sleep(Duration::from_millis(100));
    let mut pipeline = Vec::new();
    memoria_core::protocol::resp::encode_command(&mut pipeline, &["SET", "k", "1"]);
    memoria_core::protocol::resp::encode_command(&mut pipeline, &["EVAL", SPIN, "0"]);
    memoria_core::protocol::resp::encode_command(&mut pipeline, &["PING"]);
    runner.send_raw(&pipeline);
    std::thread::sleep(Duration::from_millis(100));
    other.send(&["GET", "k"]);
    std::thread::sleep(Duration::from_millis(100));
    drop(thaw);
    // The SET before the script is answered while it runs (Raw's reads give up after 30 s).
    assert_eq!(runner.read_reply(), b"+OK\r\n");
    // The GET after it, from another client, is answered -BUSY once the script is busy.
    assert_eq!(other.read_reply(), BUSY);
    assert_eq!(other.cmd(&["SCRIPT", "KILL"]), b"+OK\r\n");
    let killed = runner.read_reply();
    assert!(killed.starts_with(b"-ERR Script killed by user with SCRIPT KILL..."), "{}", String::from_utf8_lossy(&killed));
    // The script's own client's next command waited for it, then ran.
    assert_eq!(runner.read_reply(), b"+PONG\r\n");
    assert_eq!(other.cmd(&["GET", "k"]), b"$1\r\n1\r\n");
}
