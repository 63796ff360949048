//! Per-connection state the engine keeps: protocol, selected database, transaction queue,
//! watched keys. The host owns the socket; the engine owns what commands can change.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

pub struct MultiState {
    /// Queued commands as RESP bytes, re-read at EXEC.
    pub queue: Vec<Vec<u8>>,
    /// A queued command was rejected (unknown, arity, OOM): EXEC answers EXECABORT.
    pub aborted: bool,
}

pub struct Watched {
    pub db: usize,
    pub key: Box<[u8]>,
    /// The key was already logically expired when watched (so its expiry is no change).
    pub expires: bool,
}

/// What MIGRATE needs to finish once the target has answered.
pub struct PendingMigrate {
    pub db: usize,
    /// The keys sent, registered in `State::migrating`: one written meanwhile (by another
    /// client while the transfer ran) is not deleted at the end.
    pub keys: Vec<Vec<u8>>,
    pub copy: bool,
    /// Replies that come before the RESTOREs' (AUTH's, SELECT's).
    pub prefix: usize,
}

pub struct Client {
    pub id: u64,
    pub db: usize,
    pub resp3: bool,
    pub name: Option<Vec<u8>>,
    pub lib_name: Option<Vec<u8>>,
    pub lib_ver: Option<Vec<u8>>,
    pub addr: Vec<u8>,
    pub laddr: Vec<u8>,
    pub created_ms: i64,
    pub last_ms: i64,
    pub last_cmd: &'static str,
    pub multi: Option<MultiState>,
    pub watched: Vec<Watched>,
    /// CLIENT REPLY OFF/SKIP.
    pub reply_off: bool,
    /// Skip the reply of the command being run (set from `reply_skip_next`).
    pub reply_skip: bool,
    /// CLIENT REPLY SKIP was just run: skip the next command's reply.
    pub reply_skip_next: bool,
    /// Pub/sub subscriptions.
    pub subs: crate::server::pubsub::ClientSubs,
    /// The command this client is blocked on (BLPOP…), if any.
    pub blocked: Option<crate::server::blocked::Blocked>,
    /// The MIGRATE whose transfer the host runs (the client is blocked meanwhile).
    pub migrating: Option<alloc::boxed::Box<PendingMigrate>>,
    /// The engine batch in which a command of this client was deferred: its later commands
    /// in that batch are deferred too, so they run in order.
    pub deferred_in: u64,
    /// Cluster mode: READONLY was sent (reads may be served by a replica).
    pub readonly: bool,
    /// Cluster mode: ASKING was sent (the next command may use an importing slot).
    pub asking: bool,
    /// ACL user (slot and generation in `acl::Acl`; `acl::SUPERUSER` for internal clients).
    pub user: u32,
    pub user_gen: u32,
    /// Authenticated (AUTH/HELLO AUTH, or the default user needed no password).
    pub authenticated: bool,
    /// MONITOR was sent (see `server::monitor`).
    pub monitor: bool,
    /// CLIENT TRACKING is on (its mode is in `State::tracking`).
    pub tracking: bool,
    /// CLIENT KILL closed it: nothing of it runs any more; gone at its disconnect.
    pub killed: bool,
    /// CLIENT NO-EVICT ON (shown in CLIENT LIST; the engine evicts no clients anyway).
    pub no_evict: bool,
    /// CLIENT NO-TOUCH ON: its commands leave keys' access times alone (TOUCH aside).
    pub no_touch: bool,
}

impl Client {
    pub fn new(id: u64, now_ms: i64) -> Self {
        Client {
            id,
            db: 0,
            resp3: false,
            name: None,
            lib_name: None,
            lib_ver: None,
            addr: Vec::new(),
            laddr: Vec::new(),
            created_ms: now_ms,
            last_ms: now_ms,
            last_cmd: "NULL",
            multi: None,
            watched: Vec::new(),
            reply_off: false,
            reply_skip: false,
            reply_skip_next: false,
            subs: Default::default(),
            blocked: None,
            migrating: None,
            deferred_in: 0,
            readonly: false,
            asking: false,
            user: crate::server::acl::DEFAULT_SLOT,
            user_gen: 0,
            authenticated: false,
            monitor: false,
            tracking: false,
            killed: false,
            no_evict: false,
            no_touch: false,
        }
    }
}

/// One CLIENT LIST line in Redis 7's format (socket-level fields are the host's; we report
/// the ones the engine knows and neutral values for the rest). `tracking`: the client's
/// CLIENT TRACKING mode, if on.
pub fn client_line(c: &Client, user: &[u8], tracking: Option<&crate::server::tracking::Mode>, now_ms: i64, out: &mut Vec<u8>) {
    let name = c.name.as_deref().unwrap_or(b"");
    // Redis's order: O (monitor), P (subscribed), x (in MULTI), b (blocked), t (tracking),
    // R (tracking redirection broken), B (tracking BCAST), e (no-evict), T (no-touch);
    // N: none.
    let mut flags = alloc::string::String::new();
    let (broken, bcast) = tracking.map_or((false, false), |m| (m.broken_redirect, m.bcast));
    let flag_bits = [
        (c.monitor, 'O'),
        (c.subs.active(), 'P'),
        (c.multi.is_some(), 'x'),
        (c.blocked.is_some(), 'b'),
        (tracking.is_some(), 't'),
        (broken, 'R'),
        (bcast, 'B'),
        (c.no_evict, 'e'),
        (c.no_touch, 'T'),
    ];
    for (on, f) in flag_bits {
        if on {
            flags.push(f);
        }
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let multi = c.multi.as_ref().map_or(-1, |m| m.queue.len() as i64);
    let line = alloc::format!(
        "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user={} redir={} resp={} lib-name={} lib-ver={}\n",
        c.id,
        String::from_utf8_lossy(&c.addr),
        String::from_utf8_lossy(&c.laddr),
        String::from_utf8_lossy(name),
        (now_ms - c.created_ms).max(0) / 1000,
        (now_ms - c.last_ms).max(0) / 1000,
        flags,
        c.db,
        c.subs.channels.len(),
        c.subs.patterns.len(),
        c.subs.shard.len(),
        multi,
        c.last_cmd,
        String::from_utf8_lossy(user),
        tracking.map_or(-1, |m| m.redirect as i64),
        if c.resp3 { 3 } else { 2 },
        String::from_utf8_lossy(c.lib_name.as_deref().unwrap_or(b"")),
        String::from_utf8_lossy(c.lib_ver.as_deref().unwrap_or(b"")),
    );
    out.extend_from_slice(line.as_bytes());
}
