//! Commands between databases (standalone mode only, as in Redis): MOVE and SWAPDB, and
//! the database-index argument they share with SELECT and COPY … DB.

use crate::keyspace::object::NO_EXPIRE;
use crate::server::ctx::Ctx;
use crate::server::notify;

/// A database index as Redis 7.0 reads it (getIntFromObjectOrReply without a message),
/// then within the configured databases (else `ERR DB index is out of range`). `None`:
/// answered.
pub fn db_index(ctx: &mut Ctx<'_>, arg: &[u8]) -> Option<usize> {
    let n = int32_arg(ctx, arg, None)?;
    if n < 0 || n as usize >= ctx.st.config.databases {
        ctx.err("ERR DB index is out of range");
        return None;
    }
    Some(n as usize)
}

/// Redis's getIntFromObjectOrReply: `msg` (if given) for anything that is not a 32-bit
/// integer, else its two texts for "not an integer" and "outside int".
fn int32_arg(ctx: &mut Ctx<'_>, arg: &[u8], msg: Option<&str>) -> Option<i32> {
    let parsed = crate::util::parse_i64(arg);
    match (parsed.and_then(|n| i32::try_from(n).ok()), msg) {
        (Some(n), _) => return Some(n),
        (None, Some(m)) => ctx.err(m),
        (None, None) if parsed.is_some() => ctx.err(crate::util::NOT_AN_INT_RANGE),
        (None, None) => ctx.not_integer(),
    }
    None
}

/// MOVE key db: the key (with its TTL) leaves this database for `db`, unless `db` already
/// has it. Logged as itself: deterministic given both databases.
pub fn move_key(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if ctx.st.cluster.is_some() {
        return ctx.err("ERR MOVE is not allowed in cluster mode");
    }
    let key = argv[1];
    let src = ctx.db();
    let Some(dst) = db_index(ctx, argv[2]) else { return };
    if src == dst {
        return ctx.err("ERR source and destination objects are the same");
    }
    if ctx.st.write(src, key, ctx.fx).is_none() || ctx.st.write(dst, key, ctx.fx).is_some() {
        return ctx.reply.int(0);
    }
    let Some(entry) = ctx.st.delete(src, key) else { return ctx.reply.int(0) };
    // The same object moves (Redis's dbAdd of it): its access field with it.
    ctx.st.dbs[dst].add(key, entry.val, entry.lru);
    if entry.expire_at != NO_EXPIRE {
        ctx.st.dbs[dst].set_expire(key, entry.expire_at);
    }
    // (`delete` touched the source's watchers.)
    ctx.st.signal_modified_key(dst, key);
    // The effect names the key in the source database; waiters in the target need it too.
    ctx.st.blocking.signal(dst as u8, key);
    ctx.st.notify(notify::GENERIC, "move_from", key, src);
    ctx.st.notify(notify::GENERIC, "move_to", key, dst);
    ctx.dirty += 1;
    ctx.reply.int(1);
}

/// SWAPDB a b: the two databases exchange their keys; clients stay where they are, so
/// their WATCHes and blocked commands now see the other data (Redis's dbSwapDatabases).
pub fn swapdb(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if ctx.st.cluster.is_some() {
        return ctx.err("ERR SWAPDB is not allowed in cluster mode");
    }
    let Some(a) = int32_arg(ctx, argv[1], Some("ERR invalid first DB index")) else { return };
    let Some(b) = int32_arg(ctx, argv[2], Some("ERR invalid second DB index")) else { return };
    let dbs = ctx.st.config.databases;
    let in_range = |n: i32| n >= 0 && (n as usize) < dbs;
    if !in_range(a) || !in_range(b) {
        return ctx.err("ERR DB index is out of range");
    }
    let (a, b) = (a as usize, b as usize);
    if a != b {
        // A watched key that exists on either side changes what its watcher would read.
        ctx.st.touch_watched_in_swap(a, b);
        ctx.st.dbs.swap(a, b);
        ctx.st.signal_existing_waiters(a);
        ctx.st.signal_existing_waiters(b);
    }
    ctx.dirty += 1;
    ctx.reply.ok();
}
