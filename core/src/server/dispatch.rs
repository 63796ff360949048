//! Command dispatch: lookup, arity, MULTI queueing, maxmemory, then the handler; and the
//! default effect (the command itself) for writes that changed something.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::server::ctx::{Ctx, emit};
use crate::server::monitor::{self, Moment};
use crate::server::spec::{CommandSpec, flags};

/// Builds Redis's "unknown command" error, quoting at most ~128 bytes of arguments.
fn unknown_command(argv: &[&[u8]]) -> String {
    let mut args = String::new();
    for a in &argv[1..] {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        let s = String::from_utf8_lossy(&a[..a.len().min(room)]);
        args.push('\'');
        args.push_str(&s);
        args.push_str("' ");
    }
    let name = String::from_utf8_lossy(&argv[0][..argv[0].len().min(128)]);
    format!("ERR unknown command '{}', with args beginning with: {}", name, args)
}

fn reject(ctx: &mut Ctx<'_>, msg: &str) {
    if let Some(m) = ctx.client.multi.as_mut()
        && !ctx.in_exec
    {
        m.aborted = true;
    }
    ctx.err(msg);
}

/// Resolves argv to a command spec, or replies with the error Redis would give. The flag
/// is set when a container was called bare and runs its `bare` subcommand.
fn resolve(ctx: &mut Ctx<'_>, argv: &[&[u8]]) -> Option<(&'static CommandSpec, bool)> {
    let Some(top) = ctx.st.index.lookup(argv[0]) else {
        ctx.st.stats.unknown_commands += 1;
        reject(ctx, &unknown_command(argv));
        return None;
    };
    if top.subcommands.is_empty() {
        return Some((top, false));
    }
    if argv.len() < 2 {
        if let Some(bare) = top.bare {
            return Some((bare, true));
        }
        reject(ctx, &format!("ERR wrong number of arguments for '{}' command", top.name));
        // Redis counts the container itself as the refused command.
        ctx.st.cmdstats.not_run(ctx.reply.take_errors(), Some(top));
        return None;
    }
    match crate::server::spec::find_sub(top, argv[1]) {
        Some(s) => Some((s, false)),
        None => {
            let sub = String::from_utf8_lossy(&argv[1][..argv[1].len().min(128)]);
            reject(ctx, &format!("ERR unknown subcommand '{}'. Try {} HELP.", sub, top.name.to_ascii_uppercase()));
            None
        }
    }
}

/// Runs one command for `ctx.client`.
pub fn call(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.is_empty() {
        return;
    }
    let Some((cmd, bare)) = resolve(ctx, argv) else {
        ctx.st.cmdstats.not_run(ctx.reply.take_errors(), None);
        return;
    };
    call_resolved(ctx, cmd, bare, argv);
    // CLIENT CACHING lasts one command, or one transaction (Redis's resetClient; not
    // for a command that blocks or is postponed: it runs again later).
    if ctx.client.tracking && !ctx.in_exec && ctx.client.multi.is_none() && ctx.block.is_none() && !cmd.name.starts_with("client|") {
        ctx.st.tracking.command_done(ctx.client.id);
    }
}

/// Runs `argv` as `cmd`, already resolved from it (`bare`: a container called without a
/// subcommand runs its bare one): a script's `redis.call` resolves before its checks.
/// Counts the outcome for INFO commandstats/errorstats and the slow log.
pub fn call_resolved(ctx: &mut Ctx<'_>, cmd: &'static CommandSpec, bare: bool, argv: &[&[u8]]) {
    match check_and_run(ctx, cmd, bare, argv) {
        Checked::Refused => ctx.st.cmdstats.not_run(ctx.reply.take_errors(), Some(cmd)),
        Checked::Ran(usec) => finished(ctx, cmd, argv, usec),
        Checked::Later => ctx.st.cmdstats.not_run(ctx.reply.take_errors(), None),
    }
}

/// Counts a command that ran to its end in `usec` µs (its errors, whether it failed), and
/// logs it if it was slow.
pub fn finished(ctx: &mut Ctx<'_>, cmd: &'static CommandSpec, argv: &[&[u8]], usec: u64) {
    let st = &mut *ctx.st;
    st.cmdstats.errors(ctx.reply.take_errors());
    if ctx.reply.take_recounted() {
        st.cmdstats.failed_without_count(cmd);
    }
    st.cmdstats.ran(cmd, usec, st.config.latency_tracking);
    let event = if cmd.flags & flags::FAST != 0 { "fast-command" } else { "command" };
    st.latency.add_if_needed(event, usec / 1000, st.now_ms.div_euclid(1000), st.config.latency_monitor_threshold);
    if cmd.flags & flags::SKIP_SLOWLOG != 0 || st.config.slowlog_log_slower_than < 0 {
        return;
    }
    // A script's own calls show no client, as Redis shows its Lua client.
    let (peer, name): (&[u8], &[u8]) = if ctx.in_script { (b"?:0", b"") } else { (&ctx.client.addr, ctx.client.name.as_deref().unwrap_or(b"")) };
    let redacted = |i: usize| cmd.redact.is_some_and(|r| r(argv, i));
    let call = crate::server::slowlog::Call { argv, redacted: &redacted, duration_us: usec, time: st.now_ms.div_euclid(1000), peer, name };
    st.slowlog.push_if_slow(&call, st.config.slowlog_log_slower_than, st.config.slowlog_max_len);
}

/// How far a command got.
enum Checked {
    /// Refused before its handler ran (arity, ACL, routing, OOM, READONLY, -BUSY…).
    Refused,
    /// Its handler ran to the end, in this many µs.
    Ran(u64),
    /// Queued in MULTI, postponed by CLIENT PAUSE, blocked, or a script that yielded:
    /// it is counted when it runs to its end.
    Later,
}

fn check_and_run(ctx: &mut Ctx<'_>, cmd: &'static CommandSpec, bare: bool, argv: &[&[u8]]) -> Checked {
    let exec = cmd.flags & flags::EXEC != 0;
    if !ctx.in_exec {
        // Like Redis's processCommand: CLIENT LIST/INFO show the command being run.
        ctx.client.last_cmd = cmd.name;
        ctx.client.last_ms = ctx.st.now_ms;
    }
    if !bare && !cmd.arity_ok(argv.len()) {
        if exec {
            // Redis's execCommandAbort: a rejected EXEC discards the transaction.
            ctx.client.multi = None;
            crate::server::state::unwatch_all(ctx.st, ctx.client);
            ctx.err("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command");
            return Checked::Refused;
        }
        reject(ctx, &format!("ERR wrong number of arguments for '{}' command", cmd.name));
        return Checked::Refused;
    }
    // A protected command (DEBUG) where the node does not allow it: Redis's check, before
    // authentication.
    if cmd.flags & flags::PROTECTED != 0 {
        let allowed = match ctx.st.config.value("enable-debug-command") {
            Some("yes") => true,
            Some("local") => crate::server::acl::is_loopback(&ctx.client.addr),
            _ => false,
        };
        if !allowed {
            reject(
                ctx,
                "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.",
            );
            return Checked::Refused;
        }
    }
    // AUTH and ACL permissions, before anything of the command runs.
    if let Err(r) = crate::server::acl::enforce::enforce(ctx, cmd, argv) {
        match r {
            crate::server::acl::enforce::Refusal::Close => ctx.close = true,
            crate::server::acl::enforce::Refusal::Error(msg) if ctx.in_exec => ctx.err(&msg),
            crate::server::acl::enforce::Refusal::Error(msg) => reject(ctx, &msg),
        }
        return Checked::Refused;
    }
    // Cluster mode: keyed commands run only where their slot lives (Redis checks this
    // before queueing in MULTI, and for EXEC across everything queued).
    let mut asked = false;
    if ctx.st.cluster.is_some() && !ctx.st.applying && !ctx.in_exec {
        let asking = ctx.client.asking || cmd.flags & flags::ASKING != 0;
        asked = asking;
        // ASKING lasts one command (or one transaction).
        if cmd.flags & flags::KEEPS_ASKING == 0 && (ctx.client.multi.is_none() || exec) {
            ctx.client.asking = false;
        }
        if let Some(e) = crate::server::cluster::route(ctx, cmd, argv, asking) {
            if exec {
                ctx.client.multi = None;
                crate::server::state::unwatch_all(ctx.st, ctx.client);
                ctx.err(&e);
                return Checked::Refused;
            }
            reject(ctx, &e);
            return Checked::Refused;
        }
    }
    // A monitor is a replica to Redis (CLIENT_SLAVE): it may not touch the keyspace.
    if ctx.client.monitor && cmd.flags & (flags::WRITE | flags::READONLY | flags::MAY_REPLICATE | flags::SCRIPT) != 0 {
        reject(ctx, "ERR Replica can't interact with the keyspace");
        return Checked::Refused;
    }
    // A replica takes writes only from its primary's log.
    if ctx.st.replica_mode && !ctx.st.applying && cmd.is_write() {
        reject(ctx, "READONLY You can't write against a read only replica.");
        return Checked::Refused;
    }
    // A script runs past `busy-reply-threshold`: others get -BUSY but for a few commands
    // (SCRIPT KILL, FUNCTION KILL, AUTH, MULTI…), flagged ALLOW_BUSY.
    if cmd.flags & flags::ALLOW_BUSY == 0
        && let Some(busy) = ctx.st.scripts.busy_error()
    {
        if exec {
            ctx.client.multi = None;
            crate::server::state::unwatch_all(ctx.st, ctx.client);
            ctx.err(&format!("EXECABORT Transaction discarded because of: {busy}"));
            return Checked::Refused;
        }
        reject(ctx, busy);
        return Checked::Refused;
    }
    // CLIENT PAUSE: the command waits for the pause's end (before MULTI queueing, as in
    // Redis); a monitor is a replica to Redis, never paused.
    // QUIT is answered before any of this in Redis, paused or not.
    if !ctx.in_exec
        && !ctx.st.applying
        && !ctx.client.monitor
        && cmd.name != "quit"
        && let Some(end) = ctx.st.paused_until(cmd, ctx.client)
    {
        ctx.block = Some(crate::server::blocked::BlockRequest { keys: Vec::new(), deadline: end, rewritten: None, asking: asked, postponed: true });
        return Checked::Later;
    }
    if ctx.client.multi.is_some() && !ctx.in_exec && cmd.flags & flags::TX_CONTROL == 0 {
        if cmd.flags & flags::NO_MULTI != 0 {
            reject(ctx, "ERR Command not allowed inside a transaction");
            return Checked::Refused;
        }
        if cmd.flags & flags::DENYOOM != 0 && !crate::server::evict::memory_ok(ctx) {
            reject(ctx, "OOM command not allowed when used memory > 'maxmemory'.");
            return Checked::Refused;
        }
        let mut raw = Vec::new();
        crate::protocol::resp::encode_command(&mut raw, argv);
        ctx.client.multi.as_mut().unwrap().queue.push(raw);
        ctx.reply.simple(b"QUEUED");
        return Checked::Later;
    }
    if cmd.flags & flags::DENYOOM != 0 && !ctx.st.replica_mode && !crate::server::evict::make_room(ctx) {
        ctx.st.stats.rejected_oom += 1;
        ctx.err("OOM command not allowed when used memory > 'maxmemory'.");
        return Checked::Refused;
    }
    // A RESP2 connection that is subscribed only takes (un)subscriptions, PING, QUIT, RESET.
    if !ctx.in_exec && !ctx.client.resp3 && ctx.client.subs.active() && cmd.flags & flags::SUBSCRIBED == 0 {
        let msg = crate::server::pubsub::subscribed_context_error(cmd.name);
        if exec {
            ctx.client.multi = None;
            crate::server::state::unwatch_all(ctx.st, ctx.client);
            ctx.err(&format!("EXECABORT Transaction discarded because of: {}", &msg[4..]));
            return Checked::Refused;
        }
        reject(ctx, &msg);
        return Checked::Refused;
    }
    let (saved_dirty, saved_custom) = (ctx.dirty, ctx.custom_fx);
    ctx.dirty = 0;
    ctx.custom_fx = false;
    let handler = cmd.handler.expect("leaf commands have handlers");
    monitor::feed(ctx, cmd, argv, Moment::Before);
    // CLIENT NO-TOUCH: lookups leave access times alone, but TOUCH touches.
    ctx.st.no_touch = ctx.client.no_touch && cmd.name != "touch";
    // One clock read per command in a batch: a client's command starts where the one
    // before it in the same engine call ended (so its time includes reading its record).
    // A command inside EXEC or a script reads its own start: the script's own work
    // between its calls is not theirs.
    let nested = ctx.in_exec || ctx.in_script;
    let mark = if nested { None } else { ctx.st.clock_mark.take() };
    let started = mark.unwrap_or_else(ctx.st.clock);
    handler(ctx, argv);
    let ended = (ctx.st.clock)();
    ctx.st.clock_mark = Some(ended);
    let usec = ended.saturating_sub(started);
    ctx.st.no_touch = false;
    ctx.st.stats.commands += 1;
    monitor::feed(ctx, cmd, argv, Moment::After);
    // A tracking client caches what it reads: a read's keys are remembered; a script's
    // reads remember the keys declared to the script, as Redis 7.0 does (EVAL_RO and
    // FCALL_RO themselves are not reads here).
    if ctx.client.tracking && cmd.flags & flags::READONLY != 0 && cmd.flags & (flags::SCRIPT | flags::PUBSUB) == 0 {
        remember_read(ctx, cmd, argv);
    }
    if ctx.suspended {
        // Its script goes on in the next engine call (`Engine::resume`), which counts it.
        ctx.st.scripts.started_us = started;
        return Checked::Later;
    }
    if asked && let Some(b) = ctx.block.as_mut() {
        // Re-runs of a command that blocked after ASKING are served here too (Redis
        // does not redirect a client blocked on a key of an importing slot).
        b.asking = true;
    }
    // Applying a primary's effects (replica, replay, snapshot) writes none of its own:
    // nothing reads them, and encoding each command again is a tenth of a replica's work.
    if ctx.dirty > 0 && !ctx.custom_fx && cmd.is_write() && !ctx.st.applying {
        emit(ctx.fx, ctx.client.db, argv);
    }
    ctx.dirty += saved_dirty;
    ctx.custom_fx = saved_custom;
    if ctx.block.is_some() { Checked::Later } else { Checked::Ran(usec) }
}

/// Remembers what `argv` read for `ctx.client`'s cache (Redis's trackingRememberKeys):
/// its keys, or in a script the keys declared to the script.
fn remember_read(ctx: &mut Ctx<'_>, cmd: &'static CommandSpec, argv: &[&[u8]]) {
    let (st, id) = (&mut *ctx.st, ctx.client.id);
    let max = st.config.tracking_table_max_keys;
    if ctx.in_script {
        return st.tracking.remember_script_keys(id, max, &mut st.rng);
    }
    let mut idx = Vec::new();
    cmd.key_indexes_argv(argv, &mut idx);
    st.tracking.remember(id, idx.iter().map(|&i| argv[i]), max, &mut st.rng);
}
