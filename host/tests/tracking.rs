//! Client-side caching (CLIENT TRACKING) against redis-server 7.0.15: the same scripted
//! conversations of several connections run on both servers, and everything each
//! connection receives (replies and invalidation pushes, in order) must be identical,
//! byte for byte. After every step each connection sends `PING barrier` and everything it
//! received before that reply is its share of the step, so pushes are compared in place
//! (see `run` for why two barriers).
//!
//! Client ids differ between the servers: `$0`, `$1`… in a step stand for connection 0's,
//! 1's… id, and ids in what comes back are shown the same way.

mod common;

use common::{Memoria, Raw, RedisServer};

/// One conversation: `n` connections, then steps `"<connection> <command…>"`.
struct Script {
    name: &'static str,
    clients: usize,
    steps: &'static [&'static str],
}

const SCRIPTS: &[Script] = &[
    Script {
        name: "RESP3 default mode: reads are remembered, every change invalidates once",
        clients: 2,
        steps: &[
            "0 HELLO 3",
            "0 CLIENT TRACKING ON",
            "0 GET k",
            "1 SET k 1",
            "1 SET k 2",
            "0 GET k",
            "0 MGET k j x",
            "1 MSET k 3 j 4 x 5",
            "0 GET k",
            "0 SET k own",
            "0 GET k",
            "1 DEL k",
            "0 HGET h f",
            "1 HSET h f v",
            "0 LRANGE l 0 -1",
            "1 RPUSH l a",
            "0 SMEMBERS s",
            "1 SADD s a",
            "0 ZRANGE z 0 -1",
            "1 ZADD z 1 a",
            "0 EXISTS e",
            "1 SET e 1",
            "0 STRLEN e",
            "1 EXPIRE e 100",
            "0 GET e",
            "1 APPEND e x",
            "0 TYPE e",
            "1 RENAME e e2",
            "0 GET e2",
            "1 MOVE e2 3",
            "0 GET n",
            "1 INCR n",
            "1 INCR n",
            "0 CLIENT TRACKINGINFO",
            "0 CLIENT GETREDIR",
            "0 GET k",
            "0 CLIENT TRACKING OFF",
            "1 SET k after-off",
            "0 CLIENT TRACKINGINFO",
            "0 CLIENT GETREDIR",
        ],
    },
    Script {
        name: "writes inside MULTI and scripts: the invalidations of the own keys follow the whole reply",
        clients: 2,
        steps: &[
            "0 HELLO 3",
            "0 CLIENT TRACKING ON",
            "0 MGET a b c",
            "0 MULTI ; SET a 1 ; SET b 2 ; EXEC",
            "0 MGET a b c",
            "1 EVAL \"redis.call('set','a','x'); redis.call('set','c','y'); return 1\" 0",
            "0 EVAL \"return redis.call('get','a')\" 0",
            "1 SET a z",
            "0 EVAL_RO \"return redis.call('get','b')\" 0",
            "1 SET b z",
        ],
    },
    Script {
        name: "FLUSHALL and FLUSHDB: a null to every tracking client",
        clients: 3,
        steps: &[
            "0 HELLO 3",
            "0 CLIENT TRACKING ON",
            "2 HELLO 3",
            "2 CLIENT TRACKING ON BCAST PREFIX user:",
            "0 GET k",
            "1 FLUSHALL",
            "0 GET k",
            "1 SET k 1",
            "0 GET k",
            "1 SELECT 5",
            "1 FLUSHDB",
            "1 SET k 2",
            "0 GET k",
            "0 FLUSHALL",
        ],
    },
    Script {
        name: "RESP2 with REDIRECT to a subscriber of __redis__:invalidate",
        clients: 3,
        steps: &[
            "1 SUBSCRIBE __redis__:invalidate",
            "0 CLIENT TRACKING ON REDIRECT $1",
            "0 CLIENT GETREDIR",
            "0 CLIENT TRACKINGINFO",
            "0 GET k",
            "2 SET k 1",
            "0 GET k",
            "0 SET k 2",
            "0 GET k",
            "2 FLUSHALL",
            "0 CLIENT TRACKING ON REDIRECT $2",
            "0 GET k",
            "2 SET k 3",
            "0 CLIENT TRACKING ON REDIRECT 999999",
            "0 CLIENT TRACKING ON REDIRECT $1 REDIRECT $1",
            "0 CLIENT TRACKING ON REDIRECT x",
        ],
    },
    Script {
        name: "RESP2 without redirection: tracked, nothing sent",
        clients: 2,
        steps: &["0 CLIENT TRACKING ON", "0 GET k", "1 SET k 1", "0 GET k", "0 CLIENT TRACKINGINFO", "1 FLUSHALL", "0 PING"],
    },
    Script {
        name: "RESP3 client redirecting to a RESP3 client",
        clients: 2,
        steps: &["0 HELLO 3", "1 HELLO 3", "0 CLIENT TRACKING ON REDIRECT $1", "0 GET k", "0 SET k 1", "0 GET k", "1 SET k 2", "0 FLUSHALL"],
    },
    Script {
        name: "BCAST with prefixes, NOLOOP and the prefix checks",
        clients: 3,
        steps: &[
            "0 HELLO 3",
            "0 CLIENT TRACKING ON BCAST PREFIX user: PREFIX order:",
            "0 CLIENT TRACKINGINFO",
            "1 SET user:1 a",
            "1 MSET user:3 c user:2 b order:9 x other y",
            "1 SET other z",
            "0 SET user:1 own",
            "2 HELLO 3",
            "2 CLIENT TRACKING ON BCAST NOLOOP",
            "2 SET any 1",
            "1 SET any 2",
            "2 MSET user:5 a k b",
            "0 CLIENT TRACKING ON BCAST PREFIX cart:",
            "0 CLIENT TRACKINGINFO",
            "0 CLIENT TRACKING ON BCAST PREFIX us",
            "0 CLIENT TRACKING ON BCAST PREFIX zz PREFIX zzz",
            "0 CLIENT TRACKING ON",
            "1 CLIENT TRACKING ON PREFIX a",
            "1 CLIENT TRACKING ON BCAST OPTIN",
            "0 CLIENT TRACKING OFF",
            "0 CLIENT TRACKINGINFO",
            "1 SET user:1 b",
            "0 CLIENT TRACKING ON BCAST",
            "1 SET user:1 c",
            "1 DEL user:1 user:2 user:3",
            "0 GET user:1",
        ],
    },
    Script {
        name: "OPTIN and OPTOUT with CLIENT CACHING",
        clients: 2,
        steps: &[
            "0 HELLO 3",
            "0 CLIENT CACHING YES",
            "0 CLIENT TRACKING ON OPTIN",
            "0 CLIENT CACHING NO",
            "0 CLIENT CACHING maybe",
            "0 GET a",
            "1 SET a 1",
            "0 CLIENT CACHING YES",
            "0 CLIENT TRACKINGINFO",
            "0 GET a",
            "1 SET a 2",
            "0 CLIENT CACHING YES",
            "0 CLIENT ID",
            "0 GET b",
            "0 GET c",
            "1 MSET b 1 c 1",
            "0 CLIENT CACHING YES",
            "0 MULTI ; GET d ; GET e ; EXEC",
            "1 MSET d 1 e 1",
            "0 CLIENT TRACKING ON OPTOUT",
            "0 CLIENT TRACKING OFF",
            "0 CLIENT TRACKING ON OPTOUT",
            "0 CLIENT TRACKING ON OPTIN OPTOUT",
            "0 CLIENT TRACKING ON OPTOUT BCAST",
            "0 GET f",
            "0 CLIENT CACHING NO",
            "0 GET g",
            "0 CLIENT TRACKINGINFO",
            "0 GET h",
            "1 MSET f 1 g 1 h 1",
            "0 CLIENT TRACKING ON OPTOUT NOLOOP",
            "0 CLIENT TRACKINGINFO",
            "0 GET i",
            "0 SET i 1",
            "1 SET i 2",
            "0 CLIENT TRACKING ON FOO",
            "0 CLIENT TRACKING MAYBE",
            "0 CLIENT TRACKING",
        ],
    },
    Script {
        name: "CLIENT CACHING YES survives a command postponed by CLIENT PAUSE",
        clients: 2,
        steps: &["0 HELLO 3", "0 CLIENT TRACKING ON OPTIN", "0 CLIENT CACHING YES", "1 CLIENT PAUSE 200 ALL", "0 GET k", "1 SET k 1", "0 CLIENT TRACKINGINFO"],
    },
    Script {
        name: "a key that expires while tracked",
        clients: 2,
        steps: &["0 HELLO 3", "0 CLIENT TRACKING ON", "1 SET k v PX 1", "- sleep", "0 GET k", "0 GET k", "1 SET k w", "0 RESET", "1 SET k x"],
    },
];

/// A connection of a script to one server.
struct Conn {
    raw: Raw,
    id: i64,
}

fn start_conns(port: u16, n: usize) -> Vec<Conn> {
    (0..n)
        .map(|_| {
            let mut raw = Raw::connect(port);
            let r = raw.cmd(&["CLIENT", "ID"]);
            let id = std::str::from_utf8(&r[1..r.len() - 2]).unwrap().parse().unwrap();
            Conn { raw, id }
        })
        .collect()
}

/// Splits a step's command into arguments: words, or "double-quoted" ones.
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"').expect("closing quote");
            out.push(q[..end].to_string());
            rest = q[end + 1..].trim_start();
        } else {
            let end = rest.find(' ').unwrap_or(rest.len());
            out.push(rest[..end].to_string());
            rest = rest[end..].trim_start();
        }
    }
    out
}

/// Replaces the connections' ids in `bytes` with `$n`, where replies carry ids (GETREDIR,
/// TRACKINGINFO, HELLO, a broken redirection's push); elsewhere a small id and a count look alike.
fn show_ids(bytes: &[u8], conns: &[Conn], step: &str) -> String {
    let mut s = String::from_utf8_lossy(bytes).into_owned();
    if !(step.contains("GETREDIR")
        || step.contains("TRACKINGINFO")
        || step.contains("HELLO")
        || step.contains("CLIENT ID")
        || s.contains("tracking-redir-broken"))
    {
        return s;
    }
    for (i, c) in conns.iter().enumerate() {
        s = s.replace(&format!(":{}\r\n", c.id), &format!(":${i}\r\n"));
    }
    s
}

/// Runs `script` on the server at `port`: per step and connection, what it received
/// (a pause step receives nothing and is not listed).
fn run(script: &Script, port: u16) -> Vec<(&'static str, String)> {
    let mut conns = start_conns(port, script.clients);
    let mut transcript = Vec::new();
    for step in script.steps {
        let (who, line) = step.split_once(' ').unwrap();
        if who == "-" {
            // Time passes (a key with a 1 ms TTL expires).
            std::thread::sleep(std::time::Duration::from_millis(20));
            continue;
        }
        let who: usize = who.parse().unwrap();
        // " ; " separates commands sent together (a transaction: a barrier inside MULTI
        // would be queued).
        for command in line.split(" ; ") {
            let mut args = words(command);
            for a in args.iter_mut() {
                if let Some(n) = a.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                    *a = conns[n].id.to_string();
                }
            }
            conns[who].raw.send(&args);
        }
        // Each connection's barrier: a RESP2 subscriber answers PING as a message. The
        // step's own connection goes first, and each sends two barriers, the second once
        // the first is answered: redis-server sends BCAST invalidations at the end of an
        // event-loop pass, which may be the pass that answered the first.
        let order = std::iter::once(who).chain((0..conns.len()).filter(|&i| i != who));
        for i in order {
            let c = &mut conns[i];
            let mut got = Vec::new();
            for _ in 0..2 {
                c.raw.send(&["PING", "barrier"]);
                loop {
                    let r = c.raw.read_reply();
                    if r == b"$7\r\nbarrier\r\n" || r == b"*2\r\n$4\r\npong\r\n$7\r\nbarrier\r\n" {
                        break;
                    }
                    got.extend_from_slice(&r);
                }
            }
            transcript.push((step, i, got));
        }
    }
    transcript.into_iter().map(|(step, i, got)| (*step, format!("{i}: {}", show_ids(&got, &conns, step)))).collect()
}

#[test]
fn client_tracking_matches_redis() {
    let redis = RedisServer::start(&[]);
    let memoria = Memoria::start();
    let mut failures = Vec::new();
    for script in SCRIPTS {
        let want = run(script, redis.port);
        let got = run(script, memoria.port);
        if std::env::var_os("TRACKING_TEST_TRACE").is_some() {
            for ((step, w), (_, g)) in want.iter().zip(&got) {
                eprintln!("{step:?}\n  redis:   {w:?}\n  memoria: {g:?}");
            }
        }
        for ((step, w), (_, g)) in want.iter().zip(&got) {
            if w != g {
                failures.push(format!("{}: after step {step:?}\n  redis:   {w:?}\n  memoria: {g:?}", script.name));
                break;
            }
        }
        // Flushes between scripts reach nobody: each script's connections are closed.
        Raw::connect(redis.port).cmd(&["FLUSHALL"]);
        Raw::connect(memoria.port).cmd(&["FLUSHALL"]);
    }
    assert!(failures.is_empty(), "{} of {} conversations differ:\n{}", failures.len(), SCRIPTS.len(), failures.join("\n"));
}

/// The elements of a RESP3 invalidation push (`>2 invalidate [keys]`), None for anything else.
fn invalidated_keys(reply: &[u8]) -> Option<Vec<String>> {
    let s = std::str::from_utf8(reply).ok()?;
    let rest = s.strip_prefix(">2\r\n$10\r\ninvalidate\r\n*")?;
    let mut lines = rest.split("\r\n");
    let n: usize = lines.next()?.parse().ok()?;
    let mut keys = Vec::new();
    for _ in 0..n {
        lines.next()?;
        keys.push(lines.next()?.to_string());
    }
    Some(keys)
}

/// A RESP3 connection to `port` with CLIENT TRACKING on (default mode).
fn tracking_client(port: u16) -> Raw {
    let mut c = Raw::connect(port);
    c.cmd(&["HELLO", "3"]);
    assert_eq!(c.cmd(&["CLIENT", "TRACKING", "ON"]), b"+OK\r\n");
    c
}

#[test]
fn invalidations_follow_durable_writes() {
    let l = common::start_logged_pair("tracking");
    let mut t = tracking_client(l.primary);
    let keys: Vec<String> = (0..3).flat_map(|w| (0..40).map(move |i| format!("w{w}-{i}"))).collect();
    for k in &keys {
        assert_eq!(t.cmd(&["GET", k]), b"_\r\n");
    }
    // Several writers at once: each invalidation arrives after its write is in the log, so
    // a client never drops a cached value for a write that could still be lost.
    let writers = common::spawn_writers(l.primary, 3, 40);
    let mut seen = Vec::new();
    while seen.len() < keys.len() {
        let push = t.read_reply();
        let got = invalidated_keys(&push).unwrap_or_else(|| panic!("expected an invalidation, got {:?}", String::from_utf8_lossy(&push)));
        for key in got {
            assert!(
                common::contains(&common::log_bytes(&l.log), format!("${}\r\n{key}\r\n", key.len()).as_bytes()),
                "invalidation of {key} before its write was logged"
            );
            seen.push(key);
        }
    }
    for h in writers {
        h.join().unwrap();
    }
    seen.sort();
    let mut want = keys.clone();
    want.sort();
    assert_eq!(seen, want, "one invalidation per key read");
    // Each was forgotten once invalidated: more writes send nothing until it is read again.
    let mut w = Raw::connect(l.primary);
    w.cmd(&["SET", "w0-0", "again"]);
    assert_eq!(t.cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn a_replica_invalidates_for_the_writes_it_applies() {
    let l = common::start_logged_pair("tracking-replica");
    let mut r = tracking_client(l.replica);
    assert_eq!(r.cmd(&["GET", "k"]), b"_\r\n");
    let mut p = Raw::connect(l.primary);
    assert_eq!(p.cmd(&["SET", "k", "1"]), b"+OK\r\n");
    assert_eq!(invalidated_keys(&r.read_reply()), Some(vec!["k".to_string()]));
    // Read again (now the applied value), then a FLUSHALL on the primary: a null.
    assert_eq!(r.cmd(&["GET", "k"]), b"$1\r\n1\r\n");
    assert_eq!(p.cmd(&["FLUSHALL"]), b"+OK\r\n");
    assert_eq!(r.read_reply(), b">2\r\n$10\r\ninvalidate\r\n_\r\n");
}
