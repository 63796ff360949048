//! The workload, the checker and the ledger against a real redis-server: a healthy run
//! must check linearizable with a clean ledger (this also validates the model against
//! Redis's own replies), and a `kill -9` of a server without persistence, restarted empty
//! mid-run, must be caught by both.

use std::time::Duration;

use memoria_e2e::history::Outcome;
use memoria_e2e::linearizability::{Budget, check};
use memoria_e2e::workload::{Config, Workload};

mod common;
use common::{Redis, free_port};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_server_is_linearizable_and_keeps_every_write() {
    let redis = Redis::start(free_port());
    let mut cfg = Config::new([redis.addr()]);
    cfg.clients = 6;
    cfg.keys = 3;
    cfg.ops_per_key = 150;
    // A loaded 2-core machine must not turn slow replies into Unknowns.
    cfg.op_timeout = Duration::from_secs(30);
    let w = Workload::start(cfg);
    assert!(w.wait_for_ok(4000, Duration::from_secs(120)).await, "workload made no progress: {}", w.stats());
    let run = w.stop().await;
    eprintln!("run: {}", run.stats);

    let (ok, failed, unknown) = run.history.counts();
    assert!(ok >= 4000 && failed == 0 && unknown == 0, "healthy run: {ok} ok, {failed} failed, {unknown} unknown");
    assert_eq!(run.stats.odd_replies, 0);
    // Every operation kind got real results, INCR's error result included.
    let text = run.history.to_text();
    for needle in ["INCR", "APPEND", "SET", "GET", "ok err ERR value is not an integer"] {
        assert!(text.contains(needle), "no {needle} in the history");
    }
    let report = check(&run.history, Budget::default());
    assert!(report.is_linearizable(), "{report}");
    eprintln!("{report}");

    assert!(run.ledger.acked_count() > 100);
    let lr = run.ledger.verify(&[redis.addr()], Duration::from_secs(30)).await.expect("ledger verify");
    assert!(lr.is_clean(), "{lr}");
    assert_eq!(lr.checked, run.ledger.keys.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_without_persistence_is_detected() {
    let port = free_port();
    let mut redis = Redis::start(port);
    let addr = redis.addr();
    let mut cfg = Config::new([addr.clone()]);
    cfg.clients = 4;
    cfg.keys = 3;
    // Small key generations: keys finished before the kill are never written again, so
    // the final reads find them empty.
    cfg.ops_per_key = 40;
    cfg.op_timeout = Duration::from_secs(5);
    let w = Workload::start(cfg);
    assert!(w.wait_for_ok(1000, Duration::from_secs(120)).await, "no progress before the kill: {}", w.stats());
    let before = w.stats();
    assert!(before.ledger_acked > 0);

    // kill -9, then an empty server on the same port: everything acknowledged is gone.
    drop(redis);
    redis = Redis::start(port);
    assert!(w.wait_for_ok(before.ok + 500, Duration::from_secs(120)).await, "no progress after the restart: {}", w.stats());
    let run = w.stop().await;
    eprintln!("run: {}", run.stats);
    // Clients rode through: they reconnected to the new server.
    assert!(run.stats.connects > 4, "{}", run.stats);

    let report = check(&run.history, Budget::default());
    assert!(!report.is_linearizable(), "lost writes not detected:\n{report}");
    assert!(!report.violations().is_empty(), "{report}");
    eprintln!("{}", report.violations()[0]);
    // A violation is explained by reads after the loss: the failing prefix ends in an
    // operation whose result was Ok (not a guess about an Unknown).
    let v = report.violations()[0];
    assert!(matches!(v.offending_prefix.last().map(|o| &o.outcome), Some(Outcome::Ok(_))), "{v}");

    let lr = run.ledger.verify(&[redis.addr()], Duration::from_secs(30)).await.expect("ledger verify");
    eprintln!("{lr}");
    assert!(!lr.missing.is_empty(), "lost ledger writes not detected: {lr}");
    assert!(lr.wrong.is_empty(), "{lr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_find_the_master_among_dead_nodes_and_replicas() {
    let master = Redis::start(free_port());
    let rport = free_port();
    let replica = Redis::start_with(rport, &["--replicaof", "127.0.0.1", &master.port.to_string()]);
    // Nobody listens here.
    let dead = format!("127.0.0.1:{}", free_port());
    let nodes = vec![dead, replica.addr(), master.addr()];
    let mut cfg = Config::new(nodes.clone());
    cfg.clients = 3;
    cfg.op_timeout = Duration::from_secs(30);
    let w = Workload::start(cfg);
    assert!(w.wait_for_ok(1000, Duration::from_secs(120)).await, "no progress: {}", w.stats());
    let run = w.stop().await;
    // No client ever wrote to the replica (it would have answered -READONLY: Failed).
    assert_eq!((run.stats.failed, run.stats.unknown), (0, 0), "{}", run.stats);
    let report = check(&run.history, Budget::default());
    assert!(report.is_linearizable(), "{report}");
    // Any node list works for verifying: it finds the master too.
    let lr = run.ledger.verify(&nodes, Duration::from_secs(30)).await.expect("ledger verify");
    assert!(lr.is_clean() && lr.checked > 0, "{lr}");
}
