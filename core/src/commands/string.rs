//! String commands (Redis's t_string.c). Relative expiries are replicated as absolute
//! ones (SET … PXAT, PEXPIREAT) and INCRBYFLOAT as a SET of its result, so effects replay
//! identically on any node at any time.

use alloc::string::ToString;
use alloc::vec::Vec;

use crate::keyspace::object::{NO_EXPIRE, Value};
use crate::server::ctx::Ctx;
use crate::server::notify;
use crate::util::{eq_ic, int_bytes, parse_f64, parse_float_strict, parse_i64};

pub const WRONGTYPE: &[u8] = b"WRONGTYPE Operation against a key holding the wrong kind of value";

/// Replies with a string value, or WRONGTYPE. Returns false on WRONGTYPE.
fn reply_string(reply: &mut crate::protocol::reply::Reply, v: &Value) -> bool {
    match v {
        Value::Int(i) => reply.bulk_int(*i),
        Value::Str(s) => reply.bulk(s),
        Value::Raw(s) => reply.bulk(s),
        _ => {
            reply.error(WRONGTYPE);
            return false;
        }
    }
    true
}

pub fn get(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    match ctx.st.read(db, argv[1], ctx.fx) {
        None => ctx.reply.null(),
        Some(e) => {
            reply_string(ctx.reply, &e.val);
        }
    }
}

/// GET's part of SET … GET / GETSET: replies the old value; false if it was not a string.
fn get_for_set(ctx: &mut Ctx<'_>, key: &[u8]) -> bool {
    let db = ctx.db();
    match ctx.st.read(db, key, ctx.fx) {
        None => {
            ctx.reply.null();
            true
        }
        Some(e) => reply_string(ctx.reply, &e.val),
    }
}

#[derive(Default)]
struct SetOpts<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    /// (value argument, unit, absolute?)
    expire: Option<(&'a [u8], bool, bool)>,
}

#[derive(PartialEq, Eq)]
enum CommandType {
    Set,
    Get,
}

/// Redis's `parseExtendedStringArgumentsOrReply`.
fn parse_set_opts<'a>(ctx: &mut Ctx<'_>, args: &[&'a [u8]], ty: CommandType) -> Option<SetOpts<'a>> {
    let mut o = SetOpts::default();
    let mut j = 0;
    while j < args.len() {
        let a = args[j];
        let next = args.get(j + 1).copied();
        let has_expire = o.expire.is_some();
        if eq_ic(a, b"NX") && !o.xx && ty == CommandType::Set {
            o.nx = true;
        } else if eq_ic(a, b"XX") && !o.nx && ty == CommandType::Set {
            o.xx = true;
        } else if eq_ic(a, b"GET") && ty == CommandType::Set {
            o.get = true;
        } else if eq_ic(a, b"KEEPTTL") && !o.persist && !has_expire && ty == CommandType::Set {
            o.keepttl = true;
        } else if eq_ic(a, b"PERSIST") && ty == CommandType::Get && !has_expire && !o.keepttl {
            o.persist = true;
        } else if (eq_ic(a, b"EX") || eq_ic(a, b"PX") || eq_ic(a, b"EXAT") || eq_ic(a, b"PXAT")) && !o.keepttl && !o.persist && next.is_some() {
            let secs = eq_ic(a, b"EX") || eq_ic(a, b"EXAT");
            let abs = eq_ic(a, b"EXAT") || eq_ic(a, b"PXAT");
            // Repeating the same option is allowed (the last wins); mixing kinds is not.
            if o.expire.is_some_and(|(_, s, ab)| (s, ab) != (secs, abs)) {
                ctx.syntax_error();
                return None;
            }
            o.expire = Some((next.unwrap(), secs, abs));
            j += 1;
        } else {
            ctx.syntax_error();
            return None;
        }
        j += 1;
    }
    Some(o)
}

/// Redis's `getExpireMillisecondsOrReply`: the absolute expiry in ms, or an error reply.
fn expire_ms(ctx: &mut Ctx<'_>, arg: &[u8], secs: bool, abs: bool, cmd: &str) -> Option<i64> {
    let v = ctx.int_arg(arg)?;
    let bad = |ctx: &mut Ctx<'_>| ctx.err(&alloc::format!("ERR invalid expire time in '{}' command", cmd));
    if v <= 0 || (secs && v > i64::MAX / 1000) {
        bad(ctx);
        return None;
    }
    let mut ms = if secs { v * 1000 } else { v };
    if !abs {
        match ms.checked_add(ctx.st.now_ms) {
            Some(x) => ms = x,
            None => {
                bad(ctx);
                return None;
            }
        }
    }
    if ms <= 0 {
        bad(ctx);
        return None;
    }
    Some(ms)
}

/// The shared core of SET/SETNX/SETEX/PSETEX.
fn set_generic(ctx: &mut Ctx<'_>, key: &[u8], val: &[u8], o: &SetOpts<'_>, cmd: &str, ok_reply: Option<i64>) {
    let when = match o.expire {
        Some((arg, secs, abs)) => match expire_ms(ctx, arg, secs, abs, cmd) {
            Some(w) => Some(w),
            None => return,
        },
        None => None,
    };
    if o.get && !get_for_set(ctx, key) {
        return;
    }
    let db = ctx.db();
    // One hash-table walk on the hot path: overwrite in place when the key exists.
    // Under LFU the lookup below counted the access; the overwrite keeps that count.
    let (lru, no_touch) = (ctx.st.new_access(), ctx.st.no_touch || ctx.st.lfu());
    let mut had_ttl = false;
    let found = match ctx.st.write(db, key, ctx.fx) {
        Some(e) if !o.nx => {
            e.val = Value::from_bytes(val);
            if !no_touch {
                e.lru = lru;
            }
            if !o.keepttl && e.expire_at != NO_EXPIRE {
                e.expire_at = NO_EXPIRE;
                had_ttl = true;
            }
            Some(true)
        }
        Some(_) => None,
        None if o.xx => None,
        None => Some(false),
    };
    let Some(found) = found else {
        if !o.get {
            match ok_reply {
                Some(_) => ctx.reply.int(0),
                None => ctx.reply.null(),
            }
        }
        return;
    };
    if found {
        if had_ttl {
            ctx.st.dbs[db].expires.remove(key);
        }
        ctx.st.signal_modified_key(db, key);
    } else {
        ctx.st.notify_new(db, key);
        ctx.st.dbs[db].add(key, Value::from_bytes(val), lru);
        ctx.st.signal_modified_key(db, key);
    }
    ctx.dirty += 1;
    ctx.notify(notify::STRING, "set", key);
    if let Some(w) = when {
        ctx.st.dbs[db].set_expire(key, w);
        let ms = int_bytes(w);
        ctx.propagate(&[b"SET", key, val, b"PXAT", &ms]);
        ctx.notify(notify::GENERIC, "expire", key);
    }
    if !o.get {
        match ok_reply {
            Some(n) => ctx.reply.int(n),
            None => ctx.reply.ok(),
        }
    }
}

pub fn set(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(o) = parse_set_opts(ctx, &argv[3..], CommandType::Set) else { return };
    set_generic(ctx, argv[1], argv[2], &o, "set", None);
}

pub fn setnx(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let o = SetOpts { nx: true, ..Default::default() };
    set_generic(ctx, argv[1], argv[2], &o, "setnx", Some(1));
}

pub fn setex(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let o = SetOpts { expire: Some((argv[2], true, false)), ..Default::default() };
    set_generic(ctx, argv[1], argv[3], &o, "setex", None);
}

pub fn psetex(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let o = SetOpts { expire: Some((argv[2], false, false)), ..Default::default() };
    set_generic(ctx, argv[1], argv[3], &o, "psetex", None);
}

pub fn getset(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if !get_for_set(ctx, argv[1]) {
        return;
    }
    let db = ctx.db();
    ctx.st.set_value(db, argv[1], Value::from_bytes(argv[2]), false);
    ctx.dirty += 1;
    ctx.propagate(&[b"SET", argv[1], argv[2]]);
    ctx.notify(notify::STRING, "set", argv[1]);
}

pub fn getdel(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if !get_for_set(ctx, argv[1]) {
        return;
    }
    let db = ctx.db();
    if ctx.st.delete(db, argv[1]).is_some() {
        ctx.dirty += 1;
        ctx.propagate(&[b"DEL", argv[1]]);
        ctx.notify(notify::GENERIC, "del", argv[1]);
    }
}

pub fn getex(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(o) = parse_set_opts(ctx, &argv[2..], CommandType::Get) else { return };
    let db = ctx.db();
    let key = argv[1];
    match ctx.st.read(db, key, ctx.fx) {
        None => return ctx.reply.null(),
        Some(e) => {
            if !matches!(e.val, Value::Int(_) | Value::Str(_) | Value::Raw(_)) {
                return ctx.reply.error(WRONGTYPE);
            }
        }
    }
    let when = match o.expire {
        Some((arg, secs, abs)) => match expire_ms(ctx, arg, secs, abs, "getex") {
            Some(w) => Some(w),
            None => return,
        },
        None => None,
    };
    let e = ctx.st.dbs[db].keys.get(key).unwrap();
    reply_string(ctx.reply, &e.val);
    if let Some(w) = when {
        // Only the absolute forms can name a past instant (EX/PX must be positive).
        let absolute = o.expire.is_some_and(|(_, _, abs)| abs);
        crate::commands::keys::set_expire_or_delete(ctx, db, key, w, absolute);
    } else if o.persist && ctx.st.dbs[db].expire_of(key).is_some_and(|x| x != NO_EXPIRE) {
        ctx.st.dbs[db].set_expire(key, NO_EXPIRE);
        ctx.st.signal_modified_key(db, key);
        ctx.dirty += 1;
        ctx.propagate(&[b"PERSIST", key]);
        ctx.notify(notify::GENERIC, "persist", key);
    }
}

pub fn mget(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    ctx.reply.array(argv.len() - 1);
    for key in &argv[1..] {
        match ctx.st.read(db, key, ctx.fx) {
            Some(e) => match &e.val {
                Value::Int(i) => ctx.reply.bulk_int(*i),
                Value::Str(s) => ctx.reply.bulk(s),
                Value::Raw(s) => ctx.reply.bulk(s),
                _ => ctx.reply.null(),
            },
            None => ctx.reply.null(),
        }
    }
}

pub fn mset(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len().is_multiple_of(2) {
        return ctx.err("ERR wrong number of arguments for 'mset' command");
    }
    let db = ctx.db();
    for pair in argv[1..].chunks(2) {
        ctx.st.set_value(db, pair[0], Value::from_bytes(pair[1]), false);
        ctx.notify(notify::STRING, "set", pair[0]);
    }
    ctx.dirty += 1;
    ctx.reply.ok();
}

pub fn msetnx(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len().is_multiple_of(2) {
        return ctx.err("ERR wrong number of arguments for 'msetnx' command");
    }
    let db = ctx.db();
    for pair in argv[1..].chunks(2) {
        if ctx.st.exists(db, pair[0], ctx.fx) {
            return ctx.reply.int(0);
        }
    }
    for pair in argv[1..].chunks(2) {
        ctx.st.set_value(db, pair[0], Value::from_bytes(pair[1]), false);
        ctx.notify(notify::STRING, "set", pair[0]);
    }
    ctx.dirty += 1;
    ctx.reply.int(1);
}

/// Checks a string's new length against `proto-max-bulk-len` (and the engine's hard cap).
fn check_string_length(ctx: &mut Ctx<'_>, size: u64) -> bool {
    if size > ctx.st.config.proto_max_bulk_len {
        ctx.err("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        return false;
    }
    if !crate::server::evict::can_allocate(ctx, size) {
        ctx.err("OOM command not allowed when used memory > 'maxmemory'.");
        return false;
    }
    true
}

pub fn append(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    let (key, add) = (argv[1], argv[2]);
    let cur_len = match ctx.st.write(db, key, ctx.fx) {
        None => None,
        Some(e) => match e.val.string_len() {
            Some(l) => Some(l),
            None => return ctx.reply.error(WRONGTYPE),
        },
    };
    let new_len = match cur_len {
        None => {
            // A new key is stored like SET would store it (int/embstr), as Redis does.
            ctx.st.set_value(db, key, Value::from_bytes(add), false);
            add.len()
        }
        Some(l) => {
            if !check_string_length(ctx, (l + add.len()) as u64) {
                return;
            }
            let e = ctx.st.dbs[db].keys.get_mut(key).unwrap();
            let mut v = match core::mem::replace(&mut e.val, Value::Int(0)) {
                Value::Raw(v) => v,
                other => other.string_bytes().unwrap().into_owned(),
            };
            v.extend_from_slice(add);
            let n = v.len();
            e.val = Value::Raw(v);
            ctx.st.signal_modified_key(db, key);
            n
        }
    };
    ctx.dirty += 1;
    ctx.notify(notify::STRING, "append", key);
    ctx.reply.int(new_len as i64);
}

pub fn strlen(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    match ctx.st.read(db, argv[1], ctx.fx) {
        None => ctx.reply.int(0),
        Some(e) => match e.val.string_len() {
            Some(l) => ctx.reply.int(l as i64),
            None => ctx.reply.error(WRONGTYPE),
        },
    }
}

fn incr_decr(ctx: &mut Ctx<'_>, key: &[u8], by: i64) {
    let db = ctx.db();
    // One lookup: the value is replaced through the entry the write lookup found.
    let existed = match ctx.st.write(db, key, ctx.fx) {
        None => None,
        Some(e) => {
            let cur = match &e.val {
                Value::Int(i) => *i,
                Value::Str(s) => match parse_i64(s) {
                    Some(i) => i,
                    None => return ctx.not_integer(),
                },
                Value::Raw(s) => match parse_i64(s) {
                    Some(i) => i,
                    None => return ctx.not_integer(),
                },
                _ => return ctx.reply.error(WRONGTYPE),
            };
            let Some(new) = cur.checked_add(by) else { return ctx.err("ERR increment or decrement would overflow") };
            e.val = Value::Int(new);
            Some(new)
        }
    };
    let new = match existed {
        Some(new) => {
            ctx.st.signal_modified_key(db, key);
            new
        }
        // A missing key counts from 0: `by` itself, which cannot overflow.
        None => {
            ctx.st.set_value(db, key, Value::Int(by), false);
            by
        }
    };
    ctx.dirty += 1;
    ctx.notify(notify::STRING, "incrby", key);
    ctx.reply.int(new);
}

pub fn incr(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    incr_decr(ctx, argv[1], 1)
}

pub fn decr(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    incr_decr(ctx, argv[1], -1)
}

pub fn incrby(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(by) = ctx.int_arg(argv[2]) else { return };
    incr_decr(ctx, argv[1], by)
}

pub fn decrby(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(by) = ctx.int_arg(argv[2]) else { return };
    if by == i64::MIN {
        return ctx.err("ERR decrement would overflow");
    }
    incr_decr(ctx, argv[1], -by)
}

/// An integral decimal ("123", "-4.000", "1e3", "2.5e1") as an exact integer, if it is one.
fn exact_integer(s: &[u8]) -> Option<i128> {
    let t = core::str::from_utf8(s).ok()?;
    let (neg, body) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let (mant, exp) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], body[i + 1..].parse::<i32>().ok()?),
        None => (body, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() || !int.bytes().chain(frac.bytes()).all(|c| c.is_ascii_digit()) {
        // Other spellings strtold accepts (hex floats): exact while f64 holds every integer.
        let f = parse_f64(body.as_bytes())?;
        if !(-9_007_199_254_740_992.0..=9_007_199_254_740_992.0).contains(&f) || f != (f as i64) as f64 {
            return None;
        }
        return Some(if neg { -(f as i128) } else { f as i128 });
    }
    // digits × 10^(exp − len(frac)), integral only.
    let digits = alloc::format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    let mut scale = exp - frac.len() as i32;
    let mut digits = digits.to_string();
    while scale < 0 {
        if !digits.ends_with('0') {
            return if digits.is_empty() { Some(0) } else { None };
        }
        digits.pop();
        scale += 1;
    }
    if digits.is_empty() {
        return Some(0);
    }
    if digits.len() + scale as usize > 36 {
        return None;
    }
    let mut v: i128 = digits.parse().ok()?;
    for _ in 0..scale {
        v *= 10;
    }
    Some(if neg { -v } else { v })
}

/// INCRBYFLOAT of two integral values, computed exactly. Redis's long double has a 64-bit
/// mantissa, so it prints exact sums whenever the sum fits in one; f64 alone would round
/// above 2^53.
pub fn exact_integer_sum(cur: &[u8], by: &[u8]) -> Option<Vec<u8>> {
    let sum = exact_integer(cur)?.checked_add(exact_integer(by)?)?;
    let m = sum.unsigned_abs();
    if m != 0 && (m >> m.trailing_zeros()) >= 1u128 << 64 {
        return None;
    }
    Some(alloc::format!("{}", sum).into_bytes())
}

pub fn incrbyfloat(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    let key = argv[1];
    let cur = match ctx.st.write(db, key, ctx.fx) {
        None => None,
        Some(e) => match &e.val {
            Value::Int(i) => Some(*i as f64),
            Value::Str(s) => match parse_float_strict(s) {
                Some(f) => Some(f),
                None => return ctx.not_float(),
            },
            Value::Raw(s) => match parse_float_strict(s) {
                Some(f) => Some(f),
                None => return ctx.not_float(),
            },
            _ => return ctx.reply.error(WRONGTYPE),
        },
    };
    let Some(by) = parse_float_strict(argv[2]) else { return ctx.not_float() };
    let new = cur.unwrap_or(0.0) + by;
    if new.is_nan() || new.is_infinite() {
        return ctx.err("ERR increment would produce NaN or Infinity");
    }
    let cur_text = match ctx.st.dbs[db].keys.get(key).map(|e| &e.val) {
        Some(v) => v.string_bytes().map(|c| c.into_owned()).unwrap_or_default(),
        None => b"0".to_vec(),
    };
    let s = exact_integer_sum(&cur_text, argv[2]).unwrap_or_else(|| crate::util::format_human_float(new));
    ctx.st.set_value(db, key, Value::Str(s.as_slice().into()), true);
    ctx.dirty += 1;
    ctx.notify(notify::STRING, "incrbyfloat", key);
    ctx.reply.bulk(&s);
    ctx.propagate(&[b"SET", key, &s, b"KEEPTTL"]);
}

pub fn getrange(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(mut start) = ctx.int_arg(argv[2]) else { return };
    let Some(mut end) = ctx.int_arg(argv[3]) else { return };
    let db = ctx.db();
    let Some(e) = ctx.st.read(db, argv[1], ctx.fx) else {
        return ctx.reply.bulk(b"");
    };
    let Some(s) = e.val.string_bytes() else {
        return ctx.reply.error(WRONGTYPE);
    };
    let len = s.len() as i64;
    if start < 0 && end < 0 && start > end {
        return ctx.reply.bulk(b"");
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return ctx.reply.bulk(b"");
    }
    ctx.reply.bulk(&s[start as usize..=end as usize]);
}

pub fn setrange(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(offset) = ctx.int_arg(argv[2]) else { return };
    if offset < 0 {
        return ctx.err("ERR offset is out of range");
    }
    let (key, val) = (argv[1], argv[3]);
    let db = ctx.db();
    let cur_len = match ctx.st.write(db, key, ctx.fx) {
        None => None,
        Some(e) => match e.val.string_len() {
            Some(l) => Some(l),
            None => return ctx.reply.error(WRONGTYPE),
        },
    };
    if val.is_empty() {
        return ctx.reply.int(cur_len.unwrap_or(0) as i64);
    }
    let need = offset as u64 + val.len() as u64;
    if !check_string_length(ctx, need) {
        return;
    }
    let offset = offset as usize;
    let mut v: Vec<u8> = match cur_len {
        None => Vec::new(),
        Some(_) => {
            let e = ctx.st.dbs[db].keys.get_mut(key).unwrap();
            match core::mem::replace(&mut e.val, Value::Int(0)) {
                Value::Raw(v) => v,
                other => other.string_bytes().unwrap().into_owned(),
            }
        }
    };
    if v.len() < offset + val.len() {
        v.resize(offset + val.len(), 0);
    }
    v[offset..offset + val.len()].copy_from_slice(val);
    let n = v.len();
    match cur_len {
        None => ctx.st.set_value(db, key, Value::Raw(v), false),
        Some(_) => {
            ctx.st.dbs[db].keys.get_mut(key).unwrap().val = Value::Raw(v);
            ctx.st.signal_modified_key(db, key);
        }
    }
    ctx.dirty += 1;
    ctx.notify(notify::STRING, "setrange", key);
    ctx.reply.int(n as i64);
}
