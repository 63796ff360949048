//! The hash value (Redis's t_hash.c, data half): a listpack-like vector of pairs while
//! small (insertion order, like Redis's listpack, so small-hash replies match Redis's
//! order), a hash table above `hash-max-listpack-entries`/`-value`. Conversion is one-way.
//! Fields may carry an expiry (`FieldTtls`, absent until the first one is set); the
//! value itself never expires anything: the shard decides when (`server::field_expiry`).

use crate::types::dict::Dict;
use crate::types::field_ttl::FieldTtls;
use alloc::boxed::Box;
use alloc::vec::Vec;

/// A field and its value.
pub type Pair = (Box<[u8]>, Box<[u8]>);

/// How the fields and values are stored.
pub enum HashEnc {
    Listpack(Vec<Pair>),
    Table(Dict<Box<[u8]>>),
}

pub struct HashValue {
    pub enc: HashEnc,
    /// Fields with an expiry (None: none has one).
    ttls: Option<Box<FieldTtls>>,
}

impl HashValue {
    /// MEMORY USAGE of the value (fields and values estimated from `samples`).
    pub fn memory_usage(&self, samples: usize) -> u64 {
        use crate::util::memsize::{alloc, sampled};
        let ttls = self.ttls.as_ref().map_or(0, |t| t.memory_usage());
        ttls + match &self.enc {
            HashEnc::Listpack(pairs) => {
                alloc(pairs.capacity() * core::mem::size_of::<Pair>())
                    + sampled(pairs.len(), samples, pairs.iter().map(|(f, v)| alloc(f.len()) + alloc(v.len())))
            }
            HashEnc::Table(d) => d.memory_usage(samples, |v| alloc(v.len())),
        }
    }

    pub fn new() -> Self {
        Self::from_enc(HashEnc::Listpack(Vec::new()))
    }

    pub fn from_enc(enc: HashEnc) -> Self {
        HashValue { enc, ttls: None }
    }

    /// A field's expiry (unix ms), if it has one.
    pub fn ttl(&self, field: &[u8]) -> Option<i64> {
        self.ttls.as_ref()?.get(field)
    }

    /// Whether any field has an expiry.
    pub fn has_ttls(&self) -> bool {
        self.ttls.is_some()
    }

    /// The earliest field expiry.
    pub fn min_ttl(&self) -> Option<i64> {
        self.ttls.as_ref()?.min()
    }

    /// Sets the expiry of a field that exists (returns false, doing nothing, if it does not).
    pub fn set_ttl(&mut self, field: &[u8], at: i64) -> bool {
        if self.get(field).is_none() {
            return false;
        }
        self.ttls.get_or_insert_with(Default::default).set(field, at);
        true
    }

    /// Removes a field's expiry; true if it had one.
    pub fn persist(&mut self, field: &[u8]) -> bool {
        let Some(t) = self.ttls.as_mut() else { return false };
        let had = t.remove(field).is_some();
        if t.is_empty() {
            self.ttls = None;
        }
        had
    }

    /// Up to `limit` fields whose expiry is at or before `now`, earliest first.
    pub fn due(&self, now: i64, limit: usize) -> Vec<Box<[u8]>> {
        self.ttls.as_ref().map_or_else(Vec::new, |t| t.due(now, limit))
    }

    /// A field's value unless it expired by `now` (a replica keeps expired fields until
    /// its primary's HDEL).
    #[inline]
    pub fn get_live(&self, field: &[u8], now: i64) -> Option<&[u8]> {
        if self.ttls.is_some() && self.is_expired(field, now) {
            return None;
        }
        self.get(field)
    }

    /// How many fields have expired by `now` but are still stored.
    pub fn due_count(&self, now: i64) -> usize {
        self.ttls.as_ref().map_or(0, |t| t.due_count(now))
    }

    /// Whether `field` exists and has expired by `now` (still stored: the shard removes it).
    pub fn is_expired(&self, field: &[u8], now: i64) -> bool {
        self.ttl(field).is_some_and(|at| at <= now)
    }

    /// Every field expiry, in field order.
    pub fn ttls(&self) -> impl Iterator<Item = (&[u8], i64)> {
        self.ttls.iter().flat_map(|t| t.iter())
    }

    /// A copy without the fields expired by `now`, for a reader that may not remove them
    /// (a replica waits for its primary's HDEL); None when nothing has expired.
    pub fn live_copy(&self, now: i64, seed: u64) -> Option<HashValue> {
        if self.min_ttl().is_none_or(|at| at > now) {
            return None;
        }
        let mut copy = self.duplicate(seed);
        for f in self.due(now, usize::MAX) {
            copy.remove(&f);
        }
        Some(copy)
    }

    pub fn len(&self) -> usize {
        match &self.enc {
            HashEnc::Listpack(v) => v.len(),
            HashEnc::Table(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding(&self) -> &'static str {
        match &self.enc {
            // Redis 7.4 names a small hash with field expiries "listpackex".
            HashEnc::Listpack(_) if self.ttls.is_some() => "listpackex",
            HashEnc::Listpack(_) => "listpack",
            HashEnc::Table(_) => "hashtable",
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.enc {
            HashEnc::Listpack(v) => v.iter().find(|(f, _)| &**f == field).map(|(_, v)| &**v),
            HashEnc::Table(d) => d.get(field).map(|v| &**v),
        }
    }

    /// Sets a field, dropping any expiry it had (HSET's rule); returns true if it was new.
    pub fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        if self.ttls.is_some() {
            self.persist(field);
        }
        self.set_keep_ttl(field, value)
    }

    /// Sets a field's value and keeps its expiry (HINCRBY, HSETEX KEEPTTL); true if new.
    pub fn set_keep_ttl(&mut self, field: &[u8], value: &[u8]) -> bool {
        match &mut self.enc {
            HashEnc::Listpack(v) => {
                if let Some(slot) = v.iter_mut().find(|(f, _)| &**f == field) {
                    slot.1 = value.into();
                    false
                } else {
                    v.push((field.into(), value.into()));
                    true
                }
            }
            HashEnc::Table(d) => d.insert(field, value.into()).is_none(),
        }
    }

    /// Removes a field and its expiry; true if it existed.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        let removed = match &mut self.enc {
            HashEnc::Listpack(v) => match v.iter().position(|(f, _)| &**f == field) {
                Some(i) => {
                    v.remove(i);
                    true
                }
                None => false,
            },
            HashEnc::Table(d) => d.remove(field).is_some(),
        };
        if removed && self.ttls.is_some() {
            self.persist(field);
        }
        removed
    }

    pub fn for_each<F: FnMut(&[u8], &[u8])>(&self, mut f: F) {
        match &self.enc {
            HashEnc::Listpack(v) => v.iter().for_each(|(a, b)| f(a, b)),
            HashEnc::Table(d) => d.iter().for_each(|(a, b)| f(a, b)),
        }
    }

    /// See `Dict::before_sampling`.
    pub fn before_sampling(&mut self) {
        if let HashEnc::Table(d) = &mut self.enc {
            d.before_sampling();
        }
    }

    /// A random field and its value, as fair as Redis's picks (`Dict::fair_random`).
    pub fn random_pair(&self, rng: &mut crate::util::Rng) -> Option<(&[u8], &[u8])> {
        match &self.enc {
            HashEnc::Listpack(v) if v.is_empty() => None,
            HashEnc::Listpack(v) => v.get(rng.below(v.len() as u64) as usize).map(|(a, b)| (&**a, &**b)),
            HashEnc::Table(d) => d.fair_random(rng).map(|(a, b)| (a, &**b)),
        }
    }

    pub fn pairs(&self) -> Vec<(&[u8], &[u8])> {
        let mut out = Vec::with_capacity(self.len());
        match &self.enc {
            HashEnc::Listpack(v) => out.extend(v.iter().map(|(a, b)| (&**a, &**b))),
            HashEnc::Table(d) => out.extend(d.iter().map(|(a, b)| (a, &**b))),
        }
        out
    }

    /// Converts to a table if the hash outgrew the listpack limits.
    pub fn maybe_convert(&mut self, max_entries: usize, max_value: usize, seed: u64) {
        let HashEnc::Listpack(v) = &self.enc else { return };
        let too_big = v.len() > max_entries || v.iter().any(|(f, x)| f.len() > max_value || x.len() > max_value);
        if too_big {
            self.to_table(seed);
        }
    }

    pub fn to_table(&mut self, seed: u64) {
        if let HashEnc::Listpack(v) = &mut self.enc {
            let mut d = Dict::new(seed);
            for (f, x) in v.drain(..) {
                d.insert_new(f, x);
            }
            self.enc = HashEnc::Table(d);
        }
    }

    pub fn duplicate(&self, seed: u64) -> HashValue {
        let enc = match &self.enc {
            HashEnc::Listpack(v) => HashEnc::Listpack(v.clone()),
            HashEnc::Table(d) => HashEnc::Table(crate::types::dict::dup_bytes_dict(d, seed)),
        };
        HashValue { enc, ttls: self.ttls.clone() }
    }
}

impl Default for HashValue {
    fn default() -> Self {
        Self::new()
    }
}
