//! String commands: exact replies and Redis 7.0 error texts, encodings, time-based options
//! (EX/PX/EXAT/PXAT/KEEPTTL, GETEX) and the effects each write replicates.

mod cmdutil;
mod common;

use cmdutil::*;
use common::{H, NIL, OK, bulk, err, int};

const T0: i64 = 1_700_000_000_000;

#[test]
fn get_set_basics() {
    let mut h = H::new();
    ck(&mut h, "GET k", NIL);
    ck(&mut h, "SET k v", OK);
    ck(&mut h, "GET k", bulk("v"));
    ck(&mut h, "SET k w XX", OK);
    ck(&mut h, "SET k z NX", NIL);
    ck(&mut h, "GET k", bulk("w"));
    ck(&mut h, "SET n 1 XX", NIL);
    ck(&mut h, "SET k x GET", bulk("w"));
    ck(&mut h, "SET k2 v NX GET", NIL);
    ck(&mut h, "SET k2 w NX GET", bulk("v"));
    ck(&mut h, "GET k2", bulk("v"));
    ck(&mut h, "SET new v GET", NIL);
    ckr(&mut h, &[b"SET".as_slice(), b"empty", b""], OK);
    ck(&mut h, "GET empty", "$0\r\n\r\n");
    ckr(&mut h, &[b"SET".as_slice(), b"bin", b"a\r\nb\0c"], OK);
    ckr(&mut h, &[b"GET".as_slice(), b"bin"], b"$6\r\na\r\nb\0c\r\n");
    ck(&mut h, "SETNX k q", int(0));
    ck(&mut h, "SETNX fresh q", int(1));
    ck(&mut h, "GETSET fresh r", bulk("q"));
    ck(&mut h, "GETSET none r", NIL);
    ck(&mut h, "GETDEL fresh", bulk("r"));
    ck(&mut h, "GETDEL fresh", NIL);
    ck(&mut h, "EXISTS fresh", int(0));
    // Command names and options are case-insensitive.
    ck(&mut h, "set lower case ex 5 nx", OK);
    ck(&mut h, "TTL lower", int(5));
}

#[test]
fn set_errors() {
    let mut h = H::new();
    ck(&mut h, "SET k v EX 0", err("ERR invalid expire time in 'set' command"));
    ck(&mut h, "SET k v EX -1", err("ERR invalid expire time in 'set' command"));
    ck(&mut h, "SET k v PX 0", err("ERR invalid expire time in 'set' command"));
    ck(&mut h, "SET k v EX 9223372036854775807", err("ERR invalid expire time in 'set' command"));
    ck(&mut h, "SET k v PX abc", err("ERR value is not an integer or out of range"));
    ck(&mut h, "SET k v NX XX", err("ERR syntax error"));
    ck(&mut h, "SET k v EX 10 PX 10", err("ERR syntax error"));
    ck(&mut h, "SET k v KEEPTTL EX 10", err("ERR syntax error"));
    ck(&mut h, "SET k v EX", err("ERR syntax error"));
    ck(&mut h, "SET k v FOO", err("ERR syntax error"));
    ck(&mut h, "SET k", err("ERR wrong number of arguments for 'set' command"));
    ck(&mut h, "GET", err("ERR wrong number of arguments for 'get' command"));
    ck(&mut h, "GET a b", err("ERR wrong number of arguments for 'get' command"));
    ck(&mut h, "SETEX k 0 v", err("ERR invalid expire time in 'setex' command"));
    ck(&mut h, "SETEX k x v", err("ERR value is not an integer or out of range"));
    ck(&mut h, "PSETEX k -5 v", err("ERR invalid expire time in 'psetex' command"));
    ck(&mut h, "SETEX k 10", err("ERR wrong number of arguments for 'setex' command"));
    ck(&mut h, "MSET a", err("ERR wrong number of arguments for 'mset' command"));
    ck(&mut h, "MSET a 1 b", err("ERR wrong number of arguments for 'mset' command"));
    ck(&mut h, "MSETNX a 1 b", err("ERR wrong number of arguments for 'msetnx' command"));
    // Nothing above changed the data set or emitted effects.
    ck(&mut h, "DBSIZE", int(0));
    assert!(h.effect_lines().is_empty(), "{:?}", h.effect_lines());
}

#[test]
fn wrongtype() {
    let mut h = H::new();
    ck(&mut h, "HSET h f v", int(1));
    let wt = err("WRONGTYPE Operation against a key holding the wrong kind of value");
    for c in [
        "GET h",
        "SET h v GET",
        "GETSET h x",
        "GETDEL h",
        "GETEX h",
        "GETEX h PERSIST",
        "APPEND h x",
        "STRLEN h",
        "INCR h",
        "DECR h",
        "INCRBY h 2",
        "DECRBY h 2",
        "INCRBYFLOAT h 1",
        "GETRANGE h 0 1",
        "SETRANGE h 0 x",
    ] {
        ck(&mut h, c, &wt);
    }
    // MGET treats other types as missing; plain SET overwrites them.
    ck(&mut h, "MGET h", bulks_nil(1));
    ck(&mut h, "TYPE h", "+hash\r\n");
    ck(&mut h, "SET h v", OK);
    ck(&mut h, "TYPE h", "+string\r\n");
}

fn bulks_nil(n: usize) -> String {
    let mut s = arr(n);
    for _ in 0..n {
        s.push_str(NIL);
    }
    s
}

#[test]
fn mget_mset_msetnx() {
    let mut h = H::new();
    ck(&mut h, "MSET a 1 b 2 a 3", OK);
    ck(&mut h, "MGET a b c", format!("*3\r\n{}{}{}", bulk("3"), bulk("2"), NIL));
    ck(&mut h, "MSETNX c 1 a 9", int(0));
    ck(&mut h, "EXISTS c", int(0));
    ck(&mut h, "MSETNX c 1 d 2", int(1));
    ck(&mut h, "MGET c d", bulks(&["1", "2"]));
    let fx = h.effect_lines();
    assert_eq!(fx, vec!["0:MSET a 1 b 2 a 3", "0:MSETNX c 1 d 2"]);
}

#[test]
fn counters() {
    let mut h = H::new();
    ck(&mut h, "INCR n", int(1));
    ck(&mut h, "INCRBY n 10", int(11));
    ck(&mut h, "DECR n", int(10));
    ck(&mut h, "DECRBY n 20", int(-10));
    ck(&mut h, "INCRBY n 1.5", err("ERR value is not an integer or out of range"));
    ck(&mut h, "INCRBY n abc", err("ERR value is not an integer or out of range"));
    ck(&mut h, "SET s abc", OK);
    ck(&mut h, "INCR s", err("ERR value is not an integer or out of range"));
    ck(&mut h, "SET sp 01", OK);
    ck(&mut h, "INCR sp", err("ERR value is not an integer or out of range"));
    ck(&mut h, "SET big 9223372036854775807", OK);
    ck(&mut h, "INCR big", err("ERR increment or decrement would overflow"));
    ck(&mut h, "SET small -9223372036854775808", OK);
    ck(&mut h, "DECR small", err("ERR increment or decrement would overflow"));
    ck(&mut h, "DECRBY n -9223372036854775808", err("ERR decrement would overflow"));
    ck(&mut h, "GET n", bulk("-10"));
    ck(&mut h, "INCRBY n 9223372036854775807", int(9223372036854775797));
    // INCRBYFLOAT
    ck(&mut h, "SET f 10.5", OK);
    ck(&mut h, "INCRBYFLOAT f 0.1", bulk("10.6"));
    ck(&mut h, "INCRBYFLOAT f -5", bulk("5.6"));
    ck(&mut h, "INCRBYFLOAT f abc", err("ERR value is not a valid float"));
    ck(&mut h, "INCRBYFLOAT s 1", err("ERR value is not a valid float"));
    ck(&mut h, "SET e 5.0e3", OK);
    ck(&mut h, "INCRBYFLOAT e 1.5", bulk("5001.5"));
    ck(&mut h, "INCRBYFLOAT nf 3", bulk("3"));
    ck(&mut h, "INCRBYFLOAT nf 2.0e2", bulk("203"));
    ck(&mut h, "SET i 3", OK);
    ck(&mut h, "INCRBYFLOAT i 0.25", bulk("3.25"));
}

#[test]
fn append_strlen_ranges() {
    let mut h = H::new();
    ck(&mut h, "APPEND k hello", int(5));
    ck(&mut h, "APPEND k _world", int(11));
    ck(&mut h, "STRLEN k", int(11));
    ck(&mut h, "STRLEN nokey", int(0));
    ck(&mut h, "SET n 10", OK);
    ck(&mut h, "APPEND n 5", int(3));
    ck(&mut h, "GET n", bulk("105"));
    ck(&mut h, "STRLEN n", int(3));
    ck(&mut h, "GETRANGE k 0 4", bulk("hello"));
    ck(&mut h, "GETRANGE k -5 -1", bulk("world"));
    ck(&mut h, "GETRANGE k -100 100", bulk("hello_world"));
    ck(&mut h, "GETRANGE k 5 1", bulk(""));
    ck(&mut h, "GETRANGE nokey 0 -1", bulk(""));
    ck(&mut h, "GETRANGE k a b", err("ERR value is not an integer or out of range"));
    ck(&mut h, "GETRANGE n 1 1", bulk("0"));
    ck(&mut h, "SETRANGE k 0 J", int(11));
    ck(&mut h, "GET k", bulk("Jello_world"));
    ck(&mut h, "SETRANGE k -1 x", err("ERR offset is out of range"));
    ck(&mut h, "SETRANGE k 536870912 x", err("ERR string exceeds maximum allowed size (proto-max-bulk-len)"));
    ckr(&mut h, &[b"SETRANGE".as_slice(), b"nokey", b"0", b""], int(0));
    ck(&mut h, "EXISTS nokey", int(0));
    ck(&mut h, "SETRANGE pad 3 ab", int(5));
    ckr(&mut h, &[b"GET".as_slice(), b"pad"], b"$5\r\n\0\0\0ab\r\n");
    ck(&mut h, "SETRANGE k 13 !!", int(15));
    ckr(&mut h, &[b"GET".as_slice(), b"k"], b"$15\r\nJello_world\0\0!!\r\n");
    // The lowered limit applies to SETRANGE and APPEND alike.
    ck(&mut h, "CONFIG SET proto-max-bulk-len 1048576", OK);
    ck(&mut h, "SETRANGE k 1048576 x", err("ERR string exceeds maximum allowed size (proto-max-bulk-len)"));
}

#[test]
fn encodings() {
    let mut h = H::new();
    let enc = |h: &mut H, k: &str| h.c(&format!("OBJECT ENCODING {k}"));
    h.c("SET i 12345");
    assert_eq!(enc(&mut h, "i"), bulk("int"));
    h.c("SET neg -42");
    assert_eq!(enc(&mut h, "neg"), bulk("int"));
    h.c("SET lead 0123");
    assert_eq!(enc(&mut h, "lead"), bulk("embstr"));
    h.c("SET huge 99999999999999999999");
    assert_eq!(enc(&mut h, "huge"), bulk("embstr"));
    h.c("SET s hello");
    assert_eq!(enc(&mut h, "s"), bulk("embstr"));
    let s44 = "x".repeat(44);
    let s45 = "x".repeat(45);
    h.c(&format!("SET e44 {s44}"));
    assert_eq!(enc(&mut h, "e44"), bulk("embstr"));
    h.c(&format!("SET r45 {s45}"));
    assert_eq!(enc(&mut h, "r45"), bulk("raw"));
    // APPEND and SETRANGE make a raw string; INCR makes an int again.
    h.c("APPEND s !");
    assert_eq!(enc(&mut h, "s"), bulk("raw"));
    h.c("APPEND i 6");
    assert_eq!(enc(&mut h, "i"), bulk("raw"));
    h.c("INCR i");
    assert_eq!(enc(&mut h, "i"), bulk("int"));
    assert_eq!(h.c("GET i"), bulk("123457"));
    h.c("SETRANGE neg 0 +");
    assert_eq!(enc(&mut h, "neg"), bulk("raw"));
    h.c("SET f 1.5");
    h.c("INCRBYFLOAT f 1");
    assert_eq!(enc(&mut h, "f"), bulk("embstr"));
    ck(&mut h, "OBJECT ENCODING nokey", NIL);
}

#[test]
fn set_expiry_options_and_effects() {
    let mut h = H::new();
    ck(&mut h, "SET k v EX 10", OK);
    ck(&mut h, "TTL k", int(10));
    ck(&mut h, "PTTL k", int(10_000));
    ck(&mut h, "SET p v PX 1500", OK);
    ck(&mut h, "PTTL p", int(1500));
    ck(&mut h, "TTL p", int(2));
    let at = T0 / 1000 + 100;
    ck(&mut h, &format!("SET ea v EXAT {at}"), OK);
    ck(&mut h, "EXPIRETIME ea", int(at));
    ck(&mut h, &format!("SET pa v PXAT {}", T0 + 2500), OK);
    ck(&mut h, "PEXPIRETIME pa", int(T0 + 2500));
    ck(&mut h, "SETEX se 5 v", OK);
    ck(&mut h, "PSETEX pe 50 v", OK);
    ck(&mut h, "SET g v EX 20 GET", NIL);
    assert_eq!(
        h.effect_lines(),
        vec![
            format!("0:SET k v PXAT {}", T0 + 10_000),
            format!("0:SET p v PXAT {}", T0 + 1500),
            format!("0:SET ea v PXAT {}", at * 1000),
            format!("0:SET pa v PXAT {}", T0 + 2500),
            format!("0:SET se v PXAT {}", T0 + 5000),
            format!("0:SET pe v PXAT {}", T0 + 50),
            format!("0:SET g v PXAT {}", T0 + 20_000),
        ]
    );
    // KEEPTTL keeps it; a plain SET clears it.
    h.advance(1000);
    ck(&mut h, "SET k v2 KEEPTTL", OK);
    ck(&mut h, "TTL k", int(9));
    ck(&mut h, "SET k v3", OK);
    ck(&mut h, "TTL k", int(-1));
    // EXAT in the past: the key is stored already expired and reads as absent.
    ck(&mut h, "SET past v EXAT 1", OK);
    ck(&mut h, "GET past", NIL);
}

#[test]
fn lazy_expiry_of_strings() {
    let mut h = H::new();
    ck(&mut h, "SET k v PX 100", OK);
    ck(&mut h, "SET keep v", OK);
    h.advance(99);
    ck(&mut h, "GET k", bulk("v"));
    ck(&mut h, "PTTL k", int(1));
    let mark = fx_len(&h);
    h.advance(1);
    ck(&mut h, "GET k", NIL);
    assert_eq!(fx_since(&h, mark), vec!["0:DEL k"]);
    // Gone for good: no second DEL.
    ck(&mut h, "GET k", NIL);
    ck(&mut h, "EXISTS k", int(0));
    assert_eq!(fx_since(&h, mark), vec!["0:DEL k"]);
    // SET NX on an expired key succeeds; the expiry's DEL precedes the SET.
    ck(&mut h, "SET n v PX 10", OK);
    h.advance(10);
    let mark = fx_len(&h);
    ck(&mut h, "SET n w NX", OK);
    assert_eq!(fx_since(&h, mark), vec!["0:DEL n", "0:SET n w NX"]);
    // Every read path honours expiry.
    for (cmd, want) in [
        ("STRLEN x", int(0)),
        ("GETRANGE x 0 -1", bulk("")),
        ("MGET x", bulks_nil(1)),
        ("GETEX x", NIL.to_string()),
        ("GETDEL x", NIL.to_string()),
        ("APPEND x y", int(1)),
    ] {
        h.c("SET x abc PX 5");
        h.advance(5);
        ck(&mut h, cmd, want);
    }
    // INCR on an expired counter starts from zero.
    h.c("SET c 41 PX 5");
    h.advance(5);
    ck(&mut h, "INCR c", int(1));
    ck(&mut h, "TTL c", int(-1));
    ck(&mut h, "GET keep", bulk("v"));
}

#[test]
fn getex_variants() {
    let mut h = H::new();
    ck(&mut h, "SET k v", OK);
    let mark = fx_len(&h);
    ck(&mut h, "GETEX k", bulk("v"));
    ck(&mut h, "GETEX k PERSIST", bulk("v"));
    assert!(fx_since(&h, mark).is_empty(), "no-op GETEX replicates nothing");
    ck(&mut h, "GETEX k EX 10", bulk("v"));
    ck(&mut h, "TTL k", int(10));
    ck(&mut h, "GETEX k PX 500", bulk("v"));
    ck(&mut h, "PTTL k", int(500));
    ck(&mut h, &format!("GETEX k EXAT {}", T0 / 1000 + 30), bulk("v"));
    ck(&mut h, "TTL k", int(30));
    ck(&mut h, &format!("GETEX k PXAT {}", T0 + 40_000), bulk("v"));
    ck(&mut h, "PTTL k", int(40_000));
    ck(&mut h, "GETEX k PERSIST", bulk("v"));
    ck(&mut h, "TTL k", int(-1));
    assert_eq!(
        fx_since(&h, mark),
        vec![
            format!("0:PEXPIREAT k {}", T0 + 10_000),
            format!("0:PEXPIREAT k {}", T0 + 500),
            format!("0:PEXPIREAT k {}", T0 + 30_000),
            format!("0:PEXPIREAT k {}", T0 + 40_000),
            "0:PERSIST k".to_string(),
        ]
    );
    // Errors.
    ck(&mut h, "GETEX k FOO", err("ERR syntax error"));
    ck(&mut h, "GETEX k EX 10 PX 10", err("ERR syntax error"));
    ck(&mut h, "GETEX k PERSIST EX 1", err("ERR syntax error"));
    ck(&mut h, "GETEX k EX 0", err("ERR invalid expire time in 'getex' command"));
    ck(&mut h, "GETEX k EX -3", err("ERR invalid expire time in 'getex' command"));
    ck(&mut h, "GETEX k PX x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "GETEX k KEEPTTL", err("ERR syntax error"));
    ck(&mut h, "GETEX nokey EX 10", NIL);
    // An absolute time in the past deletes the key (after replying its value) and
    // replicates DEL.
    let mark = fx_len(&h);
    ck(&mut h, "GETEX k EXAT 1", bulk("v"));
    ck(&mut h, "EXISTS k", int(0));
    assert_eq!(fx_since(&h, mark), vec!["0:DEL k"]);
}

#[test]
fn write_effects() {
    let mut h = H::new();
    h.c("SET k v EX 100");
    h.advance(10_000);
    let mark = fx_len(&h);
    ck(&mut h, "INCRBYFLOAT f 1.5", bulk("1.5"));
    ck(&mut h, "SET k 2.5 KEEPTTL", OK);
    ck(&mut h, "INCRBYFLOAT k 1", bulk("3.5"));
    ck(&mut h, "TTL k", int(90));
    ck(&mut h, "GETSET g x", NIL);
    ck(&mut h, "GETDEL g", bulk("x"));
    ck(&mut h, "GETDEL g", NIL);
    ck(&mut h, "INCR n", int(1));
    ck(&mut h, "APPEND n 0", int(2));
    ck(&mut h, "SETRANGE n 0 2", int(2));
    ck(&mut h, "SET n x NX", NIL);
    ck(&mut h, "SETNX n x", int(0));
    ck(&mut h, "MSETNX n 1 m 1", int(0));
    assert_eq!(
        fx_since(&h, mark),
        vec!["0:SET f 1.5 KEEPTTL", "0:SET k 2.5 KEEPTTL", "0:SET k 3.5 KEEPTTL", "0:SET g x", "0:DEL g", "0:INCR n", "0:APPEND n 0", "0:SETRANGE n 0 2",]
    );
    // Effects land in the selected database.
    ck(&mut h, "SELECT 3", OK);
    let mark = fx_len(&h);
    ck(&mut h, "SET k v", OK);
    assert_eq!(fx_since(&h, mark), vec!["3:SET k v"]);
}

#[test]
fn resp3_string_replies() {
    let mut h = H::new();
    h.c("HELLO 3");
    ck(&mut h, "GET nokey", "_\r\n");
    ck(&mut h, "MGET nokey", "*1\r\n_\r\n");
    ck(&mut h, "SET k v NX GET", "_\r\n");
    ck(&mut h, "GETEX nokey", "_\r\n");
    ck(&mut h, "GETDEL nokey", "_\r\n");
    // INCRBYFLOAT stays a bulk string in RESP3, like Redis.
    ck(&mut h, "INCRBYFLOAT f 1.5", bulk("1.5"));
    ck(&mut h, "INCR n", int(1));
    h.c("HELLO 2");
    ck(&mut h, "GET nokey", NIL);
}
