//! Set commands: exact replies (checked against redis-server 7.0.15), Redis 7.0 errors,
//! intset → hashtable conversion, the algebra commands and their STORE forms, SPOP /
//! SRANDMEMBER shapes, SSCAN, and the effects each write replicates.

mod cmdutil;
mod common;

use std::collections::BTreeSet;

use cmdutil::*;
use common::{H, NIL, OK, bulk, err, int};

const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

fn sorted(reply: &str) -> Vec<String> {
    let mut v = parse_bulks(reply);
    v.sort();
    v
}

fn strs(items: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

#[test]
fn basics() {
    let mut h = H::new();
    ck(&mut h, "SADD s 3 1 2 1", int(3));
    ck(&mut h, "SADD s 2 4", int(1));
    ck(&mut h, "TYPE s", "+set\r\n");
    ck(&mut h, "OBJECT ENCODING s", bulk("intset"));
    // An intset replies in ascending order.
    ck(&mut h, "SMEMBERS s", bulks(&["1", "2", "3", "4"]));
    ck(&mut h, "SCARD s", int(4));
    ck(&mut h, "SCARD nokey", int(0));
    ck(&mut h, "SISMEMBER s 2", int(1));
    ck(&mut h, "SISMEMBER s 02", int(0));
    ck(&mut h, "SISMEMBER s x", int(0));
    ck(&mut h, "SISMEMBER nokey x", int(0));
    ck(&mut h, "SMISMEMBER s 1 x 4", "*3\r\n:1\r\n:0\r\n:1\r\n");
    ck(&mut h, "SMISMEMBER nokey a b", "*2\r\n:0\r\n:0\r\n");
    ck(&mut h, "SREM s 2 9 x", int(1));
    ck(&mut h, "SREM nokey a", int(0));
    ck(&mut h, "SMEMBERS s", bulks(&["1", "3", "4"]));
    ck(&mut h, "SMEMBERS nokey", "*0\r\n");
    // Removing the last member deletes the key.
    ck(&mut h, "SREM s 1 3 4", int(3));
    ck(&mut h, "EXISTS s", int(0));
    ck(&mut h, "TYPE s", "+none\r\n");
    // Negative and wide integers stay in the intset, still sorted.
    ck(&mut h, "SADD w 70000 -5 9223372036854775807 -9223372036854775808 0", int(5));
    ck(&mut h, "OBJECT ENCODING w", bulk("intset"));
    ck(&mut h, "SMEMBERS w", bulks(&["-9223372036854775808", "-5", "0", "70000", "9223372036854775807"]));
    // Non-canonical integers are strings: the set becomes a hashtable.
    ck(&mut h, "SADD n 1 01", int(2));
    ck(&mut h, "OBJECT ENCODING n", bulk("hashtable"));
    ck(&mut h, "SISMEMBER n 1", int(1));
    ck(&mut h, "SISMEMBER n 01", int(1));
    ck(&mut h, "SADD t a", int(1));
    ck(&mut h, "OBJECT ENCODING t", bulk("hashtable"));
    ckr(&mut h, &[b"SADD".as_slice(), b"bin", b"a\r\nb", b"\0", b""], int(3));
    ckr(&mut h, &[b"SISMEMBER".as_slice(), b"bin", b"a\r\nb"], int(1));
    ckr(&mut h, &[b"SISMEMBER".as_slice(), b"bin", b""], int(1));
    ck(&mut h, "SCARD bin", int(3));
}

#[test]
fn errors() {
    let mut h = H::new();
    for (c, name) in [
        ("SADD s", "sadd"),
        ("SREM s", "srem"),
        ("SMEMBERS", "smembers"),
        ("SMEMBERS a b", "smembers"),
        ("SISMEMBER s", "sismember"),
        ("SMISMEMBER s", "smismember"),
        ("SCARD", "scard"),
        ("SPOP", "spop"),
        ("SRANDMEMBER", "srandmember"),
        ("SMOVE a b", "smove"),
        ("SINTER", "sinter"),
        ("SINTERCARD 1", "sintercard"),
        ("SINTERSTORE d", "sinterstore"),
        ("SUNION", "sunion"),
        ("SUNIONSTORE d", "sunionstore"),
        ("SDIFF", "sdiff"),
        ("SDIFFSTORE d", "sdiffstore"),
        ("SSCAN s", "sscan"),
    ] {
        ck(&mut h, c, err(&format!("ERR wrong number of arguments for '{name}' command")));
    }
    ck(&mut h, "SADD s 1 2 3", int(3));
    ck(&mut h, "SPOP s 1 2", err("ERR syntax error"));
    ck(&mut h, "SPOP s abc", err("ERR value is out of range, must be positive"));
    ck(&mut h, "SPOP s -1", err("ERR value is out of range, must be positive"));
    ck(&mut h, "SPOP nokey -1", err("ERR value is out of range, must be positive"));
    ck(&mut h, "SRANDMEMBER s 1 2", err("ERR syntax error"));
    ck(&mut h, "SRANDMEMBER s abc", err("ERR value is not an integer or out of range"));
    ck(&mut h, "SRANDMEMBER nokey abc", err("ERR value is not an integer or out of range"));
    ck(&mut h, "SRANDMEMBER s -9223372036854775808", err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"));
    ck(&mut h, "SINTERCARD abc s", err("ERR numkeys should be greater than 0"));
    ck(&mut h, "SINTERCARD 0 s", err("ERR numkeys should be greater than 0"));
    ck(&mut h, "SINTERCARD -1 s", err("ERR numkeys should be greater than 0"));
    ck(&mut h, "SINTERCARD 3 s", err("ERR Number of keys can't be greater than number of args"));
    ck(&mut h, "SINTERCARD 1 s LIMIT -1", err("ERR LIMIT can't be negative"));
    ck(&mut h, "SINTERCARD 1 s LIMIT abc", err("ERR LIMIT can't be negative"));
    ck(&mut h, "SINTERCARD 1 s LIMIT", err("ERR syntax error"));
    ck(&mut h, "SINTERCARD 1 s FOO 1", err("ERR syntax error"));
    ck(&mut h, "SSCAN s x", err("ERR invalid cursor"));
    ck(&mut h, "SSCAN s 0 COUNT 0", err("ERR syntax error"));
    ck(&mut h, "SSCAN s 0 COUNT x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "SSCAN s 0 TYPE set", err("ERR syntax error"));
    ck(&mut h, "SSCAN s 0 MATCH", err("ERR syntax error"));
    // Options are read after the key: a missing key answers an empty scan.
    ck(&mut h, "SSCAN nokey 0 COUNT 0", "*2\r\n$1\r\n0\r\n*0\r\n");
    ck(&mut h, "SET str x", OK);
    for c in [
        "SADD str a",
        "SREM str a",
        "SMEMBERS str",
        "SISMEMBER str a",
        "SMISMEMBER str a",
        "SCARD str",
        "SPOP str",
        "SPOP str 2",
        "SPOP str 0",
        "SRANDMEMBER str",
        "SRANDMEMBER str 2",
        "SINTER s str",
        "SINTER nokey str",
        "SINTERCARD 2 nokey str",
        "SINTERSTORE d s str",
        "SUNION s str",
        "SUNIONSTORE d str",
        "SDIFF s str",
        "SDIFF nokey str",
        "SDIFFSTORE d s str",
        "SSCAN str 0",
        "SMOVE str s 1",
        "SMOVE s str 1",
    ] {
        ck(&mut h, c, err(WT));
    }
    // SMOVE from a missing source answers 0 before looking at the destination's type.
    ck(&mut h, "SMOVE nokey str 1", int(0));
    ck(&mut h, "GET str", bulk("x"));
}

#[test]
fn intset_conversion() {
    let mut h = H::new();
    let enc = |h: &mut H, k: &str| h.c(&format!("OBJECT ENCODING {k}"));
    // 512 integers stay an intset, the 513th converts; conversion is one-way.
    let mut cmd = String::from("SADD big");
    for i in 0..512 {
        cmd.push_str(&format!(" {i}"));
    }
    ck(&mut h, &cmd, int(512));
    assert_eq!(enc(&mut h, "big"), bulk("intset"));
    ck(&mut h, "SADD big 512", int(1));
    assert_eq!(enc(&mut h, "big"), bulk("hashtable"));
    ck(&mut h, "SREM big 512", int(1));
    assert_eq!(enc(&mut h, "big"), bulk("hashtable"));
    ck(&mut h, "SCARD big", int(512));
    let all: BTreeSet<String> = parse_bulks(&h.c("SMEMBERS big")).into_iter().collect();
    assert_eq!(all, (0..512).map(|i| i.to_string()).collect());
    // A lowered limit applies to the next add.
    ck(&mut h, "CONFIG SET set-max-intset-entries 2", OK);
    ck(&mut h, "SADD a 1 2", int(2));
    assert_eq!(enc(&mut h, "a"), bulk("intset"));
    ck(&mut h, "SADD a 3", int(1));
    assert_eq!(enc(&mut h, "a"), bulk("hashtable"));
    ck(&mut h, "CONFIG SET set-max-intset-entries 0", OK);
    ck(&mut h, "SADD z 1", int(1));
    assert_eq!(enc(&mut h, "z"), bulk("hashtable"));
    ck(&mut h, "CONFIG GET set-max-*", bulks(&["set-max-intset-entries", "0"]));
    ck(&mut h, "CONFIG SET set-max-intset-entries 512", OK);
    // A string member converts an intset, even when SADD adds nothing else.
    ck(&mut h, "SADD m 1 2", int(2));
    ck(&mut h, "SADD m 2 x", int(1));
    assert_eq!(enc(&mut h, "m"), bulk("hashtable"));
    ck(&mut h, "SREM m x", int(1));
    assert_eq!(enc(&mut h, "m"), bulk("hashtable"));
    assert_eq!(sorted(&h.c("SMEMBERS m")), strs(&["1", "2"]));
}

#[test]
fn smove() {
    let mut h = H::new();
    ck(&mut h, "SADD a 1 2 x", int(3));
    ck(&mut h, "SMOVE a b 1", int(1));
    ck(&mut h, "OBJECT ENCODING b", bulk("intset"));
    ck(&mut h, "SMOVE a b 1", int(0));
    ck(&mut h, "SMOVE a b zz", int(0));
    ck(&mut h, "SMOVE a a x", int(1));
    ck(&mut h, "SMOVE a a zz", int(0));
    ck(&mut h, "SADD b 2", int(1));
    // Already in the destination: still removed from the source.
    ck(&mut h, "SMOVE a b 2", int(1));
    ck(&mut h, "SMEMBERS b", bulks(&["1", "2"]));
    ck(&mut h, "SMOVE a b x", int(1));
    ck(&mut h, "EXISTS a", int(0));
    ck(&mut h, "OBJECT ENCODING b", bulk("hashtable"));
    ck(&mut h, "SMOVE b c x", int(1));
    ck(&mut h, "OBJECT ENCODING c", bulk("hashtable"));
    ck(&mut h, "SMEMBERS c", bulks(&["x"]));
    let fx = h.effect_lines();
    assert_eq!(fx, vec!["0:SADD a 1 2 x", "0:SMOVE a b 1", "0:SADD b 2", "0:SMOVE a b 2", "0:SMOVE a b x", "0:SMOVE b c x"]);
}

#[test]
fn algebra() {
    let mut h = H::new();
    ck(&mut h, "SADD a 1 2 3 4", int(4));
    ck(&mut h, "SADD b 3 4 5", int(3));
    ck(&mut h, "SADD c 4 x", int(2));
    ck(&mut h, "SINTER a b", bulks(&["3", "4"]));
    ck(&mut h, "SINTER a b c", bulks(&["4"]));
    ck(&mut h, "SINTER a", bulks(&["1", "2", "3", "4"]));
    ck(&mut h, "SINTER a a", bulks(&["1", "2", "3", "4"]));
    ck(&mut h, "SINTER a nokey", "*0\r\n");
    ck(&mut h, "SINTERCARD 2 a b", int(2));
    ck(&mut h, "SINTERCARD 1 a LIMIT 3", int(3));
    ck(&mut h, "SINTERCARD 1 a LIMIT 0", int(4));
    ck(&mut h, "SINTERCARD 2 a nokey", int(0));
    ck(&mut h, "SUNION a b", bulks(&["1", "2", "3", "4", "5"]));
    ck(&mut h, "SUNION nokey", "*0\r\n");
    assert_eq!(sorted(&h.c("SUNION a c")), strs(&["1", "2", "3", "4", "x"]));
    ck(&mut h, "SDIFF a b", bulks(&["1", "2"]));
    ck(&mut h, "SDIFF a b c", bulks(&["1", "2"]));
    ck(&mut h, "SDIFF a nokey", bulks(&["1", "2", "3", "4"]));
    ck(&mut h, "SDIFF nokey a", "*0\r\n");
    ck(&mut h, "SDIFF a a", "*0\r\n");
    ck(&mut h, "SDIFF c a", bulks(&["x"]));
    // STORE forms: the reply is the size; an empty result deletes the destination.
    ck(&mut h, "SET d old", OK);
    ck(&mut h, "EXPIRE d 100", int(1));
    ck(&mut h, "SINTERSTORE d a b", int(2));
    ck(&mut h, "TTL d", int(-1));
    ck(&mut h, "SMEMBERS d", bulks(&["3", "4"]));
    ck(&mut h, "OBJECT ENCODING d", bulk("intset"));
    ck(&mut h, "SUNIONSTORE d a c", int(5));
    ck(&mut h, "OBJECT ENCODING d", bulk("hashtable"));
    ck(&mut h, "SDIFFSTORE d a b", int(2));
    ck(&mut h, "SMEMBERS d", bulks(&["1", "2"]));
    ck(&mut h, "SINTERSTORE d a nokey", int(0));
    ck(&mut h, "EXISTS d", int(0));
    ck(&mut h, "SINTERSTORE d a nokey", int(0));
    ck(&mut h, "SDIFFSTORE a a b", int(2));
    ck(&mut h, "SMEMBERS a", bulks(&["1", "2"]));
    ck(&mut h, "SUNIONSTORE e nokey", int(0));
    // Stores replicate as themselves (deterministic); a no-op store replicates nothing.
    let fx = h.effect_lines();
    assert_eq!(fx[fx.len() - 5..], ["0:SINTERSTORE d a b", "0:SUNIONSTORE d a c", "0:SDIFFSTORE d a b", "0:SINTERSTORE d a nokey", "0:SDIFFSTORE a a b"]);
}

#[test]
fn sdiff_algorithms_keep_redis_encodings() {
    let mut h = H::new();
    // Small first set, big others: algorithm 1 adds only survivors (stays an intset).
    ck(&mut h, "SADD a 1 2", int(2));
    ck(&mut h, "SADD b 2 x y z", int(4));
    ck(&mut h, "SDIFFSTORE d a b", int(1));
    ck(&mut h, "OBJECT ENCODING d", bulk("intset"));
    // Big first set, three sets, a string that the others remove: algorithm 2 adds
    // everything first, so the result is a hashtable even though only integers are left.
    let mut cmd = String::from("SADD big x");
    for i in 0..20 {
        cmd.push_str(&format!(" {i}"));
    }
    h.c(&cmd);
    ck(&mut h, "SADD small x", int(1));
    ck(&mut h, "SADD small2 y", int(1));
    ck(&mut h, "SDIFFSTORE d big small small2", int(20));
    ck(&mut h, "OBJECT ENCODING d", bulk("hashtable"));
    // With two sets algorithm 1 always wins (n <= n + m): an intset again.
    ck(&mut h, "SDIFFSTORE d big small", int(20));
    ck(&mut h, "OBJECT ENCODING d", bulk("intset"));
}

#[test]
fn spop_and_srandmember() {
    let mut h = H::new();
    ck(&mut h, "SPOP nokey", NIL);
    ck(&mut h, "SPOP nokey 3", "*0\r\n");
    ck(&mut h, "SRANDMEMBER nokey", NIL);
    ck(&mut h, "SRANDMEMBER nokey 3", "*0\r\n");
    ck(&mut h, "SADD one a", int(1));
    ck(&mut h, "SRANDMEMBER one", bulk("a"));
    ck(&mut h, "SRANDMEMBER one 0", "*0\r\n");
    ck(&mut h, "SRANDMEMBER one -3", bulks(&["a", "a", "a"]));
    ck(&mut h, "SRANDMEMBER one 5", bulks(&["a"]));
    ck(&mut h, "SPOP one 0", "*0\r\n");
    let mark = fx_len(&h);
    ck(&mut h, "SPOP one", bulk("a"));
    ck(&mut h, "EXISTS one", int(0));
    assert_eq!(fx_since(&h, mark), vec!["0:SREM one a"]);
    for big in [false, true] {
        let mut h = H::new();
        let n = if big { 600 } else { 20 };
        let members: BTreeSet<String> = (0..n).map(|i| if big { format!("m{i}") } else { i.to_string() }).collect();
        for m in &members {
            h.c(&format!("SADD s {m}"));
        }
        assert_eq!(h.c("OBJECT ENCODING s"), bulk(if big { "hashtable" } else { "intset" }));
        for count in [1, 5, n - 1, n, n + 10] {
            let got = parse_bulks(&h.c(&format!("SRANDMEMBER s {count}")));
            assert_eq!(got.len(), count.min(n));
            let set: BTreeSet<String> = got.iter().cloned().collect();
            assert_eq!(set.len(), got.len(), "distinct");
            assert!(set.is_subset(&members));
        }
        let got = parse_bulks(&h.c(&format!("SRANDMEMBER s -{}", n * 3)));
        assert_eq!(got.len(), n * 3);
        assert!(got.iter().all(|m| members.contains(m)));
        assert!(members.contains(&bulk_text(&h.c("SRANDMEMBER s"))));
        // SPOP: the members it returns are gone, and the effect removes exactly them.
        let mut left = members.clone();
        let mark = fx_len(&h);
        let one = bulk_text(&h.c("SPOP s"));
        assert!(left.remove(&one));
        let three = parse_bulks(&h.c("SPOP s 3"));
        assert_eq!(three.len(), 3);
        for m in &three {
            assert!(left.remove(m), "popped {m} twice or never had it");
        }
        let fx = fx_since(&h, mark);
        assert_eq!(fx[0], format!("0:SREM s {one}"));
        assert_eq!(fx[1], format!("0:SREM s {}", three.join(" ")));
        assert_eq!(int_of(&h.c("SCARD s")), left.len() as i64);
        // Popping at least everything returns the rest, deletes the key and replicates DEL.
        let mark = fx_len(&h);
        let rest: BTreeSet<String> = parse_bulks(&h.c(&format!("SPOP s {}", n))).into_iter().collect();
        assert_eq!(rest, left);
        assert_eq!(fx_since(&h, mark), vec!["0:DEL s"]);
        ck(&mut h, "EXISTS s", int(0));
    }
    // RESP3: SPOP with a count answers a set, SRANDMEMBER an array; no key is a null.
    let mut h = H::new();
    h.c("HELLO 3");
    ck(&mut h, "SADD s 1 2", int(2));
    ck(&mut h, "SPOP nokey", "_\r\n");
    ck(&mut h, "SRANDMEMBER nokey", "_\r\n");
    ck(&mut h, "SPOP nokey 2", "~0\r\n");
    ck(&mut h, "SRANDMEMBER s 2", bulks(&["1", "2"]));
    ck(&mut h, "SMEMBERS s", "~2\r\n$1\r\n1\r\n$1\r\n2\r\n");
    ck(&mut h, "SINTER s nokey", "~0\r\n");
    ck(&mut h, "SPOP s 5", "~2\r\n$1\r\n1\r\n$1\r\n2\r\n");
}

#[test]
fn sscan() {
    let mut h = H::new();
    ck(&mut h, "SSCAN nokey 0", "*2\r\n$1\r\n0\r\n*0\r\n");
    ck(&mut h, "SADD i 3 10 1", int(3));
    // An intset comes back whole and sorted in one call, whatever COUNT says.
    ck(&mut h, "SSCAN i 0 COUNT 1", format!("*2\r\n$1\r\n0\r\n{}", bulks(&["1", "3", "10"])));
    ck(&mut h, "SSCAN i 0 MATCH 1*", format!("*2\r\n$1\r\n0\r\n{}", bulks(&["1", "10"])));
    for i in 0..500 {
        h.c(&format!("SADD t m{i}"));
    }
    let mut seen = BTreeSet::new();
    let mut cursor = "0".to_string();
    let mut calls = 0;
    loop {
        let r = h.c(&format!("SSCAN t {cursor} COUNT 1"));
        let rest = r.strip_prefix("*2\r\n").unwrap();
        let next = bulk_text(rest);
        let body = &rest[rest.find("\r\n").unwrap() + 2..];
        let body = &body[body.find("\r\n").unwrap() + 2..];
        seen.extend(parse_bulks(body));
        calls += 1;
        assert!(calls < 100_000);
        if next == "0" {
            break;
        }
        cursor = next;
    }
    assert_eq!(seen, (0..500).map(|i| format!("m{i}")).collect());
    assert!(calls > 10, "COUNT 1 iterates in steps ({calls} calls)");
}

#[test]
fn effects_and_expiry() {
    let mut h = H::new();
    ck(&mut h, "SADD s a b", int(2));
    ck(&mut h, "SADD s a", int(0));
    ck(&mut h, "SREM s zz", int(0));
    ck(&mut h, "SREM s a", int(1));
    ck(&mut h, "SMEMBERS s", bulks(&["b"]));
    assert_eq!(h.effect_lines(), vec!["0:SADD s a b", "0:SREM s a"]);
    // Writes keep a set's TTL; an expired set reads as missing and replicates DEL.
    ck(&mut h, "PEXPIRE s 100", int(1));
    ck(&mut h, "SADD s c", int(1));
    ck(&mut h, "PTTL s", int(100));
    h.advance(100);
    let mark = fx_len(&h);
    ck(&mut h, "SCARD s", int(0));
    assert_eq!(fx_since(&h, mark), vec!["0:DEL s"]);
    // COPY duplicates both encodings.
    ck(&mut h, "SADD i 1 2", int(2));
    ck(&mut h, "SADD t x y", int(2));
    ck(&mut h, "COPY i i2", int(1));
    ck(&mut h, "COPY t t2", int(1));
    ck(&mut h, "SADD i 3", int(1));
    ck(&mut h, "SMEMBERS i2", bulks(&["1", "2"]));
    ck(&mut h, "OBJECT ENCODING i2", bulk("intset"));
    ck(&mut h, "OBJECT ENCODING t2", bulk("hashtable"));
    assert_eq!(sorted(&h.c("SMEMBERS t2")), strs(&["x", "y"]));
    ck(&mut h, "SET str v", OK);
    let r = h.c("SCAN 0 TYPE set COUNT 100");
    let body = r.strip_prefix("*2\r\n$1\r\n0\r\n").unwrap();
    assert_eq!(sorted(body), strs(&["i", "i2", "t", "t2"]));
}

#[test]
fn snapshot_round_trip() {
    let mut h = H::new();
    ck(&mut h, "SADD i 1 -70000 9223372036854775807", int(3));
    ck(&mut h, "SADD t x 1", int(2));
    ck(&mut h, "SADD u 1 2", int(2));
    ck(&mut h, "SADD u x", int(1));
    ck(&mut h, "SREM u x", int(1));
    let mut copy = memoria_core::Engine::new(5);
    let mut db = 0;
    let mut cursor = 0;
    loop {
        let chunk = h.e.dump(db, cursor, 64);
        copy.load(&chunk.data).unwrap();
        if chunk.done {
            break;
        }
        (db, cursor) = (chunk.next_db, chunk.next_cursor);
    }
    assert_eq!(copy.digest(), h.e.digest());
    let mut c = H { e: copy, ..H::new() };
    ck(&mut c, "SMEMBERS i", bulks(&["-70000", "1", "9223372036854775807"]));
    ck(&mut c, "OBJECT ENCODING i", bulk("intset"));
    // The encoding survives, even when an intset would do now.
    ck(&mut c, "OBJECT ENCODING u", bulk("hashtable"));
    assert_eq!(sorted(&c.c("SMEMBERS t")), strs(&["1", "x"]));
    // The digest does not depend on the encoding or on the order of members.
    let mut a = H::new();
    a.c("SADD s 1 2");
    let mut b = H::new();
    b.c("SADD s x 2 1");
    b.c("SREM s x");
    assert_eq!(a.e.digest(), b.e.digest());
    b.c("SADD s 3");
    assert_ne!(a.e.digest(), b.e.digest());
    // Corrupt records are refused, never loaded.
    let mut bad = memoria_core::Engine::new(1);
    let mut rec = vec![0u8, 0x12];
    rec.extend_from_slice(&(-1i64).to_le_bytes());
    rec.extend_from_slice(&1u32.to_le_bytes());
    rec.push(b'k');
    rec.push(0);
    rec.extend_from_slice(&1u32.to_le_bytes());
    rec.extend_from_slice(&1u32.to_le_bytes());
    rec.push(b'x');
    assert!(bad.load(&rec).is_err(), "a string member in an intset");
}
