//! DUMP and RESTORE. Every payload in `data/dump_restore_redis_7_0_15.tsv` was recorded
//! from redis-server 7.0.15 (its DUMPs of every type and encoding, and payloads of the
//! older RDB types it still loads, built by the generator and checked by redis-server),
//! with the raw replies redis-server gave to RESTORE and to reading the restored key:
//! here each is restored into the engine and read back to the same bytes. Memoria's own
//! DUMPs restore to the same replies; corrupt payloads (truncated, bit-flipped with the
//! checksum made right, huge counts) are answered, never a panic. Error texts and their
//! order are redis-server 7.0.15's.

mod cmdutil;
mod common;

use cmdutil::*;
use common::{H, NIL, OK, err, int};
use memoria_core::rdb;

/// One recorded case: a payload, redis-server's reply to `RESTORE k 0 payload`, and its
/// replies to the read commands that followed.
struct Case {
    name: String,
    payload: Vec<u8>,
    restore_reply: Vec<u8>,
    reads: Vec<(String, Vec<u8>)>,
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// The generator's escaping: `|` is CRLF, `\\` a backslash, `\xNN` a byte.
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'|' => out.extend_from_slice(b"\r\n"),
            b'\\' if b[i + 1] == b'\\' => {
                out.push(b'\\');
                i += 1;
            }
            b'\\' => {
                out.push(u8::from_str_radix(&s[i + 2..i + 4], 16).unwrap());
                i += 3;
            }
            c => out.push(c),
        }
        i += 1;
    }
    out
}

fn cases() -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    for line in include_str!("data/dump_restore_redis_7_0_15.tsv").lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if f[0] == "case" {
            out.push(Case { name: f[1].to_string(), payload: unhex(f[2]), restore_reply: unescape(f[3]), reads: Vec::new() });
        } else {
            out.last_mut().unwrap().reads.push((f[0].to_string(), unescape(f[1])));
        }
    }
    assert!(out.len() > 60, "the recorded cases");
    out
}

fn run(h: &mut H, cmd: &str, key: &str) -> Vec<u8> {
    let args: Vec<&str> = cmd.split(' ').map(|a| if a == "k" { key } else { a }).collect();
    h.raw(&args)
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).chars().take(600).collect()
}

fn restore(h: &mut H, key: &str, payload: &[u8]) -> Vec<u8> {
    h.raw(&[b"RESTORE", key.as_bytes(), b"0", payload])
}

fn dump(h: &mut H, key: &str) -> Vec<u8> {
    let r = h.raw(&[b"DUMP", key.as_bytes()]);
    let text_end = r.iter().position(|&c| c == b'\r').unwrap();
    let n: usize = std::str::from_utf8(&r[1..text_end]).unwrap().parse().expect("DUMP gave a payload");
    r[text_end + 2..text_end + 2 + n].to_vec()
}

#[test]
fn redis_payloads_restore_to_what_redis_shows() {
    let cases = cases();
    for c in &cases {
        let mut h = H::new();
        assert_eq!(show(&restore(&mut h, "k", &c.payload)), show(&c.restore_reply), "RESTORE of {}", c.name);
        for (cmd, want) in &c.reads {
            assert_eq!(show(&run(&mut h, cmd, "k")), show(want), "{cmd} after restoring {}", c.name);
        }
    }
    // Every type and encoding redis-server writes, and the older types it reads, are here.
    let types: std::collections::BTreeSet<u8> = cases.iter().filter(|c| c.restore_reply == OK.as_bytes()).map(|c| c.payload[0]).collect();
    assert_eq!(types.into_iter().collect::<Vec<u8>>(), [0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
}

#[test]
fn memoria_dumps_restore_to_the_same_values() {
    for c in cases().iter().filter(|c| c.restore_reply == OK.as_bytes()) {
        let mut h = H::new();
        restore(&mut h, "k", &c.payload);
        let mine = dump(&mut h, "k");
        ck(&mut h, "RESTORE k 0 x", err("BUSYKEY Target key name already exists."));
        assert_eq!(show(&restore(&mut h, "copy", &mine)), "+OK\r\n", "RESTORE of Memoria's DUMP of {}", c.name);
        // (Bytes may differ only where a hash table's order does.)
        assert_eq!(content(&mut h, "copy"), content(&mut h, "k"), "a round trip of {}", c.name);
        for (cmd, want) in &c.reads {
            assert_eq!(show(&run(&mut h, cmd, "copy")), show(want), "{cmd} after a round trip of {}", c.name);
        }
    }
}

#[test]
fn dump_payload_forms() {
    let mut h = H::new();
    ck(&mut h, "DUMP nokey", NIL);
    ck(&mut h, "DUMP", err("ERR wrong number of arguments for 'dump' command"));
    ck(&mut h, "DUMP a b", err("ERR wrong number of arguments for 'dump' command"));
    // The same bytes as redis-server 7.0.15's DUMP for these (recorded with redis-cli).
    h.c("SET s hello");
    assert_eq!(dump(&mut h, "s"), b"\x00\x05hello\n\x00cr\xdfve4 \n");
    h.c("SET i 12345");
    assert_eq!(dump(&mut h, "i"), unhex("00c139300a009d94ea2793fc08b9"));
    h.c("SADD is 1 2 3 -5");
    assert_eq!(dump(&mut h, "is"), cases().iter().find(|c| c.name == "set_intset16").unwrap().payload);
    h.c("HSET h f1 v1 2 12345 f3 ");
    h.raw(&["HSET", "h", "num", "-9223372036854775808"]);
    assert_eq!(dump(&mut h, "h"), cases().iter().find(|c| c.name == "hash_listpack").unwrap().payload);
    // An expired key is gone for DUMP too.
    h.c("SET e v PX 10");
    h.advance(20);
    ck(&mut h, "DUMP e", NIL);
}

fn payload_of(body: &[u8]) -> Vec<u8> {
    let mut p = body.to_vec();
    rdb::finish_payload(&mut p);
    p
}

#[test]
fn restore_errors_in_redis_order() {
    let mut h = H::new();
    h.c("SET s hello");
    let p = dump(&mut h, "s");
    let r = |h: &mut H, args: &[&[u8]]| String::from_utf8_lossy(&h.raw(args)).into_owned();
    // Replies recorded from redis-server 7.0.15: options first, then the existing key,
    // then the TTL, then the payload's footer, then its object.
    let busy = err("BUSYKEY Target key name already exists.");
    assert_eq!(r(&mut h, &[b"RESTORE", b"s", b"0", &p]), busy);
    assert_eq!(r(&mut h, &[b"RESTORE", b"s", b"-1", &p]), busy);
    assert_eq!(r(&mut h, &[b"RESTORE", b"s", b"0", b"garbage"]), busy);
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"-1", &p]), err("ERR Invalid TTL value, must be >= 0"));
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"-1", b"garbage"]), err("ERR Invalid TTL value, must be >= 0"));
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"abc", &p]), err("ERR value is not an integer or out of range"));
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", &p, b"idletime", b"-1"]), err("ERR Invalid IDLETIME value, must be >= 0"));
    assert_eq!(r(&mut h, &[b"RESTORE", b"s", b"0", b"garbage", b"idletime", b"-3"]), err("ERR Invalid IDLETIME value, must be >= 0"));
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", &p, b"idletime", b"x"]), err("ERR value is not an integer or out of range"));
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", &p, b"idletime"]), err("ERR syntax error"));
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", &p, b"freq", b"256"]), err("ERR Invalid FREQ value, must be >= 0 and <= 255"));
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", &p, b"freq", b"-1"]), err("ERR Invalid FREQ value, must be >= 0 and <= 255"));
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", &p, b"freq", b"1", b"idletime", b"1"]), err("ERR syntax error"));
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", &p, b"idletime", b"1", b"freq", b"1"]), err("ERR syntax error"));
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", &p, b"bogus"]), err("ERR syntax error"));
    assert_eq!(r(&mut h, &[b"RESTORE", b"s", b"-5", b"garbage", b"bogus"]), err("ERR syntax error"));
    let footer = err("ERR DUMP payload version or checksum are wrong");
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", b"garbage"]), footer);
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", b"\x00"]), footer);
    let mut flipped = p.clone();
    *flipped.last_mut().unwrap() ^= 1;
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", &flipped]), footer);
    let mut flipped = p.clone();
    flipped[4] = b'x';
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", &flipped]), footer);
    let bad = err("ERR Bad data format");
    for body in
        [&b"\x63\x05hello"[..], b"\x00", b"", b"\x02\x00", b"\x04\x00", b"\x12\x00", b"\x13\x00", b"\x0b\x00", b"\x15\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"]
    {
        assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", &payload_of(body)]), bad, "{body:?}");
    }
    ck(&mut h, "EXISTS new", int(0));
    ck(&mut h, "RESTORE", err("ERR wrong number of arguments for 'restore' command"));
    ck(&mut h, "RESTORE a 0", err("ERR wrong number of arguments for 'restore' command"));
    // Options repeat freely and in any case.
    assert_eq!(r(&mut h, &[b"RESTORE", b"new", b"0", &p, b"replace", b"REPLACE", b"AbsTTL"]), OK);
    ck(&mut h, "GET new", "$5\r\nhello\r\n");
}

#[test]
fn restore_ttl_replace_and_effects() {
    let mut h = H::new();
    h.c("SET s hello");
    let p = dump(&mut h, "s");
    let now = h.now_ms;
    let mark = h.effect_lines().len();
    let r = |h: &mut H, args: &[&[u8]]| String::from_utf8_lossy(&h.raw(args)).into_owned();
    // A relative TTL becomes an absolute expiry, which the effect carries.
    assert_eq!(r(&mut h, &[b"RESTORE", b"a", b"5000", &p]), OK);
    ck(&mut h, "PTTL a", int(5000));
    // ABSTTL: the TTL is a unix-ms time; 0 means no expiry whatever the options.
    let at = (now + 60_000).to_string();
    assert_eq!(r(&mut h, &[b"RESTORE", b"b", at.as_bytes(), &p, b"ABSTTL"]), OK);
    ck(&mut h, "PEXPIRETIME b", int(now + 60_000));
    assert_eq!(r(&mut h, &[b"RESTORE", b"c", b"0", &p, b"ABSTTL"]), OK);
    ck(&mut h, "TTL c", int(-1));
    // Already expired: +OK and no key; with REPLACE the old key goes, logged as a DEL.
    assert_eq!(r(&mut h, &[b"RESTORE", b"d", b"1", &p, b"ABSTTL"]), OK);
    ck(&mut h, "EXISTS d", int(0));
    assert_eq!(r(&mut h, &[b"RESTORE", b"s", b"1", &p, b"ABSTTL", b"REPLACE"]), OK);
    ck(&mut h, "EXISTS s", int(0));
    // REPLACE over a key of another type, with its TTL cleared.
    h.c("RPUSH l x");
    h.c("EXPIRE l 100");
    assert_eq!(r(&mut h, &[b"RESTORE", b"l", b"0", &p, b"REPLACE"]), OK);
    ck(&mut h, "GET l", "$5\r\nhello\r\n");
    ck(&mut h, "TTL l", int(-1));
    // IDLETIME dates the key's last access back; FREQ is accepted.
    assert_eq!(r(&mut h, &[b"RESTORE", b"idle", b"0", &p, b"IDLETIME", b"100"]), OK);
    ck(&mut h, "OBJECT IDLETIME idle", int(100));
    assert_eq!(r(&mut h, &[b"RESTORE", b"freq", b"0", &p, b"FREQ", b"100"]), OK);
    ck(&mut h, "EXISTS freq", int(1));
    let payload = String::from_utf8_lossy(&p).into_owned();
    assert_eq!(
        fx_since(&h, mark),
        [
            format!("0:RESTORE a {} {payload} REPLACE ABSTTL", now + 5000),
            format!("0:RESTORE b {} {payload} REPLACE ABSTTL", now + 60_000),
            format!("0:RESTORE c 0 {payload} REPLACE ABSTTL"),
            "0:DEL s".to_string(),
            "0:RPUSH l x".to_string(),
            format!("0:PEXPIREAT l {}", now + 100_000),
            format!("0:RESTORE l 0 {payload} REPLACE ABSTTL"),
            format!("0:RESTORE idle 0 {payload} REPLACE ABSTTL IDLETIME 100"),
            format!("0:RESTORE freq 0 {payload} REPLACE ABSTTL FREQ 100"),
        ]
    );
    // Replaying the effects later (past every expiry) gives the same data.
    let mut replica = memoria_core::Engine::new(5);
    replica.apply(&h.effects, (now + 1_000_000) * 1000).unwrap();
    assert_eq!(replica.digest(), h.e.digest());
}

#[test]
fn restore_wakes_blocked_clients_and_notifies() {
    let mut h = H::new();
    h.c("RPUSH src a b");
    let p = dump(&mut h, "src");
    // A subscriber to keyspace events sees `restore` (and `new` with n).
    h.c("CONFIG SET notify-keyspace-events KEAn");
    h.client = 2;
    h.c("SUBSCRIBE __keyevent@0__:restore __keyevent@0__:new");
    h.client = 3;
    h.c("BLPOP dst 0");
    h.client = 1;
    let mut b = memoria_core::protocol::batch::BatchWriter::new();
    b.begin(memoria_core::protocol::batch::REC_COMMAND, 1);
    memoria_core::protocol::resp::encode_command(&mut b.buf, &[&b"RESTORE"[..], b"dst", b"0", &p]);
    b.end();
    let out = h.e.execute(&b.buf, h.now_ms * 1000, 99);
    let recs: Vec<_> = memoria_core::protocol::batch::OutputReader::new(&out).map(|r| (r.client, String::from_utf8_lossy(r.reply).into_owned())).collect();
    assert!(recs.contains(&(1, OK.to_string())), "{recs:?}");
    assert!(recs.contains(&(3, "*2\r\n$3\r\ndst\r\n$1\r\na\r\n".to_string())), "the waiter is served: {recs:?}");
    let pushed: String = recs.iter().filter(|r| r.0 == 2).map(|r| r.1.clone()).collect();
    assert!(pushed.contains("__keyevent@0__:new\r\n$3\r\ndst") && pushed.contains("__keyevent@0__:restore\r\n$3\r\ndst"), "{recs:?}");
}

#[test]
fn command_entries() {
    let mut h = H::new();
    let info = h.c("COMMAND INFO dump restore restore-asking");
    for (name, arity, flags, cats) in [
        ("dump", 2, "+readonly\r\n", "+@keyspace\r\n+@read\r\n+@slow\r\n"),
        ("restore", -4, "+write\r\n+denyoom\r\n", "+@keyspace\r\n+@write\r\n+@slow\r\n+@dangerous\r\n"),
        ("restore-asking", -4, "+write\r\n+denyoom\r\n+asking\r\n", "+@keyspace\r\n+@write\r\n+@slow\r\n+@dangerous\r\n"),
    ] {
        let head = format!(
            "${}\r\n{name}\r\n:{arity}\r\n*{}\r\n{flags}:1\r\n:1\r\n:1\r\n*{}\r\n{cats}",
            name.len(),
            flags.matches('+').count(),
            cats.matches('+').count()
        );
        assert!(info.contains(&head), "{name}: {info:?}");
    }
    ck(&mut h, "COMMAND GETKEYS RESTORE k 0 payload REPLACE", bulks(&["k"]));
    let docs = h.c("COMMAND DOCS restore-asking");
    assert!(docs.contains("An internal command for migrating keys in a cluster") && docs.contains("$6\r\nserver\r\n"), "{docs:?}");
    // RESTORE-ASKING is RESTORE.
    h.c("SET s v");
    let p = dump(&mut h, "s");
    assert_eq!(String::from_utf8_lossy(&h.raw(&[&b"RESTORE-ASKING"[..], b"t", b"0", &p])), OK);
    ck(&mut h, "GET t", "$1\r\nv\r\n");
}

/// Reads a restored key of any type every way that walks its encoding.
fn read_all(h: &mut H, key: &str) {
    for cmd in [
        "TYPE k",
        "OBJECT ENCODING k",
        "GET k",
        "LRANGE k 0 -1",
        "LINDEX k -1",
        "SMEMBERS k",
        "SISMEMBER k 5",
        "HGETALL k",
        "ZRANGE k 0 -1 WITHSCORES",
        "ZREVRANGE k 0 -1",
        "XRANGE k - +",
        "XREVRANGE k + -",
        "XINFO STREAM k FULL",
        "XINFO GROUPS k",
        "XADD k * f v",
        "RPUSH k x",
        "SADD k x",
        "HSET k x y",
        "ZADD k 1 x",
    ] {
        run(h, cmd, key);
    }
}

/// A key's type, encoding and content, in an order that does not depend on a hash
/// table's.
fn content(h: &mut H, key: &str) -> Vec<String> {
    let ty = String::from_utf8_lossy(&run(h, "TYPE k", key)).into_owned();
    let read = match ty.as_str() {
        "+string\r\n" => "GET k",
        "+list\r\n" => "LRANGE k 0 -1",
        "+set\r\n" => "SMEMBERS k",
        "+hash\r\n" => "HGETALL k",
        "+zset\r\n" => "ZRANGE k 0 -1 WITHSCORES",
        _ => "XINFO STREAM k FULL",
    };
    let reply = String::from_utf8_lossy(&run(h, read, key)).into_owned();
    let mut items = match ty.as_str() {
        "+set\r\n" => parse_bulks(&reply),
        "+hash\r\n" => parse_bulks(&reply).chunks(2).map(|p| p.join("=")).collect(),
        _ => vec![reply],
    };
    items.sort();
    items.insert(0, String::from_utf8_lossy(&run(h, "OBJECT ENCODING k", key)).into_owned());
    items.insert(0, ty);
    items
}

#[test]
fn corrupt_payloads_are_answered_without_panics() {
    let bad = b"-ERR Bad data format\r\n".to_vec();
    let mut tried = 0;
    for c in cases().iter().filter(|c| c.restore_reply == OK.as_bytes()) {
        let body = &c.payload[..c.payload.len() - 10];
        let mut variants: Vec<Vec<u8>> = Vec::new();
        // Truncations and single-bit flips, the checksum made right; long payloads are
        // sampled with a stride.
        let stride = (body.len() / 150).max(1);
        for cut in (0..body.len()).step_by(stride) {
            variants.push(payload_of(&body[..cut]));
        }
        for at in (0..body.len()).step_by(stride) {
            let mut b = body.to_vec();
            b[at] ^= 1 << (at % 8);
            variants.push(payload_of(&b));
            let mut b = body.to_vec();
            b[at] = 0xff;
            variants.push(payload_of(&b));
        }
        // Huge lengths and counts in place of the first length.
        for huge in [&b"\x81\xff\xff\xff\xff\xff\xff\xff\xff"[..], b"\x80\xff\xff\xff\xff", b"\xc3\x80\x00\x00\x00\x10\x80\xff\xff\xff\xff"] {
            let mut b = vec![body[0]];
            b.extend_from_slice(huge);
            b.extend_from_slice(&body[1..]);
            variants.push(payload_of(&b));
        }
        let mut h = H::new();
        for p in variants {
            tried += 1;
            let reply = restore(&mut h, "k", &p);
            assert!(reply == OK.as_bytes() || reply == bad, "{}: {}", c.name, show(&reply));
            if reply == OK.as_bytes() {
                // What was accepted reads, dumps and restores again like any value.
                let d = dump(&mut h, "k");
                assert_eq!(show(&restore(&mut h, "again", &d)), "+OK\r\n", "{}: its DUMP restores", c.name);
                assert_eq!(content(&mut h, "again"), content(&mut h, "k"), "{}", c.name);
                read_all(&mut h, "k");
                h.c("DEL k again");
            }
        }
    }
    assert!(tried > 10_000, "{tried} variants");
}

/// A stream of two entries (1-1, 1-2) whose group `g` has 1-1 pending for consumer `c`,
/// as a value to break one invariant of at a time.
fn healthy_stream() -> memoria_core::types::stream::Stream {
    use memoria_core::types::stream::{Group, Nack, Stream, StreamId};
    let mut s = Stream::new();
    for seq in [1, 2] {
        assert!(s.append(StreamId::new(1, seq), &[b"f", b"v"], 4096, 100).is_ok());
    }
    s.length = 2;
    s.last_id = StreamId::new(1, 2);
    s.first_id = StreamId::new(1, 1);
    s.entries_added = 2;
    let mut g = Group::new(StreamId::new(1, 1), 1);
    g.create_consumer(b"c", 5);
    let c = g.consumer_name(b"c").unwrap();
    g.pel.insert(StreamId::new(1, 1), Nack { delivery_time: 5, delivery_count: 1, consumer: c });
    g.consumers.get_mut(&b"c"[..]).unwrap().pel.insert(StreamId::new(1, 1));
    s.groups.insert(b"g"[..].into(), g);
    s
}

/// A change that breaks one invariant of `healthy_stream`.
type Breaks = fn(&mut memoria_core::types::stream::Stream);

fn stream_payload(s: memoria_core::types::stream::Stream) -> Vec<u8> {
    rdb::object::dump(&memoria_core::keyspace::object::Value::Stream(Box::new(s)))
}

/// Streams whose parts disagree are refused: the engine relies on their length, last id,
/// counters and pending entries matching their nodes, groups and consumers (Redis checks
/// less; dump_restore_live.rs checks that Memoria refuses all that redis-server does).
#[test]
fn inconsistent_streams_are_refused() {
    use memoria_core::types::stream::{Nack, StreamId};
    let mut h = H::new();
    let restore_reply = |h: &mut H, p: Vec<u8>| String::from_utf8_lossy(&h.raw(&[&b"RESTORE"[..], b"s", b"0", &p, b"REPLACE"])).into_owned();
    assert_eq!(restore_reply(&mut h, stream_payload(healthy_stream())), OK);
    ck(&mut h, "XPENDING s g", "*4\r\n:1\r\n$3\r\n1-1\r\n$3\r\n1-1\r\n*1\r\n*2\r\n$1\r\nc\r\n$1\r\n1\r\n");
    let broken: Vec<(&str, Breaks)> = vec![
        ("length", |s| s.length = 3),
        ("entries added below the length", |s| s.entries_added = 1),
        ("entries added past i64", |s| s.entries_added = 1 << 63),
        ("largest deleted id past the last id", |s| s.max_deleted = StreamId::new(2, 0)),
        ("last id below an entry", |s| s.last_id = StreamId::new(1, 1)),
        ("read counter below -1", |s| s.groups.get_mut(&b"g"[..]).unwrap().entries_read = -2),
        ("pending entry of no consumer", |s| {
            let g = s.groups.get_mut(&b"g"[..]).unwrap();
            g.consumers.get_mut(&b"c"[..]).unwrap().pel.clear();
        }),
        ("consumer owning an id the group does not hold", |s| {
            let g = s.groups.get_mut(&b"g"[..]).unwrap();
            g.consumers.get_mut(&b"c"[..]).unwrap().pel.insert(StreamId::new(1, 2));
        }),
        ("pending entry of an unknown consumer", |s| {
            let g = s.groups.get_mut(&b"g"[..]).unwrap();
            g.pel.insert(StreamId::new(1, 2), Nack { delivery_time: 1, delivery_count: 1, consumer: std::rc::Rc::from(&b"ghost"[..]) });
        }),
    ];
    for (what, brk) in broken {
        let mut s = healthy_stream();
        brk(&mut s);
        assert_eq!(restore_reply(&mut h, stream_payload(s)), err("ERR Bad data format"), "{what}");
    }
    ck(&mut h, "XLEN s", int(2));
}
