//! The `memoria` binary.

use clap::{Parser, Subcommand};
use memoria_host::limits::ConnLimits;
use memoria_host::server::{self, NetOptions, ServerOptions};
use memoria_host::tls::{ClientAuth, TlsSettings};

#[derive(Parser)]
#[command(name = "memoria", version, about = "Memoria: a durable, memory-first, Redis-compatible database")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct NodeArgs {
    /// TCP port for RESP clients (like redis-server's --port).
    #[arg(long, default_value_t = 6379)]
    port: u16,
    /// Address to listen on. Loopback by default.
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// Where Memoria keeps its data (log, snapshots, cluster.json).
    #[arg(long, default_value = "./memoria-data")]
    data_dir: String,
    /// Port of the web console.
    #[arg(long, default_value_t = 8080)]
    console_port: u16,
    /// Largest bulk string a client may send (proto-max-bulk-len), in bytes.
    #[arg(long, default_value_t = 512 * 1024 * 1024)]
    proto_max_bulk_len: usize,
    /// Largest unparsed input per client (client-query-buffer-limit), in bytes.
    #[arg(long, default_value_t = 1024 * 1024 * 1024)]
    client_query_buffer_limit: usize,
    /// Keep data in memory only, with no log (benchmarks; data is lost on exit).
    #[arg(long)]
    in_memory: bool,
    /// Most clients connected at once (maxclients); one more is refused with
    /// `-ERR max number of clients reached`.
    #[arg(long, default_value_t = 10000)]
    maxclients: u64,
    /// Close a client idle for this many seconds (timeout; 0: never). Subscribed and
    /// blocked clients are spared.
    #[arg(long, default_value_t = 0)]
    timeout: u64,
    /// Drop a client that sent part of a command (or of a TLS handshake) and then nothing
    /// for this many seconds (0: never).
    #[arg(long, default_value_t = 30)]
    partial_request_timeout: u64,
    /// The watchdog: interrupt an engine call running longer than this many milliseconds
    /// (its clients get an error, the engine is rebuilt from the log; 0: never). Off by
    /// default: the engine then runs without the epoch checks it needs.
    #[arg(long, default_value_t = 0)]
    engine_call_timeout: u64,
    /// client-output-buffer-limit as in redis.conf, e.g. "pubsub 32mb 8mb 60" (class hard
    /// soft soft-seconds; classes normal and pubsub are enforced); may be repeated.
    #[arg(long, value_name = "CLASS HARD SOFT SECONDS")]
    client_output_buffer_limit: Vec<String>,
    /// Serve RESP over TLS on this port too (0: no TLS). With --port 0, TLS only.
    #[arg(long, default_value_t = 0)]
    tls_port: u16,
    /// The server's certificate chain (PEM) for --tls-port.
    #[arg(long, value_name = "PEM")]
    tls_cert_file: Option<std::path::PathBuf>,
    /// The private key (PEM) of --tls-cert-file.
    #[arg(long, value_name = "PEM")]
    tls_key_file: Option<std::path::PathBuf>,
    /// CA certificates (PEM) that sign client certificates.
    #[arg(long, value_name = "PEM")]
    tls_ca_cert_file: Option<std::path::PathBuf>,
    /// Client certificates: yes (required, as Redis's default), no, or optional.
    #[arg(long, default_value = "yes")]
    tls_auth_clients: String,
    /// Where the shard's snapshots are (a directory, or s3://, gs://, az:// with the
    /// `cloud` feature); a node starts from the newest one that passes its checks plus
    /// the log after it. Default: <data-dir>/snapshots.
    #[arg(long, env = "MEMORIA_SNAPSHOT_STORE")]
    snapshot_store: Option<String>,
    /// Shards: each its own engine thread, log and port (shard s listens on port + s);
    /// more than one turns cluster mode on (16384 slots split evenly at creation; the
    /// slot map lives in the cluster log).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    shards: u16,
    /// Password of the `default` user (like redis-server's requirepass), unless the log has
    /// set the default user since (ACL SETUSER default / CONFIG SET requirepass). Stored
    /// and logged only as its SHA-256.
    #[arg(long, env = "MEMORIA_REQUIREPASS", hide_env_values = true)]
    requirepass: Option<String>,
    /// Protected mode (like redis-server's): without a password for the default user,
    /// refuse to listen beyond loopback and refuse non-loopback clients. `no` only on a
    /// trusted network.
    #[arg(long, default_value = "yes", value_parser = ["yes", "no"])]
    protected_mode: String,
    /// Allow DEBUG: no, yes, or local (from loopback clients only), as redis-server's
    /// enable-debug-command.
    #[arg(long, default_value = "no", value_parser = ["no", "yes", "local"])]
    enable_debug_command: String,
    /// Databases (SELECT 0 … N-1), as redis-server's `databases`; at most 255 here (the
    /// log and snapshots name a key's database in a byte). Data in a database past N, from
    /// a log or snapshot written with more, is kept.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=255))]
    databases: u16,
    /// Serve Prometheus metrics (GET /metrics) on this port (0: none; `memoria up` gives
    /// each node process one, see --metrics-port-base).
    #[arg(long, default_value_t = 0)]
    metrics_port: u16,
    /// Address the metrics port listens on.
    #[arg(long, default_value = "127.0.0.1")]
    metrics_bind: String,
    /// Bearer token scrapers of /metrics must send (required beyond loopback; under
    /// `memoria up` it guards the log service's /metrics too).
    #[arg(long, env = "MEMORIA_METRICS_TOKEN", hide_env_values = true)]
    metrics_token: Option<String>,
}

impl NodeArgs {
    /// The flags of this struct that `memoria up` passes on to each node process it starts
    /// (`memoria server …`): one list, next to the flags themselves.
    fn child_flags(&self) -> Vec<String> {
        let mut flags = vec![
            "--proto-max-bulk-len".to_string(),
            self.proto_max_bulk_len.to_string(),
            "--client-query-buffer-limit".into(),
            self.client_query_buffer_limit.to_string(),
            "--shards".into(),
            self.shards.to_string(),
            "--protected-mode".into(),
            self.protected_mode.clone(),
            "--metrics-bind".into(),
            self.metrics_bind.clone(),
            "--enable-debug-command".into(),
            self.enable_debug_command.clone(),
            "--databases".into(),
            self.databases.to_string(),
        ];
        flags.extend([
            "--maxclients".into(),
            self.maxclients.to_string(),
            "--timeout".into(),
            self.timeout.to_string(),
            "--partial-request-timeout".into(),
            self.partial_request_timeout.to_string(),
            "--engine-call-timeout".into(),
            self.engine_call_timeout.to_string(),
        ]);
        for v in &self.client_output_buffer_limit {
            flags.extend(["--client-output-buffer-limit".to_string(), v.clone()]);
        }
        flags
    }

    fn auth(&self) -> memoria_host::acl::AuthOptions {
        memoria_host::acl::AuthOptions {
            requirepass: self.requirepass.clone(),
            protected_mode: self.protected_mode == "yes",
            internal_token: std::env::var(memoria_host::acl::INTERNAL_TOKEN_ENV).ok(),
        }
    }
}

#[derive(clap::Args, Clone)]
struct UpArgs {
    #[command(flatten)]
    node: NodeArgs,
    /// Replicas per shard (each node is its own process; one more node is the primary).
    #[arg(long, default_value_t = 1)]
    replicas: usize,
    /// First port of the nodes themselves (default: --port + 1); --port leads to the
    /// current primary.
    #[arg(long)]
    node_port_base: Option<u16>,
    /// First TLS port of the nodes (default: --tls-port + 1); --tls-port leads to the
    /// current primary's TLS port.
    #[arg(long)]
    node_tls_port_base: Option<u16>,
    /// Prometheus: node process i serves /metrics on this port + i (default: the port
    /// after the nodes' last one); the log service's /metrics is listed with them.
    #[arg(long)]
    metrics_port_base: Option<u16>,
    /// No Prometheus endpoints on the nodes.
    #[arg(long)]
    no_metrics: bool,
    /// Serve the embedded log service over HTTPS with --tls-cert-file/--tls-key-file (a
    /// certificate valid for 127.0.0.1); nodes check it against --tls-ca-cert-file.
    #[arg(long)]
    log_tls: bool,
    /// Lease of the shard's primary, in ms (failover takes a little more than this).
    #[arg(long, default_value_t = memoria_host::lease::DEFAULT_LEASE_MS)]
    lease_ms: u64,
    /// One process with the log embedded in it, no replicas and no failover (the
    /// shortest write path; benchmarks).
    #[arg(long, conflicts_with = "replicas")]
    single_process: bool,
    /// Take no snapshots and never truncate the log.
    #[arg(long)]
    no_snapshots: bool,
    /// Do not start the web console (`memoria-console` on --console-port).
    #[arg(long)]
    no_console: bool,
    /// Cluster mode with one shard (a one-shard Redis Cluster, for cluster-aware clients:
    /// CLUSTER SLOTS, -MOVED, database 0 only). Without it one shard is a standalone Redis
    /// with 16 databases; --shards N > 1 is always cluster mode.
    #[arg(long)]
    cluster: bool,
    /// Require a login with this token in the web console.
    #[arg(long, env = "MEMORIA_CONSOLE_TOKEN", hide_env_values = true)]
    console_token: Option<String>,
    /// When to snapshot (each snapshot runs in a child `memoria snapshot` process) and
    /// how far to truncate the log behind.
    #[command(flatten)]
    snapshot_policy: memoria_host::snapshot::schedule::Policy,
}

#[derive(clap::Args, Clone)]
struct ServerArgs {
    #[command(flatten)]
    node: NodeArgs,
    /// Log service endpoints, one per AZ (comma-separated), e.g.
    /// http://10.0.1.5:7480,http://10.0.2.5:7480,http://10.0.3.5:7480
    #[arg(long, value_delimiter = ',', required = true)]
    log_url: Vec<String>,
    /// Bearer token of the log service.
    #[arg(long, env = "MEMORIA_LOG_TOKEN", hide_env_values = true)]
    log_token: String,
    /// CA certificates (PEM) to trust for an https:// log service, besides the system's.
    #[arg(long, env = "MEMORIA_LOG_CA_CERT_FILE", value_name = "PEM")]
    log_ca_cert_file: Option<std::path::PathBuf>,
    /// Send appends and tail reads over this Unix socket of a log service on the same
    /// machine (`memoria up` passes its own), with --log-url for everything else. One shard
    /// only.
    #[arg(long, value_name = "PATH")]
    log_socket: Option<std::path::PathBuf>,
    /// Run as a read replica that follows the log of the primary at this address.
    #[arg(long, value_name = "HOST:PORT")]
    replica_of: Option<String>,
    /// This node's name in the log (default: bind:port).
    #[arg(long)]
    node_name: Option<String>,
    /// Lease of the shard's primary, in ms, for automatic failover: the primary renews it
    /// every third of it, and a replica takes over once it has surely run out (after a
    /// backoff slightly longer than the lease). Every node, --replica-of or not, then
    /// starts as a replica and leadership is won by election through the log. 0 turns
    /// failover off: a node started without --replica-of leads for good.
    #[arg(long, default_value_t = memoria_host::lease::DEFAULT_LEASE_MS)]
    lease_ms: u64,
    /// Cluster mode: answer CLUSTER SLOTS/SHARDS/NODES and redirect writes sent to a
    /// replica to the primary with -MOVED (`memoria up --cluster` or `--shards N > 1`
    /// runs its nodes so).
    #[arg(long)]
    cluster: bool,
    /// Take client connections handed over by `memoria up`'s stable endpoint on this Unix
    /// socket (set by `memoria up`).
    #[arg(long, value_name = "PATH", hide = true)]
    handoff_socket: Option<std::path::PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Start Memoria on this machine: the log in SQLite under --data-dir, one primary and
    /// --replicas replicas, each its own process, and --port leading to the primary.
    Up(UpArgs),
    /// Run one node against a remote log service (the three-AZ shape).
    Server(ServerArgs),
    /// Take a snapshot of a shard (or, with --schedule, keep taking them and truncate the
    /// log behind them), in this process, off the serving nodes.
    Snapshot(memoria_host::snapshot::cli::SnapshotArgs),
    /// Move slots from one shard to another while clients keep reading and writing
    /// (resumable: the migration's state is in the logs).
    Reshard(memoria_host::cluster::reshard_cli::ReshardArgs),
}

/// An error reaches the user as one line, `Error: what: why` (its causes joined), whatever
/// RUST_BACKTRACE says: anyhow's default report of an error returned from `main` appends a
/// stack backtrace of its creation when that variable is set, dozens of lines for a port
/// that is taken.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_target(false)
        .init();
    let cli = Cli::parse();
    // Node processes that `memoria up` starts read the password from the environment,
    // never from their command line (visible to every local user).
    // Its supervisor probes them with a token of this run, whatever users the log holds.
    if let Command::Up(u) = &cli.command {
        let token = memoria_host::acl::new_internal_token()?;
        // SAFETY: no other thread exists yet (the runtime is built below).
        unsafe {
            std::env::set_var(memoria_host::acl::INTERNAL_TOKEN_ENV, token);
            if let Some(p) = &u.node.requirepass {
                std::env::set_var("MEMORIA_REQUIREPASS", p);
            }
        }
    }
    if let Command::Snapshot(a) = cli.command {
        return memoria_host::snapshot::cli::run(a);
    }
    if let Command::Reshard(a) = cli.command {
        return memoria_host::cluster::reshard_cli::run(a);
    }
    // Signals on a thread of their own, so a shard stuck in an engine call cannot keep the
    // process from stopping.
    *SHUTDOWN.lock().expect("not poisoned") = Some(memoria_host::shutdown::watch_signals(memoria_host::shutdown::grace())?);
    // One event loop thread, like redis-server: connections and the shard share it, so
    // handing a batch over costs no cross-thread wake-up.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    match cli.command {
        Command::Up(a) => rt.block_on(up(a)),
        Command::Server(a) => rt.block_on(serve_remote(a)),
        Command::Snapshot(_) | Command::Reshard(_) => Ok(()),
    }
}

fn snapshot_store_of(a: &NodeArgs) -> anyhow::Result<Option<memoria_host::snapshot::SnapshotStore>> {
    if a.in_memory {
        return Ok(None);
    }
    let url = a.snapshot_store.clone().unwrap_or_else(|| memoria_admin::snapshot::default_store(&a.data_dir));
    Ok(Some(memoria_host::snapshot::SnapshotStore::open(&url).map_err(|e| anyhow::anyhow!("snapshot store {url}: {e}"))?))
}

/// TLS and the connection limits of the node flags.
fn net_of(a: &NodeArgs) -> anyhow::Result<NetOptions> {
    if a.tls_port != 0 && a.shards > 1 {
        anyhow::bail!("--tls-port with --shards is not supported yet");
    }
    let mut config = vec![
        ("maxclients".to_string(), a.maxclients.to_string()),
        ("timeout".into(), a.timeout.to_string()),
        ("partial-request-timeout".into(), a.partial_request_timeout.to_string()),
        ("engine-call-timeout".into(), a.engine_call_timeout.to_string()),
        ("enable-debug-command".into(), a.enable_debug_command.clone()),
        ("databases".into(), a.databases.to_string()),
    ];
    for v in &a.client_output_buffer_limit {
        config.push(("client-output-buffer-limit".into(), v.clone()));
    }
    let tls = match (a.tls_port, &a.tls_cert_file, &a.tls_key_file) {
        (0, _, _) => None,
        (port, Some(cert), Some(key)) => Some((
            port,
            TlsSettings {
                cert_file: cert.clone(),
                key_file: key.clone(),
                ca_file: a.tls_ca_cert_file.clone(),
                auth_clients: ClientAuth::parse(&a.tls_auth_clients).map_err(|e| anyhow::anyhow!(e))?,
            },
        )),
        _ => anyhow::bail!("--tls-port needs --tls-cert-file and --tls-key-file"),
    };
    Ok(NetOptions { no_plain: a.port == 0 && tls.is_some(), tls, config, handoff: None, saver: None })
}

fn limits_of(a: &NodeArgs) -> ConnLimits {
    let mut limits = ConnLimits::default();
    limits.resp.max_bulk_len = a.proto_max_bulk_len;
    limits.query_buffer = a.client_query_buffer_limit;
    limits
}

async fn serve_remote(a: ServerArgs) -> anyhow::Result<()> {
    let urls: Vec<&str> = a.log_url.iter().map(|s| s.as_str()).collect();
    let ca = a.log_ca_cert_file.as_deref().map(memoria_host::tls::read_ca_pem).transpose()?;
    let client = memoria_log::LogClient::with_endpoints_ca(&urls, &a.log_token, ca.as_deref()).map_err(|e| anyhow::anyhow!("log service: {e}"))?;
    let n = &a.node;
    if a.cluster || n.shards > 1 {
        return serve_cluster(&a, memoria_log::LogHandle::Remote(client)).await;
    }
    // One shard on one runtime: the socket's one connection is this runtime's.
    let client = match &a.log_socket {
        Some(p) => client.with_local_socket(p.clone()),
        None => client,
    };
    let node = a.node_name.clone().unwrap_or_else(|| format!("{}:{}", n.bind, n.port));
    let opts = ServerOptions {
        bind: n.bind.clone(),
        port: n.port,
        data_dir: n.data_dir.clone(),
        limits: limits_of(n),
        log: Some(memoria_log::LogHandle::Remote(client)),
        node,
        replica_of: a.replica_of.clone(),
        lease_ms: (a.lease_ms > 0).then_some(a.lease_ms),
        cluster: a.cluster,
        snapshots: snapshot_store_of(n)?,
        auth: n.auth(),
    };
    let saver = remote_saver(&a, 0)?;
    let net = NetOptions { handoff: a.handoff_socket.clone(), saver, ..net_of(n)? };
    let srv = server::start_with(opts, net).await?;
    serve_metrics(n, vec![(0, srv.shard_handle())]).await?;
    let role = match (&a.replica_of, a.lease_ms) {
        (Some(p), 0) => format!("replica of {p}"),
        (None, 0) => "primary".to_string(),
        (Some(p), ms) => format!("replica of {p} (takes over if the primary's {ms} ms lease lapses)"),
        (None, ms) => format!("candidate (becomes primary by election through the log; {ms} ms lease)"),
    };
    println!("memoria {} listening on {}{} as {role}; log: {}", env!("CARGO_PKG_VERSION"), srv.addr, tls_note(&srv), a.log_url.join(", "));
    shutdown_signal().await;
    println!("shutting down");
    srv.shutdown().await;
    Ok(())
}

/// `memoria server --cluster` / `--shards N`: every shard of the cluster in this process,
/// the slot map from the cluster log (created by the first node when the log is empty).
async fn serve_cluster(a: &ServerArgs, api: memoria_log::LogHandle) -> anyhow::Result<()> {
    use memoria_host::cluster;
    use memoria_host::server::sharded;
    let n = &a.node;
    let (topo, last) = cluster::topology::load_or_init(&api, n.shards).await?;
    let shared = cluster::Shared::new(topo);
    let follower = tokio::spawn(cluster::shared::follow(api.clone(), last, shared.clone()));
    let host = a.node_name.as_deref().and_then(|nm| nm.rsplit_once(':').map(|(h, _)| h.to_string())).unwrap_or_else(|| n.bind.clone());
    let ports = sharded::ports(&n.bind, n.port, n.shards)?;
    let store = snapshot_store_of(n)?;
    let lease_ms = (a.lease_ms > 0).then_some(a.lease_ms);
    let savers: Vec<_> = (0..n.shards).map(|s| remote_saver(a, s)).collect::<anyhow::Result<_>>()?;
    let srv = sharded::start(
        n.shards,
        &ports,
        Some(shared),
        net_of(n)?.config,
        |s| savers[s as usize].clone(),
        |_s, port| ServerOptions {
            bind: n.bind.clone(),
            port,
            data_dir: n.data_dir.clone(),
            limits: limits_of(n),
            log: Some(api.clone()),
            node: format!("{host}:{port}"),
            replica_of: a.replica_of.clone(),
            lease_ms,
            cluster: true,
            snapshots: store.clone(),
            auth: n.auth(),
        },
    )
    .await?;
    let addrs: Vec<String> = srv.addrs().iter().map(|a| a.to_string()).collect();
    serve_metrics(n, srv.handles()).await?;
    println!("memoria {} cluster node: {} shard(s) on {}; log: {}", env!("CARGO_PKG_VERSION"), n.shards, addrs.join(", "), a.log_url.join(", "));
    shutdown_signal().await;
    println!("shutting down");
    follower.abort();
    srv.shutdown().await;
    Ok(())
}

async fn up(u: UpArgs) -> anyhow::Result<()> {
    let snapshots = (!u.no_snapshots).then(|| u.snapshot_policy.clone());
    if u.node.in_memory || u.single_process {
        return up_single(u.node, u.cluster, snapshots).await;
    }
    let a = &u.node;
    net_of(a)?; // every flag checked before anything starts
    // The stable endpoint listens on --bind too: no password, no exposure.
    a.auth().check_bind(&a.bind)?;
    let node_args = a.child_flags();
    let path = |p: &Option<std::path::PathBuf>| p.as_ref().map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()));
    let tls = (a.tls_port != 0).then(|| {
        let mut args = vec![
            "--tls-cert-file".to_string(),
            path(&a.tls_cert_file).unwrap_or_default().display().to_string(),
            "--tls-key-file".into(),
            path(&a.tls_key_file).unwrap_or_default().display().to_string(),
            "--tls-auth-clients".into(),
            a.tls_auth_clients.clone(),
        ];
        if let Some(ca) = path(&a.tls_ca_cert_file) {
            args.extend(["--tls-ca-cert-file".to_string(), ca.display().to_string()]);
        }
        memoria_host::supervisor::UpTls { port: a.tls_port, node_port_base: u.node_tls_port_base.unwrap_or(a.tls_port.wrapping_add(1)), node_args: args }
    });
    let log_tls = match (u.log_tls, path(&a.tls_cert_file), path(&a.tls_key_file), path(&a.tls_ca_cert_file)) {
        (false, ..) => None,
        (true, Some(cert_file), Some(key_file), Some(ca_file)) => Some(memoria_host::supervisor::LogTls { cert_file, key_file, ca_file }),
        (true, ..) => anyhow::bail!("--log-tls needs --tls-cert-file, --tls-key-file and --tls-ca-cert-file"),
    };
    if u.lease_ms == 0 {
        anyhow::bail!("--lease-ms must be positive: the nodes elect their primary through the log");
    }
    let opts = memoria_host::supervisor::UpOptions {
        bind: a.bind.clone(),
        port: a.port,
        node_port_base: u.node_port_base.unwrap_or(a.port.wrapping_add(1)),
        data_dir: a.data_dir.clone().into(),
        replicas: u.replicas,
        shards: a.shards,
        cluster: u.cluster || a.shards > 1,
        lease_ms: u.lease_ms,
        node_args,
        snapshots,
        snapshot_store: a.snapshot_store.clone(),
        tls,
        log_tls,
        console: (!u.no_console).then(|| memoria_host::supervisor::ConsoleOptions { port: a.console_port, token: u.console_token.clone() }),
        metrics: (!u.no_metrics).then(|| {
            let nodes = (u.replicas + 1) * a.shards as usize;
            let after_nodes = u.node_port_base.unwrap_or(a.port.wrapping_add(1)).wrapping_add(nodes as u16);
            memoria_host::supervisor::UpMetrics {
                port_base: u.metrics_port_base.unwrap_or(after_nodes),
                bind: a.metrics_bind.clone(),
                token: a.metrics_token.clone(),
            }
        }),
    };
    memoria_host::supervisor::run(opts, shutdown_signal()).await
}

/// `memoria up --single-process` (the log embedded, one node) or `--in-memory` (no log).
async fn up_single(a: NodeArgs, cluster: bool, policy: Option<memoria_host::snapshot::schedule::Policy>) -> anyhow::Result<()> {
    let limits = limits_of(&a);
    let log = if a.in_memory {
        None
    } else {
        std::fs::create_dir_all(&a.data_dir).map_err(|e| anyhow::anyhow!("cannot create data dir {}: {e}", a.data_dir))?;
        let path = std::path::Path::new(&a.data_dir).join("log.sqlite");
        let core = memoria_log::LogCore::open_sqlite(&path).await.map_err(|e| anyhow::anyhow!("opening the log {}: {e}", path.display()))?;
        println!("log: embedded SQLite at {} (every write is durable before it is acknowledged)", path.display());
        Some(memoria_log::LogHandle::Embedded(core))
    };
    if a.shards > 1 || cluster {
        return up_single_sharded(a, log, policy).await;
    }
    let node = format!("{}:{}", a.bind, a.port);
    let snapshots = snapshot_store_of(&a)?;
    // The scheduler watches the log here; each snapshot runs in a child process that
    // opens the same SQLite file.
    let scheduler = match (&log, &snapshots, policy) {
        (Some(api), Some(store), Some(policy)) => {
            let args = vec!["--shard".into(), "0".into(), "--data-dir".into(), a.data_dir.clone(), "--store".into(), store.url().to_string()];
            let runner = memoria_host::snapshot::schedule::Runner::child(args, Vec::new())?;
            Some(memoria_host::snapshot::schedule::spawn(policy, runner, api.clone(), "shard-0".into(), store.clone(), std::time::Duration::from_secs(1)))
        }
        _ => None,
    };
    let net = NetOptions { saver: embedded_saver(&a, log.is_some(), 0)?, ..net_of(&a)? };
    let srv = server::start_with(
        ServerOptions {
            bind: a.bind.clone(),
            port: a.port,
            data_dir: a.data_dir.clone(),
            limits,
            log,
            node,
            replica_of: None,
            lease_ms: None,
            cluster: false,
            snapshots,
            auth: a.auth(),
        },
        net,
    )
    .await?;
    println!("memoria {} listening on {}{} (RESP2/RESP3)", env!("CARGO_PKG_VERSION"), srv.addr, tls_note(&srv));
    serve_metrics(&a, vec![(0, srv.shard_handle())]).await?;
    if a.in_memory {
        println!("durability: none (--in-memory): data is lost when the process stops");
    }
    println!("press Ctrl-C to stop");
    shutdown_signal().await;
    println!("shutting down");
    if let Some(s) = scheduler {
        s.abort(); // kills a snapshot child in progress; an unpublished snapshot is never read
    }
    srv.shutdown().await;
    Ok(())
}

/// `memoria up --in-memory|--single-process --shards N` (or `--cluster`): one process, N
/// shard threads on ports --port … --port + N - 1, in cluster mode.
async fn up_single_sharded(a: NodeArgs, log: Option<memoria_log::LogHandle>, policy: Option<memoria_host::snapshot::schedule::Policy>) -> anyhow::Result<()> {
    use memoria_host::cluster;
    use memoria_host::server::sharded;
    let (topo, follower) = match &log {
        Some(api) => {
            let (t, last) = cluster::topology::load_or_init(api, a.shards).await?;
            (t, Some((api.clone(), last)))
        }
        None => (cluster::Topology::even(a.shards), None),
    };
    let shared = cluster::Shared::new(topo);
    let follower = follower.map(|(api, last)| tokio::spawn(cluster::shared::follow(api, last, shared.clone())));
    let snapshots = snapshot_store_of(&a)?;
    let mut schedulers = Vec::new();
    if let (Some(api), Some(store), Some(policy)) = (&log, &snapshots, policy) {
        for s in 0..a.shards {
            let args = vec!["--shard".into(), s.to_string(), "--data-dir".into(), a.data_dir.clone(), "--store".into(), store.url().to_string()];
            let runner = memoria_host::snapshot::schedule::Runner::child(args, Vec::new())?;
            schedulers.push(memoria_host::snapshot::schedule::spawn(
                policy.clone(),
                runner,
                api.clone(),
                cluster::topology::shard_log(s),
                store.clone(),
                std::time::Duration::from_secs(1),
            ));
        }
    }
    let ports = sharded::ports(&a.bind, a.port, a.shards)?;
    let limits = limits_of(&a);
    let savers: Vec<_> = (0..a.shards).map(|s| embedded_saver(&a, log.is_some(), s)).collect::<anyhow::Result<_>>()?;
    let srv = sharded::start(
        a.shards,
        &ports,
        Some(shared),
        net_of(&a)?.config,
        |s| savers[s as usize].clone(),
        |_s, port| ServerOptions {
            bind: a.bind.clone(),
            port,
            data_dir: a.data_dir.clone(),
            limits,
            log: log.clone(),
            node: format!("{}:{port}", a.bind),
            replica_of: None,
            lease_ms: None,
            cluster: true,
            snapshots: snapshots.clone(),
            auth: a.auth(),
        },
    )
    .await?;
    let addrs: Vec<String> = srv.addrs().iter().map(|x| x.to_string()).collect();
    serve_metrics(&a, srv.handles()).await?;
    println!(
        "memoria {} listening on {} (cluster mode: {} shards, one engine thread each; RESP2/RESP3)",
        env!("CARGO_PKG_VERSION"),
        addrs.join(", "),
        a.shards
    );
    if a.in_memory {
        println!("durability: none (--in-memory): data is lost when the process stops");
    }
    println!("press Ctrl-C to stop");
    shutdown_signal().await;
    println!("shutting down");
    for s in schedulers {
        s.abort();
    }
    if let Some(f) = follower {
        f.abort();
    }
    srv.shutdown().await;
    Ok(())
}

/// How SAVE/BGSAVE take a snapshot of shard `s` on a node of a log service: the child
/// `memoria snapshot` the scheduler runs, with this node's log URL and token.
fn remote_saver(a: &ServerArgs, s: u16) -> anyhow::Result<Option<memoria_host::snapshot::schedule::Runner>> {
    let Some(store) = snapshot_store_of(&a.node)? else { return Ok(None) };
    let args = vec!["--shard".into(), s.to_string(), "--log-url".into(), a.log_url.join(","), "--store".into(), store.url().to_string()];
    let mut env = vec![("MEMORIA_LOG_TOKEN".to_string(), a.log_token.clone())];
    if let Some(ca) = &a.log_ca_cert_file {
        env.push(("MEMORIA_LOG_CA_CERT_FILE".into(), ca.display().to_string()));
    }
    Ok(Some(memoria_host::snapshot::schedule::Runner::child(args, env)?))
}

/// The same for `memoria up --single-process` (the embedded SQLite log in --data-dir);
/// none without a log.
fn embedded_saver(a: &NodeArgs, logged: bool, s: u16) -> anyhow::Result<Option<memoria_host::snapshot::schedule::Runner>> {
    let Some(store) = snapshot_store_of(a)?.filter(|_| logged) else { return Ok(None) };
    let args = vec!["--shard".into(), s.to_string(), "--data-dir".into(), a.data_dir.clone(), "--store".into(), store.url().to_string()];
    Ok(Some(memoria_host::snapshot::schedule::Runner::child(args, Vec::new())?))
}

/// Serves `/metrics` for `shards` when --metrics-port asks for it.
async fn serve_metrics(a: &NodeArgs, shards: Vec<(u16, memoria_host::shard::ShardHandle)>) -> anyhow::Result<()> {
    if a.metrics_port == 0 {
        return Ok(());
    }
    let opts = memoria_host::metrics_endpoint::MetricsOptions { bind: a.metrics_bind.clone(), port: a.metrics_port, token: a.metrics_token.clone() };
    let addr = memoria_host::metrics_endpoint::serve(opts, shards).await?;
    let how = if a.metrics_token.is_some() { " (send the metrics token as a bearer token)" } else { "" };
    println!("metrics: http://{addr}/metrics{how}");
    Ok(())
}

fn tls_note(srv: &server::RunningServer) -> String {
    match srv.tls_addr {
        Some(t) if t == srv.addr => " (TLS only)".to_string(),
        Some(t) => format!(" and {t} (TLS)"),
        None => String::new(),
    }
}

/// SIGTERM or SIGINT (watched on their own thread: see `memoria_host::shutdown`).
async fn shutdown_signal() {
    match SHUTDOWN.lock().ok().and_then(|mut r| r.take()) {
        Some(r) => r.wait().await,
        None => std::future::pending().await,
    }
}

/// Set once in `main`, before the runtime starts.
static SHUTDOWN: std::sync::Mutex<Option<memoria_host::shutdown::Requested>> = std::sync::Mutex::new(None);

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Cli, Command};

    /// A node started by `memoria up` runs with the limits `up` was given: every flag in
    /// `child_flags`, parsed back by `memoria server`, lands on the same field.
    #[test]
    fn child_flags_reach_the_node_unchanged() {
        let up = Cli::parse_from([
            "memoria",
            "up",
            "--maxclients",
            "7",
            "--timeout",
            "3",
            "--partial-request-timeout",
            "4",
            "--engine-call-timeout",
            "9",
            "--proto-max-bulk-len",
            "2000000",
            "--client-query-buffer-limit",
            "3000000",
            "--shards",
            "2",
            "--protected-mode",
            "no",
            "--client-output-buffer-limit",
            "pubsub 1mb 1mb 1",
            "--client-output-buffer-limit",
            "normal 2mb 2mb 2",
            "--enable-debug-command",
            "local",
            "--metrics-bind",
            "127.0.0.2",
            "--databases",
            "32",
        ]);
        let Command::Up(u) = up.command else { panic!("not up") };
        let mut argv = vec!["memoria".to_string(), "server".into(), "--log-url".into(), "http://127.0.0.1:1".into(), "--log-token".into(), "t".into()];
        argv.extend(u.node.child_flags());
        let Command::Server(s) = Cli::parse_from(argv).command else { panic!("not server") };
        let (a, b) = (&u.node, &s.node);
        assert_eq!(
            (a.maxclients, a.timeout, a.partial_request_timeout, a.engine_call_timeout),
            (b.maxclients, b.timeout, b.partial_request_timeout, b.engine_call_timeout)
        );
        assert_eq!((a.proto_max_bulk_len, a.client_query_buffer_limit, a.shards), (b.proto_max_bulk_len, b.client_query_buffer_limit, b.shards));
        assert_eq!((&a.protected_mode, &a.client_output_buffer_limit), (&b.protected_mode, &b.client_output_buffer_limit));
        assert_eq!((&a.enable_debug_command, &a.metrics_bind), (&b.enable_debug_command, &b.metrics_bind));
        assert_eq!(b.enable_debug_command, "local");
        assert_eq!((a.databases, b.databases), (32, 32));
        assert_eq!(b.maxclients, 7, "the values are the ones given, not defaults");
    }
}
