//! The shard's state: every database, the configuration, statistics, clients' WATCHes,
//! subscriptions, blocked clients, ACL users and the cluster's slot map, with the key
//! access every command goes through (lazy expiry, WATCH invalidation, notifications and
//! the effects of expiry handled in one place).

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use crate::keyspace::db::Db;
use crate::keyspace::object::{Entry, NO_EXPIRE, Value};
use crate::server::client::Client;
use crate::server::config::Config;
use crate::server::ctx::emit;
use crate::server::spec::{CommandIndex, CommandSpec};
use crate::types::dict::Dict;
use crate::util::Rng;

/// Databases a shard starts with (`databases`' default, as Redis's).
pub const DEFAULT_DBS: usize = 16;
/// The most databases `databases` may set: an effect and a snapshot record name their
/// database in one byte, and a snapshot's 0xFF marks a state record.
pub const MAX_DBS: usize = 255;

#[derive(Default, Clone)]
pub struct Stats {
    pub commands: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub expired_keys: u64,
    /// Hash fields removed because their TTL passed (Redis 7.4's expired_subkeys).
    pub expired_subkeys: u64,
    pub evicted_keys: u64,
    pub connections: u64,
    pub rejected_oom: u64,
    pub unknown_commands: u64,
    /// The most memory in use seen (INFO's used_memory_peak; CONFIG RESETSTAT resets it).
    pub peak_memory: usize,
    pub ops: OpsRate,
}

/// INFO's instantaneous_ops_per_sec: Redis's trackInstantaneousMetric, a sample of the
/// command rate at most every 100 ms (each tick), averaged over the last 16.
#[derive(Default, Clone)]
pub struct OpsRate {
    samples: [u64; 16],
    next: usize,
    last_ms: i64,
    last_commands: u64,
}

impl OpsRate {
    pub fn sample(&mut self, now_ms: i64, commands: u64) {
        let elapsed = now_ms - self.last_ms;
        if self.last_ms != 0 && elapsed < 100 {
            return;
        }
        if self.last_ms != 0 {
            self.samples[self.next] = commands.saturating_sub(self.last_commands) * 1000 / elapsed as u64;
            self.next = (self.next + 1) % self.samples.len();
        }
        self.last_ms = now_ms;
        self.last_commands = commands;
    }

    pub fn per_second(&self) -> u64 {
        self.samples.iter().sum::<u64>() / self.samples.len() as u64
    }
}

/// Everything a command can touch besides its own client.
pub struct State {
    pub dbs: Vec<Db>,
    pub config: Config,
    pub stats: Stats,
    pub now_ms: i64,
    pub now_us: i64,
    pub start_ms: i64,
    pub rng: Rng,
    /// Seed for hash tables (chosen by the host at start).
    pub seed: u64,
    /// `db ‖ key` → ids of clients watching it.
    pub watched: Dict<Vec<u64>>,
    /// Clients whose WATCHed keys changed.
    pub cas_dirty: BTreeSet<u64>,
    /// A replica serving reads: expired keys read as absent but are not deleted (the
    /// primary's DEL effect will come through the log).
    pub replica_mode: bool,
    /// Active expiry runs on ticks (DEBUG SET-ACTIVE-EXPIRE 0 stops it; lazy expiry stays).
    pub active_expire: bool,
    /// Applying a primary's effects: nothing expires or is evicted by itself.
    pub applying: bool,
    pub index: CommandIndex,
    /// Measures the engine's heap in use (the component's allocator), for maxmemory.
    pub memory_probe: fn() -> usize,
    pub server_info: Vec<u8>,
    pub lastsave: i64,
    /// Index of the db the active expiry cycle resumes at.
    pub expire_cursor_db: usize,
    /// `name:value` lines the host reports for INFO replication and ROLE.
    pub role_info: Vec<(alloc::string::String, alloc::string::String)>,
    /// Cluster mode: the slot map and the nodes, parsed from `role_info` (None: off).
    pub cluster: Option<crate::server::cluster::ClusterMap>,
    /// Pub/sub subscriptions and the messages not yet handed to the host.
    pub pubsub: crate::server::pubsub::PubSub,
    /// Clients in MONITOR mode.
    pub monitors: crate::server::monitor::Monitors,
    /// Clients blocked on keys, per key in blocking order (see `blocked`).
    pub blocking: crate::server::blocked::BlockingKeys,
    /// ACL users and the ACL LOG.
    pub acl: crate::server::acl::Acl,
    /// The EVAL script cache and the Lua VM (per node, not logged: as in Redis).
    pub scripts: crate::server::scripts::Scripts,
    /// Function libraries (logged: FUNCTION LOAD/DELETE/FLUSH are effects).
    pub functions: crate::server::functions::Functions,
    /// Client-side caching: who cached which keys, invalidations owed.
    pub tracking: crate::server::tracking::Tracking,
    /// Keys MIGRATE has sent and not finished with, and whether they were written since.
    pub migrating: crate::server::migrating::Migrating,
    /// The running command's client is in CLIENT NO-TOUCH mode: lookups leave keys'
    /// access times alone.
    pub no_touch: bool,
    /// CLIENT PAUSE in force (see `pause`), and the clients it postponed, in order.
    pub paused: Option<crate::server::pause::Pause>,
    pub postponed: Vec<u64>,
    /// A monotonic clock in µs, read around each command for its duration (the
    /// component's one import; natively whatever the embedder sets, 0 by default). It
    /// feeds measurements only: INFO commandstats and the slow log, never data.
    pub clock: fn() -> u64,
    /// When the last command of this engine call ended (None at a call's start).
    pub clock_mark: Option<u64>,
    /// INFO commandstats and errorstats.
    pub cmdstats: crate::server::cmdstats::CommandStats,
    pub slowlog: crate::server::slowlog::SlowLog,
    pub latency: crate::server::latency::LatencyMonitor,
    /// INFO's run_id: 40 hex digits drawn from the seed, new with every engine.
    pub run_id: alloc::string::String,
    /// Memory in use once the engine was set up (INFO's used_memory_startup).
    pub startup_memory: usize,
}

impl State {
    /// At least `n` databases (at most [`MAX_DBS`]): `databases` set at start, or a
    /// database named by the log or a snapshot of a node that had more (its data is kept,
    /// whatever this node's `databases` says; only SELECT and the like go by the setting).
    pub fn ensure_dbs(&mut self, n: usize) {
        let seed = self.seed;
        while self.dbs.len() < n.min(MAX_DBS) {
            let i = self.dbs.len() as u64;
            self.dbs.push(Db::new(seed.wrapping_add(i)));
        }
    }

    /// An empty shard: 16 databases, default configuration, no clients, dispatching
    /// through the commands of `table`.
    pub fn new(seed: u64, table: &'static [CommandSpec]) -> State {
        let dbs = (0..DEFAULT_DBS).map(|i| Db::new(seed.wrapping_add(i as u64))).collect();
        State {
            dbs,
            config: Config::default(),
            stats: Stats::default(),
            now_ms: 0,
            now_us: 0,
            start_ms: 0,
            rng: Rng::new(seed),
            seed,
            watched: Dict::new(seed ^ 0x77),
            cas_dirty: BTreeSet::new(),
            replica_mode: false,
            active_expire: true,
            applying: false,
            index: CommandIndex::new(table),
            memory_probe: no_probe,
            server_info: Vec::new(),
            lastsave: 0,
            expire_cursor_db: 0,
            role_info: Vec::new(),
            cluster: None,
            pubsub: Default::default(),
            monitors: Default::default(),
            blocking: Default::default(),
            acl: crate::server::acl::Acl::new(table),
            scripts: Default::default(),
            functions: Default::default(),
            tracking: crate::server::tracking::Tracking::new(seed ^ 0x7c),
            migrating: Default::default(),
            no_touch: false,
            paused: None,
            postponed: Vec::new(),
            clock: no_clock,
            clock_mark: None,
            cmdstats: Default::default(),
            slowlog: Default::default(),
            latency: Default::default(),
            run_id: {
                let mut r = Rng::new(seed ^ 0x72756e5f6964);
                (0..40).map(|_| char::from(b"0123456789abcdef"[(r.next_u64() % 16) as usize])).collect()
            },
            startup_memory: 0,
        }
    }
}

fn no_probe() -> usize {
    0
}

/// A key's access field after one access now: the clock, or under LFU its counter after
/// Redis's updateLFU (decay, then a logarithmic increment drawn from `rng`).
#[inline]
fn access(config: &Config, rng: &mut Rng, now_ms: i64, field: u32) -> u32 {
    if !config.policy.is_lfu() {
        return (now_ms / 1000) as u32;
    }
    let r = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    crate::keyspace::lfu::touched(field, now_ms, config.lfu_decay_time, config.lfu_log_factor, r)
}

fn no_clock() -> u64 {
    0
}

impl State {
    /// The access clock in seconds (LRU; INFO's lru_clock, OBJECT IDLETIME).
    #[inline]
    pub fn lru_clock(&self) -> u32 {
        (self.now_ms / 1000) as u32
    }

    /// Whether keys' access fields count frequency (an LFU `maxmemory-policy`).
    #[inline]
    pub fn lfu(&self) -> bool {
        self.config.policy.is_lfu()
    }

    /// The access field of a key created now: the clock, or under LFU the initial count.
    #[inline]
    pub fn new_access(&self) -> u32 {
        if self.lfu() { crate::keyspace::lfu::init(self.now_ms) } else { self.lru_clock() }
    }

    /// A key's access counter as of now (OBJECT FREQ, eviction under LFU).
    pub fn lfu_count(&self, field: u32) -> u32 {
        crate::keyspace::lfu::decayed(field, self.now_ms, self.config.lfu_decay_time)
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
        // A replica waits for the primary's DEL; during CLIENT PAUSE nothing is deleted.
        if self.replica_mode || self.writes_paused() {
            return true;
        }
        self.dbs[db].remove(key);
        self.stats.expired_keys += 1;
        emit(fx, db, &[b"DEL", key]);
        self.signal_modified_key(db, key);
        self.notify(crate::server::notify::EXPIRED, "expired", key, db);
        true
    }

    /// Looks a key up for reading (counts hits/misses, refreshes its LRU clock).
    pub fn read(&mut self, db: usize, key: &[u8], fx: &mut Vec<u8>) -> Option<&Entry> {
        if self.expire_if_needed(db, key, fx) {
            self.stats.keyspace_misses += 1;
            self.notify(crate::server::notify::KEY_MISS, "keymiss", key, db);
            return None;
        }
        if !self.dbs[db].hexpires.is_empty() {
            crate::server::field_expiry::expire_fields_if_needed(self, db, key, fx);
        }
        if self.config.notify_flags & crate::server::notify::KEY_MISS != 0 && !self.dbs[db].keys.contains_key(key) {
            // (Checked apart from the lookup below, which returns a borrow.)
            self.stats.keyspace_misses += 1;
            self.notify(crate::server::notify::KEY_MISS, "keymiss", key, db);
            return None;
        }
        let touch = !self.no_touch;
        match self.dbs[db].keys.get_mut(key) {
            Some(e) => {
                self.stats.keyspace_hits += 1;
                if touch {
                    e.lru = access(&self.config, &mut self.rng, self.now_ms, e.lru);
                }
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
        if !self.dbs[db].hexpires.is_empty() {
            crate::server::field_expiry::expire_fields_if_needed(self, db, key, fx);
        }
        let touch = !self.no_touch;
        let e = self.dbs[db].keys.get_mut(key)?;
        if touch {
            e.lru = access(&self.config, &mut self.rng, self.now_ms, e.lru);
        }
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
        // An overwrite keeps the access time its lookup gave it (Redis's dbSetValue), so
        // under NO-TOUCH the old one; under LFU always the old count (its lookup counted).
        let lru = match self.no_touch || self.lfu() {
            true => self.dbs[db].keys.get(key).map_or_else(|| self.new_access(), |e| e.lru),
            false => self.lru_clock(),
        };
        self.dbs[db].set(key, val, keep_ttl, lru);
        self.signal_modified_key(db, key);
    }

    /// Writes a key restored from a serialized value (RESTORE, MIGRATION IMPORT) in place
    /// of whatever `key` held: its value, absolute expiry (`NO_EXPIRE`: none) and access
    /// clock; watchers see the change, and the `new` and `restore` events fire as Redis's
    /// dbAdd and restoreCommand fire them. Waiters on the key are the caller's to ready.
    pub fn put_restored(&mut self, db: usize, key: &[u8], val: Value, expire_at: i64, lru: u32) {
        self.dbs[db].remove(key);
        self.notify_new(db, key);
        self.dbs[db].add(key, val, lru);
        if expire_at != NO_EXPIRE {
            self.dbs[db].set_expire(key, expire_at);
        }
        self.signal_modified_key(db, key);
        self.notify(crate::server::notify::GENERIC, "restore", key, db);
    }

    pub fn delete(&mut self, db: usize, key: &[u8]) -> Option<Entry> {
        let e = self.dbs[db].remove(key)?;
        self.signal_modified_key(db, key);
        Some(e)
    }

    /// `key` changed (Redis's signalModifiedKey): clients that WATCH it are marked dirty
    /// (their EXEC will fail) and clients that cached it are owed an invalidation.
    pub fn signal_modified_key(&mut self, db: usize, key: &[u8]) {
        if !self.tracking.is_idle() {
            self.tracking.invalidate(key, true);
        }
        if !self.migrating.is_empty() {
            self.migrating.touch(db, key);
        }
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

    /// Marks the watchers of every watched (db, key) for which `changes` holds, given the
    /// databases as they are now.
    fn touch_watched_where(&mut self, changes: impl Fn(&[Db], usize, &[u8]) -> bool) {
        if self.watched.is_empty() {
            return;
        }
        let mut dirty = Vec::new();
        for (k, ids) in self.watched.iter() {
            if changes(&self.dbs, k[0] as usize, &k[1..]) {
                dirty.extend_from_slice(ids);
            }
        }
        self.cas_dirty.extend(dirty);
    }

    /// FLUSHDB (`Some(db)`) or FLUSHALL is about to empty the databases (Redis's
    /// signalFlushedDb): marks every watcher of a key that exists there, and every
    /// tracking client is told to drop its cache.
    pub fn signal_flushed_db(&mut self, db: Option<usize>) {
        self.migrating.touch_all();
        self.touch_watched_where(|dbs, d, key| db.is_none_or(|x| x == d) && dbs[d].keys.contains_key(key));
        if !self.tracking.is_idle() {
            self.tracking.flush();
        }
    }

    /// SWAPDB a b: marks every watcher (in either database) of a key that exists in a or b,
    /// before the swap: what it watched is about to change (Redis's touchAllWatchedKeysInDb
    /// both ways).
    pub fn touch_watched_in_swap(&mut self, a: usize, b: usize) {
        self.migrating.touch_all();
        self.touch_watched_where(|dbs, d, key| (d == a || d == b) && (dbs[a].keys.contains_key(key) || dbs[b].keys.contains_key(key)));
    }

    /// Offers every key of `db` that has waiters and now exists to them (after SWAPDB
    /// brought in other data; Redis's scanDatabaseForReadyKeys).
    pub fn signal_existing_waiters(&mut self, db: usize) {
        for key in self.blocking.keys_in(db as u8) {
            if self.dbs[db].keys.contains_key(&key) {
                self.blocking.signal(db as u8, &key);
            }
        }
    }

    pub fn used_memory(&self) -> usize {
        (self.memory_probe)()
    }

    /// What the host reports, as `name:value` pairs: its static facts (REC_SERVER_INFO),
    /// then its role record's lines (`section.field` ones are filed under INFO sections).
    pub fn host_facts(&self) -> impl Iterator<Item = (&str, &str)> {
        let facts = self.server_info.split(|&b| b == b'\n').filter_map(|l| core::str::from_utf8(l).ok()?.split_once(':'));
        facts.chain(self.role_info.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// The host's value for `name` (see [`State::host_facts`]).
    pub fn host_fact(&self, name: &str) -> Option<&str> {
        self.host_facts().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// A latency event the host measured (`ms` as text), kept by the monitor as the
    /// engine's own are: at or above `latency-monitor-threshold`. Unknown events are
    /// ignored (the monitor's names are static).
    pub fn host_latency_event(&mut self, event: &str, ms: &str) {
        let (Some(&name), Ok(ms)) = (crate::server::latency::HOST_EVENTS.iter().find(|n| **n == event), ms.trim().parse::<u64>()) else { return };
        self.latency.add_if_needed(name, ms, self.now_ms.div_euclid(1000), self.config.latency_monitor_threshold);
    }

    /// Samples the command rate and the memory peak (each tick, as Redis's serverCron).
    pub fn sample_stats(&mut self) {
        let (now, commands) = (self.now_ms, self.stats.commands);
        self.stats.ops.sample(now, commands);
        self.stats.peak_memory = self.stats.peak_memory.max(self.used_memory());
    }
}

/// The key of `State::watched`: the database, then the key.
pub fn watch_key(db: usize, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.push(db as u8);
    k.extend_from_slice(key);
    k
}

/// Forgets every key `c` watches (EXEC, DISCARD, UNWATCH, RESET, disconnect).
pub fn unwatch_all(st: &mut State, c: &mut Client) {
    for w in c.watched.drain(..) {
        let k = watch_key(w.db, &w.key);
        let empty = match st.watched.get_mut(&k) {
            Some(ids) => {
                ids.retain(|&id| id != c.id);
                ids.is_empty()
            }
            None => false,
        };
        if empty {
            st.watched.remove(&k);
        }
    }
    st.cas_dirty.remove(&c.id);
}
