//! PostgreSQL backend: the production shape (one primary, synchronous quorum standbys).
//!
//! sqlx cannot connect to multi-host URLs, so this backend takes a list of hosts and finds
//! the writable primary itself (`pg_is_in_recovery()` = false). A connection-level failure
//! or a read-only error drops the pool; the next call rediscovers the primary, which is how
//! the service follows a failover. Statements are never given a timeout: a cancelled
//! append waiting for synchronous replication would commit locally anyway.

use std::sync::Arc;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool, Row};
use tokio::sync::{Mutex, RwLock, mpsc};

use super::{InsertOutcome, LogMeta, LogStore, ReadRows, checksum_from_db, kind_from_db, leadership_sql, to_i64};
use crate::chain::{Checksum, GENESIS};
use crate::entry::{Entry, Head};
use crate::error::LogError;
use crate::notify::Tails;

/// The NOTIFY channel shared by all service instances.
pub const CHANNEL: &str = "memoria_log";

#[derive(Clone, Debug)]
pub struct PgConfig {
    /// `host:port` of every PostgreSQL instance that may become primary.
    pub hosts: Vec<String>,
    pub user: String,
    pub password: Option<String>,
    pub database: String,
    pub max_connections: u32,
    /// How long to wait for one host to answer during discovery.
    pub connect_timeout: Duration,
}

impl PgConfig {
    pub fn new(hosts: Vec<String>, user: &str, database: &str) -> Self {
        PgConfig { hosts, user: user.to_owned(), password: None, database: database.to_owned(), max_connections: 32, connect_timeout: Duration::from_secs(2) }
    }

    fn options_for(&self, host: &str) -> Result<PgConnectOptions, LogError> {
        let (h, p) = match host.rsplit_once(':') {
            Some((h, p)) => (h, p.parse::<u16>().map_err(|_| LogError::Invalid(format!("bad port in {host}")))?),
            None => (host, 5432),
        };
        let mut o = PgConnectOptions::new_without_pgpass().host(h).port(p).username(&self.user).database(&self.database).application_name("memoria-log");
        if let Some(pw) = &self.password {
            o = o.password(pw);
        }
        Ok(o)
    }
}

/// The pool for the primary currently in use, with a generation so that a failure seen on
/// an old pool does not throw away a newer one.
struct Current {
    pool: PgPool,
    opts: PgConnectOptions,
    host: String,
    generation: u64,
}

struct Inner {
    cfg: PgConfig,
    current: RwLock<Option<Arc<Current>>>,
    /// Serialises discovery so a failover does not trigger one probe storm per request.
    discovering: Mutex<u64>,
    announce_tx: mpsc::UnboundedSender<(String, u64)>,
    announce_rx: std::sync::Mutex<Option<mpsc::UnboundedReceiver<(String, u64)>>>,
}

#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

impl PgStore {
    /// Finds the primary, applies migrations and starts the NOTIFY sender.
    pub async fn connect(cfg: PgConfig) -> Result<PgStore, LogError> {
        if cfg.hosts.is_empty() {
            return Err(LogError::Invalid("no PostgreSQL hosts given".into()));
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let store = PgStore {
            inner: Arc::new(Inner {
                cfg,
                current: RwLock::new(None),
                discovering: Mutex::new(0),
                announce_tx: tx,
                announce_rx: std::sync::Mutex::new(Some(rx)),
            }),
        };
        store.current().await?;
        Ok(store)
    }

    /// The host currently used as primary, if connected.
    pub async fn primary_host(&self) -> Option<String> {
        self.inner.current.read().await.as_ref().map(|c| c.host.clone())
    }

    async fn current(&self) -> Result<Arc<Current>, LogError> {
        if let Some(c) = self.inner.current.read().await.as_ref() {
            return Ok(c.clone());
        }
        let mut generation = self.inner.discovering.lock().await;
        if let Some(c) = self.inner.current.read().await.as_ref() {
            return Ok(c.clone());
        }
        let mut last_err = String::from("no host answered");
        for host in &self.inner.cfg.hosts {
            match self.probe(host).await {
                Ok(Some(opts)) => {
                    let pool = PgPoolOptions::new()
                        .max_connections(self.inner.cfg.max_connections)
                        .acquire_timeout(Duration::from_secs(10))
                        // No ping per acquire (it costs a round trip per append); a dead
                        // connection fails its statement and retires the whole pool.
                        .test_before_acquire(false)
                        .connect_with(opts.clone())
                        .await
                        .map_err(|e| LogError::Unavailable(format!("{host}: {e}")))?;
                    sqlx::migrate!("../migrations/postgres").run(&pool).await.map_err(|e| LogError::Unavailable(format!("migrations on {host}: {e}")))?;
                    *generation += 1;
                    let c = Arc::new(Current { pool, opts, host: host.clone(), generation: *generation });
                    tracing::info!(host = %host, generation = *generation, "using PostgreSQL primary");
                    *self.inner.current.write().await = Some(c.clone());
                    return Ok(c);
                }
                Ok(None) => last_err = format!("{host} is in recovery (standby)"),
                Err(e) => last_err = format!("{host}: {e}"),
            }
        }
        Err(LogError::Unavailable(format!("no writable PostgreSQL primary: {last_err}")))
    }

    /// `Some(options)` when `host` answers and is not in recovery.
    async fn probe(&self, host: &str) -> Result<Option<PgConnectOptions>, LogError> {
        let opts = self.inner.cfg.options_for(host)?;
        let fut = async {
            let mut conn = PgConnection::connect_with(&opts).await?;
            let in_recovery: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()").fetch_one(&mut conn).await?;
            let _ = conn.close().await;
            Ok::<bool, sqlx::Error>(in_recovery)
        };
        // Dropping a probe is harmless (it writes nothing); the timeout keeps a blackholed
        // host from stalling discovery.
        match tokio::time::timeout(self.inner.cfg.connect_timeout, fut).await {
            Ok(Ok(false)) => Ok(Some(opts)),
            Ok(Ok(true)) => Ok(None),
            Ok(Err(e)) => Err(LogError::Unavailable(e.to_string())),
            Err(_) => Err(LogError::Unavailable("connect timed out".into())),
        }
    }

    /// Maps an error; a connection-level one also retires the pool it came from.
    async fn fail(&self, c: &Current, e: sqlx::Error) -> LogError {
        let retire = match &e {
            sqlx::Error::Io(_) | sqlx::Error::PoolClosed | sqlx::Error::Protocol(_) | sqlx::Error::Tls(_) => true,
            // Every connection busy (appends waiting on the standbys) is load, not failure;
            // a pool that could not even fill itself cannot reach its host.
            sqlx::Error::PoolTimedOut => c.pool.size() < self.inner.cfg.max_connections,
            sqlx::Error::Database(d) => {
                let code = d.code().map(|c| c.into_owned()).unwrap_or_default();
                // 25006 read-only transaction (we reached a standby), 57P0x shutdown,
                // 08xxx connection exceptions.
                code == "25006" || code.starts_with("57P") || code.starts_with("08")
            }
            _ => false,
        };
        if !retire {
            return LogError::Internal(e.to_string());
        }
        let mut cur = self.inner.current.write().await;
        if cur.as_ref().is_some_and(|x| x.generation == c.generation) {
            tracing::warn!(host = %c.host, error = %e, "PostgreSQL primary lost; will rediscover");
            *cur = None;
            let pool = c.pool.clone();
            tokio::spawn(async move { pool.close().await });
        }
        LogError::Unavailable(format!("{}: {e}", c.host))
    }

    /// Runs raw SQL on the primary. Test and operator hook (e.g. the tamper test).
    pub async fn execute_raw(&self, sql: &str) -> Result<u64, LogError> {
        let c = self.current().await?;
        match sqlx::query(sqlx::AssertSqlSafe(sql.to_owned())).execute(&c.pool).await {
            Ok(r) => Ok(r.rows_affected()),
            Err(e) => Err(self.fail(&c, e).await),
        }
    }

    /// Sends NOTIFYs after commit from its own connection, with synchronous_commit=off so a
    /// notification never waits for the standbys. Bursts are coalesced per log.
    async fn announcer(self, mut rx: mpsc::UnboundedReceiver<(String, u64)>) {
        let mut conn: Option<(u64, PgConnection)> = None;
        while let Some((log, id)) = rx.recv().await {
            let mut latest = std::collections::HashMap::new();
            latest.insert(log, id);
            while let Ok((log, id)) = rx.try_recv() {
                let e = latest.entry(log).or_insert(0);
                *e = (*e).max(id);
            }
            let payloads: Vec<String> = latest.into_iter().map(|(l, i)| format!("{l}:{i}")).collect();
            let Ok(c) = self.current().await else { continue };
            if conn.as_ref().is_none_or(|(g, _)| *g != c.generation) {
                let opts = c.opts.clone().options([("synchronous_commit", "off")]);
                match PgConnection::connect_with(&opts).await {
                    Ok(x) => conn = Some((c.generation, x)),
                    Err(e) => {
                        tracing::debug!(error = %e, "notify connection failed; readers fall back to polling");
                        continue;
                    }
                }
            }
            if let Some((_, x)) = conn.as_mut() {
                let r = sqlx::query("SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p").bind(CHANNEL).bind(&payloads).execute(&mut *x).await;
                if let Err(e) = r {
                    tracing::debug!(error = %e, "NOTIFY failed; readers fall back to polling");
                    conn = None;
                }
            }
        }
    }

    /// LISTENs on the primary and feeds other instances' appends into `tails`; follows
    /// failovers by reconnecting through discovery. Only while a reader here waits on a
    /// log appended through another instance: every listening instance is woken by every
    /// append of every instance, which cost ~1 us of CPU per SET across PostgreSQL and the
    /// services (three-AZ shape, 500 clients, pipeline 1) when all three listened. The
    /// safety-net poll (`CoreOptions::poll_interval`) bounds what a missed wake costs.
    async fn listener(self, tails: Tails) {
        loop {
            tails.until_waiting_on_others().await;
            let c = match self.current().await {
                Ok(c) => c,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            let mut l = match PgListener::connect_with(&c.pool).await {
                Ok(l) => l,
                Err(e) => {
                    let _ = self.fail(&c, e).await;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            if let Err(e) = l.listen(CHANNEL).await {
                let _ = self.fail(&c, e).await;
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            // Appends committed before the LISTEN took effect were announced to nobody
            // here: the readers look in the store again.
            tails.poke();
            let mut idle_since: Option<Instant> = None;
            loop {
                match l.try_recv().await {
                    Ok(Some(n)) => {
                        if let Some((log, id)) = n.payload().rsplit_once(':')
                            && let Ok(id) = id.parse::<u64>()
                        {
                            tails.advance(log, id);
                            metrics::counter!("memoria_log_notify_received_total").increment(1);
                        }
                        // Checked as notifications come: with none coming, listening costs
                        // nothing.
                        if tails.waits_on_others(Instant::now()) {
                            idle_since = None;
                        } else if idle_since.get_or_insert_with(Instant::now).elapsed() >= LISTEN_IDLE {
                            let _ = l.unlisten_all().await;
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        let _ = self.fail(&c, e).await;
                        break;
                    }
                }
            }
            drop(l);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// How long a listener keeps listening with no reader waiting on others: a replica's
/// long-polls leave short gaps between them, and each new LISTEN costs a connection and a
/// poke.
const LISTEN_IDLE: Duration = Duration::from_secs(10);

fn row_to_entry(log: &str, r: &sqlx::postgres::PgRow) -> Result<Entry, sqlx::Error> {
    let id: i64 = r.try_get("id")?;
    let prev_id: i64 = r.try_get("prev_id")?;
    let epoch: i64 = r.try_get("epoch")?;
    let kind: i16 = r.try_get("kind")?;
    let format: i32 = r.try_get("format")?;
    let payload: Vec<u8> = r.try_get("payload")?;
    let sum: Vec<u8> = r.try_get("checksum")?;
    let corrupt = |e: LogError| sqlx::Error::Decode(Box::new(e));
    Ok(Entry {
        id: id as u64,
        prev_id: prev_id as u64,
        epoch: epoch as u64,
        kind: kind_from_db(log, id, kind as i64).map_err(corrupt)?,
        format: u16::try_from(format).map_err(|_| corrupt(LogError::Corrupt { log: log.to_owned(), id: id as u64 }))?,
        payload: payload.into(),
        checksum: checksum_from_db(log, id, &sum).map_err(corrupt)?,
    })
}

/// Turns a decode failure that carries a `LogError::Corrupt` back into it.
fn unwrap_corrupt(e: sqlx::Error) -> Result<LogError, sqlx::Error> {
    if let sqlx::Error::Decode(inner) = &e
        && let Some(le) = inner.downcast_ref::<LogError>()
    {
        return Ok(le.clone());
    }
    Err(e)
}

const INSERT_SQL: &str = "\
INSERT INTO entries (log, id, prev_id, epoch, kind, format, payload, checksum, ts_ms)
SELECT $1, $2::bigint + t.ord, $2::bigint + t.ord - 1, $3, t.kind, t.format, t.payload, t.checksum, $4
FROM UNNEST($5::smallint[], $6::int[], $7::bytea[], $8::bytea[]) WITH ORDINALITY AS t(kind, format, payload, checksum, ord)
WHERE CASE WHEN $2::bigint = 0
           THEN NOT EXISTS (SELECT 1 FROM entries WHERE log = $1)
           ELSE EXISTS (SELECT 1 FROM entries WHERE log = $1 AND id = $2 AND checksum = $9 AND epoch <= $3)
      END";

impl LogStore for PgStore {
    async fn create_log(&self, log: &str) -> Result<bool, LogError> {
        let c = self.current().await?;
        match sqlx::query("INSERT INTO logs (name) VALUES ($1) ON CONFLICT (name) DO NOTHING").bind(log).execute(&c.pool).await {
            Ok(r) => Ok(r.rows_affected() == 1),
            Err(e) => Err(self.fail(&c, e).await),
        }
    }

    async fn insert(&self, log: &str, prev_id: u64, prev_checksum: &Checksum, ts_ms: i64, rows: &[Entry]) -> Result<InsertOutcome, LogError> {
        let prev = to_i64(prev_id, "prev_id")?;
        let epoch = to_i64(rows.first().map(|e| e.epoch).unwrap_or(0), "epoch")?;
        to_i64(prev_id + rows.len() as u64, "last id")?;
        let kinds: Vec<i16> = rows.iter().map(|e| e.kind as i16).collect();
        let formats: Vec<i32> = rows.iter().map(|e| e.format as i32).collect();
        let payloads: Vec<&[u8]> = rows.iter().map(|e| &e.payload[..]).collect();
        let sums: Vec<&[u8]> = rows.iter().map(|e| &e.checksum.0[..]).collect();
        let c = self.current().await?;
        let res = sqlx::query(INSERT_SQL)
            .bind(log)
            .bind(prev)
            .bind(epoch)
            .bind(ts_ms)
            .bind(&kinds)
            .bind(&formats)
            .bind(&payloads)
            .bind(&sums)
            .bind(&prev_checksum.0[..])
            .execute(&c.pool)
            .await;
        match res {
            Ok(r) if r.rows_affected() == rows.len() as u64 => Ok(InsertOutcome::Inserted),
            Ok(r) if r.rows_affected() == 0 => Ok(InsertOutcome::PrevMissing),
            Ok(r) => Err(LogError::Internal(format!("append wrote {} of {} rows", r.rows_affected(), rows.len()))),
            Err(sqlx::Error::Database(d)) if d.kind() == sqlx::error::ErrorKind::UniqueViolation => Ok(InsertOutcome::Taken),
            Err(sqlx::Error::Database(d)) if d.kind() == sqlx::error::ErrorKind::ForeignKeyViolation => Err(LogError::NotFound(log.to_owned())),
            Err(e) => Err(self.fail(&c, e).await),
        }
    }

    async fn head(&self, log: &str) -> Result<Head, LogError> {
        let c = self.current().await?;
        let r = sqlx::query(
            "SELECT l.name, e.id, e.checksum, e.epoch FROM logs l \
             LEFT JOIN LATERAL (SELECT id, checksum, epoch FROM entries WHERE log = l.name ORDER BY id DESC LIMIT 1) e ON true \
             WHERE l.name = $1",
        )
        .bind(log)
        .fetch_optional(&c.pool)
        .await;
        let r = match r {
            Ok(Some(r)) => r,
            Ok(None) => return Err(LogError::NotFound(log.to_owned())),
            Err(e) => return Err(self.fail(&c, e).await),
        };
        let id: Option<i64> = r.try_get("id").map_err(|e| LogError::Internal(e.to_string()))?;
        match id {
            None => Ok(Head { id: 0, checksum: GENESIS, epoch: 0 }),
            Some(id) => {
                let sum: Vec<u8> = r.try_get("checksum").map_err(|e| LogError::Internal(e.to_string()))?;
                let epoch: i64 = r.try_get("epoch").map_err(|e| LogError::Internal(e.to_string()))?;
                Ok(Head { id: id as u64, checksum: checksum_from_db(log, id, &sum)?, epoch: epoch as u64 })
            }
        }
    }

    async fn checksum_at(&self, log: &str, id: u64) -> Result<Option<Checksum>, LogError> {
        let i = to_i64(id, "id")?;
        let c = self.current().await?;
        let r: Result<Option<Vec<u8>>, _> =
            sqlx::query_scalar("SELECT checksum FROM entries WHERE log = $1 AND id = $2").bind(log).bind(i).fetch_optional(&c.pool).await;
        match r {
            Ok(None) => Ok(None),
            Ok(Some(sum)) => Ok(Some(checksum_from_db(log, i, &sum)?)),
            Err(e) => Err(self.fail(&c, e).await),
        }
    }

    async fn read(&self, log: &str, from: u64, limit: u32) -> Result<ReadRows, LogError> {
        let from = to_i64(from, "after")?;
        let c = self.current().await?;
        let rows = sqlx::query(
            "SELECT id, prev_id, epoch, kind, format, payload, checksum, \
             (SELECT max(id) FROM entries WHERE log = $1) AS tail \
             FROM entries WHERE log = $1 AND id >= $2 ORDER BY id LIMIT $3",
        )
        .bind(log)
        .bind(from)
        .bind(limit as i64)
        .fetch_all(&c.pool)
        .await;
        let rows = match rows {
            Ok(r) => r,
            Err(e) => return Err(self.fail(&c, e).await),
        };
        let mut out = ReadRows { entries: Vec::with_capacity(rows.len()), tail_id: None };
        for r in &rows {
            match row_to_entry(log, r) {
                Ok(e) => out.entries.push(e),
                Err(e) => return Err(unwrap_corrupt(e).unwrap_or_else(|e| LogError::Internal(e.to_string()))),
            }
            if out.tail_id.is_none() {
                out.tail_id = r.try_get::<Option<i64>, _>("tail").map_err(|e| LogError::Internal(e.to_string()))?.map(|t| t as u64);
            }
        }
        Ok(out)
    }

    async fn first_id(&self, log: &str) -> Result<u64, LogError> {
        let c = self.current().await?;
        let r: Result<Option<i64>, _> = sqlx::query_scalar("SELECT min(id) FROM entries WHERE log = $1").bind(log).fetch_one(&c.pool).await;
        match r {
            Ok(v) => Ok(v.unwrap_or(0) as u64),
            Err(e) => Err(self.fail(&c, e).await),
        }
    }

    async fn leadership(&self, log: &str) -> Result<Option<(Entry, i64)>, LogError> {
        let c = self.current().await?;
        static SQL: LazyLock<String> = LazyLock::new(|| leadership_sql("$1"));
        let r = sqlx::query(SQL.as_str()).bind(log).fetch_optional(&c.pool).await;
        match r {
            Ok(None) => Ok(None),
            Ok(Some(r)) => {
                let ts: i64 = r.try_get("ts_ms").map_err(|e| LogError::Internal(e.to_string()))?;
                let e = row_to_entry(log, &r).map_err(|e| unwrap_corrupt(e).unwrap_or_else(|e| LogError::Internal(e.to_string())))?;
                Ok(Some((e, ts)))
            }
            Err(e) => Err(self.fail(&c, e).await),
        }
    }

    async fn list(&self) -> Result<Vec<LogMeta>, LogError> {
        let c = self.current().await?;
        let rows = match sqlx::query("SELECT name, snapshot_id FROM logs ORDER BY name").fetch_all(&c.pool).await {
            Ok(r) => r,
            Err(e) => return Err(self.fail(&c, e).await),
        };
        rows.iter()
            .map(|r| {
                Ok(LogMeta {
                    name: r.try_get("name").map_err(|e| LogError::Internal(e.to_string()))?,
                    snapshot_id: r.try_get::<i64, _>("snapshot_id").map_err(|e| LogError::Internal(e.to_string()))? as u64,
                })
            })
            .collect()
    }

    async fn set_snapshot(&self, log: &str, id: u64) -> Result<u64, LogError> {
        let id = to_i64(id, "snapshot id")?;
        let c = self.current().await?;
        let r: Result<Option<i64>, _> = sqlx::query_scalar("UPDATE logs SET snapshot_id = GREATEST(snapshot_id, $1) WHERE name = $2 RETURNING snapshot_id")
            .bind(id)
            .bind(log)
            .fetch_optional(&c.pool)
            .await;
        match r {
            Ok(Some(v)) => Ok(v as u64),
            Ok(None) => Err(LogError::NotFound(log.to_owned())),
            Err(e) => Err(self.fail(&c, e).await),
        }
    }

    async fn delete_before(&self, log: &str, before: u64) -> Result<u64, LogError> {
        let before = to_i64(before, "before")?;
        let c = self.current().await?;
        match sqlx::query("DELETE FROM entries WHERE log = $1 AND id < $2").bind(log).bind(before).execute(&c.pool).await {
            Ok(r) => Ok(r.rows_affected()),
            Err(e) => Err(self.fail(&c, e).await),
        }
    }

    fn announce(&self, log: &str, id: u64) {
        // Unbounded but coalesced by the sender task; an append never waits on NOTIFY.
        let _ = self.inner.announce_tx.send((log.to_owned(), id));
    }

    fn start_listener(&self, tails: Tails) {
        let rx = self.inner.announce_rx.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(rx) = rx {
            tokio::spawn(self.clone().announcer(rx));
            tokio::spawn(self.clone().listener(tails));
        }
    }
}
