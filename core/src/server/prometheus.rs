//! The engine's counters in Prometheus's text exposition format, for the node's
//! `/metrics` (the host adds its own families and merges the shards of a process, so
//! every sample here carries the labels the host gives, e.g. `shard="0"`).
//!
//! The same figures as INFO commandstats/errorstats/latencystats/stats/keyspace, named
//! the Prometheus way: counters end in `_total`, durations are in seconds.

use alloc::format;
use alloc::string::String;
use core::fmt::Write;

use crate::server::evict::ENGINE_MEMORY_LIMIT;
use crate::server::state::State;
use crate::util::hdr::Histogram;

/// The `le` bounds of the command duration histograms, in ns (1 µs … 1 s: the range the
/// engine's HdrHistogram keeps).
const DURATION_BOUNDS_NS: [u64; 19] = [
    1_000,
    2_500,
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
];

/// One metric family: its HELP and TYPE lines, then the samples pushed to it. (The host
/// writes its own families with it too.)
pub struct Family<'a> {
    out: &'a mut String,
    name: &'static str,
    labels: &'a str,
}

impl Family<'_> {
    /// `name` + `suffix` (`_bucket`, `_sum`…) with the family's labels, then `extra`.
    pub fn sample(&mut self, suffix: &str, extra: &[(&str, &str)], value: impl core::fmt::Display) {
        let _ = write!(self.out, "{}{suffix}", self.name);
        if !self.labels.is_empty() || !extra.is_empty() {
            let _ = write!(self.out, "{{{}", self.labels);
            let mut first = self.labels.is_empty();
            for (k, v) in extra {
                let _ = write!(self.out, "{}{k}=\"{}\"", if first { "" } else { "," }, escape(v));
                first = false;
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }
}

/// Starts a family in `out`: its HELP and TYPE lines.
pub fn family<'a>(out: &'a mut String, labels: &'a str, name: &'static str, kind: &str, help: &str) -> Family<'a> {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    Family { out, name, labels }
}

/// A label value as the text format wants it: backslash, quote and newline escaped.
fn escape(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

/// The engine's families; `labels` (`name="value"` pairs, comma-separated, already
/// escaped) go on every sample. `clients` is the number of connected clients.
pub fn render(st: &State, clients: usize, labels: &str) -> String {
    let mut out = String::new();
    let o = &mut out;
    let stats = st.cmdstats.commandstats();
    let mut f = family(o, labels, "memoria_commands_total", "counter", "Calls of each command that ran (INFO commandstats calls).");
    for (name, c) in &stats {
        f.sample("", &[("cmd", name)], c.calls);
    }
    let mut f =
        family(o, labels, "memoria_command_rejected_calls_total", "counter", "Calls refused before running: arity, ACL, OOM, MULTI errors (rejected_calls).");
    for (name, c) in &stats {
        f.sample("", &[("cmd", name)], c.rejected);
    }
    let mut f = family(o, labels, "memoria_command_failed_calls_total", "counter", "Calls that ran and answered an error (failed_calls).");
    for (name, c) in &stats {
        f.sample("", &[("cmd", name)], c.failed);
    }
    let mut f = family(
        o,
        labels,
        "memoria_command_duration_seconds",
        "histogram",
        "Time each command took inside the engine, while latency-tracking is on (INFO latencystats); _sum counts every call.",
    );
    for (name, h) in st.cmdstats.histograms() {
        let usec = stats.iter().find(|(n, _)| *n == name).map_or(0, |(_, c)| c.usec);
        duration_histogram(&mut f, name, h, usec);
    }
    let mut f = family(o, labels, "memoria_errors_total", "counter", "Error replies by error code (INFO errorstats).");
    for (code, n) in st.cmdstats.errorstats() {
        f.sample("", &[("error", &String::from_utf8_lossy(code))], n);
    }
    let x = &st.stats;
    let tracked = st.tracking.totals();
    let counters: [(&'static str, &str, u64); 9] = [
        ("memoria_error_replies_total", "Error replies sent (total_error_replies).", st.cmdstats.total_error_replies),
        ("memoria_commands_processed_total", "Commands processed (total_commands_processed).", x.commands),
        ("memoria_connections_received_total", "Connections accepted (total_connections_received).", x.connections),
        ("memoria_keyspace_hits_total", "Lookups of keys that existed (keyspace_hits).", x.keyspace_hits),
        ("memoria_keyspace_misses_total", "Lookups of keys that did not exist (keyspace_misses).", x.keyspace_misses),
        ("memoria_expired_keys_total", "Keys deleted because their TTL passed (expired_keys).", x.expired_keys),
        ("memoria_expired_subkeys_total", "Hash fields deleted because their TTL passed (expired_subkeys).", x.expired_subkeys),
        ("memoria_evicted_keys_total", "Keys evicted under maxmemory (evicted_keys).", x.evicted_keys),
        ("memoria_rejected_oom_commands_total", "Commands refused with -OOM (rejected_oom_commands).", x.rejected_oom),
    ];
    for (name, help, v) in counters {
        family(o, labels, name, "counter", help).sample("", &[], v);
    }
    let used = st.used_memory() as u64;
    let gauges: [(&'static str, &str, u64); 11] = [
        ("memoria_connected_clients", "Clients connected to this shard (connected_clients).", clients as u64),
        ("memoria_blocked_clients", "Clients waiting in a blocking command (blocked_clients).", st.blocking.blocked_clients() as u64),
        ("memoria_tracking_clients", "Clients with CLIENT TRACKING on (tracking_clients).", st.tracking.clients.len() as u64),
        ("memoria_tracking_keys", "Keys remembered for client-side caching (tracking_total_keys).", tracked.0 as u64),
        ("memoria_pubsub_channels", "Channels with subscribers (pubsub_channels).", st.pubsub.channels.len() as u64),
        ("memoria_pubsub_patterns", "Patterns with subscribers (pubsub_patterns).", st.pubsub.patterns.len() as u64),
        ("memoria_instantaneous_ops_per_second", "Commands per second over the last ~1.6 s (instantaneous_ops_per_sec).", x.ops.per_second()),
        ("memoria_engine_memory_used_bytes", "Bytes in use in the engine's linear memory (used_memory).", used),
        ("memoria_engine_memory_peak_bytes", "Most bytes in use seen (used_memory_peak).", (x.peak_memory as u64).max(used)),
        ("memoria_engine_memory_limit_bytes", "What one shard's engine can hold (its wasm32 linear memory).", ENGINE_MEMORY_LIMIT),
        ("memoria_maxmemory_bytes", "maxmemory (0: the engine's own limit).", st.config.maxmemory),
    ];
    for (name, help, v) in gauges {
        family(o, labels, name, "gauge", help).sample("", &[], v);
    }
    let mut f = family(o, labels, "memoria_keys", "gauge", "Keys per database (INFO keyspace).");
    let mut with_ttl = alloc::vec::Vec::new();
    for (i, db) in st.dbs.iter().enumerate().filter(|(i, d)| *i == 0 || !d.is_empty()) {
        let n = format!("{i}");
        f.sample("", &[("db", &n)], db.len());
        with_ttl.push((n, db.expires.len()));
    }
    let mut f = family(o, labels, "memoria_keys_with_expiry", "gauge", "Keys with a TTL per database (INFO keyspace expires).");
    for (db, n) in &with_ttl {
        f.sample("", &[("db", db)], n);
    }
    out
}

/// One command's cumulative buckets, `_sum` and `_count`.
fn duration_histogram(f: &mut Family<'_>, cmd: &str, h: &Histogram, usec: u64) {
    for (le, n) in DURATION_BOUNDS_NS.iter().zip(h.counts_at_most(&DURATION_BOUNDS_NS)) {
        f.sample("_bucket", &[("cmd", cmd), ("le", &format!("{}", *le as f64 / 1e9))], n);
    }
    f.sample("_bucket", &[("cmd", cmd), ("le", "+Inf")], h.total());
    f.sample("_sum", &[("cmd", cmd)], usec as f64 / 1e6);
    f.sample("_count", &[("cmd", cmd)], h.total());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn a_family_has_its_help_and_type_then_labelled_samples() {
        let mut s = String::new();
        let mut f = family(&mut s, "shard=\"1\"", "memoria_x_total", "counter", "Things.");
        f.sample("", &[("cmd", "get")], 3);
        f.sample("", &[], 4);
        assert_eq!(
            s,
            "# HELP memoria_x_total Things.\n# TYPE memoria_x_total counter\nmemoria_x_total{shard=\"1\",cmd=\"get\"} 3\nmemoria_x_total{shard=\"1\"} 4\n"
        );
        let mut s = String::new();
        let mut f = family(&mut s, "", "memoria_y", "gauge", "Y.");
        f.sample("", &[("db", "0")], 1);
        f.sample("", &[], 2);
        assert!(s.ends_with("memoria_y{db=\"0\"} 1\nmemoria_y 2\n"), "{s}");
    }
}
