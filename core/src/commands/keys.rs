//! Generic key commands (Redis's db.c / expire.c command side): DEL, EXISTS, TYPE, the
//! EXPIRE family, KEYS/SCAN/RANDOMKEY, RENAME, COPY, TOUCH, OBJECT.

use alloc::format;
use alloc::vec::Vec;

use crate::keyspace::object::{NO_EXPIRE, Value};
use crate::server::ctx::Ctx;
use crate::server::notify;
use crate::util::{IntText, eq_ic, glob_match};

pub fn del(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    let mut n = 0;
    for key in &argv[1..] {
        ctx.st.expire_if_needed(db, key, ctx.fx);
        if ctx.st.delete(db, key).is_some() {
            n += 1;
            ctx.notify(notify::GENERIC, "del", key);
        }
    }
    ctx.dirty += n;
    ctx.reply.int(n as i64);
}

pub fn exists(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    let n = argv[1..].iter().filter(|k| ctx.st.exists(db, k, ctx.fx)).count();
    ctx.reply.int(n as i64);
}

pub fn touch(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    let n = argv[1..].iter().filter(|k| ctx.st.read(db, k, ctx.fx).is_some()).count();
    ctx.reply.int(n as i64);
}

pub fn type_cmd(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    let name = match ctx.st.exists(db, argv[1], ctx.fx) {
        false => "none",
        true => ctx.st.dbs[db].keys.get(argv[1]).unwrap().val.kind().name(),
    };
    ctx.reply.simple(name.as_bytes());
}

const EXPIRE_NX: u8 = 1;
const EXPIRE_XX: u8 = 2;
const EXPIRE_GT: u8 = 4;
const EXPIRE_LT: u8 = 8;

/// Redis's `expireGenericCommand`; `basetime` is 0 for the *AT forms.
fn expire_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], basetime: i64, seconds: bool, name: &str) {
    let mut flag = 0u8;
    for a in &argv[3..] {
        flag |= if eq_ic(a, b"NX") {
            EXPIRE_NX
        } else if eq_ic(a, b"XX") {
            EXPIRE_XX
        } else if eq_ic(a, b"GT") {
            EXPIRE_GT
        } else if eq_ic(a, b"LT") {
            EXPIRE_LT
        } else {
            return ctx.err(&format!("ERR Unsupported option {}", alloc::string::String::from_utf8_lossy(a)));
        };
    }
    if flag & EXPIRE_NX != 0 && flag & (EXPIRE_XX | EXPIRE_GT | EXPIRE_LT) != 0 {
        return ctx.err("ERR NX and XX, GT or LT options at the same time are not compatible");
    }
    if flag & EXPIRE_GT != 0 && flag & EXPIRE_LT != 0 {
        return ctx.err("ERR GT and LT options at the same time are not compatible");
    }
    let Some(mut when) = ctx.int_arg(argv[2]) else { return };
    let bad = |ctx: &mut Ctx<'_>| ctx.err(&format!("ERR invalid expire time in '{name}' command"));
    if seconds {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return bad(ctx);
        }
        when *= 1000;
    }
    if when > i64::MAX - basetime {
        return bad(ctx);
    }
    when += basetime;
    let key = argv[1];
    let db = ctx.db();
    let Some(e) = ctx.st.write(db, key, ctx.fx) else { return ctx.reply.int(0) };
    let cur = e.expire_at;
    if flag != 0 {
        let skip = (flag & EXPIRE_NX != 0 && cur != NO_EXPIRE)
            || (flag & EXPIRE_XX != 0 && cur == NO_EXPIRE)
            || (flag & EXPIRE_GT != 0 && (cur == NO_EXPIRE || when <= cur))
            || (flag & EXPIRE_LT != 0 && cur != NO_EXPIRE && when >= cur);
        if skip {
            return ctx.reply.int(0);
        }
    }
    set_expire_or_delete(ctx, db, key, when, true);
    ctx.reply.int(1);
}

/// Gives an existing key an absolute expiry, replicated as PEXPIREAT. When `when` has
/// already passed (and `may_delete`), a primary deletes the key instead and replicates DEL.
pub fn set_expire_or_delete(ctx: &mut Ctx<'_>, db: usize, key: &[u8], when: i64, may_delete: bool) {
    if may_delete && when <= ctx.st.now_ms && !ctx.st.replica_mode {
        ctx.st.delete(db, key);
        ctx.dirty += 1;
        ctx.propagate(&[b"DEL", key]);
        ctx.st.notify(notify::GENERIC, "del", key, db);
    } else {
        ctx.st.dbs[db].set_expire(key, when);
        ctx.st.signal_modified_key(db, key);
        ctx.dirty += 1;
        ctx.propagate(&[b"PEXPIREAT", key, IntText::new(when).as_bytes()]);
        ctx.st.notify(notify::GENERIC, "expire", key, db);
    }
}

pub fn expire(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let now = ctx.st.now_ms;
    expire_generic(ctx, argv, now, true, "expire")
}
pub fn pexpire(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let now = ctx.st.now_ms;
    expire_generic(ctx, argv, now, false, "pexpire")
}
pub fn expireat(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    expire_generic(ctx, argv, 0, true, "expireat")
}
pub fn pexpireat(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    expire_generic(ctx, argv, 0, false, "pexpireat")
}

/// TTL/PTTL/EXPIRETIME/PEXPIRETIME: -2 missing, -1 no expiry.
fn ttl_generic(ctx: &mut Ctx<'_>, key: &[u8], ms: bool, absolute: bool) {
    let db = ctx.db();
    if !ctx.st.exists(db, key, ctx.fx) {
        return ctx.reply.int(-2);
    }
    let at = ctx.st.dbs[db].expire_of(key).unwrap_or(NO_EXPIRE);
    if at == NO_EXPIRE {
        return ctx.reply.int(-1);
    }
    let v = if absolute { at } else { (at - ctx.st.now_ms).max(0) };
    ctx.reply.int(if ms { v } else { (v + 500) / 1000 });
}

pub fn ttl(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    ttl_generic(ctx, argv[1], false, false)
}
pub fn pttl(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    ttl_generic(ctx, argv[1], true, false)
}
pub fn expiretime(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    ttl_generic(ctx, argv[1], false, true)
}
pub fn pexpiretime(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    ttl_generic(ctx, argv[1], true, true)
}

pub fn persist(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    let Some(e) = ctx.st.write(db, argv[1], ctx.fx) else { return ctx.reply.int(0) };
    if e.expire_at == NO_EXPIRE {
        return ctx.reply.int(0);
    }
    ctx.st.dbs[db].set_expire(argv[1], NO_EXPIRE);
    ctx.st.signal_modified_key(db, argv[1]);
    ctx.dirty += 1;
    ctx.notify(notify::GENERIC, "persist", argv[1]);
    ctx.reply.int(1);
}

fn live(e: &crate::keyspace::object::Entry, now: i64) -> bool {
    e.expire_at == NO_EXPIRE || e.expire_at > now
}

pub fn keys(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    let pat = argv[1];
    let all = pat == b"*";
    let now = ctx.st.now_ms;
    let found: Vec<&[u8]> = ctx.st.dbs[db].keys.iter().filter(|(k, e)| live(e, now) && (all || glob_match(pat, k, false))).map(|(k, _)| k).collect();
    ctx.reply.array(found.len());
    for k in found {
        ctx.reply.bulk(k);
    }
}

/// Parses a SCAN cursor like Redis (`strtoul`, base 10, whole string; a leading sign is
/// accepted and '-' wraps, as strtoul does).
pub fn parse_cursor(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<u64> {
    let (neg, digits) = match a.first() {
        Some(b'-') => (true, &a[1..]),
        Some(b'+') => (false, &a[1..]),
        _ => (false, a),
    };
    let ok = !digits.is_empty() && digits.iter().all(|c| c.is_ascii_digit());
    match core::str::from_utf8(digits).ok().filter(|_| ok).and_then(|s| s.parse::<u64>().ok()) {
        Some(c) => Some(if neg { c.wrapping_neg() } else { c }),
        None => {
            ctx.err("ERR invalid cursor");
            None
        }
    }
}

pub struct ScanOpts<'a> {
    pub count: usize,
    pub pattern: Option<&'a [u8]>,
    pub type_name: Option<&'a [u8]>,
}

/// SCAN-family options: COUNT n (>= 1), MATCH pattern, TYPE name (keyspace SCAN only).
pub fn parse_scan_opts<'a>(ctx: &mut Ctx<'_>, args: &[&'a [u8]], allow_type: bool) -> Option<ScanOpts<'a>> {
    let mut o = ScanOpts { count: 10, pattern: None, type_name: None };
    let mut i = 0;
    while i < args.len() {
        let more = i + 1 < args.len();
        if eq_ic(args[i], b"COUNT") && more {
            let n = ctx.int_arg(args[i + 1])?;
            if n < 1 {
                ctx.syntax_error();
                return None;
            }
            o.count = n.min(1 << 30) as usize;
        } else if eq_ic(args[i], b"MATCH") && more {
            let p = args[i + 1];
            o.pattern = if p == b"*" { None } else { Some(p) };
        } else if eq_ic(args[i], b"TYPE") && allow_type && more {
            o.type_name = Some(args[i + 1]);
        } else {
            ctx.syntax_error();
            return None;
        }
        i += 2;
    }
    Some(o)
}

pub fn scan(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(cursor) = parse_cursor(ctx, argv[1]) else { return };
    let Some(o) = parse_scan_opts(ctx, &argv[2..], true) else { return };
    let db = ctx.db();
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut c = cursor;
    let mut budget = o.count * 10;
    loop {
        c = ctx.st.dbs[db].keys.scan(c, |k, _| keys.push(k.to_vec()));
        budget = budget.saturating_sub(1);
        if c == 0 || budget == 0 || keys.len() >= o.count {
            break;
        }
    }
    keys.retain(|k| {
        if let Some(p) = o.pattern
            && !glob_match(p, k, false)
        {
            return false;
        }
        if ctx.st.expire_if_needed(db, k, ctx.fx) {
            return false;
        }
        if let Some(t) = o.type_name {
            let kind = ctx.st.dbs[db].keys.get(k).map(|e| e.val.kind().name());
            if !kind.is_some_and(|n| eq_ic(n.as_bytes(), t)) {
                return false;
            }
        }
        true
    });
    ctx.reply.array(2);
    ctx.reply.bulk(format!("{}", c).as_bytes());
    ctx.reply.array(keys.len());
    for k in keys {
        ctx.reply.bulk(&k);
    }
}

pub fn randomkey(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let db = ctx.db();
    // Bounded retries past expired keys, like Redis's dbRandomKey.
    for _ in 0..100 {
        ctx.st.dbs[db].keys.before_sampling();
        let Some((k, _)) = ctx.st.dbs[db].keys.fair_random(&mut ctx.st.rng) else {
            return ctx.reply.null();
        };
        let k = k.to_vec();
        if !ctx.st.expire_if_needed(db, &k, ctx.fx) {
            return ctx.reply.bulk(&k);
        }
    }
    ctx.reply.null();
}

fn rename_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], nx: bool) {
    let (src, dst) = (argv[1], argv[2]);
    let db = ctx.db();
    if ctx.st.write(db, src, ctx.fx).is_none() {
        return ctx.err("ERR no such key");
    }
    if src == dst {
        return if nx { ctx.reply.int(0) } else { ctx.reply.ok() };
    }
    if ctx.st.write(db, dst, ctx.fx).is_some() {
        if nx {
            return ctx.reply.int(0);
        }
        ctx.st.delete(db, dst);
    }
    let e = ctx.st.delete(db, src).unwrap();
    let lru = ctx.lru();
    ctx.st.notify_new(db, dst);
    ctx.st.dbs[db].add(dst, e.val, lru);
    if e.expire_at != NO_EXPIRE {
        ctx.st.dbs[db].set_expire(dst, e.expire_at);
    }
    ctx.st.signal_modified_key(db, dst);
    ctx.dirty += 1;
    ctx.notify(notify::GENERIC, "rename_from", src);
    ctx.notify(notify::GENERIC, "rename_to", dst);
    if nx { ctx.reply.int(1) } else { ctx.reply.ok() }
}

pub fn rename(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    rename_generic(ctx, argv, false)
}
pub fn renamenx(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    rename_generic(ctx, argv, true)
}

pub fn copy(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let (src, dst) = (argv[1], argv[2]);
    let src_db = ctx.db();
    let mut dst_db = src_db;
    let mut replace = false;
    let mut j = 3;
    while j < argv.len() {
        if eq_ic(argv[j], b"REPLACE") {
            replace = true;
        } else if eq_ic(argv[j], b"DB") && j + 1 < argv.len() {
            let Some(n) = crate::commands::db::db_index(ctx, argv[j + 1]) else { return };
            dst_db = n;
            j += 1;
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    if src_db == dst_db && src == dst {
        return ctx.err("ERR source and destination objects are the same");
    }
    if ctx.st.read(src_db, src, ctx.fx).is_none() {
        return ctx.reply.int(0);
    }
    if ctx.st.write(dst_db, dst, ctx.fx).is_some() {
        if !replace {
            return ctx.reply.int(0);
        }
        ctx.st.delete(dst_db, dst);
    }
    let seed = ctx.st.seed;
    let e = ctx.st.dbs[src_db].keys.get(src).unwrap();
    let (val, at) = (e.val.duplicate(seed), e.expire_at);
    let lru = ctx.lru();
    ctx.st.notify_new(dst_db, dst);
    ctx.st.dbs[dst_db].add(dst, val, lru);
    if at != NO_EXPIRE {
        ctx.st.dbs[dst_db].set_expire(dst, at);
    }
    ctx.st.signal_modified_key(dst_db, dst);
    ctx.dirty += 1;
    ctx.st.notify(notify::GENERIC, "copy_to", dst, dst_db);
    ctx.reply.int(1);
}

/// OBJECT subcommands read without touching the LRU clock.
fn object_entry<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> Option<&'c crate::keyspace::object::Entry> {
    let db = ctx.db();
    if ctx.st.expire_if_needed(db, key, ctx.fx) {
        return None;
    }
    ctx.st.dbs[db].keys.get(key)
}

pub fn object_encoding(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    match object_entry(ctx, argv[2]).map(|e| e.val.encoding()) {
        Some(enc) => ctx.reply.bulk(enc.as_bytes()),
        None => ctx.reply.null(),
    }
}

pub fn object_refcount(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    // Redis shares the integers 0..9999 and reports them with INT_MAX references.
    match object_entry(ctx, argv[2]).map(|e| matches!(e.val, Value::Int(i) if (0..10000).contains(&i))) {
        Some(true) => ctx.reply.int(i32::MAX as i64),
        Some(false) => ctx.reply.int(1),
        None => ctx.reply.null(),
    }
}

pub fn object_idletime(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let now = ctx.st.lru_clock();
    let lfu = ctx.st.lfu();
    let Some(e) = object_entry(ctx, argv[2]) else { return ctx.reply.null() };
    let idle = now.saturating_sub(e.lru) as i64;
    if lfu {
        return ctx.err("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
    }
    ctx.reply.int(idle);
}

pub fn object_freq(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let lfu = ctx.st.lfu();
    let Some(field) = object_entry(ctx, argv[2]).map(|e| e.lru) else {
        return ctx.reply.null();
    };
    if !lfu {
        return ctx.err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.");
    }
    let n = ctx.st.lfu_count(field);
    ctx.reply.int(n as i64);
}

pub fn object_help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Prints this help.",
    ]);
}
