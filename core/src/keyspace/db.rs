//! One logical database (SELECT 0–15): the keyspace plus an index of keys with a TTL,
//! which active expiry samples from.

use alloc::boxed::Box;

use crate::keyspace::object::{Entry, NO_EXPIRE, Value};
use crate::types::dict::Dict;

pub struct Db {
    pub keys: Dict<Entry>,
    /// Keys that carry an expiry; values live in `Entry::expire_at`.
    pub expires: Dict<()>,
    /// Hashes that may have fields with an expiry, which active expiry samples from. A
    /// superset: a hash whose last field TTL went is dropped when next sampled.
    pub hexpires: Dict<()>,
}

impl Db {
    pub fn new(seed: u64) -> Self {
        Db { keys: Dict::new(seed), expires: Dict::new(seed ^ 0x5bd1_e995), hexpires: Dict::new(seed ^ 0x4845_5850) }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// MEMORY USAGE of `key`: its node and name in the keyspace (and in the expiry index
    /// when it has a TTL) plus its value; None when it does not exist. Reads only: an
    /// expired key not yet removed still counts, as it still takes the memory.
    pub fn memory_usage(&self, key: &[u8], samples: usize) -> Option<u64> {
        use crate::util::memsize::alloc;
        let e = self.keys.get(key)?;
        let mut bytes = Dict::<Entry>::node_bytes() + alloc(key.len()) + e.val.memory_usage(samples);
        if e.expire_at != NO_EXPIRE {
            bytes += Dict::<()>::node_bytes() + alloc(key.len());
        }
        Some(bytes)
    }

    /// The keyspace's and the expiry index's own bytes (MEMORY STATS' hashtable overheads):
    /// bucket arrays and nodes.
    pub fn overhead(&self) -> (u64, u64) {
        (
            self.keys.table_bytes() + self.keys.len() as u64 * Dict::<Entry>::node_bytes(),
            self.expires.table_bytes() + self.expires.len() as u64 * Dict::<()>::node_bytes(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Inserts or overwrites. `keep_ttl` keeps an existing expiry (SET KEEPTTL); otherwise
    /// an overwrite clears it, as in Redis.
    pub fn set(&mut self, key: &[u8], val: Value, keep_ttl: bool, lru: u32) {
        self.note_value(key, &val);
        if let Some(e) = self.keys.get_mut(key) {
            e.val = val;
            e.lru = lru;
            if !keep_ttl && e.expire_at != NO_EXPIRE {
                e.expire_at = NO_EXPIRE;
                self.expires.remove(key);
            }
        } else {
            self.keys.insert_new(Box::from(key), Entry { val, expire_at: NO_EXPIRE, lru });
        }
    }

    /// Adds a key known to be absent.
    pub fn add(&mut self, key: &[u8], val: Value, lru: u32) {
        self.note_value(key, &val);
        self.keys.insert_new(Box::from(key), Entry { val, expire_at: NO_EXPIRE, lru });
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let (_, e) = self.keys.remove(key)?;
        if e.expire_at != NO_EXPIRE {
            self.expires.remove(key);
        }
        if !self.hexpires.is_empty() {
            self.hexpires.remove(key);
        }
        Some(e)
    }

    /// Sets (or clears with `NO_EXPIRE`) a key's expiry. Returns false if the key is absent.
    pub fn set_expire(&mut self, key: &[u8], at: i64) -> bool {
        let Some(e) = self.keys.get_mut(key) else { return false };
        let had = e.expire_at != NO_EXPIRE;
        e.expire_at = at;
        match (had, at != NO_EXPIRE) {
            (false, true) => {
                self.expires.insert_new(Box::from(key), ());
            }
            (true, false) => {
                self.expires.remove(key);
            }
            _ => {}
        }
        true
    }

    pub fn expire_of(&self, key: &[u8]) -> Option<i64> {
        self.keys.get(key).map(|e| e.expire_at)
    }

    pub fn clear(&mut self) {
        self.keys.clear();
        self.expires.clear();
        self.hexpires.clear();
    }

    /// Records that the hash at `key` has (or may have) fields with an expiry.
    pub fn note_field_ttls(&mut self, key: &[u8]) {
        if !self.hexpires.contains_key(key) {
            self.hexpires.insert_new(Box::from(key), ());
        }
    }

    fn note_value(&mut self, key: &[u8], val: &Value) {
        if let Value::Hash(h) = val
            && h.has_ttls()
        {
            self.note_field_ttls(key);
        }
    }
}
