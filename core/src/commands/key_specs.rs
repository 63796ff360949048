//! COMMAND INFO's command tips and key specs, per command: Redis 7.0.15's for the commands
//! it has (as its COMMAND INFO reports them), the Redis/Valkey documentation's for newer
//! ones (hash-field expiry, CLIENT SETINFO, CLUSTER MYSHARDID). A command not listed has
//! no tips and, if it has keys, one spec derived from its table entry (`key_specs_of`).
//! Sorted by name: `meta` looks commands up by binary search.

use alloc::vec::Vec;

use crate::server::key_spec::BeginSearch::{self, Index};
use crate::server::key_spec::FindKeys;
use crate::server::key_spec::key_flags::*;
use crate::server::key_spec::{CommandMeta, KeySpec};
use crate::server::spec::CommandSpec;
use crate::util::c_eq_ic;

const fn m(name: &'static str, tips: &'static [&'static str], key_specs: &'static [KeySpec]) -> CommandMeta {
    CommandMeta { name, tips, key_specs, variable_flags: None }
}
const fn ks(flags: u32, begin_search: BeginSearch, find_keys: FindKeys) -> KeySpec {
    KeySpec { notes: None, flags, begin_search, find_keys }
}
const fn noted(notes: &'static str, spec: KeySpec) -> KeySpec {
    KeySpec { notes: Some(notes), ..spec }
}
const fn kw(keyword: &'static str, startfrom: i32) -> BeginSearch {
    BeginSearch::Keyword { keyword, startfrom }
}
const fn range(lastkey: i32, step: i32, limit: i32) -> FindKeys {
    FindKeys::Range { lastkey, step, limit }
}
const fn keynum(keynumidx: i32, firstkey: i32, step: i32) -> FindKeys {
    FindKeys::Keynum { keynumidx, firstkey, step }
}

pub static META: &[CommandMeta] = &[
    m("append", &[], &[ks(RW | INSERT, Index(1), range(0, 1, 0))]),
    m("bitcount", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    CommandMeta {
        variable_flags: Some(bitfield_flags),
        ..m(
            "bitfield",
            &[],
            &[noted("This command allows both access and modification of the key", ks(RW | ACCESS | UPDATE | VARIABLE_FLAGS, Index(1), range(0, 1, 0)))],
        )
    },
    m("bitfield_ro", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("bitop", &[], &[ks(OW | UPDATE, Index(2), range(0, 1, 0)), ks(RO | ACCESS, Index(3), range(-1, 1, 0))]),
    m("bitpos", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("blmove", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0)), ks(RW | INSERT, Index(2), range(0, 1, 0))]),
    m("blmpop", &[], &[ks(RW | ACCESS | DELETE, Index(2), keynum(0, 1, 1))]),
    m("blpop", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(-2, 1, 0))]),
    m("brpop", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(-2, 1, 0))]),
    m("brpoplpush", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0)), ks(RW | INSERT, Index(2), range(0, 1, 0))]),
    m("bzmpop", &[], &[ks(RW | ACCESS | DELETE, Index(2), keynum(0, 1, 1))]),
    m("bzpopmax", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(-2, 1, 0))]),
    m("bzpopmin", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(-2, 1, 0))]),
    m("client|info", &["nondeterministic_output"], &[]),
    m("client|list", &["nondeterministic_output"], &[]),
    m("client|setinfo", &["request_policy:all_nodes", "response_policy:all_succeeded"], &[]),
    m("cluster|getkeysinslot", &["nondeterministic_output"], &[]),
    m("cluster|info", &["nondeterministic_output"], &[]),
    m("cluster|myshardid", &["nondeterministic_output"], &[]),
    m("cluster|nodes", &["nondeterministic_output"], &[]),
    m("cluster|shards", &["nondeterministic_output"], &[]),
    m("cluster|slots", &["nondeterministic_output"], &[]),
    m("command", &["nondeterministic_output_order"], &[]),
    m("command|docs", &["nondeterministic_output_order"], &[]),
    m("command|info", &["nondeterministic_output_order"], &[]),
    m("command|list", &["nondeterministic_output_order"], &[]),
    m("config|set", &["request_policy:all_nodes", "response_policy:all_succeeded"], &[]),
    m("copy", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0)), ks(OW | UPDATE, Index(2), range(0, 1, 0))]),
    m("dbsize", &["request_policy:all_shards", "response_policy:agg_sum"], &[]),
    m("decr", &[], &[ks(RW | ACCESS | UPDATE, Index(1), range(0, 1, 0))]),
    m("decrby", &[], &[ks(RW | ACCESS | UPDATE, Index(1), range(0, 1, 0))]),
    m("del", &["request_policy:multi_shard", "response_policy:agg_sum"], &[ks(RM | DELETE, Index(1), range(-1, 1, 0))]),
    m("dump", &["nondeterministic_output"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m(
        "eval",
        &[],
        &[noted("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE", ks(RW | ACCESS | UPDATE, Index(2), keynum(0, 1, 1)))],
    ),
    m("eval_ro", &[], &[noted("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS", ks(RO | ACCESS, Index(2), keynum(0, 1, 1)))]),
    m("evalsha", &[], &[ks(RW | ACCESS | UPDATE, Index(2), keynum(0, 1, 1))]),
    m("evalsha_ro", &[], &[ks(RO | ACCESS, Index(2), keynum(0, 1, 1))]),
    m("exists", &["request_policy:multi_shard", "response_policy:agg_sum"], &[ks(RO, Index(1), range(-1, 1, 0))]),
    m("expire", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("expireat", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("expiretime", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m(
        "fcall",
        &[],
        &[noted("We cannot tell how the keys will be used so we assume the worst, RW and UPDATE", ks(RW | ACCESS | UPDATE, Index(2), keynum(0, 1, 1)))],
    ),
    m("fcall_ro", &[], &[noted("We cannot tell how the keys will be used so we assume the worst, RO and ACCESS", ks(RO | ACCESS, Index(2), keynum(0, 1, 1)))]),
    m("flushall", &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    m("flushdb", &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    m("function|delete", &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    m("function|flush", &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    m("function|kill", &["request_policy:all_shards", "response_policy:one_succeeded"], &[]),
    m("function|list", &["nondeterministic_output_order"], &[]),
    m("function|load", &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    m("function|restore", &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    m("function|stats", &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], &[]),
    m("geoadd", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("geodist", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("geohash", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("geopos", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m(
        "georadius",
        &[],
        &[ks(RO | ACCESS, Index(1), range(0, 1, 0)), ks(OW | UPDATE, kw("STORE", 6), range(0, 1, 0)), ks(OW | UPDATE, kw("STOREDIST", 6), range(0, 1, 0))],
    ),
    m("georadius_ro", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m(
        "georadiusbymember",
        &[],
        &[ks(RO | ACCESS, Index(1), range(0, 1, 0)), ks(OW | UPDATE, kw("STORE", 5), range(0, 1, 0)), ks(OW | UPDATE, kw("STOREDIST", 5), range(0, 1, 0))],
    ),
    m("georadiusbymember_ro", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("geosearch", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("geosearchstore", &[], &[ks(OW | UPDATE, Index(1), range(0, 1, 0)), ks(RO | ACCESS, Index(2), range(0, 1, 0))]),
    m("get", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("getbit", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("getdel", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0))]),
    m("getex", &[], &[noted("RW and UPDATE because it changes the TTL", ks(RW | ACCESS | UPDATE, Index(1), range(0, 1, 0)))]),
    m("getrange", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("getset", &[], &[ks(RW | ACCESS | UPDATE, Index(1), range(0, 1, 0))]),
    m("hdel", &[], &[ks(RW | DELETE, Index(1), range(0, 1, 0))]),
    m("hexists", &[], &[ks(RO, Index(1), range(0, 1, 0))]),
    m("hexpire", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("hexpireat", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("hexpiretime", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("hget", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("hgetall", &["nondeterministic_output_order"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("hgetdel", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0))]),
    m("hgetex", &[], &[ks(RW | ACCESS | UPDATE, Index(1), range(0, 1, 0))]),
    m("hincrby", &[], &[ks(RW | ACCESS | UPDATE, Index(1), range(0, 1, 0))]),
    m("hincrbyfloat", &[], &[ks(RW | ACCESS | UPDATE, Index(1), range(0, 1, 0))]),
    m("hkeys", &["nondeterministic_output_order"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("hlen", &[], &[ks(RO, Index(1), range(0, 1, 0))]),
    m("hmget", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("hmset", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("hpersist", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("hpexpire", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("hpexpireat", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("hpexpiretime", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("hpttl", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("hrandfield", &["nondeterministic_output"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("hscan", &["nondeterministic_output"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("hset", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("hsetex", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("hsetnx", &[], &[ks(RW | INSERT, Index(1), range(0, 1, 0))]),
    m("hstrlen", &[], &[ks(RO, Index(1), range(0, 1, 0))]),
    m("httl", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("hvals", &["nondeterministic_output_order"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("incr", &[], &[ks(RW | ACCESS | UPDATE, Index(1), range(0, 1, 0))]),
    m("incrby", &[], &[ks(RW | ACCESS | UPDATE, Index(1), range(0, 1, 0))]),
    m("incrbyfloat", &[], &[ks(RW | ACCESS | UPDATE, Index(1), range(0, 1, 0))]),
    m("info", &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], &[]),
    m("keys", &["request_policy:all_shards", "nondeterministic_output_order"], &[]),
    m("lastsave", &["nondeterministic_output"], &[]),
    m("latency|doctor", &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], &[]),
    m("latency|graph", &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], &[]),
    m("latency|histogram", &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], &[]),
    m("latency|history", &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], &[]),
    m("latency|latest", &["nondeterministic_output", "request_policy:all_nodes", "response_policy:special"], &[]),
    m("latency|reset", &["request_policy:all_nodes", "response_policy:all_succeeded"], &[]),
    m("lcs", &[], &[ks(RO | ACCESS, Index(1), range(1, 1, 0))]),
    m("lindex", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("linsert", &[], &[ks(RW | INSERT, Index(1), range(0, 1, 0))]),
    m("llen", &[], &[ks(RO, Index(1), range(0, 1, 0))]),
    m("lmove", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0)), ks(RW | INSERT, Index(2), range(0, 1, 0))]),
    m("lmpop", &[], &[ks(RW | ACCESS | DELETE, Index(1), keynum(0, 1, 1))]),
    m("lpop", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0))]),
    m("lpos", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("lpush", &[], &[ks(RW | INSERT, Index(1), range(0, 1, 0))]),
    m("lpushx", &[], &[ks(RW | INSERT, Index(1), range(0, 1, 0))]),
    m("lrange", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("lrem", &[], &[ks(RW | DELETE, Index(1), range(0, 1, 0))]),
    m("lset", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("ltrim", &[], &[ks(RW | DELETE, Index(1), range(0, 1, 0))]),
    m("memory|doctor", &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], &[]),
    m("memory|malloc-stats", &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], &[]),
    m("memory|purge", &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    m("memory|stats", &["nondeterministic_output", "request_policy:all_shards", "response_policy:special"], &[]),
    m("memory|usage", &[], &[ks(RO, Index(2), range(0, 1, 0))]),
    m("mget", &["request_policy:multi_shard"], &[ks(RO | ACCESS, Index(1), range(-1, 1, 0))]),
    m(
        "migrate",
        &["nondeterministic_output"],
        &[ks(RW | ACCESS | DELETE, Index(3), range(0, 1, 0)), ks(RW | ACCESS | DELETE | INCOMPLETE, kw("KEYS", -2), range(-1, 1, 0))],
    ),
    m("move", &[], &[ks(RW | ACCESS | UPDATE, Index(1), range(0, 1, 0))]),
    m("mset", &["request_policy:multi_shard", "response_policy:all_succeeded"], &[ks(OW | UPDATE, Index(1), range(-1, 2, 0))]),
    m("msetnx", &["request_policy:multi_shard", "response_policy:agg_min"], &[ks(OW | INSERT, Index(1), range(-1, 2, 0))]),
    m("object|encoding", &["nondeterministic_output"], &[ks(RO, Index(2), range(0, 1, 0))]),
    m("object|freq", &["nondeterministic_output"], &[ks(RO, Index(2), range(0, 1, 0))]),
    m("object|idletime", &["nondeterministic_output"], &[ks(RO, Index(2), range(0, 1, 0))]),
    m("object|refcount", &["nondeterministic_output"], &[ks(RO, Index(2), range(0, 1, 0))]),
    m("persist", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("pexpire", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("pexpireat", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("pexpiretime", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("pfadd", &[], &[ks(RW | INSERT, Index(1), range(0, 1, 0))]),
    m(
        "pfcount",
        &[],
        &[noted("RW because it may change the internal representation of the key, and propagate to replicas", ks(RW | ACCESS, Index(1), range(-1, 1, 0)))],
    ),
    m("pfmerge", &[], &[ks(RW | ACCESS | INSERT, Index(1), range(0, 1, 0)), ks(RO | ACCESS, Index(2), range(-1, 1, 0))]),
    m("ping", &["request_policy:all_shards", "response_policy:all_succeeded"], &[]),
    m("psetex", &[], &[ks(OW | UPDATE, Index(1), range(0, 1, 0))]),
    m("pttl", &["nondeterministic_output"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("randomkey", &["request_policy:all_shards", "nondeterministic_output"], &[]),
    m("rename", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0)), ks(OW | UPDATE, Index(2), range(0, 1, 0))]),
    m("renamenx", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0)), ks(OW | INSERT, Index(2), range(0, 1, 0))]),
    m("restore", &[], &[ks(OW | UPDATE, Index(1), range(0, 1, 0))]),
    m("restore-asking", &[], &[ks(OW | UPDATE, Index(1), range(0, 1, 0))]),
    m("rpop", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0))]),
    m("rpoplpush", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0)), ks(RW | INSERT, Index(2), range(0, 1, 0))]),
    m("rpush", &[], &[ks(RW | INSERT, Index(1), range(0, 1, 0))]),
    m("rpushx", &[], &[ks(RW | INSERT, Index(1), range(0, 1, 0))]),
    m("sadd", &[], &[ks(RW | INSERT, Index(1), range(0, 1, 0))]),
    m("scan", &["nondeterministic_output", "request_policy:special"], &[]),
    m("scard", &[], &[ks(RO, Index(1), range(0, 1, 0))]),
    m("script|exists", &["request_policy:all_shards", "response_policy:agg_logical_and"], &[]),
    m("script|flush", &["request_policy:all_nodes", "response_policy:all_succeeded"], &[]),
    m("script|kill", &["request_policy:all_shards", "response_policy:one_succeeded"], &[]),
    m("script|load", &["request_policy:all_nodes", "response_policy:all_succeeded"], &[]),
    m("sdiff", &["nondeterministic_output_order"], &[ks(RO | ACCESS, Index(1), range(-1, 1, 0))]),
    m("sdiffstore", &[], &[ks(OW | UPDATE, Index(1), range(0, 1, 0)), ks(RO | ACCESS, Index(2), range(-1, 1, 0))]),
    CommandMeta {
        variable_flags: Some(set_flags),
        ..m("set", &[], &[noted("RW and ACCESS due to the optional `GET` argument", ks(RW | ACCESS | UPDATE | VARIABLE_FLAGS, Index(1), range(0, 1, 0)))])
    },
    m("setbit", &[], &[ks(RW | ACCESS | UPDATE, Index(1), range(0, 1, 0))]),
    m("setex", &[], &[ks(OW | UPDATE, Index(1), range(0, 1, 0))]),
    m("setnx", &[], &[ks(OW | INSERT, Index(1), range(0, 1, 0))]),
    m("setrange", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("sinter", &["nondeterministic_output_order"], &[ks(RO | ACCESS, Index(1), range(-1, 1, 0))]),
    m("sintercard", &[], &[ks(RO | ACCESS, Index(1), keynum(0, 1, 1))]),
    m("sinterstore", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0)), ks(RO | ACCESS, Index(2), range(-1, 1, 0))]),
    m("sismember", &[], &[ks(RO, Index(1), range(0, 1, 0))]),
    m("slowlog|get", &["request_policy:all_nodes", "nondeterministic_output"], &[]),
    m("slowlog|len", &["request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"], &[]),
    m("slowlog|reset", &["request_policy:all_nodes", "response_policy:all_succeeded"], &[]),
    m("smembers", &["nondeterministic_output_order"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("smismember", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("smove", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0)), ks(RW | INSERT, Index(2), range(0, 1, 0))]),
    m(
        "sort",
        &[],
        &[
            ks(RO | ACCESS, Index(1), range(0, 1, 0)),
            noted(
                "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort",
                ks(RO | ACCESS, BeginSearch::Unknown, FindKeys::Unknown),
            ),
            noted(
                "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array",
                ks(OW | UPDATE, BeginSearch::Unknown, FindKeys::Unknown),
            ),
        ],
    ),
    m(
        "sort_ro",
        &[],
        &[
            ks(RO | ACCESS, Index(1), range(0, 1, 0)),
            noted(
                "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort",
                ks(RO | ACCESS, BeginSearch::Unknown, FindKeys::Unknown),
            ),
        ],
    ),
    m("spop", &["nondeterministic_output"], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0))]),
    m("spublish", &[], &[ks(NOT_KEY, Index(1), range(0, 1, 0))]),
    m("srandmember", &["nondeterministic_output"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("srem", &[], &[ks(RW | DELETE, Index(1), range(0, 1, 0))]),
    m("sscan", &["nondeterministic_output"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("ssubscribe", &[], &[ks(NOT_KEY, Index(1), range(-1, 1, 0))]),
    m("strlen", &[], &[ks(RO, Index(1), range(0, 1, 0))]),
    m("substr", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("sunion", &["nondeterministic_output_order"], &[ks(RO | ACCESS, Index(1), range(-1, 1, 0))]),
    m("sunionstore", &[], &[ks(OW | UPDATE, Index(1), range(0, 1, 0)), ks(RO | ACCESS, Index(2), range(-1, 1, 0))]),
    m("sunsubscribe", &[], &[ks(NOT_KEY, Index(1), range(-1, 1, 0))]),
    m("time", &["nondeterministic_output"], &[]),
    m("touch", &["request_policy:multi_shard", "response_policy:agg_sum"], &[ks(RO, Index(1), range(-1, 1, 0))]),
    m("ttl", &["nondeterministic_output"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("type", &[], &[ks(RO, Index(1), range(0, 1, 0))]),
    m("unlink", &["request_policy:multi_shard", "response_policy:agg_sum"], &[ks(RM | DELETE, Index(1), range(-1, 1, 0))]),
    m("wait", &["request_policy:all_shards", "response_policy:agg_min"], &[]),
    m("watch", &[], &[ks(RO, Index(1), range(-1, 1, 0))]),
    m("xack", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m(
        "xadd",
        &["nondeterministic_output"],
        &[noted("UPDATE instead of INSERT because of the optional trimming feature", ks(RW | UPDATE, Index(1), range(0, 1, 0)))],
    ),
    m("xautoclaim", &["nondeterministic_output"], &[ks(RW | DELETE, Index(1), range(0, 1, 0))]),
    m("xclaim", &["nondeterministic_output"], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("xdel", &[], &[ks(RW | DELETE, Index(1), range(0, 1, 0))]),
    m("xgroup|create", &[], &[ks(RW | INSERT, Index(2), range(0, 1, 0))]),
    m("xgroup|createconsumer", &[], &[ks(RW | INSERT, Index(2), range(0, 1, 0))]),
    m("xgroup|delconsumer", &[], &[ks(RW | DELETE, Index(2), range(0, 1, 0))]),
    m("xgroup|destroy", &[], &[ks(RW | DELETE, Index(2), range(0, 1, 0))]),
    m("xgroup|setid", &[], &[ks(RW | UPDATE, Index(2), range(0, 1, 0))]),
    m("xinfo|consumers", &["nondeterministic_output"], &[ks(RO | ACCESS, Index(2), range(0, 1, 0))]),
    m("xinfo|groups", &[], &[ks(RO | ACCESS, Index(2), range(0, 1, 0))]),
    m("xinfo|stream", &[], &[ks(RO | ACCESS, Index(2), range(0, 1, 0))]),
    m("xlen", &[], &[ks(RO, Index(1), range(0, 1, 0))]),
    m("xpending", &["nondeterministic_output"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("xrange", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("xread", &[], &[ks(RO | ACCESS, kw("STREAMS", 1), range(-1, 1, 2))]),
    m("xreadgroup", &[], &[ks(RO | ACCESS, kw("STREAMS", 4), range(-1, 1, 2))]),
    m("xrevrange", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("xsetid", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("xtrim", &["nondeterministic_output"], &[ks(RW | DELETE, Index(1), range(0, 1, 0))]),
    m("zadd", &[], &[ks(RW | UPDATE, Index(1), range(0, 1, 0))]),
    m("zcard", &[], &[ks(RO, Index(1), range(0, 1, 0))]),
    m("zcount", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zdiff", &[], &[ks(RO | ACCESS, Index(1), keynum(0, 1, 1))]),
    m("zdiffstore", &[], &[ks(OW | UPDATE, Index(1), range(0, 1, 0)), ks(RO | ACCESS, Index(2), keynum(0, 1, 1))]),
    m("zincrby", &[], &[ks(RW | ACCESS | UPDATE, Index(1), range(0, 1, 0))]),
    m("zinter", &[], &[ks(RO | ACCESS, Index(1), keynum(0, 1, 1))]),
    m("zintercard", &[], &[ks(RO | ACCESS, Index(1), keynum(0, 1, 1))]),
    m("zinterstore", &[], &[ks(OW | UPDATE, Index(1), range(0, 1, 0)), ks(RO | ACCESS, Index(2), keynum(0, 1, 1))]),
    m("zlexcount", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zmpop", &[], &[ks(RW | ACCESS | DELETE, Index(1), keynum(0, 1, 1))]),
    m("zmscore", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zpopmax", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0))]),
    m("zpopmin", &[], &[ks(RW | ACCESS | DELETE, Index(1), range(0, 1, 0))]),
    m("zrandmember", &["nondeterministic_output"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zrange", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zrangebylex", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zrangebyscore", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zrangestore", &[], &[ks(OW | UPDATE, Index(1), range(0, 1, 0)), ks(RO | ACCESS, Index(2), range(0, 1, 0))]),
    m("zrank", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zrem", &[], &[ks(RW | DELETE, Index(1), range(0, 1, 0))]),
    m("zremrangebylex", &[], &[ks(RW | DELETE, Index(1), range(0, 1, 0))]),
    m("zremrangebyrank", &[], &[ks(RW | DELETE, Index(1), range(0, 1, 0))]),
    m("zremrangebyscore", &[], &[ks(RW | DELETE, Index(1), range(0, 1, 0))]),
    m("zrevrange", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zrevrangebylex", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zrevrangebyscore", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zrevrank", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zscan", &["nondeterministic_output"], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zscore", &[], &[ks(RO | ACCESS, Index(1), range(0, 1, 0))]),
    m("zunion", &[], &[ks(RO | ACCESS, Index(1), keynum(0, 1, 1))]),
    m("zunionstore", &[], &[ks(OW | UPDATE, Index(1), range(0, 1, 0)), ks(RO | ACCESS, Index(2), keynum(0, 1, 1))]),
];

/// The tips and key specs of the command named `name`, if it has any.
pub fn meta(name: &str) -> Option<&'static CommandMeta> {
    META.binary_search_by(|m| m.name.cmp(name)).ok().map(|i| &META[i])
}

/// `c`'s key specs: its listed ones, or one derived from its table entry's first/last/step
/// (read or write as the command is) when it has keys and none are listed.
pub fn key_specs_of(c: &CommandSpec) -> Vec<KeySpec> {
    if let Some(m) = meta(c.name) {
        return m.key_specs.to_vec();
    }
    if c.first_key <= 0 {
        return Vec::new();
    }
    let lastkey = if c.last_key < 0 { c.last_key } else { c.last_key - c.first_key };
    alloc::vec![ks(if c.is_write() { RW } else { RO }, Index(c.first_key), range(lastkey, c.step, 0))]
}

/// SET's key: read too when GET returns the old value.
fn set_flags(argv: &[&[u8]]) -> u32 {
    if argv.iter().skip(3).any(|a| c_eq_ic(a, b"get")) { RW | ACCESS | UPDATE } else { OW | UPDATE }
}

/// BITFIELD's key: read-only unless a SET or INCRBY (or anything it cannot parse, which
/// it then assumes may write) follows.
fn bitfield_flags(argv: &[&[u8]]) -> u32 {
    let mut i = 2;
    while i < argv.len() {
        let left = argv.len() - i - 1;
        let a = argv[i];
        if c_eq_ic(a, b"get") && left >= 2 {
            i += 3;
        } else if c_eq_ic(a, b"overflow") && left >= 1 {
            i += 2;
        } else {
            // SET/INCRBY write; so may anything unparsed.
            return RW | ACCESS | UPDATE;
        }
    }
    RO | ACCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::table::COMMANDS;
    use crate::server::key_spec::legacy_range;
    use crate::server::spec::Movable;

    fn all_commands() -> impl Iterator<Item = &'static CommandSpec> {
        COMMANDS.iter().flat_map(|c| core::iter::once(c).chain(c.subcommands.iter()))
    }

    #[test]
    fn sorted_by_name() {
        assert!(META.windows(2).all(|w| w[0].name < w[1].name), "META must stay sorted by name for `meta`");
    }

    /// The table's fixed key positions (what key extraction uses) say what the specs say,
    /// for commands whose keys do not move: shard channels (`NOT_KEY`) excepted, which the
    /// table does not count as keys.
    #[test]
    fn table_key_positions_agree_with_the_specs() {
        for c in all_commands().filter(|c| c.movable == Movable::No) {
            let specs = key_specs_of(c);
            if specs.iter().any(|s| s.flags & NOT_KEY != 0) {
                continue;
            }
            assert_eq!(legacy_range(&specs), (c.first_key, c.last_key, c.step), "{}", c.name);
        }
    }

    #[test]
    fn variable_flags_follow_the_arguments() {
        let args = |line: &'static str| line.split(' ').map(str::as_bytes).collect::<Vec<_>>();
        assert_eq!(set_flags(&args("SET k v")), OW | UPDATE);
        assert_eq!(set_flags(&args("SET k v EX 10 get")), RW | ACCESS | UPDATE);
        assert_eq!(bitfield_flags(&args("BITFIELD k GET u8 0 OVERFLOW SAT")), RO | ACCESS);
        assert_eq!(bitfield_flags(&args("BITFIELD k GET u8 0 INCRBY u8 0 1")), RW | ACCESS | UPDATE);
        assert_eq!(bitfield_flags(&args("BITFIELD k GET u8")), RW | ACCESS | UPDATE);
    }
}
