//! Blocking commands across real connections: FIFO wake-up, deadlines, CLIENT UNBLOCK,
//! disconnects, pipelines behind a blocked command, BLMOVE chains, several keys, MULTI,
//! RESP3. Replies are compared byte for byte with what redis-server 7.0 sends.

mod common;

use std::time::Duration;

use common::{Memoria, Raw, wait_blocked};

fn bulk(s: &str) -> Vec<u8> {
    format!("${}\r\n{}\r\n", s.len(), s).into_bytes()
}

fn pair(k: &str, v: &str) -> Vec<u8> {
    let mut r = b"*2\r\n".to_vec();
    r.extend(bulk(k));
    r.extend(bulk(v));
    r
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Nothing has arrived on `c` within `ms`.
fn silent(c: &mut Raw, ms: u64) -> bool {
    c.s.set_read_timeout(Some(Duration::from_millis(ms))).unwrap();
    let mut tmp = [0u8; 64];
    let r = std::io::Read::read(&mut c.s, &mut tmp);
    c.s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    match r {
        Err(e) => matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
        Ok(_) => false,
    }
}

#[test]
fn waiters_are_served_in_blocking_order() {
    let m = Memoria::start();
    let mut waiters: Vec<Raw> = Vec::new();
    for i in 0..3 {
        let mut w = Raw::connect(m.port);
        w.send(&["BLPOP", "q", "0"]);
        wait_blocked(m.port, i + 1);
        waiters.push(w);
    }
    let mut p = Raw::connect(m.port);
    assert_eq!(p.cmd(&["RPUSH", "q", "a", "b"]), b":2\r\n");
    assert_eq!(waiters[0].read_reply(), pair("q", "a"));
    assert_eq!(waiters[1].read_reply(), pair("q", "b"));
    assert!(silent(&mut waiters[2], 100), "the third waiter got nothing to pop");
    assert_eq!(p.cmd(&["LLEN", "q"]), b":0\r\n");
    assert_eq!(p.cmd(&["RPUSH", "q", "c"]), b":1\r\n");
    assert_eq!(waiters[2].read_reply(), pair("q", "c"));
    assert_eq!(p.cmd(&["EXISTS", "q"]), b":0\r\n");
    wait_blocked(m.port, 0);
}

#[test]
fn a_waiter_is_served_before_the_next_command_of_anyone() {
    // Like Redis: the push wakes the waiter at once, so an LPOP pipelined right behind the
    // push (same batch) finds the list empty again.
    let m = Memoria::start();
    let mut w = Raw::connect(m.port);
    w.send(&["BRPOP", "q", "0"]);
    wait_blocked(m.port, 1);
    let mut p = Raw::connect(m.port);
    let mut pipe = Vec::new();
    memoria_core::protocol::resp::encode_command(&mut pipe, &["LPUSH", "q", "x"]);
    memoria_core::protocol::resp::encode_command(&mut pipe, &["LPOP", "q"]);
    memoria_core::protocol::resp::encode_command(&mut pipe, &["BLPOP", "q", "0.01"]);
    p.send_raw(&pipe);
    assert_eq!(p.read_reply(), b":1\r\n");
    assert_eq!(p.read_reply(), b"$-1\r\n");
    assert_eq!(p.read_reply(), b"*-1\r\n");
    assert_eq!(w.read_reply(), pair("q", "x"));
}

#[test]
fn timeouts_answer_null_in_the_clients_protocol() {
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    // The client really waits (it shows as blocked), and only its timeout can end the
    // wait: nothing pushes to the key. Durations are not asserted.
    c.send(&["BLPOP", "nothing", "3"]);
    wait_blocked(m.port, 1);
    assert_eq!(c.read_reply(), b"*-1\r\n");
    wait_blocked(m.port, 0);
    // BLMOVE times out with a null array too (Redis's replyToBlockedClientTimedOut).
    assert_eq!(c.cmd(&["BLMOVE", "nothing", "d", "LEFT", "RIGHT", "0.05"]), b"*-1\r\n");
    assert_eq!(c.cmd(&["BLMPOP", "0.05", "2", "a", "b", "LEFT", "COUNT", "3"]), b"*-1\r\n");
    assert_eq!(c.cmd(&["BRPOPLPUSH", "nothing", "d", "0.05"]), b"*-1\r\n");
    c.cmd(&["HELLO", "3"]);
    assert_eq!(c.cmd(&["BRPOP", "nothing", "0.05"]), b"_\r\n");
    assert_eq!(c.cmd(&["BLMOVE", "nothing", "d", "LEFT", "RIGHT", "0.05"]), b"_\r\n");
    // Still usable afterwards, nothing left blocked.
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
    wait_blocked(m.port, 0);
}

#[test]
fn timeout_arguments_are_checked_like_redis() {
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    assert_eq!(c.cmd(&["BLPOP", "q", "abc"]), b"-ERR timeout is not a float or out of range\r\n");
    assert_eq!(c.cmd(&["BLPOP", "q", "-1"]), b"-ERR timeout is negative\r\n");
    assert_eq!(c.cmd(&["BLPOP", "q", "-inf"]), b"-ERR timeout is negative\r\n");
    assert_eq!(c.cmd(&["BLPOP", "q", "nan"]), b"-ERR timeout is not a float or out of range\r\n");
    assert_eq!(c.cmd(&["BLMOVE", "q", "d", "LEFT", "UP", "0"]), b"-ERR syntax error\r\n");
    assert_eq!(c.cmd(&["BLMPOP", "0", "0", "q", "LEFT"]), b"-ERR numkeys should be greater than 0\r\n");
}

#[test]
fn client_unblock_timeout_and_error() {
    let m = Memoria::start();
    let mut w = Raw::connect(m.port);
    let id = text(&w.cmd(&["CLIENT", "ID"])).trim_start_matches(':').trim().to_string();
    let mut admin = Raw::connect(m.port);
    assert_eq!(admin.cmd(&["CLIENT", "UNBLOCK", &id]), b":0\r\n");
    w.send(&["BLPOP", "q", "0"]);
    wait_blocked(m.port, 1);
    assert!(text(&admin.cmd(&["CLIENT", "LIST"])).contains("flags=b"));
    assert_eq!(admin.cmd(&["CLIENT", "UNBLOCK", &id]), b":1\r\n");
    assert_eq!(w.read_reply(), b"*-1\r\n");
    assert_eq!(admin.cmd(&["CLIENT", "UNBLOCK", &id, "TIMEOUT"]), b":0\r\n");
    w.send(&["BLMOVE", "q", "d", "RIGHT", "LEFT", "0"]);
    wait_blocked(m.port, 1);
    assert_eq!(admin.cmd(&["CLIENT", "UNBLOCK", &id, "ERROR"]), b":1\r\n");
    assert_eq!(w.read_reply(), b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n");
    assert_eq!(admin.cmd(&["CLIENT", "UNBLOCK", &id, "MAYBE"]), b"-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n");
    assert_eq!(admin.cmd(&["CLIENT", "UNBLOCK", "x"]), b"-ERR value is not an integer or out of range\r\n");
    wait_blocked(m.port, 0);
    // The unblocked client's own later push is not taken by its old wait.
    assert_eq!(w.cmd(&["RPUSH", "q", "v"]), b":1\r\n");
    assert_eq!(admin.cmd(&["LLEN", "q"]), b":1\r\n");
}

#[test]
fn a_disconnected_waiter_leaves_nothing_behind() {
    let m = Memoria::start();
    {
        let mut gone = Raw::connect(m.port);
        gone.send(&["BLPOP", "q", "0"]);
        wait_blocked(m.port, 1);
        let mut second = Raw::connect(m.port);
        second.send(&["BLPOP", "q", "0"]);
        wait_blocked(m.port, 2);
        drop(gone);
        drop(second);
    }
    wait_blocked(m.port, 0);
    let mut p = Raw::connect(m.port);
    assert_eq!(p.cmd(&["RPUSH", "q", "kept"]), b":1\r\n");
    assert_eq!(p.cmd(&["LRANGE", "q", "0", "-1"]), format!("*1\r\n{}", text(&bulk("kept"))).into_bytes());
}

#[test]
fn pipelined_commands_wait_behind_a_blocked_one() {
    let m = Memoria::start();
    let mut w = Raw::connect(m.port);
    let mut pipe = Vec::new();
    memoria_core::protocol::resp::encode_command(&mut pipe, &["BLPOP", "q", "0"]);
    memoria_core::protocol::resp::encode_command(&mut pipe, &["SET", "after", "1"]);
    memoria_core::protocol::resp::encode_command(&mut pipe, &["LLEN", "q"]);
    w.send_raw(&pipe);
    wait_blocked(m.port, 1);
    // More commands arrive while it is blocked: they wait too.
    w.send(&["GET", "after"]);
    let mut p = Raw::connect(m.port);
    assert_eq!(p.cmd(&["EXISTS", "after"]), b":0\r\n", "a command behind the blocked one ran early");
    assert!(silent(&mut w, 100));
    assert_eq!(p.cmd(&["RPUSH", "q", "x", "y"]), b":2\r\n");
    assert_eq!(w.read_reply(), pair("q", "x"));
    assert_eq!(w.read_reply(), b"+OK\r\n");
    assert_eq!(w.read_reply(), b":1\r\n");
    assert_eq!(w.read_reply(), bulk("1"));
    // A second blocking command in the released pipeline blocks again, in order.
    let mut pipe = Vec::new();
    memoria_core::protocol::resp::encode_command(&mut pipe, &["BLPOP", "none", "0"]);
    memoria_core::protocol::resp::encode_command(&mut pipe, &["BLPOP", "none2", "0"]);
    memoria_core::protocol::resp::encode_command(&mut pipe, &["PING"]);
    w.send_raw(&pipe);
    wait_blocked(m.port, 1);
    p.cmd(&["RPUSH", "none", "1"]);
    assert_eq!(w.read_reply(), pair("none", "1"));
    wait_blocked(m.port, 1);
    assert!(silent(&mut w, 50));
    p.cmd(&["RPUSH", "none2", "2"]);
    assert_eq!(w.read_reply(), pair("none2", "2"));
    assert_eq!(w.read_reply(), b"+PONG\r\n");
}

#[test]
fn blmove_chains_and_several_keys() {
    let m = Memoria::start();
    let mut mover = Raw::connect(m.port);
    mover.send(&["BLMOVE", "src", "mid", "LEFT", "RIGHT", "0"]);
    wait_blocked(m.port, 1);
    let mut popper = Raw::connect(m.port);
    popper.send(&["BRPOP", "other", "mid", "0"]);
    wait_blocked(m.port, 2);
    let mut p = Raw::connect(m.port);
    assert_eq!(p.cmd(&["RPUSH", "src", "v"]), b":1\r\n");
    assert_eq!(mover.read_reply(), bulk("v"));
    assert_eq!(popper.read_reply(), pair("mid", "v"));
    assert_eq!(p.cmd(&["EXISTS", "src", "mid"]), b":0\r\n");
    wait_blocked(m.port, 0);

    // Several keys: served from the one that was pushed; a wrong-type key does not wake it.
    popper.send(&["BLPOP", "k1", "k2", "k3", "0"]);
    wait_blocked(m.port, 1);
    assert_eq!(p.cmd(&["SET", "k1", "string"]), b"+OK\r\n");
    assert!(silent(&mut popper, 50));
    assert_eq!(p.cmd(&["RPUSH", "k3", "three"]), b":1\r\n");
    assert_eq!(popper.read_reply(), pair("k3", "three"));
    // BLMPOP takes up to COUNT from the ready key.
    popper.send(&["BLMPOP", "0", "2", "m1", "m2", "RIGHT", "COUNT", "2"]);
    wait_blocked(m.port, 1);
    assert_eq!(p.cmd(&["RPUSH", "m2", "a", "b", "c"]), b":3\r\n");
    let mut want = b"*2\r\n".to_vec();
    want.extend(bulk("m2"));
    want.extend(b"*2\r\n");
    want.extend(bulk("c"));
    want.extend(bulk("b"));
    assert_eq!(popper.read_reply(), want);
    assert_eq!(p.cmd(&["LRANGE", "m2", "0", "-1"]), [b"*1\r\n".to_vec(), bulk("a")].concat());
    // A BLMOVE whose destination has the wrong type is answered with WRONGTYPE.
    mover.send(&["BLMOVE", "s2", "k1", "LEFT", "LEFT", "0"]);
    wait_blocked(m.port, 1);
    p.cmd(&["RPUSH", "s2", "z"]);
    assert_eq!(mover.read_reply(), b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    assert_eq!(p.cmd(&["LLEN", "s2"]), b":1\r\n");
}

#[test]
fn inside_multi_blocking_commands_do_not_block() {
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    assert_eq!(c.cmd(&["MULTI"]), b"+OK\r\n");
    for cmd in [&["BLPOP", "q", "0"][..], &["BLMOVE", "q", "d", "LEFT", "LEFT", "0"], &["BRPOPLPUSH", "q", "d", "0"], &["BLMPOP", "0", "1", "q", "LEFT"]] {
        assert_eq!(c.cmd(cmd), b"+QUEUED\r\n");
    }
    assert_eq!(c.cmd(&["EXEC"]), b"*4\r\n*-1\r\n$-1\r\n$-1\r\n*-1\r\n");
    // A push inside MULTI wakes a waiter once EXEC has run, with the transaction's result.
    let mut w = Raw::connect(m.port);
    w.send(&["BLPOP", "q", "0"]);
    wait_blocked(m.port, 1);
    c.cmd(&["MULTI"]);
    c.cmd(&["RPUSH", "q", "1", "2"]);
    c.cmd(&["LPOP", "q"]);
    assert_eq!(c.cmd(&["EXEC"]), [b"*2\r\n:2\r\n".to_vec(), bulk("1")].concat());
    assert_eq!(w.read_reply(), pair("q", "2"));
}
