//! The snapshot store and what it holds: chunked dumps in a versioned, checksummed
//! envelope (`format`), manifests that list them with the facts they cover (`manifest`),
//! and an object store (local directory; S3, GCS or Azure with the `cloud` feature) that
//! writes them at a bounded pace (`store`, `paced`). Making and restoring snapshots needs
//! the engine and lives in the host (`memoria_host::snapshot`).

pub mod format;
pub mod manifest;
pub mod paced;
pub mod store;

use thiserror::Error;

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
    Engine(String),
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

/// Where the snapshots of a data directory go unless told otherwise.
pub fn default_store(data_dir: &str) -> String {
    std::path::Path::new(data_dir).join("snapshots").display().to_string()
}

pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
