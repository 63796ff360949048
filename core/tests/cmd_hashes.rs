//! Hash commands: exact replies, Redis 7.0 errors, listpack → hashtable conversion,
//! HRANDFIELD/HSCAN shapes, expiry and the effects each write replicates.

mod cmdutil;
mod common;

use std::collections::BTreeSet;

use cmdutil::*;
use common::{H, NIL, OK, bulk, err, int};

const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[test]
fn basics() {
    let mut h = H::new();
    ck(&mut h, "HSET h a 1 b 2 c 3", int(3));
    ck(&mut h, "HSET h a 10 d 4", int(1));
    ck(&mut h, "HGET h a", bulk("10"));
    ck(&mut h, "HGET h zz", NIL);
    ck(&mut h, "HGET nokey a", NIL);
    ck(&mut h, "HMGET h a zz b", format!("*3\r\n{}{}{}", bulk("10"), NIL, bulk("2")));
    ck(&mut h, "HMGET nokey a", format!("*1\r\n{NIL}"));
    ck(&mut h, "HLEN h", int(4));
    ck(&mut h, "HLEN nokey", int(0));
    ck(&mut h, "HEXISTS h a", int(1));
    ck(&mut h, "HEXISTS h zz", int(0));
    ck(&mut h, "HEXISTS nokey a", int(0));
    ck(&mut h, "HSTRLEN h a", int(2));
    ck(&mut h, "HSTRLEN h zz", int(0));
    ck(&mut h, "HSTRLEN nokey a", int(0));
    // Small hashes keep insertion order, like Redis's listpack.
    ck(&mut h, "HKEYS h", bulks(&["a", "b", "c", "d"]));
    ck(&mut h, "HVALS h", bulks(&["10", "2", "3", "4"]));
    ck(&mut h, "HGETALL h", bulks(&["a", "10", "b", "2", "c", "3", "d", "4"]));
    ck(&mut h, "HKEYS nokey", "*0\r\n");
    ck(&mut h, "HVALS nokey", "*0\r\n");
    ck(&mut h, "HGETALL nokey", "*0\r\n");
    ck(&mut h, "HDEL h a zz", int(1));
    ck(&mut h, "HDEL h zz", int(0));
    ck(&mut h, "HDEL nokey a", int(0));
    ck(&mut h, "HSETNX h b 9", int(0));
    ck(&mut h, "HSETNX h e 5", int(1));
    ck(&mut h, "HSETNX new f v", int(1));
    ck(&mut h, "HMSET h x 1 y 2", OK);
    ck(&mut h, "HKEYS h", bulks(&["b", "c", "d", "e", "x", "y"]));
    ck(&mut h, "TYPE h", "+hash\r\n");
    // Deleting the last field deletes the key.
    ck(&mut h, "HDEL h b c d e x y", int(6));
    ck(&mut h, "EXISTS h", int(0));
    ck(&mut h, "TYPE h", "+none\r\n");
    ckr(&mut h, &[b"HSET".as_slice(), b"bin", b"f\r\n", b"\0v"], int(1));
    ckr(&mut h, &[b"HGET".as_slice(), b"bin", b"f\r\n"], b"$2\r\n\0v\r\n");
    ckr(&mut h, &[b"HSET".as_slice(), b"bin", b"", b""], int(1));
    ckr(&mut h, &[b"HGET".as_slice(), b"bin", b""], b"$0\r\n\r\n");
}

#[test]
fn errors() {
    let mut h = H::new();
    for (c, name) in [
        ("HSET h", "hset"),
        ("HSET h f", "hset"),
        ("HSET h f v g", "hset"),
        ("HMSET h f", "hmset"),
        ("HMSET h f v g", "hmset"),
        ("HGET h", "hget"),
        ("HDEL h", "hdel"),
        ("HMGET h", "hmget"),
        ("HLEN", "hlen"),
        ("HSETNX h f", "hsetnx"),
        ("HINCRBY h f", "hincrby"),
        ("HSCAN h", "hscan"),
        ("HRANDFIELD", "hrandfield"),
    ] {
        ck(&mut h, c, err(&format!("ERR wrong number of arguments for '{name}' command")));
    }
    ck(&mut h, "HSET h a 1 b 2", int(2));
    ck(&mut h, "HINCRBY h a x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "HINCRBY h a 1.5", err("ERR value is not an integer or out of range"));
    ck(&mut h, "HSET h s abc", int(1));
    ck(&mut h, "HINCRBY h s 1", err("ERR hash value is not an integer"));
    ck(&mut h, "HINCRBYFLOAT h s 1", err("ERR hash value is not a float"));
    ck(&mut h, "HINCRBYFLOAT h a abc", err("ERR value is not a valid float"));
    ck(&mut h, "HSET h big 9223372036854775807", int(1));
    ck(&mut h, "HINCRBY h big 1", err("ERR increment or decrement would overflow"));
    ck(&mut h, "HRANDFIELD h x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "HRANDFIELD h 1 WITHVALUES FOO", err("ERR syntax error"));
    ck(&mut h, "HRANDFIELD h 1 FOO", err("ERR syntax error"));
    ck(&mut h, "HSCAN h 0 COUNT 0", err("ERR syntax error"));
    ck(&mut h, "HSCAN h 0 COUNT x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "HSCAN h x", err("ERR invalid cursor"));
    ck(&mut h, "HSCAN h 0 MATCH", err("ERR syntax error"));
    ck(&mut h, "HSCAN h 0 FOO bar", err("ERR syntax error"));
    ck(&mut h, "SET s x", OK);
    for c in [
        "HGET s a",
        "HSET s a 1",
        "HMSET s a 1",
        "HSETNX s a 1",
        "HDEL s a",
        "HLEN s",
        "HEXISTS s a",
        "HSTRLEN s a",
        "HMGET s a",
        "HKEYS s",
        "HVALS s",
        "HGETALL s",
        "HINCRBY s a 1",
        "HINCRBYFLOAT s a 1",
        "HRANDFIELD s",
        "HRANDFIELD s 2",
        "HSCAN s 0",
    ] {
        ck(&mut h, c, err(WT));
    }
}

#[test]
fn counters() {
    let mut h = H::new();
    ck(&mut h, "HINCRBY h n 5", int(5));
    ck(&mut h, "HINCRBY h n -7", int(-2));
    ck(&mut h, "HINCRBYFLOAT h n 0.5", bulk("-1.5"));
    ck(&mut h, "HINCRBYFLOAT h f 1.5", bulk("1.5"));
    ck(&mut h, "HINCRBYFLOAT h f 1.5", bulk("3"));
    ck(&mut h, "HINCRBY h f 1", int(4));
    ck(&mut h, "HSET h e 5.0e3", int(1));
    ck(&mut h, "HINCRBYFLOAT h e 1", bulk("5001"));
    let fx = h.effect_lines();
    assert_eq!(
        fx,
        vec![
            "0:HINCRBY h n 5",
            "0:HINCRBY h n -7",
            "0:HSET h n -1.5",
            "0:HSET h f 1.5",
            "0:HSET h f 3",
            "0:HINCRBY h f 1",
            "0:HSET h e 5.0e3",
            "0:HSET h e 5001"
        ]
    );
}

#[test]
fn write_effects() {
    let mut h = H::new();
    ck(&mut h, "HSET h a 1", int(1));
    ck(&mut h, "HSET h a 1", int(0));
    ck(&mut h, "HMSET h b 2", OK);
    ck(&mut h, "HSETNX h a 9", int(0));
    ck(&mut h, "HSETNX h c 3", int(1));
    ck(&mut h, "HDEL h zz", int(0));
    ck(&mut h, "HDEL h a zz", int(1));
    ck(&mut h, "HDEL nokey a", int(0));
    ck(&mut h, "HGET h b", bulk("2"));
    let fx = h.effect_lines();
    // HSET that only overwrote still replicates (the value may have changed).
    assert_eq!(fx, vec!["0:HSET h a 1", "0:HSET h a 1", "0:HMSET h b 2", "0:HSETNX h c 3", "0:HDEL h a zz"]);
}

#[test]
fn listpack_to_hashtable() {
    let mut h = H::new();
    let enc = |h: &mut H, k: &str| h.c(&format!("OBJECT ENCODING {k}"));
    // By entries, with a lowered limit: exactly the limit stays listpack.
    ck(&mut h, "CONFIG SET hash-max-listpack-entries 4", OK);
    ck(&mut h, "HSET h a 1 b 2 c 3 d 4", int(4));
    assert_eq!(enc(&mut h, "h"), bulk("listpack"));
    ck(&mut h, "HSET h e 5", int(1));
    assert_eq!(enc(&mut h, "h"), bulk("hashtable"));
    // Conversion is one-way.
    ck(&mut h, "HDEL h a b c d", int(4));
    assert_eq!(enc(&mut h, "h"), bulk("hashtable"));
    ck(&mut h, "HGETALL h", bulks(&["e", "5"]));
    // HSETNX and HINCRBY convert too.
    ck(&mut h, "HSET n a 1 b 2 c 3 d 4", int(4));
    ck(&mut h, "HSETNX n e 1", int(1));
    assert_eq!(enc(&mut h, "n"), bulk("hashtable"));
    ck(&mut h, "HSET i a 1 b 2 c 3 d 4", int(4));
    ck(&mut h, "HINCRBY i e 1", int(1));
    assert_eq!(enc(&mut h, "i"), bulk("hashtable"));
    // The alias sets the same parameter.
    ck(&mut h, "CONFIG SET hash-max-ziplist-entries 2", OK);
    ck(&mut h, "CONFIG GET hash-max-listpack-entries", bulks(&["hash-max-listpack-entries", "2"]));
    ck(&mut h, "HSET z a 1 b 2", int(2));
    assert_eq!(enc(&mut h, "z"), bulk("listpack"));
    ck(&mut h, "HSET z c 3", int(1));
    assert_eq!(enc(&mut h, "z"), bulk("hashtable"));
    ck(&mut h, "CONFIG SET hash-max-listpack-entries 128", OK);

    // By value length: 64 bytes stays listpack, 65 converts; field names count too.
    let v64 = "v".repeat(64);
    let v65 = "v".repeat(65);
    ck(&mut h, &format!("HSET v f {v64}"), int(1));
    assert_eq!(enc(&mut h, "v"), bulk("listpack"));
    ck(&mut h, &format!("HSET v g {v65}"), int(1));
    assert_eq!(enc(&mut h, "v"), bulk("hashtable"));
    ck(&mut h, &format!("HSET w {v65} x"), int(1));
    assert_eq!(enc(&mut h, "w"), bulk("hashtable"));
    ck(&mut h, &format!("HSETNX x {v65} x"), int(1));
    assert_eq!(enc(&mut h, "x"), bulk("hashtable"));
    ck(&mut h, &format!("HMSET y a 1 b {v65}"), OK);
    assert_eq!(enc(&mut h, "y"), bulk("hashtable"));
    ck(&mut h, "CONFIG SET hash-max-listpack-value 4", OK);
    ck(&mut h, "HSET s f 1234", int(1));
    assert_eq!(enc(&mut h, "s"), bulk("listpack"));
    ck(&mut h, "HSET s f 12345", int(0));
    assert_eq!(enc(&mut h, "s"), bulk("hashtable"));
    ck(&mut h, "HGET s f", bulk("12345"));
    ck(&mut h, "HSET t f 9999", int(1));
    ck(&mut h, "HINCRBY t f 1", int(10000));
    assert_eq!(enc(&mut h, "t"), bulk("hashtable"));

    // Default limit: 128 entries stay listpack, the 129th converts; contents survive.
    let mut h = H::new();
    for i in 0..128 {
        h.c(&format!("HSET big f{i} {i}"));
    }
    assert_eq!(enc(&mut h, "big"), bulk("listpack"));
    h.c("HSET big f128 128");
    assert_eq!(enc(&mut h, "big"), bulk("hashtable"));
    ck(&mut h, "HLEN big", int(129));
    for i in (0..129).step_by(16) {
        ck(&mut h, &format!("HGET big f{i}"), bulk(&i.to_string()));
    }
    let all = parse_bulks(&h.c("HGETALL big"));
    assert_eq!(all.len(), 258);
    let pairs: BTreeSet<(String, String)> = all.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect();
    let want: BTreeSet<(String, String)> = (0..129).map(|i| (format!("f{i}"), i.to_string())).collect();
    assert_eq!(pairs, want);
}

#[test]
fn hrandfield() {
    let mut h = H::new();
    ck(&mut h, "HRANDFIELD nokey", NIL);
    ck(&mut h, "HRANDFIELD nokey 3", "*0\r\n");
    ck(&mut h, "HRANDFIELD nokey 3 WITHVALUES", "*0\r\n");
    ck(&mut h, "HSET one a 1", int(1));
    ck(&mut h, "HRANDFIELD one", bulk("a"));
    ck(&mut h, "HRANDFIELD one 0", "*0\r\n");
    ck(&mut h, "HRANDFIELD one -3", bulks(&["a", "a", "a"]));
    ck(&mut h, "HRANDFIELD one -3 WITHVALUES", bulks(&["a", "1", "a", "1", "a", "1"]));
    ck(&mut h, "HRANDFIELD one 5 WITHVALUES", bulks(&["a", "1"]));
    for big in [false, true] {
        let mut h = H::new();
        let n = if big { 300 } else { 20 };
        for i in 0..n {
            h.c(&format!("HSET h f{i} v{i}"));
        }
        let fields: BTreeSet<String> = (0..n).map(|i| format!("f{i}")).collect();
        // Positive count: distinct fields, at most the hash's size.
        for count in [1, 5, n - 1, n, n + 10] {
            let got = parse_bulks(&h.c(&format!("HRANDFIELD h {count}")));
            assert_eq!(got.len(), count.min(n));
            let set: BTreeSet<String> = got.iter().cloned().collect();
            assert_eq!(set.len(), got.len(), "distinct");
            assert!(set.is_subset(&fields));
        }
        // Negative count: exactly |count| fields, repeats allowed.
        let got = parse_bulks(&h.c(&format!("HRANDFIELD h -{}", n * 3)));
        assert_eq!(got.len(), n * 3);
        assert!(got.iter().all(|f| fields.contains(f)));
        // WITHVALUES pairs each field with its value.
        for c in [7i64, -7] {
            let got = parse_bulks(&h.c(&format!("HRANDFIELD h {c} WITHVALUES")));
            assert_eq!(got.len(), 14);
            for p in got.chunks(2) {
                assert_eq!(p[1], p[0].replace('f', "v"));
            }
        }
        let one = h.c("HRANDFIELD h");
        assert!(fields.contains(&bulk_text(&one)));
    }
    // RESP3: WITHVALUES gives an array of [field, value] pairs; no count gives a null.
    let mut h = H::new();
    h.c("HSET h2 a 1");
    h.c("HELLO 3");
    ck(&mut h, "HRANDFIELD h2 1 WITHVALUES", format!("*1\r\n{}", bulks(&["a", "1"])));
    ck(&mut h, "HRANDFIELD h2 -2 WITHVALUES", format!("*2\r\n{}{}", bulks(&["a", "1"]), bulks(&["a", "1"])));
    ck(&mut h, "HRANDFIELD h2 1", bulks(&["a"]));
    ck(&mut h, "HRANDFIELD nokey", "_\r\n");
    ck(&mut h, "HRANDFIELD nokey 2 WITHVALUES", "*0\r\n");
}

#[test]
fn hscan() {
    let mut h = H::new();
    ck(&mut h, "HSCAN nokey 0", "*2\r\n$1\r\n0\r\n*0\r\n");
    ck(&mut h, "HSET h a 1 b 2 big 3", int(3));
    // A listpack hash comes back whole in one call, whatever COUNT says.
    ck(&mut h, "HSCAN h 0 COUNT 1", format!("*2\r\n$1\r\n0\r\n{}", bulks(&["a", "1", "b", "2", "big", "3"])));
    ck(&mut h, "HSCAN h 0 MATCH b*", format!("*2\r\n$1\r\n0\r\n{}", bulks(&["b", "2", "big", "3"])));
    ck(&mut h, "HSCAN h 0 MATCH zz*", "*2\r\n$1\r\n0\r\n*0\r\n");
    // A hashtable hash: iterate with COUNT 1 until cursor 0; every field is returned.
    for i in 0..500 {
        h.c(&format!("HSET t f{i} {i}"));
    }
    ck(&mut h, "OBJECT ENCODING t", bulk("hashtable"));
    let mut seen = BTreeSet::new();
    let mut cursor = "0".to_string();
    let mut calls = 0;
    loop {
        let r = h.c(&format!("HSCAN t {cursor} COUNT 1"));
        let (head, rest) = r.split_once("\r\n").unwrap();
        assert_eq!(head, "*2");
        let next = bulk_text(rest);
        let body = &rest[rest.find("\r\n").unwrap() + 2..];
        let body = &body[body.find("\r\n").unwrap() + 2..];
        let items = parse_bulks(body);
        for p in items.chunks(2) {
            assert_eq!(p[0][1..], p[1]);
            seen.insert(p[0].clone());
        }
        calls += 1;
        assert!(calls < 100_000);
        if next == "0" {
            break;
        }
        cursor = next;
    }
    assert_eq!(seen.len(), 500);
    assert!(calls > 10, "COUNT 1 iterates in steps ({calls} calls)");
}

#[test]
fn hash_key_expiry() {
    let mut h = H::new();
    ck(&mut h, "HSET h a 1", int(1));
    ck(&mut h, "PEXPIRE h 100", int(1));
    h.advance(100);
    let mark = fx_len(&h);
    ck(&mut h, "HGET h a", NIL);
    assert_eq!(fx_since(&h, mark), vec!["0:DEL h"]);
    ck(&mut h, "HSET h b 2", int(1));
    ck(&mut h, "HGETALL h", bulks(&["b", "2"]));
    ck(&mut h, "TTL h", int(-1));
    // Writes to a hash keep its TTL.
    ck(&mut h, "EXPIRE h 50", int(1));
    ck(&mut h, "HSET h c 3", int(1));
    ck(&mut h, "HINCRBY h c 1", int(4));
    ck(&mut h, "HDEL h b", int(1));
    ck(&mut h, "TTL h", int(50));
}

#[test]
fn resp3_hash_replies() {
    let mut h = H::new();
    h.c("HELLO 3");
    ck(&mut h, "HSET h a 1 b 2", int(2));
    ck(&mut h, "HGETALL h", "%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n");
    ck(&mut h, "HGETALL nokey", "%0\r\n");
    ck(&mut h, "HGET h zz", "_\r\n");
    ck(&mut h, "HMGET h a zz", "*2\r\n$1\r\n1\r\n_\r\n");
    ck(&mut h, "HINCRBYFLOAT h a 0.5", bulk("1.5"));
    ck(&mut h, "HKEYS h", bulks(&["a", "b"]));
    ck(&mut h, "HSCAN h 0", format!("*2\r\n$1\r\n0\r\n{}", bulks(&["a", "1.5", "b", "2"])));
}
