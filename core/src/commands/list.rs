//! Lists (Redis's t_list.c + quicklist.c): a deque of packed nodes, each a run of entries
//! in one buffer like a listpack, capped by `list-max-listpack-size` (8 KiB by default).
//! Pushes and pops at either end are O(1) amortised (a pop at the head moves at most one
//! node's bytes, as listpack deletes do); indexing walks whole nodes by their counts, then
//! one node, so LINDEX/LRANGE cost O(offset / entries-per-node + node + range).
//! Redis 7.0 reports every list as "quicklist", so OBJECT ENCODING does too.
//!
//! Entry layout in a node: len (LEB128) | bytes | backlen, where backlen is the size of
//! len + bytes written so it can be read from its last byte backwards (a listpack's
//! backlen), so nodes are walked from either end. Short entries cost 2 bytes of overhead.

use crate::types::list::*;
use alloc::vec::Vec;

use crate::commands::string::WRONGTYPE;
use crate::keyspace::object::Value;
use crate::server::ctx::Ctx;
use crate::server::notify;
use crate::util::eq_ic;

fn list_fill(ctx: &Ctx<'_>) -> i64 {
    ctx.st.config.list_max_listpack_size
}

/// The list at `key` for reading: Ok(None) if missing, Err(()) after a WRONGTYPE reply.
fn read_list<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> Result<Option<&'c ListValue>, ()> {
    let db = ctx.db();
    match ctx.st.read(db, key, ctx.fx) {
        None => Ok(None),
        Some(e) => match &e.val {
            Value::List(l) => Ok(Some(l)),
            _ => {
                ctx.reply.error(WRONGTYPE);
                Err(())
            }
        },
    }
}

/// The list at `key` for writing (lookupKeyWrite + checkType).
fn write_list<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> Result<Option<&'c mut ListValue>, ()> {
    let db = ctx.db();
    match ctx.st.write(db, key, ctx.fx) {
        None => Ok(None),
        Some(e) => match &mut e.val {
            Value::List(l) => Ok(Some(l)),
            _ => {
                ctx.reply.error(WRONGTYPE);
                Err(())
            }
        },
    }
}

/// The list at `key`, known to exist (borrows only the state, so replies can be written).
fn list_in<'s>(st: &'s mut crate::server::state::State, db: usize, key: &[u8]) -> &'s mut ListValue {
    match st.dbs[db].keys.get_mut(key).map(|e| &mut e.val) {
        Some(Value::List(l)) => l,
        _ => unreachable!("checked by the caller"),
    }
}

/// Is `key` a list right now (for serving waiters: anything else is not ready)?
fn is_nonempty_list(ctx: &mut Ctx<'_>, key: &[u8]) -> bool {
    let db = ctx.db();
    matches!(ctx.st.write(db, key, ctx.fx).map(|e| &e.val), Some(Value::List(l)) if !l.is_empty())
}

/// The list a write goes to, created if missing (the caller checked the type).
fn list_mut<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> &'c mut ListValue {
    let db = ctx.db();
    if !ctx.st.dbs[db].keys.contains_key(key) {
        let lru = ctx.st.new_access();
        ctx.st.dbs[db].add(key, Value::List(alloc::boxed::Box::default()), lru);
    }
    match &mut ctx.st.dbs[db].keys.get_mut(key).unwrap().val {
        Value::List(l) => l,
        _ => unreachable!("type checked by the caller"),
    }
}

/// After removing elements: raises `event` (lpop, lrem…), then deletes an emptied list
/// with its `del` event, as Redis orders them; signals WATCHers.
fn after_remove(ctx: &mut Ctx<'_>, key: &[u8], event: &str) {
    let db = ctx.db();
    ctx.notify(notify::LIST, event, key);
    if matches!(ctx.st.dbs[db].keys.get(key).map(|e| &e.val), Some(Value::List(l)) if l.is_empty()) {
        ctx.st.dbs[db].remove(key);
        ctx.notify(notify::GENERIC, "del", key);
    }
    ctx.st.signal_modified_key(db, key);
}

fn pop_event(end: End) -> &'static str {
    match end {
        End::Head => "lpop",
        End::Tail => "rpop",
    }
}

fn push_event(end: End) -> &'static str {
    match end {
        End::Head => "lpush",
        End::Tail => "rpush",
    }
}

fn end_of(arg: &[u8]) -> Option<End> {
    if eq_ic(arg, b"LEFT") {
        Some(End::Head)
    } else if eq_ic(arg, b"RIGHT") {
        Some(End::Tail)
    } else {
        None
    }
}

fn pop_name(end: End) -> &'static [u8] {
    match end {
        End::Head => b"LPOP",
        End::Tail => b"RPOP",
    }
}

fn push_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], end: End, only_existing: bool) {
    let fill = list_fill(ctx);
    // The looked-up list is pushed to directly: one key lookup for an existing list.
    let n = match write_list(ctx, argv[1]) {
        Err(()) => return,
        Ok(Some(l)) => {
            for x in &argv[2..] {
                l.push(end, x, fill);
            }
            l.len()
        }
        Ok(None) if only_existing => return ctx.reply.int(0),
        Ok(None) => {
            let l = list_mut(ctx, argv[1]);
            for x in &argv[2..] {
                l.push(end, x, fill);
            }
            l.len()
        }
    };
    let db = ctx.db();
    ctx.st.signal_modified_key(db, argv[1]);
    ctx.notify(notify::LIST, push_event(end), argv[1]);
    ctx.dirty += (argv.len() - 2) as u64;
    ctx.reply.int(n as i64);
}

pub fn lpush(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    push_generic(ctx, argv, End::Head, false)
}
pub fn rpush(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    push_generic(ctx, argv, End::Tail, false)
}
pub fn lpushx(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    push_generic(ctx, argv, End::Head, true)
}
pub fn rpushx(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    push_generic(ctx, argv, End::Tail, true)
}

/// getPositiveLongFromObjectOrReply with Redis's default message (used for both a
/// non-number and a negative number).
fn positive_arg(ctx: &mut Ctx<'_>, a: &[u8], msg: &str) -> Option<i64> {
    match crate::util::parse_i64(a) {
        Some(v) if v >= 0 => Some(v),
        _ => {
            ctx.err(msg);
            None
        }
    }
}

fn pop_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], end: End) {
    let name = if end == End::Head { "lpop" } else { "rpop" };
    if argv.len() > 3 {
        return ctx.err(&alloc::format!("ERR wrong number of arguments for '{}' command", name));
    }
    let count = if argv.len() == 3 {
        let Some(c) = positive_arg(ctx, argv[2], "ERR value is out of range, must be positive") else {
            return;
        };
        Some(c as usize)
    } else {
        None
    };
    match write_list(ctx, argv[1]) {
        Err(()) => return,
        Ok(None) => {
            return if count.is_some() { ctx.reply.null_array() } else { ctx.reply.null() };
        }
        Ok(Some(_)) => {}
    }
    let db = ctx.db();
    let l = list_in(ctx.st, db, argv[1]);
    match count {
        None => {
            let v = l.pop(end).expect("lists are never empty");
            ctx.reply.bulk(&v);
            ctx.dirty += 1;
        }
        Some(0) => return ctx.reply.array(0),
        Some(c) => {
            let n = c.min(l.len());
            ctx.reply.array(n);
            for _ in 0..n {
                let v = l.pop(end).expect("n <= len");
                ctx.reply.bulk(&v);
            }
            ctx.dirty += n as u64;
        }
    }
    after_remove(ctx, argv[1], pop_event(end));
}

pub fn lpop(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    pop_generic(ctx, argv, End::Head)
}
pub fn rpop(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    pop_generic(ctx, argv, End::Tail)
}

pub fn llen(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Ok(l) = read_list(ctx, argv[1]) else {
        return;
    };
    let n = l.map_or(0, |l| l.len());
    ctx.reply.int(n as i64);
}

/// Normalises LRANGE/LTRIM bounds: Some((start, count)) or None for an empty range.
fn norm_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let llen = len as i64;
    let mut s = if start < 0 { llen.saturating_add(start) } else { start };
    let mut e = if end < 0 { llen.saturating_add(end) } else { end };
    if s < 0 {
        s = 0;
    }
    if s > e || s >= llen {
        return None;
    }
    if e >= llen {
        e = llen - 1;
    }
    Some((s as usize, (e - s + 1) as usize))
}

pub fn lrange(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(start) = ctx.int_arg(argv[2]) else {
        return;
    };
    let Some(end) = ctx.int_arg(argv[3]) else {
        return;
    };
    match read_list(ctx, argv[1]) {
        Err(()) => return,
        Ok(None) => return ctx.reply.array(0),
        Ok(Some(_)) => {}
    }
    let db = ctx.db();
    let l = list_in(ctx.st, db, argv[1]);
    let Some((s, n)) = norm_range(start, end, l.len()) else {
        return ctx.reply.array(0);
    };
    let reply = &mut *ctx.reply;
    reply.array(n);
    l.range(s, n, false, |x| reply.bulk(x));
}

pub fn lindex(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Ok(l) = read_list(ctx, argv[1]) else {
        return;
    };
    let Some(l) = l else { return ctx.reply.null() };
    let len = l.len() as i64;
    let Some(i) = crate::util::parse_i64(argv[2]) else {
        return ctx.not_integer();
    };
    let i = if i < 0 { len + i } else { i };
    let v = if (0..len).contains(&i) { l.get(i as usize).map(|x| x.to_vec()) } else { None };
    match v {
        Some(v) => ctx.reply.bulk(&v),
        None => ctx.reply.null(),
    }
}

pub fn lset(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let fill = list_fill(ctx);
    let l = match write_list(ctx, argv[1]) {
        Err(()) => return,
        Ok(None) => return ctx.err("ERR no such key"),
        Ok(Some(l)) => l,
    };
    let len = l.len() as i64;
    let Some(i) = crate::util::parse_i64(argv[2]) else {
        return ctx.not_integer();
    };
    let i = if i < 0 { len + i } else { i };
    if !(0..len).contains(&i) {
        return ctx.err("ERR index out of range");
    }
    l.set(i as usize, argv[3], fill);
    let db = ctx.db();
    ctx.st.signal_modified_key(db, argv[1]);
    ctx.notify(notify::LIST, "lset", argv[1]);
    ctx.dirty += 1;
    ctx.reply.ok();
}

pub fn linsert(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let after = if eq_ic(argv[2], b"AFTER") {
        true
    } else if eq_ic(argv[2], b"BEFORE") {
        false
    } else {
        return ctx.syntax_error();
    };
    let fill = list_fill(ctx);
    let l = match write_list(ctx, argv[1]) {
        Err(()) => return,
        Ok(None) => return ctx.reply.int(0),
        Ok(Some(l)) => l,
    };
    if !l.insert(argv[3], argv[4], after, fill) {
        return ctx.reply.int(-1);
    }
    let n = l.len();
    let db = ctx.db();
    ctx.st.signal_modified_key(db, argv[1]);
    ctx.notify(notify::LIST, "linsert", argv[1]);
    ctx.dirty += 1;
    ctx.reply.int(n as i64);
}

pub fn lrem(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(count) = ctx.int_arg(argv[2]) else {
        return;
    };
    let l = match write_list(ctx, argv[1]) {
        Err(()) => return,
        Ok(None) => return ctx.reply.int(0),
        Ok(Some(l)) => l,
    };
    let removed = l.remove(argv[3], count.unsigned_abs().min(usize::MAX as u64) as usize, count < 0);
    if removed > 0 {
        after_remove(ctx, argv[1], "lrem");
        ctx.dirty += removed as u64;
    }
    ctx.reply.int(removed as i64);
}

pub fn ltrim(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(start) = ctx.int_arg(argv[2]) else {
        return;
    };
    let Some(end) = ctx.int_arg(argv[3]) else {
        return;
    };
    let l = match write_list(ctx, argv[1]) {
        Err(()) => return,
        Ok(None) => return ctx.reply.ok(),
        Ok(Some(l)) => l,
    };
    let len = l.len();
    let (ltrim, rtrim) = match norm_range(start, end, len) {
        None => (0, len),
        Some((s, n)) => (s, len - s - n),
    };
    // The tail first: deleting it leaves the head's indexes unchanged.
    l.delete_range(len - rtrim, rtrim);
    l.delete_range(0, ltrim);
    // Redis signals the key as modified even when nothing was trimmed.
    after_remove(ctx, argv[1], "ltrim");
    ctx.dirty += (ltrim + rtrim) as u64;
    ctx.reply.ok();
}

pub fn lpos(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let ele = argv[2];
    let (mut rank, mut count, mut maxlen) = (1i64, -1i64, 0i64);
    let mut j = 3;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        if eq_ic(argv[j], b"RANK") && more {
            j += 1;
            let Some(r) = ctx.int_arg(argv[j]) else {
                return;
            };
            if r == 0 {
                return ctx.err(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                );
            }
            rank = r;
        } else if eq_ic(argv[j], b"COUNT") && more {
            j += 1;
            let Some(c) = positive_arg(ctx, argv[j], "ERR COUNT can't be negative") else {
                return;
            };
            count = c;
        } else if eq_ic(argv[j], b"MAXLEN") && more {
            j += 1;
            let Some(m) = positive_arg(ctx, argv[j], "ERR MAXLEN can't be negative") else {
                return;
            };
            maxlen = m;
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    let rev = rank < 0;
    // Redis negates LONG_MIN into itself: every match then qualifies, and the COUNT test
    // overflows so it never stops early.
    let wrapped = rank == i64::MIN;
    let rank = if wrapped { 1 } else { rank.unsigned_abs() };
    let Ok(l) = read_list(ctx, argv[1]) else {
        return;
    };
    let Some(l) = l else {
        return if count != -1 { ctx.reply.array(0) } else { ctx.reply.null() };
    };
    let len = l.len() as u64;
    let mut found: Vec<u64> = Vec::new();
    let (mut index, mut matches) = (0u64, 0u64);
    l.for_each(rev, |x| {
        if maxlen != 0 && index >= maxlen as u64 {
            return false;
        }
        if x == ele {
            matches += 1;
            if matches >= rank {
                found.push(if rev { len - index - 1 } else { index });
                if count == -1 || (!wrapped && count != 0 && matches - rank + 1 >= count as u64) {
                    return false;
                }
            }
        }
        index += 1;
        true
    });
    if count != -1 {
        ctx.reply.array(found.len());
        for i in found {
            ctx.reply.int(i as i64);
        }
    } else {
        match found.first() {
            Some(&i) => ctx.reply.int(i as i64),
            None => ctx.reply.null(),
        }
    }
}

/// LMOVE's body once the source is known to be a non-empty list (Redis's
/// lmoveGenericCommand after the lookup): checks the destination, moves, replies.
fn lmove_known(ctx: &mut Ctx<'_>, src: &[u8], dst: &[u8], from: End, to: End) {
    let db = ctx.db();
    if let Some(e) = ctx.st.write(db, dst, ctx.fx)
        && !matches!(e.val, Value::List(_))
    {
        return ctx.reply.error(WRONGTYPE);
    }
    let fill = list_fill(ctx);
    let v = match ctx.st.dbs[db].keys.get_mut(src).map(|e| &mut e.val) {
        Some(Value::List(l)) => l.pop(from).expect("non-empty"),
        _ => unreachable!("checked by the caller"),
    };
    list_mut(ctx, dst).push(to, &v, fill);
    ctx.st.signal_modified_key(db, dst);
    ctx.notify(notify::LIST, push_event(to), dst);
    after_remove(ctx, src, pop_event(from));
    ctx.dirty += 1;
    ctx.reply.bulk(&v);
    // RPOPLPUSH/BLMOVE/BRPOPLPUSH replicate as the LMOVE they performed.
    let side = |e: End| -> &'static [u8] { if e == End::Head { b"LEFT" } else { b"RIGHT" } };
    ctx.propagate(&[b"LMOVE", src, dst, side(from), side(to)]);
}

fn lmove_generic(ctx: &mut Ctx<'_>, src: &[u8], dst: &[u8], from: End, to: End) {
    match write_list(ctx, src) {
        Err(()) => {}
        Ok(None) => ctx.reply.null(),
        Ok(Some(_)) => lmove_known(ctx, src, dst, from, to),
    }
}

fn where_args(ctx: &mut Ctx<'_>, a: &[u8], b: &[u8]) -> Option<(End, End)> {
    match (end_of(a), end_of(b)) {
        (Some(x), Some(y)) => Some((x, y)),
        _ => {
            ctx.syntax_error();
            None
        }
    }
}

pub fn lmove(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some((from, to)) = where_args(ctx, argv[3], argv[4]) else {
        return;
    };
    lmove_generic(ctx, argv[1], argv[2], from, to)
}

pub fn rpoplpush(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    lmove_generic(ctx, argv[1], argv[2], End::Tail, End::Head)
}

/// Pops up to `count` from the list at `key` and replies `[key, [elements]]`; propagates
/// `LPOP|RPOP key n`.
fn mpop_from(ctx: &mut Ctx<'_>, key: &[u8], end: End, count: usize) {
    let db = ctx.db();
    let Some(Value::List(l)) = ctx.st.dbs[db].keys.get_mut(key).map(|e| &mut e.val) else { unreachable!("checked by the caller") };
    let n = count.min(l.len());
    let mut items = Vec::with_capacity(n);
    for _ in 0..n {
        items.push(l.pop(end).expect("n <= len"));
    }
    ctx.reply.array(2);
    ctx.reply.bulk(key);
    ctx.reply.array(n);
    for v in &items {
        ctx.reply.bulk(v);
    }
    after_remove(ctx, key, pop_event(end));
    ctx.dirty += n as u64;
    let ns = crate::util::int_bytes(n as i64);
    ctx.propagate(&[pop_name(end), key, &ns]);
}

/// Parses `numkeys key… LEFT|RIGHT [COUNT n]` from `argv[at]`: (keys, end, count).
fn parse_mpop<'a>(ctx: &mut Ctx<'_>, argv: &[&'a [u8]], at: usize) -> Option<(Vec<&'a [u8]>, End, usize)> {
    let numkeys = match crate::util::parse_i64(argv[at]) {
        Some(n) if n >= 1 => n as u64,
        _ => {
            ctx.err("ERR numkeys should be greater than 0");
            return None;
        }
    };
    let where_idx = (at as u64).saturating_add(numkeys).saturating_add(1);
    if where_idx >= argv.len() as u64 {
        ctx.syntax_error();
        return None;
    }
    let where_idx = where_idx as usize;
    let Some(end) = end_of(argv[where_idx]) else {
        ctx.syntax_error();
        return None;
    };
    let mut count: i64 = -1;
    let mut j = where_idx + 1;
    while j < argv.len() {
        if count == -1 && eq_ic(argv[j], b"COUNT") && j + 1 < argv.len() {
            j += 1;
            match crate::util::parse_i64(argv[j]) {
                Some(c) if c >= 1 => count = c,
                _ => {
                    ctx.err("ERR count should be greater than 0");
                    return None;
                }
            }
        } else {
            ctx.syntax_error();
            return None;
        }
        j += 1;
    }
    let count = if count == -1 { 1 } else { count.min(usize::MAX as i64) as usize };
    Some((argv[at + 1..where_idx].to_vec(), end, count))
}

pub fn lmpop(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some((keys, end, count)) = parse_mpop(ctx, argv, 1) else {
        return;
    };
    for k in keys {
        match write_list(ctx, k) {
            Err(()) => return,
            Ok(None) => continue,
            Ok(Some(_)) => return mpop_from(ctx, k, end, count),
        }
    }
    ctx.reply.null_array();
}

/// BLPOP/BRPOP/BLMPOP (Redis's blockingPopGenericCommand); `count` None for BLPOP/BRPOP.
fn blocking_pop(ctx: &mut Ctx<'_>, keys: &[&[u8]], end: End, timeout: &[u8], count: Option<usize>) {
    // Serving a waiter: a key that is not a non-empty list keeps the client waiting.
    let Some((candidates, deadline)) = crate::server::blocked::pop_candidates(ctx, keys, timeout, is_nonempty_list) else { return };
    for k in candidates {
        match write_list(ctx, k) {
            Err(()) => return,
            Ok(None) => continue,
            Ok(Some(l)) => {
                if let Some(c) = count {
                    return mpop_from(ctx, k, end, c);
                }
                let v = l.pop(end).expect("lists are never empty");
                ctx.reply.array(2);
                ctx.reply.bulk(k);
                ctx.reply.bulk(&v);
                after_remove(ctx, k, pop_event(end));
                ctx.dirty += 1;
                return ctx.propagate(&[pop_name(end), k]);
            }
        }
    }
    if !ctx.may_block() {
        return ctx.reply.null_array();
    }
    ctx.block(keys, deadline);
}

pub fn blpop(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    blocking_pop(ctx, &argv[1..argv.len() - 1], End::Head, argv[argv.len() - 1], None)
}

pub fn brpop(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    blocking_pop(ctx, &argv[1..argv.len() - 1], End::Tail, argv[argv.len() - 1], None)
}

pub fn blmpop(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some((keys, end, count)) = parse_mpop(ctx, argv, 2) else {
        return;
    };
    blocking_pop(ctx, &keys, end, argv[1], Some(count))
}

/// BLMOVE/BRPOPLPUSH (Redis's blmoveGenericCommand).
fn blmove_generic(ctx: &mut Ctx<'_>, src: &[u8], dst: &[u8], from: End, to: End, timeout: &[u8]) {
    let serving = ctx.ready_key().is_some();
    let deadline = if serving {
        0
    } else {
        match crate::server::blocked::parse_timeout_secs(ctx, timeout) {
            Some(d) => d,
            None => return,
        }
    };
    if serving && !is_nonempty_list(ctx, src) {
        return ctx.block(&[src], deadline);
    }
    let exists = match write_list(ctx, src) {
        Err(()) => return,
        Ok(l) => l.is_some(),
    };
    if exists {
        lmove_known(ctx, src, dst, from, to)
    } else if !ctx.may_block() {
        ctx.reply.null()
    } else {
        ctx.block(&[src], deadline)
    }
}

pub fn blmove(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some((from, to)) = where_args(ctx, argv[3], argv[4]) else {
        return;
    };
    blmove_generic(ctx, argv[1], argv[2], from, to, argv[5])
}

pub fn brpoplpush(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    blmove_generic(ctx, argv[1], argv[2], End::Tail, End::Head, argv[3])
}
