//! Hash-field expiry commands (Redis 7.4 / 8.0): HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT,
//! HTTL, HPTTL, HEXPIRETIME, HPEXPIRETIME, HPERSIST, HGETDEL, HGETEX and HSETEX, with
//! Redis's replies and error texts.
//!
//! Effects carry absolute times: a TTL set is logged as `HPEXPIREAT key ms FIELDS …`
//! (HSETEX as `HSETEX key PXAT ms FIELDS …`), a field a past time removed as `HDEL`,
//! HGETEX PERSIST as `HPERSIST`. Applying effects never removes a field for a past time
//! (the primary's HDEL carries every removal), so a replay later gives the same hash.

use alloc::vec::Vec;

use crate::commands::hash::{after_write, hash_for_write, notify_if_gone, read_fields};
use crate::commands::string::WRONGTYPE;
use crate::keyspace::object::Value;
use crate::server::ctx::Ctx;
use crate::server::notify;
use crate::types::field_ttl::MAX_ABS_TIME_MS;
use crate::types::hash::HashValue;
use crate::util::{IntText, eq_ic, parse_i64};

/// HEXPIRE's per-field answers.
const NO_FIELD: i64 = -2;
const NOT_MET: i64 = 0;
const SET: i64 = 1;
const DELETED: i64 = 2;

/// Reads `FIELDS numfields field…` where argv[at] should be `FIELDS`; the fields run to
/// the end. `count_err` is the command's text for a bad count.
fn fields<'a>(ctx: &mut Ctx<'_>, argv: &'a [&'a [u8]], at: usize, count_err: &str) -> Option<&'a [&'a [u8]]> {
    if at + 1 >= argv.len() {
        ctx.err(&alloc::format!("ERR wrong number of arguments for '{}' command", name(argv)));
        return None;
    }
    if !eq_ic(argv[at], b"FIELDS") {
        ctx.err("ERR Mandatory argument FIELDS is missing or not at the right position");
        return None;
    }
    let n = match parse_i64(argv[at + 1]) {
        Some(n) if n >= 1 => n as u64,
        _ => {
            ctx.err(count_err);
            return None;
        }
    };
    let rest = &argv[at + 2..];
    if n != rest.len() as u64 {
        ctx.err("ERR The `numfields` parameter must match the number of arguments");
        return None;
    }
    Some(rest)
}

/// The command's name as Redis's errors print it.
fn name(argv: &[&[u8]]) -> alloc::string::String {
    alloc::string::String::from_utf8_lossy(argv[0]).to_lowercase()
}

/// An expiry argument as absolute unix ms (`base`: now for a relative time, 0 for an
/// absolute one), with Redis's bounds: not negative, at most 2^46 ms.
fn expire_time(ctx: &mut Ctx<'_>, argv: &[&[u8]], arg: &[u8], seconds: bool, base: i64) -> Option<i64> {
    let mut v = ctx.int_arg(arg)?;
    if v < 0 {
        ctx.err("ERR invalid expire time, must be >= 0");
        return None;
    }
    let out_of_range = |ctx: &mut Ctx<'_>| ctx.err(&alloc::format!("ERR invalid expire time in '{}' command", name(argv)));
    if seconds {
        if v > MAX_ABS_TIME_MS / 1000 {
            out_of_range(ctx);
            return None;
        }
        v *= 1000;
    }
    if v > MAX_ABS_TIME_MS - base {
        out_of_range(ctx);
        return None;
    }
    Some(v + base)
}

/// Condition of HEXPIRE and kin.
#[derive(Clone, Copy, PartialEq)]
enum Cond {
    Always,
    Nx,
    Xx,
    Gt,
    Lt,
}

/// Whether a field whose expiry is `prev` may get `at` under `cond` (no expiry counts
/// as infinite, as in Redis).
fn cond_met(cond: Cond, prev: Option<i64>, at: i64) -> bool {
    match (cond, prev) {
        (Cond::Always, _) => true,
        (Cond::Nx, p) => p.is_none(),
        (Cond::Xx, p) => p.is_some(),
        (Cond::Gt, None) => false,
        (Cond::Gt, Some(p)) => at > p,
        (Cond::Lt, None) => true,
        (Cond::Lt, Some(p)) => at < p,
    }
}

/// Whether a time `at` removes a field at once: it has passed, and this is not the replay
/// of a primary's effect (whose removals come as HDELs).
fn already_passed(ctx: &Ctx<'_>, at: i64) -> bool {
    at <= ctx.st.now_ms && !ctx.st.applying
}

/// The hash at `key` for a command that only changes existing fields: Ok(None) if absent.
fn existing_hash(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<bool, ()> {
    ctx.lookup_kind(key, crate::keyspace::object::Kind::Hash, true)
}

fn hash_mut<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> &'c mut HashValue {
    let db = ctx.db();
    match ctx.st.dbs[db].keys.get_mut(key).map(|e| &mut e.val) {
        Some(Value::Hash(h)) => h,
        _ => unreachable!("checked by existing_hash"),
    }
}

fn reply_all(ctx: &mut Ctx<'_>, n: usize, v: i64) {
    ctx.reply.array(n);
    for _ in 0..n {
        ctx.reply.int(v);
    }
}

/// The per-field answers, as an array of integers.
fn reply_ints(ctx: &mut Ctx<'_>, answers: &[i64]) {
    ctx.reply.array(answers.len());
    for &a in answers {
        ctx.reply.int(a);
    }
}

/// The fields' values, nil for absent ones.
fn reply_values(ctx: &mut Ctx<'_>, values: &[Option<Vec<u8>>]) {
    ctx.reply.array(values.len());
    for v in values {
        match v {
            Some(v) => ctx.reply.bulk(v),
            None => ctx.reply.null(),
        }
    }
}

/// The effect of fields removed from `key`: `HDEL key f…`.
fn propagate_hdel(ctx: &mut Ctx<'_>, key: &[u8], fs: &[&[u8]]) {
    let mut hdel: Vec<&[u8]> = alloc::vec![b"HDEL", key];
    hdel.extend_from_slice(fs);
    ctx.propagate(&hdel);
}

fn hexpire_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], seconds: bool, relative: bool) {
    let key = argv[1];
    let Ok(exists) = existing_hash(ctx, key) else { return };
    let base = if relative { ctx.st.now_ms } else { 0 };
    let Some(at) = expire_time(ctx, argv, argv[2], seconds, base) else { return };
    let cond = match argv[3] {
        a if eq_ic(a, b"NX") => Cond::Nx,
        a if eq_ic(a, b"XX") => Cond::Xx,
        a if eq_ic(a, b"GT") => Cond::Gt,
        a if eq_ic(a, b"LT") => Cond::Lt,
        _ => Cond::Always,
    };
    let at_fields = if cond == Cond::Always { 3 } else { 4 };
    let Some(fs) = fields(ctx, argv, at_fields, "ERR Parameter `numFields` should be greater than 0") else { return };
    if !exists {
        return reply_all(ctx, fs.len(), NO_FIELD);
    }
    let passed = already_passed(ctx, at);
    let db = ctx.db();
    let h = hash_mut(ctx, key);
    let mut answers = Vec::with_capacity(fs.len());
    let (mut updated, mut deleted) = (Vec::new(), Vec::new());
    for &f in fs {
        let answer = if h.get(f).is_none() {
            NO_FIELD
        } else if !cond_met(cond, h.ttl(f), at) {
            NOT_MET
        } else if passed {
            h.remove(f);
            deleted.push(f);
            DELETED
        } else {
            h.set_ttl(f, at);
            updated.push(f);
            SET
        };
        answers.push(answer);
    }
    reply_ints(ctx, &answers);
    if !updated.is_empty() {
        ctx.st.dbs[db].note_field_ttls(key);
    }
    if updated.is_empty() && deleted.is_empty() {
        return ctx.propagate_nothing();
    }
    ctx.dirty += (updated.len() + deleted.len()) as u64;
    after_write(ctx, key, true);
    ctx.notify(notify::HASH, if deleted.is_empty() { "hexpire" } else { "hdel" }, key);
    ctx.propagate_nothing();
    if !deleted.is_empty() {
        propagate_hdel(ctx, key, &deleted);
    }
    if !updated.is_empty() {
        propagate_expire_at(ctx, key, at, &updated);
    }
    notify_if_gone(ctx, key);
}

/// The effect of a TTL set on `fs`: `HPEXPIREAT key ms FIELDS n f…`.
fn propagate_expire_at(ctx: &mut Ctx<'_>, key: &[u8], at: i64, fs: &[&[u8]]) {
    let (at, n) = (IntText::new(at), IntText::new(fs.len() as i64));
    let mut fx: Vec<&[u8]> = alloc::vec![b"HPEXPIREAT", key, at.as_bytes(), b"FIELDS", n.as_bytes()];
    fx.extend_from_slice(fs);
    ctx.propagate(&fx);
}

pub fn hexpire(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    hexpire_generic(ctx, argv, true, true)
}
pub fn hpexpire(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    hexpire_generic(ctx, argv, false, true)
}
pub fn hexpireat(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    hexpire_generic(ctx, argv, true, false)
}
pub fn hpexpireat(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    hexpire_generic(ctx, argv, false, false)
}

/// HTTL and kin: per field -2 (absent), -1 (no expiry), else the time left (`relative`)
/// or the expiry, in seconds (rounded up, as Redis does) or ms.
fn httl_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], seconds: bool, relative: bool) {
    let now = ctx.st.now_ms;
    let Ok(h) = read_fields!(ctx, argv[1]) else { return };
    let answers: Option<Vec<i64>> = h.map(|h| {
        argv[4..]
            .iter()
            .map(|f| match (h.get_live(f, now), h.ttl(f)) {
                (None, _) => NO_FIELD,
                (Some(_), None) => -1,
                (Some(_), Some(at)) => {
                    let left = if relative { at - now } else { at };
                    if seconds { (left + 999).div_euclid(1000) } else { left }
                }
            })
            .collect()
    });
    let Some(fs) = fields(ctx, argv, 2, "ERR Number of fields must be a positive integer") else { return };
    match answers {
        None => reply_all(ctx, fs.len(), NO_FIELD),
        Some(a) => reply_ints(ctx, &a),
    }
}

pub fn httl(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    httl_generic(ctx, argv, true, true)
}
pub fn hpttl(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    httl_generic(ctx, argv, false, true)
}
pub fn hexpiretime(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    httl_generic(ctx, argv, true, false)
}
pub fn hpexpiretime(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    httl_generic(ctx, argv, false, false)
}

/// HPERSIST key FIELDS n f…: per field -2 (absent), -1 (no expiry), 1 (removed).
pub fn hpersist(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let key = argv[1];
    let Ok(exists) = existing_hash(ctx, key) else { return };
    let Some(fs) = fields(ctx, argv, 2, "ERR Number of fields must be a positive integer") else { return };
    if !exists {
        return reply_all(ctx, fs.len(), NO_FIELD);
    }
    let h = hash_mut(ctx, key);
    let answers: Vec<i64> = fs
        .iter()
        .map(|f| match h.get(f).is_some() {
            false => NO_FIELD,
            true if h.persist(f) => 1,
            true => -1,
        })
        .collect();
    reply_ints(ctx, &answers);
    if answers.contains(&1) {
        let db = ctx.db();
        ctx.notify(notify::HASH, "hpersist", key);
        ctx.st.signal_modified_key(db, key);
        ctx.dirty += 1;
    }
}

/// HGETDEL key FIELDS n f…: the values (nil for absent fields), then the fields go.
pub fn hgetdel(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let key = argv[1];
    let Ok(exists) = existing_hash(ctx, key) else { return };
    let Some(fs) = fields(ctx, argv, 2, "ERR Number of fields must be a positive integer") else { return };
    if !exists {
        return reply_values(ctx, &alloc::vec![None; fs.len()]);
    }
    let h = hash_mut(ctx, key);
    let mut deleted: Vec<&[u8]> = Vec::new();
    let mut values = Vec::with_capacity(fs.len());
    for &f in fs {
        let v = h.get(f).map(<[u8]>::to_vec);
        if v.is_some() {
            h.remove(f);
            deleted.push(f);
        }
        values.push(v);
    }
    reply_values(ctx, &values);
    if deleted.is_empty() {
        return ctx.propagate_nothing();
    }
    ctx.dirty += deleted.len() as u64;
    after_write(ctx, key, true);
    ctx.notify(notify::HASH, "hdel", key);
    propagate_hdel(ctx, key, &deleted);
    notify_if_gone(ctx, key);
}

/// What HGETEX and HSETEX do to expiries.
#[derive(Clone, Copy, PartialEq)]
enum TtlOp {
    /// Leave them (HGETEX without an option); for HSETEX, drop them (HSET's rule).
    None,
    At(i64),
    Persist,
    KeepTtl,
}

/// HGETEX key [EX s | PX ms | EXAT s | PXAT ms | PERSIST] FIELDS n f…
pub fn hgetex(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let key = argv[1];
    let Ok(exists) = existing_hash(ctx, key) else { return };
    let now = ctx.st.now_ms;
    let (op, at_fields) = match argv[2] {
        a if eq_ic(a, b"PERSIST") => (TtlOp::Persist, 3),
        a if [&b"EX"[..], b"PX", b"EXAT", b"PXAT"].iter().any(|o| eq_ic(a, o)) => {
            let seconds = eq_ic(a, b"EX") || eq_ic(a, b"EXAT");
            let base = if eq_ic(a, b"EX") || eq_ic(a, b"PX") { now } else { 0 };
            let Some(at) = expire_time(ctx, argv, argv[3], seconds, base) else { return };
            (TtlOp::At(at), 4)
        }
        _ => (TtlOp::None, 2),
    };
    let Some(fs) = fields(ctx, argv, at_fields, "ERR Number of fields must be a positive integer") else { return };
    if !exists {
        return reply_values(ctx, &alloc::vec![None; fs.len()]);
    }
    let passed = matches!(op, TtlOp::At(at) if already_passed(ctx, at));
    let db = ctx.db();
    let h = hash_mut(ctx, key);
    let (mut updated, mut deleted): (Vec<&[u8]>, Vec<&[u8]>) = (Vec::new(), Vec::new());
    let mut values = Vec::with_capacity(fs.len());
    for &f in fs {
        let v = h.get(f).map(<[u8]>::to_vec);
        if v.is_some() {
            match op {
                TtlOp::Persist if h.persist(f) => updated.push(f),
                TtlOp::At(_) if passed => {
                    h.remove(f);
                    deleted.push(f);
                }
                TtlOp::At(at) => {
                    h.set_ttl(f, at);
                    updated.push(f);
                }
                _ => {}
            }
        }
        values.push(v);
    }
    reply_values(ctx, &values);
    ctx.propagate_nothing();
    if updated.is_empty() && deleted.is_empty() {
        return;
    }
    ctx.dirty += (updated.len() + deleted.len()) as u64;
    after_write(ctx, key, true);
    if !deleted.is_empty() {
        ctx.notify(notify::HASH, "hdel", key);
        propagate_hdel(ctx, key, &deleted);
    }
    match op {
        TtlOp::Persist => {
            ctx.notify(notify::HASH, "hpersist", key);
            let n = IntText::new(updated.len() as i64);
            let mut fx: Vec<&[u8]> = alloc::vec![b"HPERSIST", key, b"FIELDS", n.as_bytes()];
            fx.extend_from_slice(&updated);
            ctx.propagate(&fx);
        }
        TtlOp::At(at) if !updated.is_empty() => {
            ctx.st.dbs[db].note_field_ttls(key);
            ctx.notify(notify::HASH, "hexpire", key);
            propagate_expire_at(ctx, key, at, &updated);
        }
        _ => {}
    }
    notify_if_gone(ctx, key);
}

/// HSETEX key [FNX | FXX] [EX s | PX ms | EXAT s | PXAT ms | KEEPTTL] FIELDS n f v …:
/// 1 when the fields were set, 0 when FNX/FXX said no.
pub fn hsetex(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let now = ctx.st.now_ms;
    let wrong_args = |ctx: &mut Ctx<'_>| ctx.err("ERR wrong number of arguments for 'hsetex' command");
    let (mut fnx, mut fxx, mut op) = (false, false, TtlOp::None);
    let mut i = 2;
    let pairs = loop {
        let Some(&a) = argv.get(i) else {
            return ctx.err("ERR Mandatory argument FIELDS is missing or not at the right position");
        };
        if eq_ic(a, b"FIELDS") {
            if i + 3 >= argv.len() {
                return wrong_args(ctx);
            }
            let n = match parse_i64(argv[i + 1]) {
                Some(n) if (1..=i32::MAX as i64).contains(&n) => n as usize,
                _ => return ctx.err("ERR invalid number of fields"),
            };
            let rest = &argv[i + 2..];
            if !rest.len().is_multiple_of(2) || n != rest.len() / 2 {
                return wrong_args(ctx);
            }
            break rest;
        }
        let time_unit =
            [(&b"EX"[..], true, true), (b"PX", false, true), (b"EXAT", true, false), (b"PXAT", false, false)].into_iter().find(|(o, _, _)| eq_ic(a, o));
        if time_unit.is_some() || eq_ic(a, b"KEEPTTL") {
            if op != TtlOp::None {
                return ctx.err("ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified");
            }
            op = TtlOp::KeepTtl;
            if let Some((_, seconds, relative)) = time_unit {
                if i + 1 >= argv.len() {
                    return ctx.err("ERR missing expire time");
                }
                i += 1;
                let Some(at) = expire_time(ctx, argv, argv[i], seconds, if relative { now } else { 0 }) else { return };
                op = TtlOp::At(at);
            }
        } else if eq_ic(a, b"FNX") || eq_ic(a, b"FXX") {
            if fnx || fxx {
                return ctx.err("ERR Only one of FXX or FNX arguments can be specified");
            }
            fnx = eq_ic(a, b"FNX");
            fxx = !fnx;
        } else {
            return ctx.err(&alloc::format!("ERR unknown argument: {}", alloc::string::String::from_utf8_lossy(a)));
        }
        i += 1;
    };
    let key = argv[1];
    let Ok(exists) = existing_hash(ctx, key) else { return };
    if !exists && fxx {
        ctx.propagate_nothing();
        return ctx.reply.int(0);
    }
    if exists && (fnx || fxx) {
        let h = hash_mut(ctx, key);
        let found = pairs.chunks(2).filter(|p| h.get(p[0]).is_some()).count();
        if (fnx && found > 0) || (fxx && found < pairs.len() / 2) {
            ctx.propagate_nothing();
            return ctx.reply.int(0);
        }
    }
    let (max_value, seed) = (ctx.st.config.hash_max_listpack_value, ctx.st.seed);
    let passed = matches!(op, TtlOp::At(at) if already_passed(ctx, at));
    let Some(h) = hash_for_write(ctx, key) else { return };
    if pairs.iter().any(|a| a.len() > max_value) {
        h.to_table(seed);
    }
    let mut deleted: Vec<&[u8]> = Vec::new();
    for p in pairs.chunks(2) {
        match op {
            TtlOp::None => {
                h.set(p[0], p[1]);
            }
            TtlOp::At(_) if passed => {
                h.set(p[0], p[1]);
                h.remove(p[0]);
                deleted.push(p[0]);
            }
            TtlOp::At(at) => {
                h.set(p[0], p[1]);
                h.set_ttl(p[0], at);
            }
            TtlOp::KeepTtl | TtlOp::Persist => {
                h.set_keep_ttl(p[0], p[1]);
            }
        }
    }
    let db = ctx.db();
    if matches!(op, TtlOp::At(_)) && !passed {
        ctx.st.dbs[db].note_field_ttls(key);
    }
    after_write(ctx, key, true);
    ctx.dirty += (pairs.len() / 2) as u64;
    ctx.reply.int(1);
    ctx.notify(notify::HASH, "hset", key);
    match op {
        TtlOp::At(_) if passed => {
            ctx.notify(notify::HASH, "hdel", key);
            propagate_hdel(ctx, key, &deleted);
            notify_if_gone(ctx, key);
        }
        TtlOp::At(at) => {
            ctx.notify(notify::HASH, "hexpire", key);
            let (at, n) = (IntText::new(at), IntText::new((pairs.len() / 2) as i64));
            let mut fx: Vec<&[u8]> = alloc::vec![b"HSETEX", key, b"PXAT", at.as_bytes(), b"FIELDS", n.as_bytes()];
            fx.extend_from_slice(pairs);
            ctx.propagate(&fx);
        }
        _ => {
            // Set as asked (FNX/FXX held): the same command replays to the same hash.
        }
    }
}
