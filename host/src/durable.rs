//! The shard's side of the log: recovery (the newest snapshot and the log after it into a
//! fresh engine, then a leader claim by conditional append), and appends of effects that
//! settle an outcome in doubt instead of guessing.

use std::time::Duration;

use memoria_log::{Appended, Kind, LeasePayload, LogApi, LogError, LogHandle, NewEntry, Outcome};
use thiserror::Error;

use crate::replay::{ReplayError, Replayed, replay};
use crate::snapshot::SnapshotStore;
use crate::wasm::ShardEngine;

#[derive(Debug, Error)]
pub enum DurableError {
    #[error("log: {0}")]
    Log(#[from] LogError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error("snapshot: {0}")]
    Snapshot(#[from] crate::snapshot::SnapshotError),
}

/// Where this shard writes, and the tail it expects (its next `prev_id`).
pub struct ShardLog {
    pub api: LogHandle,
    pub name: String,
    pub node: String,
    pub prev_id: u64,
    pub epoch: u64,
}

/// What recovery found.
pub struct Recovered {
    pub log: ShardLog,
    pub applied_entries: u64,
    pub applied_effects: u64,
}

/// Loads the newest usable snapshot into `engine` (fresh and empty), then replays the log
/// after it to the tail. `max_epoch` covers the entries in the snapshot too.
pub async fn replay_from_snapshot(api: &LogHandle, name: &str, snapshots: Option<&SnapshotStore>, engine: &mut ShardEngine) -> Result<Replayed, DurableError> {
    let (after, epoch) = start_from_snapshot(api, name, snapshots, engine).await?;
    let mut r = replay(api, name, after, engine).await?;
    r.max_epoch = r.max_epoch.max(epoch);
    Ok(r)
}

/// The snapshot part of recovery: the id to replay after and the highest epoch up to it
/// (the head's, read before the replay: epochs never decrease along a log).
async fn start_from_snapshot(api: &LogHandle, name: &str, snapshots: Option<&SnapshotStore>, engine: &mut ShardEngine) -> Result<(u64, u64), DurableError> {
    let after = crate::snapshot::restore::start(snapshots, api, name, engine).await?;
    let epoch = if after > 0 { api.head(name).await?.epoch } else { 0 };
    Ok((after, epoch))
}

/// Replays `name` into `engine` (which must be empty), from its newest usable snapshot
/// when `snapshots` holds one, then appends a leader claim whose
/// `prev_id` is the tail it read: if another writer appended meanwhile, the claim conflicts
/// and recovery starts over from where it was.
pub async fn recover(
    api: LogHandle,
    name: &str,
    node: &str,
    lease_ms: u64,
    snapshots: Option<&SnapshotStore>,
    engine: &mut ShardEngine,
) -> Result<Recovered, DurableError> {
    api.create(name).await?;
    let (mut after, mut max_epoch) = start_from_snapshot(&api, name, snapshots, engine).await?;
    let mut applied_entries = 0;
    let mut applied_effects = 0;
    loop {
        let r = replay(&api, name, after, engine).await?;
        after = r.last_id;
        max_epoch = max_epoch.max(r.max_epoch);
        applied_entries += r.data_entries;
        applied_effects += r.effects;
        {
            // Caught up: claim the log at exactly this tail.
            let epoch = max_epoch + 1;
            let claim = NewEntry::new(Kind::LeaderClaim, LeasePayload { node: node.to_string(), lease_ms }.encode());
            match api.append(name, after, epoch, vec![claim]).await {
                Ok(a) => {
                    let log = ShardLog { api, name: name.to_string(), node: node.to_string(), prev_id: a.last_id, epoch };
                    return Ok(Recovered { log, applied_entries, applied_effects });
                }
                // Someone appended after our read: keep reading from where we are.
                Err(LogError::Conflict { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Appends and, when the outcome is in doubt (a broken connection), settles it by reading
/// the tail instead of guessing. Never cancelled midway: a cancelled sync-replication wait
/// can commit anyway.
pub async fn append_settled(api: LogHandle, name: String, prev_id: u64, epoch: u64, entries: Vec<NewEntry>) -> Result<Appended, LogError> {
    const MAX_TRIES: u32 = 20;
    let mut sends = 0u32;
    loop {
        sends += 1;
        let err = match api.append(&name, prev_id, epoch, entries.clone()).await {
            Ok(a) => return Ok(a),
            Err(e) if e.is_in_doubt() => e,
            Err(e) => return Err(e),
        };
        tracing::warn!(log = %name, error = %err, "append in doubt; settling by reading the tail");
        // Settle before anything else: resending an append that did land would conflict
        // with ourselves and depose a healthy primary.
        let mut tries = 0u32;
        loop {
            tries += 1;
            tokio::time::sleep(Duration::from_millis((50 * tries as u64).min(1000))).await;
            match memoria_log::settle(&api, &name, prev_id, epoch, &entries).await {
                Ok(Outcome::Landed(a)) => return Ok(a),
                Ok(Outcome::NotWritten) => break,
                Ok(Outcome::Superseded(h)) => return Err(LogError::Conflict { tail_id: h.id, tail_checksum: h.checksum, tail_epoch: h.epoch }),
                Err(e) if tries < MAX_TRIES => tracing::warn!(log = %name, error = %e, tries, "settling failed; retrying"),
                Err(e) => return Err(e),
            }
        }
        if sends >= MAX_TRIES {
            return Err(err);
        }
    }
}
