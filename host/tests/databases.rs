//! `databases`: how many a node serves is its `--databases` (as redis-server's setting);
//! SELECT, MOVE, SWAPDB and COPY … DB go by it, replies as redis-server 7.0.15 gives
//! with the same setting, and data in every database survives a restart (log replay and
//! snapshot), even on a node restarted with fewer databases.

mod common;

use common::{Raw, RedisServer};

fn text(b: Vec<u8>) -> String {
    String::from_utf8_lossy(&b).into_owned()
}

/// The same conversation with redis-server and `memoria up`, both with `databases 4`.
#[test]
fn databases_bound_select_move_swapdb_and_copy_as_redis_does() {
    let redis = RedisServer::start(&["--databases", "4"]);
    let dir = tempfile::tempdir().unwrap();
    let (_up, port) = common::memoria_up(&["--single-process", "--no-snapshots", "--data-dir", dir.path().to_str().unwrap(), "--databases", "4"]);
    let conversation = |port: u16| -> Vec<String> {
        let mut c = Raw::connect(port);
        let steps: &[&[&str]] = &[
            &["CONFIG", "GET", "databases"],
            &["SELECT", "3"],
            &["SET", "k3", "v"],
            &["SELECT", "4"],
            &["SELECT", "-1"],
            &["SELECT", "0"],
            &["SET", "a", "1"],
            &["MOVE", "a", "4"],
            &["MOVE", "a", "3"],
            &["SWAPDB", "0", "4"],
            &["SWAPDB", "4", "0"],
            &["SWAPDB", "0", "3"],
            &["DBSIZE"],
            &["COPY", "a", "b", "DB", "4"],
            &["COPY", "a", "b", "DB", "2"],
            &["INFO", "keyspace"],
            &["SELECT", "2"],
            &["GET", "b"],
            &["FLUSHDB"],
            &["INFO", "keyspace"],
        ];
        steps.iter().map(|s| format!("{s:?} -> {}", text(c.cmd(s)))).collect()
    };
    let want = conversation(redis.port);
    let got = conversation(port);
    let diffs: Vec<String> = want.iter().zip(&got).filter(|(w, g)| w != g).map(|(w, g)| format!("  redis:   {w}\n  memoria: {g}")).collect();
    assert!(diffs.is_empty(), "differs from redis-server:\n{}", diffs.join("\n"));
}

/// Keys in database 31 of a node with 32 databases: kept across a restart from the log, a
/// SAVE and a restart from that snapshot, and a restart with only 16 databases (the data
/// stays, as INFO keyspace shows; SELECT goes by the new setting).
#[test]
fn every_database_survives_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let up = |dbs: &str| common::memoria_up(&["--single-process", "--data-dir", &d, "--databases", dbs]);
    let (node, port) = up("32");
    let mut c = Raw::connect(port);
    assert_eq!(c.cmd(&["SELECT", "31"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["SET", "deep", "31"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["SELECT", "20"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["RPUSH", "list", "a", "b"]), b":2\r\n");
    drop(node);

    let (node, port) = up("32");
    let mut c = Raw::connect(port);
    assert_eq!(c.cmd(&["SELECT", "31"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["GET", "deep"]), b"$2\r\n31\r\n", "replayed from the log");
    assert_eq!(c.cmd(&["SAVE"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["SET", "after-save", "1"]), b"+OK\r\n");
    drop(node);

    let (_node, port) = up("16");
    let mut c = Raw::connect(port);
    assert_eq!(c.cmd(&["CONFIG", "GET", "databases"]), b"*2\r\n$9\r\ndatabases\r\n$2\r\n16\r\n");
    assert_eq!(c.cmd(&["SELECT", "31"]), b"-ERR DB index is out of range\r\n");
    let info = text(c.cmd(&["INFO", "keyspace"]));
    assert!(info.contains("db20:keys=1,expires=0") && info.contains("db31:keys=2,expires=0"), "{info}");
}
