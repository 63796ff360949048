//! HyperLogLog (a port of Redis 7.0's hyperloglog.c): PFADD, PFCOUNT, PFMERGE. The value
//! is a plain string with Redis's exact layout, so GET returns the same bytes as Redis
//! and an HLL copied from Redis (or to it) keeps working:
//!
//!   "HYLL" | encoding u8 (0 dense, 1 sparse) | 3 unused bytes | cached cardinality u64 LE
//!   (its top bit set = stale) | registers
//!
//! 16384 registers of 6 bits: dense packs them into 12288 bytes; sparse run-length encodes
//! them with the ZERO (00xxxxxx), XZERO (01xxxxxx yyyyyyyy) and VAL (1vvvvvxx) opcodes
//! and turns dense once a value exceeds 32 or the string would exceed
//! `hll-sparse-max-bytes`. Elements are hashed with MurmurHash64A (seed 0xadc83b19); the
//! cardinality uses Ertl's estimator as Redis 7.0 does.
//!
//! PFCOUNT of one key stores the cardinality in the header (Redis does the same and
//! replicates it): here the effect is that PFCOUNT itself, which recomputes the same
//! value from the same registers on any node.

use crate::types::hll::*;
use alloc::vec;
use alloc::vec::Vec;

use crate::commands::string::WRONGTYPE;
use crate::keyspace::object::Value;
use crate::server::ctx::Ctx;
use crate::server::notify;

/// Redis's `isHLLObjectOrReply` on an existing value: a string (not an integer) with the
/// magic, a known encoding, and the exact size when dense.
fn is_hll(v: &Value) -> Result<bool, ()> {
    let s: &[u8] = match v {
        Value::Str(s) => s,
        Value::Raw(s) => s,
        Value::Int(_) => return Ok(false),
        _ => return Err(()),
    };
    Ok(s.len() >= HDR && &s[..4] == b"HYLL" && s[4] <= SPARSE && (s[4] != DENSE || s.len() == DENSE_SIZE))
}

/// Checks the value at `key` for an HLL command: Ok(true) valid, Ok(false) missing,
/// Err(()) after the error reply. Looks the key up for reading or writing.
fn check_key(ctx: &mut Ctx<'_>, key: &[u8], write: bool) -> Result<bool, ()> {
    let db = ctx.db();
    let e = if write { ctx.st.write(db, key, ctx.fx).map(|e| &*e) } else { ctx.st.read(db, key, ctx.fx) };
    let Some(e) = e else { return Ok(false) };
    match is_hll(&e.val) {
        Ok(true) => Ok(true),
        Ok(false) => {
            ctx.reply.error(NOT_HLL);
            Err(())
        }
        Err(()) => {
            ctx.reply.error(WRONGTYPE);
            Err(())
        }
    }
}

/// The HLL at `key` as an owned raw string (Redis's dbUnshareStringValue).
fn raw_mut<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> &'c mut Vec<u8> {
    let db = ctx.db();
    let e = ctx.st.dbs[db].keys.get_mut(key).expect("checked by the caller");
    if let Value::Str(s) = &e.val {
        e.val = Value::Raw(s.to_vec());
    }
    match &mut e.val {
        Value::Raw(v) => v,
        _ => unreachable!("an HLL is a string"),
    }
}

fn hll_bytes<'s>(st: &'s crate::server::state::State, db: usize, key: &[u8]) -> Option<&'s [u8]> {
    match st.dbs[db].keys.get(key).map(|e| &e.val) {
        Some(Value::Str(s)) => Some(s),
        Some(Value::Raw(s)) => Some(s),
        _ => None,
    }
}

fn sparse_max_bytes(ctx: &Ctx<'_>) -> usize {
    ctx.st.config.hll_sparse_max_bytes
}

pub fn pfadd(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let key = argv[1];
    let Ok(exists) = check_key(ctx, key, true) else { return };
    let db = ctx.db();
    let mut updated = 0u64;
    if !exists {
        let lru = ctx.lru();
        ctx.st.notify_new(db, key);
        ctx.st.dbs[db].add(key, Value::Raw(create()), lru);
        updated += 1;
    }
    let max_bytes = sparse_max_bytes(ctx);
    let s = raw_mut(ctx, key);
    for ele in &argv[2..] {
        match add(s, ele, max_bytes) {
            Ok(true) => updated += 1,
            Ok(false) => {}
            Err(InvalidHll) => {
                // Redis answers the error but keeps what the earlier elements changed, and
                // replicates nothing; replaying PFADD would fail the same way, so the
                // replicas get the resulting bytes instead.
                if updated > 0 {
                    let bytes = s.clone();
                    ctx.dirty += 1;
                    ctx.propagate(&[b"SET", key, &bytes, b"KEEPTTL"]);
                }
                return ctx.reply.error(INVALID_HLL);
            }
        }
    }
    if updated > 0 {
        invalidate_cache(s);
        ctx.st.signal_modified_key(db, key);
        ctx.dirty += updated;
        ctx.notify(notify::STRING, "pfadd", key);
    }
    ctx.reply.int((updated > 0) as i64);
}

pub fn pfcount(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    if argv.len() > 2 {
        let mut max = vec![0u8; REGISTERS];
        for key in &argv[1..] {
            match check_key(ctx, key, false) {
                Err(()) => return,
                Ok(false) => continue,
                Ok(true) => {}
            }
            let s = hll_bytes(ctx.st, db, key).expect("checked above");
            if merge(&mut max, s).is_err() {
                return ctx.reply.error(INVALID_HLL);
            }
        }
        let mut h = [0u32; 64];
        for &r in &max {
            h[r as usize] += 1;
        }
        return ctx.reply.int(estimate(&h) as i64);
    }
    let key = argv[1];
    match check_key(ctx, key, false) {
        Err(()) => return,
        Ok(false) => return ctx.reply.int(0),
        Ok(true) => {}
    }
    // A replica serving reads leaves its data to the log: the primary's PFCOUNT effect
    // stores the same value there.
    let writable = !ctx.st.replica_mode || ctx.st.applying;
    if writable {
        // Redis unshares the value first, whatever the cache says: it becomes raw.
        raw_mut(ctx, key);
    }
    let s = hll_bytes(ctx.st, db, key).expect("checked above");
    if s[15] & 0x80 == 0 {
        let card = u64::from_le_bytes(s[8..16].try_into().unwrap());
        return ctx.reply.int(card as i64);
    }
    let card = match histogram(s) {
        Ok(h) => estimate(&h),
        Err(InvalidHll) => return ctx.reply.error(INVALID_HLL),
    };
    if writable {
        let s = raw_mut(ctx, key);
        s[8..16].copy_from_slice(&card.to_le_bytes());
        ctx.st.signal_modified_key(db, key);
        ctx.dirty += 1;
        ctx.propagate(&[b"PFCOUNT", key]);
    }
    ctx.reply.int(card as i64);
}

pub fn pfmerge(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    let mut max = vec![0u8; REGISTERS];
    let mut use_dense = false;
    // The destination is a source too (argv[1]).
    for key in &argv[1..] {
        match check_key(ctx, key, false) {
            Err(()) => return,
            Ok(false) => continue,
            Ok(true) => {}
        }
        let s = hll_bytes(ctx.st, db, key).expect("checked above");
        use_dense |= s[4] == DENSE;
        if merge(&mut max, s).is_err() {
            return ctx.reply.error(INVALID_HLL);
        }
    }
    let dst = argv[1];
    if !ctx.st.exists(db, dst, ctx.fx) {
        let lru = ctx.lru();
        ctx.st.notify_new(db, dst);
        ctx.st.dbs[db].add(dst, Value::Raw(create()), lru);
    }
    let max_bytes = sparse_max_bytes(ctx);
    let s = raw_mut(ctx, dst);
    if use_dense && sparse_to_dense(s).is_err() {
        return ctx.reply.error(INVALID_HLL);
    }
    for (i, &m) in max.iter().enumerate() {
        if m == 0 {
            continue;
        }
        let r = if s[4] == DENSE { Ok(dense_set(&mut s[HDR..], i, m)) } else { sparse_set(s, i, m, max_bytes) };
        if r.is_err() {
            return ctx.reply.error(INVALID_HLL);
        }
    }
    invalidate_cache(s);
    ctx.st.signal_modified_key(db, dst);
    ctx.dirty += 1;
    ctx.notify(notify::STRING, "pfadd", dst);
    ctx.reply.ok();
}
