//! Cluster mode across shards: the slot map recorded in the cluster log (`topology`), the
//! process-wide view its shards share (`shared`), and moving slots between shards while
//! clients keep going (`memoria_admin::reshard`, the `memoria reshard` command). Running
//! several shards in one process is `server::sharded`.

pub mod reshard_cli;
pub mod shared;

pub use memoria_admin::topology::{self, CLUSTER_LOG, ClusterEntry, Topology};
pub use shared::{ShardView, Shared};
