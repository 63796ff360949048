//! The kill -9 drill on the three-AZ shape: PostgreSQL in three simulated AZs with quorum
//! synchronous replication and one memoria-log service per AZ (e2e/pg3az), three
//! `memoria server` nodes each pointed at all three services. The primary node is killed
//! under load MEMORIA_DRILL_ROUNDS times (default 20) and started again by the test (as a
//! supervisor would); every acknowledged write must survive and the history must be
//! linearizable. Recovery times are printed, not asserted.

mod common;

use std::time::{Duration, Instant};

use common::{Nodes, Pg3Az, distribution, tempdir};
use memoria_e2e::workload::{Config, Conn, Reply, Workload};

/// Memoria's default lease.
const LEASE_MS: Option<u64> = None;

fn rounds() -> usize {
    std::env::var("MEMORIA_DRILL_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(20)
}

#[test]
fn kill9_the_primary_on_three_azs() {
    let dir = tempdir("pg3az-nodes");
    let pg = Pg3Az::up();
    let urls = pg.urls();
    let mut nodes = Nodes::start(&dir, vec![urls.clone(); 3], &pg.token, LEASE_MS);
    nodes.wait_all_up(Duration::from_secs(60));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut recoveries = Vec::new();
    rt.block_on(async {
        let mut cfg = Config::new(nodes.addrs());
        cfg.clients = 16;
        let w = Workload::start(cfg);
        assert!(w.wait_for_ok(100, Duration::from_secs(60)).await, "the load never got going: {}", w.stats());
        for round in 0..rounds() {
            let p = nodes.wait_primary(Duration::from_secs(30), None);
            let t0 = Instant::now();
            nodes.kill9(p);
            let took = first_ack(&nodes.addrs(), p, &format!("probe:{round}"), t0).await;
            println!("round {round}: killed node {p}; first write acknowledged after {} ms", took.as_millis());
            recoveries.push(took);
            nodes.restart(p);
            let before = w.stats().ok;
            assert!(w.wait_for_ok(before + 300, Duration::from_secs(30)).await, "round {round}: the load did not resume: {}", w.stats());
            nodes.wait_all_up(Duration::from_secs(60));
        }
        let r = w.stop().await;
        common::assert_no_loss_and_linearizable(&nodes.addrs(), &r, "3-AZ kill -9 drill").await;
    });
    println!("{}", distribution("3-AZ recovery: primary killed -> first acknowledged write", &recoveries));
}

/// Tries the surviving nodes until one acknowledges a write; the time it took, for the
/// report (the deadline only catches a hang: no claim on how fast recovery is).
async fn first_ack(addrs: &[String], dead: usize, key: &str, started: Instant) -> Duration {
    let deadline = started + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "no write was ever acknowledged after the kill (hung)");
        for (i, a) in addrs.iter().enumerate() {
            if i == dead {
                continue;
            }
            if let Ok(Ok(mut c)) = tokio::time::timeout(Duration::from_millis(300), Conn::connect(a)).await
                && let Ok(Ok(Reply::Simple(s))) = tokio::time::timeout(Duration::from_secs(3), c.request(&[b"SET", key.as_bytes(), b"probe"])).await
                && s == "OK"
            {
                return started.elapsed();
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
