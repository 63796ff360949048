//! The RESP listener: accepts connections and hands each to a task bound to the shard.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::conn::{self, ConnCtx, ConnLimits};
use crate::durable;
use crate::shard::{self, ServerFacts, ShardHandle, ShardMsg};
use crate::wasm::EngineFactory;
use memoria_log::{LogApi, LogHandle};

pub struct ServerOptions {
    pub bind: String,
    pub port: u16,
    pub data_dir: String,
    pub limits: ConnLimits,
    /// The log this node writes to; None keeps data in memory only (tests, benchmarks).
    pub log: Option<LogHandle>,
    /// This node's name in leader claims.
    pub node: String,
    /// Run as a read replica of `log`'s shard: apply what the primary logs, refuse writes.
    pub replica_of: Option<String>,
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

/// Replicas read the log, never the primary: long-poll the shard log and hand what
/// arrives to the shard task, in order.
async fn tail_log(api: LogHandle, name: &'static str, mut after: u64, shard: ShardHandle) {
    loop {
        match api.read(name, after, 1000, std::time::Duration::from_secs(1)).await {
            Ok(b) => {
                if let Some(last) = b.entries.last() {
                    after = last.id;
                    if !shard.send(ShardMsg::Apply { entries: b.entries }) {
                        return;
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the log failed; retrying");
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
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
    const SHARD_LOG: &str = "shard-0";
    let mut tail_from = None;
    let role = match (opts.log, opts.replica_of) {
        (Some(api), None) => {
            let r = durable::recover(api, SHARD_LOG, &opts.node, durable::LEASE_MS, &mut engine).await?;
            tracing::info!(entries = r.applied_entries, effects = r.applied_effects, tail = r.log.prev_id, epoch = r.log.epoch, "recovered shard-0 from the log");
            shard::Role::Primary(Some(r.log))
        }
        (Some(api), Some(primary)) => {
            api.create(SHARD_LOG).await.map_err(durable::DurableError::from)?;
            let r = durable::replay(&api, SHARD_LOG, 0, &mut engine).await?;
            tracing::info!(entries = r.data_entries, applied = r.last_id, "replica caught up with shard-0's log");
            tail_from = Some((api, r.last_id));
            shard::Role::Replica { primary, applied: r.last_id }
        }
        (None, Some(_)) => anyhow::bail!("a replica needs a log to follow"),
        (None, None) => shard::Role::Primary(None),
    };
    let (shard, shard_task) = shard::spawn(0, factory, engine, role, facts);
    if let Some((api, after)) = tail_from {
        tokio::spawn(tail_log(api, SHARD_LOG, after, shard.clone()));
    }
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
