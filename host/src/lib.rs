//! memoria-host: the RESP server around the WebAssembly engine.

pub mod acl;
pub mod child;
pub mod clock;
pub mod cluster;
pub mod conn;
pub mod durable;
pub mod handoff;
pub mod lease;
pub mod limits;
pub mod log_args;
pub mod metrics_endpoint;
pub mod node_stats;
pub mod poison;
pub mod replay;
pub mod server;
pub mod shard;
pub mod shutdown;
pub mod snapshot;
pub mod supervisor;
pub mod tls;
pub mod wasm;
