//! MEMORY USAGE/STATS/DOCTOR/MALLOC-STATS/PURGE/HELP. The figures are the engine's own:
//! its heap (dlmalloc in the component's linear memory) is what Redis's allocator is, and
//! the process around it (the host, Wasmtime) is reported apart as the RSS. MEMORY USAGE
//! estimates a key from its structures' sizes, sampling aggregates as Redis does
//! (`util::memsize`), so its figures are Memoria's, not redis-server's.

use alloc::format;
use alloc::vec::Vec;

use crate::server::ctx::Ctx;
use crate::server::state::State;

/// Redis's OBJ_COMPUTE_SIZE_DEF_SAMPLES.
const DEFAULT_SAMPLES: usize = 5;

pub fn usage(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let mut samples = DEFAULT_SAMPLES;
    let mut j = 3;
    while j < argv.len() {
        if argv[j].eq_ignore_ascii_case(b"samples") && j + 1 < argv.len() {
            let Some(n) = ctx.int_arg(argv[j + 1]) else { return };
            if n < 0 {
                return ctx.syntax_error();
            }
            samples = if n == 0 { usize::MAX } else { usize::try_from(n).unwrap_or(usize::MAX) };
            j += 2;
        } else {
            return ctx.syntax_error();
        }
    }
    match ctx.st.dbs[ctx.db()].memory_usage(argv[2], samples) {
        Some(bytes) => ctx.reply.int(bytes.min(i64::MAX as u64) as i64),
        None => ctx.reply.null(),
    }
}

/// What MEMORY STATS and DOCTOR are computed from (Redis's redisMemOverhead).
struct Overhead {
    peak: u64,
    total: u64,
    startup: u64,
    clients_normal: u64,
    eval_caches: u64,
    functions_caches: u64,
    /// (db, keyspace overhead, expiry index overhead) of each database with keys.
    dbs: Vec<(usize, u64, u64)>,
    overhead_total: u64,
    keys: u64,
    /// The engine's linear memory: what its allocator holds from the system.
    allocator_resident: u64,
    rss: Option<u64>,
}

/// A byte count the host reports.
fn host_fact(st: &State, name: &str) -> Option<u64> {
    st.host_fact(name).and_then(|v| v.trim().parse().ok())
}

/// The bytes the engine's linear memory spans (the allocator's resident set).
fn linear_memory(used: u64) -> u64 {
    #[cfg(target_arch = "wasm32")]
    {
        (core::arch::wasm32::memory_size(0) as u64 * 65536).max(used)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        used
    }
}

impl Overhead {
    fn of(st: &State) -> Overhead {
        let total = st.used_memory() as u64;
        let (eval_bodies, vm_eval) = st.scripts.memory();
        let (fn_code, vm_fn) = st.functions.memory();
        let clients_normal = host_fact(st, "memory.mem_clients_normal").unwrap_or(0);
        let dbs: Vec<(usize, u64, u64)> = st
            .dbs
            .iter()
            .enumerate()
            .filter(|(_, d)| !d.is_empty() || !d.expires.is_empty())
            .map(|(i, d)| {
                let (main, expires) = d.overhead();
                (i, main, expires)
            })
            .collect();
        let startup = st.startup_memory as u64;
        let eval_caches = (eval_bodies + vm_eval) as u64;
        let functions_caches = (fn_code + vm_fn) as u64;
        let overhead_total = startup + clients_normal + eval_caches + functions_caches + dbs.iter().map(|(_, m, e)| m + e).sum::<u64>();
        Overhead {
            peak: (st.stats.peak_memory as u64).max(total),
            total,
            startup,
            clients_normal,
            eval_caches,
            functions_caches,
            dbs,
            overhead_total,
            keys: st.dbs.iter().map(|d| d.len() as u64).sum(),
            allocator_resident: linear_memory(total),
            rss: host_fact(st, "memory.used_memory_rss"),
        }
    }

    fn net(&self) -> u64 {
        self.total.saturating_sub(self.startup)
    }

    fn dataset(&self) -> u64 {
        self.total.saturating_sub(self.overhead_total)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

pub fn stats(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let m = Overhead::of(ctx.st);
    let r = &mut *ctx.reply;
    r.map(27 + m.dbs.len());
    let int = |r: &mut crate::protocol::reply::Reply, k: &str, v: u64| {
        r.bulk(k.as_bytes());
        r.int(v.min(i64::MAX as u64) as i64);
    };
    // Redis prints these ratios from floats.
    let float = |r: &mut crate::protocol::reply::Reply, k: &str, v: f64| {
        r.bulk(k.as_bytes());
        r.double(v as f32 as f64);
    };
    int(r, "peak.allocated", m.peak);
    int(r, "total.allocated", m.total);
    int(r, "startup.allocated", m.startup);
    // No replication backlog, replica buffers, cluster bus or AOF buffer: replicas read
    // the log.
    int(r, "replication.backlog", 0);
    int(r, "clients.slaves", 0);
    int(r, "clients.normal", m.clients_normal);
    int(r, "cluster.links", 0);
    int(r, "aof.buffer", 0);
    int(r, "lua.caches", m.eval_caches);
    int(r, "functions.caches", m.functions_caches);
    for &(db, main, expires) in &m.dbs {
        r.bulk(format!("db.{db}").as_bytes());
        r.map(3);
        int(r, "overhead.hashtable.main", main);
        int(r, "overhead.hashtable.expires", expires);
        int(r, "overhead.hashtable.slot-to-keys", 0);
    }
    int(r, "overhead.total", m.overhead_total);
    int(r, "keys.count", m.keys);
    int(r, "keys.bytes-per-key", m.net().checked_div(m.keys).unwrap_or(0));
    int(r, "dataset.bytes", m.dataset());
    float(r, "dataset.percentage", ratio(m.dataset() * 100, m.net()));
    float(r, "peak.percentage", ratio(m.total * 100, m.peak));
    int(r, "allocator.allocated", m.total);
    int(r, "allocator.active", m.total);
    int(r, "allocator.resident", m.allocator_resident);
    float(r, "allocator-fragmentation.ratio", 1.0);
    int(r, "allocator-fragmentation.bytes", 0);
    float(r, "allocator-rss.ratio", ratio(m.allocator_resident, m.total));
    int(r, "allocator-rss.bytes", m.allocator_resident - m.total);
    let rss = m.rss.unwrap_or(m.allocator_resident);
    float(r, "rss-overhead.ratio", ratio(rss, m.allocator_resident));
    int(r, "rss-overhead.bytes", rss.saturating_sub(m.allocator_resident));
    float(r, "fragmentation", ratio(rss, m.total));
    int(r, "fragmentation.bytes", rss.saturating_sub(m.total));
}

/// Redis's report texts, for the conditions that mean the same here. Fragmentation is
/// judged on the engine's heap against its linear memory (the process's RSS also holds
/// the host and Wasmtime, so its ratio to the data says nothing about the allocator).
pub fn doctor(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let m = Overhead::of(ctx.st);
    let clients = ctx.clients.iter().flatten().count() as u64 + 1;
    let mut found: Vec<&str> = Vec::new();
    let empty = m.total < 5 << 20;
    if !empty {
        if ratio(m.peak, m.total) > 1.5 {
            found.push(" * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n");
        }
        if ratio(m.allocator_resident, m.total) > 1.1 && m.allocator_resident - m.total > 10 << 20 {
            found.push(" * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n");
        }
        if m.clients_normal / clients > 200 * 1024 {
            found.push(" * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n");
        }
        if ctx.st.scripts.count() > 1000 {
            found.push(" * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.\n\n");
        }
    }
    let report = if empty {
        "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n".into()
    } else if found.is_empty() {
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n".into()
    } else {
        let mut s = alloc::string::String::from("Sam, I detected a few issues in this Redis instance memory implants:\n\n");
        for f in found {
            s.push_str(f);
        }
        s.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
        s
    };
    ctx.reply.verbatim(report.as_bytes());
}

/// Redis answers this for an allocator other than jemalloc; the engine's dlmalloc keeps
/// no statistics beyond what MEMORY STATS shows.
pub fn malloc_stats(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.verbatim(b"Stats not supported for the current allocator");
}

/// dlmalloc returns freed memory at the top of the heap by itself; a wasm linear memory
/// never shrinks, so there is nothing more to purge.
pub fn purge(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.ok();
}

pub fn help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return memory problems reports.",
        "MALLOC-STATS",
        "    Return internal statistics report from the memory allocator.",
        "PURGE",
        "    Attempt to purge dirty pages for reclamation by the allocator.",
        "STATS",
        "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
        "HELP",
        "    Prints this help.",
    ]);
}
