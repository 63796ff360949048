//! The set value (Redis 7.0's t_set.c and intset.c, data half): an "intset" (sorted
//! integers stored 2, 4 or 8 bytes wide, as compact as Redis's) while every member is a
//! canonical integer and there are at most `set-max-intset-entries` of them, a
//! "hashtable" otherwise (7.0 has no listpack sets). Conversion is one-way, as in Redis.

use crate::types::dict::Dict;
use crate::util::{IntText, Rng, parse_i64};
use alloc::vec::Vec;

// ---------- intset ----------

/// Sorted distinct integers, little-endian, all of one width (Redis's intset).
pub struct IntSet {
    width: u8,
    data: Vec<u8>,
}

fn width_for(v: i64) -> u8 {
    if v >= i16::MIN as i64 && v <= i16::MAX as i64 {
        2
    } else if v >= i32::MIN as i64 && v <= i32::MAX as i64 {
        4
    } else {
        8
    }
}

fn read_int(b: &[u8]) -> i64 {
    match b.len() {
        2 => i16::from_le_bytes([b[0], b[1]]) as i64,
        4 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
        _ => i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
    }
}

fn write_int(out: &mut Vec<u8>, v: i64, width: u8) {
    match width {
        2 => out.extend_from_slice(&(v as i16).to_le_bytes()),
        4 => out.extend_from_slice(&(v as i32).to_le_bytes()),
        _ => out.extend_from_slice(&v.to_le_bytes()),
    }
}

impl IntSet {
    pub fn new() -> Self {
        IntSet { width: 2, data: Vec::new() }
    }

    /// An intset of strictly ascending integers, built in one pass (a restored payload's);
    /// None if they are not strictly ascending.
    pub fn from_sorted(ints: &[i64]) -> Option<IntSet> {
        if ints.windows(2).any(|w| w[0] >= w[1]) {
            return None;
        }
        let width = ints.iter().map(|&v| width_for(v)).max().unwrap_or(2);
        let mut data = Vec::with_capacity(ints.len() * width as usize);
        for &v in ints {
            write_int(&mut data, v, width);
        }
        Some(IntSet { width, data })
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.data.len() / self.width as usize
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    #[inline]
    pub fn get(&self, i: usize) -> i64 {
        let w = self.width as usize;
        read_int(&self.data[i * w..i * w + w])
    }

    fn search(&self, v: i64) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid).cmp(&v) {
                core::cmp::Ordering::Less => lo = mid + 1,
                core::cmp::Ordering::Greater => hi = mid,
                core::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    pub fn contains(&self, v: i64) -> bool {
        width_for(v) <= self.width && self.search(v).is_ok()
    }

    /// Adds `v`; false if present. Storage grows exactly (like Redis's realloc per add), so
    /// a small set costs its members' bytes and no slack.
    pub fn add(&mut self, v: i64) -> bool {
        let w = width_for(v);
        if w > self.width {
            let mut wide = Vec::with_capacity((self.len() + 1) * w as usize);
            for i in 0..self.len() {
                write_int(&mut wide, self.get(i), w);
            }
            self.width = w;
            self.data = wide;
        }
        match self.search(v) {
            Ok(_) => false,
            Err(pos) => {
                let w = self.width as usize;
                self.data.reserve_exact(w);
                let mut tmp = Vec::with_capacity(w);
                write_int(&mut tmp, v, self.width);
                let at = pos * w;
                self.data.splice(at..at, tmp);
                true
            }
        }
    }

    pub fn remove(&mut self, v: i64) -> bool {
        if width_for(v) > self.width {
            return false;
        }
        match self.search(v) {
            Ok(pos) => {
                let w = self.width as usize;
                self.data.drain(pos * w..pos * w + w);
                if self.data.capacity() - self.data.len() >= 64 {
                    self.data.shrink_to_fit();
                }
                true
            }
            Err(_) => false,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        self.data.chunks_exact(self.width as usize).map(read_int)
    }
}

impl Default for IntSet {
    fn default() -> Self {
        Self::new()
    }
}

// ---------- the set value ----------

pub enum SetValue {
    Ints(IntSet),
    Table(Dict<()>),
}

impl SetValue {
    /// MEMORY USAGE of the value (members estimated from `samples`).
    pub fn memory_usage(&self, samples: usize) -> u64 {
        match self {
            SetValue::Ints(s) => crate::util::memsize::alloc(s.data.capacity()),
            SetValue::Table(d) => d.memory_usage(samples, |_| 0),
        }
    }

    /// Redis's `setTypeCreate`: an intset if the first member is an integer.
    pub fn new_for(first: &[u8], seed: u64) -> SetValue {
        if parse_i64(first).is_some() { SetValue::Ints(IntSet::new()) } else { SetValue::Table(Dict::new(seed)) }
    }

    pub fn new_intset() -> SetValue {
        SetValue::Ints(IntSet::new())
    }

    pub fn len(&self) -> usize {
        match self {
            SetValue::Ints(s) => s.len(),
            SetValue::Table(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            SetValue::Ints(_) => "intset",
            SetValue::Table(_) => "hashtable",
        }
    }

    pub fn contains(&self, m: &[u8]) -> bool {
        match self {
            SetValue::Ints(s) => parse_i64(m).is_some_and(|v| s.contains(v)),
            SetValue::Table(d) => d.contains_key(m),
        }
    }

    /// Redis's `setTypeAdd`: a non-integer, or one member too many, converts an intset.
    pub fn add(&mut self, m: &[u8], max_intset: usize, seed: u64) -> bool {
        if let SetValue::Ints(s) = self {
            match parse_i64(m) {
                Some(v) => {
                    if !s.add(v) {
                        return false;
                    }
                    // Redis caps the limit at 2^30 (intset internals).
                    if s.len() > max_intset.min(1 << 30) {
                        self.to_table(seed);
                    }
                    return true;
                }
                None => self.to_table(seed),
            }
        }
        match self {
            SetValue::Table(d) => {
                if d.contains_key(m) {
                    false
                } else {
                    d.insert_new(m.into(), ());
                    true
                }
            }
            SetValue::Ints(_) => unreachable!("converted above"),
        }
    }

    pub fn remove(&mut self, m: &[u8]) -> bool {
        match self {
            SetValue::Ints(s) => parse_i64(m).is_some_and(|v| s.remove(v)),
            SetValue::Table(d) => d.remove(m).is_some(),
        }
    }

    pub fn to_table(&mut self, seed: u64) {
        if let SetValue::Ints(s) = self {
            let mut d = Dict::new(seed);
            for v in s.iter() {
                d.insert_new(IntText::new(v).as_bytes().into(), ());
            }
            *self = SetValue::Table(d);
        }
    }

    /// Visits every member: an intset in ascending order (as Redis), a table in its order.
    pub fn for_each<F: FnMut(&[u8])>(&self, mut f: F) {
        match self {
            SetValue::Ints(s) => {
                for v in s.iter() {
                    f(IntText::new(v).as_bytes());
                }
            }
            SetValue::Table(d) => d.iter().for_each(|(k, _)| f(k)),
        }
    }

    pub fn members(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::with_capacity(self.len());
        self.for_each(|m| out.push(m.to_vec()));
        out
    }

    /// A random member, as fair as Redis's picks (`Dict::fair_random` for a table). None
    /// when empty.
    pub fn random(&self, rng: &mut Rng) -> Option<Vec<u8>> {
        self.random_with(rng, |m| m.to_vec())
    }

    /// See `Dict::before_sampling`.
    pub fn before_sampling(&mut self) {
        if let SetValue::Table(d) = self {
            d.before_sampling();
        }
    }

    /// `random`, lending the member to `f` rather than copying it.
    pub fn random_with<R>(&self, rng: &mut Rng, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        match self {
            SetValue::Ints(s) if !s.is_empty() => Some(f(IntText::new(s.get(rng.below(s.len() as u64) as usize)).as_bytes())),
            SetValue::Ints(_) => None,
            SetValue::Table(d) => d.fair_random(rng).map(|(k, _)| f(k)),
        }
    }

    pub fn duplicate(&self, seed: u64) -> SetValue {
        match self {
            SetValue::Ints(s) => SetValue::Ints(IntSet { width: s.width, data: s.data.clone() }),
            SetValue::Table(d) => {
                let mut out = Dict::new(seed);
                for (k, _) in d.iter() {
                    out.insert_new(k.into(), ());
                }
                SetValue::Table(out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intset_widths_and_order() {
        let mut s = IntSet::new();
        for v in [5, -3, 100, 5, 0] {
            s.add(v);
        }
        assert_eq!(s.iter().collect::<Vec<_>>(), [-3, 0, 5, 100]);
        assert_eq!(s.data.len(), 8);
        s.add(70000);
        assert_eq!(s.width, 4);
        s.add(i64::MIN);
        s.add(i64::MAX);
        assert_eq!(s.width, 8);
        assert_eq!(s.iter().collect::<Vec<_>>(), [i64::MIN, -3, 0, 5, 100, 70000, i64::MAX]);
        assert!(s.contains(70000) && !s.contains(7));
        assert!(s.remove(i64::MIN) && !s.remove(i64::MIN));
        assert_eq!(s.len(), 6);
        assert_eq!(IntText::new(i64::MIN).as_bytes(), b"-9223372036854775808");
        assert_eq!(IntText::new(0).as_bytes(), b"0");
    }

    #[test]
    fn conversion() {
        let mut s = SetValue::new_for(b"1", 1);
        assert!(s.add(b"1", 3, 1) && !s.add(b"1", 3, 1));
        assert!(s.add(b"2", 3, 1) && s.add(b"3", 3, 1));
        assert_eq!(s.encoding(), "intset");
        assert!(s.add(b"4", 3, 1));
        assert_eq!(s.encoding(), "hashtable");
        assert!(s.contains(b"4") && !s.contains(b"04"));
        let mut t = SetValue::new_for(b"7", 1);
        t.add(b"7", 512, 1);
        t.add(b"x", 512, 1);
        assert_eq!(t.encoding(), "hashtable");
        assert!(t.contains(b"7"));
    }
}
