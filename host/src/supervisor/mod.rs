//! `memoria up`: one machine, the embedded default. The log service runs in this process
//! over SQLite (served on loopback HTTP with a fresh token), and every node is its own OS
//! process (`memoria server`), so a node can be killed like a real machine. Nodes elect
//! their primary through the log; a node that dies is started again and rejoins as a
//! replica. `--port` is a stable endpoint that always leads to the current primary: it
//! hands each connection to the primary's process (`endpoint`), or in cluster mode splices
//! it there (`proxy`). What the supervisor knows is printed and kept in `<data-dir>/cluster.json`.

mod console;
mod endpoint;
mod nodes;
mod proxy;
mod status;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::watch;

pub use console::ConsoleOptions;
pub use memoria_admin::cluster_file::{ClusterFile, NodeRole, NodeStatus};

/// What `memoria up` was asked for.
#[derive(Clone, Debug)]
pub struct UpOptions {
    pub bind: String,
    /// The stable client endpoint (proxy to the current primary).
    pub port: u16,
    /// Nodes listen on `node_port_base`, `node_port_base + 1`, …
    pub node_port_base: u16,
    pub data_dir: PathBuf,
    /// Replicas per shard: `replicas + 1` nodes in all.
    pub replicas: usize,
    /// Shards: every node process runs one node of each (node i's shard s listens on
    /// `node_port_base + i * shards + s`).
    pub shards: u16,
    /// Cluster mode (`--cluster`, or more than one shard); otherwise a standalone server
    /// with 16 databases.
    pub cluster: bool,
    pub lease_ms: u64,
    /// Extra arguments for every node (`memoria server …`): limits and the like.
    pub node_args: Vec<String>,
    /// Snapshot scheduling (None: no snapshots, the log is never truncated).
    pub snapshots: Option<crate::snapshot::schedule::Policy>,
    /// Where snapshots go (default: <data-dir>/snapshots); every node starts from them.
    pub snapshot_store: Option<String>,
    /// TLS on the RESP ports: a stable TLS endpoint and a TLS port per node.
    pub tls: Option<UpTls>,
    /// Serve the embedded log service over HTTPS (nodes and snapshot children check it
    /// against the CA file, and send the token encrypted).
    pub log_tls: Option<LogTls>,
    /// The web console (None: not started).
    pub console: Option<ConsoleOptions>,
    /// Prometheus endpoints: node process i serves `/metrics` on `port_base + i`; the log
    /// service's is on its own port.
    pub metrics: Option<UpMetrics>,
}

#[derive(Clone, Debug)]
pub struct UpMetrics {
    pub port_base: u16,
    /// Where the nodes' metrics ports listen (`--metrics-bind`).
    pub bind: String,
    /// The bearer token scrapers send (None: anyone who reaches the loopback ports).
    pub token: Option<String>,
}

#[derive(Clone, Debug)]
pub struct UpTls {
    /// The stable TLS endpoint (to the current primary's TLS port).
    pub port: u16,
    /// Nodes' TLS ports are `node_port_base`, `node_port_base + 1`, …
    pub node_port_base: u16,
    /// `--tls-cert-file …` and the other TLS flags for every node.
    pub node_args: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct LogTls {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// What nodes trust for the log service's certificate (issued for 127.0.0.1).
    pub ca_file: PathBuf,
}

/// Runs until `stop` resolves; then stops the nodes and the log service.
pub async fn run(opts: UpOptions, stop: impl std::future::Future<Output = ()>) -> anyhow::Result<()> {
    std::fs::create_dir_all(&opts.data_dir).with_context(|| format!("cannot create the data dir {}", opts.data_dir.display()))?;
    let data_dir = std::fs::canonicalize(&opts.data_dir)?;
    // Every port first, so a taken one fails before anything starts.
    let proxy_listener =
        tokio::net::TcpListener::bind((opts.bind.as_str(), opts.port)).await.with_context(|| format!("cannot listen on {}:{}", opts.bind, opts.port))?;
    let tls_proxy_listener = match &opts.tls {
        Some(t) => Some(
            tokio::net::TcpListener::bind((opts.bind.as_str(), t.port)).await.with_context(|| format!("cannot listen on {}:{} (TLS)", opts.bind, t.port))?,
        ),
        None => None,
    };
    let shards = opts.shards.max(1);
    if !opts.cluster {
        let last_node_port = opts.node_port_base + opts.replicas as u16;
        crate::handoff::check_path(&crate::handoff::socket_path(&data_dir, last_node_port)).map_err(anyhow::Error::msg)?;
    }
    let plain = (0..(opts.replicas + 1) * shards as usize).map(|i| (opts.node_port_base + i as u16, i / shards as usize));
    let tls_ports = opts.tls.iter().flat_map(|t| (0..=opts.replicas).map(move |i| (t.node_port_base + i as u16, i)));
    let metrics_ports = opts.metrics.iter().flat_map(|m| (0..=opts.replicas).map(move |i| (m.port_base + i as u16, i, m.bind.as_str())));
    let node_ports: Vec<(u16, usize, &str)> = plain.chain(tls_ports).map(|(port, node)| (port, node, opts.bind.as_str())).chain(metrics_ports).collect();
    // The console is started after the nodes: on a node's port it would leave that node
    // failing to bind and restarted for ever.
    if let Some(c) = &opts.console
        && let Some(node) = node_of_port(&node_ports, c.port)
    {
        anyhow::bail!(
            "--console-port {} is node-{}'s port (nodes take --port + 1 onwards; see --node-port-base, --node-tls-port-base and --metrics-port-base): pick another",
            c.port,
            node + 1
        );
    }
    for &(port, node, bind) in &node_ports {
        // Nodes of a previous run that was killed may still be on their way out.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while let Err(e) = std::net::TcpListener::bind((bind, port)) {
            if std::time::Instant::now() >= deadline {
                return Err(e).with_context(|| {
                    format!("port {port} for node-{} is taken (see --node-port-base, --node-tls-port-base and --metrics-port-base)", node + 1)
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let log_path = data_dir.join("log.sqlite");
    let core = memoria_log::LogCore::open_sqlite(&log_path).await.with_context(|| format!("opening the log {}", log_path.display()))?;
    let token = random_token();
    // For `memoria reshard --data-dir`: whoever can read the data dir can read the log file
    // itself, so the token is no wider a secret than that (and readable only by its owner).
    write_private(&data_dir.join(memoria_admin::cluster_file::TOKEN_FILE), &token).context("writing the log token file")?;
    let log_listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.context("binding the log service")?;
    let log_addr: SocketAddr = log_listener.local_addr()?;
    let snapshot_store = opts.snapshot_store.clone().unwrap_or_else(|| memoria_admin::snapshot::default_store(&data_dir.display().to_string()));
    let store = crate::snapshot::SnapshotStore::open(&snapshot_store).map_err(|e| anyhow::anyhow!("snapshot store {snapshot_store}: {e}"))?;
    let store_url = store.url().to_string();
    let log_api = memoria_log::LogHandle::Embedded(core.clone());
    // The log service listens on loopback: its /metrics is open there, or behind the
    // user's scrape token.
    let scrape = match opts.metrics.as_ref().and_then(|m| m.token.clone()) {
        Some(t) => memoria_log::server::ScrapeAccess::Token(t),
        None => memoria_log::server::ScrapeAccess::Open,
    };
    let core_for_socket = core.clone();
    let router = memoria_log::server::router_with(core, Some(token.clone()), scrape);
    let log_task = match &opts.log_tls {
        None => tokio::spawn(async move {
            if let Err(e) = axum::serve(log_listener, router).await {
                tracing::error!(error = %e, "the log service stopped");
            }
        }),
        Some(t) => {
            let cfg = crate::tls::https_server_config(&t.cert_file, &t.key_file)?;
            let std_listener = log_listener.into_std()?;
            tokio::spawn(async move {
                let server = match axum_server::from_tcp_rustls(std_listener, axum_server::tls_rustls::RustlsConfig::from_config(cfg)) {
                    Ok(s) => s,
                    Err(e) => return tracing::error!(error = %e, "the log service could not start"),
                };
                if let Err(e) = server.serve(router.into_make_service()).await {
                    tracing::error!(error = %e, "the log service stopped");
                }
            })
        }
    };
    // Appends and tail reads from this machine's nodes skip HTTP: the same service behind
    // a Unix socket.
    let log_socket = data_dir.join("log.sock");
    // Without it (a path too long for a socket name, say) appends go over HTTP as before.
    let socket_task = match memoria_log::local_socket::serve(&log_socket, core_for_socket, token.clone()).await {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::warn!(path = %log_socket.display(), error = %e, "no log socket; nodes reach the log over HTTP");
            None
        }
    };
    let log_url = format!("{}://{log_addr}", if opts.log_tls.is_some() { "https" } else { "http" });
    println!("log: embedded SQLite at {} served on {log_url} (every write is durable before it is acknowledged)", log_path.display());

    let exe = std::env::current_exe().context("locating the memoria binary")?;
    let node_log_urls = test_node_log_urls();
    let specs: Vec<nodes::NodeSpec> = (0..=opts.replicas)
        .map(|i| {
            let port = opts.node_port_base + (i * shards as usize) as u16;
            let metrics_port = opts.metrics.as_ref().map(|m| m.port_base + i as u16);
            let node_log_url = node_log_urls.get(i).unwrap_or(&log_url);
            let mut args = node_command(&opts, port, node_log_url, &data_dir, &data_dir.join(format!("node-{}", i + 1)), store.url());
            // A test relay in front of the service (partition drills) must carry every
            // request, appends and reads included.
            if socket_task.is_some() && node_log_urls.is_empty() && !opts.cluster {
                args.extend(["--log-socket".to_string(), log_socket.display().to_string()]);
            }
            if let Some(p) = metrics_port {
                args.extend(["--metrics-port".to_string(), p.to_string()]);
            }
            let env = opts.metrics.iter().filter_map(|m| m.token.clone()).map(|t| ("MEMORIA_METRICS_TOKEN".to_string(), t)).collect();
            let metrics_url = opts.metrics.as_ref().zip(metrics_port).map(|(m, p)| format!("http://{}:{p}/metrics", connect_host(&m.bind)));
            nodes::NodeSpec { name: format!("node-{}", i + 1), port, dir: data_dir.join(format!("node-{}", i + 1)), args, metrics_url, env }
        })
        .collect();
    for s in &specs {
        std::fs::create_dir_all(&s.dir)?;
    }
    let (primary_tx, primary_rx) = watch::channel::<Option<status::Primary>>(None);
    let table = Arc::new(status::Table::new(&specs, shards, opts.port, &connect_host(&opts.bind), &log_url, &log_path, data_dir.join("cluster.json")));
    let supervisor = nodes::Supervisor::start(exe.clone(), specs, token.clone(), table.clone()).await?;
    let poller = tokio::spawn(status::poll(table.clone(), primary_tx));
    println!("memoria {} listening on {}:{} (RESP2/RESP3; always leads to the current primary)", env!("CARGO_PKG_VERSION"), opts.bind, opts.port);
    println!("cluster state: {}", data_dir.join("cluster.json").display());
    if let Some(m) = &opts.metrics {
        let how = match &m.token {
            Some(_) => "send the metrics token as `Authorization: Bearer <token>`",
            None => "no token: loopback only",
        };
        let host = connect_host(&m.bind);
        let nodes: Vec<String> = (0..=opts.replicas).map(|i| format!("http://{host}:{}/metrics", m.port_base + i as u16)).collect();
        println!("metrics (Prometheus; {how}): nodes {}; log service {log_url}/metrics", nodes.join(", "));
    }
    println!("press Ctrl-C to stop");
    let tls_proxy_task = match (tls_proxy_listener, &opts.tls) {
        (Some(l), Some(t)) => {
            println!("memoria listening on {}:{} (TLS; always leads to the current primary)", opts.bind, t.port);
            Some(match opts.cluster {
                true => tokio::spawn(proxy::serve(l, connect_host(&opts.bind), primary_rx.clone(), t.node_port_base as i32 - opts.node_port_base as i32)),
                false => tokio::spawn(endpoint::serve(l, data_dir.clone(), primary_rx.clone(), crate::handoff::Kind::Tls)),
            })
        }
        _ => None,
    };
    let proxy_task = match opts.cluster {
        true => tokio::spawn(proxy::serve(proxy_listener, connect_host(&opts.bind), primary_rx, 0)),
        false => tokio::spawn(endpoint::serve(proxy_listener, data_dir.clone(), primary_rx, crate::handoff::Kind::Plain)),
    };
    // Snapshots: decided here from the log's growth, each taken by a child `memoria
    // snapshot` process reading the log over HTTP like the nodes; truncation follows.
    let mut schedulers = Vec::new();
    if let Some(policy) = opts.snapshots.clone() {
        for s in 0..shards {
            let args = vec!["--shard".into(), s.to_string(), "--log-url".into(), log_url.clone(), "--store".into(), store.url().to_string()];
            let mut env = vec![("MEMORIA_LOG_TOKEN".into(), token.clone())];
            if let Some(t) = &opts.log_tls {
                env.push(("MEMORIA_LOG_CA_CERT_FILE".into(), t.ca_file.display().to_string()));
            }
            let runner = crate::snapshot::schedule::Runner::child(args, env)?;
            schedulers.push(crate::snapshot::schedule::spawn(
                policy.clone(),
                runner,
                log_api.clone(),
                memoria_admin::topology::shard_log(s),
                store.clone(),
                Duration::from_secs(1),
            ));
        }
        println!("snapshots: {} (scheduled from the log's growth; the log is truncated behind them)", store.url());
    }

    let console_task = opts.console.clone().map(|c| {
        tokio::spawn(console::keep_running(console::Spec {
            exe: console::binary(&exe),
            memoria: exe.clone(),
            bind: opts.bind.clone(),
            data_dir: data_dir.clone(),
            log_url: log_url.clone(),
            log_token: token.clone(),
            store: store_url.clone(),
            opts: c,
        }))
    });

    stop.await;
    println!("shutting down");
    if let Some(c) = console_task {
        c.abort(); // the child is killed on drop
    }
    proxy_task.abort();
    if let Some(t) = tls_proxy_task {
        t.abort();
    }
    poller.abort();
    for s in schedulers {
        s.abort(); // kills a snapshot child in progress; an unpublished snapshot is never read
    }
    supervisor.stop(Duration::from_secs(10)).await;
    table.mark_stopped();
    log_task.abort();
    if let Some(t) = socket_task {
        t.abort();
        let _ = std::fs::remove_file(&log_socket);
    }
    Ok(())
}

/// Where this machine reaches a node listening on `bind`.
fn connect_host(bind: &str) -> String {
    match bind {
        "0.0.0.0" | "" => "127.0.0.1".into(),
        "::" => "::1".into(),
        b => b.into(),
    }
}

/// A test hook for the partition drill (`e2e/tests/partition.rs`): the log URL node
/// process i uses instead of the embedded log service's, from the comma-separated
/// `MEMORIA_TEST_NODE_LOG_URLS` (a relay the test can cut, in front of the service that
/// cluster.json names under `log.url`).
fn test_node_log_urls() -> Vec<String> {
    std::env::var("MEMORIA_TEST_NODE_LOG_URLS").map(|v| v.split(',').map(str::to_string).collect()).unwrap_or_default()
}

fn node_command(opts: &UpOptions, port: u16, log_url: &str, data_dir: &std::path::Path, dir: &std::path::Path, snapshot_store: &str) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "server".into(),
        "--bind".into(),
        opts.bind.clone(),
        "--port".into(),
        port.to_string(),
        "--data-dir".into(),
        dir.display().to_string(),
        "--log-url".into(),
        log_url.to_string(),
        // The name in leader claims is the address clients are sent to.
        "--node-name".into(),
        format!("{}:{port}", opts.bind),
        "--lease-ms".into(),
        opts.lease_ms.to_string(),
        "--snapshot-store".into(),
        snapshot_store.to_string(),
    ];
    if opts.cluster {
        a.push("--cluster".into());
    } else {
        // The stable endpoint hands its connections to whichever node is primary.
        a.extend(["--handoff-socket".to_string(), crate::handoff::socket_path(data_dir, port).display().to_string()]);
    }
    if let Some(t) = &opts.tls {
        a.extend(["--tls-port".to_string(), (t.node_port_base + (port - opts.node_port_base)).to_string()]);
        a.extend(t.node_args.iter().cloned());
    }
    if let Some(t) = &opts.log_tls {
        a.extend(["--log-ca-cert-file".to_string(), t.ca_file.display().to_string()]);
    }
    a.extend(opts.node_args.iter().cloned());
    a
}

/// 128 random bits from the OS, hex: the bearer token of this run's log service.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    f.write_all(text.as_bytes())
}

fn random_token() -> String {
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut b);
    }
    let s = crate::clock::seed().to_le_bytes();
    b.iter().zip(s.iter().cycle()).map(|(x, y)| format!("{:02x}", x ^ y)).collect()
}

/// Which node listens on `port` among `ports` (port, node index, bind address).
fn node_of_port(ports: &[(u16, usize, &str)], port: u16) -> Option<usize> {
    ports.iter().find(|(p, _, _)| *p == port).map(|(_, n, _)| *n)
}

#[cfg(test)]
mod port_tests {
    #[test]
    fn the_console_on_a_nodes_port_is_found() {
        let ports = [(7312, 0, "127.0.0.1"), (7313, 1, "127.0.0.1"), (7401, 0, "127.0.0.1")];
        assert_eq!(super::node_of_port(&ports, 7313), Some(1));
        assert_eq!(super::node_of_port(&ports, 7401), Some(0));
        assert_eq!(super::node_of_port(&ports, 8080), None);
    }
}
