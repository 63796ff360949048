//! The node's `/metrics` endpoint: a scrape token when one is set (and one is required
//! beyond loopback), and a shard that cannot answer (frozen, or running a long script)
//! is reported down for that scrape instead of stalling it. The families themselves are
//! checked on `memoria up` by e2e/tests/metrics.rs.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::{Memoria, Raw};
use memoria_host::metrics_endpoint::{MetricsOptions, serve};

/// GET /metrics over a plain socket: (status, body).
fn scrape(addr: std::net::SocketAddr, token: Option<&str>) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

#[test]
fn a_token_guards_the_endpoint_and_a_frozen_shard_is_reported_down() {
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    assert_eq!(c.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let open = MetricsOptions { bind: "0.0.0.0".into(), port: 0, token: None };
    let err = rt.block_on(serve(open, vec![(0, m.handle.clone())])).expect_err("beyond loopback without a token");
    assert!(err.to_string().contains("--metrics-token"), "{err}");
    let opts = MetricsOptions { bind: "127.0.0.1".into(), port: 0, token: Some("scrape-token".into()) };
    let addr = rt.block_on(serve(opts, vec![(0, m.handle.clone())])).unwrap();
    assert_eq!(scrape(addr, None).0, 401);
    assert_eq!(scrape(addr, Some("wrong")).0, 401);
    let (status, body) = scrape(addr, Some("scrape-token"));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("memoria_shard_up{shard=\"0\"} 1\n"), "{body}");
    assert!(body.contains("memoria_commands_total{shard=\"0\",cmd=\"set\"} 1\n"), "{body}");

    // Frozen: the scrape still answers, with the shard down and the process's figures.
    let thaw = m.freezer.freeze();
    std::thread::sleep(Duration::from_millis(100));
    let (status, body) = scrape(addr, Some("scrape-token"));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("memoria_shard_up{shard=\"0\"} 0\n"), "{body}");
    assert!(body.contains("memoria_process_resident_memory_bytes "), "{body}");
    assert!(!body.contains("memoria_commands_total"), "a frozen shard's families cannot be read: {body}");
    drop(thaw);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = scrape(addr, Some("scrape-token"));
        if body.contains("memoria_shard_up{shard=\"0\"} 1\n") {
            break;
        }
        assert!(Instant::now() < deadline, "the shard did not come back: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The scrapes cost the clients nothing they could see.
    assert_eq!(c.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
}
