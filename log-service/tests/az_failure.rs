//! Acceptance 3, with real PostgreSQL processes from `e2e/pg3az`: killing a standby does
//! not stop appends; killing the primary and promoting a standby resumes appends through
//! the same service endpoints; every acknowledged entry is present afterwards; an in-doubt
//! append is settled, never duplicated.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use memoria_log::{LogClient, LogError, NewEntry, Outcome};

/// One writer per log, each through a different AZ's service. Records what was acked.
struct Writer {
    acked: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<(u64, Vec<u8>)>>,
}

fn spawn_writer(client: LogClient, log: String) -> Writer {
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (a, s) = (acked.clone(), stop.clone());
    let task = tokio::spawn(async move {
        let mut prev = 0u64;
        let mut seq = 0u64;
        let mut log_of_acks: Vec<(u64, Vec<u8>)> = Vec::new();
        while !s.load(Ordering::Relaxed) {
            let entries: Vec<NewEntry> = (0..4).map(|i| NewEntry::data(format!("{log}:{seq}:{i}").into_bytes())).collect();
            let ack = loop {
                match client.append(&log, prev, 1, entries.clone()).await {
                    Ok(a) => break a,
                    Err(e) if e.is_in_doubt() => {
                        // The reply was lost: settle by reading, then retry only if absent.
                        eprintln!("{log}: append {seq} in doubt ({e}); settling");
                        let outcome = loop {
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            match memoria_log::settle(&client, &log, prev, 1, &entries).await {
                                Ok(o) => break o,
                                Err(e) => eprintln!("{log}: settle failed ({e}); retrying"),
                            }
                        };
                        match outcome {
                            Outcome::Landed(a) => break a,
                            Outcome::NotWritten => continue,
                            Outcome::Superseded(h) => panic!("{log}: single writer superseded at {h:?}"),
                        }
                    }
                    Err(LogError::Conflict { tail_id, .. }) => {
                        // Only possible if an earlier in-doubt append landed after all:
                        // it must be ours, exactly once.
                        panic!("{log}: conflict at prev {prev}, tail {tail_id}: an append was lost or doubled");
                    }
                    Err(e) => panic!("{log}: append failed: {e}"),
                }
            };
            for (i, e) in entries.iter().enumerate() {
                log_of_acks.push((ack.first_id + i as u64, e.payload.to_vec()));
            }
            prev = ack.last_id;
            seq += 1;
            a.fetch_add(1, Ordering::Relaxed);
        }
        log_of_acks
    });
    Writer { acked, stop, task }
}

/// Waits until every writer has had `n` more appends acknowledged (liveness, not speed:
/// the bound only keeps a broken build from hanging forever).
async fn progress(writers: &[Writer], n: u64, what: &str) {
    let start: Vec<u64> = writers.iter().map(|w| w.acked.load(Ordering::Relaxed)).collect();
    for _ in 0..1200 {
        if writers.iter().zip(&start).all(|(w, s)| w.acked.load(Ordering::Relaxed) >= s + n) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("appends did not continue after {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn az_failures() {
    let az = common::Pg3Az::up();
    // Each writer prefers its own AZ's service and falls back to the others.
    let clients: Vec<LogClient> = (0..3)
        .map(|i| {
            let urls: Vec<String> = (0..3).map(|k| az.url((i + k) % 3)).collect();
            LogClient::with_endpoints(&urls.iter().map(String::as_str).collect::<Vec<_>>(), &az.token).expect("client")
        })
        .collect();
    let logs: Vec<String> = (0..3).map(|i| format!("shard-{i}")).collect();
    for l in &logs {
        clients[0].create(l).await.expect("create");
    }
    let writers: Vec<Writer> = logs.iter().enumerate().map(|(i, l)| spawn_writer(clients[i].clone(), l.clone())).collect();
    progress(&writers, 20, "start").await;

    // A standby's AZ fails: the quorum (ANY 1) still has the other standby.
    az.run(&["kill", "az3"]);
    progress(&writers, 50, "killing standby az3").await;
    az.run(&["start", "az3"]);

    // The primary's whole AZ fails with appends in flight: its PostgreSQL and its log
    // service. Promote the most advanced standby and re-point the other; the surviving
    // services find the new primary themselves, and az1's writer moves to another AZ.
    az.run(&["kill", "az1"]);
    az.run(&["svc-kill", "az1"]);
    let promoted = az.run(&["failover"]);
    eprintln!("new primary: {promoted}");
    progress(&writers, 50, "killing primary az1 and promoting").await;
    // The old primary comes back as a standby (pg_rewind) and the cluster stays writable.
    az.run(&["rejoin", "az1"]);
    az.run(&["svc-start", "az1"]);
    progress(&writers, 20, "rejoining az1").await;

    for w in &writers {
        w.stop.store(true, Ordering::Relaxed);
    }
    let mut acks = Vec::new();
    for w in writers {
        acks.push(w.task.await.expect("writer"));
    }

    // Every acknowledged entry is present, where it was acknowledged, exactly once.
    for (i, log) in logs.iter().enumerate() {
        let reader = &clients[(i + 1) % 3];
        let mut stored: HashMap<u64, Vec<u8>> = HashMap::new();
        let mut payload_count: HashMap<Vec<u8>, u32> = HashMap::new();
        let mut after = 0;
        loop {
            let b = reader.read(log, after, 5000, Duration::ZERO).await.expect("read");
            if b.entries.is_empty() {
                break;
            }
            for e in b.entries {
                assert_eq!(e.id, after + 1, "{log} not dense");
                after = e.id;
                if e.kind == memoria_log::Kind::Data {
                    *payload_count.entry(e.payload.to_vec()).or_default() += 1;
                    stored.insert(e.id, e.payload.to_vec());
                }
            }
        }
        for (id, payload) in &acks[i] {
            assert_eq!(stored.get(id), Some(payload), "{log}: acknowledged entry {id} missing or different");
        }
        assert!(payload_count.values().all(|&c| c == 1), "{log}: an entry was written twice");
        let report = reader.verify(log).await.expect("chain verifies after failover");
        eprintln!("{log}: {} acknowledged entries, tail {}, chain ok ({} entries)", acks[i].len(), report.tail_id, report.entries_checked);
    }
    for (i, c) in clients.iter().enumerate() {
        let m = c.metrics().await.expect("metrics");
        for line in m.lines().filter(|l| l.starts_with("memoria_log_in_doubt_total")) {
            eprintln!("writer {i} via {}: {line}", c.endpoint());
        }
    }
}
