//! DUMP and RESTORE (and RESTORE-ASKING, RESTORE as ASKING had been sent): a key's value
//! as Redis's serialized payload (`rdb::object`), so keys move between Memoria and Redis.
//!
//! RESTORE is logged as what it did: the restored key as `RESTORE key <abs ms or 0>
//! payload REPLACE ABSTTL` (with its IDLETIME/FREQ option), which replays to the same
//! value and expiry at any later time and over a key already there; a restore whose TTL
//! had already passed as `DEL key` when it replaced a key, else as nothing.

use alloc::vec::Vec;

use crate::keyspace::object::NO_EXPIRE;
use crate::rdb;
use crate::server::ctx::Ctx;
use crate::server::notify;
use crate::util::{IntText, eq_ic};

pub fn dump(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    match ctx.st.read(db, argv[1], ctx.fx) {
        // Redis 7.0's payloads have no field expiries, and leaving them out would make a
        // RESTORE bring back fields meant to expire.
        Some(e) if matches!(&e.val, crate::keyspace::object::Value::Hash(h) if h.has_ttls()) => {
            ctx.err("ERR DUMP of a hash whose fields have TTLs is not supported (Redis 7.0's format has no field expiries)")
        }
        Some(e) => {
            let payload = rdb::object::dump(&e.val);
            ctx.reply.bulk(&payload);
        }
        None => ctx.reply.null(),
    }
}

/// What RESTORE's options after the payload asked for.
struct Options {
    replace: bool,
    absttl: bool,
    idletime: Option<i64>,
    freq: Option<i64>,
}

/// Redis 7.0's option parsing: IDLETIME and FREQ exclude each other, and a keyword that
/// lacks its value is a syntax error.
fn parse_options(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> Option<Options> {
    let mut o = Options { replace: false, absttl: false, idletime: None, freq: None };
    let mut j = 0;
    while j < args.len() {
        let more = j + 1 < args.len();
        if eq_ic(args[j], b"replace") {
            o.replace = true;
        } else if eq_ic(args[j], b"absttl") {
            o.absttl = true;
        } else if eq_ic(args[j], b"idletime") && more && o.freq.is_none() {
            let v = ctx.int_arg(args[j + 1])?;
            if v < 0 {
                ctx.err("ERR Invalid IDLETIME value, must be >= 0");
                return None;
            }
            o.idletime = Some(v);
            j += 1;
        } else if eq_ic(args[j], b"freq") && more && o.idletime.is_none() {
            let v = ctx.int_arg(args[j + 1])?;
            if !(0..=255).contains(&v) {
                ctx.err("ERR Invalid FREQ value, must be >= 0 and <= 255");
                return None;
            }
            o.freq = Some(v);
            j += 1;
        } else {
            ctx.syntax_error();
            return None;
        }
        j += 1;
    }
    Some(o)
}

fn limits(ctx: &Ctx<'_>) -> rdb::object::Limits {
    let c = &ctx.st.config;
    rdb::object::Limits {
        hash_entries: c.hash_max_listpack_entries,
        hash_value: c.hash_max_listpack_value,
        set_intset_entries: c.set_max_intset_entries,
        zset_entries: c.zset_max_listpack_entries,
        zset_value: c.zset_max_listpack_value,
        list_fill: c.list_max_listpack_size,
        seed: ctx.st.seed,
    }
}

/// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency],
/// checked in Redis 7.0's order: options, an existing key, the TTL, the footer, the value.
pub fn restore(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(o) = parse_options(ctx, &argv[4..]) else { return };
    let (db, key) = (ctx.db(), argv[1]);
    if !o.replace && ctx.st.write(db, key, ctx.fx).is_some() {
        return ctx.err("BUSYKEY Target key name already exists.");
    }
    let Some(ttl) = ctx.int_arg(argv[2]) else { return };
    if ttl < 0 {
        return ctx.err("ERR Invalid TTL value, must be >= 0");
    }
    let val = match rdb::object::restore(argv[3], &limits(ctx)) {
        Ok(v) => v,
        Err(rdb::Error::Footer) => return ctx.err("ERR DUMP payload version or checksum are wrong"),
        Err(rdb::Error::BadData(_)) => return ctx.err("ERR Bad data format"),
    };
    // REPLACE removes what is there, expired or not, as Redis's dbDelete does.
    let deleted = o.replace && ctx.st.delete(db, key).is_some();
    let now = ctx.st.now_ms;
    let expire_at = match ttl {
        0 => NO_EXPIRE,
        t if o.absttl => t,
        t => t.saturating_add(now),
    };
    // Already expired (a primary's call, as Redis's checkAlreadyExpired): no key.
    if expire_at != NO_EXPIRE && expire_at <= now && !ctx.st.replica_mode {
        if deleted {
            ctx.dirty += 1;
            ctx.propagate(&[b"DEL", key]);
            ctx.notify(notify::GENERIC, "del", key);
        } else {
            ctx.propagate_nothing();
        }
        return ctx.reply.ok();
    }
    let lfu = ctx.st.lfu();
    // Redis's objectSetLRUOrLFU: FREQ sets the count (LFU policies), IDLETIME dates the
    // last access back (the others); each is ignored under the other kind of policy.
    let lru = match (o.freq, o.idletime) {
        (Some(f), _) if lfu => crate::keyspace::lfu::with_counter(ctx.st.now_ms, f as u32),
        (_, Some(idle)) if !lfu => ctx.st.lru_clock().saturating_sub(u32::try_from(idle).unwrap_or(u32::MAX)),
        _ => ctx.lru(),
    };
    ctx.st.put_restored(db, key, val, expire_at, lru);
    ctx.dirty += 1;
    let at = IntText::new(if expire_at == NO_EXPIRE { 0 } else { expire_at });
    let mut fx: Vec<&[u8]> = alloc::vec![b"RESTORE", key, at.as_bytes(), argv[3], b"REPLACE", b"ABSTTL"];
    let opt = o.idletime.map(|v| (&b"IDLETIME"[..], v)).or(o.freq.map(|v| (&b"FREQ"[..], v)));
    let opt_text = opt.map(|(_, v)| IntText::new(v));
    if let (Some((name, _)), Some(t)) = (opt, opt_text.as_ref()) {
        fx.extend_from_slice(&[name, t.as_bytes()]);
    }
    ctx.propagate(&fx);
    ctx.reply.ok();
}
