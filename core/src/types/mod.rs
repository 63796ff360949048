//! The value types and their encodings, as Redis lays them out: no command, no reply and
//! no shard state here, only data structures and their operations. The keyspace stores
//! them (`keyspace::object::Value`); the command families drive them.

pub mod dict;
pub mod geohash;
pub mod field_ttl;
pub mod hash;
pub mod hll;
pub mod list;
pub mod set;
pub mod stream;
pub mod zranktree;
pub mod zset;
