//! memoria-log: Memoria's transaction log. Conditional appends (the primary key is the
//! arbiter), a SHA-256 hash chain, long-poll tails; PostgreSQL or embedded SQLite behind one
//! trait; an axum HTTP service and the typed client the host uses.

// One audited FFI call (store/sqlite_config.rs) allows itself; nothing else may.
#![deny(unsafe_code)]

pub mod api;
pub mod chain;
pub mod client;
pub mod codec;
pub mod core;
pub mod entry;
pub mod error;
pub mod local_socket;
pub mod notify;
pub mod server;
pub mod store;
pub mod tail_cache;

pub use crate::api::{LogApi, LogHandle, Outcome, settle};
pub use crate::chain::{Checksum, GENESIS};
pub use crate::client::LogClient;
pub use crate::codec::{AppendRequest, ReadBatch};
pub use crate::core::{CoreOptions, LogCore, Truncated, VerifyReport};
pub use crate::entry::{Appended, CLUSTER_LOG, Entry, FORMAT_VERSION, Head, Kind, LeasePayload, LogInfo, MarkPayload, NewEntry, ReaderInfo};
pub use crate::error::LogError;
pub use crate::store::{LogStore, PgConfig, PgStore, SqliteStore, Store};

/// Wall-clock unix milliseconds (service-side timestamps for lease views only; never used
/// for ordering).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}
