//! Server commands: INFO DBSIZE FLUSHDB FLUSHALL TIME LASTSAVE CONFIG COMMAND.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::commands::key_specs;
use crate::commands::table::COMMANDS;
use crate::protocol::batch::{HostRequest, WaitRequest};
use crate::server::ctx::Ctx;
use crate::server::key_spec::{self, BeginSearch, FindKeys, KeySpec};
use crate::server::spec::{CommandSpec, flags};
use crate::util::eq_ic;

pub fn dbsize(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let n = ctx.st.dbs[ctx.client.db].len();
    ctx.reply.int(n as i64);
}

/// The architecture the engine runs on (INFO server's `memoria_engine_arch`): wasm32 in
/// the component that serves clients.
const ENGINE_ARCH: &str = if cfg!(target_arch = "wasm32") {
    "wasm32"
} else if cfg!(target_arch = "x86_64") {
    "x86_64"
} else if cfg!(target_arch = "aarch64") {
    "aarch64"
} else {
    "native"
};

fn flush_mode_ok(ctx: &mut Ctx<'_>, argv: &[&[u8]]) -> bool {
    match argv.len() {
        1 => true,
        2 if eq_ic(argv[1], b"ASYNC") || eq_ic(argv[1], b"SYNC") => true,
        _ => {
            ctx.syntax_error();
            false
        }
    }
}

pub fn flushdb(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if !flush_mode_ok(ctx, argv) {
        return;
    }
    let db = ctx.db();
    ctx.st.signal_flushed_db(Some(db));
    ctx.st.dbs[db].clear();
    ctx.dirty += 1;
    ctx.propagate(&[b"FLUSHDB"]);
    ctx.reply.ok();
}

pub fn flushall(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if !flush_mode_ok(ctx, argv) {
        return;
    }
    ctx.st.signal_flushed_db(None);
    for db in ctx.st.dbs.iter_mut() {
        db.clear();
    }
    ctx.dirty += 1;
    ctx.propagate(&[b"FLUSHALL"]);
    ctx.reply.ok();
}

/// ROLE: what this node is, from the facts the host reports (REC_ROLE).
pub fn role(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let fact = |k: &str| ctx.st.role_info.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default();
    let offset: i64 = fact("offset").parse().unwrap_or(0);
    if ctx.st.replica_mode {
        let (host, port, link) = (fact("master_host"), fact("master_port"), fact("master_link_status"));
        ctx.reply.array(5);
        ctx.reply.bulk(b"slave");
        ctx.reply.bulk(host.as_bytes());
        ctx.reply.int(port.parse().unwrap_or(0));
        ctx.reply.bulk(if link == "down" { b"connect" } else { b"connected" });
        ctx.reply.int(offset);
    } else {
        ctx.reply.array(3);
        ctx.reply.bulk(b"master");
        ctx.reply.int(offset);
        ctx.reply.array(0);
    }
}

/// WAIT numreplicas timeout. The engine checks the arguments and answers as a server
/// without replicas would (0), and asks its host (REC_WAIT) to count replicas: a host with
/// a log holds the reply and answers with the number of replicas that have applied the
/// caller's writes. Inside EXEC, as in Redis, it answers at once.
pub fn wait(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if ctx.st.replica_mode {
        ctx.err("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.");
        return;
    }
    if crate::util::parse_i64(argv[1]).is_none() {
        ctx.not_integer();
        return;
    }
    match crate::util::parse_i64(argv[2]) {
        None => ctx.err("ERR timeout is not an integer or out of range"),
        Some(t) if t < 0 => ctx.err("ERR timeout is negative"),
        Some(t) => {
            ctx.reply.int(0);
            if !ctx.in_exec {
                let numreplicas = crate::util::parse_i64(argv[1]).unwrap_or(0);
                ctx.host = Some(HostRequest::Wait(WaitRequest { numreplicas, timeout_ms: t as u64 }));
            }
        }
    }
}

/// FAILOVER [TIMEOUT ms]: the primary steps down and the election through the log makes
/// a replica the primary. The engine checks the arguments and the role, answers +OK and
/// asks its host (REC_FAILOVER) to step down after the reply. `TO host
/// port` is refused: the election, not the caller, picks the new primary.
pub fn failover(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let mut i = 1;
    let (mut abort, mut to, mut force) = (false, false, false);
    while i < argv.len() {
        let a = argv[i];
        if eq_ic(a, b"abort") {
            abort = true;
            i += 1;
        } else if eq_ic(a, b"force") {
            force = true;
            i += 1;
        } else if eq_ic(a, b"to") && i + 2 < argv.len() {
            to = true;
            i += 3;
        } else if eq_ic(a, b"timeout") && i + 1 < argv.len() {
            match crate::util::parse_i64(argv[i + 1]) {
                Some(t) if t > 0 => {}
                Some(_) => return ctx.err("ERR FAILOVER timeout must be greater than 0"),
                None => return ctx.not_integer(),
            }
            i += 2;
        } else {
            return ctx.err("ERR syntax error");
        }
    }
    if abort {
        if to || force || argv.len() > 2 {
            return ctx.err("ERR FAILOVER abort cannot be used with other options.");
        }
        return ctx.err("ERR No failover in progress.");
    }
    if force && !to {
        return ctx.err("ERR FAILOVER with force option requires both a timeout and target HOST and IP.");
    }
    if ctx.st.replica_mode {
        return ctx.err("ERR FAILOVER is not valid when server is a replica.");
    }
    if to {
        return ctx.err("ERR FAILOVER TO is not supported: the election through the log picks the new primary");
    }
    ctx.reply.ok();
    if !ctx.in_exec {
        ctx.host = Some(HostRequest::Failover);
    }
}

/// SAVE: a snapshot of the shard, taken by the host (the log is the durable copy; a
/// snapshot is what nodes start from). The +OK is held until it is published.
pub fn save(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.ok();
    ctx.host = Some(HostRequest::Save { background: false, schedule: false });
}

/// BGSAVE [SCHEDULE]: the same, answered at once.
pub fn bgsave(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() > 2 || (argv.len() == 2 && !eq_ic(argv[1], b"schedule")) {
        return ctx.err("ERR syntax error");
    }
    if ctx.in_exec {
        // The host could not answer "already in progress" inside EXEC's reply.
        return ctx.err("ERR BGSAVE inside MULTI is not supported: send it on its own");
    }
    ctx.reply.simple(b"Background saving started");
    ctx.host = Some(HostRequest::Save { background: true, schedule: argv.len() == 2 });
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: the node stops as on SIGTERM (every
/// write acknowledged is already in the log, so SAVE/NOSAVE change nothing). The reply
/// here is Redis's for a shutdown that could not happen: the host closes the connection
/// without it when it stops.
pub fn shutdown(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let (mut save, mut nosave, mut other, mut abort) = (false, false, false, false);
    for a in &argv[1..] {
        if eq_ic(a, b"nosave") {
            nosave = true;
        } else if eq_ic(a, b"save") {
            save = true;
        } else if eq_ic(a, b"now") || eq_ic(a, b"force") {
            other = true;
        } else if eq_ic(a, b"abort") {
            abort = true;
        } else {
            return ctx.err("ERR syntax error");
        }
    }
    if (abort && (save || nosave || other)) || (save && nosave) {
        return ctx.err("ERR syntax error");
    }
    if abort {
        // A shutdown here is immediate: there is never one in progress to abort.
        return ctx.err("ERR No shutdown in progress.");
    }
    ctx.err("ERR Errors trying to SHUTDOWN. Check logs.");
    ctx.host = Some(HostRequest::Shutdown);
}

pub fn time(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let us = ctx.st.now_us;
    ctx.reply.array(2);
    ctx.reply.bulk(format!("{}", us / 1_000_000).as_bytes());
    ctx.reply.bulk(format!("{}", us % 1_000_000).as_bytes());
}

/// MONITOR: from now on the client sees every command run (`server::monitor`). Sent again,
/// it is ignored without a reply, as in Redis.
pub fn monitor(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if ctx.in_exec {
        return ctx.err("ERR MONITOR isn't allowed for DENY BLOCKING client");
    }
    if ctx.client.monitor {
        return;
    }
    ctx.client.monitor = true;
    ctx.st.monitors.add(ctx.client.id);
    ctx.reply.simple(b"OK");
}

/// The last snapshot SAVE or BGSAVE published (the host reports it), else the start.
pub fn lastsave(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let host = ctx.st.host_fact("persistence.rdb_last_save_time").and_then(|v| v.parse::<i64>().ok());
    ctx.reply.int(host.unwrap_or(ctx.st.lastsave));
}

// ---- INFO ----

fn section_wanted(args: &[&[u8]], name: &str, default: bool) -> bool {
    if args.is_empty() {
        return default;
    }
    args.iter().any(|a| eq_ic(a, name.as_bytes()) || eq_ic(a, b"all") || eq_ic(a, b"everything") || (eq_ic(a, b"default") && default))
}

/// INFO with these arguments shows the keyspace section (key counts per database).
pub fn info_shows_keyspace(argv: &[&[u8]]) -> bool {
    section_wanted(&argv[1..], "keyspace", true)
}

pub fn info(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let args = &argv[1..];
    let st = &*ctx.st;
    let mut s = String::new();
    let nclients = ctx.clients.iter().flatten().count() + 1;
    if section_wanted(args, "server", true) {
        s.push_str("# Server\r\n");
        s.push_str(&format!("redis_version:{}\r\n", crate::commands::connection::REDIS_VERSION));
        s.push_str(&format!("memoria_version:{}\r\n", env!("CARGO_PKG_VERSION")));
        let mode = if st.cluster.is_some() { "cluster" } else { "standalone" };
        // arch_bits is the server process's (the host's, 64 on x86-64): clients read it as
        // the server's word size. The engine's own architecture has a field of its own.
        let host_bits = st.server_info.split(|&b| b == b'\n').find_map(|l| l.strip_prefix(b"arch_bits:"));
        let bits = host_bits.map_or_else(|| format!("{}", usize::BITS), |b| String::from_utf8_lossy(b).into_owned());
        s.push_str(&format!("redis_mode:{mode}\r\narch_bits:{bits}\r\nmemoria_engine_arch:{ENGINE_ARCH}\r\nmultiplexing_api:tokio\r\n"));
        // The host's own lines; those filed under another section (`memory.…`) go there.
        for line in st.server_info.split(|&b| b == b'\n').filter(|l| !l.is_empty() && !l.starts_with(b"arch_bits:") && !filed_elsewhere(key_of(l))) {
            s.push_str(&String::from_utf8_lossy(line));
            s.push_str("\r\n");
        }
        let up = (st.now_ms - st.start_ms).max(0) / 1000;
        let hz = st.config.value("hz").unwrap_or("10");
        s.push_str(&format!(
            "run_id:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{hz}\r\nconfigured_hz:{hz}\r\nlru_clock:{}\r\nconfig_file:\r\n",
            st.run_id,
            st.now_us,
            up,
            up / 86400,
            st.lru_clock() & ((1 << 24) - 1)
        ));
        s.push_str("\r\n");
    }
    if section_wanted(args, "clients", true) {
        // Redis's timeout table holds the clients blocked with a timeout.
        let timed = ctx
            .clients
            .iter()
            .flatten()
            .chain(core::iter::once(&*ctx.client))
            .filter(|c| c.blocked.as_ref().is_some_and(|b| b.deadline > 0 && !b.postponed))
            .count();
        s.push_str(&format!(
            "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\nblocked_clients:{}\r\ntracking_clients:{}\r\nclients_in_timeout_table:{timed}\r\n",
            nclients,
            st.config.value("maxclients").unwrap_or("10000"),
            st.blocking.blocked_clients(),
            st.tracking.clients.len(),
        ));
        host_filed(st, "clients", &mut s);
        s.push_str("\r\n");
    }
    if section_wanted(args, "memory", true) {
        let used = st.used_memory();
        let peak = st.stats.peak_memory.max(used);
        // Scripting's share, with Redis 7.0's field names (the VMs' heaps; the cached
        // bodies and library codes).
        let (eval_bodies, vm_eval) = st.scripts.memory();
        let (fn_code, vm_fn) = st.functions.memory();
        s.push_str(&format!(
            "# Memory\r\nused_memory:{}\r\nused_memory_human:{}\r\nused_memory_peak:{peak}\r\nused_memory_peak_human:{}\r\nused_memory_peak_perc:{:.2}%\r\nused_memory_startup:{}\r\nused_memory_lua:{vm_eval}\r\nused_memory_vm_eval:{vm_eval}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{eval_bodies}\r\nnumber_of_cached_scripts:{}\r\nnumber_of_functions:{}\r\nnumber_of_libraries:{}\r\nused_memory_vm_functions:{vm_fn}\r\nused_memory_vm_total:{}\r\nused_memory_vm_total_human:{}\r\nused_memory_functions:{fn_code}\r\nused_memory_scripts:{}\r\nused_memory_scripts_human:{}\r\nmaxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\nmem_allocator:dlmalloc\r\nmem_not_counted_for_evict:0\r\nmemoria_engine_memory_limit:{}\r\n",
            used,
            human_bytes(used as u64),
            human_bytes(peak as u64),
            if peak == 0 { 0.0 } else { used as f64 * 100.0 / peak as f64 },
            st.startup_memory,
            human_bytes(vm_eval as u64),
            st.scripts.count(),
            st.functions.by_function.len(),
            st.functions.libraries.len(),
            vm_eval + vm_fn,
            human_bytes((vm_eval + vm_fn) as u64),
            eval_bodies + fn_code,
            human_bytes((eval_bodies + fn_code) as u64),
            st.config.maxmemory,
            human_bytes(st.config.maxmemory),
            st.config.policy_name(),
            crate::server::evict::ENGINE_MEMORY_LIMIT
        ));
        host_filed(st, "memory", &mut s);
        s.push_str("\r\n");
    }
    if section_wanted(args, "persistence", true) {
        s.push_str("# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:0\r\naof_enabled:0\r\nmemoria_durability:log\r\n");
        // The snapshots SAVE and BGSAVE take (the host's figures).
        host_filed(st, "persistence", &mut s);
        s.push_str("\r\n");
    }
    if section_wanted(args, "stats", true) {
        let x = &st.stats;
        let tracked = st.tracking.totals();
        s.push_str(&format!(
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\nexpired_keys:{}\r\nexpired_subkeys:{}\r\nevicted_keys:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\ntracking_total_keys:{}\r\ntracking_total_items:{}\r\ntracking_total_prefixes:{}\r\nrejected_oom_commands:{}\r\nunknown_commands:{}\r\ntotal_error_replies:{}\r\nunexpected_error_replies:0\r\ninstantaneous_ops_per_sec:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\n",
            x.connections,
            x.commands,
            x.expired_keys,
            x.expired_subkeys,
            x.evicted_keys,
            x.keyspace_hits,
            x.keyspace_misses,
            tracked.0,
            tracked.1,
            tracked.2,
            x.rejected_oom,
            x.unknown_commands,
            st.cmdstats.total_error_replies,
            x.ops.per_second(),
            st.pubsub.channels.len(),
            st.pubsub.patterns.len(),
            st.pubsub.shard.len()
        ));
        host_filed(st, "stats", &mut s);
        s.push_str("\r\n");
    }
    if section_wanted(args, "replication", true) {
        s.push_str("# Replication\r\n");
        s.push_str(if st.replica_mode { "role:slave\r\n" } else { "role:master\r\nconnected_slaves:0\r\n" });
        // The cluster facts in role_info are the slot map for routing, not INFO lines.
        for (k, v) in st.role_info.iter().filter(|(k, _)| !k.starts_with("cluster_") && !filed_elsewhere(k.as_bytes())) {
            s.push_str(&format!("{k}:{v}\r\n"));
        }
        s.push_str("\r\n");
    }
    if section_wanted(args, "cpu", true) {
        s.push_str("# CPU\r\n");
        host_filed(st, "cpu", &mut s);
        s.push_str("\r\n");
    }
    // Redis's module list: Memoria loads none.
    if section_wanted(args, "modules", true) {
        s.push_str("# Modules\r\n\r\n");
    }
    // Not in the default set, as in Redis: only by name, `all` or `everything`.
    if section_wanted(args, "commandstats", false) {
        s.push_str("# Commandstats\r\n");
        for (name, c) in st.cmdstats.commandstats() {
            let per_call = if c.calls == 0 { 0.0 } else { c.usec as f64 / c.calls as f64 };
            s.push_str(&format!(
                "cmdstat_{name}:calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
                c.calls, c.usec, c.rejected, c.failed
            ));
        }
        s.push_str("\r\n");
    }
    if section_wanted(args, "errorstats", true) {
        s.push_str("# Errorstats\r\n");
        for (code, n) in st.cmdstats.errorstats() {
            s.push_str(&format!("errorstat_{}:count={n}\r\n", String::from_utf8_lossy(code)));
        }
        s.push_str("\r\n");
    }
    if section_wanted(args, "latencystats", false) {
        s.push_str("# Latencystats\r\n");
        for (name, h) in st.cmdstats.histograms() {
            let fields: Vec<String> = st.config.latency_percentiles.iter().map(|p| format!("p{p}={:.3}", h.value_at_percentile(*p) as f64 / 1000.0)).collect();
            s.push_str(&format!("latency_percentiles_usec_{name}:{}\r\n", fields.join(",")));
        }
        s.push_str("\r\n");
    }
    if section_wanted(args, "cluster", true) {
        s.push_str(&format!("# Cluster\r\ncluster_enabled:{}\r\n\r\n", u8::from(st.cluster.is_some())));
    }
    if section_wanted(args, "keyspace", true) {
        s.push_str("# Keyspace\r\n");
        for (i, db) in st.dbs.iter().enumerate() {
            if !db.is_empty() {
                s.push_str(&format!("db{}:keys={},expires={},avg_ttl=0\r\n", i, db.len(), db.expires.len()));
            }
        }
        s.push_str("\r\n");
    }
    // Memoria's own (not in the default set): where the shard stands with its log and
    // what waits for it, as the host reports it each second.
    if section_wanted(args, "memoria", false) {
        s.push_str("# Memoria\r\n");
        host_filed(st, "memoria", &mut s);
        s.push_str("\r\n");
    }
    while s.ends_with("\r\n\r\n") {
        s.truncate(s.len() - 2);
    }
    ctx.reply.verbatim(s.as_bytes());
}

/// The key of a host line (`key:value`).
fn key_of(line: &[u8]) -> &[u8] {
    line.split(|&b| b == b':').next().unwrap_or(line)
}

/// Whether a host fact belongs to another section than the one it came with (Server's
/// facts, Replication's role lines): its key is `<section>.<field>` (see `host_filed`).
fn filed_elsewhere(key: &[u8]) -> bool {
    key.contains(&b'.')
}

/// The host's lines filed under `section` (`<section>.<field>:<value>`, from its server
/// facts and its role record) as INFO lines; the byte counts `total_system_memory` and
/// `used_memory_rss` get their `_human` lines too.
fn host_filed(st: &crate::server::state::State, section: &str, s: &mut String) {
    for (k, v) in st.host_facts() {
        let Some(field) = k.strip_prefix(section).and_then(|f| f.strip_prefix('.')) else { continue };
        s.push_str(&format!("{field}:{v}\r\n"));
        if (field == "total_system_memory" || field == "used_memory_rss")
            && let Ok(n) = v.parse::<u64>()
        {
            s.push_str(&format!("{field}_human:{}\r\n", human_bytes(n)));
        }
    }
}

fn human_bytes(n: u64) -> String {
    let f = n as f64;
    if n < 1024 {
        format!("{}B", n)
    } else if n < 1 << 20 {
        format!("{:.2}K", f / 1024.0)
    } else if n < 1 << 30 {
        format!("{:.2}M", f / 1048576.0)
    } else {
        format!("{:.2}G", f / 1073741824.0)
    }
}

// ---- CONFIG ----

pub fn config_get(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let mut pairs: Vec<(&'static str, String)> = Vec::new();
    for pat in &argv[2..] {
        for (k, v) in ctx.st.config.get(pat) {
            if !pairs.iter().any(|(n, _)| *n == k) {
                pairs.push((k, v));
            }
        }
    }
    ctx.reply.map(pairs.len());
    for (k, v) in pairs {
        ctx.reply.bulk(k.as_bytes());
        ctx.reply.bulk(v.as_bytes());
    }
}

pub fn config_set(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if !(argv.len() - 2).is_multiple_of(2) {
        return ctx.err("ERR wrong number of arguments for 'config|set' command");
    }
    let mut pairs: Vec<(&[u8], &[u8])> = argv[2..].chunks(2).map(|p| (p[0], p[1])).collect();
    // requirepass sets the default user's password (hashed, logged); its value is not kept.
    let pass = pairs.iter().find(|p| eq_ic(p.0, b"requirepass")).map(|p| p.1);
    if pass.is_some() && ctx.st.replica_mode && !ctx.st.applying {
        return ctx.err("READONLY You can't write against a read only replica.");
    }
    for p in pairs.iter_mut() {
        if eq_ic(p.0, b"requirepass") {
            p.1 = b"";
        }
    }
    match ctx.st.config.set_many(&pairs) {
        Ok(()) => {
            if let Some(p) = pass {
                crate::commands::acl::set_requirepass(ctx, p);
            }
            ctx.reply.ok()
        }
        Err(e) => ctx.err(&e),
    }
}

/// CONFIG SET's secrets for SLOWLOG: the values of Redis's sensitive parameters.
pub fn config_set_secret(argv: &[&[u8]], i: usize) -> bool {
    const SENSITIVE: [&[u8]; 3] = [b"requirepass", b"masterauth", b"masteruser"];
    i >= 3 && i % 2 == 1 && SENSITIVE.iter().any(|s| eq_ic(argv[i - 1], s))
}

pub fn config_resetstat(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.st.stats = Default::default();
    ctx.st.cmdstats.reset();
    ctx.reply.ok();
}

pub fn config_rewrite(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.err("ERR The server is running without a config file");
}

pub fn config_help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
        "REWRITE",
        "    Rewrite the configuration file.",
        "HELP",
        "    Prints this help.",
    ]);
}

// ---- COMMAND ----

fn all_specs() -> Vec<&'static CommandSpec> {
    COMMANDS.iter().collect()
}

fn reply_command_info(ctx: &mut Ctx<'_>, c: &'static CommandSpec) {
    let meta = key_specs::meta(c.name);
    let specs = key_specs::key_specs_of(c);
    let r = &mut *ctx.reply;
    r.array(10);
    r.bulk(c.name.as_bytes());
    r.int(c.arity as i64);
    let mut names: Vec<&str> = flags::NAMES.iter().filter(|(b, _)| c.flags & b != 0).map(|(_, n)| *n).collect();
    if c.movable_keys() {
        let at = names.iter().position(|n| *n == "allow_busy").unwrap_or(names.len());
        names.insert(at, "movablekeys");
    }
    r.set(names.len());
    for n in names {
        r.simple(n.as_bytes());
    }
    // Redis derives these from the key specs too (keys found by keyword or count: 0 0 0).
    let (first, last, step) = key_spec::legacy_range(&specs);
    r.int(first as i64);
    r.int(last as i64);
    r.int(step as i64);
    let cats = c.acl_categories();
    r.set(cats.len());
    for cat in cats {
        r.simple(cat.as_bytes());
    }
    let tips = meta.map_or(&[][..], |m| m.tips);
    r.set(tips.len());
    for t in tips {
        r.bulk(t.as_bytes());
    }
    r.set(specs.len());
    for s in &specs {
        reply_key_spec(r, s);
    }
    let subs = c.subcommands;
    // A command without subcommands shows an empty set, a container an array (Redis's shapes).
    if subs.is_empty() {
        ctx.reply.set(0);
    } else {
        ctx.reply.array(subs.len());
    }
    for s in subs {
        reply_command_info(ctx, s);
    }
}

/// One key spec as COMMAND INFO shows it: notes (if any), flags, begin_search, find_keys.
fn reply_key_spec(r: &mut crate::protocol::reply::Reply, s: &KeySpec) {
    r.map(3 + s.notes.is_some() as usize);
    if let Some(n) = s.notes {
        r.bulk(b"notes");
        r.bulk(n.as_bytes());
    }
    r.bulk(b"flags");
    let names: Vec<&str> = key_spec::key_flags::NAMES.iter().filter(|(b, _)| s.flags & b != 0).map(|(_, n)| *n).collect();
    r.set(names.len());
    for n in names {
        r.simple(n.as_bytes());
    }
    r.bulk(b"begin_search");
    match s.begin_search {
        BeginSearch::Index(i) => typed_spec(r, b"index", &[(b"index", Field::Int(i as i64))]),
        BeginSearch::Keyword { keyword, startfrom } => {
            typed_spec(r, b"keyword", &[(b"keyword", Field::Text(keyword.as_bytes())), (b"startfrom", Field::Int(startfrom as i64))])
        }
        BeginSearch::Unknown => typed_spec(r, b"unknown", &[]),
    }
    r.bulk(b"find_keys");
    match s.find_keys {
        FindKeys::Range { lastkey, step, limit } => {
            typed_spec(r, b"range", &[(b"lastkey", Field::Int(lastkey as i64)), (b"keystep", Field::Int(step as i64)), (b"limit", Field::Int(limit as i64))])
        }
        FindKeys::Keynum { keynumidx, firstkey, step } => typed_spec(
            r,
            b"keynum",
            &[(b"keynumidx", Field::Int(keynumidx as i64)), (b"firstkey", Field::Int(firstkey as i64)), (b"keystep", Field::Int(step as i64))],
        ),
        FindKeys::Unknown => typed_spec(r, b"unknown", &[]),
    }
}

/// A value in a key spec's `spec` map.
enum Field<'a> {
    Int(i64),
    Text(&'a [u8]),
}

/// `{type: <kind>, spec: {name: value, …}}`, the shape of begin_search and find_keys.
fn typed_spec(r: &mut crate::protocol::reply::Reply, kind: &[u8], fields: &[(&[u8], Field<'_>)]) {
    r.map(2);
    r.bulk(b"type");
    r.bulk(kind);
    r.bulk(b"spec");
    r.map(fields.len());
    for (name, v) in fields {
        r.bulk(name);
        match v {
            Field::Int(i) => r.int(*i),
            Field::Text(t) => r.bulk(t),
        }
    }
}

pub fn command_info(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() <= 2 {
        let specs = all_specs();
        ctx.reply.array(specs.len());
        for c in specs {
            reply_command_info(ctx, c);
        }
        return;
    }
    let names = &argv[2..];
    ctx.reply.array(names.len());
    for n in names {
        match lookup_full(ctx, n) {
            Some(c) => reply_command_info(ctx, c),
            None => ctx.reply.null_array(),
        }
    }
}

/// Looks up `name` or `container|sub`.
fn lookup_full(ctx: &Ctx<'_>, name: &[u8]) -> Option<&'static CommandSpec> {
    let mut parts = name.splitn(2, |&b| b == b'|');
    let top = ctx.st.index.lookup(parts.next()?)?;
    match parts.next() {
        None => Some(top),
        Some(sub) => crate::server::spec::find_sub(top, sub),
    }
}

pub fn command_count(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.int(COMMANDS.len() as i64);
}

pub fn command_list(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let mut names: Vec<&'static CommandSpec> = Vec::new();
    for c in COMMANDS {
        names.push(c);
        names.extend(c.subcommands.iter());
    }
    if argv.len() > 2 {
        if argv.len() != 5 || !eq_ic(argv[2], b"FILTERBY") {
            return ctx.syntax_error();
        }
        let (kind, val) = (argv[3], argv[4]);
        if eq_ic(kind, b"PATTERN") {
            names.retain(|c| crate::util::glob_match(val, c.name.as_bytes(), true));
        } else if eq_ic(kind, b"ACLCAT") {
            names.retain(|c| c.acl_categories().iter().any(|cat| eq_ic(&cat.as_bytes()[1..], val)));
        } else if eq_ic(kind, b"MODULE") {
            names.clear();
        } else {
            return ctx.syntax_error();
        }
    }
    ctx.reply.array(names.len());
    for c in names {
        ctx.reply.bulk(c.name.as_bytes());
    }
}

fn reply_docs(ctx: &mut Ctx<'_>, c: &'static CommandSpec) {
    let n = if c.subcommands.is_empty() { 3 } else { 4 };
    ctx.reply.map(n);
    ctx.reply.bulk(b"summary");
    ctx.reply.bulk(c.summary.as_bytes());
    ctx.reply.bulk(b"since");
    ctx.reply.bulk(c.since.as_bytes());
    ctx.reply.bulk(b"group");
    ctx.reply.bulk(c.group.as_bytes());
    if !c.subcommands.is_empty() {
        ctx.reply.bulk(b"subcommands");
        ctx.reply.map(c.subcommands.len());
        for s in c.subcommands {
            ctx.reply.bulk(s.name.as_bytes());
            reply_docs(ctx, s);
        }
    }
}

pub fn command_docs(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let specs: Vec<&'static CommandSpec> = if argv.len() == 2 { all_specs() } else { argv[2..].iter().filter_map(|n| lookup_full(ctx, n)).collect() };
    ctx.reply.map(specs.len());
    for c in specs {
        ctx.reply.bulk(c.name.as_bytes());
        reply_docs(ctx, c);
    }
}

/// The command GETKEYS/GETKEYSANDFLAGS is asked about and its keys' positions in `args`
/// (its name first), or the error Redis answers.
fn keys_of_command(ctx: &Ctx<'_>, args: &[&[u8]]) -> Result<(&'static CommandSpec, Vec<usize>), &'static str> {
    let Some(top) = ctx.st.index.lookup(args[0]) else {
        return Err("ERR Invalid command specified");
    };
    let cmd = if top.subcommands.is_empty() {
        top
    } else {
        match args.get(1).and_then(|s| crate::server::spec::find_sub(top, s)) {
            Some(s) => s,
            None => return Err("ERR Invalid command specified"),
        }
    };
    if !cmd.arity_ok(args.len()) {
        return Err("ERR Invalid number of arguments specified for command");
    }
    let mut idx = Vec::new();
    cmd.key_indexes_argv(args, &mut idx);
    if idx.is_empty() && cmd.flags & crate::server::spec::flags::NO_MANDATORY_KEYS == 0 {
        if cmd.movable_keys() {
            return Err("ERR Invalid arguments specified for command");
        }
        return Err("ERR The command has no key arguments");
    }
    Ok((cmd, idx))
}

pub fn command_getkeys(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let args = &argv[2..];
    match keys_of_command(ctx, args) {
        Ok((_, idx)) => {
            ctx.reply.array(idx.len());
            for i in idx {
                ctx.reply.bulk(args[i]);
            }
        }
        Err(e) => ctx.err(e),
    }
}

pub fn command_getkeysandflags(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let args = &argv[2..];
    let (cmd, idx) = match keys_of_command(ctx, args) {
        Ok(found) => found,
        Err(e) => return ctx.err(e),
    };
    let flags = key_flags_at(cmd, args, &idx);
    ctx.reply.array(idx.len());
    for (i, f) in idx.iter().zip(flags) {
        ctx.reply.array(2);
        ctx.reply.bulk(args[*i]);
        let names: Vec<&str> = key_spec::key_flags::NAMES.iter().filter(|(b, _)| f & b != 0).map(|(_, n)| *n).collect();
        ctx.reply.set(names.len());
        for n in names {
            ctx.reply.simple(n.as_bytes());
        }
    }
}

/// The key-spec flags of each key at `idx`: those of the first spec that finds it. A
/// count Redis reads through the command's key finder rather than its spec gives keys no
/// flags; a key no spec finds (SORT's STORE) has the flags of the last spec whose search
/// only the command knows, as Redis's key finder gives it.
fn key_flags_at(cmd: &CommandSpec, args: &[&[u8]], idx: &[usize]) -> Vec<u32> {
    use crate::server::spec::{Movable, numkeys_span};
    let by_finder = match cmd.movable {
        Movable::NumKeys(at) => numkeys_span(args, at).is_some_and(|s| !s.by_spec),
        Movable::DestNumKeys => numkeys_span(args, 2).is_some_and(|s| !s.by_spec),
        _ => false,
    };
    if by_finder {
        return alloc::vec![0; idx.len()];
    }
    let meta = key_specs::meta(cmd.name);
    let specs = key_specs::key_specs_of(cmd);
    let flags_of = |s: &KeySpec| {
        if s.flags & key_spec::key_flags::VARIABLE_FLAGS != 0
            && let Some(f) = meta.and_then(|m| m.variable_flags)
        {
            return f(args);
        }
        s.flags
    };
    let mut found: Vec<(usize, u32)> = Vec::new();
    for s in specs.iter().filter(|s| s.flags & key_spec::key_flags::NOT_KEY == 0) {
        let mut at = Vec::new();
        s.find(args, &mut at);
        found.extend(at.into_iter().map(|i| (i, flags_of(s))));
    }
    let unknown = specs.iter().rev().find(|s| s.begin_search == BeginSearch::Unknown).map_or(0, |s| s.flags);
    idx.iter().map(|i| found.iter().find(|(at, _)| at == i).map_or(unknown, |(_, f)| *f)).collect()
}

pub fn command_help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Return details about all Redis commands.",
        "COUNT",
        "    Return the total number of commands in this Redis server.",
        "LIST",
        "    Return a list of all commands in this Redis server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple Redis commands.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple Redis commands.",
        "GETKEYS <full-command>",
        "    Return the keys from a full Redis command.",
        "GETKEYSANDFLAGS <full-command>",
        "    Return the keys and the access flags from a full Redis command.",
        "HELP",
        "    Prints this help.",
    ]);
}
