//! The RESP listener: accepts connections and hands each to a task bound to the shard.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::conn::{self, ConnCtx, ConnLimits};
use crate::durable;
use crate::shard::{self, ServerFacts, ShardHandle, ShardMsg};
use crate::wasm::EngineFactory;
use memoria_log::LogHandle;

pub struct ServerOptions {
    pub bind: String,
    pub port: u16,
    pub data_dir: String,
    pub limits: ConnLimits,
    /// The log this node writes to; None keeps data in memory only (tests, benchmarks).
    pub log: Option<LogHandle>,
    /// This node's name in leader claims.
    pub node: String,
}

pub struct RunningServer {
    pub addr: SocketAddr,
    shard: ShardHandle,
    shard_task: Option<tokio::task::JoinHandle<()>>,
    accept_task: tokio::task::JoinHandle<()>,
}

impl RunningServer {
    /// Stops accepting, stops the shard and waits for it.
    pub async fn shutdown(mut self) {
        self.accept_task.abort();
        self.shard.send(ShardMsg::Shutdown);
        if let Some(j) = self.shard_task.take() {
            let _ = j.await;
        }
    }
}

/// Binds and starts serving; returns once the port is open.
pub async fn start(opts: ServerOptions) -> anyhow::Result<RunningServer> {
    let factory = EngineFactory::new()?;
    let listener = TcpListener::bind((opts.bind.as_str(), opts.port)).await.map_err(|e| anyhow::anyhow!("cannot listen on {}:{}: {e}", opts.bind, opts.port))?;
    let addr = listener.local_addr()?;
    let facts = ServerFacts {
        text: format!(
            "process_id:{}\ntcp_port:{}\nbind:{}\ndir:{}\nexecutable:{}\n",
            std::process::id(),
            addr.port(),
            opts.bind,
            opts.data_dir,
            std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default()
        ),
    };
    let mut engine = factory.instantiate(shard::seed())?;
    let log = match opts.log {
        Some(api) => {
            let r = durable::recover(api, "shard-0", &opts.node, durable::LEASE_MS, &mut engine).await?;
            tracing::info!(entries = r.applied_entries, effects = r.applied_effects, tail = r.log.prev_id, epoch = r.log.epoch, "recovered shard-0 from the log");
            Some(r.log)
        }
        None => None,
    };
    let (shard, shard_task) = shard::spawn(0, factory, engine, log, facts);
    let ctx = Arc::new(ConnCtx { shard: shard.clone(), limits: opts.limits });
    let accept_task = tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    tokio::spawn(conn::serve(stream, ctx.clone()));
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
        }
    });
    Ok(RunningServer { addr, shard, shard_task: Some(shard_task), accept_task })
}
