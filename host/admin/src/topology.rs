//! The slot map: which shard owns each of the 16384 slots. It lives in the cluster log
//! (`cluster`), as JSON entries folded in order; the first entry creates the cluster.

use std::time::Duration;

use memoria_log::{Kind, LogApi, LogError, LogHandle, NewEntry};
use serde::{Deserialize, Serialize};

pub const SLOTS: u16 = 16384;
pub const CLUSTER_LOG: &str = "cluster";

/// The log of shard `s` (shard 0 keeps the name single-shard nodes always used).
pub fn shard_log(s: u16) -> String {
    format!("shard-{s}")
}

/// One entry of the cluster log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ClusterEntry {
    /// Creates the cluster: `shards` shards and who owns which slots (start, end, shard).
    Init { shards: u16, slots: Vec<(u16, u16, u16)> },
    /// Slots start moving from shard `from` to shard `to` (`memoria reshard`): the
    /// source sends clients of keys it does not hold to the target with -ASK.
    Migrate { slots: Vec<(u16, u16)>, from: u16, to: u16 },
    /// Slots change owner (the commit of a migration): the only entry that moves
    /// ownership, so a slot has exactly one owner at any point of the log.
    Assign { slots: Vec<(u16, u16)>, shard: u16 },
}

/// A migration started and not yet committed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    pub slots: Vec<(u16, u16)>,
    pub from: u16,
    pub to: u16,
}

/// `a-b,c,…` (the engine's REC_ROLE slot syntax).
pub fn ranges_text(slots: &[(u16, u16)]) -> String {
    slots.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect::<Vec<_>>().join(",")
}

impl ClusterEntry {
    pub fn kind(&self) -> Kind {
        match self {
            ClusterEntry::Init { .. } => Kind::Config,
            ClusterEntry::Migrate { .. } => Kind::MigrationStart,
            ClusterEntry::Assign { .. } => Kind::MigrationCommit,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("cluster entries encode")
    }

    pub fn decode(b: &[u8]) -> Option<ClusterEntry> {
        serde_json::from_slice(b).ok()
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub shards: u16,
    pub owner: Vec<u16>,
    /// Migrations in progress (`memoria reshard` runs one at a time).
    pub moving: Vec<Move>,
}

impl Topology {
    /// `n` shards, each a contiguous and (nearly) equal run of slots, like
    /// `redis-cli --cluster create`.
    pub fn even(n: u16) -> Topology {
        let n = n.max(1);
        let owner = (0..SLOTS as u32).map(|s| (s * n as u32 / SLOTS as u32) as u16).collect();
        Topology { shards: n, owner, moving: Vec::new() }
    }

    /// Contiguous runs: (start, end, shard).
    pub fn ranges(&self) -> Vec<(u16, u16, u16)> {
        let mut out: Vec<(u16, u16, u16)> = Vec::new();
        for (s, &o) in self.owner.iter().enumerate() {
            match out.last_mut() {
                Some(last) if last.2 == o && last.1 as usize + 1 == s => last.1 = s as u16,
                _ => out.push((s as u16, s as u16, o)),
            }
        }
        out
    }

    /// `a-b,c-d` for the REC_ROLE facts.
    pub fn ranges_text(&self, shard: u16) -> String {
        ranges_text(&self.ranges().iter().filter(|r| r.2 == shard).map(|r| (r.0, r.1)).collect::<Vec<_>>())
    }

    pub fn slots_of(&self, shard: u16) -> usize {
        self.owner.iter().filter(|&&o| o == shard).count()
    }

    pub fn init_entry(&self) -> ClusterEntry {
        ClusterEntry::Init { shards: self.shards, slots: self.ranges() }
    }

    /// Folds one entry in. The first Init defines the cluster; later ones are ignored.
    pub fn apply(topo: &mut Option<Topology>, e: &ClusterEntry) {
        match (topo.as_mut(), e) {
            (None, ClusterEntry::Init { shards, slots }) => {
                let mut t = Topology { shards: *shards, owner: vec![0; SLOTS as usize], moving: Vec::new() };
                for &(a, b, s) in slots {
                    for x in a..=b.min(SLOTS - 1) {
                        t.owner[x as usize] = s;
                    }
                }
                *topo = Some(t);
            }
            (Some(t), ClusterEntry::Migrate { slots, from, to }) => t.moving.push(Move { slots: slots.clone(), from: *from, to: *to }),
            (Some(t), ClusterEntry::Assign { slots, shard }) => {
                let assigned = |x: u16| slots.iter().any(|&(a, b)| a <= x && x <= b);
                for &(a, b) in slots {
                    for x in a..=b.min(SLOTS - 1) {
                        t.owner[x as usize] = *shard;
                    }
                }
                // The assigned slots are no longer moving.
                for m in &mut t.moving {
                    let left: Vec<u16> = m.slots.iter().flat_map(|&(a, b)| a..=b).filter(|&x| !assigned(x)).collect();
                    m.slots = to_ranges(&left);
                }
                t.moving.retain(|m| !m.slots.is_empty());
            }
            _ => {}
        }
    }
}

/// Sorted slots to inclusive ranges.
pub fn to_ranges(slots: &[u16]) -> Vec<(u16, u16)> {
    let mut out: Vec<(u16, u16)> = Vec::new();
    for &x in slots {
        match out.last_mut() {
            Some(last) if last.1 + 1 == x => last.1 = x,
            _ => out.push((x, x)),
        }
    }
    out
}

#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    #[error("log: {0}")]
    Log(#[from] LogError),
    #[error("the cluster log says {found} shards, this node was started with --shards {wanted}")]
    ShardCount { found: u16, wanted: u16 },
}

/// Reads the cluster log; creates the cluster (an even split over `shards`) if the log is
/// empty. Racing creators are settled by the conditional append: the loser reads the
/// winner's entry. Returns the map and the last id read.
pub async fn load_or_init(api: &LogHandle, shards: u16) -> Result<(Topology, u64), TopologyError> {
    api.create(CLUSTER_LOG).await?;
    loop {
        let (topo, last) = read_all(api, 0, None).await?;
        if let Some(t) = topo {
            if t.shards != shards {
                return Err(TopologyError::ShardCount { found: t.shards, wanted: shards });
            }
            return Ok((t, last));
        }
        let init = Topology::even(shards).init_entry();
        match api.append(CLUSTER_LOG, last, 0, vec![NewEntry::new(init.kind(), init.encode())]).await {
            Ok(_) => continue,
            Err(LogError::Conflict { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Folds the cluster log after `after` into `topo`.
pub async fn read_all(api: &LogHandle, mut after: u64, mut topo: Option<Topology>) -> Result<(Option<Topology>, u64), LogError> {
    loop {
        let b = api.read(CLUSTER_LOG, after, 1000, Duration::ZERO).await?;
        for e in &b.entries {
            if let Some(c) = ClusterEntry::decode(&e.payload) {
                Topology::apply(&mut topo, &c);
            }
            after = e.id;
        }
        if b.entries.is_empty() || after >= b.tail_id {
            return Ok((topo, after));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_split_and_ranges() {
        let t = Topology::even(2);
        assert_eq!(t.ranges(), vec![(0, 8191, 0), (8192, 16383, 1)]);
        assert_eq!(t.ranges_text(1), "8192-16383");
        let t3 = Topology::even(3);
        assert_eq!(t3.ranges().len(), 3);
        assert_eq!((0..3).map(|s| t3.slots_of(s)).sum::<usize>(), 16384);
        let mut topo = None;
        Topology::apply(&mut topo, &t.init_entry());
        Topology::apply(&mut topo, &ClusterEntry::Assign { slots: vec![(0, 9)], shard: 1 });
        let t = topo.unwrap();
        assert_eq!(t.ranges(), vec![(0, 9, 1), (10, 8191, 0), (8192, 16383, 1)]);
        let mut topo = Some(t.clone());
        Topology::apply(&mut topo, &ClusterEntry::Migrate { slots: vec![(10, 19), (30, 30)], from: 0, to: 1 });
        assert_eq!(topo.as_ref().unwrap().moving, vec![Move { slots: vec![(10, 19), (30, 30)], from: 0, to: 1 }]);
        assert_eq!(topo.as_ref().unwrap().owner[10], 0, "starting a move changes no owner");
        Topology::apply(&mut topo, &ClusterEntry::Assign { slots: vec![(10, 14)], shard: 1 });
        assert_eq!(topo.as_ref().unwrap().moving, vec![Move { slots: vec![(15, 19), (30, 30)], from: 0, to: 1 }]);
        Topology::apply(&mut topo, &ClusterEntry::Assign { slots: vec![(15, 19), (30, 30)], shard: 1 });
        let done = topo.unwrap();
        assert!(done.moving.is_empty());
        assert_eq!(done.ranges(), vec![(0, 19, 1), (20, 29, 0), (30, 30, 1), (31, 8191, 0), (8192, 16383, 1)]);
        assert_eq!(ranges_text(&[(1, 1), (3, 5)]), "1,3-5");
        let e = ClusterEntry::decode(&ClusterEntry::Assign { slots: vec![(1, 2)], shard: 3 }.encode()).unwrap();
        assert_eq!(e, ClusterEntry::Assign { slots: vec![(1, 2)], shard: 3 });
    }
}
