//! `<data-dir>/cluster.json`: what `memoria up`'s supervisor knows of its nodes (role,
//! pid, port, epoch, log offset), kept for scripts, `memoria reshard` and the console.

use serde::{Deserialize, Serialize};

/// The name of the file next to cluster.json that holds the log service's token of the
/// running `memoria up` (mode 0600).
pub const TOKEN_FILE: &str = "log.token";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeRole {
    /// Started, not answering yet (replaying the log).
    Starting,
    Primary,
    Replica,
    /// Running but not answering (frozen, overloaded).
    Unresponsive,
    /// Not running (between a crash and its restart, or stopped).
    Down,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeStatus {
    pub name: String,
    pub port: u16,
    pub pid: Option<u32>,
    pub role: NodeRole,
    /// Leadership epoch of a primary.
    pub epoch: Option<u64>,
    /// Last log id this node holds (applied, or written as primary).
    pub offset: Option<u64>,
    /// Times the node was started again after it died.
    pub restarts: u32,
    /// The shard this node serves (each node process serves one node of every shard).
    #[serde(default)]
    pub shard: u16,
    /// The node process's Prometheus endpoint (`http://host:port/metrics`; every shard of
    /// the process is on it).
    #[serde(default)]
    pub metrics: Option<String>,
}

/// `<data-dir>/cluster.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClusterFile {
    /// The stable client endpoint (leads to the current primary).
    pub endpoint: String,
    /// The current primary's node name (of shard 0), if one is serving.
    pub primary: Option<String>,
    /// Shards of the cluster (`nodes` lists one entry per node process and shard).
    #[serde(default = "one")]
    pub shards: u16,
    pub nodes: Vec<NodeStatus>,
    pub log: LogFacts,
    /// Whether the supervisor is running.
    pub running: bool,
    pub supervisor_pid: u32,
    pub updated_unix_ms: u64,
}

fn one() -> u16 {
    1
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogFacts {
    pub backend: String,
    pub path: String,
    pub url: String,
    /// The log service's Prometheus endpoint (appends, tails, snapshots scheduling).
    #[serde(default)]
    pub metrics: Option<String>,
}
