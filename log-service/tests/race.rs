//! Acceptance 1: many contenders append with the same prev_id; exactly one wins each round,
//! the log stays dense, and no batch is ever partly written. On both backends.

mod common;

use std::collections::HashMap;

use memoria_log::{AppendRequest, CoreOptions, Kind, LogCore, LogError, NewEntry, SqliteStore, Store};

const ROUNDS: usize = 200;
const CONTENDERS: usize = 10;

fn batch(round: usize, who: usize) -> Vec<NewEntry> {
    // Batch sizes differ per contender so a partial write would show up as a short group.
    let k = 1 + (round + who) % 4;
    (0..k).map(|i| NewEntry::data(format!("r{round}/c{who}/{i}/{k}").into_bytes())).collect()
}

async fn race(cores: Vec<LogCore>, log: &str) {
    cores[0].create(log).await.expect("create");
    let mut prev = 0u64;
    for round in 0..ROUNDS {
        let mut tasks = Vec::new();
        for who in 0..CONTENDERS {
            let core = cores[who % cores.len()].clone();
            let log = log.to_owned();
            tasks.push(tokio::spawn(async move {
                let req = AppendRequest { prev_id: prev, epoch: round as u64 + 1, prev_checksum: None, entries: batch(round, who) };
                (who, core.append(&log, req).await)
            }));
        }
        let mut winners = Vec::new();
        let mut results = Vec::new();
        for t in tasks {
            let (who, r) = t.await.expect("task");
            match &r {
                Ok(a) => winners.push((who, *a)),
                Err(LogError::Conflict { .. }) => {}
                Err(e) => panic!("round {round}: contender {who} failed with a non-conflict error: {e}"),
            }
            results.push(r);
        }
        assert_eq!(winners.len(), 1, "round {round}: {} winners", winners.len());
        let (_, won) = winners[0];
        assert_eq!(won.first_id, prev + 1);
        // Every loser was told the tail the winner left (the round is over when all return).
        for r in &results {
            if let Err(LogError::Conflict { tail_id, tail_checksum, .. }) = r {
                assert_eq!((*tail_id, *tail_checksum), (won.last_id, won.checksum), "round {round}: conflict reports a stale tail");
            }
        }
        prev = won.last_id;
    }

    let entries = common::read_all(&cores[0], log).await;
    assert_eq!(entries.last().map(|e| e.id), Some(prev));
    // Group data entries by their (round, contender) tag: each group must be one whole
    // batch, contiguous, and each round has exactly one group.
    let mut groups: HashMap<String, Vec<u64>> = HashMap::new();
    let mut rounds_seen = HashMap::new();
    for e in entries.iter().filter(|e| e.kind == Kind::Data) {
        let s = String::from_utf8(e.payload.to_vec()).expect("utf8");
        let parts: Vec<&str> = s.split('/').collect();
        let tag = format!("{}/{}", parts[0], parts[1]);
        let k: usize = parts[3].parse().expect("k");
        let g = groups.entry(tag.clone()).or_default();
        g.push(e.id);
        assert!(g.len() <= k);
        *rounds_seen.entry(parts[0].to_owned()).or_insert(0usize) += 1;
    }
    assert_eq!(groups.len(), ROUNDS, "one batch per round");
    for (tag, ids) in &groups {
        let k = ids.len();
        let want: usize = entries
            .iter()
            .find(|e| e.id == ids[0])
            .map(|e| String::from_utf8_lossy(&e.payload).split('/').nth(3).and_then(|v| v.parse().ok()).expect("k"))
            .expect("entry");
        assert_eq!(k, want, "batch {tag} partly written");
        assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "batch {tag} not contiguous");
    }
    let report = cores[0].verify(log).await.expect("verify");
    assert_eq!(report.tail_id, prev);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn race_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = common::sqlite_path(dir.path());
    // Two independent handles on one file: the race is arbitrated by SQLite itself, not by
    // a lock inside one process.
    let a = LogCore::new(Store::Sqlite(SqliteStore::open(&path).await.expect("open")), CoreOptions::default());
    let b = LogCore::new(Store::Sqlite(SqliteStore::open(&path).await.expect("open")), CoreOptions::default());
    race(vec![a, b], "shard-0").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn race_postgres() {
    let pg = common::PgInstance::start();
    // Three service cores on one database, like three AZs' log services.
    let mut cores = Vec::new();
    for _ in 0..3 {
        cores.push(LogCore::connect_pg(pg.config(), CoreOptions::default()).await.expect("connect"));
    }
    race(cores, "shard-0").await;
}
