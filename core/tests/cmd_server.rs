//! Server commands: CONFIG GET/SET/RESETSTAT (atomic multi-set, aliases, bad values),
//! COMMAND COUNT/INFO/DOCS/GETKEYS/LIST shapes, INFO sections, DBSIZE, FLUSHDB/FLUSHALL,
//! TIME, LASTSAVE.

mod cmdutil;
mod common;

use std::collections::BTreeSet;

use cmdutil::*;
use common::{H, NIL, OK, bulk, err, int};

const T0: i64 = 1_700_000_000_000;

fn cfg_err(name: &str, why: &str) -> String {
    err(&format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"))
}

fn config_pairs(h: &mut H, pat: &str) -> BTreeSet<(String, String)> {
    let v = parse_bulks(&h.c(&format!("CONFIG GET {pat}")));
    v.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect()
}

fn pairs(items: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    items.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn config_get() {
    let mut h = H::new();
    ck(&mut h, "CONFIG GET maxmemory", bulks(&["maxmemory", "3221225472"]));
    ck(&mut h, "CONFIG GET MAXMEMORY", bulks(&["maxmemory", "3221225472"]));
    ck(&mut h, "CONFIG GET maxmemory-policy", bulks(&["maxmemory-policy", "noeviction"]));
    ck(&mut h, "CONFIG GET nosuch", "*0\r\n");
    ck(&mut h, "CONFIG GET", err("ERR wrong number of arguments for 'config|get' command"));
    // Several patterns; each parameter once.
    assert_eq!(config_pairs(&mut h, "maxmemory maxmemory-policy maxmemory"), pairs(&[("maxmemory", "3221225472"), ("maxmemory-policy", "noeviction")]));
    // Globs match names and aliases, reporting both.
    assert_eq!(
        config_pairs(&mut h, "hash-max-*"),
        pairs(&[
            ("hash-max-listpack-entries", "128"),
            ("hash-max-listpack-value", "64"),
            ("hash-max-ziplist-entries", "128"),
            ("hash-max-ziplist-value", "64")
        ])
    );
    ck(&mut h, "CONFIG GET hash-max-ziplist-entries", bulks(&["hash-max-ziplist-entries", "128"]));
    ck(&mut h, "CONFIG GET hash-max-listpack-entries", bulks(&["hash-max-listpack-entries", "128"]));
    let all = config_pairs(&mut h, "*");
    for name in ["maxmemory", "maxmemory-policy", "maxmemory-samples", "notify-keyspace-events", "proto-max-bulk-len", "hz", "databases", "save", "appendonly"]
    {
        assert!(all.iter().any(|(n, _)| n == name), "CONFIG GET * lacks {name}");
    }
    ck(&mut h, "CONFIG GET databases", bulks(&["databases", "16"]));
}

#[test]
fn config_set_values() {
    let mut h = H::new();
    ck(&mut h, "CONFIG SET maxmemory 1mb", OK);
    ck(&mut h, "CONFIG GET maxmemory", bulks(&["maxmemory", "1048576"]));
    ck(&mut h, "CONFIG SET maxmemory 5k", OK);
    ck(&mut h, "CONFIG GET maxmemory", bulks(&["maxmemory", "5000"]));
    ck(&mut h, "CONFIG SET maxmemory 1GB", OK);
    ck(&mut h, "CONFIG GET maxmemory", bulks(&["maxmemory", "1073741824"]));
    ck(&mut h, "CONFIG SET maxmemory 0", OK);
    ck(&mut h, "CONFIG SET maxmemory-policy ALLKEYS-LRU", OK);
    ck(&mut h, "CONFIG GET maxmemory-policy", bulks(&["maxmemory-policy", "allkeys-lru"]));
    ck(&mut h, "CONFIG SET notify-keyspace-events KEA", OK);
    ck(&mut h, "CONFIG GET notify-keyspace-events", bulks(&["notify-keyspace-events", "AKE"]));
    ck(&mut h, "CONFIG SET notify-keyspace-events Ex", OK);
    ck(&mut h, "CONFIG GET notify-keyspace-events", bulks(&["notify-keyspace-events", "xE"]));
    ckr(&mut h, &[b"CONFIG".as_slice(), b"SET", b"notify-keyspace-events", b""], OK);
    ck(&mut h, "CONFIG GET notify-keyspace-events", bulks(&["notify-keyspace-events", ""]));
    ck(&mut h, "CONFIG SET lazyfree-lazy-eviction YES", OK);
    ck(&mut h, "CONFIG GET lazyfree-lazy-eviction", bulks(&["lazyfree-lazy-eviction", "yes"]));
    // hz is clamped to 1..500 like Redis.
    ck(&mut h, "CONFIG SET hz 0", OK);
    ck(&mut h, "CONFIG GET hz", bulks(&["hz", "1"]));
    ck(&mut h, "CONFIG SET hz 1000", OK);
    ck(&mut h, "CONFIG GET hz", bulks(&["hz", "500"]));
    ck(&mut h, "CONFIG SET maxmemory-samples 65", OK);
    // An alias sets the same parameter.
    ck(&mut h, "CONFIG SET hash-max-ziplist-value 32", OK);
    ck(&mut h, "CONFIG GET hash-max-listpack-value", bulks(&["hash-max-listpack-value", "32"]));
    // A name and its alias in one CONFIG SET: the later wins, as in Redis 7.0.
    ck(&mut h, "CONFIG SET hash-max-listpack-entries 8 hash-max-ziplist-entries 7", OK);
    ck(&mut h, "CONFIG GET hash-max-listpack-entries", bulks(&["hash-max-listpack-entries", "7"]));
}

#[test]
fn config_set_errors_and_atomicity() {
    let mut h = H::new();
    ck(&mut h, "CONFIG SET", err("ERR wrong number of arguments for 'config|set' command"));
    ck(&mut h, "CONFIG SET maxmemory", err("ERR wrong number of arguments for 'config|set' command"));
    ck(&mut h, "CONFIG SET maxmemory 1 hz", err("ERR wrong number of arguments for 'config|set' command"));
    ck(&mut h, "CONFIG SET nosuch 1", err("ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"));
    ck(&mut h, "CONFIG SET maxmemory 1mb maxmemory 2mb", cfg_err("maxmemory", "duplicate parameter"));
    ck(&mut h, "CONFIG SET maxmemory abc", cfg_err("maxmemory", "argument must be a memory value"));
    ck(&mut h, "CONFIG SET maxmemory -1", cfg_err("maxmemory", "argument must be a memory value"));
    ck(&mut h, "CONFIG SET maxmemory 1.5mb", cfg_err("maxmemory", "argument must be a memory value"));
    ck(
        &mut h,
        "CONFIG SET maxmemory-policy foo",
        cfg_err(
            "maxmemory-policy",
            "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction",
        ),
    );
    ck(&mut h, "CONFIG SET hz x", cfg_err("hz", "argument couldn't be parsed into an integer"));
    ck(&mut h, "CONFIG SET hz -1", cfg_err("hz", "argument must be between 0 and 2147483647 inclusive"));
    ck(&mut h, "CONFIG SET maxmemory-eviction-tenacity 101", cfg_err("maxmemory-eviction-tenacity", "argument must be between 0 and 100 inclusive"));
    ck(&mut h, "CONFIG SET maxmemory-samples 0", cfg_err("maxmemory-samples", "argument must be between 1 and 2147483647 inclusive"));
    ck(&mut h, "CONFIG SET hash-max-listpack-entries -1", cfg_err("hash-max-listpack-entries", "argument must be between 0 and 9223372036854775807 inclusive"));
    ck(&mut h, "CONFIG SET maxclients 0", cfg_err("maxclients", "argument must be between 1 and 4294967295 inclusive"));
    ck(&mut h, "CONFIG SET timeout -1", cfg_err("timeout", "argument must be between 0 and 2147483647 inclusive"));
    ck(&mut h, "CONFIG SET active-expire-effort 11", cfg_err("active-expire-effort", "argument must be between 1 and 10 inclusive"));
    ck(&mut h, "CONFIG SET slowlog-log-slower-than -2", cfg_err("slowlog-log-slower-than", "argument must be between -1 and 9223372036854775807 inclusive"));
    ck(&mut h, "CONFIG SET proto-max-bulk-len 10", cfg_err("proto-max-bulk-len", "argument must be between 1048576 and 9223372036854775807 inclusive"));
    ck(&mut h, "CONFIG SET lazyfree-lazy-eviction maybe", cfg_err("lazyfree-lazy-eviction", "argument must be 'yes' or 'no'"));
    ck(&mut h, "CONFIG SET notify-keyspace-events Z", cfg_err("notify-keyspace-events", "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."));
    ck(&mut h, "CONFIG SET databases 3", cfg_err("databases", "can't set immutable config"));
    ck(&mut h, "CONFIG SET cluster-enabled yes", cfg_err("cluster-enabled", "can't set immutable config"));
    // All or nothing: a bad pair anywhere leaves every parameter as it was.
    ck(&mut h, "CONFIG SET maxmemory 1mb maxmemory-policy allkeys-lru hz -1", cfg_err("hz", "argument must be between 0 and 2147483647 inclusive"));
    ck(&mut h, "CONFIG SET maxmemory 1mb nosuch 1", err("ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'"));
    assert_eq!(config_pairs(&mut h, "maxmemory*"), config_pairs(&mut H::new(), "maxmemory*"));
    ck(&mut h, "CONFIG SET maxmemory 1mb maxmemory-policy allkeys-lru hz 20", OK);
    assert_eq!(config_pairs(&mut h, "maxmemory maxmemory-policy hz"), pairs(&[("maxmemory", "1048576"), ("maxmemory-policy", "allkeys-lru"), ("hz", "20")]));
    // CONFIG SET is not replicated: it changes no data.
    assert!(h.effect_lines().is_empty());
    ck(&mut h, "CONFIG REWRITE", err("ERR The server is running without a config file"));
    ck(&mut h, "CONFIG FOO", err("ERR unknown subcommand 'FOO'. Try CONFIG HELP."));
    ck(&mut h, "CONFIG", err("ERR wrong number of arguments for 'config' command"));
    let help = h.c("CONFIG HELP");
    assert!(help.starts_with("*") && help.contains("\r\n+CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"), "{help:?}");
}

#[test]
fn config_resetstat_and_info_stats() {
    let mut h = H::new();
    h.c("SET a 1");
    h.c("GET a");
    h.c("GET nokey");
    h.c("NOSUCH");
    let stats = bulk_text(&h.c("INFO stats"));
    assert!(stats.starts_with("# Stats\r\n"), "{stats:?}");
    assert!(stats.contains("\r\nkeyspace_hits:1\r\n") && stats.contains("\r\nkeyspace_misses:1\r\n"), "{stats:?}");
    assert!(stats.contains("\r\nunknown_commands:1\r\n"), "{stats:?}");
    assert!(stats.contains("\r\ntotal_commands_processed:3\r\n"), "{stats:?}");
    ck(&mut h, "CONFIG RESETSTAT", OK);
    let stats = bulk_text(&h.c("INFO stats"));
    assert!(stats.contains("\r\nkeyspace_hits:0\r\n") && stats.contains("\r\nkeyspace_misses:0\r\n"), "{stats:?}");
    assert!(stats.contains("\r\ntotal_commands_processed:1\r\n"), "{stats:?}");
    // expired_keys counts lazy expiry.
    h.c("SET e v PX 10");
    h.advance(10);
    h.c("GET e");
    let stats = bulk_text(&h.c("INFO stats"));
    assert!(stats.contains("\r\nexpired_keys:1\r\n"), "{stats:?}");
}

#[test]
fn info_sections() {
    let mut h = H::new();
    h.c("SET a 1");
    h.c("EXPIRE a 100");
    h.c("SET b 2");
    h.c("SELECT 3");
    h.c("SET c 3");
    h.client = 2;
    h.c("PING");
    h.client = 1;
    let ks = h.c("INFO keyspace");
    assert_eq!(bulk_text(&ks), "# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=0\r\ndb3:keys=1,expires=0,avg_ttl=0\r\n");
    ck(&mut h, "INFO foo", "$0\r\n\r\n");
    let all = bulk_text(&h.c("INFO"));
    let sections: Vec<&str> = all.lines().filter(|l| l.starts_with("# ")).collect();
    assert_eq!(
        sections,
        ["# Server", "# Clients", "# Memory", "# Persistence", "# Stats", "# Replication", "# CPU", "# Modules", "# Errorstats", "# Cluster", "# Keyspace"]
    );
    // A standalone node says so as redis-server does; the facts behind cluster routing are
    // not INFO lines.
    assert_eq!(bulk_text(&h.c("INFO cluster")), "# Cluster\r\ncluster_enabled:0\r\n");
    assert!(all.contains("\r\nredis_mode:standalone\r\n"), "{all:?}");
    assert!(all.ends_with("\r\n") && !all.ends_with("\r\n\r\n"), "{all:?}");
    assert!(all.contains("\r\n\r\n# Clients\r\n"), "sections are separated by a blank line");
    for l in all.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        assert!(l.contains(':'), "field line {l:?}");
    }
    assert!(all.contains("redis_version:7.0.15\r\n"));
    assert!(all.contains("\r\nconnected_clients:2\r\n"));
    assert!(all.contains("\r\nrole:master\r\n"));
    let headers = |s: &str| -> Vec<String> { s.lines().filter(|l| l.starts_with("# ")).map(String::from).collect() };
    assert_eq!(headers(&bulk_text(&h.c("INFO default"))), headers(&all));
    // `all` and `everything` add the sections INFO leaves out by default, in Redis's order.
    let every = [
        "# Server",
        "# Clients",
        "# Memory",
        "# Persistence",
        "# Stats",
        "# Replication",
        "# CPU",
        "# Modules",
        "# Commandstats",
        "# Errorstats",
        "# Latencystats",
        "# Cluster",
        "# Keyspace",
        // Memoria's own, last.
        "# Memoria",
    ];
    assert_eq!(headers(&bulk_text(&h.c("INFO all"))), every);
    assert_eq!(headers(&bulk_text(&h.c("INFO everything"))), every);
    // Several sections, any case, in Redis's fixed order.
    let two = bulk_text(&h.c("INFO KEYSPACE server"));
    let sections: Vec<&str> = two.lines().filter(|l| l.starts_with("# ")).collect();
    assert_eq!(sections, ["# Server", "# Keyspace"]);
    // Uptime follows the host's clock.
    h.advance(90_061_000);
    let server = bulk_text(&h.c("INFO server"));
    assert!(server.contains("\r\nuptime_in_seconds:90061\r\nuptime_in_days:1\r\n"), "{server:?}");
    // Memory reports the probe and the configured limit.
    h.e.set_memory_probe(|| 2048);
    h.c("CONFIG SET maxmemory 1mb maxmemory-policy allkeys-random");
    let mem = bulk_text(&h.c("INFO memory"));
    assert!(mem.contains("\r\nused_memory:2048\r\nused_memory_human:2.00K\r\n"), "{mem:?}");
    assert!(mem.contains("\r\nmaxmemory:1048576\r\nmaxmemory_human:1.00M\r\nmaxmemory_policy:allkeys-random\r\n"), "{mem:?}");
    // Scripting's share, with Redis 7.0's field names.
    assert!(mem.contains("\r\nnumber_of_cached_scripts:0\r\nnumber_of_functions:0\r\n"), "{mem:?}");
    // RESP3: a verbatim string.
    h.c("HELLO 3");
    let r = h.c("INFO keyspace");
    assert!(r.starts_with("=") && r.contains("\r\ntxt:# Keyspace\r\n"), "{r:?}");
    // The host's facts appear in the server section and in CONFIG GET.
    let mut b = memoria_core::protocol::batch::BatchWriter::new();
    b.record(memoria_core::protocol::batch::REC_SERVER_INFO, 0, b"tcp_port:7777\nprocess_id:42\n");
    h.e.execute(&b.buf, h.now_ms * 1000, 1);
    h.c("HELLO 2");
    ck(&mut h, "CONFIG GET port", bulks(&["port", "7777"]));
    assert!(bulk_text(&h.c("INFO server")).contains("\r\ntcp_port:7777\r\nprocess_id:42\r\n"));
}

#[test]
fn dbsize_flush_time_lastsave() {
    let mut h = H::new();
    ck(&mut h, "DBSIZE", int(0));
    h.c("MSET a 1 b 2");
    h.c("SELECT 1");
    h.c("SET c 3");
    ck(&mut h, "DBSIZE", int(1));
    ck(&mut h, "FLUSHDB", OK);
    ck(&mut h, "DBSIZE", int(0));
    h.c("SELECT 0");
    ck(&mut h, "DBSIZE", int(2));
    h.c("SELECT 2");
    h.c("SET d 4");
    ck(&mut h, "FLUSHALL", OK);
    assert_eq!(h.e.total_keys(), 0);
    ck(&mut h, "FLUSHALL FOO", err("ERR syntax error"));
    ck(&mut h, "FLUSHDB ASYNC x", err("ERR syntax error"));
    assert_eq!(h.effect_lines(), ["0:MSET a 1 b 2", "1:SET c 3", "1:FLUSHDB", "2:SET d 4", "2:FLUSHALL"]);
    // FLUSHALL on an empty data set still replicates (Redis does too).
    ck(&mut h, "FLUSHALL", OK);
    assert_eq!(h.effect_lines().last().unwrap(), "2:FLUSHALL");
    // TIME is the host's clock.
    h.now_ms = T0 + 1234;
    ck(&mut h, "TIME", bulks(&[&(T0 / 1000 + 1).to_string(), "234000"]));
    ck(&mut h, "TIME x", err("ERR wrong number of arguments for 'time' command"));
    ck(&mut h, "LASTSAVE", int(T0 / 1000));
}

/// COMMAND GETKEYSANDFLAGS reports each key with the flags of the spec that finds it
/// (host/tests/command_info.rs compares more invocations with redis-server).
#[test]
fn getkeysandflags_reports_spec_flags() {
    let mut h = H::new();
    let key = |k: &str, flags: &[&str]| {
        let mut s = format!("*2\r\n${}\r\n{k}\r\n*{}\r\n", k.len(), flags.len());
        for f in flags {
            s.push_str(&format!("+{f}\r\n"));
        }
        s
    };
    ck(&mut h, "COMMAND GETKEYSANDFLAGS SET k v", format!("*1\r\n{}", key("k", &["OW", "update"])));
    ck(&mut h, "COMMAND GETKEYSANDFLAGS SET k v GET", format!("*1\r\n{}", key("k", &["RW", "access", "update"])));
    ck(&mut h, "COMMAND GETKEYSANDFLAGS LMOVE a b LEFT RIGHT", format!("*2\r\n{}{}", key("a", &["RW", "access", "delete"]), key("b", &["RW", "insert"])));
    ck(&mut h, "COMMAND GETKEYSANDFLAGS SORT k BY w STORE d", format!("*2\r\n{}{}", key("k", &["RO", "access"]), key("d", &["OW", "update"])));
    // A count the key spec cannot read goes through the key finder: no flags, as Redis.
    ck(&mut h, "COMMAND GETKEYSANDFLAGS ZUNIONSTORE d +2 a b", format!("*3\r\n{}{}{}", key("a", &[]), key("b", &[]), key("d", &[])));
    ck(&mut h, "COMMAND GETKEYSANDFLAGS SSUBSCRIBE c", err("ERR The command has no key arguments"));
}

/// Key specs of the hash-field expiry commands (newer than Redis 7.0, so not compared with
/// redis-server): one spec at 1, as the Redis/Valkey documentation gives them.
#[test]
fn hash_field_expiry_key_specs() {
    let mut h = H::new();
    for (name, flags) in [
        ("hexpire", &["RW", "update"][..]),
        ("hpexpireat", &["RW", "update"]),
        ("hpersist", &["RW", "update"]),
        ("httl", &["RO", "access"]),
        ("hpexpiretime", &["RO", "access"]),
        ("hgetdel", &["RW", "access", "delete"]),
        ("hgetex", &["RW", "access", "update"]),
        ("hsetex", &["RW", "update"]),
    ] {
        let mut spec = format!("*6\r\n$5\r\nflags\r\n*{}\r\n", flags.len());
        for f in flags {
            spec.push_str(&format!("+{f}\r\n"));
        }
        spec.push_str("$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n");
        spec.push_str(
            "$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n",
        );
        let info = h.c(&format!("COMMAND INFO {name}"));
        assert!(info.contains("\r\n:1\r\n:1\r\n:1\r\n"), "{name}: {info:?}");
        assert!(info.ends_with(&format!("*0\r\n*1\r\n{spec}*0\r\n")), "{name}: {info:?}");
    }
}

/// COMMAND INFO's flags as redis-server 7.0.15 lists them: its order, `movablekeys` for
/// commands whose keys are found by reading their arguments (cluster clients such as
/// redis-py then ask COMMAND GETKEYS where the keys are), `may_replicate` hidden.
#[test]
fn command_info_flags_as_redis_lists_them() {
    let mut h = H::new();
    for (name, flags) in [
        ("xread", &["readonly", "blocking", "movablekeys"][..]),
        ("xreadgroup", &["write", "blocking", "movablekeys"]),
        ("sort", &["write", "denyoom", "movablekeys"]),
        ("sort_ro", &["readonly", "movablekeys"]),
        ("zunionstore", &["write", "denyoom", "movablekeys"]),
        ("lmpop", &["write", "movablekeys"]),
        ("eval", &["noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"]),
        ("publish", &["pubsub", "loading", "stale", "fast"]),
        ("blpop", &["write", "noscript", "blocking"]),
        ("exec", &["noscript", "loading", "stale", "skip_slowlog"]),
        ("get", &["readonly", "fast"]),
    ] {
        let mut want = format!("*1\r\n*10\r\n${}\r\n{name}\r\n", name.len());
        let reply = h.c(&format!("COMMAND INFO {name}"));
        let arity = reply[want.len()..].lines().next().unwrap().to_string();
        want.push_str(&arity);
        want.push_str(&format!("\r\n*{}\r\n", flags.len()));
        for f in flags {
            want.push_str(&format!("+{f}\r\n"));
        }
        assert!(reply.starts_with(&want), "{name}: {reply}");
    }
}

#[test]
fn command_count_list_info_docs() {
    let mut h = H::new();
    let count = int_of(&h.c("COMMAND COUNT"));
    let list = parse_bulks(&h.c("COMMAND LIST"));
    let top: Vec<&String> = list.iter().filter(|n| !n.contains('|')).collect();
    assert_eq!(top.len() as i64, count, "COMMAND COUNT counts top-level commands");
    for name in ["get", "set", "hset", "hscan", "multi", "exec", "watch", "client", "client|list", "config|set", "command|getkeys", "object|encoding"] {
        assert!(list.iter().any(|n| n == name), "COMMAND LIST lacks {name}");
    }
    let set: BTreeSet<&String> = list.iter().collect();
    assert_eq!(set.len(), list.len(), "no duplicates");
    // FILTERBY.
    let cfg: BTreeSet<String> = parse_bulks(&h.c("COMMAND LIST FILTERBY PATTERN config*")).into_iter().collect();
    assert_eq!(cfg, ["config", "config|help", "config|rewrite", "config|get", "config|set", "config|resetstat"].map(String::from).into());
    let hget: BTreeSet<String> = parse_bulks(&h.c("COMMAND LIST FILTERBY PATTERN hget*")).into_iter().collect();
    assert_eq!(hget, ["hgetall", "hget", "hgetdel", "hgetex"].map(String::from).into());
    let hash: BTreeSet<String> = parse_bulks(&h.c("COMMAND LIST FILTERBY ACLCAT hash")).into_iter().collect();
    let want: BTreeSet<String> = [
        "hlen",
        "hrandfield",
        "hvals",
        "hincrbyfloat",
        "hexists",
        "hmset",
        "hsetnx",
        "hdel",
        "hincrby",
        "hset",
        "hkeys",
        "hmget",
        "hgetall",
        "hget",
        "hstrlen",
        "hscan",
        // hash-field expiry (7.4 / 8.0)
        "hexpire",
        "hpexpire",
        "hexpireat",
        "hpexpireat",
        "httl",
        "hpttl",
        "hexpiretime",
        "hpexpiretime",
        "hpersist",
        "hgetdel",
        "hgetex",
        "hsetex",
    ]
    .map(String::from)
    .into();
    assert_eq!(hash, want);
    ck(&mut h, "COMMAND LIST FILTERBY MODULE x", "*0\r\n");
    ck(&mut h, "COMMAND LIST FILTERBY FOO x", err("ERR syntax error"));
    ck(&mut h, "COMMAND LIST FOO", err("ERR syntax error"));
    ck(&mut h, "COMMAND FOO", err("ERR unknown subcommand 'FOO'. Try COMMAND HELP."));

    // COMMAND INFO: one 10-element entry per name, null for unknown ones.
    let get = h.c("COMMAND INFO get");
    assert!(
        get.starts_with("*1\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*1\r\n"),
        "{get:?}"
    );
    assert!(get.ends_with("*0\r\n"), "no subcommands: {get:?}");
    ck(&mut h, "COMMAND INFO nosuch", "*1\r\n*-1\r\n");
    let two = h.c("COMMAND INFO get nosuch set");
    assert!(two.starts_with("*3\r\n*10\r\n$3\r\nget\r\n") && two.contains("*-1\r\n*10\r\n$3\r\nset\r\n:-3\r\n"), "{two:?}");
    let cg = h.c("COMMAND INFO config|get");
    assert!(cg.starts_with("*1\r\n*10\r\n$10\r\nconfig|get\r\n:-3\r\n"), "{cg:?}");
    let mset = h.c("COMMAND INFO mset");
    assert!(mset.contains("\r\n:1\r\n:-1\r\n:2\r\n"), "mset keys: first 1, last -1, step 2: {mset:?}");
    let all = h.c("COMMAND INFO");
    assert!(all.starts_with(&format!("*{count}\r\n*10\r\n")), "COMMAND INFO lists every command");
    assert_eq!(h.c("COMMAND"), all);
    // RESP3: flags and ACL categories are sets, key specs maps.
    h.c("HELLO 3");
    let get3 = h.c("COMMAND INFO get");
    assert!(get3.starts_with("*1\r\n*10\r\n$3\r\nget\r\n:2\r\n~2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n~3\r\n+@read\r\n+@string\r\n+@fast\r\n~0\r\n~1\r\n%3\r\n$5\r\nflags\r\n~2\r\n+RO\r\n+access\r\n"), "{get3:?}");
    ck(&mut h, "COMMAND INFO nosuch", "*1\r\n_\r\n");

    // COMMAND DOCS: name → map with summary, since, group (and subcommands).
    let docs = h.c("COMMAND DOCS get");
    assert!(docs.starts_with("%1\r\n$3\r\nget\r\n%"), "{docs:?}");
    assert!(docs.contains("$7\r\nsummary\r\n$") && docs.contains("\r\n$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$6\r\nstring\r\n"), "{docs:?}");
    let cfg = h.c("COMMAND DOCS config");
    assert!(cfg.contains("$11\r\nsubcommands\r\n%") && cfg.contains("$10\r\nconfig|get\r\n%"), "{cfg:?}");
    ck(&mut h, "COMMAND DOCS nosuch", "%0\r\n");
    h.c("HELLO 2");
    ck(&mut h, "COMMAND DOCS nosuch", "*0\r\n");
    let docs = h.c("COMMAND DOCS get");
    assert!(docs.starts_with("*2\r\n$3\r\nget\r\n*"), "{docs:?}");
    let n = h.c("COMMAND DOCS");
    assert!(n.starts_with(&format!("*{}\r\n", count * 2)), "COMMAND DOCS documents every command");
}

#[test]
fn command_getkeys() {
    let mut h = H::new();
    ck(&mut h, "COMMAND GETKEYS", err("ERR wrong number of arguments for 'command|getkeys' command"));
    ck(&mut h, "COMMAND GETKEYS get", err("ERR wrong number of arguments for 'command|getkeys' command"));
    ck(&mut h, "COMMAND GETKEYS get a b", err("ERR Invalid number of arguments specified for command"));
    ck(&mut h, "COMMAND GETKEYS nosuch a", err("ERR Invalid command specified"));
    ck(&mut h, "COMMAND GETKEYS config get x", err("ERR The command has no key arguments"));
    ck(&mut h, "COMMAND GETKEYS get k", bulks(&["k"]));
    ck(&mut h, "COMMAND GETKEYS set k v EX 10", bulks(&["k"]));
    ck(&mut h, "COMMAND GETKEYS mset a 1 b 2", bulks(&["a", "b"]));
    ck(&mut h, "COMMAND GETKEYS del a b c", bulks(&["a", "b", "c"]));
    ck(&mut h, "COMMAND GETKEYS rename a b", bulks(&["a", "b"]));
    ck(&mut h, "COMMAND GETKEYS copy a b DB 1", bulks(&["a", "b"]));
    ck(&mut h, "COMMAND GETKEYS object encoding k", bulks(&["k"]));
    ck(&mut h, "COMMAND GETKEYS hset h f v", bulks(&["h"]));
    ck(&mut h, "COMMAND GETKEYS watch a b", bulks(&["a", "b"]));
    ck(&mut h, "COMMAND GETKEYS GET K", bulks(&["K"]));
}

#[test]
fn arity_errors_name_the_command() {
    let mut h = H::new();
    for (c, n) in [
        ("CONFIG GET", "config|get"),
        ("CLIENT SETNAME", "client|setname"),
        ("OBJECT ENCODING", "object|encoding"),
        ("COMMAND GETKEYS", "command|getkeys"),
        ("DBSIZE 1", "dbsize"),
    ] {
        ck(&mut h, c, err(&format!("ERR wrong number of arguments for '{n}' command")));
    }
    // Unknown commands quote their arguments (at most ~128 bytes of them).
    let long = "x".repeat(200);
    let r = h.c(&format!("NOSUCH {long} y"));
    assert!(r.starts_with(&format!("-ERR unknown command 'NOSUCH', with args beginning with: '{}", "x".repeat(128))), "{r:?}");
    ck(&mut h, "GET nokey", NIL);
    let _ = bulk("");
}

#[test]
fn failover_arguments() {
    // The engine only checks arguments and role; the host steps a primary down on +OK.
    let mut h = H::new();
    ck(&mut h, "FAILOVER", OK);
    ck(&mut h, "FAILOVER TIMEOUT 100", OK);
    ck(&mut h, "FAILOVER TIMEOUT 0", err("ERR FAILOVER timeout must be greater than 0"));
    ck(&mut h, "FAILOVER TIMEOUT x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "FAILOVER ABORT", err("ERR No failover in progress."));
    ck(&mut h, "FAILOVER FORCE", err("ERR FAILOVER with force option requires both a timeout and target HOST and IP."));
    ck(&mut h, "FAILOVER NOW", err("ERR syntax error"));
    ck(&mut h, "FAILOVER TO 127.0.0.1 6380", err("ERR FAILOVER TO is not supported: the election through the log picks the new primary"));
}
