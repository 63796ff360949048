//! MIGRATION EXPORT / IMPORT / DELIF: how `memoria reshard` moves the keys of slots from
//! one shard to another (the coordinator is the host's `cluster::reshard`). A key travels
//! as one snapshot key record (`snapshot::encode_value_with_key`: type, expiry, key,
//! value), so every type moves with its encoding and absolute expiry.
//!
//! The move of a key is optimistic, so clients keep writing to it until it has moved:
//! 1. EXPORT at the source reads records of the migrating slots (a scan with a cursor);
//! 2. IMPORT at the target writes them (replacing: a retried import is harmless);
//! 3. DELIF at the source deletes a key only if it still encodes to the exported record.
//!    A key written in between stays at the source and is exported again later.
//!
//! Clients reach the target for a key only through `-ASK`, which the source gives only
//! for a key it does not hold, and the source never creates a key in a migrating slot (a
//! write to a missing key gets `-ASK` too): so a key is never written in two places.
//! EXPORT refuses slots this engine does not yet know as migrating, so the coordinator
//! cannot move keys before the source sends new keys away.

use alloc::format;
use alloc::vec::Vec;

use crate::keyspace::record::{Cur, decode_key_record, encode_value_with_key};
use crate::server::cluster::{disabled, key_slot, parse_ranges};
use crate::server::ctx::Ctx;
use crate::server::notify;

/// MIGRATION EXPORT <cursor> <count> <slot ranges>: `[next cursor, [record…]]`, records of
/// keys in those slots (all of which must be migrating from here). Like SCAN, a key
/// present for the whole walk from cursor 0 back to 0 is returned at least once.
pub fn export(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let (Some(cursor), Some(count)) =
        (core::str::from_utf8(argv[2]).ok().and_then(|c| c.parse::<u64>().ok()), crate::util::parse_i64(argv[3]).filter(|&c| c > 0))
    else {
        return ctx.err("ERR invalid cursor or count");
    };
    let ranges = parse_ranges(&alloc::string::String::from_utf8_lossy(argv[4]));
    if ranges.is_empty() {
        return ctx.err("ERR invalid slot ranges (expected a-b,c,…)");
    }
    let map = ctx.st.cluster.as_ref().expect("checked above");
    for &(a, b) in &ranges {
        if let Some(s) = (a..=b).find(|s| !map.migrating.contains_key(s)) {
            return ctx.err(&format!("ERR slot {s} is not migrating from this node"));
        }
    }
    let wanted = |k: &[u8]| {
        let s = key_slot(k);
        ranges.iter().any(|&(a, b)| a <= s && s <= b)
    };
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut next = cursor;
    let d = &ctx.st.dbs[0];
    // The walk looks at no more than 64 keys per key asked for, so a call on a big
    // keyspace whose moving slots hold few keys stays short (the shard serves nobody
    // else meanwhile); the cursor says where to go on.
    let mut visited = 0usize;
    let count = crate::util::usize_sat(count);
    let budget = count.saturating_mul(64);
    if !d.is_empty() {
        loop {
            next = d.keys.scan(next, |k, _| {
                visited += 1;
                if wanted(k) {
                    keys.push(k.to_vec());
                }
            });
            if next == 0 || keys.len() >= count || visited >= budget {
                break;
            }
        }
    } else {
        next = 0;
    }
    // An expired key is deleted here (and the DEL logged) rather than moved.
    let mut records = Vec::with_capacity(keys.len());
    for k in keys {
        if ctx.st.expire_if_needed(0, &k, ctx.fx) {
            continue;
        }
        if let Some(e) = ctx.st.dbs[0].keys.get(&k) {
            let mut rec = Vec::new();
            encode_value_with_key(&mut rec, &k, e.expire_at, &e.val);
            records.push(rec);
        }
    }
    ctx.reply.array(2);
    ctx.reply.bulk(alloc::format!("{next}").as_bytes());
    ctx.reply.array(records.len());
    for r in &records {
        ctx.reply.bulk(r);
    }
}

/// Parses one record with this engine's limits.
fn decode<'a>(ctx: &Ctx<'_>, rec: &'a [u8]) -> Result<(&'a [u8], i64, crate::keyspace::object::Value), alloc::string::String> {
    let mut c = Cur { b: rec, pos: 0 };
    let r = decode_key_record(&mut c, ctx.st.seed, ctx.st.config.list_max_listpack_size)?;
    if c.pos != rec.len() {
        return Err("trailing bytes after the key record".into());
    }
    Ok(r)
}

/// MIGRATION IMPORT <record>…: writes the keys (replacing), all in slots importing here.
/// Replicas, restarts and the snapshot process apply it as logged, whatever they know of
/// the cluster (the checks were the primary's).
pub fn import(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if !ctx.st.applying && disabled(ctx) {
        return;
    }
    let mut parsed = Vec::with_capacity(argv.len() - 2);
    for rec in &argv[2..] {
        match decode(ctx, rec) {
            Ok(r) => parsed.push(r),
            Err(e) => return ctx.err(&format!("ERR bad key record: {e}")),
        }
    }
    if !ctx.st.applying {
        let map = ctx.st.cluster.as_ref().expect("checked above (not applying)");
        if let Some((k, ..)) = parsed.iter().find(|(k, ..)| !map.importing.contains_key(&key_slot(k))) {
            return ctx.err(&format!("ERR slot {} is not importing into this node", key_slot(k)));
        }
    }
    let n = parsed.len();
    for (key, expire, val) in parsed {
        let lru = ctx.st.new_access();
        ctx.st.put_restored(0, key, val, expire, lru);
        // The logged IMPORT names its keys only inside the records, where the engine's
        // readying from effects (by key spec) cannot see them: ready the waiters here.
        if !ctx.st.applying {
            ctx.st.blocking.signal(0, key);
        }
    }
    ctx.dirty += n as u64;
    ctx.reply.int(n as i64);
}

/// MIGRATION DELIF <record>: deletes the key if it still encodes to `record` (1), else
/// leaves it (0). Logged as a plain DEL.
pub fn delif(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let key = match decode(ctx, argv[2]) {
        Ok((k, ..)) => k,
        Err(e) => return ctx.err(&format!("ERR bad key record: {e}")),
    };
    let same = ctx.st.dbs[0].keys.get(key).is_some_and(|e| {
        let mut now = Vec::with_capacity(argv[2].len());
        encode_value_with_key(&mut now, key, e.expire_at, &e.val);
        now == argv[2]
    });
    if !same {
        ctx.propagate_nothing();
        return ctx.reply.int(0);
    }
    ctx.st.delete(0, key);
    ctx.notify(notify::GENERIC, "del", key);
    ctx.propagate(&[b"DEL", key]);
    ctx.dirty += 1;
    ctx.reply.int(1);
}
