//! `memoria up --cluster` as a cluster-aware user meets it: cluster.json tells the truth
//! about the nodes, the stable endpoint leads to the primary, nodes answer CLUSTER
//! SLOTS/SHARDS and redirect writes sent to a replica with -MOVED, and WAIT counts the
//! replicas that applied the caller's writes. (Without --cluster one shard is a standalone
//! server: `standalone.rs`.)

mod common;

use std::time::Duration;

use common::{Up, tempdir};
use memoria_e2e::workload::{Conn, Reply};

fn int(r: Reply) -> i64 {
    match r {
        Reply::Int(i) => i,
        other => panic!("expected an integer, got {other:?}"),
    }
}

#[test]
fn nodes_cluster_json_cluster_commands_and_wait() {
    let dir = tempdir("up");
    let up = Up::start_with(&dir, 2, None, vec!["--cluster".into()]);
    let c = up.wait_all_serving(Duration::from_secs(60));
    assert_eq!(c.nodes.len(), 3);
    for n in &c.nodes {
        let pid = n.pid.expect("a running node has a pid");
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists(), "{} pid {pid} is not running", n.name);
    }
    let primary = c.nodes.iter().find(|n| n.role == "primary").unwrap().clone();
    let replicas: Vec<_> = c.nodes.iter().filter(|n| n.role == "replica").cloned().collect();
    assert_eq!(c.primary.as_deref(), Some(primary.name.as_str()));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut e = Conn::connect(&up.endpoint()).await.unwrap();
        // The endpoint is the primary.
        match e.request(&[b"ROLE"]).await.unwrap() {
            Reply::Array(Some(items)) => assert_eq!(items[0], Reply::Bulk(Some(b"master".to_vec()))),
            other => panic!("ROLE through the endpoint: {other:?}"),
        }
        assert_eq!(e.request(&[b"SET", b"w", b"1"]).await.unwrap(), Reply::Simple("OK".into()));
        // Both replicas apply it; WAIT says so, and they serve it.
        assert_eq!(int(e.request(&[b"WAIT", b"2", b"10000"]).await.unwrap()), 2);
        for r in &replicas {
            let mut rc = Conn::connect(&format!("127.0.0.1:{}", r.port)).await.unwrap();
            // A Redis Cluster replica sends reads to the primary unless asked for READONLY.
            assert_eq!(rc.request(&[b"GET", b"w"]).await.unwrap(), Reply::Error(format!("MOVED 3696 127.0.0.1:{}", primary.port)));
            assert_eq!(rc.request(&[b"READONLY"]).await.unwrap(), Reply::Simple("OK".into()));
            assert_eq!(rc.request(&[b"GET", b"w"]).await.unwrap(), Reply::Bulk(Some(b"1".to_vec())));
        }
        // More replicas than exist: the timeout decides, and the answer is the count.
        assert_eq!(int(e.request(&[b"WAIT", b"3", b"200"]).await.unwrap()), 2);
        assert!(matches!(e.request(&[b"WAIT", b"1", b"-1"]).await.unwrap(), Reply::Error(m) if m == "ERR timeout is negative"));

        // A replica sends writes to the primary, with the key's slot.
        let mut rc = Conn::connect(&format!("127.0.0.1:{}", replicas[0].port)).await.unwrap();
        let slot = int(rc.request(&[b"CLUSTER", b"KEYSLOT", b"foo"]).await.unwrap());
        assert_eq!(slot, 12182);
        assert_eq!(rc.request(&[b"SET", b"foo", b"x"]).await.unwrap(), Reply::Error(format!("MOVED 12182 127.0.0.1:{}", primary.port)));
        // CLUSTER SLOTS: all slots, the primary first, then its replicas.
        match rc.request(&[b"CLUSTER", b"SLOTS"]).await.unwrap() {
            Reply::Array(Some(ranges)) => {
                assert_eq!(ranges.len(), 1);
                let Reply::Array(Some(r)) = &ranges[0] else { panic!("{ranges:?}") };
                assert_eq!((&r[0], &r[1]), (&Reply::Int(0), &Reply::Int(16383)));
                let Reply::Array(Some(first)) = &r[2] else { panic!("{r:?}") };
                assert_eq!(first[1], Reply::Int(primary.port as i64), "the primary comes first: {r:?}");
                // The primary and every replica that tails the log (the list is refreshed
                // every second).
                assert!(r.len() >= 3, "{r:?}");
            }
            other => panic!("CLUSTER SLOTS: {other:?}"),
        }
        match rc.request(&[b"CLUSTER", b"INFO"]).await.unwrap() {
            Reply::Bulk(Some(t)) => assert!(String::from_utf8_lossy(&t).contains("cluster_state:ok"), "{}", String::from_utf8_lossy(&t)),
            other => panic!("CLUSTER INFO: {other:?}"),
        }
        // The primary lists its replicas once it has seen them read the log.
        let mut pc = Conn::connect(&format!("127.0.0.1:{}", primary.port)).await.unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let Reply::Array(Some(ranges)) = pc.request(&[b"CLUSTER", b"SLOTS"]).await.unwrap() else { panic!() };
            let Reply::Array(Some(r)) = &ranges[0] else { panic!() };
            if r.len() == 5 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "the primary does not list both replicas: {r:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

/// A failure to start is one line on stderr, `Error: …` with its cause, even with
/// RUST_BACKTRACE=1 (anyhow's report of an error returned from `main` adds a stack
/// backtrace then).
#[test]
fn a_port_in_use_is_one_line_of_error() {
    let dir = tempdir("up-port-taken");
    let port = common::free_port();
    let _taken = std::net::TcpListener::bind(("127.0.0.1", port)).expect("hold the port");
    let out = std::process::Command::new(common::memoria_bin())
        .args(["up", "--bind", "127.0.0.1", "--port", &port.to_string(), "--no-console", "--data-dir"])
        .arg(&dir)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run memoria up");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("Error: cannot listen on 127.0.0.1:{port}: ")) && err.contains("in use"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
