//! Keyspace notifications, differentially: the same random write sequences run on
//! redis-server and on Memoria while a subscriber listens to every keyspace and keyevent
//! channel (`notify-keyspace-events KEA`: every class but `new` and key misses); the messages it receives, in order, must be the
//! same bytes. Replies themselves are compared by host/tests/differential.rs.

mod common;

use common::{Memoria, Raw, RedisServer};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn s(x: &str) -> Vec<u8> {
    x.as_bytes().to_vec()
}

fn pick(xs: &'static [&'static str]) -> BoxedStrategy<Vec<u8>> {
    prop::sample::select(xs).prop_map(s).boxed()
}

fn cmd(parts: Vec<BoxedStrategy<Vec<u8>>>) -> BoxedStrategy<Vec<Vec<u8>>> {
    parts.prop_map(|v| v).boxed()
}

fn lit(x: &'static str) -> BoxedStrategy<Vec<u8>> {
    Just(s(x)).boxed()
}

fn key() -> BoxedStrategy<Vec<u8>> {
    pick(&["l1", "l2", "z1", "str"])
}

fn elem() -> BoxedStrategy<Vec<u8>> {
    pick(&["a", "b", "c", "1", "2"])
}

/// Writes whose events Redis raises in list, stream, sorted-set (blocking pops) and
/// SORT code.
fn write_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    prop_oneof![
        4 => cmd(vec![pick(&["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]), key(), elem(), elem()]),
        3 => cmd(vec![pick(&["LPOP", "RPOP"]), key()]),
        1 => cmd(vec![pick(&["LPOP", "RPOP"]), key(), pick(&["0", "1", "3"])]),
        1 => cmd(vec![lit("LSET"), key(), pick(&["0", "-1", "5"]), elem()]),
        1 => cmd(vec![lit("LINSERT"), key(), pick(&["BEFORE", "AFTER"]), elem(), elem()]),
        1 => cmd(vec![lit("LREM"), key(), pick(&["0", "1", "-1"]), elem()]),
        1 => cmd(vec![lit("LTRIM"), key(), pick(&["0", "1", "-1"]), pick(&["0", "1", "-1"])]),
        2 => cmd(vec![lit("LMOVE"), key(), key(), pick(&["LEFT", "RIGHT"]), pick(&["LEFT", "RIGHT"])]),
        1 => cmd(vec![lit("RPOPLPUSH"), key(), key()]),
        1 => cmd(vec![lit("LMPOP"), lit("2"), key(), key(), pick(&["LEFT", "RIGHT"]), lit("COUNT"), pick(&["1", "2"])]),
        1 => cmd(vec![pick(&["BLPOP", "BRPOP"]), key(), key(), lit("0.01")]),
        1 => cmd(vec![lit("BLMOVE"), key(), key(), pick(&["LEFT", "RIGHT"]), pick(&["LEFT", "RIGHT"]), lit("0.01")]),
        1 => cmd(vec![lit("BLMPOP"), lit("0.01"), lit("1"), key(), pick(&["LEFT", "RIGHT"])]),
        2 => cmd(vec![lit("ZADD"), key(), pick(&["1", "2", "3"]), elem()]),
        1 => cmd(vec![pick(&["BZPOPMIN", "BZPOPMAX"]), key(), lit("0.01")]),
        1 => cmd(vec![lit("BZMPOP"), lit("0.01"), lit("1"), key(), pick(&["MIN", "MAX"]), lit("COUNT"), lit("2")]),
        1 => cmd(vec![lit("SORT"), key(), lit("ALPHA"), lit("STORE"), pick(&["dst", "l2"])]),
        3 => cmd(vec![lit("XADD"), lit("st"), pick(&["1-1", "2-1", "3-1", "4-1", "5-1"]), lit("f"), elem()]),
        1 => cmd(vec![lit("XADD"), lit("st"), lit("MAXLEN"), lit("="), pick(&["1", "2"]), pick(&["6-1", "7-1", "8-1"]), lit("f"), elem()]),
        1 => cmd(vec![lit("XTRIM"), lit("st"), lit("MAXLEN"), pick(&["0", "1", "5"])]),
        1 => cmd(vec![lit("XDEL"), lit("st"), pick(&["1-1", "2-1", "9-9"])]),
        1 => cmd(vec![lit("XGROUP"), lit("CREATE"), lit("st"), pick(&["g", "h"]), pick(&["$", "0"]), lit("MKSTREAM")]),
        1 => cmd(vec![lit("XGROUP"), lit("SETID"), lit("st"), pick(&["g", "h"]), lit("0")]),
        1 => cmd(vec![lit("XGROUP"), lit("DESTROY"), lit("st"), pick(&["g", "h"])]),
        1 => cmd(vec![lit("XGROUP"), pick(&["CREATECONSUMER", "DELCONSUMER"]), lit("st"), lit("g"), pick(&["c1", "c2"])]),
        2 => cmd(vec![lit("XREADGROUP"), lit("GROUP"), lit("g"), pick(&["c1", "c2", "c3"]), lit("COUNT"), lit("1"), lit("STREAMS"), lit("st"), pick(&[">", "0"])]),
        1 => cmd(vec![lit("XCLAIM"), lit("st"), lit("g"), pick(&["c1", "c4"]), lit("0"), pick(&["1-1", "2-1"])]),
        1 => cmd(vec![lit("XAUTOCLAIM"), lit("st"), lit("g"), pick(&["c2", "c5"]), lit("0"), lit("0")]),
        1 => cmd(vec![lit("XACK"), lit("st"), lit("g"), pick(&["1-1", "2-1"])]),
        1 => cmd(vec![lit("XSETID"), lit("st"), pick(&["99-0", "0-1"])]),
        1 => cmd(vec![lit("SET"), pick(&["str", "l1"]), lit("v")]),
        1 => cmd(vec![lit("DEL"), pick(&["l1", "l2", "z1", "str", "st"])]),
    ]
    .boxed()
}

/// Runs `cmds` on the server at `port` and returns every notification the subscriber got.
fn notifications(port: u16, cmds: &[Vec<Vec<u8>>]) -> Vec<String> {
    let mut w = Raw::connect(port);
    assert_eq!(w.cmd(&["FLUSHALL"]), b"+OK\r\n");
    assert_eq!(w.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]), b"+OK\r\n");
    let mut sub = Raw::connect(port);
    sub.send(&["PSUBSCRIBE", "__key*__:*"]);
    sub.read_reply();
    sub.send(&["SUBSCRIBE", "sync"]);
    sub.read_reply();
    for c in cmds {
        w.cmd(c);
    }
    // Everything published before this marker reaches the subscriber before it.
    w.cmd(&["PUBLISH", "sync", "end"]);
    let mut got = Vec::new();
    loop {
        let m = String::from_utf8_lossy(&sub.read_reply()).into_owned();
        if m.contains("$4\r\nsync\r\n") {
            break;
        }
        got.push(m);
    }
    got
}

#[test]
fn keyspace_events_match_redis() {
    let redis = RedisServer::start(&[]);
    let memoria = Memoria::start();
    let cases = std::env::var("MEMORIA_DIFF_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000u32);
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let result = runner.run(&prop::collection::vec(write_cmds(), 1..25), |cmds| {
        let want = notifications(redis.port, &cmds);
        let got = notifications(memoria.port, &cmds);
        prop_assert_eq!(want, got, "redis (left) vs memoria (right)");
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
