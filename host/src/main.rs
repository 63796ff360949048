//! The `memoria` binary.

use clap::{Parser, Subcommand};
use memoria_host::conn::ConnLimits;
use memoria_host::server::{self, ServerOptions};


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
}

#[derive(Subcommand)]
enum Command {
    /// Start Memoria on this machine (embedded default).
    Up(NodeArgs),
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into())).with_target(false).init();
    let cli = Cli::parse();
    // One event loop thread, like redis-server: connections and the shard share it, so
    // handing a batch over costs no cross-thread wake-up.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    match cli.command {
        Command::Up(a) => rt.block_on(up(a)),
    }
}

async fn up(a: NodeArgs) -> anyhow::Result<()> {
    let mut limits = ConnLimits::default();
    limits.resp.max_bulk_len = a.proto_max_bulk_len;
    limits.query_buffer = a.client_query_buffer_limit;
    let log = if a.in_memory {
        None
    } else {
        std::fs::create_dir_all(&a.data_dir).map_err(|e| anyhow::anyhow!("cannot create data dir {}: {e}", a.data_dir))?;
        let path = std::path::Path::new(&a.data_dir).join("log.sqlite");
        let core = memoria_log::LogCore::open_sqlite(&path).await.map_err(|e| anyhow::anyhow!("opening the log {}: {e}", path.display()))?;
        println!("log: embedded SQLite at {} (every write is durable before it is acknowledged)", path.display());
        Some(memoria_log::LogHandle::Embedded(core))
    };
    let node = format!("{}:{}", a.bind, a.port);
    let srv = server::start(ServerOptions { bind: a.bind.clone(), port: a.port, data_dir: a.data_dir.clone(), limits, log, node, replica_of: None }).await?;
    println!("memoria {} listening on {} (RESP2/RESP3)", env!("CARGO_PKG_VERSION"), srv.addr);
    if a.in_memory {
        println!("durability: none (--in-memory): data is lost when the process stops");
    }
    println!("press Ctrl-C to stop");
    shutdown_signal().await;
    println!("shutting down");
    srv.shutdown().await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
