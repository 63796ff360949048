//! What the engine is told about its node: static server facts (REC_SERVER_INFO), the
//! role and log offset with the cluster's nodes (REC_ROLE), and the connection limits in
//! force (REC_CONFIG).

use std::time::Instant;

use memoria_core::protocol::batch::{self, BatchWriter};

use super::{Shard, Standing};
use crate::clock::now_us;

pub(super) struct ClusterView {
    pub(super) peers: Vec<memoria_log::ReaderInfo>,
    pub(super) shard: u16,
    pub(super) shared: Option<std::sync::Arc<crate::cluster::Shared>>,
    /// The shared view's version last reported to the engine.
    pub(super) reported_version: u64,
}

impl Shard {
    /// Cluster facts for REC_ROLE: this node, the primary, then the replicas.
    fn cluster_lines(&self, t: &mut String) {
        let Some(c) = self.cluster.as_ref() else { return };
        let peers = &c.peers;
        t.push_str("cluster_enabled:1\n");
        t.push_str(&format!("cluster_myself:{}\n", self.node));
        let primary = match &self.standing {
            Standing::Replica(r) => (!r.primary.is_empty()).then(|| (r.primary.clone(), 0u64)),
            Standing::Primary(Some(l)) => Some((self.node.clone(), l.prev_id)),
            Standing::Primary(None) => Some((self.node.clone(), 0)),
        };
        if let Some((p, off)) = &primary {
            t.push_str(&format!("cluster_node:{p} master {off}\n"));
        }
        for peer in peers {
            if primary.as_ref().is_some_and(|(p, _)| *p == peer.name) {
                continue;
            }
            t.push_str(&format!("cluster_node:{} replica {}\n", peer.name, peer.applied));
        }
        let mut replicas: Vec<(String, u64)> =
            c.peers.iter().filter(|p| primary.as_ref().is_none_or(|(n, _)| *n != p.name)).map(|p| (p.name.clone(), p.applied)).collect();
        if self.standing.is_replica() && !c.peers.iter().any(|p| p.name == self.node) {
            let applied = self.standing.replica().map_or(0, |r| r.applied);
            t.push_str(&format!("cluster_node:{} replica {applied}\n", self.node));
            replicas.push((self.node.clone(), applied));
        }
        if let Some(sh) = c.shared.as_ref() {
            // Tell the other shards of this process who serves this one, and learn theirs.
            replicas.sort();
            sh.publish(c.shard, crate::cluster::ShardView { primary: primary.clone(), replicas });
            t.push_str(&sh.facts(c.shard));
        }
    }

    /// Gives a (new) engine its static facts and its role. The role is in force before
    /// the first client command reaches the engine, so a replica never takes a write.
    pub(super) fn send_facts(&mut self) {
        let mut b = BatchWriter::new();
        b.record(batch::REC_SERVER_INFO, 0, self.facts.text.as_bytes());
        let (offset, mut role) = self.role_text();
        self.node_lines(&mut role);
        // A new engine is whole: the rebuild or load that made it is a latency event.
        self.events.loaded();
        self.memoria_lines(&mut role);
        b.record(batch::REC_ROLE, 0, role.as_bytes());
        // The connection limits in force (a rebuilt engine keeps CONFIG SETs of them).
        b.record(batch::REC_CONFIG, 0, self.host.lines().as_bytes());
        self.reported_offset = offset;
        if let Err(e) = self.engine.execute(&b.buf, now_us(), 0) {
            tracing::error!(shard = self.id, error = %e, "engine refused its facts and role");
        }
    }

    /// Queues a REC_ROLE record now, whatever changed (the engine must know before the
    /// next command, as LASTSAVE after a SAVE).
    pub(super) fn report_role_now(&mut self) {
        let (offset, mut text) = self.role_text();
        self.reported_offset = offset;
        self.node_lines(&mut text);
        self.memoria_lines(&mut text);
        self.batch.record(batch::REC_ROLE, 0, text.as_bytes());
    }

    /// Queues a REC_ROLE record when the offset moved since the last report.
    pub(super) fn role_record(&mut self) {
        let rolled = self.gate.stats.roll(Instant::now());
        // Read the shared version first: a change racing with this report is seen next time.
        let version = self.cluster.as_ref().and_then(|c| c.shared.as_ref()).map_or(0, |s| s.version());
        let (offset, mut text) = self.role_text();
        let moved = self.cluster.as_mut().is_some_and(|c| std::mem::replace(&mut c.reported_version, version) != version);
        if offset != self.reported_offset || moved || rolled {
            self.reported_offset = offset;
            self.node_lines(&mut text);
            self.memoria_lines(&mut text);
            self.batch.record(batch::REC_ROLE, 0, text.as_bytes());
        }
    }

    /// What INFO reports of the process (network, buffers, RSS, CPU), added to a role
    /// record only when one is sent (`role_text` runs on every turn of the loop).
    fn node_lines(&self, t: &mut String) {
        self.host.node.lines(self.host.rejected.load(std::sync::atomic::Ordering::Relaxed), t);
    }

    /// INFO's `memoria` section (`memoria.<field>` lines: where the shard stands with its
    /// log, what waits for it), and the host's latency events since the last report.
    fn memoria_lines(&mut self, t: &mut String) {
        use std::fmt::Write;
        let _ = writeln!(t, "memoria.role:{}", self.role_name());
        match &self.standing {
            Standing::Replica(r) => {
                let _ = write!(t, "memoria.log_offset:{}\nmemoria.log_tail:{}\nmemoria.lag_entries:{}\n", r.applied, r.tail, r.tail.saturating_sub(r.applied));
            }
            Standing::Primary(Some(l)) => {
                let _ = write!(t, "memoria.log:{}\nmemoria.log_offset:{}\nmemoria.epoch:{}\n", l.name, l.prev_id, l.epoch);
            }
            Standing::Primary(None) => t.push_str("memoria.log:none\n"),
        }
        if let Some(ms) = self.lease_left_ms() {
            let _ = writeln!(t, "memoria.lease_remaining_ms:{ms}");
        }
        let _ = write!(
            t,
            "memoria.last_append_usec:{}\nmemoria.append_in_flight:{}\nmemoria.held_replies:{}\nmemoria.pending_keys:{}\n",
            self.events.last_append_us,
            u8::from(self.inflight.is_some()),
            self.gate.held_replies(),
            self.gate.tracker.pending_keys()
        );
        let p = &self.host.poison;
        let _ = write!(
            t,
            "memoria.engine_interrupts:{}\nmemoria.poisoned_commands:{}\nmemoria.poison_refusals:{}\n",
            p.interrupts.load(std::sync::atomic::Ordering::Relaxed),
            p.refused_count(),
            p.refusals.load(std::sync::atomic::Ordering::Relaxed)
        );
        self.events.take_lines(t);
        self.saves.lines(t);
    }

    /// This node's role in its shard, as INFO memoria and /metrics name it.
    pub(super) fn role_name(&self) -> &'static str {
        if self.standing.is_replica() { "replica" } else { "primary" }
    }

    /// Time left on this primary's lease, in ms (None: no election, or a replica).
    pub(super) fn lease_left_ms(&self) -> Option<u64> {
        let el = self.election.as_ref().filter(|_| !self.standing.is_replica())?;
        Some(el.m.lease_expiry().map_or(0, |at| at.saturating_sub(el.now())))
    }

    /// The node's role and log offset, as REC_ROLE text.
    fn role_text(&self) -> (u64, String) {
        let (offset, mut t) = self.base_role_text();
        self.cluster_lines(&mut t);
        self.gate.stats.lines(&mut t);
        (offset, t)
    }

    fn base_role_text(&self) -> (u64, String) {
        match &self.standing {
            Standing::Replica(r) => {
                let link = if r.stopped.is_some() { "down" } else { "up" };
                let (host, port) = r.primary.rsplit_once(':').unwrap_or((r.primary.as_str(), "0"));
                let mut t = format!(
                    "replica\nmaster_host:{host}\nmaster_port:{port}\nmaster_link_status:{link}\noffset:{0}\nslave_repl_offset:{0}\nslave_read_repl_offset:{0}\nmemoria_log_tail:{1}\nmemoria_lag_entries:{2}\n",
                    r.applied,
                    r.tail,
                    r.tail.saturating_sub(r.applied)
                );
                if let Some(why) = &r.stopped {
                    t.push_str(&format!("memoria_apply_stopped:{}\n", why.replace(['\n', '\r'], " ")));
                }
                (r.applied, t)
            }
            Standing::Primary(Some(l)) => {
                (l.prev_id, format!("primary\noffset:{0}\nmaster_repl_offset:{0}\nmemoria_log:{1}\nmemoria_epoch:{2}\n", l.prev_id, l.name, l.epoch))
            }
            Standing::Primary(None) => (0, "primary\noffset:0\nmaster_repl_offset:0\nmemoria_log:none\n".to_string()),
        }
    }
}
