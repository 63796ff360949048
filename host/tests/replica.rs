//! Replicas tail the shard log (never the primary) and apply its effects: they serve
//! reads, refuse writes with -READONLY, report their offset, and stop applying at an
//! entry written in a newer format instead of misreading it.

mod common;

use std::time::{Duration, Instant};

use common::Raw;
use memoria_log::LogApi;

/// Polls the replica until `GET key` returns `want` (a liveness wait, not a timing check).
fn wait_for(c: &mut Raw, key: &str, want: &[u8]) {
    wait_reply(c, &["GET", key], want)
}

#[test]
fn replica_applies_the_log_and_refuses_writes() {
    let p = common::start_logged_pair("replica");
    let mut pc = Raw::connect(p.primary);
    let mut rc = Raw::connect(p.replica);
    assert_eq!(pc.cmd(&["SET", "a", "1"]), b"+OK\r\n");
    pc.cmd(&["HSET", "h", "f", "v"]);
    pc.cmd(&["SET", "t", "x", "EX", "1000"]);
    pc.cmd(&["MULTI"]);
    pc.cmd(&["INCR", "a"]);
    pc.cmd(&["SELECT", "2"]);
    pc.cmd(&["SET", "in2", "y"]);
    pc.cmd(&["EXEC"]);
    pc.cmd(&["SELECT", "0"]);
    pc.cmd(&["SET", "last", "z"]);
    wait_for(&mut rc, "last", b"$1\r\nz\r\n");
    assert_eq!(rc.cmd(&["GET", "a"]), b"$1\r\n2\r\n");
    assert_eq!(rc.cmd(&["HGET", "h", "f"]), b"$1\r\nv\r\n");
    // The expiry travels as an absolute time: the replica's is the primary's, to the
    // millisecond (compared as instants, so no claim on how long any of this took).
    let at = pc.cmd(&["PEXPIRETIME", "t"]);
    assert!(at.starts_with(b":") && !at.starts_with(b":-"), "the primary has an expiry: {}", String::from_utf8_lossy(&at));
    assert_eq!(rc.cmd(&["PEXPIRETIME", "t"]), at, "TTL replicated as an absolute expiry");
    rc.cmd(&["SELECT", "2"]);
    assert_eq!(rc.cmd(&["GET", "in2"]), b"$1\r\ny\r\n");

    // Writes are refused, inside MULTI too (the transaction is aborted).
    assert_eq!(rc.cmd(&["SET", "a", "3"]), b"-READONLY You can't write against a read only replica.\r\n");
    rc.cmd(&["MULTI"]);
    rc.cmd(&["DEL", "a"]);
    assert_eq!(rc.cmd(&["EXEC"]), b"-EXECABORT Transaction discarded because of previous errors.\r\n");

    let info = String::from_utf8_lossy(&rc.cmd(&["INFO", "replication"])).to_string();
    assert!(info.contains("role:slave"), "{info}");
    assert!(info.contains("master_link_status:up"), "{info}");
    let role = String::from_utf8_lossy(&rc.cmd(&["ROLE"])).to_string();
    assert!(role.starts_with("*5\r\n$5\r\nslave\r\n"), "{role}");
    let prole = String::from_utf8_lossy(&pc.cmd(&["ROLE"])).to_string();
    assert!(prole.starts_with("*3\r\n$6\r\nmaster\r\n"), "{prole}");
}

#[test]
fn replica_stops_at_a_newer_format() {
    let p = common::start_logged_pair("replica");
    let mut pc = Raw::connect(p.primary);
    let mut rc = Raw::connect(p.replica);
    pc.cmd(&["SET", "before", "1"]);
    wait_for(&mut rc, "before", b"$1\r\n1\r\n");

    // A future writer's entry, appended at the tail with the primary's epoch.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let head = LogApi::head(&p.log, "shard-0").await.unwrap();
        let mut e = memoria_log::NewEntry::data(b"\x00future-bytes".to_vec());
        e.format = memoria_log::FORMAT_VERSION + 1;
        LogApi::append(&p.log, "shard-0", head.id, head.epoch, vec![e]).await.unwrap();
    });
    // The primary's next write lands after it (a fresh append at the new tail fails as a
    // conflict, so the primary rebuilds; either way the replica must not apply past it).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let info = String::from_utf8_lossy(&rc.cmd(&["INFO", "replication"])).to_string();
        if info.contains("memoria_apply_stopped:") {
            assert!(info.contains("master_link_status:down"), "{info}");
            assert!(info.contains("newer than this build"), "{info}");
            break;
        }
        assert!(Instant::now() < deadline, "replica did not report the newer format: {info}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(rc.cmd(&["GET", "before"]), b"$1\r\n1\r\n");
}

/// Polls `cmd` on `c` until its reply is `want` (a liveness wait, not a timing check).
fn wait_reply(c: &mut Raw, cmd: &[&str], want: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c.cmd(cmd);
        if r == want {
            return;
        }
        assert!(Instant::now() < deadline, "{cmd:?} never answered {:?} (last {:?})", String::from_utf8_lossy(want), String::from_utf8_lossy(&r));
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Hash-field TTLs travel through the log as absolute times, and an expired field leaves
/// the replica by the primary's HDEL (active expiry), which takes the hash with its last
/// field.
#[test]
fn replica_follows_hash_field_expiry() {
    let p = common::start_logged_pair("replica-hfe");
    let mut pc = Raw::connect(p.primary);
    let mut rc = Raw::connect(p.replica);
    assert_eq!(pc.cmd(&["HSET", "h", "a", "1", "b", "2"]), b":2\r\n");
    assert_eq!(pc.cmd(&["HEXPIRE", "h", "1000", "FIELDS", "1", "b"]), b"*1\r\n:1\r\n");
    assert_eq!(pc.cmd(&["HPEXPIRE", "h", "300", "FIELDS", "1", "a"]), b"*1\r\n:1\r\n");
    let at = String::from_utf8_lossy(&pc.cmd(&["HPEXPIRETIME", "h", "FIELDS", "1", "b"])).to_string();
    pc.cmd(&["SET", "mark", "1"]);
    wait_for(&mut rc, "mark", b"$1\r\n1\r\n");
    assert_eq!(String::from_utf8_lossy(&rc.cmd(&["HPEXPIRETIME", "h", "FIELDS", "1", "b"])), at, "the same absolute expiry");
    // `a` goes by itself (the primary's active expiry logs HDEL), `b` by HPEXPIREAT 1.
    wait_reply(&mut rc, &["HGETALL", "h"], b"*2\r\n$1\r\nb\r\n$1\r\n2\r\n");
    assert_eq!(pc.cmd(&["HPEXPIREAT", "h", "1", "FIELDS", "1", "b"]), b"*1\r\n:2\r\n");
    wait_reply(&mut rc, &["EXISTS", "h"], b":0\r\n");
    assert_eq!(pc.cmd(&["EXISTS", "h"]), b":0\r\n");
}
