//! The HTTP API through the typed client: auth, clear 4xx errors, the binary hot paths,
//! admin views, snapshots and truncation, metrics.

mod common;

use std::time::Duration;

use memoria_log::{CLUSTER_LOG, Kind, LeasePayload, LogApi, LogClient, LogError, LogHandle, NewEntry, Outcome};

const TOKEN: &str = "s3cret-token";

async fn setup() -> (tempfile::TempDir, String, LogClient) {
    let dir = tempfile::tempdir().expect("tempdir");
    let core = common::sqlite_core(dir.path()).await;
    let base = common::serve(core, Some(TOKEN)).await;
    let client = LogClient::new(&base, TOKEN).expect("client");
    (dir, base, client)
}

async fn raw(method: reqwest::Method, url: &str, token: Option<&str>, body: Vec<u8>) -> (u16, String) {
    let mut r = reqwest::Client::new().request(method, url).body(body);
    if let Some(t) = token {
        r = r.header("authorization", format!("Bearer {t}"));
    }
    let resp = r.send().await.expect("send");
    (resp.status().as_u16(), resp.text().await.expect("text"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_needs_the_token() {
    let (_d, base, _c) = setup().await;
    for path in ["/v1/logs", "/v1/logs/x", "/v1/logs/x/entries", "/v1/health", "/metrics"] {
        let (status, body) = raw(reqwest::Method::GET, &format!("{base}{path}"), None, vec![]).await;
        assert_eq!(status, 401, "{path} without token");
        assert!(body.contains("bearer token"), "{path}: {body}");
        let (status, _) = raw(reqwest::Method::GET, &format!("{base}{path}"), Some("wrong"), vec![]).await;
        assert_eq!(status, 401, "{path} with a wrong token");
    }
    let bad = LogClient::new(&base, "nope").expect("client");
    assert!(matches!(bad.list().await, Err(LogError::Unauthorized(_))));
    let (status, body) = raw(reqwest::Method::GET, &format!("{base}/v1/health"), Some(TOKEN), vec![]).await;
    assert_eq!((status, body.as_str()), (200, "ok\n"));
}

/// `/metrics` with a scrape access of its own: open, or a scrape token; the API stays
/// behind the API token either way, and the scrape token opens nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_has_a_scrape_access_of_its_own() {
    use memoria_log::server::ScrapeAccess;
    let dir = tempfile::tempdir().expect("tempdir");
    for (access, scrape_token) in [(ScrapeAccess::Open, None), (ScrapeAccess::Token("scrape-me".into()), Some("scrape-me"))] {
        let core = common::sqlite_core(dir.path()).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let app = memoria_log::server::router_with(core, Some(TOKEN.into()), access.clone());
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let (status, body) = raw(reqwest::Method::GET, &format!("{base}/metrics"), scrape_token, vec![]).await;
        assert_eq!(status, 200, "{access:?}: {body}");
        let (status, _) = raw(reqwest::Method::GET, &format!("{base}/metrics"), Some(TOKEN), vec![]).await;
        assert_eq!(status, 200, "{access:?}: the API token scrapes too");
        if scrape_token.is_some() {
            let (status, _) = raw(reqwest::Method::GET, &format!("{base}/metrics"), None, vec![]).await;
            assert_eq!(status, 401, "{access:?}: no token");
        }
        let (status, _) = raw(reqwest::Method::GET, &format!("{base}/v1/logs"), scrape_token, vec![]).await;
        assert_eq!(status, 401, "{access:?}: the API needs its own token");
        server.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_client_errors() {
    let (_d, base, c) = setup().await;
    assert!(matches!(c.head("missing").await, Err(LogError::NotFound(l)) if l == "missing"));
    assert!(matches!(c.append("missing", 0, 1, vec![NewEntry::data(&b"x"[..])]).await, Err(LogError::NotFound(_))));
    assert!(matches!(c.read("missing", 0, 10, Duration::ZERO).await, Err(LogError::NotFound(_))));
    assert!(matches!(c.create("bad/name").await, Err(LogError::Invalid(_))));
    assert!(matches!(c.create("bad:name").await, Err(LogError::Invalid(_))));

    c.create("s0").await.expect("create");
    for body in [vec![], vec![9, 9, 9], vec![1, 0, 0, 0]] {
        let (status, text) = raw(reqwest::Method::POST, &format!("{base}/v1/logs/s0/append"), Some(TOKEN), body).await;
        assert_eq!(status, 400, "{text}");
        assert!(text.contains("malformed body"), "{text}");
    }
    c.append("s0", 0, 3, vec![NewEntry::data(&b"\x01\xff"[..])]).await.expect("append");
    let (status, text) = raw(reqwest::Method::GET, &format!("{base}/v1/logs/s0/entries?format=json"), Some(TOKEN), vec![]).await;
    assert_eq!(status, 200, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json view");
    assert_eq!(v["tail_id"], 1);
    assert_eq!(v["entries"][0]["payload_hex"], "01ff");
    assert_eq!(v["entries"][0]["kind"], "data");
    assert_eq!(v["entries"][0]["epoch"], 3);
    let (status, _) = raw(reqwest::Method::GET, &format!("{base}/v1/logs/s0/entries?format=xml"), Some(TOKEN), vec![]).await;
    assert_eq!(status, 400);
    let (status, text) = raw(reqwest::Method::GET, &format!("{base}/v1/logs/s0/entries?after=abc"), Some(TOKEN), vec![]).await;
    assert_eq!(status, 400, "{text}");
    let (status, text) = raw(reqwest::Method::POST, &format!("{base}/v1/logs/s0/truncate"), Some(TOKEN), b"{".to_vec()).await;
    assert_eq!(status, 400, "{text}");
    let (status, _) = raw(reqwest::Method::GET, &format!("{base}/v2/nothing"), Some(TOKEN), vec![]).await;
    assert_eq!(status, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_read_conflict_and_views_sqlite() {
    let (_d, _base, c) = setup().await;
    views(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn append_read_conflict_and_views_postgres() {
    let pg = common::PgInstance::start();
    let core = memoria_log::LogCore::connect_pg(pg.config(), Default::default()).await.expect("connect");
    let c = LogClient::new(&common::serve(core, Some(TOKEN)).await, TOKEN).expect("client");
    views(c).await;
}

async fn views(c: LogClient) {
    let api = LogHandle::Remote(c.clone());
    assert!(api.create(CLUSTER_LOG).await.expect("create"));
    assert!(!api.create(CLUSTER_LOG).await.expect("idempotent"));
    api.create("shard-0").await.expect("create");

    let lease = LeasePayload { node: "node-a".into(), lease_ms: 3000 }.encode();
    let a = api.append("shard-0", 0, 1, vec![NewEntry::new(Kind::LeaderClaim, lease.clone())]).await.expect("claim");
    assert_eq!((a.first_id, a.last_id), (1, 1));
    let b = api
        .append("shard-0", 1, 1, vec![NewEntry::data(&b"SET a 1"[..]), NewEntry::new(Kind::LeaseRenewal, lease), NewEntry::data(&b"DEL a"[..])])
        .await
        .expect("batch");
    assert_eq!((b.first_id, b.last_id), (2, 4));

    // A stale writer (prev_id 1) is told where the tail is.
    match api.append("shard-0", 1, 2, vec![NewEntry::data(&b"late"[..])]).await {
        Err(LogError::Conflict { tail_id, tail_checksum, tail_epoch }) => {
            assert_eq!((tail_id, tail_checksum, tail_epoch), (4, b.checksum, 1));
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    // A writer from an older epoch is fenced even with the right prev_id.
    assert!(matches!(api.append("shard-0", 4, 0, vec![NewEntry::data(&b"old leader"[..])]).await, Err(LogError::Conflict { tail_id: 4, .. })));
    // prev_id ahead of the tail is a conflict too, not a gap.
    assert!(matches!(api.append("shard-0", 9, 2, vec![NewEntry::data(&b"x"[..])]).await, Err(LogError::Conflict { tail_id: 4, .. })));

    let r = api.read("shard-0", 0, 100, Duration::ZERO).await.expect("read");
    assert_eq!(r.tail_id, 4);
    assert_eq!(r.entries.iter().map(|e| e.id).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    assert_eq!(&r.entries[1].payload[..], b"SET a 1");
    let r = api.read("shard-0", 2, 1, Duration::ZERO).await.expect("read");
    assert_eq!(r.entries.iter().map(|e| e.id).collect::<Vec<_>>(), vec![3]);
    let empty = api.read("shard-0", 4, 10, Duration::from_millis(50)).await.expect("long-poll times out empty");
    assert!(empty.entries.is_empty());
    assert_eq!(empty.tail_id, 4);

    let head = api.head("shard-0").await.expect("head");
    assert_eq!((head.id, head.checksum, head.epoch), (4, b.checksum, 1));

    let logs = api.list().await.expect("list");
    let s0 = logs.iter().find(|l| l.name == "shard-0").expect("listed");
    assert_eq!(s0.leader.as_deref(), Some("node-a"));
    assert!(s0.lease_expires_ms.is_some());
    assert_eq!((s0.tail_id, s0.first_id, s0.snapshot_id), (4, 1, 0));
    assert!(logs.iter().any(|l| l.name == CLUSTER_LOG && l.tail_id == 0));

    // Settling an in-doubt append by content.
    let sent = vec![
        NewEntry::data(&b"SET a 1"[..]),
        NewEntry::new(Kind::LeaseRenewal, LeasePayload { node: "node-a".into(), lease_ms: 3000 }.encode()),
        NewEntry::data(&b"DEL a"[..]),
    ];
    assert_eq!(memoria_log::settle(&api, "shard-0", 1, 1, &sent).await.expect("settle"), Outcome::Landed(b));
    assert_eq!(memoria_log::settle(&api, "shard-0", 4, 1, &sent).await.expect("settle"), Outcome::NotWritten);
    assert!(matches!(memoria_log::settle(&api, "shard-0", 1, 7, &sent).await.expect("settle"), Outcome::Superseded(_)));

    // Truncation stops at the published snapshot and always keeps the tail.
    assert!(matches!(api.truncate("shard-0", 3).await, Err(LogError::Refused(_))));
    let r = api.read("shard-0", 1, 1, Duration::ZERO).await.expect("read");
    assert!(matches!(api.publish_snapshot("shard-0", 2, a.checksum).await, Err(LogError::Refused(_))), "wrong checksum must be refused");
    assert_eq!(api.publish_snapshot("shard-0", 2, r.entries[0].checksum).await.expect("publish"), 2);
    let t = api.truncate("shard-0", 3).await.expect("truncate");
    assert_eq!((t.deleted, t.first_id), (2, 3));
    assert_eq!(
        api.read("shard-0", 0, 10, Duration::ZERO).await.unwrap_err(),
        LogError::Truncated { log: "shard-0".into(), through: 2, after: 0 },
        "the typed error survives HTTP"
    );
    assert_eq!(api.read("shard-0", 2, 10, Duration::ZERO).await.expect("read after snapshot").entries.len(), 2);
    let v = api.verify("shard-0").await.expect("verify");
    assert_eq!((v.first_id, v.tail_id, v.entries_checked), (3, 4, 1));
    // Appends continue on the truncated log.
    api.append("shard-0", 4, 1, vec![NewEntry::data(&b"more"[..])]).await.expect("append after truncate");

    let m = c.metrics().await.expect("metrics");
    for name in ["memoria_log_append_seconds_bucket", "memoria_log_append_batch_entries_bucket", "memoria_log_append_conflicts_total"] {
        assert!(m.contains(name), "metrics lack {name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checksum_marks_are_written_and_verified() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = memoria_log::Store::Sqlite(memoria_log::SqliteStore::open(common::sqlite_path(dir.path())).await.expect("open"));
    let core = memoria_log::LogCore::new(store, memoria_log::CoreOptions { mark_interval: 10, ..Default::default() });
    core.create("s").await.expect("create");
    let mut prev = 0;
    for i in 0..30u32 {
        let a = LogApi::append(&core, "s", prev, 1, vec![NewEntry::data(i.to_be_bytes().to_vec()); 3]).await.expect("append");
        prev = a.last_id;
    }
    let all = common::read_all(&core, "s").await;
    let marks: Vec<_> = all.iter().filter(|e| e.kind == Kind::ChecksumMark).collect();
    assert!(marks.len() >= 9, "expected a mark about every 10 entries, got {}", marks.len());
    for m in &marks {
        let p = memoria_log::MarkPayload::decode(&m.payload).expect("mark payload");
        assert_eq!(p.id, m.id - 1);
        assert_eq!(all[(p.id - 1) as usize].checksum, p.checksum);
    }
    let v = core.verify("s").await.expect("verify");
    assert_eq!(v.marks_checked, marks.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_moves_to_a_reachable_endpoint() {
    let (_d, base, _c) = setup().await;
    // Nothing listens on the first endpoint (a port that was free a moment ago).
    let dead = format!("http://127.0.0.1:{}", common::free_port());
    let c = LogClient::with_endpoints(&[&dead, &base], TOKEN).expect("client");
    assert_eq!(c.endpoint(), dead);
    c.create("s").await.expect("create through the second endpoint");
    assert_eq!(c.endpoint(), base);
    let a = c.append("s", 0, 1, vec![NewEntry::data(&b"x"[..])]).await.expect("append");
    assert_eq!(a.last_id, 1);
    let only_dead = LogClient::new(&dead, TOKEN).expect("client");
    assert!(matches!(only_dead.head("s").await, Err(LogError::Transport(_))));
}
