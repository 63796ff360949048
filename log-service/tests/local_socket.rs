//! Appends and reads over the Unix socket (`local_socket.rs`) answer exactly as over HTTP:
//! the same entries and chain, the same conflict with the tail, the same errors, the same
//! long poll and reader bookkeeping; a wrong token gets nothing; and a client whose socket
//! is gone uses HTTP.

use std::time::Duration;

use memoria_log::{AppendRequest, LogClient, LogCore, LogError, NewEntry};

const TOKEN: &str = "socket-test-token";

struct Service {
    url: String,
    socket: std::path::PathBuf,
    core: LogCore,
    _dir: tempfile::TempDir,
}

async fn service() -> Service {
    let dir = tempfile::tempdir().expect("tempdir");
    let core = LogCore::open_sqlite(dir.path().join("log.sqlite")).await.expect("open");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let router = memoria_log::server::router_with(core.clone(), Some(TOKEN.into()), memoria_log::server::ScrapeAccess::Open);
    tokio::spawn(async move { axum::serve(listener, router).await });
    let socket = dir.path().join("append.sock");
    memoria_log::local_socket::serve(&socket, core.clone(), TOKEN.into()).await.expect("serve the socket");
    Service { url, socket, core, _dir: dir }
}

/// A client over HTTP, and one whose HTTP goes nowhere (port 1), so whatever it gets the
/// socket answered; log `l` created.
async fn clients(svc: &Service) -> (LogClient, LogClient) {
    let http = LogClient::new(&svc.url, TOKEN).expect("client");
    let sock = LogClient::new("http://127.0.0.1:1", TOKEN).expect("client").with_local_socket(svc.socket.clone());
    http.create("l").await.expect("create");
    (http, sock)
}

fn data(s: &str) -> Vec<NewEntry> {
    vec![NewEntry::data(s.as_bytes().to_vec())]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_answers_as_http_does() {
    let svc = service().await;
    let (http, sock) = clients(&svc).await;

    // Appends through either land in one chain.
    let a = sock.append("l", 0, 1, data("one")).await.expect("socket append");
    assert_eq!((a.first_id, a.last_id), (1, 1));
    let b = http.append("l", 1, 1, data("two")).await.expect("http append");
    let c = sock.append("l", 2, 1, data("three")).await.expect("socket append");
    assert_eq!(c.last_id, 3);
    let all = svc.core.read("l", 0, 10, Duration::ZERO).await.expect("read");
    assert_eq!(all.entries.iter().map(|e| e.payload.to_vec()).collect::<Vec<_>>(), vec![b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]);
    assert_eq!(all.entries[1].checksum, b.checksum);

    // A stale prev_id: the same conflict, naming the tail.
    let over_sock = sock.append("l", 1, 1, data("late")).await.expect_err("stale prev_id");
    let over_http = http.append("l", 1, 1, data("late")).await.expect_err("stale prev_id");
    match (&over_sock, &over_http) {
        (LogError::Conflict { tail_id: a, tail_checksum: x, .. }, LogError::Conflict { tail_id: b, tail_checksum: y, .. }) => {
            assert_eq!((a, x), (b, y));
            assert_eq!((*a, *x), (3, c.checksum));
        }
        other => panic!("expected two conflicts, got {other:?}"),
    }
    // A missing log, an invalid request: the same errors.
    for (s, h) in [
        (sock.append("nope", 0, 1, data("x")).await, http.append("nope", 0, 1, data("x")).await),
        (sock.append("l", 3, 1, Vec::new()).await, http.append("l", 3, 1, Vec::new()).await),
        (
            sock.append_request("l", AppendRequest { prev_id: 3, epoch: 1, prev_checksum: Some(b.checksum), entries: data("x") }).await,
            http.append_request("l", AppendRequest { prev_id: 3, epoch: 1, prev_checksum: Some(b.checksum), entries: data("x") }).await,
        ),
    ] {
        let (s, h) = (s.expect_err("refused"), h.expect_err("refused"));
        assert_eq!(s.to_string(), h.to_string());
        assert_eq!(s.to_body().code, h.to_body().code);
    }
    assert_eq!(svc.core.head("l").await.expect("head").id, 3, "nothing refused was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_gets_nothing_written() {
    let svc = service().await;
    LogClient::new(&svc.url, TOKEN).expect("client").create("l").await.expect("create");
    // HTTP refuses the token outright; the socket closes on it, so the append's outcome
    // is unknown to that client (as on a broken connection), and nothing was written.
    let bad = LogClient::new(&svc.url, "wrong").expect("client").with_local_socket(svc.socket.clone());
    let e = bad.append("l", 0, 1, data("x")).await.expect_err("a wrong token appends nothing");
    assert!(matches!(e, LogError::Transport(_)), "{e}");
    assert_eq!(svc.core.head("l").await.expect("head").id, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_socket_means_http() {
    let svc = service().await;
    let sock = LogClient::new(&svc.url, TOKEN).expect("client").with_local_socket(svc.socket.with_extension("gone"));
    sock.create("l").await.expect("create");
    let a = sock.append("l", 0, 1, data("over http")).await.expect("append falls back to HTTP");
    assert_eq!(a.last_id, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_over_the_socket_match_http_and_long_poll() {
    let svc = service().await;
    let (http, sock) = clients(&svc).await;
    for (i, s) in ["a", "b", "c"].iter().enumerate() {
        http.append("l", i as u64, 1, data(s)).await.expect("append");
    }
    for (after, limit) in [(0, 10), (1, 1), (2, 5), (3, 5)] {
        let over_sock = sock.read("l", after, limit, Duration::ZERO).await.expect("socket read");
        let over_http = http.read("l", after, limit, Duration::ZERO).await.expect("http read");
        assert_eq!(over_sock.tail_id, over_http.tail_id);
        let ids = |b: &memoria_log::ReadBatch| b.entries.iter().map(|e| (e.id, e.checksum, e.payload.clone())).collect::<Vec<_>>();
        assert_eq!(ids(&over_sock), ids(&over_http), "after {after} limit {limit}");
    }
    assert_eq!(
        sock.read("nope", 0, 1, Duration::ZERO).await.expect_err("no such log").to_string(),
        http.read("nope", 0, 1, Duration::ZERO).await.expect_err("no such log").to_string()
    );

    // A named long poll: it waits for the next append (made over the socket too, on the
    // client's other connection), and the service remembers the reader.
    let poll = tokio::spawn({
        let sock = sock.clone();
        async move { sock.read_as("l", 3, 10, Duration::from_secs(30), Some("replica-x")).await }
    });
    // The service notes the reader as the read starts, before it waits.
    while !svc.core.readers("l").iter().any(|r| r.name == "replica-x") {
        assert!(!poll.is_finished(), "the read returned before anything was appended");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    sock.append("l", 3, 1, data("d")).await.expect("append while a read waits");
    let got = poll.await.expect("task").expect("long poll");
    assert_eq!(got.entries.iter().map(|e| e.id).collect::<Vec<_>>(), vec![4]);
    assert_eq!(svc.core.readers("l").iter().find(|r| r.name == "replica-x").map(|r| r.applied), Some(3));
}
