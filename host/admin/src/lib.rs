//! memoria-admin: what Memoria's processes and tools share without the engine (so the
//! console does not build Wasmtime): `cluster.json` (`cluster_file`), the slot map in the
//! cluster log (`topology`), the coordinator that moves slots between shards (`reshard`),
//! and the snapshot store with its manifests (`snapshot`).

pub mod cluster_file;
pub mod reshard;
pub mod snapshot;
pub mod topology;
