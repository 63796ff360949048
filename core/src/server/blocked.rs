//! Clients blocked on keys (Redis's blocked.c, the key side). The engine keeps, per key,
//! the FIFO of clients waiting on it, and serves them right after a command whose effects
//! touched the key; the host parks the connections and fires deadlines (the protocol is
//! described in `batch`).
//!
//! A blocking command is written once for both paths: run normally it serves or calls
//! `ctx.block(...)`; re-run for a waiter (`ctx.ready_key()` is then the key that became
//! ready) it serves from that key or calls `ctx.block(...)` again, which keeps the waiter's
//! place in line. Inside MULTI/EXEC (`!ctx.may_block()`) it answers as on a timeout.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

use crate::server::ctx::Ctx;

/// What a handler asks for when it cannot serve now.
pub struct BlockRequest {
    pub keys: Vec<Box<[u8]>>,
    /// Unix ms, 0 = no deadline.
    pub deadline: i64,
    /// The command to re-run when a key is ready, if not the command itself (XREAD `$`
    /// becomes the stream's last id at blocking time).
    pub rewritten: Option<Vec<u8>>,
    /// It ran right after ASKING (cluster mode: a key of a slot importing here).
    pub asking: bool,
    /// Held by CLIENT PAUSE (no keys; re-run from the start when the pause ends).
    pub postponed: bool,
}

/// A blocked client's command, kept on its `Client`.
pub struct Blocked {
    pub db: usize,
    pub keys: Vec<Box<[u8]>>,
    pub deadline: i64,
    /// The command as RESP, re-run for every attempt to serve it.
    pub command: Vec<u8>,
    /// Re-runs are as after ASKING (see `BlockRequest::asking`).
    pub asking: bool,
    /// Postponed by CLIENT PAUSE (see `server::pause`): not a key waiter, not counted
    /// in blocked_clients (as Redis's BLOCKED_POSTPONE).
    pub postponed: bool,
}

/// Index of waiters: (db, key) → client ids in blocking order; and keys touched since the
/// last serving round (Redis's `ready_keys`).
#[derive(Default)]
pub struct BlockingKeys {
    waiters: BTreeMap<(u8, Box<[u8]>), VecDeque<u64>>,
    ready: VecDeque<(u8, Box<[u8]>)>,
    /// Streams an XADD appended to since the last serving round (see `stream_appended`).
    appended: Vec<(u8, Box<[u8]>)>,
    blocked_clients: usize,
}

impl BlockingKeys {
    pub fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }

    /// Clients blocked right now (INFO blocked_clients).
    pub fn blocked_clients(&self) -> usize {
        self.blocked_clients
    }

    pub fn add(&mut self, id: u64, b: &Blocked) {
        if b.postponed {
            return;
        }
        for k in &b.keys {
            self.waiters.entry((b.db as u8, k.clone())).or_default().push_back(id);
        }
        self.blocked_clients += 1;
    }

    pub fn remove(&mut self, id: u64, b: &Blocked) {
        if b.postponed {
            return;
        }
        for k in &b.keys {
            let key = (b.db as u8, k.clone());
            if let Some(q) = self.waiters.get_mut(&key) {
                q.retain(|&c| c != id);
                if q.is_empty() {
                    self.waiters.remove(&key);
                    self.ready.retain(|r| *r != key);
                }
            }
        }
        self.blocked_clients = self.blocked_clients.saturating_sub(1);
    }

    /// A write touched `key` in `db`: if anyone waits on it, it joins the ready keys (once).
    pub fn signal(&mut self, db: u8, key: &[u8]) {
        let k = (db, Box::from(key));
        if self.waiters.contains_key(&k) && !self.ready.contains(&k) {
            self.ready.push_back(k);
        }
    }

    pub fn next_ready(&mut self) -> Option<(u8, Box<[u8]>)> {
        let next = self.ready.pop_front();
        if next.is_none() {
            self.appended.clear();
        }
        next
    }

    /// XADD appended to the stream at `key` (and may have trimmed the entry away at once):
    /// Redis 7.0 then serves its readers whenever the stream's last id passed theirs, even
    /// with no entry to give (an empty list). Other writes serve only new entries.
    pub fn stream_appended(&mut self, db: u8, key: &[u8]) {
        let k = (db, Box::from(key));
        if self.waiters.contains_key(&k) && !self.appended.contains(&k) {
            self.appended.push(k);
        }
    }

    pub fn was_appended(&self, db: u8, key: &[u8]) -> bool {
        self.appended.iter().any(|(d, k)| *d == db && **k == *key)
    }

    /// The keys of `db` that someone waits on.
    pub fn keys_in(&self, db: u8) -> Vec<Box<[u8]>> {
        self.waiters.keys().filter(|(d, _)| *d == db).map(|(_, k)| k.clone()).collect()
    }

    /// The waiters of a key, in blocking order (a copy: serving changes the queue).
    pub fn waiters(&self, db: u8, key: &[u8]) -> Vec<u64> {
        self.waiters.get(&(db, Box::from(key))).map(|q| q.iter().copied().collect()).unwrap_or_default()
    }
}

/// The start of a blocking pop (BLPOP/BRPOP/BLMPOP, BZPOPMIN/BZPOPMAX/BZMPOP): the keys to
/// try, in order, and the deadline. Run normally: every key, once `timeout` parses. Re-run
/// for a waiter: only the key that became ready, and only if `ready` holds for it (else the
/// client keeps waiting). None: already answered (a bad timeout) or blocked again.
pub fn pop_candidates<'c: 'k, 'k>(
    ctx: &mut Ctx<'c>,
    keys: &[&'k [u8]],
    timeout: &[u8],
    ready: impl FnOnce(&mut Ctx<'c>, &[u8]) -> bool,
) -> Option<(Vec<&'k [u8]>, i64)> {
    let Some(k) = ctx.ready_key() else {
        return parse_timeout_secs(ctx, timeout).map(|deadline| (keys.to_vec(), deadline));
    };
    if !ready(ctx, k) {
        ctx.block(keys, 0);
        return None;
    }
    Some((alloc::vec![k], 0))
}

/// Redis's `getTimeoutFromObjectOrReply` for float seconds: the absolute deadline in ms
/// (0 = block forever), or None after the error reply.
pub fn parse_timeout_secs(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<i64> {
    let Some(secs) = crate::util::parse_f64(arg) else {
        ctx.err("ERR timeout is not a float or out of range");
        return None;
    };
    // (long long)(ftval * 1000.0): a value out of the C range converts to LLONG_MIN on
    // x86, so huge or infinite timeouts read as negative, as in Redis.
    let ms = secs * 1000.0;
    let ms = if ms.is_finite() && ms > -9.2e18 && ms < 9.2e18 { ms as i64 } else { i64::MIN };
    deadline_from_ms(ctx, ms)
}

/// The same for integer milliseconds (XREAD BLOCK, WAIT-style arguments).
pub fn parse_timeout_ms(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<i64> {
    let Some(ms) = crate::util::parse_i64(arg) else {
        ctx.err("ERR timeout is not an integer or out of range");
        return None;
    };
    deadline_from_ms(ctx, ms)
}

/// An absolute deadline `ms` from now (0 = block forever), or None after the error reply.
pub fn deadline_from_ms(ctx: &mut Ctx<'_>, ms: i64) -> Option<i64> {
    if ms < 0 {
        ctx.err("ERR timeout is negative");
        return None;
    }
    if ms == 0 {
        return Some(0);
    }
    let now = ctx.st.now_ms;
    if ms > i64::MAX - now {
        ctx.err("ERR timeout is out of range");
        return None;
    }
    Some(now + ms)
}
