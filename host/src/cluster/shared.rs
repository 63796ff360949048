//! What the shards of one process know of the whole cluster: the slot map (from the
//! cluster log) and, per shard, its primary and replicas as that shard's own node sees
//! them. Each shard publishes its view and reads the others' into its REC_ROLE facts, so
//! every node can answer CLUSTER SLOTS for the whole cluster and send -MOVED anywhere.
//! Every process of `memoria up` hosts a node of every shard, so these local views cover
//! the cluster.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use memoria_log::{LogApi, LogHandle};

use memoria_admin::topology::{CLUSTER_LOG, ClusterEntry, Topology};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShardView {
    /// The primary's address and log offset.
    pub primary: Option<(String, u64)>,
    pub replicas: Vec<(String, u64)>,
}

impl ShardView {
    /// The same nodes in the same roles (offsets move all the time; they do not count).
    fn same_nodes(&self, o: &ShardView) -> bool {
        self.primary.as_ref().map(|p| &p.0) == o.primary.as_ref().map(|p| &p.0)
            && self.replicas.len() == o.replicas.len()
            && self.replicas.iter().zip(&o.replicas).all(|(a, b)| a.0 == b.0)
    }
}

pub struct Shared {
    /// Bumped whenever something a shard reports to its engine changed.
    version: AtomicU64,
    inner: Mutex<Inner>,
}

struct Inner {
    topo: Topology,
    views: Vec<ShardView>,
}

impl Shared {
    pub fn new(topo: Topology) -> Arc<Shared> {
        let views = vec![ShardView::default(); topo.shards as usize];
        Arc::new(Shared { version: AtomicU64::new(1), inner: Mutex::new(Inner { topo, views }) })
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    pub fn shards(&self) -> u16 {
        self.inner.lock().unwrap().topo.shards
    }

    pub fn topology(&self) -> Topology {
        self.inner.lock().unwrap().topo.clone()
    }

    pub fn set_topology(&self, t: Topology) {
        let mut g = self.inner.lock().unwrap();
        if g.topo != t {
            g.views.resize(t.shards as usize, ShardView::default());
            g.topo = t;
            self.version.fetch_add(1, Ordering::AcqRel);
        }
    }

    pub fn view(&self, shard: u16) -> ShardView {
        self.inner.lock().unwrap().views.get(shard as usize).cloned().unwrap_or_default()
    }

    /// A shard's own view of itself.
    pub fn publish(&self, shard: u16, v: ShardView) {
        let mut g = self.inner.lock().unwrap();
        let Some(slot) = g.views.get_mut(shard as usize) else { return };
        let changed = !slot.same_nodes(&v);
        *slot = v;
        if changed {
            self.version.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// REC_ROLE facts for a node of `myshard`: the slot map and the other shards' nodes
    /// (its own shard's nodes it reports itself).
    pub fn facts(&self, myshard: u16) -> String {
        let g = self.inner.lock().unwrap();
        let mut t = format!("cluster_myshard:{myshard}\n");
        for s in 0..g.topo.shards {
            t.push_str(&format!("cluster_slots:{s} {}\n", g.topo.ranges_text(s)));
        }
        // Slots moving out (-ASK to the target's primary) or in (served after ASKING). The
        // facts hold while the other side has no known primary (an election), with `?`
        // for it: a source that forgot the move would create keys of those slots that may
        // already be at the target, and the commit would lose them (it answers -TRYAGAIN).
        let primary = |s: u16| {
            g.views.get(s as usize).and_then(|v| v.primary.as_ref()).map_or_else(|| memoria_core::server::cluster::UNKNOWN_NODE.to_string(), |p| p.0.clone())
        };
        for m in &g.topo.moving {
            let slots = memoria_admin::topology::ranges_text(&m.slots);
            if m.from == myshard {
                t.push_str(&format!("cluster_migrating:{slots} {}\n", primary(m.to)));
            }
            if m.to == myshard {
                t.push_str(&format!("cluster_importing:{slots} {}\n", primary(m.from)));
            }
        }
        for (s, v) in g.views.iter().enumerate() {
            if s as u16 == myshard {
                continue;
            }
            if let Some((p, off)) = &v.primary {
                t.push_str(&format!("cluster_node:{p} master {off} {s}\n"));
            }
            for (r, off) in &v.replicas {
                t.push_str(&format!("cluster_node:{r} replica {off} {s}\n"));
            }
        }
        t
    }
}

/// Follows the cluster log from `after`, folding every entry into the shared map.
pub async fn follow(api: LogHandle, mut after: u64, shared: Arc<Shared>) {
    let mut topo = Some(shared.topology());
    loop {
        match api.read(CLUSTER_LOG, after, 1000, Duration::from_secs(1)).await {
            Ok(b) => {
                for e in &b.entries {
                    if let Some(c) = ClusterEntry::decode(&e.payload) {
                        Topology::apply(&mut topo, &c);
                    }
                    after = e.id;
                }
                if let Some(t) = topo.clone() {
                    shared.set_topology(t);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the cluster log failed; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memoria_admin::topology::{ClusterEntry, Topology};

    /// A source keeps knowing its slots are moving while the target shard elects a
    /// primary (`?` for it), so it never creates keys the commit would lose.
    #[test]
    fn moving_slots_stay_moving_while_the_other_side_has_no_primary() {
        let mut t = Some(Topology::even(2));
        Topology::apply(&mut t, &ClusterEntry::Migrate { slots: vec![(0, 9)], from: 0, to: 1 });
        let s = Shared::new(t.unwrap());
        assert!(s.facts(0).contains("cluster_migrating:0-9 ?\n"), "{}", s.facts(0));
        assert!(s.facts(1).contains("cluster_importing:0-9 ?\n"), "{}", s.facts(1));
        s.publish(1, ShardView { primary: Some(("127.0.0.1:7001".into(), 0)), replicas: Vec::new() });
        assert!(s.facts(0).contains("cluster_migrating:0-9 127.0.0.1:7001\n"), "{}", s.facts(0));
    }
}
