//! Several shards in one process, shared-nothing: each shard has its own OS thread with
//! its own single-threaded runtime, its own engine, log, listener and connections (shard
//! `s` listens on `port + s`), so one machine's cores are all used and no lock sits on
//! the command path. They share only the cluster view ([`Shared`]).

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::cluster::Shared;
use crate::server::{self, Placement, ServerOptions};

pub struct ShardThread {
    pub shard: u16,
    pub addr: SocketAddr,
    pub handle: crate::shard::ShardHandle,
    stop: Option<oneshot::Sender<()>>,
    join: Option<std::thread::JoinHandle<()>>,
}

/// The shards of this process.
pub struct Sharded {
    pub shards: Vec<ShardThread>,
}

impl Sharded {
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.shards.iter().map(|s| s.addr).collect()
    }

    /// Each shard's number and handle (for the metrics endpoint).
    pub fn handles(&self) -> Vec<(u16, crate::shard::ShardHandle)> {
        self.shards.iter().map(|s| (s.shard, s.handle.clone())).collect()
    }

    /// Stops every shard (each finishes its append in flight) and waits for them.
    pub async fn shutdown(mut self) {
        for s in &mut self.shards {
            if let Some(tx) = s.stop.take() {
                let _ = tx.send(());
            }
        }
        let joins: Vec<_> = self.shards.iter_mut().filter_map(|s| s.join.take()).collect();
        let _ = tokio::task::spawn_blocking(move || {
            for j in joins {
                let _ = j.join();
            }
        })
        .await;
    }
}

/// Ports for `n` shards from `base` (`base + s`); base 0 picks free ones.
pub fn ports(bind: &str, base: u16, n: u16) -> anyhow::Result<Vec<u16>> {
    if base != 0 {
        return (0..n).map(|s| base.checked_add(s).ok_or_else(|| anyhow::anyhow!("port {base} + {s} is out of range"))).collect();
    }
    let mut held = Vec::new();
    for _ in 0..n {
        held.push(std::net::TcpListener::bind((bind, 0))?);
    }
    Ok(held.iter().map(|l| l.local_addr().map(|a| a.port()).unwrap_or(0)).collect())
}

/// Starts shards `0..n`; `opts(s, port)` gives shard `s`'s options, `config` the host
/// parameters every shard starts with (`maxclients`, `engine-call-timeout`…, checked like
/// CONFIG SET). Returns once every shard listens (or the first error).
pub async fn start(
    n: u16,
    ports: &[u16],
    shared: Option<Arc<Shared>>,
    config: Vec<(String, String)>,
    saver: impl Fn(u16) -> Option<crate::snapshot::schedule::Runner>,
    opts: impl Fn(u16, u16) -> ServerOptions,
) -> anyhow::Result<Sharded> {
    let mut out = Sharded { shards: Vec::new() };
    let factory = crate::wasm::EngineFactory::with_watchdog(server::wants_watchdog(&config))?;
    for s in 0..n {
        let factory = Some(factory.clone());
        let o = opts(s, ports[s as usize]);
        let shared = shared.clone();
        let net = server::NetOptions { tls: None, no_plain: false, config: config.clone(), handoff: None, saver: saver(s) };
        let (ready_tx, ready_rx) = oneshot::channel::<anyhow::Result<(SocketAddr, crate::shard::ShardHandle)>>();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let join = std::thread::Builder::new().name(format!("shard-{s}")).spawn(move || {
            let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(e.into()));
                    return;
                }
            };
            rt.block_on(async move {
                match server::start_full(o, Placement { shard: s, shared, factory }, net).await {
                    Ok(srv) => {
                        let _ = ready_tx.send(Ok((srv.addr, srv.shard_handle())));
                        let _ = stop_rx.await;
                        srv.shutdown().await;
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            });
        })?;
        let (addr, handle) = match ready_rx.await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                out.shutdown().await;
                return Err(e.context(format!("shard {s}")));
            }
            Err(_) => {
                out.shutdown().await;
                anyhow::bail!("shard {s}'s thread died while starting");
            }
        };
        out.shards.push(ShardThread { shard: s, addr, handle, stop: Some(stop_tx), join: Some(join) });
    }
    Ok(out)
}
