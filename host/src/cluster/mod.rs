//! Cluster mode across shards: the slot map recorded in the cluster log (`topology`), the
//! process-wide view its shards share (`shared`), running several shards in one
//! process, one engine thread each (`sharded`), and moving slots between shards while
//! clients keep going (`reshard`, the `memoria reshard` command).

pub mod reshard_cli;
pub mod sharded;
pub mod shared;

pub use memoria_admin::topology::{self, CLUSTER_LOG, ClusterEntry, Topology};
pub use shared::{ShardView, Shared};
