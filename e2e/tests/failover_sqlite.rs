//! Failover drills against `memoria up` (embedded SQLite log, every node its own process):
//! (a) kill -9 the primary under load, again and again; (b) freeze it (SIGSTOP) past its
//! lease and resume it; (d) kill every node at once, and the supervisor with them.
//! Throughout, clients keep a ledger of acknowledged writes and a history of GET/SET/INCR/
//! APPEND on a few keys: afterwards every acknowledged write must be readable and the
//! history must be linearizable (memoria_e2e::linearizability). (c), cutting the primary
//! off from its log, is in partition.rs.
//!
//! MEMORIA_DRILL_ROUNDS (default 20) kills per run. The recovery time of each failover
//! (kill -9 → first write acknowledged through the stable endpoint) is printed as a
//! distribution; e2e/recovery-time runs this drill for it. No timing is asserted.

mod common;

use std::time::{Duration, Instant};

use common::{Up, distribution, signal, tempdir};
use memoria_e2e::workload::{Config, Conn, Reply, RunResult, Workload};

/// Memoria's default lease.
const LEASE_MS: Option<u64> = None;

fn rounds() -> usize {
    std::env::var("MEMORIA_DRILL_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(20)
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn load(up: &Up) -> Config {
    // The stable endpoint first, then the nodes themselves (as a cluster-aware client
    // would find them).
    let mut nodes = vec![up.endpoint()];
    nodes.extend(up.node_addrs());
    let mut cfg = Config::new(nodes);
    cfg.clients = 16;
    cfg.keys = 4;
    cfg
}

async fn check(up: &Up, r: &RunResult, what: &str) {
    common::assert_no_loss_and_linearizable(&[up.endpoint()], r, what).await;
}

/// Writes through the stable endpoint until one is acknowledged; the time it took, for
/// the report (`guard` only catches a hang: no claim on how fast recovery is).
async fn first_ack(endpoint: &str, key: &str, started: Instant, guard: Duration) -> Duration {
    let deadline = started + guard;
    loop {
        assert!(Instant::now() < deadline, "no write was ever acknowledged after the failure (hung)");
        if let Ok(Ok(mut c)) = tokio::time::timeout(Duration::from_millis(500), Conn::connect(endpoint)).await {
            loop {
                match tokio::time::timeout(Duration::from_secs(3), c.request(&[b"SET", key.as_bytes(), b"probe"])).await {
                    Ok(Ok(Reply::Simple(s))) if s == "OK" => return started.elapsed(),
                    Ok(Ok(Reply::Error(_))) => tokio::time::sleep(Duration::from_millis(10)).await,
                    _ => break,
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn kill9_the_primary_under_load_again_and_again() {
    let dir = tempdir("kill9");
    let up = Up::start(&dir, 2, LEASE_MS);
    up.wait_all_serving(Duration::from_secs(60));
    let rt = rt();
    let mut recoveries = Vec::new();
    let result = rt.block_on(async {
        let w = Workload::start(load(&up));
        assert!(w.wait_for_ok(100, Duration::from_secs(30)).await, "the load never got going: {}", w.stats());
        for round in 0..rounds() {
            let primary = up.wait_primary(Duration::from_secs(30), None);
            let pid = primary.pid.unwrap();
            let t0 = Instant::now();
            signal(pid, "KILL");
            let took = first_ack(&up.endpoint(), &format!("probe:{round}"), t0, Duration::from_secs(30)).await;
            let new = up.wait_primary(Duration::from_secs(30), Some(&primary.name));
            println!("round {round}: killed {} (pid {pid}); {} leads; first write acknowledged after {} ms", primary.name, new.name, took.as_millis());
            recoveries.push(took);
            // Let the load run on the new primary, and the killed node come back.
            let before = w.stats().ok;
            assert!(w.wait_for_ok(before + 300, Duration::from_secs(30)).await, "round {round}: the load did not resume: {}", w.stats());
            up.wait_all_serving(Duration::from_secs(60));
        }
        let r = w.stop().await;
        check(&up, &r, "kill -9 drill").await;
        r
    });
    println!("{}", distribution("recovery: primary killed -> first acknowledged write", &recoveries));
    let c = up.cluster().unwrap();
    let restarts: u32 = c.nodes.iter().map(|n| n.restarts).sum();
    assert_eq!(restarts as usize, rounds(), "every killed node was started again: {c:?}");
    drop(result);
}

/// (b) A frozen primary is replaced once its lease has surely run out; resumed, it must
/// not acknowledge anything sent to it meanwhile, and must not answer reads from its stale
/// memory: everything queued on its connections gets an error or a closed connection.
#[test]
fn sigstop_the_primary_past_its_lease() {
    let dir = tempdir("sigstop");
    let up = Up::start(&dir, 1, LEASE_MS);
    up.wait_all_serving(Duration::from_secs(60));
    let rt = rt();
    rt.block_on(async {
        let w = Workload::start(load(&up));
        assert!(w.wait_for_ok(100, Duration::from_secs(30)).await, "the load never got going: {}", w.stats());
        let old = up.wait_primary(Duration::from_secs(30), None);
        let mut direct = Conn::connect(&format!("127.0.0.1:{}", old.port)).await.unwrap();
        assert!(matches!(direct.request(&[b"SET", b"frozen:k", b"before"]).await.unwrap(), Reply::Simple(_)));
        signal(old.pid.unwrap(), "STOP");
        let frozen_at = Instant::now();
        let new = up.wait_primary(Duration::from_secs(30), Some(&old.name));
        println!("{} frozen; {} leads after {} ms", old.name, new.name, frozen_at.elapsed().as_millis());
        // The new primary takes a write the old one never saw.
        let mut c = Conn::connect(&up.endpoint()).await.unwrap();
        assert!(matches!(c.request(&[b"SET", b"frozen:k", b"after"]).await.unwrap(), Reply::Simple(_)));
        // Queue writes and reads on the frozen node, then wake it up.
        let cmds: Vec<Vec<&[u8]>> = (0..20).flat_map(|_| [vec![&b"SET"[..], b"frozen:k", b"stale-write"], vec![&b"GET"[..], b"frozen:k"]]).collect();
        let sent = tokio::spawn(async move { tokio::time::timeout(Duration::from_secs(20), direct.pipeline(&cmds)).await });
        tokio::time::sleep(Duration::from_millis(200)).await;
        signal(old.pid.unwrap(), "CONT");
        // Otherwise the connection was closed on it, or errors came before a close: nothing
        // was acknowledged and nothing stale was read.
        if let Ok(Ok(replies)) = sent.await.unwrap() {
            for r in &replies {
                assert!(matches!(r, Reply::Error(_)), "the resumed old primary answered {r:?} (all: {replies:?})");
            }
        }
        let r = w.stop().await;
        check(&up, &r, "SIGSTOP drill").await;
        let mut c = Conn::connect(&up.endpoint()).await.unwrap();
        assert_eq!(c.request(&[b"GET", b"frozen:k"]).await.unwrap(), Reply::Bulk(Some(b"after".to_vec())));
        // It rejoined as a replica.
        up.wait_all_serving(Duration::from_secs(60));
        let cl = up.cluster().unwrap();
        assert_eq!(cl.nodes.iter().find(|n| n.name == old.name).unwrap().role, "replica", "{cl:?}");
    });
}

/// (d) Every node killed at once under load (the supervisor starts them again), then the
/// supervisor itself killed and started again: nothing acknowledged is lost.
#[test]
fn restart_every_node_at_once() {
    let dir = tempdir("restart-all");
    let mut up = Up::start(&dir, 2, LEASE_MS);
    up.wait_all_serving(Duration::from_secs(60));
    let rt = rt();
    let first = rt.block_on(async {
        let w = Workload::start(load(&up));
        assert!(w.wait_for_ok(100, Duration::from_secs(30)).await, "the load never got going: {}", w.stats());
        for n in up.cluster().unwrap().nodes {
            signal(n.pid.unwrap(), "KILL");
        }
        up.wait_all_serving(Duration::from_secs(60));
        let before = w.stats().ok;
        assert!(w.wait_for_ok(before + 100, Duration::from_secs(30)).await, "the load did not resume: {}", w.stats());
        let r = w.stop().await;
        check(&up, &r, "all nodes killed at once").await;
        r
    });
    // The whole machine, supervisor and log included, goes down hard and comes back.
    up.kill9_supervisor();
    up.restart();
    up.wait_all_serving(Duration::from_secs(60));
    rt.block_on(async {
        let report = first.ledger.verify(&[up.endpoint()], Duration::from_secs(30)).await.unwrap();
        print!("after restarting the supervisor: {report}");
        assert!(report.is_clean(), "acknowledged writes lost across a restart of everything\n{report}");
    });
}
