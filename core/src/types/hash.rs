//! The hash value (Redis's t_hash.c, data half): a listpack-like vector of pairs while
//! small (insertion order, like Redis's listpack, so small-hash replies match Redis's
//! order), a hash table above `hash-max-listpack-entries`/`-value`. Conversion is one-way.

use crate::types::dict::Dict;
use alloc::boxed::Box;
use alloc::vec::Vec;

/// A field and its value.
pub type Pair = (Box<[u8]>, Box<[u8]>);

pub enum HashValue {
    Listpack(Vec<Pair>),
    Table(Dict<Box<[u8]>>),
}

impl HashValue {
    /// MEMORY USAGE of the value (fields and values estimated from `samples`).
    pub fn memory_usage(&self, samples: usize) -> u64 {
        use crate::util::memsize::{alloc, sampled};
        match self {
            HashValue::Listpack(pairs) => {
                alloc(pairs.capacity() * core::mem::size_of::<Pair>())
                    + sampled(pairs.len(), samples, pairs.iter().map(|(f, v)| alloc(f.len()) + alloc(v.len())))
            }
            HashValue::Table(d) => d.memory_usage(samples, |v| alloc(v.len())),
        }
    }

    pub fn new() -> Self {
        HashValue::Listpack(Vec::new())
    }

    pub fn len(&self) -> usize {
        match self {
            HashValue::Listpack(v) => v.len(),
            HashValue::Table(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            HashValue::Listpack(_) => "listpack",
            HashValue::Table(_) => "hashtable",
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            HashValue::Listpack(v) => v.iter().find(|(f, _)| &**f == field).map(|(_, v)| &**v),
            HashValue::Table(d) => d.get(field).map(|v| &**v),
        }
    }

    /// Sets a field; returns true if it was new.
    pub fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        match self {
            HashValue::Listpack(v) => {
                if let Some(slot) = v.iter_mut().find(|(f, _)| &**f == field) {
                    slot.1 = value.into();
                    false
                } else {
                    v.push((field.into(), value.into()));
                    true
                }
            }
            HashValue::Table(d) => d.insert(field, value.into()).is_none(),
        }
    }

    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            HashValue::Listpack(v) => match v.iter().position(|(f, _)| &**f == field) {
                Some(i) => {
                    v.remove(i);
                    true
                }
                None => false,
            },
            HashValue::Table(d) => d.remove(field).is_some(),
        }
    }

    pub fn for_each<F: FnMut(&[u8], &[u8])>(&self, mut f: F) {
        match self {
            HashValue::Listpack(v) => v.iter().for_each(|(a, b)| f(a, b)),
            HashValue::Table(d) => d.iter().for_each(|(a, b)| f(a, b)),
        }
    }

    /// See `Dict::before_sampling`.
    pub fn before_sampling(&mut self) {
        if let HashValue::Table(d) = self {
            d.before_sampling();
        }
    }

    /// A random field and its value, as fair as Redis's picks (`Dict::fair_random`).
    pub fn random_pair(&self, rng: &mut crate::util::Rng) -> Option<(&[u8], &[u8])> {
        match self {
            HashValue::Listpack(v) if v.is_empty() => None,
            HashValue::Listpack(v) => v.get(rng.below(v.len() as u64) as usize).map(|(a, b)| (&**a, &**b)),
            HashValue::Table(d) => d.fair_random(rng).map(|(a, b)| (a, &**b)),
        }
    }

    pub fn pairs(&self) -> Vec<(&[u8], &[u8])> {
        let mut out = Vec::with_capacity(self.len());
        match self {
            HashValue::Listpack(v) => out.extend(v.iter().map(|(a, b)| (&**a, &**b))),
            HashValue::Table(d) => out.extend(d.iter().map(|(a, b)| (a, &**b))),
        }
        out
    }

    /// Converts to a table if the hash outgrew the listpack limits.
    pub fn maybe_convert(&mut self, max_entries: usize, max_value: usize, seed: u64) {
        let HashValue::Listpack(v) = self else { return };
        let too_big = v.len() > max_entries || v.iter().any(|(f, x)| f.len() > max_value || x.len() > max_value);
        if too_big {
            self.to_table(seed);
        }
    }

    pub fn to_table(&mut self, seed: u64) {
        if let HashValue::Listpack(v) = self {
            let mut d = Dict::new(seed);
            for (f, x) in v.drain(..) {
                d.insert_new(f, x);
            }
            *self = HashValue::Table(d);
        }
    }

    pub fn duplicate(&self, seed: u64) -> HashValue {
        match self {
            HashValue::Listpack(v) => HashValue::Listpack(v.clone()),
            HashValue::Table(d) => HashValue::Table(crate::types::dict::dup_bytes_dict(d, seed)),
        }
    }
}

impl Default for HashValue {
    fn default() -> Self {
        Self::new()
    }
}
