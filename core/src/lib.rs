//! memoria-core: the command engine. `no_std` + `alloc`, no I/O, no clock, no RNG of its
//! own: the host passes time and a seed with every batch, so the same inputs always give
//! the same replies and effects. Built natively (tests, benches, the host's parser) and as
//! a WebAssembly component (`--features component`, see `guest`).
//!
//! Layers, each a folder, each importing only the ones listed before it
//! (docs/ARCHITECTURE.md; `e2e/tests/architecture.rs` keeps it so):
//! - `util`: numbers, glob patterns, the seeded PRNG;
//! - `protocol`: RESP requests, replies, the records of one engine call and their effects
//!   (all the host needs);
//! - `types`: the value types and their encodings;
//! - `keyspace`: what a key holds, one database of keys;
//! - `rdb`: Redis's serialization payloads (DUMP/RESTORE, FUNCTION DUMP/RESTORE): values
//!   read from and written to RDB objects;
//! - `lua`: the Lua VM scripts run in (C, built by `build.rs`), seen as compile and run;
//! - `server`: the shard's state, the `Ctx` of a command, dispatch, ACL, cluster slots;
//! - `commands`: the handlers by family and the command table;
//! - `engine`: one call of the host: a batch in, replies and effects out; replay; dumps.
#![no_std]

extern crate alloc;
#[cfg(feature = "component")]
extern crate std;

pub mod util;
pub mod protocol;
pub mod types;
pub mod keyspace;
pub mod rdb;
pub mod lua;
pub mod server;
pub mod commands;
pub mod engine;

pub use engine::{ApplyError, Engine};
