//! Acceptance 4: an entry altered in the database is detected on read and on verify, on
//! both backends; rewriting its checksum too is caught at the next link.

mod common;

use std::time::Duration;

use memoria_log::{AppendRequest, LogCore, LogError, NewEntry, Store};

async fn fill(core: &LogCore) {
    core.create("s").await.expect("create");
    let mut prev = 0;
    for i in 0..10u8 {
        let entries = vec![NewEntry::data(vec![i; 8]), NewEntry::data(vec![i + 100; 8])];
        prev = core.append("s", AppendRequest { prev_id: prev, epoch: 1, prev_checksum: None, entries }).await.expect("append").last_id;
    }
    assert_eq!(core.verify("s").await.expect("clean log verifies").tail_id, 20);
}

async fn raw(core: &LogCore, sql: &str) {
    let n = match core.store() {
        Store::Sqlite(s) => s.execute_raw(sql).await,
        Store::Pg(p) => p.execute_raw(sql).await,
    }
    .expect("raw sql");
    assert_eq!(n, 1, "{sql}");
}

async fn expect_corrupt_at(core: &LogCore, id: u64) {
    match core.read("s", 0, 100, Duration::ZERO).await {
        Err(LogError::Corrupt { id: at, .. }) => assert_eq!(at, id),
        other => panic!("read served an altered log: {other:?}"),
    }
    match core.verify("s").await {
        Err(LogError::Corrupt { id: at, .. }) => assert_eq!(at, id),
        other => panic!("verify missed an altered row: {other:?}"),
    }
}

/// `core` writes the log; `fresh` is a service that did not (a restart, another
/// instance), so it reads every entry from the database.
async fn tamper(core: LogCore, fresh: LogCore, hex_payload: &str, hex_fn: fn(&str) -> String) {
    fill(&core).await;
    raw(&core, &format!("UPDATE entries SET payload = {} WHERE log = 's' AND id = 7", hex_fn(hex_payload))).await;
    expect_corrupt_at(&fresh, 7).await;
    // The writer's own tail cache holds what was committed, never the altered row.
    let served = core.read("s", 0, 100, Duration::ZERO).await.expect("the writer serves its cache").entries;
    assert_eq!(served[6].id, 7);
    assert_eq!(&served[6].payload[..], &[3u8; 8][..]);
    // Reads that start past the damage still work (each read checks its own range).
    assert_eq!(fresh.read("s", 8, 100, Duration::ZERO).await.expect("read past damage").entries.len(), 12);

    // A forger who also recomputes entry 7's checksum is caught at entry 8.
    let prev = fresh.read("s", 5, 1, Duration::ZERO).await.expect("read 6").entries[0].checksum;
    let forged = memoria_log::chain::link(&prev, 7, 1, memoria_log::Kind::Data, memoria_log::FORMAT_VERSION, &[0xAB]);
    raw(&core, &format!("UPDATE entries SET payload = {}, checksum = {} WHERE log = 's' AND id = 7", hex_fn("ab"), hex_fn(&forged.to_hex()))).await;
    expect_corrupt_at(&fresh, 8).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tamper_detected_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let core = common::sqlite_core(dir.path()).await;
    let fresh = common::sqlite_core(dir.path()).await;
    tamper(core, fresh, "00", |h| format!("X'{h}'")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tamper_detected_postgres() {
    let pg = common::PgInstance::start();
    let core = LogCore::connect_pg(pg.config(), Default::default()).await.expect("connect");
    let fresh = LogCore::connect_pg(pg.config(), Default::default()).await.expect("connect");
    tamper(core, fresh, "00", |h| format!("'\\x{h}'::bytea")).await;
}
