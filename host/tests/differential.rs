//! Differential test: the same randomised command sequences run against Memoria and a
//! real redis-server (Debian's 7.0.x) started by the test; every reply must be identical,
//! byte for byte, error texts included — after the normalisations listed in
//! `DELIBERATE_DIFFERENCES`, which is the one place where a difference is accepted.
//!
//! Cases per family: MEMORIA_DIFF_CASES (default 1000; e2e/test-all runs 2000).

mod common;

use common::{Memoria, Raw, RedisServer};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Every accepted difference, with its reason. `normalize` implements exactly these.
pub const DELIBERATE_DIFFERENCES: &[(&str, &str)] = &[
    ("KEYS, SCAN, HSCAN (hashtable), HKEYS/HVALS/HGETALL (hashtable encoding)", "element order follows each server's own hash table; compared as multisets"),
    (
        "SCAN/HSCAN cursor values",
        "cursors are positions in each server's own table; tests scan with a COUNT that finishes in one call and compare the final cursor (0)",
    ),
    ("CONFIG GET with several matches", "Redis lists parameters in its dict's order; compared as a set of pairs"),
    ("RANDOMKEY, HRANDFIELD", "random choices come from different generators; compared by shape (type, length, membership)"),
    (
        "SMEMBERS, SINTER, SUNION, SDIFF, SSCAN of hashtable-encoded sets",
        "member order follows each server's own hash table; compared as multisets (intsets are sorted on both, checked exactly by core/tests/cmd_sets.rs)",
    ),
    (
        "SPOP, SRANDMEMBER",
        "random choices come from different generators; compared by shape (a member or nil, the number of members); after an SPOP the test compares SCARD and deletes the key on both servers, since their sets now differ",
    ),
    (
        "HyperLogLog strings corrupted to end in half an XZERO opcode",
        "Redis reads past the string's end (its terminator, later the byte its own truncated write left there); Memoria reads a zero. Both report INVALIDOBJ once the runs stop adding up; the bytes written before that can differ. Not generated",
    ),
    (
        "SRANDMEMBER/HRANDFIELD with a count below -2^27, or a negative count whose reply would pass 512 MiB",
        "Redis builds a reply of |count| members; Memoria refuses it with Redis's range error (the reply could not fit in the engine's memory); not generated",
    ),
    ("PTTL, PEXPIRETIME, EXPIRETIME", "the two servers run each command at slightly different instants; compared as the class (-2, -1 or positive)"),
    (
        "INCRBYFLOAT/HINCRBYFLOAT results",
        "Redis computes in 80-bit long double and prints 17 decimals, Memoria computes in f64 and prints the shortest round-trip digits (integral sums below 2^64 are exact in both); they agree when operands are exact in binary (halves, quarters, integers), which is what the tests use: 1.55 - 2 gives -0.45 in Redis and -0.44999999999999996 in Memoria",
    ),
    (
        "INCRBYFLOAT/HINCRBYFLOAT with huge magnitudes",
        "Redis's long double reaches ±1.2e4932 and prints its own digits; Memoria's f64 ends at ±1.8e308 (larger values: 'value is not a valid float') and prints the shortest round-trip digits; not generated",
    ),
    ("HELLO id, CLIENT ID/LIST/INFO, INFO, TIME, COMMAND INFO/DOCS details", "server-specific values; not generated"),
    (
        "LCS whose table of (len_a + 1) * (len_b + 1) u32 cells would pass the engine's 3 GiB (proto-max-bulk-len raised past that)",
        "Redis allocates the table (and spends O(len_a * len_b) filling it); Memoria refuses it with Redis's own 'Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len' error (the wasm32 engine ends at 4 GiB); not generated",
    ),
    ("ZRANDMEMBER", "random choices come from different generators; compared by shape (type, length) and membership"),
    (
        "ZRANDMEMBER with a count below -2^27, or a negative count whose reply would pass 512 MiB",
        "Redis builds the whole (huge) reply; Memoria refuses it with the out-of-range error rather than exhausting memory; not generated",
    ),
    ("ZSCAN (skiplist encoding)", "element order follows each server's own hash table; compared as a multiset of pairs"),
    (
        "GEO distances printed to 17 digits (scores stored by GEORADIUS/GEOSEARCHSTORE … STOREDIST, read back)",
        "Memoria's sin/cos/asin round correctly; glibc's, which redis-server uses, are one ulp off in about 0.1 % of calls, so a distance's last bits can differ (a STOREDIST score read back: 3 of 30k replies replayed by core/tests/geo_oracle.rs; never seen in the 4 decimals of GEODIST/WITHDIST); the GEO family reads STOREDIST destinations without their scores",
    ),
    (
        "COMMAND GETKEYS of GEORADIUS/GEORADIUSBYMEMBER with a second STORE or STOREDIST",
        "Redis's key specs name the key after the first of each; the command writes the last one given, which Memoria also lists (the key tracker, ACL and slot checks must see it); not generated",
    ),
    (
        "BYLEX ranges over members of different scores in a skiplist-encoded set",
        "undefined in Redis (its answer depends on its random skiplist levels); lex commands are generated on a set whose members share one score",
    ),
    (
        "PUBSUB CHANNELS, UNSUBSCRIBE/PUNSUBSCRIBE/SUNSUBSCRIBE without arguments",
        "Redis lists channels (and unsubscribes from all of them) in its dict's order; compared as sets (the running counts of the confirmations depend on that order)",
    ),
    ("pmessages of one PUBLISH to one client through several patterns", "Redis walks its pattern dict in hash order; compared as a multiset per publish"),
    ("the HELLO reply in the pub/sub and scripting families", "it carries the connection id; the families only check that HELLO succeeded"),
    ("FUNCTION LIST with several libraries", "Redis lists libraries in its dict's order, Memoria by name; compared as a set"),
    (
        "FUNCTION DUMP with several libraries",
        "Redis writes libraries in its dict's order, and LZF-compresses code where that saves space; Memoria writes them by name, plain. Each restores on the other (`function_dump_restores_across_servers`); DUMP itself is compared with no library, RESTORE's payloads hold one library",
    ),
    (
        "scripts that run past busy-reply-threshold where they cannot yield",
        "Redis lets any script run and answers -BUSY to other clients until SCRIPT KILL; Memoria does that for a script that can yield (core/tests/busy_script.rs, e2e/tests/scripting.rs), but a stretch that cannot (inside pcall, a metamethod, a sort comparator, a coroutine of the script's, or a script inside EXEC) ends with an error when its counted budget (busy-reply-threshold x 100k VM instructions) is spent; not generated",
    ),
    (
        "redis.set_repl(redis.REPL_NONE) and REPL_AOF/REPL_REPLICA",
        "Memoria logs every effect of a script whatever the flags (a write missing from the log would be lost on failover or differ on replicas); the flags are checked as Redis checks them",
    ),
    (
        "keyspace notifications (RESP3) to the client that ran the write",
        "Redis 7.0 writes the push before or after the reply depending on the command (HSET: after; SET, INCR, DEL: before); Memoria always writes it before; RESP3 lets pushes come on either side of a reply. For the writing client, replies and pushes are compared as two sequences",
    ),
    (
        "a failed CONFIG SET notify-keyspace-events after one with both `A` and `n`",
        "Redis 7.0 restores the parameters of a failed CONFIG SET from their rendered values, and its rendering drops `n` after `A`, so new-key events stop; Memoria leaves the value as it was. The pub/sub family sets `n` only without `A` (`KEn`); core/src/config.rs tests the rendering",
    ),
    (
        "OBJECT REFCOUNT of a COPY of a small integer",
        "Redis's COPY makes a fresh integer object (refcount 1); Memoria keeps every integer 0-9999 shared (2147483647), copied or not; refcounts are compared as '1 or shared'",
    ),
    (
        "pub/sub messages to the client running EXEC",
        "Redis 7.0 writes them inside the EXEC reply array (between its elements); Memoria writes them before the whole reply; not generated (the pub/sub family has no MULTI)",
    ),
    (
        "XADD with `*` (ids from the clock)",
        "each server's clock makes its own id; generated only on key `sauto`, XADD's reply compared by shape (`<ms>-<seq>`), reads of `sauto` by entry count",
    ),
    (
        "XPENDING idle times, XINFO CONSUMERS idle, XINFO STREAM FULL delivery and seen times",
        "the servers run each command at slightly different instants: idle times compared by class (below 50 s, below 10^9 ms, above), absolute times (> 10^12 ms) as a placeholder; min-idle arguments are 0 or far from any reachable idle time",
    ),
    (
        "XAUTOCLAIM COUNT too high for memory",
        "Redis answers 'Insufficient memory' when allocating COUNT ids fails on its machine; Memoria when COUNT exceeds 2^28 (4 GiB of ids); not generated between the two",
    ),
    (
        "ACL GETUSER/LIST command rules naming single commands (`-@all +@read +set -get`)",
        "categories are chosen by the same best-fit as Redis, but the single commands after them follow each server's command table (Redis: its hash table); host/tests/acl.rs compares only rules where at most one single command follows, and ACL CAT <category> as sets of the commands Memoria implements",
    ),
    (
        "CONFIG GET requirepass",
        "Memoria keeps only the SHA-256 of the default user's password (in the ACL user, replicated through the log), so it shows an empty value instead of the plaintext",
    ),
    (
        "ACL SETUSER selectors `(...)`, ACL LOAD/SAVE with an ACL file",
        "selectors are not supported (an error naming the modifier); there is no ACL file (users live in the log), so LOAD/SAVE answer Redis's no-ACL-file error",
    ),
    ("ACL LOG client-info and age-seconds", "server-specific values (connection ids, addresses, buffer sizes, timing); not compared"),
    (
        "ACL SETUSER/DELUSER/CONFIG SET requirepass on a replica",
        "Memoria replicates users through the log, so a replica refuses them with -READONLY (Redis changes the replica's own users)",
    ),
];

#[derive(Debug, Clone, PartialEq)]
enum V {
    Simple(Vec<u8>),
    Err(Vec<u8>),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Arr(Option<Vec<V>>),
    Other(Vec<u8>),
}

fn parse(b: &[u8]) -> (V, usize) {
    let end = b.windows(2).position(|w| w == b"\r\n").unwrap();
    let head = &b[1..end];
    let n = || std::str::from_utf8(head).unwrap().parse::<i64>().unwrap();
    match b[0] {
        b'+' => (V::Simple(head.to_vec()), end + 2),
        b'-' => (V::Err(head.to_vec()), end + 2),
        b':' => (V::Int(n()), end + 2),
        // RESP3 scalars compared by their exact text.
        b',' | b'_' | b'#' | b'(' => (V::Other(b[..end].to_vec()), end + 2),
        // A RESP3 verbatim string: compared as its exact text.
        b'=' => {
            let s = end + 2 + n() as usize;
            (V::Other(b[..s].to_vec()), s + 2)
        }
        // A RESP3 map: its pairs in order, tagged as a map.
        b'%' => {
            let mut p = end + 2;
            let mut items = vec![V::Other(b"%".to_vec())];
            for _ in 0..2 * n() {
                let (v, used) = parse(&b[p..]);
                items.push(v);
                p += used;
            }
            (V::Arr(Some(items)), p)
        }
        b'$' => {
            let l = n();
            if l < 0 {
                (V::Bulk(None), end + 2)
            } else {
                let s = end + 2;
                (V::Bulk(Some(b[s..s + l as usize].to_vec())), s + l as usize + 2)
            }
        }
        b'*' | b'~' | b'>' => {
            let l = n();
            if l < 0 {
                return (V::Arr(None), end + 2);
            }
            let mut p = end + 2;
            let mut items = Vec::new();
            for _ in 0..l {
                let (v, used) = parse(&b[p..]);
                items.push(v);
                p += used;
            }
            (V::Arr(Some(items)), p)
        }
        _ => (V::Other(b.to_vec()), b.len()),
    }
}

fn sort_flat(v: &mut V) {
    if let V::Arr(Some(items)) = v {
        items.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    }
}

fn sort_pairs(v: &mut V) {
    if let V::Arr(Some(items)) = v {
        let mut pairs: Vec<Vec<V>> = items.chunks(2).map(|c| c.to_vec()).collect();
        pairs.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        *items = pairs.into_iter().flatten().collect();
    }
}

/// Applies `DELIBERATE_DIFFERENCES` to one reply of `cmd`.
fn normalize(cmd: &[Vec<u8>], mut v: V) -> V {
    let name = String::from_utf8_lossy(&cmd[0]).to_ascii_lowercase();
    if matches!(v, V::Err(_)) {
        return v;
    }
    match name.as_str() {
        "keys" | "hkeys" | "hvals" | "smembers" | "sinter" | "sunion" | "sdiff" => sort_flat(&mut v),
        "hgetall" => sort_pairs(&mut v),
        "config" => sort_pairs(&mut v),
        "function" if cmd.len() >= 2 && cmd[1].eq_ignore_ascii_case(b"list") => sort_flat(&mut v),
        "scan" | "hscan" | "sscan" => {
            if let V::Arr(Some(items)) = &mut v
                && items.len() == 2
            {
                if name == "hscan" { sort_pairs(&mut items[1]) } else { sort_flat(&mut items[1]) }
            }
        }
        "object" if cmd.get(1).is_some_and(|s| s.eq_ignore_ascii_case(b"refcount")) => {
            if matches!(v, V::Int(1) | V::Int(2147483647)) {
                v = V::Simple(b"<1 or shared>".to_vec());
            }
        }
        "randomkey" => {
            v = match v {
                V::Bulk(Some(_)) => V::Simple(b"<some key>".to_vec()),
                other => other,
            }
        }
        "hrandfield" => {
            v = match v {
                V::Bulk(Some(_)) => V::Simple(b"<some field>".to_vec()),
                V::Arr(Some(items)) => V::Simple(format!("<{} items>", items.len()).into_bytes()),
                other => other,
            }
        }
        "spop" | "srandmember" => {
            v = match v {
                V::Bulk(Some(_)) => V::Simple(b"<some member>".to_vec()),
                V::Arr(Some(items)) => V::Simple(format!("<{} items>", items.len()).into_bytes()),
                other => other,
            }
        }
        "zrandmember" => {
            v = match v {
                V::Bulk(Some(m)) => V::Simple(if zset_member_known(&m) { b"<member>".to_vec() } else { m }),
                V::Arr(Some(items)) => {
                    let unknown: Vec<V> = items.iter().filter(|i| matches!(i, V::Bulk(Some(m)) if !zset_member_known(m))).cloned().collect();
                    V::Arr(Some(vec![V::Simple(format!("<{} items>", items.len()).into_bytes()), V::Arr(Some(unknown))]))
                }
                other => other,
            }
        }
        // HELLO's reply carries the connection id.
        "hello" => v = V::Simple(b"<hello>".to_vec()),
        "zscan" => {
            if let V::Arr(Some(items)) = &mut v
                && items.len() == 2
            {
                sort_pairs(&mut items[1])
            }
        }
        "xadd" if cmd.get(1).is_some_and(|k| k == b"sauto") => {
            if let V::Bulk(Some(id)) = &v {
                let t = String::from_utf8_lossy(id);
                let shape = t.split_once('-').is_some_and(|(a, b)| a.parse::<u64>().is_ok() && b.parse::<u64>().is_ok());
                v = V::Simple(if shape { b"<id>".to_vec() } else { id.clone() });
            }
        }
        "xrange" | "xrevrange" if cmd.get(1).is_some_and(|k| k == b"sauto") => {
            if let V::Arr(Some(items)) = &v {
                v = V::Simple(format!("<{} entries>", items.len()).into_bytes());
            }
        }
        "xpending" => {
            if let V::Arr(Some(items)) = &mut v {
                for it in items.iter_mut() {
                    if let V::Arr(Some(e)) = it
                        && e.len() == 4
                        && let V::Int(n) = e[2]
                    {
                        e[2] = V::Simple(idle_class(n).into());
                    }
                }
            }
        }
        "xinfo" => normalize_xinfo(&mut v, false),
        "pttl" | "pexpiretime" | "expiretime" => {
            if let V::Int(n) = v {
                v = V::Int(if n > 0 { 1 } else { n });
            }
        }
        _ => {}
    }
    v
}

/// Whether a ZRANDMEMBER item is one of the generated members or a score (membership is
/// what random replies are compared by).
fn zset_member_known(m: &[u8]) -> bool {
    ZMEMBERS.contains(&std::str::from_utf8(m).unwrap_or("\u{0}"))
        || m.starts_with(b"mem")
        || (!m.is_empty() && m.iter().all(|&c| c == b'x'))
        || std::str::from_utf8(m).is_ok_and(|t| t.parse::<f64>().is_ok() || t == "inf" || t == "-inf")
}

fn idle_class(n: i64) -> &'static str {
    if n < 50_000 {
        "<idle below 50s>"
    } else if n < 1_000_000_000 {
        "<idle below 1e9>"
    } else {
        "<idle above 1e9>"
    }
}

/// XINFO: `idle` values by class, absolute times (> 10^12 ms) as a placeholder.
fn normalize_xinfo(v: &mut V, after_idle: bool) {
    match v {
        V::Int(n) if after_idle => *v = V::Simple(idle_class(*n).into()),
        V::Int(n) if *n > 1_000_000_000_000 => *v = V::Simple(b"<time>".to_vec()),
        V::Arr(Some(items)) => {
            let mut prev_idle = false;
            for it in items.iter_mut() {
                normalize_xinfo(it, prev_idle);
                prev_idle = matches!(it, V::Bulk(Some(b)) if b == b"idle");
            }
        }
        _ => {}
    }
}

/// One redis-server and one Memoria per test (not in a static: statics are never
/// dropped, and the redis-server child would outlive the test process).
struct Servers {
    redis: RedisServer,
    memoria: Memoria,
}

/// A command for client 0 or client 1 (two connections per server, for WATCH races).
type Step = (u8, Vec<Vec<u8>>);

fn run_case(s: &Servers, steps: &[Step]) -> Result<(), TestCaseError> {
    let mut r = [Raw::connect(s.redis.port), Raw::connect(s.redis.port)];
    let mut m = [Raw::connect(s.memoria.port), Raw::connect(s.memoria.port)];
    for c in [&mut r[0], &mut m[0]] {
        c.cmd(&["FLUSHALL"]);
        c.cmd(&["CONFIG", "SET", "hash-max-listpack-entries", "128", "hash-max-listpack-value", "64"]);
        c.cmd(&["CONFIG", "SET", "set-max-intset-entries", "512", "hll-sparse-max-bytes", "3000"]);
        c.cmd(&["CONFIG", "SET", "zset-max-listpack-entries", "128", "zset-max-listpack-value", "64"]);
        c.cmd(&["CONFIG", "SET", "list-max-listpack-size", "-2"]);
        c.cmd(&["CONFIG", "SET", "stream-node-max-entries", "100", "stream-node-max-bytes", "4096"]);
    }
    let mut log = Vec::new();
    for (who, cmd) in steps {
        let who = *who as usize;
        let a = r[who].cmd(cmd);
        let b = m[who].cmd(cmd);
        let (va, vb) = (normalize(cmd, parse(&a).0), normalize(cmd, parse(&b).0));
        let shown: Vec<String> = cmd.iter().map(|x| String::from_utf8_lossy(x).into_owned()).collect();
        log.push(format!("c{who}> {}", shown.join(" ")));
        if va != vb {
            return Err(TestCaseError::fail(format!(
                "reply differs\nsequence:\n  {}\nredis:   {:?}\nmemoria: {:?}",
                log.join("\n  "),
                String::from_utf8_lossy(&a),
                String::from_utf8_lossy(&b)
            )));
        }
        // SPOP chose different members on each server: compare what is left by size, then
        // drop the key on both so later steps start equal again.
        if cmd.len() >= 2 && cmd[0].eq_ignore_ascii_case(b"spop") && !matches!(va, V::Err(_)) {
            let card: Vec<&[u8]> = vec![b"SCARD", &cmd[1]];
            let (ca, cb) = (r[who].cmd(&card), m[who].cmd(&card));
            if ca != cb {
                return Err(TestCaseError::fail(format!(
                    "SCARD after SPOP differs\nsequence:\n  {}\nredis: {:?}\nmemoria: {:?}",
                    log.join("\n  "),
                    String::from_utf8_lossy(&ca),
                    String::from_utf8_lossy(&cb)
                )));
            }
            let del: Vec<&[u8]> = vec![b"DEL", &cmd[1]];
            r[who].cmd(&del);
            m[who].cmd(&del);
        }
    }
    Ok(())
}

// ---------- generators ----------

fn s(x: &str) -> Vec<u8> {
    x.as_bytes().to_vec()
}

fn pick(xs: &'static [&'static str]) -> BoxedStrategy<Vec<u8>> {
    prop::sample::select(xs).prop_map(s).boxed()
}

fn key() -> BoxedStrategy<Vec<u8>> {
    pick(&["k1", "k2", "k3", "h1", "h2", "{t}a", "{t}b"])
}
fn field() -> BoxedStrategy<Vec<u8>> {
    pick(&["f1", "f2", "f3", "F1", ""])
}
fn int_arg() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        (-20i64..20).prop_map(|n| s(&n.to_string())),
        pick(&["0", "-0", "01", "+1", "abc", "", "1.5", " 1", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "100"]),
    ]
    .boxed()
}
fn value() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        (-1000i64..1000).prop_map(|n| s(&n.to_string())),
        "[a-z]{0,8}".prop_map(|x| s(&x)),
        pick(&["", "12345678901234567890", "-0", "007", "3.0", "1e3", "hello world", "9223372036854775807"]),
        (45usize..70).prop_map(|n| vec![b'x'; n]),
    ]
    .boxed()
}
fn float_arg() -> BoxedStrategy<Vec<u8>> {
    pick(&["0.5", "-0.25", "1.5", "3", "-2", "abc", "", "inf", "-inf", "nan", "1e3", "0x10", "2.0e1"])
}
fn lit(x: &'static str) -> BoxedStrategy<Vec<u8>> {
    Just(s(x)).boxed()
}
fn name(n: &'static str) -> BoxedStrategy<Vec<u8>> {
    // Commands are case-insensitive; exercise that.
    prop_oneof![Just(s(n)), Just(s(&n.to_ascii_lowercase()))].boxed()
}

fn cmd(parts: Vec<BoxedStrategy<Vec<u8>>>) -> BoxedStrategy<Vec<Vec<u8>>> {
    parts.prop_map(|v| v).boxed()
}

fn with_extra(base: BoxedStrategy<Vec<Vec<u8>>>, extras: BoxedStrategy<Vec<Vec<u8>>>) -> BoxedStrategy<Vec<Vec<u8>>> {
    (base, extras)
        .prop_map(|(mut a, b)| {
            a.extend(b);
            a
        })
        .boxed()
}

fn set_opts() -> BoxedStrategy<Vec<Vec<u8>>> {
    let opt = prop_oneof![
        pick(&["NX", "XX", "GET", "KEEPTTL", "nx", "get", "BOGUS"]).prop_map(|o| vec![o]),
        (pick(&["EX", "PX", "ex"]), pick(&["100", "1000", "0", "-5", "abc", "9223372036854775807"])).prop_map(|(a, b)| vec![a, b]),
        (pick(&["EXAT", "PXAT"]), pick(&["1", "99999999999", "0"])).prop_map(|(a, b)| vec![a, b]),
        Just(vec![s("EX")]),
    ];
    prop::collection::vec(opt, 0..3).prop_map(|v| v.into_iter().flatten().collect()).boxed()
}

fn string_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    prop_oneof![
        cmd(vec![name("GET"), key()]),
        with_extra(cmd(vec![name("SET"), key(), value()]), set_opts()),
        cmd(vec![name("SETNX"), key(), value()]),
        cmd(vec![name("SETEX"), key(), pick(&["100", "0", "-1", "abc"]), value()]),
        cmd(vec![name("PSETEX"), key(), pick(&["100000", "0", "x"]), value()]),
        cmd(vec![name("MGET"), key(), key(), key()]),
        cmd(vec![name("MSET"), key(), value(), key(), value()]),
        cmd(vec![name("MSET"), key(), value(), key()]),
        cmd(vec![name("MSETNX"), key(), value(), key(), value()]),
        cmd(vec![name("GETSET"), key(), value()]),
        cmd(vec![name("GETDEL"), key()]),
        with_extra(
            cmd(vec![name("GETEX"), key()]),
            prop_oneof![
                Just(vec![]),
                Just(vec![s("PERSIST")]),
                Just(vec![s("EX"), s("100")]),
                Just(vec![s("PXAT"), s("1")]),
                Just(vec![s("EX"), s("0")]),
                Just(vec![s("KEEPTTL")]),
                Just(vec![s("PERSIST"), s("EX"), s("5")])
            ]
            .boxed()
        ),
        cmd(vec![name("APPEND"), key(), value()]),
        cmd(vec![name("STRLEN"), key()]),
        cmd(vec![name("INCR"), key()]),
        cmd(vec![name("DECR"), key()]),
        cmd(vec![name("INCRBY"), key(), int_arg()]),
        cmd(vec![name("DECRBY"), key(), int_arg()]),
        // Floats get their own key holding small values: above 2^53 with a fraction,
        // long double and f64 print different digits (see DELIBERATE_DIFFERENCES).
        cmd(vec![name("INCRBYFLOAT"), lit("fk"), float_arg()]),
        cmd(vec![name("SET"), lit("fk"), pick(&["0", "1.5", "-3", "10", "abc", "2.50", "1e2"])]),
        cmd(vec![name("GET"), lit("fk")]),
        cmd(vec![name("APPEND"), lit("fk"), pick(&["x", "y"])]),
        cmd(vec![name("GETRANGE"), key(), int_arg(), int_arg()]),
        cmd(vec![name("SUBSTR"), key(), int_arg(), int_arg()]),
        cmd(vec![name("SETRANGE"), key(), pick(&["0", "3", "10", "-1", "abc", "536870912"]), value()]),
        cmd(vec![name("OBJECT"), pick(&["ENCODING", "encoding"]), key()]),
        cmd(vec![name("TYPE"), key()]),
        cmd(vec![name("HSET"), key(), field(), value()]),
        cmd(vec![name("GET")]),
        cmd(vec![name("SET"), key()]),
        with_extra(cmd(vec![name("LCS"), key(), key()]), lcs_opts()),
        cmd(vec![name("LCS"), key()]),
    ]
    .boxed()
}

/// LCS options: mostly valid combinations of IDX, WITHMATCHLEN and MINMATCHLEN, and LEN,
/// sometimes LEN with IDX, an unknown option, a bad or missing MINMATCHLEN value.
fn lcs_opts() -> BoxedStrategy<Vec<Vec<u8>>> {
    let opt = prop_oneof![
        4 => pick(&["IDX", "idx", "WITHMATCHLEN", "withmatchlen"]).prop_map(|o| vec![o]),
        1 => pick(&["LEN", "len", "BOGUS"]).prop_map(|o| vec![o]),
        2 => (pick(&["MINMATCHLEN", "minmatchlen"]), pick(&["0", "1", "2", "3", "5", "-1", "abc", "9223372036854775808"])).prop_map(|(a, b)| vec![a, b]),
        1 => Just(vec![s("MINMATCHLEN")]),
    ];
    prop::collection::vec(opt, 0..4).prop_map(|v| v.into_iter().flatten().collect()).boxed()
}

fn hash_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    prop_oneof![
        cmd(vec![name("HSET"), key(), field(), value()]),
        cmd(vec![name("HSET"), key(), field(), value(), field(), value()]),
        cmd(vec![name("HSET"), key(), field(), value(), field()]),
        (key(), 0u32..200).prop_map(|(k, i)| vec![s("HSET"), k, format!("field{i}").into_bytes(), s("v")]).boxed(),
        cmd(vec![name("HMSET"), key(), field(), value()]),
        cmd(vec![name("HSETNX"), key(), field(), value()]),
        cmd(vec![name("HGET"), key(), field()]),
        cmd(vec![name("HMGET"), key(), field(), field()]),
        cmd(vec![name("HDEL"), key(), field(), field()]),
        cmd(vec![name("HLEN"), key()]),
        cmd(vec![name("HSTRLEN"), key(), field()]),
        cmd(vec![name("HINCRBY"), key(), field(), int_arg()]),
        cmd(vec![name("HINCRBYFLOAT"), lit("fh"), pick(&["ff", "fg"]), float_arg()]),
        cmd(vec![name("HSET"), lit("fh"), pick(&["ff", "fg"]), pick(&["0", "1.5", "-3", "abc", "7"])]),
        cmd(vec![name("HGET"), lit("fh"), pick(&["ff", "fg"])]),
        cmd(vec![name("HKEYS"), key()]),
        cmd(vec![name("HVALS"), key()]),
        cmd(vec![name("HGETALL"), key()]),
        cmd(vec![name("HEXISTS"), key(), field()]),
        cmd(vec![name("HRANDFIELD"), key()]),
        cmd(vec![name("HRANDFIELD"), key(), int_arg()]),
        cmd(vec![name("HRANDFIELD"), key(), pick(&["2", "-3", "0"]), pick(&["WITHVALUES", "withvalues", "BAD"])]),
        cmd(vec![name("HSCAN"), key(), pick(&["0", "abc", "1x"]), pick(&["COUNT"]), pick(&["1000", "0"])]),
        cmd(vec![name("HSCAN"), key(), lit("0"), pick(&["MATCH"]), pick(&["f*", "*1", "[fF]?"]), pick(&["COUNT"]), pick(&["1000"])]),
        cmd(vec![name("OBJECT"), lit("ENCODING"), key()]),
        cmd(vec![name("SET"), key(), value()]),
        cmd(vec![name("CONFIG"), lit("SET"), pick(&["hash-max-listpack-entries", "hash-max-ziplist-value"]), pick(&["2", "4", "128"])]),
    ]
    .boxed()
}

fn member() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        3 => pick(&["1", "2", "3", "-1", "0", "a", "b", "c", "01", "", "9223372036854775807", "-9223372036854775808", "70000", "hello world"]),
        1 => (0u32..40).prop_map(|i| s(&i.to_string())),
    ]
    .boxed()
}

fn set_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    let members = || prop::collection::vec(member(), 1..4).boxed();
    prop_oneof![
        4 => with_extra(cmd(vec![name("SADD"), key()]), members()),
        2 => with_extra(cmd(vec![name("SREM"), key()]), members()),
        // Many integers: crosses set-max-intset-entries (set low by the runner below).
        1 => (key(), prop::collection::vec(0u32..600, 1..12)).prop_map(|(k, v)| {
            let mut c = vec![s("SADD"), k];
            c.extend(v.into_iter().map(|i| s(&i.to_string())));
            c
        }).boxed(),
        2 => cmd(vec![name("SMEMBERS"), key()]),
        1 => cmd(vec![name("SISMEMBER"), key(), member()]),
        1 => with_extra(cmd(vec![name("SMISMEMBER"), key()]), members()),
        1 => cmd(vec![name("SCARD"), key()]),
        1 => cmd(vec![name("SPOP"), key()]),
        1 => cmd(vec![name("SPOP"), key(), pick(&["0", "1", "2", "5", "100", "-1", "abc"])]),
        1 => cmd(vec![name("SPOP"), key(), lit("1"), lit("2")]),
        1 => cmd(vec![name("SRANDMEMBER"), key()]),
        1 => cmd(vec![name("SRANDMEMBER"), key(), pick(&["0", "1", "2", "5", "100", "-1", "-5", "abc", "-9223372036854775808"])]),
        2 => cmd(vec![name("SMOVE"), key(), key(), member()]),
        2 => with_extra(cmd(vec![name("SINTER"), key()]), prop::collection::vec(key(), 0..3).boxed()),
        1 => with_extra(cmd(vec![name("SINTERSTORE"), key(), key()]), prop::collection::vec(key(), 0..3).boxed()),
        1 => (1usize..4, prop::collection::vec(key(), 3), prop::option::of(pick(&["0", "1", "2", "-1", "x"]))).prop_map(|(n, ks, lim)| {
            let mut c = vec![s("SINTERCARD"), s(&n.to_string())];
            c.extend(ks.into_iter().take(n));
            if let Some(l) = lim {
                c.push(s("LIMIT"));
                c.push(l);
            }
            c
        }).boxed(),
        1 => cmd(vec![name("SINTERCARD"), pick(&["0", "abc", "5"]), key()]),
        2 => with_extra(cmd(vec![name("SUNION"), key()]), prop::collection::vec(key(), 0..3).boxed()),
        1 => with_extra(cmd(vec![name("SUNIONSTORE"), key(), key()]), prop::collection::vec(key(), 0..3).boxed()),
        2 => with_extra(cmd(vec![name("SDIFF"), key()]), prop::collection::vec(key(), 0..3).boxed()),
        1 => with_extra(cmd(vec![name("SDIFFSTORE"), key(), key()]), prop::collection::vec(key(), 0..3).boxed()),
        1 => cmd(vec![name("SSCAN"), key(), pick(&["0", "abc"]), lit("COUNT"), pick(&["1000", "0"])]),
        1 => cmd(vec![name("SSCAN"), key(), lit("0"), lit("MATCH"), pick(&["1*", "*a*", "[ab]", "?"]), lit("COUNT"), lit("1000")]),
        1 => cmd(vec![name("OBJECT"), lit("ENCODING"), key()]),
        1 => cmd(vec![name("TYPE"), key()]),
        1 => cmd(vec![name("SET"), key(), value()]),
        1 => cmd(vec![name("DEL"), key()]),
        1 => cmd(vec![name("COPY"), key(), key(), lit("REPLACE")]),
        1 => cmd(vec![name("EXPIRE"), key(), lit("100")]),
        1 => cmd(vec![name("TTL"), key()]),
        1 => cmd(vec![name("CONFIG"), lit("SET"), lit("set-max-intset-entries"), pick(&["0", "4", "16", "512"])]),
        1 => cmd(vec![name("SADD"), key()]),
        1 => cmd(vec![name("SMOVE"), key(), key()]),
    ]
    .boxed()
}

fn bit_offset() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        4 => (0u32..64).prop_map(|n| s(&n.to_string())),
        1 => (64u32..4100).prop_map(|n| s(&n.to_string())),
        1 => pick(&["-1", "abc", "4294967296", "", "01"]),
    ]
    .boxed()
}

fn range_arg() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![8 => (-25i64..25).prop_map(|n| s(&n.to_string())), 1 => pick(&["abc", "9223372036854775807", "-9223372036854775808"])].boxed()
}

fn field_type() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        6 => (1u32..65).prop_map(|n| s(&format!("i{n}"))),
        6 => (1u32..64).prop_map(|n| s(&format!("u{n}"))),
        1 => pick(&["u64", "i65", "u0", "I8", "x8", "i"]),
    ]
    .boxed()
}

fn field_offset() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![6 => (0u32..120).prop_map(|n| s(&n.to_string())), 2 => (0u32..12).prop_map(|n| s(&format!("#{n}"))), 1 => pick(&["-1", "#-1", "x"])].boxed()
}

fn field_value() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        6 => (-300i64..300).prop_map(|n| s(&n.to_string())),
        2 => pick(&["9223372036854775807", "-9223372036854775808", "4611686018427387904", "-1", "x", "1.5"]),
    ]
    .boxed()
}

fn bitfield_ops(readonly: bool) -> BoxedStrategy<Vec<Vec<u8>>> {
    let op = prop_oneof![
        4 => (field_type(), field_offset()).prop_map(|(t, o)| vec![s("GET"), t, o]),
        if readonly { 1 } else { 3 } => (pick(&["SET", "INCRBY", "incrby"]), field_type(), field_offset(), field_value()).prop_map(|(c, t, o, v)| vec![c, t, o, v]),
        2 => pick(&["WRAP", "SAT", "FAIL", "sat", "BAD"]).prop_map(|m| vec![s("OVERFLOW"), m]),
        1 => pick(&["GET", "SET", "FOO", "OVERFLOW"]).prop_map(|c| vec![c]),
    ];
    prop::collection::vec(op, 0..5).prop_map(|v| v.into_iter().flatten().collect()).boxed()
}

fn bitmap_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    let unit = || prop_oneof![3 => pick(&["BIT", "BYTE", "bit"]), 1 => pick(&["WORD"])].boxed();
    prop_oneof![
        4 => cmd(vec![name("SETBIT"), key(), bit_offset(), pick(&["0", "1", "1", "2", "-1", "x"])]),
        2 => cmd(vec![name("GETBIT"), key(), bit_offset()]),
        1 => cmd(vec![name("BITCOUNT"), key()]),
        2 => cmd(vec![name("BITCOUNT"), key(), range_arg(), range_arg()]),
        2 => cmd(vec![name("BITCOUNT"), key(), range_arg(), range_arg(), unit()]),
        1 => cmd(vec![name("BITCOUNT"), key(), range_arg()]),
        1 => cmd(vec![name("BITPOS"), key(), pick(&["0", "1", "2", "x"])]),
        2 => cmd(vec![name("BITPOS"), key(), pick(&["0", "1"]), range_arg()]),
        2 => cmd(vec![name("BITPOS"), key(), pick(&["0", "1"]), range_arg(), range_arg()]),
        3 => cmd(vec![name("BITPOS"), key(), pick(&["0", "1"]), range_arg(), range_arg(), unit()]),
        1 => cmd(vec![name("BITPOS"), key(), pick(&["0", "1"]), range_arg(), range_arg(), unit(), lit("x")]),
        2 => with_extra(cmd(vec![name("BITOP"), pick(&["AND", "OR", "XOR", "NOT", "and", "NAND"]), key(), key()]), prop::collection::vec(key(), 0..3).boxed()),
        4 => with_extra(cmd(vec![name("BITFIELD"), key()]), bitfield_ops(false)),
        2 => with_extra(cmd(vec![name("BITFIELD_RO"), key()]), bitfield_ops(true)),
        2 => cmd(vec![name("GET"), key()]),
        1 => cmd(vec![name("STRLEN"), key()]),
        2 => cmd(vec![name("SET"), key(), value()]),
        1 => cmd(vec![name("APPEND"), key(), value()]),
        1 => cmd(vec![name("OBJECT"), lit("ENCODING"), key()]),
        1 => cmd(vec![name("HSET"), key(), field(), value()]),
        1 => cmd(vec![name("DEL"), key()]),
        1 => cmd(vec![name("SETBIT"), key()]),
        1 => cmd(vec![name("BITOP"), lit("AND"), key()]),
    ]
    .boxed()
}

fn hll_element() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![4 => (0u32..60).prop_map(|i| s(&format!("e{i}"))), 1 => pick(&["", "a", "1", "hello world", "9223372036854775807"])].boxed()
}

fn hll_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    prop_oneof![
        6 => with_extra(cmd(vec![name("PFADD"), key()]), prop::collection::vec(hll_element(), 0..5).boxed()),
        // Many elements at once: long sparse strings, promotion to dense.
        2 => (key(), 0u32..5000, 20u32..400).prop_map(|(k, from, n)| {
            let mut c = vec![s("PFADD"), k];
            c.extend((from..from + n).map(|i| s(&format!("m{i}"))));
            c
        }).boxed(),
        4 => cmd(vec![name("PFCOUNT"), key()]),
        2 => with_extra(cmd(vec![name("PFCOUNT"), key()]), prop::collection::vec(key(), 1..3).boxed()),
        3 => with_extra(cmd(vec![name("PFMERGE"), key()]), prop::collection::vec(key(), 0..3).boxed()),
        // The exact bytes: header, cached cardinality, sparse or dense registers.
        4 => cmd(vec![name("GET"), key()]),
        1 => cmd(vec![name("STRLEN"), key()]),
        1 => cmd(vec![name("SET"), key(), value()]),
        // Damage an HLL: a trailing opcode corrupts a sparse one, and a dense one is no
        // longer the right size; SETRANGE over the cache byte changes its validity.
        // (ZERO and VAL opcodes only: a trailing half XZERO is a listed difference.)
        1 => cmd(vec![name("APPEND"), key(), prop_oneof![Just(vec![0x01u8]), Just(vec![0x9cu8]), Just(vec![0u8, 0x84])].boxed()]),
        1 => cmd(vec![name("SETRANGE"), key(), pick(&["15", "4", "16"]), prop_oneof![Just(vec![0u8]), Just(vec![0x80u8]), Just(s("x"))].boxed()]),
        1 => cmd(vec![name("OBJECT"), lit("ENCODING"), key()]),
        1 => cmd(vec![name("SADD"), key(), lit("a")]),
        1 => cmd(vec![name("DEL"), key()]),
        1 => cmd(vec![name("CONFIG"), lit("SET"), lit("hll-sparse-max-bytes"), pick(&["0", "40", "300", "3000"])]),
        1 => cmd(vec![name("PFMERGE")]),
    ]
    .boxed()
}

fn key_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    let expire_flag = pick(&["NX", "XX", "GT", "LT", "nx", "BAD"]);
    prop_oneof![
        cmd(vec![name("SET"), key(), value()]),
        cmd(vec![name("HSET"), key(), field(), value()]),
        cmd(vec![name("DEL"), key(), key()]),
        cmd(vec![name("UNLINK"), key()]),
        cmd(vec![name("EXISTS"), key(), key(), key()]),
        cmd(vec![name("TYPE"), key()]),
        cmd(vec![name("EXPIRE"), key(), pick(&["100", "200", "-1", "0", "abc", "9223372036854775807"])]),
        with_extra(cmd(vec![name("EXPIRE"), key(), pick(&["100", "300"])]), prop::collection::vec(expire_flag, 1..3).boxed()),
        cmd(vec![name("PEXPIRE"), key(), pick(&["100000", "-1"])]),
        cmd(vec![name("EXPIREAT"), key(), pick(&["1", "99999999999", "-9223372036854775808"])]),
        cmd(vec![name("PEXPIREAT"), key(), pick(&["1", "99999999999999"])]),
        cmd(vec![name("TTL"), key()]),
        cmd(vec![name("PTTL"), key()]),
        cmd(vec![name("EXPIRETIME"), key()]),
        cmd(vec![name("PEXPIRETIME"), key()]),
        cmd(vec![name("PERSIST"), key()]),
        cmd(vec![name("KEYS"), pick(&["*", "k*", "?1", "[hk]2", "{t}*", "h\\1", "*[^k]*"])]),
        cmd(vec![name("SCAN"), pick(&["0", "x"]), lit("COUNT"), pick(&["1000", "0"])]),
        cmd(vec![name("SCAN"), lit("0"), lit("COUNT"), lit("1000"), lit("TYPE"), pick(&["string", "hash", "list"])]),
        cmd(vec![name("SCAN"), lit("0"), lit("MATCH"), pick(&["k*", "*a"]), lit("COUNT"), lit("1000")]),
        cmd(vec![name("RANDOMKEY")]),
        cmd(vec![name("RENAME"), key(), key()]),
        cmd(vec![name("RENAMENX"), key(), key()]),
        cmd(vec![name("COPY"), key(), key()]),
        with_extra(
            cmd(vec![name("COPY"), key(), key()]),
            prop_oneof![
                Just(vec![s("REPLACE")]),
                Just(vec![s("DB"), s("1")]),
                Just(vec![s("DB"), s("99")]),
                Just(vec![s("DB")]),
                Just(vec![s("DB"), s("2"), s("REPLACE")])
            ]
            .boxed()
        ),
        cmd(vec![name("TOUCH"), key(), key()]),
        cmd(vec![name("SELECT"), pick(&["0", "1", "2", "16", "-1", "x"])]),
        cmd(vec![name("DBSIZE")]),
        cmd(vec![name("FLUSHDB")]),
        cmd(vec![name("FLUSHDB"), pick(&["ASYNC", "SYNC", "BAD"])]),
        cmd(vec![name("OBJECT"), pick(&["ENCODING", "REFCOUNT", "NOSUCH"]), key()]),
    ]
    .boxed()
}

fn connection_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    prop_oneof![
        cmd(vec![name("PING")]),
        cmd(vec![name("PING"), value()]),
        cmd(vec![name("PING"), value(), value()]),
        cmd(vec![name("ECHO"), value()]),
        cmd(vec![name("ECHO")]),
        cmd(vec![name("CLIENT"), pick(&["SETNAME", "setname"]), pick(&["app", "a b", "", "x\ny"])]),
        cmd(vec![name("CLIENT"), lit("GETNAME")]),
        cmd(vec![name("CLIENT"), pick(&["NOSUCH", "SETNAME"])]),
        cmd(vec![name("CLIENT")]),
        cmd(vec![
            name("CONFIG"),
            lit("GET"),
            pick(&["maxmemory", "maxmemory-policy", "hash-max-listpack-*", "hash-max-ziplist-entries", "nosuch", "notify-keyspace-events"])
        ]),
        cmd(vec![
            name("CONFIG"),
            lit("SET"),
            pick(&["maxmemory-policy", "maxmemory", "nosuch", "notify-keyspace-events"]),
            pick(&["allkeys-lru", "noeviction", "bad", "0", "KEA", "Ex"])
        ]),
        cmd(vec![name("CONFIG"), lit("SET"), lit("maxmemory")]),
        cmd(vec![name("CONFIG"), lit("BOGUS")]),
        cmd(vec![name("NOSUCHCOMMAND"), value(), value()]),
        cmd(vec![name("COMMAND"), lit("GETKEYS"), pick(&["GET", "MSET", "PING", "NOSUCH", "OBJECT"]), key(), value()]),
        cmd(vec![name("COMMAND"), lit("GETKEYS"), lit("SET")]),
        with_extra(
            cmd(vec![
                name("COMMAND"),
                lit("GETKEYS"),
                pick(&["ZUNION", "ZINTER", "ZDIFF", "ZINTERCARD", "SINTERCARD", "LMPOP", "ZMPOP"]),
                pick(&["0", "1", "2", "3", "x", "-1"]),
                key(),
                key()
            ]),
            prop_oneof![Just(vec![]), Just(vec![s("WITHSCORES")]), Just(vec![s("LEFT"), s("COUNT"), s("2")])].boxed()
        ),
        cmd(vec![name("COMMAND"), lit("GETKEYS"), pick(&["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]), key(), pick(&["1", "2", "3", "x"]), key(), key()]),
        cmd(vec![name("COMMAND"), lit("GETKEYS"), pick(&["BLMPOP", "BZMPOP"]), lit("0"), pick(&["1", "2", "3", "0"]), key(), key(), pick(&["LEFT", "MIN"])]),
        cmd(vec![name("AUTH"), value()]),
        cmd(vec![name("AUTH"), pick(&["default", "bob"]), value()]),
        cmd(vec![name("HELLO"), pick(&["4", "abc", "1"])]),
        cmd(vec![name("SELECT"), pick(&["0", "3", "99"])]),
        cmd(vec![name("DBSIZE")]),
        cmd(vec![name("SET"), key(), value()]),
        cmd(vec![name("GET"), key(), key()]),
        cmd(vec![name("INCR")]),
        cmd(vec![name("HGET"), key()]),
        cmd(vec![name("EXPIRE"), key()]),
        cmd(vec![name("FLUSHALL"), pick(&["SYNC", "BAD"])]),
    ]
    .boxed()
}

const ZMEMBERS: &[&str] = &["a", "b", "c", "d", "e", "", "10", "-1", "A b"];

fn zkey() -> BoxedStrategy<Vec<u8>> {
    pick(&["z1", "z2", "z3", "{t}z", "k1", "s1", "nokey"])
}
fn zmember() -> BoxedStrategy<Vec<u8>> {
    pick(ZMEMBERS)
}
fn zscore_arg() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        8 => (-5i64..6).prop_map(|n| s(&n.to_string())),
        4 => pick(&["1.5", "-0.25", "0.1", "3.0", "1e3", "-0", "0", "inf", "-inf", "+inf", "0x10", "1e-5", "123456789012345678", "1e17"]),
        1 => pick(&["abc", "", "nan", " 1", "1e400", "1e-400", "1 "]),
    ]
    .boxed()
}
fn zrange_score() -> BoxedStrategy<Vec<u8>> {
    pick(&["-inf", "+inf", "inf", "(1", "1", "2", "(2", "0", "-1", "(-1", "1.5", "3", "(3", "abc", "(", "", " 1", "(inf", "nan", "1e400"])
}
fn zlex() -> BoxedStrategy<Vec<u8>> {
    pick(&["-", "+", "[a", "(a", "[b", "(b", "[c", "(d", "[", "(", "a", "+x", "-x", "[A b", "[10"])
}
fn zrank_arg() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![5 => (-4i64..5).prop_map(|n| s(&n.to_string())), 1 => pick(&["x", "1.5", "9223372036854775807", "-9223372036854775808", "100"])].boxed()
}
fn zcount_arg() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![4 => (0i64..5).prop_map(|n| s(&n.to_string())), 1 => pick(&["-1", "x", "100", "9223372036854775807"])].boxed()
}

fn zadd_opts() -> BoxedStrategy<Vec<Vec<u8>>> {
    prop::collection::vec(pick(&["NX", "XX", "GT", "LT", "CH", "INCR", "nx", "ch"]), 0..3).boxed()
}

fn zrange_opts() -> BoxedStrategy<Vec<Vec<u8>>> {
    let opt = prop_oneof![
        3 => pick(&["WITHSCORES", "withscores", "REV", "BYSCORE", "BYLEX", "rev"]).prop_map(|o| vec![o]),
        2 => (lit("LIMIT"), zcount_arg(), pick(&["1", "2", "-1", "0", "x"])).prop_map(|(a, b, c)| vec![a, b, c]),
        1 => Just(vec![s("LIMIT"), s("1")]),
        1 => Just(vec![s("BOGUS")]),
    ];
    prop::collection::vec(opt, 0..3).prop_map(|v| v.into_iter().flatten().collect()).boxed()
}

fn zsetop_tail(store: bool) -> BoxedStrategy<Vec<Vec<u8>>> {
    let opt = prop_oneof![
        (lit("WEIGHTS"), pick(&["1", "2", "0.5", "-1", "0", "inf", "x"]), pick(&["1", "3", "-2", "nan"])).prop_map(|(a, b, c)| vec![a, b, c]),
        (lit("AGGREGATE"), pick(&["SUM", "MIN", "MAX", "min", "avg"])).prop_map(|(a, b)| vec![a, b]),
        Just(vec![s(if store { "WITHSCORES" } else { "withscores" })]),
        Just(vec![s("WEIGHTS"), s("1")]),
    ];
    prop::collection::vec(opt, 0..3).prop_map(|v| v.into_iter().flatten().collect()).boxed()
}

fn zset_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    let two_keys = || (zkey(), zkey()).prop_map(|(a, b)| vec![s("2"), a, b]).boxed();
    prop_oneof![
        8 => with_extra(cmd(vec![name("ZADD"), zkey()]), (zadd_opts(), zscore_arg(), zmember()).prop_map(|(mut o, sc, m)| { o.push(sc); o.push(m); o }).boxed()),
        4 => cmd(vec![name("ZADD"), zkey(), zscore_arg(), zmember(), zscore_arg(), zmember()]),
        1 => cmd(vec![name("ZADD"), zkey(), zscore_arg()]),
        2 => (zkey(), 0u32..200, -3i64..3).prop_map(|(k, i, sc)| vec![s("ZADD"), k, s(&sc.to_string()), format!("mem{i}").into_bytes()]).boxed(),
        1 => (zkey(), 60usize..70).prop_map(|(k, n)| vec![s("ZADD"), k, s("1"), vec![b'x'; n]]).boxed(),
        2 => cmd(vec![name("ZINCRBY"), zkey(), zscore_arg(), zmember()]),
        3 => cmd(vec![name("ZREM"), zkey(), zmember(), zmember()]),
        2 => cmd(vec![name("ZCARD"), zkey()]),
        3 => cmd(vec![name("ZSCORE"), zkey(), zmember()]),
        2 => cmd(vec![name("ZMSCORE"), zkey(), zmember(), zmember()]),
        2 => cmd(vec![name("ZRANK"), zkey(), zmember()]),
        2 => cmd(vec![name("ZREVRANK"), zkey(), zmember()]),
        1 => cmd(vec![name("ZRANK"), zkey(), zmember(), lit("WITHSCORE")]),
        6 => with_extra(cmd(vec![name("ZRANGE"), zkey(), zrank_arg(), zrank_arg()]), zrange_opts()),
        4 => with_extra(cmd(vec![name("ZRANGE"), zkey(), zrange_score(), zrange_score(), lit("BYSCORE")]), zrange_opts()),
        2 => with_extra(cmd(vec![name("ZREVRANGE"), zkey(), zrank_arg(), zrank_arg()]), prop_oneof![Just(vec![]), Just(vec![s("WITHSCORES")]), Just(vec![s("REV")])].boxed()),
        3 => with_extra(cmd(vec![name("ZRANGEBYSCORE"), zkey(), zrange_score(), zrange_score()]), zrange_opts()),
        3 => with_extra(cmd(vec![name("ZREVRANGEBYSCORE"), zkey(), zrange_score(), zrange_score()]), zrange_opts()),
        3 => cmd(vec![name("ZCOUNT"), zkey(), zrange_score(), zrange_score()]),
        // Lex: on a set whose members share score 0 (see DELIBERATE_DIFFERENCES).
        3 => cmd(vec![name("ZADD"), lit("zl"), lit("0"), zmember()]),
        1 => cmd(vec![name("ZREM"), lit("zl"), zmember()]),
        3 => with_extra(cmd(vec![name("ZRANGEBYLEX"), lit("zl"), zlex(), zlex()]), zrange_opts()),
        2 => with_extra(cmd(vec![name("ZREVRANGEBYLEX"), lit("zl"), zlex(), zlex()]), zrange_opts()),
        2 => with_extra(cmd(vec![name("ZRANGE"), lit("zl"), zlex(), zlex(), lit("BYLEX")]), zrange_opts()),
        2 => cmd(vec![name("ZLEXCOUNT"), lit("zl"), zlex(), zlex()]),
        1 => cmd(vec![name("ZREMRANGEBYLEX"), lit("zl"), zlex(), zlex()]),
        1 => with_extra(cmd(vec![name("ZRANGESTORE"), zkey(), lit("zl"), zlex(), zlex(), lit("BYLEX")]), zrange_opts()),
        3 => with_extra(cmd(vec![name("ZPOPMIN"), zkey()]), prop_oneof![Just(vec![]), zcount_arg().prop_map(|c| vec![c]), Just(vec![s("1"), s("2")])].boxed()),
        3 => with_extra(cmd(vec![name("ZPOPMAX"), zkey()]), prop_oneof![Just(vec![]), zcount_arg().prop_map(|c| vec![c])].boxed()),
        1 => cmd(vec![name("BZPOPMIN"), zkey(), zkey(), ltimeout()]),
        1 => cmd(vec![name("BZPOPMAX"), zkey(), ltimeout()]),
        1 => with_extra(cmd(vec![name("BZMPOP"), ltimeout(), pick(&["1", "2", "0"]), zkey(), zkey(), pick(&["MIN", "MAX", "BAD"])]), prop_oneof![Just(vec![]), Just(vec![s("COUNT"), s("2")]), Just(vec![s("COUNT"), s("0")])].boxed()),
        2 => with_extra(cmd(vec![name("ZMPOP")]), (pick(&["1", "2", "0", "x", "3"]), zkey(), zkey(), pick(&["MIN", "MAX", "max", "BAD"]), prop_oneof![Just(vec![]), zcount_arg().prop_map(|c| vec![s("COUNT"), c]), Just(vec![s("COUNT")])].boxed()).prop_map(|(n, a, b, w, c)| { let mut v = vec![n, a, b, w]; v.extend(c); v }).boxed()),
        3 => with_extra(cmd(vec![name("ZRANGESTORE"), zkey(), zkey(), zrank_arg(), zrank_arg()]), zrange_opts()),
        2 => with_extra(cmd(vec![name("ZRANGESTORE"), zkey(), zkey(), zrange_score(), zrange_score(), lit("BYSCORE")]), zrange_opts()),
        3 => with_extra(with_extra(cmd(vec![pick(&["ZUNION", "ZINTER", "zunion"])]), two_keys()), zsetop_tail(false)),
        2 => with_extra(with_extra(cmd(vec![pick(&["ZUNIONSTORE", "ZINTERSTORE"]), zkey()]), two_keys()), zsetop_tail(true)),
        2 => with_extra(with_extra(cmd(vec![name("ZDIFF")]), two_keys()), prop_oneof![Just(vec![]), Just(vec![s("WITHSCORES")]), Just(vec![s("WEIGHTS"), s("1"), s("1")])].boxed()),
        1 => with_extra(cmd(vec![name("ZDIFFSTORE"), zkey()]), two_keys()),
        1 => cmd(vec![pick(&["ZUNION", "ZINTERSTORE", "ZDIFF"]), pick(&["0", "x", "3", "-1"]), zkey()]),
        2 => with_extra(with_extra(cmd(vec![name("ZINTERCARD")]), two_keys()), prop_oneof![Just(vec![]), zcount_arg().prop_map(|c| vec![s("LIMIT"), c]), Just(vec![s("LIMIT")])].boxed()),
        2 => cmd(vec![name("ZREMRANGEBYRANK"), zkey(), zrank_arg(), zrank_arg()]),
        2 => cmd(vec![name("ZREMRANGEBYSCORE"), zkey(), zrange_score(), zrange_score()]),
        2 => cmd(vec![name("ZRANDMEMBER"), zkey()]),
        2 => with_extra(cmd(vec![name("ZRANDMEMBER"), zkey(), pick(&["1", "2", "3", "-2", "-5", "0", "100", "x", "-9223372036854775808", "9223372036854775807"])]), prop_oneof![Just(vec![]), Just(vec![s("WITHSCORES")]), Just(vec![s("BAD")])].boxed()),
        2 => cmd(vec![name("ZSCAN"), zkey(), pick(&["0", "x"]), lit("COUNT"), pick(&["1000", "0"])]),
        1 => cmd(vec![name("ZSCAN"), zkey(), lit("0"), lit("MATCH"), pick(&["*", "a*", "mem1*"]), lit("COUNT"), lit("1000")]),
        1 => cmd(vec![name("ZSCAN"), zkey(), lit("0"), lit("TYPE"), lit("zset")]),
        2 => cmd(vec![name("OBJECT"), lit("ENCODING"), pick(&["z1", "z2", "z3", "{t}z", "zl"])]),
        1 => cmd(vec![name("TYPE"), zkey()]),
        1 => cmd(vec![name("SET"), lit("k1"), value()]),
        // A plain set: an input of ZUNION/ZINTER/ZDIFF with score 1, WRONGTYPE elsewhere.
        1 => cmd(vec![name("SADD"), lit("s1"), zmember(), zmember()]),
        1 => cmd(vec![name("DEL"), zkey()]),
        1 => cmd(vec![name("COPY"), zkey(), zkey(), lit("REPLACE")]),
        1 => cmd(vec![name("CONFIG"), lit("SET"), pick(&["zset-max-listpack-entries", "zset-max-ziplist-entries", "zset-max-listpack-value"]), pick(&["0", "2", "4", "128"])]),
    ]
    .boxed()
}

fn skey() -> BoxedStrategy<Vec<u8>> {
    pick(&["s1", "s1", "s2", "k1"])
}
fn sid() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        4 => (0u64..6, 0u64..3).prop_map(|(m, q)| s(&format!("{m}-{q}"))),
        1 => (0u64..6).prop_map(|m| s(&m.to_string())),
        1 => (0u64..6).prop_map(|m| s(&format!("{m}-*"))),
        1 => pick(&["0-0", "-", "+", "$", ">", "x", "18446744073709551615-18446744073709551615", "(1-1", "(3", "0-1", "07", "3-", "-3"]),
    ]
    .boxed()
}
fn range_id() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        2 => pick(&["-", "+", "(2-1", "(0", "(+", "(18446744073709551615-18446744073709551615", "(0-0", "x", "2", "4-1"]),
        2 => (0u64..6, 0u64..3).prop_map(|(m, q)| s(&format!("{m}-{q}"))),
    ]
    .boxed()
}
fn sfield() -> BoxedStrategy<Vec<u8>> {
    pick(&["f1", "f2", "a", "12", ""])
}
fn svalue() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        3 => pick(&["v", "1", "-5", "300", "hello", "", "70000", "9223372036854775807", "007"]),
        1 => (1usize..90).prop_map(|n| vec![b'y'; n]),
    ]
    .boxed()
}
fn sfields() -> BoxedStrategy<Vec<Vec<u8>>> {
    prop::collection::vec((sfield(), svalue()), 1..3).prop_map(|v| v.into_iter().flat_map(|(a, b)| [a, b]).collect()).boxed()
}
fn trim_opts() -> BoxedStrategy<Vec<Vec<u8>>> {
    let strat = prop_oneof![
        (pick(&["MAXLEN", "maxlen"]), pick(&["", "~", "="]), pick(&["0", "1", "2", "5", "-1", "x"])).prop_map(|(a, b, c)| if b.is_empty() {
            vec![a, c]
        } else {
            vec![a, b, c]
        }),
        (pick(&["MINID", "minid"]), pick(&["", "~", "="]), pick(&["0", "2", "3-1", "5", "+", "x"])).prop_map(|(a, b, c)| if b.is_empty() {
            vec![a, c]
        } else {
            vec![a, b, c]
        }),
    ];
    let limit = prop_oneof![3 => Just(vec![]), 1 => pick(&["0", "1", "3", "-1"]).prop_map(|n| vec![s("LIMIT"), n])];
    (strat, limit)
        .prop_map(|(mut a, b)| {
            a.extend(b);
            a
        })
        .boxed()
}
fn group() -> BoxedStrategy<Vec<u8>> {
    pick(&["g1", "g1", "g2"])
}
fn consumer() -> BoxedStrategy<Vec<u8>> {
    pick(&["c1", "c2", "c3"])
}
fn min_idle() -> BoxedStrategy<Vec<u8>> {
    // Far from reachable idle times (a run lasts well under 50 s).
    pick(&["0", "0", "50000", "10000000000000", "-5", "x"])
}

fn stream_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    let xadd = (skey(), prop::collection::vec(prop_oneof![4 => Just(vec![]), 1 => Just(vec![s("NOMKSTREAM")]), 2 => trim_opts()], 1..2), sid(), sfields())
        .prop_map(|(k, opts, id, f)| {
            let mut v = vec![s("XADD"), k];
            v.extend(opts.into_iter().flatten());
            v.push(id);
            v.extend(f);
            v
        })
        .boxed();
    let ascending = (skey(), 0u64..8, 0u64..3, sfields())
        .prop_map(|(k, m, q, f)| {
            let mut v = vec![s("XADD"), k, s(&format!("{}-{}", m * 10 + 10, q))];
            v.extend(f);
            v
        })
        .boxed();
    let xread = (
        prop::collection::vec(
            prop_oneof![pick(&["COUNT"]).prop_map(|c| vec![c, s("1")]), Just(vec![s("COUNT"), s("-1")]), Just(vec![s("BLOCK"), s("1")])],
            0..2,
        ),
        1usize..3,
        sid(),
        sid(),
    )
        .prop_map(|(opts, n, a, b)| {
            let mut v = vec![s("XREAD")];
            v.extend(opts.into_iter().flatten());
            v.push(s("STREAMS"));
            v.extend([s("s1"), s("s2")].into_iter().take(n));
            v.extend([a, b].into_iter().take(n));
            v
        })
        .boxed();
    let xreadgroup = (
        group(),
        consumer(),
        prop::collection::vec(pick(&["COUNT 1", "COUNT 2", "NOACK", "BLOCK 1", "COUNT 0"]), 0..2),
        skey(),
        prop_oneof![4 => Just(s(">")), 1 => Just(s("0")), 1 => sid()],
    )
        .prop_map(|(g, c, opts, k, id)| {
            let mut v = vec![s("XREADGROUP"), s("GROUP"), g, c];
            for o in opts {
                v.extend(o.split(|&b| b == b' ').map(|x| x.to_vec()));
            }
            v.extend([s("STREAMS"), k, id]);
            v
        })
        .boxed();
    let claim_opts = prop::collection::vec(
        prop_oneof![
            pick(&["FORCE", "JUSTID", "BOGUS"]).prop_map(|o| vec![o]),
            (pick(&["IDLE", "TIME", "RETRYCOUNT", "LASTID"]), pick(&["0", "100000", "1", "99999999999999", "5", "3-0", "x", "-1"]))
                .prop_map(|(a, b)| vec![a, b]),
        ],
        0..3,
    )
    .prop_map(|v| v.into_iter().flatten().collect::<Vec<_>>())
    .boxed();
    prop_oneof![
        6 => xadd,
        6 => ascending,
        1 => cmd(vec![name("XADD"), skey(), sid()]),
        1 => cmd(vec![name("XADD"), skey(), sid(), sfield()]),
        1 => cmd(vec![name("XADD"), lit("sauto"), lit("*"), sfield(), svalue()]),
        1 => cmd(vec![name("XRANGE"), lit("sauto"), lit("-"), lit("+")]),
        2 => cmd(vec![name("XLEN"), skey()]),
        3 => cmd(vec![name("XRANGE"), skey(), range_id(), range_id()]),
        1 => cmd(vec![name("XRANGE"), skey(), range_id(), range_id(), lit("COUNT"), pick(&["0", "1", "2", "-1", "x"])]),
        2 => cmd(vec![name("XREVRANGE"), skey(), range_id(), range_id()]),
        1 => cmd(vec![name("XREVRANGE"), skey(), lit("+"), lit("-"), pick(&["COUNT", "LIMIT"]), pick(&["1", "3"])]),
        2 => cmd(vec![name("XDEL"), skey(), sid(), sid()]),
        2 => with_extra(cmd(vec![name("XTRIM"), skey()]), trim_opts()),
        1 => cmd(vec![name("XTRIM"), skey(), pick(&["LIMIT", "BOGUS", "MAXLEN"]), pick(&["1", "~"])]),
        3 => xread,
        2 => with_extra(cmd(vec![name("XGROUP"), lit("CREATE"), skey(), group(), prop_oneof![Just(s("$")), Just(s("0")), sid()].boxed()]), prop::collection::vec(pick(&["MKSTREAM", "ENTRIESREAD", "3", "-1", "BAD"]), 0..3).boxed()),
        1 => with_extra(cmd(vec![name("XGROUP"), lit("SETID"), skey(), group(), prop_oneof![Just(s("$")), sid()].boxed()]), prop_oneof![Just(vec![]), Just(vec![s("ENTRIESREAD"), s("2")]), Just(vec![s("ENTRIESREAD")])].boxed()),
        1 => cmd(vec![name("XGROUP"), pick(&["DESTROY", "destroy"]), skey(), group()]),
        1 => cmd(vec![name("XGROUP"), pick(&["CREATECONSUMER", "DELCONSUMER"]), skey(), group(), consumer()]),
        1 => cmd(vec![name("XGROUP"), pick(&["HELP", "BOGUS", "CREATE"])]),
        5 => xreadgroup,
        2 => cmd(vec![name("XACK"), skey(), group(), sid(), sid()]),
        2 => cmd(vec![name("XPENDING"), skey(), group()]),
        2 => with_extra(cmd(vec![name("XPENDING"), skey(), group(), range_id(), range_id(), pick(&["10", "1", "0", "-1", "x"])]), prop_oneof![Just(vec![]), consumer().prop_map(|c| vec![c])].boxed()),
        1 => cmd(vec![name("XPENDING"), skey(), group(), lit("IDLE"), min_idle(), lit("-"), lit("+"), lit("10")]),
        3 => with_extra(cmd(vec![name("XCLAIM"), skey(), group(), consumer(), min_idle(), sid()]), claim_opts),
        2 => with_extra(cmd(vec![name("XAUTOCLAIM"), skey(), group(), consumer(), min_idle(), range_id()]), prop_oneof![Just(vec![]), Just(vec![s("COUNT"), s("1")]), Just(vec![s("COUNT"), s("0")]), Just(vec![s("JUSTID")]), Just(vec![s("COUNT"), s("2"), s("JUSTID")])].boxed()),
        2 => with_extra(cmd(vec![name("XINFO"), lit("STREAM"), skey()]), prop_oneof![3 => Just(vec![]), 1 => Just(vec![s("FULL")]), 1 => Just(vec![s("FULL"), s("COUNT"), s("1")]), 1 => Just(vec![s("BOGUS")])].boxed()),
        1 => cmd(vec![name("XINFO"), lit("GROUPS"), skey()]),
        1 => cmd(vec![name("XINFO"), lit("CONSUMERS"), skey(), group()]),
        1 => with_extra(cmd(vec![name("XSETID"), skey(), sid()]), prop_oneof![Just(vec![]), Just(vec![s("ENTRIESADDED"), s("50")]), Just(vec![s("MAXDELETEDID"), s("2-0")]), Just(vec![s("ENTRIESADDED"), s("-1")])].boxed()),
        1 => cmd(vec![name("CONFIG"), lit("SET"), pick(&["stream-node-max-entries", "stream-node-max-bytes"]), pick(&["2", "3", "60", "100", "4096"])]),
        1 => cmd(vec![name("TYPE"), skey()]),
        1 => cmd(vec![name("OBJECT"), lit("ENCODING"), skey()]),
        1 => cmd(vec![name("SET"), lit("k1"), lit("v")]),
        1 => cmd(vec![name("DEL"), skey()]),
        1 => cmd(vec![name("COPY"), lit("s1"), lit("s2")]),
    ]
    .boxed()
}

fn lkey() -> BoxedStrategy<Vec<u8>> {
    pick(&["l1", "l2", "l3", "k1"])
}
fn lelem() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        4 => pick(&["a", "b", "c", "1", "2", "", "hello world", "-1"]),
        1 => (0u32..30).prop_map(|i| s(&i.to_string())),
        1 => (60usize..300).prop_map(|n| vec![b'x'; n]),
    ]
    .boxed()
}
fn lindex_arg() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        3 => (-8i64..8).prop_map(|n| s(&n.to_string())),
        1 => pick(&["x", "", "9223372036854775807", "-9223372036854775808", "100", "-100", "1.5"]),
    ]
    .boxed()
}
fn lside() -> BoxedStrategy<Vec<u8>> {
    pick(&["LEFT", "RIGHT", "left", "right", "UP"])
}
/// Timeouts that never wait: the key has elements, or the command answers at once
/// (errors, MULTI); 0.01 s waits 10 ms and times out on both servers.
fn ltimeout() -> BoxedStrategy<Vec<u8>> {
    pick(&["0.01", "0.01", "0.01", "abc", "-1", "0.001", "1e-2", "nan", "-inf"])
}

fn list_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    let elems = || prop::collection::vec(lelem(), 1..4).boxed();
    prop_oneof![
        4 => with_extra(cmd(vec![name("RPUSH"), lkey()]), elems()),
        4 => with_extra(cmd(vec![name("LPUSH"), lkey()]), elems()),
        1 => with_extra(cmd(vec![name("LPUSHX"), lkey()]), elems()),
        1 => with_extra(cmd(vec![name("RPUSHX"), lkey()]), elems()),
        2 => cmd(vec![name("LPOP"), lkey()]),
        2 => cmd(vec![name("RPOP"), lkey()]),
        2 => cmd(vec![name("LPOP"), lkey(), pick(&["0", "1", "2", "10", "-1", "x"])]),
        1 => cmd(vec![name("RPOP"), lkey(), pick(&["0", "3", "-1"]), pick(&["1"])]),
        2 => cmd(vec![name("LLEN"), lkey()]),
        4 => cmd(vec![name("LRANGE"), lkey(), lindex_arg(), lindex_arg()]),
        3 => cmd(vec![name("LINDEX"), lkey(), lindex_arg()]),
        2 => cmd(vec![name("LSET"), lkey(), lindex_arg(), lelem()]),
        2 => cmd(vec![name("LINSERT"), lkey(), pick(&["BEFORE", "AFTER", "after", "MIDDLE"]), lelem(), lelem()]),
        2 => cmd(vec![name("LREM"), lkey(), pick(&["0", "1", "-1", "2", "-2", "x"]), lelem()]),
        2 => cmd(vec![name("LTRIM"), lkey(), lindex_arg(), lindex_arg()]),
        2 => cmd(vec![name("LPOS"), lkey(), lelem()]),
        2 => with_extra(cmd(vec![name("LPOS"), lkey(), lelem()]), prop::collection::vec(prop_oneof![
            cmd(vec![lit("RANK"), pick(&["1", "2", "-1", "-2", "0", "x", "-9223372036854775808"])]),
            cmd(vec![lit("COUNT"), pick(&["0", "1", "2", "-1", "x"])]),
            cmd(vec![lit("MAXLEN"), pick(&["0", "1", "3", "-1"])]),
            cmd(vec![lit("BAD")]),
        ], 0..3).prop_map(|v| v.concat()).boxed()),
        2 => cmd(vec![name("LMOVE"), lkey(), lkey(), lside(), lside()]),
        1 => cmd(vec![name("RPOPLPUSH"), lkey(), lkey()]),
        2 => with_extra(cmd(vec![name("LMPOP"), pick(&["1", "2", "0", "x", "5"]), lkey(), lkey(), lside()]), prop_oneof![Just(vec![]), Just(vec![s("COUNT"), s("2")]), Just(vec![s("COUNT"), s("0")]), Just(vec![s("COUNT")])].boxed()),
        2 => cmd(vec![name("BLPOP"), lkey(), lkey(), ltimeout()]),
        2 => cmd(vec![name("BRPOP"), lkey(), ltimeout()]),
        1 => cmd(vec![name("BLMOVE"), lkey(), lkey(), lside(), lside(), ltimeout()]),
        1 => cmd(vec![name("BRPOPLPUSH"), lkey(), lkey(), ltimeout()]),
        1 => with_extra(cmd(vec![name("BLMPOP"), ltimeout(), pick(&["1", "2", "0"]), lkey(), lkey(), lside()]), prop_oneof![Just(vec![]), Just(vec![s("COUNT"), s("3")])].boxed()),
        1 => cmd(vec![name("TYPE"), lkey()]),
        1 => cmd(vec![name("OBJECT"), lit("ENCODING"), lkey()]),
        1 => cmd(vec![name("SET"), lit("k1"), value()]),
        1 => cmd(vec![name("DEL"), lkey()]),
        1 => cmd(vec![name("COPY"), lkey(), lkey(), lit("REPLACE")]),
        1 => cmd(vec![name("CONFIG"), lit("SET"), pick(&["list-max-listpack-size", "list-max-ziplist-size"]), pick(&["-1", "-2", "1", "2", "3"])]),
    ]
    .boxed()
}

/// Lists inside MULTI/EXEC too: blocking commands there answer at once, as on timeout.
/// SORT/SORT_RO over a list, a set and a sorted set of numbers and words, with weights
/// in strings (`w_*`) and hash fields (`h_*->f`). ALPHA is never combined with a BY
/// pattern (Redis's qsort leaves equal weights in an unspecified order), and a set is
/// never read BY nosort without STORE (its order would be the hash table's).
fn gkey() -> BoxedStrategy<Vec<u8>> {
    pick(&["g1", "g1", "g1", "g2", "nokey", "k1"])
}
fn gmember() -> BoxedStrategy<Vec<u8>> {
    pick(&["p0", "p1", "p2", "p3", "p4", "p5", "p6", "nosuch"])
}
/// Longitude/latitude pairs a few km apart around Palermo, two on the limits of the map,
/// and invalid ones.
fn gpoint() -> BoxedStrategy<Vec<Vec<u8>>> {
    prop_oneof![
        12 => pick(&["13.361389 38.115556", "13.37 38.12", "13.4 38.2", "13.29 38.01", "13.5 38.1", "13.361 38.116", "13.45 37.98", "13.3614 38.1155"]),
        2 => pick(&["180 38.1", "-180 38.1", "179.9999 38.1", "13.36 85.05112878", "13.36 -85.05112878"]),
        1 => pick(&["200 38", "13.36 86", "x 38", "13.36 nan", "inf 0"]),
    ]
    .prop_map(|p| p.split(|&b| b == b' ').map(|x| x.to_vec()).collect())
    .boxed()
}
fn gunit() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![8 => pick(&["m", "km", "KM", "ft", "mi"]), 1 => pick(&["yd", ""])].boxed()
}
fn gradius() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![8 => pick(&["1", "5", "12", "30", "100", "5000", "20000000", "0.5"]), 1 => pick(&["0", "-1", "x", "inf"])].boxed()
}
/// The options of a search, in any order (STORE-like ones added by the caller).
fn gsearch_opts(with: bool) -> BoxedStrategy<Vec<Vec<u8>>> {
    let opt = prop_oneof![
        3 => pick(&["ASC", "DESC", "asc"]).prop_map(|o| vec![o]),
        3 => pick(&["1", "2", "3", "0", "-1", "x"]).prop_map(|n| vec![s("COUNT"), n]),
        2 => pick(&["1", "2"]).prop_map(|n| vec![s("COUNT"), n, s("ANY")]),
        1 => Just(vec![s("ANY")]),
        if with { 4 } else { 1 } => pick(&["WITHDIST", "WITHCOORD", "WITHHASH", "withdist"]).prop_map(|o| vec![o]),
        1 => Just(vec![s("BOGUS")]),
    ];
    prop::collection::vec(opt, 0..4).prop_map(|v| v.concat()).boxed()
}
fn gshape() -> BoxedStrategy<Vec<Vec<u8>>> {
    prop_oneof![
        3 => (gradius(), gunit()).prop_map(|(r, u)| vec![s("BYRADIUS"), r, u]),
        2 => (gradius(), gradius(), gunit()).prop_map(|(w, h, u)| vec![s("BYBOX"), w, h, u]),
    ]
    .boxed()
}
fn gfrom() -> BoxedStrategy<Vec<Vec<u8>>> {
    prop_oneof![
        3 => gpoint().prop_map(|p| [vec![s("FROMLONLAT")], p].concat()),
        2 => gmember().prop_map(|m| vec![s("FROMMEMBER"), m]),
    ]
    .boxed()
}

fn geo_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    let geoadd =
        (pick(&["GEOADD", "geoadd"]), gkey(), prop::collection::vec(pick(&["NX", "XX", "CH"]), 0..2), prop::collection::vec((gpoint(), gmember()), 1..4))
            .prop_map(|(c, k, opts, pts)| {
                let mut v = vec![c, k];
                v.extend(opts);
                for (p, m) in pts {
                    v.extend(p);
                    v.push(m);
                }
                v
            });
    let geosearch = (gkey(), gfrom(), gshape(), gsearch_opts(true)).prop_map(|(k, f, sh, o)| [vec![s("GEOSEARCH"), k], f, sh, o].concat());
    let geosearchstore = (gkey(), gfrom(), gshape(), gsearch_opts(false), prop::bool::weighted(0.3)).prop_map(|(k, f, sh, o, dist)| {
        let mut v = [vec![s("GEOSEARCHSTORE"), s("gd"), k], f, sh, o].concat();
        if dist {
            v.push(s("STOREDIST"));
        }
        v
    });
    let georadius = (pick(&["GEORADIUS", "GEORADIUS_RO"]), gkey(), gpoint(), gradius(), gunit(), gsearch_opts(true))
        .prop_map(|(c, k, p, r, u, o)| [vec![c, k], p, vec![r, u], o].concat());
    let bymember = (pick(&["GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO"]), gkey(), gmember(), gradius(), gunit(), gsearch_opts(true))
        .prop_map(|(c, k, m, r, u, o)| [vec![c, k, m, r, u], o].concat());
    let radius_store =
        (gkey(), gpoint(), gradius(), gsearch_opts(false), pick(&["STORE", "STOREDIST"]), prop::bool::ANY).prop_map(|(k, p, r, o, st, by_member)| {
            let head = if by_member { vec![s("GEORADIUSBYMEMBER"), k, s("p1")] } else { [vec![s("GEORADIUS"), k], p].concat() };
            [head, vec![r, s("km")], o, vec![st, s("gd")]].concat()
        });
    prop_oneof![
        8 => geoadd.boxed(),
        8 => geosearch.boxed(),
        3 => geosearchstore.boxed(),
        4 => georadius.boxed(),
        4 => bymember.boxed(),
        2 => radius_store.boxed(),
        3 => (gkey(), gmember(), gmember(), prop::option::of(gunit())).prop_map(|(k, a, b, u)| {
            let mut v = vec![s("GEODIST"), k, a, b];
            v.extend(u);
            v
        }).boxed(),
        2 => with_extra(cmd(vec![name("GEOPOS"), gkey()]), prop::collection::vec(gmember(), 0..3).boxed()),
        2 => with_extra(cmd(vec![name("GEOHASH"), gkey()]), prop::collection::vec(gmember(), 0..3).boxed()),
        // A STOREDIST destination is read without its scores (see DELIBERATE_DIFFERENCES).
        2 => cmd(vec![name("ZRANGE"), lit("gd"), lit("0"), lit("-1")]),
        1 => cmd(vec![name("ZCARD"), lit("gd")]),
        1 => cmd(vec![name("ZRANGE"), pick(&["g1", "g2"]), lit("0"), lit("-1"), lit("WITHSCORES")]),
        1 => cmd(vec![name("ZREM"), pick(&["g1", "g2"]), gmember()]),
        // Scores that were never geohashes.
        1 => cmd(vec![name("ZADD"), pick(&["g1", "g2"]), pick(&["-1", "1.5", "1e30", "3479099956230698.5"]), gmember()]),
        1 => cmd(vec![name("DEL"), pick(&["g1", "g2", "gd"])]),
        1 => cmd(vec![name("SET"), pick(&["k1", "gd"]), lit("v")]),
        1 => cmd(vec![name("TYPE"), lit("gd")]),
        1 => cmd(vec![name("CONFIG"), lit("SET"), lit("zset-max-listpack-entries"), pick(&["2", "128"])]),
    ]
    .boxed()
}

fn sort_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    let elem = || pick(&["1", "2", "3", "10", "-1", "1.5", "0x10", "", " 2", "a", "b", "ab"]);
    let num_elem = || pick(&["1", "2", "3", "10", "-1", "1.5", "7", "0"]);
    let weight = || pick(&["1", "2", "3", "-5", "2.5", "x", "10"]);
    let src = || pick(&["sl", "ss", "sz", "nums", "missing", "str"]);
    let limit = || {
        prop_oneof![Just(vec![]), (pick(&["0", "1", "-1", "5", "x"]), pick(&["1", "2", "-1", "0", "100"])).prop_map(|(a, b)| vec![s("LIMIT"), a, b])].boxed()
    };
    let order = || prop_oneof![Just(vec![]), Just(vec![s("DESC")]), Just(vec![s("asc")])].boxed();
    let gets = || {
        prop::collection::vec(pick(&["#", "w_*", "h_*->f", "h_*->nofield", "nokey_*", "const", "h_*->"]).prop_map(|g| vec![s("GET"), g]), 0..3)
            .prop_map(|v| v.concat())
            .boxed()
    };
    let store = || prop_oneof![3 => Just(vec![]), 1 => pick(&["dst", "sl", "str"]).prop_map(|d| vec![s("STORE"), d])].boxed();
    let sort_plain = (pick(&["SORT", "sort", "SORT_RO"]), src(), limit(), order(), prop::bool::ANY, gets(), store()).prop_map(|(c, k, l, o, alpha, g, st)| {
        let mut v = vec![c, k];
        v.extend(l);
        v.extend(o);
        if alpha {
            v.push(s("ALPHA"));
        }
        v.extend(g);
        v.extend(st);
        v
    });
    let sort_by = (pick(&["SORT", "SORT_RO"]), pick(&["nums", "sl", "sz", "ss"]), pick(&["w_*", "h_*->f", "nokey_*"]), limit(), order(), gets(), store())
        .prop_map(|(c, k, by, l, o, g, st)| {
            let mut v = vec![c, k, s("BY"), by];
            v.extend(l);
            v.extend(o);
            v.extend(g);
            v.extend(st);
            v
        });
    let sort_nosort = (pick(&["sl", "sz", "nums"]), limit(), order(), gets(), store()).prop_map(|(k, l, o, g, st)| {
        let mut v = vec![s("SORT"), k, s("BY"), s("nosort")];
        v.extend(l);
        v.extend(o);
        v.extend(g);
        v.extend(st);
        v
    });
    prop_oneof![
        3 => with_extra(cmd(vec![name("RPUSH"), lit("sl")]), prop::collection::vec(elem(), 1..4).boxed()),
        3 => with_extra(cmd(vec![name("RPUSH"), lit("nums")]), prop::collection::vec(num_elem(), 1..4).boxed()),
        3 => with_extra(cmd(vec![name("SADD"), lit("ss")]), prop::collection::vec(num_elem(), 1..4).boxed()),
        1 => with_extra(cmd(vec![name("SADD"), lit("ss")]), prop::collection::vec(elem(), 1..3).boxed()),
        3 => cmd(vec![name("ZADD"), lit("sz"), weight(), num_elem()]),
        1 => cmd(vec![name("ZADD"), lit("sz"), pick(&["1", "2"]), elem()]),
        3 => cmd(vec![name("SET"), num_elem().prop_map(|e| [b"w_".as_slice(), &e].concat()).boxed(), weight()]),
        2 => cmd(vec![name("HSET"), num_elem().prop_map(|e| [b"h_".as_slice(), &e].concat()).boxed(), lit("f"), weight()]),
        1 => cmd(vec![name("SET"), lit("str"), lit("v")]),
        1 => cmd(vec![name("SET"), lit("const"), lit("c")]),
        1 => cmd(vec![name("DEL"), pick(&["sl", "ss", "sz", "nums", "dst"])]),
        6 => sort_plain.boxed(),
        5 => sort_by.boxed(),
        2 => sort_nosort.boxed(),
        1 => cmd(vec![name("SORT"), src(), pick(&["BY", "GET", "LIMIT", "STORE", "BOGUS"])]),
        1 => cmd(vec![name("SORT")]),
        2 => cmd(vec![name("LRANGE"), pick(&["dst", "sl"]), lit("0"), lit("-1")]),
        1 => cmd(vec![name("TYPE"), pick(&["dst", "str"])]),
        1 => cmd(vec![name("OBJECT"), lit("ENCODING"), pick(&["sz", "dst"])]),
    ]
    .boxed()
}

fn list_tx_cmds() -> BoxedStrategy<Step> {
    prop_oneof![
        2 => cmd(vec![name("MULTI")]),
        2 => cmd(vec![name("EXEC")]),
        1 => cmd(vec![name("DISCARD")]),
        1 => cmd(vec![name("WATCH"), lkey()]),
        10 => list_cmds(),
    ]
    .prop_map(|c| (0u8, c))
    .boxed()
}

fn tx_cmds() -> BoxedStrategy<Step> {
    let c0 = prop_oneof![
        3 => cmd(vec![name("MULTI")]),
        3 => cmd(vec![name("EXEC")]),
        1 => cmd(vec![name("DISCARD")]),
        2 => cmd(vec![name("WATCH"), key(), key()]),
        1 => cmd(vec![name("UNWATCH")]),
        6 => string_cmds(),
        2 => hash_cmds(),
        1 => cmd(vec![name("NOSUCH")]),
        1 => cmd(vec![name("SELECT"), pick(&["0", "1"])]),
    ];
    prop_oneof![4 => c0.prop_map(|c| (0u8, c)), 1 => string_cmds().prop_map(|c| (1u8, c))].boxed()
}

fn cases() -> u32 {
    std::env::var("MEMORIA_DIFF_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000)
}

fn run_family(strategy: BoxedStrategy<Vec<Step>>) {
    let servers = Servers { redis: RedisServer::start(&[]), memoria: Memoria::start() };
    let mut runner = TestRunner::new(Config { cases: cases(), failure_persistence: None, ..Config::default() });
    let result = runner.run(&strategy, |steps| run_case(&servers, &steps));
    if let Err(e) = result {
        panic!("{e}");
    }
}

fn single(c: BoxedStrategy<Vec<Vec<u8>>>) -> BoxedStrategy<Vec<Step>> {
    prop::collection::vec(c.prop_map(|c| (0u8, c)), 1..30).boxed()
}

#[test]
fn strings() {
    run_family(single(string_cmds()));
}

#[test]
fn hashes() {
    run_family(single(hash_cmds()));
}

#[test]
fn sets() {
    run_family(single(set_cmds()));
}

#[test]
fn bitmaps() {
    run_family(single(bitmap_cmds()));
}

#[test]
fn hll() {
    run_family(single(hll_cmds()));
}

#[test]
fn keyspace() {
    run_family(single(key_cmds()));
}

#[test]
fn connection_and_server() {
    run_family(single(connection_cmds()));
}

#[test]
fn zsets() {
    run_family(prop::collection::vec(zset_cmds().prop_map(|c| (0u8, c)), 1..40).boxed());
}

#[test]
fn zsets_resp3() {
    // The same commands over RESP3 (HELLO 3 first): doubles, nested pairs, nulls.
    let steps = prop::collection::vec(zset_cmds().prop_map(|c| (0u8, c)), 1..30).prop_map(|mut v| {
        v.insert(0, (0u8, vec![s("HELLO"), s("3")]));
        v
    });
    run_family(steps.boxed());
}

#[test]
fn lists() {
    run_family(prop::collection::vec(list_tx_cmds(), 1..40).boxed());
}

#[test]
fn lists_resp3() {
    let steps = prop::collection::vec(list_cmds().prop_map(|c| (0u8, c)), 1..30).prop_map(|mut v| {
        v.insert(0, (0u8, vec![s("HELLO"), s("3")]));
        v
    });
    run_family(steps.boxed());
}

#[test]
fn geo() {
    run_family(prop::collection::vec(geo_cmds().prop_map(|c| (0u8, c)), 1..40).boxed());
}

#[test]
fn geo_resp3() {
    let steps = prop::collection::vec(geo_cmds().prop_map(|c| (0u8, c)), 1..30).prop_map(|mut v| {
        v.insert(0, (0u8, vec![s("HELLO"), s("3")]));
        v
    });
    run_family(steps.boxed());
}

#[test]
fn sort() {
    run_family(single(sort_cmds()));
}

#[test]
fn sort_resp3() {
    let steps = prop::collection::vec(sort_cmds().prop_map(|c| (0u8, c)), 1..30).prop_map(|mut v| {
        v.insert(0, (0u8, vec![s("HELLO"), s("3")]));
        v
    });
    run_family(steps.boxed());
}

#[test]
fn transactions() {
    run_family(prop::collection::vec(tx_cmds(), 1..30).boxed());
}

// ---------- pub/sub ----------
//
// Pub/sub replies are not one reply per command (SUBSCRIBE a b answers twice, messages
// arrive unasked), so this family reads each connection up to a sentinel PING after every
// step and compares everything that arrived, byte for byte, after `normalize_pubsub`.

const SENTINEL: &str = "__sentinel__";

/// Everything `c` received before the reply to a sentinel PING (RESP2, RESP3 or the
/// subscribed-context form of PING's reply).
fn drain_to_sentinel(c: &mut Raw) -> Vec<Vec<u8>> {
    c.send(&["PING", SENTINEL]);
    let plain = format!("${}\r\n{}\r\n", SENTINEL.len(), SENTINEL).into_bytes();
    let subscribed = format!("*2\r\n$4\r\npong\r\n${}\r\n{}\r\n", SENTINEL.len(), SENTINEL).into_bytes();
    let mut got = Vec::new();
    loop {
        let r = c.read_reply();
        if r == plain || r == subscribed {
            return got;
        }
        got.push(r);
    }
}

/// The bulk items of a flat aggregate of bulks/nulls/integers, as text (None otherwise).
fn flat_items(r: &[u8]) -> Option<(u8, Vec<String>)> {
    let s = String::from_utf8_lossy(r).into_owned();
    let mut lines = s.split("\r\n");
    let head = lines.next()?;
    let kind = *head.as_bytes().first()?;
    if kind != b'*' && kind != b'>' {
        return None;
    }
    let n: usize = head[1..].parse().ok()?;
    let mut out = Vec::new();
    for _ in 0..n {
        let l = lines.next()?;
        if l.starts_with('$') && l != "$-1" {
            out.push(lines.next()?.to_string());
        } else {
            out.push(l.to_string());
        }
    }
    Some((kind, out))
}

/// Applies the pub/sub rows of `DELIBERATE_DIFFERENCES` to what one step produced.
fn normalize_pubsub(cmd: &[Vec<u8>], mut got: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let name = String::from_utf8_lossy(&cmd[0]).to_ascii_lowercase();
    let sub = cmd.get(1).map(|s| String::from_utf8_lossy(s).to_ascii_lowercase()).unwrap_or_default();
    if name == "hello" && got.len() == 1 && got[0][0] != b'-' {
        got[0] = b"<hello reply>".to_vec();
    }
    // CHANNELS and SHARDCHANNELS list names in each server's dict order (Redis: seeded hash).
    if name == "pubsub"
        && (sub == "channels" || sub == "shardchannels")
        && got.len() == 1
        && let Some((k, mut items)) = flat_items(&got[0])
    {
        items.sort();
        got[0] = format!("{}{:?}", k as char, items).into_bytes();
    }
    // Unsubscribing from everything: Redis walks its dict; compare the set of names.
    if (name == "unsubscribe" || name == "punsubscribe" || name == "sunsubscribe") && cmd.len() == 1 {
        let mut confirmations = Vec::new();
        let mut rest = Vec::new();
        for r in got {
            match flat_items(&r) {
                Some((k, items)) if items.len() == 3 && items[0].ends_with("unsubscribe") => confirmations.push(format!("{}{}", k as char, items[1])),
                _ => rest.push(r),
            }
        }
        confirmations.sort();
        rest.insert(0, confirmations.join(",").into_bytes());
        got = rest;
    }
    // A write's notifications to the writer itself: the reply, then the pushes.
    if matches!(name.as_str(), "set" | "del" | "hset" | "incr") {
        let (pushes, replies): (Vec<_>, Vec<_>) = got.into_iter().partition(|r| r.first() == Some(&b'>'));
        got = replies.into_iter().chain(pushes).collect();
    }
    // pmessages of one publish (same channel and payload) come in each server's pattern
    // dict order.
    let mut i = 0;
    while i < got.len() {
        let key = |r: &[u8]| flat_items(r).filter(|(_, it)| it.len() == 4 && it[0] == "pmessage").map(|(_, it)| (it[2].clone(), it[3].clone()));
        let Some(k) = key(&got[i]) else {
            i += 1;
            continue;
        };
        let mut j = i + 1;
        while j < got.len() && key(&got[j]).as_ref() == Some(&k) {
            j += 1;
        }
        got[i..j].sort();
        i = j;
    }
    got
}

fn run_pubsub_case(s: &Servers, steps: &[Step]) -> Result<(), TestCaseError> {
    let mut r = [Raw::connect(s.redis.port), Raw::connect(s.redis.port)];
    let mut m = [Raw::connect(s.memoria.port), Raw::connect(s.memoria.port)];
    for c in [&mut r[0], &mut m[0]] {
        c.cmd(&["FLUSHALL"]);
        c.cmd(&["CONFIG", "SET", "notify-keyspace-events", ""]);
    }
    let mut log = Vec::new();
    for (who, cmd) in steps {
        let who = *who as usize;
        let shown: Vec<String> = cmd.iter().map(|x| String::from_utf8_lossy(x).into_owned()).collect();
        log.push(format!("c{who}> {}", shown.join(" ")));
        r[who].send(cmd);
        m[who].send(cmd);
        // The caller first (its replies, then messages to itself), then the other one.
        for c in [who, 1 - who] {
            let a = normalize_pubsub(cmd, drain_to_sentinel(&mut r[c]));
            let b = normalize_pubsub(cmd, drain_to_sentinel(&mut m[c]));
            if a != b {
                let show = |v: &[Vec<u8>]| v.iter().map(|x| String::from_utf8_lossy(x).into_owned()).collect::<Vec<_>>();
                return Err(TestCaseError::fail(format!(
                    "connection c{c} differs\nsequence:\n  {}\nredis:   {:?}\nmemoria: {:?}",
                    log.join("\n  "),
                    show(&a),
                    show(&b)
                )));
            }
        }
    }
    // Leave no subscriber behind for the next case (a dropped connection is cleaned up
    // asynchronously by both servers).
    for c in r.iter_mut().chain(m.iter_mut()) {
        c.send(&["RESET"]);
        drain_to_sentinel(c);
    }
    Ok(())
}

fn channel() -> BoxedStrategy<Vec<u8>> {
    pick(&["ch1", "ch2", "news", "__keyspace@0__:k1", "__keyevent@0__:set", "__keyevent@0__:del"])
}
fn pattern() -> BoxedStrategy<Vec<u8>> {
    pick(&["ch*", "n?ws", "*", "__key*__:*", "__keyspace@0__:*", "[cn]*", "nomatch"])
}

fn pubsub_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    prop_oneof![
        3 => cmd(vec![name("SUBSCRIBE"), channel()]),
        1 => cmd(vec![name("SUBSCRIBE"), channel(), channel()]),
        2 => cmd(vec![name("UNSUBSCRIBE"), channel()]),
        1 => cmd(vec![name("UNSUBSCRIBE")]),
        2 => cmd(vec![name("PSUBSCRIBE"), pattern()]),
        1 => cmd(vec![name("PUNSUBSCRIBE"), pattern()]),
        1 => cmd(vec![name("PUNSUBSCRIBE")]),
        1 => cmd(vec![name("SSUBSCRIBE"), channel()]),
        1 => cmd(vec![name("SUNSUBSCRIBE")]),
        1 => cmd(vec![name("SPUBLISH"), channel(), value()]),
        5 => cmd(vec![name("PUBLISH"), channel(), value()]),
        1 => cmd(vec![name("PUBLISH"), channel()]),
        1 => cmd(vec![name("SUBSCRIBE")]),
        1 => cmd(vec![name("PUBSUB"), pick(&["NUMSUB", "numsub"]), channel(), channel()]),
        1 => cmd(vec![name("PUBSUB"), lit("NUMSUB")]),
        1 => cmd(vec![name("PUBSUB"), pick(&["NUMPAT", "SHARDNUMSUB"])]),
        1 => cmd(vec![name("PUBSUB"), pick(&["CHANNELS", "SHARDCHANNELS"])]),
        1 => cmd(vec![name("PUBSUB"), lit("CHANNELS"), pattern()]),
        1 => cmd(vec![name("PUBSUB"), lit("CHANNELS"), pattern(), pattern()]),
        1 => cmd(vec![name("PUBSUB"), pick(&["NUMPAT", "BOGUS", "HELP"]), channel()]),
        1 => cmd(vec![name("PUBSUB")]),
        1 => cmd(vec![name("PUBSUB"), lit("HELP")]),
        // Refused in a RESP2 subscribed context; keyspace notifications when enabled.
        3 => cmd(vec![name("SET"), key(), value()]),
        1 => cmd(vec![name("DEL"), key()]),
        1 => cmd(vec![name("HSET"), key(), field(), value()]),
        1 => cmd(vec![name("INCR"), key()]),
        1 => cmd(vec![name("GET"), key()]),
        1 => cmd(vec![name("GET")]),
        1 => cmd(vec![name("NOSUCH")]),
        1 => cmd(vec![name("CONFIG"), lit("GET"), lit("notify-keyspace-events")]),
        2 => cmd(vec![name("CONFIG"), lit("SET"), lit("notify-keyspace-events"), pick(&["KEA", "K$", "Eg", "AK", "E$h", "", "KEn", "bad!"])]),
        // No MULTI: a queued sentinel PING would never answer.
        1 => cmd(vec![name("EXEC")]),
        1 => cmd(vec![name("PING")]),
        1 => cmd(vec![name("PING"), value()]),
        1 => cmd(vec![name("RESET")]),
        1 => cmd(vec![name("HELLO"), pick(&["3", "2"])]),
        1 => cmd(vec![name("CLIENT"), lit("GETNAME")]),
    ]
    .boxed()
}

#[test]
fn pubsub() {
    let servers = Servers { redis: RedisServer::start(&[]), memoria: Memoria::start() };
    let mut runner = TestRunner::new(Config { cases: cases(), failure_persistence: None, ..Config::default() });
    let steps = prop::collection::vec((0u8..2, pubsub_cmds()), 1..30).boxed();
    let result = runner.run(&steps, |steps| run_pubsub_case(&servers, &steps));
    if let Err(e) = result {
        panic!("{e}");
    }
}

// ---------- scripting ----------

/// Scripts written to cover Redis 7.0's conversions and error texts one by one.
const SCRIPTS: &[&str] = &[
    "return 1",
    "return -7.9",
    "return 3.99",
    "return 'x'",
    "return ''",
    "return true",
    "return false",
    "return nil",
    "return {}",
    "return {1,2,3.7,'x',nil,4}",
    "return {1,{2,{3,'x',{}}},false,true}",
    "return {ok='fine'}",
    "return {ok='a\\r\\nb'}",
    "return {err='My Error'}",
    "return {err='bad\\nline'}",
    "return {err=5}",
    "return {ok=1}",
    "return redis.error_reply('x y')",
    "return redis.error_reply('My')",
    "return redis.error_reply('-WRONG kind')",
    "return redis.error_reply(1)",
    "return redis.status_reply('fine')",
    "return redis.status_reply()",
    "return {double=3.5}",
    "return {double=1/0}",
    "return {big_number='12345678901234567890'}",
    "return {map={a=1}}",
    "return {set={x=true}}",
    "return {verbatim_string={format='txt', string='hi'}}",
    "return 2^53",
    "return 2^63",
    "return -2^63",
    "return 1e300",
    "return tostring(1/3)",
    "return tostring(-0.0)",
    "return tostring(2^53)",
    "return tostring(1e15)",
    "return tostring(1e16)",
    "return tostring(123456789012)",
    "return tostring(0.1)",
    "return tostring(1/0)",
    "return tostring(-1/0)",
    "return {tonumber('0x10'), tonumber('1e5'), tonumber(' 12 '), tonumber('1.5e'), tonumber('z', 36), tonumber('7', 8)}",
    "return tostring(tonumber('.5'))",
    "return tostring(tonumber('5.'))",
    "return string.format('%5.2f|%d|%s|%x|%g|%e|%G|%o|%c|%q', 3.14159, 42, 'hi', 255, 1e20, 12345.678, 0.0001, 8, 65, 'a\\nb\\0c')",
    "return string.format('%-5d|%05d|%+d|% d|%.3s|%10.4f|%#x|%#o|%.0f|%g|%g', 7, 7, 7, 7, 'abcdef', math.pi, 255, 8, 2.5, 100000, 1000000)",
    "return string.format('%g|%g|%g|%.3g|%.10g', 0.0001, 0.00001, 123456789, 1234.5, 1/3)",
    "return {string.byte('ABC', 1, -1)}",
    "return string.char(72, 105)",
    "return {string.find('hello world', 'o w'), string.find('hello', 'l+'), string.match('key:123', '(%a+):(%d+)')}",
    "return {string.gsub('hello world', 'o', '0'), string.gsub('abc', '%w', '%0%0')}",
    "return string.rep('ab', 3, ',')",
    "return {string.upper('aBc'), string.lower('AbC'), string.len('abc'), string.reverse('abc'), string.sub('hello', 2, -2)}",
    "local t = {} for w in string.gmatch('one two three', '%a+') do t[#t+1] = w end return t",
    "return table.concat({1, 2, 'x'}, '-')",
    "local t = {5, 2, 8, 1} table.sort(t) return t",
    "local t = {5, 2, 8, 1} table.sort(t, function(a, b) return a > b end) return t",
    "return {unpack({1, 2, 3})}",
    "return select('#', 1, nil, 3)",
    "return {math.floor(3.7), math.ceil(3.2), math.abs(-4), math.max(1, 9, 3), math.min(4, 2), math.fmod(7, 3), math.sqrt(16), math.pow(2, 10)}",
    "return tostring(math.sin(1)) .. ' ' .. tostring(math.exp(1)) .. ' ' .. tostring(math.log(10))",
    "return {math.random(), math.random(10), math.random(5, 9)}",
    "return math.random(0)",
    "math.randomseed(7) return {math.random(100), math.random(100), math.random(100)}",
    "return tostring(math.random())",
    "return type(KEYS) .. #KEYS .. #ARGV",
    "return KEYS",
    "return ARGV",
    "return redis.call('incr', KEYS[1])",
    "return redis.pcall('incr', KEYS[1])",
    "return redis.call('set', KEYS[1], ARGV[1])",
    "return redis.call('get', KEYS[1])",
    "return redis.call('set', KEYS[1], 0.1)",
    "return redis.call('set', KEYS[1], 42)",
    "return redis.call('hset', KEYS[1], 'f', 'v', 'g', 'w')",
    "return redis.call('hgetall', KEYS[1])",
    "redis.setresp(3) return redis.call('hgetall', KEYS[1])",
    "redis.setresp(3) local t = redis.call('hgetall', KEYS[1]) return type(t) == 'table' and t.map ~= nil",
    "redis.setresp(3) return redis.call('get', 'no-such-key')",
    "redis.setresp(3) return type(redis.call('get', 'no-such-key'))",
    "return type(redis.call('get', 'no-such-key'))",
    "redis.setresp(3) return redis.call('zscore', KEYS[1], 'm')",
    "redis.setresp(3) return redis.call('smembers', KEYS[1])",
    "redis.setresp(3) return true",
    "redis.setresp(3) return false",
    "redis.setresp(3) return nil",
    "return redis.setresp(4)",
    "return redis.setresp()",
    "return redis.call('lpush', KEYS[1], 'a', 'b', 'c')",
    "return redis.call('lrange', KEYS[1], 0, -1)",
    "return redis.call('del', KEYS[1])",
    "return redis.call('type', KEYS[1])",
    "return redis.call('ping')",
    "return redis.call('zadd', KEYS[1], 1.5, 'm')",
    "return redis.call('zrange', KEYS[1], 0, -1, 'withscores')",
    "return redis.call('expire', KEYS[1], 100)",
    "return redis.call('get')",
    "return redis.pcall('get')",
    "return redis.call()",
    "return redis.pcall()",
    "return redis.call({})",
    "return redis.call('get', {})",
    "return redis.call('nosuch')",
    "return redis.pcall('nosuch')",
    "return redis.call('subscribe', 'x')",
    "return redis.call('multi')",
    "return redis.call('eval', 'return 1', 0)",
    "return redis.call('client', 'nosuch')",
    "return redis.call('config', 'get', 'maxmemory')",
    "return redis.call('select', 1)",
    "local ok, e = pcall(redis.call, 'incr', KEYS[1]) return {tostring(ok), type(e)}",
    "local ok, e = pcall(error, 'x') return {tostring(ok), e}",
    "local ok, e = pcall(error, {err='tbl'}) return e",
    "local ok, e = pcall(function() local x = nil; return x.y end) return e",
    "return error('boom')",
    "return error('boom', 0)",
    "return error({err='custom'})",
    "return error()",
    "return error(nil)",
    "return error(12)",
    "return foo.bar",
    "return foo",
    "a = 1",
    "string.foo = 1",
    "rawset(_G, 'x', 1)",
    "setmetatable(_G, nil)",
    "local s = 'abc'; s.x = 1",
    "return getmetatable('').__index == string",
    "return loadstring('return 1')()",
    "return {loadstring('return +')}",
    "return loadstring(string.dump(function() return 1 end))",
    "return type(print)",
    "return type(os)",
    "return type(io)",
    "return _VERSION",
    "return redis.sha1hex('')",
    "return redis.sha1hex('abc')",
    "return redis.sha1hex()",
    "return redis.REDIS_VERSION_NUM",
    "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING, redis.REPL_NONE, redis.REPL_AOF, redis.REPL_REPLICA, redis.REPL_SLAVE, redis.REPL_ALL}",
    "redis.log(redis.LOG_WARNING, 'hi') return 1",
    "return redis.log(redis.LOG_WARNING)",
    "return redis.log('x', 'y')",
    "return redis.log(9, 'y')",
    "redis.set_repl(redis.REPL_ALL) return 1",
    "return redis.set_repl(99)",
    "return redis.replicate_commands()",
    "return redis.breakpoint()",
    "return redis.debug('x')",
    "return redis.acl_check_cmd('set', 'a', 'b')",
    "return redis.acl_check_cmd('nosuch')",
    "return redis.acl_check_cmd()",
    "local t = {} t[1] = t return 1",
    "return {1, 2, 3, n = 4}",
    "return {[1] = 'a', [3] = 'c'}",
    "return coroutine.wrap(function() coroutine.yield(5) end)()",
    "local co = coroutine.create(function(a) return a * 2 end) return {coroutine.resume(co, 21)}",
    "return string.find(string.rep('a', 10), string.rep('a?', 300))",
    "return cjson.encode({1, 'a/b', {x = 1.5}, true, cjson.null, -0.0, 1e20, 0.1})",
    "return cjson.encode({[1] = 1, [3] = 3})",
    "return cjson.encode({[1] = 1, [30] = 3})",
    "return cjson.encode(function() end)",
    "return cjson.encode(1/0)",
    "return cjson.encode({a = {b = {c = 'd'}}})",
    "return cjson.encode(ARGV)",
    r#"return cjson.decode('[1, "x", true, null, {"k": [2.5, -1e3]}]')"#,
    r#"return cjson.decode('{"a": 1, }')"#,
    "return cjson.decode('[1, 2')",
    r#"return cjson.decode('"\\u00e9\\ud83d\\ude00"')"#,
    "return cjson.decode('0x10')",
    "return cjson.decode(ARGV[1] or 'null') == cjson.null",
    "return type(cjson.decode('null'))",
    "return cjson.decode(string.rep('[', 1001))",
    "return {cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.encode_number_precision()}",
    "return {bit.tobit(0xffffffff), bit.tohex(255), bit.tohex(-1, -4), bit.band(0xff, 0x0f), bit.bor(1, 2, 4), bit.bxor(5, 3), bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x12345678, 8), bit.bswap(0x12345678)}",
    "return bit.band()",
    "return bit.tobit('x')",
    "return cmsgpack.pack(0, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, 2^53, 2^63, -2^63, -1, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649)",
    "return cmsgpack.pack(0.5, -0.5, 1.1, 1e300, 1/0, -1/0, -0.0, 3.4e38, 1e-45, 0.1)",
    "return cmsgpack.pack(true, false, nil, '', 'a', '1', 1, string.rep('a', 31), string.rep('b', 32))",
    "return {#cmsgpack.pack(string.rep('a', 255)), #cmsgpack.pack(string.rep('a', 256)), #cmsgpack.pack(string.rep('a', 65535)), cmsgpack.pack(string.rep('a', 65536)):sub(1, 6)}",
    "return cmsgpack.pack({}, {1, 2, nil, 4}, {[1] = 1, [3] = 3}, {[2] = 1, [1] = 3}, {[1.5] = 1}, {[0] = 1}, {[2^31] = 1}, {1, 2, a = 3}, {[true] = 1})",
    "local t = {} for i = 1, 16 do t[i] = i; t['k' .. i] = i end return cmsgpack.pack(t):sub(1, 3)",
    "local t = {} for i = 1, 65536 do t[i] = 0 end return cmsgpack.pack(t):sub(1, 6)",
    "local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return cmsgpack.pack(t)",
    "local t = {} t[1] = t t.a = t return cmsgpack.pack(t):sub(1, 20)",
    "return cmsgpack.pack(redis.call('ping'), function() end, cjson.null)",
    "return cmsgpack.pack(ARGV)",
    "return cmsgpack.pack()",
    "local t = {} for i = 1, 4001 do t[i] = 1 end return #cmsgpack.pack(unpack(t))",
    "local t = {} for i = 1, 3999 do t[i] = 1 end t[4000] = {} return #cmsgpack.pack(unpack(t))",
    "return cmsgpack.unpack(cmsgpack.pack(1, 'two', {3, {4}}, -5.5))",
    "local t = cmsgpack.unpack(cmsgpack.pack({a = 1, b = {c = 'd'}, 2^40})) return {t.a, t.b.c, tostring(t[1])}",
    "return {cmsgpack.unpack(cmsgpack.pack(unpack(ARGV)))}",
    "return {tostring(cmsgpack.unpack('\\207\\255\\255\\255\\255\\255\\255\\255\\255')), tostring(cmsgpack.unpack('\\207\\128\\0\\0\\0\\0\\0\\0\\1'))}",
    "return {cmsgpack.unpack('\\204\\200\\205\\1\\0\\206\\255\\255\\255\\255\\208\\128\\209\\128\\0\\210\\128\\0\\0\\0\\224\\127\\192\\195\\194')}",
    "return {cmsgpack.unpack('\\217\\3abc\\218\\0\\2de\\219\\0\\0\\0\\1f\\163ghi'), tostring(cmsgpack.unpack('\\202\\63\\192\\0\\0'))}",
    "return cmsgpack.unpack('\\196\\1a')",
    "return cmsgpack.unpack('\\217\\5ab')",
    "return cmsgpack.unpack('\\221\\255\\255\\255\\255')",
    "return cmsgpack.unpack('\\130\\192\\1\\192')",
    "return cmsgpack.unpack({})",
    "return {cmsgpack.unpack_one('\\1\\2'), cmsgpack.unpack_one('\\1\\2', 2)}",
    "return {cmsgpack.unpack_limit('\\1\\2\\3', 2, 0)}",
    "return {cmsgpack.unpack_limit('\\1\\2\\3', 0, 1)}",
    "return {cmsgpack.unpack_limit('\\1\\2\\3', 2^32 + 1)}",
    "return cmsgpack.unpack_limit('\\1\\2', -1)",
    "return cmsgpack.unpack_one('\\1\\2', 3)",
    "return {pcall(cmsgpack.unpack, string.rep('\\145', 4000) .. '\\1')}",
    "return {pcall(cmsgpack.unpack, string.rep('\\129\\1', 4000) .. '\\1')}",
    "return {pcall(cmsgpack.unpack, string.rep('\\1', 8000))}",
    "return {cmsgpack._NAME, cmsgpack._VERSION}",
    "cmsgpack.pack = nil",
    "return struct.pack('bBhHlLTiI', -1, 255, -2, 65535, -3, 4, 5, -6, 7)",
    "return struct.pack('>bBhHlLTiI', -1, 255, -2, 65535, -3, 4, 5, -6, 7)",
    "return struct.pack('<i3', -2) .. struct.pack('>i16', -1) .. struct.pack('I16', 2^64) .. struct.pack('i0', 5)",
    "return struct.pack('LLLLL', 2^63, 2^64, 1e30, 1/0, 1.9) .. struct.pack('lll', -1e30, -1/0, -1.9)",
    "return struct.pack('f', 1.5) .. struct.pack('>f', 1e300) .. struct.pack('>d', 0.1) .. struct.pack('<d', 0.1)",
    "return struct.pack('c3', 'abcdef') .. struct.pack('c0', 'abcdef') .. struct.pack('s', 'a\\0b') .. struct.pack('bxb', 1, 2)",
    "return struct.pack('!4 b i', 1, 2) .. struct.pack('!8bd', 1, 2) .. struct.pack('!bi3', 1, 2) .. struct.pack('!bsi', 1, 'abc', 2)",
    "return struct.pack('c5', 'ab')",
    "return struct.pack('z', 1)",
    "return struct.pack('b', 'x')",
    "return struct.pack('i33', 5)",
    "return struct.pack('!3bd', 1, 2)",
    "return struct.pack('i99999999999', 1)",
    "return {struct.unpack('bBhH', '\\255\\255\\254\\255\\255\\255')}",
    "return {struct.unpack('>lL', string.rep('\\255', 16))}",
    "return {tostring(struct.unpack('<I16', string.rep('\\255', 16))), tostring(struct.unpack('<i9', '\\0\\0\\0\\0\\0\\0\\0\\128\\0'))}",
    "return {struct.unpack('bc0', '\\3abcdef')}",
    "return {struct.unpack('!4 b i c2 x d', struct.pack('!4 b i c2 x d', 1, 2, 'hi', 3.5))}",
    "return {struct.unpack('s', 'ab\\0cd')}",
    "return {struct.unpack('b', 'ab', 2)}",
    "return struct.unpack('c0', 'abcdef')",
    "return struct.unpack('ss', 'ab\\0cd')",
    "return struct.unpack('b', 'ab', 0)",
    "return struct.unpack('b', 'ab', -1)",
    "return #{struct.unpack(string.rep('b', 7998), string.rep('a', 8000))}",
    "return {struct.size('bBhHlLTiIfdx'), struct.size('!bBhHlLTiIfdx'), struct.size('!i3i3'), struct.size('bzb'), struct.size(string.rep('c2147483647', 5000))}",
    "return struct.size('s')",
    "return struct.size('%')",
    "struct.size = nil",
    "retur 1",
    "return 1 +",
    "#!lua\nreturn redis.call('set', KEYS[1], 'v')",
    "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'v')",
    "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])",
    "#!lua flags=foo\nreturn 1",
    "#!lua bar=1\nreturn 1",
    "#!python\nreturn 1",
];

/// Fragments random scripts are made of: values of each Lua type and calls.
const EXPRS: &[&str] = &[
    "1",
    "-1",
    "0",
    "2.5",
    "-0.5",
    "1e10",
    "'s'",
    "''",
    "true",
    "false",
    "nil",
    "{}",
    "{1, 'a'}",
    "{ok='y'}",
    "{err='ERR e'}",
    "KEYS[1]",
    "ARGV[1]",
    "#ARGV",
    "redis.call('get', KEYS[1])",
    "redis.pcall('incr', KEYS[1])",
    "redis.call('exists', KEYS[1])",
    "redis.call('set', KEYS[1], ARGV[1] or 'v')",
    "redis.pcall('hget', KEYS[1], 'f')",
    "redis.call('llen', KEYS[1])",
    "redis.pcall('lpush', KEYS[1], 'x')",
    "redis.call('type', KEYS[1])",
    "tostring(7/2)",
    "string.rep('ab', 2)",
    "math.floor(9.99)",
    "tonumber('12')",
    "redis.status_reply('ok2')",
    "redis.error_reply('E2 bad')",
];

fn script_expr() -> BoxedStrategy<String> {
    let leaf = proptest::sample::select(EXPRS).prop_map(str::to_string);
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("{{{}}}", v.join(", "))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) and ({b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) or ({b})")),
            // (tostring of a table prints its address: not generated.)
            inner.prop_map(|a| format!("type({a})")),
        ]
    })
    .boxed()
}

fn random_script() -> BoxedStrategy<Vec<u8>> {
    (prop::collection::vec(script_expr(), 0..3), script_expr(), any::<bool>())
        .prop_map(|(stmts, ret, resp3)| {
            let mut body = String::new();
            if resp3 {
                body.push_str("redis.setresp(3) ");
            }
            for st in stmts {
                body.push_str(&format!("local _ = {st} "));
            }
            body.push_str(&format!("return {ret}"));
            body.into_bytes()
        })
        .boxed()
}

fn script_body() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![3 => proptest::sample::select(SCRIPTS).prop_map(|x| x.as_bytes().to_vec()), 2 => random_script()].boxed()
}

fn eval_tail(name: &'static str) -> BoxedStrategy<Vec<Vec<u8>>> {
    (script_body(), prop::collection::vec(key(), 0..3), prop::collection::vec(value(), 0..3))
        .prop_map(move |(body, keys, args)| {
            let mut c = vec![s(name), body, s(&keys.len().to_string())];
            c.extend(keys);
            c.extend(args);
            c
        })
        .boxed()
}

/// Function libraries: one function each (FUNCTION LIST orders a library's functions by
/// Redis's dict), valid and not.
const LIBRARIES: &[&str] = &[
    "#!lua name=lib1\nredis.register_function('echo1', function(keys, args) return args end)",
    "#!lua name=lib2\nredis.register_function{function_name='get2', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}",
    "#!lua name=lib3\nredis.register_function('incr3', function(keys) return redis.call('incr', keys[1]) end)",
    "#!lua name=lib4\nlocal n = 0\nredis.register_function{function_name='count4', callback=function() n = n + 1 return n end, flags={'allow-stale', 'no-writes'}}",
    "#!lua name=lib5\nredis.register_function('echo1', function() return 5 end)",
    "#!lua name=lib6\nredis.register_function('bad6', function() return KEYS end)",
    "#!lua name=lib7\nreturn 1",
    "#!lua name=lib8\nredis.call('ping')",
    "#!lua name=lib9\nlocal x = +",
    "#!lua name=lib-10\nredis.register_function('f10', function() return 1 end)",
    "#!lua name=lib11 foo=bar\nredis.register_function('f11', function() return 1 end)",
    "#!lua name=lib12\nredis.register_function{function_name='f12', callback=function() return 1 end, flags={'nope'}}",
    "#!lua name=lib13\nredis.register_function('mp13', function(keys, args) return cmsgpack.pack(args, struct.pack('>i2', #args)) end)",
    "#!lua name=lib14\nlocal s = struct.pack('b', 1)\nredis.register_function('f14', function() return s end)",
];

fn function_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    let lib_name = || pick(&["lib1", "lib2", "lib3", "lib4", "lib5", "lib13", "nolib"]);
    let fname = || pick(&["echo1", "get2", "incr3", "count4", "bad6", "mp13", "nofunc"]);
    prop_oneof![
        3 => proptest::sample::select(LIBRARIES).prop_map(|l| vec![s("FUNCTION"), s("LOAD"), s(l)]),
        1 => proptest::sample::select(LIBRARIES).prop_map(|l| vec![s("FUNCTION"), s("LOAD"), s("REPLACE"), s(l)]),
        4 => (fname(), prop::collection::vec(key(), 0..2), prop::collection::vec(value(), 0..2)).prop_map(|(f, keys, args)| {
            let mut c = vec![s("FCALL"), f, s(&keys.len().to_string())];
            c.extend(keys);
            c.extend(args);
            c
        }),
        2 => (fname(), key()).prop_map(|(f, k)| vec![s("FCALL_RO"), f, s("1"), k]),
        1 => cmd(vec![name("FCALL"), fname(), pick(&["x", "-1", "9"])]),
        1 => cmd(vec![name("FUNCTION"), lit("DELETE"), lib_name()]),
        1 => cmd(vec![name("FUNCTION"), lit("LIST")]),
        1 => cmd(vec![name("FUNCTION"), lit("LIST"), lit("WITHCODE")]),
        1 => cmd(vec![name("FUNCTION"), lit("LIST"), lit("LIBRARYNAME"), pick(&["lib1", "lib*", "x*"])]),
        1 => cmd(vec![name("FUNCTION"), lit("LIST"), pick(&["bogus", "LIBRARYNAME"])]),
        1 => cmd(vec![name("FUNCTION"), pick(&["STATS", "KILL", "HELP", "NOSUCH"])]),
        1 => cmd(vec![name("FUNCTION"), lit("FLUSH"), pick(&["SYNC", "ASYNC", "bad"])]),
        2 => (proptest::sample::select(LIBRARIES), pick(&["", "FLUSH", "APPEND", "replace", "bad"]), 0u8..8).prop_map(|(l, policy, corrupt)| {
            let mut c = vec![s("FUNCTION"), s("RESTORE"), function_payload(&[l], corrupt)];
            if !policy.is_empty() {
                c.push(policy);
            }
            c
        }),
    ]
    .boxed()
}

/// A FUNCTION DUMP payload of `libs`; `corrupt` 1 flips a bit of its checksum, 2 makes it
/// claim a newer RDB version, 3 gives a record a type that is no function.
fn function_payload(libs: &[&str], corrupt: u8) -> Vec<u8> {
    let mut out = Vec::new();
    for l in libs {
        out.push(if corrupt == 3 { 0 } else { memoria_core::rdb::TYPE_FUNCTION2 });
        memoria_core::rdb::write_string(&mut out, l.as_bytes());
    }
    memoria_core::rdb::finish_payload(&mut out);
    let n = out.len();
    match corrupt {
        1 => out[n - 1] ^= 1,
        2 => out[n - 10] += 1,
        _ => {}
    }
    out
}

/// FUNCTION DUMP of one server restores on the other, both ways (Redis may LZF-compress
/// a library's code; Memoria writes it plain), and FUNCTION RESTORE's policies act alike.
#[test]
fn function_dump_restores_across_servers() {
    let servers = Servers { redis: RedisServer::start(&[]), memoria: Memoria::start() };
    let mut r = Raw::connect(servers.redis.port);
    let mut m = Raw::connect(servers.memoria.port);
    let compressible = format!("#!lua name=lzf\nredis.register_function('rep', function() return '{}' end)", "ab".repeat(200));
    let libs = [LIBRARIES[0], LIBRARIES[1], LIBRARIES[2], LIBRARIES[12], &compressible];
    let same = |r: &mut Raw, m: &mut Raw, cmd: &[&[u8]], what: &str| {
        let (a, b) = (r.cmd(cmd), m.cmd(cmd));
        let owned: Vec<Vec<u8>> = cmd.iter().map(|a| a.to_vec()).collect();
        assert_eq!(
            normalize(&owned, parse(&a).0),
            normalize(&owned, parse(&b).0),
            "{what}: {:?} vs {:?}",
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b)
        );
    };
    for c in [&mut r, &mut m] {
        c.cmd(&["FUNCTION", "FLUSH"]);
    }
    for l in libs {
        assert!(r.cmd(&["FUNCTION", "LOAD", l]).starts_with(b"$"));
    }
    let payload = |c: &mut Raw| {
        let d = c.cmd(&["FUNCTION", "DUMP"]);
        let start = d.iter().position(|&b| b == b'\n').unwrap() + 1;
        d[start..d.len() - 2].to_vec()
    };
    let from_redis = payload(&mut r);
    assert_eq!(m.cmd(&[b"FUNCTION".as_slice(), b"RESTORE", &from_redis]), b"+OK\r\n");
    same(&mut r, &mut m, &[b"FUNCTION", b"LIST", b"WITHCODE"], "Redis's dump restored on Memoria");
    same(&mut r, &mut m, &[b"FCALL", b"rep", b"0"], "a function of an LZF-compressed library");
    // APPEND of libraries that exist: each server names one (which one follows its order).
    for c in [&mut r, &mut m] {
        let e = String::from_utf8_lossy(&c.cmd(&[b"FUNCTION".as_slice(), b"RESTORE", &from_redis])).into_owned();
        assert!(e.starts_with("-ERR Library ") && e.ends_with(" already exists\r\n"), "{e}");
    }
    same(&mut r, &mut m, &[b"FUNCTION", b"RESTORE", &from_redis, b"REPLACE"], "REPLACE");
    let from_memoria = payload(&mut m);
    assert_eq!(r.cmd(&[b"FUNCTION".as_slice(), b"RESTORE", &from_memoria, b"FLUSH"]), b"+OK\r\n");
    same(&mut r, &mut m, &[b"FUNCTION", b"LIST", b"WITHCODE"], "Memoria's dump restored on Redis");
    same(&mut r, &mut m, &[b"FCALL", b"echo1", b"0", b"x"], "a function after the round trip");
    for c in [&mut r, &mut m] {
        c.cmd(&["FUNCTION", "FLUSH"]);
    }
    same(&mut r, &mut m, &[b"FUNCTION", b"DUMP"], "the dump of no library");
}

fn scripting_cmds() -> BoxedStrategy<Vec<Vec<u8>>> {
    let sha_of_known = proptest::sample::select(SCRIPTS).prop_map(|x| {
        use sha1::Digest;
        s(&sha1::Sha1::digest(x.as_bytes()).iter().map(|b| format!("{b:02x}")).collect::<String>())
    });
    prop_oneof![
        10 => eval_tail("EVAL"),
        2 => eval_tail("EVAL_RO"),
        2 => (sha_of_known.clone(), prop::collection::vec(key(), 0..2)).prop_map(|(sha, keys)| {
            let mut c = vec![s("EVALSHA"), sha, s(&keys.len().to_string())];
            c.extend(keys);
            c
        }),
        1 => sha_of_known.clone().prop_map(|sha| vec![s("EVALSHA_RO"), sha, s("0")]),
        1 => sha_of_known.clone().prop_map(|sha| vec![s("EVALSHA"), sha.to_ascii_uppercase(), s("0")]),
        2 => script_body().prop_map(|b| vec![s("SCRIPT"), s("LOAD"), b]),
        1 => (sha_of_known.clone(), sha_of_known).prop_map(|(a, b)| vec![s("SCRIPT"), s("EXISTS"), a, b, s("nope")]),
        1 => cmd(vec![name("EVAL"), lit("return 1"), pick(&["-1", "x", "5", ""])]),
        1 => cmd(vec![name("EVAL"), lit("return 1")]),
        1 => cmd(vec![name("EVALSHA"), pick(&["abc", "0000000000000000000000000000000000000000"]), lit("0")]),
        1 => cmd(vec![name("SCRIPT"), pick(&["KILL", "HELP", "NOSUCH", "EXISTS", "LOAD"])]),
        1 => cmd(vec![name("SCRIPT"), lit("FLUSH"), pick(&["SYNC", "ASYNC", "bad"])]),
        2 => cmd(vec![name("HELLO"), pick(&["2", "3"])]),
        6 => function_cmds(),
        2 => cmd(vec![name("GET"), key()]),
        1 => cmd(vec![name("TYPE"), key()]),
        1 => cmd(vec![name("LRANGE"), key(), lit("0"), lit("-1")]),
        1 => cmd(vec![name("DEL"), key()]),
        1 => cmd(vec![name("SET"), key(), value()]),
        1 => cmd(vec![name("HSET"), key(), lit("f"), value()]),
        1 => cmd(vec![name("SADD"), key(), value()]),
        1 => cmd(vec![name("ZADD"), key(), lit("1"), lit("m")]),
    ]
    .boxed()
}

#[test]
fn scripting() {
    run_family(single(scripting_cmds()));
}

#[test]
fn streams() {
    run_family(prop::collection::vec(stream_cmds().prop_map(|c| (0u8, c)), 1..40).boxed());
}

/// Streams with consumer groups already in play: entries over several nodes, two groups,
/// some deliveries pending.
#[test]
fn stream_groups() {
    let setup: Vec<Step> = [
        "CONFIG SET stream-node-max-entries 3",
        "XADD s1 10-0 f1 v",
        "XADD s1 20-0 f1 w",
        "XADD s1 30-0 f2 x",
        "XADD s1 40-0 f1 7",
        "XADD s1 50-0 f1 v f2 y",
        "XGROUP CREATE s1 g1 0",
        "XGROUP CREATE s1 g2 $",
        "XREADGROUP GROUP g1 c1 COUNT 2 STREAMS s1 >",
        "XREADGROUP GROUP g1 c2 COUNT 1 STREAMS s1 >",
    ]
    .iter()
    .map(|l| (0u8, l.split(' ').map(s).collect()))
    .collect();
    let strategy = prop::collection::vec(stream_cmds().prop_map(|c| (0u8, c)), 1..40).prop_map(move |tail| {
        let mut v = setup.clone();
        v.extend(tail);
        v
    });
    run_family(strategy.boxed());
}
