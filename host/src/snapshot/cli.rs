//! `memoria snapshot`: one snapshot (default) or the scheduler (`--schedule`), in its own
//! process, against the shard's log (remote services, or the embedded SQLite file).

use std::time::Duration;

use memoria_log::{LogCore, LogHandle};

use super::make::{Made, MakeOptions, make};
use super::paced::Pacing;
use super::schedule::{self, Policy, Runner};
use super::store::SnapshotStore;
use crate::wasm::EngineFactory;
use memoria_admin::topology::shard_log;

#[derive(clap::Args, Clone, Debug)]
pub struct SnapshotArgs {
    /// The shard whose log is snapshotted (log `shard-N`).
    #[arg(long, default_value_t = 0)]
    pub shard: u16,
    /// Data directory of a `memoria up` node: its log (log.sqlite) and, unless --store
    /// says otherwise, its snapshots (snapshots/).
    #[arg(long, default_value = "./memoria-data")]
    pub data_dir: String,
    #[command(flatten)]
    pub log: crate::log_args::RemoteLogArgs,
    /// The embedded log's SQLite file (default: <data-dir>/log.sqlite).
    #[arg(long)]
    pub sqlite: Option<String>,
    /// Where snapshots go: a directory, or s3://bucket/prefix, gs://…, az://… (those need
    /// a build with the `cloud` feature). Default: <data-dir>/snapshots.
    #[arg(long, env = "MEMORIA_SNAPSHOT_STORE")]
    pub store: Option<String>,
    /// Replay up to this log id (default: the log's tail when the run starts).
    #[arg(long)]
    pub target: Option<u64>,
    /// Dump page (chunk) size in bytes.
    #[arg(long, default_value_t = 4 << 20)]
    pub chunk_bytes: u32,
    /// Most share of the time the snapshot works, in (0, 1]: it sleeps in between, so
    /// its memory and disk traffic leave the serving nodes on the same machine alone.
    /// Snapshots take 1/share times as long. The snapshots `memoria up` schedules read it
    /// from the environment.
    #[arg(long, env = "MEMORIA_SNAPSHOT_CPU_SHARE", default_value_t = DEFAULT_CPU_SHARE)]
    pub cpu_share: f64,
    /// A local store hands each chunk to the disk in pieces of this many KiB (0: whole
    /// chunks), so no burst of dirty pages stalls the log's fsyncs.
    #[arg(long, default_value_t = 1024)]
    pub sync_kib: usize,
    /// Keep running: snapshot whenever the log has grown enough, truncate behind.
    #[arg(long)]
    pub schedule: bool,
    /// How often the scheduler looks at the log, in ms.
    #[arg(long, default_value_t = 1000)]
    pub poll_ms: u64,
    #[command(flatten)]
    pub policy: Policy,
}

/// The snapshot process's default share of the time (see `--cpu-share`).
pub const DEFAULT_CPU_SHARE: f64 = 0.25;

async fn open_log(a: &SnapshotArgs) -> anyhow::Result<LogHandle> {
    if let Some(remote) = a.log.client()? {
        return Ok(remote);
    }
    let path = a.sqlite.clone().unwrap_or_else(|| std::path::Path::new(&a.data_dir).join("log.sqlite").display().to_string());
    if !std::path::Path::new(&path).exists() {
        anyhow::bail!("no log at {path}: give --data-dir of a memoria up node, --sqlite or --log-url");
    }
    Ok(LogHandle::Embedded(LogCore::open_sqlite(&path).await.map_err(|e| anyhow::anyhow!("opening the log {path}: {e}"))?))
}

/// Runs the subcommand on its own runtime (two workers: a chunk uploads while the next
/// page is dumped).
pub fn run(a: SnapshotArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let api = open_log(&a).await?;
        if !(a.cpu_share > 0.0 && a.cpu_share <= 1.0) {
            anyhow::bail!("--cpu-share must be in (0, 1], not {}", a.cpu_share);
        }
        let pacing = Pacing { sync_bytes: a.sync_kib << 10, cpu_share: a.cpu_share };
        let store = SnapshotStore::open(&a.store.clone().unwrap_or_else(|| memoria_admin::snapshot::default_store(&a.data_dir)))
            .map_err(|e| anyhow::anyhow!("snapshot store: {e}"))?
            .with_pacing(pacing);
        let log = shard_log(a.shard);
        let factory = EngineFactory::new()?;
        let opts = MakeOptions { chunk_bytes: a.chunk_bytes, target: a.target };
        if a.schedule {
            println!("memoria snapshot: scheduling snapshots of {log} into {}", store.url());
            let runner = Runner::in_process(factory, opts);
            let task = schedule::spawn(a.policy.clone(), runner, api, log, store, Duration::from_millis(a.poll_ms));
            tokio::select! {
                _ = task => {}
                _ = tokio::signal::ctrl_c() => println!("stopping"),
            }
            return Ok(());
        }
        match make(&factory, &api, &log, &store, &opts).await? {
            Made::Published(m) => println!(
                "published snapshot {} of {log}: entries 1..={} ({} keys, {} bytes in {} chunks, digest {}) in {} ms",
                m.name,
                m.last_id,
                m.keys,
                m.data_bytes,
                m.chunks.len(),
                m.digest,
                m.took_ms
            ),
            Made::UpToDate { last_id } => println!("{log}: the newest snapshot already covers entry {last_id}; nothing to do"),
        }
        Ok(())
    })
}
