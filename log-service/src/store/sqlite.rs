//! SQLite backend: the embedded default for one machine. WAL with synchronous=FULL, so a
//! committed append survives power loss; one writer connection (SQLite has one writer
//! anyway, and queueing in the pool beats spinning on SQLITE_BUSY), a pool of readers.

use std::path::Path;
use std::str::FromStr;
use std::sync::LazyLock;
use std::time::Duration;

use rusqlite::OptionalExtension;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqlitePool};

use super::sqlite_writer::{Job, Writer, sql_err};
use super::{InsertOutcome, LogMeta, LogStore, ReadRows, checksum_from_db, kind_from_db, leadership_sql, to_i64};
use crate::chain::{Checksum, GENESIS};
use crate::entry::{Entry, Head};
use crate::error::LogError;
use crate::notify::Tails;

/// Entries deleted per transaction by a truncation.
const DELETE_CHUNK: i64 = 1_000;

#[derive(Clone)]
pub struct SqliteStore {
    writer: Writer,
    readers: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and applies the migrations.
    pub async fn open(path: impl AsRef<Path>) -> Result<SqliteStore, LogError> {
        let opts = SqliteConnectOptions::new()
            .filename(path.as_ref())
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(30));
        Self::open_with(opts).await
    }

    /// Opens from a `sqlite:` URL (e.g. `sqlite:///var/lib/memoria/log.db`).
    pub async fn open_url(url: &str) -> Result<SqliteStore, LogError> {
        let opts = SqliteConnectOptions::from_str(url)
            .map_err(|e| LogError::Invalid(format!("bad sqlite url: {e}")))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(30));
        Self::open_with(opts).await
    }

    async fn open_with(opts: SqliteConnectOptions) -> Result<SqliteStore, LogError> {
        // sqlx creates the file, turns WAL on and migrates; then its connection closes and
        // the writer thread's own connection does every write.
        let migrator = SqlitePoolOptions::new().max_connections(1).connect_with(opts.clone()).await.map_err(db_err)?;
        sqlx::migrate!("../migrations/sqlite").run(&migrator).await.map_err(|e| LogError::Internal(format!("sqlite migrations: {e}")))?;
        migrator.close().await;
        let writer = Writer::start(opts.get_filename())?;
        let readers = SqlitePoolOptions::new()
            .after_connect(|conn, _| Box::pin(super::sqlite_config::stable_plans(conn)))
            .max_connections(4)
            .connect_with(opts.read_only(true))
            .await
            .map_err(db_err)?;
        Ok(SqliteStore { writer, readers })
    }

    /// The writer thread's event loop (sqlite_writer.rs).
    pub fn writer_runtime(&self) -> &tokio::runtime::Handle {
        self.writer.runtime()
    }

    /// Runs raw SQL against the database. Test and operator hook (e.g. the tamper test).
    pub async fn execute_raw(&self, sql: &str) -> Result<u64, LogError> {
        let sql = sql.to_owned();
        self.writer
            .call(move |conn| {
                conn.execute_batch(&sql).map_err(sql_err)?;
                Ok(conn.changes())
            })
            .await
    }

    /// Deletes the entries of `log` below `upto` in one transaction that commits without an
    /// fsync (`synchronous = NORMAL`), so it holds the write lock, which every append
    /// needs, for the DELETE alone and not for a disk flush. Nothing depends on a
    /// truncation being durable: one lost to a crash leaves entries a snapshot already
    /// covers, and the next truncation removes them; the WAL is sequential, so the next
    /// append's fsync makes it durable anyway. The connection is back to FULL before anyone
    /// else uses it, or the writer thread reopens it.
    async fn delete_chunk(&self, log: &str, upto: i64) -> Result<u64, LogError> {
        let log = log.to_owned();
        self.writer
            .call(move |conn| {
                conn.execute_batch("PRAGMA synchronous = NORMAL").map_err(sql_err)?;
                let r = conn.execute("DELETE FROM entries WHERE log = ?1 AND id < ?2", rusqlite::params![log, upto]);
                // Back to FULL before any append; if that fails, the writer reopens its
                // connection rather than append through this one.
                conn.execute_batch("PRAGMA synchronous = FULL").map_err(sql_err)?;
                Ok(r.map_err(sql_err)? as u64)
            })
            .await
    }
}

pub(crate) fn db_err(e: sqlx::Error) -> LogError {
    match &e {
        sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => LogError::Unavailable(e.to_string()),
        _ => LogError::Internal(e.to_string()),
    }
}

fn row_to_entry(log: &str, r: &sqlx::sqlite::SqliteRow) -> Result<Entry, LogError> {
    let id: i64 = r.try_get("id").map_err(db_err)?;
    let prev_id: i64 = r.try_get("prev_id").map_err(db_err)?;
    let epoch: i64 = r.try_get("epoch").map_err(db_err)?;
    let kind: i64 = r.try_get("kind").map_err(db_err)?;
    let format: i64 = r.try_get("format").map_err(db_err)?;
    let payload: Vec<u8> = r.try_get("payload").map_err(db_err)?;
    let sum: Vec<u8> = r.try_get("checksum").map_err(db_err)?;
    Ok(Entry {
        id: id as u64,
        prev_id: prev_id as u64,
        epoch: epoch as u64,
        kind: kind_from_db(log, id, kind)?,
        format: u16::try_from(format).map_err(|_| LogError::Corrupt { log: log.to_owned(), id: id as u64 })?,
        payload: payload.into(),
        checksum: checksum_from_db(log, id, &sum)?,
    })
}

impl LogStore for SqliteStore {
    async fn create_log(&self, log: &str) -> Result<bool, LogError> {
        let now = crate::now_ms();
        let log = log.to_owned();
        self.writer
            .call(move |conn| {
                let n = conn
                    .execute("INSERT INTO logs (name, created_ms) VALUES (?1, ?2) ON CONFLICT (name) DO NOTHING", rusqlite::params![log, now])
                    .map_err(sql_err)?;
                Ok(n == 1)
            })
            .await
    }

    async fn insert(&self, log: &str, prev_id: u64, prev_checksum: &Checksum, ts_ms: i64, rows: &[Entry]) -> Result<InsertOutcome, LogError> {
        let job = Job { log: log.to_owned(), prev_id: to_i64(prev_id, "prev_id")?, prev_checksum: *prev_checksum, ts_ms, rows: rows.to_vec() };
        self.writer.append(job).await
    }

    async fn head(&self, log: &str) -> Result<Head, LogError> {
        let r = sqlx::query(
            "SELECT l.name, e.id, e.checksum, e.epoch FROM logs l \
             LEFT JOIN entries e ON e.log = l.name AND e.id = (SELECT max(id) FROM entries WHERE log = l.name) \
             WHERE l.name = ?",
        )
        .bind(log)
        .fetch_optional(&self.readers)
        .await
        .map_err(db_err)?
        .ok_or_else(|| LogError::NotFound(log.to_owned()))?;
        let id: Option<i64> = r.try_get("id").map_err(db_err)?;
        match id {
            None => Ok(Head { id: 0, checksum: GENESIS, epoch: 0 }),
            Some(id) => {
                let sum: Vec<u8> = r.try_get("checksum").map_err(db_err)?;
                let epoch: i64 = r.try_get("epoch").map_err(db_err)?;
                Ok(Head { id: id as u64, checksum: checksum_from_db(log, id, &sum)?, epoch: epoch as u64 })
            }
        }
    }

    async fn checksum_at(&self, log: &str, id: u64) -> Result<Option<Checksum>, LogError> {
        let i = to_i64(id, "id")?;
        let r = sqlx::query("SELECT checksum FROM entries WHERE log = ? AND id = ?").bind(log).bind(i).fetch_optional(&self.readers).await.map_err(db_err)?;
        match r {
            None => Ok(None),
            Some(r) => {
                let sum: Vec<u8> = r.try_get(0).map_err(db_err)?;
                Ok(Some(checksum_from_db(log, i, &sum)?))
            }
        }
    }

    async fn read(&self, log: &str, from: u64, limit: u32) -> Result<ReadRows, LogError> {
        let from = to_i64(from, "after")?;
        let rows = sqlx::query(
            "SELECT id, prev_id, epoch, kind, format, payload, checksum, \
             (SELECT max(id) FROM entries WHERE log = ?1) AS tail \
             FROM entries WHERE log = ?1 AND id >= ?2 ORDER BY id LIMIT ?3",
        )
        .bind(log)
        .bind(from)
        .bind(limit as i64)
        .fetch_all(&self.readers)
        .await
        .map_err(db_err)?;
        let mut out = ReadRows { entries: Vec::with_capacity(rows.len()), tail_id: None };
        for r in &rows {
            out.entries.push(row_to_entry(log, r)?);
            if out.tail_id.is_none() {
                out.tail_id = r.try_get::<Option<i64>, _>("tail").map_err(db_err)?.map(|t| t as u64);
            }
        }
        Ok(out)
    }

    async fn first_id(&self, log: &str) -> Result<u64, LogError> {
        let r: Option<i64> = sqlx::query_scalar("SELECT min(id) FROM entries WHERE log = ?").bind(log).fetch_one(&self.readers).await.map_err(db_err)?;
        Ok(r.unwrap_or(0) as u64)
    }

    async fn leadership(&self, log: &str) -> Result<Option<(Entry, i64)>, LogError> {
        let r = sqlx::query(LEADERSHIP_SQL.as_str()).bind(log).fetch_optional(&self.readers).await.map_err(db_err)?;
        match r {
            None => Ok(None),
            Some(r) => {
                let ts: i64 = r.try_get("ts_ms").map_err(db_err)?;
                Ok(Some((row_to_entry(log, &r)?, ts)))
            }
        }
    }

    async fn list(&self) -> Result<Vec<LogMeta>, LogError> {
        let rows = sqlx::query("SELECT name, snapshot_id FROM logs ORDER BY name").fetch_all(&self.readers).await.map_err(db_err)?;
        rows.iter()
            .map(|r| Ok(LogMeta { name: r.try_get("name").map_err(db_err)?, snapshot_id: r.try_get::<i64, _>("snapshot_id").map_err(db_err)? as u64 }))
            .collect()
    }

    async fn set_snapshot(&self, log: &str, id: u64) -> Result<u64, LogError> {
        let id = to_i64(id, "snapshot id")?;
        let log = log.to_owned();
        self.writer
            .call(move |conn| {
                let r: Option<i64> = conn
                    .query_row("UPDATE logs SET snapshot_id = max(snapshot_id, ?1) WHERE name = ?2 RETURNING snapshot_id", rusqlite::params![id, log], |r| {
                        r.get(0)
                    })
                    .optional()
                    .map_err(sql_err)?;
                r.map(|v| v as u64).ok_or(LogError::NotFound(log))
            })
            .await
    }

    async fn delete_before(&self, log: &str, before: u64) -> Result<u64, LogError> {
        let before = to_i64(before, "before")?;
        let first: Option<i64> = sqlx::query_scalar("SELECT min(id) FROM entries WHERE log = ?").bind(log).fetch_one(&self.readers).await.map_err(db_err)?;
        let Some(mut from) = first else { return Ok(0) };
        let mut deleted = 0;
        // Ids are dense, so a range of DELETE_CHUNK ids is at most that many rows: each chunk
        // is its own short transaction, and appends (queued on this pool, or waiting on the
        // file lock in another process) get the write lock between chunks.
        while from < before {
            let upto = before.min(from.saturating_add(DELETE_CHUNK));
            let started = std::time::Instant::now();
            deleted += self.delete_chunk(log, upto).await?;
            from = upto;
            if from < before {
                // At most half of the write lock's time: another process's busy handler
                // polls with growing sleeps, and must find the lock free when it looks.
                tokio::time::sleep(started.elapsed().max(Duration::from_millis(1))).await;
            }
        }
        Ok(deleted)
    }

    fn announce(&self, _log: &str, _id: u64) {
        // One process owns a SQLite file: the in-process watch already woke every tail.
    }

    fn start_listener(&self, _tails: Tails) {}
}

/// The newest lease renewal or leader claim of a log, through the partial index.
static LEADERSHIP_SQL: LazyLock<String> = LazyLock::new(|| leadership_sql("?"));

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_leadership_lookup_uses_its_partial_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("log.sqlite")).await.unwrap();
        let plan = explain(&store.readers, LEADERSHIP_SQL.as_str()).await;
        assert!(plan.iter().any(|d| d.contains("entries_leadership")), "{plan:?}");
    }

    /// EXPLAIN QUERY PLAN's detail column, one row per step.
    async fn explain(pool: &SqlitePool, sql: &str) -> Vec<String> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {sql}"))).bind("l").fetch_all(pool).await.unwrap();
        rows.iter().map(|r| r.get::<String, _>("detail")).collect()
    }

    async fn synchronous(store: &SqliteStore) -> i64 {
        store.writer.call(|c| c.pragma_query_value(None, "synchronous", |r| r.get(0)).map_err(sql_err)).await.unwrap()
    }

    async fn writer_qpsg(store: &SqliteStore) -> bool {
        store.writer.call(|c| c.db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG).map_err(sql_err)).await.unwrap()
    }

    async fn qpsg(pool: &SqlitePool) -> bool {
        let mut conn = pool.acquire().await.unwrap();
        super::super::sqlite_config::has_stable_plans(&mut conn).await.unwrap()
    }

    #[tokio::test]
    async fn every_connection_plans_its_statements_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("log.sqlite")).await.unwrap();
        assert!(writer_qpsg(&store).await);
        assert!(qpsg(&store.readers).await);
        // A bound LIMIT is still honoured (it is no longer folded into the plan).
        store.create_log("l").await.unwrap();
        store.execute_raw("INSERT INTO entries (log, id, prev_id, epoch, kind, format, payload, checksum, ts_ms) VALUES ('l', 1, 0, 1, 1, 1, x'00', zeroblob(32), 0), ('l', 2, 1, 1, 1, 1, x'00', zeroblob(32), 0)").await.unwrap();
        assert_eq!(store.read("l", 1, 1).await.unwrap().entries.len(), 1);
        assert_eq!(store.read("l", 1, 5).await.unwrap().entries.len(), 2);
    }

    #[tokio::test]
    async fn a_truncation_leaves_the_writer_fsyncing_its_commits() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("log.sqlite")).await.unwrap();
        // FULL is 2: every commit (append) is fsynced.
        assert_eq!(synchronous(&store).await, 2);
        store.execute_raw("INSERT INTO logs (name, created_ms) VALUES ('l', 0)").await.unwrap();
        for id in 1..=5i64 {
            let sql = format!(
                "INSERT INTO entries (log, id, prev_id, epoch, kind, format, payload, checksum, ts_ms) VALUES ('l', {id}, {}, 1, 0, 1, x'00', zeroblob(32), 0)",
                id - 1
            );
            store.execute_raw(&sql).await.unwrap();
        }
        assert_eq!(store.delete_chunk("l", 4).await.unwrap(), 3);
        assert_eq!(synchronous(&store).await, 2, "the append connection must be back to synchronous=FULL");
        let left: Vec<i64> = sqlx::query_scalar("SELECT id FROM entries WHERE log = 'l' ORDER BY id").fetch_all(&store.readers).await.unwrap();
        assert_eq!(left, vec![4, 5]);
    }
}
