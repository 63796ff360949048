//! MULTI/EXEC/DISCARD/WATCH/UNWATCH. The effects of one EXEC land in one output record,
//! so the host logs them as one entry: replicas see all of it or none of it.

use alloc::vec::Vec;

use crate::server::client::{Client, MultiState, Watched};
use crate::server::ctx::Ctx;
use crate::server::state::State;
use crate::server::state::{unwatch_all, watch_key};

pub fn multi(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if ctx.client.multi.is_some() {
        return ctx.err("ERR MULTI calls can not be nested");
    }
    ctx.client.multi = Some(MultiState { queue: Vec::new(), aborted: false });
    ctx.reply.ok();
}

pub fn discard(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if ctx.client.multi.take().is_none() {
        return ctx.err("ERR DISCARD without MULTI");
    }
    unwatch_all(ctx.st, ctx.client);
    ctx.reply.ok();
}

/// A watched key that was alive at WATCH time and has expired since counts as changed.
fn watched_key_expired(st: &State, c: &Client) -> bool {
    c.watched
        .iter()
        .any(|w| !w.expires && st.dbs[w.db].keys.get(&w.key).is_some_and(|e| e.expire_at != crate::keyspace::object::NO_EXPIRE && e.expire_at <= st.now_ms))
}

pub fn exec(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let Some(m) = ctx.client.multi.take() else {
        return ctx.err("ERR EXEC without MULTI");
    };
    let dirty = ctx.st.cas_dirty.contains(&ctx.client.id) || watched_key_expired(ctx.st, ctx.client);
    unwatch_all(ctx.st, ctx.client);
    if m.aborted {
        return ctx.err("EXECABORT Transaction discarded because of previous errors.");
    }
    if dirty {
        return ctx.reply.null_array();
    }
    ctx.reply.array(m.queue.len());
    ctx.in_exec = true;
    let mut args = Vec::new();
    for raw in &m.queue {
        args.clear();
        crate::protocol::resp::read_command(raw, &mut args);
        let argv: Vec<&[u8]> = args.iter().map(|&(a, b)| &raw[a..b]).collect();
        // Replies of queued commands use the protocol in force when each runs.
        ctx.reply.resp3 = ctx.client.resp3;
        crate::server::dispatch::call(ctx, &argv);
    }
    ctx.in_exec = false;
}

pub fn watch(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if ctx.client.multi.is_some() {
        return ctx.err("ERR WATCH inside MULTI is not allowed");
    }
    let db = ctx.client.db;
    for key in &argv[1..] {
        if ctx.client.watched.iter().any(|w| w.db == db && &*w.key == *key) {
            continue;
        }
        let expired = ctx.st.dbs[db].keys.get(key).is_some_and(|e| e.expire_at != crate::keyspace::object::NO_EXPIRE && e.expire_at <= ctx.st.now_ms);
        ctx.client.watched.push(Watched { db, key: (*key).into(), expires: expired });
        let k = watch_key(db, key);
        match ctx.st.watched.get_mut(&k) {
            Some(ids) => ids.push(ctx.client.id),
            None => {
                ctx.st.watched.insert(&k, alloc::vec![ctx.client.id]);
            }
        }
    }
    ctx.reply.ok();
}

pub fn unwatch(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    unwatch_all(ctx.st, ctx.client);
    ctx.reply.ok();
}
