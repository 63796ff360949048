//! The command handlers, one file per family as Redis's `t_*.c`, `db.c`, `server.c`… and
//! the command table that names them (`table`). A handler gets a `Ctx` (the shard state,
//! its client, its reply and effects) and the arguments; it drives the value types.

pub mod acl;
pub mod bitmap;
pub mod cluster;
pub mod connection;
pub mod hash;
pub mod hll;
pub mod keys;
pub mod list;
pub mod migrate;
pub mod multi;
pub mod pubsub;
pub mod server;
pub mod set;
pub mod sort;
pub mod stream;
pub mod string;
pub mod table;
pub mod zset;
