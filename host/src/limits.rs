//! Limits against abusive or broken clients, enforced by the connection layer with values
//! the engine's CONFIG owns: `maxclients`, `timeout` (idle clients),
//! `client-output-buffer-limit` (normal and pubsub classes), `partial-request-timeout`
//! (a half-sent command that stalls), `client-query-buffer-limit` and
//! `proto-max-bulk-len`.
//!
//! The host sets them at start (flags, checked by the engine's own CONFIG parser) and
//! tells every new engine instance; after a CONFIG SET the engine hands the new values
//! back (`batch::REC_CONFIG`) and the shard stores them here, where connection tasks read
//! them (relaxed atomics: a limit that changes is picked up by the next check).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use memoria_core::protocol::resp::Limits;
use memoria_core::server::config::{Config, OutputLimit, OutputLimits};

/// Limits the connection layer enforces.
#[derive(Clone, Copy)]
pub struct ConnLimits {
    pub resp: Limits,
    /// `client-query-buffer-limit`: a client whose unparsed input exceeds this is dropped.
    pub query_buffer: usize,
    /// Stop reading from a client with this many unanswered command bytes in flight.
    pub max_inflight_bytes: usize,
}

impl Default for ConnLimits {
    fn default() -> Self {
        ConnLimits { resp: Limits::default(), query_buffer: 1 << 30, max_inflight_bytes: 64 << 20 }
    }
}

/// One class of output limits, readable without a lock.
#[derive(Default)]
struct ClassLimit {
    hard: AtomicU64,
    soft: AtomicU64,
    soft_seconds: AtomicU64,
}

impl ClassLimit {
    fn set(&self, l: &OutputLimit) {
        self.hard.store(l.hard, Relaxed);
        self.soft.store(l.soft, Relaxed);
        self.soft_seconds.store(l.soft_seconds, Relaxed);
    }
    fn get(&self) -> OutputLimit {
        OutputLimit { hard: self.hard.load(Relaxed), soft: self.soft.load(Relaxed), soft_seconds: self.soft_seconds.load(Relaxed) }
    }
}

/// The node's current connection limits and counters, shared by the listener, the
/// connection tasks and the shard.
pub struct HostLimits {
    maxclients: AtomicU64,
    timeout_s: AtomicU64,
    partial_timeout_s: AtomicU64,
    /// `engine-call-timeout`: the watchdog's limit on one engine call, in ms (0: none).
    engine_call_ms: AtomicU64,
    query_buffer: AtomicUsize,
    max_bulk_len: AtomicUsize,
    normal: ClassLimit,
    pubsub: ClassLimit,
    /// `client-output-buffer-limit` as the engine renders it (with the replica class,
    /// which is not enforced here: replicas read the log, not this node).
    obuf_text: std::sync::Mutex<String>,
    /// Lines for the engine that never change (tls-port and the like).
    fixed: String,
    /// The engine's other parameters a CONFIG SET changed, by name: a rebuilt engine
    /// (after a watchdog interrupt, a trap, a replica's reload) starts with them.
    carried: std::sync::Mutex<Vec<(String, String)>>,
    /// Connections open now (TLS handshakes included).
    pub clients: AtomicUsize,
    /// Connections refused by `maxclients`.
    pub rejected: AtomicU64,
    /// Clients dropped for their output buffer, idle `timeout`, or a stalled request.
    pub output_limit_drops: AtomicU64,
    pub idle_drops: AtomicU64,
    pub stalled_drops: AtomicU64,
    /// What INFO reports of the process: client sockets' bytes, buffers, RSS, CPU.
    pub node: crate::node_stats::NodeStats,
    /// Commands the watchdog interrupted, refused when sent again.
    pub poison: crate::poison::Poison,
}

/// Counts a connection while it lives (the `maxclients` check).
pub struct ClientSlot(Arc<HostLimits>);

impl Drop for ClientSlot {
    fn drop(&mut self) {
        self.0.clients.fetch_sub(1, Relaxed);
    }
}

impl HostLimits {
    /// Defaults as the engine's CONFIG has them, then `conn`'s, then `settings`
    /// (`(name, value)` as CONFIG SET takes them; an invalid one is an error naming it).
    pub fn new(conn: &ConnLimits, settings: &[(String, String)], fixed: &[(&str, String)]) -> Result<Arc<HostLimits>, String> {
        let mut cfg = Config::default();
        // Set as given, unchecked: the engine refuses values below 1 MiB for these, and
        // tests use smaller ones.
        let base = [("proto-max-bulk-len", conn.resp.max_bulk_len.to_string()), ("client-query-buffer-limit", conn.query_buffer.to_string())];
        let mut h = HostLimits {
            maxclients: AtomicU64::new(0),
            timeout_s: AtomicU64::new(0),
            partial_timeout_s: AtomicU64::new(0),
            engine_call_ms: AtomicU64::new(0),
            query_buffer: AtomicUsize::new(0),
            max_bulk_len: AtomicUsize::new(0),
            normal: ClassLimit::default(),
            pubsub: ClassLimit::default(),
            obuf_text: std::sync::Mutex::new(String::new()),
            fixed: String::new(),
            carried: Default::default(),
            clients: AtomicUsize::new(0),
            rejected: AtomicU64::new(0),
            output_limit_drops: AtomicU64::new(0),
            idle_drops: AtomicU64::new(0),
            stalled_drops: AtomicU64::new(0),
            node: Default::default(),
            poison: Default::default(),
        };
        for (k, v) in settings {
            // Parameters fixed at start go to the engine as they are (--enable-debug-command).
            if memoria_core::server::config::is_immutable(k) {
                h.fixed.push_str(&format!("{k} {v}\n"));
                continue;
            }
            cfg.set_many(&[(k.as_bytes(), v.as_bytes())]).map_err(|e| e.trim_start_matches("ERR ").replace("CONFIG SET failed", &format!("--{k} {v:?}")))?;
        }
        h.apply(&cfg.host_values());
        for (k, v) in base {
            h.apply(&format!("{k} {v}\n"));
        }
        for (k, v) in fixed {
            h.fixed.push_str(&format!("{k} {v}\n"));
        }
        Ok(Arc::new(h))
    }

    /// The watchdog's limit on one engine call (`engine-call-timeout`; 0: none).
    pub fn engine_call_ms(&self) -> u64 {
        self.engine_call_ms.load(Relaxed)
    }

    /// Takes `name value` lines (the engine's REC_CONFIG output).
    pub fn apply(&self, lines: &str) {
        for line in lines.lines() {
            let Some((k, v)) = line.split_once(' ') else { continue };
            let n = || v.trim().parse::<u64>().unwrap_or(0);
            match k {
                "maxclients" => self.maxclients.store(n(), Relaxed),
                "timeout" => self.timeout_s.store(n(), Relaxed),
                "partial-request-timeout" => self.partial_timeout_s.store(n(), Relaxed),
                "engine-call-timeout" => {
                    // What was judged under the old limit is judged anew.
                    let changed = self.engine_call_ms.swap(n(), Relaxed) != n();
                    if changed {
                        self.poison.clear();
                    }
                }
                "client-query-buffer-limit" => self.query_buffer.store(n() as usize, Relaxed),
                "proto-max-bulk-len" => self.max_bulk_len.store(n() as usize, Relaxed),
                "client-output-buffer-limit" => {
                    let mut l = OutputLimits::default();
                    if l.update(v).is_ok() {
                        self.normal.set(&l.normal);
                        self.pubsub.set(&l.pubsub);
                        *self.obuf_text.lock().unwrap_or_else(|e| e.into_inner()) = l.render();
                    }
                }
                _ => {
                    let mut carried = self.carried.lock().unwrap_or_else(|e| e.into_inner());
                    match carried.iter_mut().find(|(n, _)| n == k) {
                        Some((_, value)) => *value = v.to_string(),
                        None => carried.push((k.to_string(), v.to_string())),
                    }
                }
            }
        }
    }

    /// `name value` lines for a (new) engine instance: the current values.
    pub fn lines(&self) -> String {
        let mut t = format!(
            "maxclients {}\ntimeout {}\npartial-request-timeout {}\nengine-call-timeout {}\nclient-query-buffer-limit {}\nproto-max-bulk-len {}\n",
            self.maxclients.load(Relaxed),
            self.timeout_s.load(Relaxed),
            self.partial_timeout_s.load(Relaxed),
            self.engine_call_ms.load(Relaxed),
            self.query_buffer.load(Relaxed),
            self.max_bulk_len.load(Relaxed),
        );
        t.push_str(&format!("client-output-buffer-limit {}\n", self.obuf_text.lock().unwrap_or_else(|e| e.into_inner())));
        t.push_str(&self.fixed);
        for (k, v) in self.carried.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            t.push_str(&format!("{k} {v}\n"));
        }
        t
    }

    /// Counts a new connection, or refuses it past `maxclients` (like Redis, the new
    /// connection itself counts: `maxclients 1` lets one client in).
    pub fn admit(self: &Arc<Self>) -> Option<ClientSlot> {
        let max = self.maxclients.load(Relaxed) as usize;
        let now = self.clients.fetch_add(1, Relaxed);
        let slot = ClientSlot(self.clone());
        if max > 0 && now >= max {
            self.rejected.fetch_add(1, Relaxed);
            metrics::counter!("memoria_rejected_connections_total").increment(1);
            return None;
        }
        Some(slot)
    }

    pub fn timeout_secs(&self) -> u64 {
        self.timeout_s.load(Relaxed)
    }

    pub fn partial_timeout_secs(&self) -> u64 {
        self.partial_timeout_s.load(Relaxed)
    }

    pub fn output_limit(&self, pubsub: bool) -> OutputLimit {
        if pubsub { self.pubsub.get() } else { self.normal.get() }
    }

    /// The framing limits in force now.
    pub fn conn_limits(&self, base: &ConnLimits) -> ConnLimits {
        let mut l = *base;
        l.resp.max_bulk_len = self.max_bulk_len.load(Relaxed);
        l.query_buffer = self.query_buffer.load(Relaxed);
        l
    }
}

/// Redis's `checkClientOutputBufferLimits`: over the hard limit, or over the soft limit
/// for longer than its seconds (`soft_since` remembers when it was first exceeded).
pub fn output_over_limit(l: &OutputLimit, pending: u64, soft_since: &mut Option<std::time::Instant>) -> bool {
    if l.hard > 0 && pending >= l.hard {
        return true;
    }
    if l.soft > 0 && pending >= l.soft {
        let since = *soft_since.get_or_insert_with(std::time::Instant::now);
        return since.elapsed().as_secs() > l.soft_seconds;
    }
    *soft_since = None;
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_and_round_trip() {
        let h = HostLimits::new(
            &ConnLimits::default(),
            &[("maxclients".into(), "3".into()), ("client-output-buffer-limit".into(), "pubsub 1mb 0 0".into())],
            &[("tls-port", "0".into())],
        )
        .unwrap();
        assert_eq!(h.output_limit(true), OutputLimit { hard: 1 << 20, soft: 0, soft_seconds: 0 });
        assert_eq!(h.output_limit(false), OutputLimit::default());
        let lines = h.lines();
        assert!(
            lines.contains("maxclients 3\n")
                && lines.contains("client-output-buffer-limit normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 0 0\n")
                && lines.contains("tls-port 0\n"),
            "{lines}"
        );
        let e = HostLimits::new(&ConnLimits::default(), &[("timeout".into(), "-1".into())], &[]).err().unwrap();
        assert!(e.contains("--timeout") && e.contains("between 0"), "{e}");
        let a = h.admit();
        let b = h.admit();
        let c = h.admit();
        assert!(a.is_some() && b.is_some() && c.is_some());
        assert!(h.admit().is_none());
        drop(a);
        assert!(h.admit().is_some());
        assert_eq!(h.rejected.load(Relaxed), 1);
    }

    #[test]
    fn soft_limit_needs_time_hard_limit_does_not() {
        let l = OutputLimit { hard: 100, soft: 10, soft_seconds: 3600 };
        let mut since = None;
        assert!(!output_over_limit(&l, 50, &mut since));
        assert!(since.is_some());
        assert!(!output_over_limit(&l, 5, &mut since));
        assert!(since.is_none());
        assert!(output_over_limit(&l, 100, &mut since));
        let l0 = OutputLimit { hard: 0, soft: 10, soft_seconds: 0 };
        let mut since = Some(std::time::Instant::now() - std::time::Duration::from_secs(2));
        assert!(output_over_limit(&l0, 10, &mut since));
    }
}
