//! Appends over a Unix socket, beside the HTTP API: the hot path of `memoria up`, whose
//! nodes and log service share a machine.
//!
//! Why: an append over HTTP pays a request and a response through hyper and axum on both
//! sides (~100 µs of a round trip on this machine, measured against a RESP PING), and under
//! load that is CPU the two cores lack. Here a request is one frame and the answer one
//! frame on a connection kept open; the service runs exactly `LogCore::append`, so
//! conditions, never-cancel and errors are those of `POST /v1/logs/{log}/append`.
//!
//! Frames are `len u32 LE | body`. The first frame a client sends is the service token;
//! a wrong one closes the connection. Then each request is `name_len u16 LE | name |
//! AppendRequest` (codec.rs), and each answer `0 | Appended` or `1 | ErrorBody as JSON`.
//! A broken connection leaves the append's outcome unknown, as a broken HTTP one does:
//! the caller settles it by reading the log.

use std::path::{Path, PathBuf};

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

use crate::codec::{AppendRequest, MAX_BODY};
use crate::core::LogCore;
use crate::entry::Appended;
use crate::error::{ErrorBody, LogError};
use crate::server::token_digest;

const OK: u8 = 0;
const ERR: u8 = 1;

/// Binds the socket at `path` (replacing a stale one) readable and writable by this user
/// only, and serves appends on it until the task is dropped.
pub async fn serve(path: &Path, core: LogCore, token: String) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    let want = token_digest(&token);
    Ok(tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((conn, _)) => {
                    tokio::spawn(serve_conn(conn, core.clone(), want));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "append socket: accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
    }))
}

async fn serve_conn(mut conn: UnixStream, core: LogCore, want: [u8; 32]) {
    let Ok(Some(token)) = read_frame(&mut conn).await else { return };
    let got = token_digest(&String::from_utf8_lossy(&token));
    if got.iter().zip(&want).fold(0u8, |acc, (a, b)| acc | (a ^ b)) != 0 {
        tracing::info!("append socket: rejected a connection with a wrong token");
        return;
    }
    let mut out = BytesMut::new();
    while let Ok(Some(frame)) = read_frame(&mut conn).await {
        let answer = match parse_request(frame) {
            Ok((log, req)) => core.append(&log, req).await,
            Err(e) => Err(e),
        };
        out.clear();
        match answer {
            Ok(a) => {
                let body = a.encode();
                out.put_u32_le(1 + body.len() as u32);
                out.put_u8(OK);
                out.put_slice(&body);
            }
            Err(e) => {
                let body = serde_json::to_vec(&e.to_body()).unwrap_or_default();
                out.put_u32_le(1 + body.len() as u32);
                out.put_u8(ERR);
                out.put_slice(&body);
            }
        }
        if conn.write_all(&out).await.is_err() {
            return;
        }
    }
}

fn parse_request(mut frame: Bytes) -> Result<(String, AppendRequest), LogError> {
    let bad = |what: &str| LogError::Invalid(format!("append socket: {what}"));
    if frame.len() < 2 {
        return Err(bad("short frame"));
    }
    let n = u16::from_le_bytes([frame[0], frame[1]]) as usize;
    if frame.len() < 2 + n {
        return Err(bad("short log name"));
    }
    let log = std::str::from_utf8(&frame[2..2 + n]).map_err(|_| bad("log name is not UTF-8"))?.to_owned();
    let body = frame.split_off(2 + n);
    let req = AppendRequest::decode(body).map_err(|e| LogError::Invalid(e.to_string()))?;
    Ok((log, req))
}

/// One frame, or None at a clean end of the stream.
async fn read_frame(conn: &mut UnixStream) -> std::io::Result<Option<Bytes>> {
    let mut len = [0u8; 4];
    match conn.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_BODY {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, format!("frame of {len} bytes exceeds {MAX_BODY}")));
    }
    let mut buf = vec![0u8; len];
    conn.read_exact(&mut buf).await?;
    Ok(Some(buf.into()))
}

/// The client side: one connection, opened on first use and kept; one append at a time.
pub struct AppendSocket {
    path: PathBuf,
    token: String,
    conn: tokio::sync::Mutex<Option<UnixStream>>,
}

/// What an append over the socket came to.
pub enum Sent {
    /// The service answered (the append's result, success or a definite error).
    Answered(Result<Appended, LogError>),
    /// Nothing was sent (no connection could be made): any other way may take it as is.
    NotSent(LogError),
}

impl AppendSocket {
    pub fn new(path: PathBuf, token: &str) -> AppendSocket {
        AppendSocket { path, token: token.to_owned(), conn: tokio::sync::Mutex::new(None) }
    }

    pub async fn append(&self, log: &str, req: &AppendRequest) -> Sent {
        let mut slot = self.conn.lock().await;
        // Taken out while in use: a future dropped mid-exchange drops the connection with it
        // rather than leave half an answer for the next append to read.
        let mut conn = match slot.take() {
            Some(c) => c,
            None => match self.connect().await {
                Ok(c) => c,
                Err(e) => return Sent::NotSent(LogError::Transport(format!("append socket {}: {e}", self.path.display()))),
            },
        };
        let body = req.encode();
        let mut frame = BytesMut::with_capacity(4 + 2 + log.len() + body.len());
        frame.put_u32_le((2 + log.len() + body.len()) as u32);
        frame.put_u16_le(log.len() as u16);
        frame.put_slice(log.as_bytes());
        frame.put_slice(&body);
        let transport = |e: std::io::Error| Sent::Answered(Err(LogError::Transport(format!("append socket: {e}"))));
        if let Err(e) = conn.write_all(&frame).await {
            return transport(e);
        }
        let answer = match read_frame(&mut conn).await {
            Ok(Some(a)) if !a.is_empty() => a,
            Ok(_) => return transport(std::io::ErrorKind::UnexpectedEof.into()),
            Err(e) => return transport(e),
        };
        *slot = Some(conn);
        Sent::Answered(match answer[0] {
            OK => Appended::decode(answer.slice(1..)).map_err(|e| LogError::Protocol(e.to_string())),
            _ => match serde_json::from_slice::<ErrorBody>(&answer[1..]) {
                Ok(b) => Err(LogError::from_body(0, b)),
                Err(e) => Err(LogError::Protocol(format!("append socket: bad error body: {e}"))),
            },
        })
    }

    async fn connect(&self) -> std::io::Result<UnixStream> {
        let mut c = UnixStream::connect(&self.path).await?;
        let mut hello = BytesMut::with_capacity(4 + self.token.len());
        hello.put_u32_le(self.token.len() as u32);
        hello.put_slice(self.token.as_bytes());
        c.write_all(&hello).await?;
        Ok(c)
    }
}
