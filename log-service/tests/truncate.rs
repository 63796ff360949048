//! Truncating a long SQLite log deletes in bounded chunks: every entry below the point
//! goes, none above it, and appends keep landing while it runs (in this process, queued on
//! the writer, and from another handle on the same file, as `memoria snapshot` opens it).

mod common;

use std::time::Duration;

use memoria_log::{AppendRequest, LogCore, NewEntry, SqliteStore, Store};

async fn open(path: &std::path::Path) -> LogCore {
    LogCore::new(Store::Sqlite(SqliteStore::open(path).await.expect("open")), Default::default())
}

async fn append(core: &LogCore, prev: u64, n: usize) -> u64 {
    let entries = (0..n).map(|i| NewEntry::data(format!("SET k{i} {prev}").into_bytes())).collect();
    core.append("s", AppendRequest { prev_id: prev, epoch: 1, prev_checksum: None, entries }).await.expect("append").last_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_truncation_is_chunked_and_appends_go_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = common::sqlite_path(dir.path());
    let core = open(&path).await;
    core.create("s").await.expect("create");
    let mut tail = 0;
    for _ in 0..35 {
        tail = append(&core, tail, 100).await;
    }
    assert!(tail >= 3500, "{tail}"); // checksum marks are entries too
    let covered = core.read("s", 3199, 1, Duration::ZERO).await.expect("read").entries[0].clone();
    core.publish_snapshot("s", 3200, covered.checksum).await.expect("publish");

    // The truncation runs from a second handle on the file (another process's view);
    // this one keeps appending meanwhile.
    let other = open(&path).await;
    let truncation = tokio::spawn(async move { other.truncate("s", 3201).await });
    let mut appended_during = 0;
    while !truncation.is_finished() {
        tail = append(&core, tail, 10).await;
        appended_during += 10;
    }
    let t = truncation.await.expect("join").expect("truncate");
    assert_eq!((t.deleted, t.first_id), (3200, 3201));
    assert!(appended_during > 0);

    let fresh = open(&path).await;
    assert!(fresh.read("s", 0, 10, Duration::ZERO).await.is_err(), "entries below the point are gone");
    // Read the rest in pages: how many entries landed during the truncation depends on how
    // fast this machine's fsyncs are (once, over 22,000: more than one read returns).
    let mut ids: Vec<u64> = Vec::new();
    let mut after = 3200;
    loop {
        let page = fresh.read("s", after, 10_000, Duration::ZERO).await.expect("read the rest");
        let Some(last) = page.entries.last() else { break };
        after = last.id;
        ids.extend(page.entries.iter().map(|e| e.id));
        if after >= tail {
            break;
        }
    }
    assert_eq!(ids, (3201..=tail).collect::<Vec<_>>(), "everything from the point on is kept, in order");
    assert_eq!(fresh.verify("s").await.expect("verify").tail_id, tail);
}
