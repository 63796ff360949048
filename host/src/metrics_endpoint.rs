//! The node's Prometheus endpoint (`--metrics-port`). `GET /metrics` asks every shard of
//! the process for its families (each answers between two batches: the engine's
//! counters and the host's view of the shard), adds the process's own figures and what
//! the host records through the `metrics` facade (appends to the log, snapshot loads,
//! refused connections), and merges them so each family is one group, as the text
//! format requires of a process with several shards.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use memoria_core::server::prometheus::family;
use tokio::sync::oneshot;

use crate::shard::{ShardHandle, ShardMsg};

/// How long a scrape waits for a shard (one running a long script answers late): it is
/// then reported down for this scrape (`memoria_shard_up` 0) instead of failing it.
const SHARD_WAIT: Duration = Duration::from_secs(2);

pub struct MetricsOptions {
    pub bind: String,
    pub port: u16,
    /// A bearer token scrapers must send; None serves loopback only.
    pub token: Option<String>,
}

struct Endpoint {
    shards: Vec<(u16, ShardHandle)>,
    token: Option<[u8; 32]>,
}

/// Starts serving `/metrics` for `shards` (shard number, handle); returns its address.
pub async fn serve(opts: MetricsOptions, shards: Vec<(u16, ShardHandle)>) -> anyhow::Result<SocketAddr> {
    if opts.token.is_none() && !crate::acl::is_loopback_host(&opts.bind) {
        anyhow::bail!("--metrics-port on {} (not loopback) needs --metrics-token: scrapers then send it as a bearer token", opts.bind);
    }
    let listener = tokio::net::TcpListener::bind((opts.bind.as_str(), opts.port))
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}:{} for metrics: {e}", opts.bind, opts.port))?;
    let addr = listener.local_addr()?;
    // The facade's recorder: from here on the host's metrics are recorded (before, they
    // cost nothing).
    let _ = memoria_log::server::prometheus();
    let state = Arc::new(Endpoint { shards, token: opts.token.as_deref().map(memoria_log::server::token_digest) });
    let app = axum::Router::new().route("/metrics", get(render)).with_state(state);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "the metrics endpoint stopped");
        }
    });
    Ok(addr)
}

async fn render(State(ep): State<Arc<Endpoint>>, headers: HeaderMap) -> Response {
    if let Some(want) = &ep.token
        && !memoria_log::server::bearer_matches(&headers, want)
    {
        return memoria_log::server::unauthorized();
    }
    let mut parts = Vec::new();
    let mut up = String::new();
    let mut f = family(&mut up, "", "memoria_shard_up", "gauge", "1 when the shard answered this scrape in time (0: busy or stuck).");
    for (shard, handle) in &ep.shards {
        let (tx, rx) = oneshot::channel();
        let answered = match handle.send(ShardMsg::Metrics { reply: tx }) {
            true => tokio::time::timeout(SHARD_WAIT, rx).await.ok().and_then(Result::ok),
            false => None,
        };
        f.sample("", &[("shard", &shard.to_string())], u8::from(answered.is_some()));
        parts.extend(answered);
    }
    let mut process = String::new();
    family(&mut process, "", "memoria_build_info", "gauge", "The running version.").sample("", &[("version", env!("CARGO_PKG_VERSION"))], 1);
    crate::node_stats::process_prometheus(&mut process);
    parts.push(up);
    parts.push(process);
    parts.push(memoria_log::server::prometheus().render());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], merge(&parts)).into_response()
}

/// Texts in the exposition format, merged so that each family (its HELP and TYPE lines
/// once, then every sample of it) is one group, in the order families first appear.
pub fn merge(parts: &[String]) -> String {
    let mut order: Vec<&str> = Vec::new();
    let mut families: std::collections::HashMap<&str, (Vec<&str>, Vec<&str>)> = std::collections::HashMap::new();
    for part in parts {
        let mut current = "";
        for line in part.lines().filter(|l| !l.trim().is_empty()) {
            let meta = line.strip_prefix("# HELP ").or_else(|| line.strip_prefix("# TYPE "));
            let name = match meta {
                Some(rest) => rest.split_whitespace().next().unwrap_or(""),
                // A sample belongs to the family announced before it.
                None if line.starts_with('#') => continue,
                None => current,
            };
            current = name;
            let entry = families.entry(name).or_insert_with(|| {
                order.push(name);
                (Vec::new(), Vec::new())
            });
            match meta {
                Some(_) if !entry.0.contains(&line) => entry.0.push(line),
                Some(_) => {}
                None => entry.1.push(line),
            }
        }
    }
    let mut out = String::new();
    for name in order {
        let (meta, samples) = &families[name];
        for l in meta.iter().chain(samples) {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_of_several_shards_become_one_group_each() {
        let shard =
            |s: u8| format!("# HELP a_total A.\n# TYPE a_total counter\na_total{{shard=\"{s}\"}} 1\n# HELP b B.\n# TYPE b gauge\nb{{shard=\"{s}\"}} 2\n");
        let merged = merge(&[shard(0), shard(1), "# HELP c C.\n# TYPE c gauge\nc 3\n".into()]);
        assert_eq!(
            merged,
            "# HELP a_total A.\n# TYPE a_total counter\na_total{shard=\"0\"} 1\na_total{shard=\"1\"} 1\n# HELP b B.\n# TYPE b gauge\nb{shard=\"0\"} 2\nb{shard=\"1\"} 2\n# HELP c C.\n# TYPE c gauge\nc 3\n"
        );
    }

    #[test]
    fn only_loopback_binds_go_without_a_token() {
        use crate::acl::is_loopback_host;
        assert!(is_loopback_host("127.0.0.1") && is_loopback_host("::1") && is_loopback_host("localhost"));
        assert!(!is_loopback_host("0.0.0.0") && !is_loopback_host("10.1.2.3"));
    }
}
