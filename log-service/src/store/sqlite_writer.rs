//! The one writer connection of a SQLite log, on its own OS thread, which also runs an
//! event loop of its own (a current-thread runtime) for the log's hot callers.
//!
//! Why a thread and not sqlx: every sqlx statement is a hand-over to sqlx's worker thread
//! and back, and an append is four of them (BEGIN, INSERT, COMMIT, plus the group's
//! bookkeeping). On a loaded 2-core machine those wake-ups, not SQLite, were most of the
//! log service's CPU per write. Here everything of an append, the fsync included, runs on
//! this thread with cached statements.
//!
//! Why an event loop on it: the nodes' appends and tail reads arrive on the local socket
//! (local_socket.rs), whose connections are served on this thread's loop
//! ([`Writer::runtime`]). An append from there reaches the commit and its answer reaches
//! the socket without leaving the thread, and the replica's long poll is woken here too:
//! no thread hand-over per append at all (there were two, plus a wake of the service's
//! main loop for the tail). The commit blocks this loop, and only it: nothing else runs
//! here. Callers on other runtimes (HTTP) send to it and are answered across threads.
//!
//! Every write to the file goes through here (appends, log creation, snapshot marks,
//! truncation), so this process never races itself for SQLite's write lock: only another
//! process can make it wait (busy timeout).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use tokio::sync::{mpsc, oneshot};

use super::InsertOutcome;
use crate::chain::Checksum;
use crate::entry::Entry;
use crate::error::LogError;

/// Most appends one transaction (one fsync) carries.
const GROUP_MAX_JOBS: usize = 256;
const GROUP_MAX_ROWS: usize = 50_000;

/// How long a write waits for another process's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// One conditional append, queued for the group commit.
pub(crate) struct Job {
    pub log: String,
    pub prev_id: i64,
    pub prev_checksum: Checksum,
    pub ts_ms: i64,
    pub rows: Vec<Entry>,
}

type Reply = oneshot::Sender<Result<InsertOutcome, LogError>>;

type Call = Box<dyn FnOnce(&mut Connection) + Send>;

enum Work {
    Append(Job, Reply),
    /// Anything else that writes, run alone between groups.
    Call(Call),
}

/// The handle: cloning it shares the thread, which ends when the last handle goes.
#[derive(Clone)]
pub(crate) struct Writer {
    work: mpsc::UnboundedSender<Work>,
    runtime: tokio::runtime::Handle,
}

fn stopped() -> LogError {
    LogError::Unavailable("sqlite writer stopped".into())
}

impl Writer {
    /// Opens the writer connection on `path` (already migrated) and starts its thread.
    pub(crate) fn start(path: &Path) -> Result<Writer, LogError> {
        let conn = open(path)?;
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| LogError::Internal(format!("sqlite writer runtime: {e}")))?;
        let handle = runtime.handle().clone();
        let (work, rx) = mpsc::unbounded_channel();
        let path = path.to_owned();
        let pause = PausePoints::from_env();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            // The loop ends with the last handle; tasks spawned on it end with it.
            .spawn(move || runtime.block_on(run(conn, path, rx, &pause)))
            .map_err(|e| LogError::Internal(format!("sqlite writer thread: {e}")))?;
        Ok(Writer { work, runtime: handle })
    }

    /// The writer thread's event loop: what runs here reaches the commit without a thread
    /// hand-over. Only non-blocking work belongs on it (the commit is its one blocking
    /// step).
    pub(crate) fn runtime(&self) -> &tokio::runtime::Handle {
        &self.runtime
    }

    pub(crate) async fn append(&self, job: Job) -> Result<InsertOutcome, LogError> {
        let (reply, rx) = oneshot::channel();
        self.work.send(Work::Append(job, reply)).map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }

    /// Runs `f` on the writer connection, outside any transaction.
    pub(crate) async fn call<T, F>(&self, f: F) -> Result<T, LogError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, LogError> + Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        let call: Call = Box::new(move |conn| {
            let _ = reply.send(f(conn));
        });
        self.work.send(Work::Call(call)).map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }
}

/// The connection settings every writer has: WAL, a commit is fsynced (FULL), foreign
/// keys enforced (a missing log fails the insert), statements planned once (QPSG, see
/// sqlite_config.rs), SQLite's default autocheckpoint.
fn open(path: &Path) -> Result<Connection, LogError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(sql_err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql_err)?;
    conn.pragma_update(None, "journal_mode", "wal").map_err(sql_err)?;
    conn.pragma_update(None, "synchronous", "FULL").map_err(sql_err)?;
    conn.pragma_update(None, "foreign_keys", "ON").map_err(sql_err)?;
    if !conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map_err(sql_err)? {
        return Err(LogError::Internal("sqlite: the query planner stability guarantee did not turn on".into()));
    }
    Ok(conn)
}

/// A test hook, inert unless `MEMORIA_TEST_APPEND_PAUSE` names a directory: at a named
/// point of an append, if the test created `<dir>/arm-<point>`, it becomes
/// `<dir>/at-<point>-<pid>` and this thread stops there for good (holding whatever it
/// holds), so the test can kill -9 the process at a known moment of the append.
struct PausePoints(Option<PathBuf>);

impl PausePoints {
    fn from_env() -> PausePoints {
        PausePoints(std::env::var_os("MEMORIA_TEST_APPEND_PAUSE").map(PathBuf::from))
    }

    fn at(&self, point: &str) {
        let Some(dir) = &self.0 else { return };
        let at = dir.join(format!("at-{point}-{}", std::process::id()));
        if std::fs::rename(dir.join(format!("arm-{point}")), at).is_ok() {
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
    }
}

async fn run(mut conn: Connection, path: PathBuf, mut rx: mpsc::UnboundedReceiver<Work>, pause: &PausePoints) {
    let mut next = None;
    loop {
        let first = match next.take() {
            Some(w) => w,
            // Waiting here lets the loop's other tasks run: a socket's appends are queued
            // by its connection's task, so what arrived together commits together.
            None => match rx.recv().await {
                Some(w) => w,
                None => return,
            },
        };
        let first = match first {
            Work::Call(call) => {
                call(&mut conn);
                if !fsyncs(&conn) {
                    // A call left the connection not fsyncing its commits (a truncation
                    // that could not restore FULL, or raw SQL): never append through it.
                    match open(&path) {
                        Ok(c) => conn = c,
                        Err(e) => {
                            tracing::error!(error = %e, "sqlite writer: cannot reopen its connection; appends stop");
                            return;
                        }
                    }
                }
                continue;
            }
            Work::Append(job, reply) => (job, reply),
        };
        let mut rows = first.0.rows.len();
        let (mut group, mut replies) = (vec![first.0], vec![first.1]);
        while group.len() < GROUP_MAX_JOBS && rows < GROUP_MAX_ROWS {
            match rx.try_recv() {
                Ok(Work::Append(j, r)) => {
                    rows += j.rows.len();
                    group.push(j);
                    replies.push(r);
                }
                Ok(call) => {
                    next = Some(call);
                    break;
                }
                Err(_) => break,
            }
        }
        metrics::histogram!("memoria_log_sqlite_group_appends_entries").record(group.len() as f64);
        match run_group(&conn, &group, pause) {
            Ok(outcomes) => {
                for (reply, outcome) in replies.into_iter().zip(outcomes) {
                    let _ = reply.send(outcome);
                }
            }
            Err(e) => {
                for reply in replies {
                    let _ = reply.send(Err(e.clone()));
                }
            }
        }
        // The answers go out (their tasks run) before the next commit starts. With nothing
        // queued, waiting in `recv` lets them run; a yield then would cost a turn.
        if !rx.is_empty() {
            tokio::task::yield_now().await;
        }
    }
}

fn fsyncs(conn: &Connection) -> bool {
    conn.pragma_query_value(None, "synchronous", |r| r.get::<_, i64>(0)).is_ok_and(|v| v == 2)
}

/// Runs one of the group's fixed statements, prepared once per connection.
fn exec(conn: &Connection, sql: &str) -> Result<(), LogError> {
    conn.prepare_cached(sql).and_then(|mut s| s.execute([])).map(|_| ()).map_err(sql_err)
}

/// Group commit: SQLite has one writer and pays one fsync per transaction, so every append
/// queued while the previous transaction committed goes into the next one. Each append
/// runs under its own SAVEPOINT, so one append's conflict never touches another's rows,
/// and a later append to the same log sees the earlier one's rows (as if sequential).
/// The outer error means nothing was committed.
fn run_group(conn: &Connection, group: &[Job], pause: &PausePoints) -> Result<Vec<Result<InsertOutcome, LogError>>, LogError> {
    // IMMEDIATE: take the write lock now, so a second process waits here (busy timeout)
    // rather than failing mid-transaction.
    exec(conn, "BEGIN IMMEDIATE")?;
    let result = (|| {
        if let [job] = group {
            // One append (the usual case: a shard has one in flight): the transaction is
            // its own savepoint.
            let r = insert_one(conn, job);
            return match r {
                Err(e @ (LogError::Internal(_) | LogError::Unavailable(_))) => Err(e),
                r => Ok(vec![r]),
            };
        }
        let mut out = Vec::with_capacity(group.len());
        for job in group {
            exec(conn, "SAVEPOINT append")?;
            let r = insert_one(conn, job);
            if let Err(e @ (LogError::Internal(_) | LogError::Unavailable(_))) = r {
                return Err(e);
            }
            if !matches!(r, Ok(InsertOutcome::Inserted)) {
                exec(conn, "ROLLBACK TO append")?;
            }
            exec(conn, "RELEASE append")?;
            out.push(r);
        }
        Ok(out)
    })();
    let end = match &result {
        Ok(outs) if outs.iter().any(|r| matches!(r, Ok(InsertOutcome::Inserted))) => "COMMIT",
        _ => "ROLLBACK",
    };
    if end == "COMMIT" {
        // Rows written, write lock held, nothing committed or fsynced.
        pause.at("in-txn");
    }
    if let Err(e) = exec(conn, end) {
        let _ = exec(conn, "ROLLBACK");
        return Err(e);
    }
    if end == "COMMIT" {
        // Durable, and no one told yet.
        pause.at("after-commit");
    }
    result
}

/// The conditional append of one job inside the group's transaction. The transaction
/// holds the write lock, so the check and the inserts see and change one state; the
/// primary key stays the arbiter of a taken id.
fn insert_one(conn: &Connection, job: &Job) -> Result<InsertOutcome, LogError> {
    let Some(first) = job.rows.first() else { return Ok(InsertOutcome::Inserted) };
    let log = job.log.as_str();
    // `prev_id` must be a stored entry with the expected checksum and an epoch no higher
    // than ours, or, for 0, the log must be empty.
    let prev_ok = if job.prev_id == 0 {
        let mut q = conn.prepare_cached("SELECT 1 FROM entries WHERE log = ?1 LIMIT 1").map_err(sql_err)?;
        !q.exists(params![log]).map_err(sql_err)?
    } else {
        let mut q = conn.prepare_cached("SELECT 1 FROM entries WHERE log = ?1 AND id = ?2 AND checksum = ?3 AND epoch <= ?4").map_err(sql_err)?;
        q.exists(params![log, job.prev_id, &job.prev_checksum.0[..], first.epoch as i64]).map_err(sql_err)?
    };
    if !prev_ok {
        let mut q = conn.prepare_cached("SELECT 1 FROM logs WHERE name = ?1").map_err(sql_err)?;
        let exists = q.query_row(params![log], |_| Ok(())).optional().map_err(sql_err)?.is_some();
        return if exists { Ok(InsertOutcome::PrevMissing) } else { Err(LogError::NotFound(log.to_owned())) };
    }
    let mut insert = conn
        .prepare_cached("INSERT INTO entries (log, id, prev_id, epoch, kind, format, payload, checksum, ts_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
        .map_err(sql_err)?;
    for e in &job.rows {
        let id = super::to_i64(e.id, "id")?;
        let prev = super::to_i64(e.prev_id, "prev_id")?;
        let epoch = super::to_i64(e.epoch, "epoch")?;
        let r = insert.execute(params![log, id, prev, epoch, e.kind as i64, e.format as i64, &e.payload[..], &e.checksum.0[..], job.ts_ms]);
        match r {
            Ok(_) => {}
            Err(rusqlite::Error::SqliteFailure(f, _))
                if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY || f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE =>
            {
                return Ok(InsertOutcome::Taken);
            }
            Err(rusqlite::Error::SqliteFailure(f, _)) if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY => {
                return Err(LogError::NotFound(log.to_owned()));
            }
            Err(e) => return Err(sql_err(e)),
        }
    }
    Ok(InsertOutcome::Inserted)
}

pub(crate) fn sql_err(e: rusqlite::Error) -> LogError {
    LogError::Internal(format!("sqlite: {e}"))
}
