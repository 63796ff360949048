//! The in-doubt append, made deterministic: commits wait for a synchronous standby that
//! does not exist, and the backend waiting on it is terminated. PostgreSQL then commits
//! locally and closes the connection without an answer. The service must settle this by
//! re-reading the log (the append landed), not report a failure and not write it twice.

mod common;

use std::time::Duration;

use memoria_log::{AppendRequest, LogCore, NewEntry};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminated_sync_rep_wait_is_settled_as_landed() {
    let metrics = memoria_log::server::prometheus();
    let pg = common::PgInstance::start();
    let core = LogCore::connect_pg(pg.config(), Default::default()).await.expect("connect");
    core.create("s").await.expect("create");

    pg.psql("ALTER SYSTEM SET synchronous_standby_names = 'nobody'");
    pg.psql("SELECT pg_reload_conf()");

    // pg_reload_conf only signals: the checkpointer turns synchronous replication on a
    // little later, and an append committed before that never waits. Such an append just
    // lands; try again at the new tail until one parks in the sync-rep wait.
    let mut prev_id = 0u64;
    let mut landed_before = 0usize;
    let mut attempt = 0u8;
    let (append, sent) = loop {
        attempt += 1;
        assert!(attempt < 50, "the append never waited for synchronous replication");
        let c = core.clone();
        let entries: Vec<NewEntry> = (0..3).map(|i| NewEntry::data(vec![i + 10 * attempt; 16])).collect();
        let sent = entries.clone();
        let append = tokio::spawn(async move { c.append("s", AppendRequest { prev_id, epoch: 1, prev_checksum: None, entries }).await });
        // Wait until the append is parked in the sync-rep wait, then kill that backend.
        let mut killed = false;
        for _ in 0..100 {
            if append.is_finished() {
                break;
            }
            let pid = pg.psql("SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep' LIMIT 1");
            if !pid.is_empty() {
                pg.psql(&format!("SELECT pg_terminate_backend({pid})"));
                killed = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if killed {
            break (append, sent);
        }
        let a = append.await.expect("task").expect("an append that did not wait lands normally");
        prev_id = a.last_id;
        landed_before += 3;
    };
    // Let later commits through again.
    pg.psql("ALTER SYSTEM RESET synchronous_standby_names");
    pg.psql("SELECT pg_reload_conf()");

    let a = append.await.expect("task").expect("the in-doubt append settles as landed");
    assert_eq!((a.first_id, a.last_id), (prev_id + 1, prev_id + 3));
    assert!(metrics.render().contains("memoria_log_in_doubt_total{outcome=\"landed\"} 1"), "the append was not settled through the in-doubt path");
    let all = common::read_all(&core, "s").await;
    assert_eq!(all.len(), landed_before + 3, "written exactly once");
    assert!(all[landed_before..].iter().zip(&sent).all(|(e, s)| e.payload == s.payload));

    // The writer carries on from the settled tail.
    let next = core
        .append("s", AppendRequest { prev_id: a.last_id, epoch: 1, prev_checksum: Some(a.checksum), entries: vec![NewEntry::data(&b"next"[..])] })
        .await
        .expect("append after settlement");
    assert_eq!(next.first_id, a.last_id + 1);
    core.verify("s").await.expect("chain verifies");
}

/// A client that hangs up while its append waits for synchronous replication must not
/// cancel the statement (PostgreSQL would commit it locally and report success to no one):
/// the wait goes on, and the append completes once a standby acknowledges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_hangup_does_not_cancel_a_sync_rep_wait() {
    let pg = common::PgInstance::start();
    let core = LogCore::connect_pg(pg.config(), Default::default()).await.expect("connect");
    let client = memoria_log::LogClient::new(&common::serve(core.clone(), Some("t")).await, "t").expect("client");
    core.create("s").await.expect("create");
    pg.psql("ALTER SYSTEM SET synchronous_standby_names = 'nobody'");
    pg.psql("SELECT pg_reload_conf()");

    let waiting = || pg.psql("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'");
    // pg_reload_conf only signals: a backend that has not handled the signal yet commits
    // without waiting. Such an append lands at once; the next one on it waits.
    let mut prev_id = 0;
    let request = loop {
        let c = client.clone();
        let request = tokio::spawn(async move { c.append("s", prev_id, 1, vec![NewEntry::data(&b"held"[..])]).await });
        let mut parked = false;
        for _ in 0..600 {
            if waiting() == "1" {
                parked = true;
                break;
            }
            if request.is_finished() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if parked {
            break request;
        }
        assert!(request.is_finished() && prev_id < 5, "the append never waited for synchronous replication");
        prev_id = request.await.expect("task").expect("an append before the reload took effect").last_id;
    };

    // The client goes away: its HTTP connection closes.
    request.abort();
    let _ = request.await;
    drop(client);
    // Give the server every chance to (wrongly) cancel, then check the wait is intact.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(waiting(), "1", "the append's sync-rep wait was cancelled when the client hung up");
    assert_eq!(core.head("s").await.expect("head").id, prev_id, "visible before any standby acknowledged it");

    // A standby requirement that can be met: the held commit completes normally.
    pg.psql("ALTER SYSTEM RESET synchronous_standby_names");
    pg.psql("SELECT pg_reload_conf()");
    let mut head = 0;
    for _ in 0..600 {
        head = core.head("s").await.expect("head").id;
        if head == prev_id + 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(head, prev_id + 1);
    let all = common::read_all(&core, "s").await;
    assert_eq!(all.len() as u64, prev_id + 1);
    assert!(all.iter().all(|e| &e.payload[..] == b"held"));
}
