//! DUMP/RESTORE against a live redis-server (7.0; the test starts its own on a loopback
//! port and stops it): values of every type and encoding are built with the same commands
//! in redis-server and in the engine; redis-server's DUMP is restored into the engine and
//! the engine's DUMP into redis-server, and each copy must read back (content and
//! encoding) as the value it was dumped from reads on the other side.
//!
//! Needs `redis-server` on the PATH; without it the test fails (it is never skipped).

mod cmdutil;
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};

use common::H;
use memoria_core::util::Rng;

/// A redis-server child process on a free loopback port, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

/// Where the next server tries to listen: spread by process id, stepped per attempt, so
/// tests in parallel (and other runs) rarely try the same port.
static NEXT_PORT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Server {
    /// A running redis-server and a connection to it. A port found taken (by the time
    /// redis-server binds it) is given up for the next one.
    fn start() -> (Server, Client) {
        for _ in 0..50 {
            let step = NEXT_PORT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let port = 20_000 + ((std::process::id() * 7 + step * 13) % 12_000) as u16;
            if TcpListener::bind(("127.0.0.1", port)).is_err() {
                continue;
            }
            let child = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no"])
                // Memoria's default (redis.conf's too; redis-server's built-in one is 512).
                .args(["--hash-max-listpack-entries", "128"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| {
                    if e.kind() == std::io::ErrorKind::NotFound {
                        panic!("redis-server is required for this test: install it with `apt-get install -y redis-server redis-tools`");
                    }
                    panic!("starting redis-server: {e}")
                });
            let mut server = Server { child, port };
            if let Some(client) = server.connect() {
                return (server, client);
            }
        }
        panic!("redis-server could not start on a free loopback port");
    }

    /// A connection once the server accepts one (it starts in milliseconds; this waits up
    /// to a minute on a loaded machine); None if it exited (its port was taken).
    fn connect(&mut self) -> Option<Client> {
        for _ in 0..600 {
            if self.child.try_wait().expect("redis-server status").is_some() {
                return None;
            }
            if let Ok(s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let mut c = Client { r: BufReader::new(s.try_clone().unwrap()), w: s };
                // A connection made while the server is still starting can be reset
                // (seen in CI): that is a reason to try again, not a failure.
                if c.answers_ping() {
                    return Some(c);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("redis-server did not accept connections on port {}", self.port);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal RESP2 client: commands out, raw replies in.
struct Client {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Client {
    fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Vec<u8> {
        let mut out = Vec::new();
        memoria_core::protocol::resp::encode_command(&mut out, args);
        self.w.write_all(&out).unwrap();
        self.reply()
    }

    /// Whether the server answers PING on this connection; an I/O error is a no.
    fn answers_ping(&mut self) -> bool {
        let mut line = Vec::new();
        self.w.write_all(b"*1\r\n$4\r\nPING\r\n").is_ok() && self.r.read_until(b'\n', &mut line).is_ok() && line == b"+PONG\r\n"
    }

    fn reply(&mut self) -> Vec<u8> {
        let mut line = Vec::new();
        self.r.read_until(b'\n', &mut line).unwrap();
        assert!(line.ends_with(b"\r\n"), "reply line {line:?}");
        let n = || std::str::from_utf8(&line[1..line.len() - 2]).unwrap().parse::<i64>().unwrap();
        match line[0] {
            b'$' if n() >= 0 => {
                let mut body = vec![0; n() as usize + 2];
                self.r.read_exact(&mut body).unwrap();
                line.extend_from_slice(&body);
            }
            b'*' if n() > 0 => {
                for _ in 0..n() {
                    let item = self.reply();
                    line.extend_from_slice(&item);
                }
            }
            _ => {}
        }
        line
    }
}

fn bulk_body(reply: &[u8]) -> Vec<u8> {
    assert!(reply.starts_with(b"$") && !reply.starts_with(b"$-1"), "not a bulk: {:?}", String::from_utf8_lossy(reply));
    let at = reply.iter().position(|&c| c == b'\n').unwrap() + 1;
    reply[at..reply.len() - 2].to_vec()
}

/// Either side, answering commands as raw RESP.
trait Side {
    fn run(&mut self, args: &[Vec<u8>]) -> Vec<u8>;
}

impl Side for Client {
    fn run(&mut self, args: &[Vec<u8>]) -> Vec<u8> {
        self.cmd(args)
    }
}

impl Side for H {
    fn run(&mut self, args: &[Vec<u8>]) -> Vec<u8> {
        self.raw(args)
    }
}

fn words(line: &str) -> Vec<Vec<u8>> {
    line.split(' ').map(|w| w.as_bytes().to_vec()).collect()
}

/// What a key reads as, independent of a hash table's order: its type, encoding and
/// content (sets and hashes sorted; a listpack hash also in its own order).
fn view(side: &mut dyn Side, key: &str) -> Vec<String> {
    let mut r = |line: String| String::from_utf8_lossy(&side.run(&words(&line))).into_owned();
    let ty = r(format!("TYPE {key}"));
    let enc = r(format!("OBJECT ENCODING {key}"));
    let mut out = vec![ty.clone(), enc.clone()];
    match ty.as_str() {
        "+string\r\n" => out.push(r(format!("GET {key}"))),
        "+list\r\n" => out.push(r(format!("LRANGE {key} 0 -1"))),
        "+set\r\n" => {
            let mut m = cmdutil::parse_bulks(&r(format!("SMEMBERS {key}")));
            m.sort();
            out.extend(m);
        }
        "+hash\r\n" => {
            let all = r(format!("HGETALL {key}"));
            let mut pairs: Vec<String> = cmdutil::parse_bulks(&all).chunks(2).map(|p| p.join("=")).collect();
            pairs.sort();
            out.extend(pairs);
            if enc.contains("listpack") {
                out.push(all);
            }
        }
        "+zset\r\n" => out.push(r(format!("ZRANGE {key} 0 -1 WITHSCORES"))),
        "+stream\r\n" => {
            out.push(r(format!("XINFO STREAM {key} FULL COUNT 0")));
            out.push(r(format!("XINFO GROUPS {key}")));
        }
        other => panic!("{key}: unexpected type {other:?}"),
    }
    out
}

/// One value: the commands that build `k`, run on both sides.
struct Scenario {
    name: String,
    build: Vec<Vec<Vec<u8>>>,
}

/// A scenario of command lines (a line may hold several, one per line of its text).
fn scenario(name: &str, lines: &[String]) -> Scenario {
    Scenario { name: name.to_string(), build: lines.iter().flat_map(|l| l.lines()).map(words).collect() }
}

fn word(rng: &mut Rng, n: usize) -> String {
    (0..n).map(|_| b"abcdefghijklmnopqrstuvwxyz0123456789"[rng.below(36) as usize] as char).collect()
}

/// A word of 1 to `max` characters.
fn short_word(rng: &mut Rng, max: usize) -> String {
    let n = 1 + rng.below(max as u64) as usize;
    word(rng, n)
}

fn scenarios() -> Vec<Scenario> {
    let mut rng = Rng::new(70015);
    let rng = &mut rng;
    let mut v = Vec::new();
    let s = |k: &str| vec![k.to_string()];
    v.push(scenario("string", &s("SET k hello")));
    v.push(scenario("string_int", &s("SET k -2147483648")));
    v.push(scenario("string_int64", &s("SET k 9223372036854775807")));
    v.push(scenario("string_float", &s("SET k 3.25")));
    v.push(scenario("string_long_repetitive", &[format!("SET k {}", "memoria".repeat(500))]));
    v.push(scenario("string_random", &[format!("SET k {}", word(rng, 3000))]));
    v.push(scenario("string_appended", &["SET k 12".into(), "APPEND k 34".into(), "SETRANGE k 10 x".into()]));
    v.push(scenario("hll_sparse", &s("PFADD k a b c d")));
    v.push(scenario("hll_dense", &[format!("PFADD k {}", (0..4000).map(|i| format!("e{i}")).collect::<Vec<_>>().join(" "))]));
    for (name, n) in [("list_small", 5usize), ("list_nodes", 3000)] {
        let items: Vec<String> = (0..n).map(|i| if i % 3 == 0 { (rng.below(2_000_000) as i64 - 1_000_000).to_string() } else { short_word(rng, 60) }).collect();
        v.push(scenario(name, &[format!("RPUSH k {}", items.join(" ")), "LPUSH k head".into(), "LSET k 7 changed".into()]));
    }
    v.push(scenario("list_long_elements", &[format!("RPUSH k a {} b {}", word(rng, 9000), "z".repeat(20_000))]));
    for (name, n, ints) in [("set_intset", 50usize, true), ("set_intset_wide", 20, true), ("set_table_ints", 700, true), ("set_strings", 40, false)] {
        let items: Vec<String> = (0..n)
            .map(|i| match (ints, name) {
                (true, "set_intset_wide") => ((rng.next_u64() >> 1) as i64 - (1 << 62)).to_string(),
                (true, _) => (i as i64 * 37 - 500).to_string(),
                _ => word(rng, 6),
            })
            .collect();
        v.push(scenario(name, &[format!("SADD k {}", items.join(" "))]));
    }
    for (name, n, len) in [("hash_listpack", 20usize, 10usize), ("hash_table", 300, 10), ("hash_long_value", 3, 100)] {
        let pairs: Vec<String> = (0..n).map(|i| format!("f{i} {}", if i % 4 == 0 { i.to_string() } else { short_word(rng, len) })).collect();
        v.push(scenario(name, &[format!("HSET k {}", pairs.join(" ")), "HDEL k f1".into()]));
    }
    v.push(scenario("hash_shrunk_table", &[format!("HSET k a {} b c", "x".repeat(100)), "HSET k a short".into()]));
    for (name, n, len) in [("zset_listpack", 30usize, 8usize), ("zset_skiplist", 400, 8), ("zset_long_member", 3, 100)] {
        let mut args = Vec::new();
        for i in 0..n {
            let score = match i % 5 {
                0 => (rng.below(200) as i64 - 100).to_string(),
                1 => format!("{}", (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 1e6),
                2 => ["inf", "-inf", "0", "1e300", "-0.5"][i / 5 % 5].to_string(),
                3 => format!("{}e-7", rng.below(1000)),
                _ => (rng.below(1 << 40) as i64).to_string(),
            };
            args.push(format!("{score} m{}{}", i, short_word(rng, len)));
        }
        v.push(scenario(name, &[format!("ZADD k {}", args.join(" "))]));
    }
    let mut stream = vec!["CONFIG SET stream-node-max-entries 5".to_string()];
    for i in 0..40 {
        let fields = if i % 6 == 0 { format!("other {}", word(rng, 4)) } else { format!("f {i} g {}", word(rng, 8)) };
        stream.push(format!("XADD k {}-{} {fields}", 100 + i / 3, i % 3));
    }
    stream.extend(
        [
            "XDEL k 101-1 104-0 104-1 104-2",
            "XGROUP CREATE k g1 0",
            "XGROUP CREATE k g2 $",
            "XGROUP CREATE k g3 105-0 ENTRIESREAD 12",
            "XREADGROUP GROUP g1 alice COUNT 4 STREAMS k >",
            "XREADGROUP GROUP g1 bob COUNT 3 STREAMS k >",
            "XREADGROUP GROUP g3 carol COUNT 2 STREAMS k >",
            "XACK k g1 100-1",
            "XCLAIM k g1 bob 0 100-2 RETRYCOUNT 5",
            "XGROUP CREATECONSUMER k g2 dave",
            "CONFIG SET stream-node-max-entries 100",
        ]
        .map(String::from),
    );
    v.push(scenario("stream_groups", &stream));
    v.push(scenario("stream_trimmed", &[(1..200).map(|i| format!("XADD k {i}-0 f {i}")).collect::<Vec<_>>().join("\n"), "XTRIM k MAXLEN = 90".into()]));
    v.push(scenario("stream_empty", &["XGROUP CREATE k g $ MKSTREAM".into(), "XADD k 5-0 a 1".into(), "XDEL k 5-0".into()]));
    v.push(scenario("stream_setid", &["XADD k 3-0 a 1".into(), "XSETID k 10-5 ENTRIESADDED 42 MAXDELETEDID 9-0".into()]));
    v
}

/// `view` without the encoding: what a value holds.
fn content(side: &mut dyn Side, key: &str) -> Vec<String> {
    let mut v = view(side, key);
    v.remove(1);
    if v[0] == "+hash\r\n" && v.last().is_some_and(|l| l.starts_with('*')) {
        v.pop();
    }
    v
}

/// `content` with unix-ms times (integer replies past 10^12) masked.
fn without_times(v: Vec<String>) -> Vec<String> {
    let mask = |line: &str| match line.strip_prefix(':').and_then(|n| n.parse::<i64>().ok()) {
        Some(n) if n > 1_000_000_000_000 => ":<time>".to_string(),
        _ => line.to_string(),
    };
    v.iter().map(|s| s.split("\r\n").map(mask).collect::<Vec<_>>().join("\r\n")).collect()
}

/// Restores `payload` as `copy` on both sides (replacing) and compares what they hold.
fn restore_both(redis: &mut Client, h: &mut H, payload: &[u8], name: &str) {
    let args = |p: &[u8]| vec![b"RESTORE".to_vec(), b"copy".to_vec(), b"0".to_vec(), p.to_vec(), b"REPLACE".to_vec()];
    let (a, b) = (redis.run(&args(payload)), h.run(&args(payload)));
    assert_eq!((String::from_utf8_lossy(&a), String::from_utf8_lossy(&b)), ("+OK\r\n".into(), "+OK\r\n".into()), "{name}: RESTORE");
    assert_eq!(view(h, "copy"), view(redis, "copy"), "{name}: the same payload restored into Memoria and into redis-server");
}

#[test]
fn dumps_cross_between_redis_and_memoria() {
    let (_server, mut redis) = Server::start();
    let version = String::from_utf8_lossy(&redis.cmd(&["INFO", "server"])).into_owned();
    assert!(version.contains("redis_version:7.0."), "this test records Redis 7.0 behaviour: {version}");
    for sc in scenarios() {
        redis.cmd(&[b"FLUSHALL"]);
        let mut h = H::new();
        for args in &sc.build {
            let (a, b) = (redis.cmd(args), h.raw(args));
            let line = String::from_utf8_lossy(&args.join(&b' ')).into_owned();
            assert_eq!(
                a.first() == Some(&b'-'),
                b.first() == Some(&b'-'),
                "{}: {line}: {:?} vs {:?}",
                sc.name,
                String::from_utf8_lossy(&a),
                String::from_utf8_lossy(&b)
            );
        }
        // The same payload restores to the same value and encoding on both sides, and
        // holds what was dumped: redis-server's DUMP…
        let theirs = bulk_body(&redis.cmd(&["DUMP", "k"]));
        restore_both(&mut redis, &mut h, &theirs, &sc.name);
        assert_eq!(content(&mut redis, "copy"), content(&mut redis, "k"), "{}: redis-server's DUMP holds its value", sc.name);
        // …and the engine's.
        let ours = bulk_body(&h.raw(&["DUMP", "k"]));
        restore_both(&mut redis, &mut h, &ours, &sc.name);
        assert_eq!(content(&mut h, "copy"), content(&mut h, "k"), "{}: Memoria's DUMP holds its value", sc.name);
        // Built by the same commands, the two originals differ only in the times that
        // streams record (deliveries, consumers seen).
        assert_eq!(
            without_times(content(&mut redis, "copy")),
            without_times(content(&mut redis, "k")),
            "{}: Memoria's DUMP holds redis-server's value",
            sc.name
        );
    }
}

/// `view`, a sorted set as its members and scores in member order: a corrupt listpack
/// whose scores are out of order stays so in redis-server, and is sorted in Memoria.
fn view_unordered(side: &mut dyn Side, key: &str) -> Vec<String> {
    let mut v = view(side, key);
    if v[0] == "+zset\r\n" {
        let mut pairs: Vec<String> = cmdutil::parse_bulks(&v[2]).chunks(2).map(|p| p.join("=")).collect();
        pairs.sort();
        v.truncate(2);
        v.extend(pairs);
    }
    v
}

/// Truncated and bit-flipped payloads (the checksum made right) of every scenario, from
/// both sides, restored into a redis-server that checks payloads deeply
/// (sanitize-dump-payload yes): what it refuses Memoria refuses too, and what both accept
/// holds the same. Memoria refuses more: it also holds a stream's length, last id and
/// pending entries to their nodes and consumers, and a score to being a number.
#[test]
fn corrupt_payloads_refused_where_redis_refuses_them() {
    let (_server, mut redis) = Server::start();
    redis.cmd(&["CONFIG", "SET", "sanitize-dump-payload", "yes"]);
    let (mut both_ok, mut both_refused, mut only_memoria_refused) = (0, 0, 0);
    for sc in scenarios() {
        redis.cmd(&[b"FLUSHALL"]);
        let mut h = H::new();
        for args in &sc.build {
            redis.cmd(args);
            h.raw(args);
        }
        for payload in [bulk_body(&redis.cmd(&["DUMP", "k"])), bulk_body(&h.raw(&["DUMP", "k"]))] {
            let body = &payload[..payload.len() - 10];
            let stride = (body.len() / 80).max(1);
            let mut variants: Vec<(String, Vec<u8>)> = Vec::new();
            for cut in (0..body.len()).step_by(stride) {
                variants.push((format!("cut at {cut}"), body[..cut].to_vec()));
            }
            for at in (0..body.len()).step_by(stride) {
                let mut b = body.to_vec();
                b[at] ^= 1 << (at % 8);
                variants.push((format!("bit {} of byte {at} flipped", at % 8), b));
            }
            for (what, mut b) in variants {
                memoria_core::rdb::finish_payload(&mut b);
                let args = vec![b"RESTORE".to_vec(), b"c".to_vec(), b"0".to_vec(), b, b"REPLACE".to_vec()];
                let theirs = String::from_utf8_lossy(&redis.run(&args)).into_owned();
                let ours = String::from_utf8_lossy(&h.run(&args)).into_owned();
                assert!(ours == "+OK\r\n" || ours == "-ERR Bad data format\r\n", "{}, {what}: {ours:?}", sc.name);
                match (theirs == "+OK\r\n", ours == "+OK\r\n") {
                    (true, true) => {
                        both_ok += 1;
                        assert_eq!(view_unordered(&mut h, "c"), view_unordered(&mut redis, "c"), "{}, {what}: accepted by both", sc.name);
                    }
                    (false, false) => both_refused += 1,
                    (true, false) => only_memoria_refused += 1,
                    (false, true) => panic!("{}, {what}: redis-server refused it ({theirs:?}), Memoria took it", sc.name),
                }
                redis.cmd(&["DEL", "c"]);
                h.raw(&["DEL", "c"]);
            }
        }
    }
    assert!(both_ok > 500 && both_refused > 500, "accepted by both {both_ok}, refused by both {both_refused}, by Memoria only {only_memoria_refused}");
}
