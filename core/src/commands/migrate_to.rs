//! MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password |
//! AUTH2 username password] [KEYS key …]: moves keys to another server, Memoria or Redis,
//! as Redis 7.0 does: AUTH and SELECT, then a RESTORE (RESTORE-ASKING in cluster mode)
//! per key with its DUMP payload and TTL; each key the target accepted is deleted here
//! (not with COPY) and logged as DEL, so a failure leaves the key at the source.
//!
//! The engine has no I/O: MIGRATE blocks its client and asks the host for the transfer
//! (a REC_MIGRATE record); the host's REC_MIGRATED brings the target's replies back to
//! `complete`. Redis blocks the whole server meanwhile; here other clients go on, so a
//! key one of them writes during the transfer (`server::migrating` sees it) is kept, its
//! newer value not lost, and MIGRATE says so in its error.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::keyspace::object::{NO_EXPIRE, Value};
use crate::protocol::batch::{HostRequest, MigrateOutcome, MigrateRequest};
use crate::protocol::resp::encode_command;
use crate::server::client::PendingMigrate;
use crate::server::ctx::Ctx;
use crate::server::notify;
use crate::server::spec::{MigrateOptions, migrate_options, migrate_options_with};
use crate::util::{IntText, parse_i64};

/// MIGRATE's secrets (MONITOR, SLOWLOG): AUTH's password, AUTH2's user and password.
pub fn migrate_secret(argv: &[&[u8]], i: usize) -> bool {
    let mut secret = false;
    let _ = migrate_options_with(argv, |r| secret |= r.contains(&i));
    secret
}

pub fn migrate(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Ok(MigrateOptions { copy, replace, auth, keys_from }) = migrate_options(argv) else { return ctx.syntax_error() };
    let keys: &[&[u8]] = match keys_from {
        Some(_) if !argv[3].is_empty() => {
            return ctx.err("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string");
        }
        Some(i) => &argv[i..],
        None => &argv[3..4],
    };
    let Some(timeout) = ctx.int_arg(argv[5]) else { return };
    let Some(dbid) = ctx.int_arg(argv[4]) else { return };
    let timeout = if timeout <= 0 { 1000 } else { timeout as u64 };

    let (db, now, cluster) = (ctx.db(), ctx.st.now_ms, ctx.st.cluster.is_some());
    let restore: &[u8] = if cluster { b"RESTORE-ASKING" } else { b"RESTORE" };
    let mut commands = Vec::new();
    let mut prefix = 0;
    if let Some(auth) = auth {
        let mut cmd: Vec<&[u8]> = alloc::vec![b"AUTH"];
        cmd.extend_from_slice(&argv[auth]);
        encode_command(&mut commands, &cmd);
        prefix += 1;
    }
    encode_command(&mut commands, &[b"SELECT", IntText::new(dbid).as_bytes()]);
    prefix += 1;
    let mut sent: Vec<Vec<u8>> = Vec::new();
    for &key in keys {
        let Some(e) = ctx.st.read(db, key, ctx.fx) else { continue };
        if let Value::Hash(h) = &e.val
            && h.has_ttls()
        {
            return ctx.err("ERR MIGRATE of a hash whose fields have TTLs is not supported (Redis 7.0's format has no field expiries)");
        }
        let ttl = if e.expire_at == NO_EXPIRE { 0 } else { (e.expire_at - now).max(1) };
        let payload = crate::rdb::object::dump(&e.val);
        let ttl = IntText::new(ttl);
        let mut cmd: Vec<&[u8]> = alloc::vec![restore, key, ttl.as_bytes(), &payload];
        if replace {
            cmd.push(b"REPLACE");
        }
        encode_command(&mut commands, &cmd);
        sent.push(key.to_vec());
    }
    ctx.propagate_nothing();
    if sent.is_empty() {
        return ctx.reply.simple(b"NOKEY");
    }
    // As Redis, the keys are looked for before the target is: then the connection.
    if !ctx.may_block() {
        return ctx.err("ERR MIGRATE cannot run inside MULTI or a script (it waits for the target server)");
    }
    // Redis reads the port with atoi: what is not a port cannot be connected to.
    let (Ok(host), Some(port)) = (core::str::from_utf8(argv[1]), parse_i64(argv[2]).and_then(|p| u16::try_from(p).ok())) else {
        return ctx.err("IOERR error or timeout connecting to the client");
    };
    let replies = (prefix + sent.len()) as u32;
    for k in &sent {
        ctx.st.migrating.start(db, k);
    }
    ctx.host = Some(HostRequest::Migrate(MigrateRequest { host: host.into(), port, timeout_ms: timeout, replies, commands }));
    ctx.client.migrating = Some(Box::new(PendingMigrate { db, keys: sent, copy, prefix }));
    // Blocked on no key and with no deadline: only the host's REC_MIGRATED ends it (its
    // transfer is bounded by the timeout).
    ctx.block(&[], 0);
}

/// Finishes a MIGRATE with what the host reports of the transfer: deletes what the target
/// accepted (unless COPY, and unless written meanwhile), logs it as DEL, answers.
pub fn complete(ctx: &mut Ctx<'_>, m: &PendingMigrate, outcome: Option<MigrateOutcome>) {
    let Some(outcome) = outcome else {
        return ctx.err("ERR malformed MIGRATE outcome from the host");
    };
    let (lines, broken) = match outcome {
        MigrateOutcome::ConnectFailed => return ctx.err("IOERR error or timeout connecting to the client"),
        MigrateOutcome::Broken { writing, replies } => (replies, Some(writing)),
        MigrateOutcome::Replies(replies) => (replies, None),
    };
    let is_err = |l: &Vec<u8>| l.first() == Some(&b'-');
    let failed_prefix = lines.get(..m.prefix.min(lines.len())).and_then(|p| p.iter().find(|l| is_err(l)));
    let mut target_error: Option<&[u8]> = None;
    let mut deleted: Vec<&[u8]> = Vec::new();
    let mut changed: Vec<&[u8]> = Vec::new();
    let (now, paused) = (ctx.st.now_ms, ctx.st.writes_paused());
    for (i, key) in m.keys.iter().enumerate() {
        let untouched = ctx.st.migrating.finish(m.db, key);
        let Some(line) = lines.get(m.prefix + i) else { continue };
        // As Redis: AUTH's error first, then SELECT's, then the key's own.
        if let Some(err) = failed_prefix.or(is_err(line).then_some(line)) {
            target_error.get_or_insert(&err[1..]);
            continue;
        }
        if m.copy {
            continue;
        }
        // Gone meanwhile (deleted, or its TTL passed): nothing left to delete here.
        if !ctx.st.dbs[m.db].keys.get(key).is_some_and(|e| e.expire_at == NO_EXPIRE || e.expire_at > now) {
            continue;
        }
        // Written meanwhile, or writes are paused (CLIENT PAUSE): kept here.
        if !untouched || paused {
            changed.push(key);
            continue;
        }
        ctx.st.delete(m.db, key);
        ctx.st.notify(notify::GENERIC, "del", key, m.db);
        ctx.dirty += 1;
        deleted.push(key);
    }
    if deleted.is_empty() {
        ctx.propagate_nothing();
    } else {
        let mut del: Vec<&[u8]> = alloc::vec![b"DEL"];
        del.extend_from_slice(&deleted);
        ctx.propagate_in(m.db, &del);
    }
    if let Some(e) = target_error {
        let mut msg = b"ERR Target instance replied with error: ".to_vec();
        msg.extend_from_slice(e);
        return ctx.reply.error(&msg);
    }
    match broken {
        Some(true) => return ctx.err("IOERR error or timeout writing to target instance"),
        Some(false) => return ctx.err("IOERR error or timeout reading to target instance"),
        None => {}
    }
    if let Some(k) = changed.first() {
        let msg = if paused {
            alloc::format!(
                "ERR the target has the keys, but writes are paused (CLIENT PAUSE): they were kept here (first: '{}')",
                alloc::string::String::from_utf8_lossy(k)
            )
        } else {
            alloc::format!(
                "ERR the target has the keys, but {} written here during the transfer and kept (first: '{}')",
                if changed.len() == 1 { "one was" } else { "some were" },
                alloc::string::String::from_utf8_lossy(k)
            )
        };
        return ctx.err(&msg);
    }
    ctx.reply.ok();
}
