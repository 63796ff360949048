//! (c) The primary cut off from its log (a network partition between the node and the log
//! service, made with a relay the test controls), under load: the other node claims the
//! shard once the lease has surely run out; the cut-off primary acknowledges nothing after
//! that claim — it cannot, every acknowledgement needs the log — and stops serving reads
//! when its lease lapses, so it never serves a stale read. Healed, it rejoins as a replica.
//! Afterwards: every acknowledged write is readable and the history is linearizable.
//!
//! And with the log service frozen (SIGSTOP): a read after a FLUSHALL that is not in the
//! log yet waits for it.

mod common;

use std::time::{Duration, Instant};

use common::{LogService, Nodes, Relay, Up, tempdir};
use memoria_e2e::workload::{Config, Conn, Reply, Workload};

/// Memoria's default lease.
const LEASE_MS: Option<u64> = None;

#[test]
fn primary_cut_off_from_its_log() {
    let dir = tempdir("partition");
    let token = "partition-token";
    let log = LogService::sqlite(&dir, token);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let relays: Vec<Relay> = (0..2).map(|_| Relay::start(&rt, &log.url)).collect();
    let nodes = Nodes::start(&dir, relays.iter().map(|r| vec![r.url.clone()]).collect(), token, LEASE_MS);
    nodes.wait_all_up(Duration::from_secs(60));
    let old = nodes.wait_primary(Duration::from_secs(30), None);
    rt.block_on(async {
        let mut cfg = Config::new(nodes.addrs());
        cfg.clients = 6;
        let w = Workload::start(cfg);
        assert!(w.wait_for_ok(100, Duration::from_secs(30)).await, "the load never got going: {}", w.stats());

        // A client of the old primary, and one key it will watch.
        let mut direct = Conn::connect(&nodes.addrs()[old]).await.unwrap();
        assert!(matches!(direct.request(&[b"SET", b"cut:k", b"before"]).await.unwrap(), Reply::Simple(_)));
        relays[old].cut();
        let cut_at = Instant::now();
        let new = tokio::task::spawn_blocking({
            let addrs = nodes.addrs();
            move || wait_other_primary(&addrs, old)
        })
        .await
        .unwrap();
        println!("node {old} cut off from the log; node {new} leads after {} ms", cut_at.elapsed().as_millis());
        let mut c = Conn::connect(&nodes.addrs()[new]).await.unwrap();
        assert!(matches!(c.request(&[b"SET", b"cut:k", b"after"]).await.unwrap(), Reply::Simple(_)));

        // The cut-off node: past its lease it acknowledges no write and serves no read.
        for _ in 0..5 {
            no_ack_no_stale_read(&mut direct).await;
            match Conn::connect(&nodes.addrs()[old]).await {
                Ok(d) => direct = d,
                Err(_) => break,
            }
        }

        relays[old].heal();
        let r = w.stop().await;
        common::assert_no_loss_and_linearizable(&nodes.addrs(), &r, "partition drill").await;
    });
    // Healed, the old primary follows the new one.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info = common::info_replication(nodes.ports[old]).unwrap_or_default();
        if info.contains("role:slave") && info.contains("master_link_status:up") {
            break;
        }
        assert!(Instant::now() < deadline, "the old primary did not rejoin as a replica: {info}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The same partition through the stable endpoint of `memoria up` (its nodes reach the
/// log service through relays the test cuts; `MEMORIA_TEST_NODE_LOG_URLS`): clients that
/// know only the endpoint lose no acknowledged write and see a linearizable history; a
/// connection the endpoint handed to the old primary before the cut gets no acknowledged
/// write and no stale read from it; connections made after the new primary leads reach
/// it, never the cut-off node; healed, the old primary rejoins as a replica.
#[test]
fn primary_cut_off_through_the_stable_endpoint() {
    let dir = tempdir("partition-up");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let relays: Vec<Relay> = (0..2).map(|_| Relay::start_later(&rt)).collect();
    let urls: Vec<String> = relays.iter().map(|r| r.url.clone()).collect();
    let up = Up::start_full(&dir, 1, 1, LEASE_MS, vec!["--no-console".into()], vec![("MEMORIA_TEST_NODE_LOG_URLS".into(), urls.join(","))]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let log_url = loop {
        if let Some(l) = up.cluster().and_then(|c| c.log) {
            break l.url;
        }
        assert!(Instant::now() < deadline, "cluster.json names no log service\n{}", up.tail_log());
        std::thread::sleep(Duration::from_millis(20));
    };
    for r in &relays {
        r.set_target(&log_url);
    }
    let first = up.wait_primary(Duration::from_secs(60), None);
    up.wait_all_serving(Duration::from_secs(60));
    let old: usize = first.name.trim_start_matches("node-").parse::<usize>().unwrap() - 1;
    let endpoint = up.endpoint();
    rt.block_on(async {
        let mut cfg = Config::new(vec![endpoint.clone()]);
        cfg.clients = 6;
        let w = Workload::start(cfg);
        assert!(w.wait_for_ok(100, Duration::from_secs(30)).await, "the load never got going: {}", w.stats());

        // Handed to the old primary by the endpoint, before the cut.
        let mut direct = Conn::connect(&endpoint).await.unwrap();
        assert!(matches!(direct.request(&[b"SET", b"cut:k", b"before"]).await.unwrap(), Reply::Simple(_)));
        relays[old].cut();
        let cut_at = Instant::now();
        let new = tokio::task::spawn_blocking({
            let up_name = first.name.clone();
            let dir = up.dir.clone();
            move || wait_named_primary_other_than(&dir, &up_name)
        })
        .await
        .unwrap();
        println!("{} cut off from the log; {new} leads after {} ms", first.name, cut_at.elapsed().as_millis());
        // Through the endpoint, a write is acknowledged (by the new primary)…
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Ok(mut c)) = tokio::time::timeout(Duration::from_secs(2), Conn::connect(&endpoint)).await
                && let Ok(Ok(Reply::Simple(_))) = tokio::time::timeout(Duration::from_secs(5), c.request(&[b"SET", b"cut:k", b"after"])).await
            {
                break;
            }
            assert!(Instant::now() < deadline, "no write acknowledged through the endpoint after the cut");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // …and every connection made from now on reads it: none reaches the cut-off node.
        for _ in 0..20 {
            let mut c = Conn::connect(&endpoint).await.unwrap();
            match tokio::time::timeout(Duration::from_secs(5), c.request(&[b"GET", b"cut:k"])).await {
                Ok(Ok(Reply::Bulk(Some(v)))) => assert_eq!(v, b"after", "a new endpoint connection read a stale value"),
                Ok(Ok(Reply::Error(_))) | Ok(Err(_)) | Err(_) => {}
                Ok(Ok(r)) => panic!("GET through the endpoint answered {r:?}"),
            }
        }
        // The connection on the old primary: no acknowledged write, no stale read.
        for _ in 0..3 {
            no_ack_no_stale_read(&mut direct).await;
        }

        relays[old].heal();
        let r = w.stop().await;
        common::assert_no_loss_and_linearizable(std::slice::from_ref(&endpoint), &r, "partition drill through the stable endpoint").await;
    });
    // Healed, the old primary follows the new one.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let role = up.cluster().and_then(|c| c.nodes.iter().find(|n| n.name == first.name).map(|n| n.role.clone()));
        if role.as_deref() == Some("replica") {
            break;
        }
        assert!(Instant::now() < deadline, "the old primary did not rejoin as a replica: {role:?}\n{}", up.tail_log());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// On a connection to the cut-off old primary: a write of `cut:k` is not acknowledged
/// (an error, a closed connection or no answer), and a read gives nothing older than the
/// new primary's `after`.
async fn no_ack_no_stale_read(direct: &mut Conn) {
    match tokio::time::timeout(Duration::from_secs(5), direct.request(&[b"SET", b"cut:k", b"stale"])).await {
        Ok(Ok(Reply::Error(_))) | Ok(Err(_)) | Err(_) => {}
        Ok(Ok(r)) => panic!("the cut-off old primary answered a write with {r:?}"),
    }
    match tokio::time::timeout(Duration::from_secs(5), direct.request(&[b"GET", b"cut:k"])).await {
        Ok(Ok(Reply::Error(_))) | Ok(Err(_)) | Err(_) => {}
        Ok(Ok(Reply::Bulk(Some(v)))) if v == b"after" => {}
        Ok(Ok(r)) => panic!("the cut-off old primary served a stale read: {r:?}"),
    }
}

/// The primary cluster.json names once it is another node than `not`.
fn wait_named_primary_other_than(dir: &std::path::Path, not: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let file: Option<common::ClusterFile> = std::fs::read(dir.join("cluster.json")).ok().and_then(|b| serde_json::from_slice(&b).ok());
        if let Some(p) = file.and_then(|c| c.primary)
            && p != not
        {
            return p;
        }
        assert!(Instant::now() < deadline, "no other primary within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_other_primary(addrs: &[String], not: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for (i, a) in addrs.iter().enumerate() {
            let port: u16 = a.rsplit(':').next().unwrap().parse().unwrap();
            if i != not && common::info_replication(port).is_some_and(|t| t.contains("role:master")) {
                return i;
            }
        }
        assert!(Instant::now() < deadline, "no other primary within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A write that names no key (FLUSHALL) holds back every read until the log has it: while
/// the log service is frozen, a GET of a key the flush removed must not answer nil, which a
/// crash before the flush landed would contradict. Once the log resumes, the flush is
/// acknowledged and the read follows it.
#[test]
fn a_read_after_an_unlogged_flushall_waits_for_it() {
    let dir = tempdir("flush-hold");
    let token = "flush-hold-token";
    let log = LogService::sqlite(&dir, token);
    // A lease long enough that the freeze below does not make the node step down.
    let nodes = Nodes::start(&dir, vec![vec![log.url.clone()]], token, Some(4_000));
    nodes.wait_all_up(Duration::from_secs(60));
    let p = nodes.wait_primary(Duration::from_secs(30), None);
    let addr = nodes.addrs()[p].clone();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut a = Conn::connect(&addr).await.unwrap();
        let mut b = Conn::connect(&addr).await.unwrap();
        let within = |secs| Duration::from_secs(secs);
        for attempt in 1..=3 {
            assert!(matches!(a.request(&[b"SET", b"flush:k", b"v"]).await.unwrap(), Reply::Simple(_)));
            common::signal(log.pid(), "STOP");
            a.send(&[b"FLUSHALL"]).await.unwrap();
            // The flush runs in the engine at once; its append waits for the frozen log.
            tokio::time::sleep(Duration::from_millis(200)).await;
            b.send(&[b"GET", b"flush:k"]).await.unwrap();
            let early = tokio::time::timeout(Duration::from_millis(800), b.read_reply()).await;
            common::signal(log.pid(), "CONT");
            let flushed = tokio::time::timeout(within(10), a.read_reply()).await.expect("FLUSHALL answered once the log resumed").unwrap();
            assert!(matches!(&flushed, Reply::Simple(s) if s == "OK"), "FLUSHALL: {flushed:?}");
            match early {
                Err(_) => {
                    let r = tokio::time::timeout(within(10), b.read_reply()).await.expect("GET answered once the flush landed").unwrap();
                    assert!(matches!(r, Reply::Bulk(None)), "the acknowledged flush removed the key, but GET answered {r:?}");
                    return;
                }
                // A machine too slow for the 200 ms above ran the GET first: a valid order.
                Ok(Ok(Reply::Bulk(Some(v)))) if v == b"v" => println!("attempt {attempt}: the GET ran before the FLUSHALL; again"),
                Ok(r) => panic!("GET answered {r:?} while the FLUSHALL before it was not in the log"),
            }
        }
        panic!("the GET ran before the FLUSHALL in every attempt");
    });
}
