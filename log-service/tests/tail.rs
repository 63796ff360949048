//! Acceptance 2: a reader long-polling on one service instance sees entries appended
//! through another instance, in order and without gaps (woken by LISTEN/NOTIFY).

mod common;

use std::time::{Duration, Instant};

use memoria_log::{CoreOptions, LogClient, LogCore, NewEntry};

const TOKEN: &str = "t";

/// Two service instances on one PostgreSQL. Their safety-net poll is made long so a test
/// passes only if NOTIFY wakes a reader.
async fn two_instances(pg: &common::PgInstance) -> (LogCore, LogCore) {
    let opts = CoreOptions { poll_interval: Duration::from_secs(30), ..CoreOptions::default() };
    let a = LogCore::connect_pg(pg.config(), opts.clone()).await.expect("instance a");
    let b = LogCore::connect_pg(pg.config(), opts).await.expect("instance b");
    (a, b)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tail_across_two_service_instances() {
    let pg = common::PgInstance::start();
    let (a, b) = two_instances(&pg).await;
    let writer = LogClient::new(&common::serve(a, Some(TOKEN)).await, TOKEN).expect("client a");
    let reader = LogClient::new(&common::serve(b, Some(TOKEN)).await, TOKEN).expect("client b");
    writer.create("shard-0").await.expect("create");

    const BATCHES: u64 = 100;
    let read_task = tokio::spawn(async move {
        let mut after = 0u64;
        let mut seen = Vec::new();
        let mut arrivals = Vec::new();
        while seen.len() < BATCHES as usize * 2 {
            let b = reader.read("shard-0", after, 1000, Duration::from_secs(60)).await.expect("long-poll");
            let now = Instant::now();
            for e in b.entries {
                assert_eq!(e.id, after + 1, "gap or reorder in the tail");
                after = e.id;
                if e.kind == memoria_log::Kind::Data {
                    seen.push(e.payload.clone());
                    arrivals.push((e.payload, now));
                }
            }
        }
        (seen, arrivals, reader)
    });

    let mut prev = 0;
    let mut sent_at = Vec::new();
    for i in 0..BATCHES {
        // Let the reader park in its long-poll before each append.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let entries = vec![NewEntry::data(format!("{i}a").into_bytes()), NewEntry::data(format!("{i}b").into_bytes())];
        let t = Instant::now();
        let ack = writer.append("shard-0", prev, 1, entries).await.expect("append");
        sent_at.push((format!("{i}b"), t));
        prev = ack.last_id;
    }
    let (seen, arrivals, reader) = read_task.await.expect("reader");
    let want: Vec<String> = (0..BATCHES).flat_map(|i| [format!("{i}a"), format!("{i}b")]).collect();
    let got: Vec<String> = seen.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect();
    assert_eq!(got, want);

    // Wake-up latency is reported, not asserted (timing belongs in the bench).
    let mut lat: Vec<f64> = sent_at
        .iter()
        .filter_map(|(tag, t)| arrivals.iter().find(|(p, _)| &p[..] == tag.as_bytes()).map(|(_, at)| at.duration_since(*t).as_secs_f64() * 1e3))
        .collect();
    lat.sort_by(f64::total_cmp);
    eprintln!("cross-instance tail (append start -> reader has it): p50 {:.2} ms, p99 {:.2} ms", lat[lat.len() / 2], lat[lat.len() * 99 / 100]);
    let m = reader.metrics().await.expect("metrics");
    assert!(m.contains("memoria_log_notify_received_total"), "reader instance never got a NOTIFY");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_tail_wakes_and_times_out_empty() {
    let dir = tempfile::tempdir().expect("tempdir");
    let core = common::sqlite_core(dir.path()).await;
    core.create("s").await.expect("create");
    let r = core.clone();
    let waiter = tokio::spawn(async move { r.read("s", 0, 10, Duration::from_secs(60)).await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    core.append("s", memoria_log::AppendRequest { prev_id: 0, epoch: 1, prev_checksum: None, entries: vec![NewEntry::data(&b"x"[..])] }).await.expect("append");
    let got = waiter.await.expect("task").expect("read");
    assert_eq!(got.entries.len(), 1);
    let empty = core.read("s", 1, 10, Duration::from_millis(10)).await.expect("read");
    assert!(empty.entries.is_empty());
    assert_eq!(empty.tail_id, 1);
}

/// Backends LISTENing (the last statement of a listener's connection).
fn listening(pg: &common::PgInstance) -> usize {
    pg.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN %'").parse().expect("a count")
}

/// An instance listens only while a reader waits on it: every listening instance is woken
/// by every append of every instance. The writer's own readers are woken in-process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_listens_only_while_a_reader_waits() {
    let pg = common::PgInstance::start();
    let (a, b) = two_instances(&pg).await;
    a.create("s").await.expect("create");
    let mut prev = 0;
    for i in 0..20u8 {
        let entries = vec![NewEntry::data(vec![i; 4])];
        prev = a.append("s", memoria_log::AppendRequest { prev_id: prev, epoch: 1, prev_checksum: None, entries }).await.expect("append").last_id;
    }
    assert_eq!(listening(&pg), 0, "no reader waits, yet an instance listens");

    // A reader long-polls on b past the end: b starts listening, and a's next append
    // (announced by NOTIFY) wakes it. Its wait (20 s) ends before b's safety poll (30 s),
    // so without the NOTIFY it would come back empty.
    let reader = tokio::spawn({
        let b = b.clone();
        async move { b.read("s", prev, 10, Duration::from_secs(20)).await }
    });
    // Bounded by attempts (a hang guard), not a timing assertion.
    let mut attempts = 0;
    while listening(&pg) == 0 {
        attempts += 1;
        assert!(attempts < 500, "a waiting reader never made its instance listen");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let entries = vec![NewEntry::data(&b"late"[..])];
    a.append("s", memoria_log::AppendRequest { prev_id: prev, epoch: 1, prev_checksum: None, entries }).await.expect("append");
    let got = reader.await.expect("task").expect("read");
    assert_eq!(got.entries.iter().map(|e| &e.payload[..]).collect::<Vec<_>>(), vec![&b"late"[..]]);
}
