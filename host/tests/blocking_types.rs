//! Blocking sorted-set pops (BZPOPMIN/BZPOPMAX/BZMPOP) and blocking stream reads
//! (XREAD/XREADGROUP BLOCK) across real connections: served by later writes in blocking
//! order, timeouts, WRONGTYPE, several keys, MULTI, RESP3, groups destroyed or streams
//! deleted under a waiter. Replies are the bytes redis-server 7.0 sends.

mod common;

use common::{Memoria, Raw, RedisServer, wait_blocked};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs the same script on redis-server and Memoria: `block` commands are sent by waiter
/// connections (one each, in order), then `then` by another connection; every reply of
/// both sides must match byte for byte.
/// Runs `script` on one connection to each server; every reply must match (HELLO's, which
/// names the server, is only sent).
fn same_replies(script: &[&[&str]]) {
    let redis = RedisServer::start(&[]);
    let memoria = Memoria::start();
    let mut out = Vec::new();
    for port in [redis.port, memoria.port] {
        let mut c = Raw::connect(port);
        let replies: Vec<String> = script
            .iter()
            .map(|cmd| {
                if cmd[0] == "HELLO" {
                    c.cmd(cmd);
                    "<hello>".into()
                } else {
                    text(&c.cmd(cmd))
                }
            })
            .collect();
        out.push(replies);
    }
    assert_eq!(out[0], out[1], "redis (left) vs memoria (right)");
}

fn same_on_both(block: &[&[&str]], then: &[&[&str]]) {
    same_on_both_after(&[], block, then)
}

/// `same_on_both` after `setup` ran on each server (replies checked equal too).
fn same_on_both_after(setup: &[&[&str]], block: &[&[&str]], then: &[&[&str]]) {
    let redis = RedisServer::start(&[]);
    let memoria = Memoria::start();
    let mut out = Vec::new();
    for port in [redis.port, memoria.port] {
        let mut replies = Vec::new();
        let mut c = Raw::connect(port);
        for cmd in setup {
            replies.push(text(&c.cmd(cmd)));
        }
        let mut waiters = Vec::new();
        for (i, c) in block.iter().enumerate() {
            let mut w = Raw::connect(port);
            w.send(c);
            wait_blocked(port, i + 1);
            waiters.push(w);
        }
        let mut p = Raw::connect(port);
        for c in then {
            replies.push(text(&p.cmd(c)));
        }
        for w in waiters.iter_mut() {
            replies.push(text(&w.read_reply()));
        }
        out.push(replies);
    }
    assert_eq!(out[0], out[1], "redis (left) vs memoria (right)");
}

#[test]
fn bzpopmin_and_bzpopmax_are_served_in_order() {
    same_on_both(
        &[&["BZPOPMIN", "z", "0"], &["BZPOPMAX", "z", "y", "0"], &["BZPOPMIN", "y", "z", "0"]],
        &[&["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"], &["ZRANGE", "z", "0", "-1", "WITHSCORES"]],
    );
}

#[test]
fn bzmpop_counts_and_nested_replies() {
    same_on_both(
        &[&["BZMPOP", "0", "2", "x", "z", "MAX", "COUNT", "2"], &["BZMPOP", "0", "1", "z", "MIN"]],
        &[&["ZADD", "z", "1.5", "a", "2", "b", "3", "c"], &["ZCARD", "z"]],
    );
}

#[test]
fn immediate_pops_errors_and_timeouts() {
    let script: &[&[&str]] = &[
        &["ZADD", "z", "1", "a", "2", "b"],
        &["BZPOPMIN", "nokey", "z", "0"],
        &["BZPOPMAX", "z", "1"],
        &["BZPOPMIN", "z", "0.05"],
        &["BZMPOP", "0.05", "1", "z", "MIN"],
        &["SET", "s", "x"],
        &["BZPOPMIN", "s", "0"],
        &["BZMPOP", "0", "1", "s", "MIN"],
        &["BZPOPMIN", "z", "-1"],
        &["BZPOPMIN", "z", "abc"],
        &["BZMPOP", "0", "0", "z", "MIN"],
        &["BZMPOP", "x", "1", "z", "MIN"],
        &["BZMPOP", "0", "1", "z", "BAD"],
        &["BZMPOP", "0", "1", "z", "MIN", "COUNT", "0"],
        &["BZPOPMIN", "z"],
        &["MULTI"],
        &["BZPOPMIN", "z", "0"],
        &["BZMPOP", "0", "1", "z", "MIN"],
        &["EXEC"],
        &["HELLO", "3"],
        &["ZADD", "z", "5", "e"],
        &["BZPOPMIN", "z", "0"],
        &["BZPOPMIN", "z", "0.05"],
    ];
    same_replies(script);
}

#[test]
fn xread_block_is_served_by_a_later_xadd() {
    // `$` is resolved when the client blocks: both waiters get exactly the first new entry.
    same_on_both(
        &[&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"], &["XREAD", "COUNT", "5", "BLOCK", "0", "STREAMS", "other", "s", "$", "$"]],
        &[&["XADD", "s", "1-1", "f", "v"], &["XADD", "s", "2-1", "f", "w"], &["XLEN", "s"]],
    );
    // An existing stream: only entries after its last id at blocking time.
    same_on_both(&[&["XREAD", "BLOCK", "0", "STREAMS", "t", "$"]], &[&["XADD", "t", "1-1", "a", "1"], &["XADD", "t", "1-2", "b", "2"]]);
}

#[test]
fn xread_block_with_an_explicit_id_and_other_writes_in_between() {
    same_on_both(
        &[&["XREAD", "BLOCK", "0", "STREAMS", "s", "5-0"]],
        &[&["XADD", "s", "1-1", "f", "old"], &["SET", "k", "v"], &["XADD", "s", "7-1", "f", "new"]],
    );
    // A deleted stream keeps a plain reader waiting for the next one.
    same_on_both(&[&["XREAD", "BLOCK", "0", "STREAMS", "d", "$"]], &[&["DEL", "d"], &["XADD", "d", "3-1", "f", "v"]]);
}

#[test]
fn xreadgroup_block_serves_new_entries_to_consumers_in_order() {
    // The first waiter takes the first new entry (the group's last id moves past it), so
    // the second waits for the next one.
    same_on_both_after(
        &[&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]],
        &[&["XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">"], &["XREADGROUP", "GROUP", "g", "bob", "BLOCK", "0", "STREAMS", "s", ">"]],
        &[&["XADD", "s", "1-1", "f", "v"], &["XADD", "s", "2-1", "f", "w"], &["XPENDING", "s", "g"]],
    );
}

#[test]
fn an_xadd_trimmed_away_at_once_still_ends_the_wait_and_other_writes_do_not() {
    // XDEL, XTRIM, XSETID, EXPIRE and PERSIST give a waiter nothing to read; the XADD
    // whose MAXLEN 0 trims its own entry away does end the wait, with an empty list (a
    // plain reader and a group reader alike), as in Redis 7.0.
    let setup: &[&[&str]] = &[&["XADD", "s", "1-1", "f", "v"], &["XGROUP", "CREATE", "s", "g", "$"]];
    let waiters: &[&[&str]] = &[&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"], &["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"]];
    // Still waiting after those writes: the XADD's entry is what they get.
    same_on_both_after(
        setup,
        waiters,
        &[
            &["XSETID", "s", "5-0"],
            &["XDEL", "s", "1-1"],
            &["XTRIM", "s", "MAXLEN", "0"],
            &["EXPIRE", "s", "100"],
            &["PERSIST", "s"],
            &["XADD", "s", "9-1", "f", "w"],
            &["XINFO", "GROUPS", "s"],
        ],
    );
    same_on_both_after(setup, waiters, &[&["XADD", "s", "MAXLEN", "0", "9-1", "f", "w"], &["XINFO", "GROUPS", "s"]]);
}

#[test]
fn xreadgroup_waiters_learn_that_their_group_or_stream_is_gone() {
    // The group is created before the waiters block (they would get NOGROUP at once
    // otherwise), by the first waiter's own connection.
    for (then, what) in [(&["XGROUP", "DESTROY", "s", "g"][..], "destroy"), (&["DEL", "s"][..], "del"), (&["SET", "s", "x"][..], "set")] {
        let redis = RedisServer::start(&[]);
        let memoria = Memoria::start();
        let mut out = Vec::new();
        for port in [redis.port, memoria.port] {
            let mut w = Raw::connect(port);
            assert_eq!(w.cmd(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]), b"+OK\r\n");
            w.send(&["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"]);
            wait_blocked(port, 1);
            let mut p = Raw::connect(port);
            let r = text(&p.cmd(then));
            out.push((r, text(&w.read_reply())));
            wait_blocked(port, 0);
        }
        assert_eq!(out[0], out[1], "{what}: redis (left) vs memoria (right)");
    }
}

#[test]
fn xread_block_times_out_and_never_blocks_inside_multi() {
    let script: &[&[&str]] = &[
        &["XREAD", "BLOCK", "30", "STREAMS", "s", "$"],
        &["XREAD", "BLOCK", "-1", "STREAMS", "s", "$"],
        &["XREAD", "BLOCK", "x", "STREAMS", "s", "$"],
        &["XADD", "s", "1-1", "f", "v"],
        &["XREAD", "BLOCK", "30", "STREAMS", "s", "$"],
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "0"],
        &["MULTI"],
        &["XREAD", "BLOCK", "0", "STREAMS", "s", "$"],
        &["EXEC"],
        &["XGROUP", "CREATE", "s", "g", "$"],
        &["XREADGROUP", "GROUP", "g", "c", "BLOCK", "30", "STREAMS", "s", ">"],
        &["XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", "0"],
        &["HELLO", "3"],
        &["XREAD", "BLOCK", "30", "STREAMS", "s", "$"],
    ];
    same_replies(script);
}
