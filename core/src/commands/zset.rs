//! Sorted sets (Redis's t_zset.c). Two encodings, converted at the points Redis converts:
//! - "listpack": one packed byte buffer of (member, score) entries in (score, member) order,
//!   for sets of at most `zset-max-listpack-entries` members no longer than
//!   `zset-max-listpack-value` bytes; linear scans, like Redis's listpack.
//! - "skiplist" (Redis's name, kept for OBJECT ENCODING): a member → score `Dict` plus a
//!   `RankTree` (a counted B+tree, not a skiplist: fewer cache misses per descent) ordered
//!   by (score, member), for O(log n) inserts, deletes, ranks and range starts.
//!
//! Every read by rank/score/lex goes through one `View`: a partition point (how many
//! elements come before a bound) and a walk over a rank range, so both encodings share the
//! range logic.

use crate::types::zset::*;
use alloc::vec::Vec;

use crate::commands::string::WRONGTYPE;
use crate::commands::{COUNT_RANGE_ERR, DOUBLE_REPLY_MAX, MAX_REPEATED_PICKS, bulk_reply_len, repeated_picks_size};
use crate::keyspace::object::Value;
use crate::server::ctx::Ctx;
use crate::server::notify;
use crate::server::state::State;
use crate::types::dict::Dict;
use crate::util::{eq_ic, parse_i64};

// ---------------------------------------------------------------- lookups

/// The conversion thresholds in force (zset-max-listpack-entries / -value).
pub(crate) fn limits(st: &State) -> Limits {
    Limits { entries: st.config.zset_max_listpack_entries, value: st.config.zset_max_listpack_value, seed: st.seed }
}

pub(crate) fn zset_of<'s>(st: &'s State, db: usize, key: &[u8]) -> &'s ZsetValue {
    match &st.dbs[db].keys.get(key).expect("checked").val {
        Value::Zset(z) => z,
        _ => unreachable!("checked"),
    }
}

/// The set and the shared RNG at once (disjoint fields of the state).
fn zset_and_rng<'s>(st: &'s mut State, db: usize, key: &[u8]) -> (&'s ZsetValue, &'s mut crate::util::Rng) {
    let z = match &st.dbs[db].keys.get(key).expect("checked").val {
        Value::Zset(z) => z,
        _ => unreachable!("checked"),
    };
    (z, &mut st.rng)
}

fn zset_mut<'s>(st: &'s mut State, db: usize, key: &[u8]) -> &'s mut ZsetValue {
    match &mut st.dbs[db].keys.get_mut(key).expect("checked").val {
        Value::Zset(z) => z,
        _ => unreachable!("checked"),
    }
}

/// Reads a key: Ok(true) for a zset, Ok(false) if missing, Err after a WRONGTYPE reply.
pub(crate) fn lookup_read(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<bool, ()> {
    ctx.lookup_kind(key, crate::keyspace::object::Kind::Zset, false)
}

fn lookup_write(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<bool, ()> {
    ctx.lookup_kind(key, crate::keyspace::object::Kind::Zset, true)
}

/// Drops the key if the set became empty; returns whether it did.
fn drop_if_empty(ctx: &mut Ctx<'_>, key: &[u8]) -> bool {
    let db = ctx.db();
    if zset_of(ctx.st, db, key).is_empty() {
        ctx.st.dbs[db].remove(key);
        return true;
    }
    false
}

/// Writes a computed set to `dst` (setKey: replaces any value and its TTL), or deletes
/// `dst` when the result is empty. Returns the reply count.
fn store_result(ctx: &mut Ctx<'_>, dst: &[u8], z: ZsetValue, event: &str) -> usize {
    let db = ctx.db();
    let n = z.len();
    if n > 0 {
        ctx.st.set_value(db, dst, Value::Zset(z), false);
        ctx.dirty += 1;
        ctx.notify(notify::ZSET, event, dst);
    } else {
        ctx.delete_destination(dst);
    }
    n
}

// ---------------------------------------------------------------- ZADD / ZINCRBY / ZREM

fn zadd_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], incr_cmd: bool) {
    let mut f = AddFlags { incr: incr_cmd, ..AddFlags::default() };
    let mut ch = false;
    let mut idx = 2;
    while idx < argv.len() {
        let o = argv[idx];
        if eq_ic(o, b"nx") {
            f.nx = true
        } else if eq_ic(o, b"xx") {
            f.xx = true
        } else if eq_ic(o, b"ch") {
            ch = true
        } else if eq_ic(o, b"incr") {
            f.incr = true
        } else if eq_ic(o, b"gt") {
            f.gt = true
        } else if eq_ic(o, b"lt") {
            f.lt = true
        } else {
            break;
        }
        idx += 1;
    }
    let elements = argv.len() - idx;
    if elements % 2 == 1 || elements == 0 {
        return ctx.syntax_error();
    }
    let elements = elements / 2;
    if f.nx && f.xx {
        return ctx.err("ERR XX and NX options at the same time are not compatible");
    }
    if [f.gt, f.lt, f.nx].into_iter().filter(|&on| on).count() > 1 {
        return ctx.err("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if f.incr && elements > 1 {
        return ctx.err("ERR INCR option supports a single increment-element pair");
    }
    let mut scores = Vec::with_capacity(elements);
    for j in 0..elements {
        match parse_score(argv[idx + 2 * j]) {
            Some(s) => scores.push(s),
            None => return ctx.not_float(),
        }
    }
    let key = argv[1];
    let Ok(exists) = lookup_write(ctx, key) else { return };
    let db = ctx.db();
    let lim = limits(ctx.st);
    if !exists {
        if f.xx {
            return if f.incr { ctx.reply.null() } else { ctx.reply.int(0) };
        }
        let z = ZsetValue::new_for(lim, argv[idx + 1].len());
        let lru = ctx.st.new_access();
        ctx.st.notify_new(db, key);
        ctx.st.dbs[db].add(key, Value::Zset(z), lru);
    }
    let (mut added, mut updated, mut processed) = (0i64, 0i64, 0i64);
    let mut last = 0.0;
    let mut nan = false;
    {
        let z = zset_mut(ctx.st, db, key);
        for j in 0..elements {
            match z.add(argv[idx + 2 * j + 1], scores[j], f, lim) {
                AddOut::Nan => {
                    nan = true;
                    break;
                }
                AddOut::Added(s) => {
                    added += 1;
                    processed += 1;
                    last = s;
                }
                AddOut::Updated(s) => {
                    updated += 1;
                    processed += 1;
                    last = s;
                }
                AddOut::Same(s) => {
                    processed += 1;
                    last = s;
                }
                AddOut::Nop => {}
            }
        }
    }
    if added + updated > 0 {
        ctx.st.signal_modified_key(db, key);
        ctx.dirty += (added + updated) as u64;
        ctx.notify(notify::ZSET, if f.incr { "zincr" } else { "zadd" }, key);
    }
    if nan {
        drop_if_empty(ctx, key);
        return ctx.err("ERR resulting score is not a number (NaN)");
    }
    if f.incr {
        if processed > 0 { ctx.reply.double(last) } else { ctx.reply.null() }
    } else {
        ctx.reply.int(if ch { added + updated } else { added });
    }
}

pub fn zadd(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zadd_generic(ctx, argv, false)
}

pub fn zincrby(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zadd_generic(ctx, argv, true)
}

pub fn zrem(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let key = argv[1];
    match lookup_write(ctx, key) {
        Err(()) => return,
        Ok(false) => return ctx.reply.int(0),
        Ok(true) => {}
    }
    let db = ctx.db();
    let mut deleted = 0;
    {
        let z = zset_mut(ctx.st, db, key);
        for m in &argv[2..] {
            if z.remove(m) {
                deleted += 1;
            }
            if z.is_empty() {
                break;
            }
        }
    }
    if deleted > 0 {
        let gone = drop_if_empty(ctx, key);
        ctx.st.signal_modified_key(db, key);
        ctx.dirty += deleted;
        ctx.notify(notify::ZSET, "zrem", key);
        if gone {
            ctx.notify(notify::GENERIC, "del", key);
        }
    }
    ctx.reply.int(deleted as i64);
}

// ---------------------------------------------------------------- simple reads

pub fn zcard(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    match lookup_read(ctx, argv[1]) {
        Err(()) => {}
        Ok(false) => ctx.reply.int(0),
        Ok(true) => {
            let n = zset_of(ctx.st, ctx.client.db, argv[1]).len();
            ctx.reply.int(n as i64)
        }
    }
}

pub fn zscore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    match lookup_read(ctx, argv[1]) {
        Err(()) => {}
        Ok(false) => ctx.reply.null(),
        Ok(true) => match zset_of(ctx.st, ctx.client.db, argv[1]).score(argv[2]) {
            Some(s) => ctx.reply.double(s),
            None => ctx.reply.null(),
        },
    }
}

pub fn zmscore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Ok(exists) = lookup_read(ctx, argv[1]) else { return };
    ctx.reply.array(argv.len() - 2);
    for m in &argv[2..] {
        let s = if exists { zset_of(ctx.st, ctx.client.db, argv[1]).score(m) } else { None };
        match s {
            Some(s) => ctx.reply.double(s),
            None => ctx.reply.null(),
        }
    }
}

fn zrank_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], rev: bool) {
    match lookup_read(ctx, argv[1]) {
        Err(()) => {}
        Ok(false) => ctx.reply.null(),
        Ok(true) => {
            let z = zset_of(ctx.st, ctx.client.db, argv[1]);
            match z.rank(argv[2]) {
                Some(r) => {
                    let r = if rev { z.len() - 1 - r } else { r };
                    ctx.reply.int(r as i64)
                }
                None => ctx.reply.null(),
            }
        }
    }
}

pub fn zrank(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zrank_generic(ctx, argv, false)
}
pub fn zrevrank(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zrank_generic(ctx, argv, true)
}

pub fn zcount(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(r) = ScoreRange::parse(argv[2], argv[3]) else { return ctx.err("ERR min or max is not a float") };
    match lookup_read(ctx, argv[1]) {
        Err(()) => {}
        Ok(false) => ctx.reply.int(0),
        Ok(true) => {
            let v = zset_of(ctx.st, ctx.client.db, argv[1]).view();
            let (lo, hi) = r.bounds(&v);
            ctx.reply.int((hi - lo) as i64)
        }
    }
}

pub fn zlexcount(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(r) = LexRange::parse(argv[2], argv[3]) else { return ctx.err("ERR min or max not valid string range item") };
    match lookup_read(ctx, argv[1]) {
        Err(()) => {}
        Ok(false) => ctx.reply.int(0),
        Ok(true) => {
            let v = zset_of(ctx.st, ctx.client.db, argv[1]).view();
            let (lo, hi) = lex_bounds(&r, &v, false);
            ctx.reply.int((hi - lo) as i64)
        }
    }
}

// ---------------------------------------------------------------- ZRANGE family

#[derive(Clone, Copy, PartialEq)]
enum RangeType {
    Auto,
    Rank,
    Score,
    Lex,
}

#[derive(Clone, Copy, PartialEq)]
enum Dir {
    Auto,
    Fwd,
    Rev,
}

/// Where range results go: the client, or a set being stored.
enum Sink {
    Client { withscores: bool, items: Vec<(Vec<u8>, f64)> },
    Store { z: ZsetValue, lim: Limits },
}

impl Sink {
    fn emit(&mut self, m: &[u8], s: f64) {
        match self {
            Sink::Client { items, .. } => items.push((m.to_vec(), s)),
            Sink::Store { z, lim } => {
                z.add(m, s, AddFlags::default(), *lim);
            }
        }
    }
}

/// Replies with (member[, score]) items: flat in RESP2, [member, score] pairs in RESP3.
fn reply_items(ctx: &mut Ctx<'_>, items: &[(Vec<u8>, f64)], withscores: bool) {
    let resp3 = ctx.reply.resp3;
    ctx.reply.array(if withscores && !resp3 { items.len() * 2 } else { items.len() });
    for (m, s) in items {
        if withscores && resp3 {
            ctx.reply.array(2);
        }
        ctx.reply.bulk(m);
        if withscores {
            ctx.reply.double(*s);
        }
    }
}

/// Redis's zrangeGenericCommand: ZRANGE, ZRANGESTORE and the legacy Z[REV]RANGE[BY*].
fn zrange_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], start: usize, store: Option<&[u8]>, mut rtype: RangeType, mut dir: Dir) {
    let key = argv[start];
    let (mut minidx, mut maxidx) = (start + 1, start + 2);
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut j = start + 3;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let a = argv[j];
        if store.is_none() && eq_ic(a, b"withscores") {
            withscores = true;
        } else if eq_ic(a, b"limit") && left >= 2 {
            let Some(o) = ctx.int_arg(argv[j + 1]) else { return };
            let Some(l) = ctx.int_arg(argv[j + 2]) else { return };
            offset = o;
            limit = l;
            j += 2;
        } else if dir == Dir::Auto && eq_ic(a, b"rev") {
            dir = Dir::Rev;
        } else if rtype == RangeType::Auto && eq_ic(a, b"bylex") {
            rtype = RangeType::Lex;
        } else if rtype == RangeType::Auto && eq_ic(a, b"byscore") {
            rtype = RangeType::Score;
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    if dir == Dir::Auto {
        dir = Dir::Fwd;
    }
    if rtype == RangeType::Auto {
        rtype = RangeType::Rank;
    }
    if limit != -1 && rtype == RangeType::Rank {
        return ctx.err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    }
    if withscores && rtype == RangeType::Lex {
        return ctx.err("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    }
    let rev = dir == Dir::Rev;
    if rev && rtype != RangeType::Rank {
        core::mem::swap(&mut minidx, &mut maxidx);
    }
    let (mut rank_range, mut score_range, mut lex_range) = ((0i64, 0i64), None, None);
    match rtype {
        RangeType::Score => match ScoreRange::parse(argv[minidx], argv[maxidx]) {
            Some(r) => score_range = Some(r),
            None => return ctx.err("ERR min or max is not a float"),
        },
        RangeType::Lex => match LexRange::parse(argv[minidx], argv[maxidx]) {
            Some(r) => lex_range = Some(r),
            None => return ctx.err("ERR min or max not valid string range item"),
        },
        _ => {
            let Some(a) = ctx.int_arg(argv[minidx]) else { return };
            let Some(b) = ctx.int_arg(argv[maxidx]) else { return };
            rank_range = (a, b);
        }
    }
    let mut sink = match store {
        Some(_) => Sink::Store { z: ZsetValue::new_listpack(), lim: limits(ctx.st) },
        None => Sink::Client { withscores, items: Vec::new() },
    };
    let exists = match lookup_read(ctx, key) {
        Err(()) => return,
        Ok(e) => e,
    };
    if exists {
        let z = zset_of(ctx.st, ctx.client.db, key);
        let v = z.view();
        let len = v.len() as i64;
        let (lo, hi, lim_off, lim_cnt) = match rtype {
            RangeType::Rank => {
                let (mut s, mut e) = rank_range;
                if s < 0 {
                    s += len;
                }
                if e < 0 {
                    e += len;
                }
                if s < 0 {
                    s = 0;
                }
                if s > e || s >= len {
                    (0, 0, 0, -1)
                } else {
                    if e >= len {
                        e = len - 1;
                    }
                    // Ranks count from the tail when reversed.
                    if rev { ((len - 1 - e) as usize, (len - s) as usize, 0, -1) } else { (s as usize, (e + 1) as usize, 0, -1) }
                }
            }
            RangeType::Score => {
                let (lo, hi) = score_range.as_ref().unwrap().bounds(&v);
                (lo, hi, offset, limit)
            }
            _ => {
                let (lo, hi) = lex_bounds(lex_range.as_ref().unwrap(), &v, rev);
                (lo, hi, offset, limit)
            }
        };
        // LIMIT: a negative offset skips everything (Redis's `while (offset--)` runs off
        // the end), a negative count means all.
        let (lo, hi) = if lim_off < 0 {
            (0, 0)
        } else {
            let n = hi - lo;
            let skip = (lim_off as u64).min(n as u64) as usize;
            let take = if lim_cnt < 0 { n - skip } else { (lim_cnt as u64).min((n - skip) as u64) as usize };
            if rev { (hi - skip - take, hi - skip) } else { (lo + skip, lo + skip + take) }
        };
        v.walk(lo, hi, rev, |m, s| sink.emit(m, s));
    }
    match sink {
        Sink::Client { withscores, items } => reply_items(ctx, &items, withscores),
        Sink::Store { z, .. } => {
            let n = store_result(ctx, store.unwrap(), z, "zrangestore");
            ctx.reply.int(n as i64);
        }
    }
}

pub fn zrange(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zrange_generic(ctx, argv, 1, None, RangeType::Auto, Dir::Auto)
}
pub fn zrangestore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zrange_generic(ctx, argv, 2, Some(argv[1]), RangeType::Auto, Dir::Auto)
}
pub fn zrevrange(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zrange_generic(ctx, argv, 1, None, RangeType::Rank, Dir::Rev)
}
pub fn zrangebyscore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zrange_generic(ctx, argv, 1, None, RangeType::Score, Dir::Fwd)
}
pub fn zrevrangebyscore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zrange_generic(ctx, argv, 1, None, RangeType::Score, Dir::Rev)
}
pub fn zrangebylex(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zrange_generic(ctx, argv, 1, None, RangeType::Lex, Dir::Fwd)
}
pub fn zrevrangebylex(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zrange_generic(ctx, argv, 1, None, RangeType::Lex, Dir::Rev)
}

// ---------------------------------------------------------------- ZREMRANGEBY*

fn zremrange_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], rtype: RangeType) {
    let key = argv[1];
    let (mut rank_range, mut score_range, mut lex_range) = ((0i64, 0i64), None, None);
    match rtype {
        RangeType::Rank => {
            let Some(a) = ctx.int_arg(argv[2]) else { return };
            let Some(b) = ctx.int_arg(argv[3]) else { return };
            rank_range = (a, b);
        }
        RangeType::Score => match ScoreRange::parse(argv[2], argv[3]) {
            Some(r) => score_range = Some(r),
            None => return ctx.err("ERR min or max is not a float"),
        },
        _ => match LexRange::parse(argv[2], argv[3]) {
            Some(r) => lex_range = Some(r),
            None => return ctx.err("ERR min or max not valid string range item"),
        },
    }
    match lookup_write(ctx, key) {
        Err(()) => return,
        Ok(false) => return ctx.reply.int(0),
        Ok(true) => {}
    }
    let db = ctx.db();
    let z = zset_mut(ctx.st, db, key);
    let (lo, hi) = {
        let v = z.view();
        let len = v.len() as i64;
        match rtype {
            RangeType::Rank => {
                let (mut s, mut e) = rank_range;
                if s < 0 {
                    s += len;
                }
                if e < 0 {
                    e += len;
                }
                if s < 0 {
                    s = 0;
                }
                if s > e || s >= len { (0, 0) } else { (s as usize, (e.min(len - 1) + 1) as usize) }
            }
            RangeType::Score => score_range.as_ref().unwrap().bounds(&v),
            _ => lex_bounds(lex_range.as_ref().unwrap(), &v, false),
        }
    };
    let deleted = z.remove_rank_range(lo, hi);
    if deleted > 0 {
        let gone = drop_if_empty(ctx, key);
        ctx.st.signal_modified_key(db, key);
        ctx.dirty += deleted as u64;
        let event = match rtype {
            RangeType::Rank => "zremrangebyrank",
            RangeType::Score => "zremrangebyscore",
            _ => "zremrangebylex",
        };
        ctx.notify(notify::ZSET, event, key);
        if gone {
            ctx.notify(notify::GENERIC, "del", key);
        }
    }
    ctx.reply.int(deleted as i64);
}

pub fn zremrangebyrank(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zremrange_generic(ctx, argv, RangeType::Rank)
}
pub fn zremrangebyscore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zremrange_generic(ctx, argv, RangeType::Score)
}
pub fn zremrangebylex(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zremrange_generic(ctx, argv, RangeType::Lex)
}

// ---------------------------------------------------------------- ZUNION / ZINTER / ZDIFF

#[derive(Clone, Copy, PartialEq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy, PartialEq)]
enum Aggr {
    Sum,
    Min,
    Max,
}

fn aggregate(target: &mut f64, val: f64, a: Aggr) {
    match a {
        Aggr::Sum => {
            *target += val;
            // inf + -inf: Redis keeps the convention that the sum is 0.
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggr::Min => {
            if val < *target {
                *target = val
            }
        }
        Aggr::Max => {
            if val > *target {
                *target = val
            }
        }
    }
}

/// An input of a set operation: its elements in the order Redis iterates them (sorted sets
/// from the tail), the key it came from, and its weight.
struct OpSrc {
    key: usize,
    items: Vec<(Vec<u8>, f64)>,
    weight: f64,
}

/// Elements of a value usable as a set-operation input (score 1 for plain sets); None
/// for other types.
fn op_items(v: &Value) -> Option<Vec<(Vec<u8>, f64)>> {
    match v {
        Value::Zset(z) => {
            let mut out = Vec::with_capacity(z.len());
            z.for_each(|m, s| out.push((m.to_vec(), s)));
            out.reverse();
            Some(out)
        }
        Value::Set(s) => {
            let mut out = Vec::with_capacity(s.len());
            s.for_each(|m| out.push((m.to_vec(), 1.0)));
            Some(out)
        }
        _ => None,
    }
}

fn zsetop_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], dst: Option<&[u8]>, numkeys_idx: usize, op: SetOp, card_only: bool, name: &str) {
    let Some(setnum) = ctx.int_arg(argv[numkeys_idx]) else { return };
    if setnum < 1 {
        return ctx.err(&alloc::format!("ERR at least 1 input key is needed for '{}' command", name));
    }
    if setnum > (argv.len() - (numkeys_idx + 1)) as i64 {
        return ctx.syntax_error();
    }
    let setnum = setnum as usize;
    let db = ctx.db();
    let mut srcs: Vec<OpSrc> = Vec::with_capacity(setnum);
    for i in 0..setnum {
        let k = argv[numkeys_idx + 1 + i];
        let items = match ctx.st.read(db, k, ctx.fx) {
            None => Vec::new(),
            Some(e) => match op_items(&e.val) {
                Some(items) => items,
                None => return ctx.reply.error(WRONGTYPE),
            },
        };
        srcs.push(OpSrc { key: numkeys_idx + 1 + i, items, weight: 1.0 });
    }
    let mut aggr = Aggr::Sum;
    let mut withscores = false;
    let mut limit: i64 = 0;
    let mut j = numkeys_idx + 1 + setnum;
    while j < argv.len() {
        let remaining = argv.len() - j;
        let a = argv[j];
        if op != SetOp::Diff && !card_only && remaining > setnum && eq_ic(a, b"weights") {
            j += 1;
            for s in srcs.iter_mut() {
                match parse_score(argv[j]) {
                    Some(w) => s.weight = w,
                    None => return ctx.err("ERR weight value is not a float"),
                }
                j += 1;
            }
        } else if op != SetOp::Diff && !card_only && remaining >= 2 && eq_ic(a, b"aggregate") {
            let v = argv[j + 1];
            aggr = if eq_ic(v, b"sum") {
                Aggr::Sum
            } else if eq_ic(v, b"min") {
                Aggr::Min
            } else if eq_ic(v, b"max") {
                Aggr::Max
            } else {
                return ctx.syntax_error();
            };
            j += 2;
        } else if dst.is_none() && !card_only && eq_ic(a, b"withscores") {
            withscores = true;
            j += 1;
        } else if card_only && remaining >= 2 && eq_ic(a, b"limit") {
            match parse_i64(argv[j + 1]) {
                Some(l) if l >= 0 => limit = l,
                _ => return ctx.err("ERR LIMIT can't be negative"),
            }
            j += 2;
        } else {
            return ctx.syntax_error();
        }
    }
    if op != SetOp::Diff {
        // glibc's qsort is a merge sort here: stable.
        srcs.sort_by_key(|s| s.items.len());
    }
    let same_key = |a: &OpSrc, b: &OpSrc| argv[a.key] == argv[b.key];
    let mut result: Vec<(Vec<u8>, f64)> = Vec::new();
    let mut cardinality: i64 = 0;
    match op {
        SetOp::Inter => {
            if !srcs[0].items.is_empty() {
                let lookups: Vec<Option<Dict<f64>>> = srcs
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        if i == 0 || same_key(s, &srcs[0]) {
                            return None;
                        }
                        let mut d = Dict::new(ctx.st.seed);
                        for (m, sc) in &s.items {
                            d.insert(m, *sc);
                        }
                        Some(d)
                    })
                    .collect();
                for (m, sc) in &srcs[0].items {
                    let mut score = srcs[0].weight * sc;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    let mut all = true;
                    for (k, s) in srcs.iter().enumerate().skip(1) {
                        let v = match &lookups[k] {
                            None => Some(*sc),
                            Some(d) => d.get(m).copied(),
                        };
                        match v {
                            Some(v) => aggregate(&mut score, v * s.weight, aggr),
                            None => {
                                all = false;
                                break;
                            }
                        }
                    }
                    if all {
                        if card_only {
                            cardinality += 1;
                            if limit > 0 && cardinality >= limit {
                                break;
                            }
                        } else {
                            result.push((m.clone(), score));
                        }
                    }
                }
            }
        }
        SetOp::Union => {
            let mut acc: Dict<f64> = Dict::new(ctx.st.seed);
            let mut order: Vec<Vec<u8>> = Vec::new();
            for s in &srcs {
                for (m, sc) in &s.items {
                    let mut score = s.weight * sc;
                    if score.is_nan() {
                        score = 0.0;
                    }
                    match acc.get_mut(m) {
                        Some(t) => aggregate(t, score, aggr),
                        None => {
                            acc.insert_new(m.as_slice().into(), score);
                            order.push(m.clone());
                        }
                    }
                }
            }
            for m in order {
                let s = *acc.get(&m).unwrap();
                result.push((m, s));
            }
        }
        SetOp::Diff => {
            let first = &srcs[0];
            if !first.items.is_empty() && !srcs[1..].iter().any(|s| same_key(s, first)) {
                let mut gone: Dict<()> = Dict::new(ctx.st.seed);
                for s in &srcs[1..] {
                    for (m, _) in &s.items {
                        gone.insert(m, ());
                    }
                }
                for (m, sc) in &first.items {
                    if !gone.contains_key(m) {
                        result.push((m.clone(), *sc));
                    }
                }
            }
        }
    }
    if card_only {
        return ctx.reply.int(cardinality);
    }
    // The result as Redis builds it: a skiplist set, ordered by (score, member).
    let seed = ctx.st.seed;
    let mut z = ZsetValue::new_skiplist(seed);
    let (mut maxlen, mut total) = (0usize, 0usize);
    if let ZsetValue::Skiplist(zs) = &mut z {
        for (m, s) in &result {
            maxlen = maxlen.max(m.len());
            total += m.len();
            zs.insert_new(m, *s);
        }
    }
    let _ = total;
    match dst {
        Some(dst) => {
            let lim = limits(ctx.st);
            if z.len() <= lim.entries && maxlen <= lim.value {
                z.to_listpack();
            }
            let n = store_result(ctx, dst, z, name);
            ctx.reply.int(n as i64);
        }
        None => {
            let mut items = Vec::with_capacity(z.len());
            z.for_each(|m, s| items.push((m.to_vec(), s)));
            reply_items(ctx, &items, withscores);
        }
    }
}

pub fn zunionstore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zsetop_generic(ctx, argv, Some(argv[1]), 2, SetOp::Union, false, "zunionstore")
}
pub fn zinterstore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zsetop_generic(ctx, argv, Some(argv[1]), 2, SetOp::Inter, false, "zinterstore")
}
pub fn zdiffstore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zsetop_generic(ctx, argv, Some(argv[1]), 2, SetOp::Diff, false, "zdiffstore")
}
pub fn zunion(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zsetop_generic(ctx, argv, None, 1, SetOp::Union, false, "zunion")
}
pub fn zinter(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zsetop_generic(ctx, argv, None, 1, SetOp::Inter, false, "zinter")
}
pub fn zdiff(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zsetop_generic(ctx, argv, None, 1, SetOp::Diff, false, "zdiff")
}
pub fn zintercard(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zsetop_generic(ctx, argv, None, 1, SetOp::Inter, true, "zintercard")
}

// ---------------------------------------------------------------- pops

#[derive(Clone, Copy, PartialEq)]
pub enum Where {
    Min,
    Max,
}

/// Reply shape of a pop (Redis's genericZpopCommand arguments).
#[derive(Clone, Copy)]
pub struct PopShape {
    /// The key name leads the reply (BZPOP*, ZMPOP).
    pub emit_key: bool,
    pub nested: bool,
    /// An empty result is a null array (ZMPOP) rather than an empty one.
    pub nil_when_empty: bool,
}

/// Pops up to `count` (None: one, the plain form) elements from the first existing key of
/// `keys`, replying in `shape`. Returns the key popped from and the count actually popped,
/// so callers can replicate a ZPOPMIN/ZPOPMAX with that count.
pub fn pop_generic(ctx: &mut Ctx<'_>, keys: &[&[u8]], wh: Where, count: Option<i64>, shape: PopShape) -> Option<(Vec<u8>, usize)> {
    let db = ctx.db();
    let mut found = None;
    for k in keys {
        match lookup_write(ctx, k) {
            Err(()) => return None,
            Ok(false) => continue,
            Ok(true) => {
                found = Some(*k);
                break;
            }
        }
    }
    let Some(key) = found else {
        if shape.nil_when_empty {
            ctx.reply.null_array()
        } else {
            ctx.reply.array(0)
        }
        return None;
    };
    if count == Some(0) {
        ctx.reply.array(0);
        return None;
    }
    let want = count.unwrap_or(1).max(1) as u64;
    let mut popped: Vec<(Vec<u8>, f64)> = Vec::new();
    {
        let z = zset_mut(ctx.st, db, key);
        let n = (want.min(z.len() as u64)) as usize;
        {
            let v = z.view();
            let len = v.len();
            if wh == Where::Min {
                v.walk(0, n, false, |m, s| popped.push((m.to_vec(), s)));
            } else {
                v.walk(len - n, len, true, |m, s| popped.push((m.to_vec(), s)));
            }
        }
        if wh == Where::Min {
            z.remove_rank_range(0, n);
        } else {
            let len = z.len();
            z.remove_rank_range(len - n, len);
        }
    }
    let n = popped.len();
    match (shape.nested, shape.emit_key) {
        (false, false) => ctx.reply.array(n * 2),
        (true, false) => ctx.reply.array(n),
        (false, true) => {
            ctx.reply.array(n * 2 + 1);
            ctx.reply.bulk(key);
        }
        (true, true) => {
            ctx.reply.array(2);
            ctx.reply.bulk(key);
            ctx.reply.array(n);
        }
    }
    for (m, s) in &popped {
        if shape.nested {
            ctx.reply.array(2);
        }
        ctx.reply.bulk(m);
        ctx.reply.double(*s);
    }
    let gone = drop_if_empty(ctx, key);
    ctx.st.signal_modified_key(db, key);
    ctx.dirty += n as u64;
    ctx.notify(notify::ZSET, if wh == Where::Min { "zpopmin" } else { "zpopmax" }, key);
    if gone {
        ctx.notify(notify::GENERIC, "del", key);
    }
    Some((key.to_vec(), n))
}

fn zpop_minmax(ctx: &mut Ctx<'_>, argv: &[&[u8]], wh: Where) {
    if argv.len() > 3 {
        return ctx.syntax_error();
    }
    let mut count = None;
    if argv.len() == 3 {
        match parse_i64(argv[2]) {
            Some(c) if c >= 0 => count = Some(c),
            _ => return ctx.err("ERR value is out of range, must be positive"),
        }
    }
    let nested = ctx.reply.resp3 && count.is_some();
    pop_generic(ctx, &argv[1..2], wh, count, PopShape { emit_key: false, nested, nil_when_empty: false });
}

pub fn zpopmin(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zpop_minmax(ctx, argv, Where::Min)
}
pub fn zpopmax(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    zpop_minmax(ctx, argv, Where::Max)
}

/// Parsed `numkeys key… MIN|MAX [COUNT n]` of ZMPOP/BZMPOP.
pub struct MpopArgs<'a> {
    pub keys: Vec<&'a [u8]>,
    pub wh: Where,
    pub count: i64,
}

pub fn parse_mpop<'a>(ctx: &mut Ctx<'_>, argv: &[&'a [u8]], numkeys_idx: usize) -> Option<MpopArgs<'a>> {
    let numkeys = match parse_i64(argv[numkeys_idx]) {
        Some(n) if n >= 1 => n,
        _ => {
            ctx.err("ERR numkeys should be greater than 0");
            return None;
        }
    };
    let where_idx = numkeys_idx as u64 + numkeys as u64 + 1;
    if where_idx >= argv.len() as u64 {
        ctx.syntax_error();
        return None;
    }
    let where_idx = where_idx as usize;
    let wh = if eq_ic(argv[where_idx], b"min") {
        Where::Min
    } else if eq_ic(argv[where_idx], b"max") {
        Where::Max
    } else {
        ctx.syntax_error();
        return None;
    };
    let mut count = -1i64;
    let mut j = where_idx + 1;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        if count == -1 && eq_ic(argv[j], b"count") && more > 0 {
            match parse_i64(argv[j + 1]) {
                Some(c) if c >= 1 => count = c,
                _ => {
                    ctx.err("ERR count should be greater than 0");
                    return None;
                }
            }
            j += 2;
        } else {
            ctx.syntax_error();
            return None;
        }
    }
    if count == -1 {
        count = 1;
    }
    Some(MpopArgs { keys: argv[numkeys_idx + 1..where_idx].to_vec(), wh, count })
}

/// The effect of a served pop: ZPOPMIN/ZPOPMAX of the key with the count popped.
pub fn propagate_pop(ctx: &mut Ctx<'_>, key: &[u8], wh: Where, n: usize) {
    let name: &[u8] = if wh == Where::Min { b"ZPOPMIN" } else { b"ZPOPMAX" };
    let c = crate::util::int_bytes(n as i64);
    ctx.propagate(&[name, key, &c]);
}

pub fn zmpop(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(a) = parse_mpop(ctx, argv, 1) else { return };
    let shape = PopShape { emit_key: true, nested: true, nil_when_empty: true };
    if let Some((key, n)) = pop_generic(ctx, &a.keys, a.wh, Some(a.count), shape) {
        propagate_pop(ctx, &key, a.wh, n);
    }
}

// ---------------------------------------------------------------- ZRANDMEMBER

pub fn zrandmember(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() == 2 {
        match lookup_read(ctx, argv[1]) {
            Err(()) => {}
            Ok(false) => ctx.reply.null(),
            Ok(true) => {
                let (z, rng) = zset_and_rng(ctx.st, ctx.client.db, argv[1]);
                let (m, _) = z.random(rng);
                ctx.reply.bulk(&m);
            }
        }
        return;
    }
    let Some(l) = ctx.int_arg(argv[2]) else { return };
    if l == i64::MIN {
        return ctx.err(COUNT_RANGE_ERR);
    }
    let withscores = match argv.len() {
        3 => false,
        4 if eq_ic(argv[3], b"withscores") => true,
        _ => return ctx.syntax_error(),
    };
    // Redis refuses counts whose doubled reply length would overflow.
    if withscores && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&l) {
        return ctx.err("ERR value is out of range");
    }
    // A negative count repeats picks: a huge one is refused rather than building a reply
    // that cannot fit in memory (and so is one whose members add up to too much, below).
    if l < -(MAX_REPEATED_PICKS as i64) {
        return ctx.err(COUNT_RANGE_ERR);
    }
    match lookup_read(ctx, argv[1]) {
        Err(()) => return,
        Ok(false) => return ctx.reply.array(0),
        Ok(true) => {}
    }
    let (z, rng) = zset_and_rng(ctx.st, ctx.client.db, argv[1]);
    let size = z.len();
    if l < 0 || l == 1 {
        // Picks with repetitions, written as they are made: first made on a copy of the
        // generator to size the reply.
        let picks = l.unsigned_abs();
        let v = z.view();
        let resp3 = ctx.reply.resp3;
        let mut sizing = rng.clone();
        let reply_size = repeated_picks_size(picks, || {
            let (m, _) = v.at(sizing.below(size as u64) as usize);
            bulk_reply_len(m.len()) + if withscores { DOUBLE_REPLY_MAX + if resp3 { 4 } else { 0 } } else { 0 }
        });
        let Some(reply_size) = reply_size else {
            return ctx.err(COUNT_RANGE_ERR);
        };
        let reply = &mut *ctx.reply;
        reply.buf.reserve(reply_size);
        reply.array(if withscores && !resp3 { picks as usize * 2 } else { picks as usize });
        for _ in 0..picks {
            let (m, s) = v.at(rng.below(size as u64) as usize);
            if withscores && resp3 {
                reply.array(2);
            }
            reply.bulk(m);
            if withscores {
                reply.double(s);
            }
        }
        return;
    }
    let picks: Vec<(Vec<u8>, f64)> = if l == 0 {
        Vec::new()
    } else if l as u64 >= size as u64 {
        // The whole set, in the order Redis iterates it (from the highest).
        let mut all = Vec::with_capacity(size);
        z.for_each(|m, s| all.push((m.to_vec(), s)));
        all.reverse();
        all
    } else {
        // `count` distinct elements: partial Fisher-Yates over the ranks.
        let count = l as usize;
        let mut idx: Vec<usize> = (0..size).collect();
        for i in 0..count {
            let j = i + rng.below((size - i) as u64) as usize;
            idx.swap(i, j);
        }
        idx.truncate(count);
        let v = z.view();
        idx.iter()
            .map(|&r| {
                let mut out = (Vec::new(), 0.0);
                v.walk(r, r + 1, false, |m, s| out = (m.to_vec(), s));
                out
            })
            .collect()
    };
    reply_items(ctx, &picks, withscores);
}

// ---------------------------------------------------------------- ZSCAN

pub fn zscan(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(cursor) = crate::commands::keys::parse_cursor(ctx, argv[2]) else { return };
    match lookup_read(ctx, argv[1]) {
        Err(()) => return,
        Ok(false) => {
            ctx.reply.array(2);
            ctx.reply.bulk(b"0");
            return ctx.reply.array(0);
        }
        Ok(true) => {}
    }
    let Some(opts) = crate::commands::keys::parse_scan_opts(ctx, &argv[3..], false) else { return };
    let z = zset_of(ctx.st, ctx.client.db, argv[1]);
    let mut items: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let next = match z {
        ZsetValue::Listpack(_) => {
            items = z.scan_pairs();
            0
        }
        ZsetValue::Skiplist(zs) => {
            let mut c = cursor;
            let mut budget = opts.count * 10;
            loop {
                c = zs.dict.scan(c, |m, s| items.push((m.to_vec(), crate::util::format_g17(*s))));
                budget = budget.saturating_sub(1);
                if c == 0 || budget == 0 || items.len() >= opts.count {
                    break;
                }
            }
            c
        }
    };
    if let Some(p) = opts.pattern {
        items.retain(|(m, _)| crate::util::glob_match(p, m, false));
    }
    ctx.reply.array(2);
    ctx.reply.bulk(alloc::format!("{}", next).as_bytes());
    ctx.reply.array(items.len() * 2);
    for (m, s) in items {
        ctx.reply.bulk(&m);
        ctx.reply.bulk(&s);
    }
}

// ---------------------------------------------------------------- BZPOPMIN / BZPOPMAX / BZMPOP

/// Whether `key` holds a sorted set (no reply, no WRONGTYPE: a waiter whose ready key
/// holds something else keeps waiting, as in Redis's serveClientsBlockedOnKey).
fn holds_zset(ctx: &mut Ctx<'_>, key: &[u8]) -> bool {
    let db = ctx.db();
    ctx.st.write(db, key, ctx.fx).is_some_and(|e| matches!(e.val, Value::Zset(_)))
}

/// Redis's blockingGenericZpopCommand, for both paths (see `blocked`): run normally it pops
/// from the first non-empty key or blocks; re-run for a waiter it pops from the key that
/// became ready or keeps waiting. `count` is None for BZPOPMIN/BZPOPMAX (one element, a
/// flat reply), Some for BZMPOP (nested reply). The effect is the pop itself.
fn blocking_zpop(ctx: &mut Ctx<'_>, keys: &[&[u8]], wh: Where, timeout: &[u8], count: Option<i64>) {
    let Some((candidates, deadline)) = crate::server::blocked::pop_candidates(ctx, keys, timeout, holds_zset) else { return };
    for k in candidates {
        match lookup_write(ctx, k) {
            Err(()) => return,
            Ok(false) => continue,
            Ok(true) => {
                let shape = match count {
                    None => PopShape { emit_key: true, nested: false, nil_when_empty: false },
                    Some(_) => PopShape { emit_key: true, nested: true, nil_when_empty: true },
                };
                if let Some((key, n)) = pop_generic(ctx, &[k], wh, Some(count.unwrap_or(1)), shape) {
                    match count {
                        // BZPOPMIN key… → ZPOPMIN key, as Redis replicates it.
                        None => {
                            let name: &[u8] = if wh == Where::Min { b"ZPOPMIN" } else { b"ZPOPMAX" };
                            ctx.propagate(&[name, &key]);
                        }
                        Some(_) => propagate_pop(ctx, &key, wh, n),
                    }
                }
                return;
            }
        }
    }
    if !ctx.may_block() {
        return ctx.reply.null_array();
    }
    ctx.block(keys, deadline);
}

pub fn bzpopmin(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    blocking_zpop(ctx, &argv[1..argv.len() - 1], Where::Min, argv[argv.len() - 1], None)
}

pub fn bzpopmax(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    blocking_zpop(ctx, &argv[1..argv.len() - 1], Where::Max, argv[argv.len() - 1], None)
}

pub fn bzmpop(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(a) = parse_mpop(ctx, argv, 2) else { return };
    blocking_zpop(ctx, &a.keys, a.wh, argv[1], Some(a.count))
}
