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

pub struct Dict<V> {
    buckets: Vec<Option<Box<Node<V>>>>,
    len: usize,
    seed: u64,
}

const MIN_BUCKETS: usize = 4;

impl<V> Dict<V> {
    pub fn new(seed: u64) -> Self {
        Dict { buckets: Vec::new(), len: 0, seed }
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
        self.buckets.len()
    }

    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64_with_seed(key, self.seed)
    }

    #[inline]
    fn mask(&self) -> u64 {
        self.buckets.len() as u64 - 1
    }

    pub fn get(&self, key: &[u8]) -> Option<&V> {
        if self.len == 0 {
            return None;
        }
        let h = self.hash(key);
        let mut cur = self.buckets[(h & self.mask()) as usize].as_deref();
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
        let i = (h & self.mask()) as usize;
        let mut cur = self.buckets[i].as_deref_mut();
        while let Some(n) = cur {
            if n.hash == h && &*n.key == key {
                return Some(&mut n.val);
            }
            cur = n.next.as_deref_mut();
        }
        None
    }

    /// First stage of a batched prefetch: the head node of `key`'s bucket (one load,
    /// independent of other keys' loads, so a batch overlaps its cache misses).
    #[inline]
    pub fn bucket_head(&self, key: &[u8]) -> Option<&V> {
        if self.len == 0 {
            return None;
        }
        let h = self.hash(key);
        let node = self.buckets[(h & self.mask()) as usize].as_deref()?;
        // Reading the node pulls its cache line in; the key bytes come next.
        if node.hash == h { Some(&node.val) } else { None }
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
        if self.len >= self.buckets.len() {
            self.resize((self.buckets.len() * 2).max(MIN_BUCKETS));
        }
        let h = self.hash(&key);
        let i = (h & self.mask()) as usize;
        let next = self.buckets[i].take();
        self.buckets[i] = Some(Box::new(Node { next, hash: h, key, val }));
        self.len += 1;
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<(Box<[u8]>, V)> {
        if self.len == 0 {
            return None;
        }
        let h = self.hash(key);
        let i = (h & self.mask()) as usize;
        let mut link = &mut self.buckets[i];
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
        let b = self.buckets.len();
        if b > MIN_BUCKETS && self.len * 8 < b {
            self.resize(self.len.next_power_of_two().max(MIN_BUCKETS));
        } else if self.len == 0 {
            self.buckets = Vec::new();
        }
    }

    /// Rehashes everything into `n` buckets. Nodes are relinked, never copied.
    fn resize(&mut self, n: usize) {
        let mut new: Vec<Option<Box<Node<V>>>> = Vec::with_capacity(n);
        new.resize_with(n, || None);
        let mask = n as u64 - 1;
        for b in self.buckets.iter_mut() {
            let mut cur = b.take();
            while let Some(mut node) = cur {
                cur = node.next.take();
                let i = (node.hash & mask) as usize;
                node.next = new[i].take();
                new[i] = Some(node);
            }
        }
        self.buckets = new;
    }

    pub fn clear(&mut self) {
        // Unlink chains iteratively: a recursive drop of a long chain could overflow the stack.
        for b in self.buckets.iter_mut() {
            let mut cur = b.take();
            while let Some(mut node) = cur {
                cur = node.next.take();
            }
        }
        self.buckets = Vec::new();
        self.len = 0;
    }

    /// Visits the bucket at `cursor` (and returns the next cursor, 0 when done) using the
    /// reverse-binary increment, so the walk survives resizes between calls.
    pub fn scan<F: FnMut(&[u8], &V)>(&self, cursor: u64, mut f: F) -> u64 {
        if self.buckets.is_empty() {
            return 0;
        }
        let m = self.mask();
        let mut cur = self.buckets[(cursor & m) as usize].as_deref();
        while let Some(n) = cur {
            f(&n.key, &n.val);
            cur = n.next.as_deref();
        }
        let mut v = cursor | !m;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }

    /// A uniformly chosen bucket, then a uniformly chosen element of its chain (as Redis).
    pub fn random(&self, rng: &mut Rng) -> Option<(&[u8], &V)> {
        if self.len == 0 {
            return None;
        }
        let n = self.buckets.len() as u64;
        let mut idx = rng.below(n) as usize;
        for _ in 0..100 {
            if self.buckets[idx].is_some() {
                break;
            }
            idx = rng.below(n) as usize;
        }
        // Fill factor is kept >= 1/8, so the loop above almost always succeeded; otherwise walk.
        while self.buckets[idx].is_none() {
            idx = (idx + 1) % self.buckets.len();
        }
        let mut chain = 0u64;
        let mut cur = self.buckets[idx].as_deref();
        while let Some(node) = cur {
            chain += 1;
            cur = node.next.as_deref();
        }
        let mut pick = rng.below(chain);
        let mut cur = self.buckets[idx].as_deref();
        while let Some(node) = cur {
            if pick == 0 {
                return Some((&node.key, &node.val));
            }
            pick -= 1;
            cur = node.next.as_deref();
        }
        None
    }

    pub fn iter(&self) -> Iter<'_, V> {
        Iter { buckets: &self.buckets, idx: 0, cur: None }
    }

    /// Visits every entry mutably.
    pub fn for_each_mut<F: FnMut(&[u8], &mut V)>(&mut self, mut f: F) {
        for b in self.buckets.iter_mut() {
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
    buckets: &'a [Option<Box<Node<V>>>],
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
            if self.idx >= self.buckets.len() {
                return None;
            }
            self.cur = self.buckets[self.idx].as_deref();
            self.idx += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeSet;
    use alloc::format;

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
        assert!(d.bucket_count() <= 16);
        assert_eq!(d.iter().count(), 10);
    }

    #[test]
    fn scan_survives_resizes() {
        let mut d: Dict<()> = Dict::new(1);
        for i in 0..500 {
            d.insert(format!("a{i}").as_bytes(), ());
        }
        let mut seen = BTreeSet::new();
        let mut cursor = 0;
        let mut step = 0;
        loop {
            cursor = d.scan(cursor, |k, _| {
                seen.insert(k.to_vec());
            });
            step += 1;
            // Grow, then shrink, in the middle of the iteration.
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
            if cursor == 0 {
                break;
            }
        }
        for i in 0..500 {
            assert!(seen.contains(format!("a{i}").as_bytes()), "missed a{i}");
        }
    }
}
