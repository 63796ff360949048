//! MONITOR: lines as Redis 7.0.15's replicationFeedMonitors writes them (recorded from
//! redis-server 7.0.15: after the command ran, scripts before, `[db lua]` inside them,
//! EXEC after the commands it ran, secrets redacted, admin and refused commands unseen).

mod common;

use common::H;
use memoria_core::protocol::batch::{self, BatchWriter, OutputReader};
use memoria_core::protocol::resp::encode_command;

const NOW_US: i64 = 1_700_000_000_000_000;

/// The time part of every line (the batch's clock).
fn at() -> String {
    format!("+{}.{:06}", NOW_US / 1_000_000, NOW_US % 1_000_000)
}

fn connect(h: &mut H, who: u64) {
    let mut b = BatchWriter::new();
    b.record(batch::REC_CONNECT, who, format!("127.0.0.1:{}\n127.0.0.1:6379", 5000 + who).as_bytes());
    h.e.execute(&b.buf, NOW_US, 1);
}

/// Runs one command (arguments split on '|') as client `who`: its reply and the pushes
/// for other clients.
fn run(h: &mut H, who: u64, line: &str) -> (String, Vec<(u64, String)>) {
    let args: Vec<&str> = line.split('|').collect();
    let mut b = BatchWriter::new();
    b.begin(batch::REC_COMMAND, who);
    encode_command(&mut b.buf, &args);
    b.end();
    let out = h.e.execute(&b.buf, NOW_US, 1);
    let mut reply = None;
    let mut pushes = Vec::new();
    for rec in OutputReader::new(&out) {
        match rec.kind {
            batch::REC_PUSH => pushes.push((rec.client, String::from_utf8_lossy(rec.reply).into_owned())),
            batch::REC_CONFIG => {}
            _ => reply = Some(String::from_utf8_lossy(rec.reply).into_owned()),
        }
    }
    (reply.expect("a reply record"), pushes)
}

/// The lines monitor `m` got from a command of client `who` (its address in them).
fn seen(pushes: &[(u64, String)], m: u64) -> Vec<String> {
    pushes.iter().filter(|(c, _)| *c == m).map(|(_, l)| l.clone()).collect()
}

fn line(db: usize, who: &str, args: &str) -> String {
    format!("{} [{db} {who}] {args}\r\n", at())
}

fn setup() -> H {
    let mut h = H::new();
    for c in 1..=4 {
        connect(&mut h, c);
    }
    assert_eq!(run(&mut h, 1, "MONITOR").0, "+OK\r\n");
    h
}

#[test]
fn commands_of_others_are_shown_after_they_run() {
    let mut h = setup();
    let (r, p) = run(&mut h, 2, "SET|k|v");
    assert_eq!(r, "+OK\r\n");
    assert_eq!(seen(&p, 1), [line(0, "127.0.0.1:5002", r#""SET" "k" "v""#)]);
    // The database the command left selected.
    let (_, p) = run(&mut h, 2, "SELECT|2");
    assert_eq!(seen(&p, 1), [line(2, "127.0.0.1:5002", r#""SELECT" "2""#)]);
    // Escapes as sdscatrepr writes them.
    let (_, p) = run(&mut h, 3, "GET|a \"b\"\\\n\r\t\x07\x08\x00\x7f\u{e9}");
    assert_eq!(seen(&p, 1), [line(0, "127.0.0.1:5003", r#""GET" "a \"b\"\\\n\r\t\a\b\x00\x7f\xc3\xa9""#)]);
    // An error from the command itself is shown; a refused command is not.
    let (r, p) = run(&mut h, 3, "INCR|k");
    assert!(r.starts_with("-ERR"));
    assert_eq!(seen(&p, 1).len(), 1);
    for refused in ["NOSUCH|x", "GET", "CONFIG|GET|maxmemory", "CLIENT|LIST", "MONITOR"] {
        let (_, p) = run(&mut h, 3, refused);
        assert_eq!(seen(&p, 1), Vec::<String>::new(), "{refused}");
    }
}

#[test]
fn a_monitors_own_command_is_shown_after_its_reply() {
    let mut h = setup();
    let (r, p) = run(&mut h, 1, "PING");
    assert_eq!(r, format!("+PONG\r\n{}", line(0, "127.0.0.1:5001", r#""PING""#)));
    assert!(p.is_empty());
    // MONITOR again is ignored, without a reply.
    assert_eq!(run(&mut h, 1, "MONITOR").0, "");
    let list = run(&mut h, 2, "CLIENT|LIST").0;
    assert!(list.contains("id=1 addr=127.0.0.1:5001 laddr=127.0.0.1:6379 fd=-1 name= age=0 idle=0 flags=O "), "{list}");
}

#[test]
fn secrets_are_redacted() {
    let mut h = setup();
    let (_, p) = run(&mut h, 2, "AUTH|hunter2");
    assert_eq!(seen(&p, 1), [line(0, "127.0.0.1:5002", r#""AUTH" "(redacted)""#)]);
    let (_, p) = run(&mut h, 2, "AUTH|default|hunter2");
    assert_eq!(seen(&p, 1), [line(0, "127.0.0.1:5002", r#""AUTH" "(redacted)" "(redacted)""#)]);
    let (_, p) = run(&mut h, 2, "HELLO|2|SETNAME|x|AUTH|default|hunter2");
    assert_eq!(seen(&p, 1), [line(0, "127.0.0.1:5002", r#""HELLO" "2" "SETNAME" "x" "AUTH" "(redacted)" "(redacted)""#)]);
}

#[test]
fn scripts_are_shown_before_the_commands_they_call() {
    let mut h = setup();
    let (r, p) = run(&mut h, 2, "EVAL|redis.call('set', 'a', 'b') return redis.call('get', 'nosuch')|0");
    assert_eq!(r, "$-1\r\n");
    assert_eq!(
        seen(&p, 1),
        [
            line(0, "127.0.0.1:5002", r#""EVAL" "redis.call('set', 'a', 'b') return redis.call('get', 'nosuch')" "0""#),
            line(0, "lua", r#""set" "a" "b""#),
            line(0, "lua", r#""get" "nosuch""#),
        ]
    );
    // A script that fails is shown all the same; what it may not call is not.
    let (_, p) = run(&mut h, 2, "EVAL|return redis.call('config', 'get', 'x')|0");
    assert_eq!(seen(&p, 1).len(), 1);
    // A monitor is a replica to Redis: no keyspace for it, scripts included (unseen).
    for c in ["EVAL|return redis.call('ping')|0", "GET|k", "SET|k|v", "FCALL|f|0"] {
        assert_eq!(run(&mut h, 1, c), ("-ERR Replica can't interact with the keyspace\r\n".to_string(), vec![]), "{c}");
    }
}

#[test]
fn a_transaction_is_shown_as_its_commands_then_exec() {
    let mut h = setup();
    for c in ["MULTI", "SET|x|1", "GET|x"] {
        let (_, p) = run(&mut h, 2, c);
        assert_eq!(seen(&p, 1).len(), usize::from(c == "MULTI"), "{c}");
    }
    let (_, p) = run(&mut h, 2, "EXEC");
    let who = "127.0.0.1:5002";
    assert_eq!(seen(&p, 1), [line(0, who, r#""SET" "x" "1""#), line(0, who, r#""GET" "x""#), line(0, who, r#""EXEC""#)]);
    // MONITOR cannot run in a transaction.
    run(&mut h, 3, "MULTI");
    run(&mut h, 3, "MONITOR");
    assert_eq!(run(&mut h, 3, "EXEC").0, "*1\r\n-ERR MONITOR isn't allowed for DENY BLOCKING client\r\n");
}

#[test]
fn a_blocked_command_is_shown_once() {
    let mut h = setup();
    let (_, p) = run(&mut h, 2, "BLPOP|q|0");
    assert_eq!(seen(&p, 1), [line(0, "127.0.0.1:5002", r#""BLPOP" "q" "0""#)]);
    let (_, p) = run(&mut h, 3, "RPUSH|q|a");
    assert_eq!(seen(&p, 1), [line(0, "127.0.0.1:5003", r#""RPUSH" "q" "a""#)], "the served BLPOP is not shown again");
}

#[test]
fn resp3_monitors_get_simple_strings_and_reset_or_leaving_stops_it() {
    let mut h = setup();
    run(&mut h, 4, "HELLO|3");
    assert_eq!(run(&mut h, 4, "MONITOR").0, "+OK\r\n");
    let (_, p) = run(&mut h, 2, "PING");
    let l = line(0, "127.0.0.1:5002", r#""PING""#);
    assert_eq!(seen(&p, 1), seen(&p, 4));
    assert_eq!(seen(&p, 4), [l]);
    assert_eq!(run(&mut h, 4, "RESET").0, "+RESET\r\n");
    let mut b = BatchWriter::new();
    b.record(batch::REC_DISCONNECT, 1, b"");
    h.e.execute(&b.buf, NOW_US, 1);
    let (_, p) = run(&mut h, 2, "PING");
    assert!(p.is_empty(), "{p:?}");
}
