//! One interface for the host whether its log is embedded (SQLite in-process, `memoria up`)
//! or remote (the HTTP service): the same calls, the same `LogError::Conflict`.

use std::future::Future;
use std::time::Duration;

use crate::chain::Checksum;
use crate::client::LogClient;
use crate::codec::{AppendRequest, ReadBatch};
use crate::core::{LogCore, Truncated, VerifyReport};
use crate::entry::{Appended, Head, LogInfo, NewEntry, ReaderInfo};
use crate::error::LogError;

pub trait LogApi: Send + Sync {
    /// Creates `log` if absent (idempotent); true when created now.
    fn create(&self, log: &str) -> impl Future<Output = Result<bool, LogError>> + Send;

    /// Conditional append: succeeds only if `prev_id` is the log's tail.
    fn append(&self, log: &str, prev_id: u64, epoch: u64, entries: Vec<NewEntry>) -> impl Future<Output = Result<Appended, LogError>> + Send;

    /// Append with every option (e.g. `prev_checksum` fencing).
    fn append_request(&self, log: &str, req: AppendRequest) -> impl Future<Output = Result<Appended, LogError>> + Send;

    /// Entries after `after`, at most `limit`, long-polling up to `wait` for the first.
    fn read(&self, log: &str, after: u64, limit: u32, wait: Duration) -> impl Future<Output = Result<ReadBatch, LogError>> + Send;

    /// `read` by a named reader, which the service remembers with its position.
    fn read_as(&self, log: &str, after: u64, limit: u32, wait: Duration, reader: &str) -> impl Future<Output = Result<ReadBatch, LogError>> + Send;

    /// The named readers of `log` the service has seen lately.
    fn readers(&self, log: &str) -> impl Future<Output = Result<Vec<ReaderInfo>, LogError>> + Send;

    fn head(&self, log: &str) -> impl Future<Output = Result<Head, LogError>> + Send;

    fn list(&self) -> impl Future<Output = Result<Vec<LogInfo>, LogError>> + Send;

    /// Records a verified snapshot covering the log up to `id` (whose checksum it states).
    fn publish_snapshot(&self, log: &str, id: u64, checksum: Checksum) -> impl Future<Output = Result<u64, LogError>> + Send;

    /// Deletes entries before `before` (not past the published snapshot).
    fn truncate(&self, log: &str, before: u64) -> impl Future<Output = Result<Truncated, LogError>> + Send;

    fn verify(&self, log: &str) -> impl Future<Output = Result<VerifyReport, LogError>> + Send;
}

impl LogApi for LogCore {
    async fn create(&self, log: &str) -> Result<bool, LogError> {
        LogCore::create(self, log).await
    }
    async fn append(&self, log: &str, prev_id: u64, epoch: u64, entries: Vec<NewEntry>) -> Result<Appended, LogError> {
        LogCore::append(self, log, AppendRequest { prev_id, epoch, prev_checksum: None, entries }).await
    }
    async fn append_request(&self, log: &str, req: AppendRequest) -> Result<Appended, LogError> {
        LogCore::append(self, log, req).await
    }
    async fn read(&self, log: &str, after: u64, limit: u32, wait: Duration) -> Result<ReadBatch, LogError> {
        LogCore::read(self, log, after, limit, wait).await
    }
    async fn read_as(&self, log: &str, after: u64, limit: u32, wait: Duration, reader: &str) -> Result<ReadBatch, LogError> {
        LogCore::read_as(self, log, after, limit, wait, reader).await
    }
    async fn readers(&self, log: &str) -> Result<Vec<ReaderInfo>, LogError> {
        Ok(LogCore::readers(self, log))
    }
    async fn head(&self, log: &str) -> Result<Head, LogError> {
        LogCore::head(self, log).await
    }
    async fn list(&self) -> Result<Vec<LogInfo>, LogError> {
        LogCore::list(self).await
    }
    async fn publish_snapshot(&self, log: &str, id: u64, checksum: Checksum) -> Result<u64, LogError> {
        LogCore::publish_snapshot(self, log, id, checksum).await
    }
    async fn truncate(&self, log: &str, before: u64) -> Result<Truncated, LogError> {
        LogCore::truncate(self, log, before).await
    }
    async fn verify(&self, log: &str) -> Result<VerifyReport, LogError> {
        LogCore::verify(self, log).await
    }
}

impl LogApi for LogClient {
    async fn create(&self, log: &str) -> Result<bool, LogError> {
        LogClient::create(self, log).await
    }
    async fn append(&self, log: &str, prev_id: u64, epoch: u64, entries: Vec<NewEntry>) -> Result<Appended, LogError> {
        LogClient::append(self, log, prev_id, epoch, entries).await
    }
    async fn append_request(&self, log: &str, req: AppendRequest) -> Result<Appended, LogError> {
        LogClient::append_request(self, log, req).await
    }
    async fn read(&self, log: &str, after: u64, limit: u32, wait: Duration) -> Result<ReadBatch, LogError> {
        LogClient::read(self, log, after, limit, wait).await
    }
    async fn read_as(&self, log: &str, after: u64, limit: u32, wait: Duration, reader: &str) -> Result<ReadBatch, LogError> {
        LogClient::read_as(self, log, after, limit, wait, Some(reader)).await
    }
    async fn readers(&self, log: &str) -> Result<Vec<ReaderInfo>, LogError> {
        LogClient::readers(self, log).await
    }
    async fn head(&self, log: &str) -> Result<Head, LogError> {
        LogClient::head(self, log).await
    }
    async fn list(&self) -> Result<Vec<LogInfo>, LogError> {
        LogClient::list(self).await
    }
    async fn publish_snapshot(&self, log: &str, id: u64, checksum: Checksum) -> Result<u64, LogError> {
        LogClient::publish_snapshot(self, log, id, checksum).await
    }
    async fn truncate(&self, log: &str, before: u64) -> Result<Truncated, LogError> {
        LogClient::truncate(self, log, before).await
    }
    async fn verify(&self, log: &str) -> Result<VerifyReport, LogError> {
        LogClient::verify(self, log).await
    }
}

/// Embedded or remote, chosen at run time (the trait's `impl Future` methods keep it from
/// being used as `dyn LogApi`).
#[derive(Clone)]
pub enum LogHandle {
    Embedded(LogCore),
    Remote(LogClient),
}

macro_rules! both {
    ($self:ident, $x:ident => $e:expr) => {
        match $self {
            LogHandle::Embedded($x) => $e,
            LogHandle::Remote($x) => $e,
        }
    };
}

impl LogApi for LogHandle {
    async fn create(&self, log: &str) -> Result<bool, LogError> {
        both!(self, x => LogApi::create(x, log).await)
    }
    async fn append(&self, log: &str, prev_id: u64, epoch: u64, entries: Vec<NewEntry>) -> Result<Appended, LogError> {
        both!(self, x => LogApi::append(x, log, prev_id, epoch, entries).await)
    }
    async fn append_request(&self, log: &str, req: AppendRequest) -> Result<Appended, LogError> {
        both!(self, x => LogApi::append_request(x, log, req).await)
    }
    async fn read(&self, log: &str, after: u64, limit: u32, wait: Duration) -> Result<ReadBatch, LogError> {
        both!(self, x => LogApi::read(x, log, after, limit, wait).await)
    }
    async fn read_as(&self, log: &str, after: u64, limit: u32, wait: Duration, reader: &str) -> Result<ReadBatch, LogError> {
        both!(self, x => LogApi::read_as(x, log, after, limit, wait, reader).await)
    }
    async fn readers(&self, log: &str) -> Result<Vec<ReaderInfo>, LogError> {
        both!(self, x => LogApi::readers(x, log).await)
    }
    async fn head(&self, log: &str) -> Result<Head, LogError> {
        both!(self, x => LogApi::head(x, log).await)
    }
    async fn list(&self) -> Result<Vec<LogInfo>, LogError> {
        both!(self, x => LogApi::list(x).await)
    }
    async fn publish_snapshot(&self, log: &str, id: u64, checksum: Checksum) -> Result<u64, LogError> {
        both!(self, x => LogApi::publish_snapshot(x, log, id, checksum).await)
    }
    async fn truncate(&self, log: &str, before: u64) -> Result<Truncated, LogError> {
        both!(self, x => LogApi::truncate(x, log, before).await)
    }
    async fn verify(&self, log: &str) -> Result<VerifyReport, LogError> {
        both!(self, x => LogApi::verify(x, log).await)
    }
}

/// What became of an append whose reply was lost (`LogError::is_in_doubt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The entries are in the log as sent: treat the append as acknowledged.
    Landed(Appended),
    /// The log still ends at `prev_id`: the append did not happen; it may be retried.
    NotWritten,
    /// Another writer's entries follow `prev_id`: the writer has been deposed.
    Superseded(Head),
}

/// Settles an in-doubt append by reading the log: the append landed if the entries after
/// `prev_id` are exactly the ones sent (same epoch, kind, format, payload).
pub async fn settle<L: LogApi>(api: &L, log: &str, prev_id: u64, epoch: u64, sent: &[NewEntry]) -> Result<Outcome, LogError> {
    let head = api.head(log).await?;
    if head.id == prev_id {
        return Ok(Outcome::NotWritten);
    }
    if head.id < prev_id + sent.len() as u64 {
        return Ok(Outcome::Superseded(head));
    }
    // One more than sent: the service may have closed the batch with a checksum mark.
    let b = api.read(log, prev_id, sent.len() as u32 + 1, Duration::ZERO).await?;
    let ours = sent.len() <= b.entries.len()
        && sent.iter().zip(&b.entries).all(|(s, e)| e.epoch == epoch && e.kind == s.kind && e.format == s.format && e.payload == s.payload);
    if !ours {
        return Ok(Outcome::Superseded(head));
    }
    let mut last = &b.entries[sent.len() - 1];
    // A mark directly after our entries is ours: marks only ever close a batch.
    if let Some(m) = b.entries.get(sent.len())
        && m.kind == crate::entry::Kind::ChecksumMark
    {
        last = m;
    }
    Ok(Outcome::Landed(Appended { first_id: prev_id + 1, last_id: last.id, checksum: last.checksum }))
}
