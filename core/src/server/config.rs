//! Runtime configuration (CONFIG GET/SET) with redis.conf names. Parameters the engine
//! honours are kept typed; the rest are accepted and echoed so tools that tune them work.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use alloc::{format, vec};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EvictionPolicy {
    NoEviction,
    AllKeysLru,
    VolatileLru,
    AllKeysLfu,
    VolatileLfu,
    AllKeysRandom,
    VolatileRandom,
    VolatileTtl,
}

impl EvictionPolicy {
    /// An LFU policy: keys' access fields count frequency instead of holding a clock.
    pub fn is_lfu(self) -> bool {
        matches!(self, EvictionPolicy::AllKeysLfu | EvictionPolicy::VolatileLfu)
    }
}

const POLICIES: &[(&str, EvictionPolicy)] = &[
    ("noeviction", EvictionPolicy::NoEviction),
    ("allkeys-lru", EvictionPolicy::AllKeysLru),
    ("volatile-lru", EvictionPolicy::VolatileLru),
    ("allkeys-lfu", EvictionPolicy::AllKeysLfu),
    ("volatile-lfu", EvictionPolicy::VolatileLfu),
    ("allkeys-random", EvictionPolicy::AllKeysRandom),
    ("volatile-random", EvictionPolicy::VolatileRandom),
    ("volatile-ttl", EvictionPolicy::VolatileTtl),
];

#[derive(Clone, Copy)]
enum Kind {
    /// Integer within [min, max].
    Int(i64, i64),
    /// Byte size with unit suffixes (1gb, 100mb…), at least the given minimum.
    Memory(u64),
    Bool,
    Policy,
    KeyspaceEvents,
    /// Free-form string.
    Str,
    /// Reported but not settable at runtime.
    Immutable,
    /// Space-separated percentiles, each within 0–100 (`latency-tracking-info-percentiles`).
    Percentiles,
    /// `client-output-buffer-limit`: `<class> <hard> <soft> <soft-seconds>` groups; a SET
    /// changes only the classes it names (as Redis).
    OutputBufferLimit,
}

struct Param {
    name: &'static str,
    alias: Option<&'static str>,
    kind: Kind,
    default: &'static str,
}

const PARAMS: &[Param] = &[
    // The engine's own ceiling (`evict::ENGINE_MEMORY_LIMIT`: its wasm32 memory ends at
    // 4 GiB), as Redis's 32-bit build defaults to 3 GB: the limit in force shows here.
    Param { name: "maxmemory", alias: None, kind: Kind::Memory(0), default: "3221225472" },
    Param { name: "maxmemory-policy", alias: None, kind: Kind::Policy, default: "noeviction" },
    Param { name: "maxmemory-samples", alias: None, kind: Kind::Int(1, i32::MAX as i64), default: "5" },
    Param { name: "maxmemory-eviction-tenacity", alias: None, kind: Kind::Int(0, 100), default: "10" },
    Param { name: "hash-max-listpack-entries", alias: Some("hash-max-ziplist-entries"), kind: Kind::Int(0, i64::MAX), default: "128" },
    Param { name: "hash-max-listpack-value", alias: Some("hash-max-ziplist-value"), kind: Kind::Int(0, i64::MAX), default: "64" },
    Param { name: "set-max-intset-entries", alias: None, kind: Kind::Int(0, i64::MAX), default: "512" },
    Param { name: "zset-max-listpack-entries", alias: Some("zset-max-ziplist-entries"), kind: Kind::Int(0, i64::MAX), default: "128" },
    Param { name: "zset-max-listpack-value", alias: Some("zset-max-ziplist-value"), kind: Kind::Int(0, i64::MAX), default: "64" },
    Param { name: "list-max-listpack-size", alias: Some("list-max-ziplist-size"), kind: Kind::Int(i32::MIN as i64, i32::MAX as i64), default: "-2" },
    Param { name: "list-compress-depth", alias: None, kind: Kind::Int(0, i32::MAX as i64), default: "0" },
    Param { name: "stream-node-max-bytes", alias: None, kind: Kind::Memory(0), default: "4096" },
    Param { name: "stream-node-max-entries", alias: None, kind: Kind::Int(0, i64::MAX), default: "100" },
    Param { name: "hll-sparse-max-bytes", alias: None, kind: Kind::Memory(0), default: "3000" },
    Param { name: "notify-keyspace-events", alias: None, kind: Kind::KeyspaceEvents, default: "" },
    Param { name: "proto-max-bulk-len", alias: None, kind: Kind::Memory(1 << 20), default: "536870912" },
    Param { name: "client-query-buffer-limit", alias: None, kind: Kind::Memory(1 << 20), default: "1073741824" },
    Param { name: "acllog-max-len", alias: None, kind: Kind::Int(0, i64::MAX), default: "128" },
    Param { name: "tracking-table-max-keys", alias: None, kind: Kind::Int(0, i64::MAX), default: "1000000" },
    Param { name: "maxclients", alias: None, kind: Kind::Int(1, u32::MAX as i64), default: "10000" },
    Param { name: "timeout", alias: None, kind: Kind::Int(0, i32::MAX as i64), default: "0" },
    Param { name: "client-output-buffer-limit", alias: None, kind: Kind::OutputBufferLimit, default: OBUF_DEFAULT },
    // Memoria's own: a client that sent part of a command and then nothing for this many
    // seconds is dropped (0: never), so half-sent requests cannot pile up.
    Param { name: "partial-request-timeout", alias: None, kind: Kind::Int(0, i32::MAX as i64), default: "30" },
    // Memoria's own: the host interrupts an engine call (one batch) that runs longer than
    // this many milliseconds (0: never), fails its clients and rebuilds the engine from
    // the log, so no request can hold a shard (see the watchdog in `host/src/wasm.rs`).
    // Off by default: the epoch checks it needs cost more than 3 % (benches/watchdog.rs);
    // a node started with it off has no checks, and a CONFIG SET then has no effect.
    Param { name: "engine-call-timeout", alias: None, kind: Kind::Int(0, i32::MAX as i64), default: "0" },
    // A script's work is bounded by this many milliseconds' worth of VM instructions
    // (counted, not timed: deterministic); past it the script is stopped with an error.
    // Redis answers -BUSY to others past it instead; Memoria does not run scripts across
    // engine calls yet.
    Param { name: "busy-reply-threshold", alias: Some("lua-time-limit"), kind: Kind::Int(0, i64::MAX), default: "5000" },
    Param { name: "tls-port", alias: None, kind: Kind::Immutable, default: "0" },
    // The node's --enable-debug-command: no, yes or local (loopback clients only).
    Param { name: "enable-debug-command", alias: None, kind: Kind::Immutable, default: "no" },
    Param { name: "tls-cert-file", alias: None, kind: Kind::Immutable, default: "" },
    Param { name: "tls-key-file", alias: None, kind: Kind::Immutable, default: "" },
    Param { name: "tls-ca-cert-file", alias: None, kind: Kind::Immutable, default: "" },
    Param { name: "tls-auth-clients", alias: None, kind: Kind::Immutable, default: "yes" },
    Param { name: "tcp-keepalive", alias: None, kind: Kind::Int(0, i32::MAX as i64), default: "300" },
    Param { name: "hz", alias: None, kind: Kind::Int(0, i32::MAX as i64), default: "10" },
    Param { name: "active-expire-effort", alias: None, kind: Kind::Int(1, 10), default: "1" },
    Param { name: "lfu-log-factor", alias: None, kind: Kind::Int(0, i32::MAX as i64), default: "10" },
    Param { name: "lfu-decay-time", alias: None, kind: Kind::Int(0, i32::MAX as i64), default: "1" },
    Param { name: "slowlog-log-slower-than", alias: None, kind: Kind::Int(-1, i64::MAX), default: "10000" },
    Param { name: "slowlog-max-len", alias: None, kind: Kind::Int(0, i64::MAX), default: "128" },
    Param { name: "latency-tracking", alias: None, kind: Kind::Bool, default: "yes" },
    Param { name: "latency-monitor-threshold", alias: None, kind: Kind::Int(0, i64::MAX), default: "0" },
    Param { name: "latency-tracking-info-percentiles", alias: None, kind: Kind::Percentiles, default: "50 99 99.9" },
    Param { name: "lazyfree-lazy-eviction", alias: None, kind: Kind::Bool, default: "no" },
    Param { name: "lazyfree-lazy-expire", alias: None, kind: Kind::Bool, default: "no" },
    Param { name: "lazyfree-lazy-server-del", alias: None, kind: Kind::Bool, default: "no" },
    Param { name: "lazyfree-lazy-user-del", alias: None, kind: Kind::Bool, default: "no" },
    Param { name: "lazyfree-lazy-user-flush", alias: None, kind: Kind::Bool, default: "no" },
    Param { name: "activerehashing", alias: None, kind: Kind::Bool, default: "yes" },
    // Never holds the password: CONFIG SET requirepass goes to the default ACL user
    // (server::config_set), and CONFIG GET shows an empty value.
    Param { name: "requirepass", alias: None, kind: Kind::Str, default: "" },
    Param { name: "protected-mode", alias: None, kind: Kind::Bool, default: "yes" },
    Param { name: "appendonly", alias: None, kind: Kind::Immutable, default: "no" },
    Param { name: "save", alias: None, kind: Kind::Str, default: "" },
    Param { name: "databases", alias: None, kind: Kind::Immutable, default: "16" },
    Param { name: "cluster-enabled", alias: None, kind: Kind::Immutable, default: "no" },
    Param { name: "port", alias: None, kind: Kind::Immutable, default: "6379" },
    Param { name: "bind", alias: None, kind: Kind::Immutable, default: "127.0.0.1" },
    Param { name: "dir", alias: None, kind: Kind::Immutable, default: "./memoria-data" },
];

const OBUF_DEFAULT: &str = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60";

/// The parameters the host enforces (connection limits): after a CONFIG SET the engine
/// hands their values to the host (`batch::REC_CONFIG`), and the host sets them at start.
pub const HOST_PARAMS: &[&str] = &[
    "maxclients",
    "timeout",
    "client-output-buffer-limit",
    "partial-request-timeout",
    "client-query-buffer-limit",
    "proto-max-bulk-len",
    "engine-call-timeout",
];

/// One class of `client-output-buffer-limit` (0 = no limit).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct OutputLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_seconds: u64,
}

/// `client-output-buffer-limit` by class, as Redis keeps it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct OutputLimits {
    pub normal: OutputLimit,
    pub replica: OutputLimit,
    pub pubsub: OutputLimit,
}

impl OutputLimits {
    /// Applies `value` (Redis's `updateClientOutputBufferLimit`: all groups are checked
    /// before any is applied; classes not named keep their limits).
    pub fn update(&mut self, value: &str) -> Result<(), &'static str> {
        let args: Vec<&str> = value.split_ascii_whitespace().collect();
        if !args.len().is_multiple_of(4) {
            return Err("Wrong number of arguments in buffer limit configuration.");
        }
        let mut next = *self;
        for g in args.chunks(4) {
            let class = match g[0].to_ascii_lowercase().as_str() {
                "normal" => &mut next.normal,
                "slave" | "replica" => &mut next.replica,
                "pubsub" => &mut next.pubsub,
                _ => return Err("Invalid client class specified in buffer limit configuration."),
            };
            let bad = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
            let hard = parse_memory(g[1]).ok_or(bad)?;
            let soft = parse_memory(g[2]).ok_or(bad)?;
            let secs = g[3].parse::<i64>().ok().filter(|&n| n >= 0).ok_or(bad)?;
            *class = OutputLimit { hard, soft, soft_seconds: secs as u64 };
        }
        *self = next;
        Ok(())
    }

    pub fn render(&self) -> String {
        let c = |n: &str, l: &OutputLimit| format!("{} {} {} {}", n, l.hard, l.soft, l.soft_seconds);
        format!("{} {} {}", c("normal", &self.normal), c("slave", &self.replica), c("pubsub", &self.pubsub))
    }
}

/// The flags as text that parses back to all of them (`render_notify` omits `n` after `A`).
fn full_notify(f: u32) -> String {
    let mut s = render_notify(f);
    if f & crate::server::notify::NEW != 0 && !s.contains('n') {
        s.push('n');
    }
    s
}

/// Whether `name` is a parameter fixed at start (the host sets it, CONFIG SET refuses it).
pub fn is_immutable(name: &str) -> bool {
    PARAMS.iter().any(|p| p.name == name && matches!(p.kind, Kind::Immutable))
}

/// Parses a memory value like redis.conf's `memtoull`: digits with an optional
/// k/kb/m/mb/g/gb suffix (k = 1000, kb = 1024).
pub fn parse_memory(s: &str) -> Option<u64> {
    let l = s.to_ascii_lowercase();
    let (num, mul): (&str, u64) = if let Some(n) = l.strip_suffix("gb") {
        (n, 1 << 30)
    } else if let Some(n) = l.strip_suffix("mb") {
        (n, 1 << 20)
    } else if let Some(n) = l.strip_suffix("kb") {
        (n, 1 << 10)
    } else if let Some(n) = l.strip_suffix('g') {
        (n, 1_000_000_000)
    } else if let Some(n) = l.strip_suffix('m') {
        (n, 1_000_000)
    } else if let Some(n) = l.strip_suffix('k') {
        (n, 1000)
    } else if let Some(n) = l.strip_suffix('b') {
        (n, 1)
    } else {
        (l.as_str(), 1)
    };
    if num.is_empty() || !num.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    num.parse::<u64>().ok()?.checked_mul(mul)
}

pub use crate::server::notify::{KEYEVENT as NOTIFY_KEYEVENT, KEYSPACE as NOTIFY_KEYSPACE, parse as parse_notify, render as render_notify};

/// A size or count parameter as a usize: past what the target's usize holds (the wasm32
/// engine's is 32 bits) it saturates, where `as usize` would keep the low bits (4294967296
/// would read as 0). Nothing in the engine counts past usize::MAX, so a saturated limit
/// acts as the configured one.
fn size(v: i64) -> usize {
    usize::try_from(v.max(0)).unwrap_or(usize::MAX)
}

pub struct Config {
    values: Vec<String>,
    pub maxmemory: u64,
    pub policy: EvictionPolicy,
    pub maxmemory_samples: usize,
    pub hash_max_listpack_entries: usize,
    pub hash_max_listpack_value: usize,
    pub set_max_intset_entries: usize,
    pub zset_max_listpack_entries: usize,
    pub zset_max_listpack_value: usize,
    pub hll_sparse_max_bytes: usize,
    /// list-max-listpack-size: < 0 caps a list node's bytes (-1 4 KiB … -5 64 KiB), > 0 its
    /// entries.
    pub list_max_listpack_size: i64,
    /// u64 on every target: the wasm32 engine's usize would cut 4294967296 to 0.
    pub proto_max_bulk_len: u64,
    /// `busy-reply-threshold` (alias `lua-time-limit`) in ms: read by every script run.
    pub busy_reply_threshold: i64,
    pub notify_flags: u32,
    /// Keys the client-side caching table holds at most (0: no limit).
    pub tracking_table_max_keys: u64,
    /// Entries the ACL LOG keeps (the oldest go first, at the next entry).
    pub acllog_max_len: usize,
    /// `databases`, fixed at start: SELECT, MOVE, SWAPDB and COPY … DB go by it.
    pub databases: usize,
    /// `lfu-log-factor` and `lfu-decay-time` (minutes): how LFU counters grow and decay.
    pub lfu_log_factor: u32,
    pub lfu_decay_time: u32,
    pub stream_node_max_bytes: u64,
    pub stream_node_max_entries: i64,
    /// `slowlog-log-slower-than` in µs (negative: the slow log is off).
    pub slowlog_log_slower_than: i64,
    pub slowlog_max_len: usize,
    pub latency_tracking: bool,
    /// `latency-monitor-threshold` in ms (0: the monitor is off).
    pub latency_monitor_threshold: u64,
    /// The percentiles INFO latencystats shows.
    pub latency_percentiles: Vec<f64>,
    /// A CONFIG SET succeeded since the engine last told the host its parameters.
    pub host_changed: bool,
    /// Parameters a CONFIG SET changed (by index in `PARAMS`): the host keeps their
    /// values and gives them to a rebuilt engine, so a change outlives the instance.
    set_at_runtime: Vec<bool>,
}

impl Default for Config {
    fn default() -> Self {
        let mut c = Config {
            values: PARAMS.iter().map(|p| p.default.to_string()).collect(),
            maxmemory: 0,
            policy: EvictionPolicy::NoEviction,
            maxmemory_samples: 5,
            hash_max_listpack_entries: 128,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            hll_sparse_max_bytes: 3000,
            list_max_listpack_size: -2,
            proto_max_bulk_len: 512 << 20,
            busy_reply_threshold: 5000,
            notify_flags: 0,
            tracking_table_max_keys: 1_000_000,
            acllog_max_len: 128,
            databases: crate::server::state::DEFAULT_DBS,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
            stream_node_max_bytes: 4096,
            stream_node_max_entries: 100,
            slowlog_log_slower_than: 10_000,
            slowlog_max_len: 128,
            latency_tracking: true,
            latency_monitor_threshold: 0,
            latency_percentiles: Vec::new(),
            host_changed: false,
            set_at_runtime: vec![false; PARAMS.len()],
        };
        c.refresh();
        c
    }
}

impl Config {
    fn index(name: &str) -> Option<usize> {
        PARAMS.iter().position(|p| p.name.eq_ignore_ascii_case(name) || p.alias.is_some_and(|a| a.eq_ignore_ascii_case(name)))
    }

    /// Name/value pairs whose name (or alias) matches the glob `pattern`.
    pub fn get(&self, pattern: &[u8]) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        for (i, p) in PARAMS.iter().enumerate() {
            if crate::util::glob_match(pattern, p.name.as_bytes(), true) {
                out.push((p.name, self.values[i].clone()));
            }
            if let Some(a) = p.alias {
                // Redis 7.0 reports an alias as a parameter of its own.
                if crate::util::glob_match(pattern, a.as_bytes(), true) {
                    out.push((a, self.values[i].clone()));
                }
            }
        }
        out
    }

    /// Host-set immutable facts (port, bind, dir).
    pub fn set_fixed(&mut self, name: &str, value: &str) {
        let Some(i) = Self::index(name) else { return };
        if matches!(PARAMS[i].kind, Kind::KeyspaceEvents) {
            // Shown as Redis renders it (which can drop `n`), kept as given.
            let Some(f) = parse_notify(value) else { return };
            self.values[i] = render_notify(f);
            self.notify_flags = f;
        } else {
            self.values[i] = value.to_string();
        }
        self.refresh();
    }

    pub fn value(&self, name: &str) -> Option<&str> {
        Self::index(name).map(|i| self.values[i].as_str())
    }

    /// Applies all pairs or none (CONFIG SET is atomic since Redis 7).
    pub fn set_many(&mut self, pairs: &[(&[u8], &[u8])]) -> Result<(), String> {
        let mut staged = self.values.clone();
        let mut seen = Vec::new();
        let mut changed = Vec::new();
        // The parsed notification flags: the rendered value can drop `n` (after `A`).
        let mut notify = None;
        for (name, value) in pairs {
            let name_s = String::from_utf8_lossy(name);
            let Some(i) = Self::index(&name_s) else {
                return Err(format!("ERR Unknown option or number of arguments for CONFIG SET - '{}'", name_s));
            };
            // A name and its alias are distinct parameters to Redis's duplicate check (the
            // later one wins); the same name twice is an error.
            let via_alias = !PARAMS[i].name.eq_ignore_ascii_case(&name_s);
            if seen.contains(&(i, via_alias)) {
                return Err(format!("ERR CONFIG SET failed (possibly related to argument '{}') - duplicate parameter", name_s));
            }
            seen.push((i, via_alias));
            changed.push(i);
            let v = String::from_utf8_lossy(value).into_owned();
            let fail = |why: &str| format!("ERR CONFIG SET failed (possibly related to argument '{}') - {}", name_s, why);
            staged[i] = match PARAMS[i].kind {
                Kind::Immutable => return Err(fail("can't set immutable config")),
                Kind::Int(min, max) => match v.parse::<i64>() {
                    // Redis accepts any hz and clamps what it applies (and reports) to 1..500.
                    Ok(n) if n >= min && n <= max && PARAMS[i].name == "hz" => n.clamp(1, 500).to_string(),
                    Ok(n) if n >= min && n <= max => n.to_string(),
                    Ok(_) => return Err(fail(&format!("argument must be between {} and {} inclusive", min, max))),
                    Err(_) => return Err(fail("argument couldn't be parsed into an integer")),
                },
                Kind::Memory(min) => match parse_memory(&v) {
                    Some(n) if n >= min && n <= i64::MAX as u64 => n.to_string(),
                    Some(_) => return Err(fail(&format!("argument must be between {} and {} inclusive", min, i64::MAX))),
                    None => return Err(fail("argument must be a memory value")),
                },
                Kind::Bool => match v.to_ascii_lowercase().as_str() {
                    "yes" | "no" => v.to_ascii_lowercase(),
                    _ => return Err(fail("argument must be 'yes' or 'no'")),
                },
                Kind::Policy => match POLICIES.iter().find(|(n, _)| n.eq_ignore_ascii_case(&v)) {
                    Some((n, _)) => n.to_string(),
                    None => {
                        return Err(fail(
                            "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction",
                        ));
                    }
                },
                Kind::KeyspaceEvents => match parse_notify(&v) {
                    Some(f) => {
                        notify = Some(f);
                        render_notify(f)
                    }
                    None => return Err(fail("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")),
                },
                Kind::Str => v,
                Kind::Percentiles => {
                    let mut shown = Vec::new();
                    for p in v.split_whitespace() {
                        match p.parse::<f64>() {
                            Ok(x) if (0.0..=100.0).contains(&x) => shown.push(format!("{x}")),
                            Ok(_) => return Err(fail("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")),
                            Err(_) => return Err(fail("Invalid latency-tracking-info-percentiles parameters")),
                        }
                    }
                    shown.join(" ")
                }
                Kind::OutputBufferLimit => {
                    let mut l = OutputLimits::default();
                    let _ = l.update(&staged[i]);
                    match l.update(&v) {
                        Ok(()) => l.render(),
                        Err(why) => return Err(fail(why)),
                    }
                }
            };
        }
        self.values = staged;
        self.refresh();
        self.host_changed = true;
        for i in changed {
            self.set_at_runtime[i] = true;
        }
        if let Some(f) = notify {
            self.notify_flags = f;
        }
        Ok(())
    }

    pub fn num(&self, name: &str) -> i64 {
        self.value(name).and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    /// Re-derives the typed fields from the string table.
    fn refresh(&mut self) {
        self.maxmemory = self.num("maxmemory") as u64;
        let p = self.value("maxmemory-policy").unwrap_or("noeviction");
        self.policy = POLICIES.iter().find(|(n, _)| *n == p).map(|x| x.1).unwrap_or(EvictionPolicy::NoEviction);
        self.maxmemory_samples = size(self.num("maxmemory-samples").max(1));
        self.hash_max_listpack_entries = size(self.num("hash-max-listpack-entries"));
        self.hash_max_listpack_value = size(self.num("hash-max-listpack-value"));
        self.set_max_intset_entries = size(self.num("set-max-intset-entries").min(1 << 30));
        self.zset_max_listpack_entries = size(self.num("zset-max-listpack-entries"));
        self.zset_max_listpack_value = size(self.num("zset-max-listpack-value"));
        self.hll_sparse_max_bytes = size(self.num("hll-sparse-max-bytes").clamp(0, i32::MAX as i64));
        self.list_max_listpack_size = self.num("list-max-listpack-size");
        self.proto_max_bulk_len = self.num("proto-max-bulk-len").max(0) as u64;
        self.busy_reply_threshold = self.num("busy-reply-threshold").max(0);
        // The rendered value drops `n` after `A`: re-parse only when it no longer matches the
        // flags, so refreshing for another parameter keeps new-key events on.
        let events = self.value("notify-keyspace-events").unwrap_or("");
        if render_notify(self.notify_flags) != events {
            self.notify_flags = parse_notify(events).unwrap_or(0);
        }
        self.stream_node_max_bytes = self.num("stream-node-max-bytes") as u64;
        self.tracking_table_max_keys = self.num("tracking-table-max-keys").max(0) as u64;
        self.acllog_max_len = size(self.num("acllog-max-len").max(0));
        self.databases = size(self.num("databases")).clamp(1, crate::server::state::MAX_DBS);
        self.lfu_log_factor = self.num("lfu-log-factor").clamp(0, u32::MAX as i64) as u32;
        self.lfu_decay_time = self.num("lfu-decay-time").clamp(0, u32::MAX as i64) as u32;
        self.stream_node_max_entries = self.num("stream-node-max-entries");
        self.slowlog_log_slower_than = self.num("slowlog-log-slower-than");
        self.slowlog_max_len = size(self.num("slowlog-max-len").max(0));
        self.latency_tracking = self.value("latency-tracking") == Some("yes");
        self.latency_monitor_threshold = self.num("latency-monitor-threshold").max(0) as u64;
        self.latency_percentiles = self.value("latency-tracking-info-percentiles").unwrap_or("").split_whitespace().filter_map(|p| p.parse().ok()).collect();
    }

    /// `name value` lines of the parameters the host enforces (`HOST_PARAMS`), then of
    /// every other parameter a CONFIG SET changed, for the host to give a rebuilt engine
    /// (`set_fixed` takes them back). The password is not among them (it lives in the
    /// default ACL user, which the log and snapshots carry), nor a value a line cannot hold.
    pub fn host_values(&self) -> String {
        let mut t = String::new();
        let mut line = |n: &str, v: &str| {
            t.push_str(n);
            t.push(' ');
            t.push_str(v);
            t.push('\n');
        };
        for n in HOST_PARAMS {
            line(n, self.value(n).unwrap_or(""));
        }
        for (i, p) in PARAMS.iter().enumerate() {
            let v = &self.values[i];
            if !self.set_at_runtime[i] || HOST_PARAMS.contains(&p.name) || p.name == "requirepass" || v.contains(['\n', '\r']) {
                continue;
            }
            match p.kind {
                // Every flag, `n` included (the shown value can omit it).
                Kind::KeyspaceEvents => line(p.name, &full_notify(self.notify_flags)),
                _ => line(p.name, v),
            }
        }
        t
    }

    pub fn policy_name(&self) -> &str {
        self.value("maxmemory-policy").unwrap_or("noeviction")
    }

    pub fn all_names() -> Vec<&'static str> {
        let mut v = vec![];
        for p in PARAMS {
            v.push(p.name);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_units() {
        assert_eq!(parse_memory("1gb"), Some(1 << 30));
        assert_eq!(parse_memory("100mb"), Some(100 << 20));
        assert_eq!(parse_memory("5k"), Some(5000));
        assert_eq!(parse_memory("12"), Some(12));
        assert_eq!(parse_memory("x"), None);
    }

    #[test]
    fn set_is_atomic() {
        let mut c = Config::default();
        assert!(c.set_many(&[(b"maxmemory", b"1mb"), (b"hz", b"-1")]).is_err());
        assert_eq!(c.maxmemory, 3 << 30, "unchanged: the default, the engine's ceiling");
        c.set_many(&[(b"maxmemory", b"1mb"), (b"hash-max-ziplist-entries", b"4")]).unwrap();
        assert_eq!(c.maxmemory, 1 << 20);
        assert_eq!(c.hash_max_listpack_entries, 4);
        c.set_many(&[(b"notify-keyspace-events", b"KEA")]).unwrap();
        assert_eq!(c.value("notify-keyspace-events"), Some("AKE"));
    }

    #[test]
    fn new_key_events_survive_their_rendering_and_later_sets() {
        let mut c = Config::default();
        c.set_many(&[(b"notify-keyspace-events", b"KEAn")]).unwrap();
        assert_eq!(c.value("notify-keyspace-events"), Some("AKE"));
        let with_new = c.notify_flags;
        assert_ne!(with_new & crate::server::notify::NEW, 0);
        // A failed set changes nothing (Redis 7.0 would restore from "AKE" and lose `n`).
        assert!(c.set_many(&[(b"notify-keyspace-events", b"bad!")]).is_err());
        c.set_many(&[(b"hz", b"20")]).unwrap();
        c.set_fixed("port", "7000");
        assert_eq!(c.notify_flags, with_new);
        c.set_many(&[(b"notify-keyspace-events", b"KEA")]).unwrap();
        assert_eq!(c.notify_flags & crate::server::notify::NEW, 0);
    }

    #[test]
    fn output_buffer_limits_update_named_classes() {
        let mut c = Config::default();
        c.set_many(&[(b"client-output-buffer-limit", b"pubsub 1mb 512kb 10")]).unwrap();
        assert_eq!(c.value("client-output-buffer-limit"), Some("normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 10"));
        assert!(c.host_values().contains("client-output-buffer-limit normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 10\n"));
        for bad in [&b"pubsub 1mb 1mb"[..], b"master 1 1 1", b"normal x 1 1", b"normal 1 1 -1"] {
            assert!(c.set_many(&[(b"client-output-buffer-limit", bad)]).is_err(), "{:?}", bad);
        }
        let mut l = OutputLimits::default();
        l.update(c.value("client-output-buffer-limit").unwrap()).unwrap();
        assert_eq!(l.pubsub, OutputLimit { hard: 1 << 20, soft: 512 << 10, soft_seconds: 10 });
        assert_eq!(l.replica.hard, 268435456);
    }
}
