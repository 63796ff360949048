//! A SQLite log written by an earlier schema (entries WITHOUT ROWID, migration 0001 only)
//! opens with this build: the migrations that follow carry every entry over, the chain
//! verifies, and appends continue from the old tail.

mod common;

use std::time::Duration;

use memoria_log::{AppendRequest, LogCore, NewEntry};
use sqlx::ConnectOptions;
use sqlx::migrate::Migrator;
use sqlx::sqlite::SqliteConnectOptions;

/// Applies only migration 0001, as a build from before 0002 did.
async fn old_schema(path: &std::path::Path) {
    let only_first = tempfile::tempdir().unwrap();
    let src = common::manifest_dir().join("../migrations/sqlite/0001_log.sql");
    std::fs::copy(src, only_first.path().join("0001_log.sql")).unwrap();
    let mut conn = SqliteConnectOptions::new().filename(path).create_if_missing(true).connect().await.unwrap();
    Migrator::new(only_first.path()).await.unwrap().run(&mut conn).await.unwrap();
    let rowid: i64 = sqlx::query_scalar("SELECT count(*) FROM pragma_table_list WHERE name = 'entries' AND wr = 1").fetch_one(&mut conn).await.unwrap();
    assert_eq!(rowid, 1, "the old schema is WITHOUT ROWID");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_from_the_first_schema_is_carried_over() {
    let dir = tempfile::tempdir().unwrap();
    let path = common::sqlite_path(dir.path());
    old_schema(&path).await;

    // The rows are made by a service in a staging file (checksums and all), then copied
    // into the old table as an old build would have stored them.
    let staging = tempfile::tempdir().unwrap();
    let writer = common::sqlite_core(staging.path()).await;
    writer.create("s").await.unwrap();
    let mut prev = 0;
    for i in 0..30u32 {
        // Big payloads overflow their pages, as real batches of effects do.
        let entries = vec![NewEntry::data(vec![i as u8; 6000]), NewEntry::data(format!("small {i}").into_bytes())];
        prev = writer.append("s", AppendRequest { prev_id: prev, epoch: 1, prev_checksum: None, entries }).await.unwrap().last_id;
    }
    let want = common::read_all(&writer, "s").await;
    drop(writer);
    let mut conn = SqliteConnectOptions::new().filename(&path).connect().await.unwrap();
    sqlx::query("ATTACH DATABASE ? AS staging").bind(common::sqlite_path(staging.path()).display().to_string()).execute(&mut conn).await.unwrap();
    sqlx::query("INSERT INTO logs SELECT name, snapshot_id, created_ms FROM staging.logs").execute(&mut conn).await.unwrap();
    sqlx::query("INSERT INTO entries (log, id, prev_id, epoch, kind, format, payload, checksum, ts_ms) SELECT log, id, prev_id, epoch, kind, format, payload, checksum, ts_ms FROM staging.entries")
        .execute(&mut conn)
        .await
        .unwrap();
    drop(conn);

    let core = LogCore::open_sqlite(&path).await.expect("the current build opens the old log");
    let got = common::read_all(&core, "s").await;
    assert_eq!(got, want, "every entry carried over unchanged");
    let v = core.verify("s").await.expect("the chain verifies after the upgrade");
    assert_eq!(v.tail_id, prev);
    let next = core
        .append("s", AppendRequest { prev_id: prev, epoch: 1, prev_checksum: None, entries: vec![NewEntry::data(&b"after"[..])] })
        .await
        .expect("appends continue");
    assert_eq!(next.first_id, prev + 1);
    assert_eq!(core.read("s", prev, 10, Duration::ZERO).await.unwrap().entries.len(), 1);

    let mut conn = SqliteConnectOptions::new().filename(&path).connect().await.unwrap();
    let without_rowid: i64 = sqlx::query_scalar("SELECT wr FROM pragma_table_list WHERE name = 'entries'").fetch_one(&mut conn).await.unwrap();
    assert_eq!(without_rowid, 0, "entries is a rowid table now");
}
