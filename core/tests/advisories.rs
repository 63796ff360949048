//! Redis's and Valkey's security advisories since 2021, as engine-level regression tests
//! (SECURITY.md lists every advisory and where it is covered). Each test replays the
//! advisory's exploit input and checks the exact reply redis-server 7.0.15 gives to it, or
//! the difference Memoria documents in host/tests/differential.rs (DELIBERATE_DIFFERENCES),
//! then that the engine carries on (and, for writes, that a replica applying the effects
//! ends up with the same data).
//!
//! Network-level advisories (unauthenticated clients, the 32-bit engine, the parser) are in
//! host/tests/advisories.rs; pathological glob patterns (CVE-2022-36021, CVE-2024-31228) in
//! host/tests/no_stall.rs and the glob unit tests in core/src/util/.
//!
//! A test marked `#[ignore = "bug: …"]` asserts the behaviour Memoria should have and does
//! not have yet; `cargo test --test advisories -- --ignored` runs them.

mod cmdutil;
mod common;

use std::collections::BTreeSet;

use cmdutil::*;
use common::{H, NIL, OK, bulk, err, int};
use memoria_core::Engine;

const MIN: &str = "-9223372036854775808";
const MAX: &str = "9223372036854775807";
/// Redis 7.0.15's reply to a count outside [-LONG_MAX, LONG_MAX] (CVE-2023-25155's fix).
const RANGE_ERR: &str = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
/// ... and to a count whose doubling (WITHSCORES / WITHVALUES) would overflow (CVE-2023-22458).
const SHORT_RANGE_ERR: &str = "ERR value is out of range";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const BIT_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
const INVALID_HLL: &str = "INVALIDOBJ Corrupted HLL object detected";
const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";

/// The engine still answers, reads and writes after an exploit.
#[track_caller]
fn still_serves(h: &mut H) {
    ck(h, "PING", "+PONG\r\n");
    ck(h, "SET advisories:alive 1", OK);
    ck(h, "INCR advisories:alive", int(2));
    ck(h, "DEL advisories:alive", int(1));
}

/// A fresh engine applying `h`'s effects (as a replica or a log replay does) ends up with
/// the same data: the exploit's effects are safe to replicate.
#[track_caller]
fn replays_identically(h: &H) {
    let mut replica = Engine::new(7);
    replica.apply(&h.effects, (h.now_ms + 5_000) * 1000).expect("effects apply");
    assert_eq!(replica.digest(), h.e.digest(), "effects: {:#?}", h.effect_lines());
}

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

/// Runs `args` (one argument each) and returns the reply as text.
fn run(h: &mut H, args: &[&str]) -> String {
    String::from_utf8_lossy(&h.raw(args)).into_owned()
}

/// An array reply of `[member, score]` or `[field, value]` pairs, as a set of pairs.
fn pairs(reply: &str) -> BTreeSet<(String, String)> {
    let flat = parse_bulks(reply);
    assert_eq!(flat.len() % 2, 0, "{reply:?}");
    flat.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect()
}

// ---------------------------------------------------------------------------------------
// CVE-2023-25155, CVE-2023-22458: SRANDMEMBER / ZRANDMEMBER / HRANDFIELD counts
// ---------------------------------------------------------------------------------------

/// CVE-2023-25155: negating a count of LONG_MIN overflowed and tripped an assertion in
/// SRANDMEMBER, ZRANDMEMBER and HRANDFIELD. Redis 7.0.15 refuses counts outside
/// [-LONG_MAX, LONG_MAX]; a huge positive count returns the whole collection. Counts below
/// -2^27 ask for a reply that could not fit in memory: Redis starts building it, Memoria
/// refuses them with the same range error (DELIBERATE_DIFFERENCES, SRANDMEMBER and
/// ZRANDMEMBER; HRANDFIELD does the same).
#[test]
fn cve_2023_25155_randmember_counts() {
    let mut h = H::new();
    ck(&mut h, "SADD si 3 1 2", int(3));
    ck(&mut h, "OBJECT ENCODING si", bulk("intset"));
    ck(&mut h, "SADD sh a b c", int(3));
    ck(&mut h, "OBJECT ENCODING sh", bulk("hashtable"));
    ck(&mut h, "HSET hl f1 v1 f2 v2", int(2));
    ck(&mut h, "OBJECT ENCODING hl", bulk("listpack"));
    for i in 0..600 {
        h.c(&format!("HSET hh f{i} v{i}"));
    }
    ck(&mut h, "OBJECT ENCODING hh", bulk("hashtable"));
    ck(&mut h, "ZADD zl 1 a 2 b", int(2));
    ck(&mut h, "OBJECT ENCODING zl", bulk("listpack"));
    for i in 0..200 {
        h.c(&format!("ZADD zs {i} m{i}"));
    }
    ck(&mut h, "OBJECT ENCODING zs", bulk("skiplist"));

    for key in ["si", "sh", "nokey"] {
        ck(&mut h, &format!("SRANDMEMBER {key} {MIN}"), err(RANGE_ERR));
        ck(&mut h, &format!("SRANDMEMBER {key} 9223372036854775808"), err(NOT_INT));
        ck(&mut h, &format!("SRANDMEMBER {key} -9223372036854775809"), err(NOT_INT));
    }
    for key in ["hl", "hh", "nokey"] {
        ck(&mut h, &format!("HRANDFIELD {key} {MIN}"), err(RANGE_ERR));
        ck(&mut h, &format!("HRANDFIELD {key} {MIN} WITHVALUES"), err(RANGE_ERR));
        ck(&mut h, &format!("HRANDFIELD {key} 9223372036854775808 WITHVALUES"), err(NOT_INT));
    }
    for key in ["zl", "zs", "nokey"] {
        ck(&mut h, &format!("ZRANDMEMBER {key} {MIN}"), err(RANGE_ERR));
        ck(&mut h, &format!("ZRANDMEMBER {key} {MIN} WITHSCORES"), err(RANGE_ERR));
        ck(&mut h, &format!("ZRANDMEMBER {key} 9223372036854775808"), err(NOT_INT));
    }
    // The checks come before the syntax of the rest, as in Redis.
    ck(&mut h, &format!("HRANDFIELD hl {MIN} BAD"), err(RANGE_ERR));
    ck(&mut h, &format!("ZRANDMEMBER zl {MIN} BAD"), err(RANGE_ERR));

    // LONG_MAX: the whole collection, each member once.
    assert_eq!(sorted(&h.c(&format!("SRANDMEMBER si {MAX}"))), strs(&["1", "2", "3"]));
    assert_eq!(sorted(&h.c(&format!("SRANDMEMBER sh {MAX}"))), strs(&["a", "b", "c"]));
    ck(&mut h, &format!("SRANDMEMBER nokey {MAX}"), "*0\r\n");
    assert_eq!(sorted(&h.c(&format!("HRANDFIELD hl {MAX}"))), strs(&["f1", "f2"]));
    let all = parse_bulks(&h.c(&format!("HRANDFIELD hh {MAX}")));
    assert_eq!(all.len(), 600);
    assert_eq!(all.iter().collect::<BTreeSet<_>>().len(), 600);
    assert_eq!(sorted(&h.c(&format!("ZRANDMEMBER zl {MAX}"))), strs(&["a", "b"]));
    assert_eq!(parse_bulks(&h.c(&format!("ZRANDMEMBER zs {MAX}"))).iter().collect::<BTreeSet<_>>().len(), 200);

    // Counts whose reply could not be built: refused (a deliberate difference).
    for count in ["-134217729", "-4611686018427387904", "-9223372036854775807"] {
        ck(&mut h, &format!("SRANDMEMBER si {count}"), err(RANGE_ERR));
        ck(&mut h, &format!("SRANDMEMBER sh {count}"), err(RANGE_ERR));
        ck(&mut h, &format!("HRANDFIELD hh {count}"), err(RANGE_ERR));
        ck(&mut h, &format!("ZRANDMEMBER zs {count}"), err(RANGE_ERR));
    }
    // Small negative counts still repeat members.
    let five = parse_bulks(&h.c("SRANDMEMBER si -5"));
    assert_eq!(five.len(), 5);
    assert!(five.iter().all(|m| ["1", "2", "3"].contains(&m.as_str())), "{five:?}");
    let three = pairs(&h.c("HRANDFIELD hl -3 WITHVALUES"));
    assert!(three.iter().all(|p| *p == ("f1".into(), "v1".into()) || *p == ("f2".into(), "v2".into())), "{three:?}");
    for key in ["zl", "zs"] {
        let picks = pairs(&h.c(&format!("ZRANDMEMBER {key} -50 WITHSCORES")));
        assert!(!picks.is_empty() && picks.len() <= 50, "{picks:?}");
        for (m, s) in &picks {
            ck(&mut h, &format!("ZSCORE {key} {m}"), bulk(s));
        }
    }

    ck(&mut h, "SCARD si", int(3));
    ck(&mut h, "HLEN hh", int(600));
    ck(&mut h, "ZCARD zs", int(200));
    still_serves(&mut h);
}

/// CVE-2023-25155's family, counted in bytes: the count guard above counts members, and
/// with 1000-byte members a count of -10^8 (allowed by it) asks for a 100 GB reply, which
/// the engine (wasm32: 4 GiB) cannot build. Memoria refuses a reply of picks with
/// repetitions past 512 MiB with the same range error (DELIBERATE_DIFFERENCES; Redis
/// 7.0.15 builds it), and answers the counts whose reply fits.
#[test]
fn cve_2023_25155_randmember_replies_past_the_engine_memory() {
    let mut h = H::new();
    let member = "m".repeat(1000);
    ck(&mut h, "SET keep me", OK);
    assert_eq!(run(&mut h, &["SADD", "s", &member]), int(1));
    assert_eq!(run(&mut h, &["HSET", "h", "f", &member]), int(1));
    assert_eq!(run(&mut h, &["ZADD", "z", "1", &member]), int(1));
    for cmd in ["SRANDMEMBER s -100000000", "HRANDFIELD h -60000000 WITHVALUES", "ZRANDMEMBER z -100000000", "ZRANDMEMBER z -100000000 WITHSCORES"] {
        ck(&mut h, cmd, err(RANGE_ERR));
    }
    // Just past 512 MiB (1009 bytes a member, 1016 a field and its value).
    for cmd in ["SRANDMEMBER s -540000", "HRANDFIELD h -530000 WITHVALUES", "ZRANDMEMBER z -540000"] {
        ck(&mut h, cmd, err(RANGE_ERR));
    }
    let one = format!("${}\r\n{member}\r\n", member.len());
    assert_eq!(run(&mut h, &["SRANDMEMBER", "s", "-1000"]), format!("*1000\r\n{}", one.repeat(1000)));
    let pair = format!("$1\r\nf\r\n{one}");
    assert_eq!(run(&mut h, &["HRANDFIELD", "h", "-1000", "WITHVALUES"]), format!("*2000\r\n{}", pair.repeat(1000)));
    let scored = format!("{one}$1\r\n1\r\n");
    assert_eq!(run(&mut h, &["ZRANDMEMBER", "z", "-1000", "WITHSCORES"]), format!("*2000\r\n{}", scored.repeat(1000)));
    assert!(h.c("HELLO 3").starts_with('%'));
    let pair3 = format!("*2\r\n$1\r\nf\r\n{one}");
    assert_eq!(run(&mut h, &["HRANDFIELD", "h", "-3", "WITHVALUES"]), format!("*3\r\n{}", pair3.repeat(3)));
    let scored3 = format!("*2\r\n{one},1\r\n");
    assert_eq!(run(&mut h, &["ZRANDMEMBER", "z", "-3", "WITHSCORES"]), format!("*3\r\n{}", scored3.repeat(3)));
    ck(&mut h, "GET keep", bulk("me"));
    still_serves(&mut h);
}

/// CVE-2023-22458: ZRANDMEMBER … WITHSCORES doubled the count for the reply's length and
/// overflowed. Redis 7.0.15 refuses |count| > LONG_MAX/2 with WITHSCORES.
#[test]
fn cve_2023_22458_zrandmember_withscores_counts() {
    let mut h = H::new();
    ck(&mut h, "ZADD z 1 a 2 b", int(2));
    for i in 0..200 {
        h.c(&format!("ZADD big {i} m{i}"));
    }
    for key in ["z", "big", "nokey"] {
        for count in ["4611686018427387904", "-4611686018427387905", MAX, "-9223372036854775807"] {
            ck(&mut h, &format!("ZRANDMEMBER {key} {count} WITHSCORES"), err(SHORT_RANGE_ERR));
        }
        ck(&mut h, &format!("ZRANDMEMBER {key} {MIN} WITHSCORES"), err(RANGE_ERR));
    }
    // The largest count allowed: the whole set with its scores.
    let got = pairs(&h.c("ZRANDMEMBER z 4611686018427387903 WITHSCORES"));
    assert_eq!(got, [("a".to_string(), "1".to_string()), ("b".into(), "2".into())].into_iter().collect());
    assert_eq!(pairs(&h.c("ZRANDMEMBER big 4611686018427387903 WITHSCORES")).len(), 200);
    ck(&mut h, "ZRANDMEMBER nokey 4611686018427387903 WITHSCORES", "*0\r\n");
    // Without WITHSCORES the same counts are fine.
    assert_eq!(sorted(&h.c("ZRANDMEMBER z 4611686018427387904")), strs(&["a", "b"]));
    ck(&mut h, "ZRANDMEMBER z 4611686018427387904 BAD", err("ERR syntax error"));
    ck(&mut h, "ZCARD big", int(200));
    still_serves(&mut h);
}

/// CVE-2023-22458, HRANDFIELD … WITHVALUES: Redis 7.0.15 refuses |count| > LONG_MAX/2 with
/// WITHVALUES ("value is out of range"), on any key, after the syntax check. (Memoria once
/// had no such check: the doubled count wrapped, and 2^62 answered an empty array.)
#[test]
fn cve_2023_22458_hrandfield_withvalues_counts() {
    let mut h = H::new();
    ck(&mut h, "HSET h a 1 b 2", int(2));
    for i in 0..600 {
        h.c(&format!("HSET big f{i} v{i}"));
    }
    for key in ["h", "big", "nokey"] {
        for count in ["4611686018427387904", "4611686018427387905", "-4611686018427387905", MAX, "-9223372036854775807"] {
            ck(&mut h, &format!("HRANDFIELD {key} {count} WITHVALUES"), err(SHORT_RANGE_ERR));
        }
        ck(&mut h, &format!("HRANDFIELD {key} {MIN} WITHVALUES"), err(RANGE_ERR));
    }
    let got = pairs(&h.c("HRANDFIELD h 4611686018427387903 WITHVALUES"));
    assert_eq!(got, [("a".to_string(), "1".to_string()), ("b".into(), "2".into())].into_iter().collect());
    assert_eq!(pairs(&h.c("HRANDFIELD big 4611686018427387903 WITHVALUES")).len(), 600);
    ck(&mut h, "HRANDFIELD h 4611686018427387904 BAD", err("ERR syntax error"));
    still_serves(&mut h);
}

// ---------------------------------------------------------------------------------------
// CVE-2022-35977: SETRANGE offset + length, SORT LIMIT
// ---------------------------------------------------------------------------------------

/// CVE-2022-35977: SETRANGE's offset + length and SORT's LIMIT start + count overflowed,
/// leading to an OOM panic. Replies as redis-server 7.0.15.
#[test]
fn cve_2022_35977_setrange_and_sort_limit_overflow() {
    let mut h = H::new();
    ck(&mut h, &format!("SETRANGE k {MAX} x"), err(TOO_BIG));
    ck(&mut h, "SETRANGE k 9223372036854775806 xy", err(TOO_BIG));
    ck(&mut h, "SETRANGE k 536870911 xx", err(TOO_BIG));
    ck(&mut h, "SETRANGE k 536870912 x", err(TOO_BIG));
    ckr(&mut h, &[b"SETRANGE".as_slice(), b"k", b"536870911", b""], int(0));
    ck(&mut h, "SETRANGE k -1 x", err("ERR offset is out of range"));
    ck(&mut h, &format!("SETRANGE k {MIN} x"), err("ERR offset is out of range"));
    ck(&mut h, "SETRANGE k 9223372036854775808 x", err(NOT_INT));
    ck(&mut h, "EXISTS k", int(0));
    ck(&mut h, "SET s hello", OK);
    ck(&mut h, &format!("SETRANGE s {MAX} x"), err(TOO_BIG));
    ckr(&mut h, &[b"SETRANGE".as_slice(), b"s", MAX.as_bytes(), b""], int(5));
    ck(&mut h, "SETRANGE s 536870911 xx", err(TOO_BIG));
    ck(&mut h, "APPEND s x", int(6));
    ck(&mut h, "GET s", bulk("hellox"));
    // GETRANGE at the extremes.
    ck(&mut h, &format!("GETRANGE s {MAX} {MAX}"), bulk(""));
    ck(&mut h, &format!("GETRANGE s {MIN} {MAX}"), bulk("hellox"));
    ck(&mut h, &format!("GETRANGE s {MIN} {MIN}"), bulk("h"));
    ck(&mut h, &format!("GETRANGE s 0 {MIN}"), bulk("h"));
    ck(&mut h, &format!("GETRANGE s {MAX} {MIN}"), bulk(""));

    ck(&mut h, "RPUSH l 3 1 2", int(3));
    ck(&mut h, "SADD st 5 4 3", int(3));
    ck(&mut h, "ZADD z 1 a 2 b 3 c", int(3));
    let cases: &[(&str, String)] = &[
        ("SORT l LIMIT 9223372036854775807 9223372036854775807", "*0\r\n".into()),
        ("SORT l LIMIT 1 9223372036854775807", bulks(&["2", "3"])),
        ("SORT l LIMIT -9223372036854775808 9223372036854775807", bulks(&["1", "2", "3"])),
        ("SORT l LIMIT -9223372036854775808 -9223372036854775808", bulks(&["1", "2", "3"])),
        ("SORT l LIMIT 9223372036854775807 1", "*0\r\n".into()),
        ("SORT l LIMIT 2 -1", bulks(&["3"])),
        ("SORT l LIMIT 0 -9223372036854775808", bulks(&["1", "2", "3"])),
        ("SORT l LIMIT 9223372036854775808 1", err(NOT_INT)),
        ("SORT_RO l LIMIT 9223372036854775807 9223372036854775807", "*0\r\n".into()),
        ("SORT_RO l LIMIT -1 9223372036854775807", bulks(&["1", "2", "3"])),
        ("SORT l LIMIT 1 9223372036854775807 STORE dst", int(2)),
        ("LRANGE dst 0 -1", bulks(&["2", "3"])),
        ("SORT l LIMIT 9223372036854775807 9223372036854775807 STORE dst", int(0)),
        ("EXISTS dst", int(0)),
        ("SORT nokey LIMIT 9223372036854775807 9223372036854775807", "*0\r\n".into()),
        ("SORT st LIMIT 9223372036854775806 9223372036854775807 DESC", "*0\r\n".into()),
        ("SORT z BY nosort LIMIT 9223372036854775807 9223372036854775807", "*0\r\n".into()),
        ("SORT z BY nosort LIMIT 1 9223372036854775807", bulks(&["b", "c"])),
        ("SORT z BY nosort LIMIT -5 9223372036854775807 DESC", bulks(&["c", "b", "a"])),
        ("SORT z BY nosort LIMIT 2 9223372036854775807 DESC ALPHA", bulks(&["a"])),
    ];
    for (cmd, want) in cases {
        ck(&mut h, cmd, want);
    }
    still_serves(&mut h);
    replays_identically(&h);
}

// ---------------------------------------------------------------------------------------
// CVE-2021-32627, -32628, -32687, -41099, -29478: huge limits and large elements
// ---------------------------------------------------------------------------------------

/// Sets every encoding limit Memoria has to its maximum (CVE-2021-32627/32628/32687/41099
/// all need a non-default, very large limit). `set-max-listpack-entries` does not exist in
/// 7.0 (nor here); the ziplist names are aliases of the listpack ones.
fn huge_limits(h: &mut H) {
    for name in [
        "hash-max-listpack-entries",
        "hash-max-listpack-value",
        "hash-max-ziplist-entries",
        "hash-max-ziplist-value",
        "zset-max-listpack-entries",
        "zset-max-listpack-value",
        "zset-max-ziplist-entries",
        "zset-max-ziplist-value",
        "set-max-intset-entries",
        "stream-node-max-bytes",
        "stream-node-max-entries",
        "proto-max-bulk-len",
        "client-query-buffer-limit",
        "hll-sparse-max-bytes",
    ] {
        ck(h, &format!("CONFIG SET {name} {MAX}"), OK);
        ck(h, &format!("CONFIG GET {name}"), bulks(&[name, MAX]));
    }
    ck(
        h,
        &format!("CONFIG SET list-max-listpack-size {MAX}"),
        err("ERR CONFIG SET failed (possibly related to argument 'list-max-listpack-size') - argument must be between -2147483648 and 2147483647 inclusive"),
    );
    ck(h, "CONFIG SET list-max-listpack-size 2147483647", OK);
}

/// CVE-2021-32687: with set-max-intset-entries set very large an intset could grow past
/// what its 32-bit length could address. Memoria's intset keeps working and converts on
/// a non-integer member, as Redis's does.
#[test]
fn cve_2021_32687_intset_with_huge_set_max_intset_entries() {
    let mut h = H::new();
    huge_limits(&mut h);
    ck(
        &mut h,
        "CONFIG SET set-max-intset-entries -1",
        err("ERR CONFIG SET failed (possibly related to argument 'set-max-intset-entries') - argument must be between 0 and 9223372036854775807 inclusive"),
    );
    let mut args: Vec<String> = vec!["SADD".into(), "si".into()];
    args.extend((0..20_000).map(|i| (i * 7 - 50_000).to_string()));
    let argv: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(run(&mut h, &argv), int(20_000));
    ck(&mut h, "OBJECT ENCODING si", bulk("intset"));
    ck(&mut h, &format!("SADD si {MIN} {MAX}"), int(2));
    ck(&mut h, "OBJECT ENCODING si", bulk("intset"));
    ck(&mut h, "SCARD si", int(20_002));
    ck(&mut h, "SISMEMBER si 89993", int(1));
    ck(&mut h, "SISMEMBER si 89994", int(0));
    let members = parse_bulks(&h.c("SMEMBERS si"));
    assert_eq!(members.len(), 20_002);
    assert_eq!((members[0].as_str(), members[20_001].as_str()), (MIN, MAX));
    assert!(members.windows(2).all(|w| w[0].parse::<i64>().unwrap() < w[1].parse::<i64>().unwrap()), "an intset replies in order");
    ck(&mut h, "SINTERCARD 1 si LIMIT 9223372036854775807", int(20_002));
    ck(&mut h, "SADD si x", int(1));
    ck(&mut h, "OBJECT ENCODING si", bulk("hashtable"));
    ck(&mut h, "SCARD si", int(20_003));
    still_serves(&mut h);
    replays_identically(&h);
}

/// CVE-2021-29478: COPY of a large intset overflowed. A copy is a separate, equal set.
#[test]
fn cve_2021_29478_copy_of_a_large_intset() {
    let mut h = H::new();
    huge_limits(&mut h);
    let mut args: Vec<String> = vec!["SADD".into(), "src".into()];
    args.extend((0..20_000).map(|i| (i * 3).to_string()));
    let argv: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    assert_eq!(run(&mut h, &argv), int(20_000));
    ck(&mut h, "COPY src dst", int(1));
    ck(&mut h, "COPY src dst", int(0));
    ck(&mut h, "COPY src src", err("ERR source and destination objects are the same"));
    ck(&mut h, "OBJECT ENCODING dst", bulk("intset"));
    assert_eq!(h.c("SMEMBERS dst"), h.c("SMEMBERS src"));
    ck(&mut h, "SADD dst 1", int(1));
    ck(&mut h, "SCARD src", int(20_000));
    ck(&mut h, "SCARD dst", int(20_001));
    ck(&mut h, "COPY src dst REPLACE", int(1));
    ck(&mut h, "SCARD dst", int(20_000));
    still_serves(&mut h);
    replays_identically(&h);
}

/// CVE-2021-32628: with hash/zset listpack (ziplist) limits set very large, big fields made
/// the listpack overflow. Replies and encodings as redis-server 7.0.15 (a 1 MiB value stays
/// in the listpack under such limits, in both).
#[test]
fn cve_2021_32628_listpacks_with_huge_hash_and_zset_limits() {
    let mut h = H::new();
    huge_limits(&mut h);
    let big = "x".repeat(1 << 20);
    assert_eq!(run(&mut h, &["HSET", "h", "f", &big, "g", "1"]), int(2));
    ck(&mut h, "OBJECT ENCODING h", bulk("listpack"));
    ck(&mut h, "HSTRLEN h f", int(1 << 20));
    assert_eq!(run(&mut h, &["HSET", "h", &big, "v"]), int(1));
    ck(&mut h, "OBJECT ENCODING h", bulk("listpack"));
    ck(&mut h, "HLEN h", int(3));
    assert_eq!(run(&mut h, &["HGET", "h", &big]), bulk("v"));
    assert_eq!(run(&mut h, &["HGET", "h", "f"]), bulk(&big));
    ck(&mut h, "HINCRBY h g 1", int(2));
    assert_eq!(run(&mut h, &["ZADD", "z", "1", &big, "2", "b"]), int(2));
    ck(&mut h, "OBJECT ENCODING z", bulk("listpack"));
    ck(&mut h, "ZRANGE z 1 1", bulks(&["b"]));
    assert_eq!(run(&mut h, &["ZSCORE", "z", &big]), bulk("1"));
    assert_eq!(run(&mut h, &["ZRANK", "z", &big]), int(0));
    assert_eq!(run(&mut h, &["RPUSH", "l", &big, "a"]), int(2));
    ck(&mut h, "OBJECT ENCODING l", bulk("quicklist"));
    ck(&mut h, "LINDEX l 1", bulk("a"));
    ck(&mut h, "DEL h z l", int(3));
    still_serves(&mut h);
    replays_identically(&h);
}

/// CVE-2021-32627: with proto-max-bulk-len and client-query-buffer-limit raised, stream
/// entries with huge fields overflowed a stream node's listpack.
#[test]
fn cve_2021_32627_stream_entries_with_huge_limits() {
    let mut h = H::new();
    huge_limits(&mut h);
    let big = "y".repeat(1 << 20);
    assert_eq!(run(&mut h, &["XADD", "s", "1-1", "f", &big]), bulk("1-1"));
    assert_eq!(run(&mut h, &["XADD", "s", "2-1", &big, &big]), bulk("2-1"));
    ck(&mut h, "XADD s 3-1 small v", bulk("3-1"));
    ck(&mut h, "XLEN s", int(3));
    ck(&mut h, "XRANGE s 2-1 2-1 COUNT 0", "*-1\r\n");
    let got = h.c("XRANGE s 2-1 2-1");
    assert_eq!(got, format!("*1\r\n*2\r\n{}*2\r\n{}{}", bulk("2-1"), bulk(&big), bulk(&big)));
    ck(&mut h, "XREVRANGE s + - COUNT 1", format!("*1\r\n*2\r\n{}*2\r\n{}{}", bulk("3-1"), bulk("small"), bulk("v")));
    ck(&mut h, "XDEL s 2-1", int(1));
    ck(&mut h, "XTRIM s MAXLEN 1", int(1));
    ck(&mut h, "XLEN s", int(1));
    still_serves(&mut h);
    replays_identically(&h);
}

/// CVE-2021-41099: with proto-max-bulk-len set very large, string growth overflowed.
/// Offset + length is checked without overflow; growth past what the engine can hold
/// (3 GiB: its wasm32 linear memory ends at 4 GiB) is refused with the maxmemory error,
/// where Redis would allocate.
#[test]
fn cve_2021_41099_strings_with_huge_proto_max_bulk_len() {
    let mut h = H::new();
    huge_limits(&mut h);
    ck(&mut h, "SETRANGE str 1048576 x", int(1_048_577));
    let big = "z".repeat(1 << 20);
    assert_eq!(run(&mut h, &["APPEND", "str", &big]), int(2_097_153));
    ck(&mut h, "STRLEN str", int(2_097_153));
    ck(&mut h, "SETRANGE str 9223372036854775806 xy", err(TOO_BIG));
    ck(&mut h, &format!("SETRANGE str {MAX} x"), err(TOO_BIG));
    let oom = err("OOM command not allowed when used memory > 'maxmemory'.");
    ck(&mut h, "SETRANGE str 4294967296 x", &oom);
    ck(&mut h, "SETRANGE new 4294967296 x", &oom);
    ck(&mut h, "SETBIT bits 34359738368 1", &oom);
    ck(&mut h, "BITFIELD bits SET u8 34359738368 1", &oom);
    ck(&mut h, "EXISTS new bits", int(0));
    // Reads past the end need no memory.
    ck(&mut h, "GETBIT str 34359738368", int(0));
    ck(&mut h, "GETRANGE str 4294967296 4294967297", bulk(""));
    ck(&mut h, "STRLEN str", int(2_097_153));
    still_serves(&mut h);
    replays_identically(&h);
}

// ---------------------------------------------------------------------------------------
// CVE-2021-29477, CVE-2021-32625: LCS (STRALGO LCS) table sizes
// ---------------------------------------------------------------------------------------

/// CVE-2021-29477 and CVE-2021-32625: the size of STRALGO LCS's table, (len_a + 1) *
/// (len_b + 1) cells, overflowed (on 32-bit builds too) and the heap was corrupted. 7.0's
/// LCS compares the size in 64 bits with proto-max-bulk-len; the replies below at the default
/// limit are redis-server 7.0.15's (65535 x 65536 is 2^32 + 65536 cells, 65536 in 32 bits).
/// With the limit raised as far as it goes, a table the engine could not hold (3 GiB: the
/// wasm32 engine ends at 4 GiB) is refused with the same error where Redis would allocate it
/// (DELIBERATE_DIFFERENCES); no size is ever cut to 32 bits.
#[test]
fn cve_2021_29477_lcs_table_sizes() {
    let mut h = H::new();
    let too_large = err("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    let set = |h: &mut H, k: &str, n: usize, c: &str| ck(h, &format!("SET {k} {}", c.repeat(n)), OK);
    for (n, m) in [(12000, 12000), (65535, 65536), (11585, 11584)] {
        set(&mut h, "a", n, "x");
        set(&mut h, "b", m, "y");
        for opts in ["", " LEN", " IDX", " IDX WITHMATCHLEN"] {
            ck(&mut h, &format!("LCS a b{opts}"), &too_large);
        }
    }
    huge_limits(&mut h);
    for (n, m) in [(65535, 65536), (40000, 40000)] {
        set(&mut h, "a", n, "x");
        set(&mut h, "b", m, "y");
        for opts in ["", " LEN", " IDX"] {
            ck(&mut h, &format!("LCS a b{opts}"), &too_large);
        }
    }
    set(&mut h, "b", 3, "x");
    ck(&mut h, "LCS a b LEN", int(3));
    still_serves(&mut h);
}

// ---------------------------------------------------------------------------------------
// CVE-2022-31144, CVE-2022-35951: XAUTOCLAIM
// ---------------------------------------------------------------------------------------

/// CVE-2022-31144: XAUTOCLAIM on a stream whose pending entries were deleted wrote past
/// the array of deleted ids. Deleted entries count towards COUNT, as in redis-server 7.0.15.
#[test]
fn cve_2022_31144_xautoclaim_over_deleted_entries() {
    let mut h = H::new();
    for i in 1..=20 {
        ck(&mut h, &format!("XADD s {i}-0 f {i}"), bulk(&format!("{i}-0")));
    }
    ck(&mut h, "XGROUP CREATE s g 0", OK);
    let read = h.c("XREADGROUP GROUP g c1 COUNT 100 STREAMS s >");
    assert!(read.starts_with("*1\r\n*2\r\n$1\r\ns\r\n*20\r\n"), "{read}");
    let ids: Vec<String> = (1..20).map(|i| format!("{i}-0")).collect();
    let mut del = vec!["XDEL", "s"];
    del.extend(ids.iter().map(|s| s.as_str()));
    assert_eq!(run(&mut h, &del), int(19));
    let reply = |cursor: &str, claimed: &str, deleted: &[&str]| format!("*3\r\n{}{claimed}{}", bulk(cursor), bulks(deleted));
    ck(&mut h, "XAUTOCLAIM s g c2 0 0 COUNT 3", reply("4-0", "*0\r\n", &["1-0", "2-0", "3-0"]));
    ck(&mut h, "XAUTOCLAIM s g c2 0 0 COUNT 3", reply("7-0", "*0\r\n", &["4-0", "5-0", "6-0"]));
    ck(&mut h, "XAUTOCLAIM s g c2 0 0 COUNT 1", reply("8-0", "*0\r\n", &["7-0"]));
    let entry20 = format!("*1\r\n*2\r\n{}*2\r\n{}{}", bulk("20-0"), bulk("f"), bulk("20"));
    let rest: Vec<String> = (8..20).map(|i| format!("{i}-0")).collect();
    let rest: Vec<&str> = rest.iter().map(|s| s.as_str()).collect();
    ck(&mut h, "XAUTOCLAIM s g c2 0 0 COUNT 100", reply("0-0", &entry20, &rest));
    ck(&mut h, "XPENDING s g", format!("*4\r\n:1\r\n{}{}*1\r\n{}", bulk("20-0"), bulk("20-0"), bulks(&["c2", "1"])));
    ck(&mut h, "XAUTOCLAIM s g c2 0 0 COUNT 100 JUSTID", reply("0-0", &bulks(&["20-0"]), &[]));
    ck(&mut h, "XLEN s", int(1));
    still_serves(&mut h);
    replays_identically(&h);
}

/// CVE-2022-35951: a huge XAUTOCLAIM COUNT overflowed the size of the array of deleted ids.
/// Redis 7.0.15 refuses counts above LONG_MAX/16 ("COUNT must be > 0") and answers
/// "Insufficient memory" when it cannot allocate COUNT ids; Memoria refuses COUNT above
/// 2^28 with that message (DELIBERATE_DIFFERENCES: "XAUTOCLAIM COUNT too high for memory").
#[test]
fn cve_2022_35951_xautoclaim_count_overflow() {
    let mut h = H::new();
    for i in 1..=5 {
        h.c(&format!("XADD s {i}-1 f v"));
    }
    ck(&mut h, "XGROUP CREATE s g 0", OK);
    h.c("XREADGROUP GROUP g c1 STREAMS s >");
    ck(&mut h, "XDEL s 1-1 2-1 3-1", int(3));
    let count_err = err("ERR COUNT must be > 0");
    for count in [MAX, "922337203685477580", "1152921504606846976", "576460752303423488", "0", "-1", MIN, "9223372036854775808"] {
        ck(&mut h, &format!("XAUTOCLAIM s g c2 0 0 COUNT {count}"), &count_err);
    }
    let oom = err("ERR Insufficient memory, failed allocating transient memory, COUNT too high.");
    for count in ["576460752303423487", "576460752303423486", "1099511627776", "268435457"] {
        ck(&mut h, &format!("XAUTOCLAIM s g c2 0 0 COUNT {count}"), &oom);
    }
    let entries = format!("*2\r\n*2\r\n{}*2\r\n{}{}*2\r\n{}*2\r\n{}{}", bulk("4-1"), bulk("f"), bulk("v"), bulk("5-1"), bulk("f"), bulk("v"));
    ck(&mut h, "XAUTOCLAIM s g c2 0 0 COUNT 268435456", format!("*3\r\n{}{entries}{}", bulk("0-0"), bulks(&["1-1", "2-1", "3-1"])));
    ck(&mut h, "XAUTOCLAIM s g c2 0 -1", err("ERR Invalid stream ID specified as stream command argument"));
    ck(&mut h, &format!("XAUTOCLAIM s g c2 {MAX} 0"), format!("*3\r\n{}*0\r\n*0\r\n", bulk("0-0")));
    ck(&mut h, "XAUTOCLAIM s g c2 0 18446744073709551615-18446744073709551615 COUNT 1", format!("*3\r\n{}*0\r\n*0\r\n", bulk("0-0")));
    ck(&mut h, "XAUTOCLAIM s g c2 0 18446744073709551616 COUNT 1", err("ERR Invalid stream ID specified as stream command argument"));
    // [id, consumer, idle (the harness's clock stands still), deliveries]
    ck(
        &mut h,
        &format!("XPENDING s g - + {MAX}"),
        format!("*2\r\n*4\r\n{}{}:0\r\n:2\r\n*4\r\n{}{}:0\r\n:2\r\n", bulk("4-1"), bulk("c2"), bulk("5-1"), bulk("c2")),
    );
    ck(&mut h, &format!("XPENDING s g - + {MIN}"), "*0\r\n");
    ck(&mut h, &format!("XCLAIM s g c3 {MAX} 4-1"), "*0\r\n");
    ck(&mut h, &format!("XCLAIM s g c3 0 4-1 RETRYCOUNT {MAX} JUSTID"), bulks(&["4-1"]));
    still_serves(&mut h);
    replays_identically(&h);
}

// ---------------------------------------------------------------------------------------
// CVE-2023-28425: MSETNX with the same key twice
// ---------------------------------------------------------------------------------------

/// CVE-2023-28425: MSETNX naming a key twice tripped an assertion (the second set found
/// the key the first had just added). The last value wins, as in MSET; replicas agree.
#[test]
fn cve_2023_28425_msetnx_same_key_twice() {
    let mut h = H::new();
    ck(&mut h, "MSETNX k a k b", int(1));
    ck(&mut h, "GET k", bulk("b"));
    ck(&mut h, "MSETNX k c k d", int(0));
    ck(&mut h, "GET k", bulk("b"));
    ck(&mut h, "MSETNX x 1 y 2 x 3", int(1));
    ck(&mut h, "MGET x y", bulks(&["3", "2"]));
    ck(&mut h, "MSETNX z z z z z z", int(1));
    ck(&mut h, "GET z", bulk("z"));
    ck(&mut h, "MSETNX w 1 w", err("ERR wrong number of arguments for 'msetnx' command"));
    ck(&mut h, "MSET m 1 m 2", OK);
    ck(&mut h, "GET m", bulk("2"));
    // The same key twice in other multi-key writes.
    ck(&mut h, "HSET hk f 1 f 2", int(1));
    ck(&mut h, "HGETALL hk", bulks(&["f", "2"]));
    ck(&mut h, "ZADD zk 1 a 2 a", int(1));
    ck(&mut h, "ZRANGE zk 0 -1 WITHSCORES", bulks(&["a", "2"]));
    ck(&mut h, "COPY k k", err("ERR source and destination objects are the same"));
    ck(&mut h, "RENAME k k", OK);
    ck(&mut h, "RENAMENX k k", int(0));
    ck(&mut h, "SADD sk a", int(1));
    ck(&mut h, "SMOVE sk sk a", int(1));
    ck(&mut h, "SINTERSTORE sk sk sk", int(1));
    ck(&mut h, "ZUNIONSTORE zk 2 zk zk", int(1));
    ck(&mut h, "ZRANGE zk 0 -1 WITHSCORES", bulks(&["a", "4"]));
    ck(&mut h, "RPUSH lk 1", int(1));
    ck(&mut h, "LMOVE lk lk LEFT RIGHT", bulk("1"));
    ck(&mut h, "SORT lk STORE lk", int(1));
    ck(&mut h, "PFADD pk a", int(1));
    ck(&mut h, "PFMERGE pk pk pk", OK);
    ck(&mut h, "PFCOUNT pk pk", int(1));
    ck(&mut h, "BITOP AND k k k", int(1));
    ck(&mut h, "GET k", bulk("b"));
    // Inside MULTI too.
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "MSETNX q 1 q 2", "+QUEUED\r\n");
    ck(&mut h, "EXEC", "*1\r\n:1\r\n");
    ck(&mut h, "GET q", bulk("2"));
    still_serves(&mut h);
    replays_identically(&h);
}

// ---------------------------------------------------------------------------------------
// CVE-2023-28856: HINCRBYFLOAT creating an invalid field
// ---------------------------------------------------------------------------------------

/// CVE-2023-28856: HINCRBYFLOAT could store a value that crashed Redis on access (an
/// infinite one, or one too long for the listpack entry). Infinity and NaN are refused and
/// create nothing; the hash stays readable (HRANDFIELD, HGETALL). Sums beyond f64 are a
/// documented difference: Redis's long double goes on to 1.8e4932, Memoria refuses them
/// with the NaN/Infinity error (DELIBERATE_DIFFERENCES, "INCRBYFLOAT/HINCRBYFLOAT with huge
/// magnitudes").
#[test]
fn cve_2023_28856_hincrbyfloat_invalid_values() {
    let mut h = H::new();
    let nan_inf = err("ERR value is NaN or Infinity");
    for incr in ["-inf", "inf", "+inf"] {
        ck(&mut h, &format!("HINCRBYFLOAT h f {incr}"), &nan_inf);
    }
    ck(&mut h, "HINCRBYFLOAT h f nan", err("ERR value is not a valid float"));
    ck(&mut h, "EXISTS h", int(0));
    ck(&mut h, "HSET h f 1", int(1));
    ck(&mut h, "HINCRBYFLOAT h f -inf", &nan_inf);
    ck(&mut h, "HGET h f", bulk("1"));
    let e308 = format!("1{}", "0".repeat(308));
    ck(&mut h, "HINCRBYFLOAT h f 1e308", bulk(&e308));
    ck(&mut h, "HINCRBYFLOAT h f 1e308", err("ERR increment would produce NaN or Infinity"));
    ck(&mut h, "HGET h f", bulk(&e308));
    ck(&mut h, "HSET h g inf", int(1));
    ck(&mut h, "HINCRBYFLOAT h g 1", err("ERR increment would produce NaN or Infinity"));
    ck(&mut h, "HSET h g nan", int(0));
    ck(&mut h, "HINCRBYFLOAT h g 1", err("ERR hash value is not a float"));
    ck(&mut h, "HSET h g 1.7976931348623157e308", int(0));
    ck(&mut h, "HINCRBYFLOAT h g 1.7976931348623157e308", err("ERR increment would produce NaN or Infinity"));
    ck(&mut h, "HGET h g", bulk("1.7976931348623157e308"));
    // The hash, listpack or not, is readable and writable.
    ck(&mut h, "HSTRLEN h f", int(309));
    ck(&mut h, "OBJECT ENCODING h", bulk("hashtable"));
    let want: BTreeSet<(String, String)> = [("f".to_string(), e308.clone()), ("g".into(), "1.7976931348623157e308".into())].into_iter().collect();
    assert_eq!(pairs(&h.c("HGETALL h")), want);
    let three = pairs(&h.c("HRANDFIELD h -3 WITHVALUES"));
    assert!(three.is_subset(&want) && !three.is_empty(), "{three:?}");
    assert_eq!(pairs(&h.c("HRANDFIELD h 3 WITHVALUES")), want);
    ck(&mut h, "HSET small a 1", int(1));
    ck(&mut h, "HINCRBYFLOAT small a -inf", &nan_inf);
    ck(&mut h, "OBJECT ENCODING small", bulk("listpack"));
    ck(&mut h, "HRANDFIELD small -3 WITHVALUES", bulks(&["a", "1", "a", "1", "a", "1"]));
    ck(&mut h, "HINCRBYFLOAT small a 1.5", bulk("2.5"));
    // INCRBYFLOAT has the same guard.
    ck(&mut h, "INCRBYFLOAT s -inf", err("ERR increment would produce NaN or Infinity"));
    ck(&mut h, "EXISTS s", int(0));
    still_serves(&mut h);
    replays_identically(&h);
}

// ---------------------------------------------------------------------------------------
// CVE-2023-36824: key extraction (COMMAND GETKEYS, ACL key checks)
// ---------------------------------------------------------------------------------------

/// CVE-2023-36824: extracting the keys of a command with many keys, or with key specs and
/// a bogus numkeys, overflowed a buffer (COMMAND GETKEYS and ACL key checks). Replies as
/// redis-server 7.0.15, odd ones included (`LMPOP 2 a LEFT` takes LEFT for a key).
/// MIGRATE, EVAL and GEORADIUS do not exist here: "Invalid command specified".
#[test]
fn cve_2023_36824_command_getkeys_with_odd_key_specs() {
    let mut h = H::new();
    let invalid = err("ERR Invalid arguments specified for command");
    let invalid_n = err("ERR Invalid number of arguments specified for command");
    let cases: &[(&str, String)] = &[
        ("COMMAND GETKEYS ZUNIONSTORE dst 9223372036854775807 a", invalid.clone()),
        ("COMMAND GETKEYS ZUNIONSTORE dst 2147483648 a", invalid.clone()),
        ("COMMAND GETKEYS ZUNIONSTORE dst 2147483647 a", invalid.clone()),
        ("COMMAND GETKEYS ZUNIONSTORE dst -1 a", invalid.clone()),
        ("COMMAND GETKEYS ZUNIONSTORE dst 0 a", invalid.clone()),
        ("COMMAND GETKEYS ZUNIONSTORE dst 2 a", invalid.clone()),
        ("COMMAND GETKEYS ZUNIONSTORE dst x a", invalid.clone()),
        ("COMMAND GETKEYS ZUNIONSTORE dst 1 a", bulks(&["dst", "a"])),
        ("COMMAND GETKEYS ZUNION 9223372036854775807 a", invalid.clone()),
        ("COMMAND GETKEYS ZUNION -9223372036854775808 a", invalid.clone()),
        ("COMMAND GETKEYS ZINTERCARD 3 a b", invalid.clone()),
        ("COMMAND GETKEYS ZDIFFSTORE dst 2 a", invalid.clone()),
        ("COMMAND GETKEYS SINTERCARD 1 a LIMIT 3", bulks(&["a"])),
        ("COMMAND GETKEYS LMPOP 2 a LEFT", bulks(&["a", "LEFT"])),
        ("COMMAND GETKEYS BLMPOP 0 9223372036854775807 a LEFT", invalid.clone()),
        ("COMMAND GETKEYS BZMPOP 0 -1 a MIN", invalid.clone()),
        ("COMMAND GETKEYS ZMPOP 1 a MIN", bulks(&["a"])),
        ("COMMAND GETKEYS SORT l", bulks(&["l"])),
        ("COMMAND GETKEYS SORT l STORE", bulks(&["l"])),
        ("COMMAND GETKEYS SORT l STORE d", bulks(&["l", "d"])),
        ("COMMAND GETKEYS SORT l LIMIT 0 STORE d", bulks(&["l"])),
        ("COMMAND GETKEYS SORT l STORE d STORE e", bulks(&["l", "e"])),
        ("COMMAND GETKEYS SORT l BY x GET y STORE d", bulks(&["l", "d"])),
        ("COMMAND GETKEYS SORT l LIMIT STORE d", bulks(&["l"])),
        ("COMMAND GETKEYS SORT l limit 1 2 store d", bulks(&["l", "d"])),
        ("COMMAND GETKEYS SORT_RO l", bulks(&["l"])),
        ("COMMAND GETKEYS SORT_RO l STORE d", bulks(&["l"])),
        ("COMMAND GETKEYS XREAD STREAMS a", invalid_n.clone()),
        ("COMMAND GETKEYS XREAD STREAMS a b c", bulks(&["a"])),
        ("COMMAND GETKEYS XREAD STREAMS a b", bulks(&["a"])),
        ("COMMAND GETKEYS XREAD COUNT 1 STREAMS", invalid.clone()),
        ("COMMAND GETKEYS XREAD COUNT 1 BLOCK 0 STREAMS a 0", bulks(&["a"])),
        ("COMMAND GETKEYS XREAD STREAMS STREAMS a 0", bulks(&["STREAMS"])),
        ("COMMAND GETKEYS XREAD", err("ERR wrong number of arguments for 'command|getkeys' command")),
        ("COMMAND GETKEYS XREAD a b", invalid_n.clone()),
        ("COMMAND GETKEYS XREADGROUP GROUP g c STREAMS a", invalid_n.clone()),
        ("COMMAND GETKEYS XREADGROUP GROUP g c STREAMS a >", bulks(&["a"])),
        ("COMMAND GETKEYS XREADGROUP GROUP g c COUNT 1 STREAMS a b > >", bulks(&["a", "b"])),
        ("COMMAND GETKEYS XREADGROUP STREAMS a 0", invalid_n.clone()),
        ("COMMAND GETKEYS MSET a 1 b", bulks(&["a", "b"])),
        ("COMMAND GETKEYS MSETNX a 1 b", bulks(&["a", "b"])),
        ("COMMAND GETKEYS SET a", invalid_n.clone()),
        ("COMMAND GETKEYS BLPOP 0", invalid_n.clone()),
        ("COMMAND GETKEYS OBJECT ENCODING a", bulks(&["a"])),
        ("COMMAND GETKEYS XINFO STREAM a", bulks(&["a"])),
        ("COMMAND GETKEYS XGROUP CREATE a g 0", bulks(&["a"])),
        ("COMMAND GETKEYS XAUTOCLAIM s g c 0 0", bulks(&["s"])),
        ("COMMAND GETKEYS ZRANGESTORE d s 0 1", bulks(&["d", "s"])),
        ("COMMAND GETKEYS BITOP AND d a b", bulks(&["d", "a", "b"])),
        ("COMMAND GETKEYS CONFIG GET x", err("ERR The command has no key arguments")),
        ("COMMAND GETKEYS SPUBLISH a b", err("ERR The command has no key arguments")),
        ("COMMAND GETKEYS NOSUCHCMD a", err("ERR Invalid command specified")),
        ("COMMAND GETKEYS MIGRATE host 1 k 0 5000", bulks(&["k"])),
        ("COMMAND GETKEYS MIGRATE host 1  0 5000 KEYS a b", bulks(&["a", "b"])),
        // EVAL's keys are optional: a count that names none gives an empty list.
        ("COMMAND GETKEYS EVAL x 9223372036854775807 a", "*0\r\n".to_string()),
        ("COMMAND GETKEYS EVAL x 0", "*0\r\n".to_string()),
        ("COMMAND GETKEYS EVAL x y a", "*0\r\n".to_string()),
        ("COMMAND GETKEYS FCALL f 2 a b c", bulks(&["a", "b"])),
        // Keyword key specs (as redis-server 7.0.15 answers): the key after the first
        // STORE/STOREDIST from the options on; a keyword in last position names nothing.
        ("COMMAND GETKEYS GEORADIUS k 0 0 1 km STORE d", bulks(&["k", "d"])),
        ("COMMAND GETKEYS GEORADIUS k 0 0 1 km STORE", bulks(&["k"])),
        ("COMMAND GETKEYS GEORADIUS k 0 0 1 STORE d", bulks(&["k"])),
        ("COMMAND GETKEYS GEORADIUSBYMEMBER k m 1 km STOREDIST d STORE e", bulks(&["k", "e", "d"])),
        ("COMMAND GETKEYS LCS a b", bulks(&["a", "b"])),
        ("COMMAND GETKEYS PING", err("ERR wrong number of arguments for 'command|getkeys' command")),
    ];
    for (cmd, want) in cases {
        ck(&mut h, cmd, want);
    }

    // More keys than Redis's 256-key buffer held.
    let keys: Vec<String> = (0..300).map(|i| format!("k{i}")).collect();
    let k: Vec<&str> = keys.iter().map(|s| s.as_str()).collect();
    let mut mset = vec!["MSET"];
    for key in &k {
        mset.extend([*key, "v"]);
    }
    let getkeys = |h: &mut H, cmd: Vec<&str>| {
        let mut args = vec!["COMMAND", "GETKEYS"];
        args.extend(cmd);
        run(h, &args)
    };
    assert_eq!(getkeys(&mut h, mset.clone()), bulks(&k));
    let n = "300";
    let mut zu = vec!["ZUNIONSTORE", "dst", n];
    zu.extend(&k);
    let mut with_dst = vec!["dst"];
    with_dst.extend(&k);
    assert_eq!(getkeys(&mut h, zu.clone()), bulks(&with_dst));
    let mut zw = zu.clone();
    zw.push("WEIGHTS");
    zw.extend(std::iter::repeat_n("1", 300));
    assert_eq!(getkeys(&mut h, zw), bulks(&with_dst));
    let mut xr = vec!["XREAD", "STREAMS"];
    xr.extend(&k);
    xr.extend(std::iter::repeat_n("0", 300));
    assert_eq!(getkeys(&mut h, xr.clone()), bulks(&k));
    let mut sort = vec!["SORT", "l"];
    for _ in 0..300 {
        sort.extend(["STORE", "d"]);
    }
    assert_eq!(getkeys(&mut h, sort), bulks(&["l", "d"]));
    let mut sort = vec!["SORT", "l"];
    for _ in 0..300 {
        sort.extend(["GET", "x"]);
    }
    sort.extend(["STORE", "d"]);
    assert_eq!(getkeys(&mut h, sort), bulks(&["l", "d"]));
    let mut del = vec!["DEL"];
    for _ in 0..4 {
        del.extend(&k);
    }
    let mut four: Vec<&str> = Vec::new();
    for _ in 0..4 {
        four.extend(&k);
    }
    assert_eq!(getkeys(&mut h, del.clone()), bulks(&four));
    let mut lm = vec!["LMPOP", n];
    lm.extend(&k);
    lm.push("LEFT");
    assert_eq!(getkeys(&mut h, lm), bulks(&k));
    let mut sc = vec!["SINTERCARD", n];
    sc.extend(&k);
    sc.extend(["LIMIT", "1"]);
    assert_eq!(getkeys(&mut h, sc), bulks(&k));
    let mut bl = k.clone();
    bl.insert(0, "BLPOP");
    bl.push("0");
    assert_eq!(getkeys(&mut h, bl), bulks(&k));

    // The same extraction behind ACL checks, as DRYRUN and as enforcement.
    ck(&mut h, "ACL SETUSER u on nopass +@all ~a* ~k1* -@dangerous", OK);
    let denied = |key: &str| bulk(&format!("This user has no permissions to access the '{key}' key"));
    let dry = |h: &mut H, cmd: &[&str]| {
        let mut args = vec!["ACL", "DRYRUN", "u"];
        args.extend(cmd);
        run(h, &args)
    };
    assert_eq!(dry(&mut h, &mset), denied("k0"));
    let mut zu1 = vec!["ZUNIONSTORE", "k1", n];
    zu1.extend(&k);
    assert_eq!(dry(&mut h, &zu1), denied("k0"));
    assert_eq!(dry(&mut h, &xr), denied("k0"));
    assert_eq!(dry(&mut h, &del), denied("k0"));
    let mut many_k1 = vec!["DEL"];
    many_k1.extend(std::iter::repeat_n("k1", 1000));
    many_k1.push("k2");
    assert_eq!(dry(&mut h, &many_k1), denied("k2"));
    let dry_cases: &[(&str, String)] = &[
        ("ACL DRYRUN u ZUNIONSTORE a1 1 b", denied("b")),
        ("ACL DRYRUN u ZUNIONSTORE a1 2 a2 b", denied("b")),
        ("ACL DRYRUN u ZUNIONSTORE a1 1 a2 b", OK.into()),
        ("ACL DRYRUN u ZUNIONSTORE a1 -1 a2", OK.into()),
        ("ACL DRYRUN u LMPOP 2 a LEFT", denied("LEFT")),
        ("ACL DRYRUN u LMPOP 2 a b LEFT", denied("b")),
        ("ACL DRYRUN u LMPOP 4294967297 a LEFT", OK.into()),
        ("ACL DRYRUN u XREAD STREAMS a b c", OK.into()),
        ("ACL DRYRUN u XREAD STREAMS a1 b 0 0", denied("b")),
        ("ACL DRYRUN u XREAD STREAMS b", err("ERR wrong number of arguments for 'xread' command")),
        ("ACL DRYRUN u SINTERCARD 2 a b", denied("b")),
        ("ACL DRYRUN u SINTERCARD 9223372036854775807 a", OK.into()),
        ("ACL DRYRUN u BLMPOP 0 2 a b LEFT", denied("b")),
        ("ACL DRYRUN u MSET a 1 b", denied("b")),
        ("ACL DRYRUN u MSETNX a 1 a 2", OK.into()),
        ("ACL DRYRUN u ZINTERCARD 2 a", OK.into()),
        ("ACL DRYRUN u XREADGROUP GROUP g c STREAMS a b > >", denied("b")),
        ("ACL DRYRUN u NOSUCHCMD a", err("ERR Command 'NOSUCHCMD' not found")),
        ("ACL DRYRUN nosuchuser GET a", err("ERR User 'nosuchuser' not found")),
    ];
    for (cmd, want) in dry_cases {
        ck(&mut h, cmd, want);
    }
    assert_eq!(run(&mut h, &mset), OK);
    ck(&mut h, "AUTH u x", OK);
    let noperm = "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n";
    let mut mset_k1 = vec!["MSET"];
    let k1: Vec<String> = (0..300).map(|i| format!("k1{i}")).collect();
    for key in &k1 {
        mset_k1.extend([key.as_str(), "v"]);
    }
    assert_eq!(run(&mut h, &mset_k1), OK);
    assert_eq!(run(&mut h, &many_k1), noperm);
    let mut many_k19 = vec!["DEL"];
    many_k19.extend(std::iter::repeat_n("k1", 1000));
    many_k19.push("k19");
    assert_eq!(run(&mut h, &many_k19), int(2));
    let enforce: &[(&str, &str)] = &[
        ("ZUNIONSTORE dst 2147483647 a", "-ERR syntax error\r\n"),
        ("ZUNIONSTORE dst 2147483648 a", "-ERR syntax error\r\n"),
        ("ZUNIONSTORE dst 3 a", "-ERR syntax error\r\n"),
        ("ZUNIONSTORE dst 1 a", noperm),
        ("ZUNIONSTORE dst -1 a", "-ERR at least 1 input key is needed for 'zunionstore' command\r\n"),
        ("ZUNION 9223372036854775807 b", "-ERR syntax error\r\n"),
        ("ZUNION 2 a b", noperm),
        ("LMPOP 2 b LEFT", noperm),
        ("LMPOP 9223372036854775807 b LEFT", "-ERR syntax error\r\n"),
        ("SINTERCARD 2 b", "-ERR Number of keys can't be greater than number of args\r\n"),
        ("SINTERCARD 1 b", noperm),
        ("BLMPOP 0 2 b RIGHT", noperm),
        ("XREAD STREAMS b 0 0", noperm),
        ("XREAD STREAMS a b 0", "-ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.\r\n"),
        ("XREAD STREAMS a1 0", "*-1\r\n"),
        ("GET b", noperm),
    ];
    for (cmd, want) in enforce {
        ck(&mut h, cmd, *want);
    }
    ck(&mut h, "AUTH default x", OK);
    ck(&mut h, "DBSIZE", int(498));
    still_serves(&mut h);
}

/// CVE-2023-36824, numkeys past the int range: Redis's key specs cast numkeys to an int
/// (its getkeys procs read it with atoi), so 4294967297 counts as 1 and
/// 9223372036854775807 as -1 (no keys). Memoria once converted the parsed i64 with
/// `as usize`, so the answer depended on the build (natively no key for 4294967297; on
/// wasm32 a wrapped span for 9223372036854775807); it now counts in 64 bits on every
/// target (host/tests/advisories.rs checks the wasm32 build).
#[test]
fn cve_2023_36824_numkeys_past_the_int_range() {
    let mut h = H::new();
    ck(&mut h, "COMMAND GETKEYS SINTERCARD 4294967297 a", bulks(&["a"]));
    ck(&mut h, "COMMAND GETKEYS LMPOP 4294967297 a LEFT", bulks(&["a"]));
    ck(&mut h, "COMMAND GETKEYS ZDIFFSTORE dst 4294967297 a", bulks(&["dst", "a"]));
    ck(&mut h, "ACL SETUSER u on nopass +@all ~a* -@dangerous", OK);
    ck(&mut h, "ACL DRYRUN u ZUNIONSTORE dst 9223372036854775807 a", OK);
    ck(&mut h, "ACL DRYRUN u ZDIFFSTORE dst 4294967297 a", bulk("This user has no permissions to access the 'dst' key"));
    ck(&mut h, "AUTH u x", OK);
    for cmd in ["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"] {
        ck(&mut h, &format!("{cmd} dst 9223372036854775807 a"), err("ERR syntax error"));
    }
    ck(&mut h, "ZDIFFSTORE dst 4294967297 a", "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n");
    still_serves(&mut h);
}

// ---------------------------------------------------------------------------------------
// CVE-2023-41053: SORT / SORT_RO BY and GET need access to every key
// ---------------------------------------------------------------------------------------

/// CVE-2023-41053: SORT_RO's BY and GET patterns read keys the ACL never checked, so a user
/// limited to some keys could read any. Redis 7.0.15 refuses BY (with a pattern) and GET
/// (even `#`) for SORT and SORT_RO unless the user can read every key.
#[test]
fn cve_2023_41053_sort_by_and_get_need_access_to_all_keys() {
    let mut h = H::new();
    for cmd in ["RPUSH l 2 1 3", "SET w_1 3", "SET w_2 2", "SET w_3 1", "SET secret_1 s1", "SET secret_2 s2", "SET secret_3 s3", "HSET hs_1 f x"] {
        h.c(cmd);
    }
    ck(&mut h, "ACL SETUSER v on nopass +@all -@dangerous +sort_ro +sort ~l*", OK);
    ck(&mut h, "ACL SETUSER v3 on nopass +@all %R~*", OK);
    ck(&mut h, "ACL SETUSER v4 on nopass +@all %R~* %W~l*", OK);
    ck(&mut h, "ACL SETUSER v5 on nopass +@all ~l* ~w_* ~secret_*", OK);
    // DRYRUN checks the key specs only, as in Redis.
    ck(&mut h, "ACL DRYRUN v SORT_RO l GET secret_*", OK);
    let by = err("ERR BY option of SORT denied due to insufficient ACL permissions.");
    let get = err("ERR GET option of SORT denied due to insufficient ACL permissions.");
    ck(&mut h, "AUTH v x", OK);
    ck(&mut h, "SORT_RO l", bulks(&["1", "2", "3"]));
    ck(&mut h, "SORT_RO l BY nosort", bulks(&["2", "1", "3"]));
    ck(&mut h, "SORT l BY nosort STORE l2", int(3));
    for (cmd, want) in [
        ("SORT_RO l BY w_*", &by),
        ("SORT_RO l GET secret_*", &get),
        ("SORT_RO l BY nosort GET #", &get),
        ("SORT_RO l GET #", &get),
        ("SORT_RO l BY w_* GET #", &by),
        ("SORT_RO l GET hs_*->f", &get),
        ("SORT_RO l BY hs_*->f", &by),
        ("SORT l BY w_*", &by),
        ("SORT l GET secret_*", &get),
        ("SORT l BY w_* STORE l2", &by),
        ("SORT l GET # STORE l2", &get),
    ] {
        ck(&mut h, cmd, want);
    }
    // Patterns covering the keys are not enough: every key must be readable.
    ck(&mut h, "AUTH v5 x", OK);
    ck(&mut h, "SORT_RO l BY w_* GET secret_*", &by);
    ck(&mut h, "SORT_RO l GET #", &get);
    // Read access to every key is.
    ck(&mut h, "AUTH v3 x", OK);
    ck(&mut h, "SORT_RO l BY w_* GET secret_*", bulks(&["s3", "s2", "s1"]));
    ck(&mut h, "AUTH v4 x", OK);
    ck(&mut h, "SORT l BY w_* GET secret_* STORE l3", int(3));
    ck(&mut h, "AUTH default x", OK);
    ck(&mut h, "LRANGE l3 0 -1", bulks(&["s3", "s2", "s1"]));
    still_serves(&mut h);
}

// ---------------------------------------------------------------------------------------
// CVE-2024-31227, CVE-2024-51741: malformed ACL selectors and key permissions
// ---------------------------------------------------------------------------------------

/// CVE-2024-31227: a malformed ACL selector crashed Redis when later accessed. Memoria has
/// no selectors: every `(…)` is refused with an error naming the modifier
/// (DELIBERATE_DIFFERENCES, "ACL SETUSER selectors"), and nothing of the rule is applied;
/// the key-permission forms around them answer as redis-server 7.0.15.
#[test]
fn cve_2024_31227_malformed_acl_selectors() {
    let mut h = H::new();
    let unsupported = |m: &str| err(&format!("ERR Error in ACL SETUSER modifier '{m}': Selectors are not supported"));
    for m in ["(", "()", "(%", "(%X~", "(%RW~ )", "(~a", "(~a +get)", "(~a", "(+get"] {
        ckr(&mut h, &[b"ACL".as_slice(), b"SETUSER", b"s1", m.as_bytes()], unsupported(m));
    }
    ckr(&mut h, &[b"ACL".as_slice(), b"SETUSER", b"s1", b"on", b"(+get", b"~a)"], unsupported("(+get"));
    ck(&mut h, "ACL GETUSER s1", NIL);
    let syntax = |m: &str| err(&format!("ERR Error in ACL SETUSER modifier '{m}': Syntax error"));
    for m in ["%X~", "%RR~a", "%RWX~a", ")", "~a\u{20}b"] {
        ckr(&mut h, &[b"ACL".as_slice(), b"SETUSER", b"s1", m.as_bytes()], syntax(m));
    }
    for m in ["%RW", "%RW~", "%R", "%WR~a", "%r~a", "clearselectors", "~", "&", ">", "<", ""] {
        ckr(&mut h, &[b"ACL".as_slice(), b"SETUSER", b"s1", m.as_bytes()], OK);
    }
    let unknown = |m: &str| err(&format!("ERR Error in ACL SETUSER modifier '{m}': Unknown command or category name in ACL"));
    for m in ["+", "-", "+@", "+|", "-get|", "+get|x|y"] {
        ck(&mut h, &format!("ACL SETUSER s1 {m}"), unknown(m));
    }
    ck(&mut h, "ACL SETUSER s1 +get|", syntax("+get|"));
    let hash = |m: &str| {
        err(&format!(
            "ERR Error in ACL SETUSER modifier '{m}': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
        ))
    };
    for m in ["#", "#zz", "!", "!abc"] {
        ck(&mut h, &format!("ACL SETUSER s1 {m}"), hash(m));
    }
    ckr(&mut h, &[b"ACL".as_slice(), b"SETUSER", b"a b", b"on"], err("ERR Usernames can't contain spaces or null characters"));
    // The flags-only forms leave an empty pattern that matches only the empty key.
    ck(&mut h, "ACL SETUSER t1 reset on nopass +@all %RW", OK);
    let getuser = |keys: &str| {
        format!(
            "*12\r\n{}*3\r\n{}{}{}{}*0\r\n{}{}{}{}{}{}{}*0\r\n",
            bulk("flags"),
            bulk("on"),
            bulk("nopass"),
            bulk("sanitize-payload"),
            bulk("passwords"),
            bulk("commands"),
            bulk("+@all"),
            bulk("keys"),
            bulk(keys),
            bulk("channels"),
            bulk(""),
            bulk("selectors")
        )
    };
    ck(&mut h, "ACL GETUSER t1", getuser("~"));
    ck(&mut h, "ACL DRYRUN t1 GET a", bulk("This user has no permissions to access the 'a' key"));
    ck(&mut h, "ACL SETUSER t2 reset on nopass +@all %R", OK);
    ck(&mut h, "ACL GETUSER t2", getuser("%R~"));
    ck(&mut h, "ACL SETUSER t3 reset on nopass +@all %W~", OK);
    ck(&mut h, "ACL GETUSER t3", getuser("%W~"));
    ckr(&mut h, &[b"ACL".as_slice(), b"DRYRUN", b"t3", b"SET", b"", b"b"], OK);
    ck(&mut h, "ACL SETUSER t6 reset on nopass +@all %R~a %R", OK);
    ck(&mut h, "ACL GETUSER t6", getuser("%R~a %R~"));
    ck(&mut h, "ACL SETUSER t8 reset on nopass +@all %RW~*", OK);
    ck(&mut h, "ACL GETUSER t8", getuser("~*"));
    ck(&mut h, "ACL SETUSER t9 reset on nopass +@all %R~* %W~*", OK);
    ck(&mut h, "ACL GETUSER t9", getuser("~*"));
    // Every user can still be listed, used and deleted.
    let list = parse_bulks(&h.c("ACL LIST"));
    assert!(list.contains(&"user default on nopass ~* &* +@all".to_string()), "{list:?}");
    assert_eq!(list.len(), 8, "{list:?}");
    ck(&mut h, "AUTH t8 x", OK);
    ck(&mut h, "SET a 1", OK);
    ck(&mut h, "AUTH default x", OK);
    ck(&mut h, "ACL DELUSER s1 t1 t2 t3 t6 t8 t9", int(7));
    still_serves(&mut h);
    replays_identically(&h);
}

/// CVE-2024-51741: a malformed key-permission rule (`%` with no R/W flag) crashed Redis on
/// access. Redis 7.0.15 refuses `%`, `%~a`, `%~*`, `%~` with a syntax error and creates
/// nothing (Memoria once accepted them, and listed `%~*` as `~*` while granting nothing).
#[test]
fn cve_2024_51741_acl_key_permissions_without_flags() {
    let mut h = H::new();
    for m in ["%", "%~a", "%~*", "%~"] {
        ck(&mut h, &format!("ACL SETUSER t reset on nopass +@all {m}"), err(&format!("ERR Error in ACL SETUSER modifier '{m}': Syntax error")));
        ck(&mut h, "ACL GETUSER t", NIL);
    }
    ck(&mut h, "ACL LIST", bulks(&["user default on nopass ~* &* +@all"]));
    still_serves(&mut h);
}

// ---------------------------------------------------------------------------------------
// CVE-2025-32023: crafted HyperLogLog strings
// ---------------------------------------------------------------------------------------

fn hll_header(encoding: u8, cached: Option<u64>) -> Vec<u8> {
    let mut h = b"HYLL".to_vec();
    h.extend([encoding, 0, 0, 0]);
    match cached {
        Some(c) => h.extend(c.to_le_bytes()),
        None => h.extend([0, 0, 0, 0, 0, 0, 0, 0x80]),
    }
    h
}

/// Sparse XZERO opcode: `n` (1..=16384) empty registers.
fn xzero(n: usize) -> [u8; 2] {
    let n = n - 1;
    [0x40 | (n >> 8) as u8, (n & 0xff) as u8]
}

/// Sparse VAL opcode: `run` (1..=4) registers holding `v` (1..=32).
fn val(v: u8, run: u8) -> u8 {
    0x80 | ((v - 1) << 2) | (run - 1)
}

fn sparse(ops: &[&[u8]]) -> Vec<u8> {
    let mut s = hll_header(1, None);
    for op in ops {
        s.extend_from_slice(op);
    }
    s
}

/// CVE-2025-32023: a sparse HLL whose runs add up past 16384 registers (here past 2^31,
/// 131073 XZERO opcodes) made Redis write out of bounds. Every crafted string answers as in
/// redis-server 7.0.15: INVALIDOBJ, WRONGTYPE, or a count when the corruption is where
/// Redis does not look. PFDEBUG/PFSELFTEST do not exist here.
#[test]
fn cve_2025_32023_crafted_hyperloglogs() {
    let mut h = H::new();
    let valid = sparse(&[&xzero(16383), &[val(3, 1)]]);
    ckr(&mut h, &[b"SET".as_slice(), b"valid", &valid], OK);
    ck(&mut h, "PFCOUNT valid", int(1));
    let many = |n: usize| -> Vec<u8> {
        let mut s = hll_header(1, None);
        for _ in 0..n {
            s.extend(xzero(16384));
        }
        s
    };
    let mut ovf2 = many((1 << 17) + 8);
    ovf2.push(val(5, 1));
    let mut zerorun = hll_header(1, None);
    zerorun.extend(std::iter::repeat_n(63u8, 256));
    let mut zerorun_past = zerorun.clone();
    zerorun_past.push(63);
    let mut dense_short = hll_header(0, None);
    dense_short.extend(vec![0u8; 12287]);
    let mut dense_long = hll_header(0, None);
    dense_long.extend(vec![0xffu8; 12289]);
    let mut badenc = hll_header(2, None);
    badenc.extend(xzero(16384));
    let mut cached = hll_header(1, Some(123456));
    cached.extend(xzero(16384));
    let mut short = hll_header(1, None);
    short.extend(xzero(100));

    use Out::*;
    #[derive(Clone, Copy)]
    enum Out {
        I,
        W,
        N(i64),
        Ok_,
    }
    let text = |o: Out| match o {
        I => err(INVALID_HLL),
        W => err(NOT_HLL),
        N(n) => int(n),
        Ok_ => OK.to_string(),
    };
    // Per string, Redis's replies to: PFCOUNT, PFADD a b c, PFCOUNT, (value set again)
    // PFMERGE dst k, PFCOUNT k valid, PFADD k, STRLEN k, PFMERGE k valid, PFCOUNT k.
    let cases: Vec<(&str, Vec<u8>, [Out; 9])> = vec![
        ("ovf", many(131073), [I, I, I, I, I, N(0), N(262162), I, I]),
        ("ovf2", ovf2, [I, I, I, I, I, N(0), N(262177), I, I]),
        ("extra", sparse(&[&xzero(16384), &[val(3, 4)]]), [I, N(1), I, I, I, N(0), N(19), I, I]),
        ("runpast", sparse(&[&xzero(16383), &[val(3, 4)]]), [I, N(1), I, I, I, N(0), N(19), I, I]),
        ("short", short, [I, I, I, I, I, N(0), N(18), I, I]),
        ("onlyhdr", hll_header(1, None), [I, I, I, I, I, N(0), N(16), I, I]),
        ("zerorun", zerorun, [N(0), N(1), N(3), Ok_, N(1), N(0), N(272), Ok_, N(1)]),
        ("zerorun_past", zerorun_past, [I, N(1), I, I, I, N(0), N(273), I, I]),
        ("cached", cached, [N(123456), N(1), N(3), Ok_, N(1), N(0), N(18), Ok_, N(1)]),
        ("dense_short", dense_short, [W, W, W, W, W, W, N(12303), W, W]),
        ("dense_long", dense_long, [W, W, W, W, W, W, N(12305), W, W]),
        ("badenc", badenc, [W, W, W, W, W, W, N(18), W, W]),
        ("nohdr", b"HYLL".to_vec(), [W, W, W, W, W, W, N(4), W, W]),
    ];
    for (name, value, want) in &cases {
        let k = name.as_bytes();
        let steps: Vec<(Vec<&[u8]>, Out)> =
            vec![(vec![b"PFCOUNT", k], want[0]), (vec![b"PFADD", k, b"a", b"b", b"c"], want[1]), (vec![b"PFCOUNT", k], want[2])];
        ckr(&mut h, &[b"SET".as_slice(), k, value], OK);
        for (args, out) in steps {
            ckr(&mut h, &args, text(out));
        }
        ckr(&mut h, &[b"SET".as_slice(), k, value], OK);
        let steps: Vec<(Vec<&[u8]>, Out)> = vec![
            (vec![b"PFMERGE", b"dst", k], want[3]),
            (vec![b"PFCOUNT", k, b"valid"], want[4]),
            (vec![b"PFADD", k], want[5]),
            (vec![b"STRLEN", k], want[6]),
            (vec![b"PFMERGE", k, b"valid"], want[7]),
            (vec![b"PFCOUNT", k], want[8]),
        ];
        for (args, out) in steps {
            ckr(&mut h, &args, text(out));
        }
    }
    ck(&mut h, "PFDEBUG GETREG ovf", err("ERR unknown command 'PFDEBUG', with args beginning with: 'GETREG' 'ovf' "));
    ck(&mut h, "PFSELFTEST", err("ERR unknown command 'PFSELFTEST', with args beginning with: "));
    ck(&mut h, "PFCOUNT valid", int(1));
    ck(&mut h, "PFADD fresh x y z", int(1));
    ck(&mut h, "PFCOUNT fresh", int(3));
    still_serves(&mut h);
    replays_identically(&h);
}

/// CVE-2025-32023, registers beyond the estimator: a dense HLL whose registers hold 63 (more
/// than PFADD can set) makes the estimate divide by zero. Redis 7.0.15 answers the
/// conversion of that infinity, -9223372036854775808 (x86's llroundl: LLONG_MIN, cast to
/// uint64_t for the cache, replied as a long long); Memoria once saturated to
/// 9223372036854775807.
#[test]
fn cve_2025_32023_pfcount_beyond_the_estimator() {
    let mut h = H::new();
    let mut dense = hll_header(0, None);
    dense.extend(vec![0xffu8; 12288]);
    ckr(&mut h, &[b"SET".as_slice(), b"d", &dense], OK);
    ck(&mut h, "PFCOUNT d", int(i64::MIN));
    // The cache as Redis stores it (the conversion's 2^63, little-endian: its top bit marks
    // the cache invalid, so the next PFCOUNT computes again). Compared byte for byte: 0x80
    // is not UTF-8 text.
    assert_eq!(h.raw(&["GETRANGE", "d", "8", "15"]), b"$8\r\n\0\0\0\0\0\0\0\x80\r\n");
    ck(&mut h, "PFCOUNT d", int(i64::MIN));
    ck(&mut h, "PFADD d a b c", int(0));
    ck(&mut h, "PFMERGE m d", OK);
    ck(&mut h, "PFCOUNT m", int(i64::MIN));
}

// ---------------------------------------------------------------------------------------
// Integer-overflow arguments (CVE-2021-32761 BITFIELD, CVE-2022-35977 and the like)
// ---------------------------------------------------------------------------------------

/// Bit offsets and ranges at the integer extremes (CVE-2021-32761 was BITFIELD's offset
/// arithmetic overflowing on 32-bit builds; the 32-bit engine is checked in
/// host/tests/advisories.rs). Replies as redis-server 7.0.15.
#[test]
fn overflow_arguments_bitmaps() {
    let mut h = H::new();
    let bad_type = err("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.");
    let cases: &[(&str, String)] = &[
        ("SETBIT b 4294967296 1", err(BIT_OFFSET)),
        ("SETBIT b 9223372036854775807 1", err(BIT_OFFSET)),
        ("SETBIT b -1 1", err(BIT_OFFSET)),
        ("SETBIT b 18446744073709551615 1", err(BIT_OFFSET)),
        ("GETBIT b 4294967296", err(BIT_OFFSET)),
        ("GETBIT b 9223372036854775807", err(BIT_OFFSET)),
        ("GETBIT nokey 4294967295", int(0)),
        ("SET b x", OK.into()),
        ("GETBIT b 4294967295", int(0)),
        ("BITFIELD b GET u8 4294967296", err(BIT_OFFSET)),
        ("BITFIELD b GET u8 4294967289", "*1\r\n:0\r\n".into()),
        ("BITFIELD b GET i64 4294967232", "*1\r\n:0\r\n".into()),
        ("BITFIELD b GET u8 #536870912", err(BIT_OFFSET)),
        ("BITFIELD b GET u8 #536870911", "*1\r\n:0\r\n".into()),
        ("BITFIELD b GET u8 #9223372036854775807", err(BIT_OFFSET)),
        ("BITFIELD b SET u8 #9223372036854775807 1", err(BIT_OFFSET)),
        ("BITFIELD b INCRBY i64 9223372036854775807 1", err(BIT_OFFSET)),
        ("BITFIELD b GET i65 0", bad_type.clone()),
        ("BITFIELD b GET u64 0", bad_type.clone()),
        ("BITFIELD b GET i0 0", bad_type.clone()),
        ("BITFIELD b GET u63 0", "*1\r\n:4323455642275676160\r\n".into()),
        ("BITFIELD b INCRBY i64 0 9223372036854775808", err(NOT_INT)),
        ("BITFIELD b OVERFLOW FAIL INCRBY u63 0 -9223372036854775808", "*1\r\n$-1\r\n".into()),
        ("BITFIELD_RO b GET u8 4294967296", err(BIT_OFFSET)),
        ("BITFIELD_RO b GET i64 -1", err(BIT_OFFSET)),
        ("BITFIELD b GET u8 -1", err(BIT_OFFSET)),
        ("BITCOUNT b -9223372036854775808 9223372036854775807", int(4)),
        ("BITCOUNT b 9223372036854775807 -9223372036854775808", int(0)),
        ("BITCOUNT b -9223372036854775808 -9223372036854775808 BIT", int(0)),
        ("BITCOUNT b 0 9223372036854775807 BIT", int(4)),
        ("BITPOS b 1 -9223372036854775808 9223372036854775807", int(1)),
        ("BITPOS b 0 9223372036854775807", int(-1)),
        ("BITPOS b 0 -9223372036854775808 -9223372036854775808 BIT", int(0)),
        ("BITPOS b 1 0 9223372036854775807 BIT", int(1)),
        ("BITPOS b 0 9223372036854775807 9223372036854775807 BIT", int(-1)),
        ("GET b", bulk("x\0\0\0\0\0\0\0")),
    ];
    for (cmd, want) in cases {
        ck(&mut h, cmd, want);
    }
    still_serves(&mut h);
    replays_identically(&h);
}

/// List indexes, ranks and counts at the integer extremes (LPOS RANK/COUNT/MAXLEN, LRANGE,
/// LINDEX, LSET, LTRIM, LREM, LPOP/RPOP/LMPOP counts). Replies as redis-server 7.0.15.
#[test]
fn overflow_arguments_lists() {
    let mut h = H::new();
    let abc = bulks(&["a", "b", "c", "a", "b", "c"]);
    let cases: &[(&str, String)] = &[
        ("RPUSH l a b c a b c", int(6)),
        ("LPOS l a RANK -9223372036854775808", int(3)),
        ("LPOS l a RANK 9223372036854775807", NIL.into()),
        ("LPOS l a RANK -9223372036854775807", NIL.into()),
        (
            "LPOS l a RANK 0",
            err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"),
        ),
        ("LPOS l a COUNT 9223372036854775807", "*2\r\n:0\r\n:3\r\n".into()),
        ("LPOS l a COUNT -1", err("ERR COUNT can't be negative")),
        ("LPOS l a MAXLEN 9223372036854775807", int(0)),
        ("LPOS l a MAXLEN -1", err("ERR MAXLEN can't be negative")),
        ("LPOS l a RANK -1 COUNT 0 MAXLEN 9223372036854775807", "*2\r\n:3\r\n:0\r\n".into()),
        ("LPOS l a RANK -9223372036854775807 COUNT 9223372036854775807 MAXLEN 9223372036854775807", "*0\r\n".into()),
        ("LPOS l a RANK 9223372036854775808", err(NOT_INT)),
        ("LRANGE l 9223372036854775807 -9223372036854775808", "*0\r\n".into()),
        ("LRANGE l -9223372036854775808 -9223372036854775808", "*0\r\n".into()),
        ("LRANGE l -9223372036854775807 -9223372036854775807", "*0\r\n".into()),
        ("LRANGE l 9223372036854775806 9223372036854775807", "*0\r\n".into()),
        ("LRANGE l -9223372036854775808 9223372036854775807", abc.clone()),
        ("LINDEX l -9223372036854775808", NIL.into()),
        ("LINDEX l 9223372036854775807", NIL.into()),
        ("LSET l -9223372036854775808 x", err("ERR index out of range")),
        ("LSET l 9223372036854775807 x", err("ERR index out of range")),
        ("LTRIM l -9223372036854775808 9223372036854775807", OK.into()),
        ("LRANGE l 0 -1", abc.clone()),
        ("LPOP l 9223372036854775807", abc.clone()),
        ("RPUSH l a b c", int(3)),
        ("LPOP l -9223372036854775808", err("ERR value is out of range, must be positive")),
        ("RPOP l 9223372036854775808", err("ERR value is out of range, must be positive")),
        ("LMPOP 1 l LEFT COUNT 9223372036854775807", format!("*2\r\n{}{}", bulk("l"), bulks(&["a", "b", "c"]))),
        ("RPUSH l a b c", int(3)),
        ("LMPOP 9223372036854775807 l LEFT", err("ERR syntax error")),
        ("LMPOP -9223372036854775808 l LEFT", err("ERR numkeys should be greater than 0")),
        ("LMPOP 2147483648 l LEFT", err("ERR syntax error")),
        ("LMPOP 1 l LEFT COUNT -9223372036854775808", err("ERR count should be greater than 0")),
        ("LTRIM l 9223372036854775807 -9223372036854775808", OK.into()),
        ("EXISTS l", int(0)),
        ("RPUSH l a b c", int(3)),
        ("LINSERT l BEFORE b x", int(4)),
        ("LREM l -9223372036854775808 a", int(1)),
        ("LREM l 9223372036854775807 x", int(1)),
        ("LRANGE l 0 -1", bulks(&["b", "c"])),
    ];
    for (cmd, want) in cases {
        ck(&mut h, cmd, want);
    }
    still_serves(&mut h);
    replays_identically(&h);
}

/// Sorted-set ranges, LIMITs, counts, numkeys and weights at the extremes (ZRANGESTORE
/// LIMIT overflow and the like). Replies as redis-server 7.0.15.
#[test]
fn overflow_arguments_sorted_sets() {
    let mut h = H::new();
    let abcd_scores = bulks(&["a", "1", "b", "2", "c", "3", "d", "4"]);
    let cases: &[(&str, String)] = &[
        ("ZADD z 1 a 2 b 3 c 4 d", int(4)),
        ("ZRANGESTORE dst z 0 -1 BYSCORE LIMIT 9223372036854775807 9223372036854775807", int(0)),
        ("ZRANGESTORE dst z -inf +inf BYSCORE LIMIT 9223372036854775807 9223372036854775807", int(0)),
        ("ZRANGESTORE dst z -inf +inf BYSCORE LIMIT 1 9223372036854775807", int(3)),
        ("ZRANGE dst 0 -1", bulks(&["b", "c", "d"])),
        ("ZRANGESTORE dst z -inf +inf BYSCORE LIMIT -9223372036854775808 -9223372036854775808", int(0)),
        ("ZRANGESTORE dst z -inf +inf BYSCORE LIMIT 0 -9223372036854775808", int(4)),
        ("ZRANGESTORE dst z 9223372036854775807 -9223372036854775808", int(0)),
        ("ZRANGESTORE dst z -9223372036854775808 9223372036854775807", int(4)),
        ("ZRANGESTORE dst z -9223372036854775808 9223372036854775807 REV", int(4)),
        ("ZRANGESTORE dst z [a + BYLEX LIMIT 9223372036854775807 -1", int(0)),
        ("ZRANGESTORE dst z + [a BYLEX REV LIMIT 1 9223372036854775807", int(3)),
        ("ZRANGE z -inf +inf BYSCORE LIMIT 9223372036854775807 9223372036854775807 WITHSCORES", "*0\r\n".into()),
        ("ZRANGE z +inf -inf BYSCORE REV LIMIT 3 9223372036854775807 WITHSCORES", bulks(&["a", "1"])),
        ("ZRANGE z -9223372036854775808 -9223372036854775808", "*0\r\n".into()),
        ("ZRANGE z 9223372036854775807 9223372036854775807", "*0\r\n".into()),
        ("ZRANGEBYSCORE z -inf +inf LIMIT 9223372036854775806 9223372036854775807", "*0\r\n".into()),
        ("ZREVRANGEBYSCORE z +inf -inf LIMIT -9223372036854775808 9223372036854775807", "*0\r\n".into()),
        ("ZRANGEBYLEX z - + LIMIT 9223372036854775807 9223372036854775807", "*0\r\n".into()),
        ("ZREVRANGEBYLEX z + - LIMIT 2 9223372036854775807", bulks(&["b", "a"])),
        ("ZREVRANGE z -9223372036854775808 9223372036854775807", bulks(&["d", "c", "b", "a"])),
        ("ZREMRANGEBYRANK z 9223372036854775807 -9223372036854775808", int(0)),
        ("ZPOPMIN z -9223372036854775808", err("ERR value is out of range, must be positive")),
        ("ZPOPMIN z 9223372036854775807", abcd_scores.clone()),
        ("ZADD z 1 a 2 b 3 c 4 d", int(4)),
        ("ZMPOP 9223372036854775807 z MIN", err("ERR syntax error")),
        ("ZMPOP 1 z MIN COUNT -1", err("ERR count should be greater than 0")),
        ("ZINTERCARD 1 z LIMIT 9223372036854775807", int(4)),
        ("ZINTERCARD 1 z LIMIT -1", err("ERR LIMIT can't be negative")),
        ("ZINTERCARD 9223372036854775807 z", err("ERR syntax error")),
        ("ZINTERCARD -9223372036854775808 z", err("ERR at least 1 input key is needed for 'zintercard' command")),
        ("ZUNIONSTORE d 9223372036854775807 z", err("ERR syntax error")),
        ("ZUNIONSTORE d 2147483647 z", err("ERR syntax error")),
        ("ZUNIONSTORE d -1 z", err("ERR at least 1 input key is needed for 'zunionstore' command")),
        ("ZUNIONSTORE d 1 z WEIGHTS 9223372036854775807", int(4)),
        ("ZUNIONSTORE d 1 z WEIGHTS 1e308 AGGREGATE SUM", int(4)),
        ("ZRANGE d 0 -1 WITHSCORES", bulks(&["a", "1e+308", "b", "inf", "c", "inf", "d", "inf"])),
        ("ZUNIONSTORE d 2 z z WEIGHTS inf -inf", int(4)),
        ("ZUNION 1 z WEIGHTS nan", err("ERR weight value is not a float")),
        ("ZINTER 2 z z WEIGHTS inf 0", bulks(&["a", "b", "c", "d"])),
        ("ZADD z nan x", err("ERR value is not a valid float")),
        ("ZADD z INCR +inf a", bulk("inf")),
        ("ZINCRBY z -inf a", err("ERR resulting score is not a number (NaN)")),
        ("ZRANK z a", int(3)),
        ("SINTERCARD 1 nokey LIMIT 9223372036854775807", int(0)),
        ("SINTERCARD 9223372036854775807 k", err("ERR Number of keys can't be greater than number of args")),
        ("SINTERCARD 1 k LIMIT -9223372036854775808", err("ERR LIMIT can't be negative")),
        ("SPOP nokey -1", err("ERR value is out of range, must be positive")),
        ("SPOP nokey 9223372036854775807", "*0\r\n".into()),
        ("SADD s 1 2 3", int(3)),
        ("SPOP s 9223372036854775807", bulks(&["1", "2", "3"])),
    ];
    for (cmd, want) in cases {
        ck(&mut h, cmd, want);
    }
    still_serves(&mut h);
    replays_identically(&h);
}

/// Stream ids, MAXLEN/MINID/LIMIT, counts and ENTRIESREAD/ENTRIESADDED at the extremes
/// (XADD with the last possible id, XSETID (CVE-2022-33105 leaked memory there), XTRIM,
/// XRANGE/XREAD COUNT). Replies as redis-server 7.0.15.
#[test]
fn overflow_arguments_streams() {
    let mut h = H::new();
    let top = "18446744073709551615-18446744073709551615";
    let exhausted = err("ERR The stream has exhausted the last possible ID, unable to add more items");
    let cases: &[(&str, String)] = &[
        ("XADD s MAXLEN 9223372036854775807 1-1 f v", bulk("1-1")),
        ("XADD s MAXLEN -1 2-1 f v", err("ERR The MAXLEN argument must be >= 0.")),
        ("XADD s MAXLEN 9223372036854775808 2-1 f v", err(NOT_INT)),
        ("XADD s MAXLEN ~ 9223372036854775807 LIMIT 9223372036854775807 2-1 f v", bulk("2-1")),
        ("XADD s MAXLEN ~ 0 LIMIT -1 3-1 f v", err("ERR The LIMIT argument must be >= 0.")),
        ("XADD s MAXLEN = 0 LIMIT 10 3-1 f v", err("ERR syntax error, LIMIT cannot be used without the special ~ option")),
        ("XADD s MINID 18446744073709551615-18446744073709551615 4-1 f v", bulk("4-1")),
        ("XADD s 18446744073709551615-18446744073709551615 f v", bulk(top)),
        ("XADD s 18446744073709551615-* f v", exhausted.clone()),
        ("XADD s * f v", exhausted.clone()),
        ("XADD s 18446744073709551616-0 f v", err("ERR Invalid stream ID specified as stream command argument")),
        ("XLEN s", int(1)),
        ("XADD s2 18446744073709551615-18446744073709551614 f v", bulk("18446744073709551615-18446744073709551614")),
        ("XADD s2 18446744073709551615-* f v", bulk(top)),
        ("XADD s2 18446744073709551615-* f v", exhausted.clone()),
        ("XTRIM s2 MAXLEN 9223372036854775807", int(0)),
        ("XTRIM s2 MAXLEN ~ -9223372036854775808", err("ERR The MAXLEN argument must be >= 0.")),
        ("XTRIM s2 MAXLEN ~ 0 LIMIT 9223372036854775807", int(2)),
        ("XTRIM s2 MINID ~ 0 LIMIT 9223372036854775807", int(0)),
        ("XRANGE s2 - + COUNT 9223372036854775807", "*0\r\n".into()),
        ("XRANGE s2 - + COUNT -9223372036854775808", "*-1\r\n".into()),
        ("XREVRANGE s2 + - COUNT 9223372036854775807", "*0\r\n".into()),
        ("XRANGE s2 (18446744073709551615-18446744073709551615 +", err("ERR invalid start ID for the interval")),
        ("XREVRANGE s2 + (0-0", "*0\r\n".into()),
        ("XREAD COUNT 9223372036854775807 STREAMS s2 0", "*-1\r\n".into()),
        ("XREAD COUNT -9223372036854775808 STREAMS s2 0", "*-1\r\n".into()),
        ("XREAD BLOCK -1 STREAMS s2 0", err("ERR timeout is negative")),
        ("XSETID s2 18446744073709551615-18446744073709551615 ENTRIESADDED 9223372036854775807 MAXDELETEDID 0-1", OK.into()),
        ("XSETID s2 18446744073709551615-18446744073709551615 ENTRIESADDED -1 MAXDELETEDID 0-1", err("ERR entries_added must be positive")),
        (
            "XSETID s2 18446744073709551615-18446744073709551615 ENTRIESADDED 9223372036854775807 MAXDELETEDID 18446744073709551615-18446744073709551615",
            OK.into(),
        ),
        ("XGROUP CREATE s2 g $ ENTRIESREAD 9223372036854775807", OK.into()),
        ("XGROUP CREATE s2 g2 $ ENTRIESREAD -9223372036854775808", err("ERR value for ENTRIESREAD must be positive or -1")),
        ("XGROUP SETID s2 g 0 ENTRIESREAD -1", OK.into()),
        (
            "XINFO GROUPS s2",
            format!(
                "*1\r\n*12\r\n{}{}{}:0\r\n{}:0\r\n{}{}{}$-1\r\n{}:0\r\n",
                bulk("name"),
                bulk("g"),
                bulk("consumers"),
                bulk("pending"),
                bulk("last-delivered-id"),
                bulk("0-0"),
                bulk("entries-read"),
                bulk("lag")
            ),
        ),
    ];
    for (cmd, want) in cases {
        ck(&mut h, cmd, want);
    }
    let full = h.c(&format!("XINFO STREAM s2 FULL COUNT {MAX}"));
    assert!(full.contains(&format!("{}:9223372036854775807\r\n", bulk("entries-added"))), "{full}");
    assert_eq!(h.c(&format!("XINFO STREAM s2 FULL COUNT {MIN}")), full);
    still_serves(&mut h);
    replays_identically(&h);
}

/// Expiry times and counters at the extremes (EXPIRE/SET EX overflow when converted to
/// milliseconds, INCRBY/DECRBY/HINCRBY overflow, SELECT, SCAN cursors and COUNT).
#[test]
fn overflow_arguments_expiry_and_counters() {
    let mut h = H::new();
    let invalid = |c: &str| err(&format!("ERR invalid expire time in '{c}' command"));
    let overflow = err("ERR increment or decrement would overflow");
    let cases: &[(&str, String)] = &[
        ("EXPIRE k 9223372036854775807", invalid("expire")),
        ("SET k v", OK.into()),
        ("EXPIRE k 9223372036854775807", invalid("expire")),
        ("EXPIRE k 9223372036854775", invalid("expire")),
        ("EXPIRE k 9223372036854776", invalid("expire")),
        ("PEXPIRE k 9223372036854775807", invalid("pexpire")),
        ("EXPIREAT k 9223372036854775807", invalid("expireat")),
        ("EXPIRE k -9223372036854775808", invalid("expire")),
        ("PEXPIREAT k 9223372036854775807", int(1)),
        ("SET k v EX 9223372036854775807", invalid("set")),
        ("SET k v PX 9223372036854775807", invalid("set")),
        ("SET k v EXAT 9223372036854775807", invalid("set")),
        ("SET k v EX 9223372036854776", invalid("set")),
        ("SET k v PXAT 9223372036854775807", OK.into()),
        ("GETEX k EX 9223372036854776", invalid("getex")),
        ("GETEX k PXAT 9223372036854775807", bulk("v")),
        ("SETEX k 9223372036854776 v", invalid("setex")),
        ("SETEX k -1 v", invalid("setex")),
        ("SETEX k 0 v", invalid("setex")),
        ("SET k v", OK.into()),
        ("PEXPIRE k -9223372036854775808", int(1)),
        ("EXISTS k", int(0)),
        ("SET n 9223372036854775807", OK.into()),
        ("INCR n", overflow.clone()),
        ("INCRBY n 9223372036854775807", overflow.clone()),
        ("DECRBY n -9223372036854775808", err("ERR decrement would overflow")),
        ("DECR n", int(9223372036854775806)),
        ("SET n -9223372036854775808", OK.into()),
        ("DECR n", overflow.clone()),
        ("DECRBY n 9223372036854775807", overflow.clone()),
        ("INCRBY n -9223372036854775808", overflow.clone()),
        ("HSET h f 9223372036854775807", int(1)),
        ("HINCRBY h f 1", overflow.clone()),
        ("HINCRBY h f -9223372036854775808", int(-1)),
        ("SCAN 0 COUNT 0", err("ERR syntax error")),
        ("SCAN 18446744073709551616", err("ERR invalid cursor")),
        ("HSCAN h 0 COUNT 9223372036854775807", format!("*2\r\n{}{}", bulk("0"), bulks(&["f", "-1"]))),
        ("SELECT -9223372036854775808", err("ERR value is out of range, value must between -2147483648 and 2147483647")),
        ("SELECT 2147483648", err("ERR value is out of range, value must between -2147483648 and 2147483647")),
    ];
    for (cmd, want) in cases {
        ck(&mut h, cmd, want);
    }
    let scan = h.c(&format!("SCAN 0 COUNT {MAX}"));
    let keys = scan.strip_prefix(&format!("*2\r\n{}", bulk("0"))).unwrap_or_else(|| panic!("{scan}"));
    assert_eq!(sorted(keys), strs(&["h", "n"]));
    still_serves(&mut h);
    replays_identically(&h);
}

// ---------------------------------------------------------------------------------------
// CVE-2025-67733: CR/LF in error replies
// ---------------------------------------------------------------------------------------

/// CVE-2025-67733: a Lua script's error_reply could carry CR/LF and inject replies into the
/// protocol (the Lua half: `cve_2025_67733_script_replies_never_carry_crlf`). The non-Lua
/// half of the fix: error replies that quote arguments replace CR and LF with spaces, so a
/// crafted argument never ends the reply early. Replies as redis-server 7.0.15.
#[test]
fn cve_2025_67733_error_replies_never_carry_crlf() {
    let mut h = H::new();
    ck(&mut h, "ACL SETUSER u on nopass +@all", OK);
    let cases: &[(&[&str], &str)] = &[
        (&["FOO\r\n+OK", "a\r\nb"], "-ERR unknown command 'FOO  +OK', with args beginning with: 'a  b' \r\n"),
        (&["CONFIG", "FOO\r\n+OK"], "-ERR unknown subcommand 'FOO  +OK'. Try CONFIG HELP.\r\n"),
        (&["CONFIG", "SET", "x\r\n:1", "1"], "-ERR Unknown option or number of arguments for CONFIG SET - 'x  :1'\r\n"),
        (&["ACL", "SETUSER", "u", "x\r\n+OK"], "-ERR Error in ACL SETUSER modifier 'x  +OK': Syntax error\r\n"),
        (&["ACL", "SETUSER", "u", "+x\r\n+OK"], "-ERR Error in ACL SETUSER modifier '+x  +OK': Unknown command or category name in ACL\r\n"),
        (&["ACL", "SETUSER", "x\r\ny"], "-ERR Usernames can't contain spaces or null characters\r\n"),
        (&["ACL", "DRYRUN", "u", "x\r\n+OK"], "-ERR Command 'x  +OK' not found\r\n"),
        (&["ACL", "DRYRUN", "x\r\n+OK", "GET", "a"], "-ERR User 'x  +OK' not found\r\n"),
        (&["ACL", "CAT", "x\r\n+OK"], "-ERR Unknown category 'x  +OK'\r\n"),
        (&["OBJECT", "x\r\n+OK", "a"], "-ERR unknown subcommand 'x  +OK'. Try OBJECT HELP.\r\n"),
        (&["CLIENT", "x\r\n+OK"], "-ERR unknown subcommand 'x  +OK'. Try CLIENT HELP.\r\n"),
        (&["CLIENT", "SETNAME", "a\r\nb"], "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"),
        (&["XINFO", "x\r\n+OK"], "-ERR unknown subcommand 'x  +OK'. Try XINFO HELP.\r\n"),
        (&["PUBSUB", "x\r\n+OK"], "-ERR unknown subcommand 'x  +OK'. Try PUBSUB HELP.\r\n"),
        (&["CLUSTER", "x\r\n+OK"], "-ERR unknown subcommand 'x  +OK'. Try CLUSTER HELP.\r\n"),
        (
            &["XREADGROUP", "GROUP", "nog\r\n+OK", "c", "STREAMS", "nos\r\n", ">"],
            "-NOGROUP No such key 'nos  ' or consumer group 'nog  +OK' in XREADGROUP with GROUP option\r\n",
        ),
        (&["COMMAND", "GETKEYS", "x\r\n+OK", "a"], "-ERR Invalid command specified\r\n"),
        (&["AUTH", "x\r\ny", "z"], "-WRONGPASS invalid username-password pair or user is disabled.\r\n"),
        (&["SELECT", "x\r\n"], "-ERR value is not an integer or out of range\r\n"),
        // Bulk replies carry any bytes.
        (&["ECHO", "a\r\nb"], "$4\r\na\r\nb\r\n"),
    ];
    for (args, want) in cases {
        let got = run(&mut h, args);
        assert_eq!(got, *want, "{args:?}");
        if got.starts_with('-') {
            assert_eq!(got.matches("\r\n").count(), 1, "{got:?}");
        }
    }
    still_serves(&mut h);
}

// ---------------------------------------------------------------------------------------
// Lua scripting (EVAL, FUNCTION; the cjson, bit, cmsgpack and struct libraries)
// ---------------------------------------------------------------------------------------

/// Runs each script with EVAL and checks redis-server 7.0.15's reply, byte for byte; then
/// that the engine carries on.
#[track_caller]
fn scripts_as_recorded(h: &mut H, cases: &[(&str, &[u8])]) {
    for (script, want) in cases {
        let got = h.raw(&[&b"EVAL"[..], script.as_bytes(), b"0"]);
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want), "{script}");
        assert_eq!(&got[..], *want, "{script}");
    }
    still_serves(h);
}

/// CVE-2018-11218: cmsgpack pushed without checking Lua's stack (many arguments to pack,
/// many values or deep nesting from unpack): stack corruption. Redis 7.0.15 checks the
/// stack and answers Lua errors at its 8000-slot limit; Memoria's cmsgpack fails at the
/// same counts and depths with the same messages (its decoder does not recurse in C), and
/// a huge declared array, map or string count allocates nothing before the bytes are there.
#[test]
fn cve_2018_11218_cmsgpack_and_the_lua_stack() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (r#"local t = {} for i = 1, 4000 do t[i] = i end return #cmsgpack.pack(unpack(t))"#, b":11618\r\n"),
        (r#"local t = {} for i = 1, 4001 do t[i] = i end return #cmsgpack.pack(unpack(t))"#, b"-ERR user_script:1: bad argument #0 to 'pack' (Too many arguments for MessagePack pack.) script: 1cb296feb2f83b6c1ffb50b152ae5830255f640e, on @user_script:1.\r\n"),
        (r#"local t = {} for i = 1, 3999 do t[i] = 1 end t[4000] = {} return #cmsgpack.pack(unpack(t))"#, b"-ERR user_script:1: stack overflow (in function table_is_an_array) script: a012fa9452dd373a04225884ada376ae6d68b148, on @user_script:1.\r\n"),
        (r#"return select('#', cmsgpack.unpack(string.rep('\1', 7998)))"#, b":7998\r\n"),
        (r#"return cmsgpack.unpack(string.rep('\1', 8000))"#, b"-ERR user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.) script: 3f21c736088baf4017a1205da9e2ae25eeb1cfb6, on @user_script:1.\r\n"),
        (r#"return cmsgpack.unpack(string.rep('\145', 100000))"#, b"-ERR user_script:1: stack overflow (in function mp_decode_to_lua_array) script: ba319d8a034b8bc1f3284f3e3ad1337abf862515, on @user_script:1.\r\n"),
        (r#"return cmsgpack.unpack(string.rep('\129\1', 100000))"#, b"-ERR user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.) script: 5cf1e5ed5e53f59ac906e705c303654688a2774b, on @user_script:1.\r\n"),
        (r#"return cmsgpack.unpack(string.rep('\129', 100000))"#, b"-ERR user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.) script: 7d06cf906f973ea71bb62c9666440643ee4280e9, on @user_script:1.\r\n"),
        (r#"return cmsgpack.unpack(string.rep('\220\255\255', 100000))"#, b"-ERR user_script:1: stack overflow (in function mp_decode_to_lua_array) script: 34bd4b870a68556a15191eb4e5c438758e4895b9, on @user_script:1.\r\n"),
        (r#"return cmsgpack.unpack('\221\255\255\255\255')"#, b"-ERR user_script:1: Missing bytes in input. script: d927de6b02ace026366ff615f6b86eded580403b, on @user_script:1.\r\n"),
        (r#"return cmsgpack.unpack('\223\255\255\255\255')"#, b"-ERR user_script:1: Missing bytes in input. script: 7daf2150903dbcda75a0056fb3e4c1d3764c1d80, on @user_script:1.\r\n"),
        (r#"return cmsgpack.unpack('\219\255\255\255\255')"#, b"-ERR user_script:1: Missing bytes in input. script: dbc322a288a3d7dab7e4d188ca5882072068820d, on @user_script:1.\r\n"),
        (r#"local t = {} t[1] = t return cmsgpack.pack(t)"#, b"$17\r\n\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\xc0\r\n"),
    ];
    scripts_as_recorded(&mut h, cases);
    // A table that holds itself many times encodes 100^16 values in Redis, which never
    // answers again (no SCRIPT KILL inside a C function). Each value counts against the
    // script's budget here: a Lua error, and the engine carries on.
    ck(&mut h, "CONFIG SET busy-reply-threshold 1", OK);
    let got = String::from_utf8_lossy(&h.raw(&["EVAL", "local t = {} for i = 1, 100 do t[i] = t end return #cmsgpack.pack(t)", "0"])).into_owned();
    assert!(got.starts_with("-ERR Script killed: it ran past its execution budget (busy-reply-threshold) script: "), "{got}");
    ck(&mut h, "CONFIG SET busy-reply-threshold 5000", OK);
    still_serves(&mut h);
}

/// CVE-2018-11219: struct's bounds checks could be defeated by integer overflow (sizes and
/// positions near the top of their types). Same replies as redis-server 7.0.15: every
/// read is checked against the data ("data string too short"), positions and `c0` sizes in
/// 64 bits as x86-64 Redis converts them, results against the stack.
#[test]
fn cve_2018_11219_struct_sizes_and_positions() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (
            r#"return struct.unpack('c2147483647', 'x')"#,
            b"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: e534f27834c20dff4e87a6d76c6ba78e53b6aa52, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.unpack('b', 'ab', 2^63)"#,
            b"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: 740210930909157e0776a8467cd8b04adb5cd5e2, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.unpack('b', 'ab', 2^64 + 2^20)"#,
            b"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: df7bbbe3fa7e035b762ef72aca05722ea540f6b2, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.unpack('b', 'ab', -2^63)"#,
            b"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: b190ea110776d0d3b3bfd69322c65eb60726923e, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.unpack('i32', string.rep('x', 31))"#,
            b"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: b2d914e98febac589b2f5768900283cfc7c45c0b, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.unpack('bc0', '\255x')"#,
            b"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: bff9e4685e6f6c991c8346df4325e70c8f7a07ec, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.unpack('dc0', struct.pack('d', 2^63) .. 'x')"#,
            b"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: fdb50c5d9ff55fd96acd31a3738918f7488efb8c, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.unpack('dc0', struct.pack('d', -2) .. 'x')"#,
            b"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: 864720bbbb9a9e191ce52b5e0241f56ed189b644, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.unpack('!8xd', string.rep('x', 9))"#,
            b"-ERR user_script:1: bad argument #2 to 'unpack' (data string too short) script: 14de5ece8f926276b5f34a04e3a508a4d2af77a3, on @user_script:1.\r\n",
        ),
        (r#"return {struct.unpack('i32', string.rep('\255', 32))}"#, b"*2\r\n:-1\r\n:33\r\n"),
        (
            r#"return struct.pack('c2147483647', 'x')"#,
            b"-ERR user_script:1: bad argument #3 to 'pack' (string too short) script: 673779d982d7de3283d353f21c4b4dc146e6d17d, on @user_script:1.\r\n",
        ),
        (
            r#"return #{struct.unpack(string.rep('b', 7998), string.rep('a', 8000))}"#,
            b"-ERR user_script:1: stack overflow (too many results) script: 3b176f270818cf338229c5f26a8e7a1943a1bed9, on @user_script:1.\r\n",
        ),
    ];
    scripts_as_recorded(&mut h, cases);
}

/// CVE-2020-14147: struct's getnum overflowed on a huge count in a format (a stack buffer
/// overflow). Same replies as redis-server 7.0.15: "integral size overflow" past INT_MAX,
/// integer sizes past 32 refused.
#[test]
fn cve_2020_14147_struct_format_counts() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (
            r#"return struct.pack('i2147483648', 1)"#,
            b"-ERR user_script:1: integral size overflow script: ac110aca348ef80eafe61985dc98b36f2f8fee1c, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.pack('i99999999999999999999', 1)"#,
            b"-ERR user_script:1: integral size overflow script: 6886a3e89de9b6d91ac5a4662c73b1423c608539, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.unpack('i2147483648', 'x')"#,
            b"-ERR user_script:1: integral size overflow script: 2608107ed676119f293645175b970243789d0e3b, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.size('i2147483648')"#,
            b"-ERR user_script:1: integral size overflow script: 6858e28079cd1b07ed3404f983c8e9c840e79f8b, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.size('c2147483648')"#,
            b"-ERR user_script:1: integral size overflow script: 292a304409e9de38cfc7b4873d7ee2977fbb25fe, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.size('!2147483648')"#,
            b"-ERR user_script:1: integral size overflow script: c33db05654853f7650fd93900a9d5e36e857620e, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.pack('i33', 1)"#,
            b"-ERR user_script:1: integral size 33 is larger than limit of 32 script: 0a76c071d82805e752befa6958961c98c39f358f, on @user_script:1.\r\n",
        ),
        (
            r#"return struct.pack('i2147483647', 1)"#,
            b"-ERR user_script:1: integral size 2147483647 is larger than limit of 32 script: 33be4362885a47f185d012c86bf1ee953a5b9a60, on @user_script:1.\r\n",
        ),
        (r#"return struct.size('c2147483647')"#, b":2147483647\r\n"),
        (
            r#"return struct.pack('!2147483647', 1)"#,
            b"-ERR user_script:1: alignment 2147483647 is not a power of 2 script: 26114005d604d532903be7834a5cb3bc5e9d13e2, on @user_script:1.\r\n",
        ),
    ];
    scripts_as_recorded(&mut h, cases);
}

/// CVE-2021-32626: scripts could overflow the Lua stack (many arguments to redis.call, big
/// replies converted to Lua, many results, deep recursion). Same replies as redis-server
/// 7.0.15, except that a reply nested deeper than 1000 tables ends in "reached lua stack
/// limit" at depth 1000 (Redis: at its Lua stack's limit, about 7995).
#[test]
fn cve_2021_32626_the_lua_stack() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (r#"local t = {} for i = 1, 7990 do t[i] = 'a' end return redis.call('echo', unpack(t))"#, b"-ERR Wrong number of args calling Redis command from script script: 06457b12ac1f88207a5524041cd7bd03546ddcf9, on @user_script:1.\r\n"),
        (r#"redis.call('del', 'l') local t = {'rpush', 'l'} for i = 1, 7990 do t[#t + 1] = 'a' end return redis.call(unpack(t))"#, b":7990\r\n"),
        (r#"return #redis.call('lrange', 'l', 0, -1)"#, b":7990\r\n"),
        (r#"return select('#', unpack(redis.call('lrange', 'l', 0, -1)))"#, b":7990\r\n"),
        (r#"local t = {} for i = 1, 8000 do t[i] = i end return unpack(t)"#, b"-ERR user_script:1: too many results to unpack script: 2a64f4a1f1cadeb4f091e8321fb5fd582e5209d0, on @user_script:1.\r\n"),
        (r#"return select('#', unpack({}, 1, 7999))"#, b"-ERR user_script:1: too many results to unpack script: 8589041c716294bd3426c9c55a0e198ad1e5403d, on @user_script:1.\r\n"),
        (r#"return select('#', unpack({}, 1, 8000))"#, b"-ERR user_script:1: too many results to unpack script: b1b1462f48e7f60abfda09e3ff2f43e9ad75353b, on @user_script:1.\r\n"),
        (r#"return select('#', string.byte(string.rep('a', 7999), 1, -1))"#, b"-ERR user_script:1: stack overflow (string slice too long) script: 31a119791b74e544bd69d8f9f00c9c4dbb0acea2, on @user_script:1.\r\n"),
        (r#"return select('#', string.byte(string.rep('a', 8000), 1, -1))"#, b"-ERR user_script:1: stack overflow (string slice too long) script: 7b398779494dc3538c587d94439e91ae92e016be, on @user_script:1.\r\n"),
        (r#"local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end return f(10000)"#, b":10000\r\n"),
        (r#"local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end return f(1000000)"#, b"-ERR user_script:1: stack overflow script: 20438b69d9821b92a017abe55a0889e2c8b431ae, on @user_script:1.\r\n"),
        (r#"local t = {} local c = t for i = 1, 200 do c[1] = {} c = c[1] end c[1] = 'x' return t"#, b"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n$1\r\nx\r\n"),
        (r#"local co = coroutine.wrap(function(...) return select('#', ...) end) local t = {} for i = 1, 7990 do t[i] = i end return co(unpack(t))"#, b":7990\r\n"),
        (r#"return select('#', table.concat({}, ','), unpack({1, 2, 3}))"#, b":4\r\n"),
        (r#"local s = string.rep('a', 100000) return #{s:byte(1, 7000)}"#, b":7000\r\n"),
    ];
    scripts_as_recorded(&mut h, cases);
    let deep = h.raw(&["EVAL", "local t = {} local c = t for i = 1, 10000 do c[1] = {} c = c[1] end return t", "0"]);
    assert_eq!(String::from_utf8_lossy(&deep), format!("{}-ERR reached lua stack limit\r\n", "*1\r\n".repeat(1000)));
    still_serves(&mut h);
}

/// CVE-2022-0543: Debian's Lua build left `package` (and so `loadlib`) in the sandbox.
/// Memoria's Lua has no package, io, os or debug library, no loadfile or dofile: the same
/// errors as redis-server 7.0.15.
#[test]
fn cve_2022_0543_no_package_library() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (r#"return package"#, b"-ERR user_script:1: Script attempted to access nonexistent global variable 'package' script: bfab18646c3a65e87365badef4807726c27a0041, on @user_script:1.\r\n"),
        (r#"return module"#, b"-ERR user_script:1: Script attempted to access nonexistent global variable 'module' script: 2803774b6b78613fcfa3f4ce44070f589e937542, on @user_script:1.\r\n"),
        (r#"return require"#, b"-ERR user_script:1: Script attempted to access nonexistent global variable 'require' script: 68c9d8918a98cebaec1948aff703e96c57af9fdd, on @user_script:1.\r\n"),
        (r#"return loadlib"#, b"-ERR user_script:1: Script attempted to access nonexistent global variable 'loadlib' script: 1e7453a6b5b0a5ddce7a3c35c07c8fe456933044, on @user_script:1.\r\n"),
        (r#"return os"#, b"-ERR user_script:1: Script attempted to access nonexistent global variable 'os' script: f03b5ad6e7d58786b6a5e879efbea4a4408f5c2f, on @user_script:1.\r\n"),
        (r#"return io"#, b"-ERR user_script:1: Script attempted to access nonexistent global variable 'io' script: badfe324d30f60abd2dbecf4d4b0f915038384e2, on @user_script:1.\r\n"),
        (r#"return debug"#, b"-ERR user_script:1: Script attempted to access nonexistent global variable 'debug' script: 7f0eed9eaa523ec9e1ff69159f45a399473d9771, on @user_script:1.\r\n"),
        (r#"return dofile"#, b"-ERR user_script:1: Script attempted to access nonexistent global variable 'dofile' script: 0c5f629ecf4a281cada464398cd571c2f6828b27, on @user_script:1.\r\n"),
        (r#"return loadfile"#, b"-ERR user_script:1: Script attempted to access nonexistent global variable 'loadfile' script: a08fbe72c95f67027cc9b6349f5d335b598397b7, on @user_script:1.\r\n"),
        (r#"return type(string.dump)"#, b"$8\r\nfunction\r\n"),
        (r#"return newproxy"#, b"-ERR user_script:1: Script attempted to access nonexistent global variable 'newproxy' script: f77b925834a6a5cd4c3f954d604c77e44181c40f, on @user_script:1.\r\n"),
        (r#"return getfenv"#, b"-ERR user_script:1: Script attempted to access nonexistent global variable 'getfenv' script: 16cfebc0feae9751eb6419326840e1512625eb36, on @user_script:1.\r\n"),
        (r#"return setfenv"#, b"-ERR user_script:1: Script attempted to access nonexistent global variable 'setfenv' script: 3ffeb955c6323bb75eb872e0e1bc7214ea8780d9, on @user_script:1.\r\n"),
        (r#"return rawget(_G, 'package')"#, b"$-1\r\n"),
        (r#"return loadstring('return package')()"#, b"-ERR [string \"return package\"]:1: Script attempted to access nonexistent global variable 'package' script: 24df1ec7097da3d454fc7f631ecaf9642640df36, on return package:1.\r\n"),
        (r#"local ok, e = pcall(function() return package.loadlib('/lib/x86_64-linux-gnu/liblua5.1.so.0', 'luaopen_io') end) return e"#, b"$79\r\nuser_script:1: Script attempted to access nonexistent global variable 'package'\r\n"),
    ];
    scripts_as_recorded(&mut h, cases);
}

/// CVE-2022-24735: a script could change globals, library functions or the string
/// metatable so that code it planted ran in later scripts of other users. `_G`, every
/// library table and the string metatable are read-only, as in redis-server 7.0.15 (same
/// replies); the scripts after the attempts see the originals.
#[test]
fn cve_2022_24735_scripts_cannot_plant_code_for_others() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (
            r#"redis.call = function() return 'hijacked' end"#,
            b"-ERR user_script:1: Attempt to modify a readonly table script: c08dc0e004c43b7fa2e02ddd045e882436b51c76, on @user_script:1.\r\n",
        ),
        (
            r#"string.format = function() return 'hijacked' end"#,
            b"-ERR user_script:1: Attempt to modify a readonly table script: 4d0c43a45a58380565a98fedf5287b5ed79ee212, on @user_script:1.\r\n",
        ),
        (
            r#"getmetatable('').__index = {}"#,
            b"-ERR user_script:1: Attempt to modify a readonly table script: 600bbd8170b33df355d1857b51be5ad60f77ab7b, on @user_script:1.\r\n",
        ),
        (
            r#"getmetatable('').__index.upper = function() return 'x' end"#,
            b"-ERR user_script:1: Attempt to modify a readonly table script: 6e57f79521e8bf1aeea395d6669371bf6a9d8519, on @user_script:1.\r\n",
        ),
        (r#"setmetatable(_G, nil)"#, b"-ERR Attempt to modify a readonly table script: 22fdd3b51da2d4bc6703d71d651cd782d8e5a35f, on @user_script:1.\r\n"),
        (r#"rawset(_G, 'x', 1)"#, b"-ERR Attempt to modify a readonly table script: e2c706419da183d6229a1230c3be09cc32cdeee0, on @user_script:1.\r\n"),
        (r#"_G.x = 1"#, b"-ERR user_script:1: Attempt to modify a readonly table script: e5cf4a26667af1721988fe8c9829d5cd2e26c62e, on @user_script:1.\r\n"),
        (r#"x = 1"#, b"-ERR user_script:1: Attempt to modify a readonly table script: 34bce5f775de97f557a34088509c8bfe1ea17e52, on @user_script:1.\r\n"),
        (
            r#"cjson.encode = nil"#,
            b"-ERR user_script:1: Attempt to modify a readonly table script: ca8772b89bfaafed79b4e978e804ff876bb3abc5, on @user_script:1.\r\n",
        ),
        (
            r#"bit.band = nil"#,
            b"-ERR user_script:1: Attempt to modify a readonly table script: f46a7ee79fce18f1afbcd50f2912644bcf6def30, on @user_script:1.\r\n",
        ),
        (
            r#"cmsgpack.pack = nil"#,
            b"-ERR user_script:1: Attempt to modify a readonly table script: 5042404704fad295e580fc47e5d8ea1e0f53184c, on @user_script:1.\r\n",
        ),
        (
            r#"struct.pack = nil"#,
            b"-ERR user_script:1: Attempt to modify a readonly table script: 9bdaa291383c17ba0baeb5a45005e3962367fc01, on @user_script:1.\r\n",
        ),
        (
            r#"math.random = nil"#,
            b"-ERR user_script:1: Attempt to modify a readonly table script: d9b92ca5dd59604e95d9aa086206364417903caf, on @user_script:1.\r\n",
        ),
        (
            r#"table.insert = nil"#,
            b"-ERR user_script:1: Attempt to modify a readonly table script: 5930172eaf13a2d39bccc689d15bde0632333dab, on @user_script:1.\r\n",
        ),
        (
            r#"coroutine.create = nil"#,
            b"-ERR user_script:1: Attempt to modify a readonly table script: ba9186a50bd031d765793962e5da2675987637e7, on @user_script:1.\r\n",
        ),
        (
            r#"redis.setresp = nil"#,
            b"-ERR user_script:1: Attempt to modify a readonly table script: 6d8ab27a4ffc929b63804216acd0ddedfa4226b4, on @user_script:1.\r\n",
        ),
        (
            r#"local mt = getmetatable(_G) mt.__index = function() return 1 end"#,
            b"-ERR user_script:1: Attempt to modify a readonly table script: a113a18d1de18d37865a1d6b7f3286b5df03c616, on @user_script:1.\r\n",
        ),
        (r#"rawset(redis, 'call', 1)"#, b"-ERR Attempt to modify a readonly table script: 5fe6a8883340d7b98ed047026ea0c11e1cd0fa4e, on @user_script:1.\r\n"),
        (r#"rawset(string, 'format', 1)"#, b"-ERR Attempt to modify a readonly table script: 4232fc52cdc6844788947537e71cba02b93b56e8, on @user_script:1.\r\n"),
        (r#"table.insert(string, 1)"#, b"-ERR Attempt to modify a readonly table script: 665a27be1dfc4d5eda6068dc8d831bb5fb63fa89, on @user_script:1.\r\n"),
        (r#"return redis.call('ping')"#, b"+PONG\r\n"),
        (r#"return string.format('%d', 7)"#, b"$1\r\n7\r\n"),
        (r#"return {type(redis.call), type(string.format), rawget(_G, 'x')}"#, b"*2\r\n$8\r\nfunction\r\n$8\r\nfunction\r\n"),
    ];
    scripts_as_recorded(&mut h, cases);
}

/// CVE-2022-24736: a crafted script body (one that closed the function Redis 6 wrapped it
/// in) crashed Redis while it was loaded. Redis 7 compiles a body as a chunk of its own;
/// so does Memoria: the same replies as redis-server 7.0.15.
#[test]
fn cve_2022_24736_crafted_script_bodies() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (r#"end"#, b"-ERR Error compiling script (new function): user_script:1: '<eof>' expected near 'end'\r\n"),
        (r#"return 1 end"#, b"-ERR Error compiling script (new function): user_script:1: '<eof>' expected near 'end'\r\n"),
        (r#"return 1 end function f() return 2"#, b"-ERR Error compiling script (new function): user_script:1: '<eof>' expected near 'end'\r\n"),
        (r#"end f_1 = nil function x()"#, b"-ERR Error compiling script (new function): user_script:1: '<eof>' expected near 'end'\r\n"),
        (r#""#, b"$-1\r\n"),
        (r#" "#, b"$-1\r\n"),
        (r#"return"#, b"$-1\r\n"),
        (r#"\0"#, b"-ERR Error compiling script (new function): user_script:1: unexpected symbol near '\\'\r\n"),
        (r#"return '\0'"#, b"$1\r\n\x00\r\n"),
        (r#"--"#, b"$-1\r\n"),
        (
            r#"#!lua
"#,
            b"$-1\r\n",
        ),
        (
            r#"#!lua name=x
return 1"#,
            b"-ERR Unknown lua shebang option: name=x\r\n",
        ),
        (r#"return function() end"#, b"$-1\r\n"),
        (r#"return coroutine.create(function() end)"#, b"$-1\r\n"),
    ];
    scripts_as_recorded(&mut h, cases);
}

/// CVE-2022-24834: cjson and cmsgpack computed buffer sizes in 32-bit integers (a heap
/// overflow on huge strings). Memoria's buffers grow in size_t with overflow checks, inside
/// the VM's memory cap: the same replies as redis-server 7.0.15 for escapes that grow the
/// output six-fold and for 32-bit headers; past the VM's 256 MiB a clean "not enough
/// memory" where Redis would allocate.
#[test]
fn cve_2022_24834_cjson_and_cmsgpack_buffers() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (r#"return #cjson.encode(string.rep('\1', 1000000))"#, b":6000002\r\n"),
        (r#"return cjson.encode(string.rep('\1', 1000000)):sub(1, 13)"#, b"$13\r\n\"\\u0001\\u0001\r\n"),
        (r#"return #cmsgpack.pack(string.rep('a', 1048576))"#, b":1048581\r\n"),
        (r#"return cmsgpack.pack(string.rep('a', 1048576)):sub(1, 5)"#, b"$5\r\n\xdb\x00\x10\x00\x00\r\n"),
        (
            r#"local s = string.rep('x', 40) local t = {} for i = 1, 70000 do t[i] = s end return cmsgpack.pack(t):sub(1, 7)"#,
            b"$7\r\n\xdd\x00\x01\x11p\xd9(\r\n",
        ),
        (r#"local t = {} for i = 1, 70000 do t['k' .. i] = i end return #cmsgpack.pack(t)"#, b":697447\r\n"),
        (r#"return #cjson.encode({string.rep('\\', 100000), string.rep('"', 100000)})"#, b":400007\r\n"),
        (
            r#"cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('[', 5000) .. string.rep(']', 5000)) return {tostring(ok), type(e)}"#,
            b"*2\r\n$4\r\ntrue\r\n$5\r\ntable\r\n",
        ),
        (r#"return cjson.encode_max_depth(100000)"#, b":100000\r\n"),
        (r#"local t = {} local c = t for i = 1, 5000 do c[1] = {} c = c[1] end cjson.encode_max_depth(100000) return #cjson.encode(t)"#, b":10002\r\n"),
    ];
    scripts_as_recorded(&mut h, cases);
    for script in ["return #cjson.encode(string.rep('\\1', 2^25))", "local s = string.rep('a', 2^27) return #cmsgpack.pack(s)"] {
        let got = String::from_utf8_lossy(&h.raw(&["EVAL", script, "0"])).into_owned();
        assert!(got.starts_with("-ERR Error running script ") && got.ends_with(", not enough memory\r\n"), "{script}: {got}");
    }
    still_serves(&mut h);
}

/// CVE-2024-31449: bit.tohex with a count of INT_MIN negated it (overflow) and pushed a
/// string of a huge length: a crash. redis-server 7.0.15 (Debian's, with the fix) reads
/// it as INT_MIN + 1: eight upper-case digits. So does Memoria (it crashed before).
#[test]
fn cve_2024_31449_bit_tohex_counts() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (r#"return bit.tohex(65535, -2147483648)"#, b"$8\r\n0000FFFF\r\n"),
        (r#"return bit.tohex(65535, -2147483647)"#, b"$8\r\n0000FFFF\r\n"),
        (r#"return bit.tohex(65535, 2147483647)"#, b"$8\r\n0000ffff\r\n"),
        (r#"return bit.tohex(65535, 2^31)"#, b"$8\r\n0000FFFF\r\n"),
        (r#"return bit.tohex(65535, -2^32)"#, b"$0\r\n\r\n"),
        (r#"return bit.tohex(-1, 0)"#, b"$0\r\n\r\n"),
        (r#"return bit.tohex(1, -9)"#, b"$8\r\n00000001\r\n"),
    ];
    scripts_as_recorded(&mut h, cases);
}

/// CVE-2024-46981: the garbage collector could free objects still in use when the VM was
/// reset (SCRIPT FLUSH) after a script manipulated it. Weak tables, coroutines and garbage
/// left by scripts and functions, then SCRIPT FLUSH (SYNC and ASYNC) and FUNCTION FLUSH:
/// the same replies as redis-server 7.0.15, and the new VMs work (their cmsgpack and
/// struct too).
#[test]
fn cve_2024_46981_gc_across_script_flush() {
    let mut h = H::new();
    let steps: &[(&[&str], &[u8])] = &[
        (
            &[
                "EVAL",
                "local t = setmetatable({}, {__mode = 'k'}) for i = 1, 1000 do t[{}] = i end local co = coroutine.create(function() coroutine.yield(1) end) coroutine.resume(co) local f = function() return t end collectgarbage() return 1",
                "0",
            ],
            b":1\r\n",
        ),
        (&["SCRIPT", "FLUSH"], b"+OK\r\n"),
        (&["EVAL", "local n = 0 for i = 1, 100 do local t = {{}} n = n + #cmsgpack.pack(t) end collectgarbage() return n", "0"], b":200\r\n"),
        (
            &[
                "FUNCTION",
                "LOAD",
                "#!lua name=gc\nlocal keep = {}\nredis.register_function('gc1', function() local t = setmetatable({}, {__mode = 'v'}) for i = 1, 100 do t[i] = {} end collectgarbage() keep[#keep + 1] = 1 return #keep end)",
            ],
            b"$2\r\ngc\r\n",
        ),
        (&["FCALL", "gc1", "0"], b":1\r\n"),
        (&["FCALL", "gc1", "0"], b":2\r\n"),
        (&["FUNCTION", "FLUSH"], b"+OK\r\n"),
        (&["FCALL", "gc1", "0"], b"-ERR Function not found\r\n"),
        (&["SCRIPT", "FLUSH", "ASYNC"], b"+OK\r\n"),
        (
            &["EVAL", "collectgarbage() return {cmsgpack.unpack(cmsgpack.pack({1, {2}}))[2][1], struct.unpack('b', struct.pack('b', 3))}", "0"],
            b"*3\r\n:2\r\n:3\r\n:2\r\n",
        ),
        (
            &["FUNCTION", "LOAD", "#!lua name=gc\nredis.register_function('gc2', function() collectgarbage('step') collectgarbage('collect') return 1 end)"],
            b"$2\r\ngc\r\n",
        ),
        (&["FCALL", "gc2", "0"], b":1\r\n"),
        (&["FUNCTION", "DELETE", "gc"], b"+OK\r\n"),
    ];
    for (args, want) in steps {
        let got = h.raw(args);
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want), "{args:?}");
    }
    still_serves(&mut h);
}

/// CVE-2025-46817: unpack computed its count as `e - i + 1` in int; with the compiler free
/// to drop the overflow test, a range such as (0, INT_MAX) pushed past the stack. Memoria
/// crashed on it; its count is now unsigned, as in the fix redis-server 7.0.15 (Debian's)
/// carries: "too many results to unpack", same replies.
#[test]
fn cve_2025_46817_unpack_ranges() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (r#"return {pcall(unpack, {}, -2147483648, 2147483647)}"#, b"*2\r\n$-1\r\n$26\r\ntoo many results to unpack\r\n"),
        (r#"return {pcall(unpack, {}, 0, 2147483647)}"#, b"*2\r\n$-1\r\n$26\r\ntoo many results to unpack\r\n"),
        (r#"return {pcall(unpack, {}, 1, 2147483647)}"#, b"*2\r\n$-1\r\n$26\r\ntoo many results to unpack\r\n"),
        (r#"return {pcall(unpack, {}, -2, 2147483645)}"#, b"*2\r\n$-1\r\n$26\r\ntoo many results to unpack\r\n"),
        (r#"return select('#', unpack({}, 2147483640, 2147483647))"#, b":8\r\n"),
        (r#"return select('#', unpack({}, -2147483648, -2147483640))"#, b":9\r\n"),
        (r#"return {pcall(unpack, {}, 2^40, 2^40 + 3)}"#, b"*1\r\n:1\r\n"),
        (r#"return {pcall(unpack, {1, 2, 3}, -1e100, 1e100)}"#, b"*1\r\n:1\r\n"),
        (r#"local t = {} t[2147483647] = 'top' return {unpack(t, 2147483646, 2147483647)}"#, b"*0\r\n"),
        (r#"return {pcall(unpack, {1, 2, 3}, 2, 1)}"#, b"*1\r\n:1\r\n"),
    ];
    scripts_as_recorded(&mut h, cases);
}

/// CVE-2025-46818: the metatables of basic types were writable, so a script could make
/// code run in another user's scripts. The string metatable (the only one a basic type
/// has) and `_G`'s are read-only: the same replies as redis-server 7.0.15.
#[test]
fn cve_2025_46818_metatables_of_basic_types() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (r#"return getmetatable(1)"#, b"$-1\r\n"),
        (r#"return getmetatable(nil)"#, b"$-1\r\n"),
        (r#"return getmetatable(true)"#, b"$-1\r\n"),
        (r#"return type(getmetatable(''))"#, b"$5\r\ntable\r\n"),
        (r#"return getmetatable(function() end)"#, b"$-1\r\n"),
        (r#"return getmetatable(coroutine.create(function() end))"#, b"$-1\r\n"),
        (r#"return type(getmetatable(cjson.null))"#, b"$3\r\nnil\r\n"),
        (r#"setmetatable('', {})"#, b"-ERR user_script:1: bad argument #1 to 'setmetatable' (table expected, got string) script: 91173895e527b5f4cefaa43274b7624119755c62, on @user_script:1.\r\n"),
        (r#"setmetatable(1, {})"#, b"-ERR user_script:1: bad argument #1 to 'setmetatable' (table expected, got number) script: ffabce3cc23f006ee7f408dacb056fa39cdb178f, on @user_script:1.\r\n"),
        (r#"getmetatable('').__add = function() return 1 end"#, b"-ERR user_script:1: Attempt to modify a readonly table script: 3db6c99373d2b623f1026aace1ca37028b315b16, on @user_script:1.\r\n"),
        (r#"getmetatable('').__index = function() return 'hijacked' end"#, b"-ERR user_script:1: Attempt to modify a readonly table script: b1af4cf8ee931c949896d3fc04fbfdf264487c4b, on @user_script:1.\r\n"),
        (r#"local mt = getmetatable('') rawset(mt, '__index', {})"#, b"-ERR Attempt to modify a readonly table script: b5fa9b6f1c9a18d34c7c4f9276c61246f54aaf77, on @user_script:1.\r\n"),
        (r#"local mt = getmetatable('') setmetatable(mt, {})"#, b"-ERR Attempt to modify a readonly table script: 368cb6942f949c7d203175de9ee24c849cf9f095, on @user_script:1.\r\n"),
        (r#"getmetatable(_G).__index = nil"#, b"-ERR user_script:1: Attempt to modify a readonly table script: 1ec4f48ee3d02bfee5da8ba9aeab8a503d3032f1, on @user_script:1.\r\n"),
        (r#"return rawequal(getmetatable('').__index, string)"#, b":1\r\n"),
        (r#"return ('x'):upper()"#, b"$1\r\nX\r\n"),
    ];
    scripts_as_recorded(&mut h, cases);
}

/// CVE-2025-46819: the lexer read out of bounds on crafted long-string delimiters. Long
/// strings, comments, delimiters of 5000 `=` and unfinished strings: the same compile
/// errors as redis-server 7.0.15 (`[[` inside a long string is text, as there).
#[test]
fn cve_2025_46819_lexer_long_strings() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (r#"return [="#, b"-ERR Error compiling script (new function): user_script:1: invalid long string delimiter near '[='\r\n"),
        (r#"return [==[x"#, b"-ERR Error compiling script (new function): user_script:1: unfinished long string near '<eof>'\r\n"),
        (r#"return [=["#, b"-ERR Error compiling script (new function): user_script:1: unfinished long string near '<eof>'\r\n"),
        (r#"return [=="#, b"-ERR Error compiling script (new function): user_script:1: invalid long string delimiter near '[=='\r\n"),
        (r#"return ]=]"#, b"-ERR Error compiling script (new function): user_script:1: unexpected symbol near ']'\r\n"),
        (r#"return '\\"#, b"-ERR Error compiling script (new function): user_script:1: unfinished string near '<eof>'\r\n"),
        (r#"return "abc"#, b"-ERR Error compiling script (new function): user_script:1: unfinished string near '<eof>'\r\n"),
        (r#"return [[abc"#, b"-ERR Error compiling script (new function): user_script:1: unfinished long string near '<eof>'\r\n"),
        (r#"--[==[ comment"#, b"-ERR Error compiling script (new function): user_script:1: unfinished long comment near '<eof>'\r\n"),
        (r#"return 1 --[="#, b":1\r\n"),
        (r#"return [=x"#, b"-ERR Error compiling script (new function): user_script:1: invalid long string delimiter near '[='\r\n"),
        (r#"return 'a\\"#, b"-ERR Error compiling script (new function): user_script:1: unfinished string near '<eof>'\r\n"),
        (r#"return '\\9999'"#, b"$5\r\n\\9999\r\n"),
        (r#"return '\\300'"#, b"$4\r\n\\300\r\n"),
        (r#"return 0x"#, b"-ERR Error compiling script (new function): user_script:1: malformed number near '0x'\r\n"),
        (r#"return 1e"#, b"-ERR Error compiling script (new function): user_script:1: malformed number near '1e'\r\n"),
        (r#"return 1e+"#, b"-ERR Error compiling script (new function): user_script:1: malformed number near '1e+'\r\n"),
        (r#"return .."#, b"-ERR Error compiling script (new function): user_script:1: unexpected symbol near '..'\r\n"),
        (r#"return ..."#, b"$-1\r\n"),
        (r#"return [[a[[b]]"#, b"$4\r\na[[b\r\n"),
        (r#"return [[a[[b]]c]]"#, b"-ERR Error compiling script (new function): user_script:1: '<eof>' expected near 'c'\r\n"),
        (
            r#"--[[ a [[ b ]]
return 1"#,
            b":1\r\n",
        ),
        (
            r#"return '\\
'"#,
            b"-ERR Error compiling script (new function): user_script:1: unfinished string near ''\\'\r\n",
        ),
    ];
    scripts_as_recorded(&mut h, cases);
    let long: [(String, &[u8]); 3] = [
        (format!("return [{}[x", "=".repeat(5000)), b"-ERR Error compiling script (new function): user_script:1: unfinished long string near '<eof>'\r\n"),
        (format!("return [{}", "=".repeat(5000)), b"-ERR Error compiling script (new function): user_script:1: invalid long string delimiter near '[========================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================================'\r\n"),
        (format!("return [[{}", "a".repeat(100000)), b"-ERR Error compiling script (new function): user_script:1: unfinished long string near '<eof>'\r\n"),
    ];
    for (script, want) in &long {
        assert_eq!(&h.raw(&[&b"EVAL"[..], script.as_bytes(), b"0"])[..], *want, "{}", &script[..20]);
    }
    still_serves(&mut h);
}

/// CVE-2025-49844: the parser did not anchor its chunk name, so a collection during
/// parsing (memory pressure, collectgarbage, loadstring of a big source) could free it.
/// Same replies as redis-server 7.0.15 for loadstring under collections and big sources.
#[test]
fn cve_2025_49844_parsing_under_collections() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (r#"local big = {} for i = 1, 50 do big[i] = string.rep(tostring(i), 10000) end big = nil local src = 'local t = {' .. string.rep('"s", ', 20000) .. '} return #t' collectgarbage('collect') local f = loadstring(src) collectgarbage('collect') return f()"#, b":20000\r\n"),
        (r#"local parts = {} for i = 1, 20000 do parts[i] = 'local v' .. (i % 150) .. ' = "k' .. i .. '"' end local src = table.concat(parts, ' ') .. ' return 1' for i = 1, 5 do collectgarbage('collect') assert(loadstring(src)) end return 'ok'"#, b"-ERR user_script:1: [string \"local v1 = \"k1\" local v2 = \"k2\" local v3 = \"k3\" local v4 = \"k4\"...\"]:1: main function has more than 200 local variables script: a734bb688e76a00b472afee6eabc8c9b5cf4cee9, on @user_script:1.\r\n"),
        (r#"local n = 0 for i = 1, 200 do local f = loadstring('return ' .. string.rep('"' .. i .. '" .. ', 50) .. '""') collectgarbage('step', 1000) n = n + #f() end return n"#, b":24600\r\n"),
        (r#"return select('#', loadstring(string.rep('x', 100) .. '('))"#, b":2\r\n"),
        (r#"return {loadstring(string.rep('local a = 1 ', 300))}"#, b"*0\r\n"),
        (r#"return {loadstring('return ' .. string.rep('(', 300) .. '1' .. string.rep(')', 300))}"#, b"*0\r\n"),
        (r#"return {loadstring(string.rep('do ', 300) .. string.rep('end ', 300))}"#, b"*0\r\n"),
        (r#"return {pcall(loadstring, 'x', {})}"#, b"*2\r\n$-1\r\n$51\r\nbad argument #2 to '?' (string expected, got table)\r\n"),
    ];
    scripts_as_recorded(&mut h, cases);
}

/// CVE-2025-67733, the Lua half: error_reply, {err=…}, {ok=…} and error() with CR/LF.
/// Same bytes as redis-server 7.0.15: CR and LF inside become spaces, those at the end of
/// an error are trimmed, so a reply never ends early.
#[test]
fn cve_2025_67733_script_replies_never_carry_crlf() {
    let mut h = H::new();
    let cases: &[(&str, &[u8])] = &[
        (r#"return redis.error_reply('x\r\n+OK')"#, b"-ERR x  +OK\r\n"),
        (r#"return {err='x\r\n:1'}"#, b"-x  :1\r\n"),
        (r#"return redis.status_reply('a\r\nb')"#, b"+a  b\r\n"),
        (r#"return {ok='a\r\nb'}"#, b"+a  b\r\n"),
        (r#"error({err='a\nb'})"#, b"-a b script: fd4b8e0fc48d2651667f6af9dcdd166b7b0255ed, on @user_script:1.\r\n"),
        (r#"error('a\r\nb')"#, b"-ERR user_script:1: a  b script: 9651526a9f202dabbb853951a21a9aa00e6d7e2e, on @user_script:1.\r\n"),
        (r#"return redis.error_reply('-\r\n')"#, b"-ERR \r\n"),
        (r#"return redis.pcall('nosuch\r\nPING')"#, b"-ERR Unknown Redis command called from script\r\n"),
        (
            r#"return redis.call('nosuch\r\nPING')"#,
            b"-ERR Unknown Redis command called from script script: 8eae1dc92b03bc4e490f5019129d4e51506c4b7d, on @user_script:1.\r\n",
        ),
        (r#"return {err='-WRONG\r\n+OK\r\n'}"#, b"--WRONG  +OK\r\n"),
        (r#"error('\r\n')"#, b"-ERR user_script:1:    script: 5129ba28a278fe1269ed9f78ff880db56d845431, on @user_script:1.\r\n"),
        (r#"return {err='\r\n'}"#, b"-\r\n"),
        (r#"return {err='x\n\n\r'}"#, b"-x\r\n"),
        (r#"return {err='\nx'}"#, b"- x\r\n"),
        (r#"return {err=''}"#, b"-\r\n"),
        (r#"return {1, {err='e\r\n'}, {ok='o\r\n'}}"#, b"*3\r\n:1\r\n-e\r\n+o  \r\n"),
        (r#"return {ok='\r\n'}"#, b"+  \r\n"),
        (r#"return redis.status_reply('x\n')"#, b"+x \r\n"),
        (r#"return redis.error_reply('x\n')"#, b"-ERR x\r\n"),
        (r#"return redis.error_reply('-CODE x\r\n')"#, b"-CODE x\r\n"),
        (r#"error({err='x\r\n'})"#, b"-x   script: 39a4b58618baaa4f30428ac2892ba7c45f75bab8, on @user_script:1.\r\n"),
    ];
    scripts_as_recorded(&mut h, cases);
}

// ---------------------------------------------------------------------------------------
// CVE-2026-25243, CVE-2026-66373: crafted serialized values (RESTORE here: MIGRATION IMPORT)
// ---------------------------------------------------------------------------------------

/// The slot map of a target shard importing slots 3300 (`{b}`) and 5061 (`bar`).
const IMPORTING: &str = "primary\noffset:0\ncluster_enabled:1\ncluster_myself:127.0.0.1:7001\ncluster_myshard:1\ncluster_slots:0 0-8191\ncluster_slots:1 8192-16383\ncluster_node:127.0.0.1:7000 master 0 0\ncluster_node:127.0.0.1:7001 master 0 1\ncluster_importing:3300,5061 127.0.0.1:7000\n";
const TWO: &str = "primary\noffset:0\ncluster_enabled:1\ncluster_myself:127.0.0.1:7000\ncluster_myshard:0\ncluster_slots:0 0-8191\ncluster_slots:1 8192-16383\ncluster_node:127.0.0.1:7000 master 0 0\ncluster_node:127.0.0.1:7001 master 0 1\n";
const MIGRATING: &str = "primary\noffset:0\ncluster_enabled:1\ncluster_myself:127.0.0.1:7000\ncluster_myshard:0\ncluster_slots:0 0-8191\ncluster_slots:1 8192-16383\ncluster_node:127.0.0.1:7000 master 0 0\ncluster_node:127.0.0.1:7001 master 0 1\ncluster_migrating:3300,5061 127.0.0.1:7001\n";

fn role(h: &mut H, text: &str) {
    use memoria_core::protocol::batch::{self, BatchWriter};
    let mut b = BatchWriter::new();
    b.record(batch::REC_ROLE, 0, text.as_bytes());
    h.e.execute(&b.buf, h.now_ms * 1000, 1);
}

/// The records of a MIGRATION EXPORT reply `[cursor, [record…]]`.
fn export_records(r: &[u8]) -> Vec<Vec<u8>> {
    fn line(r: &[u8], pos: &mut usize) -> String {
        let end = r[*pos..].windows(2).position(|w| w == b"\r\n").unwrap() + *pos;
        let s = String::from_utf8_lossy(&r[*pos..end]).into_owned();
        *pos = end + 2;
        s
    }
    let mut pos = 0;
    assert_eq!(line(r, &mut pos), "*2");
    let n: usize = line(r, &mut pos)[1..].parse().unwrap();
    pos += n + 2;
    let count: usize = line(r, &mut pos)[1..].parse().unwrap();
    (0..count)
        .map(|_| {
            let n: usize = line(r, &mut pos)[1..].parse().unwrap();
            let rec = r[pos..pos + n].to_vec();
            pos += n + 2;
            rec
        })
        .collect()
}

/// Reads `key` (of an importing slot) back with the commands of its type, whatever it
/// holds, and writes to it; `K` in the scripts stands for the key.
fn read_back(h: &mut H, key: &[u8]) {
    let run_k = |h: &mut H, script: &[&str]| -> String {
        let args: Vec<&[u8]> = script.iter().map(|a| if *a == "K" { key } else { a.as_bytes() }).collect();
        h.c("ASKING");
        String::from_utf8_lossy(&h.raw(&args)).into_owned()
    };
    let ty = run_k(h, &["TYPE", "K"]);
    let scripts: &[&[&str]] = match ty.as_str() {
        "+string\r\n" => &[
            &["GET", "K"],
            &["STRLEN", "K"],
            &["PFCOUNT", "K"],
            &["PFADD", "K", "x"],
            &["BITCOUNT", "K"],
            &["GETRANGE", "K", "0", "-1"],
            &["APPEND", "K", "x"],
        ],
        "+list\r\n" => &[
            &["LRANGE", "K", "0", "-1"],
            &["LLEN", "K"],
            &["LINDEX", "K", "-1"],
            &["LPOS", "K", "x"],
            &["LMOVE", "K", "K", "LEFT", "RIGHT"],
            &["RPUSH", "K", "x"],
        ],
        "+hash\r\n" => &[
            &["HGETALL", "K"],
            &["HLEN", "K"],
            &["HRANDFIELD", "K", "-5", "WITHVALUES"],
            &["HSCAN", "K", "0"],
            &["HSET", "K", "new", "v"],
            &["HDEL", "K", "f"],
        ],
        "+set\r\n" => &[&["SMEMBERS", "K"], &["SCARD", "K"], &["SRANDMEMBER", "K", "-5"], &["SISMEMBER", "K", "1"], &["SADD", "K", "new"], &["SPOP", "K"]],
        "+zset\r\n" => &[
            &["ZRANGE", "K", "0", "-1", "WITHSCORES"],
            &["ZCARD", "K"],
            &["ZRANDMEMBER", "K", "-5", "WITHSCORES"],
            &["ZRANGEBYLEX", "K", "-", "+"],
            &["ZADD", "K", "1", "new"],
            &["ZPOPMIN", "K"],
        ],
        "+stream\r\n" => &[
            &["XRANGE", "K", "-", "+"],
            &["XLEN", "K"],
            &["XINFO", "STREAM", "K", "FULL"],
            &["XINFO", "GROUPS", "K"],
            &["XPENDING", "K", "grp"],
            &["XADD", "K", "*", "f", "v"],
            &["XAUTOCLAIM", "K", "grp", "c2", "0", "0"],
        ],
        "+none\r\n" => &[],
        other => panic!("TYPE answered {other:?}"),
    };
    for script in scripts {
        run_k(h, script);
    }
    run_k(h, &["OBJECT", "ENCODING", "K"]);
}

/// The keys this node holds in the two importing slots.
fn imported_keys(h: &mut H) -> Vec<String> {
    let mut keys = parse_bulks(&h.c("CLUSTER GETKEYSINSLOT 3300 1000"));
    keys.extend(parse_bulks(&h.c("CLUSTER GETKEYSINSLOT 5061 1000")));
    keys
}

/// CVE-2026-25243, CVE-2026-66373: RESTORE accepted crafted serialized values (invalid
/// memory access, a double free). Memoria's slot migration takes serialized values too:
/// MIGRATION IMPORT (cluster mode, @admin) reads key records. Every truncation and many
/// byte changes of real records of each type are either refused ("bad key record") or
/// stored as a value that every command of its type can read and write; the engine never
/// panics. RESTORE itself: `cve_2026_25243_crafted_restore_payloads`.
#[test]
fn cve_2026_25243_crafted_migration_records() {
    let mut src = H::new();
    role(&mut src, TWO);
    // Keys of slots 3300 ({b}) and 5061 (bar): one of each type and encoding.
    let setup = [
        "SET bar 1 PX 100000",
        "SET {b}str hello",
        "SET {b}int 12345",
        "RPUSH {b}l a b c 1 2 3",
        "HSET {b}h f v g w",
        "SADD {b}si 1 2 3",
        "SADD {b}sh a b c",
        "ZADD {b}z 1 a 2 b 3 c",
        "XADD {b}x 1-1 f v g w",
        "XGROUP CREATE {b}x grp 0",
        "XREADGROUP GROUP grp c1 STREAMS {b}x >",
        "PFADD {b}hll a b c",
    ];
    for cmd in setup {
        let r = src.c(cmd);
        assert!(!r.starts_with('-'), "{cmd}: {r}");
    }
    let mut big_h = vec!["HSET".to_string(), "{b}bh".into()];
    big_h.extend((0..200).flat_map(|i| [format!("f{i}"), format!("v{i}")]));
    src.raw(&big_h.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    let mut big_z = vec!["ZADD".to_string(), "{b}bz".into()];
    big_z.extend((0..200).flat_map(|i| [i.to_string(), format!("m{i}")]));
    src.raw(&big_z.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    role(&mut src, MIGRATING);
    let records = export_records(&src.raw(&["MIGRATION", "EXPORT", "0", "100", "3300,5061"]));
    // Twelve keys (EXPORT, like SCAN, may return a key twice).
    assert!(records.len() >= 12, "{}", records.len());

    let mut dst = H::new();
    role(&mut dst, IMPORTING);
    let mut args: Vec<&[u8]> = vec![b"MIGRATION", b"IMPORT"];
    args.extend(records.iter().map(|r| r.as_slice()));
    ckr(&mut dst, &args, int(records.len() as i64));

    let mut mutants: Vec<Vec<u8>> = Vec::new();
    for rec in &records {
        for len in 0..rec.len() {
            mutants.push(rec[..len].to_vec());
        }
        let mut longer = rec.clone();
        longer.push(0);
        mutants.push(longer);
        for pos in 0..rec.len().min(160) {
            for b in [0x00u8, 0x01, 0x7f, 0x80, 0xfe, 0xff, rec[pos] ^ 0x01, rec[pos].wrapping_add(1)] {
                if b != rec[pos] {
                    let mut m = rec.clone();
                    m[pos] = b;
                    mutants.push(m);
                }
            }
        }
    }
    let originals: BTreeSet<String> = imported_keys(&mut dst).into_iter().collect();
    assert_eq!(originals.len(), 12, "{originals:?}");
    let (mut refused, mut stored) = (0, 0);
    for m in &mutants {
        let r = String::from_utf8_lossy(&dst.raw(&[b"MIGRATION".as_slice(), b"IMPORT", m])).into_owned();
        if r == ":1\r\n" {
            stored += 1;
            // The key it wrote: an original one whose name is in the record, or a new one.
            let named: Vec<&String> = originals.iter().filter(|k| m.windows(k.len()).any(|w| w == k.as_bytes())).collect();
            let new: Vec<String> = imported_keys(&mut dst).into_iter().filter(|k| !originals.contains(k)).collect();
            for k in named.iter().map(|k| k.as_str()).chain(new.iter().map(|k| k.as_str())) {
                read_back(&mut dst, k.as_bytes());
            }
            for k in &new {
                dst.c("ASKING");
                dst.raw(&["DEL", k.as_str()]);
            }
        } else {
            assert!(r.starts_with("-ERR bad key record: ") || r.starts_with("-ERR slot "), "{r:?} for {m:?}");
            refused += 1;
        }
    }
    assert!(refused > 0 && stored > 0, "refused {refused}, stored {stored}");
    // The node is still whole: its keys answer, the slot still imports.
    dst.c("ASKING");
    ck(&mut dst, "PING", "+PONG\r\n");
    ckr(&mut dst, &args, int(records.len() as i64));
    dst.c("ASKING");
    ck(&mut dst, "HGET {b}h g", bulk("w"));
}

/// CVE-2026-25243, CVE-2026-66373: RESTORE of crafted payloads. Payloads of every type
/// and encoding, each truncated at every length and with many byte changes, the checksum
/// made right so the value itself is read: refused ("Bad data format") or stored as a
/// value that every command of its type can read and write; the engine never panics.
/// (core/tests/cmd_dump_restore.rs and dump_restore_live.rs mutate more, the latter
/// against redis-server's own deep checks.)
#[test]
fn cve_2026_25243_crafted_restore_payloads() {
    let mut h = H::new();
    let setup = [
        "SET str hello",
        "SET int 12345",
        "RPUSH l a b c 1 2 3",
        "HSET h f v g w",
        "SADD si 1 2 3",
        "SADD sh a b c",
        "ZADD z 1 a 2 b 3 c",
        "XADD x 1-1 f v g w",
        "XADD x 1-2 f v2 g w2",
        "XGROUP CREATE x grp 0",
        "XREADGROUP GROUP grp c1 COUNT 1 STREAMS x >",
        "XGROUP CREATECONSUMER x grp c2",
        "PFADD hll a b c",
    ];
    for cmd in setup {
        let r = h.c(cmd);
        assert!(!r.starts_with('-'), "{cmd}: {r}");
    }
    let mut big_h = vec!["HSET".to_string(), "bh".into()];
    big_h.extend((0..200).flat_map(|i| [format!("f{i}"), format!("v{i}")]));
    h.raw(&big_h.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    let mut big_z = vec!["ZADD".to_string(), "bz".into()];
    big_z.extend((0..200).flat_map(|i| [i.to_string(), format!("m{i}")]));
    h.raw(&big_z.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    let mut mutants: Vec<Vec<u8>> = Vec::new();
    for key in ["str", "int", "l", "h", "si", "sh", "z", "x", "hll", "bh", "bz"] {
        let reply = h.raw(&["DUMP", key]);
        let at = reply.iter().position(|&c| c == b'\n').unwrap() + 1;
        let body = &reply[at..reply.len() - 12];
        let seal = |b: Vec<u8>| {
            let mut b = b;
            memoria_core::rdb::finish_payload(&mut b);
            b
        };
        for len in 0..body.len() {
            mutants.push(seal(body[..len].to_vec()));
        }
        for pos in 0..body.len().min(160) {
            for b in [0x00u8, 0x01, 0x7f, 0x80, 0xc0, 0xfe, 0xff, body[pos] ^ 0x01, body[pos].wrapping_add(1)] {
                if b != body[pos] {
                    let mut m = body.to_vec();
                    m[pos] = b;
                    mutants.push(seal(m));
                }
            }
        }
    }
    let (mut refused, mut stored) = (0, 0);
    for m in &mutants {
        let r = String::from_utf8_lossy(&h.raw(&[b"RESTORE".as_slice(), b"mutant", b"0", m, b"REPLACE"])).into_owned();
        if r == "+OK\r\n" {
            stored += 1;
            read_back(&mut h, b"mutant");
            h.c("DEL mutant");
        } else {
            assert_eq!(r, "-ERR Bad data format\r\n", "for {m:?}");
            refused += 1;
        }
    }
    assert!(refused > 1000 && stored > 1000, "refused {refused}, stored {stored}");
    ck(&mut h, "HGET h g", bulk("w"));
}

/// CVE-2026-63639 (Valkey): a stream whose pending entry two consumers own (a NACK shared
/// by two consumers) led to code execution. RESTORE refuses such a payload.
#[test]
fn cve_2026_63639_restore_stream_nack_shared_by_two_consumers() {
    let mut h = H::new();
    h.c("XADD x 1-1 f v");
    h.c("XGROUP CREATE x grp 0");
    h.c("XREADGROUP GROUP grp c1 STREAMS x >");
    h.c("XGROUP CREATECONSUMER x grp c2");
    let reply = h.raw(&["DUMP", "x"]);
    let at = reply.iter().position(|&c| c == b'\n').unwrap() + 1;
    let body = reply[at..reply.len() - 12].to_vec();
    // The consumers close the payload: c1 (seen time, one id), then c2 (seen time, none).
    let c2 = body.len() - 12;
    assert_eq!(&body[c2..c2 + 3], b"\x02c2");
    assert_eq!(body[body.len() - 1], 0, "c2 owns nothing");
    let id: Vec<u8> = [1u64.to_be_bytes(), 1u64.to_be_bytes()].concat();
    let mut shared = body[..body.len() - 1].to_vec();
    shared.push(1);
    shared.extend_from_slice(&id);
    memoria_core::rdb::finish_payload(&mut shared);
    ckr(&mut h, &[b"RESTORE", b"y", b"0", &shared], err("ERR Bad data format"));
    // The same payload with c1's claim moved to c2 is a healthy stream.
    let c1_id = body.len() - 12 - 16;
    assert_eq!(&body[c1_id..c1_id + 16], &id[..]);
    let mut moved = body[..c1_id - 1].to_vec();
    moved.push(0);
    moved.extend_from_slice(&body[c1_id + 16..body.len() - 1]);
    moved.push(1);
    moved.extend_from_slice(&id);
    memoria_core::rdb::finish_payload(&mut moved);
    ckr(&mut h, &[b"RESTORE", b"y", b"0", &moved], OK);
    ck(&mut h, "XPENDING y grp", "*4\r\n:1\r\n$3\r\n1-1\r\n$3\r\n1-1\r\n*1\r\n*2\r\n$2\r\nc2\r\n$1\r\n1\r\n");
}

// CVE-2022-36021 and CVE-2024-31228 (glob patterns that took exponential time in KEYS,
// SCAN MATCH, ACL patterns…) are covered by host/tests/no_stall.rs and by the glob unit
// tests in core/src/util/ (glob.rs); they are not repeated here.
