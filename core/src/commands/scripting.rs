//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT: Lua scripts run inside the engine, in
//! one engine call, so a script is atomic. A script's writes are the effects of the
//! commands it calls (Redis 7's effects replication): the log, replicas and a restart
//! never run Lua. Its reply waits for every pending write (the `SCRIPT` flag), since the
//! host cannot see which keys a script reads.

use alloc::format;
use alloc::vec::Vec;

use crate::lua::{FLAG_ALLOW_CROSS_SLOT, FLAG_NAMES, FLAG_NO_CLUSTER, FLAG_NO_WRITES, Host, Run, Target, sha1_hex};
use crate::protocol::reply::Reply;
use crate::server::ctx::Ctx;
use crate::server::scripts::{BUSY_EVAL, BUSY_FUNCTION, Running, Sha, SlotRule, VmHome, function_name};
use crate::util::eq_ic;

/// VM instructions a script may run per millisecond of `busy-reply-threshold` (about a
/// fifth of what the component runs on this machine's cores: the bound is counted, so it
/// is the same on every replica and every run).
pub(crate) const INSTRUCTIONS_PER_MS: u64 = 100_000;

/// Instructions a client's script runs per engine call before it yields, so the host can
/// answer others (-BUSY past `busy-reply-threshold`), renew its lease and take SCRIPT KILL.
pub(crate) const SLICE: u64 = 10 * INSTRUCTIONS_PER_MS;

/// The `crate::lua::FLAG_*` bits an EVAL body's shebang (Redis 7's `#!lua flags=a,b`)
/// asks for.
fn shebang_flags(body: &[u8]) -> Result<u32, alloc::string::String> {
    let mut f = 0;
    if !body.starts_with(b"#!") {
        return Ok(f);
    }
    let line = body.split(|&b| b == b'\n').next().unwrap_or(b"");
    let mut parts = line.split(|&b| b == b' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or(b"");
    if engine != b"#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {}", alloc::string::String::from_utf8_lossy(engine)));
    }
    for p in parts {
        let Some(list) = p.strip_prefix(b"flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {}", alloc::string::String::from_utf8_lossy(p)));
        };
        for flag in list.split(|&b| b == b',').filter(|x| !x.is_empty()) {
            match FLAG_NAMES.iter().find(|(_, name)| name.as_bytes() == flag) {
                Some((bit, _)) => f |= bit,
                None => return Err(format!("ERR Unexpected flag in script shebang: {}", alloc::string::String::from_utf8_lossy(flag))),
            }
        }
    }
    Ok(f)
}

pub(crate) type Args<'a> = &'a [&'a [u8]];

/// The arguments after the script or function name: (keys, args), or the error Redis
/// gives (`bad_count`: its text for a count that is not an integer).
pub(crate) fn split_keys<'a>(ctx: &mut Ctx<'_>, argv: Args<'a>, bad_count: &str) -> Option<(Args<'a>, Args<'a>)> {
    let Some(n) = crate::util::parse_i64(argv[2]) else {
        ctx.err(bad_count);
        return None;
    };
    if n < 0 {
        ctx.err("ERR Number of keys can't be negative");
        return None;
    }
    if n as usize > argv.len() - 3 {
        ctx.err("ERR Number of keys can't be greater than number of args");
        return None;
    }
    let rest = &argv[3..];
    Some(rest.split_at(n as usize))
}

pub fn eval(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    eval_generic(ctx, argv, false, false);
}
pub fn eval_ro(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    eval_generic(ctx, argv, false, true);
}
pub fn evalsha(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    eval_generic(ctx, argv, true, false);
}
pub fn evalsha_ro(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    eval_generic(ctx, argv, true, true);
}

fn sha_arg(a: &[u8]) -> Option<Sha> {
    let mut sha = [0u8; 40];
    if a.len() != 40 {
        return None;
    }
    for (d, s) in sha.iter_mut().zip(a) {
        *d = s.to_ascii_lowercase();
    }
    Some(sha)
}

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

fn eval_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], by_sha: bool, read_only: bool) {
    let Some((keys, args)) = split_keys(ctx, argv, "ERR value is not an integer or out of range") else { return };
    let sha = if by_sha {
        match sha_arg(argv[1]) {
            Some(s) if ctx.st.scripts.exists(&s) => s,
            _ => return ctx.err(NOSCRIPT),
        }
    } else {
        sha1_hex(argv[1])
    };
    let body = if by_sha { ctx.st.scripts.body(&sha).unwrap_or(b"") } else { argv[1] };
    let has_shebang = body.starts_with(b"#!");
    // A bad shebang is refused before the body is compiled.
    let flags = match shebang_flags(body) {
        Ok(f) => f,
        Err(e) => return ctx.err(&e),
    };
    if !by_sha && let Err(e) = ctx.st.scripts.add(&sha, argv[1]) {
        return ctx.err(&format!("ERR Error compiling script (new function): {}", alloc::string::String::from_utf8_lossy(&e)));
    }
    // A script with a shebang declares whether it writes: *_RO refuses one that may.
    let no_writes = flags & FLAG_NO_WRITES != 0;
    if read_only && has_shebang && !no_writes {
        return ctx.err("ERR Can not execute a script with write flag using *_ro command.");
    }
    let target = Target::Script { name: &function_name(&sha), sha: &sha };
    // A script without a shebang runs as before Redis 7: it may reach keys of any slot.
    let flags = if has_shebang { flags } else { flags | FLAG_ALLOW_CROSS_SLOT };
    run_in(ctx, VmHome::Scripts, target, argv, keys, args, flags, read_only || no_writes);
}

/// The instructions a script may run without yielding (`busy-reply-threshold`; 0: no
/// bound).
fn budget(ctx: &Ctx<'_>) -> u64 {
    let b = (ctx.st.config.busy_reply_threshold as u64).saturating_mul(INSTRUCTIONS_PER_MS);
    if b == 0 { u64::MAX } else { b }
}

/// Runs a script or function (`argv`: the command that runs it; `flags`: its
/// `crate::lua::FLAG_*`) in the VM of `home` for `ctx`'s client and replies with its
/// result, or leaves it running (`Ctx::suspended`) when it yields.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_in(ctx: &mut Ctx<'_>, home: VmHome, target: Target<'_>, argv: &[&[u8]], keys: &[&[u8]], args: &[&[u8]], flags: u32, read_only: bool) {
    if ctx.client.tracking {
        ctx.st.tracking.script_keys = keys.iter().map(|&k| k.into()).collect();
    }
    let clustered = ctx.st.cluster.is_some();
    if clustered && flags & FLAG_NO_CLUSTER != 0 {
        return ctx.err("ERR Can not run script on cluster, 'no-cluster' flag is set.");
    }
    // In cluster mode the keys a script reaches must hash to its declared keys' slot (the
    // first reached, without any), unless it allows cross-slot keys.
    let slot = match keys.first() {
        _ if !clustered || flags & FLAG_ALLOW_CROSS_SLOT != 0 => SlotRule::Any,
        Some(k) => SlotRule::Slot(crate::server::cluster::key_slot(k)),
        None => SlotRule::Unset,
    };
    let vm = match home {
        VmHome::Scripts => ctx.st.scripts.take_vm(),
        VmHome::Functions => ctx.st.functions.take_vm(),
    };
    let Some(mut vm) = vm else {
        return ctx.err("ERR Error running script: not enough memory");
    };
    // Only a client's own command may outlast its engine call: EXEC's commands and a
    // script's calls run to their end.
    let budget = budget(ctx);
    // Yields come before the budget could end a stretch that may yield.
    let slice = if ctx.may_suspend && !ctx.in_exec && !ctx.in_script { SLICE.min(budget / 2).max(1) } else { 0 };
    let (client_resp3, db) = (ctx.client.resp3, ctx.client.db);
    let mut reply = core::mem::take(&mut ctx.st.scripts.reply);
    reply.clear();
    vm.set_rand_state(ctx.st.scripts.rand48);
    let mut host = ScriptHost { ctx: &mut *ctx, read_only, wrote: false, slot, errors: Vec::new() };
    let run = vm.call(target, keys, args, client_resp3, budget, slice, &mut host, &mut reply);
    let (wrote, slot, errors) = (host.wrote, host.slot, host.errors);
    let running = Running {
        vm,
        home,
        read_only,
        // A SELECT inside the script lasts until the script ends, as in Redis.
        db,
        dirty: 0,
        unblock: Vec::new(),
        wrote,
        slot,
        kill: false,
        started_ms: ctx.st.now_ms,
        // Copied only for a run that outlasts this call (FUNCTION STATS shows it).
        argv: if run == Run::Yielded { argv.iter().map(|a| a.to_vec()).collect() } else { Vec::new() },
    };
    settle(ctx, running, run, reply, &errors);
}

/// Goes on with the run that yielded in an earlier engine call (`ctx` is its client's).
pub(crate) fn resume(ctx: &mut Ctx<'_>) {
    let Some(mut running) = ctx.st.scripts.running.take() else { return };
    ctx.dirty = running.dirty;
    ctx.unblock = core::mem::take(&mut running.unblock);
    let mut reply = core::mem::take(&mut ctx.st.scripts.reply);
    reply.clear();
    let mut host = ScriptHost { ctx: &mut *ctx, read_only: running.read_only, wrote: running.wrote, slot: running.slot, errors: Vec::new() };
    let run = running.vm.resume(running.kill, &mut host, &mut reply);
    (running.wrote, running.slot) = (host.wrote, host.slot);
    let errors = host.errors;
    settle(ctx, running, run, reply, &errors);
}

/// After a slice: a run that yielded is kept for the next engine call; one that ended
/// gives its VM back and replies. `errors`: where the reply's errors start, and whether
/// each was counted already (an error of a command the script called).
fn settle(ctx: &mut Ctx<'_>, mut running: Running, run: Run, reply: Vec<u8>, errors: &[(usize, bool)]) {
    if run == Run::Yielded {
        running.dirty = ctx.dirty;
        running.unblock = core::mem::take(&mut ctx.unblock);
        ctx.st.scripts.running = Some(running);
        ctx.suspended = true;
        return;
    }
    ctx.st.scripts.rand48 = running.vm.rand_state();
    ctx.client.db = running.db;
    match running.home {
        VmHome::Scripts => ctx.st.scripts.put_vm(running.vm),
        VmHome::Functions => ctx.st.functions.put_vm(running.vm),
    }
    ctx.reply.raw(&reply);
    for &(at, counted) in errors {
        match reply.get(at + 1..) {
            Some(msg) if !counted => ctx.reply.note_error(crate::protocol::reply::ErrorCode::of(msg)),
            _ => ctx.reply.note_recounted_error(),
        }
    }
    ctx.st.scripts.reply = crate::lua::reusable(reply);
}

/// SCRIPT KILL (`eval`) or FUNCTION KILL: Redis's checks, in its order.
pub(crate) fn kill(ctx: &mut Ctx<'_>, eval: bool) {
    let Some(r) = ctx.st.scripts.running.as_mut() else {
        return ctx.err("NOTBUSY No scripts in execution right now.");
    };
    if r.wrote {
        return ctx.err("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.");
    }
    match (eval, r.home) {
        (true, VmHome::Functions) => ctx.err(BUSY_FUNCTION),
        (false, VmHome::Scripts) => ctx.err(BUSY_EVAL),
        _ => {
            r.kill = true;
            ctx.reply.ok();
        }
    }
}

/// The server as a running script sees it.
struct ScriptHost<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    read_only: bool,
    /// The script called a write command (then SCRIPT KILL refuses: -UNKILLABLE).
    wrote: bool,
    slot: SlotRule,
    /// The errors of its reply: where each starts, and whether it was counted already.
    errors: Vec<(usize, bool)>,
}

impl ScriptHost<'_, '_> {
    /// Redis's scriptCall checks, in its order: the command, or the error that refuses it.
    fn admit(&mut self, argv: &[&[u8]]) -> Result<&'static crate::server::spec::CommandSpec, alloc::string::String> {
        let Some(cmd) = self.ctx.st.index.resolve(argv) else {
            return Err("ERR Unknown Redis command called from script".into());
        };
        if !cmd.arity_ok(argv.len()) {
            return Err("ERR Wrong number of args calling Redis command from script".into());
        }
        if cmd.flags & crate::server::spec::flags::NOSCRIPT != 0 {
            return Err("ERR This Redis command is not allowed from script".into());
        }
        let saved = (self.ctx.in_exec, self.ctx.in_script);
        self.ctx.in_exec = true;
        self.ctx.in_script = true;
        let acl = crate::server::acl::enforce::enforce(self.ctx, cmd, argv);
        (self.ctx.in_exec, self.ctx.in_script) = saved;
        if let Err(crate::server::acl::enforce::Refusal::Error(e)) = acl {
            return Err(e);
        }
        if cmd.is_write() {
            if self.read_only {
                return Err("ERR Write commands are not allowed from read-only scripts.".into());
            }
            self.wrote = true;
        }
        if self.ctx.st.cluster.is_some()
            && let Some(e) = self.cluster_refusal(cmd, argv)
        {
            return Err(e);
        }
        Ok(cmd)
    }

    /// Redis's scriptVerifyClusterState: the command's keys are served here and share the
    /// script's slot.
    fn cluster_refusal(&mut self, cmd: &crate::server::spec::CommandSpec, argv: &[&[u8]]) -> Option<alloc::string::String> {
        if crate::server::cluster::route(self.ctx, cmd, argv, false).is_some() {
            return Some("ERR Script attempted to access a non local key in a cluster node".into());
        }
        let mut idx = Vec::new();
        cmd.key_indexes_argv(argv, &mut idx);
        let &first = idx.first()?;
        let slot = crate::server::cluster::key_slot(argv[first]);
        match self.slot {
            SlotRule::Any => None,
            SlotRule::Unset => {
                self.slot = SlotRule::Slot(slot);
                None
            }
            SlotRule::Slot(s) if s == slot => None,
            SlotRule::Slot(_) => Some("ERR Script attempted to access keys that do not hash to the same slot".into()),
        }
    }
}

impl Host for ScriptHost<'_, '_> {
    fn call(&mut self, argv: &[&[u8]], resp3: bool, out: &mut Vec<u8>) {
        let cmd = match self.admit(argv) {
            Ok(cmd) => cmd,
            Err(e) => {
                out.push(b'-');
                out.extend_from_slice(e.as_bytes());
                out.extend_from_slice(b"\r\n");
                // Counted as a refused call, as Redis's scriptCall does.
                let refused = self.ctx.st.index.resolve(argv);
                self.ctx.st.cmdstats.not_run(core::iter::once(crate::protocol::reply::ErrorCode::of(e.as_bytes())), refused);
                return;
            }
        };
        let ctx = &mut *self.ctx;
        // The reply is written into `out` itself: one buffer serves every call of the run.
        out.clear();
        let mut reply = Reply::with(core::mem::take(out), resp3);
        let mut sub = Ctx::new(ctx.st, ctx.client, ctx.clients, &mut reply, ctx.fx);
        sub.in_exec = true;
        sub.in_script = true;
        crate::server::dispatch::call_resolved(&mut sub, cmd, false, argv);
        let (dirty, unblock) = (sub.dirty, core::mem::take(&mut sub.unblock));
        ctx.dirty += dirty;
        ctx.unblock.extend(unblock);
        *out = reply.buf;
    }

    fn error_reply(&mut self, at: usize, counted: bool) {
        self.errors.push((at, counted));
    }

    fn acl_check(&mut self, argv: &[&[u8]]) -> Option<bool> {
        let cmd = self.ctx.st.index.resolve(argv)?;
        let c = &*self.ctx.client;
        if c.user == crate::server::acl::SUPERUSER {
            return Some(true);
        }
        let user = self.ctx.st.acl.user_of(c.user, c.user_gen)?;
        Some(self.ctx.st.acl.check(user, cmd, argv).is_ok())
    }

    fn log(&mut self, _level: i32, _msg: &[u8]) {
        // The engine has no log of its own: redis.log is accepted and dropped.
    }
}

pub fn script_load(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let sha = sha1_hex(argv[2]);
    if let Err(e) = shebang_flags(argv[2]) {
        return ctx.err(&e);
    }
    match ctx.st.scripts.add(&sha, argv[2]) {
        Ok(()) => ctx.reply.bulk(&sha),
        Err(e) => ctx.err(&format!("ERR Error compiling script (new function): {}", alloc::string::String::from_utf8_lossy(&e))),
    }
}

pub fn script_exists(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    ctx.reply.array(argv.len() - 2);
    for a in &argv[2..] {
        let found = sha_arg(a).is_some_and(|s| ctx.st.scripts.exists(&s));
        ctx.reply.int(found as i64);
    }
}

pub fn script_flush(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() > 3 || (argv.len() == 3 && !eq_ic(argv[2], b"sync") && !eq_ic(argv[2], b"async")) {
        return ctx.err("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
    }
    ctx.st.scripts.flush();
    ctx.reply.ok();
}

pub fn script_kill(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    kill(ctx, true);
}

pub fn script_help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    ]);
}
