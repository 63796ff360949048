//! Sets (Redis 7.0's t_set.c). Encodings as in 7.0: an "intset" (sorted integers stored
//! 2, 4 or 8 bytes wide, as compact as Redis's) while every member is a canonical integer
//! and there are at most `set-max-intset-entries` of them, a "hashtable" otherwise (7.0
//! has no listpack sets; 7.2 added them). Conversion is one-way, as in Redis.
//!
//! Random picks (SPOP, SRANDMEMBER) come from the seed the host passes; SPOP replicates
//! as SREM of the members it chose (DEL when it took them all).

use crate::types::set::*;
use alloc::vec::Vec;

use crate::commands::string::WRONGTYPE;
use crate::commands::{COUNT_RANGE_ERR, MAX_REPEATED_PICKS, bulk_reply_len, repeated_picks_size};
use crate::keyspace::object::Value;
use crate::server::ctx::Ctx;
use crate::server::notify;
use crate::util::{Rng, parse_i64};

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
        ctx.st.signal_modified_key(db, argv[1]);
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
        ctx.st.signal_modified_key(db, argv[1]);
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
    ctx.st.signal_modified_key(db, src);
    ctx.dirty += 1;
    if set_mut(ctx, dst).add(m, max, seed) {
        ctx.dirty += 1;
        ctx.st.signal_modified_key(db, dst);
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
    s.before_sampling();
    let m = s.random(&mut rng).expect("stored sets are never empty");
    s.remove(&m);
    let empty = s.is_empty();
    ctx.st.rng = rng;
    if empty {
        ctx.st.dbs[db].remove(key);
    }
    ctx.st.signal_modified_key(db, key);
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
    ctx.st.signal_modified_key(db, key);
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
        // is refused rather than building a reply that cannot fit in memory (and so is
        // one whose members add up to too much, below).
        if count == i64::MIN || count < -(MAX_REPEATED_PICKS as i64) {
            return ctx.err(COUNT_RANGE_ERR);
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
    let Some(Value::Set(s)) = st.dbs[db].keys.get_mut(argv[1]).map(|e| &mut e.val) else { return };
    s.before_sampling();
    let s = &*s;
    let rng = &mut st.rng;
    let Some(count) = count else {
        let m = s.random(rng).expect("stored sets are never empty");
        return ctx.reply.bulk(&m);
    };
    if count < 0 || count == 1 {
        // Picks with repetitions, written as they are made: first made on a copy of the
        // generator to size the reply.
        let picks = count.unsigned_abs();
        let mut sizing = rng.clone();
        let Some(reply_size) = repeated_picks_size(picks, || s.random_with(&mut sizing, |m| bulk_reply_len(m.len())).unwrap_or(0)) else {
            return ctx.err(COUNT_RANGE_ERR);
        };
        ctx.reply.buf.reserve(reply_size);
        ctx.reply.array(picks as usize);
        for _ in 0..picks {
            s.random_with(rng, |m| ctx.reply.bulk(m)).expect("stored sets are never empty");
        }
        return;
    }
    // count is not negative here: compared as u64, never cut to a (32-bit) usize.
    let picks: Vec<Vec<u8>> = if count == 0 {
        Vec::new()
    } else if count as u64 >= s.len() as u64 {
        s.members()
    } else if (count as u64) * 3 <= s.len() as u64 {
        crate::commands::distinct_picks(count as usize, || s.random(rng), Vec::clone)
    } else {
        let count = count as usize;
        let mut members = s.members();
        for i in 0..count {
            let j = i + rng.below((members.len() - i) as u64) as usize;
            members.swap(i, j);
        }
        members.truncate(count);
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

fn sources<'s>(st: &'s crate::server::state::State, db: usize, keys: &[&[u8]]) -> Vec<Option<&'s SetValue>> {
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
    if op == Op::Diff
        && !same
        && let Some(first) = sets[0]
    {
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
        Some(n) if n >= 1 => n as u64,
        _ => return ctx.err("ERR numkeys should be greater than 0"),
    };
    // Compared in 64 bits: on wasm32 `as usize` would read 4294967297 as 1.
    if numkeys > (argv.len() - 2) as u64 {
        return ctx.err("ERR Number of keys can't be greater than number of args");
    }
    let numkeys = numkeys as usize;
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
    let Some(cursor) = crate::commands::keys::parse_cursor(ctx, argv[2]) else { return };
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
    let Some(opts) = crate::commands::keys::parse_scan_opts(ctx, &argv[3..], false) else { return };
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
