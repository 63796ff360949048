//! Every node of `memoria up` serves Prometheus text on its metrics port (listed in
//! cluster.json), and so does the log service: parsed with a Prometheus text parser and
//! checked line by line against the exposition format, with the families an operator
//! needs (commands and their latency, log appends, held replies, replica lag, lease,
//! memory, connections, errors, snapshots).

mod common;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use common::{Up, get, rt, tempdir};
use memoria_e2e::workload::{Conn, Reply};
use prometheus_parse::{Scrape, Value};

/// The exposition format, strictly: every line a HELP, a TYPE or a sample; a family's
/// TYPE once and before its samples; a family's lines in one group. Returns the text's
/// families (name → type).
fn check_format(text: &str) -> HashMap<String, String> {
    let name_ok =
        |n: &str| !n.is_empty() && n.chars().enumerate().all(|(i, c)| c == '_' || c == ':' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit()));
    let mut types: HashMap<String, String> = HashMap::new();
    let mut closed: HashSet<String> = HashSet::new();
    let mut current = String::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        if let Some(rest) = line.strip_prefix("# HELP ").or_else(|| line.strip_prefix("# TYPE ")) {
            let mut words = rest.splitn(2, ' ');
            let name = words.next().unwrap().to_string();
            assert!(name_ok(&name), "bad family name in {line:?}");
            if name != current {
                assert!(!closed.contains(&name), "family {name} appears in two groups");
                if !current.is_empty() {
                    closed.insert(std::mem::take(&mut current));
                }
                current = name.clone();
            }
            if line.starts_with("# TYPE ") {
                let kind = words.next().unwrap_or("").to_string();
                assert!(["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind.as_str()), "{line:?}");
                assert!(types.insert(name.clone(), kind).is_none(), "two TYPE lines for {name}");
            }
            continue;
        }
        assert!(!line.starts_with('#'), "a stray comment: {line:?}");
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("no value: {line:?}"));
        assert!(value.parse::<f64>().is_ok() || ["+Inf", "-Inf", "NaN"].contains(&value), "bad value in {line:?}");
        let name = series.split('{').next().unwrap();
        assert!(name_ok(name), "bad sample name in {line:?}");
        if let Some(labels) = series.strip_prefix(name).filter(|l| !l.is_empty()) {
            assert!(labels.starts_with('{') && labels.ends_with('}') && labels.len() > 2, "bad labels in {line:?}");
        }
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .filter(|b| types.get(*b).is_some_and(|t| t == "histogram" || t == "summary"));
        let family = base.unwrap_or(name);
        assert_eq!(family, current, "sample {line:?} outside its family's group (in {current})");
        assert!(types.contains_key(family), "sample {line:?} before its TYPE");
    }
    types
}

/// The scrape, as the parser reads it: (metric, labels) → value.
fn parse(text: &str) -> Vec<(String, HashMap<String, String>, Value)> {
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("a Prometheus text parser reads it");
    scrape.samples.into_iter().map(|s| (s.metric, s.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(), s.value)).collect()
}

fn value(samples: &[(String, HashMap<String, String>, Value)], metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples.iter().find(|(m, l, _)| m == metric && labels.iter().all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))).map(|(_, _, v)| match v {
        Value::Counter(x) | Value::Gauge(x) | Value::Untyped(x) => *x,
        Value::Histogram(h) => h.iter().map(|b| b.count).fold(0.0, f64::max),
        Value::Summary(_) => f64::NAN,
    })
}

#[test]
fn every_node_and_the_log_service_serve_prometheus_metrics() {
    let dir = tempdir("metrics");
    let up = Up::start(&dir, 1, None);
    up.wait_all_serving(Duration::from_secs(60));
    let rt = rt();
    rt.block_on(async {
        let mut c = Conn::connect(&up.endpoint()).await.unwrap();
        assert_eq!(c.request(&[b"SET", b"k", b"v"]).await.unwrap(), Reply::Simple("OK".into()));
        assert_eq!(c.request(&[b"GET", b"k"]).await.unwrap(), Reply::Bulk(Some(b"v".to_vec())));
        assert!(matches!(c.request(&[b"INCR", b"k"]).await.unwrap(), Reply::Error(_)));
        assert_eq!(c.request(&[b"WAIT", b"1", b"10000"]).await.unwrap(), Reply::Int(1));
        // SAVE on a node of a log service: its snapshot child reaches the log with the
        // node's URL and token.
        assert_eq!(c.request(&[b"SAVE"]).await.unwrap(), Reply::Simple("OK".into()));
        // INFO memoria (the host's report, each second): the append the SET waited for.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let info = match c.request(&[b"INFO", b"memoria"]).await.unwrap() {
                Reply::Bulk(Some(b)) => String::from_utf8(b).unwrap(),
                other => panic!("INFO memoria: {other:?}"),
            };
            let field = |name: &str| info.lines().find_map(|l| l.strip_prefix(&format!("{name}:")).map(str::to_string));
            assert_eq!(field("role").as_deref(), Some("primary"), "{info}");
            if field("last_append_usec").is_some_and(|v| v != "0") {
                assert!(field("log_offset").is_some_and(|v| v.parse::<u64>().unwrap() >= 1), "{info}");
                assert!(field("lease_remaining_ms").is_some(), "{info}");
                break;
            }
            assert!(Instant::now() < deadline, "INFO memoria shows no append: {info}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("cluster.json")).unwrap()).unwrap();
    let nodes = file["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2);
    let common = [
        "memoria_shard_up",
        "memoria_role",
        "memoria_commands_total",
        "memoria_command_duration_seconds",
        "memoria_errors_total",
        "memoria_keys",
        "memoria_engine_memory_used_bytes",
        "memoria_connected_clients",
        "memoria_held_replies",
        "memoria_pending_keys",
        "memoria_log_offset",
        "memoria_reply_latency_seconds",
        "memoria_net_input_bytes_total",
        "memoria_process_resident_memory_bytes",
        "memoria_process_cpu_seconds_total",
        "memoria_build_info",
    ];
    for n in nodes {
        let url = n["metrics"].as_str().unwrap_or_else(|| panic!("cluster.json names no metrics URL for {n}"));
        assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/metrics"), "{url}");
        let primary = n["role"] == "primary";
        // The reply latency histogram adds a window a second: poll until the writes show.
        let deadline = Instant::now() + Duration::from_secs(30);
        let (text, samples) = loop {
            let (status, text) = rt.block_on(get(url, None));
            assert_eq!(status, 200, "{url}: {text}");
            let samples = parse(&text);
            let done = !primary || value(&samples, "memoria_reply_latency_seconds_count", &[("shard", "0")]).is_some_and(|v| v >= 3.0);
            if done || Instant::now() > deadline {
                break (text, samples);
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let types = check_format(&text);
        for family in common {
            assert!(types.contains_key(family), "{url} lacks {family}:\n{text}");
        }
        assert_eq!(types["memoria_command_duration_seconds"], "histogram");
        assert_eq!(types["memoria_commands_total"], "counter");
        assert_eq!(value(&samples, "memoria_shard_up", &[("shard", "0")]), Some(1.0), "{url}");
        assert_eq!(value(&samples, "memoria_keys", &[("db", "0")]), Some(1.0), "{url}: the key is on every node");
        assert!(value(&samples, "memoria_process_resident_memory_bytes", &[]).is_some_and(|v| v > 1e6), "{url}");
        if primary {
            assert_eq!(value(&samples, "memoria_role", &[("role", "primary")]), Some(1.0));
            assert_eq!(value(&samples, "memoria_commands_total", &[("cmd", "set")]), Some(1.0), "{url}:\n{text}");
            assert_eq!(value(&samples, "memoria_command_duration_seconds_count", &[("cmd", "get")]), Some(1.0), "{url}:\n{text}");
            assert_eq!(value(&samples, "memoria_command_failed_calls_total", &[("cmd", "incr")]), Some(1.0), "{url}");
            assert_eq!(value(&samples, "memoria_errors_total", &[("error", "ERR")]), Some(1.0), "{url}");
            assert!(value(&samples, "memoria_reply_latency_seconds_count", &[("shard", "0")]).is_some_and(|v| v >= 3.0), "{url}:\n{text}");
            assert!(value(&samples, "memoria_lease_remaining_seconds", &[]).is_some_and(|v| v > 0.0), "{url}");
            assert!(value(&samples, "memoria_epoch", &[]).is_some_and(|v| v >= 1.0), "{url}");
            for family in ["memoria_node_log_append_seconds", "memoria_node_log_append_batch_entries"] {
                assert_eq!(types.get(family).map(String::as_str), Some("histogram"), "{url} lacks {family}:\n{text}");
            }
            assert!(value(&samples, "memoria_node_log_append_seconds_count", &[("outcome", "ok")]).is_some_and(|v| v >= 1.0), "{url}:\n{text}");
        } else {
            assert_eq!(value(&samples, "memoria_role", &[("role", "replica")]), Some(1.0));
            assert_eq!(value(&samples, "memoria_replica_link_up", &[]), Some(1.0), "{url}");
            assert!(value(&samples, "memoria_replica_lag_entries", &[]).is_some(), "{url}");
        }
    }
    // The log service: open on loopback (no scrape token was set), with the log's own
    // figures and the snapshot scheduler's.
    let url = file["log"]["metrics"].as_str().expect("cluster.json names the log service's metrics");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, text) = rt.block_on(get(url, None));
        assert_eq!(status, 200, "{url}: {text}");
        let types = check_format(&text);
        let want = ["memoria_log_append_seconds", "memoria_log_appended_entries_total", "memoria_snapshot_log_entries_since"];
        if want.iter().all(|f| types.contains_key(*f)) {
            parse(&text);
            break;
        }
        assert!(Instant::now() < deadline, "{url} lacks one of {want:?}:\n{text}");
        std::thread::sleep(Duration::from_millis(300));
    }
}
