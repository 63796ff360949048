//! Hashes (Redis's t_hash.c): a listpack-like vector of pairs while small (insertion order,
//! like Redis's listpack, so small-hash replies match Redis's order), a hash table above
//! `hash-max-listpack-entries`/`-value`. Conversion is one-way, as in Redis.

use crate::types::hash::*;
use alloc::vec::Vec;

use crate::commands::string::WRONGTYPE;
use crate::commands::{COUNT_RANGE_ERR, MAX_REPEATED_PICKS, bulk_reply_len, repeated_picks_size};
use crate::keyspace::object::Value;
use crate::server::ctx::Ctx;
use crate::server::notify;
use crate::util::parse_float_strict;
use crate::util::{eq_ic, parse_i64};

/// Looks up a hash for reading fields one by one: Ok(None) if missing, Err(()) after a
/// WRONGTYPE reply. The caller reads with `HashValue::get_live` (a replica's expired
/// fields are still there; a primary removed them in the lookup).
macro_rules! read_fields {
    ($ctx:expr, $key:expr) => {{
        let db = $ctx.db();
        match $ctx.st.read(db, $key, $ctx.fx) {
            None => Ok(None),
            Some(e) => match &e.val {
                Value::Hash(h) => Ok(Some(h)),
                _ => {
                    $ctx.reply.error(WRONGTYPE);
                    Err(())
                }
            },
        }
    }};
}

/// `read_fields!` for commands that read the whole hash (HGETALL, HSCAN, HRANDFIELD…): on
/// a replica with expired fields still there, a copy without them, kept in `$live` (an
/// `Option<HashValue>`).
macro_rules! read_hash {
    ($ctx:expr, $key:expr, $live:expr) => {{
        let (now, seed) = ($ctx.st.now_ms, $ctx.st.seed);
        match read_fields!($ctx, $key) {
            Ok(Some(h)) => match h.live_copy(now, seed) {
                None => Ok(Some(h)),
                Some(copy) => {
                    let h: &HashValue = $live.insert(copy);
                    Ok(Some(h).filter(|h| !h.is_empty()))
                }
            },
            other => other,
        }
    }};
}
pub(crate) use read_fields;

/// The hash at `key` for writing, created if missing; None after a WRONGTYPE reply.
pub(crate) fn hash_for_write<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> Option<&'c mut HashValue> {
    let db = ctx.db();
    let exists = match ctx.st.write(db, key, ctx.fx) {
        None => false,
        Some(e) => {
            if !matches!(e.val, Value::Hash(_)) {
                ctx.reply.error(WRONGTYPE);
                return None;
            }
            true
        }
    };
    if !exists {
        let lru = ctx.st.new_access();
        ctx.st.notify_new(db, key);
        ctx.st.dbs[db].add(key, Value::Hash(HashValue::new()), lru);
    }
    match &mut ctx.st.dbs[db].keys.get_mut(key).unwrap().val {
        Value::Hash(h) => Some(h),
        _ => unreachable!(),
    }
}

/// Finishes a write: converts an outgrown listpack, drops an emptied hash, and signals
/// WATCHers when something `changed`.
pub(crate) fn after_write(ctx: &mut Ctx<'_>, key: &[u8], changed: bool) {
    // Only the entry count is checked here: lengths are checked on what a command writes
    // (Redis keeps an existing listpack when hash-max-listpack-value is lowered).
    let (entries, value, seed) = (ctx.st.config.hash_max_listpack_entries, usize::MAX, ctx.st.seed);
    let db = ctx.db();
    if changed {
        ctx.st.signal_modified_key(db, key);
    }
    if let Some(e) = ctx.st.dbs[db].keys.get_mut(key)
        && let Value::Hash(h) = &mut e.val
    {
        h.maybe_convert(entries, value, seed);
        if h.is_empty() {
            ctx.st.dbs[db].remove(key);
        }
    }
}

/// After fields were removed and `after_write` ran: Redis's `del` event if the hash went
/// with its last field (it follows the command's own event).
pub(crate) fn notify_if_gone(ctx: &mut Ctx<'_>, key: &[u8]) {
    let db = ctx.db();
    if !ctx.st.dbs[db].keys.contains_key(key) {
        ctx.notify(notify::GENERIC, "del", key);
    }
}

fn hset_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], name: &str) -> Option<i64> {
    if argv.len() % 2 == 1 {
        ctx.err(&alloc::format!("ERR wrong number of arguments for '{}' command", name));
        return None;
    }
    let (max_value, seed) = (ctx.st.config.hash_max_listpack_value, ctx.st.seed);
    let h = hash_for_write(ctx, argv[1])?;
    // Like Redis, a long argument converts the hash before insertion, even if a later
    // pair overwrites that value.
    if argv[2..].iter().any(|a| a.len() > max_value) {
        h.to_table(seed);
    }
    let mut created = 0;
    for pair in argv[2..].chunks(2) {
        if h.set(pair[0], pair[1]) {
            created += 1;
        }
    }
    after_write(ctx, argv[1], true);
    ctx.dirty += 1;
    ctx.notify(notify::HASH, "hset", argv[1]);
    Some(created)
}

pub fn hset(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if let Some(n) = hset_generic(ctx, argv, "hset") {
        ctx.reply.int(n);
    }
}

pub fn hmset(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if hset_generic(ctx, argv, "hmset").is_some() {
        ctx.reply.ok();
    }
}

pub fn hsetnx(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let (max_value, seed) = (ctx.st.config.hash_max_listpack_value, ctx.st.seed);
    let Some(h) = hash_for_write(ctx, argv[1]) else { return };
    if h.get(argv[2]).is_some() {
        after_write(ctx, argv[1], false);
        return ctx.reply.int(0);
    }
    if argv[2].len() > max_value || argv[3].len() > max_value {
        h.to_table(seed);
    }
    h.set(argv[2], argv[3]);
    after_write(ctx, argv[1], true);
    ctx.dirty += 1;
    ctx.notify(notify::HASH, "hset", argv[1]);
    ctx.reply.int(1);
}

pub fn hget(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let now = ctx.st.now_ms;
    let Ok(h) = read_fields!(ctx, argv[1]) else { return };
    match h.and_then(|h| h.get_live(argv[2], now)) {
        Some(v) => ctx.reply.bulk(v),
        None => ctx.reply.null(),
    }
}

pub fn hmget(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let now = ctx.st.now_ms;
    let Ok(h) = read_fields!(ctx, argv[1]) else { return };
    ctx.reply.array(argv.len() - 2);
    for f in &argv[2..] {
        match h.and_then(|h| h.get_live(f, now)) {
            Some(v) => ctx.reply.bulk(v),
            None => ctx.reply.null(),
        }
    }
}

pub fn hdel(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    let deleted = match ctx.st.write(db, argv[1], ctx.fx) {
        None => 0,
        Some(e) => match &mut e.val {
            Value::Hash(h) => argv[2..].iter().filter(|f| h.remove(f)).count(),
            _ => return ctx.reply.error(WRONGTYPE),
        },
    };
    if deleted > 0 {
        after_write(ctx, argv[1], true);
        ctx.dirty += 1;
        ctx.notify(notify::HASH, "hdel", argv[1]);
        notify_if_gone(ctx, argv[1]);
    }
    ctx.reply.int(deleted as i64);
}

pub fn hlen(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let now = ctx.st.now_ms;
    let Ok(h) = read_fields!(ctx, argv[1]) else { return };
    let n = h.map_or(0, |h| h.len() - h.due_count(now));
    ctx.reply.int(n as i64);
}

pub fn hstrlen(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let now = ctx.st.now_ms;
    let Ok(h) = read_fields!(ctx, argv[1]) else { return };
    let n = h.and_then(|h| h.get_live(argv[2], now)).map_or(0, |v| v.len());
    ctx.reply.int(n as i64);
}

pub fn hexists(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let now = ctx.st.now_ms;
    let Ok(h) = read_fields!(ctx, argv[1]) else { return };
    let e = h.is_some_and(|h| h.get_live(argv[2], now).is_some());
    ctx.reply.int(e as i64);
}

pub fn hincrby(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(by) = ctx.int_arg(argv[3]) else { return };
    let (max_value, seed) = (ctx.st.config.hash_max_listpack_value, ctx.st.seed);
    let Some(h) = hash_for_write(ctx, argv[1]) else { return };
    let cur = match h.get(argv[2]) {
        None => 0,
        Some(v) => match parse_i64(v) {
            Some(i) => i,
            None => {
                after_write(ctx, argv[1], false);
                return ctx.err("ERR hash value is not an integer");
            }
        },
    };
    let Some(new) = cur.checked_add(by) else {
        after_write(ctx, argv[1], false);
        return ctx.err("ERR increment or decrement would overflow");
    };
    let text = crate::util::int_bytes(new);
    if argv[2].len() > max_value || text.len() > max_value {
        h.to_table(seed);
    }
    h.set_keep_ttl(argv[2], &text);
    after_write(ctx, argv[1], true);
    ctx.dirty += 1;
    ctx.notify(notify::HASH, "hincrby", argv[1]);
    ctx.reply.int(new);
}

pub fn hincrbyfloat(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(by) = parse_float_strict(argv[3]) else { return ctx.not_float() };
    if by.is_nan() || by.is_infinite() {
        return ctx.err("ERR value is NaN or Infinity");
    }
    let (max_value, seed) = (ctx.st.config.hash_max_listpack_value, ctx.st.seed);
    let Some(h) = hash_for_write(ctx, argv[1]) else { return };
    let cur = match h.get(argv[2]) {
        None => 0.0,
        Some(v) => match parse_float_strict(v) {
            Some(f) => f,
            None => {
                after_write(ctx, argv[1], false);
                return ctx.err("ERR hash value is not a float");
            }
        },
    };
    let new = cur + by;
    if new.is_nan() || new.is_infinite() {
        after_write(ctx, argv[1], false);
        return ctx.err("ERR increment would produce NaN or Infinity");
    }
    let exact = crate::commands::string::exact_integer_sum(h.get(argv[2]).unwrap_or(b"0"), argv[3]);
    let s = exact.unwrap_or_else(|| crate::util::format_human_float(new));
    if argv[2].len() > max_value || s.len() > max_value {
        h.to_table(seed);
    }
    h.set_keep_ttl(argv[2], &s);
    let has_ttl = h.ttl(argv[2]).is_some();
    after_write(ctx, argv[1], true);
    ctx.dirty += 1;
    ctx.notify(notify::HASH, "hincrbyfloat", argv[1]);
    ctx.reply.bulk(&s);
    // The effect is the value written (float formatting never differs on replay); a
    // field with an expiry keeps it, as HSET would not.
    if has_ttl {
        ctx.propagate(&[b"HSETEX", argv[1], b"KEEPTTL", b"FIELDS", b"1", argv[2], &s]);
    } else {
        ctx.propagate(&[b"HSET", argv[1], argv[2], &s]);
    }
}

fn reply_all(ctx: &mut Ctx<'_>, key: &[u8], keys: bool, vals: bool) {
    let mut live = None;
    let Ok(h) = read_hash!(ctx, key, live) else { return };
    let Some(h) = h else {
        if keys && vals {
            ctx.reply.map(0)
        } else {
            ctx.reply.array(0)
        }
        return;
    };
    let pairs = h.pairs();
    if keys && vals {
        ctx.reply.map(pairs.len());
    } else {
        ctx.reply.array(pairs.len());
    }
    for (f, v) in pairs {
        if keys {
            ctx.reply.bulk(f);
        }
        if vals {
            ctx.reply.bulk(v);
        }
    }
}

pub fn hkeys(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    reply_all(ctx, argv[1], true, false)
}
pub fn hvals(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    reply_all(ctx, argv[1], false, true)
}
pub fn hgetall(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    reply_all(ctx, argv[1], true, true)
}

pub fn hrandfield(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() == 2 {
        let mut live = None;
        match read_hash!(ctx, argv[1], live) {
            Err(()) => return,
            Ok(None) => return ctx.reply.null(),
            Ok(Some(_)) => {}
        }
        let db = ctx.db();
        let st = &mut *ctx.st;
        let h = match live.as_mut() {
            Some(h) => h,
            None => match st.dbs[db].keys.get_mut(argv[1]).map(|e| &mut e.val) {
                Some(Value::Hash(h)) => h,
                _ => return ctx.reply.null(),
            },
        };
        h.before_sampling();
        let Some((f, _)) = h.random_pair(&mut st.rng) else { return ctx.reply.null() };
        return ctx.reply.bulk(f);
    }
    let Some(count) = ctx.int_arg(argv[2]) else { return };
    // Redis accepts -LONG_MAX..LONG_MAX, then reads WITHVALUES.
    if count == i64::MIN {
        return ctx.err(COUNT_RANGE_ERR);
    }
    let with_values = match argv.len() {
        3 => false,
        4 if eq_ic(argv[3], b"WITHVALUES") => true,
        _ => return ctx.syntax_error(),
    };
    // ... and refuses counts whose doubled reply length would overflow (CVE-2023-22458),
    // on any key.
    if with_values && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
        return ctx.err("ERR value is out of range");
    }
    // A negative count repeats picks: a huge one is refused rather than building a reply
    // that cannot fit in memory (and so is one whose fields add up to too much, below).
    if count < -(MAX_REPEATED_PICKS as i64) {
        return ctx.err(COUNT_RANGE_ERR);
    }
    let mut live = None;
    match read_hash!(ctx, argv[1], live) {
        Err(()) => return,
        Ok(None) => return ctx.reply.array(0),
        Ok(Some(_)) => {}
    }
    let db = ctx.db();
    let h = match live.as_mut() {
        Some(h) => h,
        None => match ctx.st.dbs[db].keys.get_mut(argv[1]).map(|e| &mut e.val) {
            Some(Value::Hash(h)) => h,
            _ => return ctx.reply.array(0),
        },
    };
    h.before_sampling();
    let h = &*h;
    let rng = &mut ctx.st.rng;
    let resp3 = ctx.reply.resp3;
    let pair_arrays = with_values && resp3;
    let write = |reply: &mut crate::protocol::reply::Reply, (f, v): (&[u8], &[u8])| {
        if pair_arrays {
            reply.array(2);
        }
        reply.bulk(f);
        if with_values {
            reply.bulk(v);
        }
    };
    let header = |reply: &mut crate::protocol::reply::Reply, n: usize| reply.array(if with_values && !resp3 { n * 2 } else { n });
    if count < 0 {
        // Picks with repetitions, written as they are made: first made on a copy of the
        // generator to size the reply.
        let picks = count.unsigned_abs();
        let mut sizing = rng.clone();
        let reply_size = repeated_picks_size(picks, || {
            let Some((f, v)) = h.random_pair(&mut sizing) else { return 0 };
            let mut n = bulk_reply_len(f.len());
            if with_values {
                n += bulk_reply_len(v.len()) + if resp3 { 4 } else { 0 };
            }
            n
        });
        let Some(reply_size) = reply_size else {
            return ctx.err(COUNT_RANGE_ERR);
        };
        ctx.reply.buf.reserve(reply_size);
        header(ctx.reply, picks as usize);
        for _ in 0..picks {
            let Some(p) = h.random_pair(rng) else { break };
            write(ctx.reply, p);
        }
        return;
    }
    // count is not negative here: compared as u64, never cut to a (32-bit) usize.
    let len = h.len();
    let picks: Vec<(&[u8], &[u8])> = if count == 0 {
        Vec::new()
    } else if count as u64 >= len as u64 {
        h.pairs()
    } else if (count as u64) * 3 <= len as u64 {
        crate::commands::distinct_picks(count as usize, || h.random_pair(rng), |&(f, _)| f)
    } else {
        // Most of them (count > a third of the size): partial Fisher-Yates.
        let count = count as usize;
        let mut all = h.pairs();
        for i in 0..count {
            let j = i + rng.below((all.len() - i) as u64) as usize;
            all.swap(i, j);
        }
        all.truncate(count);
        all
    };
    header(ctx.reply, picks.len());
    for p in picks {
        write(ctx.reply, p);
    }
}

pub fn hscan(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(cursor) = crate::commands::keys::parse_cursor(ctx, argv[2]) else { return };
    // Redis looks the key up before it reads the options.
    let mut live = None;
    match read_hash!(ctx, argv[1], live) {
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
    let h = match live.as_ref() {
        Some(h) => h,
        None => match ctx.st.dbs[db].keys.get(argv[1]).map(|e| &e.val) {
            Some(Value::Hash(h)) => h,
            _ => return,
        },
    };
    let mut items: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let next = match &h.enc {
        HashEnc::Listpack(v) => {
            items.extend(v.iter().map(|(a, b)| (a.to_vec(), b.to_vec())));
            0
        }
        HashEnc::Table(d) => {
            let mut c = cursor;
            let mut budget = opts.count * 10;
            loop {
                c = d.scan(c, |f, v| items.push((f.to_vec(), v.to_vec())));
                budget = budget.saturating_sub(1);
                if c == 0 || budget == 0 || items.len() >= opts.count {
                    break;
                }
            }
            c
        }
    };
    if let Some(p) = opts.pattern {
        items.retain(|(f, _)| crate::util::glob_match(p, f, false));
    }
    ctx.reply.array(2);
    ctx.reply.bulk(alloc::format!("{}", next).as_bytes());
    ctx.reply.array(items.len() * 2);
    for (f, v) in items {
        ctx.reply.bulk(&f);
        ctx.reply.bulk(&v);
    }
}
