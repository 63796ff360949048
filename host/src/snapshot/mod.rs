//! Off-box snapshots (docs/ARCHITECTURE.md "Snapshots and recovery", issue #6).
//!
//! `memoria snapshot` (make.rs) runs in its own process: it loads the newest verified
//! snapshot, replays the log to a target id while recomputing the hash chain and checking
//! it against the log's checksum marks, dumps the engine in chunks (format.rs) to an object
//! store (store.rs), restores what it wrote into a fresh engine and compares, and only then
//! publishes the manifest (manifest.rs) and records the snapshot in the log. Nodes start
//! from the newest snapshot that passes every check plus the log after it (restore.rs);
//! the scheduler (schedule.rs) decides when to snapshot and truncates the log behind.

pub mod cli;
pub mod make;
pub mod progress;
pub mod restore;
pub mod schedule;

pub use make::{Made, MakeOptions, Warm, make, make_warm};
pub use memoria_admin::snapshot::{Manifest, SnapshotError, SnapshotStore, format, manifest, paced, store};

/// Identifies the engine build that wrote a dump (the manifest's `engine_build`).
pub fn engine_build() -> String {
    format::hex(&xxhash_rust::xxh3::xxh3_64(crate::wasm::ENGINE_COMPONENT).to_be_bytes())
}
