//! The storage contract. A backend stores rows and arbitrates appends; it knows nothing of
//! hashing, marks, notification or retries (those live in [`crate::core`]), so each
//! backend stays a thin, reviewable layer of SQL.

use std::future::Future;

use crate::chain::Checksum;
use crate::entry::{Entry, Head};
use crate::error::LogError;
use crate::notify::Tails;

pub mod pg;
pub mod sqlite;
mod sqlite_config;
mod sqlite_writer;

pub use pg::{PgConfig, PgStore};
pub use sqlite::SqliteStore;

/// What the single conditional INSERT did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertOutcome {
    /// Every row was written (one statement, so all of them).
    Inserted,
    /// 0 rows: `prev_id` is not a stored entry with the expected checksum (ahead of the
    /// tail, truncated, or the log is not empty when `prev_id` = 0).
    PrevMissing,
    /// Unique violation on (log, id): another writer got there first.
    Taken,
}

/// Rows from a range read, plus the tail id observed by the same statement.
#[derive(Debug, Clone, Default)]
pub struct ReadRows {
    pub entries: Vec<Entry>,
    pub tail_id: Option<u64>,
}

/// Per-log bookkeeping kept outside the entries table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogMeta {
    pub name: String,
    pub snapshot_id: u64,
}

/// A backend. Methods return `Send` futures so the service can run them on any task.
/// Errors: `NotFound` for a missing log, `Unavailable` when the database cannot be
/// reached (for `insert`, the outcome is then unknown), `Internal` otherwise.
pub trait LogStore: Send + Sync + 'static {
    /// Creates the log if absent; true when it was created now.
    fn create_log(&self, log: &str) -> impl Future<Output = Result<bool, LogError>> + Send;

    /// The conditional append: inserts `rows` (ids `prev_id+1..`, all of one epoch) only if
    /// entry `prev_id` exists with `prev_checksum` and an epoch no higher than the rows'
    /// (epochs never decrease along a log), or, for `prev_id` = 0, the log is empty.
    fn insert(
        &self,
        log: &str,
        prev_id: u64,
        prev_checksum: &Checksum,
        ts_ms: i64,
        rows: &[Entry],
    ) -> impl Future<Output = Result<InsertOutcome, LogError>> + Send;

    /// Tail of the log (id 0 and genesis when empty); `NotFound` when the log is missing.
    fn head(&self, log: &str) -> impl Future<Output = Result<Head, LogError>> + Send;

    /// Checksum of entry `id`, if stored.
    fn checksum_at(&self, log: &str, id: u64) -> impl Future<Output = Result<Option<Checksum>, LogError>> + Send;

    /// Entries with id >= `from`, ascending, at most `limit`.
    fn read(&self, log: &str, from: u64, limit: u32) -> impl Future<Output = Result<ReadRows, LogError>> + Send;

    /// Oldest stored id (0 when empty).
    fn first_id(&self, log: &str) -> impl Future<Output = Result<u64, LogError>> + Send;

    /// Newest lease renewal or leader claim, with the service time (unix ms) it was written.
    fn leadership(&self, log: &str) -> impl Future<Output = Result<Option<(Entry, i64)>, LogError>> + Send;

    fn list(&self) -> impl Future<Output = Result<Vec<LogMeta>, LogError>> + Send;

    /// Raises the published-snapshot id (never lowers it); returns the stored value.
    fn set_snapshot(&self, log: &str, id: u64) -> impl Future<Output = Result<u64, LogError>> + Send;

    /// Deletes entries with id < `before`; returns how many.
    fn delete_before(&self, log: &str, before: u64) -> impl Future<Output = Result<u64, LogError>> + Send;

    /// Tells other service instances that `log` now ends at `id`. Called after commit;
    /// must not block the append (PostgreSQL: NOTIFY from a separate connection).
    fn announce(&self, log: &str, id: u64);

    /// Starts whatever feeds other instances' announcements into `tails`.
    fn start_listener(&self, tails: Tails);
}

/// The backends this build has, chosen at run time (the traits above are not object-safe).
#[derive(Clone)]
pub enum Store {
    Sqlite(SqliteStore),
    Pg(PgStore),
}

impl Store {
    /// The event loop on which this store's writes run without a thread hand-over (the
    /// SQLite writer's thread), for the callers that append most; None for a store with no
    /// writer thread (PostgreSQL, reached over the network from any runtime).
    pub fn writer_runtime(&self) -> Option<&tokio::runtime::Handle> {
        match self {
            Store::Sqlite(s) => Some(s.writer_runtime()),
            Store::Pg(_) => None,
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Store::Sqlite($s) => $e,
            Store::Pg($s) => $e,
        }
    };
}

impl LogStore for Store {
    async fn create_log(&self, log: &str) -> Result<bool, LogError> {
        dispatch!(self, s => s.create_log(log).await)
    }
    async fn insert(&self, log: &str, prev_id: u64, prev_checksum: &Checksum, ts_ms: i64, rows: &[Entry]) -> Result<InsertOutcome, LogError> {
        dispatch!(self, s => s.insert(log, prev_id, prev_checksum, ts_ms, rows).await)
    }
    async fn head(&self, log: &str) -> Result<Head, LogError> {
        dispatch!(self, s => s.head(log).await)
    }
    async fn checksum_at(&self, log: &str, id: u64) -> Result<Option<Checksum>, LogError> {
        dispatch!(self, s => s.checksum_at(log, id).await)
    }
    async fn read(&self, log: &str, from: u64, limit: u32) -> Result<ReadRows, LogError> {
        dispatch!(self, s => s.read(log, from, limit).await)
    }
    async fn first_id(&self, log: &str) -> Result<u64, LogError> {
        dispatch!(self, s => s.first_id(log).await)
    }
    async fn leadership(&self, log: &str) -> Result<Option<(Entry, i64)>, LogError> {
        dispatch!(self, s => s.leadership(log).await)
    }
    async fn list(&self) -> Result<Vec<LogMeta>, LogError> {
        dispatch!(self, s => s.list().await)
    }
    async fn set_snapshot(&self, log: &str, id: u64) -> Result<u64, LogError> {
        dispatch!(self, s => s.set_snapshot(log, id).await)
    }
    async fn delete_before(&self, log: &str, before: u64) -> Result<u64, LogError> {
        dispatch!(self, s => s.delete_before(log, before).await)
    }
    fn announce(&self, log: &str, id: u64) {
        dispatch!(self, s => s.announce(log, id))
    }
    fn start_listener(&self, tails: Tails) {
        dispatch!(self, s => s.start_listener(tails))
    }
}

/// ids are u64 in the API and BIGINT in SQL; ids beyond i64::MAX are refused, not wrapped.
pub(crate) fn to_i64(v: u64, what: &str) -> Result<i64, LogError> {
    i64::try_from(v).map_err(|_| LogError::Invalid(format!("{what} {v} is out of range")))
}

pub(crate) fn kind_from_db(log: &str, id: i64, k: i64) -> Result<crate::entry::Kind, LogError> {
    u8::try_from(k).ok().and_then(crate::entry::Kind::from_u8).ok_or(LogError::Corrupt { log: log.to_owned(), id: id as u64 })
}

pub(crate) fn checksum_from_db(log: &str, id: i64, b: &[u8]) -> Result<Checksum, LogError> {
    Checksum::from_slice(b).ok_or(LogError::Corrupt { log: log.to_owned(), id: id as u64 })
}

/// The leadership lookup's filter, as literals: the partial index `entries_leadership` (see
/// the migrations) is usable only when the planner can prove `kind IN (2, 3)`, which it
/// cannot for bound parameters. With them SQLite scanned the (log, id) key backwards and
/// looked up every row since the last renewal, twice a second (list views), which cost the
/// supervisor ~15 % of its CPU under write load.
pub(crate) const LEADERSHIP_FILTER: &str = "kind IN (2, 3)";

/// The newest lease renewal or leader claim of a log, through that index; `log` is the
/// backend's placeholder for the log's name (`?` or `$1`).
pub(crate) fn leadership_sql(log: &str) -> String {
    format!("SELECT id, prev_id, epoch, kind, format, payload, checksum, ts_ms FROM entries WHERE log = {log} AND {LEADERSHIP_FILTER} ORDER BY id DESC LIMIT 1")
}

#[cfg(test)]
mod tests {
    use crate::entry::Kind;

    #[test]
    fn the_leadership_filter_names_the_leadership_kinds() {
        let want = format!("kind IN ({}, {})", Kind::LeaseRenewal as u8, Kind::LeaderClaim as u8);
        assert_eq!(super::LEADERSHIP_FILTER, want);
    }
}
