//! The log semantics over any backend: hash chain, checksum marks, conditional append with
//! in-doubt settlement, long-poll reads, snapshots and truncation. The HTTP server and the
//! embedded handle both call this; neither adds behaviour of its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::chain::{self, Checksum, GENESIS};
use crate::codec::{AppendRequest, MAX_BATCH, ReadBatch};
use crate::entry::{Appended, Entry, FORMAT_VERSION, Head, Kind, LeasePayload, LogInfo, MarkPayload, NewEntry, ReaderInfo, valid_log_name};
use crate::error::LogError;
use crate::notify::Tails;
use crate::store::{InsertOutcome, LogStore, PgConfig, PgStore, SqliteStore, Store};
use crate::tail_cache::TailCache;

#[derive(Clone, Debug)]
pub struct CoreOptions {
    /// A checksum mark is appended whenever a batch crosses a multiple of this id.
    pub mark_interval: u64,
    /// How long an append whose outcome is unknown keeps trying to settle it (reconnect,
    /// re-read the tail) before reporting `Unavailable`.
    pub settle_timeout: Duration,
    /// How long idempotent reads retry while the backend is unreachable (failover).
    pub retry_timeout: Duration,
    /// Safety-net poll for long-polls, in case a wake-up (NOTIFY) was lost.
    pub poll_interval: Duration,
    pub max_read: u32,
    pub max_wait: Duration,
    /// Payload bytes of each log's newest entries kept in memory for readers (0: none).
    pub tail_cache_bytes: usize,
}

impl Default for CoreOptions {
    fn default() -> Self {
        CoreOptions {
            mark_interval: 1024,
            settle_timeout: Duration::from_secs(120),
            retry_timeout: Duration::from_secs(30),
            poll_interval: Duration::from_secs(1),
            max_read: 10_000,
            max_wait: Duration::from_secs(60),
            tail_cache_bytes: 16 << 20,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truncated {
    pub deleted: u64,
    pub first_id: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyReport {
    pub log: String,
    pub first_id: u64,
    pub tail_id: u64,
    pub entries_checked: u64,
    pub marks_checked: u64,
    pub tail_checksum: Checksum,
}

struct Inner {
    store: Store,
    tails: Tails,
    /// Last known (id, checksum) per log. A stored entry never changes, so a cached
    /// checksum for an id is right forever; it only saves the lookup of `prev_id`.
    heads: Mutex<HashMap<String, Head>>,
    /// Per log, per reader name: the `after` of its newest read, and when.
    readers: Mutex<HashMap<String, ReaderMarks>>,
    /// What this service appended last, served to readers without the store.
    cache: TailCache,
    opts: CoreOptions,
}

/// One log's readers: per reader name, the `after` of its newest read, and when.
type ReaderMarks = HashMap<String, (u64, Instant)>;

/// Readers silent for this long are forgotten.
const READER_TTL: Duration = Duration::from_secs(30);

/// The log service's core, cheap to clone. Also the embedded handle `memoria up` uses.
#[derive(Clone)]
pub struct LogCore {
    inner: Arc<Inner>,
}

impl LogCore {
    pub fn new(store: Store, opts: CoreOptions) -> LogCore {
        let tails = Tails::new();
        store.start_listener(tails.clone());
        let cache = TailCache::new(opts.tail_cache_bytes);
        LogCore { inner: Arc::new(Inner { store, tails, heads: Mutex::new(HashMap::new()), readers: Mutex::new(HashMap::new()), cache, opts }) }
    }

    /// Embedded use: a SQLite file, no HTTP.
    pub async fn open_sqlite(path: impl AsRef<std::path::Path>) -> Result<LogCore, LogError> {
        Ok(Self::new(Store::Sqlite(SqliteStore::open(path).await?), CoreOptions::default()))
    }

    pub async fn connect_pg(cfg: PgConfig, opts: CoreOptions) -> Result<LogCore, LogError> {
        Ok(Self::new(Store::Pg(PgStore::connect(cfg).await?), opts))
    }

    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    pub fn tails(&self) -> &Tails {
        &self.inner.tails
    }

    fn check_name(log: &str) -> Result<(), LogError> {
        if valid_log_name(log) { Ok(()) } else { Err(LogError::Invalid(format!("bad log name {log:?}: use 1-128 of [A-Za-z0-9._-]"))) }
    }

    /// Retries an idempotent operation while the backend is unreachable.
    async fn retrying<T, F, Fut>(&self, mut f: F) -> Result<T, LogError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, LogError>>,
    {
        let deadline = Instant::now() + self.inner.opts.retry_timeout;
        let mut backoff = Duration::from_millis(20);
        loop {
            match f().await {
                Err(LogError::Unavailable(m)) if Instant::now() < deadline => {
                    tracing::debug!(error = %m, "backend unavailable; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
                r => return r,
            }
        }
    }

    pub async fn create(&self, log: &str) -> Result<bool, LogError> {
        Self::check_name(log)?;
        self.retrying(|| self.inner.store.create_log(log)).await
    }

    pub async fn head(&self, log: &str) -> Result<Head, LogError> {
        Self::check_name(log)?;
        self.retrying(|| self.inner.store.head(log)).await
    }

    /// Appends all of `req.entries` after `req.prev_id`, or nothing.
    ///
    /// The work runs on its own task: if the caller goes away (an HTTP client disconnects,
    /// a host future is dropped), the append still runs to its end. Cancelling a statement
    /// that waits for synchronous replication would commit it locally and report success.
    pub async fn append(&self, log: &str, req: AppendRequest) -> Result<Appended, LogError> {
        Self::check_name(log)?;
        if req.entries.is_empty() {
            return Err(LogError::Invalid("an append needs at least one entry".into()));
        }
        if req.entries.len() > MAX_BATCH {
            return Err(LogError::Invalid(format!("{} entries exceed the batch limit of {MAX_BATCH}", req.entries.len())));
        }
        if req.entries.iter().any(|e| e.kind == Kind::ChecksumMark) {
            return Err(LogError::Invalid("checksum marks are written by the service only".into()));
        }
        let this = self.clone();
        let log = log.to_owned();
        tokio::spawn(async move { this.append_to_end(&log, req).await }).await.map_err(|e| LogError::Internal(format!("append task failed: {e}")))?
    }

    async fn append_to_end(&self, log: &str, req: AppendRequest) -> Result<Appended, LogError> {
        let started = Instant::now();
        let store = &self.inner.store;
        let n = req.entries.len() as u64;
        let settle_deadline = started + self.inner.opts.settle_timeout;
        let mut was_in_doubt = false;
        loop {
            let prev_sum = match self.cached_checksum(log, req.prev_id) {
                Some(c) => c,
                None if req.prev_id == 0 => GENESIS,
                None => match self.retrying(|| store.checksum_at(log, req.prev_id)).await? {
                    Some(c) => c,
                    None => return Err(self.conflict(log).await),
                },
            };
            if req.prev_checksum.is_some_and(|c| c != prev_sum) {
                return Err(self.conflict(log).await);
            }
            let rows = self.build_rows(req.prev_id, prev_sum, req.epoch, &req.entries);
            let last = rows.last().map(|e| (e.id, e.checksum)).unwrap_or((req.prev_id, prev_sum));
            let appended = Appended { first_id: req.prev_id + 1, last_id: last.0, checksum: last.1 };
            let ts = crate::now_ms();
            match store.insert(log, req.prev_id, &prev_sum, ts, &rows).await {
                Ok(InsertOutcome::Inserted) => return Ok(self.appended(log, req.epoch, n, &rows, appended, started)),
                Ok(InsertOutcome::PrevMissing) | Ok(InsertOutcome::Taken) if was_in_doubt => {
                    // The first attempt's connection broke but its backend kept waiting for
                    // synchronous replication and has committed since: the rows that beat
                    // this retry may be our own.
                    if self.retrying(|| store.checksum_at(log, appended.last_id)).await? == Some(appended.checksum) {
                        metrics::counter!("memoria_log_in_doubt_total", "outcome" => "landed_late").increment(1);
                        return Ok(self.appended(log, req.epoch, n, &rows, appended, started));
                    }
                    return Err(self.conflict(log).await);
                }
                Ok(InsertOutcome::PrevMissing) | Ok(InsertOutcome::Taken) => return Err(self.conflict(log).await),
                Err(LogError::Unavailable(msg)) => {
                    was_in_doubt = true;
                    tracing::warn!(log, prev_id = req.prev_id, error = %msg, "append outcome unknown; settling");
                    match self.settle(log, req.prev_id, appended, settle_deadline).await? {
                        Settled::Landed => {
                            metrics::counter!("memoria_log_in_doubt_total", "outcome" => "landed").increment(1);
                            return Ok(self.appended(log, req.epoch, n, &rows, appended, started));
                        }
                        Settled::NotWritten => {
                            metrics::counter!("memoria_log_in_doubt_total", "outcome" => "retried").increment(1);
                            continue;
                        }
                        Settled::Other => {
                            metrics::counter!("memoria_log_in_doubt_total", "outcome" => "conflict").increment(1);
                            return Err(self.conflict(log).await);
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Decides what happened to an append whose connection broke, by re-reading the log on
    /// whatever primary is reachable now. Sync replication means an acknowledged commit is
    /// on the new primary; an unacknowledged one may or may not be, and this finds out.
    async fn settle(&self, log: &str, prev_id: u64, ours: Appended, deadline: Instant) -> Result<Settled, LogError> {
        let store = &self.inner.store;
        let mut backoff = Duration::from_millis(20);
        loop {
            let r = async {
                match store.checksum_at(log, ours.last_id).await? {
                    Some(c) if c == ours.checksum => Ok(Settled::Landed),
                    Some(_) => Ok(Settled::Other),
                    None => match store.checksum_at(log, prev_id + 1).await? {
                        Some(_) => Ok(Settled::Other),
                        None => Ok(Settled::NotWritten),
                    },
                }
            }
            .await;
            match r {
                Ok(s) => return Ok(s),
                Err(LogError::Unavailable(m)) if Instant::now() < deadline => {
                    tracing::debug!(error = %m, "settling: backend still unavailable");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
                Err(LogError::Unavailable(m)) => {
                    metrics::counter!("memoria_log_in_doubt_total", "outcome" => "gave_up").increment(1);
                    return Err(LogError::Unavailable(format!("append outcome unknown after {:?}: {m}", self.inner.opts.settle_timeout)));
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn build_rows(&self, prev_id: u64, prev_sum: Checksum, epoch: u64, entries: &[NewEntry]) -> Vec<Entry> {
        let mut rows = Vec::with_capacity(entries.len() + 1);
        let mut prev = prev_sum;
        let mut id = prev_id;
        for e in entries {
            id += 1;
            let checksum = chain::link(&prev, id, epoch, e.kind, e.format, &e.payload);
            rows.push(Entry { id, prev_id: id - 1, epoch, kind: e.kind, format: e.format, payload: e.payload.clone(), checksum });
            prev = checksum;
        }
        let interval = self.inner.opts.mark_interval.max(1);
        if prev_id / interval != id / interval {
            let payload = MarkPayload { id, checksum: prev }.encode();
            let mark_id = id + 1;
            let checksum = chain::link(&prev, mark_id, epoch, Kind::ChecksumMark, FORMAT_VERSION, &payload);
            rows.push(Entry { id: mark_id, prev_id: id, epoch, kind: Kind::ChecksumMark, format: FORMAT_VERSION, payload, checksum });
        }
        rows
    }

    fn appended(&self, log: &str, epoch: u64, entries: u64, rows: &[Entry], a: Appended, started: Instant) -> Appended {
        // Cached before the tails move: a woken reader finds the entries here.
        self.inner.cache.appended(log, rows);
        self.inner.heads.lock().unwrap_or_else(|p| p.into_inner()).insert(log.to_owned(), Head { id: a.last_id, checksum: a.checksum, epoch });
        // Readers are woken from a task of their own, queued behind the writer's answer:
        // on one event-loop thread the append's reply goes out before any tail response.
        let (tails, log_name, last) = (self.inner.tails.clone(), log.to_owned(), a.last_id);
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            tails.advance_here(&log_name, last, Instant::now());
        });
        self.inner.store.announce(log, a.last_id);
        metrics::histogram!("memoria_log_append_seconds").record(started.elapsed().as_secs_f64());
        metrics::histogram!("memoria_log_append_batch_entries").record(entries as f64);
        metrics::counter!("memoria_log_appended_entries_total").increment(rows.len() as u64);
        a
    }

    fn cached_checksum(&self, log: &str, id: u64) -> Option<Checksum> {
        let heads = self.inner.heads.lock().unwrap_or_else(|p| p.into_inner());
        heads.get(log).filter(|h| h.id == id && id > 0).map(|h| h.checksum)
    }

    /// The conflict answer: the current tail, so the writer can decide at once.
    async fn conflict(&self, log: &str) -> LogError {
        metrics::counter!("memoria_log_append_conflicts_total").increment(1);
        self.inner.heads.lock().unwrap_or_else(|p| p.into_inner()).remove(log);
        match self.retrying(|| self.inner.store.head(log)).await {
            Ok(h) => LogError::Conflict { tail_id: h.id, tail_checksum: h.checksum, tail_epoch: h.epoch },
            Err(e) => e,
        }
    }

    /// A read by a named reader: records that it has applied up to `after`, then reads,
    /// and records the time again when the read returns (a long poll is not silence).
    pub async fn read_as(&self, log: &str, after: u64, limit: u32, wait: Duration, reader: &str) -> Result<ReadBatch, LogError> {
        self.note_reader(log, reader, after);
        let r = self.read(log, after, limit, wait).await;
        self.note_reader(log, reader, after);
        r
    }

    fn note_reader(&self, log: &str, reader: &str, after: u64) {
        let mut all = self.inner.readers.lock().unwrap();
        let m = all.entry(log.to_owned()).or_default();
        let now = Instant::now();
        m.retain(|_, (_, at)| now.duration_since(*at) < READER_TTL);
        let e = m.entry(reader.to_owned()).or_insert((after, now));
        e.0 = e.0.max(after);
        e.1 = now;
    }

    /// Whether a read of `log` after `after` is answered from memory (the tail cache, or a
    /// wait for the next append) rather than by reading and re-hashing stored entries.
    pub fn reads_from_memory(&self, log: &str, after: u64) -> bool {
        self.inner.cache.covers(log, after)
    }

    /// The readers of `log` seen in the last 30 s.
    pub fn readers(&self, log: &str) -> Vec<ReaderInfo> {
        let all = self.inner.readers.lock().unwrap();
        let now = Instant::now();
        let mut v: Vec<ReaderInfo> = all
            .get(log)
            .map(|m| {
                m.iter()
                    .filter(|(_, (_, at))| now.duration_since(*at) < READER_TTL)
                    .map(|(n, (a, at))| ReaderInfo { name: n.clone(), applied: *a, idle_ms: now.duration_since(*at).as_millis() as u64 })
                    .collect()
            })
            .unwrap_or_default();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Entries after `after` (at most `limit`), waiting up to `wait` for the first one.
    /// Every returned entry's checksum is recomputed: altered rows are reported, not served.
    pub async fn read(&self, log: &str, after: u64, limit: u32, wait: Duration) -> Result<ReadBatch, LogError> {
        Self::check_name(log)?;
        let limit = limit.clamp(1, self.inner.opts.max_read);
        let deadline = Instant::now() + wait.min(self.inner.opts.max_wait);
        // Subscribed only once a wait is needed (and only for a log that exists), then the
        // range is read again, so no append can slip between the read and the wait.
        let mut rx: Option<tokio::sync::watch::Receiver<u64>> = None;
        let store = &self.inner.store;
        // A reader caught up with this service's own last append (a replica, after every
        // append) first waits for the next one rather than ask the store twice for what it
        // already has: four statements per append otherwise. Only the first wait trusts
        // the cache; after a nap the store is read as usual, so an append through another
        // instance that nobody announced is seen within a poll interval, as before.
        let mut trust_cache = !wait.is_zero();
        loop {
            if let Some(rx) = rx.as_mut() {
                rx.borrow_and_update();
            }
            if let Some(c) = self.inner.cache.read(log, after, limit as usize) {
                metrics::counter!("memoria_log_tail_cache_reads_total").increment(1);
                let known = self.inner.heads.lock().unwrap_or_else(|p| p.into_inner()).get(log).map_or(0, |h| h.id);
                return Ok(ReadBatch { tail_id: c.last_id.max(known), entries: c.entries });
            }
            if trust_cache && self.inner.cache.last_id(log) == Some(after) {
                let Some(rx) = rx.as_mut() else {
                    // Subscribed, then the cache is looked at again: an append cached
                    // after that look moves the watch, so the wait below cannot miss it.
                    rx = Some(self.inner.tails.subscribe(log));
                    continue;
                };
                trust_cache = false;
                let now = Instant::now();
                if *rx.borrow() <= after && now < deadline {
                    self.nap(rx, deadline - now).await;
                    continue;
                }
            }
            // Read the anchor (entry `after`) with the range so the first entry's link is
            // checked too.
            let from = after.max(1);
            let extra = u32::from(after > 0);
            let rows = self.retrying(|| store.read(log, from, limit + extra)).await?;
            let (anchor_id, anchor, entries, checked) = match (after, rows.entries.first()) {
                (_, None) => (after, GENESIS, &rows.entries[..], 0),
                (0, Some(first)) if first.id == 1 => (0, GENESIS, &rows.entries[..], 0),
                (a, Some(first)) if a > 0 && first.id == a => (a, first.checksum, &rows.entries[1..], 0),
                // The anchor was truncated away (a reader resuming from a snapshot at
                // `after`): the first link is the snapshot's to check; the rest are ours.
                (a, Some(first)) if first.id == a + 1 => (first.id, first.checksum, &rows.entries[..], 1),
                (_, Some(first)) => {
                    return Err(LogError::Truncated { log: log.to_owned(), through: first.id - 1, after });
                }
            };
            if !entries.is_empty() {
                chain::verify(anchor_id, anchor, &entries[checked..]).map_err(|b| {
                    metrics::counter!("memoria_log_chain_errors_total").increment(1);
                    tracing::error!(log, id = b.id, "hash chain broken");
                    LogError::Corrupt { log: log.to_owned(), id: b.id }
                })?;
                let tail_id = rows.tail_id.unwrap_or(0).max(entries.last().map(|e| e.id).unwrap_or(0));
                return Ok(ReadBatch { tail_id, entries: entries.to_vec() });
            }
            let head = self.retrying(|| store.head(log)).await?;
            if head.id > after {
                continue; // appended between the two statements
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(ReadBatch { tail_id: head.id, entries: Vec::new() });
            }
            let Some(rx) = rx.as_mut() else {
                rx = Some(self.inner.tails.subscribe(log));
                continue;
            };
            self.nap(rx, deadline - now).await;
        }
    }

    /// Waits for the tail to move, at most `left` and one poll interval.
    async fn nap(&self, rx: &mut tokio::sync::watch::Receiver<u64>, left: Duration) {
        tokio::select! {
            r = rx.changed() => {
                if r.is_ok() {
                    metrics::counter!("memoria_log_tail_wakeups_total").increment(1);
                }
            }
            _ = tokio::time::sleep(left.min(self.inner.opts.poll_interval)) => {}
        }
    }

    pub async fn list(&self) -> Result<Vec<LogInfo>, LogError> {
        let store = &self.inner.store;
        let metas = self.retrying(|| store.list()).await?;
        let mut out = Vec::with_capacity(metas.len());
        for m in metas {
            let head = self.retrying(|| store.head(&m.name)).await?;
            let first_id = self.retrying(|| store.first_id(&m.name)).await?;
            let lead = self.retrying(|| store.leadership(&m.name)).await?;
            let (leader, lease_expires_ms) = match lead.as_ref().and_then(|(e, ts)| Some((LeasePayload::decode(&e.payload)?, *ts))) {
                Some((p, ts)) => (Some(p.node), Some((ts.max(0) as u64).saturating_add(p.lease_ms))),
                None => (None, None),
            };
            out.push(LogInfo {
                name: m.name,
                leader,
                epoch: head.epoch,
                lease_expires_ms,
                tail_id: head.id,
                last_checksum: head.checksum,
                first_id,
                snapshot_id: m.snapshot_id,
            });
        }
        Ok(out)
    }

    /// Records that a verified snapshot covers the log up to `id`, whose chain checksum the
    /// snapshot states. A mismatch means the snapshot was not built from this log.
    pub async fn publish_snapshot(&self, log: &str, id: u64, checksum: Checksum) -> Result<u64, LogError> {
        Self::check_name(log)?;
        let store = &self.inner.store;
        match self.retrying(|| store.checksum_at(log, id)).await? {
            Some(c) if c == checksum => self.retrying(|| store.set_snapshot(log, id)).await,
            Some(_) => Err(LogError::Refused(format!("snapshot checksum does not match entry {id} of log {log}"))),
            None => {
                let head = self.head(log).await?;
                Err(LogError::Refused(format!("entry {id} is not stored in log {log} (tail {})", head.id)))
            }
        }
    }

    /// Deletes entries before `before`, which must not pass the published snapshot. The tail
    /// entry is always kept: it is the next append's arbiter row and chain anchor.
    pub async fn truncate(&self, log: &str, before: u64) -> Result<Truncated, LogError> {
        Self::check_name(log)?;
        let store = &self.inner.store;
        let snapshot_id = self
            .retrying(|| store.list())
            .await?
            .into_iter()
            .find(|m| m.name == log)
            .map(|m| m.snapshot_id)
            .ok_or_else(|| LogError::NotFound(log.to_owned()))?;
        if before > snapshot_id.saturating_add(1) {
            return Err(LogError::Refused(format!("cannot truncate log {log} before {before}: the published snapshot covers only up to {snapshot_id}")));
        }
        let head = self.head(log).await?;
        let effective = before.min(head.id);
        let deleted = self.retrying(|| store.delete_before(log, effective)).await?;
        self.inner.cache.truncate(log, effective);
        let first_id = self.retrying(|| store.first_id(log)).await?;
        tracing::info!(log, before = effective, deleted, "truncated");
        Ok(Truncated { deleted, first_id })
    }

    /// Recomputes the whole stored chain and checks every checksum mark against it.
    pub async fn verify(&self, log: &str) -> Result<VerifyReport, LogError> {
        Self::check_name(log)?;
        let store = &self.inner.store;
        let head = self.head(log).await?;
        let first_id = self.retrying(|| store.first_id(log)).await?;
        let mut report = VerifyReport { log: log.to_owned(), first_id, tail_id: head.id, entries_checked: 0, marks_checked: 0, tail_checksum: GENESIS };
        if first_id == 0 {
            return Ok(report);
        }
        let corrupt = |id| LogError::Corrupt { log: log.to_owned(), id };
        // After truncation the oldest stored entry is the anchor: what precedes it lives in
        // the snapshot, which was checked against the chain when published.
        let (mut prev_id, mut prev_sum, mut from) = if first_id == 1 {
            (0, GENESIS, 1)
        } else {
            let c = self.retrying(|| store.checksum_at(log, first_id)).await?.ok_or_else(|| corrupt(first_id))?;
            (first_id, c, first_id + 1)
        };
        const PAGE: u32 = 10_000;
        loop {
            let rows = self.retrying(|| store.read(log, from, PAGE)).await?;
            if rows.entries.is_empty() {
                break;
            }
            for e in &rows.entries {
                if e.kind == Kind::ChecksumMark {
                    match MarkPayload::decode(&e.payload) {
                        Some(m) if m.id == prev_id && m.checksum == prev_sum => report.marks_checked += 1,
                        _ => return Err(corrupt(e.id)),
                    }
                }
                chain::verify(prev_id, prev_sum, std::slice::from_ref(e)).map_err(|b| corrupt(b.id))?;
                prev_id = e.id;
                prev_sum = e.checksum;
                report.entries_checked += 1;
            }
            from = prev_id + 1;
        }
        if prev_id < head.id {
            return Err(corrupt(prev_id + 1));
        }
        report.tail_checksum = prev_sum;
        Ok(report)
    }
}

enum Settled {
    /// Our rows are there: the append committed.
    Landed,
    /// Nothing after `prev_id`: safe to retry the conditional append.
    NotWritten,
    /// Someone else's rows follow `prev_id`.
    Other,
}
