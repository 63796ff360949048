//! The byte format of one engine call: everything the shard thread drained from all its
//! clients goes in as one buffer, and one buffer comes out (one output record per input
//! record, in order). Crossing the WASM boundary once per batch is the design.
//!
//! Input record:  kind u8 | client u64 LE | len u32 LE | payload
//! Output record: kind u8 | client u64 LE | flags u8 | reply_len u32 | reply | fx_len u32 | effects
//!
//! Each output record may be followed by `REC_PUSH` records: pub/sub messages for OTHER
//! clients caused by it (PUBLISH, keyspace notifications). The host writes them to the
//! named client after the same durability wait as the record before them, in order;
//! push records before the first output record carry messages raised by `apply` (a
//! replica's keyspace notifications) and wait for nothing.
//! Effects:       repeated (db u8 | RESP multibulk command)
//!
//! Blocking commands (BLPOP, BLMOVE, BZPOPMIN, XREAD BLOCK…; see `blocked`). The engine
//! keeps which client waits on which keys (FIFO per key, like Redis's `blocking_keys`) and
//! serves waiters itself, right after the command whose effects touched one of their keys,
//! so a waiter is served before any later command of any client, as in Redis. The host
//! owns the connection side: it parks a blocked client (its later pipelined commands wait
//! in the host), fires deadlines, and releases the client once its command is answered.
//!   - A command that cannot be served answers with flag `OUT_BLOCKED`; its `reply` is then
//!     the block payload `deadline_ms i64 LE` (unix ms, 0 = never) instead of a reply.
//!   - A command of a client that is blocked, or that had a command deferred earlier in the
//!     same batch, is not run: flag `OUT_DEFERRED`, empty reply. The host re-submits it,
//!     byte for byte and in order, once the client is unblocked.
//!   - When a waiter is served (or unblocked by CLIENT UNBLOCK), the engine adds an extra
//!     output record of kind `REC_UNBLOCKED` for it, right after the record that caused it:
//!     flag `OUT_UNBLOCKED`, the blocked command's reply, and its effects (the pop itself:
//!     BLPOP → LPOP key). Extra records have no input record; every other output record
//!     answers the next input record. A `REC_UNBLOCKED` without `OUT_UNBLOCKED` carries
//!     only effects (a lazy expiry seen while re-trying a waiter) and answers nobody.
//!   - At a deadline the host sends `REC_UNBLOCK`; its output has `OUT_UNBLOCKED` and the
//!     timeout reply (null array in the client's protocol) if the client was still blocked,
//!     or no flags if it was served meanwhile.

use alloc::vec::Vec;

/// One RESP multibulk command from a client.
pub const REC_COMMAND: u8 = 0;
/// A client connected; payload is `addr\nladdr`.
pub const REC_CONNECT: u8 = 1;
/// A client disconnected; the engine drops its state (MULTI queue, WATCHes).
pub const REC_DISCONNECT: u8 = 2;
/// A clock tick: active expiry runs and its deletions come back as effects.
pub const REC_TICK: u8 = 3;
/// Static facts about the server process (`name:value` lines) for INFO.
pub const REC_SERVER_INFO: u8 = 4;
/// The node's role: first line `primary` or `replica`, then `name:value` lines for
/// INFO replication (and ROLE: `master_host`, `master_port`, `offset`).
pub const REC_ROLE: u8 = 5;
/// Nothing to run: lets the engine hand out the pub/sub messages `apply` raised (the host
/// sends one after applying log entries on a replica).
pub const REC_DELIVER: u8 = 8;
/// Output only: a message (reply = the RESP bytes) for client `client`; see above.
pub const REC_PUSH: u8 = 9;
/// The host's deadline for a blocked client passed (payload empty): answer its blocked
/// command with the timeout reply.
pub const REC_UNBLOCK: u8 = 6;
/// Output only, extra: a blocked client's command is answered (see the module comment).
pub const REC_UNBLOCKED: u8 = 7;
/// Connection limits the host enforces (`config::HOST_PARAMS`), as `name value\n` lines.
/// Input: the host sets them (its flags, or its current values for a rebuilt engine).
/// Output only as an extra record (no input record; it follows the command's record):
/// a CONFIG SET succeeded, here are the current values.
pub const REC_CONFIG: u8 = 10;
/// Output only, an extra record right after the command's own (no input record): the
/// command was a WAIT the engine accepted outside a transaction. Payload
/// `numreplicas i64 LE | timeout_ms u64 LE` (see [`WaitRequest`]). A host with a log holds
/// the command's reply (the engine's `:0`, a server without replicas) until the caller's
/// writes are durable, then answers with the number of replicas that have them.
pub const REC_WAIT: u8 = 11;
/// Output only, an extra record right after the command's own: FAILOVER was accepted
/// (its reply is `+OK`); the host steps down once the reply is out.
pub const REC_FAILOVER: u8 = 12;
/// Output only: a client's script yielded (it runs in slices of a bounded number of
/// instructions); see [`Suspension`]. The script's own output comes from a later `resume`
/// call; meanwhile the host may renew its lease, and once the record has
/// [`SUSPENDED_BUSY`] it sends what clients send as batches, which the engine answers as
/// Redis does during a busy script (-BUSY, SCRIPT KILL, …).
pub const REC_SUSPENDED: u8 = 13;
/// Output only, an extra record after the command's own (no input record): CLIENT KILL
/// closes connection `client`. The engine answers nothing more of it (its commands still
/// to come get an empty reply) and drops it at its REC_DISCONNECT.
pub const REC_KILL: u8 = 14;
/// Output only, an extra record right after SAVE's or BGSAVE's own: take a snapshot of
/// the shard now. Payload `background u8`: 0 for SAVE (the host holds its +OK until the
/// snapshot is published, or answers the error), 1 for BGSAVE (the reply goes out at once
/// unless one is already being taken), 2 for BGSAVE SCHEDULE (then taken after it).
pub const REC_SAVE: u8 = 15;
/// Output only, an extra record right after SHUTDOWN's own: stop this node (an orderly
/// shutdown, as on SIGTERM). The host closes the client's connection without a reply, or
/// answers the command's own reply (an error) when it cannot stop.
pub const REC_SHUTDOWN: u8 = 16;
/// Output only, an extra record right after MIGRATE's own (which blocks the client): send
/// these commands to another server and report its replies. Payload: [`MigrateRequest`].
pub const REC_MIGRATE: u8 = 17;
/// Input: what became of a client's REC_MIGRATE (payload: [`MigrateOutcome`]). The
/// engine answers the blocked MIGRATE in a record of this kind with OUT_UNBLOCKED.
pub const REC_MIGRATED: u8 = 18;
/// The bytes of an input record before its payload (kind, client, len).
pub const INPUT_HEADER: usize = 13;

/// REC_SUSPENDED's flag: the script has run past `busy-reply-threshold`.
pub const SUSPENDED_BUSY: u8 = 1;

/// The flags of `out` when it starts with a REC_SUSPENDED record (a script still runs).
pub fn suspended(out: &[u8]) -> Option<u8> {
    let rec = OutputReader::new(out).next()?;
    (rec.kind == REC_SUSPENDED).then_some(rec.flags)
}

/// A batch stopped at a script that yielded, as `execute` answers it: a REC_SUSPENDED
/// record whose reply is the byte range of the script's input record (`u32 LE` start,
/// end), then the output of the records before it. Those replies go out now (a client
/// never waits on a script for a command it sent before it); the records after the
/// script are the host's again, to send as commands that came during the script (so
/// once it is busy their clients get -BUSY too, as in Redis, instead of waiting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Suspension<'a> {
    pub flags: u8,
    /// The script's record in the batch's input.
    pub script: (usize, usize),
    /// The output of the records before the script.
    pub before: &'a [u8],
}

/// `out` as a batch's suspension, if it is one (a `resume`'s REC_SUSPENDED, without a
/// range, is not).
pub fn suspension(out: &[u8]) -> Option<Suspension<'_>> {
    let mut records = OutputReader::new(out);
    let rec = records.next()?;
    if rec.kind != REC_SUSPENDED || rec.reply.len() != 8 {
        return None;
    }
    let start = u32::from_le_bytes(rec.reply[..4].try_into().ok()?) as usize;
    let end = u32::from_le_bytes(rec.reply[4..].try_into().ok()?) as usize;
    Some(Suspension { flags: rec.flags, script: (start, end), before: records.rest() })
}

/// The reply of a batch's REC_SUSPENDED record (see [`Suspension`]).
pub fn encode_script_at(start: usize, end: usize) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&(start as u32).to_le_bytes());
    b[4..].copy_from_slice(&(end as u32).to_le_bytes());
    b
}

/// Whether an output record of this kind is an extra one (it answers no input record and
/// belongs to the record before it, or to `apply`).
pub fn is_extra(kind: u8) -> bool {
    matches!(kind, REC_PUSH | REC_UNBLOCKED | REC_CONFIG | REC_WAIT | REC_FAILOVER | REC_KILL | REC_SAVE | REC_SHUTDOWN | REC_MIGRATE)
}

/// What a REC_WAIT record asks of the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitRequest {
    pub numreplicas: i64,
    /// 0: no limit.
    pub timeout_ms: u64,
}

impl WaitRequest {
    pub fn encode(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.numreplicas.to_le_bytes());
        b[8..].copy_from_slice(&self.timeout_ms.to_le_bytes());
        b
    }
    pub fn decode(b: &[u8]) -> Option<WaitRequest> {
        let b: &[u8; 16] = b.try_into().ok()?;
        Some(WaitRequest { numreplicas: i64::from_le_bytes(b[..8].try_into().ok()?), timeout_ms: u64::from_le_bytes(b[8..].try_into().ok()?) })
    }
}

/// What a REC_MIGRATE record asks of the host: connect to `host:port` (each step within
/// `timeout_ms`), write `commands` (RESP), read one reply line per command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MigrateRequest {
    pub host: alloc::string::String,
    pub port: u16,
    pub timeout_ms: u64,
    pub replies: u32,
    pub commands: Vec<u8>,
}

impl MigrateRequest {
    /// `port u16 | timeout_ms u64 | replies u32 | host_len u32 | host | commands` (LE).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(18 + self.host.len() + self.commands.len());
        b.extend_from_slice(&self.port.to_le_bytes());
        b.extend_from_slice(&self.timeout_ms.to_le_bytes());
        b.extend_from_slice(&self.replies.to_le_bytes());
        b.extend_from_slice(&(self.host.len() as u32).to_le_bytes());
        b.extend_from_slice(self.host.as_bytes());
        b.extend_from_slice(&self.commands);
        b
    }
    pub fn decode(b: &[u8]) -> Option<MigrateRequest> {
        let port = u16::from_le_bytes(b.get(..2)?.try_into().ok()?);
        let timeout_ms = u64::from_le_bytes(b.get(2..10)?.try_into().ok()?);
        let replies = u32::from_le_bytes(b.get(10..14)?.try_into().ok()?);
        let n = u32::from_le_bytes(b.get(14..18)?.try_into().ok()?) as usize;
        let host = core::str::from_utf8(b.get(18..18usize.checked_add(n)?)?).ok()?.into();
        Some(MigrateRequest { host, port, timeout_ms, replies, commands: b[18 + n..].to_vec() })
    }
}

/// What became of a MIGRATE transfer (a REC_MIGRATED payload).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MigrateOutcome {
    /// No connection within the timeout.
    ConnectFailed,
    /// The connection failed or timed out writing (true) or reading (false), after the
    /// reply lines in `replies` had come.
    Broken { writing: bool, replies: Vec<Vec<u8>> },
    /// One reply line per command, without its CRLF.
    Replies(Vec<Vec<u8>>),
}

impl MigrateOutcome {
    /// `tag u8` (0 connect failed, 1 broken writing, 2 broken reading, 3 replies) then
    /// the reply lines, each `len u32 LE | bytes`.
    pub fn encode(&self) -> Vec<u8> {
        let (tag, lines): (u8, &[Vec<u8>]) = match self {
            MigrateOutcome::ConnectFailed => (0, &[]),
            MigrateOutcome::Broken { writing: true, replies } => (1, replies),
            MigrateOutcome::Broken { writing: false, replies } => (2, replies),
            MigrateOutcome::Replies(r) => (3, r),
        };
        let mut b = alloc::vec![tag];
        for l in lines {
            b.extend_from_slice(&(l.len() as u32).to_le_bytes());
            b.extend_from_slice(l);
        }
        b
    }
    pub fn decode(b: &[u8]) -> Option<MigrateOutcome> {
        let (&tag, mut rest) = b.split_first()?;
        let mut lines = Vec::new();
        while !rest.is_empty() {
            let n = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
            lines.push(rest.get(4..4usize.checked_add(n)?)?.to_vec());
            rest = &rest[4 + n..];
        }
        Some(match tag {
            0 => MigrateOutcome::ConnectFailed,
            1 => MigrateOutcome::Broken { writing: true, replies: lines },
            2 => MigrateOutcome::Broken { writing: false, replies: lines },
            3 => MigrateOutcome::Replies(lines),
            _ => return None,
        })
    }
}

/// A request the engine makes of its host for the command being run: told in an extra
/// output record (REC_WAIT, REC_FAILOVER, …) right after the command's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostRequest {
    Wait(WaitRequest),
    Failover,
    /// SAVE (false) or BGSAVE (true), BGSAVE SCHEDULE (`schedule`).
    Save {
        background: bool,
        schedule: bool,
    },
    Shutdown,
    /// MIGRATE: the transfer to run (the client stays blocked until REC_MIGRATED).
    Migrate(MigrateRequest),
}

/// The client asked to be disconnected after this reply (QUIT).
pub const OUT_CLOSE: u8 = 1;
/// The record produced effects that must be logged before the reply is released.
pub const OUT_WRITE: u8 = 2;
/// The connection switched protocol (HELLO): byte 0 of `reply` tells nothing; ask `resp3`.
pub const OUT_RESP3: u8 = 4;
/// The command blocked the client; `reply` is `deadline_ms i64 LE` (0 = no deadline).
pub const OUT_BLOCKED: u8 = 8;
/// The client is (or was, earlier in this batch) blocked: the command was not run; the
/// host re-submits it after the client is unblocked.
pub const OUT_DEFERRED: u8 = 16;
/// This record answers the client's blocked command: the host releases the client.
pub const OUT_UNBLOCKED: u8 = 32;
/// After this command the client is subscribed to something (Redis's CLIENT_PUBSUB): its
/// output is limited by the `pubsub` class of `client-output-buffer-limit`, and the idle
/// `timeout` spares it.
pub const OUT_PUBSUB: u8 = 64;
/// After this record the client must still authenticate (Redis's authRequired): the host
/// frames its requests with the unauthenticated limits, one at a time, and bounds its
/// output (CVE-2021-32675, CVE-2025-21605). Set on REC_CONNECT and REC_COMMAND outputs.
pub const OUT_AUTH_REQUIRED: u8 = 128;

#[derive(Default)]
pub struct BatchWriter {
    pub buf: Vec<u8>,
    pub records: usize,
    open: usize,
}

impl BatchWriter {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn clear(&mut self) {
        self.buf.clear();
        self.records = 0;
    }
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }
    pub fn record(&mut self, kind: u8, client: u64, payload: &[u8]) {
        self.begin(kind, client);
        self.buf.extend_from_slice(payload);
        self.end();
    }
    /// Starts a record whose payload the caller appends to `buf`; close it with `end`.
    pub fn begin(&mut self, kind: u8, client: u64) {
        self.open = self.buf.len();
        self.buf.push(kind);
        self.buf.extend_from_slice(&client.to_le_bytes());
        self.buf.extend_from_slice(&[0; 4]);
    }
    pub fn end(&mut self) {
        let o = self.open;
        let payload = (self.buf.len() - o - INPUT_HEADER) as u32;
        self.buf[o + 9..o + 13].copy_from_slice(&payload.to_le_bytes());
        self.records += 1;
    }
}

pub struct InRecord<'a> {
    pub kind: u8,
    pub client: u64,
    pub payload: &'a [u8],
}

/// Iterates input records; stops at the first malformed one (the host wrote it, so a bad
/// record means a bug, and the engine must not read past the buffer).
pub struct BatchReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> BatchReader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        BatchReader { buf, pos: 0 }
    }

    /// The records not read yet.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }
}

impl<'a> Iterator for BatchReader<'a> {
    type Item = InRecord<'a>;
    fn next(&mut self) -> Option<InRecord<'a>> {
        let b = &self.buf[self.pos..];
        if b.len() < 13 {
            return None;
        }
        let kind = b[0];
        let client = u64::from_le_bytes(b[1..9].try_into().ok()?);
        let len = u32::from_le_bytes(b[9..13].try_into().ok()?) as usize;
        if b.len() < 13 + len {
            return None;
        }
        self.pos += 13 + len;
        Some(InRecord { kind, client, payload: &b[13..13 + len] })
    }
}

pub struct OutRecord<'a> {
    pub kind: u8,
    pub client: u64,
    pub flags: u8,
    pub reply: &'a [u8],
    pub effects: &'a [u8],
}

pub fn write_out(out: &mut Vec<u8>, kind: u8, client: u64, flags: u8, reply: &[u8], effects: &[u8]) {
    out.push(kind);
    out.extend_from_slice(&client.to_le_bytes());
    out.push(flags);
    out.extend_from_slice(&(reply.len() as u32).to_le_bytes());
    out.extend_from_slice(reply);
    out.extend_from_slice(&(effects.len() as u32).to_le_bytes());
    out.extend_from_slice(effects);
}

pub struct OutputReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> OutputReader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        OutputReader { buf, pos: 0 }
    }
    /// What follows the records read so far.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }
}

impl<'a> Iterator for OutputReader<'a> {
    type Item = OutRecord<'a>;
    fn next(&mut self) -> Option<OutRecord<'a>> {
        let b = &self.buf[self.pos..];
        if b.len() < 14 {
            return None;
        }
        let kind = b[0];
        let client = u64::from_le_bytes(b[1..9].try_into().ok()?);
        let flags = b[9];
        let rl = u32::from_le_bytes(b[10..14].try_into().ok()?) as usize;
        let r_end = 14 + rl;
        if b.len() < r_end + 4 {
            return None;
        }
        let el = u32::from_le_bytes(b[r_end..r_end + 4].try_into().ok()?) as usize;
        let e_end = r_end + 4 + el;
        if b.len() < e_end {
            return None;
        }
        self.pos += e_end;
        Some(OutRecord { kind, client, flags, reply: &b[14..r_end], effects: &b[r_end + 4..e_end] })
    }
}

/// One effect: a command to apply in database `db`.
pub struct Effect<'a> {
    pub db: u8,
    pub command: &'a [u8],
}

/// Iterates effects; None at the end or at a malformed effect.
pub struct EffectReader<'a> {
    buf: &'a [u8],
    pos: usize,
    args: Vec<(usize, usize)>,
}

impl<'a> EffectReader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        EffectReader { buf, pos: 0, args: Vec::new() }
    }
    /// True when every byte was consumed by well-formed effects.
    pub fn at_end(&self) -> bool {
        self.pos == self.buf.len()
    }

    /// The next effect, with its arguments' ranges (within `command`) left in `args`, for
    /// a caller that needs them: the command is parsed once.
    pub fn next_with_args(&mut self, args: &mut Vec<(usize, usize)>) -> Option<Effect<'a>> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let db = self.buf[self.pos];
        let rest = &self.buf[self.pos + 1..];
        args.clear();
        let n = crate::protocol::resp::read_command(rest, args)?;
        self.pos += 1 + n;
        Some(Effect { db, command: &rest[..n] })
    }
}

impl<'a> Iterator for EffectReader<'a> {
    type Item = Effect<'a>;
    fn next(&mut self) -> Option<Effect<'a>> {
        let mut args = core::mem::take(&mut self.args);
        let fx = self.next_with_args(&mut args);
        self.args = args;
        fx
    }
}
