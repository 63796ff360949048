//! One client connection: frames RESP (enforcing limits before allocating), forwards
//! whole commands to the shard, writes replies back in order.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use memoria_core::protocol::batch::{self, BatchWriter};
use memoria_core::protocol::resp::{self, Frame};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::mpsc::unbounded_channel;

use crate::limits::{self, ConnLimits, HostLimits};
use crate::poison::Poison;
use crate::shard::{ReplyMsg, ShardHandle, ShardMsg};

static NEXT_CLIENT_ID: AtomicU64 = AtomicU64::new(1);

pub struct ConnCtx {
    pub shard: ShardHandle,
    pub limits: ConnLimits,
    /// Limits CONFIG SET can change (and the framing limits in force).
    pub host: Arc<HostLimits>,
    /// Connections handed over by the stable endpoint: served only by a primary.
    pub primary_only: bool,
}

/// What framing the read buffer produced.
enum Framed {
    /// Complete commands were appended to the batch records.
    Ok,
    /// The last command framed was QUIT: nothing after it may run (Redis closes the
    /// connection after QUIT's reply, and pipelined commands behind it are discarded), so
    /// framing stopped there and the rest stays in the buffer.
    Quit,
    /// A protocol error: reply with it after the earlier replies, then close.
    Error(String),
    /// A command the watchdog interrupted before (`poison.rs`), dropped: reply with this
    /// error after the earlier replies, then frame what follows it.
    Refused(String),
}

/// An error the connection itself answers once the replies before it are out.
struct Interject {
    /// The error line without its `-` and CRLF.
    line: String,
    /// Close the connection after it (a protocol error), or go on framing (a refusal).
    close: bool,
}

/// Whether the client must authenticate, as the shard last said. Nothing is framed before
/// its first answer (to the connect record); before AUTH, requests are framed one at a
/// time with Redis's unauthenticated limits, so each is framed under the rules its
/// predecessor's answer left in force (CVE-2021-32675).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Auth {
    Unknown,
    Required,
    Open,
}

impl Auth {
    fn may_frame(self, inflight: usize) -> bool {
        match self {
            Auth::Unknown => false,
            Auth::Required => inflight == 0,
            Auth::Open => true,
        }
    }
}

/// Output a client that has not authenticated may have pending before it is closed, as
/// Redis 7.0.15 does (CVE-2025-21605: a flood of -NOAUTH replies nobody reads).
const UNAUTHENTICATED_OUTPUT_LIMIT: usize = 1024;

/// Frames up to `max` complete commands at the start of `buf`, consuming them, and
/// appends one REC_COMMAND record per command to `out`.
fn frame_all(buf: &mut BytesMut, id: u64, limits: &ConnLimits, poison: &Poison, out: &mut BatchWriter, count: &mut usize, max: usize) -> Framed {
    // Before AUTH nothing runs anyway (the engine answers -NOAUTH): nothing to refuse.
    let refuse = |cmd: &[u8]| if limits.resp.unauthenticated { None } else { poison.refusal(cmd) };
    let mut args = Vec::new();
    let mut inline = Vec::new();
    let mut consumed = 0;
    let result = loop {
        if *count >= max {
            break Framed::Ok;
        }
        args.clear();
        inline.clear();
        let rest = &buf[consumed..];
        match resp::frame(rest, &limits.resp, &mut args, &mut inline) {
            Frame::Incomplete { need } => {
                if need > limits.query_buffer {
                    break Framed::Error("Protocol error: query buffer limit exceeded".into());
                }
                break Framed::Ok;
            }
            Frame::Multibulk { consumed: n } => {
                consumed += n;
                if let Some(e) = refuse(&rest[..n]) {
                    break Framed::Refused(e);
                }
                out.record(batch::REC_COMMAND, id, &rest[..n]);
                *count += 1;
                if args.first().is_some_and(|&(a, b)| is_quit(&rest[a..b])) {
                    break Framed::Quit;
                }
            }
            Frame::Inline { consumed: n } => {
                consumed += n;
                let start = out.buf.len();
                out.begin(batch::REC_COMMAND, id);
                resp::encode_command(&mut out.buf, &inline);
                if let Some(e) = refuse(&out.buf[start + batch::INPUT_HEADER..]) {
                    out.buf.truncate(start);
                    break Framed::Refused(e);
                }
                out.end();
                *count += 1;
                if inline.first().is_some_and(|a| is_quit(a)) {
                    break Framed::Quit;
                }
            }
            Frame::Skip { consumed: n } => consumed += n,
            Frame::Error(e) => break Framed::Error(e.message()),
        }
    };
    let _ = buf.split_to(consumed);
    result
}

fn is_quit(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"quit")
}

/// Retires `answered` commands from the in-flight accounting (a reply message may answer
/// part of one Commands message or several).
fn settle(sent: &mut std::collections::VecDeque<(usize, usize)>, mut answered: usize, inflight: &mut usize, bytes: &mut usize) {
    *inflight = inflight.saturating_sub(answered);
    while answered > 0 {
        let Some(front) = sent.front_mut() else { break };
        if front.0 <= answered {
            answered -= front.0;
            *bytes = bytes.saturating_sub(front.1);
            sent.pop_front();
        } else {
            let part = front.1 * answered / front.0;
            front.0 -= answered;
            front.1 -= part;
            *bytes = bytes.saturating_sub(part);
            answered = 0;
        }
    }
}

/// Frames what `buf` holds and hands the complete commands to the shard. False when the
/// shard is gone.
#[allow(clippy::too_many_arguments)]
fn forward(
    buf: &mut BytesMut,
    id: u64,
    ctx: &ConnCtx,
    records: &mut BatchWriter,
    inflight: &mut usize,
    inflight_bytes: &mut usize,
    sent_sizes: &mut std::collections::VecDeque<(usize, usize)>,
    closing: &mut Option<Interject>,
    quit_pending: &mut bool,
    auth: Auth,
) -> bool {
    records.clear();
    let mut n = 0;
    let mut limits = ctx.host.conn_limits(&ctx.limits);
    limits.resp.unauthenticated = auth == Auth::Required;
    let max = if auth == Auth::Required { 1 } else { usize::MAX };
    let framed = frame_all(buf, id, &limits, &ctx.host.poison, records, &mut n, max);
    if n > 0 {
        *inflight += n;
        *inflight_bytes += records.buf.len();
        sent_sizes.push_back((n, records.buf.len()));
        let msg = ShardMsg::Commands { id, records: std::mem::take(&mut records.buf) };
        if !ctx.shard.send(msg) {
            return false;
        }
    }
    match framed {
        Framed::Ok => {}
        Framed::Quit => *quit_pending = true,
        Framed::Error(e) => *closing = Some(Interject { line: format!("ERR {e}"), close: true }),
        Framed::Refused(line) => *closing = Some(Interject { line, close: false }),
    }
    true
}

pub async fn serve(stream: TcpStream, ctx: Arc<ConnCtx>) {
    let _ = stream.set_nodelay(true);
    let addr = stream.peer_addr().map(|a| a.to_string()).unwrap_or_default();
    let laddr = stream.local_addr().map(|a| a.to_string()).unwrap_or_default();
    serve_stream(stream, addr, laddr, ctx).await
}

/// Replies waiting to be written to the client: the client's output buffer, whose size
/// `client-output-buffer-limit` bounds.
struct OutBuf {
    data: Vec<u8>,
    /// Bytes of `data` already written.
    pos: usize,
}

impl OutBuf {
    fn pending(&self) -> usize {
        self.data.len() - self.pos
    }
    fn push(&mut self, b: &[u8]) {
        if self.pos > 0 && self.pos >= self.data.len() / 2 {
            self.data.drain(..self.pos);
            self.pos = 0;
        }
        self.data.extend_from_slice(b);
    }
    fn advance(&mut self, n: usize) {
        self.pos += n;
        if self.pos == self.data.len() {
            self.data.clear();
            self.pos = 0;
            // A huge reply (or a flood) went out: give its memory back.
            if self.data.capacity() > 1 << 20 {
                self.data = Vec::with_capacity(16 * 1024);
            }
        }
    }
}

/// What woke the connection task.
enum Ev {
    /// The output buffer was written out completely.
    Drained,
    Msg(Option<ReplyMsg>),
    Read(std::io::Result<usize>),
    /// The client cannot be written to (gone, or reset).
    WriteFailed,
    Tick,
}

/// Reads into the spare capacity of `buf`, like `AsyncReadExt::read_buf`, as a poll.
fn poll_read_buf<S: AsyncRead + Unpin>(io: &mut S, cx: &mut std::task::Context<'_>, buf: &mut BytesMut) -> Poll<std::io::Result<usize>> {
    if buf.capacity() - buf.len() < 4096 {
        buf.reserve(16 * 1024);
    }
    let mut rb = ReadBuf::uninit(buf.spare_capacity_mut());
    match Pin::new(io).poll_read(cx, &mut rb) {
        Poll::Ready(Ok(())) => {
            let n = rb.filled().len();
            // SAFETY: poll_read initialised the first n bytes of the spare capacity.
            unsafe { buf.set_len(buf.len() + n) };
            Poll::Ready(Ok(n))
        }
        Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
        Poll::Pending => Poll::Pending,
    }
}

/// How often a connection checks its idle and stalled-request timeouts: a quarter of the
/// shorter one (so a client is dropped between 1× and ~1.5× of it), at most every 10 s.
fn check_period(host: &HostLimits) -> Duration {
    let t = [host.timeout_secs(), host.partial_timeout_secs()].into_iter().filter(|&t| t > 0).min();
    match t {
        Some(s) => Duration::from_millis((s * 250).clamp(50, 10_000)),
        None => Duration::from_secs(10),
    }
}

/// Serves one client of the TLS port: the handshake (bounded by
/// `partial-request-timeout`: a handshake that stalls is a half-sent request), then RESP as
/// on the plain port. A failed handshake (plaintext on the TLS port, an untrusted,
/// expired or missing client certificate) closes this connection only.
pub async fn serve_tls(stream: TcpStream, acceptor: tokio_rustls::TlsAcceptor, ctx: Arc<ConnCtx>) {
    let _ = stream.set_nodelay(true);
    let addr = stream.peer_addr().map(|a| a.to_string()).unwrap_or_default();
    let laddr = stream.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let limit = ctx.host.partial_timeout_secs();
    let handshake = acceptor.accept(stream);
    let r = if limit > 0 {
        match tokio::time::timeout(std::time::Duration::from_secs(limit), handshake).await {
            Ok(r) => r,
            Err(_) => {
                tracing::info!(addr = %addr, "TLS handshake timed out");
                return;
            }
        }
    } else {
        handshake.await
    };
    match r {
        Ok(tls) => serve_stream(tls, addr, laddr, ctx).await,
        Err(e) => {
            metrics::counter!("memoria_tls_handshake_failures_total").increment(1);
            tracing::info!(addr = %addr, error = %e, "TLS handshake failed");
        }
    }
}

/// Serves one client over any byte stream (plain TCP, TLS).
///
/// One task per connection, driving reads, the output buffer and the replies from the
/// shard from a single poll, so that a client that stops reading never stops the task:
/// its replies pile up in its output buffer, where `client-output-buffer-limit` drops it.
pub async fn serve_stream<S: AsyncRead + AsyncWrite + Unpin>(mut io: S, addr: String, laddr: String, ctx: Arc<ConnCtx>) {
    let id = NEXT_CLIENT_ID.fetch_add(1, Ordering::Relaxed);
    let (tx, mut rx) = unbounded_channel::<ReplyMsg>();
    if !ctx.shard.send(ShardMsg::Connect { id, addr: addr.clone(), laddr, tx, primary_only: ctx.primary_only }) {
        return;
    }
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut records = BatchWriter::new();
    // Commands sent to the shard whose replies have not come back yet.
    let mut inflight: usize = 0;
    let mut inflight_bytes: usize = 0;
    let mut sent_sizes: std::collections::VecDeque<(usize, usize)> = Default::default();
    // An error of the connection's own to answer once nothing is in flight.
    let mut closing: Option<Interject> = None;
    // The client closed its write half (or all of it): answer what it already sent, like
    // Redis does for `printf 'PING\r\n' | nc -N`, then close.
    let mut eof = false;
    // A QUIT is in flight: read and frame nothing more until it is answered.
    let mut quit_pending = false;
    let mut out = OutBuf { data: Vec::with_capacity(16 * 1024), pos: 0 };
    // INFO's mem_clients_normal: this connection's buffers, while it lives.
    let mut gauge = crate::node_stats::BufferGauge::new(&ctx.host.node);
    gauge.set(buf.capacity() + out.data.capacity());
    // Bytes handed to the stream since its last flush (TLS buffers records).
    let mut unflushed = false;
    // Write what is buffered, then close (QUIT, a protocol error, the shard's close).
    let mut close_after_write = false;
    // Subscribed (as of the newest reply): the pubsub output class, no idle timeout.
    let mut pubsub = false;
    let mut auth = Auth::Unknown;
    let mut soft_since: Option<Instant> = None;
    // Timeouts: progress counters sampled by a periodic check, so the hot path reads no
    // clock.
    let (mut activity, mut reads) = (0u64, 0u64);
    let (mut seen_activity, mut seen_reads) = (0u64, 0u64);
    let (mut last_active, mut last_read) = (Instant::now(), Instant::now());
    let tick = tokio::time::sleep(check_period(&ctx.host));
    tokio::pin!(tick);
    let mut graceful = true;
    'conn: loop {
        if inflight == 0
            && let Some(e) = closing.take()
        {
            out.push(format!("-{}\r\n", e.line).as_bytes());
            close_after_write = e.close;
            // A refusal: what the client sent after it is framed now.
            if !e.close
                && !buf.is_empty()
                && !forward(&mut buf, id, &ctx, &mut records, &mut inflight, &mut inflight_bytes, &mut sent_sizes, &mut closing, &mut quit_pending, auth)
            {
                break 'conn;
            }
        }
        let done = out.pending() == 0 && !unflushed;
        if done && (close_after_write || (eof && inflight == 0 && !quit_pending)) {
            break;
        }
        if quit_pending && inflight == 0 && !close_after_write {
            // QUIT was answered without closing (it never is today): carry on with what
            // the client pipelined behind it.
            quit_pending = false;
            if !buf.is_empty()
                && !forward(&mut buf, id, &ctx, &mut records, &mut inflight, &mut inflight_bytes, &mut sent_sizes, &mut closing, &mut quit_pending, auth)
            {
                break 'conn;
            }
            continue;
        }
        let can_read =
            closing.is_none() && !eof && !quit_pending && !close_after_write && inflight_bytes < ctx.limits.max_inflight_bytes && auth.may_frame(inflight);
        let ev = std::future::poll_fn(|cx| {
            // Output first: a client that reads keeps its buffer short.
            while out.pending() > 0 {
                match Pin::new(&mut io).poll_write(cx, &out.data[out.pos..]) {
                    Poll::Ready(Ok(0)) | Poll::Ready(Err(_)) => return Poll::Ready(Ev::WriteFailed),
                    Poll::Ready(Ok(n)) => {
                        out.advance(n);
                        ctx.host.node.wrote(n);
                        activity += 1;
                        unflushed = true;
                    }
                    Poll::Pending => break,
                }
            }
            if out.pending() == 0 && unflushed {
                match Pin::new(&mut io).poll_flush(cx) {
                    Poll::Ready(Ok(())) => {
                        unflushed = false;
                        if close_after_write || eof {
                            return Poll::Ready(Ev::Drained);
                        }
                    }
                    Poll::Ready(Err(_)) => return Poll::Ready(Ev::WriteFailed),
                    Poll::Pending => {}
                }
            }
            if !close_after_write && let Poll::Ready(m) = rx.poll_recv(cx) {
                return Poll::Ready(Ev::Msg(m));
            }
            if can_read && let Poll::Ready(r) = poll_read_buf(&mut io, cx, &mut buf) {
                return Poll::Ready(Ev::Read(r));
            }
            if tick.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Ev::Tick);
            }
            Poll::Pending
        })
        .await;
        match ev {
            Ev::Drained => {}
            Ev::WriteFailed => {
                graceful = false;
                break 'conn;
            }
            Ev::Read(r) => {
                match r {
                    Ok(0) => {
                        eof = true;
                        if inflight > 0 {
                            ctx.shard.send(ShardMsg::Eof { id });
                        }
                        continue 'conn;
                    }
                    Err(_) => {
                        graceful = false;
                        break 'conn;
                    }
                    Ok(n) => {
                        ctx.host.node.read(n, buf.len());
                        gauge.set(buf.capacity() + out.data.capacity());
                        activity += 1;
                        reads += 1;
                    }
                }
                if !forward(&mut buf, id, &ctx, &mut records, &mut inflight, &mut inflight_bytes, &mut sent_sizes, &mut closing, &mut quit_pending, auth) {
                    break 'conn;
                }
            }
            Ev::Msg(m) => {
                let Some(mut m) = m else { break 'conn };
                loop {
                    out.push(&m.data);
                    close_after_write |= m.close;
                    pubsub = m.pubsub;
                    auth = if m.auth_required { Auth::Required } else { Auth::Open };
                    settle(&mut sent_sizes, m.answered, &mut inflight, &mut inflight_bytes);
                    if close_after_write {
                        break;
                    }
                    match rx.try_recv() {
                        Ok(next) => m = next,
                        Err(_) => break,
                    }
                }
                ctx.host.node.output_buffer(out.pending());
                gauge.set(buf.capacity() + out.data.capacity());
                let limit = ctx.host.output_limit(pubsub);
                // Like Redis: a client past its limit is closed at once, its buffer dropped.
                let over = if limits::output_over_limit(&limit, out.pending() as u64, &mut soft_since) {
                    Some("client-output-buffer-limit")
                } else if auth == Auth::Required && out.pending() > UNAUTHENTICATED_OUTPUT_LIMIT {
                    Some("1 KiB before AUTH")
                } else {
                    None
                };
                if let Some(which) = over {
                    tracing::info!(client = id, addr = %addr, pending = out.pending(), pubsub, limit = which, "closing a client over its output buffer limit");
                    ctx.host.output_limit_drops.fetch_add(1, Ordering::Relaxed);
                    metrics::counter!("memoria_client_output_limit_disconnections_total").increment(1);
                    graceful = false;
                    break 'conn;
                }
                // Requests read while framing waited (the connect answer, or the previous
                // request of a client that must authenticate) are framed now.
                if !buf.is_empty()
                    && closing.is_none()
                    && !quit_pending
                    && !close_after_write
                    && auth.may_frame(inflight)
                    && !forward(&mut buf, id, &ctx, &mut records, &mut inflight, &mut inflight_bytes, &mut sent_sizes, &mut closing, &mut quit_pending, auth)
                {
                    break 'conn;
                }
            }
            Ev::Tick => {
                let now = Instant::now();
                if activity != seen_activity {
                    seen_activity = activity;
                    last_active = now;
                }
                if reads != seen_reads {
                    seen_reads = reads;
                    last_read = now;
                }
                let idle = ctx.host.timeout_secs();
                // Redis spares blocked and subscribed clients; here also any client with a
                // command or a reply still under way.
                if idle > 0 && inflight == 0 && !pubsub && out.pending() == 0 && now.duration_since(last_active) >= Duration::from_secs(idle) {
                    tracing::debug!(client = id, "closing an idle client (timeout)");
                    ctx.host.idle_drops.fetch_add(1, Ordering::Relaxed);
                    graceful = false;
                    break 'conn;
                }
                // Part of a command is buffered and nothing more came: a stalled request.
                let stall = ctx.host.partial_timeout_secs();
                if stall > 0 && can_read && !buf.is_empty() && now.duration_since(last_read) >= Duration::from_secs(stall) {
                    tracing::info!(client = id, addr = %addr, buffered = buf.len(), "closing a client whose request stalled half-sent (partial-request-timeout)");
                    ctx.host.stalled_drops.fetch_add(1, Ordering::Relaxed);
                    graceful = false;
                    break 'conn;
                }
                tick.as_mut().reset((now + check_period(&ctx.host)).into());
            }
        }
    }
    if graceful {
        // A clean end (TLS: close_notify); bounded, as the client may not be reading.
        let _ = tokio::time::timeout(Duration::from_secs(1), io.shutdown()).await;
    }
    ctx.shard.send(ShardMsg::Disconnect { id });
}
