//! What the pages show, as the server gathers it and the browser receives it (JSON through
//! server functions, and serialized into the page for hydration).

use serde::{Deserialize, Serialize};

pub const SLOTS: u16 = 16384;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    /// The console's clock when gathered (unix ms).
    pub now_ms: u64,
    /// Where the facts come from (`memoria up` in <dir>, or the log service URLs).
    pub source: String,
    pub shards: Vec<ShardView>,
    pub totals: Totals,
    /// Whatever could not be read (log service down, cluster.json missing…).
    pub errors: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub shards: usize,
    pub nodes: usize,
    pub healthy_nodes: usize,
    pub keys: u64,
    pub ops_per_sec: f64,
    pub used_memory: u64,
    pub clients: u64,
    /// Round trips of the console's PING through the stable endpoint (the port clients
    /// use) over the last minute: median and worst, µs (None: no endpoint, or no answer).
    pub endpoint_p50_us: Option<u64>,
    pub endpoint_max_us: Option<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardView {
    pub id: u32,
    /// The shard's log ("shard-0").
    pub log: String,
    /// The node serving as primary (from the nodes themselves).
    pub primary: Option<String>,
    pub epoch: u64,
    /// The node named by the newest lease renewal or claim in the log.
    pub lease_holder: Option<String>,
    /// Lease left when gathered (negative: lapsed), from the log service's clock.
    pub lease_remaining_ms: Option<i64>,
    pub tail_id: u64,
    pub first_id: u64,
    pub last_checksum: String,
    /// Newest id covered by a published snapshot the log recorded (0: none).
    pub snapshot_id: u64,
    pub nodes: Vec<NodeView>,
    /// "ok", "degraded" or "down".
    pub health: String,
    pub health_reason: String,
    /// Slot ranges owned (inclusive).
    pub slots: Vec<(u16, u16)>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeView {
    pub name: String,
    pub addr: String,
    /// primary, replica, starting, unresponsive, down.
    pub role: String,
    pub healthy: bool,
    /// Why it is unhealthy (or empty).
    pub problem: String,
    pub pid: Option<u32>,
    pub restarts: u32,
    pub epoch: Option<u64>,
    /// Last log id applied (replicas) or written (primary).
    pub offset: Option<u64>,
    /// Entries behind the log's tail (replicas).
    pub lag: Option<u64>,
    pub ops_per_sec: Option<f64>,
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
    pub clients: Option<u64>,
    pub used_memory: Option<u64>,
    pub keys: Option<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeDetail {
    pub node: NodeView,
    pub shard: u32,
    /// INFO, section by section.
    pub info: Vec<(String, Vec<(String, String)>)>,
    /// One sample per second, oldest first.
    pub history: Vec<Sample>,
    pub error: Option<String>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub t_ms: u64,
    pub ops_per_sec: f64,
    pub p99_us: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SnapshotsPage {
    pub now_ms: u64,
    pub shards: Vec<ShardSnapshots>,
    pub errors: Vec<String>,
    /// Why "take a snapshot" is unavailable (no memoria binary or store known), if it is.
    pub take_disabled: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardSnapshots {
    pub shard: u32,
    pub log: String,
    pub store: String,
    pub tail_id: u64,
    /// Newest id the log recorded as covered by a snapshot.
    pub recorded_id: u64,
    /// Entries written since the newest snapshot, and their size estimated from the
    /// newest snapshot's replay (bytes per entry).
    pub entries_since: u64,
    pub bytes_since_estimate: Option<u64>,
    pub snapshots: Vec<SnapshotView>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SnapshotView {
    pub name: String,
    pub last_id: u64,
    pub log_checksum: String,
    pub data_checksum: String,
    pub digest: String,
    pub keys: u64,
    /// Stored bytes (chunks with their envelopes).
    pub bytes: u64,
    pub chunks: usize,
    pub created_unix_ms: u64,
    pub age_ms: u64,
    /// "verified" (manifest checks pass and the log recorded it), "published" (checks
    /// pass, not recorded yet), or "refused: <why>".
    pub status: String,
    pub ok: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LogPage {
    pub shard: u32,
    pub log: String,
    pub first_id: u64,
    pub tail_id: u64,
    pub entries: Vec<LogRow>,
    /// `before` for the next (older) page, if there is one.
    pub older: Option<u64>,
    /// `before` for the newer page (None: this is the newest).
    pub newer: Option<u64>,
    pub error: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LogRow {
    pub id: u64,
    pub kind: String,
    pub epoch: u64,
    pub format: u16,
    pub checksum: String,
    pub payload_len: usize,
    /// What the payload says, when the console can read it (lease holder, mark id).
    pub detail: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SlotsPage {
    /// The nodes run without cluster mode: there are no slots to show.
    pub standalone: bool,
    pub shards: Vec<SlotOwner>,
    /// Migrations in progress, from the cluster log.
    pub migrations: Vec<Migration>,
    /// The move started from this console (running or finished), if any.
    pub console_move: Option<MoveStatus>,
    pub errors: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SlotOwner {
    pub shard: u32,
    pub primary: Option<String>,
    pub ranges: Vec<(u16, u16)>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Migration {
    pub slots: String,
    pub from: u16,
    pub to: u16,
    /// Where it is in the two-phase commit.
    pub phase: String,
    pub progress: String,
}

/// A move of slots started from the console.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MoveStatus {
    pub slots: String,
    pub from: u16,
    pub to: u16,
    pub running: bool,
    pub moved: u64,
    pub retried: u64,
    pub passes: u32,
    /// When finished: committed, or why it stopped.
    pub result: String,
    pub ok: bool,
}

/// Human sizes for the tables.
pub fn human_bytes(n: u64) -> String {
    let f = n as f64;
    if n < 1024 {
        format!("{n} B")
    } else if n < 1 << 20 {
        format!("{:.1} KiB", f / 1024.0)
    } else if n < 1 << 30 {
        format!("{:.1} MiB", f / 1048576.0)
    } else {
        format!("{:.2} GiB", f / 1073741824.0)
    }
}

pub fn human_age(ms: u64) -> String {
    let s = ms / 1000;
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min {} s", s / 60, s % 60)
    } else if s < 86400 {
        format!("{} h {} min", s / 3600, (s % 3600) / 60)
    } else {
        format!("{} d {} h", s / 86400, (s % 86400) / 3600)
    }
}

pub fn short(hex: &str) -> String {
    if hex.len() > 16 { format!("{}…", &hex[..16]) } else { hex.to_string() }
}

/// Owner ranges → rows of a 128×128 grid: (row, first column, last column, shard index).
pub fn grid_segments(owners: &[SlotOwner]) -> Vec<(u16, u16, u16, usize)> {
    let mut out = Vec::new();
    for (i, o) in owners.iter().enumerate() {
        for &(a, b) in &o.ranges {
            let (a, b) = (a.min(SLOTS - 1), b.min(SLOTS - 1));
            let mut s = a;
            while s <= b {
                let row = s / 128;
                let end = b.min(row * 128 + 127);
                out.push((row, s % 128, end % 128, i));
                if end == u16::MAX {
                    break;
                }
                s = end + 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_owner_of_all_slots_fills_every_row() {
        let o = vec![SlotOwner { shard: 0, primary: None, ranges: vec![(0, 16383)] }];
        let g = grid_segments(&o);
        assert_eq!(g.len(), 128);
        assert!(g.iter().enumerate().all(|(r, s)| *s == (r as u16, 0, 127, 0)));
    }

    #[test]
    fn ranges_split_at_row_ends() {
        let o = vec![SlotOwner { shard: 0, primary: None, ranges: vec![(100, 300)] }, SlotOwner { shard: 1, primary: None, ranges: vec![(301, 301)] }];
        assert_eq!(grid_segments(&o), vec![(0, 100, 127, 0), (1, 0, 127, 0), (2, 0, 44, 0), (2, 45, 45, 1)]);
    }

    #[test]
    fn sizes_and_ages_read_well() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 << 20), "3.0 MiB");
        assert_eq!(human_age(61_000), "1 min 1 s");
        assert_eq!(short("0123456789abcdef0123"), "0123456789abcdef…");
    }
}
