//! The effects invariant: for any command sequence, applying the emitted effects to an
//! empty engine yields the same data set (digest) as the engine that ran the commands.
//! This is what makes write-behind logging sound: replicas and log replay see exactly the
//! primary's state.

mod common;

use common::H;
use memoria_core::Engine;
use proptest::prelude::*;

const KEYS: &[&str] = &["a", "b", "c", "h", "n", "{x}y"];
const FIELDS: &[&str] = &["f1", "f2", "f3", "f4"];

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(KEYS).prop_map(String::from)
}
fn field() -> impl Strategy<Value = String> {
    prop::sample::select(FIELDS).prop_map(String::from)
}
fn small_val() -> impl Strategy<Value = String> {
    prop_oneof![(-20i64..20).prop_map(|n| n.to_string()), "[a-z]{0,6}", Just("1.5".to_string()),]
}

#[derive(Debug, Clone)]
enum Step {
    Cmd(Vec<String>),
    /// Advance the clock (drives lazy and active expiry).
    Sleep(i64),
    Tick,
    /// DUMP a key and RESTORE the payload (if any) under another, with these options
    /// after `RESTORE dst ttl payload`.
    DumpRestore {
        src: String,
        dst: String,
        ttl: String,
        opts: Vec<String>,
    },
}

/// The RESTORE for a DumpRestore step, given the DUMP's raw reply; None when the source
/// was missing.
fn restore_of(dump_reply: &[u8], dst: &str, ttl: &str, opts: &[String]) -> Option<Vec<Vec<u8>>> {
    if !dump_reply.starts_with(b"$") || dump_reply.starts_with(b"$-1") {
        return None;
    }
    let at = dump_reply.iter().position(|&c| c == b'\n')? + 1;
    let payload = dump_reply[at..dump_reply.len() - 2].to_vec();
    let mut args = vec![b"RESTORE".to_vec(), dst.as_bytes().to_vec(), ttl.as_bytes().to_vec(), payload];
    args.extend(opts.iter().map(|o| o.as_bytes().to_vec()));
    Some(args)
}

fn string_cmd() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        (key(), small_val()).prop_map(|(k, v)| vec!["SET".into(), k, v]),
        (key(), small_val(), 1i64..50).prop_map(|(k, v, px)| vec!["SET".into(), k, v, "PX".into(), px.to_string()]),
        (key(), small_val()).prop_map(|(k, v)| vec!["SET".into(), k, v, "KEEPTTL".into(), "GET".into()]),
        (key(), small_val()).prop_map(|(k, v)| vec!["SETNX".into(), k, v]),
        (key(), 1i64..3, small_val()).prop_map(|(k, s, v)| vec!["SETEX".into(), k, s.to_string(), v]),
        (key(), 1i64..60, small_val()).prop_map(|(k, s, v)| vec!["PSETEX".into(), k, s.to_string(), v]),
        (key(), small_val()).prop_map(|(k, v)| vec!["APPEND".into(), k, v]),
        key().prop_map(|k| vec!["INCR".into(), k]),
        (key(), -5i64..5).prop_map(|(k, n)| vec!["DECRBY".into(), k, n.to_string()]),
        (key(), prop::sample::select(&["0.5", "-1.25", "3"][..])).prop_map(|(k, n)| vec!["INCRBYFLOAT".into(), k, n.into()]),
        (key(), 0i64..8, small_val()).prop_map(|(k, o, v)| vec!["SETRANGE".into(), k, o.to_string(), v]),
        (key(), small_val()).prop_map(|(k, v)| vec!["GETSET".into(), k, v]),
        key().prop_map(|k| vec!["GETDEL".into(), k]),
        (key(), 1i64..40).prop_map(|(k, n)| vec!["GETEX".into(), k, "PX".into(), n.to_string()]),
        key().prop_map(|k| vec!["GETEX".into(), k, "PERSIST".into()]),
        (key(), small_val(), key(), small_val()).prop_map(|(a, x, b, y)| vec!["MSET".into(), a, x, b, y]),
        (key(), small_val(), key(), small_val()).prop_map(|(a, x, b, y)| vec!["MSETNX".into(), a, x, b, y]),
        key().prop_map(|k| vec!["GET".into(), k]),
    ]
}

fn hash_cmd() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        (key(), field(), small_val()).prop_map(|(k, f, v)| vec!["HSET".into(), k, f, v]),
        (key(), field(), small_val(), field(), small_val()).prop_map(|(k, f, v, g, w)| vec!["HMSET".into(), k, f, v, g, w]),
        (key(), field(), small_val()).prop_map(|(k, f, v)| vec!["HSETNX".into(), k, f, v]),
        (key(), field()).prop_map(|(k, f)| vec!["HDEL".into(), k, f]),
        (key(), field(), -3i64..3).prop_map(|(k, f, n)| vec!["HINCRBY".into(), k, f, n.to_string()]),
        (key(), field()).prop_map(|(k, f)| vec!["HINCRBYFLOAT".into(), k, f, "0.25".into()]),
        (key(), 1i64..40).prop_map(|(k, n)| vec!["PEXPIRE".into(), k, n.to_string()]),
        key().prop_map(|k| vec!["HGETALL".into(), k]),
        // Many fields: crosses hash-max-listpack-entries in the long runs.
        (key(), 0u32..300).prop_map(|(k, i)| vec!["HSET".into(), k, format!("field{i}"), "v".into()]),
    ]
}

/// Hash-field expiry: TTLs that pass during the run (lazily on access, actively on
/// ticks), conditions, persist, and the 8.0 commands that set or read and delete.
fn hash_ttl_cmd() -> impl Strategy<Value = Vec<String>> {
    let cond = || prop::sample::select(&["", "NX", "XX", "GT", "LT"][..]);
    let fields = || prop::collection::vec(field(), 1..3);
    prop_oneof![
        3 => hash_cmd(),
        3 => (key(), 1i64..40, cond(), fields()).prop_map(|(k, ms, c, fs)| {
            let mut v = vec!["HPEXPIRE".to_string(), k, ms.to_string()];
            if !c.is_empty() {
                v.push(c.into());
            }
            with_fields(v, fs)
        }),
        1 => (key(), fields()).prop_map(|(k, fs)| with_fields(vec!["HEXPIRE".into(), k, "0".into()], fs)),
        1 => (key(), fields()).prop_map(|(k, fs)| with_fields(vec!["HPERSIST".into(), k], fs)),
        1 => (key(), fields()).prop_map(|(k, fs)| with_fields(vec!["HPTTL".into(), k], fs)),
        1 => (key(), fields()).prop_map(|(k, fs)| with_fields(vec!["HGETDEL".into(), k], fs)),
        2 => (key(), prop::sample::select(&["", "PERSIST", "PX", "EX0"][..]), 1i64..40, fields()).prop_map(|(k, o, ms, fs)| {
            let mut v = vec!["HGETEX".to_string(), k];
            match o {
                "PX" => v.extend(["PX".to_string(), ms.to_string()]),
                "EX0" => v.extend(["EX".to_string(), "0".into()]),
                "" => {}
                o => v.push(o.into()),
            }
            with_fields(v, fs)
        }),
        3 => (key(), prop::sample::select(&["", "FNX", "FXX"][..]), prop::sample::select(&["", "PX", "KEEPTTL", "EX0"][..]), 1i64..40, field(), small_val()).prop_map(|(k, c, o, ms, f, val)| {
            let mut v = vec!["HSETEX".to_string(), k];
            if !c.is_empty() {
                v.push(c.into());
            }
            match o {
                "PX" => v.extend(["PX".to_string(), ms.to_string()]),
                "EX0" => v.extend(["EX".to_string(), "0".into()]),
                "" => {}
                o => v.push(o.into()),
            }
            with_fields(v, vec![f, val])
        }),
        1 => (key(), field()).prop_map(|(k, f)| vec!["HINCRBYFLOAT".into(), k, f, "1.5".into()]),
        1 => (key(), key()).prop_map(|(a, b)| vec!["RENAME".into(), a, b]),
        1 => (key(), key()).prop_map(|(a, b)| vec!["COPY".into(), a, b, "REPLACE".into()]),
    ]
}

/// `c` then `FIELDS n` and the fields (for HSETEX: the n field-value pairs, n = half).
fn with_fields(mut c: Vec<String>, fs: Vec<String>) -> Vec<String> {
    let n = if c[0] == "HSETEX" { fs.len() / 2 } else { fs.len() };
    c.extend(["FIELDS".to_string(), n.to_string()]);
    c.extend(fs);
    c
}

fn member() -> impl Strategy<Value = String> {
    prop_oneof![(-3i64..8).prop_map(|n| n.to_string()), prop::sample::select(&["a", "b", "01", ""][..]).prop_map(String::from)]
}

fn set_cmd() -> impl Strategy<Value = Vec<String>> {
    let keys = || prop::collection::vec(key(), 1..4);
    let with = |name: &'static str, first: Vec<String>, rest: Vec<String>| {
        let mut c = vec![name.to_string()];
        c.extend(first);
        c.extend(rest);
        c
    };
    prop_oneof![
        (key(), prop::collection::vec(member(), 1..4)).prop_map(move |(k, m)| with("SADD", vec![k], m)),
        (key(), prop::collection::vec(member(), 1..3)).prop_map(move |(k, m)| with("SREM", vec![k], m)),
        // Many integers: crosses set-max-intset-entries in the long runs.
        (key(), 0u32..700).prop_map(|(k, i)| vec!["SADD".into(), k, i.to_string()]),
        key().prop_map(|k| vec!["SPOP".into(), k]),
        (key(), 0u8..6).prop_map(|(k, n)| vec!["SPOP".into(), k, n.to_string()]),
        (key(), -3i64..4).prop_map(|(k, n)| vec!["SRANDMEMBER".into(), k, n.to_string()]),
        (key(), key(), member()).prop_map(|(a, b, m)| vec!["SMOVE".into(), a, b, m]),
        (key(), keys()).prop_map(move |(d, ks)| with("SINTERSTORE", vec![d], ks)),
        (key(), keys()).prop_map(move |(d, ks)| with("SUNIONSTORE", vec![d], ks)),
        (key(), keys()).prop_map(move |(d, ks)| with("SDIFFSTORE", vec![d], ks)),
        keys().prop_map(move |ks| with("SINTER", vec![], ks)),
        (key(), 1i64..40).prop_map(|(k, n)| vec!["PEXPIRE".into(), k, n.to_string()]),
        (key(), key()).prop_map(|(a, b)| vec!["COPY".into(), a, b, "REPLACE".into()]),
        (key(), small_val()).prop_map(|(k, v)| vec!["SET".into(), k, v]),
        prop::sample::select(&["0", "3", "512"][..]).prop_map(|n| vec!["CONFIG".into(), "SET".into(), "set-max-intset-entries".into(), n.into()]),
    ]
}

fn zset_cmd() -> impl Strategy<Value = Vec<String>> {
    let member = || prop::sample::select(&["a", "b", "c", "d", "-0", ""][..]).prop_map(String::from);
    let score = || prop::sample::select(&["1", "2", "-1", "0", "-0", "1.5", "inf", "-inf", "0.1"][..]).prop_map(String::from);
    let opt = || prop::sample::select(&["NX", "XX", "GT", "LT", "CH", "INCR"][..]).prop_map(String::from);
    prop_oneof![
        (key(), score(), member()).prop_map(|(k, s, m)| vec!["ZADD".into(), k, s, m]),
        (key(), opt(), score(), member()).prop_map(|(k, o, s, m)| vec!["ZADD".into(), k, o, s, m]),
        (key(), score(), member()).prop_map(|(k, s, m)| vec!["ZINCRBY".into(), k, s, m]),
        (key(), member(), member()).prop_map(|(k, a, b)| vec!["ZREM".into(), k, a, b]),
        (key(), 0u32..300).prop_map(|(k, i)| vec!["ZADD".into(), k, (i % 7).to_string(), format!("m{i}")]),
        (key(), prop::option::of(0i64..4)).prop_map(|(k, c)| {
            let mut v = vec!["ZPOPMIN".into(), k];
            v.extend(c.map(|c| c.to_string()));
            v
        }),
        (key(), 0i64..4).prop_map(|(k, c)| vec!["ZPOPMAX".into(), k, c.to_string()]),
        (key(), key(), 1i64..3).prop_map(|(a, b, c)| vec!["ZMPOP".into(), "2".into(), a, b, "MAX".into(), "COUNT".into(), c.to_string()]),
        (key(), key()).prop_map(|(a, b)| vec!["BZPOPMIN".into(), a, b, "0".into()]),
        key().prop_map(|a| vec!["BZPOPMAX".into(), a, "1".into()]),
        (key(), key(), 1i64..3).prop_map(|(a, b, c)| vec!["BZMPOP".into(), "0".into(), "2".into(), a, b, "MIN".into(), "COUNT".into(), c.to_string()]),
        (key(), key(), -2i64..3).prop_map(|(d, s, a)| vec!["ZRANGESTORE".into(), d, s, a.to_string(), "-1".into()]),
        (key(), key(), key()).prop_map(|(d, a, b)| vec!["ZUNIONSTORE".into(), d, "2".into(), a, b, "WEIGHTS".into(), "2".into(), "0.5".into()]),
        (key(), key(), key()).prop_map(|(d, a, b)| vec!["ZINTERSTORE".into(), d, "2".into(), a, b, "AGGREGATE".into(), "MAX".into()]),
        (key(), key(), key()).prop_map(|(d, a, b)| vec!["ZDIFFSTORE".into(), d, "2".into(), a, b]),
        (key(), -3i64..3, -3i64..3).prop_map(|(k, a, b)| vec!["ZREMRANGEBYRANK".into(), k, a.to_string(), b.to_string()]),
        (key(), score(), score()).prop_map(|(k, a, b)| vec!["ZREMRANGEBYSCORE".into(), k, a, b]),
        key().prop_map(|k| vec!["ZREMRANGEBYLEX".into(), k, "[b".into(), "+".into()]),
        key().prop_map(|k| vec!["ZRANDMEMBER".into(), k, "-3".into()]),
        (key(), 1i64..40).prop_map(|(k, n)| vec!["PEXPIRE".into(), k, n.to_string()]),
        (key(), key()).prop_map(|(a, b)| vec!["COPY".into(), a, b, "REPLACE".into()]),
    ]
}

fn bitmap_cmd() -> impl Strategy<Value = Vec<String>> {
    let field = || (prop::sample::select(&["i8", "u4", "i64", "u63", "i1"][..]), prop::sample::select(&["0", "5", "#2", "40"][..]));
    prop_oneof![
        (key(), 0u32..90, 0u8..2).prop_map(|(k, o, v)| vec!["SETBIT".into(), k, o.to_string(), v.to_string()]),
        (key(), field(), -200i64..200).prop_map(|(k, (t, o), v)| vec!["BITFIELD".into(), k, "SET".into(), t.into(), o.into(), v.to_string()]),
        (key(), prop::sample::select(&["WRAP", "SAT", "FAIL"][..]), field(), -200i64..200)
            .prop_map(|(k, m, (t, o), v)| { vec!["BITFIELD".into(), k, "OVERFLOW".into(), m.into(), "INCRBY".into(), t.into(), o.into(), v.to_string()] }),
        (prop::sample::select(&["AND", "OR", "XOR", "NOT"][..]), key(), key(), key()).prop_map(|(op, d, a, b)| {
            let mut c = vec!["BITOP".to_string(), op.into(), d, a];
            if op != "NOT" {
                c.push(b);
            }
            c
        }),
        (key(), small_val()).prop_map(|(k, v)| vec!["SET".into(), k, v]),
        (key(), small_val()).prop_map(|(k, v)| vec!["APPEND".into(), k, v]),
        (key(), 1i64..40).prop_map(|(k, n)| vec!["PEXPIRE".into(), k, n.to_string()]),
        key().prop_map(|k| vec!["BITCOUNT".into(), k]),
    ]
}

fn hll_cmd() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        (key(), prop::collection::vec(0u32..3000, 0..4)).prop_map(|(k, v)| {
            let mut c = vec!["PFADD".to_string(), k];
            c.extend(v.into_iter().map(|i| format!("e{i}")));
            c
        }),
        // A run of elements: long sparse strings and promotion to dense.
        (key(), 0u32..3000, 50u32..600).prop_map(|(k, from, n)| {
            let mut c = vec!["PFADD".to_string(), k];
            c.extend((from..from + n).map(|i| format!("m{i}")));
            c
        }),
        key().prop_map(|k| vec!["PFCOUNT".into(), k]),
        (key(), key()).prop_map(|(a, b)| vec!["PFCOUNT".into(), a, b]),
        (key(), key(), key()).prop_map(|(d, a, b)| vec!["PFMERGE".into(), d, a, b]),
        (key(), small_val()).prop_map(|(k, v)| vec!["APPEND".into(), k, v]),
        (key(), 1i64..40).prop_map(|(k, n)| vec!["PEXPIRE".into(), k, n.to_string()]),
        (key(), key()).prop_map(|(a, b)| vec!["COPY".into(), a, b, "REPLACE".into()]),
    ]
}

fn key_cmd() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        (key(), small_val()).prop_map(|(k, v)| vec!["SET".into(), k, v]),
        (key(), field(), small_val()).prop_map(|(k, f, v)| vec!["HSET".into(), k, f, v]),
        key().prop_map(|k| vec!["DEL".into(), k]),
        (key(), key()).prop_map(|(a, b)| vec!["UNLINK".into(), a, b]),
        (key(), 1i64..3).prop_map(|(k, s)| vec!["EXPIRE".into(), k, s.to_string()]),
        (key(), 1i64..60, prop::sample::select(&["NX", "XX", "GT", "LT"][..])).prop_map(|(k, n, f)| vec!["PEXPIRE".into(), k, n.to_string(), f.into()]),
        (key(), -10i64..60).prop_map(|(k, d)| vec!["PEXPIREAT".into(), k, (1_700_000_000_000i64 + d).to_string()]),
        key().prop_map(|k| vec!["PERSIST".into(), k]),
        (key(), key()).prop_map(|(a, b)| vec!["RENAME".into(), a, b]),
        (key(), key()).prop_map(|(a, b)| vec!["RENAMENX".into(), a, b]),
        (key(), key()).prop_map(|(a, b)| vec!["COPY".into(), a, b, "REPLACE".into()]),
        (key(), key(), 0u8..3).prop_map(|(a, b, d)| vec!["COPY".into(), a, b, "DB".into(), d.to_string()]),
        (0u8..3).prop_map(|d| vec!["SELECT".into(), d.to_string()]),
        Just(vec!["FLUSHDB".to_string()]),
        key().prop_map(|k| vec!["TTL".into(), k]),
        Just(vec!["SCAN".to_string(), "0".into()]),
        Just(vec!["RANDOMKEY".to_string()]),
    ]
}

fn stream_id() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0u64..40, 0u64..3).prop_map(|(m, q)| format!("{m}-{q}")),
        1 => (0u64..40).prop_map(|m| format!("{m}-*")),
        1 => Just("*".to_string()),
    ]
}
fn stream_key() -> impl Strategy<Value = String> {
    prop::sample::select(&["s", "t"][..]).prop_map(String::from)
}
fn stream_group() -> impl Strategy<Value = String> {
    prop::sample::select(&["g1", "g2"][..]).prop_map(String::from)
}
fn stream_consumer() -> impl Strategy<Value = String> {
    prop::sample::select(&["c1", "c2", "c3"][..]).prop_map(String::from)
}

fn stream_cmd() -> impl Strategy<Value = Vec<String>> {
    let trim = prop_oneof![
        Just(vec![]),
        (prop::sample::select(&["~", "="][..]), 0u64..6).prop_map(|(a, n)| vec!["MAXLEN".into(), a.into(), n.to_string()]),
        (prop::sample::select(&["~", "="][..]), 0u64..30).prop_map(|(a, n)| vec!["MINID".into(), a.into(), n.to_string()]),
        (0u64..6, 1u64..4).prop_map(|(n, l)| vec!["MAXLEN".into(), "~".into(), n.to_string(), "LIMIT".into(), l.to_string()]),
    ];
    prop_oneof![
        6 => (stream_key(), trim, stream_id(), field(), small_val()).prop_map(|(k, t, id, f, v)| {
            let mut c = vec!["XADD".to_string(), k];
            c.extend(t);
            c.extend([id, f, v]);
            c
        }),
        2 => (stream_key(), (0u64..40, 0u64..3).prop_map(|(m, q)| format!("{m}-{q}"))).prop_map(|(k, id)| vec!["XDEL".into(), k, id]),
        1 => (stream_key(), prop::sample::select(&["~", "="][..]), 0u64..5).prop_map(|(k, a, n)| vec!["XTRIM".into(), k, "MAXLEN".into(), a.into(), n.to_string()]),
        1 => (stream_key(), prop::sample::select(&["~", "="][..]), 0u64..30).prop_map(|(k, a, n)| vec!["XTRIM".into(), k, "MINID".into(), a.into(), n.to_string()]),
        2 => (stream_key(), stream_group(), prop::sample::select(&["$", "0", "5"][..])).prop_map(|(k, g, id)| vec!["XGROUP".into(), "CREATE".into(), k, g, id.into(), "MKSTREAM".into()]),
        1 => (stream_key(), stream_group(), prop::sample::select(&["$", "0", "7-0"][..])).prop_map(|(k, g, id)| vec!["XGROUP".into(), "SETID".into(), k, g, id.into()]),
        1 => (stream_key(), stream_group()).prop_map(|(k, g)| vec!["XGROUP".into(), "DESTROY".into(), k, g]),
        1 => (stream_key(), stream_group(), stream_consumer(), prop::sample::select(&["CREATECONSUMER", "DELCONSUMER"][..])).prop_map(|(k, g, c, s)| vec!["XGROUP".into(), s.into(), k, g, c]),
        5 => (stream_key(), stream_group(), stream_consumer(), prop::sample::select(&[">", ">", "0", "5-0"][..]), prop::sample::select(&["", "NOACK", "COUNT", "BLOCK"][..])).prop_map(|(k, g, c, id, o)| {
            let mut v = vec!["XREADGROUP".to_string(), "GROUP".into(), g, c];
            match o {
                "NOACK" => v.push("NOACK".into()),
                "COUNT" => v.extend(["COUNT".to_string(), "2".into()]),
                // Blocks when nothing is new; served (and its group changes logged) by a
                // later XADD from another client.
                "BLOCK" => v.extend(["BLOCK".to_string(), "0".into()]),
                _ => {}
            }
            v.extend(["STREAMS".to_string(), k, id.into()]);
            v
        }),
        2 => (stream_key(), stream_group(), (0u64..40, 0u64..3).prop_map(|(m, q)| format!("{m}-{q}"))).prop_map(|(k, g, id)| vec!["XACK".into(), k, g, id]),
        3 => (stream_key(), stream_group(), stream_consumer(), prop::sample::select(&["0", "10", "100000"][..]), (0u64..40, 0u64..3).prop_map(|(m, q)| format!("{m}-{q}")), prop::sample::select(&["", "FORCE", "JUSTID", "IDLE", "RETRYCOUNT", "LASTID"][..])).prop_map(|(k, g, c, idle, id, o)| {
            let mut v = vec!["XCLAIM".to_string(), k, g, c, idle.into(), id];
            match o {
                "IDLE" => v.extend(["IDLE".to_string(), "5".into()]),
                "RETRYCOUNT" => v.extend(["RETRYCOUNT".to_string(), "7".into()]),
                "LASTID" => v.extend(["LASTID".to_string(), "30-0".into()]),
                "" => {}
                o => v.push(o.into()),
            }
            v
        }),
        2 => (stream_key(), stream_group(), stream_consumer(), prop::sample::select(&["0", "10"][..]), prop::sample::select(&["", "JUSTID"][..])).prop_map(|(k, g, c, idle, o)| {
            let mut v = vec!["XAUTOCLAIM".to_string(), k, g, c, idle.into(), "0".into(), "COUNT".into(), "2".into()];
            if !o.is_empty() {
                v.push(o.into());
            }
            v
        }),
        1 => (stream_key(), (0u64..60)).prop_map(|(k, m)| vec!["XSETID".into(), k, format!("{m}-0")]),
        1 => stream_key().prop_map(|k| vec!["XINFO".into(), "STREAM".into(), k, "FULL".into()]),
        1 => (stream_key(), stream_key()).prop_map(|(a, b)| vec!["COPY".into(), a, b, "REPLACE".into()]),
        1 => (stream_key(), 1i64..40).prop_map(|(k, n)| vec!["PEXPIRE".into(), k, n.to_string()]),
        1 => prop::sample::select(&["2", "3", "100"][..]).prop_map(|n| vec!["CONFIG".into(), "SET".into(), "stream-node-max-entries".into(), n.into()]),
    ]
}

fn multi_cmd() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        Just(vec!["MULTI".to_string()]),
        Just(vec!["EXEC".to_string()]),
        Just(vec!["DISCARD".to_string()]),
        key().prop_map(|k| vec!["WATCH".into(), k]),
        string_cmd(),
        hash_cmd(),
        Just(vec!["NOSUCHCMD".to_string()]),
        key().prop_map(|k| vec!["INCR".into(), k, "extra".into()]),
    ]
}

fn list_cmd() -> impl Strategy<Value = Vec<String>> {
    let el = || prop::sample::select(&["a", "b", "c", "", "1"][..]).prop_map(String::from);
    let side = || prop::sample::select(&["LEFT", "RIGHT"][..]).prop_map(String::from);
    prop_oneof![
        3 => (key(), el(), el()).prop_map(|(k, a, b)| vec!["RPUSH".into(), k, a, b]),
        3 => (key(), el()).prop_map(|(k, a)| vec!["LPUSH".into(), k, a]),
        1 => (key(), el()).prop_map(|(k, a)| vec!["RPUSHX".into(), k, a]),
        2 => (key(), prop::option::of(0i64..4)).prop_map(|(k, c)| { let mut v = vec!["LPOP".into(), k]; v.extend(c.map(|c| c.to_string())); v }),
        1 => (key(), 0i64..4).prop_map(|(k, c)| vec!["RPOP".into(), k, c.to_string()]),
        1 => (key(), -3i64..3, el()).prop_map(|(k, i, e)| vec!["LSET".into(), k, i.to_string(), e]),
        1 => (key(), el(), el()).prop_map(|(k, p, e)| vec!["LINSERT".into(), k, "BEFORE".into(), p, e]),
        1 => (key(), -2i64..3, el()).prop_map(|(k, c, e)| vec!["LREM".into(), k, c.to_string(), e]),
        1 => (key(), -3i64..3, -3i64..3).prop_map(|(k, a, b)| vec!["LTRIM".into(), k, a.to_string(), b.to_string()]),
        2 => (key(), key(), side(), side()).prop_map(|(a, b, x, y)| vec!["LMOVE".into(), a, b, x, y]),
        1 => (key(), key()).prop_map(|(a, b)| vec!["RPOPLPUSH".into(), a, b]),
        1 => (key(), key(), 1i64..3).prop_map(|(a, b, c)| vec!["LMPOP".into(), "2".into(), a, b, "RIGHT".into(), "COUNT".into(), c.to_string()]),
        2 => (key(), key()).prop_map(|(a, b)| vec!["BLPOP".into(), a, b, "0".into()]),
        1 => key().prop_map(|a| vec!["BRPOP".into(), a, "1".into()]),
        1 => (key(), key(), side(), side()).prop_map(|(a, b, x, y)| vec!["BLMOVE".into(), a, b, x, y, "0".into()]),
        1 => (key(), key()).prop_map(|(a, b)| vec!["BLMPOP".into(), "0".into(), "2".into(), a, b, "LEFT".into(), "COUNT".into(), "2".into()]),
        // SORT … STORE replicates as itself; BY/GET read weights written by SET below.
        1 => (key(), key(), prop::sample::select(&["ALPHA", "ALPHA DESC", "BY nosort", "ALPHA LIMIT 1 2", "BY x* ALPHA GET x* GET #"][..])).prop_map(|(a, d, o)| {
            let mut v = vec!["SORT".to_string(), a];
            v.extend(o.split(' ').map(String::from));
            v.extend(["STORE".to_string(), d]);
            v
        }),
        1 => Just(vec!["MULTI".to_string()]),
        1 => Just(vec!["EXEC".to_string()]),
        1 => (key(), 1i64..40).prop_map(|(k, n)| vec!["PEXPIRE".into(), k, n.to_string()]),
        1 => (key(), key()).prop_map(|(a, b)| vec!["COPY".into(), a, b, "REPLACE".into()]),
        1 => (key(), key()).prop_map(|(a, b)| vec!["RENAME".into(), a, b]),
        1 => key().prop_map(|k| vec!["SET".into(), k, "x".into()]),
    ]
}

/// A Lua string literal.
fn lua_str(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// Scripts whose writes are commands of the other families, called and pcalled, with
/// branches on math.random and on what a call returned, some ending in an error after
/// writing (Redis keeps the writes made before the error; so must the effects).
fn script_cmd() -> impl Strategy<Value = Vec<String>> {
    let call = (prop_oneof![string_cmd(), hash_cmd(), set_cmd(), zset_cmd(), list_cmd(), key_cmd()], any::<bool>());
    (prop::collection::vec(call, 1..6), 0u8..4, key()).prop_map(|(calls, tail, k)| {
        let mut body = String::new();
        for (c, pcall) in calls {
            let args: Vec<String> = c.iter().map(|a| lua_str(a)).collect();
            body.push_str(&format!("local r = redis.{}({}) ", if pcall { "pcall" } else { "call" }, args.join(", ")));
        }
        match tail {
            0 => body.push_str("if math.random(2) == 1 then redis.call('incr', KEYS[1]) end return 1"),
            1 => body.push_str("error('stop after writing')"),
            2 => body.push_str("if type(r) == 'table' then redis.call('lpush', KEYS[1] .. 'l', 'table') end return r"),
            _ => body.push_str("return redis.call('incrbyfloat', KEYS[1], '0.25')"),
        }
        vec!["EVAL".to_string(), body, "1".to_string(), k]
    })
}

/// Three clients, so blocking commands wait and are served by other clients'
/// writes (their effects come in REC_UNBLOCKED records); deadlines fire as REC_UNBLOCK.
fn check_clients(steps: &[(u64, Step)]) -> Result<(), TestCaseError> {
    use memoria_core::protocol::batch::{self, BatchWriter, OutputReader};
    let mut e = Engine::new(42);
    let mut now_ms: i64 = 1_700_000_000_000;
    let mut effects = Vec::new();
    let mut run = |e: &mut Engine, b: &BatchWriter, now_ms: i64, seed: u64| {
        let out = e.execute(&b.buf, now_ms * 1000, seed);
        for rec in OutputReader::new(&out) {
            effects.extend_from_slice(rec.effects);
        }
        out
    };
    for (i, (client, st)) in steps.iter().enumerate() {
        let mut b = BatchWriter::new();
        match st {
            Step::Cmd(args) => {
                b.begin(batch::REC_COMMAND, *client);
                memoria_core::protocol::resp::encode_command(&mut b.buf, args);
                b.end();
            }
            Step::Sleep(ms) => now_ms += ms,
            Step::DumpRestore { src, dst, ttl, opts } => {
                let mut d = BatchWriter::new();
                d.begin(batch::REC_COMMAND, *client);
                memoria_core::protocol::resp::encode_command(&mut d.buf, &["DUMP", src.as_str()]);
                d.end();
                // The DUMP runs as a batch of its own (its lazy expiry may write).
                let out = run(&mut e, &d, now_ms, i as u64);
                let reply = OutputReader::new(&out).find(|r| r.client == *client).map(|r| r.reply.to_vec()).unwrap_or_default();
                if let Some(args) = restore_of(&reply, dst, ttl, opts) {
                    b.begin(batch::REC_COMMAND, *client);
                    memoria_core::protocol::resp::encode_command(&mut b.buf, &args);
                    b.end();
                }
            }
            // A tick also fires every client's deadline (blocked or not: harmless).
            Step::Tick => {
                b.record(batch::REC_TICK, 0, b"");
                for c in 1..=3 {
                    b.record(batch::REC_UNBLOCK, c, b"");
                }
            }
        }
        run(&mut e, &b, now_ms, i as u64);
    }
    let mut replica = Engine::new(99);
    let applied = replica.apply(&effects, (now_ms + 1_000_000) * 1000);
    prop_assert!(applied.is_ok(), "apply failed: {:?}", applied);
    prop_assert_eq!(replica.digest(), e.digest(), "digest differs");
    Ok(())
}

fn steps(cmd: BoxedStrategy<Vec<String>>) -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![8 => cmd.prop_map(Step::Cmd), 1 => (1i64..30).prop_map(Step::Sleep), 1 => Just(Step::Tick)];
    prop::collection::vec(step, 1..60)
}

/// Steps spread over three clients (for commands that block).
fn client_steps(cmd: BoxedStrategy<Vec<String>>) -> impl Strategy<Value = Vec<(u64, Step)>> {
    steps(cmd)
        .prop_flat_map(|v| {
            let n = v.len();
            (Just(v), prop::collection::vec(1u64..4, n))
        })
        .prop_map(|(v, c)| c.into_iter().zip(v).collect::<Vec<_>>())
}

/// Runs the steps on a primary, replays its effects on a fresh engine, compares digests.
fn check(steps: &[Step]) -> Result<(), TestCaseError> {
    let mut h = H::new();
    for s in steps {
        match s {
            Step::Cmd(args) => {
                h.raw(args);
            }
            Step::Sleep(ms) => h.advance(*ms),
            Step::Tick => h.tick(),
            Step::DumpRestore { src, dst, ttl, opts } => {
                let reply = h.raw(&["DUMP", src.as_str()]);
                if let Some(args) = restore_of(&reply, dst, ttl, opts) {
                    h.raw(&args);
                }
            }
        }
    }
    let mut replica = Engine::new(99);
    // The replica applies at a later time than the primary ran: expiry is the primary's call.
    let applied = replica.apply(&h.effects, (h.now_ms + 1_000_000) * 1000);
    prop_assert!(applied.is_ok(), "apply failed: {:?}\neffects: {:?}", applied, h.effect_lines());
    prop_assert_eq!(replica.digest(), h.e.digest(), "digest differs; effects: {:?}", h.effect_lines());
    // A snapshot of the primary loads into the same data set.
    let mut restored = Engine::new(7);
    let (mut db, mut cursor) = (0, 0);
    loop {
        let c = h.e.dump(db, cursor, 4096);
        restored.load(&c.data).map_err(TestCaseError::fail)?;
        if c.done {
            break;
        }
        (db, cursor) = (c.next_db, c.next_cursor);
    }
    prop_assert_eq!(restored.digest(), h.e.digest(), "digest of the snapshot differs");
    Ok(())
}

fn geo_cmd() -> impl Strategy<Value = Vec<String>> {
    let member = || prop::sample::select(&["a", "b", "c", "d"][..]).prop_map(String::from);
    // Points a few km apart around (13.36, 38.11), one on the antimeridian.
    let lon = || prop::sample::select(&["13.36", "13.37", "13.4", "180", "-180", "13.361389"][..]).prop_map(String::from);
    let lat = || prop::sample::select(&["38.11", "38.12", "38.2", "85.05112878", "0"][..]).prop_map(String::from);
    let opt = || prop::sample::select(&["NX", "XX", "CH"][..]).prop_map(String::from);
    let radius = || prop::sample::select(&["1", "5", "50", "20000"][..]).prop_map(String::from);
    let sort = || prop::sample::select(&["ASC", "DESC", "COUNT 1", "COUNT 2 ANY", "COUNT 3 DESC"][..]).prop_map(String::from);
    let words = |s: String| s.split(' ').map(String::from).collect::<Vec<String>>();
    prop_oneof![
        (key(), lon(), lat(), member()).prop_map(|(k, x, y, m)| vec!["GEOADD".into(), k, x, y, m]),
        (key(), opt(), lon(), lat(), member(), lon(), lat(), member()).prop_map(|(k, o, x, y, m, x2, y2, m2)| vec!["GEOADD".into(), k, o, x, y, m, x2, y2, m2]),
        (key(), key(), lon(), lat(), radius(), sort(), prop::bool::ANY).prop_map(move |(d, s, x, y, r, o, dist)| {
            let mut v = vec!["GEOSEARCHSTORE".into(), d, s, "FROMLONLAT".into(), x, y, "BYRADIUS".into(), r, "km".into()];
            v.extend(words(o));
            if dist {
                v.push("STOREDIST".into());
            }
            v
        }),
        (key(), key(), member(), radius(), sort()).prop_map(move |(d, s, m, r, o)| {
            let mut v = vec!["GEOSEARCHSTORE".into(), d, s, "FROMMEMBER".into(), m, "BYBOX".into(), r.clone(), r, "km".into()];
            v.extend(words(o));
            v
        }),
        (key(), lon(), lat(), radius(), prop::sample::select(&["STORE", "STOREDIST"][..]), key()).prop_map(|(s, x, y, r, st, d)| vec![
            "GEORADIUS".into(),
            s,
            x,
            y,
            r,
            "km".into(),
            st.into(),
            d
        ]),
        (key(), member(), radius(), key()).prop_map(|(s, m, r, d)| vec!["GEORADIUSBYMEMBER".into(), s, m, r, "km".into(), "STOREDIST".into(), d]),
        (key(), member()).prop_map(|(k, m)| vec!["ZREM".into(), k, m]),
        (key(), 1i64..40).prop_map(|(k, n)| vec!["PEXPIRE".into(), k, n.to_string()]),
        (key(), small_val()).prop_map(|(k, v)| vec!["SET".into(), k, v]),
    ]
}

/// Values of every family, copied between keys by DUMP and RESTORE with every option:
/// relative and absolute TTLs (some already past), REPLACE over live, expiring and
/// missing keys, IDLETIME and FREQ.
fn dump_restore_steps() -> impl Strategy<Value = Vec<Step>> {
    let family = prop_oneof![string_cmd(), hash_cmd(), set_cmd(), zset_cmd(), list_cmd(), key_cmd(), stream_cmd(), hll_cmd()];
    let ttl = prop_oneof![
        Just(("0".to_string(), false)),
        (1i64..50).prop_map(|t| (t.to_string(), false)),
        (-20i64..50).prop_map(|d| ((1_700_000_000_000i64 + d).to_string(), true)),
    ];
    let opts = (ttl, any::<bool>(), prop::sample::select(&["", "IDLETIME 5", "FREQ 3"][..]));
    let copy = (prop_oneof![key(), stream_key()], prop_oneof![key(), stream_key()], opts).prop_map(|(src, dst, ((ttl, abs), replace, extra))| {
        let mut opts: Vec<String> = Vec::new();
        if abs {
            opts.push("ABSTTL".into());
        }
        if replace {
            opts.push("REPLACE".into());
        }
        opts.extend(extra.split(' ').filter(|w| !w.is_empty()).map(String::from));
        Step::DumpRestore { src, dst, ttl, opts }
    });
    let step = prop_oneof![6 => family.prop_map(Step::Cmd), 3 => copy, 1 => (1i64..30).prop_map(Step::Sleep), 1 => Just(Step::Tick)];
    prop::collection::vec(step, 1..60)
}

fn cases() -> u32 {
    std::env::var("MEMORIA_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn strings(s in steps(string_cmd().boxed())) { check(&s)?; }

    #[test]
    fn hashes(s in steps(hash_cmd().boxed())) { check(&s)?; }

    #[test]
    fn hash_field_expiry(s in steps(hash_ttl_cmd().boxed())) { check(&s)?; }

    #[test]
    fn sets(s in steps(set_cmd().boxed())) { check(&s)?; }

    #[test]
    fn zsets(s in client_steps(zset_cmd().boxed())) { check_clients(&s)?; }

    #[test]
    fn geo(s in steps(geo_cmd().boxed())) { check(&s)?; }

    #[test]
    fn bitmaps(s in steps(bitmap_cmd().boxed())) { check(&s)?; }

    #[test]
    fn hll(s in steps(hll_cmd().boxed())) { check(&s)?; }

    #[test]
    fn keyspace(s in steps(key_cmd().boxed())) { check(&s)?; }

    #[test]
    fn transactions(s in steps(multi_cmd().boxed())) { check(&s)?; }

    #[test]
    fn lists(s in client_steps(list_cmd().boxed())) { check_clients(&s)?; }

    #[test]
    fn streams(s in client_steps(stream_cmd().boxed())) { check_clients(&s)?; }

    #[test]
    fn scripts(s in steps(script_cmd().boxed())) { check(&s)?; }

    #[test]
    fn dump_restore(s in dump_restore_steps()) { check(&s)?; }
}
