//! CONFIG GET * against redis-server 7.0.15 (issue 24): every parameter redis-server has is
//! either served by Memoria or listed in `NOT_HERE` with the reason it has no meaning
//! here; and where both have a parameter, Memoria's default is Redis's unless
//! `OWN_DEFAULTS` says why not.

mod common;

use std::collections::BTreeMap;

use common::{Memoria, Raw, RedisServer};

/// Parameters of redis-server 7.0.15 that Memoria does not serve, by prefix or name.
const NOT_HERE: &[(&str, &str)] = &[
    ("aof", "persistence is the shard's log (every write logged before its reply), not an append-only file"),
    ("appendf", "persistence is the shard's log, not an append-only file (appendonly itself is reported: no)"),
    ("appenddirname", "no append-only file"),
    ("auto-aof-", "no append-only file to rewrite"),
    ("no-appendfsync-on-rewrite", "no append-only file"),
    ("rdb", "snapshots are Memoria's own, off-box and checksummed (memoria up --snapshot-*), not RDB files"),
    ("dbfilename", "no RDB file"),
    ("stop-writes-on-bgsave-error", "no BGSAVE child: a failed snapshot never stops writes, the log has them"),
    ("repl-", "replicas tail the shard's log, not a replication stream from the primary"),
    ("replica", "replicas tail the log and are always read-only; REPLICAOF is not how a node becomes one (memoria up)"),
    ("slave", "replicas tail the log (the slave-* aliases of replica-*)"),
    ("master", "replicas authenticate to the log service, not to the primary"),
    ("min-replicas", "a write is acknowledged once durable in the log, which replicas do not take part in"),
    ("min-slaves", "as min-replicas-*"),
    ("cluster-", "cluster topology lives in the cluster log and memoria up's flags, not in a nodes.conf and gossip"),
    (
        "tls-",
        "TLS is set with memoria's flags (--tls-port, --tls-cert-file, --tls-key-file, --tls-ca-cert-file, shown here); other TLS settings are rustls's defaults",
    ),
    ("io-threads", "each shard is one thread with its own event loop; connections are handled by tokio"),
    ("active-defrag", "the engine's allocator is dlmalloc inside the component; no jemalloc defragmentation"),
    ("activedefrag", "no jemalloc defragmentation"),
    ("jemalloc-bg-thread", "no jemalloc"),
    ("_cpulist", "no CPU affinity settings; no background child processes"),
    ("bio_cpulist", "no background I/O threads"),
    ("oom-score-adj", "process settings belong to the operator's supervisor (memoria up restarts nodes itself)"),
    ("daemonize", "memoria up runs in the foreground under its own supervisor"),
    ("supervised", "memoria up is its own supervisor"),
    ("pidfile", "cluster.json lists every node's pid"),
    ("logfile", "logs go to stderr (tracing), collected by memoria up into up.log"),
    ("loglevel", "logs are tracing's, filtered with RUST_LOG"),
    ("syslog-", "no syslog output"),
    ("always-show-logo", "no logo"),
    ("set-proc-title", "no process title rewriting"),
    ("proc-title-template", "no process title rewriting"),
    ("crash-", "a crash is a Rust panic or a wasm trap, reported by the host; no crash log or memory check"),
    ("disable-thp", "no transparent huge page handling"),
    ("unixsocket", "TCP only (loopback by default)"),
    ("bind-source-addr", "no outgoing connections but to the log service and MIGRATE targets, from the default address"),
    ("socket-mark-id", "no socket marks"),
    ("tcp-backlog", "tokio's listener backlog"),
    ("shutdown-", "SIGTERM always stops cleanly (a node finishes its log writes); no SAVE on shutdown, the log is durable"),
    ("ignore-warnings", "no kernel warnings are checked"),
    ("dynamic-hz", "the shard's tick is fixed by hz"),
    ("aclfile", "ACL users live in the shard's log (ACL LOAD/SAVE have no file)"),
    ("acl-pubsub-default", "not yet: new users get Redis 7's default (resetchannels)"),
    ("maxmemory-clients", "client eviction is not built; connection limits are client-output-buffer-limit and maxclients"),
    ("enable-", "no DEBUG command, no modules, no protected configs"),
    ("propagation-error-behavior", "effects are logged as the engine made them; a replica that cannot apply one stops, it never ignores it"),
    ("sanitize-dump-payload", "RESTORE always checks a payload fully (as Redis's yes)"),
];

/// Parameters both have whose default differs on purpose.
const OWN_DEFAULTS: &[(&str, &str)] = &[
    ("maxmemory", "the engine's 3 GiB ceiling (its wasm32 memory ends at 4 GiB), as a 32-bit redis-server's default"),
    ("port", "each server's own"),
    ("bind", "each server's own"),
    ("dir", "each server's own"),
    ("save", "Memoria takes no RDB snapshots (its snapshots are set with memoria up's flags)"),
    ("protected-mode", "the test's redis-server runs with its own"),
    (
        "hash-max-",
        "hash-max-listpack-entries (alias hash-max-ziplist-entries) is 128, the value of the redis.conf that ships with Redis (and Debian's); redis-server without a config file uses 512",
    ),
];

fn config_all(port: u16) -> BTreeMap<String, String> {
    let mut c = Raw::connect(port);
    let reply = c.cmd(&["CONFIG", "GET", "*"]);
    let text = String::from_utf8_lossy(&reply).into_owned();
    // A flat array of bulk strings: name, value, name, value…
    let mut items = Vec::new();
    let mut lines = text.split("\r\n").skip(1);
    while let Some(head) = lines.next() {
        if head.starts_with('$') {
            items.push(lines.next().unwrap_or("").to_string());
        }
    }
    items.chunks(2).map(|p| (p[0].clone(), p.get(1).cloned().unwrap_or_default())).collect()
}

/// The reason `list` gives for `name` (an entry names it, a prefix of it, or, starting
/// with `_`, a suffix).
fn reason(list: &[(&'static str, &'static str)], name: &str) -> Option<&'static str> {
    list.iter().find(|(p, _)| name.starts_with(p) || (p.starts_with('_') && name.ends_with(p))).map(|&(_, r)| r)
}

#[test]
fn config_get_covers_redis_parameters() {
    let redis = RedisServer::start(&[]);
    let memoria = Memoria::start();
    let theirs = config_all(redis.port);
    let ours = config_all(memoria.port);
    assert!(theirs.len() > 150, "redis-server listed only {} parameters", theirs.len());
    let missing: Vec<&String> = theirs.keys().filter(|n| !ours.contains_key(*n) && reason(NOT_HERE, n).is_none()).collect();
    assert!(missing.is_empty(), "parameters of redis-server 7.0.15 that Memoria neither serves nor explains: {missing:?}");
    let differ: Vec<String> = ours
        .iter()
        .filter(|(n, v)| theirs.get(*n).is_some_and(|t| t != *v) && reason(OWN_DEFAULTS, n).is_none())
        .map(|(n, v)| format!("{n}: redis {:?}, memoria {v:?}", theirs[n]))
        .collect();
    assert!(differ.is_empty(), "defaults that differ from redis-server's without a reason:\n{}", differ.join("\n"));
}
