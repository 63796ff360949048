//! Pub/sub through the real server: RESP2, RESP3 and pattern subscribers receive exactly
//! the published messages, in one order, from several concurrent publishers; unsubscribe
//! and disconnect cleanup; keyspace notifications for writes, released only once the write
//! is in the log; subscriptions and notifications on a replica.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::{Memoria, Raw, contains, log_bytes};

fn bulk(s: &str) -> String {
    format!("${}\r\n{}\r\n", s.len(), s)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The bulk items of a message (`*3`/`>3`/`*4`/`>4` of bulks), or None for other replies.
fn items(reply: &[u8]) -> Option<Vec<String>> {
    let s = text(reply);
    let mut lines = s.split("\r\n");
    let head = lines.next()?;
    if !(head.starts_with('*') || head.starts_with('>')) {
        return None;
    }
    let n: usize = head[1..].parse().ok()?;
    let mut out = Vec::new();
    for _ in 0..n {
        let l = lines.next()?;
        if !l.starts_with('$') {
            return None;
        }
        out.push(lines.next()?.to_string());
    }
    Some(out)
}

/// Reads `n` messages, returning their payloads (the last item).
fn read_messages(c: &mut Raw, n: usize, kind: &str, resp3: bool) -> Vec<String> {
    (0..n)
        .map(|_| {
            let r = c.read_reply();
            assert_eq!(r[0], if resp3 { b'>' } else { b'*' }, "message framing: {}", text(&r));
            let it = items(&r).unwrap_or_else(|| panic!("not a message: {}", text(&r)));
            assert_eq!(it[0], kind, "{it:?}");
            it.last().unwrap().clone()
        })
        .collect()
}

fn publishers(port: u16, channel: &'static str, n_pub: usize, per: usize) {
    let hs: Vec<_> = (0..n_pub)
        .map(|p| {
            std::thread::spawn(move || {
                let mut c = Raw::connect(port);
                // Pipelined in chunks, so several publishers' commands share engine batches.
                for chunk in (0..per).collect::<Vec<_>>().chunks(50) {
                    let mut out = Vec::new();
                    for i in chunk {
                        memoria_core::protocol::resp::encode_command(&mut out, &["PUBLISH", channel, &format!("p{p}:{i}")]);
                    }
                    c.s.write_all(&out).unwrap();
                    for _ in chunk {
                        let r = c.read_reply();
                        assert!(r.starts_with(b":"), "{}", text(&r));
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

/// Each publisher's messages arrive complete and in its own order.
fn check_per_publisher(got: &[String], n_pub: usize, per: usize) {
    let mut next = vec![0usize; n_pub];
    for m in got {
        let (p, i) = m[1..].split_once(':').unwrap();
        let (p, i): (usize, usize) = (p.parse().unwrap(), i.parse().unwrap());
        assert_eq!(i, next[p], "publisher {p}'s messages out of order");
        next[p] += 1;
    }
    assert_eq!(next, vec![per; n_pub]);
}

#[test]
fn subscribers_get_every_message_in_publish_order() {
    let m = Memoria::start();
    let mut a = Raw::connect(m.port);
    assert_eq!(a.cmd(&["SUBSCRIBE", "ch"]), format!("*3\r\n{}{}:1\r\n", bulk("subscribe"), bulk("ch")).as_bytes());
    let mut b = Raw::connect(m.port);
    b.cmd(&["HELLO", "3"]);
    assert_eq!(b.cmd(&["SUBSCRIBE", "ch"]), format!(">3\r\n{}{}:1\r\n", bulk("subscribe"), bulk("ch")).as_bytes());
    let mut c = Raw::connect(m.port);
    assert_eq!(c.cmd(&["PSUBSCRIBE", "c*"]), format!("*3\r\n{}{}:1\r\n", bulk("psubscribe"), bulk("c*")).as_bytes());
    let mut other = Raw::connect(m.port);
    other.cmd(&["SUBSCRIBE", "elsewhere"]);

    let (n_pub, per) = (4, 500);
    publishers(m.port, "ch", n_pub, per);
    let ga = read_messages(&mut a, n_pub * per, "message", false);
    let gb = read_messages(&mut b, n_pub * per, "message", true);
    let gc = read_messages(&mut c, n_pub * per, "pmessage", false);
    check_per_publisher(&ga, n_pub, per);
    // One publish order, seen identically by every subscriber.
    assert_eq!(ga, gb);
    assert_eq!(ga, gc);
    // Nothing else arrived: the next reply is PING's.
    assert_eq!(a.cmd(&["PING"]), b"*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    assert_eq!(b.cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(c.cmd(&["PING", "x"]), b"*2\r\n$4\r\npong\r\n$1\r\nx\r\n");
    assert_eq!(other.cmd(&["PING"]), b"*2\r\n$4\r\npong\r\n$0\r\n\r\n");
}

#[test]
fn unsubscribe_and_disconnect_cleanup() {
    let m = Memoria::start();
    let mut p = Raw::connect(m.port);
    let mut a = Raw::connect(m.port);
    a.cmd(&["SUBSCRIBE", "x"]);
    a.send(&["SUBSCRIBE", "y", "z"]);
    a.read_reply();
    a.read_reply();
    assert_eq!(p.cmd(&["PUBLISH", "y", "1"]), b":1\r\n");
    assert_eq!(items(&a.read_reply()).unwrap(), ["message", "y", "1"]);
    assert_eq!(a.cmd(&["UNSUBSCRIBE", "y"]), format!("*3\r\n{}{}:2\r\n", bulk("unsubscribe"), bulk("y")).as_bytes());
    assert_eq!(p.cmd(&["PUBLISH", "y", "2"]), b":0\r\n");
    assert_eq!(p.cmd(&["PUBSUB", "NUMSUB", "x", "y", "z"]), format!("*6\r\n{}:1\r\n{}:0\r\n{}:1\r\n", bulk("x"), bulk("y"), bulk("z")).as_bytes());
    // The subscribed context refuses other commands in RESP2.
    assert_eq!(a.cmd(&["GET", "k"]), b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n");
    // A vanished subscriber is forgotten.
    drop(a);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if p.cmd(&["PUBSUB", "NUMSUB", "x"]) == format!("*2\r\n{}:0\r\n", bulk("x")).as_bytes() {
            break;
        }
        assert!(Instant::now() < deadline, "the disconnected subscriber was never dropped");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(p.cmd(&["PUBLISH", "x", "gone"]), b":0\r\n");
    assert_eq!(p.cmd(&["PUBSUB", "CHANNELS"]), b"*0\r\n");
}

#[test]
fn keyspace_notifications_follow_durable_writes() {
    let l = common::start_logged_pair("pubsub");
    let mut w = Raw::connect(l.primary);
    assert_eq!(w.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]), b"+OK\r\n");
    let mut s = Raw::connect(l.primary);
    s.cmd(&["PSUBSCRIBE", "__keyevent@*__:*"]);
    let mut s3 = Raw::connect(l.primary);
    s3.cmd(&["HELLO", "3"]);
    s3.cmd(&["SUBSCRIBE", "__keyspace@0__:h"]);

    // Several writers at once: each event arrives after its write is in the log.
    let writers = common::spawn_writers(l.primary, 3, 40);
    let mut seen = Vec::new();
    for _ in 0..120 {
        let it = items(&s.read_reply()).unwrap();
        assert_eq!(&it[..3], ["pmessage", "__keyevent@*__:*", "__keyevent@0__:set"]);
        // Released only once durable: the SET is already in the log.
        let key = it[3].clone();
        assert!(contains(&log_bytes(&l.log), format!("${}\r\n{}\r\n", key.len(), key).as_bytes()), "event for {key} before its write was logged");
        seen.push(key);
    }
    for h in writers {
        h.join().unwrap();
    }
    seen.sort();
    let mut want: Vec<String> = (0..3).flat_map(|t| (0..40).map(move |i| format!("w{t}-{i}"))).collect();
    want.sort();
    assert_eq!(seen, want);

    // Channel and message per event, across command families.
    for cmd in [vec!["HSET", "h", "f", "1"], vec!["HINCRBY", "h", "f", "2"], vec!["EXPIRE", "h", "100"], vec!["HDEL", "h", "f"]] {
        w.cmd(&cmd);
    }
    let ks: Vec<Vec<String>> = (0..5).map(|_| items(&s3.read_reply()).unwrap()).collect();
    let want: Vec<Vec<String>> =
        ["hset", "hincrby", "expire", "hdel", "del"].iter().map(|e| vec!["message".to_string(), "__keyspace@0__:h".into(), e.to_string()]).collect();
    assert_eq!(ks, want);
    let ev: Vec<String> = (0..5).map(|_| items(&s.read_reply()).unwrap()[2].clone()).collect();
    assert_eq!(ev, ["__keyevent@0__:hset", "__keyevent@0__:hincrby", "__keyevent@0__:expire", "__keyevent@0__:hdel", "__keyevent@0__:del"]);

    // Expiry by the engine raises `expired` (active expiry on the tick).
    w.cmd(&["SET", "short", "1", "PX", "50"]);
    assert_eq!(items(&s.read_reply()).unwrap()[2..], ["__keyevent@0__:set", "short"]);
    assert_eq!(items(&s.read_reply()).unwrap()[2..], ["__keyevent@0__:expire", "short"]);
    assert_eq!(items(&s.read_reply()).unwrap()[2..], ["__keyevent@0__:expired", "short"]);
}

#[test]
fn replica_serves_pubsub_and_emits_notifications_for_applied_writes() {
    let l = common::start_logged_pair("pubsub");
    let mut r = Raw::connect(l.replica);
    assert_eq!(r.cmd(&["CONFIG", "SET", "notify-keyspace-events", "K$"]), b"+OK\r\n");
    let mut sub = Raw::connect(l.replica);
    sub.cmd(&["SUBSCRIBE", "__keyspace@0__:k", "local"]);
    sub.read_reply();
    // PUBLISH is node-local and works on a replica.
    assert_eq!(r.cmd(&["PUBLISH", "local", "hi"]), b":1\r\n");
    assert_eq!(items(&sub.read_reply()).unwrap(), ["message", "local", "hi"]);
    // A write on the primary reaches the replica's subscribers through the log.
    let mut p = Raw::connect(l.primary);
    p.cmd(&["SET", "k", "1"]);
    p.cmd(&["APPEND", "k", "2"]);
    assert_eq!(items(&sub.read_reply()).unwrap(), ["message", "__keyspace@0__:k", "set"]);
    assert_eq!(items(&sub.read_reply()).unwrap(), ["message", "__keyspace@0__:k", "append"]);
    // The primary's own subscribers are separate (node-local).
    assert_eq!(p.cmd(&["PUBLISH", "local", "x"]), b":0\r\n");
}
