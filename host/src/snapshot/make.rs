//! Making a snapshot, off the serving nodes: newest verified snapshot + the log replayed
//! to a target id with the hash chain recomputed and checked against the checksum marks,
//! dumped in chunks, restored into a fresh engine and compared, then published.

use std::time::{Duration, Instant};

use memoria_log::{Checksum, FORMAT_VERSION, GENESIS, Kind, LogApi, LogError, LogHandle, MarkPayload, chain};

use super::SnapshotError;
use super::format::{self, DataChecksum};
use super::manifest::{ChunkRef, Manifest, snapshot_name};
use super::paced::Duty;
use super::progress::Progress;
use super::restore;
use super::store::SnapshotStore;
use crate::replay::{self, ReplayError, Replayed};
use crate::wasm::{EngineFactory, ShardEngine};
use memoria_admin::snapshot::now_unix_ms;

#[derive(Clone, Debug)]
pub struct MakeOptions {
    /// Dump page size: each chunk holds about this many bytes of key records.
    pub chunk_bytes: u32,
    /// Replay up to this log id (default: the tail when the run starts).
    pub target: Option<u64>,
}

impl Default for MakeOptions {
    fn default() -> Self {
        MakeOptions { chunk_bytes: 4 << 20, target: None }
    }
}

#[derive(Debug)]
pub enum Made {
    /// A new snapshot was verified and published.
    Published(Box<Manifest>),
    /// The newest snapshot already covers the target.
    UpToDate { last_id: u64 },
}

/// What the verified replay read.
#[derive(Debug)]
pub struct Verified {
    pub last_id: u64,
    pub checksum: Checksum,
    pub entries: u64,
    pub bytes: u64,
    pub marks: u64,
}

const READ_PAGE: u64 = 1000;

/// Checks `entries` against the chain recomputed from (`prev_id`, `prev`), and every
/// checksum mark against it. Pure: the log service's stored checksums are not trusted.
pub fn verify_entries(log: &str, prev_id: &mut u64, prev: &mut Checksum, entries: &[memoria_log::Entry], marks: &mut u64) -> Result<(), SnapshotError> {
    for e in entries {
        if e.id != *prev_id + 1 || e.prev_id != *prev_id || chain::expected(prev, e) != e.checksum {
            return Err(SnapshotError::Chain { log: log.to_string(), id: e.id });
        }
        if e.kind == Kind::ChecksumMark {
            match MarkPayload::decode(&e.payload) {
                Some(m) if m.id == *prev_id && m.checksum == *prev => *marks += 1,
                m => {
                    return Err(SnapshotError::Mark {
                        log: log.to_string(),
                        id: e.id,
                        mark_id: m.map_or(0, |m| m.id),
                        stated: m.map_or_else(|| "an undecodable payload".into(), |m| m.checksum.to_hex()),
                        computed: prev.to_hex(),
                    });
                }
            }
        }
        if e.format > FORMAT_VERSION {
            return Err(SnapshotError::EntryTooNew { log: log.to_string(), id: e.id, format: e.format, known: FORMAT_VERSION });
        }
        *prev_id = e.id;
        *prev = e.checksum;
    }
    Ok(())
}

/// Replays `log` from (`after`, `anchor`) to exactly `target` into `engine`, verifying the
/// chain and marks of every entry before applying it.
pub async fn replay_verified(
    api: &LogHandle,
    log: &str,
    after: u64,
    anchor: Checksum,
    target: u64,
    engine: &mut ShardEngine,
    duty: &mut Duty,
) -> Result<Verified, SnapshotError> {
    let mut v = Verified { last_id: after, checksum: anchor, entries: 0, bytes: 0, marks: 0 };
    let mut progress = Progress::new("replay", target - after, "entries");
    let mut r = Replayed { last_id: after, tail_id: after, max_epoch: 0, data_entries: 0, effects: 0, leader: None };
    while v.last_id < target {
        let limit = (target - v.last_id).min(READ_PAGE) as u32;
        let batch = match api.read(log, v.last_id, limit, Duration::ZERO).await {
            Ok(b) => b,
            Err(e @ LogError::Truncated { .. }) => {
                return Err(SnapshotError::LogTruncated { log: log.into(), name: format!("base at {after}"), last_id: v.last_id, detail: e.to_string() });
            }
            Err(e) => return Err(e.into()),
        };
        let take = batch.entries.iter().take_while(|e| e.id <= target).count();
        let entries = &batch.entries[..take];
        if entries.is_empty() {
            return Err(SnapshotError::Invalid(format!("log {log} ends at {} before the target {target}", batch.tail_id)));
        }
        let (mut prev_id, mut prev) = (v.last_id, v.checksum);
        verify_entries(log, &mut prev_id, &mut prev, entries, &mut v.marks)?;
        replay::apply_entries(engine, entries, &mut r).map_err(|e| match e {
            ReplayError::Engine(e) => e.into(),
            other => SnapshotError::Invalid(other.to_string()),
        })?;
        v.bytes += entries.iter().map(|e| e.payload.len() as u64).sum::<u64>();
        v.entries += entries.len() as u64;
        v.last_id = prev_id;
        v.checksum = prev;
        progress.inc(entries.len() as u64);
        duty.step().await;
    }
    progress.finish();
    Ok(v)
}

/// The engine of a snapshot this process restored and verified, kept for its next
/// snapshot: a scheduler taking snapshots back to back then reads the data set twice per
/// snapshot (dump, verification restore) instead of three times (base restore too), which
/// is a third less work beside the serving nodes. It costs the snapshot process one data
/// set of memory between snapshots.
pub struct Warm {
    name: String,
    checksum: String,
    engine: ShardEngine,
}

impl Warm {
    /// The snapshot whose data the kept engine holds.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Takes one snapshot of `log` into `store`. A snapshot that fails any check is removed
/// and never published; the previous one stays current.
pub async fn make(factory: &EngineFactory, api: &LogHandle, log: &str, store: &SnapshotStore, opts: &MakeOptions) -> Result<Made, SnapshotError> {
    make_warm(factory, api, log, store, opts, &mut None).await
}

/// [`make`], starting from `warm` when it still holds the newest usable snapshot, and
/// leaving the engine of the snapshot it verified (or restored, when there was nothing
/// to do) in `warm` for the next call.
pub async fn make_warm(
    factory: &EngineFactory,
    api: &LogHandle,
    log: &str,
    store: &SnapshotStore,
    opts: &MakeOptions,
    warm: &mut Option<Warm>,
) -> Result<Made, SnapshotError> {
    let t0 = Instant::now();
    let head = api.head(log).await?;
    let target = opts.target.unwrap_or(head.id);
    if target > head.id {
        return Err(SnapshotError::Invalid(format!("target {target} is past the tail {} of log {log}", head.id)));
    }
    let (mut engine, base, kept) = base_engine(factory, api, log, store, warm.take()).await?;
    let (after, anchor) = base.as_ref().map_or((0, GENESIS), |m| (m.last_id, m.log_checksum()));
    if after >= target {
        // Nothing replayed: the engine still holds exactly the base snapshot.
        *warm = base.map(|m| Warm { name: m.name, checksum: m.checksum, engine });
        return Ok(Made::UpToDate { last_id: after });
    }
    tracing::info!(log, base = base.as_ref().map(|m| m.name.as_str()), kept, from = after, target, "snapshot: replaying the log");
    let v = replay_verified(api, log, after, anchor, target, &mut engine, &mut store.duty()).await?;
    let digest = format::hex(&engine.digest()?);
    let keys = engine.key_count()?;
    let created = now_unix_ms();
    let name = snapshot_name(target, created);

    let written = dump(&mut engine, log, &name, store, opts.chunk_bytes.max(1024)).await;
    drop(engine); // one engine at a time: the verification below gets a fresh one
    let (chunks, data_checksum, data_bytes) = match written {
        Ok(w) => w,
        Err(e) => {
            discard(store, log, &name).await;
            return Err(e);
        }
    };
    let mut m = Manifest {
        format: format::FORMAT_VERSION,
        engine_version: env!("CARGO_PKG_VERSION").to_string(),
        engine_build: super::engine_build(),
        log: log.to_string(),
        last_id: target,
        log_checksum: v.checksum.to_hex(),
        name: name.clone(),
        base: base.as_ref().map(|b| b.name.clone()),
        digest,
        data_checksum,
        keys,
        data_bytes,
        chunks,
        replayed_entries: v.entries,
        replayed_bytes: v.bytes,
        created_unix_ms: created,
        took_ms: 0,
        checksum: String::new(),
    };
    // Verified restore: what the store now holds, into a fresh engine.
    let verify = async {
        let mut fresh = factory.instantiate(crate::clock::seed())?;
        restore::load_into(store, &m, &mut fresh).await.map(|_| fresh)
    };
    let verified = match verify.await {
        Ok(fresh) => fresh,
        Err(e) => {
            tracing::error!(log, snapshot = %name, error = %e, "snapshot failed its verification restore; not published");
            metrics::counter!("memoria_snapshot_failed_total").increment(1);
            discard(store, log, &name).await;
            return Err(e);
        }
    };
    m.took_ms = t0.elapsed().as_millis() as u64;
    store.put_manifest(&mut m).await?;
    match api.publish_snapshot(log, target, v.checksum).await {
        Ok(_) => {}
        Err(LogError::Refused(why)) => {
            // The log disowns the checksum: this snapshot is not of this log.
            tracing::error!(log, snapshot = %name, %why, "the log refused the snapshot; unpublishing it");
            discard(store, log, &name).await;
            return Err(SnapshotError::NotThisLog { log: log.into(), name, last_id: target });
        }
        // Published in the store, but the log does not know yet: truncation waits for it.
        Err(e) => return Err(e.into()),
    }
    *warm = Some(Warm { name: m.name.clone(), checksum: m.checksum.clone(), engine: verified });
    metrics::counter!("memoria_snapshot_published_total").increment(1);
    metrics::gauge!("memoria_snapshot_last_id").set(target as f64);
    metrics::gauge!("memoria_snapshot_data_bytes").set(m.data_bytes as f64);
    tracing::info!(log, snapshot = %m.name, last_id = target, keys, bytes = m.data_bytes, chunks = m.chunks.len(), replayed = v.entries, marks = v.marks, ms = m.took_ms, "snapshot published");
    Ok(Made::Published(Box::new(m)))
}

/// The engine to replay onto and the snapshot it holds: `warm` when what it holds is still
/// the newest usable snapshot in the store (same name and manifest checksum) and the log
/// still continues it; otherwise the newest snapshot that passes every check, restored
/// into a fresh engine. The flag says whether `warm` was used.
async fn base_engine(
    factory: &EngineFactory,
    api: &LogHandle,
    log: &str,
    store: &SnapshotStore,
    warm: Option<Warm>,
) -> Result<(ShardEngine, Option<Manifest>, bool), SnapshotError> {
    if let Some(w) = warm {
        let newest = store.manifests(log).await?.into_iter().find_map(|l| l.manifest.ok());
        if let Some(m) = newest
            && m.name == w.name
            && m.checksum == w.checksum
            && restore::check_against_log(api, &m).await.is_ok()
        {
            return Ok((w.engine, Some(m), true));
        }
        tracing::info!(log, kept = %w.name, "snapshot: the kept engine is no longer the newest snapshot; restoring");
        drop(w); // one engine at a time
    }
    let mut engine = factory.instantiate(crate::clock::seed())?;
    let base = restore::newest_into(store, api, log, &mut engine).await?;
    Ok((engine, base, false))
}

/// Dumps the engine page by page, each page one chunk object; the upload of a chunk runs
/// while the next page is dumped (at most two chunks in memory).
async fn dump(engine: &mut ShardEngine, log: &str, name: &str, store: &SnapshotStore, chunk_bytes: u32) -> Result<(Vec<ChunkRef>, String, u64), SnapshotError> {
    let mut progress = Progress::new("dump", engine.used_memory().unwrap_or(0), "bytes");
    let mut chunks = Vec::new();
    let mut data = DataChecksum::new();
    let mut data_bytes = 0u64;
    let (mut db, mut cursor) = (0u32, 0u64);
    let mut inflight: Option<tokio::task::JoinHandle<Result<(), SnapshotError>>> = None;
    let mut index = 0u32;
    let mut duty = store.duty();
    loop {
        let page = engine.dump(db, cursor, chunk_bytes)?;
        if !page.data.is_empty() || (page.done && index == 0) {
            let (bytes, sum) = format::encode_chunk(index, &page.data);
            data.add(index, page.data.len(), &sum);
            chunks.push(ChunkRef { index, bytes: bytes.len() as u64, checksum: format::hex(&sum) });
            data_bytes += page.data.len() as u64;
            progress.inc(page.data.len() as u64);
            if let Some(t) = inflight.take() {
                t.await.map_err(|e| SnapshotError::Invalid(format!("upload task: {e}")))??;
            }
            let (store, log, name) = (store.clone(), log.to_string(), name.to_string());
            inflight = Some(tokio::spawn(async move { store.put_chunk(&log, &name, index, bytes).await }));
            index += 1;
            duty.step().await;
        }
        if page.done {
            break;
        }
        (db, cursor) = (page.next_db, page.next_cursor);
    }
    if let Some(t) = inflight.take() {
        t.await.map_err(|e| SnapshotError::Invalid(format!("upload task: {e}")))??;
    }
    progress.finish();
    Ok((chunks, format::hex(&data.finish()), data_bytes))
}

async fn discard(store: &SnapshotStore, log: &str, name: &str) {
    if let Err(e) = store.remove(log, name).await {
        tracing::warn!(log, snapshot = %name, error = %e, "could not remove a rejected snapshot's objects");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use memoria_log::{Entry, Kind};

    fn chain_of(kinds: &[Kind]) -> Vec<Entry> {
        let mut out: Vec<Entry> = Vec::new();
        let mut prev = GENESIS;
        for (i, k) in kinds.iter().enumerate() {
            let id = i as u64 + 1;
            let payload = if *k == Kind::ChecksumMark { MarkPayload { id: id - 1, checksum: prev }.encode() } else { Bytes::from(vec![id as u8; 3]) };
            let checksum = chain::link(&prev, id, 1, *k, FORMAT_VERSION, &payload);
            out.push(Entry { id, prev_id: id - 1, epoch: 1, kind: *k, format: FORMAT_VERSION, payload, checksum });
            prev = checksum;
        }
        out
    }

    fn run(entries: &[Entry]) -> Result<u64, SnapshotError> {
        let (mut id, mut sum, mut marks) = (0, GENESIS, 0);
        verify_entries("s", &mut id, &mut sum, entries, &mut marks).map(|_| marks)
    }

    /// Re-links entries from `from` on, as a forger who rewrote the chain would.
    fn relink(entries: &mut [Entry], from: usize) {
        for i in from..entries.len() {
            let prev = if i == 0 { GENESIS } else { entries[i - 1].checksum };
            entries[i].checksum = chain::expected(&prev, &entries[i]);
        }
    }

    #[test]
    fn chain_and_marks_are_recomputed() {
        let good = chain_of(&[Kind::Data, Kind::Data, Kind::ChecksumMark, Kind::Data]);
        assert_eq!(run(&good).unwrap(), 1);

        // An altered payload with its stored checksum left alone.
        let mut altered = good.clone();
        altered[1].payload = Bytes::from_static(b"xx");
        assert!(matches!(run(&altered), Err(SnapshotError::Chain { id: 2, .. })));

        // A chain rewritten consistently after a change: the mark no longer matches it.
        let mut forged = good.clone();
        forged[0].payload = Bytes::from_static(b"evil");
        relink(&mut forged, 0);
        assert!(matches!(run(&forged), Err(SnapshotError::Mark { id: 3, mark_id: 2, .. })));

        // A mark whose payload was rewritten (and the chain after it re-linked).
        let mut mark = good.clone();
        mark[2].payload = MarkPayload { id: 2, checksum: Checksum([9; 32]) }.encode();
        relink(&mut mark, 2);
        assert!(matches!(run(&mark), Err(SnapshotError::Mark { id: 3, .. })));
        let mut garbage = good.clone();
        garbage[2].payload = Bytes::from_static(b"?");
        relink(&mut garbage, 2);
        assert!(matches!(run(&garbage), Err(SnapshotError::Mark { id: 3, mark_id: 0, .. })));

        // A gap.
        let gap = vec![good[0].clone(), good[2].clone()];
        assert!(matches!(run(&gap), Err(SnapshotError::Chain { id: 3, .. })));

        // Newer entry format: refused, not misread.
        let mut newer = good.clone();
        newer[3].format = FORMAT_VERSION + 1;
        relink(&mut newer, 3);
        assert!(matches!(run(&newer), Err(SnapshotError::EntryTooNew { id: 4, .. })));
    }
}
