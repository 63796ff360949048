//! Cluster mode across shards: the slot map recorded in the cluster log (`topology`), the
//! process-wide view its shards share (`shared`), and running several shards in one
//! process, one engine thread each (`sharded`).

pub mod migrate;
pub mod shared;
pub mod sharded;
pub mod topology;

pub use shared::{Shared, ShardView};
pub use topology::{ClusterEntry, Topology, CLUSTER_LOG};
