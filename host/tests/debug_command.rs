//! `--enable-debug-command` reaches the engine: DEBUG runs on a node started with it and
//! is refused (as redis-server 7.0.15 refuses it by default, `host/tests/memory.rs`)
//! without; the setting shows in CONFIG GET and cannot be changed at runtime.

mod common;

use common::Raw;

fn node(setting: &str) -> (common::UpProcess, u16) {
    common::memoria_up(&["--in-memory", "--enable-debug-command", setting])
}

#[test]
fn the_flag_allows_debug_and_cannot_be_changed_at_runtime() {
    let (_n, port) = node("local");
    let mut c = Raw::connect(port);
    assert_eq!(c.cmd(&["CONFIG", "GET", "enable-debug-command"]), b"*2\r\n$20\r\nenable-debug-command\r\n$5\r\nlocal\r\n");
    assert_eq!(c.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    // A loopback client with `local`.
    assert!(c.cmd(&["DEBUG", "OBJECT", "k"]).starts_with(b"+Value at:"));
    assert_eq!(c.cmd(&["DEBUG", "SLEEP", "0"]), b"+OK\r\n");
    assert!(c.cmd(&["CONFIG", "SET", "enable-debug-command", "yes"]).starts_with(b"-ERR CONFIG SET failed"));
    let (_m, port) = node("no");
    let mut c = Raw::connect(port);
    assert!(c.cmd(&["DEBUG", "OBJECT", "k"]).starts_with(b"-ERR DEBUG command not allowed."));
}
