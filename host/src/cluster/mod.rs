//! Cluster mode across shards: the slot map recorded in the cluster log (`topology`), the
//! process-wide view its shards share (`shared`), running several shards in one
//! process, one engine thread each (`sharded`), and moving slots between shards while
//! clients keep going (`reshard`, the `memoria reshard` command).

pub mod reshard;
pub mod reshard_cli;
pub mod sharded;
pub mod shared;
pub mod topology;

pub use shared::{ShardView, Shared};
pub use topology::{CLUSTER_LOG, ClusterEntry, Topology};
