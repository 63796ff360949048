//! The ordered half of a large sorted set: Pugh's skiplist with spans (Redis's zskiplist),
//! ordered by (score, member), giving O(log n) insert, delete, rank and rank lookup, and
//! O(1) steps to neighbours. Nodes live in an arena addressed by u32 indexes (no unsafe,
//! no per-node pointers); freed slots are reused.
//!
//! A node's level comes from a seeded hash of its member rather than an RNG (the engine has
//! none of its own): it is deterministic, yet a client cannot aim for tall towers without
//! the host's seed. P = 1/4 and at most 32 levels, as in Redis.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cmp::Ordering;

pub const MAX_LEVEL: usize = 32;
/// "No node" (the end of a level, or no backward neighbour).
pub const NIL: u32 = u32::MAX;
/// The header pseudo-node (holds the first link of every level).
const HEAD: u32 = u32::MAX - 1;

#[derive(Clone, Copy)]
struct Link {
    next: u32,
    /// Number of level-0 steps this link jumps over.
    span: u32,
}

/// Levels held inside the node. With P = 1/4, 255 in 256 nodes have no more, so a descent
/// touches one cache line per step like Redis's node with its level array at the end (with
/// two inline levels, the separate array of levels 2+ was a second miss per step: ~1/4 of
/// ZADD's time on a 1M-member set).
const INLINE: usize = 4;

/// One element: exactly one 64-byte line (aligned, so it never straddles two). Levels past
/// INLINE live in `SkipList::high`, at index `hi`.
#[repr(align(64))]
struct Node {
    member: Box<[u8]>,
    score: f64,
    back: u32,
    /// Index into `SkipList::high`, or NIL.
    hi: u32,
    low: [Link; INLINE],
}

const _: () = assert!(core::mem::size_of::<Node>() == 64);

pub struct SkipList {
    nodes: Vec<Node>,
    free: Vec<u32>,
    /// Levels INLINE.. of the (few) tall nodes, and the free slots of this table.
    high: Vec<Box<[Link]>>,
    high_free: Vec<u32>,
    head: [Link; MAX_LEVEL],
    level: usize,
    len: usize,
    tail: u32,
    seed: u64,
}

/// (score, member) order: scores numerically (never NaN), then members bytewise.
#[inline]
pub fn cmp_entry(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> Ordering {
    if s1 < s2 {
        Ordering::Less
    } else if s1 > s2 {
        Ordering::Greater
    } else {
        m1.cmp(m2)
    }
}

impl SkipList {
    pub fn new(seed: u64) -> Self {
        SkipList { nodes: Vec::new(), free: Vec::new(), high: Vec::new(), high_free: Vec::new(), head: [Link { next: NIL, span: 0 }; MAX_LEVEL], level: 1, len: 0, tail: NIL, seed }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn link(&self, x: u32, i: usize) -> Link {
        if x == HEAD {
            self.head[i]
        } else {
            let n = &self.nodes[x as usize];
            if i < INLINE { n.low[i] } else { self.high[n.hi as usize][i - INLINE] }
        }
    }
    #[inline]
    fn link_mut(&mut self, x: u32, i: usize) -> &mut Link {
        if x == HEAD {
            &mut self.head[i]
        } else {
            let n = &mut self.nodes[x as usize];
            if i < INLINE { &mut n.low[i] } else { &mut self.high[n.hi as usize][i - INLINE] }
        }
    }

    /// Member and score of a node.
    #[inline]
    pub fn get(&self, n: u32) -> (&[u8], f64) {
        let node = &self.nodes[n as usize];
        (&node.member, node.score)
    }
    /// The next node in order, or NIL.
    #[inline]
    pub fn next(&self, n: u32) -> u32 {
        self.nodes[n as usize].low[0].next
    }
    /// The previous node in order, or NIL.
    #[inline]
    pub fn prev(&self, n: u32) -> u32 {
        self.nodes[n as usize].back
    }
    pub fn first(&self) -> u32 {
        self.head[0].next
    }
    pub fn last(&self) -> u32 {
        self.tail
    }

    fn level_for(&self, member: &[u8]) -> usize {
        let mut h = xxhash_rust::xxh3::xxh3_64_with_seed(member, self.seed ^ 0x5a17_11f7);
        let mut lvl = 1;
        while h & 3 == 0 && lvl < MAX_LEVEL {
            lvl += 1;
            h >>= 2;
        }
        lvl
    }

    /// Inserts an element known to be absent. Returns its node.
    pub fn insert(&mut self, member: &[u8], score: f64) -> u32 {
        let level = self.level_for(member);
        let nil = Link { next: NIL, span: 0 };
        let hi = if level > INLINE {
            let links: Box<[Link]> = (INLINE..level).map(|_| nil).collect();
            match self.high_free.pop() {
                Some(h) => {
                    self.high[h as usize] = links;
                    h
                }
                None => {
                    self.high.push(links);
                    (self.high.len() - 1) as u32
                }
            }
        } else {
            NIL
        };
        let node = Node { member: member.into(), score, back: NIL, hi, low: [nil; INLINE] };
        let id = match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.link_in(id, level);
        id
    }

    /// Links node `id` (member and score set, not linked; `level` from `level_for`) at its
    /// place in the order.
    fn link_in(&mut self, id: u32, level: usize) {
        let mut update = [HEAD; MAX_LEVEL];
        let mut rank = [0u32; MAX_LEVEL];
        {
            let me = &self.nodes[id as usize];
            let (member, score) = (&*me.member, me.score);
            let mut x = HEAD;
            for i in (0..self.level).rev() {
                rank[i] = if i == self.level - 1 { 0 } else { rank[i + 1] };
                loop {
                    let l = self.link(x, i);
                    if l.next == NIL {
                        break;
                    }
                    let (m, s) = self.get(l.next);
                    if cmp_entry(s, m, score, member) != Ordering::Less {
                        break;
                    }
                    rank[i] += l.span;
                    x = l.next;
                }
                update[i] = x;
            }
        }
        if level > self.level {
            for i in self.level..level {
                rank[i] = 0;
                update[i] = HEAD;
                self.head[i].span = self.len as u32;
            }
            self.level = level;
        }
        for i in 0..level {
            let u = self.link(update[i], i);
            let crossed = rank[0] - rank[i];
            *self.link_mut(id, i) = Link { next: u.next, span: u.span - crossed };
            *self.link_mut(update[i], i) = Link { next: id, span: crossed + 1 };
        }
        for i in level..self.level {
            self.link_mut(update[i], i).span += 1;
        }
        self.nodes[id as usize].back = if update[0] == HEAD { NIL } else { update[0] };
        let next = self.nodes[id as usize].low[0].next;
        if next != NIL {
            self.nodes[next as usize].back = id;
        } else {
            self.tail = id;
        }
        self.len += 1;
    }

    /// The update vector for the position just before (score, member).
    fn find_update(&self, member: &[u8], score: f64) -> [u32; MAX_LEVEL] {
        let mut update = [HEAD; MAX_LEVEL];
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                let l = self.link(x, i);
                if l.next == NIL {
                    break;
                }
                let (m, s) = self.get(l.next);
                if cmp_entry(s, m, score, member) != Ordering::Less {
                    break;
                }
                x = l.next;
            }
            update[i] = x;
        }
        update
    }

    /// Takes node `x` out of the order; its slot keeps member and levels (see `release`).
    fn unlink(&mut self, x: u32, update: &[u32; MAX_LEVEL]) {
        for i in 0..self.level {
            let u = self.link(update[i], i);
            if u.next == x {
                let xl = self.link(x, i);
                *self.link_mut(update[i], i) = Link { next: xl.next, span: u.span + xl.span - 1 };
            } else {
                self.link_mut(update[i], i).span -= 1;
            }
        }
        let (next, back) = (self.nodes[x as usize].low[0].next, self.nodes[x as usize].back);
        if next != NIL {
            self.nodes[next as usize].back = back;
        } else {
            self.tail = back;
        }
        while self.level > 1 && self.head[self.level - 1].next == NIL {
            self.level -= 1;
        }
        self.len -= 1;
        // Clear the node's own links: a re-link must start from nil ones.
        let nil = Link { next: NIL, span: 0 };
        let n = &mut self.nodes[x as usize];
        n.low = [nil; INLINE];
        if n.hi != NIL {
            self.high[n.hi as usize].fill(nil);
        }
    }

    /// Frees an unlinked node's heap parts; its slot is reused by the next insert.
    fn release(&mut self, x: u32) {
        let n = &mut self.nodes[x as usize];
        n.member = Box::default();
        if n.hi != NIL {
            self.high[n.hi as usize] = Box::default();
            self.high_free.push(n.hi);
            n.hi = NIL;
        }
        self.free.push(x);
        if self.len == 0 {
            self.nodes = Vec::new();
            self.free = Vec::new();
            self.high = Vec::new();
            self.high_free = Vec::new();
        }
    }

    /// Removes (score, member); false if absent.
    pub fn remove(&mut self, member: &[u8], score: f64) -> bool {
        let update = self.find_update(member, score);
        let x = self.link(update[0], 0).next;
        if x != NIL {
            let (m, s) = self.get(x);
            if s == score && m == member {
                self.unlink(x, &update);
                self.release(x);
                return true;
            }
        }
        false
    }

    /// Moves a present (cur, member) to score `new` (Redis's zslUpdateScore): in place when
    /// the order does not change, else unlinked and linked again in the same node (no
    /// allocation). False if (cur, member) is absent.
    pub fn update_score(&mut self, member: &[u8], cur: f64, new: f64) -> bool {
        let update = self.find_update(member, cur);
        let x = self.link(update[0], 0).next;
        if x == NIL {
            return false;
        }
        {
            let (m, s) = self.get(x);
            if s != cur || m != member {
                return false;
            }
        }
        let n = &self.nodes[x as usize];
        let (back, next) = (n.back, n.low[0].next);
        if (back == NIL || self.nodes[back as usize].score < new) && (next == NIL || self.nodes[next as usize].score > new) {
            self.nodes[x as usize].score = new;
            return true;
        }
        let level = self.level_for(member);
        self.unlink(x, &update);
        self.nodes[x as usize].score = new;
        self.link_in(x, level);
        true
    }

    /// Number of leading elements for which `before(score, member)` holds. `before` must be
    /// monotone (true for a prefix of the order, then false): O(log n) via the spans.
    pub fn partition_point<F: Fn(f64, &[u8]) -> bool>(&self, before: F) -> usize {
        let mut x = HEAD;
        let mut rank = 0usize;
        for i in (0..self.level).rev() {
            loop {
                let l = self.link(x, i);
                if l.next == NIL {
                    break;
                }
                let (m, s) = self.get(l.next);
                if !before(s, m) {
                    break;
                }
                rank += l.span as usize;
                x = l.next;
            }
        }
        rank
    }

    /// The node at 0-based `rank`, or NIL when out of range.
    pub fn at_rank(&self, rank: usize) -> u32 {
        if rank >= self.len {
            return NIL;
        }
        let target = rank + 1;
        let mut x = HEAD;
        let mut traversed = 0usize;
        for i in (0..self.level).rev() {
            loop {
                let l = self.link(x, i);
                if l.next == NIL || traversed + l.span as usize > target {
                    break;
                }
                traversed += l.span as usize;
                x = l.next;
            }
            if traversed == target {
                return x;
            }
        }
        NIL
    }

    /// 0-based rank of an element known to be present with this score.
    pub fn rank_of(&self, member: &[u8], score: f64) -> usize {
        self.partition_point(|s, m| cmp_entry(s, m, score, member) == Ordering::Less)
    }

    /// Removes the elements at 0-based ranks `lo..hi`, handing each to `gone` in order.
    pub fn remove_rank_range<F: FnMut(&[u8], f64)>(&mut self, lo: usize, hi: usize, mut gone: F) -> usize {
        if lo >= hi || lo >= self.len {
            return 0;
        }
        let mut update = [HEAD; MAX_LEVEL];
        let mut x = HEAD;
        let mut traversed = 0usize;
        for i in (0..self.level).rev() {
            loop {
                let l = self.link(x, i);
                if l.next == NIL || traversed + l.span as usize > lo {
                    break;
                }
                traversed += l.span as usize;
                x = l.next;
            }
            update[i] = x;
        }
        let mut n = self.link(x, 0).next;
        let mut removed = 0;
        while n != NIL && lo + removed < hi {
            let next = self.next(n);
            {
                let (m, s) = self.get(n);
                gone(m, s);
            }
            self.unlink(n, &update);
            self.release(n);
            removed += 1;
            n = next;
        }
        removed
    }

    /// Visits every element in order.
    pub fn for_each<F: FnMut(&[u8], f64)>(&self, mut f: F) {
        let mut n = self.first();
        while n != NIL {
            let (m, s) = self.get(n);
            f(m, s);
            n = self.next(n);
        }
    }

    /// Checks every structural invariant (tests).
    pub fn check(&self) -> Result<(), alloc::string::String> {
        use alloc::format;
        let mut n = self.first();
        let mut prev = NIL;
        let mut count = 0;
        while n != NIL {
            if self.prev(n) != prev {
                return Err(format!("bad backward link at {count}"));
            }
            if prev != NIL {
                let (pm, ps) = self.get(prev);
                let (m, s) = self.get(n);
                if cmp_entry(ps, pm, s, m) != Ordering::Less {
                    return Err(format!("order broken at {count}"));
                }
            }
            prev = n;
            n = self.next(n);
            count += 1;
        }
        if count != self.len || self.tail != prev {
            return Err(format!("len {} but walked {}", self.len, count));
        }
        for r in 0..self.len {
            let x = self.at_rank(r);
            if x == NIL {
                return Err(format!("rank {r} not found"));
            }
            let (m, s) = self.get(x);
            if self.rank_of(m, s) != r {
                return Err(format!("rank_of mismatch at {r}"));
            }
        }
        Ok(())
    }
}
