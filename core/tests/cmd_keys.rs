//! Generic key commands: DEL/UNLINK/EXISTS/TYPE/TOUCH, the EXPIRE family with NX/XX/GT/LT,
//! TTL/PTTL/EXPIRETIME, PERSIST, KEYS/SCAN/RANDOMKEY, RENAME/RENAMENX/COPY, OBJECT, and
//! the lazy expiry every one of them observes.

mod cmdutil;
mod common;

use std::collections::BTreeSet;

use cmdutil::*;
use common::{H, NIL, OK, bulk, err, int};

const T0: i64 = 1_700_000_000_000;

#[test]
fn del_exists_type_touch() {
    let mut h = H::new();
    h.c("MSET a 1 b 2 c 3");
    h.c("HSET h f v");
    ck(&mut h, "EXISTS a b nokey", int(2));
    ck(&mut h, "EXISTS a a a", int(3));
    ck(&mut h, "TYPE a", "+string\r\n");
    ck(&mut h, "TYPE h", "+hash\r\n");
    ck(&mut h, "TYPE nokey", "+none\r\n");
    ck(&mut h, "TOUCH a h nokey", int(2));
    ck(&mut h, "DEL a nokey a", int(1));
    ck(&mut h, "UNLINK b h", int(2));
    ck(&mut h, "UNLINK b", int(0));
    ck(&mut h, "DEL nokey", int(0));
    ck(&mut h, "DBSIZE", int(1));
    for (c, n) in [
        ("DEL", "del"),
        ("UNLINK", "unlink"),
        ("EXISTS", "exists"),
        ("TYPE", "type"),
        ("TOUCH", "touch"),
        ("TTL", "ttl"),
        ("PERSIST", "persist"),
        ("KEYS", "keys"),
        ("EXPIRE a", "expire"),
        ("RENAME a", "rename"),
        ("COPY a", "copy"),
    ] {
        ck(&mut h, c, err(&format!("ERR wrong number of arguments for '{n}' command")));
    }
    ck(&mut h, "DBSIZE x", err("ERR wrong number of arguments for 'dbsize' command"));
    ck(&mut h, "RANDOMKEY x", err("ERR wrong number of arguments for 'randomkey' command"));
    // Only deletions that happened replicate.
    assert_eq!(h.effect_lines()[1..], ["0:HSET h f v", "0:DEL a nokey a", "0:UNLINK b h"]);
}

#[test]
fn expire_options() {
    let mut h = H::new();
    h.c("SET a 1");
    ck(&mut h, "EXPIRE a 10 FOO", err("ERR Unsupported option FOO"));
    ck(&mut h, "EXPIRE a 10 NX XX", err("ERR NX and XX, GT or LT options at the same time are not compatible"));
    ck(&mut h, "EXPIRE a 10 NX GT", err("ERR NX and XX, GT or LT options at the same time are not compatible"));
    ck(&mut h, "EXPIRE a 10 GT LT", err("ERR GT and LT options at the same time are not compatible"));
    ck(&mut h, "EXPIRE a x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "EXPIRE a 9223372036854775807", err("ERR invalid expire time in 'expire' command"));
    ck(&mut h, "PEXPIRE a 9223372036854775807", err("ERR invalid expire time in 'pexpire' command"));
    ck(&mut h, "EXPIREAT a 9223372036854775807", err("ERR invalid expire time in 'expireat' command"));
    ck(&mut h, "TTL a", int(-1));
    // No TTL: XX and GT skip (no TTL counts as infinite), LT sets.
    ck(&mut h, "EXPIRE a 10 XX", int(0));
    ck(&mut h, "EXPIRE a 10 GT", int(0));
    ck(&mut h, "EXPIRE a 10 LT", int(1));
    ck(&mut h, "TTL a", int(10));
    ck(&mut h, "EXPIRE a 20 NX", int(0));
    ck(&mut h, "EXPIRE a 5 GT", int(0));
    ck(&mut h, "EXPIRE a 20 GT", int(1));
    ck(&mut h, "EXPIRE a 30 LT", int(0));
    ck(&mut h, "EXPIRE a 5 LT", int(1));
    ck(&mut h, "EXPIRE a 5 LT", int(0));
    ck(&mut h, "EXPIRE a 7 XX", int(1));
    ck(&mut h, "TTL a", int(7));
    ck(&mut h, "expire a 8 xx gt", int(1));
    ck(&mut h, "EXPIRE nokey 10", int(0));
    ck(&mut h, "PEXPIRE a 1500", int(1));
    ck(&mut h, "PTTL a", int(1500));
    ck(&mut h, "TTL a", int(2));
    ck(&mut h, &format!("EXPIREAT a {}", T0 / 1000 + 100), int(1));
    ck(&mut h, "EXPIRETIME a", int(T0 / 1000 + 100));
    ck(&mut h, "PEXPIRETIME a", int(T0 + 100_000));
    ck(&mut h, &format!("PEXPIREAT a {}", T0 + 4321), int(1));
    ck(&mut h, "PEXPIRETIME a", int(T0 + 4321));
    ck(&mut h, "EXPIRETIME a", int(T0 / 1000 + 4));
    // Every successful EXPIRE form replicates as PEXPIREAT with an absolute time.
    let fx = h.effect_lines();
    assert_eq!(
        fx[1..],
        [
            format!("0:PEXPIREAT a {}", T0 + 10_000),
            format!("0:PEXPIREAT a {}", T0 + 20_000),
            format!("0:PEXPIREAT a {}", T0 + 5_000),
            format!("0:PEXPIREAT a {}", T0 + 7_000),
            format!("0:PEXPIREAT a {}", T0 + 8_000),
            format!("0:PEXPIREAT a {}", T0 + 1_500),
            format!("0:PEXPIREAT a {}", T0 + 100_000),
            format!("0:PEXPIREAT a {}", T0 + 4_321),
        ]
    );
}

#[test]
fn expire_in_the_past_deletes() {
    let mut h = H::new();
    h.c("MSET a 1 b 2 c 3 d 4 e 5");
    let mark = fx_len(&h);
    ck(&mut h, "EXPIRE a 0", int(1));
    ck(&mut h, "PEXPIRE b -100", int(1));
    ck(&mut h, "EXPIREAT c 1", int(1));
    ck(&mut h, &format!("PEXPIREAT d {T0}"), int(1));
    ck(&mut h, "EXPIRE nokey -1", int(0));
    // GT against no TTL skips even a past time.
    ck(&mut h, "EXPIRE e -1 GT", int(0));
    ck(&mut h, "EXISTS a b c d e", int(1));
    ck(&mut h, "DBSIZE", int(1));
    assert_eq!(fx_since(&h, mark), ["0:DEL a", "0:DEL b", "0:DEL c", "0:DEL d"]);
}

#[test]
fn ttl_family_and_persist() {
    let mut h = H::new();
    ck(&mut h, "TTL nokey", int(-2));
    ck(&mut h, "PTTL nokey", int(-2));
    ck(&mut h, "EXPIRETIME nokey", int(-2));
    ck(&mut h, "PEXPIRETIME nokey", int(-2));
    h.c("SET k v");
    ck(&mut h, "TTL k", int(-1));
    ck(&mut h, "PTTL k", int(-1));
    ck(&mut h, "EXPIRETIME k", int(-1));
    ck(&mut h, "PEXPIRETIME k", int(-1));
    ck(&mut h, "PEXPIRE k 10499", int(1));
    ck(&mut h, "TTL k", int(10)); // rounded like Redis: (ms + 500) / 1000
    h.advance(10_000);
    ck(&mut h, "PTTL k", int(499));
    ck(&mut h, "TTL k", int(0));
    ck(&mut h, "PERSIST k", int(1));
    ck(&mut h, "PERSIST k", int(0));
    ck(&mut h, "PERSIST nokey", int(0));
    ck(&mut h, "TTL k", int(-1));
    h.advance(1_000_000);
    ck(&mut h, "GET k", bulk("v"));
    assert_eq!(h.effect_lines()[1..], [format!("0:PEXPIREAT k {}", T0 + 10_499), "0:PERSIST k".to_string()]);
}

#[test]
fn lazy_expiry_on_every_read() {
    let mut h = H::new();
    for (cmd, want) in [
        ("GET k", NIL.to_string()),
        ("EXISTS k", int(0)),
        ("TTL k", int(-2)),
        ("PTTL k", int(-2)),
        ("EXPIRETIME k", int(-2)),
        ("TYPE k", "+none\r\n".to_string()),
        ("TOUCH k", int(0)),
        ("PERSIST k", int(0)),
        ("EXPIRE k 100", int(0)),
        ("DEL k", int(0)),
        ("OBJECT ENCODING k", NIL.to_string()),
        ("RENAME k z", err("ERR no such key")),
        ("COPY k z", int(0)),
        ("KEYS *", "*0\r\n".to_string()),
        ("RANDOMKEY", NIL.to_string()),
        ("SCAN 0", "*2\r\n$1\r\n0\r\n*0\r\n".to_string()),
    ] {
        let mut h2 = H::new();
        ck(&mut h2, "SET k v PX 50", OK);
        h2.advance(49);
        ck(&mut h2, "EXISTS k", int(1));
        h2.advance(1);
        ck(&mut h2, cmd, want);
        // KEYS only filters; every other read deletes the key and replicates DEL.
        if cmd != "KEYS *" {
            assert_eq!(h2.effect_lines().last().unwrap(), "0:DEL k", "after {cmd}");
            assert_eq!(h2.e.dbsize(0), 0, "after {cmd}");
        }
        ck(&mut h2, "DBSIZE", int(if cmd == "KEYS *" { 1 } else { 0 }));
    }
    // An expired key in another database is untouched by reads of this one.
    h.c("SELECT 1");
    h.c("SET k v PX 10");
    h.c("SELECT 0");
    h.c("SET k live");
    h.advance(10);
    ck(&mut h, "GET k", bulk("live"));
    ck(&mut h, "SELECT 1", OK);
    let mark = fx_len(&h);
    ck(&mut h, "GET k", NIL);
    assert_eq!(fx_since(&h, mark), ["1:DEL k"]);
}

#[test]
fn active_expiry_emits_del() {
    let mut h = H::new();
    for i in 0..200 {
        h.c(&format!("SET k{i} v PX {}", 100 + (i % 2) * 1_000_000));
    }
    for i in 0..50 {
        h.c(&format!("SET p{i} v"));
    }
    h.c("SELECT 5");
    h.c("SET other v PX 10");
    h.c("SELECT 0");
    let mark = fx_len(&h);
    h.tick();
    assert_eq!(fx_len(&h), mark, "nothing has expired yet");
    h.advance(100);
    // Sampling is random (the host passes a fresh seed with every batch): tick until the
    // expired keys are gone, which must happen well within the bound.
    for _ in 0..2000 {
        if h.e.dbsize(0) == 150 && h.e.dbsize(5) == 0 {
            break;
        }
        h.seed += 1;
        h.tick();
    }
    let fx = fx_since(&h, mark);
    let want: BTreeSet<String> = (0..200).step_by(2).map(|i| format!("0:DEL k{i}")).chain(["5:DEL other".to_string()]).collect();
    let got: BTreeSet<String> = fx.iter().cloned().collect();
    assert_eq!(got.len(), fx.len(), "each key deleted once");
    assert_eq!(got, want);
    assert_eq!(h.e.dbsize(0), 150);
    assert_eq!(h.e.dbsize(5), 0);
    ck(&mut h, "TTL k1", int(1000));
    ck(&mut h, "GET p0", bulk("v"));
}

#[test]
fn keys_and_randomkey() {
    let mut h = H::new();
    h.c("MSET one 1 two 2 three 3 four 4");
    h.c("SET h*llo x");
    let keys = |h: &mut H, p: &str| -> BTreeSet<String> { parse_bulks(&h.c(&format!("KEYS {p}"))).into_iter().collect() };
    assert_eq!(keys(&mut h, "*").len(), 5);
    assert_eq!(keys(&mut h, "t*"), ["three", "two"].map(String::from).into());
    assert_eq!(keys(&mut h, "*o"), ["h*llo", "two"].map(String::from).into());
    assert_eq!(keys(&mut h, "?o*"), ["four"].map(String::from).into());
    assert_eq!(keys(&mut h, "[ot]*e"), ["one", "three"].map(String::from).into());
    assert_eq!(keys(&mut h, "h\\*llo"), ["h*llo"].map(String::from).into());
    assert_eq!(keys(&mut h, "nomatch"), BTreeSet::new());
    let all = keys(&mut h, "*");
    for _ in 0..20 {
        let k = bulk_text(&h.c("RANDOMKEY"));
        assert!(all.contains(&k));
    }
    ck(&mut h, "SELECT 2", OK);
    ck(&mut h, "RANDOMKEY", NIL);
    ck(&mut h, "KEYS *", "*0\r\n");
}

#[test]
fn scan_full_iteration_count_1() {
    let mut h = H::new();
    for i in 0..1000 {
        h.c(&format!("SET key:{i} {i}"));
    }
    for i in 0..10 {
        h.c(&format!("HSET hash:{i} f v"));
    }
    let scan_all = |h: &mut H, extra: &str| -> (Vec<String>, usize) {
        let mut out = Vec::new();
        let mut cursor = "0".to_string();
        let mut calls = 0;
        loop {
            let r = h.c(&format!("SCAN {cursor}{extra}"));
            let (head, rest) = r.split_once("\r\n").unwrap();
            assert_eq!(head, "*2");
            let next = bulk_text(rest);
            let body = &rest[rest.find("\r\n").unwrap() + 2..];
            let body = &body[body.find("\r\n").unwrap() + 2..];
            out.extend(parse_bulks(body));
            calls += 1;
            assert!(calls < 1_000_000, "SCAN terminates");
            if next == "0" {
                return (out, calls);
            }
            cursor = next;
        }
    };
    let (keys, calls) = scan_all(&mut h, " COUNT 1");
    let set: BTreeSet<String> = keys.iter().cloned().collect();
    let want: BTreeSet<String> = (0..1000).map(|i| format!("key:{i}")).chain((0..10).map(|i| format!("hash:{i}"))).collect();
    assert_eq!(set, want, "every key is returned");
    assert!(calls >= 100, "COUNT 1 returns few keys per call ({calls} calls)");
    // MATCH and TYPE filter.
    let (keys, _) = scan_all(&mut h, " COUNT 7 MATCH key:1*");
    let set: BTreeSet<String> = keys.into_iter().collect();
    assert_eq!(set, (0..1000).map(|i| format!("key:{i}")).filter(|k| k.starts_with("key:1")).collect());
    let (keys, _) = scan_all(&mut h, " TYPE hash");
    let set: BTreeSet<String> = keys.into_iter().collect();
    assert_eq!(set, (0..10).map(|i| format!("hash:{i}")).collect());
    let (keys, _) = scan_all(&mut h, " TYPE string COUNT 1000");
    assert_eq!(keys.len(), 1000);
    let (keys, _) = scan_all(&mut h, " TYPE foo");
    assert!(keys.is_empty());
    // Errors.
    ck(&mut h, "SCAN x", err("ERR invalid cursor"));
    ck(&mut h, "SCAN 0 COUNT 0", err("ERR syntax error"));
    ck(&mut h, "SCAN 0 COUNT -1", err("ERR syntax error"));
    ck(&mut h, "SCAN 0 COUNT x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "SCAN 0 TYPE", err("ERR syntax error"));
    ck(&mut h, "SCAN 0 FOO 1", err("ERR syntax error"));
    ck(&mut h, "SCAN 0 MATCH", err("ERR syntax error"));
}

#[test]
fn rename_and_copy() {
    let mut h = H::new();
    ck(&mut h, "RENAME nokey b", err("ERR no such key"));
    ck(&mut h, "RENAMENX nokey b", err("ERR no such key"));
    h.c("SET a 1");
    ck(&mut h, "RENAME a a", OK);
    ck(&mut h, "RENAMENX a a", int(0));
    h.c("SET b 2");
    ck(&mut h, "RENAMENX a b", int(0));
    ck(&mut h, "EXPIRE a 100", int(1));
    ck(&mut h, "RENAME a b", OK);
    ck(&mut h, "GET b", bulk("1"));
    ck(&mut h, "TTL b", int(100));
    ck(&mut h, "EXISTS a", int(0));
    ck(&mut h, "RENAMENX b c", int(1));
    ck(&mut h, "TTL c", int(100));
    h.c("HSET h f v");
    ck(&mut h, "RENAME h c", OK);
    ck(&mut h, "TYPE c", "+hash\r\n");
    ck(&mut h, "TTL c", int(-1));
    // COPY
    ck(&mut h, "COPY c c", err("ERR source and destination objects are the same"));
    ck(&mut h, "COPY c d DB 16", err("ERR DB index is out of range"));
    ck(&mut h, "COPY c d DB -1", err("ERR DB index is out of range"));
    ck(&mut h, "COPY c d DB x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "COPY c d DB 2147483648", err("ERR value is out of range, value must between -2147483648 and 2147483647"));
    ck(&mut h, "COPY c d FOO", err("ERR syntax error"));
    ck(&mut h, "COPY nokey d", int(0));
    ck(&mut h, "COPY c d", int(1));
    ck(&mut h, "COPY c d", int(0));
    h.c("HSET c g w");
    ck(&mut h, "HGETALL d", bulks(&["f", "v"]));
    ck(&mut h, "COPY c d REPLACE", int(1));
    ck(&mut h, "HGETALL d", bulks(&["f", "v", "g", "w"]));
    h.c("SET s x EX 50");
    ck(&mut h, "COPY s s DB 3", int(1));
    ck(&mut h, "SELECT 3", OK);
    ck(&mut h, "GET s", bulk("x"));
    ck(&mut h, "TTL s", int(50));
    ck(&mut h, "SELECT 0", OK);
    ck(&mut h, "COPY s s DB 3", int(0));
    ck(&mut h, "COPY s s DB 3 REPLACE", int(1));
    // COPY keeps the value's encoding.
    h.c("SET r abc");
    h.c("APPEND r d");
    ck(&mut h, "COPY r r2", int(1));
    ck(&mut h, "OBJECT ENCODING r2", bulk("raw"));
    h.c("SET i 12");
    ck(&mut h, "COPY i i2", int(1));
    ck(&mut h, "OBJECT ENCODING i2", bulk("int"));
    h.c("SET e abc");
    ck(&mut h, "COPY e e2", int(1));
    ck(&mut h, "OBJECT ENCODING e2", bulk("embstr"));
    ck(&mut h, "CONFIG SET hash-max-listpack-entries 2", OK);
    h.c("HSET ht a 1 b 2 c 3");
    ck(&mut h, "CONFIG SET hash-max-listpack-entries 128", OK);
    ck(&mut h, "COPY ht ht2", int(1));
    ck(&mut h, "OBJECT ENCODING ht2", bulk("hashtable"));
    ck(&mut h, "HDEL ht2 a b", int(2));
    ck(&mut h, "OBJECT ENCODING ht2", bulk("hashtable"));
    ck(&mut h, "RENAME ht2 ht3", OK);
    ck(&mut h, "OBJECT ENCODING ht3", bulk("hashtable"));
    ck(&mut h, "COPY c lp", int(1));
    ck(&mut h, "OBJECT ENCODING lp", bulk("listpack"));
    // Effects are the commands themselves (the replica repeats the same copy/rename).
    let fx = h.effect_lines();
    assert!(fx.contains(&"0:RENAME a b".to_string()), "{fx:?}");
    assert!(fx.contains(&"0:COPY c d REPLACE".to_string()), "{fx:?}");
    assert!(fx.contains(&"0:COPY s s DB 3".to_string()), "{fx:?}");
    assert!(!fx.contains(&"0:RENAMENX a b".to_string()), "{fx:?}");
    assert!(!fx.contains(&"0:RENAME a a".to_string()), "{fx:?}");
}

#[test]
fn object_subcommands() {
    let mut h = H::new();
    h.c("SET n 1");
    h.c("SET big 100000");
    h.c("SET s abc");
    ck(&mut h, "OBJECT ENCODING", err("ERR wrong number of arguments for 'object|encoding' command"));
    ck(&mut h, "OBJECT ENCODING n s", err("ERR wrong number of arguments for 'object|encoding' command"));
    ck(&mut h, "OBJECT", err("ERR wrong number of arguments for 'object' command"));
    ck(&mut h, "OBJECT FOO n", err("ERR unknown subcommand 'FOO'. Try OBJECT HELP."));
    ck(&mut h, "OBJECT REFCOUNT n", int(2147483647));
    ck(&mut h, "OBJECT REFCOUNT big", int(1));
    ck(&mut h, "OBJECT REFCOUNT s", int(1));
    ck(&mut h, "OBJECT REFCOUNT nokey", NIL);
    h.advance(5_000);
    ck(&mut h, "OBJECT IDLETIME s", int(5));
    ck(&mut h, "OBJECT IDLETIME s", int(5)); // OBJECT does not touch the key
    h.c("GET s");
    ck(&mut h, "OBJECT IDLETIME s", int(0));
    ck(&mut h, "OBJECT IDLETIME nokey", NIL);
    ck(&mut h, "OBJECT FREQ nokey", NIL);
    ck(
        &mut h,
        "OBJECT FREQ s",
        err(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ),
    );
    ck(&mut h, "CONFIG SET maxmemory-policy allkeys-lfu", OK);
    ck(
        &mut h,
        "OBJECT IDLETIME s",
        err(
            "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ),
    );
    assert!(h.c("OBJECT FREQ s").starts_with(':'));
    let help = h.c("OBJECT HELP");
    assert!(help.starts_with("*15\r\n+OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n+ENCODING <key>\r\n"), "{help:?}");
    assert!(help.ends_with("+HELP\r\n+    Prints this help.\r\n"), "{help:?}");
}

#[test]
fn select_and_databases() {
    let mut h = H::new();
    ck(&mut h, "SELECT 16", err("ERR DB index is out of range"));
    ck(&mut h, "SELECT -1", err("ERR DB index is out of range"));
    ck(&mut h, "SELECT x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "SELECT 2147483648", err("ERR value is out of range, value must between -2147483648 and 2147483647"));
    ck(&mut h, "SELECT -2147483649", err("ERR value is out of range, value must between -2147483648 and 2147483647"));
    ck(&mut h, "SELECT 9223372036854775808", err("ERR value is not an integer or out of range"));
    ck(&mut h, "SET k db0", OK);
    ck(&mut h, "SELECT 15", OK);
    ck(&mut h, "GET k", NIL);
    ck(&mut h, "SET k db15", OK);
    ck(&mut h, "DBSIZE", int(1));
    ck(&mut h, "FLUSHDB", OK);
    ck(&mut h, "DBSIZE", int(0));
    ck(&mut h, "SELECT 0", OK);
    ck(&mut h, "GET k", bulk("db0"));
    // Each client has its own selected database.
    h.client = 2;
    ck(&mut h, "GET k", bulk("db0"));
    ck(&mut h, "SELECT 15", OK);
    h.client = 1;
    ck(&mut h, "GET k", bulk("db0"));
    ck(&mut h, "FLUSHDB ASYNC", OK);
    ck(&mut h, "FLUSHALL SYNC", OK);
    ck(&mut h, "FLUSHALL FOO", err("ERR syntax error"));
    assert_eq!(h.effect_lines(), ["0:SET k db0", "15:SET k db15", "15:FLUSHDB", "0:FLUSHDB", "0:FLUSHALL"]);
}

/// SCAN's guarantee: a key present for the whole iteration is returned, even while the
/// table grows (and shrinks) under it.
#[test]
fn scan_survives_resizing() {
    for (grow, shrink) in [(true, false), (false, true), (true, true)] {
        let mut h = H::new();
        for i in 0..1000 {
            h.c(&format!("SET stable:{i} v"));
        }
        for i in 0..3000 {
            h.c(&format!("SET temp:{i} v"));
        }
        let mut seen = BTreeSet::new();
        let mut cursor = "0".to_string();
        let mut step = 0;
        loop {
            let r = h.c(&format!("SCAN {cursor} COUNT 1"));
            let (_, rest) = r.split_once("\r\n").unwrap();
            let next = bulk_text(rest);
            let body = &rest[rest.find("\r\n").unwrap() + 2..];
            let body = &body[body.find("\r\n").unwrap() + 2..];
            seen.extend(parse_bulks(body));
            // Mutate between calls: add new keys and/or delete the temporary ones.
            for _ in 0..3 {
                if grow {
                    h.c(&format!("SET new:{step} v"));
                }
                if shrink && step < 3000 {
                    h.c(&format!("DEL temp:{step}"));
                }
                step += 1;
            }
            if next == "0" {
                break;
            }
            cursor = next;
            assert!(step < 1_000_000);
        }
        let missing: Vec<usize> = (0..1000).filter(|i| !seen.contains(&format!("stable:{i}"))).collect();
        assert!(missing.is_empty(), "grow={grow} shrink={shrink}: {} stable keys never returned, e.g. {:?}", missing.len(), &missing[..missing.len().min(5)]);
    }
}
