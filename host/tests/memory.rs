//! MEMORY in the engine component: MEMORY USAGE's estimate of a key against what the
//! engine's heap really gives back when the key is deleted (every type, big enough for
//! the value to dominate; the heap's growth while making it also holds the buffers the
//! requests passed through), and the replies that mean the same in Redis compared with
//! redis-server 7.0.15 (HELP, errors, USAGE of a missing key, DOCTOR of an empty
//! instance, PURGE, the fields of STATS). Values differ by design: MEMORY USAGE measures
//! Memoria's structures, STATS its heap.

mod common;

use common::{Memoria, Raw, same_as_redis};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn int(b: &[u8]) -> i64 {
    text(b).trim().strip_prefix(':').and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("not an integer: {}", text(b)))
}

fn used_memory(c: &mut Raw) -> i64 {
    let info = text(&c.cmd(&["INFO", "memory"]));
    info.lines().find_map(|l| l.strip_prefix("used_memory:")).and_then(|v| v.trim().parse().ok()).expect("used_memory")
}

/// The command that adds element `i` to a value.
type Maker<'a> = Box<dyn Fn(usize) -> Vec<String> + 'a>;

#[test]
fn usage_is_close_to_what_deleting_the_key_frees() {
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    let v = "v".repeat(40);
    let cases: Vec<(&str, Maker)> = vec![
        ("string", Box::new(|_| vec!["SET".into(), "string".into(), "x".repeat(2_000_000)])),
        ("hash", Box::new(|i| vec!["HSET".into(), "hash".into(), format!("field:{i}"), v.clone()])),
        ("small-hash", Box::new(|i| vec!["HSET".into(), "small-hash".into(), format!("f{}", i % 100), v.clone()])),
        ("set", Box::new(|i| vec!["SADD".into(), "set".into(), format!("member:{i}:{v}")])),
        ("intset", Box::new(|i| vec!["SADD".into(), "intset".into(), (i % 500).to_string()])),
        ("zset", Box::new(|i| vec!["ZADD".into(), "zset".into(), i.to_string(), format!("member:{i}:{v}")])),
        ("list", Box::new(|i| vec!["RPUSH".into(), "list".into(), format!("{v}{i}")])),
        ("stream", Box::new(|i| vec!["XADD".into(), "stream".into(), "*".into(), "field".into(), format!("{v}{i}")])),
    ];
    let mut report = Vec::new();
    for (key, make) in &cases {
        let n = if *key == "string" { 1 } else { 20_000 };
        for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
            let mut pipeline = Vec::new();
            for &i in chunk {
                memoria_core::protocol::resp::encode_command(&mut pipeline, &make(i));
            }
            c.send_raw(&pipeline);
            for _ in chunk {
                let r = c.read_reply();
                assert!(!r.starts_with(b"-"), "{key}: {}", text(&r));
            }
        }
        let usage = int(&c.cmd(&["MEMORY", "USAGE", key, "SAMPLES", "0"]));
        let sampled = int(&c.cmd(&["MEMORY", "USAGE", key]));
        let before = used_memory(&mut c);
        assert_eq!(c.cmd(&["DEL", key]), b":1\r\n");
        let freed = before - used_memory(&mut c);
        report.push(format!("{key}: DEL freed {freed}, MEMORY USAGE {usage} (SAMPLES 5: {sampled})"));
        let ratio = usage as f64 / freed as f64;
        assert!((0.95..=1.05).contains(&ratio), "{key}: estimate {usage} against {freed} freed\n{}", report.join("\n"));
    }
    println!("{}", report.join("\n"));
}

#[test]
fn replies_that_mean_the_same_as_in_redis() {
    same_as_redis("MEMORY, DEBUG, SAVE, SHUTDOWN", |port| {
        let mut c = Raw::connect(port);
        let mut seen = Vec::new();
        for cmd in [
            &["MEMORY", "HELP"][..],
            &["MEMORY", "USAGE", "nokey"],
            &["MEMORY", "DOCTOR"],
            &["MEMORY", "PURGE"],
            &["MEMORY"],
            &["MEMORY", "nosuch"],
            &["MEMORY", "STATS", "x"],
            &["MEMORY", "USAGE"],
            &["SET", "k", "v"],
            &["MEMORY", "USAGE", "k", "SAMPLES", "-1"],
            &["MEMORY", "USAGE", "k", "SAMPLES", "x"],
            &["MEMORY", "USAGE", "k", "SAMPLES"],
            &["MEMORY", "USAGE", "k", "nope", "1"],
            // DEBUG, refused by default in both (enable-debug-command no).
            &["DEBUG", "OBJECT", "k"],
            &["DEBUG"],
            &["CONFIG", "GET", "enable-debug-command"],
            // SAVE in a transaction and BGSAVE's arguments.
            &["MULTI"],
            &["SAVE"],
            &["DISCARD"],
            &["BGSAVE", "x"],
            &["BGSAVE", "a", "b"],
            // SHUTDOWN's forms that do not stop a server.
            &["SHUTDOWN", "ABORT"],
            &["SHUTDOWN", "NOSAVE", "SAVE"],
            &["SHUTDOWN", "foo"],
            &["SHUTDOWN", "ABORT", "NOW"],
            &["MULTI"],
            &["SHUTDOWN"],
            &["DISCARD"],
        ] {
            seen.push(format!("{cmd:?} -> {}", text(&c.cmd(cmd))));
        }
        c.cmd(&["SELECT", "2"]);
        c.cmd(&["SET", "k2", "v"]);
        c.cmd(&["EXPIRE", "k2", "100"]);
        // STATS: the same fields in the same order (the values are each server's own).
        let stats = redis::parse_redis_value(&c.cmd(&["MEMORY", "STATS"])).expect("a RESP reply");
        let redis::Value::Array(items) = stats else { panic!("MEMORY STATS: {stats:?}") };
        for pair in items.chunks(2) {
            let name = match &pair[0] {
                redis::Value::BulkString(b) => text(b),
                other => panic!("a field name: {other:?}"),
            };
            let inner = match &pair[1] {
                redis::Value::Array(db) => db.chunks(2).map(|p| format!("{:?}", p[0])).collect::<Vec<_>>().join(","),
                _ => String::new(),
            };
            seen.push(format!("STATS {name} {inner}"));
        }
        seen
    });
}
