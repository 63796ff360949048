//! SQLite backend: the embedded default for one machine. WAL with synchronous=FULL, so a
//! committed append survives power loss; one writer connection (SQLite has one writer
//! anyway, and queueing in the pool beats spinning on SQLITE_BUSY), a pool of readers.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use bytes::Bytes;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqliteConnection, SqlitePool};
use tokio::sync::{mpsc, oneshot};

use super::{InsertOutcome, LEADERSHIP_KINDS, LogMeta, LogStore, ReadRows, checksum_from_db, kind_from_db, to_i64};
use crate::chain::{Checksum, GENESIS};
use crate::entry::{Entry, Head};
use crate::error::LogError;
use crate::notify::Tails;

/// Rows per INSERT statement: 9 bound values per row stays well under SQLite's 32,766
/// parameter limit.
const ROWS_PER_STATEMENT: usize = 1_000;

/// Entries deleted per transaction by a truncation.
const DELETE_CHUNK: i64 = 1_000;

#[derive(Clone)]
pub struct SqliteStore {
    writer: SqlitePool,
    readers: SqlitePool,
    jobs: mpsc::UnboundedSender<Job>,
}

/// One conditional append, queued for the group-commit writer.
struct Job {
    log: String,
    prev_id: i64,
    prev_checksum: Checksum,
    ts_ms: i64,
    rows: Vec<Entry>,
    reply: oneshot::Sender<Result<InsertOutcome, LogError>>,
}

/// Most appends one transaction (one fsync) carries.
const GROUP_MAX_JOBS: usize = 256;
const GROUP_MAX_ROWS: usize = 50_000;

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
        let writer = SqlitePoolOptions::new()
            .after_connect(|conn, _| Box::pin(super::sqlite_config::stable_plans(conn)))
            .max_connections(1)
            .acquire_timeout(Duration::from_secs(3600))
            .connect_with(opts.clone())
            .await
            .map_err(db_err)?;
        sqlx::migrate!("../migrations/sqlite").run(&writer).await.map_err(|e| LogError::Internal(format!("sqlite migrations: {e}")))?;
        let readers = SqlitePoolOptions::new()
            .after_connect(|conn, _| Box::pin(super::sqlite_config::stable_plans(conn)))
            .max_connections(4)
            .connect_with(opts.read_only(true))
            .await
            .map_err(db_err)?;
        let (jobs, rx) = mpsc::unbounded_channel();
        tokio::spawn(group_writer(writer.clone(), rx));
        Ok(SqliteStore { writer, readers, jobs })
    }

    /// Runs raw SQL against the database. Test and operator hook (e.g. the tamper test).
    pub async fn execute_raw(&self, sql: &str) -> Result<u64, LogError> {
        let r = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned())).execute(&self.writer).await.map_err(db_err)?;
        Ok(r.rows_affected())
    }

    /// Deletes the entries of `log` below `upto` in one transaction that commits without an
    /// fsync (`synchronous = NORMAL`), so it holds the write lock, which every append
    /// needs, for the DELETE alone and not for a disk flush. Nothing depends on a
    /// truncation being durable: one lost to a crash leaves entries a snapshot already
    /// covers, and the next truncation removes them; the WAL is sequential, so the next
    /// append's fsync makes it durable anyway. The connection is back to FULL before anyone
    /// else uses it, or it is closed.
    async fn delete_chunk(&self, log: &str, upto: i64) -> Result<u64, LogError> {
        let mut conn = self.writer.acquire().await.map_err(db_err)?;
        exec(&mut conn, "PRAGMA synchronous = NORMAL").await?;
        let r = sqlx::query("DELETE FROM entries WHERE log = ? AND id < ?").bind(log).bind(upto).execute(&mut *conn).await.map_err(db_err);
        if let Err(e) = exec(&mut conn, "PRAGMA synchronous = FULL").await {
            // Never hand a connection that does not fsync its commits to an append.
            let _ = conn.close().await;
            return Err(e);
        }
        Ok(r?.rows_affected())
    }

    fn push_rows(qb: &mut sqlx::QueryBuilder<sqlx::Sqlite>, log: &str, ts_ms: i64, rows: &[Entry]) -> Result<(), LogError> {
        let mut vals: Vec<(i64, i64, i64, i64, i64, Bytes, Checksum)> = Vec::with_capacity(rows.len());
        for e in rows {
            vals.push((
                to_i64(e.id, "id")?,
                to_i64(e.prev_id, "prev_id")?,
                to_i64(e.epoch, "epoch")?,
                e.kind as i64,
                e.format as i64,
                e.payload.clone(),
                e.checksum,
            ));
        }
        qb.push_values(vals, |mut b, (id, prev, epoch, kind, format, payload, sum)| {
            b.push_bind(log.to_owned())
                .push_bind(id)
                .push_bind(prev)
                .push_bind(epoch)
                .push_bind(kind)
                .push_bind(format)
                .push_bind(payload.to_vec())
                .push_bind(sum.0.to_vec())
                .push_bind(ts_ms);
        });
        Ok(())
    }
}

/// Group commit: SQLite has one writer and pays one fsync per transaction, so every append
/// queued while the previous transaction committed goes into the next one. Each append
/// runs under its own SAVEPOINT, so one append's conflict never touches another's rows,
/// and a later append to the same log sees the earlier one's rows (as if sequential).
async fn group_writer(pool: SqlitePool, mut rx: mpsc::UnboundedReceiver<Job>) {
    while let Some(first) = rx.recv().await {
        let mut rows = first.rows.len();
        let mut group = vec![first];
        while group.len() < GROUP_MAX_JOBS && rows < GROUP_MAX_ROWS {
            match rx.try_recv() {
                Ok(j) => {
                    rows += j.rows.len();
                    group.push(j);
                }
                Err(_) => break,
            }
        }
        metrics::histogram!("memoria_log_sqlite_group_appends_entries").record(group.len() as f64);
        match run_group(&pool, &group).await {
            Ok(outcomes) => {
                for (job, outcome) in group.into_iter().zip(outcomes) {
                    let _ = job.reply.send(outcome);
                }
            }
            Err(e) => {
                for job in group {
                    let _ = job.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

async fn exec(conn: &mut SqliteConnection, sql: &'static str) -> Result<(), LogError> {
    sqlx::query(sql).execute(conn).await.map(|_| ()).map_err(db_err)
}

/// Runs a group in one transaction. The outer error means nothing was committed.
async fn run_group(pool: &SqlitePool, group: &[Job]) -> Result<Vec<Result<InsertOutcome, LogError>>, LogError> {
    let mut conn = pool.acquire().await.map_err(db_err)?;
    // IMMEDIATE: take the write lock now, so a second process waits here (busy_timeout)
    // rather than failing mid-transaction.
    exec(&mut conn, "BEGIN IMMEDIATE").await?;
    if let [job] = group {
        // One append (the usual case: a shard has one in flight): the transaction is its
        // own savepoint, which saves two statements, each a hop to SQLite's worker thread.
        let r = insert_one(&mut conn, job).await;
        let end = if matches!(r, Ok(InsertOutcome::Inserted)) { "COMMIT" } else { "ROLLBACK" };
        if let Err(e) = exec(&mut conn, end).await {
            let _ = exec(&mut conn, "ROLLBACK").await;
            return Err(e);
        }
        return match r {
            Err(e @ (LogError::Internal(_) | LogError::Unavailable(_))) => Err(e),
            r => Ok(vec![r]),
        };
    }
    let mut out = Vec::with_capacity(group.len());
    for job in group {
        if let Err(e) = exec(&mut conn, "SAVEPOINT append").await {
            let _ = exec(&mut conn, "ROLLBACK").await;
            return Err(e);
        }
        let r = insert_one(&mut conn, job).await;
        let undo = !matches!(r, Ok(InsertOutcome::Inserted));
        let step = async {
            if undo {
                exec(&mut conn, "ROLLBACK TO append").await?;
            }
            exec(&mut conn, "RELEASE append").await
        }
        .await;
        match (&r, step) {
            (Err(LogError::Internal(_) | LogError::Unavailable(_)), _) | (_, Err(_)) => {
                let _ = exec(&mut conn, "ROLLBACK").await;
                return Err(r.err().unwrap_or_else(|| LogError::Internal("savepoint failed".into())));
            }
            _ => out.push(r),
        }
    }
    if let Err(e) = exec(&mut conn, "COMMIT").await {
        let _ = exec(&mut conn, "ROLLBACK").await;
        return Err(e);
    }
    Ok(out)
}

/// The conditional append of one job inside the group's transaction.
async fn insert_one(conn: &mut SqliteConnection, job: &Job) -> Result<InsertOutcome, LogError> {
    let log = job.log.as_str();
    let mut first = true;
    for chunk in job.rows.chunks(ROWS_PER_STATEMENT) {
        let mut qb = sqlx::QueryBuilder::new("INSERT INTO entries (log, id, prev_id, epoch, kind, format, payload, checksum, ts_ms) SELECT * FROM (");
        SqliteStore::push_rows(&mut qb, log, job.ts_ms, chunk)?;
        qb.push(")");
        if first {
            // The condition lives in the same statement as the insert: the primary key is
            // the arbiter; the WHERE rejects a prev_id that is not a stored entry with the
            // expected checksum and an epoch no higher than ours (or a non-empty log for
            // prev_id 0).
            if job.prev_id == 0 {
                qb.push(" WHERE NOT EXISTS (SELECT 1 FROM entries WHERE log = ").push_bind(log.to_owned()).push(")");
            } else {
                qb.push(" WHERE EXISTS (SELECT 1 FROM entries WHERE log = ")
                    .push_bind(log.to_owned())
                    .push(" AND id = ")
                    .push_bind(job.prev_id)
                    .push(" AND checksum = ")
                    .push_bind(job.prev_checksum.0.to_vec())
                    .push(" AND epoch <= ")
                    .push_bind(job.rows.first().map(|e| e.epoch as i64).unwrap_or(0))
                    .push(")");
            }
        }
        match qb.build().execute(&mut *conn).await {
            Ok(r) if r.rows_affected() == chunk.len() as u64 => {}
            Ok(_) => {
                let exists = sqlx::query("SELECT 1 FROM logs WHERE name = ?").bind(log).fetch_optional(&mut *conn).await.map_err(db_err)?;
                if exists.is_none() {
                    return Err(LogError::NotFound(log.to_owned()));
                }
                return Ok(InsertOutcome::PrevMissing);
            }
            Err(sqlx::Error::Database(d)) if d.kind() == sqlx::error::ErrorKind::UniqueViolation => return Ok(InsertOutcome::Taken),
            Err(sqlx::Error::Database(d)) if d.kind() == sqlx::error::ErrorKind::ForeignKeyViolation => {
                return Err(LogError::NotFound(log.to_owned()));
            }
            Err(e) => return Err(db_err(e)),
        }
        first = false;
    }
    Ok(InsertOutcome::Inserted)
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
        let r = sqlx::query("INSERT INTO logs (name, created_ms) VALUES (?, ?) ON CONFLICT (name) DO NOTHING")
            .bind(log)
            .bind(now)
            .execute(&self.writer)
            .await
            .map_err(db_err)?;
        Ok(r.rows_affected() == 1)
    }

    async fn insert(&self, log: &str, prev_id: u64, prev_checksum: &Checksum, ts_ms: i64, rows: &[Entry]) -> Result<InsertOutcome, LogError> {
        let (reply, rx) = oneshot::channel();
        let job = Job { log: log.to_owned(), prev_id: to_i64(prev_id, "prev_id")?, prev_checksum: *prev_checksum, ts_ms, rows: rows.to_vec(), reply };
        self.jobs.send(job).map_err(|_| LogError::Unavailable("sqlite writer stopped".into()))?;
        rx.await.map_err(|_| LogError::Unavailable("sqlite writer stopped".into()))?
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
        let r = sqlx::query(
            "SELECT id, prev_id, epoch, kind, format, payload, checksum, ts_ms FROM entries \
             WHERE log = ? AND kind IN (?, ?) ORDER BY id DESC LIMIT 1",
        )
        .bind(log)
        .bind(LEADERSHIP_KINDS.0)
        .bind(LEADERSHIP_KINDS.1)
        .fetch_optional(&self.readers)
        .await
        .map_err(db_err)?;
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
        let r: Option<i64> = sqlx::query_scalar("UPDATE logs SET snapshot_id = max(snapshot_id, ?) WHERE name = ? RETURNING snapshot_id")
            .bind(id)
            .bind(log)
            .fetch_optional(&self.writer)
            .await
            .map_err(db_err)?;
        r.map(|v| v as u64).ok_or_else(|| LogError::NotFound(log.to_owned()))
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

#[cfg(test)]
mod tests {
    use super::*;

    async fn synchronous(store: &SqliteStore) -> i64 {
        sqlx::query_scalar("PRAGMA synchronous").fetch_one(&store.writer).await.unwrap()
    }

    async fn qpsg(pool: &SqlitePool) -> bool {
        let mut conn = pool.acquire().await.unwrap();
        super::super::sqlite_config::has_stable_plans(&mut conn).await.unwrap()
    }

    #[tokio::test]
    async fn every_connection_plans_its_statements_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("log.sqlite")).await.unwrap();
        assert!(qpsg(&store.writer).await);
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
