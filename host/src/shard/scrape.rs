//! A scrape of the shard for the node's `/metrics`: the engine's families (commands,
//! their durations, errors, keyspace, memory) and what only the host knows of the shard
//! (its role and place in the log, held replies, the lease, the latency of its replies,
//! its connections' traffic), every sample labelled with the shard.

use memoria_core::server::prometheus::family;

use super::{Shard, Standing};

impl Shard {
    pub(super) fn scrape(&mut self) -> String {
        let labels = format!("shard=\"{}\"", self.id);
        let mut out = match self.engine.metrics(&labels) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(shard = self.id, error = %e, "the engine gave no metrics");
                String::new()
            }
        };
        self.role_families(&labels, &mut out);
        family(&mut out, &labels, "memoria_held_replies", "gauge", "Replies and messages held until the log acknowledges the writes they depend on.").sample(
            "",
            &[],
            self.gate.held_replies(),
        );
        family(&mut out, &labels, "memoria_pending_keys", "gauge", "Keys with a write not yet durable (the key tracker).").sample(
            "",
            &[],
            self.gate.tracker.pending_keys(),
        );
        self.gate.stats.prometheus(&labels, &mut out);
        self.host.node.prometheus(&labels, &mut out);
        out
    }

    fn role_families(&self, labels: &str, out: &mut String) {
        family(out, labels, "memoria_role", "gauge", "1 for this node's role in its shard.").sample("", &[("role", self.role_name())], 1);
        let (offset, lag) = match &self.standing {
            Standing::Replica(r) => (r.applied, Some((r.tail.saturating_sub(r.applied), r.stopped.is_none()))),
            Standing::Primary(Some(l)) => (l.prev_id, None),
            Standing::Primary(None) => (0, None),
        };
        family(out, labels, "memoria_log_offset", "gauge", "The last log entry this node holds (written as primary, applied as replica).").sample(
            "",
            &[],
            offset,
        );
        if let Some((entries, up)) = lag {
            family(out, labels, "memoria_replica_lag_entries", "gauge", "Log entries the primary wrote that this replica has not applied yet.").sample(
                "",
                &[],
                entries,
            );
            family(out, labels, "memoria_replica_link_up", "gauge", "1 while this replica applies the log (0: applying stopped).").sample(
                "",
                &[],
                u8::from(up),
            );
        }
        if let Some(l) = self.standing.log() {
            family(out, labels, "memoria_epoch", "gauge", "This primary's leadership epoch.").sample("", &[], l.epoch);
        }
        if let Some(left_ms) = self.lease_left_ms() {
            family(out, labels, "memoria_lease_remaining_seconds", "gauge", "Time left on this primary's lease (it renews every third of it).").sample(
                "",
                &[],
                left_ms as f64 / 1000.0,
            );
        }
    }
}
