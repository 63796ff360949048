//! Cluster mode with real processes and real cluster clients: `memoria up --shards 2
//! --replicas 1` (two node processes, each serving a node of both shards, the slot map in
//! the cluster log), driven unchanged by `redis-cli -c`, the `redis` crate's async
//! cluster client and redis-py's RedisCluster; then a kill -9 of a node process and the
//! same clients carry on against the shards' new primaries.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{Up, tempdir};
use memoria_e2e::workload::{Conn, Reply};

/// Waits until `addr` reports `cluster_state:ok` and CLUSTER SLOTS lists `ranges` ranges,
/// each with a primary and at least `nodes_per_range - 1` replicas.
fn wait_cluster_ok(addr: &str, ranges: usize, nodes_per_range: usize, timeout: Duration) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let deadline = Instant::now() + timeout;
    rt.block_on(async {
        let mut last = None;
        loop {
            if let Ok(mut c) = Conn::connect(addr).await
                && let Ok(Reply::Bulk(Some(info))) = c.request(&[b"CLUSTER", b"INFO"]).await
                && String::from_utf8_lossy(&info).contains("cluster_state:ok")
                && let Ok(Reply::Array(Some(rs))) = c.request(&[b"CLUSTER", b"SLOTS"]).await
            {
                if rs.len() == ranges && rs.iter().all(|r| matches!(r, Reply::Array(Some(x)) if x.len() >= 2 + nodes_per_range)) {
                    return;
                }
                last = Some(rs);
            }
            assert!(Instant::now() < deadline, "{addr}: cluster not ok within {timeout:?}; CLUSTER SLOTS: {last:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli").args(["-c", "-p", &port.to_string()]).args(args).output().expect("redis-cli (apt-get install redis-tools)");
    assert!(out.status.success(), "redis-cli {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A python3 that has redis-py: the system one, or a venv under /root/.cache made (once)
/// with pip.
fn python_with_redis() -> String {
    let ok = |py: &str| Command::new(py).args(["-c", "import redis.cluster"]).output().is_ok_and(|o| o.status.success());
    if ok("python3") {
        return "python3".into();
    }
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let venv = format!("{home}/.cache/memoria-pyenv");
    let py = format!("{venv}/bin/python");
    if ok(&py) {
        return py;
    }
    let made = Command::new("python3").args(["-m", "venv", &venv]).status().is_ok_and(|s| s.success())
        && Command::new(format!("{venv}/bin/pip")).args(["install", "-q", "redis"]).status().is_ok_and(|s| s.success());
    assert!(
        made && ok(&py),
        "redis-py is needed: `python3 -c 'import redis'` fails and `python3 -m venv {venv} && {venv}/bin/pip install redis` did not work (install python3-venv and give pip network access)"
    );
    py
}

const PY: &str = r#"
import sys
from redis.cluster import RedisCluster
rc = RedisCluster(host="127.0.0.1", port=int(sys.argv[1]))
n = int(sys.argv[2])
tag = sys.argv[3]
for i in range(n):
    rc.set(f"py:{tag}:{i}", str(i))
for i in range(n):
    got = rc.get(f"py:{tag}:{i}")
    assert got == str(i).encode(), (i, got)
rc.mset_nonatomic({f"py:{tag}:m{i}": "v" for i in range(50)})
assert rc.mget_nonatomic([f"py:{tag}:m{i}" for i in range(50)]) == [b"v"] * 50
assert rc.incr("{%s}c" % tag) == 1
# Commands whose keys move (after STREAMS, behind numkeys, SORT's own): redis-py routes
# them by asking a node COMMAND GETKEYS, so they reach the shard of their slot.
t = "{%s}" % tag
rc.xadd(t + "s", {"f": "v"})
got = rc.xread({t + "s": "0"})
assert got[0][0] == (t + "s").encode() and got[0][1][0][1] == {b"f": b"v"}, got
rc.xgroup_create(t + "s", "g", id="0")
got = rc.xreadgroup("g", "c1", {t + "s": ">"})
assert got[0][0] == (t + "s").encode() and len(got[0][1]) == 1, got
rc.rpush(t + "l", 3, 1, 2)
assert rc.sort(t + "l") == [b"1", b"2", b"3"]
rc.zadd(t + "z1", {"a": 1})
rc.zadd(t + "z2", {"b": 2})
assert rc.zunionstore(t + "zu", [t + "z1", t + "z2"]) == 2
assert rc.zrange(t + "zu", 0, -1) == [b"a", b"b"]
assert rc.lmpop(1, t + "l", direction="LEFT") == [(t + "l").encode(), [b"3"]]
print(len(rc.get_primaries()), "primaries")
"#;

fn run_py(py: &str, port: u16, n: usize, tag: &str) -> String {
    let out = Command::new(py).args(["-c", PY, &port.to_string(), &n.to_string(), tag]).output().unwrap();
    assert!(out.status.success(), "redis-py: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The redis crate's async cluster client: `n` keys spread over every slot range,
/// read back, a hash-tagged MSET, and CROSSSLOT for a multi-key command across slots.
async fn redis_crate(nodes: &[String], n: usize, tag: &str) {
    use redis::AsyncCommands;
    let urls: Vec<String> = nodes.iter().map(|a| format!("redis://{a}/")).collect();
    let client = redis::cluster::ClusterClientBuilder::new(urls).build().unwrap();
    let mut c = client.get_async_connection().await.expect("cluster connection");
    for i in 0..n {
        let _: () = c.set(format!("rs:{tag}:{i}"), i).await.unwrap();
    }
    for i in 0..n {
        let v: usize = c.get(format!("rs:{tag}:{i}")).await.unwrap();
        assert_eq!(v, i);
    }
    let _: () = redis::cmd("MSET").arg(format!("{{{tag}}}a")).arg(1).arg(format!("{{{tag}}}b")).arg(2).query_async(&mut c).await.unwrap();
    let v: Vec<i64> = redis::cmd("MGET").arg(format!("{{{tag}}}a")).arg(format!("{{{tag}}}b")).query_async(&mut c).await.unwrap();
    assert_eq!(v, vec![1, 2]);
}

#[test]
fn cluster_clients_work_unchanged_and_ride_through_a_failover() {
    let dir = tempdir("cluster");
    let up = Up::start_sharded(&dir, 2, 1, None);
    up.wait_all_serving(Duration::from_secs(90));
    let nodes = up.node_addrs();
    assert_eq!(nodes.len(), 4);
    wait_cluster_ok(&nodes[0], 2, 2, Duration::from_secs(30));

    // redis-cli -c follows -MOVED from whichever node it starts at.
    for (i, key) in ["foo", "bar", "a", "b", "x", "{user1}.name"].iter().enumerate() {
        let port = up.node_base + (i % 4) as u16;
        assert_eq!(redis_cli(port, &["SET", key, &format!("v{i}")]), "OK");
        assert_eq!(redis_cli(up.node_base + ((i + 1) % 4) as u16, &["GET", key]), format!("v{i}"));
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        // Each shard holds only its own slots; CROSSSLOT and MOVED as Redis words them.
        // Shard 0's primary (a replica would redirect reads too).
        let p0 = up.cluster().unwrap().nodes.iter().find(|n| n.shard == 0 && n.role == "primary").unwrap().port;
        let mut c = Conn::connect(&format!("127.0.0.1:{p0}")).await.unwrap();
        match c.request(&[b"MSET", b"foo", b"1", b"bar", b"2"]).await.unwrap() {
            Reply::Error(e) => assert_eq!(e, "CROSSSLOT Keys in request don't hash to the same slot"),
            other => panic!("{other:?}"),
        }
        let mut moved = 0;
        for k in ["foo", "bar"] {
            if let Reply::Error(e) = c.request(&[b"GET", k.as_bytes()]).await.unwrap() {
                assert!(e.starts_with("MOVED "), "{e}");
                moved += 1;
            }
        }
        assert_eq!(moved, 1, "foo (12182) and bar (5061) live on different shards");
        redis_crate(&nodes, 300, "one").await;
    });
    let py = python_with_redis();
    assert_eq!(run_py(&py, up.node_base, 300, "one"), "2 primaries");

    // Keys are where the slot map says: both shards got some, none got all.
    rt.block_on(async {
        let mut total = 0;
        let cl = up.cluster().unwrap();
        for s in 0..2u16 {
            let p = cl.nodes.iter().find(|n| n.shard == s && n.role == "primary").unwrap().port;
            let mut c = Conn::connect(&format!("127.0.0.1:{p}")).await.unwrap();
            let Reply::Int(n) = c.request(&[b"DBSIZE"]).await.unwrap() else { panic!() };
            assert!(n > 100, "shard {s} holds only {n} keys");
            total += n;
        }
        // 6 from redis-cli; 300 + 2 from the redis crate; 300 + 50 + 1 + 5 from redis-py
        // (the stream, the list, two sorted sets and their union).
        assert_eq!(total, 664);
    });

    // kill -9 the node process that leads shard 0: its shards fail over by their own
    // elections, the supervisor starts it again as a replica, and the clients carry on.
    let c = up.cluster().unwrap();
    let victim = c.nodes.iter().find(|n| n.shard == 0 && n.role == "primary").unwrap().clone();
    common::signal(victim.pid.unwrap(), "KILL");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(c) = up.cluster()
            && (0..2).all(|s| c.nodes.iter().any(|n| n.shard == s && n.role == "primary" && n.pid.is_some() && n.pid != victim.pid))
        {
            break;
        }
        assert!(Instant::now() < deadline, "no new primaries: {:?}\n{}", up.cluster(), up.tail_log());
        std::thread::sleep(Duration::from_millis(100));
    }
    let survivor = up.cluster().unwrap().nodes.iter().find(|n| n.shard == 0 && n.role == "primary" && n.pid != victim.pid).unwrap().port;
    wait_cluster_ok(&format!("127.0.0.1:{survivor}"), 2, 1, Duration::from_secs(30));
    // The shards of the survivor's process learn each other's new primaries within a tick
    // or two: wait until its map no longer sends clients to the dead process.
    let dead: Vec<u16> = up.cluster().unwrap().nodes.iter().filter(|n| n.name == victim.name).map(|n| n.port).collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Command::new("redis-cli")
        .args(["-p", &survivor.to_string(), "CLUSTER", "NODES"])
        .output()
        .map(|o| {
            let t = String::from_utf8_lossy(&o.stdout).to_string();
            t.lines().any(|l| l.contains("master") && dead.iter().any(|p| l.contains(&format!("127.0.0.1:{p}@"))))
        })
        .unwrap_or(true)
    {
        assert!(Instant::now() < deadline, "the survivor still lists the dead process's nodes as primaries");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(redis_cli(survivor, &["GET", "foo"]), "v0");
    rt.block_on(redis_crate(&[format!("127.0.0.1:{survivor}")], 200, "two"));
    assert_eq!(run_py(&py, survivor, 200, "two"), "2 primaries");
    // What was written before the failover is all there.
    rt.block_on(async {
        use redis::AsyncCommands;
        let client = redis::cluster::ClusterClientBuilder::new(vec![format!("redis://127.0.0.1:{survivor}/")]).build().unwrap();
        let mut c = client.get_async_connection().await.unwrap();
        for i in 0..300 {
            let v: usize = c.get(format!("rs:one:{i}")).await.unwrap();
            assert_eq!(v, i);
        }
    });
}
