//! SAVE and BGSAVE take a snapshot of the shard (the child `memoria snapshot` the
//! scheduler runs), LASTSAVE and INFO persistence report it, and a node without a log
//! refuses them. (Their replies inside MULTI and to bad arguments are redis-server's:
//! host/tests/memory.rs.)

mod common;

use std::time::{Duration, Instant};

use common::Raw;

fn persistence(c: &mut Raw, field: &str) -> String {
    let info = String::from_utf8(c.cmd(&["INFO", "persistence"])).unwrap();
    info.lines().find_map(|l| l.strip_prefix(&format!("{field}:"))).unwrap_or_else(|| panic!("no {field}: {info}")).to_string()
}

/// Snapshot manifests in the store under `dir`.
fn manifests(dir: &std::path::Path) -> usize {
    fn walk(p: &std::path::Path, n: &mut usize) {
        for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(&path, n);
            } else if path.parent().and_then(|d| d.file_name()).is_some_and(|d| d == "manifests") {
                *n += 1;
            }
        }
    }
    let mut n = 0;
    walk(dir, &mut n);
    n
}

#[test]
fn save_and_bgsave_publish_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (_n, port) = common::memoria_up(&["--single-process", "--no-snapshots", "--no-console", "--data-dir", data.to_str().unwrap()]);
    let mut c = Raw::connect(port);
    assert_eq!(c.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    assert_eq!(persistence(&mut c, "rdb_saves"), "0");
    assert_eq!(manifests(&data.join("snapshots")), 0);
    // SAVE answers once the snapshot (with the SET) is published; LASTSAVE and INFO know.
    assert_eq!(c.cmd(&["SAVE"]), b"+OK\r\n");
    assert_eq!(persistence(&mut c, "rdb_saves"), "1");
    assert_eq!(persistence(&mut c, "rdb_last_bgsave_status"), "ok");
    let lastsave = String::from_utf8(c.cmd(&["LASTSAVE"])).unwrap();
    assert_eq!(format!(":{}\r\n", persistence(&mut c, "rdb_last_save_time")), lastsave);
    assert_eq!(manifests(&data.join("snapshots")), 1);
    // BGSAVE answers at once and publishes in the background.
    assert_eq!(c.cmd(&["SET", "k", "w"]), b"+OK\r\n");
    // (What a second BGSAVE or a BGSAVE SCHEDULE gets while one runs is the unit test in
    // host/src/shard/save.rs: here it would depend on how long the snapshot takes.)
    assert_eq!(c.cmd(&["BGSAVE"]), b"+Background saving started\r\n");
    wait_saves(&mut c, "2");
    assert_eq!(manifests(&data.join("snapshots")), 2);
    // BGSAVE SCHEDULE with nothing under way starts at once, as in Redis.
    assert_eq!(c.cmd(&["BGSAVE", "SCHEDULE"]), b"+Background saving started\r\n");
    wait_saves(&mut c, "3");
}

/// Waits until `rdb_saves` reads `n` with nothing under way.
fn wait_saves(c: &mut Raw, n: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while persistence(c, "rdb_saves") != n || persistence(c, "rdb_bgsave_in_progress") != "0" {
        assert!(Instant::now() < deadline, "BGSAVE never finished");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_node_without_a_log_refuses_them() {
    let (_n, port) = common::memoria_up(&["--in-memory"]);
    let mut c = Raw::connect(port);
    for cmd in ["SAVE", "BGSAVE"] {
        let r = String::from_utf8(c.cmd(&[cmd])).unwrap();
        assert!(r.starts_with("-ERR this node takes no snapshots"), "{cmd}: {r}");
    }
}
