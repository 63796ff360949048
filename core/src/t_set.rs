//! Sets (Redis 7.0's t_set.c). Encodings as in 7.0: an "intset" (sorted integers stored
//! 2, 4 or 8 bytes wide, as compact as Redis's) while every member is a canonical integer
//! and there are at most `set-max-intset-entries` of them, a "hashtable" otherwise (7.0
//! has no listpack sets; 7.2 added them). Conversion is one-way, as in Redis.
//!
//! Random picks (SPOP, SRANDMEMBER) come from the seed the host passes; SPOP replicates
//! as SREM of the members it chose (DEL when it took them all).

use alloc::vec::Vec;

use crate::ctx::Ctx;
use crate::dict::Dict;
use crate::notify;
use crate::object::Value;
use crate::t_string::WRONGTYPE;
use crate::util::{Rng, parse_i64};

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

/// Decimal text of `v` in `buf` (members of an intset are replied as strings).
fn itoa(v: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    let mut u = v.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    if v < 0 {
        // i64::MIN has 19 digits plus the sign: 20 bytes fit.
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

// ---------- the set value ----------

pub enum SetValue {
    Ints(IntSet),
    Table(Dict<()>),
}

impl SetValue {
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
            let mut buf = [0u8; 20];
            for v in s.iter() {
                d.insert_new(itoa(v, &mut buf).into(), ());
            }
            *self = SetValue::Table(d);
        }
    }

    /// Visits every member: an intset in ascending order (as Redis), a table in its order.
    pub fn for_each<F: FnMut(&[u8])>(&self, mut f: F) {
        match self {
            SetValue::Ints(s) => {
                let mut buf = [0u8; 20];
                for v in s.iter() {
                    f(itoa(v, &mut buf));
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

    /// A random member (a table picks a bucket, then a member of its chain: `Dict::random`).
    /// None when empty.
    pub fn random(&self, rng: &mut Rng) -> Option<Vec<u8>> {
        match self {
            SetValue::Ints(s) if !s.is_empty() => {
                let mut buf = [0u8; 20];
                Some(itoa(s.get(rng.below(s.len() as u64) as usize), &mut buf).to_vec())
            }
            SetValue::Ints(_) => None,
            SetValue::Table(d) => d.random(rng).map(|(k, _)| k.to_vec()),
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

// ---------- commands ----------

/// Looks up a set for reading: Ok(None) if missing, Err(()) after a WRONGTYPE reply.
macro_rules! read_set {
    ($ctx:expr, $key:expr) => {{
        let db = $ctx.db();
        match $ctx.st.read(db, $key, $ctx.fx) {
            None => Ok(None),
            Some(e) => match &e.val {
                Value::Set(s) => Ok(Some(s)),
                _ => {
                    $ctx.reply.error(WRONGTYPE);
                    Err(())
                }
            },
        }
    }};
}

/// Write lookup (expires the key if due): Some(true) a set, Some(false) missing, None
/// after a WRONGTYPE reply.
fn lookup_write(ctx: &mut Ctx<'_>, key: &[u8]) -> Option<bool> {
    let db = ctx.db();
    match ctx.st.write(db, key, ctx.fx) {
        None => Some(false),
        Some(e) if matches!(e.val, Value::Set(_)) => Some(true),
        Some(_) => {
            ctx.reply.error(WRONGTYPE);
            None
        }
    }
}

fn set_mut<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> &'c mut SetValue {
    let db = ctx.db();
    match ctx.st.dbs[db].keys.get_mut(key).map(|e| &mut e.val) {
        Some(Value::Set(s)) => s,
        _ => unreachable!("caller checked the key holds a set"),
    }
}

fn limits(ctx: &Ctx<'_>) -> (usize, u64) {
    (ctx.st.config.set_max_intset_entries, ctx.st.seed)
}

pub fn sadd(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(exists) = lookup_write(ctx, argv[1]) else { return };
    let (max, seed) = limits(ctx);
    let db = ctx.db();
    if !exists {
        let lru = ctx.lru();
        ctx.st.notify_new(db, argv[1]);
        ctx.st.dbs[db].add(argv[1], Value::Set(SetValue::new_for(argv[2], seed)), lru);
    }
    let s = set_mut(ctx, argv[1]);
    let added = argv[2..].iter().filter(|m| s.add(m, max, seed)).count();
    if added > 0 {
        ctx.st.touch_watched(db, argv[1]);
        ctx.dirty += added as u64;
        ctx.notify(notify::SET, "sadd", argv[1]);
    }
    ctx.reply.int(added as i64);
}

pub fn srem(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    match lookup_write(ctx, argv[1]) {
        None => return,
        Some(false) => return ctx.reply.int(0),
        Some(true) => {}
    }
    let s = set_mut(ctx, argv[1]);
    let removed = argv[2..].iter().filter(|m| s.remove(m)).count();
    let empty = s.is_empty();
    let db = ctx.db();
    if empty {
        ctx.st.dbs[db].remove(argv[1]);
    }
    if removed > 0 {
        ctx.st.touch_watched(db, argv[1]);
        ctx.dirty += removed as u64;
        ctx.notify(notify::SET, "srem", argv[1]);
        if empty {
            ctx.notify(notify::GENERIC, "del", argv[1]);
        }
    }
    ctx.reply.int(removed as i64);
}

pub fn smove(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let (src, dst, m) = (argv[1], argv[2], argv[3]);
    let db = ctx.db();
    // Both lookups happen before any type check, as in Redis.
    let src_kind = ctx.st.write(db, src, ctx.fx).map(|e| matches!(e.val, Value::Set(_)));
    let dst_kind = ctx.st.write(db, dst, ctx.fx).map(|e| matches!(e.val, Value::Set(_)));
    let Some(src_is_set) = src_kind else { return ctx.reply.int(0) };
    if !src_is_set || dst_kind == Some(false) {
        return ctx.reply.error(WRONGTYPE);
    }
    if src == dst {
        let has = set_mut(ctx, src).contains(m);
        return ctx.reply.int(has as i64);
    }
    let s = set_mut(ctx, src);
    if !s.remove(m) {
        return ctx.reply.int(0);
    }
    let src_emptied = s.is_empty();
    if src_emptied {
        ctx.st.dbs[db].remove(src);
    }
    ctx.notify(notify::SET, "srem", src);
    if src_emptied {
        ctx.notify(notify::GENERIC, "del", src);
    }
    let (max, seed) = limits(ctx);
    if dst_kind.is_none() {
        let lru = ctx.lru();
        ctx.st.notify_new(db, dst);
        ctx.st.dbs[db].add(dst, Value::Set(SetValue::new_for(m, seed)), lru);
    }
    ctx.st.touch_watched(db, src);
    ctx.dirty += 1;
    if set_mut(ctx, dst).add(m, max, seed) {
        ctx.dirty += 1;
        ctx.st.touch_watched(db, dst);
        ctx.notify(notify::SET, "sadd", dst);
    }
    ctx.reply.int(1);
}

pub fn sismember(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Ok(s) = read_set!(ctx, argv[1]) else { return };
    let has = s.is_some_and(|s| s.contains(argv[2]));
    ctx.reply.int(has as i64);
}

pub fn smismember(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Ok(s) = read_set!(ctx, argv[1]) else { return };
    ctx.reply.array(argv.len() - 2);
    for m in &argv[2..] {
        let has = s.is_some_and(|s| s.contains(m));
        ctx.reply.int(has as i64);
    }
}

pub fn scard(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Ok(s) = read_set!(ctx, argv[1]) else { return };
    let n = s.map_or(0, |s| s.len());
    ctx.reply.int(n as i64);
}

/// Redis's `getPositiveLongFromObjectOrReply` with a message: every failure, a
/// non-integer included, answers with that message.
fn positive_count(ctx: &mut Ctx<'_>, a: &[u8], msg: &str) -> Option<usize> {
    match parse_i64(a) {
        Some(n) if n >= 0 => Some(n as usize),
        _ => {
            ctx.err(msg);
            None
        }
    }
}

pub fn spop(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() > 3 {
        return ctx.syntax_error();
    }
    if argv.len() == 3 {
        return spop_count(ctx, argv);
    }
    let key = argv[1];
    match lookup_write(ctx, key) {
        None => return,
        Some(false) => return ctx.reply.null(),
        Some(true) => {}
    }
    let db = ctx.db();
    let mut rng = core::mem::replace(&mut ctx.st.rng, Rng::new(0));
    let s = set_mut(ctx, key);
    let m = s.random(&mut rng).expect("stored sets are never empty");
    s.remove(&m);
    let empty = s.is_empty();
    ctx.st.rng = rng;
    if empty {
        ctx.st.dbs[db].remove(key);
    }
    ctx.st.touch_watched(db, key);
    ctx.dirty += 1;
    ctx.reply.bulk(&m);
    ctx.propagate(&[b"SREM", key, &m]);
    ctx.notify(notify::SET, "spop", key);
    if empty {
        ctx.notify(notify::GENERIC, "del", key);
    }
}

fn spop_count(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(count) = positive_count(ctx, argv[2], "ERR value is out of range, must be positive") else { return };
    let key = argv[1];
    match lookup_write(ctx, key) {
        None => return,
        Some(false) => return ctx.reply.set(0),
        Some(true) => {}
    }
    if count == 0 {
        return ctx.reply.set(0);
    }
    let db = ctx.db();
    let size = set_mut(ctx, key).len();
    if count >= size {
        // The whole set, in its own iteration order, and the key goes.
        let Some(e) = ctx.st.delete(db, key) else { return };
        let Value::Set(s) = e.val else { return };
        ctx.reply.set(s.len());
        s.for_each(|m| ctx.reply.bulk(m));
        ctx.dirty += 1;
        ctx.propagate(&[b"DEL", key]);
        ctx.notify(notify::SET, "spop", key);
        ctx.notify(notify::GENERIC, "del", key);
        return;
    }
    // `count` distinct members by a partial Fisher-Yates shuffle.
    let mut members = set_mut(ctx, key).members();
    for i in 0..count {
        let j = i + ctx.st.rng.below((members.len() - i) as u64) as usize;
        members.swap(i, j);
    }
    members.truncate(count);
    let s = set_mut(ctx, key);
    for m in &members {
        s.remove(m);
    }
    ctx.st.touch_watched(db, key);
    ctx.dirty += 1;
    ctx.reply.set(members.len());
    for m in &members {
        ctx.reply.bulk(m);
    }
    let mut fx: Vec<&[u8]> = Vec::with_capacity(members.len() + 2);
    fx.push(b"SREM");
    fx.push(key);
    fx.extend(members.iter().map(|m| m.as_slice()));
    ctx.propagate(&fx);
    ctx.notify(notify::SET, "spop", key);
}

pub fn srandmember(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() > 3 {
        return ctx.syntax_error();
    }
    let count = if argv.len() == 3 {
        let Some(count) = ctx.int_arg(argv[2]) else { return };
        // Redis accepts -LONG_MAX..LONG_MAX; a negative count repeats picks, so a huge one
        // is refused rather than building a reply that cannot fit in memory.
        if count == i64::MIN || count < -(1 << 27) {
            return ctx.err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807");
        }
        Some(count)
    } else {
        None
    };
    let exists = match read_set!(ctx, argv[1]) {
        Err(()) => return,
        Ok(s) => s.is_some(),
    };
    if !exists {
        return if count.is_some() { ctx.reply.array(0) } else { ctx.reply.null() };
    }
    let db = ctx.db();
    let st = &mut *ctx.st;
    let Some(Value::Set(s)) = st.dbs[db].keys.get(argv[1]).map(|e| &e.val) else { return };
    let rng = &mut st.rng;
    let Some(count) = count else {
        let m = s.random(rng).expect("stored sets are never empty");
        return ctx.reply.bulk(&m);
    };
    let picks: Vec<Vec<u8>> = if count == 0 {
        Vec::new()
    } else if count < 0 || count == 1 {
        (0..count.unsigned_abs()).map(|_| s.random(rng).expect("stored sets are never empty")).collect()
    } else if count as usize >= s.len() {
        s.members()
    } else {
        let mut members = s.members();
        for i in 0..count as usize {
            let j = i + rng.below((members.len() - i) as u64) as usize;
            members.swap(i, j);
        }
        members.truncate(count as usize);
        members
    };
    ctx.reply.array(picks.len());
    for m in &picks {
        ctx.reply.bulk(m);
    }
}

/// Type-checks every key in order (each counts as a read), like the loops at the top of
/// Redis's set-algebra commands. Some(any_missing), or None after WRONGTYPE.
fn check_sources(ctx: &mut Ctx<'_>, keys: &[&[u8]]) -> Option<bool> {
    let db = ctx.db();
    let mut missing = false;
    for k in keys {
        match ctx.st.read(db, k, ctx.fx) {
            None => missing = true,
            Some(e) if matches!(e.val, Value::Set(_)) => {}
            Some(_) => {
                ctx.reply.error(WRONGTYPE);
                return None;
            }
        }
    }
    Some(missing)
}

fn sources<'s>(st: &'s crate::engine::State, db: usize, keys: &[&[u8]]) -> Vec<Option<&'s SetValue>> {
    keys.iter()
        .map(|k| match st.dbs[db].keys.get(k).map(|e| &e.val) {
            Some(Value::Set(s)) => Some(s),
            _ => None,
        })
        .collect()
}

/// Stores a computed set at `dst` (SINTERSTORE & co): replaces any value and TTL, or
/// deletes `dst` when the result is empty. Replies the size.
fn store_result(ctx: &mut Ctx<'_>, dst: &[u8], result: SetValue, event: &str) {
    let db = ctx.db();
    let n = result.len();
    if n > 0 {
        ctx.st.set_value(db, dst, Value::Set(result), false);
        ctx.dirty += 1;
        ctx.notify(notify::SET, event, dst);
    } else if ctx.st.delete(db, dst).is_some() {
        ctx.dirty += 1;
        ctx.notify(notify::GENERIC, "del", dst);
    }
    ctx.reply.int(n as i64);
}

/// Redis's `sinterGenericCommand`.
fn sinter_generic(ctx: &mut Ctx<'_>, keys: &[&[u8]], dst: Option<&[u8]>, card_only: bool, limit: usize) {
    let Some(missing) = check_sources(ctx, keys) else { return };
    if missing {
        if let Some(d) = dst {
            // A write lookup first: an expired destination is gone, not "deleted" again.
            let db = ctx.db();
            ctx.st.expire_if_needed(db, d, ctx.fx);
            store_result(ctx, d, SetValue::new_intset(), "sinterstore");
        } else if card_only {
            ctx.reply.int(0);
        } else {
            ctx.reply.set(0);
        }
        return;
    }
    let (max, seed) = limits(ctx);
    let db = ctx.db();
    let mut sets: Vec<&SetValue> = sources(ctx.st, db, keys).into_iter().flatten().collect();
    // Smallest first; a stable sort, as glibc's qsort (a merge sort) is in practice.
    sets.sort_by_key(|s| s.len());
    let first = sets[0];
    let mut found: Vec<Vec<u8>> = Vec::new();
    let mut card = 0usize;
    let mut done = false;
    first.for_each(|m| {
        if done {
            return;
        }
        if sets[1..].iter().all(|s| core::ptr::eq(*s, first) || s.contains(m)) {
            card += 1;
            if card_only {
                if limit != 0 && card >= limit {
                    done = true;
                }
            } else {
                found.push(m.to_vec());
            }
        }
    });
    if card_only {
        return ctx.reply.int(card as i64);
    }
    match dst {
        Some(d) => {
            let mut result = SetValue::new_intset();
            for m in &found {
                result.add(m, max, seed);
            }
            ctx.st.expire_if_needed(db, d, ctx.fx);
            store_result(ctx, d, result, "sinterstore");
        }
        None => {
            ctx.reply.set(found.len());
            for m in &found {
                ctx.reply.bulk(m);
            }
        }
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Op {
    Union,
    Diff,
}

/// Redis's `sunionDiffGenericCommand`, including its choice between the two DIFF
/// algorithms: the result is the same set, but its encoding can differ (algorithm 2 adds
/// the whole first set before removing), and SDIFFSTORE keeps that encoding.
fn sunion_diff_generic(ctx: &mut Ctx<'_>, keys: &[&[u8]], dst: Option<&[u8]>, op: Op) {
    if check_sources(ctx, keys).is_none() {
        return;
    }
    let (max, seed) = limits(ctx);
    let db = ctx.db();
    let mut sets = sources(ctx.st, db, keys);
    let same = sets[0].is_some_and(|a| sets[1..].iter().any(|b| b.is_some_and(|b| core::ptr::eq(a, b))));
    let mut algo_one = true;
    if op == Op::Diff && !same {
        if let Some(first) = sets[0] {
            let (mut one, mut two) = (0u64, 0u64);
            for s in sets.iter().flatten() {
                one += first.len() as u64;
                two += s.len() as u64;
            }
            algo_one = one / 2 <= two;
            if algo_one && sets.len() > 1 {
                // Largest first among the subtracted sets (stable, as glibc's merge sort).
                sets[1..].sort_by(|a, b| b.map_or(0, |s| s.len()).cmp(&a.map_or(0, |s| s.len())));
            }
        }
    }
    let mut result = SetValue::new_intset();
    match op {
        Op::Union => {
            for s in sets.iter().flatten() {
                s.for_each(|m| {
                    result.add(m, max, seed);
                });
            }
        }
        Op::Diff if same => {}
        Op::Diff => {
            if let Some(first) = sets[0] {
                if algo_one {
                    first.for_each(|m| {
                        if !sets[1..].iter().flatten().any(|s| s.contains(m)) {
                            result.add(m, max, seed);
                        }
                    });
                } else {
                    first.for_each(|m| {
                        result.add(m, max, seed);
                    });
                    for s in sets[1..].iter().flatten() {
                        s.for_each(|m| {
                            result.remove(m);
                        });
                        if result.is_empty() {
                            break;
                        }
                    }
                }
            }
        }
    }
    match dst {
        Some(d) => {
            ctx.st.expire_if_needed(db, d, ctx.fx);
            store_result(ctx, d, result, if op == Op::Union { "sunionstore" } else { "sdiffstore" });
        }
        None => {
            ctx.reply.set(result.len());
            result.for_each(|m| ctx.reply.bulk(m));
        }
    }
}

pub fn smembers(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    // Redis 7.0 runs SMEMBERS as SINTER of one key; this is the same, without copies.
    let Ok(s) = read_set!(ctx, argv[1]) else { return };
    match s {
        None => ctx.reply.set(0),
        Some(s) => {
            ctx.reply.set(s.len());
            s.for_each(|m| ctx.reply.bulk(m));
        }
    }
}

pub fn sinter(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    sinter_generic(ctx, &argv[1..], None, false, 0)
}

pub fn sinterstore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    sinter_generic(ctx, &argv[2..], Some(argv[1]), false, 0)
}

pub fn sintercard(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let numkeys = match parse_i64(argv[1]) {
        Some(n) if n >= 1 => n as usize,
        _ => return ctx.err("ERR numkeys should be greater than 0"),
    };
    if numkeys > argv.len() - 2 {
        return ctx.err("ERR Number of keys can't be greater than number of args");
    }
    let mut limit = 0usize;
    let mut j = 2 + numkeys;
    while j < argv.len() {
        if crate::util::eq_ic(argv[j], b"LIMIT") && j + 1 < argv.len() {
            let Some(l) = positive_count(ctx, argv[j + 1], "ERR LIMIT can't be negative") else { return };
            limit = l;
            j += 2;
        } else {
            return ctx.syntax_error();
        }
    }
    sinter_generic(ctx, &argv[2..2 + numkeys], None, true, limit)
}

pub fn sunion(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    sunion_diff_generic(ctx, &argv[1..], None, Op::Union)
}

pub fn sunionstore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    sunion_diff_generic(ctx, &argv[2..], Some(argv[1]), Op::Union)
}

pub fn sdiff(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    sunion_diff_generic(ctx, &argv[1..], None, Op::Diff)
}

pub fn sdiffstore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    sunion_diff_generic(ctx, &argv[2..], Some(argv[1]), Op::Diff)
}

pub fn sscan(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(cursor) = crate::keyspace::parse_cursor(ctx, argv[2]) else { return };
    // Redis looks the key up before it reads the options.
    match read_set!(ctx, argv[1]) {
        Err(()) => return,
        Ok(None) => {
            ctx.reply.array(2);
            ctx.reply.bulk(b"0");
            return ctx.reply.array(0);
        }
        Ok(Some(_)) => {}
    }
    let Some(opts) = crate::keyspace::parse_scan_opts(ctx, &argv[3..], false) else { return };
    let db = ctx.db();
    let Some(Value::Set(s)) = ctx.st.dbs[db].keys.get(argv[1]).map(|e| &e.val) else { return };
    let mut items: Vec<Vec<u8>> = Vec::new();
    let next = match s {
        // An intset is returned whole, with cursor 0, as Redis does.
        SetValue::Ints(_) => {
            items = s.members();
            0
        }
        SetValue::Table(d) => {
            let mut c = cursor;
            let mut budget = opts.count * 10;
            loop {
                c = d.scan(c, |m, _| items.push(m.to_vec()));
                budget = budget.saturating_sub(1);
                if c == 0 || budget == 0 || items.len() >= opts.count {
                    break;
                }
            }
            c
        }
    };
    if let Some(p) = opts.pattern {
        items.retain(|m| crate::util::glob_match(p, m, false));
    }
    ctx.reply.array(2);
    ctx.reply.bulk(alloc::format!("{}", next).as_bytes());
    ctx.reply.array(items.len());
    for m in items {
        ctx.reply.bulk(&m);
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
        let mut buf = [0u8; 20];
        assert_eq!(itoa(i64::MIN, &mut buf), b"-9223372036854775808");
        assert_eq!(itoa(0, &mut buf), b"0");
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
