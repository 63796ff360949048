//! The sorted-set value (Redis's t_zset.c, data half). Two encodings, converted at the
//! points Redis converts:
//! - "listpack": one packed byte buffer of (member, score) entries in (score, member) order,
//!   for sets of at most `zset-max-listpack-entries` members no longer than
//!   `zset-max-listpack-value` bytes; linear scans, like Redis's listpack.
//! - "skiplist" (Redis's name, kept for OBJECT ENCODING): a member → score `Dict` plus a
//!   `RankTree` (a counted B+tree, not a skiplist: fewer cache misses per descent) ordered
//!   by (score, member), for O(log n) inserts, deletes, ranks and range starts.
//!
//! Every read by rank/score/lex goes through one `View`: a partition point (how many
//! elements come before a bound) and a walk over a rank range, so both encodings share the
//! range logic. Score and lex ranges (`ScoreRange`, `LexRange`) are parsed here too.

use crate::types::dict::Dict;
use crate::types::zranktree::{NIL, RankTree, cmp_entry};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cmp::Ordering;

// ---------------------------------------------------------------- listpack encoding

/// Packed entries: varint(member length) | member | score, where score is a varint `v`:
/// even → the integer `unzigzag(v >> 1)`; 1 → an f64 (8 bytes LE) follows; 3 → an i64
/// (8 bytes LE) follows. Integral scores within ±2^62 are stored as integers, like Redis's
/// `double2ll`, which also turns -0 into 0.
#[derive(Clone, Default)]
pub struct Listpack {
    buf: Vec<u8>,
    n: u32,
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], mut pos: usize) -> (u64, usize) {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let c = b[pos];
        pos += 1;
        v |= ((c & 0x7f) as u64) << shift;
        if c & 0x80 == 0 {
            return (v, pos);
        }
        shift += 7;
    }
}

const LP_INT_LIMIT: f64 = 4_611_686_018_427_387_904.0; // 2^62, Redis's LLONG_MAX/2 as a double

/// The integer Redis's listpack would store a score as, if any.
fn score_as_int(s: f64) -> Option<i64> {
    if (-LP_INT_LIMIT..=LP_INT_LIMIT).contains(&s) && s == (s as i64) as f64 { Some(s as i64) } else { None }
}

fn put_score(out: &mut Vec<u8>, s: f64) {
    match score_as_int(s) {
        Some(i) if (-(1i64 << 61)..(1i64 << 61)).contains(&i) => {
            let zz = ((i << 1) ^ (i >> 63)) as u64;
            put_varint(out, zz << 1);
        }
        Some(i) => {
            out.push(3);
            out.extend_from_slice(&i.to_le_bytes());
        }
        None => {
            out.push(1);
            out.extend_from_slice(&s.to_le_bytes());
        }
    }
}

/// A decoded score: its value and whether the listpack holds it as an integer.
fn get_score(b: &[u8], pos: usize) -> (f64, bool, usize) {
    let (v, p) = get_varint(b, pos);
    match v {
        1 => (f64::from_le_bytes(b[p..p + 8].try_into().unwrap()), false, p + 8),
        3 => (i64::from_le_bytes(b[p..p + 8].try_into().unwrap()) as f64, true, p + 8),
        _ => {
            let zz = v >> 1;
            let i = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
            (i as f64, true, p)
        }
    }
}

/// One listpack entry: byte range, member range, score.
#[derive(Clone, Copy)]
struct LpEntry {
    start: usize,
    end: usize,
    m: (usize, usize),
    score: f64,
    int: bool,
}

impl Listpack {
    pub fn len(&self) -> usize {
        self.n as usize
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    fn entry_at(&self, pos: usize) -> LpEntry {
        let (ml, p) = get_varint(&self.buf, pos);
        let m = (p, p + ml as usize);
        let (score, int, end) = get_score(&self.buf, m.1);
        LpEntry { start: pos, end, m, score, int }
    }

    fn entries(&self) -> Vec<LpEntry> {
        let mut out = Vec::with_capacity(self.n as usize);
        let mut pos = 0;
        while pos < self.buf.len() {
            let e = self.entry_at(pos);
            pos = e.end;
            out.push(e);
        }
        out
    }

    fn member(&self, e: &LpEntry) -> &[u8] {
        &self.buf[e.m.0..e.m.1]
    }

    fn find(&self, member: &[u8]) -> Option<LpEntry> {
        let mut pos = 0;
        while pos < self.buf.len() {
            let e = self.entry_at(pos);
            if self.member(&e) == member {
                return Some(e);
            }
            pos = e.end;
        }
        None
    }

    /// Inserts a member known to be absent, keeping (score, member) order. The buffer is
    /// grown exactly (no slack), as Redis reallocates a listpack to its size.
    fn insert(&mut self, member: &[u8], score: f64) {
        let mut pos = 0;
        while pos < self.buf.len() {
            let e = self.entry_at(pos);
            if cmp_entry(e.score, self.member(&e), score, member) == Ordering::Greater {
                break;
            }
            pos = e.end;
        }
        let mut enc = Vec::with_capacity(member.len() + 12);
        put_varint(&mut enc, member.len() as u64);
        enc.extend_from_slice(member);
        put_score(&mut enc, score);
        self.buf.reserve_exact(enc.len());
        self.buf.splice(pos..pos, enc);
        self.n += 1;
    }

    fn remove_bytes(&mut self, start: usize, end: usize, count: usize) {
        self.buf.drain(start..end);
        self.buf.shrink_to_fit();
        self.n -= count as u32;
    }

    /// Pairs as ZSCAN reports them: integer scores printed as integers, others with %.17g.
    pub fn scan_pairs(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.entries()
            .iter()
            .map(|e| {
                let s = if e.int { crate::util::int_bytes(e.score as i64) } else { crate::util::format_g17(e.score) };
                (self.member(e).to_vec(), s)
            })
            .collect()
    }
}

// ---------------------------------------------------------------- skiplist encoding

pub struct ZSkip {
    pub dict: Dict<f64>,
    pub sl: RankTree,
}

impl ZSkip {
    /// The table and the tree (members estimated from `samples`).
    fn memory_usage(&self, samples: usize) -> u64 {
        crate::util::memsize::alloc(core::mem::size_of::<ZSkip>()) + self.dict.memory_usage(samples, |_| 0) + self.sl.memory_usage(samples)
    }

    fn new(seed: u64) -> Self {
        ZSkip { dict: Dict::new(seed), sl: RankTree::new() }
    }
    pub fn insert_new(&mut self, member: &[u8], score: f64) {
        self.sl.insert(member, score);
        self.dict.insert_new(member.into(), score);
    }
}

// ---------------------------------------------------------------- the value

/// The new score of a present member under ZADD's flags: Ok(score) to update, or what to
/// answer without changing anything (skipped by NX/GT/LT, NaN from INCR, or the same score).
fn new_score(cur: f64, score: f64, f: AddFlags) -> Result<f64, AddOut> {
    if f.nx {
        return Err(AddOut::Nop);
    }
    let mut s = score;
    if f.incr {
        s += cur;
        if s.is_nan() {
            return Err(AddOut::Nan);
        }
    }
    if (f.lt && s >= cur) || (f.gt && s <= cur) {
        return Err(AddOut::Nop);
    }
    if s == cur {
        return Err(AddOut::Same(s));
    }
    Ok(s)
}

pub enum ZsetValue {
    Listpack(Listpack),
    Skiplist(Box<ZSkip>),
}

/// ZADD's input flags.
#[derive(Default, Clone, Copy)]
pub struct AddFlags {
    pub incr: bool,
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
}

/// What `add` did (Redis's ZADD_OUT_*), with the resulting score when it was processed.
#[derive(PartialEq, Debug)]
pub enum AddOut {
    Added(f64),
    Updated(f64),
    /// Processed, score unchanged.
    Same(f64),
    /// Skipped by NX/XX/GT/LT.
    Nop,
    Nan,
}

/// Conversion thresholds (zset-max-listpack-entries / -value).
#[derive(Clone, Copy)]
pub struct Limits {
    pub entries: usize,
    pub value: usize,
    pub seed: u64,
}

impl ZsetValue {
    /// MEMORY USAGE of the value (members estimated from `samples`).
    pub fn memory_usage(&self, samples: usize) -> u64 {
        match self {
            ZsetValue::Listpack(lp) => crate::util::memsize::alloc(lp.buf.capacity()),
            ZsetValue::Skiplist(z) => z.memory_usage(samples),
        }
    }

    /// An empty set in the encoding ZADD would create for a first member of `first_len` bytes.
    pub fn new_for(lim: Limits, first_len: usize) -> ZsetValue {
        if lim.entries == 0 || lim.value < first_len { ZsetValue::Skiplist(Box::new(ZSkip::new(lim.seed))) } else { ZsetValue::Listpack(Listpack::default()) }
    }

    pub fn new_listpack() -> ZsetValue {
        ZsetValue::Listpack(Listpack::default())
    }

    pub fn new_skiplist(seed: u64) -> ZsetValue {
        ZsetValue::Skiplist(Box::new(ZSkip::new(seed)))
    }

    pub fn len(&self) -> usize {
        match self {
            ZsetValue::Listpack(l) => l.len(),
            ZsetValue::Skiplist(z) => z.sl.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            ZsetValue::Listpack(_) => "listpack",
            ZsetValue::Skiplist(_) => "skiplist",
        }
    }

    pub fn is_listpack(&self) -> bool {
        matches!(self, ZsetValue::Listpack(_))
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            ZsetValue::Listpack(l) => l.find(member).map(|e| e.score),
            ZsetValue::Skiplist(z) => z.dict.get(member).copied(),
        }
    }

    /// Visits every element in ascending order.
    pub fn for_each<F: FnMut(&[u8], f64)>(&self, mut f: F) {
        match self {
            ZsetValue::Listpack(l) => {
                for e in l.entries() {
                    f(l.member(&e), e.score)
                }
            }
            ZsetValue::Skiplist(z) => z.sl.for_each(f),
        }
    }

    pub fn to_skiplist(&mut self, seed: u64) {
        if let ZsetValue::Listpack(l) = self {
            let mut z = ZSkip::new(seed);
            for e in l.entries() {
                z.insert_new(l.member(&e), e.score);
            }
            *self = ZsetValue::Skiplist(Box::new(z));
        }
    }

    pub fn to_listpack(&mut self) {
        if let ZsetValue::Skiplist(z) = self {
            let mut l = Listpack::default();
            z.sl.for_each(|m, s| {
                // Appending in order: entries are already sorted.
                let mut enc = Vec::with_capacity(m.len() + 12);
                put_varint(&mut enc, m.len() as u64);
                enc.extend_from_slice(m);
                put_score(&mut enc, s);
                l.buf.extend_from_slice(&enc);
                l.n += 1;
            });
            l.buf.shrink_to_fit();
            *self = ZsetValue::Listpack(l);
        }
    }

    /// Redis's zsetAdd.
    pub fn add(&mut self, member: &[u8], score: f64, f: AddFlags, lim: Limits) -> AddOut {
        if score.is_nan() {
            return AddOut::Nan;
        }
        if let ZsetValue::Skiplist(z) = self {
            // One dict lookup; the member's bytes move to their new place, not re-allocated.
            if let Some(cur) = z.dict.get_mut(member) {
                let s = match new_score(*cur, score, f) {
                    Ok(s) => s,
                    Err(out) => return out,
                };
                let old = core::mem::replace(cur, s);
                z.sl.update_score(member, old, s);
                return AddOut::Updated(s);
            }
        }
        match self.score(member) {
            Some(cur) => {
                let s = match new_score(cur, score, f) {
                    Ok(s) => s,
                    Err(out) => return out,
                };
                match self {
                    ZsetValue::Listpack(l) => {
                        let e = l.find(member).unwrap();
                        l.remove_bytes(e.start, e.end, 1);
                        l.insert(member, s);
                    }
                    ZsetValue::Skiplist(z) => {
                        z.sl.update_score(member, cur, s);
                        *z.dict.get_mut(member).unwrap() = s;
                    }
                }
                AddOut::Updated(s)
            }
            None => {
                if f.xx {
                    return AddOut::Nop;
                }
                if let ZsetValue::Listpack(l) = self
                    && (l.len() + 1 > lim.entries || member.len() > lim.value)
                {
                    self.to_skiplist(lim.seed);
                }
                match self {
                    ZsetValue::Listpack(l) => l.insert(member, score),
                    ZsetValue::Skiplist(z) => z.insert_new(member, score),
                }
                AddOut::Added(score)
            }
        }
    }

    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self {
            ZsetValue::Listpack(l) => match l.find(member) {
                Some(e) => {
                    l.remove_bytes(e.start, e.end, 1);
                    true
                }
                None => false,
            },
            ZsetValue::Skiplist(z) => match z.dict.remove(member) {
                Some((_, s)) => {
                    z.sl.remove(member, s);
                    true
                }
                None => false,
            },
        }
    }

    /// 0-based ascending rank.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match self {
            ZsetValue::Listpack(l) => l.entries().iter().position(|e| l.member(e) == member),
            ZsetValue::Skiplist(z) => z.dict.get(member).map(|&s| z.sl.rank_of(member, s)),
        }
    }

    /// Removes the elements at 0-based ranks lo..hi.
    pub fn remove_rank_range(&mut self, lo: usize, hi: usize) -> usize {
        if lo >= hi || lo >= self.len() {
            return 0;
        }
        let hi = hi.min(self.len());
        match self {
            ZsetValue::Listpack(l) => {
                let es = l.entries();
                l.remove_bytes(es[lo].start, es[hi - 1].end, hi - lo);
                hi - lo
            }
            ZsetValue::Skiplist(z) => {
                let dict = &mut z.dict;
                z.sl.remove_rank_range(lo, hi, |m, _| {
                    dict.remove(m);
                })
            }
        }
    }

    pub fn view(&self) -> View<'_> {
        match self {
            ZsetValue::Listpack(l) => View::Lp(l.entries().iter().map(|e| (l.member(e), e.score)).collect()),
            ZsetValue::Skiplist(z) => View::Sl(&z.sl),
        }
    }

    pub fn duplicate(&self, seed: u64) -> ZsetValue {
        match self {
            ZsetValue::Listpack(l) => ZsetValue::Listpack(l.clone()),
            ZsetValue::Skiplist(z) => {
                let mut n = ZSkip::new(seed);
                z.sl.for_each(|m, s| n.insert_new(m, s));
                ZsetValue::Skiplist(Box::new(n))
            }
        }
    }

    /// (member, score text) pairs for ZSCAN of a listpack.
    pub fn scan_pairs(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        match self {
            ZsetValue::Listpack(l) => l.scan_pairs(),
            ZsetValue::Skiplist(_) => Vec::new(),
        }
    }

    /// A uniformly random element.
    pub fn random(&self, rng: &mut crate::util::Rng) -> (Vec<u8>, f64) {
        let i = rng.below(self.len() as u64) as usize;
        match self {
            ZsetValue::Listpack(l) => {
                let e = l.entries()[i];
                (l.member(&e).to_vec(), e.score)
            }
            ZsetValue::Skiplist(z) => {
                let (m, s) = z.sl.get(z.sl.at_rank(i));
                (m.to_vec(), s)
            }
        }
    }
}

/// An ordered read view of either encoding.
pub enum View<'a> {
    Lp(Vec<(&'a [u8], f64)>),
    Sl(&'a RankTree),
}

impl<'a> View<'a> {
    pub fn len(&self) -> usize {
        match self {
            View::Lp(v) => v.len(),
            View::Sl(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many leading elements satisfy the monotone predicate `before`.
    pub fn partition_point<F: Fn(f64, &[u8]) -> bool>(&self, before: F) -> usize {
        match self {
            View::Lp(v) => v.partition_point(|(m, s)| before(*s, m)),
            View::Sl(s) => s.partition_point(before),
        }
    }

    /// The element at `rank` (< len).
    pub fn at(&self, rank: usize) -> (&[u8], f64) {
        match self {
            View::Lp(v) => v[rank],
            View::Sl(sl) => sl.get(sl.at_rank(rank)),
        }
    }

    /// Walks ranks lo..hi ascending (or descending when `rev`).
    pub fn walk<F: FnMut(&[u8], f64)>(&self, lo: usize, hi: usize, rev: bool, mut f: F) {
        if lo >= hi {
            return;
        }
        match self {
            View::Lp(v) => {
                if rev {
                    v[lo..hi].iter().rev().for_each(|(m, s)| f(m, *s))
                } else {
                    v[lo..hi].iter().for_each(|(m, s)| f(m, *s))
                }
            }
            View::Sl(sl) => {
                let mut n = sl.at_rank(if rev { hi - 1 } else { lo });
                for _ in lo..hi {
                    if n == NIL {
                        break;
                    }
                    let (m, s) = sl.get(n);
                    f(m, s);
                    n = if rev { sl.prev(n) } else { sl.next(n) };
                }
            }
        }
    }
}

// ---------------------------------------------------------------- argument parsing

/// A score argument (ZADD, ZINCRBY, WEIGHTS) like Redis's `string2d`: the whole string is
/// a number strtod accepts, no leading space, no NaN, no overflow to ±inf unless spelled
/// "inf", no underflow of a non-zero number to 0.
pub fn parse_score(a: &[u8]) -> Option<f64> {
    let v = crate::util::parse_float_strict(a)?;
    if v == 0.0 {
        let mant = a.iter().take_while(|c| !matches!(c, b'e' | b'E' | b'p' | b'P'));
        let hex = a.len() > 2 && (a.starts_with(b"0x") || a.starts_with(b"0X") || a[1..].starts_with(b"0x") || a[1..].starts_with(b"0X"));
        let nonzero = mant.filter(|c| **c != b'x' && **c != b'X').any(|c| if hex { c.is_ascii_hexdigit() && *c != b'0' } else { (b'1'..=b'9').contains(c) });
        if nonzero {
            return None;
        }
    }
    Some(v)
}

/// One end of a score range, like Redis's zslParseRange (plain strtod: leading spaces,
/// overflow to inf and "" as 0 are all accepted; NaN is not).
fn parse_range_item(a: &[u8]) -> Option<(f64, bool)> {
    let (ex, body) = match a.first() {
        Some(b'(') => (true, &a[1..]),
        _ => (false, a),
    };
    // strtod stops at a NUL: what follows it is never seen.
    let body = match body.iter().position(|&c| c == 0) {
        Some(i) => &body[..i],
        None => body,
    };
    if body.is_empty() {
        return Some((0.0, ex));
    }
    let trimmed = {
        let i = body.iter().position(|c| !matches!(c, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')).unwrap_or(body.len());
        &body[i..]
    };
    if trimmed.is_empty() {
        return None;
    }
    let v = crate::util::parse_f64(trimmed)?;
    Some((v, ex))
}

#[derive(Clone, Copy)]
pub struct ScoreRange {
    pub min: f64,
    pub max: f64,
    pub minex: bool,
    pub maxex: bool,
}

impl ScoreRange {
    pub fn parse(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
        let (min, minex) = parse_range_item(min)?;
        let (max, maxex) = parse_range_item(max)?;
        Some(ScoreRange { min, max, minex, maxex })
    }
    fn gte_min(&self, v: f64) -> bool {
        if self.minex { v > self.min } else { v >= self.min }
    }
    fn lte_max(&self, v: f64) -> bool {
        if self.maxex { v < self.max } else { v <= self.max }
    }
    fn empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.minex || self.maxex))
    }
    /// Ranks lo..hi of the elements in range.
    pub fn bounds(&self, v: &View<'_>) -> (usize, usize) {
        if self.empty() {
            return (0, 0);
        }
        let lo = v.partition_point(|s, _| !self.gte_min(s));
        let hi = v.partition_point(|s, _| self.lte_max(s));
        (lo, hi.max(lo))
    }
}

#[derive(Clone)]
enum LexItem {
    Min,
    Max,
    Val(Vec<u8>),
}

/// Redis's sdscmplex: "-" below everything, "+" above.
fn cmp_lex(a: &LexItem, b: &[u8]) -> Ordering {
    match a {
        LexItem::Min => Ordering::Less,
        LexItem::Max => Ordering::Greater,
        LexItem::Val(v) => v.as_slice().cmp(b),
    }
}

#[derive(Clone)]
pub struct LexRange {
    min: LexItem,
    minex: bool,
    max: LexItem,
    maxex: bool,
}

fn parse_lex_item(a: &[u8]) -> Option<(LexItem, bool)> {
    match a.first()? {
        b'+' if a.len() == 1 => Some((LexItem::Max, true)),
        b'-' if a.len() == 1 => Some((LexItem::Min, true)),
        b'(' => Some((LexItem::Val(a[1..].to_vec()), true)),
        b'[' => Some((LexItem::Val(a[1..].to_vec()), false)),
        _ => None,
    }
}

impl LexRange {
    pub fn parse(min: &[u8], max: &[u8]) -> Option<LexRange> {
        let (min, minex) = parse_lex_item(min)?;
        let (max, maxex) = parse_lex_item(max)?;
        Some(LexRange { min, minex, max, maxex })
    }
    fn gte_min(&self, m: &[u8]) -> bool {
        // value vs min, i.e. the reverse of cmp_lex(min, value).
        let c = cmp_lex(&self.min, m).reverse();
        if self.minex { c == Ordering::Greater } else { c != Ordering::Less }
    }
    fn lte_max(&self, m: &[u8]) -> bool {
        let c = cmp_lex(&self.max, m).reverse();
        if self.maxex { c == Ordering::Less } else { c != Ordering::Greater }
    }
    fn empty(&self) -> bool {
        let c = match (&self.min, &self.max) {
            (LexItem::Min, LexItem::Min) | (LexItem::Max, LexItem::Max) => Ordering::Equal,
            (LexItem::Min, _) | (_, LexItem::Max) => Ordering::Less,
            (LexItem::Max, _) | (_, LexItem::Min) => Ordering::Greater,
            (LexItem::Val(a), LexItem::Val(b)) => a.cmp(b),
        };
        c == Ordering::Greater || (c == Ordering::Equal && (self.minex || self.maxex))
    }
    /// Ranks lo..hi of the elements in range. Like Redis, this assumes the members in the
    /// range share one score (the documented precondition of the BYLEX commands); the
    /// partition points are well defined either way.
    pub fn bounds(&self, v: &View<'_>) -> (usize, usize) {
        if self.empty() {
            return (0, 0);
        }
        let lo = v.partition_point(|_, m| !self.gte_min(m));
        let hi = v.partition_point(|_, m| self.lte_max(m));
        (lo, hi.max(lo))
    }
}

/// Ranks lo..hi of a lex range. A listpack is scanned the way Redis scans it (from the
/// first element >= min forward while <= max, or from the last element <= max backward
/// while >= min when `rev`), which matters when the range spans different scores: BYLEX
/// is only defined for members of one score, and Redis's answer otherwise follows its
/// walk. The tree uses its descent (partition points) when all scores are equal; with
/// mixed scores it is scanned like a listpack (O(n)), so both encodings agree.
pub fn lex_bounds(r: &LexRange, v: &View<'_>, rev: bool) -> (usize, usize) {
    let walked: Vec<(&[u8], f64)>;
    let items = match v {
        View::Lp(items) => items,
        View::Sl(t) => {
            if t.is_empty() || t.get(t.first()).1 == t.get(t.last()).1 {
                return r.bounds(v);
            }
            walked = {
                let mut all = Vec::with_capacity(t.len());
                let mut h = t.first();
                while h != NIL {
                    all.push(t.get(h));
                    h = t.next(h);
                }
                all
            };
            &walked
        }
    };
    let n = items.len();
    if r.empty() || n == 0 || !r.gte_min(items[n - 1].0) || !r.lte_max(items[0].0) {
        return (0, 0);
    }
    if !rev {
        let Some(lo) = items.iter().position(|(m, _)| r.gte_min(m)) else { return (0, 0) };
        let run = items[lo..].iter().take_while(|(m, _)| r.lte_max(m)).count();
        (lo, lo + run)
    } else {
        let Some(last) = items.iter().rposition(|(m, _)| r.lte_max(m)) else { return (0, 0) };
        let run = items[..=last].iter().rev().take_while(|(m, _)| r.gte_min(m)).count();
        (last + 1 - run, last + 1)
    }
}
