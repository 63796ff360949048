//! A chained hash table keyed by byte strings, with Redis's SCAN guarantee: a full
//! iteration with the reverse-binary cursor returns every element present from start to end
//! at least once, however the table grows or shrinks in between. (A stock HashMap has no
//! stable cursor.) Hashes are seeded by the host, since the engine has no RNG of its own.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::mem;

use crate::util::Rng;

struct Node<V> {
    next: Option<Box<Node<V>>>,
    hash: u64,
    key: Box<[u8]>,
    val: V,
}

type Bucket<V> = Option<Box<Node<V>>>;

/// Resizes are incremental, as in Redis, so a big keyspace never pauses to rehash: while
/// `t[1]` (the new table) is non-empty, every insert or remove first moves a few buckets
/// of `t[0]` (those below `rehash_idx` have moved), and the table swaps when all have.
/// A key lives in `t[0]` at `hash & mask0` unless that bucket has moved, then in `t[1]`
/// at `hash & mask1`, so a lookup reads one bucket whatever the state.
pub struct Dict<V> {
    t: [Vec<Bucket<V>>; 2],
    rehash_idx: usize,
    len: usize,
    seed: u64,
}

const MIN_BUCKETS: usize = 4;
/// Buckets moved per insert or remove while rehashing (Redis moves 1; 2 finishes a
/// doubling well before the next one is due), and empty ones looked at at most.
const STEP_BUCKETS: usize = 2;
const STEP_EMPTY: usize = 20;
/// Elements a fair pick chooses among (Redis's GETFAIR_NUM_ENTRIES).
const FAIR_GATHER: usize = 15;

impl<V> Dict<V> {
    pub fn new(seed: u64) -> Self {
        Dict { t: [Vec::new(), Vec::new()], rehash_idx: 0, len: 0, seed }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn bucket_count(&self) -> usize {
        self.t[0].len() + self.t[1].len()
    }

    #[inline]
    pub fn is_rehashing(&self) -> bool {
        !self.t[1].is_empty()
    }

    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64_with_seed(key, self.seed)
    }

    /// Where hash `h` lives: (table, bucket). Needs a non-empty `t[0]`.
    #[inline]
    fn slot(&self, h: u64) -> (usize, usize) {
        let i = (h & (self.t[0].len() as u64 - 1)) as usize;
        if i < self.rehash_idx && self.is_rehashing() { (1, (h & (self.t[1].len() as u64 - 1)) as usize) } else { (0, i) }
    }

    pub fn get(&self, key: &[u8]) -> Option<&V> {
        if self.len == 0 {
            return None;
        }
        let h = self.hash(key);
        let (t, i) = self.slot(h);
        let mut cur = self.t[t][i].as_deref();
        while let Some(n) = cur {
            if n.hash == h && &*n.key == key {
                return Some(&n.val);
            }
            cur = n.next.as_deref();
        }
        None
    }

    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        if self.len == 0 {
            return None;
        }
        let h = self.hash(key);
        let (t, i) = self.slot(h);
        let mut cur = self.t[t][i].as_deref_mut();
        while let Some(n) = cur {
            if n.hash == h && &*n.key == key {
                return Some(&mut n.val);
            }
            cur = n.next.as_deref_mut();
        }
        None
    }

    /// The hash `key` has in this table (for `touch_head` and `touch_entry`).
    #[inline]
    pub fn key_hash(&self, key: &[u8]) -> u64 {
        self.hash(key)
    }

    fn head(&self, h: u64) -> Option<&Node<V>> {
        if self.len == 0 {
            return None;
        }
        let (t, i) = self.slot(h);
        self.t[t][i].as_deref()
    }

    /// Loads the first node of `h`'s bucket (a prefetch: wasm has no prefetch
    /// instruction, and a load nothing waits for is one). Returns a value to keep.
    #[inline]
    pub fn touch_head(&self, h: u64) -> u64 {
        self.head(h).map_or(0, |n| n.hash)
    }

    /// Loads the first node of `h`'s bucket, its key's first byte and the byte of its
    /// value `val_byte` picks. Returns a value to keep.
    #[inline]
    pub fn touch_entry(&self, h: u64, val_byte: impl Fn(&V) -> Option<&u8>) -> u64 {
        self.head(h).map_or(0, |n| n.key.first().map_or(0, |&b| b as u64) + val_byte(&n.val).map_or(0, |&b| b as u64))
    }

    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, key: &[u8], val: V) -> Option<V> {
        if let Some(v) = self.get_mut(key) {
            return Some(mem::replace(v, val));
        }
        self.insert_new(key.into(), val);
        None
    }

    /// Inserts a key known to be absent.
    pub fn insert_new(&mut self, key: Box<[u8]>, val: V) {
        self.rehash_step();
        if !self.is_rehashing() && self.len >= self.t[0].len() {
            self.resize((self.t[0].len() * 2).max(MIN_BUCKETS));
        }
        let h = self.hash(&key);
        let (t, i) = self.slot(h);
        let next = self.t[t][i].take();
        self.t[t][i] = Some(Box::new(Node { next, hash: h, key, val }));
        self.len += 1;
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<(Box<[u8]>, V)> {
        if self.len == 0 {
            return None;
        }
        self.rehash_step();
        let h = self.hash(key);
        let (t, i) = self.slot(h);
        let mut link = &mut self.t[t][i];
        loop {
            match link {
                None => return None,
                Some(n) if n.hash == h && &*n.key == key => {
                    let mut node = link.take().unwrap();
                    *link = node.next.take();
                    self.len -= 1;
                    let out = (node.key, node.val);
                    self.maybe_shrink();
                    return Some(out);
                }
                Some(n) => link = &mut n.next,
            }
        }
    }

    fn maybe_shrink(&mut self) {
        if self.len == 0 {
            // No nodes are left in either table.
            self.t = [Vec::new(), Vec::new()];
            self.rehash_idx = 0;
            return;
        }
        let b = self.t[0].len();
        if !self.is_rehashing() && b > MIN_BUCKETS && self.len * 8 < b {
            self.resize(self.len.next_power_of_two().max(MIN_BUCKETS));
        }
    }

    /// Starts moving everything into `n` buckets (at once when the table is empty). Only
    /// called between rehashes.
    fn resize(&mut self, n: usize) {
        debug_assert!(!self.is_rehashing());
        let mut new: Vec<Bucket<V>> = Vec::with_capacity(n);
        new.resize_with(n, || None);
        if self.t[0].is_empty() {
            self.t[0] = new;
        } else if n != self.t[0].len() {
            self.t[1] = new;
            self.rehash_idx = 0;
        }
    }

    /// Moves a few buckets of the old table to the new one (nodes are relinked, never
    /// copied); swaps the tables once all have moved.
    fn rehash_step(&mut self) {
        if !self.is_rehashing() {
            return;
        }
        let (mut moved, mut empty) = (0, 0);
        while moved < STEP_BUCKETS && empty < STEP_EMPTY && self.rehash_idx < self.t[0].len() {
            if self.move_bucket(self.rehash_idx) {
                moved += 1;
            } else {
                empty += 1;
            }
            self.rehash_idx += 1;
        }
        if self.rehash_idx >= self.t[0].len() {
            self.t[0] = mem::take(&mut self.t[1]);
            self.rehash_idx = 0;
        }
    }

    /// Relinks the chain of old bucket `i` into the new table; false if it was empty.
    fn move_bucket(&mut self, i: usize) -> bool {
        let mask = self.t[1].len() as u64 - 1;
        let mut cur = self.t[0][i].take();
        let any = cur.is_some();
        while let Some(mut node) = cur {
            cur = node.next.take();
            let j = (node.hash & mask) as usize;
            node.next = self.t[1][j].take();
            self.t[1][j] = Some(node);
        }
        any
    }

    pub fn clear(&mut self) {
        // Unlink chains iteratively: a recursive drop of a long chain could overflow the stack.
        for t in self.t.iter_mut() {
            for b in t.iter_mut() {
                let mut cur = b.take();
                while let Some(mut node) = cur {
                    cur = node.next.take();
                }
            }
        }
        self.t = [Vec::new(), Vec::new()];
        self.rehash_idx = 0;
        self.len = 0;
    }

    /// Visits the bucket at `cursor` (and returns the next cursor, 0 when done) using the
    /// reverse-binary increment, so the walk survives resizes between calls. While
    /// rehashing, the cursor's bucket of the smaller table and every bucket it expands to
    /// in the larger one are visited (Redis's dictScan).
    pub fn scan<F: FnMut(&[u8], &V)>(&self, cursor: u64, mut f: F) -> u64 {
        if self.t[0].is_empty() {
            return 0;
        }
        let mut visit = |b: &Bucket<V>| {
            let mut cur = b.as_deref();
            while let Some(n) = cur {
                f(&n.key, &n.val);
                cur = n.next.as_deref();
            }
        };
        let next = |v: u64, m: u64| (v | !m).reverse_bits().wrapping_add(1).reverse_bits();
        let mut v = cursor;
        if !self.is_rehashing() {
            let m = self.t[0].len() as u64 - 1;
            visit(&self.t[0][(v & m) as usize]);
            return next(v, m);
        }
        let (small, large) = if self.t[0].len() <= self.t[1].len() { (&self.t[0], &self.t[1]) } else { (&self.t[1], &self.t[0]) };
        let (m0, m1) = (small.len() as u64 - 1, large.len() as u64 - 1);
        visit(&small[(v & m0) as usize]);
        // The expansions of the cursor's small bucket; the increment past the last of
        // them is the next cursor of the small table too.
        loop {
            visit(&large[(v & m1) as usize]);
            v = next(v, m1);
            if v & (m0 ^ m1) == 0 {
                return v;
            }
        }
    }

    /// A uniformly chosen bucket, then a uniformly chosen element of its chain (as Redis).
    pub fn random(&self, rng: &mut Rng) -> Option<(&[u8], &V)> {
        if self.len == 0 {
            return None;
        }
        let (total, bucket) = self.live_buckets();
        let mut idx = rng.below(total as u64) as usize;
        for _ in 0..100 {
            if bucket(idx).is_some() {
                break;
            }
            idx = rng.below(total as u64) as usize;
        }
        // Fill factor is kept >= 1/8, so the loop above almost always succeeded; otherwise walk.
        while bucket(idx).is_none() {
            idx = if idx + 1 >= total { 0 } else { idx + 1 };
        }
        let mut chain = 0u64;
        let mut cur = bucket(idx).as_deref();
        while let Some(node) = cur {
            chain += 1;
            cur = node.next.as_deref();
        }
        let mut pick = rng.below(chain);
        let mut cur = bucket(idx).as_deref();
        while let Some(node) = cur {
            if pick == 0 {
                return Some((&node.key, &node.val));
            }
            pick -= 1;
            cur = node.next.as_deref();
        }
        None
    }

    /// Rehashing work in proportion to a sample about to be drawn, as Redis's
    /// dictGetSomeKeys does first: a table that is read but no longer written finishes its
    /// rehash, where picks are fairest (in the middle of one, elements after long runs of
    /// empty buckets come up more often).
    pub fn before_sampling(&mut self) {
        for _ in 0..FAIR_GATHER {
            if !self.is_rehashing() {
                break;
            }
            self.rehash_step();
        }
    }

    /// The buckets that can hold elements, in a row: the old table's not yet moved ones,
    /// then the new table's (just the table when not rehashing). Their count, and the
    /// bucket at a place in the row.
    fn live_buckets<'a>(&'a self) -> (usize, impl Fn(usize) -> &'a Bucket<V> + 'a) {
        let lo = if self.is_rehashing() { self.rehash_idx } else { 0 };
        let old = self.t[0].len() - lo;
        (old + self.t[1].len(), move |v: usize| if v < old { &self.t[0][lo + v] } else { &self.t[1][v - old] })
    }

    /// A random element, fair whatever the chains' lengths (Redis's
    /// dictGetFairRandomKey; call `before_sampling` first where the table can be
    /// written): up to 15 elements gathered from consecutive buckets at a random place
    /// (whole chains), then one of them uniformly. `random` alone picks a
    /// bucket first, so an element in a long chain comes up less often than one alone.
    pub fn fair_random(&self, rng: &mut Rng) -> Option<(&[u8], &V)> {
        let mut found: [Option<(&[u8], &V)>; FAIR_GATHER] = [None; FAIR_GATHER];
        let n = self.some_elements(rng, &mut found);
        if n == 0 {
            return self.random(rng);
        }
        found[rng.below(n as u64) as usize]
    }

    /// Redis's dictGetSomeKeys: fills `out` with elements of consecutive buckets from a
    /// random one, jumping elsewhere after a run of empty buckets, for at most ten steps
    /// per element wanted. Returns how many it found. While rehashing, the buckets walked
    /// are the live ones of both tables in a row (the old table's unmoved ones, then the
    /// new table's), so no bucket is a more likely start than another (Redis jumps to the
    /// rehash index, favouring what follows it; a set read but never written again stays
    /// mid-rehash here).
    fn some_elements<'a>(&'a self, rng: &mut Rng, out: &mut [Option<(&'a [u8], &'a V)>]) -> usize {
        let want = out.len().min(self.len);
        if want == 0 {
            return 0;
        }
        let (total, bucket) = self.live_buckets();
        let mut v = rng.below(total as u64) as usize;
        let (mut stored, mut empty_run) = (0, 0);
        for _ in 0..want * 10 {
            match bucket(v).as_deref() {
                None => {
                    empty_run += 1;
                    if empty_run >= 5 && empty_run > want {
                        v = rng.below(total as u64) as usize;
                        empty_run = 0;
                        continue;
                    }
                }
                Some(mut node) => {
                    empty_run = 0;
                    loop {
                        out[stored] = Some((&node.key, &node.val));
                        stored += 1;
                        if stored == want {
                            return stored;
                        }
                        match node.next.as_deref() {
                            Some(next) => node = next,
                            None => break,
                        }
                    }
                }
            }
            v = if v + 1 == total { 0 } else { v + 1 };
        }
        stored
    }

    /// The heap bytes one element costs the table beyond its key and value: its node.
    pub fn node_bytes() -> u64 {
        crate::util::memsize::alloc(mem::size_of::<Node<V>>())
    }

    /// The bucket arrays' heap bytes (Redis's hashtable overhead, MEMORY STATS).
    pub fn table_bytes(&self) -> u64 {
        self.t.iter().map(|t| crate::util::memsize::alloc(t.capacity() * mem::size_of::<Bucket<V>>())).sum()
    }

    /// MEMORY USAGE of the table: its buckets, and nodes, keys and (by `val`) values
    /// estimated from `samples` elements.
    pub fn memory_usage(&self, samples: usize, val: impl Fn(&V) -> u64) -> u64 {
        let each = self.iter().map(|(k, v)| Self::node_bytes() + crate::util::memsize::alloc(k.len()) + val(v));
        self.table_bytes() + crate::util::memsize::sampled(self.len, samples, each)
    }

    pub fn iter(&self) -> Iter<'_, V> {
        Iter { tables: [&self.t[0], &self.t[1]], table: 0, idx: 0, cur: None }
    }

    /// Visits every entry mutably.
    pub fn for_each_mut<F: FnMut(&[u8], &mut V)>(&mut self, mut f: F) {
        for b in self.t.iter_mut().flat_map(|t| t.iter_mut()) {
            let mut cur = b.as_deref_mut();
            while let Some(n) = cur {
                f(&n.key, &mut n.val);
                cur = n.next.as_deref_mut();
            }
        }
    }
}

impl<V> Drop for Dict<V> {
    fn drop(&mut self) {
        self.clear();
    }
}

pub struct Iter<'a, V> {
    tables: [&'a [Bucket<V>]; 2],
    table: usize,
    idx: usize,
    cur: Option<&'a Node<V>>,
}

impl<'a, V> Iterator for Iter<'a, V> {
    type Item = (&'a [u8], &'a V);
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(n) = self.cur {
                self.cur = n.next.as_deref();
                return Some((&n.key, &n.val));
            }
            if self.idx >= self.tables[self.table].len() {
                if self.table == 1 {
                    return None;
                }
                (self.table, self.idx) = (1, 0);
                continue;
            }
            self.cur = self.tables[self.table][self.idx].as_deref();
            self.idx += 1;
        }
    }
}

/// Copies a Dict of byte values (used by collection types' COPY).
pub fn dup_bytes_dict(d: &Dict<Box<[u8]>>, seed: u64) -> Dict<Box<[u8]>> {
    let mut out = Dict::new(seed);
    for (k, v) in d.iter() {
        out.insert_new(k.into(), v.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeSet;
    use alloc::format;

    /// Redis's chi-square of draws over ten values (its suite's threshold: 40).
    fn chi_square(counts: &[u64]) -> f64 {
        let total: u64 = counts.iter().sum();
        let p = (total / counts.len() as u64) as f64;
        counts.iter().map(|&v| (v as f64 - p).powi(2) / p).sum()
    }

    #[test]
    fn fair_random_is_fair_mid_rehash_and_with_long_chains() {
        let mut d: Dict<usize> = Dict::new(11);
        let mut i = 0;
        while !(d.is_rehashing() && d.len() >= 9) {
            d.insert(format!("m{i}").as_bytes(), i);
            i += 1;
        }
        let mut rng = Rng::new(3);
        let mut counts = alloc::vec![0u64; d.len()];
        for _ in 0..1000 {
            counts[*d.fair_random(&mut rng).unwrap().1] += 1;
        }
        assert!(chi_square(&counts) < 40.0, "mid-rehash: {counts:?}");
        // A table grown large and emptied down to ten members: it shrinks as they go, and
        // stays mid-rehash once nothing is written (ten members in runs of empty buckets).
        let mut d: Dict<usize> = Dict::new(12);
        for i in 0..5000 {
            d.insert(format!("m{i}").as_bytes(), i);
        }
        for i in 10..5000 {
            d.remove(format!("m{i}").as_bytes());
        }
        assert!(d.is_rehashing(), "the test needs a table mid-shrink");
        let mut counts = alloc::vec![0u64; 10];
        for _ in 0..1000 {
            d.before_sampling();
            counts[*d.fair_random(&mut rng).unwrap().1] += 1;
        }
        assert!(chi_square(&counts) < 40.0, "sparse: {counts:?}");
    }

    #[test]
    fn basic() {
        let mut d: Dict<u32> = Dict::new(7);
        for i in 0..1000u32 {
            assert!(d.insert(format!("k{i}").as_bytes(), i).is_none());
        }
        assert_eq!(d.len(), 1000);
        assert_eq!(d.get(b"k5"), Some(&5));
        assert_eq!(d.insert(b"k5", 50), Some(5));
        for i in 0..990u32 {
            assert!(d.remove(format!("k{i}").as_bytes()).is_some());
        }
        assert_eq!(d.len(), 10);
        // A shrink may still be moving buckets; a few more writes finish it.
        for n in 0.. {
            if !d.is_rehashing() {
                break;
            }
            assert!(n < 100, "the rehash never finished");
            d.insert(b"x", 0);
            d.remove(b"x");
        }
        assert!(d.bucket_count() <= 16);
        assert_eq!(d.iter().count(), 10);
    }

    /// Against a BTreeMap model: random inserts, removes and lookups over growing and
    /// shrinking key sets, many of them while a rehash is under way.
    #[test]
    fn incremental_rehash_keeps_every_key_findable() {
        use alloc::collections::BTreeMap;
        let mut d: Dict<u64> = Dict::new(3);
        let mut model = BTreeMap::new();
        let mut rng = Rng::new(11);
        let (mut checked_mid_rehash, mut rehashes) = (0, 0);
        for round in 0..6u64 {
            // Grow to ~20k keys, then shrink to a few hundred.
            let (space, ops) = if round % 2 == 0 { (20_000, 60_000) } else { (400, 60_000) };
            for _ in 0..ops {
                let was = d.is_rehashing();
                let k = format!("k{}", rng.below(if round % 2 == 0 { space } else { 20_000 }));
                match rng.below(4) {
                    0 | 1 if round % 2 == 0 || rng.below(20_000) < space => {
                        let v = rng.next_u64();
                        assert_eq!(d.insert(k.as_bytes(), v), model.insert(k.clone(), v));
                    }
                    0..=2 => assert_eq!(d.remove(k.as_bytes()).map(|(_, v)| v), model.remove(&k)),
                    _ => {
                        assert_eq!(d.get(k.as_bytes()), model.get(&k));
                        if d.is_rehashing() {
                            checked_mid_rehash += 1;
                        }
                    }
                }
                rehashes += usize::from(!was && d.is_rehashing());
                assert_eq!(d.len(), model.len());
            }
            assert_eq!(d.iter().count(), model.len());
            let seen = scan_with_writes(&mut d, |_, _| {});
            assert_eq!(seen.len(), model.len(), "round {round}: a full scan sees every key once");
        }
        assert!(rehashes >= 10 && checked_mid_rehash > 1000, "rehashes {rehashes}, lookups mid-rehash {checked_mid_rehash}");
    }

    /// A full SCAN from cursor 0 with `write(d, step)` between calls; every key seen.
    fn scan_with_writes<V>(d: &mut Dict<V>, mut write: impl FnMut(&mut Dict<V>, u32)) -> BTreeSet<Vec<u8>> {
        let mut seen = BTreeSet::new();
        let (mut cursor, mut step) = (0, 0u32);
        loop {
            cursor = d.scan(cursor, |k, _| {
                seen.insert(k.to_vec());
            });
            step += 1;
            write(d, step);
            if cursor == 0 {
                return seen;
            }
        }
    }

    #[test]
    fn scan_survives_resizes() {
        let mut d: Dict<()> = Dict::new(1);
        for i in 0..500 {
            d.insert(format!("a{i}").as_bytes(), ());
        }
        // Grow, then shrink, in the middle of the iteration.
        let seen = scan_with_writes(&mut d, |d, step| {
            if step == 20 {
                for i in 0..5000 {
                    d.insert(format!("b{i}").as_bytes(), ());
                }
            }
            if step == 200 {
                for i in 0..5000 {
                    d.remove(format!("b{i}").as_bytes());
                }
            }
        });
        for i in 0..500 {
            assert!(seen.contains(format!("a{i}").as_bytes()), "missed a{i}");
        }
    }

    #[test]
    fn scan_survives_an_incremental_rehash_in_progress() {
        let mut d: Dict<()> = Dict::new(5);
        for i in 0..2000 {
            d.insert(format!("a{i}").as_bytes(), ());
        }
        // A few writes between calls start rehashes (growing, then shrinking) and move a
        // few buckets each, so most calls see two tables.
        let seen = scan_with_writes(&mut d, |d, step| {
            if (10..40).contains(&step) {
                for i in 0..200 {
                    d.insert(format!("b{step}-{i}").as_bytes(), ());
                }
            }
            if (200..230).contains(&step) {
                for i in 0..200 {
                    d.remove(format!("b{}-{i}", step - 190).as_bytes());
                }
            }
        });
        for i in 0..2000 {
            assert!(d.get(format!("a{i}").as_bytes()).is_some(), "lost a{i}");
            assert!(seen.contains(format!("a{i}").as_bytes()), "missed a{i}");
        }
    }

    /// SCAN while random batches of inserts and removes between calls grow and shrink the
    /// table (rehashes start, move a few buckets, finish): 100 seeds.
    #[test]
    fn random_writes_between_scan_calls() {
        for seed in 0..100u64 {
            let mut rng = Rng::new(seed);
            let mut d: Dict<()> = Dict::new(seed);
            let base = 50 + rng.below(3000);
            for i in 0..base {
                d.insert(format!("a{i}").as_bytes(), ());
            }
            let mut extra: Vec<u64> = Vec::new();
            let mut next_extra = 0u64;
            let mut calls = 0;
            let seen = scan_with_writes(&mut d, |d, step| {
                calls = step;
                let n = rng.below(60);
                let grow = rng.below(3) != 0 && step < 400;
                for _ in 0..n {
                    if grow || extra.is_empty() {
                        d.insert(format!("b{next_extra}").as_bytes(), ());
                        extra.push(next_extra);
                        next_extra += 1;
                    } else {
                        let j = rng.below(extra.len() as u64) as usize;
                        let k = extra.swap_remove(j);
                        d.remove(format!("b{k}").as_bytes());
                    }
                }
            });
            for i in 0..base {
                assert!(seen.contains(format!("a{i}").as_bytes()), "seed {seed}: missed a{i} after {calls} calls");
            }
        }
    }
}
