//! The ordered half of a large sorted set: a counted B+tree ordered by (score, member),
//! giving O(log n) insert, delete, rank and rank lookup, and O(1) steps to neighbours.
//!
//! Why not Redis's skiplist: on a big set every step of a skiplist descent is a cache miss
//! (~30 of them per descent at 1M members, two descents per ZADD update), while a node of
//! this tree keeps 32 scores in one contiguous array, so a descent is ~4 levels of a short
//! binary search (a few misses each). Each child's element count rides in its parent, for
//! ranks.
//!
//! Every separator is an exact copy of the least element under its child (kept so on
//! deletes), so a predicate evaluated on separators means the same as on elements: range
//! lookups only need the predicate to be monotone over the elements (BYLEX's contract).
//! Nodes live in arenas addressed by u32 indexes; a node handle for iteration is
//! `leaf << SLOT_BITS | slot`, valid until the next change.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::mem;

/// "No element" (past either end).
pub const NIL: u32 = u32::MAX;

/// Most entries (elements or children) a node holds.
const B: usize = 32;
const SLOT_BITS: u32 = 5;
const _: () = assert!(1 << SLOT_BITS == B);
/// Deepest descent kept on the stack (height ≤ log_{cap/4}(n) + 1 with cap ≥ 8).
const MAX_HEIGHT: usize = 40;

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

/// The first index in `lo..hi` where `pred` is false (`pred` true for a prefix), or `hi`.
#[inline]
fn first_false(mut lo: usize, mut hi: usize, pred: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = (lo + hi) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A free slot of an arena (freed slots come back empty), or a new one.
fn take_slot<T>(arena: &mut Vec<T>, free: &mut Vec<u32>, make: fn() -> T) -> u32 {
    free.pop().unwrap_or_else(|| {
        arena.push(make());
        (arena.len() - 1) as u32
    })
}

/// Slots at and past `len` hold empty boxes (no allocation).
struct Leaf {
    scores: [f64; B],
    members: [Box<[u8]>; B],
    len: usize,
    prev: u32,
    next: u32,
}

/// Child `i` holds the elements from separator `i` (its least element; slot 0 unused)
/// up to separator `i + 1`, `counts[i]` of them.
struct Inner {
    sep_scores: [f64; B],
    sep_members: [Box<[u8]>; B],
    children: [u32; B],
    counts: [u32; B],
    len: usize,
}

impl Leaf {
    fn new() -> Self {
        Leaf { scores: [0.0; B], members: core::array::from_fn(|_| Box::default()), len: 0, prev: NIL, next: NIL }
    }
    /// Elements strictly before (score, member).
    #[inline]
    fn lower_bound(&self, score: f64, member: &[u8]) -> usize {
        first_false(0, self.len, |i| cmp_entry(self.scores[i], &self.members[i], score, member) == Ordering::Less)
    }
    fn insert_at(&mut self, at: usize, score: f64, member: Box<[u8]>) {
        let n = self.len;
        self.scores.copy_within(at..n, at + 1);
        self.scores[at] = score;
        self.members[n] = member;
        self.members[at..=n].rotate_right(1);
        self.len += 1;
    }
    fn remove_at(&mut self, at: usize) -> (Box<[u8]>, f64) {
        let n = self.len;
        let score = self.scores[at];
        self.scores.copy_within(at + 1..n, at);
        self.members[at..n].rotate_left(1);
        self.len -= 1;
        (mem::take(&mut self.members[n - 1]), score)
    }
}

impl Inner {
    fn new() -> Self {
        Inner { sep_scores: [0.0; B], sep_members: core::array::from_fn(|_| Box::default()), children: [NIL; B], counts: [0; B], len: 0 }
    }
    /// The child that holds (score, member) or would: the last whose separator is ≤ it.
    #[inline]
    fn route(&self, score: f64, member: &[u8]) -> usize {
        first_false(1, self.len, |i| cmp_entry(self.sep_scores[i], &self.sep_members[i], score, member) != Ordering::Greater) - 1
    }
    fn insert_at(&mut self, at: usize, sep: (f64, Box<[u8]>), child: u32, count: u32) {
        let n = self.len;
        self.sep_scores.copy_within(at..n, at + 1);
        self.sep_scores[at] = sep.0;
        self.sep_members[n] = sep.1;
        self.sep_members[at..=n].rotate_right(1);
        self.children.copy_within(at..n, at + 1);
        self.children[at] = child;
        self.counts.copy_within(at..n, at + 1);
        self.counts[at] = count;
        self.len += 1;
    }
    fn remove_at(&mut self, at: usize) -> ((f64, Box<[u8]>), u32, u32) {
        let n = self.len;
        let (score, child, count) = (self.sep_scores[at], self.children[at], self.counts[at]);
        self.sep_scores.copy_within(at + 1..n, at);
        self.sep_members[at..n].rotate_left(1);
        self.children.copy_within(at + 1..n, at);
        self.counts.copy_within(at + 1..n, at);
        self.len -= 1;
        ((score, mem::take(&mut self.sep_members[n - 1])), child, count)
    }
    fn total(&self) -> u32 {
        self.counts[..self.len].iter().sum()
    }
}

/// The inner nodes a descent went through, with the child taken in each.
struct Path {
    steps: [(u32, usize); MAX_HEIGHT],
    depth: usize,
}

impl Path {
    fn new() -> Self {
        Path { steps: [(NIL, 0); MAX_HEIGHT], depth: 0 }
    }
    fn push(&mut self, inner: u32, child: usize) {
        self.steps[self.depth] = (inner, child);
        self.depth += 1;
    }
}

pub struct RankTree {
    leaves: Vec<Leaf>,
    free_leaves: Vec<u32>,
    inners: Vec<Inner>,
    free_inners: Vec<u32>,
    /// A leaf when `height` is 0, else an inner node; NIL when empty.
    root: u32,
    height: usize,
    first: u32,
    last: u32,
    len: usize,
    /// Entries per node at most (B, or fewer in tests to grow deep trees from few elements).
    cap: usize,
}

impl Default for RankTree {
    fn default() -> Self {
        Self::new()
    }
}

impl RankTree {
    /// The node arenas and the members they hold (estimated from the first `samples`
    /// leaves' members).
    pub fn memory_usage(&self, samples: usize) -> u64 {
        use crate::util::memsize::{alloc, sampled};
        let arenas = alloc(self.leaves.capacity() * mem::size_of::<Leaf>())
            + alloc(self.inners.capacity() * mem::size_of::<Inner>())
            + alloc((self.free_leaves.capacity() + self.free_inners.capacity()) * 4);
        let members = self.leaves.iter().flat_map(|l| l.members[..l.len].iter()).map(|m| alloc(m.len()));
        // Separators are copies of members: about one per leaf.
        let separators = self.inners.iter().flat_map(|n| n.sep_members[..n.len].iter()).take(samples).map(|m| alloc(m.len())).sum::<u64>();
        arenas + sampled(self.len, samples, members) + separators
    }

    pub fn new() -> Self {
        Self::with_node_capacity(B)
    }

    /// A tree whose nodes hold at most `cap` entries (8..=32): small ones give deep trees
    /// from a few elements, for tests.
    pub fn with_node_capacity(cap: usize) -> Self {
        assert!((8..=B).contains(&cap), "node capacity must be 8..=32");
        RankTree {
            leaves: Vec::new(),
            free_leaves: Vec::new(),
            inners: Vec::new(),
            free_inners: Vec::new(),
            root: NIL,
            height: 0,
            first: NIL,
            last: NIL,
            len: 0,
            cap,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Fewest entries a node other than the root keeps (so every parent has two children).
    fn min_fill(&self) -> usize {
        self.cap / 4
    }
    /// Two siblings merge when together they fill at most this much (merging into a full
    /// node would split again at the next insert).
    fn merge_fill(&self) -> usize {
        self.cap * 3 / 4
    }

    fn new_leaf(&mut self) -> u32 {
        take_slot(&mut self.leaves, &mut self.free_leaves, Leaf::new)
    }
    fn new_inner(&mut self) -> u32 {
        take_slot(&mut self.inners, &mut self.free_inners, Inner::new)
    }
    /// Frees an emptied leaf (its member slots are already empty boxes).
    fn free_leaf(&mut self, id: u32) {
        let l = &mut self.leaves[id as usize];
        l.len = 0;
        l.prev = NIL;
        l.next = NIL;
        self.free_leaves.push(id);
    }
    fn free_inner(&mut self, id: u32) {
        self.inners[id as usize].len = 0;
        self.free_inners.push(id);
    }

    /// Moves leaf `from`'s entries `start..` to the end of leaf `to` (a split or a merge).
    fn move_leaf_tail(&mut self, from: u32, start: usize, to: u32) {
        let [src, dst] = self.leaves.get_disjoint_mut([from as usize, to as usize]).expect("two distinct leaves");
        for i in start..src.len {
            dst.scores[dst.len] = src.scores[i];
            dst.members[dst.len] = mem::take(&mut src.members[i]);
            dst.len += 1;
        }
        src.len = start;
    }

    /// Moves inner node `from`'s entries `start..` (separators, children, counts) to the end
    /// of inner node `to`.
    fn move_inner_tail(&mut self, from: u32, start: usize, to: u32) {
        let [src, dst] = self.inners.get_disjoint_mut([from as usize, to as usize]).expect("two distinct inner nodes");
        for i in start..src.len {
            let k = dst.len;
            dst.sep_scores[k] = src.sep_scores[i];
            dst.sep_members[k] = mem::take(&mut src.sep_members[i]);
            dst.children[k] = src.children[i];
            dst.counts[k] = src.counts[i];
            dst.len += 1;
        }
        src.len = start;
    }

    // ------------------------------------------------------------ handles

    #[inline]
    fn split_handle(h: u32) -> (usize, usize) {
        ((h >> SLOT_BITS) as usize, (h as usize) & (B - 1))
    }
    #[inline]
    fn handle(leaf: u32, slot: usize) -> u32 {
        (leaf << SLOT_BITS) | slot as u32
    }

    /// Member and score of an element.
    #[inline]
    pub fn get(&self, h: u32) -> (&[u8], f64) {
        let (l, s) = Self::split_handle(h);
        let leaf = &self.leaves[l];
        (&leaf.members[s], leaf.scores[s])
    }
    /// The next element in order, or NIL.
    #[inline]
    pub fn next(&self, h: u32) -> u32 {
        let (l, s) = Self::split_handle(h);
        let leaf = &self.leaves[l];
        if s + 1 < leaf.len {
            h + 1
        } else if leaf.next == NIL {
            NIL
        } else {
            Self::handle(leaf.next, 0)
        }
    }
    /// The previous element in order, or NIL.
    #[inline]
    pub fn prev(&self, h: u32) -> u32 {
        let (l, s) = Self::split_handle(h);
        if s > 0 {
            return h - 1;
        }
        match self.leaves[l].prev {
            NIL => NIL,
            p => Self::handle(p, self.leaves[p as usize].len - 1),
        }
    }
    pub fn first(&self) -> u32 {
        if self.first == NIL { NIL } else { Self::handle(self.first, 0) }
    }
    pub fn last(&self) -> u32 {
        if self.last == NIL { NIL } else { Self::handle(self.last, self.leaves[self.last as usize].len - 1) }
    }

    // ------------------------------------------------------------ descents

    /// The leaf that holds (score, member) or would, with the path to it.
    fn descend(&self, score: f64, member: &[u8], path: &mut Path) -> u32 {
        let mut x = self.root;
        for _ in 0..self.height {
            let j = self.inners[x as usize].route(score, member);
            path.push(x, j);
            x = self.inners[x as usize].children[j];
        }
        x
    }

    /// The leaf holding 0-based `rank` (< len), the rank within it, and the path.
    fn descend_rank(&self, mut rank: usize, path: &mut Path) -> (u32, usize) {
        let mut x = self.root;
        for _ in 0..self.height {
            let n = &self.inners[x as usize];
            let mut j = 0;
            while j + 1 < n.len && rank >= n.counts[j] as usize {
                rank -= n.counts[j] as usize;
                j += 1;
            }
            path.push(x, j);
            x = n.children[j];
        }
        (x, rank)
    }

    // ------------------------------------------------------------ insert

    /// Inserts an element known to be absent.
    pub fn insert(&mut self, member: &[u8], score: f64) {
        self.insert_owned(member.into(), score);
    }

    fn insert_owned(&mut self, member: Box<[u8]>, score: f64) {
        if self.root == NIL {
            let id = self.new_leaf();
            self.leaves[id as usize].insert_at(0, score, member);
            (self.root, self.height, self.first, self.last, self.len) = (id, 0, id, id, 1);
            return;
        }
        let mut path = Path::new();
        let leaf = self.descend(score, &member, &mut path);
        let at = self.leaves[leaf as usize].lower_bound(score, &member);
        self.insert_in_leaf(leaf, at, score, member, &path);
    }

    fn insert_in_leaf(&mut self, leaf: u32, at: usize, score: f64, member: Box<[u8]>, path: &Path) {
        for &(x, j) in &path.steps[..path.depth] {
            self.inners[x as usize].counts[j] += 1;
        }
        self.len += 1;
        if self.leaves[leaf as usize].len < self.cap {
            self.leaves[leaf as usize].insert_at(at, score, member);
            return;
        }
        // Split: the upper half moves to a new right sibling.
        let right = self.new_leaf();
        let mid = self.cap / 2;
        self.move_leaf_tail(leaf, mid, right);
        let next = self.leaves[leaf as usize].next;
        self.leaves[right as usize].prev = leaf;
        self.leaves[right as usize].next = next;
        self.leaves[leaf as usize].next = right;
        if next == NIL {
            self.last = right;
        } else {
            self.leaves[next as usize].prev = right;
        }
        if at <= mid {
            self.leaves[leaf as usize].insert_at(at, score, member);
        } else {
            self.leaves[right as usize].insert_at(at - mid, score, member);
        }
        let r = &self.leaves[right as usize];
        let sep = (r.scores[0], r.members[0].clone());
        let (left_count, right_count) = (self.leaves[leaf as usize].len as u32, r.len as u32);
        self.add_child(path, path.depth, leaf, left_count, sep, right, right_count);
    }

    /// Node `left` (at `path.steps[depth - 1]`, or the root when depth is 0) split: `right`
    /// follows it with separator `sep`. Counts are the two halves' totals.
    #[allow(clippy::too_many_arguments)]
    fn add_child(&mut self, path: &Path, depth: usize, left: u32, left_count: u32, sep: (f64, Box<[u8]>), right: u32, right_count: u32) {
        if depth == 0 {
            let root = self.new_inner();
            let n = &mut self.inners[root as usize];
            n.children[0] = left;
            n.counts[0] = left_count;
            n.len = 1;
            n.insert_at(1, sep, right, right_count);
            self.root = root;
            self.height += 1;
            return;
        }
        let (x, j) = path.steps[depth - 1];
        let xi = x as usize;
        self.inners[xi].counts[j] = left_count;
        if self.inners[xi].len < self.cap {
            self.inners[xi].insert_at(j + 1, sep, right, right_count);
            return;
        }
        // Split this inner node too; separator `mid` moves up as the new node's bound.
        let y = self.new_inner();
        let yi = y as usize;
        let mid = self.cap / 2;
        self.move_inner_tail(x, mid, y);
        let at = j + 1;
        if at <= mid {
            self.inners[xi].insert_at(at, sep, right, right_count);
        } else {
            self.inners[yi].insert_at(at - mid, sep, right, right_count);
        }
        let up = (self.inners[yi].sep_scores[0], mem::take(&mut self.inners[yi].sep_members[0]));
        let (xc, yc) = (self.inners[xi].total(), self.inners[yi].total());
        self.add_child(path, depth - 1, x, xc, up, y, yc);
    }

    // ------------------------------------------------------------ remove

    /// Removes (score, member); false if absent.
    pub fn remove(&mut self, member: &[u8], score: f64) -> bool {
        let Some((leaf, at, path)) = self.find(member, score) else { return false };
        self.remove_in_leaf(leaf, at, &path);
        true
    }

    /// Where (score, member) is, if present.
    fn find(&self, member: &[u8], score: f64) -> Option<(u32, usize, Path)> {
        if self.root == NIL {
            return None;
        }
        let mut path = Path::new();
        let leaf = self.descend(score, member, &mut path);
        let l = &self.leaves[leaf as usize];
        let at = l.lower_bound(score, member);
        (at < l.len && l.scores[at] == score && *l.members[at] == *member).then_some((leaf, at, path))
    }

    fn remove_in_leaf(&mut self, leaf: u32, at: usize, path: &Path) -> (Box<[u8]>, f64) {
        for &(x, j) in &path.steps[..path.depth] {
            self.inners[x as usize].counts[j] -= 1;
        }
        self.len -= 1;
        let out = self.leaves[leaf as usize].remove_at(at);
        if at == 0 && self.leaves[leaf as usize].len > 0 {
            self.refresh_separator(leaf, path);
        }
        self.rebalance_leaf(leaf, path);
        out
    }

    /// The leaf's least element changed: the separator naming it (in the deepest ancestor
    /// where the path does not take the first child) follows.
    fn refresh_separator(&mut self, leaf: u32, path: &Path) {
        if let Some(&(x, j)) = path.steps[..path.depth].iter().rev().find(|(_, j)| *j > 0) {
            let l = &self.leaves[leaf as usize];
            let (s, m) = (l.scores[0], l.members[0].clone());
            let n = &mut self.inners[x as usize];
            n.sep_scores[j] = s;
            n.sep_members[j] = m;
        }
    }

    fn rebalance_leaf(&mut self, leaf: u32, path: &Path) {
        let n = self.leaves[leaf as usize].len;
        if path.depth == 0 {
            if n == 0 {
                // Empty: give the arenas back.
                *self = RankTree::with_node_capacity(self.cap);
            }
            return;
        }
        if n >= self.min_fill() {
            return;
        }
        let (p, j) = path.steps[path.depth - 1];
        let pn = &self.inners[p as usize];
        // Every non-root node has at least two children, so a sibling exists.
        let li = if j + 1 < pn.len { j } else { j - 1 };
        let (a, b) = (pn.children[li], pn.children[li + 1]);
        let (an, bn) = (self.leaves[a as usize].len, self.leaves[b as usize].len);
        if an + bn <= self.merge_fill() || n == 0 {
            // Merge b into a.
            self.move_leaf_tail(b, 0, a);
            let next = self.leaves[b as usize].next;
            self.leaves[a as usize].next = next;
            if next == NIL {
                self.last = a;
            } else {
                self.leaves[next as usize].prev = a;
            }
            self.free_leaf(b);
            let pn = &mut self.inners[p as usize];
            pn.remove_at(li + 1);
            pn.counts[li] = (an + bn) as u32;
            if an == 0 {
                // `a` is the emptied leaf itself (so the path took child li): its least
                // element is now b's, whose separator was dropped.
                self.refresh_separator(a, path);
            }
            self.rebalance_inner(path, path.depth - 1);
            return;
        }
        // Even them out: both end up above min_fill.
        let want_a = (an + bn) / 2;
        if an > want_a {
            let k = an - want_a;
            for _ in 0..k {
                let last = self.leaves[a as usize].len - 1;
                let (m, s) = self.leaves[a as usize].remove_at(last);
                self.leaves[b as usize].insert_at(0, s, m);
            }
        } else {
            for _ in 0..want_a - an {
                let (m, s) = self.leaves[b as usize].remove_at(0);
                let l = &mut self.leaves[a as usize];
                l.insert_at(l.len, s, m);
            }
        }
        let (na, nb) = (self.leaves[a as usize].len as u32, self.leaves[b as usize].len as u32);
        let bl = &self.leaves[b as usize];
        let sep = (bl.scores[0], bl.members[0].clone());
        let pn = &mut self.inners[p as usize];
        pn.counts[li] = na;
        pn.counts[li + 1] = nb;
        pn.sep_scores[li + 1] = sep.0;
        pn.sep_members[li + 1] = sep.1;
    }

    /// The inner node at `path.steps[depth]` lost a child.
    fn rebalance_inner(&mut self, path: &Path, depth: usize) {
        let (x, _) = path.steps[depth];
        let n = self.inners[x as usize].len;
        if depth == 0 {
            // The root: with one child left, that child becomes the root.
            if n == 1 {
                self.root = self.inners[x as usize].children[0];
                self.height -= 1;
                self.free_inner(x);
            }
            return;
        }
        if n >= self.min_fill() {
            return;
        }
        let (p, j) = path.steps[depth - 1];
        let pn = &self.inners[p as usize];
        let li = if j + 1 < pn.len { j } else { j - 1 };
        let (a, b) = (pn.children[li], pn.children[li + 1]);
        let (ai, bi) = (a as usize, b as usize);
        let (an, bn) = (self.inners[ai].len, self.inners[bi].len);
        // b's first child is bounded by the parent's separator for b.
        let bound = (self.inners[p as usize].sep_scores[li + 1], mem::take(&mut self.inners[p as usize].sep_members[li + 1]));
        self.inners[bi].sep_scores[0] = bound.0;
        self.inners[bi].sep_members[0] = bound.1;
        if an + bn <= self.merge_fill() {
            self.move_inner_tail(b, 0, a);
            self.free_inner(b);
            let total = self.inners[ai].total();
            let pn = &mut self.inners[p as usize];
            pn.remove_at(li + 1);
            pn.counts[li] = total;
            self.rebalance_inner(path, depth - 1);
            return;
        }
        let want_a = (an + bn) / 2;
        if an > want_a {
            for _ in 0..an - want_a {
                let last = self.inners[ai].len - 1;
                let (sep, c, k) = self.inners[ai].remove_at(last);
                self.inners[bi].insert_at(0, sep, c, k);
            }
        } else {
            for _ in 0..want_a - an {
                let (sep, c, k) = self.inners[bi].remove_at(0);
                let t = &mut self.inners[ai];
                t.insert_at(t.len, sep, c, k);
            }
        }
        let up = (self.inners[bi].sep_scores[0], mem::take(&mut self.inners[bi].sep_members[0]));
        let (ta, tb) = (self.inners[ai].total(), self.inners[bi].total());
        let pn = &mut self.inners[p as usize];
        pn.sep_scores[li + 1] = up.0;
        pn.sep_members[li + 1] = up.1;
        pn.counts[li] = ta;
        pn.counts[li + 1] = tb;
    }

    /// Moves a present (cur, member) to score `new` (Redis's zslUpdateScore): in place when
    /// it keeps its place between its neighbours in its leaf, else removed and inserted.
    /// False if (cur, member) is absent.
    pub fn update_score(&mut self, member: &[u8], cur: f64, new: f64) -> bool {
        let Some((leaf, at, path)) = self.find(member, cur) else { return false };
        let (is_first, is_last) = (leaf == self.first, leaf == self.last);
        let l = &mut self.leaves[leaf as usize];
        // Slot 0 of any leaf but the first is also a separator: not changed in place.
        let after_prev = if at == 0 { is_first } else { l.scores[at - 1] < new };
        let before_next = if at + 1 < l.len { l.scores[at + 1] > new } else { is_last };
        if after_prev && before_next {
            l.scores[at] = new;
            return true;
        }
        let (m, _) = self.remove_in_leaf(leaf, at, &path);
        self.insert_owned(m, new);
        true
    }

    /// Number of leading elements for which `before(score, member)` holds. `before` must be
    /// monotone over the elements (true for a prefix of the order, then false).
    pub fn partition_point<F: Fn(f64, &[u8]) -> bool>(&self, before: F) -> usize {
        if self.root == NIL {
            return 0;
        }
        let mut x = self.root;
        let mut rank = 0usize;
        for _ in 0..self.height {
            let n = &self.inners[x as usize];
            let j = first_false(1, n.len, |i| before(n.sep_scores[i], &n.sep_members[i])) - 1;
            rank += n.counts[..j].iter().map(|&c| c as usize).sum::<usize>();
            x = n.children[j];
        }
        let l = &self.leaves[x as usize];
        rank + first_false(0, l.len, |i| before(l.scores[i], &l.members[i]))
    }

    /// The element at 0-based `rank`, or NIL when out of range.
    pub fn at_rank(&self, rank: usize) -> u32 {
        if rank >= self.len {
            return NIL;
        }
        let (leaf, at) = self.descend_rank(rank, &mut Path::new());
        Self::handle(leaf, at)
    }

    /// 0-based rank of an element known to be present with this score.
    pub fn rank_of(&self, member: &[u8], score: f64) -> usize {
        self.partition_point(|s, m| cmp_entry(s, m, score, member) == Ordering::Less)
    }

    /// Removes the elements at 0-based ranks `lo..hi`, handing each to `gone` in order.
    pub fn remove_rank_range<F: FnMut(&[u8], f64)>(&mut self, lo: usize, hi: usize, mut gone: F) -> usize {
        let n = hi.min(self.len).saturating_sub(lo);
        for _ in 0..n {
            let mut path = Path::new();
            let (leaf, at) = self.descend_rank(lo, &mut path);
            let (m, s) = self.remove_in_leaf(leaf, at, &path);
            gone(&m[..], s);
        }
        n
    }

    /// Visits every element in order.
    pub fn for_each<F: FnMut(&[u8], f64)>(&self, mut f: F) {
        let mut l = self.first;
        while l != NIL {
            let leaf = &self.leaves[l as usize];
            for i in 0..leaf.len {
                f(&leaf.members[i], leaf.scores[i]);
            }
            l = leaf.next;
        }
    }

    /// Checks every structural invariant (tests): order, counts, exact separators, fill,
    /// leaf links, ranks.
    pub fn check(&self) -> Result<(), alloc::string::String> {
        use alloc::format;
        if self.root == NIL {
            return if self.len == 0 && self.first == NIL && self.last == NIL { Ok(()) } else { Err(format!("empty root but len {}", self.len)) };
        }
        let mut leaves = Vec::new();
        let total = self.check_node(self.root, self.height, true, None, &mut leaves)?;
        if total != self.len {
            return Err(format!("len {} but the tree holds {total}", self.len));
        }
        // Leaf links follow the tree's order.
        let mut l = self.first;
        let mut prev = NIL;
        for (i, &want) in leaves.iter().enumerate() {
            if l != want {
                return Err(format!("leaf link {i}: {l} where the tree has {want}"));
            }
            if self.leaves[l as usize].prev != prev {
                return Err(format!("bad prev link at leaf {i}"));
            }
            prev = l;
            l = self.leaves[l as usize].next;
        }
        if l != NIL || self.last != prev {
            return Err("leaf chain does not end at the last leaf".into());
        }
        let mut last: Option<(f64, Vec<u8>)> = None;
        let mut bad = None;
        let mut count = 0;
        self.for_each(|m, s| {
            if let Some((ps, pm)) = &last
                && cmp_entry(*ps, pm, s, m) != Ordering::Less
            {
                bad = Some(count);
            }
            last = Some((s, m.to_vec()));
            count += 1;
        });
        if let Some(i) = bad {
            return Err(format!("order broken at {i}"));
        }
        for r in 0..self.len {
            let h = self.at_rank(r);
            if h == NIL {
                return Err(format!("rank {r} not found"));
            }
            let (m, s) = self.get(h);
            if self.rank_of(m, s) != r {
                return Err(format!("rank_of mismatch at {r}"));
            }
        }
        Ok(())
    }

    /// Elements under `x` (of `height`), checking its subtree; `least` is the separator
    /// that must equal its least element.
    fn check_node(&self, x: u32, height: usize, root: bool, least: Option<(f64, &[u8])>, leaves: &mut Vec<u32>) -> Result<usize, alloc::string::String> {
        use alloc::format;
        if height == 0 {
            let l = &self.leaves[x as usize];
            if l.len == 0 || (!root && l.len < self.min_fill()) || l.len > self.cap {
                return Err(format!("leaf {x} holds {}", l.len));
            }
            if let Some((s, m)) = least
                && (l.scores[0] != s || &*l.members[0] != m)
            {
                return Err(format!("separator of leaf {x} is not its least element"));
            }
            if l.members[l.len..].iter().any(|m| !m.is_empty()) {
                return Err(format!("leaf {x} keeps a member past its end"));
            }
            leaves.push(x);
            return Ok(l.len);
        }
        let n = &self.inners[x as usize];
        if n.len < 2 && root || (!root && n.len < self.min_fill().max(2)) || n.len > self.cap {
            return Err(format!("inner {x} has {} children", n.len));
        }
        let mut total = 0;
        for i in 0..n.len {
            let bound = if i == 0 { least } else { Some((n.sep_scores[i], &*n.sep_members[i])) };
            let c = self.check_node(n.children[i], height - 1, false, bound, leaves)?;
            if c != n.counts[i] as usize {
                return Err(format!("inner {x} counts {} under child {i}, which holds {c}", n.counts[i]));
            }
            total += c;
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::Rng;
    use alloc::format;

    fn member(i: u64) -> Vec<u8> {
        format!("m{i:06}").into_bytes()
    }

    /// A lone element moves to any score (removing it empties the tree before it goes back).
    #[test]
    fn a_single_element_moves() {
        let mut t = RankTree::new();
        t.insert(b"a", 1.0);
        for s in [5.0, -3.0, 5.0] {
            let cur = t.get(t.first()).1;
            assert!(t.update_score(b"a", cur, s));
            assert_eq!(t.get(t.first()), (&b"a"[..], s));
            t.check().unwrap();
        }
        t.insert(b"b", 0.0);
        assert!(t.update_score(b"a", 5.0, -1.0));
        assert!(t.update_score(b"b", 0.0, -2.0));
        t.check().unwrap();
        assert_eq!(t.get(t.first()).0, b"b");
    }

    /// Grows a deep tree, then empties it in random order and by rank ranges, checking
    /// every invariant along the way and that the arenas are given back at the end.
    #[test]
    fn grows_deep_and_drains_to_empty() {
        for cap in [8, 9, 16, 32] {
            let mut rng = Rng::new(cap as u64);
            let mut t = RankTree::with_node_capacity(cap);
            let n = 3000u64;
            let mut present: Vec<(u64, f64)> = Vec::new();
            for i in 0..n {
                let s = (rng.below(50) as f64) / 2.0;
                t.insert(&member(i), s);
                present.push((i, s));
            }
            assert!(t.height >= if cap < 32 { 3 } else { 2 }, "cap {cap}: height {}", t.height);
            t.check().unwrap();
            // Moves, some in place.
            for k in 0..2000 {
                let j = rng.below(present.len() as u64) as usize;
                let (i, s) = present[j];
                let new = if k % 3 == 0 { s } else { (rng.below(50) as f64) / 2.0 };
                assert!(t.update_score(&member(i), s, new));
                present[j].1 = new;
            }
            t.check().unwrap();
            while present.len() > 200 {
                let j = rng.below(present.len() as u64) as usize;
                let (i, s) = present.swap_remove(j);
                assert!(t.remove(&member(i), s));
                assert!(!t.remove(&member(i), s));
                if present.len().is_multiple_of(250) {
                    t.check().unwrap();
                }
            }
            t.check().unwrap();
            while !t.is_empty() {
                let lo = rng.below(t.len() as u64) as usize;
                let want = (t.len() - lo).min(17);
                let mut got = 0;
                assert_eq!(t.remove_rank_range(lo, lo + 17, |_, _| got += 1), want);
                assert_eq!(got, want);
                t.check().unwrap();
            }
            assert!(t.leaves.is_empty() && t.inners.is_empty() && t.first() == NIL && t.last() == NIL);
        }
    }
}
