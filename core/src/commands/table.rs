//! The command table: the one source of truth for dispatch, arity errors, COMMAND,
//! key extraction (the host's key tracker, later slot routing) and ACL categories.

use crate::commands::cluster;
use crate::commands::pubsub;
use crate::commands::{
    acl, bitmap, connection as conn, db, debug, dump, functions, geo, hash, hash_ttl, hll, keys, latency, lcs, list, memory, migrate, migrate_to, multi,
    scripting, server, set, slowlog, sort, stream, string, tracking, zset,
};

use crate::server::spec::flags::*;
use crate::server::spec::{CommandIndex, CommandSpec, Movable};

macro_rules! cmd {
    ($name:literal, $arity:expr, $flags:expr, $keys:expr, $group:literal, $since:literal, $summary:literal, $h:expr) => {
        CommandSpec {
            name: $name,
            arity: $arity,
            flags: $flags,
            first_key: $keys.0,
            last_key: $keys.1,
            step: $keys.2,
            group: $group,
            since: $since,
            summary: $summary,
            handler: Some($h),
            subcommands: &[],
            movable: Movable::No,
            bare: None,
            keyspace_if: None,
            redact: None,
        }
    };
}

macro_rules! container {
    ($name:literal, $arity:expr, $group:literal, $since:literal, $summary:literal, $subs:expr) => {
        CommandSpec {
            name: $name,
            arity: $arity,
            flags: 0,
            first_key: 0,
            last_key: 0,
            step: 0,
            group: $group,
            since: $since,
            summary: $summary,
            handler: None,
            subcommands: $subs,
            movable: Movable::No,
            bare: None,
            keyspace_if: None,
            redact: None,
        }
    };
}

const NK: (i32, i32, i32) = (0, 0, 0);
const K1: (i32, i32, i32) = (1, 1, 1);
const KALL: (i32, i32, i32) = (1, -1, 1);

const W: u32 = WRITE;
const WD: u32 = WRITE | DENYOOM;
const WDF: u32 = WRITE | DENYOOM | FAST;
const WF: u32 = WRITE | FAST;
const R: u32 = READONLY;
const RF: u32 = READONLY | FAST;
const CONN: u32 = NOSCRIPT | LOADING | STALE | FAST | CONNECTION;

pub static CLIENT_SUBCOMMANDS: [CommandSpec; 18] = [
    cmd!("client|id", 2, NOSCRIPT | LOADING | STALE, NK, "connection", "5.0.0", "Returns the unique client ID of the connection.", conn::client_id),
    cmd!("client|setname", 3, NOSCRIPT | LOADING | STALE | CONNECTION, NK, "connection", "2.6.9", "Sets the connection name.", conn::client_setname),
    cmd!("client|getname", 2, NOSCRIPT | LOADING | STALE, NK, "connection", "2.6.9", "Returns the name of the connection.", conn::client_getname),
    cmd!("client|info", 2, NOSCRIPT | LOADING | STALE, NK, "connection", "6.2.0", "Returns information about the connection.", conn::client_info),
    cmd!("client|list", -2, ADMIN | NOSCRIPT | LOADING | STALE, NK, "connection", "2.4.0", "Lists open connections.", conn::client_list),
    cmd!("client|setinfo", 4, CONN, NK, "connection", "7.2.0", "Sets information specific to the client or connection.", conn::client_setinfo),
    cmd!(
        "client|no-evict",
        3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        NK,
        "connection",
        "7.0.0",
        "Sets the client eviction mode of the connection.",
        conn::client_noevict
    ),
    cmd!(
        "client|reply",
        3,
        NOSCRIPT | LOADING | STALE | CONNECTION,
        NK,
        "connection",
        "3.2.0",
        "Instructs the server whether to reply to commands.",
        conn::client_reply
    ),
    cmd!("client|pause", -3, ADMIN | NOSCRIPT | LOADING | STALE, NK, "connection", "3.0.0", "Suspends commands processing.", conn::client_pause),
    cmd!(
        "client|unpause",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        NK,
        "connection",
        "6.2.0",
        "Resumes processing commands from paused clients.",
        conn::client_unpause
    ),
    cmd!(
        "client|no-touch",
        3,
        NOSCRIPT | LOADING | STALE,
        NK,
        "connection",
        "7.2.0",
        "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
        conn::client_notouch
    ),
    cmd!("client|kill", -3, ADMIN | NOSCRIPT | LOADING | STALE, NK, "connection", "2.4.0", "Terminates open connections.", conn::client_kill),
    cmd!("client|help", 2, LOADING | STALE, NK, "connection", "5.0.0", "Returns helpful text about the different subcommands.", conn::client_help),
    cmd!(
        "client|tracking",
        -3,
        NOSCRIPT | LOADING | STALE,
        NK,
        "connection",
        "6.0.0",
        "Controls server-assisted client-side caching for the connection.",
        tracking::client_tracking
    ),
    cmd!(
        "client|caching",
        3,
        NOSCRIPT | LOADING | STALE,
        NK,
        "connection",
        "6.0.0",
        "Instructs the server whether to track the keys in the next request.",
        tracking::client_caching
    ),
    cmd!(
        "client|getredir",
        2,
        NOSCRIPT | LOADING | STALE,
        NK,
        "connection",
        "6.0.0",
        "Returns the client ID to which the connection's tracking notifications are redirected.",
        tracking::client_getredir
    ),
    cmd!(
        "client|trackinginfo",
        2,
        NOSCRIPT | LOADING | STALE,
        NK,
        "connection",
        "6.2.0",
        "Returns information about server-assisted client-side caching for the connection.",
        tracking::client_trackinginfo
    ),
    cmd!(
        "client|unblock",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        NK,
        "connection",
        "5.0.0",
        "Unblocks a client blocked by a blocking command from a different connection.",
        conn::client_unblock
    ),
];

pub static SCRIPT_SUBCOMMANDS: [CommandSpec; 5] = [
    cmd!(
        "script|exists",
        -3,
        NOSCRIPT,
        NK,
        "scripting",
        "2.6.0",
        "Determines whether server-side Lua scripts exist in the script cache.",
        scripting::script_exists
    ),
    cmd!("script|flush", -2, NOSCRIPT, NK, "scripting", "2.6.0", "Removes all server-side Lua scripts from the script cache.", scripting::script_flush),
    cmd!("script|help", 2, LOADING | STALE, NK, "scripting", "5.0.0", "Returns helpful text about the different subcommands.", scripting::script_help),
    cmd!("script|kill", 2, NOSCRIPT | ALLOW_BUSY, NK, "scripting", "2.6.0", "Terminates a server-side Lua script during execution.", scripting::script_kill),
    cmd!("script|load", 3, NOSCRIPT | STALE, NK, "scripting", "2.6.0", "Loads a server-side Lua script to the script cache.", scripting::script_load),
];

pub static FUNCTION_SUBCOMMANDS: [CommandSpec; 9] = [
    cmd!("function|delete", 3, WRITE | NOSCRIPT, NK, "scripting", "7.0.0", "Deletes a library and its functions.", functions::function_delete),
    // DUMP shows logged state: held until pending writes are durable.
    cmd!("function|dump", 2, NOSCRIPT | KEYSPACE, NK, "scripting", "7.0.0", "Dumps all libraries into a serialized binary payload.", functions::function_dump),
    cmd!("function|flush", -2, WRITE | NOSCRIPT, NK, "scripting", "7.0.0", "Deletes all libraries and functions.", functions::function_flush),
    cmd!("function|help", 2, LOADING | STALE, NK, "scripting", "7.0.0", "Returns helpful text about the different subcommands.", functions::function_help),
    cmd!("function|kill", 2, NOSCRIPT | ALLOW_BUSY, NK, "scripting", "7.0.0", "Terminates a function during execution.", functions::function_kill),
    // LIST and STATS show logged state: held until pending writes are durable.
    cmd!("function|list", -2, NOSCRIPT | KEYSPACE, NK, "scripting", "7.0.0", "Returns information about all libraries.", functions::function_list),
    cmd!("function|load", -3, WRITE | DENYOOM | NOSCRIPT, NK, "scripting", "7.0.0", "Creates a library.", functions::function_load),
    cmd!("function|restore", -3, WRITE | DENYOOM | NOSCRIPT, NK, "scripting", "7.0.0", "Restores all libraries from a payload.", functions::function_restore),
    cmd!(
        "function|stats",
        2,
        NOSCRIPT | ALLOW_BUSY | KEYSPACE,
        NK,
        "scripting",
        "7.0.0",
        "Returns information about a function during execution.",
        functions::function_stats
    ),
];

/// EVAL and its kin: `numkeys` at 2, then the keys (slot routing, ACL key checks).
const SCRIPT_RUN: u32 = NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | SCRIPT;

pub static LATENCY_SUBCOMMANDS: [CommandSpec; 7] = [
    cmd!(
        "latency|latest",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        NK,
        "server",
        "2.8.13",
        "Returns the latest latency samples for all events.",
        latency::latest
    ),
    cmd!("latency|history", 3, ADMIN | NOSCRIPT | LOADING | STALE, NK, "server", "2.8.13", "Returns timestamp-latency samples for an event.", latency::history),
    cmd!("latency|reset", -2, ADMIN | NOSCRIPT | LOADING | STALE, NK, "server", "2.8.13", "Resets the latency data for one or more events.", latency::reset),
    cmd!(
        "latency|histogram",
        -2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        NK,
        "server",
        "7.0.0",
        "Returns the cumulative distribution of latencies of a subset or all commands.",
        latency::histogram
    ),
    cmd!("latency|doctor", 2, ADMIN | NOSCRIPT | LOADING | STALE, NK, "server", "2.8.13", "Returns a human-readable latency analysis report.", latency::doctor),
    cmd!("latency|graph", 3, ADMIN | NOSCRIPT | LOADING | STALE, NK, "server", "2.8.13", "Returns a latency graph for an event.", latency::graph),
    cmd!("latency|help", 2, LOADING | STALE, NK, "server", "2.8.13", "Returns helpful text about the different subcommands.", latency::help),
];

pub static MEMORY_SUBCOMMANDS: [CommandSpec; 6] = [
    cmd!("memory|doctor", 2, 0, NK, "server", "4.0.0", "Outputs a memory problems report.", memory::doctor),
    cmd!("memory|malloc-stats", 2, 0, NK, "server", "4.0.0", "Returns the allocator statistics.", memory::malloc_stats),
    cmd!("memory|purge", 2, 0, NK, "server", "4.0.0", "Asks the allocator to release memory.", memory::purge),
    cmd!("memory|stats", 2, 0, NK, "server", "4.0.0", "Returns details about memory usage.", memory::stats),
    cmd!("memory|usage", -3, R, (2, 2, 1), "server", "4.0.0", "Estimates the memory usage of a key.", memory::usage),
    cmd!("memory|help", 2, LOADING | STALE, NK, "server", "4.0.0", "Outputs helpful text about the different subcommands.", memory::help),
];

pub static SLOWLOG_SUBCOMMANDS: [CommandSpec; 4] = [
    cmd!("slowlog|get", -2, ADMIN | LOADING | STALE, NK, "server", "2.2.12", "Returns the slow log's entries.", slowlog::get),
    cmd!("slowlog|len", 2, ADMIN | LOADING | STALE, NK, "server", "2.2.12", "Returns the number of entries in the slow log.", slowlog::len),
    cmd!("slowlog|reset", 2, ADMIN | LOADING | STALE, NK, "server", "2.2.12", "Clears all entries from the slow log.", slowlog::reset),
    cmd!("slowlog|help", 2, LOADING | STALE, NK, "server", "6.2.0", "Show helpful text about the different subcommands.", slowlog::help),
];

pub static CONFIG_SUBCOMMANDS: [CommandSpec; 5] = [
    cmd!(
        "config|get",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        NK,
        "server",
        "2.0.0",
        "Returns the effective values of configuration parameters.",
        server::config_get
    ),
    CommandSpec {
        redact: Some(server::config_set_secret),
        ..cmd!("config|set", -4, ADMIN | NOSCRIPT | LOADING | STALE, NK, "server", "2.0.0", "Sets configuration parameters in-flight.", server::config_set)
    },
    cmd!("config|resetstat", 2, ADMIN | NOSCRIPT | LOADING | STALE, NK, "server", "2.0.0", "Resets the server's statistics.", server::config_resetstat),
    cmd!(
        "config|rewrite",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        NK,
        "server",
        "2.8.0",
        "Persists the effective configuration to file.",
        server::config_rewrite
    ),
    cmd!("config|help", 2, LOADING | STALE, NK, "server", "5.0.0", "Returns helpful text about the different subcommands.", server::config_help),
];

pub static COMMAND_SUBCOMMANDS: [CommandSpec; 7] = [
    cmd!("command|count", 2, LOADING | STALE, NK, "server", "2.8.13", "Returns a count of commands.", server::command_count),
    cmd!("command|info", -2, LOADING | STALE, NK, "server", "2.8.13", "Returns information about one, multiple or all commands.", server::command_info),
    cmd!(
        "command|docs",
        -2,
        LOADING | STALE,
        NK,
        "server",
        "7.0.0",
        "Returns documentary information about one, multiple or all commands.",
        server::command_docs
    ),
    cmd!("command|getkeys", -4, LOADING | STALE, NK, "server", "2.8.13", "Extracts the key names from an arbitrary command.", server::command_getkeys),
    cmd!(
        "command|getkeysandflags",
        -4,
        LOADING | STALE,
        NK,
        "server",
        "7.0.0",
        "Extract keys and access flags given a full Redis command",
        server::command_getkeysandflags
    ),
    cmd!("command|list", -2, LOADING | STALE, NK, "server", "7.0.0", "Returns a list of command names.", server::command_list),
    cmd!("command|help", 2, LOADING | STALE, NK, "server", "5.0.0", "Returns helpful text about the different subcommands.", server::command_help),
];

pub static OBJECT_SUBCOMMANDS: [CommandSpec; 5] = [
    cmd!("object|encoding", 3, R, (2, 2, 1), "generic", "2.2.3", "Returns the internal encoding of a Redis object.", keys::object_encoding),
    cmd!("object|refcount", 3, R, (2, 2, 1), "generic", "2.2.3", "Returns the reference count of a value of a key.", keys::object_refcount),
    cmd!("object|idletime", 3, R, (2, 2, 1), "generic", "2.2.3", "Returns the time since the last access to a Redis object.", keys::object_idletime),
    cmd!("object|freq", 3, R, (2, 2, 1), "generic", "4.0.0", "Returns the logarithmic access frequency counter of a Redis object.", keys::object_freq),
    cmd!("object|help", 2, LOADING | STALE, NK, "generic", "6.2.0", "Returns helpful text about the different subcommands.", keys::object_help),
];

pub static CLUSTER_SUBCOMMANDS: [CommandSpec; 10] = [
    cmd!("cluster|info", 2, STALE, NK, "cluster", "3.0.0", "Returns information about the state of a node.", cluster::info),
    cmd!("cluster|slots", 2, STALE, NK, "cluster", "3.0.0", "Returns the mapping of cluster slots to nodes.", cluster::slots),
    cmd!("cluster|shards", 2, STALE, NK, "cluster", "7.0.0", "Returns the mapping of cluster slots to shards.", cluster::shards),
    cmd!("cluster|nodes", 2, STALE, NK, "cluster", "3.0.0", "Returns the cluster configuration for a node.", cluster::nodes_cmd),
    cmd!("cluster|myid", 2, STALE, NK, "cluster", "3.0.0", "Returns the ID of a node.", cluster::myid),
    cmd!("cluster|myshardid", 2, STALE, NK, "cluster", "7.2.0", "Returns the shard ID of a node.", cluster::myshardid),
    cmd!("cluster|keyslot", 3, STALE, NK, "cluster", "3.0.0", "Returns the hash slot for a key.", cluster::keyslot),
    cmd!("cluster|countkeysinslot", 3, STALE | KEYSPACE, NK, "cluster", "3.0.0", "Returns the number of keys in a hash slot.", cluster::countkeysinslot),
    cmd!("cluster|getkeysinslot", 4, STALE | KEYSPACE, NK, "cluster", "3.0.0", "Returns the key names in a hash slot.", cluster::getkeysinslot),
    cmd!("cluster|help", 2, LOADING | STALE, NK, "cluster", "5.0.0", "Returns helpful text about the different subcommands.", cluster::help),
];

/// Memoria's own: moving keys between shards (`memoria reshard`; see `migrate`).
pub static MIGRATION_SUBCOMMANDS: [CommandSpec; 3] = [
    cmd!(
        "migration|export",
        5,
        ADMIN | NOSCRIPT | KEYSPACE,
        NK,
        "cluster",
        "0.1.0",
        "Returns key records of slots this node is migrating (Memoria).",
        migrate::export
    ),
    cmd!(
        "migration|import",
        -3,
        W | DENYOOM | ADMIN | NOSCRIPT,
        NK,
        "cluster",
        "0.1.0",
        "Writes key records into slots this node is importing (Memoria).",
        migrate::import
    ),
    cmd!("migration|delif", 3, W | ADMIN | NOSCRIPT, NK, "cluster", "0.1.0", "Deletes a key if it still holds the exported record (Memoria).", migrate::delif),
];

pub static PUBSUB_SUBCOMMANDS: [CommandSpec; 6] = [
    cmd!("pubsub|channels", -2, PUBSUB | LOADING | STALE, NK, "pubsub", "2.8.0", "Returns the active channels.", pubsub::pubsub_channels),
    cmd!("pubsub|numpat", 2, PUBSUB | LOADING | STALE, NK, "pubsub", "2.8.0", "Returns a count of unique pattern subscriptions.", pubsub::pubsub_numpat),
    cmd!("pubsub|numsub", -2, PUBSUB | LOADING | STALE, NK, "pubsub", "2.8.0", "Returns a count of subscribers to channels.", pubsub::pubsub_numsub),
    cmd!("pubsub|shardchannels", -2, PUBSUB | LOADING | STALE, NK, "pubsub", "7.0.0", "Returns the active shard channels.", pubsub::pubsub_shardchannels),
    cmd!(
        "pubsub|shardnumsub",
        -2,
        PUBSUB | LOADING | STALE,
        NK,
        "pubsub",
        "7.0.0",
        "Returns the count of subscribers of shard channels.",
        pubsub::pubsub_shardnumsub
    ),
    cmd!("pubsub|help", 2, LOADING | STALE, NK, "pubsub", "6.2.0", "Returns helpful text about the different subcommands.", pubsub::pubsub_help),
];

/// Subscribing changes only the connection's state; PUBLISH is not a write (pub/sub is
/// node-local and never logged).
const SUB: u32 = PUBSUB | NOSCRIPT | LOADING | STALE | CONNECTION | SUBSCRIBED;

pub static XGROUP_SUBCOMMANDS: [CommandSpec; 6] = [
    cmd!("xgroup|create", -5, WD, (2, 2, 1), "stream", "5.0.0", "Create a consumer group.", stream::xgroup_create),
    cmd!("xgroup|setid", -5, W, (2, 2, 1), "stream", "5.0.0", "Set a consumer group to an arbitrary last delivered ID value.", stream::xgroup_setid),
    cmd!("xgroup|destroy", 4, W, (2, 2, 1), "stream", "5.0.0", "Destroy a consumer group.", stream::xgroup_destroy),
    cmd!("xgroup|createconsumer", 5, WD, (2, 2, 1), "stream", "6.2.0", "Create a consumer in a consumer group.", stream::xgroup_createconsumer),
    cmd!("xgroup|delconsumer", 5, W, (2, 2, 1), "stream", "5.0.0", "Delete a consumer from a consumer group.", stream::xgroup_delconsumer),
    cmd!("xgroup|help", 2, LOADING | STALE, NK, "stream", "5.0.0", "Show helpful text about the different subcommands", stream::xgroup_help),
];

pub static XINFO_SUBCOMMANDS: [CommandSpec; 4] = [
    cmd!("xinfo|stream", -3, R, (2, 2, 1), "stream", "5.0.0", "Get information about a stream", stream::xinfo_stream),
    cmd!("xinfo|groups", 3, R, (2, 2, 1), "stream", "5.0.0", "List the consumer groups of a stream", stream::xinfo_groups),
    cmd!("xinfo|consumers", 4, R, (2, 2, 1), "stream", "5.0.0", "List the consumers in a consumer group", stream::xinfo_consumers),
    cmd!("xinfo|help", 2, LOADING | STALE, NK, "stream", "5.0.0", "Show helpful text about the different subcommands", stream::xinfo_help),
];

const ACLF: u32 = NOSCRIPT | LOADING | STALE;

pub static ACL_SUBCOMMANDS: [CommandSpec; 13] = [
    cmd!("acl|cat", -2, ACLF, NK, "server", "6.0.0", "Lists the ACL categories, or the commands inside a category.", acl::cat),
    cmd!("acl|deluser", -3, ADMIN | ACLF, NK, "server", "6.0.0", "Deletes ACL users, and terminates their connections.", acl::deluser),
    cmd!("acl|dryrun", -4, ADMIN | ACLF, NK, "server", "7.0.0", "Simulates the execution of a command by a user, without executing the command.", acl::dryrun),
    cmd!("acl|genpass", -2, ACLF, NK, "server", "6.0.0", "Generates a pseudorandom, secure password that can be used to identify ACL users.", acl::genpass),
    cmd!("acl|help", 2, LOADING | STALE, NK, "server", "6.0.0", "Returns helpful text about the different subcommands.", acl::help),
    cmd!("acl|getuser", 3, ADMIN | ACLF, NK, "server", "6.0.0", "Lists the ACL rules of a user.", acl::getuser),
    cmd!("acl|list", 2, ADMIN | ACLF, NK, "server", "6.0.0", "Dumps the effective rules in ACL file format.", acl::list),
    cmd!("acl|load", 2, ADMIN | ACLF, NK, "server", "6.0.0", "Reloads the rules from the configured ACL file.", acl::load_save),
    cmd!("acl|log", -2, ADMIN | ACLF, NK, "server", "6.0.0", "Lists recent security events generated due to ACL rules.", acl::log),
    cmd!("acl|save", 2, ADMIN | ACLF, NK, "server", "6.0.0", "Saves the effective ACL rules in the configured ACL file.", acl::load_save),
    CommandSpec {
        redact: Some(acl::setuser_secret),
        ..cmd!("acl|setuser", -3, ADMIN | ACLF, NK, "server", "6.0.0", "Creates and modifies an ACL user and its rules.", acl::setuser)
    },
    cmd!("acl|users", 2, ADMIN | ACLF, NK, "server", "6.0.0", "Lists all ACL users.", acl::users),
    cmd!("acl|whoami", 2, ACLF, NK, "server", "6.0.0", "Returns the authenticated username of the current connection.", acl::whoami),
];

pub static COMMANDS: &[CommandSpec] = &[
    // connection
    cmd!("ping", -1, FAST | SUBSCRIBED, NK, "connection", "1.0.0", "Returns the server's liveliness response.", conn::ping),
    cmd!("echo", 2, LOADING | STALE | FAST, NK, "connection", "1.0.0", "Returns the given string.", conn::echo),
    CommandSpec {
        redact: Some(conn::hello_secret),
        ..cmd!(
            "hello",
            -1,
            NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | CONNECTION,
            NK,
            "connection",
            "6.0.0",
            "Handshakes with the Redis server.",
            conn::hello
        )
    },
    // Allowed in scripts (a script's SELECT lasts until the script ends).
    cmd!("select", 2, LOADING | STALE | FAST | CONNECTION, NK, "connection", "1.0.0", "Changes the selected database.", conn::select),
    cmd!(
        "quit",
        -1,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | TX_CONTROL | SUBSCRIBED,
        NK,
        "connection",
        "1.0.0",
        "Closes the connection.",
        conn::quit
    ),
    cmd!(
        "reset",
        1,
        NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY | CONNECTION | TX_CONTROL | SUBSCRIBED,
        NK,
        "connection",
        "6.2.0",
        "Resets the connection.",
        conn::reset
    ),
    CommandSpec {
        redact: Some(conn::auth_secret),
        ..cmd!("auth", -2, NOSCRIPT | LOADING | STALE | FAST | NO_AUTH | ALLOW_BUSY, NK, "connection", "1.0.0", "Authenticates the connection.", conn::auth)
    },
    container!("client", -2, "connection", "2.4.0", "A container for client connection commands.", &CLIENT_SUBCOMMANDS),
    // server
    CommandSpec {
        bare: Some(&COMMAND_SUBCOMMANDS[1]),
        flags: LOADING | STALE,
        ..container!("command", -1, "server", "2.8.13", "Returns detailed information about all commands.", &COMMAND_SUBCOMMANDS)
    },
    container!("acl", -2, "server", "6.0.0", "A container for Access List Control commands.", &ACL_SUBCOMMANDS),
    container!("config", -2, "server", "2.0.0", "A container for server configuration commands.", &CONFIG_SUBCOMMANDS),
    container!("slowlog", -2, "server", "2.2.12", "A container for slow log commands.", &SLOWLOG_SUBCOMMANDS),
    container!("latency", -2, "server", "2.8.13", "A container for latency diagnostics commands.", &LATENCY_SUBCOMMANDS),
    cmd!("debug", -2, ADMIN | NOSCRIPT | LOADING | STALE | PROTECTED, NK, "server", "1.0.0", "A container for debugging commands.", debug::debug),
    container!("memory", -2, "server", "4.0.0", "A container for memory diagnostics commands.", &MEMORY_SUBCOMMANDS),
    // INFO keyspace counts keys: it waits for pending writes as DBSIZE does. Other sections
    // (INFO replication, which failover tooling polls while a primary is cut off) do not.
    CommandSpec {
        keyspace_if: Some(server::info_shows_keyspace),
        ..cmd!("info", -1, LOADING | STALE, NK, "server", "1.0.0", "Returns information and statistics about the server.", server::info)
    },
    cmd!("dbsize", 1, RF | KEYSPACE, NK, "server", "1.0.0", "Returns the number of keys in the database.", server::dbsize),
    cmd!("flushdb", -1, W | KEYSPACE, NK, "server", "1.0.0", "Removes all keys from the current database.", server::flushdb),
    cmd!("swapdb", 3, WF, NK, "server", "4.0.0", "Swaps two Redis databases.", db::swapdb),
    cmd!("flushall", -1, W | KEYSPACE, NK, "server", "1.0.0", "Removes all keys from all databases.", server::flushall),
    cmd!("time", 1, LOADING | STALE | FAST, NK, "server", "2.6.0", "Returns the server time.", server::time),
    cmd!("role", 1, NOSCRIPT | LOADING | STALE | FAST, NK, "server", "2.8.12", "Returns the replication role.", server::role),
    cmd!(
        "failover",
        -1,
        ADMIN | NOSCRIPT | STALE,
        NK,
        "server",
        "6.2.0",
        "Starts a coordinated failover from a server to one of its replicas.",
        server::failover
    ),
    cmd!(
        "wait",
        3,
        NOSCRIPT,
        NK,
        "generic",
        "3.0.0",
        "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.",
        server::wait
    ),
    container!("cluster", -2, "cluster", "3.0.0", "A container for Redis Cluster commands.", &CLUSTER_SUBCOMMANDS),
    container!("migration", -2, "cluster", "0.1.0", "A container for Memoria's slot migration commands.", &MIGRATION_SUBCOMMANDS),
    cmd!(
        "readonly",
        1,
        LOADING | STALE | FAST,
        NK,
        "cluster",
        "3.0.0",
        "Enables read-only queries for a connection to a Redis Cluster replica node.",
        cluster::readonly
    ),
    cmd!(
        "readwrite",
        1,
        LOADING | STALE | FAST,
        NK,
        "cluster",
        "3.0.0",
        "Enables read-write queries for a connection to a Reids Cluster replica node.",
        cluster::readonly
    ),
    cmd!("asking", 1, FAST | KEEPS_ASKING, NK, "cluster", "3.0.0", "Signals that a cluster client is following an -ASK redirect.", cluster::asking),
    cmd!(
        "shutdown",
        -1,
        ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY,
        NK,
        "server",
        "1.0.0",
        "Synchronously saves the database(s) to disk and shuts down the Redis server.",
        server::shutdown
    ),
    cmd!("save", 1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI, NK, "server", "1.0.0", "Synchronously saves the database(s) to disk.", server::save),
    cmd!("bgsave", -1, ADMIN | NOSCRIPT | NO_ASYNC_LOADING, NK, "server", "1.0.0", "Asynchronously saves the database(s) to disk.", server::bgsave),
    cmd!("lastsave", 1, LOADING | STALE | FAST, NK, "server", "1.0.0", "Returns the Unix timestamp of the last successful save to disk.", server::lastsave),
    cmd!(
        "monitor",
        1,
        ADMIN | NOSCRIPT | LOADING | STALE,
        NK,
        "server",
        "1.0.0",
        "Listen for all requests received by the server in real time",
        server::monitor
    ),
    // generic keyspace
    cmd!("del", -2, W, KALL, "generic", "1.0.0", "Deletes one or more keys.", keys::del),
    cmd!("unlink", -2, WF, KALL, "generic", "4.0.0", "Asynchronously deletes one or more keys.", keys::del),
    cmd!("exists", -2, RF, KALL, "generic", "1.0.0", "Determines whether one or more keys exist.", keys::exists),
    cmd!("type", 2, RF, K1, "generic", "1.0.0", "Determines the type of value stored at a key.", keys::type_cmd),
    cmd!("expire", -3, WF, K1, "generic", "1.0.0", "Sets the expiration time of a key in seconds.", keys::expire),
    cmd!("pexpire", -3, WF, K1, "generic", "2.6.0", "Sets the expiration time of a key in milliseconds.", keys::pexpire),
    cmd!("expireat", -3, WF, K1, "generic", "1.2.0", "Sets the expiration time of a key to a Unix timestamp.", keys::expireat),
    cmd!("pexpireat", -3, WF, K1, "generic", "2.6.0", "Sets the expiration time of a key to a Unix milliseconds timestamp.", keys::pexpireat),
    cmd!("ttl", 2, RF, K1, "generic", "1.0.0", "Returns the expiration time in seconds of a key.", keys::ttl),
    cmd!("pttl", 2, RF, K1, "generic", "2.6.0", "Returns the expiration time in milliseconds of a key.", keys::pttl),
    cmd!("expiretime", 2, RF, K1, "generic", "7.0.0", "Returns the expiration time of a key as a Unix timestamp.", keys::expiretime),
    cmd!("pexpiretime", 2, RF, K1, "generic", "7.0.0", "Returns the expiration time of a key as a Unix milliseconds timestamp.", keys::pexpiretime),
    cmd!("persist", 2, WF, K1, "generic", "2.2.0", "Removes the expiration time of a key.", keys::persist),
    cmd!("keys", 2, R | KEYSPACE, NK, "generic", "1.0.0", "Returns all key names that match a pattern.", keys::keys),
    // KEYSPACE: BY/GET read keys named by patterns, which the host's tracker cannot see,
    // so a SORT reply waits for every pending write.
    CommandSpec {
        movable: Movable::Sort,
        ..cmd!(
            "sort",
            -2,
            WD | KEYSPACE,
            K1,
            "generic",
            "1.0.0",
            "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.",
            sort::sort
        )
    },
    CommandSpec {
        movable: Movable::First,
        ..cmd!("sort_ro", -2, R | KEYSPACE, K1, "generic", "7.0.0", "Returns the sorted elements of a list, a set, or a sorted set.", sort::sort_ro)
    },
    cmd!("scan", -2, R | KEYSPACE, NK, "generic", "2.8.0", "Iterates over the key names in the database.", keys::scan),
    cmd!("randomkey", 1, R | KEYSPACE, NK, "generic", "1.0.0", "Returns a random key name from the database.", keys::randomkey),
    cmd!("rename", 3, W, (1, 2, 1), "generic", "1.0.0", "Renames a key and overwrites the destination.", keys::rename),
    cmd!("renamenx", 3, WF, (1, 2, 1), "generic", "1.0.0", "Renames a key only when the target key name doesn't exist.", keys::renamenx),
    cmd!("copy", -3, WD, (1, 2, 1), "generic", "6.2.0", "Copies the value of a key to a new key.", keys::copy),
    cmd!("dump", 2, R, K1, "generic", "2.6.0", "Return a serialized version of the value stored at the specified key.", dump::dump),
    cmd!("restore", -4, WD, K1, "generic", "2.6.0", "Create a key using the provided serialized value, previously obtained using DUMP.", dump::restore),
    cmd!("restore-asking", -4, WD | ASKING, K1, "server", "3.0.0", "An internal command for migrating keys in a cluster", dump::restore),
    CommandSpec {
        movable: Movable::Migrate,
        redact: Some(migrate_to::migrate_secret),
        ..cmd!("migrate", -6, W, (3, 3, 1), "generic", "2.6.0", "Atomically transfers a key from one Redis instance to another.", migrate_to::migrate)
    },
    cmd!("move", 3, WF, K1, "generic", "1.0.0", "Moves a key to another database.", db::move_key),
    cmd!(
        "touch",
        -2,
        RF,
        KALL,
        "generic",
        "3.2.1",
        "Returns the number of existing keys out of those specified after updating the time they were last accessed.",
        keys::touch
    ),
    container!("object", -2, "generic", "2.2.3", "A container for object introspection commands.", &OBJECT_SUBCOMMANDS),
    // strings
    cmd!("get", 2, RF, K1, "string", "1.0.0", "Returns the string value of a key.", string::get),
    cmd!("set", -3, WD, K1, "string", "1.0.0", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", string::set),
    cmd!("setnx", 3, WDF, K1, "string", "1.0.0", "Set the string value of a key only when the key doesn't exist.", string::setnx),
    cmd!("setex", 4, WD, K1, "string", "2.0.0", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", string::setex),
    cmd!(
        "psetex",
        4,
        WD,
        K1,
        "string",
        "2.6.0",
        "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.",
        string::psetex
    ),
    cmd!("mget", -2, RF, KALL, "string", "1.0.0", "Atomically returns the string values of one or more keys.", string::mget),
    cmd!("mset", -3, WD, (1, -1, 2), "string", "1.0.1", "Atomically creates or modifies the string values of one or more keys.", string::mset),
    cmd!(
        "msetnx",
        -3,
        WD,
        (1, -1, 2),
        "string",
        "1.0.1",
        "Atomically modifies the string values of one or more keys only when all keys don't exist.",
        string::msetnx
    ),
    cmd!("getset", 3, WDF, K1, "string", "1.0.0", "Returns the previous string value of a key after setting it to a new value.", string::getset),
    cmd!("getdel", 2, WF, K1, "string", "6.2.0", "Returns the string value of a key after deleting the key.", string::getdel),
    cmd!("getex", -2, WF, K1, "string", "6.2.0", "Returns the string value of a key after setting its expiration time.", string::getex),
    cmd!("append", 3, WDF, K1, "string", "2.0.0", "Appends a string to the value of a key. Creates the key if it doesn't exist.", string::append),
    cmd!("strlen", 2, RF, K1, "string", "2.2.0", "Returns the length of a string value.", string::strlen),
    cmd!(
        "incr",
        2,
        WDF,
        K1,
        "string",
        "1.0.0",
        "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
        string::incr
    ),
    cmd!(
        "decr",
        2,
        WDF,
        K1,
        "string",
        "1.0.0",
        "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
        string::decr
    ),
    cmd!(
        "incrby",
        3,
        WDF,
        K1,
        "string",
        "1.0.0",
        "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
        string::incrby
    ),
    cmd!(
        "decrby",
        3,
        WDF,
        K1,
        "string",
        "1.0.0",
        "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.",
        string::decrby
    ),
    cmd!(
        "incrbyfloat",
        3,
        WDF,
        K1,
        "string",
        "2.6.0",
        "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
        string::incrbyfloat
    ),
    cmd!("getrange", 4, R, K1, "string", "2.4.0", "Returns a substring of the string stored at a key.", string::getrange),
    cmd!("substr", 4, R, K1, "string", "1.0.0", "Returns a substring from a string value.", string::getrange),
    cmd!("lcs", -3, R, (1, 2, 1), "string", "7.0.0", "Finds the longest common substring.", lcs::lcs),
    cmd!(
        "setrange",
        4,
        WD,
        K1,
        "string",
        "2.2.0",
        "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.",
        string::setrange
    ),
    // hashes
    cmd!("hset", -4, WDF, K1, "hash", "2.0.0", "Creates or modifies the value of a field in a hash.", hash::hset),
    cmd!("hmset", -4, WDF, K1, "hash", "2.0.0", "Sets the values of multiple fields.", hash::hmset),
    cmd!("hsetnx", 4, WDF, K1, "hash", "2.0.0", "Sets the value of a field in a hash only when the field doesn't exist.", hash::hsetnx),
    cmd!("hget", 3, RF, K1, "hash", "2.0.0", "Returns the value of a field in a hash.", hash::hget),
    cmd!("hmget", -3, RF, K1, "hash", "2.0.0", "Returns the values of all fields in a hash.", hash::hmget),
    cmd!("hdel", -3, WF, K1, "hash", "2.0.0", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", hash::hdel),
    cmd!("hlen", 2, RF, K1, "hash", "2.0.0", "Returns the number of fields in a hash.", hash::hlen),
    // hash-field expiry (Redis 7.4 / 8.0)
    cmd!("hexpire", -6, WDF, K1, "hash", "7.4.0", "Set expiry for hash field using relative time to expire (seconds)", hash_ttl::hexpire),
    cmd!("hpexpire", -6, WDF, K1, "hash", "7.4.0", "Set expiry for hash field using relative time to expire (milliseconds)", hash_ttl::hpexpire),
    cmd!("hexpireat", -6, WDF, K1, "hash", "7.4.0", "Set expiry for hash field using an absolute Unix timestamp (seconds)", hash_ttl::hexpireat),
    cmd!("hpexpireat", -6, WDF, K1, "hash", "7.4.0", "Set expiry for hash field using an absolute Unix timestamp (milliseconds)", hash_ttl::hpexpireat),
    cmd!("httl", -5, RF, K1, "hash", "7.4.0", "Returns the TTL in seconds of a hash field.", hash_ttl::httl),
    cmd!("hpttl", -5, RF, K1, "hash", "7.4.0", "Returns the TTL in milliseconds of a hash field.", hash_ttl::hpttl),
    cmd!("hexpiretime", -5, RF, K1, "hash", "7.4.0", "Returns the expiration time of a hash field as a Unix timestamp, in seconds.", hash_ttl::hexpiretime),
    cmd!("hpexpiretime", -5, RF, K1, "hash", "7.4.0", "Returns the expiration time of a hash field as a Unix timestamp, in msec.", hash_ttl::hpexpiretime),
    cmd!("hpersist", -5, WF, K1, "hash", "7.4.0", "Removes the expiration time for each specified field", hash_ttl::hpersist),
    cmd!("hgetdel", -5, WF, K1, "hash", "8.0.0", "Returns the value of a field and deletes it from the hash.", hash_ttl::hgetdel),
    cmd!(
        "hgetex",
        -5,
        WF,
        K1,
        "hash",
        "8.0.0",
        "Get the value of one or more fields of a given hash key, and optionally set their expiration.",
        hash_ttl::hgetex
    ),
    cmd!(
        "hsetex",
        -6,
        WDF,
        K1,
        "hash",
        "8.0.0",
        "Set the value of one or more fields of a given hash key, and optionally set their expiration.",
        hash_ttl::hsetex
    ),
    cmd!("hstrlen", 3, RF, K1, "hash", "3.2.0", "Returns the length of the value of a field.", hash::hstrlen),
    cmd!(
        "hincrby",
        4,
        WDF,
        K1,
        "hash",
        "2.0.0",
        "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.",
        hash::hincrby
    ),
    cmd!(
        "hincrbyfloat",
        4,
        WDF,
        K1,
        "hash",
        "2.6.0",
        "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.",
        hash::hincrbyfloat
    ),
    cmd!("hkeys", 2, R, K1, "hash", "2.0.0", "Returns all fields in a hash.", hash::hkeys),
    cmd!("hvals", 2, R, K1, "hash", "2.0.0", "Returns all values in a hash.", hash::hvals),
    cmd!("hgetall", 2, R, K1, "hash", "2.0.0", "Returns all fields and values in a hash.", hash::hgetall),
    cmd!("hexists", 3, RF, K1, "hash", "2.0.0", "Determines whether a field exists in a hash.", hash::hexists),
    cmd!("hrandfield", -2, R, K1, "hash", "6.2.0", "Returns one or more random fields from a hash.", hash::hrandfield),
    cmd!("hscan", -3, R, K1, "hash", "2.8.0", "Iterates over fields and values of a hash.", hash::hscan),
    // bitmaps
    cmd!("setbit", 4, WD, K1, "bitmap", "2.2.0", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", bitmap::setbit),
    cmd!("getbit", 3, RF, K1, "bitmap", "2.2.0", "Returns a bit value by offset.", bitmap::getbit),
    cmd!("bitcount", -2, R, K1, "bitmap", "2.6.0", "Counts the number of set bits (population counting) in a string.", bitmap::bitcount),
    cmd!("bitpos", -3, R, K1, "bitmap", "2.8.7", "Finds the first set (1) or clear (0) bit in a string.", bitmap::bitpos),
    cmd!("bitop", -4, WD, (2, -1, 1), "bitmap", "2.6.0", "Performs bitwise operations on multiple strings, and stores the result.", bitmap::bitop),
    cmd!("bitfield", -2, WD, K1, "bitmap", "3.2.0", "Performs arbitrary bitfield integer operations on strings.", bitmap::bitfield),
    cmd!("bitfield_ro", -2, RF, K1, "bitmap", "6.0.0", "Performs arbitrary read-only bitfield integer operations on strings.", bitmap::bitfield_ro),
    // hyperloglog
    cmd!("pfadd", -2, WDF, K1, "hyperloglog", "2.8.9", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.", hll::pfadd),
    // PFCOUNT may store the cardinality it computed (it then replicates itself).
    cmd!(
        "pfcount",
        -2,
        R | MAY_REPLICATE,
        KALL,
        "hyperloglog",
        "2.8.9",
        "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).",
        hll::pfcount
    ),
    cmd!("pfmerge", -2, WD, KALL, "hyperloglog", "2.8.9", "Merges one or more HyperLogLog values into a single key.", hll::pfmerge),
    // sets
    cmd!("sadd", -3, WDF, K1, "set", "1.0.0", "Adds one or more members to a set. Creates the key if it doesn't exist.", set::sadd),
    cmd!("srem", -3, WF, K1, "set", "1.0.0", "Removes one or more members from a set. Deletes the set if the last member was removed.", set::srem),
    cmd!("smembers", 2, R, K1, "set", "1.0.0", "Returns all members of a set.", set::smembers),
    cmd!("sismember", 3, RF, K1, "set", "1.0.0", "Determines whether a member belongs to a set.", set::sismember),
    cmd!("smismember", -3, RF, K1, "set", "6.2.0", "Determines whether multiple members belong to a set.", set::smismember),
    cmd!("scard", 2, RF, K1, "set", "1.0.0", "Returns the number of members in a set.", set::scard),
    cmd!(
        "spop",
        -2,
        WF,
        K1,
        "set",
        "1.0.0",
        "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.",
        set::spop
    ),
    cmd!("srandmember", -2, R, K1, "set", "1.0.0", "Get one or multiple random members from a set", set::srandmember),
    cmd!("smove", 4, WF, (1, 2, 1), "set", "1.0.0", "Moves a member from one set to another.", set::smove),
    cmd!("sinter", -2, R, KALL, "set", "1.0.0", "Returns the intersect of multiple sets.", set::sinter),
    // SINTERCARD's keys follow a count; (2, -1) over-approximates them (LIMIT and its
    // value count as keys), which only makes the host's tracker more cautious.
    CommandSpec {
        movable: Movable::NumKeys(1),
        ..cmd!("sintercard", -3, R, (2, -1, 1), "set", "7.0.0", "Returns the number of members of the intersect of multiple sets.", set::sintercard)
    },
    cmd!("sinterstore", -3, WD, KALL, "set", "1.0.0", "Stores the intersect of multiple sets in a key.", set::sinterstore),
    cmd!("sunion", -2, R, KALL, "set", "1.0.0", "Returns the union of multiple sets.", set::sunion),
    cmd!("sunionstore", -3, WD, KALL, "set", "1.0.0", "Stores the union of multiple sets in a key.", set::sunionstore),
    cmd!("sdiff", -2, R, KALL, "set", "1.0.0", "Returns the difference of multiple sets.", set::sdiff),
    cmd!("sdiffstore", -3, WD, KALL, "set", "1.0.0", "Stores the difference of multiple sets in a key.", set::sdiffstore),
    cmd!("sscan", -3, R, K1, "set", "2.8.0", "Iterates over members of a set.", set::sscan),
    // sorted sets. Keys that follow a numkeys argument are declared as "everything from the
    // first key on" (options count as keys too), which only makes the host's tracker more
    // cautious, as for SINTERCARD.
    cmd!(
        "zadd",
        -4,
        WDF,
        K1,
        "sorted-set",
        "1.2.0",
        "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.",
        zset::zadd
    ),
    cmd!("zincrby", 4, WDF, K1, "sorted-set", "1.2.0", "Increments the score of a member in a sorted set.", zset::zincrby),
    cmd!(
        "zrem",
        -3,
        WF,
        K1,
        "sorted-set",
        "1.2.0",
        "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.",
        zset::zrem
    ),
    cmd!("zcard", 2, RF, K1, "sorted-set", "1.2.0", "Returns the number of members in a sorted set.", zset::zcard),
    cmd!("zscore", 3, RF, K1, "sorted-set", "1.2.0", "Returns the score of a member in a sorted set.", zset::zscore),
    cmd!("zmscore", -3, RF, K1, "sorted-set", "6.2.0", "Returns the score of one or more members in a sorted set.", zset::zmscore),
    cmd!("zrank", 3, RF, K1, "sorted-set", "2.0.0", "Returns the index of a member in a sorted set ordered by ascending scores.", zset::zrank),
    cmd!("zrevrank", 3, RF, K1, "sorted-set", "2.0.0", "Returns the index of a member in a sorted set ordered by descending scores.", zset::zrevrank),
    cmd!("zrange", -4, R, K1, "sorted-set", "1.2.0", "Returns members in a sorted set within a range of indexes.", zset::zrange),
    cmd!("zrangestore", -5, WD, (1, 2, 1), "sorted-set", "6.2.0", "Stores a range of members from sorted set in a key.", zset::zrangestore),
    cmd!("zrevrange", -4, R, K1, "sorted-set", "1.2.0", "Returns members in a sorted set within a range of indexes in reverse order.", zset::zrevrange),
    cmd!("zrangebyscore", -4, R, K1, "sorted-set", "1.0.5", "Returns members in a sorted set within a range of scores.", zset::zrangebyscore),
    cmd!(
        "zrevrangebyscore",
        -4,
        R,
        K1,
        "sorted-set",
        "2.2.0",
        "Returns members in a sorted set within a range of scores in reverse order.",
        zset::zrevrangebyscore
    ),
    cmd!("zrangebylex", -4, R, K1, "sorted-set", "2.8.9", "Returns members in a sorted set within a lexicographical range.", zset::zrangebylex),
    cmd!(
        "zrevrangebylex",
        -4,
        R,
        K1,
        "sorted-set",
        "2.8.9",
        "Returns members in a sorted set within a lexicographical range in reverse order.",
        zset::zrevrangebylex
    ),
    cmd!("zcount", 4, RF, K1, "sorted-set", "2.0.0", "Returns the count of members in a sorted set that have scores within a range.", zset::zcount),
    cmd!("zlexcount", 4, RF, K1, "sorted-set", "2.8.9", "Returns the number of members in a sorted set within a lexicographical range.", zset::zlexcount),
    cmd!(
        "zpopmin",
        -2,
        WF,
        K1,
        "sorted-set",
        "5.0.0",
        "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.",
        zset::zpopmin
    ),
    cmd!(
        "zpopmax",
        -2,
        WF,
        K1,
        "sorted-set",
        "5.0.0",
        "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.",
        zset::zpopmax
    ),
    CommandSpec {
        movable: Movable::NumKeys(1),
        ..cmd!(
            "zmpop",
            -4,
            W,
            (2, -1, 1),
            "sorted-set",
            "7.0.0",
            "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.",
            zset::zmpop
        )
    },
    CommandSpec {
        movable: Movable::NumKeys(1),
        ..cmd!("zunion", -3, R, (2, -1, 1), "sorted-set", "6.2.0", "Returns the union of multiple sorted sets.", zset::zunion)
    },
    CommandSpec {
        movable: Movable::NumKeys(1),
        ..cmd!("zinter", -3, R, (2, -1, 1), "sorted-set", "6.2.0", "Returns the intersect of multiple sorted sets.", zset::zinter)
    },
    CommandSpec {
        movable: Movable::NumKeys(1),
        ..cmd!("zdiff", -3, R, (2, -1, 1), "sorted-set", "6.2.0", "Returns the difference between multiple sorted sets.", zset::zdiff)
    },
    CommandSpec {
        movable: Movable::NumKeys(1),
        ..cmd!(
            "zintercard",
            -3,
            R,
            (2, -1, 1),
            "sorted-set",
            "7.0.0",
            "Returns the number of members of the intersect of multiple sorted sets.",
            zset::zintercard
        )
    },
    CommandSpec {
        movable: Movable::DestNumKeys,
        ..cmd!("zunionstore", -4, WD, K1, "sorted-set", "2.0.0", "Stores the union of multiple sorted sets in a key.", zset::zunionstore)
    },
    CommandSpec {
        movable: Movable::DestNumKeys,
        ..cmd!("zinterstore", -4, WD, K1, "sorted-set", "2.0.0", "Stores the intersect of multiple sorted sets in a key.", zset::zinterstore)
    },
    CommandSpec {
        movable: Movable::DestNumKeys,
        ..cmd!("zdiffstore", -4, WD, K1, "sorted-set", "6.2.0", "Stores the difference of multiple sorted sets in a key.", zset::zdiffstore)
    },
    cmd!(
        "zremrangebyscore",
        4,
        W,
        K1,
        "sorted-set",
        "1.2.0",
        "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.",
        zset::zremrangebyscore
    ),
    cmd!(
        "zremrangebyrank",
        4,
        W,
        K1,
        "sorted-set",
        "2.0.0",
        "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.",
        zset::zremrangebyrank
    ),
    cmd!(
        "zremrangebylex",
        4,
        W,
        K1,
        "sorted-set",
        "2.8.9",
        "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.",
        zset::zremrangebylex
    ),
    cmd!("zrandmember", -2, R, K1, "sorted-set", "6.2.0", "Returns one or more random members from a sorted set.", zset::zrandmember),
    cmd!("zscan", -3, R, K1, "sorted-set", "2.8.0", "Iterates over members and scores of a sorted set.", zset::zscan),
    cmd!(
        "bzpopmin",
        -3,
        W | NOSCRIPT | BLOCKING | FAST,
        (1, -2, 1),
        "sorted-set",
        "5.0.0",
        "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.",
        zset::bzpopmin
    ),
    cmd!(
        "bzpopmax",
        -3,
        W | NOSCRIPT | BLOCKING | FAST,
        (1, -2, 1),
        "sorted-set",
        "5.0.0",
        "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.",
        zset::bzpopmax
    ),
    CommandSpec {
        movable: Movable::NumKeys(2),
        ..cmd!(
            "bzmpop",
            -5,
            W | BLOCKING,
            (3, -1, 1),
            "sorted-set",
            "7.0.0",
            "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.",
            zset::bzmpop
        )
    },
    // geo: locations in sorted sets. GEORADIUS/GEORADIUSBYMEMBER write only with
    // STORE/STOREDIST, whose destination is found by reading the options (movablekeys).
    cmd!("geoadd", -5, WD, K1, "geo", "3.2.0", "Adds one or more members to a geospatial index. The key is created if it doesn't exist.", geo::geoadd),
    cmd!("geodist", -4, R, K1, "geo", "3.2.0", "Returns the distance between two members of a geospatial index.", geo::geodist),
    cmd!("geohash", -2, R, K1, "geo", "3.2.0", "Returns members from a geospatial index as geohash strings.", geo::geohash),
    cmd!("geopos", -2, R, K1, "geo", "3.2.0", "Returns the longitude and latitude of members from a geospatial index.", geo::geopos),
    CommandSpec {
        movable: Movable::GeoStore(6),
        ..cmd!(
            "georadius",
            -6,
            WD,
            K1,
            "geo",
            "3.2.0",
            "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result.",
            geo::georadius
        )
    },
    cmd!(
        "georadius_ro",
        -6,
        R,
        K1,
        "geo",
        "3.2.10",
        "Returns members from a geospatial index that are within a distance from a coordinate.",
        geo::georadius_ro
    ),
    CommandSpec {
        movable: Movable::GeoStore(5),
        ..cmd!(
            "georadiusbymember",
            -5,
            WD,
            K1,
            "geo",
            "3.2.0",
            "Queries a geospatial index for members within a distance from a member, optionally stores the result.",
            geo::georadiusbymember
        )
    },
    cmd!(
        "georadiusbymember_ro",
        -5,
        R,
        K1,
        "geo",
        "3.2.10",
        "Returns members from a geospatial index that are within a distance from a member.",
        geo::georadiusbymember_ro
    ),
    cmd!("geosearch", -7, R, K1, "geo", "6.2.0", "Queries a geospatial index for members inside an area of a box or a circle.", geo::geosearch),
    cmd!(
        "geosearchstore",
        -8,
        WD,
        (1, 2, 1),
        "geo",
        "6.2.0",
        "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result.",
        geo::geosearchstore
    ),
    // pub/sub
    cmd!("subscribe", -2, SUB, NK, "pubsub", "2.0.0", "Listens for messages published to channels.", pubsub::subscribe),
    cmd!("unsubscribe", -1, SUB, NK, "pubsub", "2.0.0", "Stops listening to messages posted to channels.", pubsub::unsubscribe),
    cmd!("psubscribe", -2, SUB, NK, "pubsub", "2.0.0", "Listens for messages published to channels that match one or more patterns.", pubsub::psubscribe),
    cmd!(
        "punsubscribe",
        -1,
        SUB,
        NK,
        "pubsub",
        "2.0.0",
        "Stops listening to messages published to channels that match one or more patterns.",
        pubsub::punsubscribe
    ),
    cmd!("ssubscribe", -2, SUB, NK, "pubsub", "7.0.0", "Listens for messages published to shard channels.", pubsub::ssubscribe),
    cmd!("sunsubscribe", -1, SUB, NK, "pubsub", "7.0.0", "Stops listening to messages posted to shard channels.", pubsub::sunsubscribe),
    cmd!("publish", 3, PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE, NK, "pubsub", "2.0.0", "Posts a message to a channel.", pubsub::publish),
    cmd!("spublish", 3, PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE, NK, "pubsub", "7.0.0", "Post a message to a shard channel", pubsub::spublish),
    container!("pubsub", -2, "pubsub", "2.8.0", "A container for Pub/Sub commands.", &PUBSUB_SUBCOMMANDS),
    // lists (LMPOP/BLMPOP are movablekeys in Redis; their span of possible keys is listed
    // so the host's tracker sees every key they may read)
    cmd!("lpush", -3, WDF, K1, "list", "1.0.0", "Prepends one or more elements to a list. Creates the key if it doesn't exist.", list::lpush),
    cmd!("rpush", -3, WDF, K1, "list", "1.0.0", "Appends one or more elements to a list. Creates the key if it doesn't exist.", list::rpush),
    cmd!("lpushx", -3, WDF, K1, "list", "2.2.0", "Prepends one or more elements to a list only when the list exists.", list::lpushx),
    cmd!("rpushx", -3, WDF, K1, "list", "2.2.0", "Appends an element to a list only when the list exists.", list::rpushx),
    cmd!("linsert", 5, WD, K1, "list", "2.2.0", "Inserts an element before or after another element in a list.", list::linsert),
    cmd!(
        "lpop",
        -2,
        WF,
        K1,
        "list",
        "1.0.0",
        "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.",
        list::lpop
    ),
    cmd!("rpop", -2, WF, K1, "list", "1.0.0", "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", list::rpop),
    cmd!("llen", 2, RF, K1, "list", "1.0.0", "Returns the length of a list.", list::llen),
    cmd!("lrange", 4, R, K1, "list", "1.0.0", "Returns a range of elements from a list.", list::lrange),
    cmd!("lindex", 3, R, K1, "list", "1.0.0", "Returns an element from a list by its index.", list::lindex),
    cmd!("lset", 4, WD, K1, "list", "1.0.0", "Sets the value of an element in a list by its index.", list::lset),
    cmd!("lrem", 4, W, K1, "list", "1.0.0", "Removes elements from a list. Deletes the list if the last element was removed.", list::lrem),
    cmd!("ltrim", 4, W, K1, "list", "1.0.0", "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", list::ltrim),
    cmd!("lpos", -3, R, K1, "list", "6.0.6", "Returns the index of matching elements in a list.", list::lpos),
    cmd!(
        "lmove",
        5,
        WD,
        (1, 2, 1),
        "list",
        "6.2.0",
        "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.",
        list::lmove
    ),
    cmd!(
        "rpoplpush",
        3,
        WD,
        (1, 2, 1),
        "list",
        "1.2.0",
        "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.",
        list::rpoplpush
    ),
    CommandSpec {
        movable: Movable::NumKeys(1),
        ..cmd!(
            "lmpop",
            -4,
            W,
            (2, -2, 1),
            "list",
            "7.0.0",
            "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.",
            list::lmpop
        )
    },
    cmd!(
        "blpop",
        -3,
        W | NOSCRIPT | BLOCKING,
        (1, -2, 1),
        "list",
        "2.0.0",
        "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        list::blpop
    ),
    cmd!(
        "brpop",
        -3,
        W | NOSCRIPT | BLOCKING,
        (1, -2, 1),
        "list",
        "2.0.0",
        "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
        list::brpop
    ),
    cmd!(
        "blmove",
        6,
        WD | NOSCRIPT | BLOCKING,
        (1, 2, 1),
        "list",
        "6.2.0",
        "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.",
        list::blmove
    ),
    cmd!(
        "brpoplpush",
        4,
        WD | NOSCRIPT | BLOCKING,
        (1, 2, 1),
        "list",
        "2.2.0",
        "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.",
        list::brpoplpush
    ),
    CommandSpec {
        movable: Movable::NumKeys(2),
        ..cmd!(
            "blmpop",
            -5,
            W | BLOCKING,
            (3, -2, 1),
            "list",
            "7.0.0",
            "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
            list::blmpop
        )
    },
    // streams
    cmd!("xadd", -5, WDF, K1, "stream", "5.0.0", "Appends a new entry to a stream", stream::xadd),
    cmd!("xrange", -4, R, K1, "stream", "5.0.0", "Return a range of elements in a stream, with IDs matching the specified IDs interval", stream::xrange),
    cmd!(
        "xrevrange",
        -4,
        R,
        K1,
        "stream",
        "5.0.0",
        "Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE",
        stream::xrevrange
    ),
    cmd!("xlen", 2, RF, K1, "stream", "5.0.0", "Return the number of entries in a stream", stream::xlen),
    cmd!(
        "xdel",
        -3,
        WF,
        K1,
        "stream",
        "5.0.0",
        "Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.",
        stream::xdel
    ),
    cmd!("xtrim", -4, W, K1, "stream", "5.0.0", "Trims the stream to (approximately if '~' is passed) a certain size", stream::xtrim),
    CommandSpec {
        movable: Movable::Streams,
        ..cmd!(
            "xread",
            -4,
            R | BLOCKING,
            NK,
            "stream",
            "5.0.0",
            "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.",
            stream::xread
        )
    },
    CommandSpec {
        movable: Movable::Streams,
        ..cmd!(
            "xreadgroup",
            -7,
            W | BLOCKING,
            NK,
            "stream",
            "5.0.0",
            "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.",
            stream::xreadgroup
        )
    },
    cmd!(
        "xack",
        -4,
        WF,
        K1,
        "stream",
        "5.0.0",
        "Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.",
        stream::xack
    ),
    cmd!(
        "xpending",
        -3,
        R,
        K1,
        "stream",
        "5.0.0",
        "Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.",
        stream::xpending
    ),
    cmd!(
        "xclaim",
        -6,
        WF,
        K1,
        "stream",
        "5.0.0",
        "Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.",
        stream::xclaim
    ),
    cmd!(
        "xautoclaim",
        -6,
        WF,
        K1,
        "stream",
        "6.2.0",
        "Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.",
        stream::xautoclaim
    ),
    cmd!("xsetid", -3, WDF, K1, "stream", "5.0.0", "An internal command for replicating stream values", stream::xsetid),
    container!("xgroup", -2, "stream", "5.0.0", "A container for consumer groups commands", &XGROUP_SUBCOMMANDS),
    container!("xinfo", -2, "stream", "5.0.0", "A container for stream introspection commands", &XINFO_SUBCOMMANDS),
    // scripting
    CommandSpec {
        movable: Movable::NumKeys(2),
        ..cmd!("eval", -3, SCRIPT_RUN, (3, -1, 1), "scripting", "2.6.0", "Executes a server-side Lua script.", scripting::eval)
    },
    CommandSpec {
        movable: Movable::NumKeys(2),
        ..cmd!("eval_ro", -3, SCRIPT_RUN | READONLY, (3, -1, 1), "scripting", "7.0.0", "Executes a read-only server-side Lua script.", scripting::eval_ro)
    },
    CommandSpec {
        movable: Movable::NumKeys(2),
        ..cmd!("evalsha", -3, SCRIPT_RUN, (3, -1, 1), "scripting", "2.6.0", "Executes a server-side Lua script by SHA1 digest.", scripting::evalsha)
    },
    CommandSpec {
        movable: Movable::NumKeys(2),
        ..cmd!(
            "evalsha_ro",
            -3,
            SCRIPT_RUN | READONLY,
            (3, -1, 1),
            "scripting",
            "7.0.0",
            "Executes a read-only server-side Lua script by SHA1 digest.",
            scripting::evalsha_ro
        )
    },
    CommandSpec { movable: Movable::NumKeys(2), ..cmd!("fcall", -3, SCRIPT_RUN, (3, -1, 1), "scripting", "7.0.0", "Invokes a function.", functions::fcall) },
    CommandSpec {
        movable: Movable::NumKeys(2),
        ..cmd!("fcall_ro", -3, SCRIPT_RUN | READONLY, (3, -1, 1), "scripting", "7.0.0", "Invokes a read-only function.", functions::fcall_ro)
    },
    container!("function", -2, "scripting", "7.0.0", "A container for function commands.", &FUNCTION_SUBCOMMANDS),
    container!("script", -2, "scripting", "2.6.0", "A container for Lua scripts management commands.", &SCRIPT_SUBCOMMANDS),
    // transactions
    cmd!(
        "multi",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | CONNECTION | TX_CONTROL | KEEPS_ASKING,
        NK,
        "transactions",
        "1.2.0",
        "Starts a transaction.",
        multi::multi
    ),
    cmd!(
        "exec",
        1,
        NOSCRIPT | LOADING | STALE | SKIP_SLOWLOG | TX_CONTROL | EXEC,
        NK,
        "transactions",
        "1.2.0",
        "Executes all commands in a transaction.",
        multi::exec
    ),
    cmd!(
        "discard",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | CONNECTION | TX_CONTROL,
        NK,
        "transactions",
        "2.0.0",
        "Discards a transaction.",
        multi::discard
    ),
    cmd!(
        "watch",
        -2,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | TX_CONTROL,
        KALL,
        "transactions",
        "2.2.0",
        "Monitors changes to keys to determine the execution of a transaction.",
        multi::watch
    ),
    cmd!(
        "unwatch",
        1,
        NOSCRIPT | LOADING | STALE | FAST | ALLOW_BUSY | CONNECTION,
        NK,
        "transactions",
        "2.2.0",
        "Forgets about watched keys of a transaction.",
        multi::unwatch
    ),
];

/// The index of every command, as the engine dispatches through it (the host uses one to
/// find a command's keys).
pub fn index() -> CommandIndex {
    CommandIndex::new(COMMANDS)
}
