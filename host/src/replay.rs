//! Reading a log into an engine: data entries' effects in order, leases and claims noted,
//! entries of a newer format refused. Recovery, replicas and the snapshot process all
//! replay through here.

use std::time::Duration;

use memoria_log::{FORMAT_VERSION, Kind, LogApi, LogError, LogHandle};
use thiserror::Error;

use crate::clock::now_us;
use crate::wasm::{EngineError, ShardEngine};

#[derive(Debug, Error)]
pub enum ReplayError {
    #[error("log: {0}")]
    Log(#[from] LogError),
    #[error("engine: {0}")]
    Engine(#[from] EngineError),
    #[error("log entry {id} was written in format {format}, newer than this build understands ({known}); upgrade this node")]
    FormatTooNew { id: u64, format: u16, known: u16 },
}

const READ_CHUNK: u32 = 1000;

/// What one replayed chunk did.
pub struct Replayed {
    /// The last id read (the next read starts after it).
    pub last_id: u64,
    pub tail_id: u64,
    pub max_epoch: u64,
    pub data_entries: u64,
    pub effects: u64,
    /// The node named by the newest lease renewal or leader claim read (the primary, as
    /// far as this log prefix tells).
    pub leader: Option<String>,
}

/// Applies log entries to `engine`: data entries' effects in order; leases, claims and
/// checksum marks carry no data. Refuses (before applying it) an entry written in a newer
/// format than this build reads, rather than misreading it.
pub fn apply_entries(engine: &mut ShardEngine, entries: &[memoria_log::Entry], r: &mut Replayed) -> Result<(), ReplayError> {
    for e in entries {
        if e.format > FORMAT_VERSION {
            return Err(ReplayError::FormatTooNew { id: e.id, format: e.format, known: FORMAT_VERSION });
        }
        r.max_epoch = r.max_epoch.max(e.epoch);
        if e.kind == Kind::Data {
            r.effects += engine.apply(&e.payload, now_us())? as u64;
            r.data_entries += 1;
        } else if matches!(e.kind, Kind::LeaseRenewal | Kind::LeaderClaim)
            && let Some(p) = memoria_log::LeasePayload::decode(&e.payload)
        {
            r.leader = Some(p.node);
        }
        r.last_id = e.id;
    }
    Ok(())
}

/// Reads and applies everything after `after` up to the tail as it was when reached.
pub async fn replay(api: &LogHandle, name: &str, after: u64, engine: &mut ShardEngine) -> Result<Replayed, ReplayError> {
    let mut r = Replayed { last_id: after, tail_id: after, max_epoch: 0, data_entries: 0, effects: 0, leader: None };
    loop {
        let batch = api.read(name, r.last_id, READ_CHUNK, Duration::ZERO).await?;
        r.tail_id = batch.tail_id;
        apply_entries(engine, &batch.entries, &mut r)?;
        if batch.entries.is_empty() || r.last_id >= batch.tail_id {
            return Ok(r);
        }
    }
}
