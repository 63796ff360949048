//! No request stalls a shard: pathological glob patterns (CVE-2022-36021, CVE-2024-31228)
//! through every command that matches patterns answer as redis-server 7.0.15 answers them,
//! and another client's PING is answered right after on the same shard (one thread: it
//! could not be if the pattern were still being matched).

mod common;

use common::{Memoria, Raw, RedisServer};

/// 40 `a`s: `a*` twenty times then `b` takes 2^40 steps on a matcher without Redis's
/// early exit.
const KEY: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const PATTERN: &str = "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b";

/// Runs `script` on both servers (one connection each) and checks that the replies are
/// identical, and that after each step a second connection's PING gets its PONG.
fn same_on_both(script: &[Vec<&str>]) {
    let m = Memoria::start();
    let r = RedisServer::start(&[]);
    let (mut mc, mut rc) = (Raw::connect(m.port), Raw::connect(r.port));
    let mut ping = Raw::connect(m.port);
    for cmd in script {
        let (got, want) = (mc.cmd(cmd), rc.cmd(cmd));
        assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(&want), "{cmd:?}");
        assert_eq!(ping.cmd(&["PING"]), b"+PONG\r\n", "after {cmd:?}");
    }
}

fn long_pattern(stars: usize) -> String {
    let mut p = "*a".repeat(stars);
    p.push('b');
    p
}

#[test]
fn keys_and_scans_with_pathological_patterns() {
    let deep = long_pattern(1200);
    same_on_both(&[
        vec!["SET", KEY, "1"],
        vec!["KEYS", PATTERN],
        vec!["SCAN", "0", "MATCH", PATTERN, "COUNT", "100"],
        vec!["KEYS", &deep],
        vec!["HSET", "h", KEY, "1"],
        vec!["HSCAN", "h", "0", "MATCH", PATTERN],
        vec!["SADD", "s", KEY],
        vec!["SSCAN", "s", "0", "MATCH", PATTERN],
        vec!["ZADD", "z", "1", KEY],
        vec!["ZSCAN", "z", "0", "MATCH", PATTERN],
        vec!["KEYS", "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*"],
    ]);
}

#[test]
fn pubsub_config_and_command_patterns() {
    let m = Memoria::start();
    let r = RedisServer::start(&[]);
    for port in [m.port, r.port] {
        let mut sub = Raw::connect(port);
        let mut publ = Raw::connect(port);
        let mut ping = Raw::connect(port);
        // PSUBSCRIBE's pattern is matched against every published channel.
        sub.cmd(&["PSUBSCRIBE", PATTERN]);
        sub.cmd(&["SUBSCRIBE", KEY]);
        assert_eq!(publ.cmd(&["PUBLISH", KEY, "m"]), b":1\r\n", "port {port}");
        assert_eq!(ping.cmd(&["PING"]), b"+PONG\r\n");
        assert_eq!(publ.cmd(&["PUBSUB", "CHANNELS", PATTERN]), b"*0\r\n");
        assert_eq!(ping.cmd(&["PING"]), b"+PONG\r\n");
    }
    let cfg = "h*h*h*h*h*h*h*h*h*h*h*h*h*h*h*h*h*h*h*h*x";
    same_on_both(&[vec!["CONFIG", "GET", cfg], vec!["COMMAND", "LIST", "FILTERBY", "PATTERN", "a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"]]);
}

#[test]
fn acl_key_and_channel_patterns() {
    let (keys, channels) = (format!("~{PATTERN}"), format!("&{PATTERN}"));
    let script: Vec<Vec<&str>> = vec![
        vec!["SET", KEY, "1"],
        vec!["ACL", "SETUSER", "u", "on", "nopass", "+@all", &keys, &channels],
        vec!["ACL", "DRYRUN", "u", "GET", KEY],
        vec!["ACL", "DRYRUN", "u", "PUBLISH", KEY, "m"],
    ];
    same_on_both(&script);
    // Enforcement itself, as the restricted user.
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    let mut ping = Raw::connect(m.port);
    for cmd in &script[..2] {
        c.cmd(cmd);
    }
    assert_eq!(c.cmd(&["AUTH", "u", "x"]), b"+OK\r\n");
    let got = String::from_utf8(c.cmd(&["GET", KEY])).unwrap();
    assert!(got.starts_with("-NOPERM"), "{got}");
    assert_eq!(ping.cmd(&["PING"]), b"+PONG\r\n");
}
