//! What a command handler sees: the shard state, its client, its reply and the effects
//! buffer. Key access goes through `State` so lazy expiry, WATCH invalidation and the
//! effects of expiry are handled in one place.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::client::Client;
use crate::engine::State;
use crate::keyspace::object::{Entry, NO_EXPIRE, Value};
use crate::protocol::reply::Reply;

/// Appends one effect: `db` then the command as RESP.
pub fn emit(fx: &mut Vec<u8>, db: usize, args: &[&[u8]]) {
    fx.push(db as u8);
    crate::protocol::resp::encode_command(fx, args);
}

impl State {
    #[inline]
    pub fn lru_clock(&self) -> u32 {
        (self.now_ms / 1000) as u32
    }

    /// Checks a key's TTL. If it has passed, a primary deletes the key and emits DEL;
    /// a replica only reports it gone (the primary's DEL will follow in the log).
    /// Returns true when the key is logically absent because it expired.
    /// While applying a primary's effects nothing expires by itself: the primary saw every
    /// key it touched alive, and its DEL effects carry the expirations.
    pub fn expire_if_needed(&mut self, db: usize, key: &[u8], fx: &mut Vec<u8>) -> bool {
        if self.applying || self.dbs[db].expires.is_empty() {
            return false;
        }
        match self.dbs[db].keys.get(key) {
            Some(e) if e.expire_at != NO_EXPIRE && e.expire_at <= self.now_ms => {}
            _ => return false,
        }
        if self.replica_mode {
            return true;
        }
        self.dbs[db].remove(key);
        self.stats.expired_keys += 1;
        emit(fx, db, &[b"DEL", key]);
        self.touch_watched(db, key);
        self.notify(crate::notify::EXPIRED, "expired", key, db);
        true
    }

    /// Looks a key up for reading (counts hits/misses, refreshes its LRU clock).
    pub fn read(&mut self, db: usize, key: &[u8], fx: &mut Vec<u8>) -> Option<&Entry> {
        if self.expire_if_needed(db, key, fx) {
            self.stats.keyspace_misses += 1;
            self.notify(crate::notify::KEY_MISS, "keymiss", key, db);
            return None;
        }
        if self.config.notify_flags & crate::notify::KEY_MISS != 0 && !self.dbs[db].keys.contains_key(key) {
            // (Checked apart from the lookup below, which returns a borrow.)
            self.stats.keyspace_misses += 1;
            self.notify(crate::notify::KEY_MISS, "keymiss", key, db);
            return None;
        }
        let lru = self.lru_clock();
        match self.dbs[db].keys.get_mut(key) {
            Some(e) => {
                self.stats.keyspace_hits += 1;
                e.lru = lru;
                Some(e)
            }
            None => {
                self.stats.keyspace_misses += 1;
                None
            }
        }
    }

    /// Looks a key up for a write.
    pub fn write(&mut self, db: usize, key: &[u8], fx: &mut Vec<u8>) -> Option<&mut Entry> {
        self.expire_if_needed(db, key, fx);
        let lru = self.lru_clock();
        let e = self.dbs[db].keys.get_mut(key)?;
        e.lru = lru;
        Some(e)
    }

    /// Existence check that honours expiry (no hit/miss accounting).
    pub fn exists(&mut self, db: usize, key: &[u8], fx: &mut Vec<u8>) -> bool {
        if self.expire_if_needed(db, key, fx) {
            return false;
        }
        self.dbs[db].keys.contains_key(key)
    }

    pub fn set_value(&mut self, db: usize, key: &[u8], val: Value, keep_ttl: bool) {
        self.notify_new(db, key);
        let lru = self.lru_clock();
        self.dbs[db].set(key, val, keep_ttl, lru);
        self.touch_watched(db, key);
    }

    pub fn delete(&mut self, db: usize, key: &[u8]) -> Option<Entry> {
        let e = self.dbs[db].remove(key)?;
        self.touch_watched(db, key);
        Some(e)
    }

    /// Marks clients that WATCH this key as dirty (their EXEC will fail).
    pub fn touch_watched(&mut self, db: usize, key: &[u8]) {
        if self.watched.is_empty() {
            return;
        }
        let mut k = Vec::with_capacity(key.len() + 1);
        k.push(db as u8);
        k.extend_from_slice(key);
        if let Some(ids) = self.watched.get(&k) {
            for id in ids {
                self.cas_dirty.insert(*id);
            }
        }
    }

    /// Marks every watcher of a key that exists in `db` (FLUSHDB/FLUSHALL).
    pub fn touch_all_watched(&mut self, db: Option<usize>) {
        if self.watched.is_empty() {
            return;
        }
        let mut dirty = Vec::new();
        for (k, ids) in self.watched.iter() {
            let d = k[0] as usize;
            if db.is_none_or(|x| x == d) && self.dbs[d].keys.contains_key(&k[1..]) {
                dirty.extend_from_slice(ids);
            }
        }
        self.cas_dirty.extend(dirty);
    }

    pub fn used_memory(&self) -> usize {
        (self.memory_probe)()
    }
}

pub struct Ctx<'a> {
    pub st: &'a mut State,
    pub client: &'a mut Client,
    /// Every other connected client (the current one is `client`).
    pub clients: &'a [Option<Client>],
    pub reply: &'a mut Reply,
    pub fx: &'a mut Vec<u8>,
    /// Close the connection after the reply (QUIT).
    pub close: bool,
    /// Number of changes the current command made (Redis's `server.dirty`).
    pub dirty: u64,
    /// The handler emitted its own effects instead of its argv.
    pub custom_fx: bool,
    /// Nesting: set while EXEC runs queued commands.
    pub in_exec: bool,
    /// Set when the command is re-run for a blocked client: the key that became ready.
    pub ready_key: Option<&'a [u8]>,
    /// The command could not be served and asks to block (see `blocked`).
    pub block: Option<crate::blocked::BlockRequest>,
    /// CLIENT UNBLOCK requests: (client id, answer with an error instead of a timeout).
    pub unblock: Vec<(u64, bool)>,
}

impl<'a> Ctx<'a> {
    pub fn new(st: &'a mut State, client: &'a mut Client, clients: &'a [Option<Client>], reply: &'a mut Reply, fx: &'a mut Vec<u8>) -> Self {
        Ctx { st, client, clients, reply, fx, close: false, dirty: 0, custom_fx: false, in_exec: false, ready_key: None, block: None, unblock: Vec::new() }
    }

    /// False where Redis sets CLIENT_DENY_BLOCKING (inside MULTI/EXEC) or nothing can
    /// wait (applying a primary's effects): a blocking command then answers as on timeout.
    pub fn may_block(&self) -> bool {
        !self.in_exec && self.client.multi.is_none() && !self.st.applying
    }

    /// When re-run for a blocked client, the key that became ready (serve from it only,
    /// like Redis's serveClientsBlockedOn*Key).
    pub fn ready_key(&self) -> Option<&'a [u8]> {
        self.ready_key
    }

    /// Blocks the client on `keys` until `deadline` (unix ms, 0 = never); the command is
    /// re-run when one of them is written. Re-run for a waiter, it keeps its place in line.
    pub fn block(&mut self, keys: &[&[u8]], deadline: i64) {
        self.block = Some(crate::blocked::BlockRequest { keys: keys.iter().map(|k| Box::from(*k)).collect(), deadline, rewritten: None, asking: false });
    }

    /// Like `block`, re-running `argv` instead of the command itself.
    pub fn block_as(&mut self, keys: &[&[u8]], deadline: i64, argv: &[&[u8]]) {
        let mut cmd = Vec::new();
        crate::protocol::resp::encode_command(&mut cmd, argv);
        self.block = Some(crate::blocked::BlockRequest { keys: keys.iter().map(|k| Box::from(*k)).collect(), deadline, rewritten: Some(cmd), asking: false });
    }

    #[inline]
    pub fn db(&self) -> usize {
        self.client.db
    }

    /// Replaces the default effect (argv verbatim) with `args`; may be called repeatedly.
    pub fn propagate(&mut self, args: &[&[u8]]) {
        self.custom_fx = true;
        if !self.st.applying {
            emit(self.fx, self.client.db, args);
        }
    }

    /// The command had nothing to replicate even though it may have counted as dirty.
    pub fn propagate_nothing(&mut self) {
        self.custom_fx = true;
    }

    pub fn err(&mut self, msg: &str) {
        self.reply.error(msg.as_bytes());
    }
    pub fn wrongtype(&mut self) {
        self.reply.error(b"WRONGTYPE Operation against a key holding the wrong kind of value");
    }
    pub fn syntax_error(&mut self) {
        self.reply.error(b"ERR syntax error");
    }
    pub fn not_integer(&mut self) {
        self.reply.error(b"ERR value is not an integer or out of range");
    }
    pub fn not_float(&mut self) {
        self.reply.error(b"ERR value is not a valid float");
    }

    /// Parses an integer argument or replies with Redis's error.
    pub fn int_arg(&mut self, a: &[u8]) -> Option<i64> {
        let v = crate::util::parse_i64(a);
        if v.is_none() {
            self.not_integer();
        }
        v
    }

    pub fn lru(&self) -> u32 {
        self.st.lru_clock()
    }
}
