//! The log service's two hot calls, append and the tail read, over a Unix socket beside
//! the HTTP API: the path of `memoria up`, whose nodes and log service share a machine.
//!
//! Why: each call over HTTP pays a request and a response through hyper and axum on both
//! sides (~100 µs of a round trip on this machine, measured against a RESP PING), once per
//! append for the primary and once per append again for each replica's long poll; under
//! load that is CPU the two cores lack. Here a request is one frame and the answer one
//! frame on a connection kept open; the service runs exactly `LogCore::append` and
//! `LogCore::read_as`, so conditions, never-cancel, long polls and errors are those of
//! `POST /v1/logs/{log}/append` and `GET /v1/logs/{log}/entries`.
//!
//! Frames are `len u32 | body`, fields big-endian as in codec.rs (whose reader decodes
//! them). The first frame a client sends is the service token; a wrong one closes the
//! connection. Then each request is `kind u8 | name_len u16 | name | …`: kind 0 an append
//! (`AppendRequest`, codec.rs), kind 1 a read (`after u64 | limit u32 | wait_ms u64 |
//! reader`, an empty reader for an anonymous read). Each answer is `0 | Appended or
//! ReadBatch` or `1 | ErrorBody as JSON`. A broken connection
//! leaves an append's outcome unknown, as a broken HTTP one does: the caller settles it by
//! reading the log.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::codec::{AppendRequest, MAX_BODY, ReadBatch, Reader};
use crate::core::LogCore;
use crate::entry::Appended;
use crate::error::{ErrorBody, LogError};
use crate::server::{digests_match, token_digest};

const OK: u8 = 0;
const ERR: u8 = 1;

/// Binds the socket at `path` (replacing a stale one) readable and writable by this user
/// only, and serves appends and reads on it until the task is aborted.
///
/// The socket and its connections run on the store's writer loop when it has one (SQLite):
/// an append's commit and its answer, and the tail reads it wakes, then stay on one thread.
/// A read that must go to the store (a reader behind the tail cache, catching up) runs
/// on the caller's runtime instead: re-hashing a large batch there must not hold up the
/// commits.
pub async fn serve(path: &Path, core: LogCore, token: String) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let _ = std::fs::remove_file(path);
    let listener = std::os::unix::net::UnixListener::bind(path)?;
    listener.set_nonblocking(true)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    let want = token_digest(&token);
    let here = tokio::runtime::Handle::current();
    let runtime = core.store().writer_runtime().cloned().unwrap_or_else(|| here.clone());
    Ok(runtime.spawn(async move {
        // Registered with the loop it runs on, so its readiness wakes that thread.
        let listener = match UnixListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => return tracing::error!(error = %e, "log socket: cannot serve"),
        };
        loop {
            match listener.accept().await {
                Ok((conn, _)) => {
                    tokio::spawn(serve_conn(conn, core.clone(), want, here.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "log socket: accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
    }))
}

async fn serve_conn(conn: UnixStream, core: LogCore, want: [u8; 32], store_reads: tokio::runtime::Handle) {
    // Buffered: a frame's length and body (and often the next frame) in one read.
    let mut conn = BufReader::new(conn);
    let Ok(Some(token)) = read_frame(&mut conn).await else { return };
    if !digests_match(&token_digest(&String::from_utf8_lossy(&token)), &want) {
        tracing::info!("log socket: rejected a connection with a wrong token");
        return;
    }
    let mut out = BytesMut::new();
    while let Ok(Some(frame)) = read_frame(&mut conn).await {
        let answer = match parse_request(frame) {
            Ok(Request::Append(log, req)) => core.append(&log, req).await.map(|a| a.encode()),
            Ok(Request::Read { log, after, limit, wait, reader }) if core.reads_from_memory(&log, after) => read(&core, log, after, limit, wait, reader).await,
            Ok(Request::Read { log, after, limit, wait, reader }) => {
                let core = core.clone();
                store_reads
                    .spawn(async move { read(&core, log, after, limit, wait, reader).await })
                    .await
                    .unwrap_or_else(|e| Err(LogError::Internal(format!("log socket: read task: {e}"))))
            }
            Err(e) => Err(e),
        };
        let (status, body) = match answer {
            Ok(body) => (OK, body),
            Err(e) => (ERR, serde_json::to_vec(&e.to_body()).unwrap_or_default().into()),
        };
        out.clear();
        out.put_u32(1 + body.len() as u32);
        out.put_u8(status);
        out.put_slice(&body);
        if conn.write_all(&out).await.is_err() {
            return;
        }
    }
}

/// A read, by a named reader or (empty name) an anonymous one, encoded for the answer.
async fn read(core: &LogCore, log: String, after: u64, limit: u32, wait: Duration, reader: String) -> Result<Bytes, LogError> {
    let batch = if reader.is_empty() { core.read(&log, after, limit, wait).await } else { core.read_as(&log, after, limit, wait, &reader).await };
    batch.map(|b| b.encode())
}

/// A decoded request.
enum Request {
    Append(String, AppendRequest),
    Read { log: String, after: u64, limit: u32, wait: Duration, reader: String },
}

const APPEND: u8 = 0;
const READ: u8 = 1;

fn parse_request(frame: Bytes) -> Result<Request, LogError> {
    let invalid = |e: crate::codec::DecodeError| LogError::Invalid(format!("log socket: {e}"));
    let text = |b: Bytes, what: &str| String::from_utf8(b.to_vec()).map_err(|_| LogError::Invalid(format!("log socket: {what} is not UTF-8")));
    let mut r = Reader::new(frame);
    let kind = r.u8("request kind").map_err(invalid)?;
    let n = r.u16("log name length").map_err(invalid)? as usize;
    let log = text(r.take(n, "log name").map_err(invalid)?, "the log name")?;
    match kind {
        APPEND => Ok(Request::Append(log, AppendRequest::decode(r.rest()).map_err(|e| LogError::Invalid(e.to_string()))?)),
        READ => {
            let after = r.u64("after").map_err(invalid)?;
            let limit = r.u32("limit").map_err(invalid)?;
            let wait = Duration::from_millis(r.u64("wait").map_err(invalid)?);
            let reader = text(r.rest(), "the reader name")?;
            Ok(Request::Read { log, after, limit, wait, reader })
        }
        k => Err(LogError::Invalid(format!("log socket: unknown request kind {k}"))),
    }
}

/// One frame, or None at a clean end of the stream.
async fn read_frame(conn: &mut (impl AsyncRead + Unpin)) -> std::io::Result<Option<Bytes>> {
    let mut len = [0u8; 4];
    match conn.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_BODY {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("frame of {len} bytes exceeds {MAX_BODY}")));
    }
    let mut buf = vec![0u8; len];
    conn.read_exact(&mut buf).await?;
    Ok(Some(buf.into()))
}

/// The client side: a connection for appends and one for reads (a long poll must not hold
/// up an append), each opened on first use and kept; one call at a time on each.
pub struct LocalSocket {
    path: PathBuf,
    token: String,
    appends: tokio::sync::Mutex<Option<Conn>>,
    reads: tokio::sync::Mutex<Option<Conn>>,
}

/// A connection, read through a buffer (an answer's length and body in one read).
type Conn = BufReader<UnixStream>;

/// What a call over the socket came to.
pub enum Sent<T> {
    /// The service answered (the call's result, success or a definite error).
    Answered(Result<T, LogError>),
    /// Nothing was sent (no connection could be made): any other way may take it as is.
    NotSent(LogError),
}

/// Time allowed for a read beyond its long-poll wait (as over HTTP).
const READ_SLACK: Duration = Duration::from_secs(30);

impl LocalSocket {
    pub fn new(path: PathBuf, token: &str) -> LocalSocket {
        LocalSocket { path, token: token.to_owned(), appends: tokio::sync::Mutex::new(None), reads: tokio::sync::Mutex::new(None) }
    }

    pub async fn append(&self, log: &str, req: &AppendRequest) -> Sent<Appended> {
        let frame = request(APPEND, log, |f| f.put_slice(&req.encode()));
        // No timeout: the service finishes an append whatever the client does.
        match self.call(&self.appends, frame, None).await {
            Sent::Answered(r) => Sent::Answered(r.and_then(|b| Appended::decode(b).map_err(|e| LogError::Protocol(e.to_string())))),
            Sent::NotSent(e) => Sent::NotSent(e),
        }
    }

    pub async fn read(&self, log: &str, after: u64, limit: u32, wait: Duration, reader: Option<&str>) -> Sent<ReadBatch> {
        let frame = request(READ, log, |f| {
            f.put_u64(after);
            f.put_u32(limit);
            f.put_u64(wait.as_millis() as u64);
            f.put_slice(reader.unwrap_or_default().as_bytes());
        });
        match self.call(&self.reads, frame, Some(wait + READ_SLACK)).await {
            Sent::Answered(r) => Sent::Answered(r.and_then(|b| ReadBatch::decode(b).map_err(|e| LogError::Protocol(e.to_string())))),
            Sent::NotSent(e) => Sent::NotSent(e),
        }
    }

    async fn call(&self, slot: &tokio::sync::Mutex<Option<Conn>>, frame: BytesMut, limit: Option<Duration>) -> Sent<Bytes> {
        let mut slot = slot.lock().await;
        // Taken out while in use: a future dropped mid-exchange (or timed out) drops the
        // connection with it rather than leave half an answer for the next call to read.
        let mut conn = match slot.take() {
            Some(c) => c,
            None => match self.connect().await {
                Ok(c) => c,
                Err(e) => return Sent::NotSent(LogError::Transport(format!("log socket {}: {e}", self.path.display()))),
            },
        };
        let exchange = async {
            conn.write_all(&frame).await?;
            match read_frame(&mut conn).await? {
                Some(a) if !a.is_empty() => Ok(a),
                _ => Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)),
            }
        };
        let answer = match limit {
            None => exchange.await,
            Some(d) => tokio::time::timeout(d, exchange).await.unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into())),
        };
        let answer = match answer {
            Ok(a) => a,
            Err(e) => return Sent::Answered(Err(LogError::Transport(format!("log socket: {e}")))),
        };
        *slot = Some(conn);
        Sent::Answered(match answer[0] {
            OK => Ok(answer.slice(1..)),
            _ => match serde_json::from_slice::<ErrorBody>(&answer[1..]) {
                Ok(b) => Err(LogError::from_body(0, b)),
                Err(e) => Err(LogError::Protocol(format!("log socket: bad error body: {e}"))),
            },
        })
    }

    async fn connect(&self) -> std::io::Result<Conn> {
        let mut c = UnixStream::connect(&self.path).await?;
        let mut hello = BytesMut::with_capacity(4 + self.token.len());
        hello.put_u32(self.token.len() as u32);
        hello.put_slice(self.token.as_bytes());
        c.write_all(&hello).await?;
        Ok(BufReader::new(c))
    }
}

/// A request frame: length, kind, log name, then what `rest` writes.
fn request(kind: u8, log: &str, rest: impl FnOnce(&mut BytesMut)) -> BytesMut {
    let mut f = BytesMut::with_capacity(64);
    f.put_u32(0);
    f.put_u8(kind);
    f.put_u16(log.len() as u16);
    f.put_slice(log.as_bytes());
    rest(&mut f);
    let len = (f.len() - 4) as u32;
    f[..4].copy_from_slice(&len.to_be_bytes());
    f
}
