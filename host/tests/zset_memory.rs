//! Memory of small sorted sets (listpack encoding) against redis-server: the same keys are
//! loaded into both, and `used_memory` deltas from INFO memory are compared per key. The
//! engine counts its own allocations (the component's allocator), Redis counts jemalloc's.
//! Issue #3 asks for at most 1.5× Redis per small sorted set.

mod common;

use common::{Memoria, Raw, RedisServer};

fn used_memory(c: &mut Raw) -> i64 {
    let r = c.cmd(&["INFO", "memory"]);
    let text = String::from_utf8_lossy(&r);
    text.lines().find_map(|l| l.strip_prefix("used_memory:")).and_then(|v| v.trim().parse().ok()).expect("used_memory in INFO memory")
}

/// Loads `keys` sorted sets of `members` members each; returns bytes per key.
fn per_key(c: &mut Raw, keys: usize, members: usize, float_scores: bool) -> f64 {
    c.cmd(&["FLUSHALL"]);
    let before = used_memory(c);
    for k in 0..keys {
        let mut args = vec!["ZADD".to_string(), format!("zset:{k:06}")];
        for m in 0..members {
            args.push(if float_scores { format!("{}.25", m * 7) } else { (m * 7).to_string() });
            args.push(format!("member:{m:03}"));
        }
        let r = c.cmd(&args);
        assert!(r.starts_with(b":"), "{}", String::from_utf8_lossy(&r));
    }
    let after = used_memory(c);
    (after - before) as f64 / keys as f64
}

#[test]
fn small_zsets_within_one_and_a_half_of_redis() {
    let redis = RedisServer::start(&[]);
    let memoria = Memoria::start();
    let mut r = Raw::connect(redis.port);
    let mut m = Raw::connect(memoria.port);
    for (members, float) in [(5, false), (20, false), (20, true), (100, false)] {
        let keys = 2000;
        let rb = per_key(&mut r, keys, members, float);
        let mb = per_key(&mut m, keys, members, float);
        let enc = m.cmd(&["OBJECT", "ENCODING", "zset:000000"]);
        assert!(enc.ends_with(b"listpack\r\n"));
        let ratio = mb / rb;
        println!("{members} members ({}): redis {rb:.0} B/key, memoria {mb:.0} B/key, ratio {ratio:.2}", if float { "float scores" } else { "integer scores" });
        assert!(ratio <= 1.5, "{members} members: memoria {mb:.0} B/key vs redis {rb:.0} B/key");
    }
}
