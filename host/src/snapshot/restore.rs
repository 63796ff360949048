//! Restoring: a snapshot streamed into a fresh engine with every check on the way, and the
//! node start path (newest snapshot that passes every check, falling back to older ones,
//! then the log after it).

use std::time::{Duration, Instant};

use futures::StreamExt;
use memoria_log::{LogApi, LogError, LogHandle, chain};

use super::SnapshotError;
use super::format::{self, DataChecksum};
use super::manifest::Manifest;
use super::progress::Progress;
use super::store::SnapshotStore;
use crate::wasm::ShardEngine;

/// Chunks read ahead while the engine loads the current one: memory stays at a few
/// chunks whatever the data set's size.
const PREFETCH: usize = 2;

#[derive(Debug)]
pub struct Loaded {
    pub keys: u64,
    pub bytes: u64,
    pub took: Duration,
}

/// Streams snapshot `m` into `engine`, which must be empty. Checks each chunk's envelope
/// and its checksum against the manifest, then the data checksum, the key count and the
/// engine digest. On error the engine holds part of the snapshot: reset it.
pub async fn load_into(store: &SnapshotStore, m: &Manifest, engine: &mut ShardEngine) -> Result<Loaded, SnapshotError> {
    let t0 = Instant::now();
    let mut progress = Progress::new("restore", m.data_bytes, "bytes");
    let mut duty = store.duty();
    let mut data = DataChecksum::new();
    let mut keys = 0u64;
    let n = m.chunks.len() as u32;
    let (log, name) = (m.log.clone(), m.name.clone());
    let mut chunks = futures::stream::iter(0..n)
        .map(|i| {
            let (store, log, name) = (store.clone(), log.clone(), name.clone());
            async move { (i, store.get_chunk(&log, &name, i).await) }
        })
        .buffered(PREFETCH);
    while let Some((i, bytes)) = chunks.next().await {
        let bytes = bytes?;
        let c = format::decode_chunk(i, &bytes)?;
        let found = format::hex(&c.checksum);
        let listed = &m.chunks[i as usize];
        if found != listed.checksum || bytes.len() as u64 != listed.bytes {
            return Err(SnapshotError::ChunkListed { name: m.name.clone(), index: i, found, listed: listed.checksum.clone() });
        }
        data.add(i, c.payload.len(), &c.checksum);
        keys += engine.load(c.payload)? as u64;
        progress.inc(c.payload.len() as u64);
        duty.step().await;
    }
    let mismatch = |what, expected: String, got: String| SnapshotError::Mismatch { name: m.name.clone(), what, expected, got };
    let sum = format::hex(&data.finish());
    if sum != m.data_checksum {
        return Err(mismatch("data checksum", m.data_checksum.clone(), sum));
    }
    if keys != m.keys {
        return Err(mismatch("key count", m.keys.to_string(), keys.to_string()));
    }
    let digest = format::hex(&engine.digest()?);
    if digest != m.digest {
        return Err(mismatch("digest", m.digest.clone(), digest));
    }
    progress.finish();
    Ok(Loaded { keys, bytes: m.data_bytes, took: t0.elapsed() })
}

/// Checks that `m` was taken from this log and that the log still holds the entries right
/// after it: entry `last_id` exists with the manifest's checksum (or the first entry after
/// it continues that checksum when `last_id` itself was truncated away).
pub async fn check_against_log(api: &LogHandle, m: &Manifest) -> Result<(), SnapshotError> {
    let head = api.head(&m.log).await?;
    let not_this = || SnapshotError::NotThisLog { log: m.log.clone(), name: m.name.clone(), last_id: m.last_id };
    if head.id < m.last_id {
        return Err(SnapshotError::PastTail { log: m.log.clone(), name: m.name.clone(), last_id: m.last_id, tail: head.id });
    }
    if head.id == m.last_id {
        return if head.checksum == m.log_checksum() { Ok(()) } else { Err(not_this()) };
    }
    let b = match api.read(&m.log, m.last_id, 1, Duration::ZERO).await {
        Ok(b) => b,
        Err(e @ LogError::Truncated { .. }) => {
            return Err(SnapshotError::LogTruncated { log: m.log.clone(), name: m.name.clone(), last_id: m.last_id, detail: e.to_string() });
        }
        Err(e) => return Err(e.into()),
    };
    match b.entries.first() {
        Some(e) if e.id == m.last_id + 1 && chain::expected(&m.log_checksum(), e) == e.checksum => Ok(()),
        _ => Err(not_this()),
    }
}

/// The newest snapshot of `log` that passes every check, loaded into `engine` (fresh and
/// empty); an unusable one is reported and the next older one tried. `None` when there is
/// none (the engine is then empty again).
pub async fn newest_into(store: &SnapshotStore, api: &LogHandle, log: &str, engine: &mut ShardEngine) -> Result<Option<Manifest>, SnapshotError> {
    let listed = store.manifests(log).await?;
    let total = listed.len();
    for (i, l) in listed.into_iter().enumerate() {
        let m = match l.manifest {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(log, snapshot = %l.name, error = %e, "skipping snapshot: unusable manifest");
                metrics::counter!("memoria_snapshot_restore_rejected_total").increment(1);
                continue;
            }
        };
        let r = match check_against_log(api, &m).await {
            Ok(()) => load_into(store, &m, engine).await,
            Err(e) => Err(e),
        };
        match r {
            Ok(loaded) => {
                tracing::info!(log, snapshot = %m.name, last_id = m.last_id, keys = loaded.keys, bytes = loaded.bytes, ms = loaded.took.as_millis() as u64, fallback = i, "restored snapshot");
                metrics::counter!("memoria_snapshot_restores_total").increment(1);
                return Ok(Some(m));
            }
            Err(e) => {
                tracing::error!(log, snapshot = %m.name, error = %e, remaining = total - i - 1, "snapshot failed its checks; falling back to the previous one");
                metrics::counter!("memoria_snapshot_restore_rejected_total").increment(1);
                engine.reset(crate::clock::seed())?;
            }
        }
    }
    Ok(None)
}

/// Node start: loads the newest usable snapshot of `log` into `engine` (fresh and empty)
/// and returns the log id to replay after (0: no snapshot, replay the whole log). Without
/// a store, or when it cannot be listed, the log alone is used (if it was truncated, the
/// replay says so).
pub async fn start(snapshots: Option<&SnapshotStore>, api: &LogHandle, log: &str, engine: &mut ShardEngine) -> Result<u64, SnapshotError> {
    let Some(store) = snapshots else { return Ok(0) };
    match newest_into(store, api, log, engine).await {
        Ok(Some(m)) => Ok(m.last_id),
        Ok(None) => Ok(0),
        Err(SnapshotError::Store(e)) => {
            tracing::warn!(log, store = store.url(), error = %e, "cannot list snapshots; replaying the whole log");
            engine.reset(crate::clock::seed())?;
            Ok(0)
        }
        Err(e) => Err(e),
    }
}
