//! AUTH and ACL over the wire: replies compared byte for byte with a real redis-server
//! 7.0.15 where they are deterministic, and a node started with a password.

mod common;

use common::{Memoria, Raw, RedisServer};

/// Commands whose replies are deterministic on both servers, each on its connection
/// (0 = admin, 1 = a restricted client, 2 = a client that connects after requirepass is
/// set). Connections open at their first command.
const SCRIPT: &[(usize, &[&str])] = &[
    (0, &["ACL", "WHOAMI"]),
    (0, &["ACL", "USERS"]),
    (0, &["ACL", "LIST"]),
    (0, &["ACL", "CAT"]),
    (0, &["ACL", "CAT", "nosuch"]),
    (0, &["ACL", "GETUSER", "default"]),
    (0, &["ACL", "GETUSER", "nosuch"]),
    (0, &["AUTH", "pw"]),
    (0, &["AUTH", "nosuch", "pw"]),
    (0, &["AUTH", "a", "b", "c"]),
    (0, &["ACL", "SETUSER", "u1", "on", ">pw", "~app:*", "+@read"]),
    (0, &["ACL", "GETUSER", "u1"]),
    // (Rules that leave many single commands after the categories are listed in each
    // server's own command order: see DELIBERATE_DIFFERENCES.)
    (0, &["ACL", "SETUSER", "u2", "%R~r:*", "%W~w:*", "&ch*", "+@hash", "-hgetall", "-@dangerous"]),
    (0, &["ACL", "GETUSER", "u2"]),
    (0, &["ACL", "SETUSER", "u3", "on", "nopass", "allkeys", "allchannels", "+@all", "-@write"]),
    (0, &["ACL", "GETUSER", "u3"]),
    (0, &["ACL", "SETUSER", "u4", "#2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b", "resetchannels", "-@all", "+get"]),
    (0, &["ACL", "GETUSER", "u4"]),
    (0, &["ACL", "SETUSER", "u4", "!2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b", "nocommands", "+client|id"]),
    (0, &["ACL", "GETUSER", "u4"]),
    (0, &["ACL", "SETUSER", "u5", "reset"]),
    (0, &["ACL", "LIST"]),
    (0, &["ACL", "USERS"]),
    (0, &["ACL", "SETUSER", "bad", "bogus"]),
    (0, &["ACL", "SETUSER", "bad", "+nosuch"]),
    (0, &["ACL", "SETUSER", "bad", "+@nosuch"]),
    (0, &["ACL", "SETUSER", "bad", "#abc"]),
    (0, &["ACL", "SETUSER", "bad", "<nopw"]),
    (0, &["ACL", "SETUSER", "bad", "~*", "~x"]),
    (0, &["ACL", "SETUSER", "bad", "&*", "&x"]),
    (0, &["ACL", "SETUSER", "bad", "+client|id|x"]),
    (0, &["ACL", "SETUSER", "bad", "+get|"]),
    (0, &["ACL", "SETUSER", "bad user"]),
    (0, &["ACL", "GETUSER", "bad"]),
    (0, &["ACL", "DELUSER", "default"]),
    (0, &["ACL", "DELUSER", "u5", "nosuch"]),
    (0, &["ACL", "DRYRUN", "u1", "get", "other:x"]),
    (0, &["ACL", "DRYRUN", "u1", "get", "app:1"]),
    (0, &["ACL", "DRYRUN", "u1", "set", "app:1", "v"]),
    (0, &["ACL", "DRYRUN", "u1", "config", "get", "x"]),
    (0, &["ACL", "DRYRUN", "u2", "set", "w:1", "v"]),
    (0, &["ACL", "DRYRUN", "u2", "hset", "r:1", "f", "v"]),
    (0, &["ACL", "DRYRUN", "u2", "hget", "w:1", "f"]),
    (0, &["ACL", "DRYRUN", "u3", "publish", "any", "m"]),
    (0, &["ACL", "DRYRUN", "nosuch", "get", "a"]),
    (0, &["ACL", "DRYRUN", "u1", "get"]),
    (0, &["ACL", "DRYRUN", "u1", "config"]),
    (0, &["ACL", "DRYRUN", "u1", "config", "nosub"]),
    (0, &["ACL", "DRYRUN", "default", "get", "a", "b"]),
    (0, &["ACL", "SETUSER", "z", "+@all", "-client", "+client|id"]),
    (0, &["ACL", "GETUSER", "z"]),
    (0, &["ACL", "SETUSER", "y", "+select|0", "+select|1", "-select"]),
    (0, &["ACL", "GETUSER", "y"]),
    (0, &["ACL", "SETUSER", "w", "%RW~x", "%R~x", "%Z~y"]),
    (0, &["ACL", "SETUSER", "w2", "%R"]),
    (0, &["ACL", "GETUSER", "w2"]),
    (0, &["ACL", "SETUSER", "v", "+@all", "-@read", "+get"]),
    (0, &["ACL", "GETUSER", "v"]),
    (0, &["ACL", "DELUSER", "z", "y", "w", "w2", "v"]),
    (0, &["ACL", "DRYRUN", "u1", "nosuch", "a"]),
    (0, &["ACL", "GENPASS", "0"]),
    (0, &["ACL", "GENPASS", "x"]),
    (0, &["ACL", "LOG", "x"]),
    (0, &["ACL", "LOG", "RESET"]),
    (0, &["ACL", "LOG"]),
    (0, &["ACL", "LOAD"]),
    (0, &["ACL", "NOSUCH"]),
    (0, &["ACL"]),
    (0, &["SET", "app:1", "v"]),
    (1, &["AUTH", "u1", "wrong"]),
    (1, &["AUTH", "u1", "pw"]),
    (1, &["ACL", "WHOAMI"]),
    (1, &["GET", "app:1"]),
    (1, &["GET", "other:x"]),
    (1, &["MGET", "app:1", "other:x"]),
    (1, &["SET", "app:1", "w"]),
    (1, &["ACL", "SETUSER", "x"]),
    (1, &["MULTI"]),
    (1, &["SUBSCRIBE", "c"]),
    (0, &["ACL", "SETUSER", "u1", "+multi", "+exec", "+set"]),
    (1, &["MULTI"]),
    (1, &["GET", "other:y"]),
    (1, &["EXEC"]),
    (1, &["MULTI"]),
    (1, &["SET", "app:2", "x"]),
    (0, &["ACL", "SETUSER", "u1", "-set"]),
    (1, &["EXEC"]),
    (0, &["CONFIG", "SET", "requirepass", "secret"]),
    (2, &["GET", "app:1"]),
    (2, &["PING"]),
    (2, &["HELLO", "3"]),
    (2, &["HELLO", "2", "AUTH", "default", "bad"]),
    (2, &["AUTH", "bad"]),
    (2, &["NOSUCH"]),
    (2, &["AUTH", "secret"]),
    (2, &["GET", "app:1"]),
    (2, &["ACL", "WHOAMI"]),
    (2, &["RESET"]),
    (2, &["GET", "app:1"]),
    (0, &["ACL", "LIST"]),
    (0, &["CONFIG", "SET", "requirepass", ""]),
    (0, &["ACL", "LIST"]),
    (2, &["GET", "app:1"]),
];

/// Redis lists a user's single-command rules (`+exec +multi`) in the order of its command
/// dict, which is hashed with a random seed per process: compare them as a set. Each
/// trailing run of `+cmd`/`-cmd` words on a line is sorted (same length, so RESP lengths
/// stay right).
fn single_commands_sorted(reply: Vec<u8>) -> Vec<u8> {
    let text = String::from_utf8_lossy(&reply).into_owned();
    let lines: Vec<String> = text
        .split("\r\n")
        .map(|line| {
            let mut words: Vec<&str> = line.split(' ').collect();
            let start = words.iter().rposition(|w| !((w.starts_with('+') || w.starts_with('-')) && !w.contains('@'))).map_or(0, |i| i + 1);
            words[start..].sort_unstable();
            words.join(" ")
        })
        .collect();
    lines.join("\r\n").into_bytes()
}

#[test]
fn acl_replies_match_redis() {
    assert!(common::which("redis-server").is_some(), "redis-server is needed: apt-get install -y redis-server");
    let redis = RedisServer::start(&[]);
    let mem = Memoria::start();
    let mut r: Vec<Option<Raw>> = (0..3).map(|_| None).collect();
    let mut m: Vec<Option<Raw>> = (0..3).map(|_| None).collect();
    let mut diffs = Vec::new();
    for (who, cmd) in SCRIPT {
        let a = r[*who].get_or_insert_with(|| Raw::connect(redis.port)).cmd(cmd);
        let b = m[*who].get_or_insert_with(|| Raw::connect(mem.port)).cmd(cmd);
        let (a, b) = (single_commands_sorted(a), single_commands_sorted(b));
        if a != b {
            diffs.push(format!("{cmd:?}\n  redis:   {:?}\n  memoria: {:?}", String::from_utf8_lossy(&a), String::from_utf8_lossy(&b)));
        }
    }
    assert!(diffs.is_empty(), "{} replies differ:\n{}", diffs.len(), diffs.join("\n"));
}

/// ACL CAT <category> lists the same commands (Redis lists them in hash-table order, so
/// compared as sets) for the commands Memoria implements.
#[test]
fn acl_cat_matches_redis_for_implemented_commands() {
    assert!(common::which("redis-server").is_some(), "redis-server is needed: apt-get install -y redis-server");
    let redis = RedisServer::start(&[]);
    let mem = Memoria::start();
    let mut r = Raw::connect(redis.port);
    let mut m = Raw::connect(mem.port);
    let ours: std::collections::BTreeSet<String> = memoria_core::commands::table::COMMANDS
        .iter()
        .flat_map(|c| std::iter::once(c.name).chain(c.subcommands.iter().map(|s| s.name)))
        .map(String::from)
        .collect();
    // Commands redis-server 7.0 does not have (hash-field expiry, CLIENT SETINFO, …).
    let newer: std::collections::BTreeSet<String> = memoria_core::commands::table::COMMANDS
        .iter()
        .flat_map(|c| std::iter::once(c).chain(c.subcommands.iter()))
        .filter(|c| {
            let mut v = c.since.split('.').map(|n| n.parse::<u32>().unwrap_or(0));
            (v.next().unwrap_or(0), v.next().unwrap_or(0)) > (7, 0)
        })
        .map(|c| c.name.to_string())
        .collect();
    let cats = [
        "keyspace",
        "read",
        "write",
        "set",
        "sortedset",
        "list",
        "hash",
        "string",
        "bitmap",
        "hyperloglog",
        "stream",
        "pubsub",
        "admin",
        "fast",
        "slow",
        "blocking",
        "dangerous",
        "connection",
        "transaction",
    ];
    for cat in cats {
        let parse = |b: Vec<u8>| -> std::collections::BTreeSet<String> {
            let t = String::from_utf8_lossy(&b).into_owned();
            t.split("\r\n").filter(|l| !l.starts_with('*') && !l.starts_with('$') && !l.is_empty()).map(String::from).collect()
        };
        let want: std::collections::BTreeSet<String> = parse(r.cmd(&["ACL", "CAT", cat])).into_iter().filter(|c| ours.contains(c)).collect();
        let got: std::collections::BTreeSet<String> =
            parse(m.cmd(&["ACL", "CAT", cat])).into_iter().filter(|c| !newer.contains(c) && c != "migration" && !c.starts_with("migration|")).collect();
        assert_eq!(got, want, "category {cat}");
    }
}

#[test]
fn a_node_started_with_requirepass_requires_auth() {
    let mem = Memoria::start_with_auth(memoria_host::acl::AuthOptions { requirepass: Some("s3cret".into()), ..Default::default() });
    let mut c = Raw::connect(mem.port);
    assert_eq!(c.cmd(&["GET", "a"]), b"-NOAUTH Authentication required.\r\n");
    assert_eq!(c.cmd(&["AUTH", "nope"]), b"-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    assert_eq!(c.cmd(&["AUTH", "s3cret"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["SET", "a", "1"]), b"+OK\r\n");
    let list = c.cmd(&["ACL", "LIST"]);
    assert!(!String::from_utf8_lossy(&list).contains("s3cret"));
    let mut d = Raw::connect(mem.port);
    assert_eq!(d.cmd(&["HELLO", "2", "AUTH", "default", "s3cret"]).first(), Some(&b'*'));
    assert_eq!(d.cmd(&["GET", "a"]), b"$1\r\n1\r\n");
}
