//! memoria-core: the command engine. `no_std` + `alloc`, no I/O, no clock, no RNG of its
//! own: the host passes time and a seed with every batch, so the same inputs always give
//! the same replies and effects. Built natively (tests, benches, the host's parser) and as
//! a WebAssembly component (`--features component`, see `guest`).
#![no_std]

extern crate alloc;
#[cfg(feature = "component")]
extern crate std;

pub mod acl;
pub mod blocked;
pub mod client;
pub mod config;
pub mod ctx;
pub mod dispatch;
pub mod engine;
pub mod evict;
pub mod expire;
pub mod keyspace;
pub mod protocol;
pub mod snapshot;
pub mod table;
pub mod types;
pub mod util;

// Command families, one file each (like Redis's t_*.c).
pub mod cluster;
pub mod connection;
pub mod keys;
pub mod migrate;
pub mod multi;
pub mod notify;
pub mod pubsub;
pub mod server;
pub mod t_bitmap;
pub mod t_hash;
pub mod t_hll;
pub mod t_list;
pub mod t_set;
pub mod t_sort;
pub mod t_stream;
pub mod t_string;
pub mod t_zset;

#[cfg(feature = "component")]
mod guest;

pub use engine::{ApplyError, Engine};
