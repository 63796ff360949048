//! Off-box snapshots (DESIGN "Snapshots", issue #6).
//!
//! `memoria snapshot` (make.rs) runs in its own process: it loads the newest verified
//! snapshot, replays the log to a target id while recomputing the hash chain and checking
//! it against the log's checksum marks, dumps the engine in chunks (format.rs) to an object
//! store (store.rs), restores what it wrote into a fresh engine and compares, and only then
//! publishes the manifest (manifest.rs) and records the snapshot in the log. Nodes start
//! from the newest snapshot that passes every check plus the log after it (restore.rs);
//! the scheduler (schedule.rs) decides when to snapshot and truncates the log behind.

pub mod cli;
pub mod format;
pub mod make;
pub mod manifest;
pub mod paced;
pub mod progress;
pub mod restore;
pub mod schedule;
pub mod store;

use thiserror::Error;

pub use make::{Made, MakeOptions, Warm, make, make_warm};
pub use manifest::Manifest;
pub use store::SnapshotStore;

#[derive(Debug, Error)]
pub enum SnapshotError {
    #[error("object store: {0}")]
    Store(#[from] object_store::Error),
    #[error("{0}")]
    Format(#[from] format::FormatError),
    #[error("{0}")]
    Manifest(#[from] manifest::ManifestError),
    #[error("log: {0}")]
    Log(#[from] memoria_log::LogError),
    #[error("engine: {0}")]
    Engine(#[from] crate::wasm::EngineError),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("log {log}: the hash chain recomputed at entry {id} does not match the stored checksum")]
    Chain { log: String, id: u64 },
    #[error("log {log}: checksum mark at entry {id} states {stated} for entry {mark_id}, but the recomputed chain gives {computed}")]
    Mark { log: String, id: u64, mark_id: u64, stated: String, computed: String },
    #[error("log {log}: entry {id} was written in format {format}, newer than this build reads ({known})")]
    EntryTooNew { log: String, id: u64, format: u16, known: u16 },
    #[error("snapshot {name} covers log {log} up to entry {last_id}, past the log's tail {tail}")]
    PastTail { log: String, name: String, last_id: u64, tail: u64 },
    #[error("snapshot {name} is not of this log: its checksum at entry {last_id} does not match log {log}")]
    NotThisLog { log: String, name: String, last_id: u64 },
    #[error("snapshot {name} is too old for log {log}: the log no longer holds the entries right after {last_id} ({detail})")]
    LogTruncated { log: String, name: String, last_id: u64, detail: String },
    #[error("snapshot {name}: chunk {index} checksum {found} is not the manifest's {listed}")]
    ChunkListed { name: String, index: u32, found: String, listed: String },
    #[error("snapshot {name}: {what} mismatch after restore (manifest {expected}, restored {got})")]
    Mismatch { name: String, what: &'static str, expected: String, got: String },
    #[error("{0}")]
    Invalid(String),
}

/// Identifies the engine build that wrote a dump (the manifest's `engine_build`).
pub fn engine_build() -> String {
    format::hex(&xxhash_rust::xxh3::xxh3_64(crate::wasm::ENGINE_COMPONENT).to_be_bytes())
}

/// The shard log of shard `n`.
pub fn shard_log(n: u32) -> String {
    format!("shard-{n}")
}

pub(crate) fn now_unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
