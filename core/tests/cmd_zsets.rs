//! Sorted-set commands: exact replies (scores as Redis 7.0's %.17g), Redis 7.0 errors,
//! listpack ↔ skiplist conversion points, ranges by rank/score/lex, pops and the effects
//! each write replicates, set operations, ZRANDMEMBER/ZSCAN shapes, snapshots.

mod cmdutil;
mod common;

use std::collections::BTreeSet;

use cmdutil::*;
use common::{H, NIL, OK, bulk, err, int};
use memoria_core::Engine;

const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

#[test]
fn basics() {
    let mut h = H::new();
    ck(&mut h, "ZADD z 1 a 2 b 3 c", int(3));
    ck(&mut h, "ZADD z 1 a 5 d", int(1));
    ck(&mut h, "ZCARD z", int(4));
    ck(&mut h, "ZCARD nokey", int(0));
    ck(&mut h, "ZSCORE z b", bulk("2"));
    ck(&mut h, "ZSCORE z zz", NIL);
    ck(&mut h, "ZSCORE nokey a", NIL);
    ck(&mut h, "ZMSCORE z a zz d", format!("*3\r\n{}{}{}", bulk("1"), NIL, bulk("5")));
    ck(&mut h, "ZMSCORE nokey a", format!("*1\r\n{NIL}"));
    ck(&mut h, "ZRANK z c", int(2));
    ck(&mut h, "ZREVRANK z c", int(1));
    ck(&mut h, "ZRANK z zz", NIL);
    ck(&mut h, "ZRANK nokey a", NIL);
    ck(&mut h, "ZRANGE z 0 -1", bulks(&["a", "b", "c", "d"]));
    ck(&mut h, "ZRANGE z 0 -1 WITHSCORES", bulks(&["a", "1", "b", "2", "c", "3", "d", "5"]));
    ck(&mut h, "ZREVRANGE z 0 1", bulks(&["d", "c"]));
    ck(&mut h, "ZRANGE z -2 100", bulks(&["c", "d"]));
    ck(&mut h, "ZRANGE z 3 1", "*0\r\n");
    ck(&mut h, "ZRANGE nokey 0 -1", "*0\r\n");
    ck(&mut h, "ZREM z a zz", int(1));
    ck(&mut h, "ZREM nokey a", int(0));
    ck(&mut h, "TYPE z", "+zset\r\n");
    ck(&mut h, "OBJECT ENCODING z", bulk("listpack"));
    ck(&mut h, "ZREM z b c d", int(3));
    ck(&mut h, "EXISTS z", int(0));
    // Ties order by member bytes.
    ck(&mut h, "ZADD t 1 b 1 a 1 c 0 z", int(4));
    ck(&mut h, "ZRANGE t 0 -1", bulks(&["z", "a", "b", "c"]));
}

#[test]
fn score_formatting() {
    let mut h = H::new();
    ck(&mut h, "ZADD z 1.1 a 1e20 b 1e-5 c 123456789012345678 d inf e -inf f 0.1 g 1e16 h 0x10 i", int(9));
    ck(
        &mut h,
        "ZRANGE z 0 -1 WITHSCORES",
        bulks(&[
            "f",
            "-inf",
            "c",
            "1.0000000000000001e-05",
            "g",
            "0.10000000000000001",
            "a",
            "1.1000000000000001",
            "i",
            "16",
            "h",
            "10000000000000000",
            "d",
            "1.2345678901234568e+17",
            "b",
            "1e+20",
            "e",
            "inf",
        ]),
    );
    // -0: a listpack stores it as the integer 0 (Redis's double2ll), a skiplist keeps it.
    ck(&mut h, "ZADD lp -0 a", int(1));
    ck(&mut h, "ZSCORE lp a", bulk("0"));
    ck(&mut h, "CONFIG SET zset-max-listpack-entries 0", OK);
    ck(&mut h, "ZADD sl -0 a", int(1));
    ck(&mut h, "ZSCORE sl a", bulk("-0"));
    ck(&mut h, "OBJECT ENCODING sl", bulk("skiplist"));
    // RESP3 doubles.
    h.c("HELLO 3");
    ck(&mut h, "ZSCORE z a", ",1.1000000000000001\r\n");
    ck(&mut h, "ZSCORE z e", ",inf\r\n");
    ck(&mut h, "ZSCORE z nope", "_\r\n");
    ck(&mut h, "ZRANGE z 0 1 WITHSCORES", "*2\r\n*2\r\n$1\r\nf\r\n,-inf\r\n*2\r\n$1\r\nc\r\n,1.0000000000000001e-05\r\n");
    ck(&mut h, "ZPOPMIN z", "*2\r\n$1\r\nf\r\n,-inf\r\n");
    ck(&mut h, "ZPOPMIN z 1", "*1\r\n*2\r\n$1\r\nc\r\n,1.0000000000000001e-05\r\n");
}

#[test]
fn zadd_options_and_errors() {
    let mut h = H::new();
    ck(&mut h, "ZADD z 1 a", int(1));
    ck(&mut h, "ZADD z NX 5 a 2 b", int(1));
    ck(&mut h, "ZSCORE z a", bulk("1"));
    ck(&mut h, "ZADD z XX 5 a 2 c", int(0));
    ck(&mut h, "ZSCORE z a", bulk("5"));
    ck(&mut h, "ZSCORE z c", NIL);
    ck(&mut h, "ZADD z CH 6 a 2 b 3 c", int(2));
    ck(&mut h, "ZADD z GT 1 a", int(0));
    ck(&mut h, "ZSCORE z a", bulk("6"));
    ck(&mut h, "ZADD z GT CH 7 a 1 new", int(2));
    ck(&mut h, "ZADD z LT CH 8 a", int(0));
    ck(&mut h, "ZADD z INCR 1.5 a", bulk("8.5"));
    ck(&mut h, "ZADD z NX INCR 1 a", NIL);
    ck(&mut h, "ZADD z XX INCR 1 zz", NIL);
    ck(&mut h, "ZADD nokey XX 1 a", int(0));
    ck(&mut h, "ZADD nokey XX INCR 1 a", NIL);
    ck(&mut h, "EXISTS nokey", int(0));
    ck(&mut h, "ZINCRBY z 2 b", bulk("4"));
    ck(&mut h, "ZINCRBY z 2 fresh", bulk("2"));
    ck(&mut h, "ZADD z INCR inf a", bulk("inf"));
    ck(&mut h, "ZADD z INCR -inf a", err("ERR resulting score is not a number (NaN)"));
    ck(&mut h, "ZINCRBY z -inf a", err("ERR resulting score is not a number (NaN)"));
    ck(&mut h, "ZADD z NX XX 1 a", err("ERR XX and NX options at the same time are not compatible"));
    ck(&mut h, "ZADD z GT LT 1 a", err("ERR GT, LT, and/or NX options at the same time are not compatible"));
    ck(&mut h, "ZADD z NX GT 1 a", err("ERR GT, LT, and/or NX options at the same time are not compatible"));
    ck(&mut h, "ZADD z INCR 1 a 2 b", err("ERR INCR option supports a single increment-element pair"));
    ck(&mut h, "ZADD z 1 a 2", err("ERR syntax error"));
    ck(&mut h, "ZADD z NX 1", err("ERR syntax error"));
    ck(&mut h, "ZINCRBY z nx a", err("ERR syntax error"));
    for bad in ["nan", "abc", "1e400", "1e-400", "1x", "inf1"] {
        ck(&mut h, &format!("ZADD z {bad} a"), err("ERR value is not a valid float"));
    }
    ckr(&mut h, &[b"ZADD".as_slice(), b"z", b" 1", b"a"], err("ERR value is not a valid float"));
    ckr(&mut h, &[b"ZADD".as_slice(), b"z", b"", b"a"], err("ERR value is not a valid float"));
    ck(&mut h, "ZADD z 1e-310 tiny", int(1));
    ck(&mut h, "ZSCORE z tiny", bulk("9.9999999999999694e-311"));
    for (c, name) in [
        ("ZADD z 1", "zadd"),
        ("ZINCRBY z 1", "zincrby"),
        ("ZREM z", "zrem"),
        ("ZCARD", "zcard"),
        ("ZSCORE z", "zscore"),
        ("ZRANK z a WITHSCORE", "zrank"),
        ("ZRANGE z 0", "zrange"),
        ("ZCOUNT z 0", "zcount"),
        ("ZPOPMIN", "zpopmin"),
        ("ZMPOP 1 z", "zmpop"),
        ("ZRANGESTORE d z 0", "zrangestore"),
        ("ZUNION 1", "zunion"),
        ("ZSCAN z", "zscan"),
        ("ZRANDMEMBER", "zrandmember"),
    ] {
        ck(&mut h, c, err(&format!("ERR wrong number of arguments for '{name}' command")));
    }
    ck(&mut h, "SET s x", OK);
    for c in [
        "ZADD s 1 a",
        "ZINCRBY s 1 a",
        "ZREM s a",
        "ZCARD s",
        "ZSCORE s a",
        "ZMSCORE s a",
        "ZRANK s a",
        "ZRANGE s 0 1",
        "ZCOUNT s 0 1",
        "ZPOPMIN s",
        "ZRANDMEMBER s",
        "ZSCAN s 0",
        "ZUNION 1 s",
        "ZRANGESTORE d s 0 1",
        "ZREMRANGEBYRANK s 0 1",
    ] {
        ck(&mut h, c, err(WT));
    }
}

#[test]
fn score_and_lex_ranges() {
    let mut h = H::new();
    ck(&mut h, "ZADD z 1 a 2 b 3 c 4 d 5 e", int(5));
    ck(&mut h, "ZRANGEBYSCORE z 2 4", bulks(&["b", "c", "d"]));
    ck(&mut h, "ZRANGEBYSCORE z (2 (4", bulks(&["c"]));
    ck(&mut h, "ZRANGEBYSCORE z -inf +inf LIMIT 1 2", bulks(&["b", "c"]));
    ck(&mut h, "ZRANGEBYSCORE z -inf +inf LIMIT -1 2", "*0\r\n");
    ck(&mut h, "ZRANGEBYSCORE z -inf +inf LIMIT 3 -1", bulks(&["d", "e"]));
    ck(&mut h, "ZREVRANGEBYSCORE z 4 2 WITHSCORES", bulks(&["d", "4", "c", "3", "b", "2"]));
    ck(&mut h, "ZREVRANGEBYSCORE z +inf -inf LIMIT 1 2", bulks(&["d", "c"]));
    ck(&mut h, "ZRANGE z (1 3 BYSCORE", bulks(&["b", "c"]));
    ck(&mut h, "ZRANGE z 3 (1 BYSCORE REV", bulks(&["c", "b"]));
    ck(&mut h, "ZRANGE z 0 -1 REV", bulks(&["e", "d", "c", "b", "a"]));
    ck(&mut h, "ZCOUNT z (1 3", int(2));
    ck(&mut h, "ZCOUNT z 3 1", int(0));
    ck(&mut h, "ZCOUNT nokey 0 1", int(0));
    // strtod rules for range ends: "" is 0, leading spaces are fine.
    ckr(&mut h, &[b"ZCOUNT".as_slice(), b"z", b"", b" 2"], int(2));
    ckr(&mut h, &[b"ZCOUNT".as_slice(), b"z", b"(", b"1"], int(1));
    ckr(&mut h, &[b"ZCOUNT".as_slice(), b"z", b"  ", b"1"], err("ERR min or max is not a float"));
    ckr(&mut h, &[b"ZCOUNT".as_slice(), b"z", b" 1", b"2"], int(2));
    ck(&mut h, "ZCOUNT z abc 1", err("ERR min or max is not a float"));
    ck(&mut h, "ZCOUNT z 1 nan", err("ERR min or max is not a float"));
    ck(&mut h, "ZRANGE z 0 1 LIMIT 0 1", err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"));
    ck(&mut h, "ZRANGE z [a [b BYLEX WITHSCORES", err("ERR syntax error, WITHSCORES not supported in combination with BYLEX"));
    ck(&mut h, "ZRANGE z 0 1 REV REV", err("ERR syntax error"));
    ck(&mut h, "ZREVRANGE z 0 1 REV", err("ERR syntax error"));
    ck(&mut h, "ZRANGE z x 1", err("ERR value is not an integer or out of range"));
    ck(&mut h, "ZADD l 0 a 0 b 0 c 0 d", int(4));
    ck(&mut h, "ZRANGEBYLEX l - +", bulks(&["a", "b", "c", "d"]));
    ck(&mut h, "ZRANGEBYLEX l [b (d", bulks(&["b", "c"]));
    ck(&mut h, "ZRANGEBYLEX l (a + LIMIT 1 1", bulks(&["c"]));
    ck(&mut h, "ZREVRANGEBYLEX l + [b", bulks(&["d", "c", "b"]));
    ck(&mut h, "ZLEXCOUNT l [b +", int(3));
    ck(&mut h, "ZLEXCOUNT l - -", int(0));
    ck(&mut h, "ZRANGEBYLEX l a b", err("ERR min or max not valid string range item"));
    ck(&mut h, "ZLEXCOUNT l +x +", err("ERR min or max not valid string range item"));
    ck(&mut h, "ZREMRANGEBYLEX l [b [c", int(2));
    ck(&mut h, "ZRANGE l 0 -1", bulks(&["a", "d"]));
    ck(&mut h, "ZREMRANGEBYSCORE z (1 3", int(2));
    ck(&mut h, "ZREMRANGEBYRANK z 0 0", int(1));
    ck(&mut h, "ZRANGE z 0 -1", bulks(&["d", "e"]));
    ck(&mut h, "ZREMRANGEBYRANK z 5 10", int(0));
    ck(&mut h, "ZREMRANGEBYRANK z 0 -1", int(2));
    ck(&mut h, "EXISTS z", int(0));
}

/// Large-encoding sets of one and two members: every move (in place or not) keeps them.
#[test]
fn tiny_tree_encoded_sets_move_members() {
    let mut h = H::new();
    h.c("CONFIG SET zset-max-listpack-entries 0");
    ck(&mut h, "ZADD z 1 a", int(1));
    assert_eq!(h.c("OBJECT ENCODING z"), bulk("skiplist"));
    for s in ["5", "-3", "5", "0"] {
        ck(&mut h, &format!("ZADD z {s} a"), int(0));
        ck(&mut h, "ZSCORE z a", bulk(s));
    }
    ck(&mut h, "ZADD z 2 b", int(1));
    ck(&mut h, "ZADD z 3 a", int(0));
    ck(&mut h, "ZINCRBY z 10 b", bulk("12"));
    assert_eq!(h.c("ZRANGE z 0 -1 WITHSCORES"), "*4\r\n$1\r\na\r\n$1\r\n3\r\n$1\r\nb\r\n$2\r\n12\r\n");
    ck(&mut h, "ZREM z a b", int(2));
    ck(&mut h, "EXISTS z", int(0));
}

/// Every range command gives the same answer on both encodings.
#[test]
fn encodings_agree() {
    let cmds = [
        "ZRANGE z 0 -1 WITHSCORES",
        "ZRANGE z 2 7",
        "ZRANGE z -5 -2 REV WITHSCORES",
        "ZRANGEBYSCORE z (2 7 WITHSCORES LIMIT 1 3",
        "ZREVRANGEBYSCORE z 8 -inf LIMIT 2 100",
        "ZCOUNT z 3 (9",
        "ZRANK z m7",
        "ZREVRANK z m3",
        "ZRANGE z 0 -1 BYSCORE",
        "ZRANGEBYLEX z [m3 (m7",
        "ZLEXCOUNT z - +",
    ];
    let mut lp = H::new();
    let mut sl = H::new();
    sl.c("CONFIG SET zset-max-listpack-entries 0");
    for h in [&mut lp, &mut sl] {
        for i in 0..12 {
            h.c(&format!("ZADD z {} m{}", i % 9, i));
        }
    }
    assert_eq!(lp.c("OBJECT ENCODING z"), bulk("listpack"));
    assert_eq!(sl.c("OBJECT ENCODING z"), bulk("skiplist"));
    for c in cmds {
        assert_eq!(lp.c(c), sl.c(c), "{c}");
    }
    for c in ["ZPOPMAX z 2", "ZREMRANGEBYSCORE z 3 4", "ZREMRANGEBYRANK z 1 2", "ZRANGE z 0 -1 WITHSCORES"] {
        assert_eq!(lp.c(c), sl.c(c), "{c}");
    }
}

#[test]
fn conversions() {
    let mut h = H::new();
    ck(&mut h, "CONFIG SET zset-max-ziplist-entries 3", OK);
    ck(&mut h, "ZADD z 1 a 2 b 3 c", int(3));
    ck(&mut h, "OBJECT ENCODING z", bulk("listpack"));
    ck(&mut h, "ZADD z 4 d", int(1));
    ck(&mut h, "OBJECT ENCODING z", bulk("skiplist"));
    // Never converted back by removals.
    ck(&mut h, "ZREM z a b c", int(3));
    ck(&mut h, "OBJECT ENCODING z", bulk("skiplist"));
    // A long member converts; a long first member creates a skiplist.
    ck(&mut h, "CONFIG SET zset-max-listpack-value 4", OK);
    ck(&mut h, "ZADD y 1 abcd", int(1));
    ck(&mut h, "OBJECT ENCODING y", bulk("listpack"));
    ck(&mut h, "ZADD y 1 abcde", int(1));
    ck(&mut h, "OBJECT ENCODING y", bulk("skiplist"));
    ck(&mut h, "ZADD x 1 abcde", int(1));
    ck(&mut h, "OBJECT ENCODING x", bulk("skiplist"));
    // Stored results convert to a listpack when they fit.
    ck(&mut h, "ZUNIONSTORE u 1 y", int(2));
    ck(&mut h, "OBJECT ENCODING u", bulk("skiplist"));
    ck(&mut h, "ZUNIONSTORE u 1 z", int(1));
    ck(&mut h, "OBJECT ENCODING u", bulk("listpack"));
    ck(&mut h, "ZRANGESTORE r z 0 -1", int(1));
    ck(&mut h, "OBJECT ENCODING r", bulk("listpack"));
    // COPY keeps the encoding.
    ck(&mut h, "COPY y y2", int(1));
    ck(&mut h, "OBJECT ENCODING y2", bulk("skiplist"));
    ck(&mut h, "ZRANGE y2 0 -1", bulks(&["abcd", "abcde"]));
}

#[test]
fn pops_and_effects() {
    let mut h = H::new();
    ck(&mut h, "ZADD z 1 a 2 b 3 c 4 d", int(4));
    let mark = fx_len(&h);
    ck(&mut h, "ZPOPMIN z", bulks(&["a", "1"]));
    ck(&mut h, "ZPOPMAX z 2", bulks(&["d", "4", "c", "3"]));
    ck(&mut h, "ZPOPMIN z 0", "*0\r\n");
    ck(&mut h, "ZPOPMIN nokey", "*0\r\n");
    ck(&mut h, "ZPOPMIN z -1", err("ERR value is out of range, must be positive"));
    ck(&mut h, "ZPOPMIN z x", err("ERR value is out of range, must be positive"));
    ck(&mut h, "ZPOPMIN z 1 2", err("ERR syntax error"));
    assert_eq!(fx_since(&h, mark), vec!["0:ZPOPMIN z", "0:ZPOPMAX z 2"]);
    ck(&mut h, "ZADD y 5 e", int(1));
    let mark = fx_len(&h);
    ck(&mut h, "ZMPOP 3 nokey z y MAX COUNT 10", "*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n");
    ck(&mut h, "EXISTS z", int(0));
    ck(&mut h, "ZMPOP 1 z MIN", "*-1\r\n");
    assert_eq!(fx_since(&h, mark), vec!["0:ZPOPMAX z 1"]);
    ck(&mut h, "ZMPOP 0 z MIN", err("ERR numkeys should be greater than 0"));
    ck(&mut h, "ZMPOP x z MIN", err("ERR numkeys should be greater than 0"));
    ck(&mut h, "ZMPOP 1 z BAD", err("ERR syntax error"));
    ck(&mut h, "ZMPOP 2 z MIN", err("ERR syntax error"));
    ck(&mut h, "ZMPOP 1 z MIN COUNT 0", err("ERR count should be greater than 0"));
    ck(&mut h, "ZMPOP 1 z MIN COUNT 1 COUNT 1", err("ERR syntax error"));
    // Writes that change nothing replicate nothing.
    let mark = fx_len(&h);
    ck(&mut h, "ZADD y 5 e", int(0));
    ck(&mut h, "ZREM y nope", int(0));
    ck(&mut h, "ZADD y INCR 0 e", bulk("5"));
    assert!(fx_since(&h, mark).is_empty());
}

#[test]
fn set_operations() {
    let mut h = H::new();
    ck(&mut h, "ZADD a 1 x 2 y 3 z", int(3));
    ck(&mut h, "ZADD b 10 y 20 z 30 w", int(3));
    ck(&mut h, "ZUNION 2 a b WITHSCORES", bulks(&["x", "1", "y", "12", "z", "23", "w", "30"]));
    ck(&mut h, "ZINTER 2 a b WITHSCORES", bulks(&["y", "12", "z", "23"]));
    ck(&mut h, "ZINTER 2 a b WEIGHTS 2 0.5 AGGREGATE MAX WITHSCORES", bulks(&["y", "5", "z", "10"]));
    ck(&mut h, "ZUNION 2 a b AGGREGATE MIN", bulks(&["x", "y", "z", "w"]));
    ck(&mut h, "ZDIFF 2 a b WITHSCORES", bulks(&["x", "1"]));
    ck(&mut h, "ZDIFF 2 a a", "*0\r\n");
    ck(&mut h, "ZINTERCARD 2 a b", int(2));
    ck(&mut h, "ZINTERCARD 2 a b LIMIT 1", int(1));
    ck(&mut h, "ZUNIONSTORE d 2 a b", int(4));
    ck(&mut h, "ZRANGE d 0 -1 WITHSCORES", bulks(&["x", "1", "y", "12", "z", "23", "w", "30"]));
    ck(&mut h, "ZINTERSTORE d 2 a nokey", int(0));
    ck(&mut h, "EXISTS d", int(0));
    ck(&mut h, "ZDIFFSTORE d 2 a b", int(1));
    // inf + -inf sums to 0 by convention; 0 × inf weights to 0.
    ck(&mut h, "ZADD p inf m", int(1));
    ck(&mut h, "ZADD n -inf m", int(1));
    ck(&mut h, "ZUNION 2 p n WITHSCORES", bulks(&["m", "0"]));
    ck(&mut h, "ZUNION 1 p WEIGHTS 0 WITHSCORES", bulks(&["m", "0"]));
    // Plain sets are inputs with score 1.
    ck(&mut h, "SADD pl x w", int(2));
    ck(&mut h, "ZUNION 2 a pl WITHSCORES", bulks(&["w", "1", "x", "2", "y", "2", "z", "3"]));
    ck(&mut h, "ZINTER 2 pl b WITHSCORES", bulks(&["w", "31"]));
    ck(&mut h, "ZUNION 0 a", err("ERR at least 1 input key is needed for 'zunion' command"));
    ck(&mut h, "ZUNIONSTORE d 0 a", err("ERR at least 1 input key is needed for 'zunionstore' command"));
    ck(&mut h, "ZUNION 3 a b", err("ERR syntax error"));
    ck(&mut h, "ZUNION x a", err("ERR value is not an integer or out of range"));
    ck(&mut h, "ZUNION 2 a b WEIGHTS 1", err("ERR syntax error"));
    ck(&mut h, "ZUNION 2 a b WEIGHTS 1 x", err("ERR weight value is not a float"));
    ck(&mut h, "ZUNION 2 a b AGGREGATE AVG", err("ERR syntax error"));
    ck(&mut h, "ZUNIONSTORE d 2 a b WITHSCORES", err("ERR syntax error"));
    ck(&mut h, "ZDIFF 2 a b WEIGHTS 1 1", err("ERR syntax error"));
    ck(&mut h, "ZINTERCARD 1 a LIMIT -1", err("ERR LIMIT can't be negative"));
    ck(&mut h, "ZINTERCARD 1 a WITHSCORES", err("ERR syntax error"));
    ck(&mut h, "SET s v", OK);
    ck(&mut h, "ZUNION 2 a s WEIGHTS x", err(WT));
}

#[test]
fn rangestore() {
    let mut h = H::new();
    ck(&mut h, "ZADD z 1 a 2 b 3 c", int(3));
    ck(&mut h, "SET d x", OK);
    ck(&mut h, "EXPIRE d 100", int(1));
    ck(&mut h, "ZRANGESTORE d z 1 -1", int(2));
    ck(&mut h, "TTL d", int(-1));
    ck(&mut h, "ZRANGE d 0 -1 WITHSCORES", bulks(&["b", "2", "c", "3"]));
    ck(&mut h, "ZRANGESTORE d z (1 +inf BYSCORE REV LIMIT 0 1", int(0));
    ck(&mut h, "ZRANGESTORE d z +inf (1 BYSCORE REV LIMIT 0 1", int(1));
    ck(&mut h, "ZRANGE d 0 -1", bulks(&["c"]));
    ck(&mut h, "ZRANGESTORE d z 5 10", int(0));
    ck(&mut h, "EXISTS d", int(0));
    ck(&mut h, "ZRANGESTORE d nokey 0 -1", int(0));
    ck(&mut h, "ZRANGESTORE d z 0 -1 WITHSCORES", err("ERR syntax error"));
}

#[test]
fn randmember_and_scan() {
    let mut h = H::new();
    ck(&mut h, "ZADD z 1 a 2 b 3 c", int(3));
    let all: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    for _ in 0..20 {
        assert!(all.contains(&bulk_text(&h.c("ZRANDMEMBER z"))));
        let two = parse_bulks(&h.c("ZRANDMEMBER z 2"));
        assert_eq!(two.len(), 2);
        assert_ne!(two[0], two[1]);
        assert!(two.iter().all(|m| all.contains(m)));
        let rep = parse_bulks(&h.c("ZRANDMEMBER z -5"));
        assert_eq!(rep.len(), 5);
        assert!(rep.iter().all(|m| all.contains(m)));
    }
    assert_eq!(parse_bulks(&h.c("ZRANDMEMBER z 10")).len(), 3);
    assert_eq!(parse_bulks(&h.c("ZRANDMEMBER z 2 WITHSCORES")).len(), 4);
    ck(&mut h, "ZRANDMEMBER z 0", "*0\r\n");
    ck(&mut h, "ZRANDMEMBER nokey", NIL);
    ck(&mut h, "ZRANDMEMBER nokey 3", "*0\r\n");
    ck(&mut h, "ZRANDMEMBER z 1 BAD", err("ERR syntax error"));
    ck(&mut h, "ZRANDMEMBER z x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "ZRANDMEMBER z 9223372036854775807 WITHSCORES", err("ERR value is out of range"));
    ck(&mut h, "ZRANDMEMBER z -9223372036854775808", err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"));
    ck(&mut h, "ZSCAN z 0", format!("*2\r\n{}{}", bulk("0"), bulks(&["a", "1", "b", "2", "c", "3"])));
    ck(&mut h, "ZSCAN z 0 MATCH b*", format!("*2\r\n{}{}", bulk("0"), bulks(&["b", "2"])));
    ck(&mut h, "ZSCAN nokey 0", format!("*2\r\n{}*0\r\n", bulk("0")));
    ck(&mut h, "ZSCAN z x", err("ERR invalid cursor"));
    ck(&mut h, "ZSCAN z 0 COUNT 0", err("ERR syntax error"));
    ck(&mut h, "ZSCAN z 0 TYPE zset", err("ERR syntax error"));
    // A skiplist scan returns every member once.
    for i in 0..300 {
        h.c(&format!("ZADD big {i}.5 m{i}"));
    }
    let mut seen = BTreeSet::new();
    let mut cursor = "0".to_string();
    loop {
        let r = h.c(&format!("ZSCAN big {cursor} COUNT 20"));
        let (head, rest) = r.split_once("\r\n").unwrap();
        assert_eq!(head, "*2");
        let (c_len, rest) = rest.split_once("\r\n").unwrap();
        let n: usize = c_len[1..].parse().unwrap();
        cursor = rest[..n].to_string();
        let pairs = parse_bulks(&rest[n + 2..]);
        for p in pairs.chunks(2) {
            assert!(p[1].ends_with(".5"), "{p:?}");
            seen.insert(p[0].clone());
        }
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 300);
}

#[test]
fn watch_and_expiry() {
    let mut h = H::new();
    ck(&mut h, "ZADD z 1 a", int(1));
    ck(&mut h, "WATCH z", OK);
    ck(&mut h, "ZADD z 1 a", int(0));
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "ZCARD z", "+QUEUED\r\n");
    // An unchanged ZADD does not touch the key: EXEC runs.
    ck(&mut h, "EXEC", format!("*1\r\n{}", int(1)));
    ck(&mut h, "WATCH z", OK);
    ck(&mut h, "ZINCRBY z 1 a", bulk("2"));
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "ZCARD z", "+QUEUED\r\n");
    ck(&mut h, "EXEC", "*-1\r\n");
    ck(&mut h, "PEXPIRE z 10", int(1));
    h.advance(20);
    ck(&mut h, "ZCARD z", int(0));
    ck(&mut h, "ZADD z 5 b", int(1));
    ck(&mut h, "ZRANGE z 0 -1 WITHSCORES", bulks(&["b", "5"]));
}

#[test]
fn snapshot_round_trip() {
    let mut h = H::new();
    h.c("ZADD small 1 a -0 b 1.5 c");
    for i in 0..200 {
        h.c(&format!("ZADD big {} m{i}", i as f64 / 3.0));
    }
    h.c("CONFIG SET zset-max-listpack-entries 0");
    h.c("ZADD neg -0 z");
    let mut data = Vec::new();
    let (mut db, mut cursor) = (0, 0);
    loop {
        let c = h.e.dump(db, cursor, 1000);
        data.extend_from_slice(&c.data);
        if c.done {
            break;
        }
        (db, cursor) = (c.next_db, c.next_cursor);
    }
    let mut e = Engine::new(5);
    assert_eq!(e.load(&data).unwrap(), 3);
    assert_eq!(e.digest(), h.e.digest());
    let mut h2 = H::new();
    h2.e = e;
    for (k, enc) in [("small", "listpack"), ("big", "skiplist"), ("neg", "skiplist")] {
        assert_eq!(h2.c(&format!("OBJECT ENCODING {k}")), bulk(enc));
        assert_eq!(h2.c(&format!("ZRANGE {k} 0 -1 WITHSCORES")), h.c(&format!("ZRANGE {k} 0 -1 WITHSCORES")));
    }
    assert_eq!(h2.c("ZSCORE neg z"), bulk("-0"));
}
