//! MIGRATE in both directions against redis-server 7.0.15: the same conversation run from
//! a redis-server to another one (the oracle), from Memoria to a redis-server, from a
//! redis-server to Memoria and from Memoria to Memoria gives the same replies, and the
//! keys arrive with the same values, TTLs and databases; a failed transfer (connection
//! refused, the target's error) leaves the key at the source.

mod common;

use common::{Memoria, Raw, RedisServer};

/// A port nothing listens on (taken, then released).
fn dead_port() -> u16 {
    common::free_port()
}

/// Reads the value of `key` on `c` in a form that does not depend on the server (sets
/// sorted, a TTL as "has one").
fn value(c: &mut Raw, key: &str) -> String {
    let t = String::from_utf8_lossy(&c.cmd(&["TYPE", key])).trim().to_string();
    let v = match t.as_str() {
        "+string" => c.cmd(&["GET", key]),
        "+list" => c.cmd(&["LRANGE", key, "0", "-1"]),
        "+set" => c.cmd(&["SORT", key, "ALPHA"]),
        "+hash" => c.cmd(&["HGETALL", key]),
        "+zset" => c.cmd(&["ZRANGE", key, "0", "-1", "WITHSCORES"]),
        "+stream" => c.cmd(&["XRANGE", key, "-", "+"]),
        _ => Vec::new(),
    };
    let ttl = String::from_utf8_lossy(&c.cmd(&["PTTL", key])).trim().to_string();
    let ttl = if ttl.starts_with(":-") { ttl } else { "ttl>0".into() };
    format!("{t} {} {ttl}", String::from_utf8_lossy(&v))
}

/// The conversation: MIGRATE from `src` to `dst` in every form, each reply, then what
/// each side holds.
fn conversation(src: u16, dst: u16) -> Vec<String> {
    let mut s = Raw::connect(src);
    let mut d = Raw::connect(dst);
    s.cmd(&["FLUSHALL"]);
    d.cmd(&["FLUSHALL"]);
    for c in [
        &["SET", "s", "hello"][..],
        &["SET", "n", "12345", "PX", "100000"],
        &["RPUSH", "l", "a", "b", "c"],
        &["SADD", "st", "1", "2", "3"],
        &["SADD", "sm", "a", "b"],
        &["HSET", "h", "f", "v", "g", "w"],
        &["ZADD", "z", "1", "a", "2.5", "b"],
        &["XADD", "x", "1-1", "f", "v"],
        &["PFADD", "hll", "a", "b", "c"],
    ] {
        s.cmd(c);
    }
    d.cmd(&["SET", "busy", "target's"]);
    s.cmd(&["SET", "busy", "source's"]);
    let (host, port) = ("127.0.0.1".to_string(), dst.to_string());
    let dead = dead_port().to_string();
    let m = |args: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec!["MIGRATE".into(), host.clone(), port.clone()];
        v.extend(args.iter().map(|a| a.to_string()));
        v
    };
    let steps: Vec<Vec<String>> = vec![
        m(&["s", "0", "5000"]),
        m(&["nokey", "0", "5000"]),
        m(&["", "0", "5000", "KEYS", "l", "st", "nokey", "h"]),
        m(&["z", "0", "5000", "COPY"]),
        m(&["z", "0", "5000"]),
        m(&["z", "0", "5000", "REPLACE"]),
        m(&["n", "3", "5000"]),
        m(&["x", "0", "5000"]),
        m(&["hll", "0", "5000"]),
        m(&["busy", "0", "5000"]),
        m(&["s", "0", "5000", "KEYS", "l"]),
        m(&["s", "0", "5000", "BOGUS"]),
        m(&["s", "0", "abc"]),
        m(&["s", "x", "5000"]),
        m(&["s", "0", "5000", "AUTH"]),
        vec!["MIGRATE".into(), host.clone(), dead.clone(), "sm".into(), "0".into(), "300".into()],
    ];
    let mut out = Vec::new();
    for st in &steps {
        let r = s.cmd(st);
        out.push(format!("{} -> {}", st[3..].join(" "), String::from_utf8_lossy(&r).trim_end()));
    }
    for k in ["s", "l", "st", "sm", "h", "z", "x", "hll", "busy", "nokey"] {
        out.push(format!("source {k}: {}", value(&mut s, k)));
        out.push(format!("target {k}: {}", value(&mut d, k)));
    }
    d.cmd(&["SELECT", "3"]);
    out.push(format!("target db3 n: {}", value(&mut d, "n")));
    out.push(format!("source n: {}", value(&mut s, "n")));
    out
}

/// MIGRATE to a target that requires a password: wrong, right, AUTH2.
fn auth_conversation(src: u16, dst: u16) -> Vec<String> {
    let mut s = Raw::connect(src);
    let mut d = Raw::connect(dst);
    assert_eq!(d.cmd(&["AUTH", "pw"]), b"+OK\r\n");
    d.cmd(&["FLUSHALL"]);
    s.cmd(&["FLUSHALL"]);
    s.cmd(&["SET", "a", "1"]);
    s.cmd(&["SET", "b", "2"]);
    let port = dst.to_string();
    let mut out = Vec::new();
    for extra in [&[][..], &["AUTH", "wrong"], &["AUTH", "pw"], &["AUTH2", "default", "pw"]] {
        let key = if extra.first() == Some(&"AUTH2") { "b" } else { "a" };
        let mut args = vec!["MIGRATE", "127.0.0.1", &port, key, "0", "5000"];
        args.extend_from_slice(extra);
        out.push(format!("{extra:?} -> {}", String::from_utf8_lossy(&s.cmd(&args)).trim_end()));
    }
    out.push(format!("source: {}", String::from_utf8_lossy(&s.cmd(&["DBSIZE"])).trim_end()));
    out
}

fn assert_same(what: &str, want: &[String], got: &[String]) {
    assert_eq!(want.len(), got.len(), "{what}: different conversations");
    let diffs: Vec<String> = want.iter().zip(got).filter(|(w, g)| w != g).map(|(w, g)| format!("  redis:   {w}\n  memoria: {g}")).collect();
    assert!(diffs.is_empty(), "{what} differs from redis-server:\n{}", diffs.join("\n"));
}

#[test]
fn migrate_both_ways_as_redis_does() {
    assert!(common::which("redis-server").is_some(), "redis-server is needed: apt-get install -y redis-server");
    let (r1, r2) = (RedisServer::start(&[]), RedisServer::start(&[]));
    let (m1, m2) = (Memoria::start(), Memoria::start());
    let oracle = conversation(r1.port, r2.port);
    // The oracle itself says what the test is about.
    assert!(oracle[0].ends_with("-> +OK") && oracle[1].ends_with("-> +NOKEY"), "{oracle:?}");
    assert_same("Memoria to redis-server", &oracle, &conversation(m1.port, r2.port));
    assert_same("redis-server to Memoria", &oracle, &conversation(r1.port, m2.port));
    assert_same("Memoria to Memoria", &oracle, &conversation(m1.port, m2.port));
}

#[test]
fn migrate_with_auth_as_redis_does() {
    let r1 = RedisServer::start(&[]);
    // (Started without a password: the harness checks a server with INFO.)
    let r2 = RedisServer::start(&[]);
    assert_eq!(Raw::connect(r2.port).cmd(&["CONFIG", "SET", "requirepass", "pw"]), b"+OK\r\n");
    let m1 = Memoria::start();
    let m2 = Memoria::start_with_auth(memoria_host::acl::AuthOptions { requirepass: Some("pw".into()), ..Default::default() });
    let oracle = auth_conversation(r1.port, r2.port);
    assert!(oracle.iter().any(|l| l.contains("WRONGPASS")), "{oracle:?}");
    assert_same("Memoria to redis-server with AUTH", &oracle, &auth_conversation(m1.port, r2.port));
    assert_same("redis-server to Memoria with AUTH", &oracle, &auth_conversation(r1.port, m2.port));
}

/// A client blocked in MIGRATE keeps its pipeline in order, and other clients go on
/// meanwhile; CLIENT UNBLOCK cannot cut a transfer short.
#[test]
fn a_migrating_client_keeps_its_order_and_others_go_on() {
    let r = RedisServer::start(&[]);
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    c.cmd(&["SET", "k", "v"]);
    let port = r.port.to_string();
    c.send(&["MIGRATE", "127.0.0.1", &port, "k", "0", "5000"]);
    c.send(&["EXISTS", "k"]);
    c.send(&["SET", "k", "again"]);
    assert_eq!(c.read_reply(), b"+OK\r\n");
    assert_eq!(c.read_reply(), b":0\r\n");
    assert_eq!(c.read_reply(), b"+OK\r\n");
    let mut o = Raw::connect(m.port);
    assert_eq!(o.cmd(&["GET", "k"]), b"$5\r\nagain\r\n");
    assert_eq!(Raw::connect(r.port).cmd(&["GET", "k"]), b"$1\r\nv\r\n");
}

/// A client that goes away during a transfer stops it: the connection to the target
/// closes (MIGRATE's own timeout never comes), and the key stays at the source.
#[test]
fn a_transfer_stops_when_its_client_goes() {
    use std::io::Read;
    let port = common::free_port();
    let target = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let port = port.to_string();
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    c.cmd(&["SET", "k", "v"]);
    // A target that takes the request and never answers, and a MIGRATE timeout of about
    // 30 years: only the abort can close the connection (the read timeout below is a
    // guard against hanging, not a measure).
    c.send(&["MIGRATE", "127.0.0.1", &port, "k", "0", "1000000000000"]);
    let (mut conn, _) = target.accept().unwrap();
    drop(c);
    conn.set_read_timeout(Some(std::time::Duration::from_secs(300))).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match conn.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(e) => panic!("the transfer's connection stayed open after its client left: {e}"),
        }
    }
    let mut o = Raw::connect(m.port);
    assert_eq!(o.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
}
