//! memoria-host: the RESP server around the WebAssembly engine.

pub mod conn;
pub mod durable;
pub mod lease;
pub mod server;
pub mod shard;
pub mod tracker;
pub mod wasm;
