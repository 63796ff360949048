//! The keyspace: what a key holds (`object`: a value of one of the types, its expiry and
//! access clock) and one logical database of them (`db`). Key access with lazy expiry,
//! WATCH and notifications is the server layer's (`server::State`), which owns the dbs.

pub mod db;
pub mod lfu;
pub mod object;
pub mod record;
