//! OBJECT FREQ and the LFU policies against redis-server 7.0.15: with `lfu-log-factor 0`
//! every access counts (Redis's logarithmic counter then grows by one per access) and with
//! `lfu-decay-time 0` nothing decays, so the counts are exact on both servers.

mod common;

#[test]
fn object_freq_counts_accesses_as_redis_does() {
    let conversation = |port: u16| -> Vec<String> {
        let mut c = common::Raw::connect(port);
        let steps: &[&[&str]] = &[
            &["SET", "k", "v"],
            &["OBJECT", "FREQ", "k"],
            &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
            &["CONFIG", "SET", "lfu-log-factor", "0"],
            &["CONFIG", "SET", "lfu-decay-time", "0"],
            &["SET", "fresh", "v"],
            &["OBJECT", "FREQ", "fresh"],
            &["GET", "fresh"],
            &["GET", "fresh"],
            &["EXISTS", "fresh"],
            &["OBJECT", "FREQ", "fresh"],
            // An overwrite keeps the count its lookup gave it.
            &["SET", "fresh", "w"],
            &["OBJECT", "FREQ", "fresh"],
            &["APPEND", "fresh", "x"],
            &["OBJECT", "FREQ", "fresh"],
            &["RPUSH", "list", "a"],
            &["LRANGE", "list", "0", "-1"],
            &["OBJECT", "FREQ", "list"],
            &["OBJECT", "FREQ", "missing"],
            &["OBJECT", "IDLETIME", "fresh"],
            &["DUMP", "list"],
            &["RESTORE", "copy", "0", "\u{0}", "FREQ", "100"],
            &["MOVE", "fresh", "1"],
            &["SELECT", "1"],
            &["OBJECT", "FREQ", "fresh"],
            &["SELECT", "0"],
            &["CONFIG", "SET", "maxmemory-policy", "volatile-lfu"],
            &["OBJECT", "FREQ", "list"],
            &["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"],
            &["OBJECT", "FREQ", "list"],
        ];
        let mut seen = Vec::new();
        for s in steps {
            let r = c.cmd(s);
            seen.push(format!("{s:?} -> {}", String::from_utf8_lossy(&r)));
        }
        // RESTORE … FREQ with a real payload: the count is the one given.
        let dump = c.cmd(&["DUMP", "list"]);
        let payload = &dump[dump.iter().position(|&b| b == b'\n').unwrap() + 1..dump.len() - 2];
        let mut restore = |args: &[&[u8]]| String::from_utf8_lossy(&c.cmd(args)).into_owned();
        seen.push(restore(&[b"CONFIG", b"SET", b"maxmemory-policy", b"allkeys-lfu"]));
        seen.push(restore(&[b"RESTORE", b"copy", b"0", payload, b"FREQ", b"100"]));
        seen.push(restore(&[b"OBJECT", b"FREQ", b"copy"]));
        seen.push(restore(&[b"RESTORE", b"copy2", b"0", payload, b"IDLETIME", b"100"]));
        seen.push(restore(&[b"OBJECT", b"FREQ", b"copy2"]));
        seen.push(restore(&[b"RESTORE", b"copy3", b"0", payload, b"FREQ", b"256"]));
        seen
    };
    common::same_as_redis("OBJECT FREQ under LFU", conversation);
}
