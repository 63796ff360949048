//! `memoria-log`: the log service binary.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use memoria_log::core::CoreOptions;
use memoria_log::store::{PgConfig, PgStore, SqliteStore, Store};
use memoria_log::{LogCore, server};

#[derive(Parser, Debug)]
#[command(name = "memoria-log", version, about = "Memoria's transaction log service")]
struct Args {
    /// Address to serve the HTTP API on.
    #[arg(long, env = "MEMORIA_LOG_LISTEN", default_value = "127.0.0.1:7480")]
    listen: SocketAddr,

    /// Bearer token every request must carry.
    #[arg(long, env = "MEMORIA_LOG_TOKEN", hide_env_values = true)]
    token: Option<String>,

    /// Serve without a token. Only allowed on a loopback address.
    #[arg(long)]
    insecure_open: bool,

    /// SQLite database file (embedded backend; the default when no PostgreSQL host is given).
    #[arg(long, env = "MEMORIA_LOG_SQLITE", default_value = "memoria-data/log.db")]
    sqlite: PathBuf,

    /// PostgreSQL hosts (host:port, comma-separated). The service finds the writable
    /// primary among them and follows failovers.
    #[arg(long, env = "MEMORIA_LOG_PG_HOSTS", value_delimiter = ',')]
    pg_hosts: Vec<String>,

    #[arg(long, env = "MEMORIA_LOG_PG_USER", default_value = "postgres")]
    pg_user: String,

    #[arg(long, env = "MEMORIA_LOG_PG_PASSWORD", hide_env_values = true)]
    pg_password: Option<String>,

    #[arg(long, env = "MEMORIA_LOG_PG_DATABASE", default_value = "memoria")]
    pg_database: String,

    #[arg(long, env = "MEMORIA_LOG_PG_MAX_CONNECTIONS", default_value_t = 32)]
    pg_max_connections: u32,

    /// TLS certificate chain (PEM). With --tls-key, serves HTTPS.
    #[arg(long, env = "MEMORIA_LOG_TLS_CERT", requires = "tls_key")]
    tls_cert: Option<PathBuf>,

    /// TLS private key (PEM).
    #[arg(long, env = "MEMORIA_LOG_TLS_KEY", requires = "tls_cert")]
    tls_key: Option<PathBuf>,

    /// Append a checksum mark whenever the log crosses a multiple of this many entries.
    #[arg(long, default_value_t = 1024)]
    mark_interval: u64,

    /// Seconds an append with an unknown outcome keeps trying to settle it.
    #[arg(long, default_value_t = 120)]
    settle_timeout: u64,

    /// MiB of each log's newest entries kept in memory, so replicas tailing the log are
    /// served without the database (0 turns it off).
    #[arg(long, default_value_t = 16)]
    tail_cache_mb: usize,

    /// Create these logs at start (comma-separated), e.g. `shard-0,shard-1`. The cluster log
    /// is always created.
    #[arg(long, value_delimiter = ',')]
    create: Vec<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")))
        .with_target(false)
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();

    let token = match (&args.token, args.insecure_open) {
        (Some(t), _) if t.is_empty() => bail!("the token must not be empty"),
        (Some(t), _) => Some(t.clone()),
        (None, true) if args.listen.ip().is_loopback() => {
            tracing::warn!("serving WITHOUT authentication (--insecure-open on loopback)");
            None
        }
        (None, true) => bail!("--insecure-open is only allowed on a loopback address, not {}", args.listen),
        (None, false) => bail!("no token: set MEMORIA_LOG_TOKEN (or --token), or run with --insecure-open on loopback"),
    };

    let store = if args.pg_hosts.is_empty() {
        if let Some(dir) = args.sqlite.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        tracing::info!(path = %args.sqlite.display(), "backend: SQLite (WAL, synchronous=FULL)");
        Store::Sqlite(SqliteStore::open(&args.sqlite).await.context("opening SQLite")?)
    } else {
        let mut cfg = PgConfig::new(args.pg_hosts.clone(), &args.pg_user, &args.pg_database);
        cfg.password = args.pg_password.clone();
        cfg.max_connections = args.pg_max_connections;
        tracing::info!(hosts = ?args.pg_hosts, "backend: PostgreSQL");
        // The primary may be mid-failover when we start: keep looking for a while.
        let mut attempt = 0;
        loop {
            match PgStore::connect(cfg.clone()).await {
                Ok(s) => break Store::Pg(s),
                Err(e) if attempt < 60 => {
                    attempt += 1;
                    tracing::warn!(error = %e, "no PostgreSQL primary yet; retrying");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => return Err(e).context("connecting to PostgreSQL"),
            }
        }
    };
    let opts = CoreOptions {
        mark_interval: args.mark_interval.max(1),
        settle_timeout: Duration::from_secs(args.settle_timeout),
        tail_cache_bytes: args.tail_cache_mb << 20,
        ..CoreOptions::default()
    };
    let core = LogCore::new(store, opts);
    // The cluster log (topology) always exists; shard logs are created by their hosts.
    core.create(memoria_log::CLUSTER_LOG).await.context("creating the cluster log")?;
    for log in &args.create {
        core.create(log).await.with_context(|| format!("creating log {log}"))?;
    }
    let app = server::router(core, token);

    match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            // reqwest and this server share the ring provider; install it explicitly.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let cfg = axum_server::tls_rustls::RustlsConfig::from_pem_file(cert, key).await.context("loading TLS certificate/key")?;
            let handle = axum_server::Handle::new();
            let h = handle.clone();
            tokio::spawn(async move {
                shutdown_signal().await;
                h.graceful_shutdown(Some(Duration::from_secs(30)));
            });
            tracing::info!(addr = %args.listen, "serving HTTPS");
            axum_server::bind_rustls(args.listen, cfg).handle(handle).serve(app.into_make_service()).await?;
        }
        _ => {
            let listener = tokio::net::TcpListener::bind(args.listen).await.with_context(|| format!("binding {}", args.listen))?;
            tracing::info!(addr = %listener.local_addr()?, "serving HTTP");
            axum::serve(listener, app).with_graceful_shutdown(shutdown_signal()).await?;
        }
    }
    Ok(())
}

/// Ctrl-C or SIGTERM. In-flight appends finish (graceful shutdown waits for them).
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
    tracing::info!("shutting down");
}
