//! A default `memoria up` is a standalone Redis at its documented port: multi-key commands
//! on any keys, 16 databases, `cluster_enabled:0`, compared reply for reply with
//! redis-server 7.0.15; and every database survives kill -9 of the primary, a clean
//! restart, a snapshot with log truncation, and is the same on the replica.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Redis, Up, connect_by, free_port, rt, signal, snapshot_often_args, tempdir, wait_for_reply, words};
use memoria_e2e::workload::{Conn, Reply};

/// Replies whose element order is each server's own hash-table order (set members, SCAN
/// and KEYS results) are compared sorted.
fn unordered(cmd: &str) -> bool {
    let name = cmd.split(' ').next().unwrap_or("").to_ascii_uppercase();
    matches!(name.as_str(), "SMEMBERS" | "SINTER" | "SUNION" | "SDIFF" | "KEYS" | "SCAN")
}

fn sorted(r: Reply) -> Reply {
    match r {
        Reply::Array(Some(mut items)) => {
            // SCAN: [cursor, keys]
            if items.len() == 2
                && let Reply::Array(Some(keys)) = &mut items[1]
            {
                keys.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
                return Reply::Array(Some(items));
            }
            items.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
            Reply::Array(Some(items))
        }
        other => other,
    }
}

/// What a standalone Redis user types: keys in different slots together, databases,
/// transactions across keys. Each line runs on both servers (one connection each).
const SCRIPT: &[&str] = &[
    "FLUSHALL",
    "MSET a 1 b 2 c 3 foo 4 bar 5",
    "MGET a b c foo bar nokey",
    "MSETNX x 1 y 2",
    "MSETNX x 1 z 2",
    "SADD s1 a b c d",
    "SADD s2 c d e",
    "SINTER s1 s2",
    "SUNION s1 s2",
    "SDIFF s1 s2",
    "SINTERSTORE s3 s1 s2",
    "SUNIONSTORE s4 s1 s2",
    "SDIFFSTORE s5 s1 s2",
    "SMEMBERS s5",
    "SMOVE s1 s2 a",
    "SMEMBERS s2",
    "ZADD z1 1 a 2 b",
    "ZADD z2 3 b 4 c",
    "ZUNIONSTORE zu 2 z1 z2",
    "ZRANGE zu 0 -1 WITHSCORES",
    "RPUSH l1 1 2 3",
    "RPOPLPUSH l1 l2",
    "LMOVE l1 l2 LEFT RIGHT",
    "BLMOVE l1 l2 LEFT LEFT 1",
    "LRANGE l2 0 -1",
    "RENAME foo foo2",
    "GET foo2",
    "COPY foo2 bar REPLACE",
    "GET bar",
    "MULTI",
    "SET t1 1",
    "INCR t2",
    "MGET t1 t2 a",
    "EXEC",
    "INFO cluster",
    "CLUSTER INFO",
    "CLUSTER SLOTS",
    "SELECT 3",
    "SET k3 three",
    "DBSIZE",
    "SCAN 0 COUNT 1000",
    "MOVE k3 4",
    "MOVE k3 4",
    "SELECT 4",
    "GET k3",
    "SET k4 four",
    "SWAPDB 4 5",
    "DBSIZE",
    "SELECT 5",
    "MGET k3 k4",
    "FLUSHDB",
    "DBSIZE",
    "SELECT 0",
    "DBSIZE",
    "KEYS *",
    "SELECT 16",
    "SWAPDB 0 16",
    "MOVE a 0",
    "COPY a a DB 2",
    "SELECT 2",
    "GET a",
];

#[test]
fn standalone_replies_match_redis_at_the_stable_endpoint() {
    let dir = tempdir("standalone-diff");
    let up = Up::start(&dir, 1, None);
    up.wait_all_serving(Duration::from_secs(60));
    let redis = Redis::start(free_port());
    rt().block_on(async {
        let mut m = Conn::connect(&up.endpoint()).await.unwrap();
        let mut r = Conn::connect(&format!("127.0.0.1:{}", redis.port)).await.unwrap();
        for line in SCRIPT {
            let (mut a, mut b) = (m.request(&words(line)).await.unwrap(), r.request(&words(line)).await.unwrap());
            if unordered(line) {
                (a, b) = (sorted(a), sorted(b));
            }
            assert_eq!(a, b, "{line}: Memoria (left) vs redis-server");
        }
        // INFO keyspace: one line per database that has keys, as Redis prints them.
        for c in [&mut m, &mut r] {
            c.request(&words("SELECT 9")).await.unwrap();
            c.request(&words("SET nine 9")).await.unwrap();
        }
        let keyspace = |r: Reply| match r {
            Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("INFO keyspace: {other:?}"),
        };
        let (a, b) = (keyspace(m.request(&words("INFO keyspace")).await.unwrap()), keyspace(r.request(&words("INFO keyspace")).await.unwrap()));
        assert_eq!(a, b);
        assert!(a.contains("db9:keys=1,expires=0,avg_ttl=0"), "{a}");
        let info = keyspace(m.request(&words("INFO")).await.unwrap());
        assert!(info.contains("redis_mode:standalone\r\n") && info.contains("cluster_enabled:0\r\n"), "{info}");

        // Keyspace notifications in database 5.
        let mut subs = Vec::new();
        for (c, port) in [(&mut m, up.port), (&mut r, redis.port)] {
            c.request(&words("CONFIG SET notify-keyspace-events KEA")).await.unwrap();
            let mut s = Conn::connect(&format!("127.0.0.1:{port}")).await.unwrap();
            s.request(&words("PSUBSCRIBE __key*@5__:*")).await.unwrap();
            subs.push(s);
        }
        for line in ["SELECT 5", "SET n 1", "EXPIRE n 100", "RPUSH q a", "MOVE q 6", "SELECT 6", "SWAPDB 5 6", "SELECT 5", "DEL q n"] {
            assert_eq!(m.request(&words(line)).await.unwrap(), r.request(&words(line)).await.unwrap(), "{line}");
        }
        m.request(&words("PUBLISH end end")).await.unwrap();
        let mut got = Vec::new();
        for s in &mut subs {
            let mut events = Vec::new();
            loop {
                let msg = tokio::time::timeout(Duration::from_millis(500), s.read_reply()).await;
                match msg {
                    Ok(Ok(m)) => events.push(m),
                    _ => break,
                }
            }
            got.push(events);
        }
        assert!(!got[1].is_empty(), "redis-server sent no events");
        assert_eq!(got[0], got[1], "keyspace events in db 5: Memoria (left) vs redis-server");
    });

    // redis-cli -n 3 selects database 3 (it failed with "SELECT 3 failed" in cluster mode).
    for port in [up.port, redis.port] {
        let cli = |args: &[&str]| {
            let out = Command::new("redis-cli").args(["-p", &port.to_string(), "-n", "3"]).args(args).output().expect("redis-cli is installed");
            (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
        };
        assert_eq!(cli(&["set", "cli", "x"]), ("OK\n".into(), String::new()), "port {port}");
        assert_eq!(cli(&["get", "cli"]).0, "x\n");
        assert_eq!(cli(&["dbsize"]).0, "1\n");
    }
}

/// Writes `db<i>:<round>` to key `k` of every database through the stable endpoint.
async fn write_all_dbs(c: &mut Conn, round: u32) {
    for db in 0..16 {
        assert_eq!(c.request(&words(&format!("SELECT {db}"))).await.unwrap(), Reply::Simple("OK".into()));
        let v = format!("db{db}:{round}");
        assert_eq!(c.request(&[b"SET", b"k", v.as_bytes()]).await.unwrap(), Reply::Simple("OK".into()));
        assert_eq!(c.request(&[b"RPUSH", format!("list{db}").as_bytes(), v.as_bytes()]).await.unwrap(), Reply::Int(round as i64));
    }
}

/// Every database holds what round `round` wrote (and every earlier list element).
async fn check_all_dbs(addr: &str, round: u32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut c = connect_by(addr, deadline, what).await;
    for db in 0..16 {
        c.request(&words(&format!("SELECT {db}"))).await.unwrap();
        let want = Reply::Bulk(Some(format!("db{db}:{round}").into_bytes()));
        // A replica may still be applying the tail: wait for it, then check exactly.
        wait_for_reply(&mut c, &[b"GET", b"k"], &want, deadline, &format!("{what}: db {db}")).await;
        let list = c.request(&[b"LRANGE", format!("list{db}").as_bytes(), b"0", b"-1"]).await.unwrap();
        let want_list: Vec<Reply> = (1..=round).map(|r| Reply::Bulk(Some(format!("db{db}:{r}").into_bytes()))).collect();
        assert_eq!(list, Reply::Array(Some(want_list)), "{what}: db {db} list");
        assert_eq!(c.request(&[b"DBSIZE"]).await.unwrap(), Reply::Int(2), "{what}: db {db} size");
    }
}

#[test]
fn every_database_survives_kill9_restart_and_snapshot_truncation() {
    let dir = tempdir("standalone-dbs");
    // Snapshots after a few entries, truncating right behind them.
    let mut up = Up::start_with(&dir, 1, Some(600), snapshot_often_args());
    let rt = rt();
    let mut round = 0;
    let write_round = |up: &Up, round: &mut u32| {
        *round += 1;
        let r = *round;
        rt.block_on(async {
            let mut c = Conn::connect(&up.endpoint()).await.unwrap();
            write_all_dbs(&mut c, r).await;
        });
    };

    // kill -9 of the primary: the replica takes over with every database.
    let primary = up.wait_primary(Duration::from_secs(60), None);
    write_round(&up, &mut round);
    signal(primary.pid.unwrap(), "KILL");
    let new = up.wait_primary(Duration::from_secs(60), Some(&primary.name));
    rt.block_on(check_all_dbs(&up.endpoint(), round, "after kill -9 of the primary"));
    assert_ne!(new.name, primary.name);

    // A clean restart of everything.
    write_round(&up, &mut round);
    up.restart();
    up.wait_all_serving(Duration::from_secs(60));
    rt.block_on(check_all_dbs(&up.endpoint(), round, "after a clean restart"));

    // Snapshots and truncation: write until the scheduler has truncated the log, then
    // restart so the nodes start from the snapshot plus what is left of the log.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        write_round(&up, &mut round);
        if up.truncated_log() {
            break;
        }
        assert!(Instant::now() < deadline, "no truncation within 120 s:\n{}", up.tail_log());
        std::thread::sleep(Duration::from_millis(300));
    }
    write_round(&up, &mut round);
    up.restart();
    let c = up.wait_all_serving(Duration::from_secs(60));
    rt.block_on(check_all_dbs(&up.endpoint(), round, "after snapshot, truncation and restart"));
    // The replica holds the same databases.
    let replica = c.nodes.iter().find(|n| n.role == "replica").expect("a replica");
    rt.block_on(check_all_dbs(&format!("127.0.0.1:{}", replica.port), round, "on the replica"));
}

/// The node a connection reached, from `INFO server` (`tcp_port`).
async fn served_by(c: &mut Conn) -> Option<u16> {
    match tokio::time::timeout(Duration::from_secs(5), c.request(&words("INFO server"))).await {
        Ok(Ok(Reply::Bulk(Some(b)))) => String::from_utf8_lossy(&b).lines().find_map(|l| l.strip_prefix("tcp_port:")).and_then(|p| p.trim().parse().ok()),
        _ => None,
    }
}

/// No proxy in the data path: a connection to the stable endpoint is served by the primary's
/// own process (it sees the client's real address), and after a primary frozen past its lease
/// wakes up, no connection of the endpoint reaches it and it acknowledges nothing.
#[test]
fn the_stable_endpoint_hands_clients_to_the_primary_and_never_to_a_woken_old_one() {
    let dir = tempdir("standalone-handoff");
    let up = Up::start_with(&dir, 1, Some(600), vec!["--no-console".into()]);
    let old = up.wait_primary(Duration::from_secs(60), None);
    let runtime = rt();
    runtime.block_on(async {
        let mut c = Conn::connect(&up.endpoint()).await.unwrap();
        assert_eq!(served_by(&mut c).await, Some(old.port), "the endpoint leads to the primary's process");
        // CLIENT LIST on the primary shows this client's own address: no proxy in between.
        let mut me = tokio::net::TcpStream::connect(up.endpoint()).await.unwrap();
        let my_addr = me.local_addr().unwrap().to_string();
        {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            me.write_all(b"CLIENT INFO\r\n").await.unwrap();
            let mut buf = vec![0u8; 4096];
            let n = tokio::time::timeout(Duration::from_secs(5), me.read(&mut buf)).await.unwrap().unwrap();
            let info = String::from_utf8_lossy(&buf[..n]).into_owned();
            assert!(info.contains(&format!("addr={my_addr} ")), "CLIENT INFO shows the client's address {my_addr}: {info}");
        }
        assert_eq!(c.request(&words("SET before 1")).await.unwrap(), Reply::Simple("OK".into()));
    });

    // Freeze the primary past its lease; a connection made meanwhile may be handed to it
    // before the supervisor learns of the new primary: it must never be acknowledged.
    signal(old.pid.unwrap(), "STOP");
    let frozen_write = std::thread::spawn({
        let endpoint = up.endpoint();
        move || {
            rt().block_on(async {
                let Ok(mut c) = Conn::connect(&endpoint).await else { return None };
                tokio::time::timeout(Duration::from_secs(30), c.request(&words("SET during 1"))).await.ok().and_then(|r| r.ok())
            })
        }
    });
    let new = up.wait_primary(Duration::from_secs(60), Some(&old.name));
    runtime.block_on(async {
        let mut c = Conn::connect(&up.endpoint()).await.unwrap();
        assert_eq!(served_by(&mut c).await, Some(new.port));
        assert_eq!(c.request(&words("SET after 1")).await.unwrap(), Reply::Simple("OK".into()));
    });
    signal(old.pid.unwrap(), "CONT");
    let during = frozen_write.join().unwrap();
    runtime.block_on(async {
        // Every connection the endpoint makes from now on reaches the new primary.
        for _ in 0..20 {
            let mut c = Conn::connect(&up.endpoint()).await.unwrap();
            assert_eq!(served_by(&mut c).await, Some(new.port), "a connection of the stable endpoint reached the old primary");
        }
        let mut c = Conn::connect(&up.endpoint()).await.unwrap();
        let stored = c.request(&words("GET during")).await.unwrap();
        match &during {
            // Acknowledged: then the new primary must hold it (it was the primary's).
            Some(Reply::Simple(ok)) if ok == "OK" => assert_eq!(stored, Reply::Bulk(Some(b"1".to_vec())), "an acknowledged write was lost"),
            // Refused, failed or cut off: fine, whatever the log says is what is there.
            _ => {}
        }
        // The woken old primary acknowledges no write on its own port either.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(mut o) = Conn::connect(&format!("127.0.0.1:{}", old.port)).await
                && let Ok(Ok(r)) = tokio::time::timeout(Duration::from_secs(5), o.request(&words("SET stale 1"))).await
            {
                assert_ne!(r, Reply::Simple("OK".into()), "the woken old primary acknowledged a write");
                if matches!(&r, Reply::Error(e) if e.starts_with("READONLY")) {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "the old primary did not rejoin as a replica");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(c.request(&words("GET stale")).await.unwrap(), Reply::Bulk(None));
        assert_eq!(
            c.request(&words("MGET before after")).await.unwrap(),
            Reply::Array(Some(vec![Reply::Bulk(Some(b"1".to_vec())), Reply::Bulk(Some(b"1".to_vec()))]))
        );
    });
}

/// The stable TLS endpoint hands its clients over too: TLS ends at the primary's process.
#[test]
fn the_stable_tls_endpoint_hands_clients_to_the_primary() {
    let dir = tempdir("standalone-tls");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("openssl is installed");
    assert!(made.success(), "openssl could not make a test certificate");
    let tls_port = common::free_port_run(3);
    let args = [
        "--no-console".to_string(),
        "--tls-port".into(),
        tls_port.to_string(),
        "--node-tls-port-base".into(),
        (tls_port + 1).to_string(),
        "--tls-cert-file".into(),
        cert.display().to_string(),
        "--tls-key-file".into(),
        key.display().to_string(),
        "--tls-auth-clients".into(),
        "no".into(),
    ];
    let up = Up::start_with(&dir, 1, None, args.to_vec());
    let primary = up.wait_primary(Duration::from_secs(60), None);
    let cli = |args: &[&str]| {
        let out = Command::new("redis-cli")
            .args(["--tls", "--insecure", "-h", "127.0.0.1", "-p", &tls_port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli is installed");
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while cli(&["PING"]).trim() != "PONG" {
        assert!(Instant::now() < deadline, "no PONG through the stable TLS endpoint: {}", cli(&["PING"]));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(cli(&["SET", "t", "1"]).trim(), "OK");
    let info = cli(&["INFO", "server"]);
    assert!(info.contains(&format!("tcp_port:{}", primary.port)), "served by the primary's process: {info}");
}
