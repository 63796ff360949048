//! COMMAND INFO against redis-server 7.0.15, for every name in its COMMAND LIST that
//! Memoria also has (subcommands included): byte-identical in RESP2 and in RESP3 (flags,
//! key positions, ACL categories, tips, key specs), unless the command is listed in
//! `DIFFERENT` with why. The list is kept honest: a listed command that matches, or that
//! one of the servers lacks, fails the test. Commands newer than Redis 7.0 are not in its
//! list and so not compared. COMMAND GETKEYS and GETKEYSANDFLAGS are compared on a set of
//! invocations.

mod common;

use common::{Memoria, Raw, RedisServer, reply_len};

/// Shared commands whose COMMAND INFO cannot be identical.
const DIFFERENT: &[(&str, &str)] = &[
    ("client", "its subcommands include Redis 7.2's CLIENT SETINFO and CLIENT NO-TOUCH, which Memoria has and Redis 7.0 has not"),
    ("cluster", "Memoria has no cluster bus: its CLUSTER lacks MEET, ADDSLOTS, SETSLOT, FAILOVER… and has Redis 7.2's MYSHARDID"),
    ("script", "Memoria has no Lua debugger: its SCRIPT lacks DEBUG"),
];

/// The elements of the aggregate at `pos` (its header skipped).
fn elements(b: &[u8], pos: usize) -> Vec<&[u8]> {
    let header_end = pos + b[pos..].windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    let n: usize = std::str::from_utf8(&b[pos + 1..header_end - 2]).unwrap().parse().unwrap();
    let n = if b[pos] == b'%' { 2 * n } else { n };
    let mut at = header_end;
    (0..n)
        .map(|_| {
            let len = reply_len(b, at).expect("complete reply");
            at += len;
            &b[at - len..at]
        })
        .collect()
}

/// A COMMAND INFO reply with each container's subcommands in name order: Redis lists them
/// in the order of its hash table, whose seed changes with each process.
fn normalized(reply: &[u8]) -> Vec<u8> {
    assert!(reply.starts_with(b"*1\r\n*10\r\n"), "not one COMMAND INFO entry: {}", String::from_utf8_lossy(reply));
    let entry = elements(reply, 4);
    let mut out = b"*1\r\n*10\r\n".to_vec();
    for e in &entry[..9] {
        out.extend_from_slice(e);
    }
    let subs_at = reply.len() - entry[9].len();
    let mut subs = elements(reply, subs_at);
    subs.sort();
    let header_len = entry[9].len() - subs.iter().map(|s| s.len()).sum::<usize>();
    out.extend_from_slice(&entry[9][..header_len]);
    for s in subs {
        out.extend_from_slice(s);
    }
    out
}

fn names(list: &[u8]) -> Vec<String> {
    elements(list, 0).iter().map(|e| String::from_utf8_lossy(&e[e.iter().position(|&c| c == b'\n').unwrap() + 1..e.len() - 2]).into_owned()).collect()
}

#[test]
fn command_info_is_redis_s() {
    let redis = RedisServer::start(&[]);
    let mem = Memoria::start();
    let mut r = Raw::connect(redis.port);
    let mut m = Raw::connect(mem.port);
    let theirs = names(&r.cmd(&["COMMAND", "LIST"]));
    let ours = names(&m.cmd(&["COMMAND", "LIST"]));
    let shared: Vec<&String> = theirs.iter().filter(|n| ours.contains(n)).collect();
    assert!(shared.len() >= 330, "only {} shared commands", shared.len());
    for (name, _) in DIFFERENT {
        assert!(shared.iter().any(|n| n == name), "{name} is listed as different but is not a command both servers have");
    }
    let mut identical = 0;
    let mut failures = Vec::new();
    for proto in ["2", "3"] {
        r.cmd(&["HELLO", proto]);
        m.cmd(&["HELLO", proto]);
        for name in &shared {
            let want = normalized(&r.cmd(&["COMMAND", "INFO", name]));
            let got = normalized(&m.cmd(&["COMMAND", "INFO", name]));
            let listed = DIFFERENT.iter().any(|(n, _)| n == name);
            match (want == got, listed) {
                (true, false) => identical += 1,
                (false, true) => {}
                (true, true) => failures.push(format!("RESP{proto} {name}: listed in DIFFERENT but identical")),
                (false, false) => failures.push(format!(
                    "RESP{proto} {name}:\n  redis:   {}\n  memoria: {}",
                    String::from_utf8_lossy(&want).escape_debug(),
                    String::from_utf8_lossy(&got).escape_debug()
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} COMMAND INFO replies differ:\n{}", failures.len(), 2 * shared.len(), failures.join("\n"));
    assert_eq!(identical, 2 * (shared.len() - DIFFERENT.len()));
}

/// Invocations whose keys (and key flags) both servers must report alike: every kind of
/// key spec (index, keyword, range, keynum, unknown, variable flags, not_key) and the
/// errors.
const INVOCATIONS: &[&[&str]] = &[
    &["SET", "k", "v"],
    &["SET", "k", "v", "EX", "10", "GET"],
    &["GET", "k"],
    &["MSET", "a", "1", "b", "2"],
    &["DEL", "a", "b", "c"],
    &["RENAME", "a", "b"],
    &["LMOVE", "a", "b", "LEFT", "RIGHT"],
    &["COPY", "a", "b"],
    &["SMOVE", "a", "b", "m"],
    &["BITOP", "AND", "d", "a", "b"],
    &["BITFIELD", "k", "GET", "u8", "0"],
    &["BITFIELD", "k", "GET", "u8", "0", "INCRBY", "u8", "0", "1"],
    &["BITFIELD", "k", "OVERFLOW", "SAT", "SET", "u8", "0", "1"],
    &["BITFIELD_RO", "k", "GET", "u8", "0"],
    &["SORT", "k", "BY", "w", "GET", "x", "STORE", "d"],
    &["SORT", "k", "LIMIT", "0", "1"],
    &["SORT_RO", "k", "BY", "w"],
    &["ZUNIONSTORE", "d", "2", "a", "b"],
    &["ZUNIONSTORE", "d", " 2", "a", "b"],
    &["ZINTER", "2", "a", "b", "WITHSCORES"],
    &["ZUNION", "x", "a"],
    &["SINTERCARD", "2", "a", "b", "LIMIT", "1"],
    &["LMPOP", "2", "a", "b", "LEFT"],
    &["BLMPOP", "0", "2", "a", "b", "LEFT"],
    &["BZMPOP", "0", "1", "a", "MIN"],
    &["EVAL", "return 1", "2", "a", "b", "c"],
    &["EVAL", "return 1", "0"],
    &["FCALL", "f", "1", "k", "x"],
    &["XREAD", "COUNT", "1", "STREAMS", "a", "b", "0", "0"],
    &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "a", ">"],
    &["XADD", "s", "*", "f", "v"],
    &["GEORADIUS", "k", "1", "2", "3", "m", "STORE", "a", "STOREDIST", "b"],
    &["GEORADIUSBYMEMBER", "k", "m", "3", "km", "STOREDIST", "a"],
    &["GEOSEARCHSTORE", "d", "s", "FROMMEMBER", "m", "BYRADIUS", "1", "m"],
    &["OBJECT", "ENCODING", "k"],
    &["MEMORY", "USAGE", "k"],
    &["XINFO", "STREAM", "s"],
    &["SSUBSCRIBE", "c"],
    &["SPUBLISH", "c", "m"],
    &["PING"],
    &["GET"],
    &["NOSUCH", "a"],
];

#[test]
fn getkeys_and_flags_are_redis_s() {
    let redis = RedisServer::start(&[]);
    let mem = Memoria::start();
    let mut r = Raw::connect(redis.port);
    let mut m = Raw::connect(mem.port);
    for proto in ["2", "3"] {
        r.cmd(&["HELLO", proto]);
        m.cmd(&["HELLO", proto]);
        for inv in INVOCATIONS {
            for sub in ["GETKEYS", "GETKEYSANDFLAGS"] {
                let argv: Vec<&str> = ["COMMAND", sub].iter().chain(inv.iter()).copied().collect();
                let want = r.cmd(&argv);
                let got = m.cmd(&argv);
                assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want), "RESP{proto} {argv:?}");
            }
        }
    }
}
