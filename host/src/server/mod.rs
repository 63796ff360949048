//! Starting a node: the RESP listener accepts connections and hands each to a task bound
//! to the shard. `sharded` runs several shards in one process, one thread each.

pub mod sharded;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::conn::{self, ConnCtx};
use crate::durable;
use crate::lease;
use crate::limits::ConnLimits;
use crate::limits::HostLimits;
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
    /// Automatic failover with leases of this many ms (`memoria server`; needs a log).
    /// Every node then starts as a replica and leadership is won by election through the
    /// log (an empty log is claimed at once; otherwise after the backoff); a primary
    /// renews every lease/3, stops serving when its lease lapses and steps down when
    /// deposed. `None`: a primary leads for good (`memoria up`, a single node) and a
    /// replica never takes over.
    pub lease_ms: Option<u64>,
    /// Cluster mode: answer CLUSTER SLOTS/SHARDS/NODES (this shard and the nodes tailing
    /// its log) and send writes that reach a replica to the primary with -MOVED.
    pub cluster: bool,
    /// Where this shard's snapshots are: nodes start from the newest one that passes its
    /// checks plus the log after it (None: the whole log).
    pub snapshots: Option<crate::snapshot::SnapshotStore>,
    /// `--requirepass` and protected mode (users themselves come from the log).
    pub auth: crate::acl::AuthOptions,
}

/// Options beyond [`ServerOptions`]: TLS and the connection limits CONFIG can change.
#[derive(Default)]
pub struct NetOptions {
    /// Also serve RESP over TLS on this port (0: any free port).
    pub tls: Option<(u16, crate::tls::TlsSettings)>,
    /// Serve TLS only (Redis's `--port 0 --tls-port N`).
    pub no_plain: bool,
    /// `(name, value)` of `maxclients`, `timeout`, `client-output-buffer-limit`,
    /// `partial-request-timeout`, checked like CONFIG SET.
    pub config: Vec<(String, String)>,
    /// Take connections handed over by `memoria up`'s stable endpoint on this Unix socket
    /// (`handoff`).
    pub handoff: Option<std::path::PathBuf>,
    /// How SAVE and BGSAVE take a snapshot of this node's shard (None: they are refused).
    pub saver: Option<crate::snapshot::schedule::Runner>,
}

pub struct RunningServer {
    /// The plaintext RESP address (the TLS one with `no_plain`).
    pub addr: SocketAddr,
    pub tls_addr: Option<SocketAddr>,

    shard: ShardHandle,
    shard_task: Option<tokio::task::JoinHandle<()>>,
    accept_tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// Test hook: freezes a node's shard as SIGSTOP would freeze its process.
#[doc(hidden)]
#[derive(Clone)]
pub struct Freezer(ShardHandle);

impl Freezer {
    /// Freezes the shard until the returned sender is used or dropped.
    pub fn freeze(&self) -> tokio::sync::oneshot::Sender<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.0.send(ShardMsg::Freeze { until: rx });
        tx
    }
}

impl RunningServer {
    /// The shard's handle, for the metrics endpoint's scrapes.
    pub fn shard_handle(&self) -> ShardHandle {
        self.shard.clone()
    }

    #[doc(hidden)]
    pub fn freezer(&self) -> Freezer {
        Freezer(self.shard.clone())
    }

    /// Stops accepting, stops the shard and waits for it.
    pub async fn shutdown(mut self) {
        for t in &self.accept_tasks {
            t.abort();
        }
        self.shard.send(ShardMsg::Shutdown);
        if let Some(j) = self.shard_task.take() {
            let _ = j.await;
        }
    }
}

/// Which shard of the cluster a node serves, and the view its process shares.
#[derive(Clone, Default)]
pub struct Placement {
    pub shard: u16,
    /// Cluster mode across shards: the slot map and the other shards' nodes.
    pub shared: Option<Arc<crate::cluster::Shared>>,
    /// The compiled engine, shared by the shards of a process (compiling takes 50–250 ms).
    pub factory: Option<EngineFactory>,
}

/// Binds and starts serving; returns once the port is open.
pub async fn start(opts: ServerOptions) -> anyhow::Result<RunningServer> {
    start_in(opts, Placement::default()).await
}

/// Starts a node of shard `place.shard` (its log is `shard-<n>`).
pub async fn start_in(opts: ServerOptions, place: Placement) -> anyhow::Result<RunningServer> {
    start_full(opts, place, NetOptions::default()).await
}

/// Whether host parameters `config` turn the watchdog on (`engine-call-timeout` > 0): the
/// engine is then compiled with the epoch checks it needs.
pub fn wants_watchdog(config: &[(String, String)]) -> bool {
    config.iter().any(|(k, v)| k == "engine-call-timeout" && v.trim().parse::<u64>().is_ok_and(|ms| ms > 0))
}

/// [`start`] with TLS and connection limits.
pub async fn start_with(opts: ServerOptions, net: NetOptions) -> anyhow::Result<RunningServer> {
    start_full(opts, Placement::default(), net).await
}

/// A node of shard `place.shard`, with TLS and connection limits.
pub async fn start_full(opts: ServerOptions, place: Placement, net: NetOptions) -> anyhow::Result<RunningServer> {
    opts.auth.check_bind(&opts.bind)?;
    let factory = match place.factory.clone() {
        Some(f) => f,
        None => EngineFactory::with_watchdog(wants_watchdog(&net.config))?,
    };
    let tls = match &net.tls {
        Some((port, s)) => {
            let acceptor = crate::tls::acceptor(s)?;
            let l = TcpListener::bind((opts.bind.as_str(), *port)).await.map_err(|e| anyhow::anyhow!("cannot listen on {}:{} (TLS): {e}", opts.bind, port))?;
            Some((l, acceptor, s.clone()))
        }
        None => None,
    };
    let tls_addr = match &tls {
        Some((l, _, _)) => Some(l.local_addr()?),
        None => None,
    };
    if net.no_plain && tls.is_none() {
        anyhow::bail!("no port to serve: the plaintext port is off and there is no TLS port");
    }
    let listener = match net.no_plain {
        true => None,
        false => {
            Some(TcpListener::bind((opts.bind.as_str(), opts.port)).await.map_err(|e| anyhow::anyhow!("cannot listen on {}:{}: {e}", opts.bind, opts.port))?)
        }
    };
    let addr = match (&listener, tls_addr) {
        (Some(l), _) => l.local_addr()?,
        (None, Some(a)) => a,
        (None, None) => unreachable!("checked above"),
    };
    let mut fixed = vec![("tls-port", tls_addr.map_or(0, |a| a.port()).to_string())];
    if let Some((_, _, s)) = &tls {
        fixed.push(("tls-cert-file", s.cert_file.display().to_string()));
        fixed.push(("tls-key-file", s.key_file.display().to_string()));
        fixed.push(("tls-ca-cert-file", s.ca_file.as_ref().map(|p| p.display().to_string()).unwrap_or_default()));
        fixed.push(("tls-auth-clients", s.auth_clients.name().to_string()));
    }
    let host = HostLimits::new(&opts.limits, &net.config, &fixed).map_err(|e| anyhow::anyhow!("{e}"))?;
    let facts = ServerFacts {
        text: format!(
            "arch_bits:{}\n{}process_id:{}\ntcp_port:{}\nbind:{}\ndir:{}\nexecutable:{}\n{}",
            usize::BITS,
            machine_facts(),
            std::process::id(),
            if listener.is_some() { addr.port() } else { 0 },
            opts.bind,
            opts.data_dir,
            std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
            opts.auth.facts()
        ),
    };
    let mut engine = factory.instantiate(crate::clock::seed())?;
    let shard_log = memoria_admin::topology::shard_log(place.shard);
    let shard_log_name = shard_log.as_str();
    let mut election = None;
    let role = match (opts.log, opts.replica_of) {
        (Some(api), replica_of) if opts.lease_ms.is_some() => {
            let cfg = lease::Config::new(opts.lease_ms.unwrap_or(lease::DEFAULT_LEASE_MS));
            cfg.validate().map_err(|e| anyhow::anyhow!("lease: {e}"))?;
            api.create(shard_log_name).await.map_err(durable::DurableError::from)?;
            let r = durable::replay_from_snapshot(&api, shard_log_name, opts.snapshots.as_ref(), &mut engine).await?;
            tracing::info!(entries = r.data_entries, applied = r.last_id, lease_ms = cfg.lease_ms, "replayed the shard's log; joining its elections");
            election = Some(shard::Election { cfg, node: opts.node.clone(), tail_id: r.tail_id, max_epoch: r.max_epoch });
            let primary = replica_of.or(r.leader).unwrap_or_default();
            shard::Role::Replica { primary, applied: r.last_id, api, name: shard_log_name.to_string() }
        }
        (Some(api), None) => {
            let r = durable::recover(api, shard_log_name, &opts.node, crate::lease::DEFAULT_LEASE_MS, opts.snapshots.as_ref(), &mut engine).await?;
            tracing::info!(
                entries = r.applied_entries,
                effects = r.applied_effects,
                tail = r.log.prev_id,
                epoch = r.log.epoch,
                "recovered the shard from the log"
            );
            shard::Role::Primary(Some(r.log))
        }
        (Some(api), Some(primary)) => {
            api.create(shard_log_name).await.map_err(durable::DurableError::from)?;
            let r = durable::replay_from_snapshot(&api, shard_log_name, opts.snapshots.as_ref(), &mut engine).await?;
            tracing::info!(entries = r.data_entries, applied = r.last_id, "replica caught up with the shard's log");
            shard::Role::Replica { primary, applied: r.last_id, api, name: shard_log_name.to_string() }
        }
        (None, Some(_)) => anyhow::bail!("a replica needs a log to follow"),
        (None, None) => shard::Role::Primary(None),
    };
    let me = shard::Identity { node: opts.node.clone(), cluster: opts.cluster || place.shared.is_some(), shard: place.shard, shared: place.shared.clone() };
    let (shard, shard_task) = shard::spawn(place.shard as usize, factory, engine, role, election, facts, me, opts.snapshots, host.clone(), net.saver.clone());
    let ctx = Arc::new(ConnCtx { shard: shard.clone(), limits: opts.limits, host: host.clone(), primary_only: false });
    let mut accept_tasks = Vec::new();
    if let Some(path) = &net.handoff {
        let listener = crate::handoff::bind(path).map_err(|e| anyhow::anyhow!("hand-off socket {}: {e}", path.display()))?;
        let handed = Arc::new(ConnCtx { shard: shard.clone(), limits: opts.limits, host, primary_only: true });
        let acceptor = tls.as_ref().map(|(_, a, _)| a.clone());
        let rt = tokio::runtime::Handle::current();
        crate::handoff::serve(listener, move |kind, stream| {
            let _in_runtime = rt.enter();
            let Ok(stream) = tokio::net::TcpStream::from_std(stream) else { return };
            match (kind, &acceptor) {
                (crate::handoff::Kind::Plain, _) => serve_admitted(stream, None, &handed),
                (crate::handoff::Kind::Tls, Some(a)) => serve_admitted(stream, Some(a.clone()), &handed),
                // TLS handed to a node without TLS: nothing it can speak.
                (crate::handoff::Kind::Tls, None) => {}
            }
        });
    }
    if let Some(listener) = listener {
        let ctx = ctx.clone();
        accept_tasks.push(tokio::spawn(async move {
            loop {
                if let Some(stream) = accept(&listener).await {
                    serve_admitted(stream, None, &ctx);
                }
            }
        }));
    }
    if let Some((listener, acceptor, _)) = tls {
        accept_tasks.push(tokio::spawn(async move {
            loop {
                if let Some(stream) = accept(&listener).await {
                    serve_admitted(stream, Some(acceptor.clone()), &ctx);
                }
            }
        }));
    }
    Ok(RunningServer { addr, tls_addr, shard, shard_task: Some(shard_task), accept_tasks })
}

/// Admits a client within `maxclients` and serves it on its own task, over TLS when
/// `acceptor` is given. Refused as Redis refuses: a plain client gets the error, a TLS one
/// is closed before any handshake.
fn serve_admitted(stream: tokio::net::TcpStream, acceptor: Option<tokio_rustls::TlsAcceptor>, ctx: &Arc<ConnCtx>) {
    let Some(slot) = ctx.host.admit() else {
        if acceptor.is_none() {
            refuse(stream);
        }
        return;
    };
    let ctx = ctx.clone();
    tokio::spawn(async move {
        match acceptor {
            None => conn::serve(stream, ctx).await,
            Some(a) => conn::serve_tls(stream, a, ctx).await,
        }
        drop(slot);
    });
}

/// One accepted connection, or None after backing off from a failed accept.
pub(crate) async fn accept(listener: &TcpListener) -> Option<tokio::net::TcpStream> {
    match listener.accept().await {
        Ok((stream, _)) => Some(stream),
        Err(e) => {
            // Out of file descriptors and the like: back off instead of spinning.
            tracing::warn!(error = %e, "accept failed");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            None
        }
    }
}

/// Past `maxclients`: Redis's error, best effort (never waits on the client), and close.
fn refuse(stream: tokio::net::TcpStream) {
    let _ = stream.try_write(b"-ERR max number of clients reached\r\n");
}

/// INFO's facts about the machine: `os` (Redis's `uname` line) and, filed under the
/// Memory section, `total_system_memory`.
fn machine_facts() -> String {
    let mut t = String::new();
    // SAFETY: uname fills the struct it is given; its fields are NUL-terminated.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } == 0 {
        let field = |f: &[libc::c_char]| unsafe { std::ffi::CStr::from_ptr(f.as_ptr()) }.to_string_lossy().into_owned();
        t.push_str(&format!("os:{} {} {}\n", field(&u.sysname), field(&u.release), field(&u.machine)));
    }
    // SAFETY: sysconf only reads system parameters.
    let (pages, page) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    if pages > 0 && page > 0 {
        t.push_str(&format!("memory.total_system_memory:{}\n", pages as u64 * page as u64));
    }
    t
}
