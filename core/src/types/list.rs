//! The list value (Redis's quicklist.c): a deque of packed nodes, each a run of entries
//! in one buffer like a listpack, capped by `list-max-listpack-size` (8 KiB by default).
//! Pushes and pops at either end are O(1) amortised (a pop at the head moves at most one
//! node's bytes, as listpack deletes do); indexing walks whole nodes by their counts, then
//! one node, so LINDEX/LRANGE cost O(offset / entries-per-node + node + range).
//!
//! Entry layout in a node: len (LEB128) | bytes | backlen, where backlen is the size of
//! len + bytes written so it can be read from its last byte backwards (a listpack's
//! backlen), so nodes are walked from either end. Short entries cost 2 bytes of overhead.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

/// Redis's SIZE_SAFETY_LIMIT: a node never grows past this by count-based fills.
const SIZE_SAFETY_LIMIT: usize = 8192;
/// Byte caps of fill -1..-5.
const SIZE_LIMITS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];

fn varint_len(mut n: usize) -> usize {
    let mut l = 1;
    while n >= 128 {
        n >>= 7;
        l += 1;
    }
    l
}

fn entry_size(len: usize) -> usize {
    let h = varint_len(len) + len;
    h + varint_len(h)
}

fn put_entry(out: &mut Vec<u8>, data: &[u8]) {
    let start = out.len();
    out.resize(start + entry_size(data.len()), 0);
    write_entry(&mut out[start..], data);
}

/// Writes one entry into `dst`, which is exactly `entry_size(data.len())` bytes.
fn write_entry(dst: &mut [u8], data: &[u8]) {
    let mut p = 0;
    let mut n = data.len();
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            dst[p] = b;
            p += 1;
            break;
        }
        dst[p] = b | 0x80;
        p += 1;
    }
    dst[p..p + data.len()].copy_from_slice(data);
    p += data.len();
    // backlen: groups from the most significant, the continuation bit on all but the first,
    // so reading backwards from the last byte finds the low group first.
    let h = p;
    let g = varint_len(h);
    for i in 0..g {
        // Group g-1-i (most significant first); all but the most significant flagged.
        let grp = ((h >> (7 * (g - 1 - i))) & 0x7f) as u8;
        dst[p + i] = if i == 0 { grp } else { grp | 0x80 };
    }
}

/// Reads the entry at `pos`: (data start, data end, next entry's position).
#[inline]
fn read_fwd(buf: &[u8], pos: usize) -> (usize, usize, usize) {
    let mut p = pos;
    let mut n = 0usize;
    let mut shift = 0;
    loop {
        let b = buf[p];
        p += 1;
        n |= ((b & 0x7f) as usize) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let end = p + n;
    (p, end, end + varint_len(end - pos))
}

/// Reads the entry that ends at `end`: (its start, data start, data end).
#[inline]
fn read_back(buf: &[u8], end: usize) -> (usize, usize, usize) {
    let mut p = end - 1;
    let mut b = buf[p];
    let mut h = (b & 0x7f) as usize;
    let mut shift = 7;
    while b & 0x80 != 0 {
        p -= 1;
        b = buf[p];
        h |= ((b & 0x7f) as usize) << shift;
        shift += 7;
    }
    let start = p - h;
    let (ds, de, _) = read_fwd(buf, start);
    (start, ds, de)
}

/// One node: `count` entries packed in `buf`.
#[derive(Clone, Default)]
struct Node {
    buf: Vec<u8>,
    count: u32,
}

impl Node {
    fn with(data: &[u8]) -> Node {
        let mut buf = Vec::with_capacity(entry_size(data.len()));
        put_entry(&mut buf, data);
        Node { buf, count: 1 }
    }

    /// Grows the buffer by at most a quarter beyond need: nodes are small and many lists
    /// are short, so doubling would waste up to half of a list's memory.
    fn reserve(&mut self, more: usize) {
        let free = self.buf.capacity() - self.buf.len();
        if free < more {
            let want = more.max(self.buf.len() / 4).max(16);
            self.buf.reserve_exact(want);
        }
    }

    fn push_back(&mut self, data: &[u8]) {
        self.reserve(entry_size(data.len()));
        put_entry(&mut self.buf, data);
        self.count += 1;
    }

    /// Shifts the node up and writes the entry in front (a listpack's memmove), without
    /// a temporary buffer.
    fn push_front(&mut self, data: &[u8]) {
        let es = entry_size(data.len());
        self.reserve(es);
        let old = self.buf.len();
        self.buf.resize(old + es, 0);
        self.buf.copy_within(0..old, es);
        write_entry(&mut self.buf[..es], data);
        self.count += 1;
    }

    fn pop_front(&mut self) -> Vec<u8> {
        let (ds, de, next) = read_fwd(&self.buf, 0);
        let v = self.buf[ds..de].to_vec();
        self.buf.drain(..next);
        self.count -= 1;
        v
    }

    fn pop_back(&mut self) -> Vec<u8> {
        let (start, ds, de) = read_back(&self.buf, self.buf.len());
        let v = self.buf[ds..de].to_vec();
        self.buf.truncate(start);
        self.count -= 1;
        v
    }

    /// Byte offset of entry `i` (i == count: the end).
    fn offset(&self, i: usize) -> usize {
        let n = self.count as usize;
        if i <= n / 2 {
            let mut p = 0;
            for _ in 0..i {
                p = read_fwd(&self.buf, p).2;
            }
            p
        } else {
            let mut p = self.buf.len();
            for _ in i..n {
                p = read_back(&self.buf, p).0;
            }
            p
        }
    }

    fn get(&self, i: usize) -> &[u8] {
        let (ds, de, _) = read_fwd(&self.buf, self.offset(i));
        &self.buf[ds..de]
    }

    /// Replaces `remove` entries from `i` with `insert`.
    fn splice(&mut self, i: usize, remove: usize, insert: &[&[u8]]) {
        let a = self.offset(i);
        let mut b = a;
        for _ in 0..remove {
            b = read_fwd(&self.buf, b).2;
        }
        let mut e = Vec::new();
        for x in insert {
            put_entry(&mut e, x);
        }
        if e.len() > b - a {
            self.reserve(e.len() - (b - a));
        }
        self.buf.splice(a..b, e);
        self.count = self.count + insert.len() as u32 - remove as u32;
        self.shrink();
    }

    /// Gives back memory after large deletions.
    fn shrink(&mut self) {
        if self.buf.capacity() > 64 && self.buf.len() < self.buf.capacity() / 2 {
            self.buf.shrink_to(self.buf.len() + self.buf.len() / 4);
        }
    }

    /// Splits at entry `i`: the entries from `i` on move to the returned node.
    fn split_off(&mut self, i: usize) -> Node {
        let off = self.offset(i);
        let tail = self.buf[off..].to_vec();
        self.buf.truncate(off);
        self.shrink();
        let n = Node { buf: tail, count: self.count - i as u32 };
        self.count = i as u32;
        n
    }

    fn for_each(&self, mut f: impl FnMut(&[u8]) -> bool) -> bool {
        let mut p = 0;
        while p < self.buf.len() {
            let (ds, de, next) = read_fwd(&self.buf, p);
            if !f(&self.buf[ds..de]) {
                return false;
            }
            p = next;
        }
        true
    }

    fn for_each_rev(&self, mut f: impl FnMut(&[u8]) -> bool) -> bool {
        let mut p = self.buf.len();
        while p > 0 {
            let (start, ds, de) = read_back(&self.buf, p);
            if !f(&self.buf[ds..de]) {
                return false;
            }
            p = start;
        }
        true
    }
}

/// Whether a node may take one more entry of `len` bytes (Redis's
/// _quicklistNodeAllowInsert).
fn allows(node: &Node, fill: i64, len: usize) -> bool {
    let new_sz = node.buf.len() + entry_size(len);
    if fill >= 0 {
        (node.count as i64) < fill.max(1) && new_sz <= SIZE_SAFETY_LIMIT
    } else {
        let lvl = ((-fill) as usize).min(5) - 1;
        new_sz <= SIZE_LIMITS[lvl]
    }
}

/// Whether a node is over its cap (after an insert in the middle).
fn oversized(node: &Node, fill: i64) -> bool {
    if node.count <= 1 {
        return false;
    }
    if fill >= 0 { node.count as i64 > fill.max(1) || node.buf.len() > SIZE_SAFETY_LIMIT } else { node.buf.len() > SIZE_LIMITS[((-fill) as usize).min(5) - 1] }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum End {
    Head,
    Tail,
}

pub struct ListValue {
    nodes: VecDeque<Node>,
    len: usize,
}

impl Default for ListValue {
    fn default() -> Self {
        Self::new()
    }
}

impl ListValue {
    /// MEMORY USAGE of the value: its nodes, estimated from the first `samples` (each
    /// holds up to `list-max-listpack-size` elements, as Redis samples quicklist nodes).
    pub fn memory_usage(&self, samples: usize) -> u64 {
        use crate::util::memsize::{alloc, sampled};
        alloc(core::mem::size_of::<ListValue>())
            + alloc(self.nodes.capacity() * core::mem::size_of::<Node>())
            + sampled(self.nodes.len(), samples, self.nodes.iter().map(|n| alloc(n.buf.capacity())))
    }

    pub fn new() -> Self {
        // One node slot: most lists are small, and VecDeque's default first growth is four.
        ListValue { nodes: VecDeque::with_capacity(1), len: 0 }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, end: End, data: &[u8], fill: i64) {
        self.len += 1;
        match end {
            End::Tail => match self.nodes.back_mut() {
                Some(n) if allows(n, fill, data.len()) => n.push_back(data),
                _ => self.nodes.push_back(Node::with(data)),
            },
            End::Head => match self.nodes.front_mut() {
                Some(n) if allows(n, fill, data.len()) => n.push_front(data),
                _ => self.nodes.push_front(Node::with(data)),
            },
        }
    }

    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        let (v, empty) = match end {
            End::Head => {
                let n = self.nodes.front_mut()?;
                (n.pop_front(), n.count == 0)
            }
            End::Tail => {
                let n = self.nodes.back_mut()?;
                (n.pop_back(), n.count == 0)
            }
        };
        self.len -= 1;
        if empty {
            match end {
                End::Head => self.nodes.pop_front(),
                End::Tail => self.nodes.pop_back(),
            };
        }
        Some(v)
    }

    /// (node index, index in node) of element `i` < len, walking from the nearer end.
    fn locate(&self, i: usize) -> (usize, usize) {
        if i < self.len / 2 {
            let mut rest = i;
            for (ni, n) in self.nodes.iter().enumerate() {
                if rest < n.count as usize {
                    return (ni, rest);
                }
                rest -= n.count as usize;
            }
        } else {
            let mut rest = self.len - 1 - i;
            for ni in (0..self.nodes.len()).rev() {
                let c = self.nodes[ni].count as usize;
                if rest < c {
                    return (ni, c - 1 - rest);
                }
                rest -= c;
            }
        }
        unreachable!("index within the list")
    }

    pub fn get(&self, i: usize) -> Option<&[u8]> {
        if i >= self.len {
            return None;
        }
        let (ni, j) = self.locate(i);
        Some(self.nodes[ni].get(j))
    }

    /// Calls `f` on `n` elements from `start` (forwards), or on `n` elements ending at
    /// `start` going backwards when `rev`.
    pub fn range(&self, start: usize, n: usize, rev: bool, mut f: impl FnMut(&[u8])) {
        if n == 0 || start >= self.len {
            return;
        }
        let (mut ni, j) = self.locate(start);
        let mut left = n;
        if !rev {
            let node = &self.nodes[ni];
            let mut p = node.offset(j);
            loop {
                let node = &self.nodes[ni];
                while p < node.buf.len() && left > 0 {
                    let (ds, de, next) = read_fwd(&node.buf, p);
                    f(&node.buf[ds..de]);
                    p = next;
                    left -= 1;
                }
                ni += 1;
                if left == 0 || ni >= self.nodes.len() {
                    return;
                }
                p = 0;
            }
        } else {
            let node = &self.nodes[ni];
            let mut p = node.offset(j + 1);
            loop {
                let node = &self.nodes[ni];
                while p > 0 && left > 0 {
                    let (st, ds, de) = read_back(&node.buf, p);
                    f(&node.buf[ds..de]);
                    p = st;
                    left -= 1;
                }
                if left == 0 || ni == 0 {
                    return;
                }
                ni -= 1;
                p = self.nodes[ni].buf.len();
            }
        }
    }

    /// How many entries each node holds, head first (DUMP writes a quicklist node for each).
    pub fn node_counts(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().map(|n| n.count as usize)
    }

    /// Visits every element from the head (or the tail); `f` returns false to stop.
    pub fn for_each(&self, rev: bool, mut f: impl FnMut(&[u8]) -> bool) {
        if rev {
            for n in self.nodes.iter().rev() {
                if !n.for_each_rev(&mut f) {
                    return;
                }
            }
        } else {
            for n in self.nodes.iter() {
                if !n.for_each(&mut f) {
                    return;
                }
            }
        }
    }

    fn fix_node(&mut self, ni: usize, fill: i64) {
        if self.nodes[ni].count == 0 {
            self.nodes.remove(ni);
            return;
        }
        if oversized(&self.nodes[ni], fill) {
            let half = self.nodes[ni].count as usize / 2;
            let tail = self.nodes[ni].split_off(half);
            self.nodes.insert(ni + 1, tail);
            // Each half may still be too big (a long element among short ones).
            self.fix_node(ni + 1, fill);
            self.fix_node(ni, fill);
        }
    }

    pub fn set(&mut self, i: usize, data: &[u8], fill: i64) -> bool {
        if i >= self.len {
            return false;
        }
        let (ni, j) = self.locate(i);
        self.nodes[ni].splice(j, 1, &[data]);
        self.fix_node(ni, fill);
        true
    }

    /// Inserts before/after the first element equal to `pivot`; false if there is none.
    pub fn insert(&mut self, pivot: &[u8], data: &[u8], after: bool, fill: i64) -> bool {
        for ni in 0..self.nodes.len() {
            let mut found = None;
            let mut j = 0;
            self.nodes[ni].for_each(|x| {
                if x == pivot {
                    found = Some(j);
                    return false;
                }
                j += 1;
                true
            });
            if let Some(j) = found {
                let at = if after { j + 1 } else { j };
                self.nodes[ni].splice(at, 0, &[data]);
                self.len += 1;
                self.fix_node(ni, fill);
                return true;
            }
        }
        false
    }

    /// Removes up to `limit` elements equal to `x` (0 = all), from the tail when `rev`.
    pub fn remove(&mut self, x: &[u8], limit: usize, rev: bool) -> usize {
        let limit = if limit == 0 { usize::MAX } else { limit };
        let mut removed = 0;
        let order: Vec<usize> = if rev { (0..self.nodes.len()).rev().collect() } else { (0..self.nodes.len()).collect() };
        for ni in order {
            if removed >= limit {
                break;
            }
            let node = &self.nodes[ni];
            let mut matches = 0usize;
            node.for_each(|e| {
                matches += (e == x) as usize;
                true
            });
            if matches == 0 {
                continue;
            }
            let take = matches.min(limit - removed);
            // Forwards the first `take` matches go; backwards the last `take`.
            let skip_first = if rev { matches - take } else { 0 };
            let mut kept = Vec::with_capacity(node.buf.len());
            let mut seen = 0usize;
            let mut count = 0u32;
            node.for_each(|e| {
                if e == x {
                    seen += 1;
                    if seen > skip_first && seen <= skip_first + take {
                        return true;
                    }
                }
                put_entry(&mut kept, e);
                count += 1;
                true
            });
            self.nodes[ni] = Node { buf: kept, count };
            removed += take;
        }
        self.nodes.retain(|n| n.count > 0);
        self.len -= removed;
        removed
    }

    /// Deletes `n` elements from index `start`.
    pub fn delete_range(&mut self, start: usize, n: usize) {
        let n = n.min(self.len.saturating_sub(start));
        if n == 0 {
            return;
        }
        let (mut ni, mut j) = self.locate(start);
        let mut left = n;
        while left > 0 {
            let c = self.nodes[ni].count as usize;
            let here = left.min(c - j);
            if j == 0 && here == c {
                self.nodes.remove(ni);
            } else {
                self.nodes[ni].splice(j, here, &[]);
                ni += 1;
            }
            left -= here;
            j = 0;
        }
        self.len -= n;
    }

    pub fn duplicate(&self) -> ListValue {
        ListValue { nodes: self.nodes.clone(), len: self.len }
    }
}
