//! MEMORY USAGE's arguments and estimates (how they grow with a value, that SAMPLES bounds
//! the work and is honoured, a TTL's share), and the shapes of STATS, DOCTOR, PURGE and
//! HELP. How close the estimates are to the engine's real heap is checked in the
//! component by host/tests/memory.rs, and the replies against redis-server there too.

mod cmdutil;
mod common;

use common::{H, NIL, OK, err};

fn usage(h: &mut H, line: &str) -> i64 {
    let r = h.c(line);
    r.strip_prefix(':').and_then(|s| s.trim_end().parse().ok()).unwrap_or_else(|| panic!("{line}: {r:?}"))
}

#[test]
fn usage_arguments_as_redis_takes_them() {
    let mut h = H::new();
    assert_eq!(h.c("MEMORY USAGE nokey"), NIL);
    assert_eq!(h.c("SET k v"), OK);
    assert_eq!(h.c("MEMORY USAGE k SAMPLES -1"), err("ERR syntax error"));
    assert_eq!(h.c("MEMORY USAGE k SAMPLES x"), err("ERR value is not an integer or out of range"));
    assert_eq!(h.c("MEMORY USAGE k SAMPLES"), err("ERR syntax error"));
    assert_eq!(h.c("MEMORY USAGE k bar"), err("ERR syntax error"));
    assert_eq!(h.c("MEMORY USAGE"), err("ERR wrong number of arguments for 'memory|usage' command"));
    assert_eq!(h.c("MEMORY"), err("ERR wrong number of arguments for 'memory' command"));
    assert_eq!(h.c("MEMORY STATS x"), err("ERR wrong number of arguments for 'memory|stats' command"));
    assert_eq!(h.c("MEMORY foo"), err("ERR unknown subcommand 'foo'. Try MEMORY HELP."));
    assert!(usage(&mut h, "MEMORY USAGE k SAMPLES 0") > 0);
    assert_eq!(h.c("MEMORY PURGE"), OK);
}

#[test]
fn usage_grows_with_the_value_and_its_ttl() {
    let mut h = H::new();
    h.c("SET short x");
    h.raw(&["SET", "long", &"x".repeat(10_000)]);
    let (short, long) = (usage(&mut h, "MEMORY USAGE short"), usage(&mut h, "MEMORY USAGE long"));
    assert!((9_990..=10_050).contains(&(long - short)), "{short} {long}");
    h.c("SET ttl x");
    let before = usage(&mut h, "MEMORY USAGE ttl");
    h.c("EXPIRE ttl 100");
    assert!(usage(&mut h, "MEMORY USAGE ttl") > before, "the expiry index's entry counts");
    for (kind, fill) in [
        ("hash", "HSET h f{i} {v}"),
        ("set", "SADD s m{i}{v}"),
        ("intset", "SADD is {i}"),
        ("zset", "ZADD z {i} m{i}{v}"),
        ("list", "RPUSH l {v}{i}"),
        ("stream", "XADD x * f {v}{i}"),
    ] {
        let key = fill.split(' ').nth(1).unwrap();
        let mut sizes = Vec::new();
        for n in [10, 1000] {
            h.c(&format!("DEL {key}"));
            for i in 0..n {
                h.c(&fill.replace("{i}", &i.to_string()).replace("{v}", &"v".repeat(40)));
            }
            sizes.push(usage(&mut h, &format!("MEMORY USAGE {key} SAMPLES 0")));
        }
        assert!(sizes[1] > sizes[0] * 20, "{kind}: 10 elements {} bytes, 1000 elements {}", sizes[0], sizes[1]);
    }
}

#[test]
fn samples_bound_the_estimate() {
    let mut h = H::new();
    // A hash table whose elements differ in size: sampling a few gives another estimate
    // than sampling all, and a sample of all is what SAMPLES 0 takes.
    for i in 0..2000 {
        let v = if i % 2 == 0 { "x".to_string() } else { "y".repeat(500) };
        h.raw(&["HSET", "h", &format!("f{i}"), &v]);
    }
    let all = usage(&mut h, "MEMORY USAGE h SAMPLES 0");
    assert_eq!(usage(&mut h, "MEMORY USAGE h SAMPLES 5000"), all);
    let few = usage(&mut h, "MEMORY USAGE h SAMPLES 1");
    assert_ne!(few, all, "one sample stands for all 2000");
    let default = usage(&mut h, "MEMORY USAGE h");
    assert_eq!(default, usage(&mut h, "MEMORY USAGE h SAMPLES 5"));
}

#[test]
fn stats_doctor_and_help_have_redis_s_shapes() {
    let mut h = H::new();
    h.c("SET a 1");
    h.c("SELECT 3");
    h.c("SET b 1");
    h.c("EXPIRE b 100");
    let stats = h.c("MEMORY STATS");
    // 27 fields and one per database with keys.
    assert!(stats.starts_with("*58\r\n"), "{stats}");
    for field in ["peak.allocated", "db.0", "db.3", "overhead.hashtable.expires", "keys.count", "dataset.percentage", "fragmentation.bytes"] {
        assert!(stats.contains(&format!("\r\n{field}\r\n")), "{field} missing: {stats}");
    }
    assert!(stats.contains("$10\r\nkeys.count\r\n:2\r\n"), "{stats}");
    assert!(h.c("MEMORY DOCTOR").contains("this instance is empty or is using very little memory"));
    assert!(h.c("MEMORY HELP").starts_with("*14\r\n+MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"));
    assert!(h.c("MEMORY MALLOC-STATS").starts_with('$'));
}
