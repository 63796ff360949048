//! One client connection: frames RESP (enforcing limits before allocating), forwards
//! whole commands to the shard, writes replies back in order.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::BytesMut;
use memoria_core::batch::{self, BatchWriter};
use memoria_core::resp::{self, Frame, Limits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc::unbounded_channel;

use crate::shard::{ReplyMsg, ShardHandle, ShardMsg};

static NEXT_CLIENT_ID: AtomicU64 = AtomicU64::new(1);

/// Limits the connection layer enforces.
#[derive(Clone, Copy)]
pub struct ConnLimits {
    pub resp: Limits,
    /// `client-query-buffer-limit`: a client whose unparsed input exceeds this is dropped.
    pub query_buffer: usize,
    /// Stop reading from a client with this many unanswered command bytes in flight.
    pub max_inflight_bytes: usize,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits { resp: Limits::default(), query_buffer: 1 << 30, max_inflight_bytes: 64 << 20 }
    }
}

pub struct ConnCtx {
    pub shard: ShardHandle,
    pub limits: ConnLimits,
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
}

/// Frames every complete command at the start of `buf`, consuming it, and appends one
/// REC_COMMAND record per command to `out`.
fn frame_all(buf: &mut BytesMut, id: u64, limits: &ConnLimits, out: &mut BatchWriter, count: &mut usize) -> Framed {
    let mut args = Vec::new();
    let mut inline = Vec::new();
    let mut consumed = 0;
    let result = loop {
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
                out.record(batch::REC_COMMAND, id, &rest[..n]);
                *count += 1;
                consumed += n;
                if args.first().is_some_and(|&(a, b)| is_quit(&rest[a..b])) {
                    break Framed::Quit;
                }
            }
            Frame::Inline { consumed: n } => {
                out.begin(batch::REC_COMMAND, id);
                resp::encode_command(&mut out.buf, &inline);
                out.end();
                *count += 1;
                consumed += n;
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
    closing: &mut Option<String>,
    quit_pending: &mut bool,
) -> bool {
    records.clear();
    let mut n = 0;
    let framed = frame_all(buf, id, &ctx.limits, records, &mut n);
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
        Framed::Error(e) => *closing = Some(e),
    }
    true
}

pub async fn serve(stream: TcpStream, ctx: Arc<ConnCtx>) {
    let id = NEXT_CLIENT_ID.fetch_add(1, Ordering::Relaxed);
    let _ = stream.set_nodelay(true);
    let addr = stream.peer_addr().map(|a| a.to_string()).unwrap_or_default();
    let laddr = stream.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let (mut rd, mut wr) = stream.into_split();
    let (tx, mut rx) = unbounded_channel::<ReplyMsg>();
    if !ctx.shard.send(ShardMsg::Connect { id, addr, laddr, tx }) {
        return;
    }
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut records = BatchWriter::new();
    // Commands sent to the shard whose replies have not come back yet.
    let mut inflight: usize = 0;
    let mut inflight_bytes: usize = 0;
    let mut sent_sizes: std::collections::VecDeque<(usize, usize)> = Default::default();
    let mut closing: Option<String> = None;
    // The client closed its write half (or all of it): answer what it already sent, like
    // Redis does for `printf 'PING\r\n' | nc -N`, then close.
    let mut eof = false;
    // A QUIT is in flight: read and frame nothing more until it is answered.
    let mut quit_pending = false;
    let mut out = Vec::with_capacity(16 * 1024);
    'conn: loop {
        if closing.is_some() && inflight == 0 {
            let msg = closing.take().unwrap();
            let _ = wr.write_all(format!("-ERR {msg}\r\n").as_bytes()).await;
            break;
        }
        if eof && inflight == 0 && !quit_pending {
            break;
        }
        if quit_pending && inflight == 0 {
            // QUIT was answered without closing (it never is today): carry on with what
            // the client pipelined behind it.
            quit_pending = false;
            if !buf.is_empty() && !forward(&mut buf, id, &ctx, &mut records, &mut inflight, &mut inflight_bytes, &mut sent_sizes, &mut closing, &mut quit_pending) {
                break 'conn;
            }
            continue;
        }
        let can_read = closing.is_none() && !eof && !quit_pending && inflight_bytes < ctx.limits.max_inflight_bytes;
        tokio::select! {
            r = rd.read_buf(&mut buf), if can_read => {
                match r {
                    Ok(0) => {
                        eof = true;
                        if inflight > 0 {
                            ctx.shard.send(ShardMsg::Eof { id });
                        }
                        continue 'conn;
                    }
                    Err(_) => break 'conn,
                    Ok(_) => {}
                }
                if !forward(&mut buf, id, &ctx, &mut records, &mut inflight, &mut inflight_bytes, &mut sent_sizes, &mut closing, &mut quit_pending) {
                    break 'conn;
                }
                if buf.capacity() - buf.len() < 4096 && buf.is_empty() {
                    buf.reserve(16 * 1024);
                }
            }
            m = rx.recv() => {
                let Some(mut m) = m else { break 'conn };
                out.clear();
                let mut close = false;
                loop {
                    out.extend_from_slice(&m.data);
                    close |= m.close;
                    settle(&mut sent_sizes, m.answered, &mut inflight, &mut inflight_bytes);
                    match rx.try_recv() {
                        Ok(next) if !close => m = next,
                        _ => break,
                    }
                }
                if wr.write_all(&out).await.is_err() || close {
                    break 'conn;
                }
            }
        }
    }
    ctx.shard.send(ShardMsg::Disconnect { id });
}
