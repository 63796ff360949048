//! What commands run against: the shard's state (databases, clients, configuration,
//! subscriptions, blocked clients, ACL users, the cluster's slot map), the `Ctx` a handler
//! gets, and `dispatch`, which checks a command (arity, ACL, cluster routing, MULTI,
//! maxmemory) before its handler runs. Named after Redis's server.c/server.h.

pub mod acl;
pub mod blocked;
pub mod client;
pub mod cluster;
pub mod cmdstats;
pub mod config;
pub mod ctx;
pub mod digest;
pub mod dispatch;
pub mod evict;
pub mod expire;
pub mod field_expiry;
pub mod functions;
pub mod key_spec;
pub mod latency;
pub mod migrating;
pub mod monitor;
pub mod notify;
pub mod pause;
pub mod prometheus;
pub mod pubsub;
pub mod scripts;
pub mod slowlog;
pub mod spec;
pub mod state;
pub mod tracking;
