//! Scripts and function libraries at a default `memoria up` (a primary and a replica at
//! the stable endpoint): every write a script or a function acknowledged, and every
//! function library, survive kill -9 of the primary, a clean restart and a snapshot with
//! log truncation, and are on the replica, because the log holds a script's effects (the
//! commands it called) and FUNCTION LOAD itself.

mod common;

use std::time::{Duration, Instant};

use common::{Up, connect_by, rt, signal, snapshot_often_args, tempdir, wait_for_reply};
use memoria_e2e::workload::{Conn, Reply};

const LIBRARY: &str = "#!lua name=ledger\n\
redis.register_function('bump', function(keys, args) return redis.call('INCRBY', keys[1], args[1]) end)\n\
redis.register_function{function_name='total', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}";

/// A script that writes two keys and returns the list's new length.
const SCRIPT: &str = "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('RPUSH', KEYS[2], ARGV[1])";

/// One round: the library is (re)loaded, a function and a script write, and each reply is
/// checked (an acknowledged write is what the checks later expect).
async fn write_round(c: &mut Conn, round: u32) {
    let lib = c.request(&[b"FUNCTION", b"LOAD", b"REPLACE", LIBRARY.as_bytes()]).await.unwrap();
    assert_eq!(lib, Reply::Bulk(Some(b"ledger".to_vec())));
    let r = round.to_string();
    let bumped = c.request(&[b"FCALL", b"bump", b"1", b"counter", b"2"]).await.unwrap();
    assert_eq!(bumped, Reply::Int(2 * round as i64), "round {round}: FCALL bump");
    let pushed = c.request(&[b"EVAL", SCRIPT.as_bytes(), b"2", b"last", b"rounds", r.as_bytes()]).await.unwrap();
    assert_eq!(pushed, Reply::Int(round as i64), "round {round}: EVAL");
}

/// The node at `addr` holds what `round` rounds wrote, and runs the library's functions.
async fn check(addr: &str, round: u32, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut c = connect_by(addr, deadline, what).await;
    let want = Reply::Bulk(Some((2 * round).to_string().into_bytes()));
    wait_for_reply(&mut c, &[b"FCALL_RO", b"total", b"1", b"counter"], &want, deadline, what).await;
    let last = c.request(&[b"GET", b"last"]).await.unwrap();
    assert_eq!(last, Reply::Bulk(Some(round.to_string().into_bytes())), "{what}: the script's SET");
    let rounds = c.request(&[b"LRANGE", b"rounds", b"0", b"-1"]).await.unwrap();
    let want_rounds: Vec<Reply> = (1..=round).map(|r| Reply::Bulk(Some(r.to_string().into_bytes()))).collect();
    assert_eq!(rounds, Reply::Array(Some(want_rounds)), "{what}: the script's RPUSHes");
    let bulk = |s: &str| Reply::Bulk(Some(s.as_bytes().to_vec()));
    let counts = Reply::Array(Some(vec![bulk("libraries_count"), Reply::Int(1), bulk("functions_count"), Reply::Int(2)]));
    let want_stats = Reply::Array(Some(vec![bulk("running_script"), Reply::Bulk(None), bulk("engines"), Reply::Array(Some(vec![bulk("LUA"), counts]))]));
    assert_eq!(c.request(&[b"FUNCTION", b"STATS"]).await.unwrap(), want_stats, "{what}: FUNCTION STATS");
}

#[test]
fn scripts_and_libraries_survive_kill9_restart_and_snapshot_truncation() {
    let dir = tempdir("scripting");
    let mut up = Up::start_with(&dir, 1, Some(600), snapshot_often_args());
    let rt = rt();
    let mut round = 0;
    let mut write = |up: &Up| {
        round += 1;
        let r = round;
        rt.block_on(async {
            let mut c = Conn::connect(&up.endpoint()).await.unwrap();
            write_round(&mut c, r).await;
        });
        r
    };

    // kill -9 of the primary: the replica takes over with the library and every write.
    let primary = up.wait_primary(Duration::from_secs(60), None);
    let r = write(&up);
    signal(primary.pid.unwrap(), "KILL");
    let new = up.wait_primary(Duration::from_secs(60), Some(&primary.name));
    assert_ne!(new.name, primary.name);
    rt.block_on(check(&up.endpoint(), r, "after kill -9 of the primary"));

    // A clean restart of everything.
    let r = write(&up);
    up.restart();
    up.wait_all_serving(Duration::from_secs(60));
    rt.block_on(check(&up.endpoint(), r, "after a clean restart"));

    // Snapshots and truncation: write until the log was truncated behind a snapshot, then
    // restart so the nodes start from the snapshot (which carries the library).
    let deadline = Instant::now() + Duration::from_secs(120);
    let r = loop {
        let r = write(&up);
        if up.truncated_log() {
            break r;
        }
        assert!(Instant::now() < deadline, "no truncation within 120 s:\n{}", up.tail_log());
        std::thread::sleep(Duration::from_millis(300));
    };
    up.restart();
    let c = up.wait_all_serving(Duration::from_secs(60));
    rt.block_on(check(&up.endpoint(), r, "after snapshot, truncation and restart"));
    let replica = c.nodes.iter().find(|n| n.role == "replica").expect("a replica");
    rt.block_on(check(&format!("127.0.0.1:{}", replica.port), r, "on the replica"));
}

const SPIN: &str = "local i = 0 while true do i = i + 1 end";

/// Sends GET to `c` until the answer is `busy` (the script has run past the threshold).
async fn wait_busy(c: &mut Conn, busy: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match c.request(&[b"GET", b"x"]).await.unwrap() {
            Reply::Error(e) if e == busy => return,
            r => assert!(Instant::now() < deadline, "no -BUSY within 60 s (last reply {r:?})"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn runaway_scripts_get_others_busy_are_killed_and_the_primary_keeps_its_lease() {
    const BUSY_EVAL: &str = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
    const BUSY_FUNCTION: &str = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
    let dir = tempdir("busy-script");
    // A short lease: the script runs through several of them.
    let lease_ms = 1000;
    let up = Up::start(&dir, 1, Some(lease_ms));
    let primary = up.wait_primary(Duration::from_secs(60), None);
    let rt = rt();
    // Which phase runs, for the hang guard below: a step that never answers fails the
    // test with the supervisor's log rather than holding the suite forever.
    let phase = std::sync::Mutex::new("connecting");
    let at = |p: &'static str| *phase.lock().unwrap() = p;
    let steps = async {
        let ep = up.endpoint();
        let mut other = Conn::connect(&ep).await.unwrap();
        let ok = Reply::Simple("OK".into());
        at("EVAL: waiting for -BUSY");
        assert_eq!(other.request(&[b"CONFIG", b"SET", b"busy-reply-threshold", b"100"]).await.unwrap(), ok);
        assert_eq!(other.request(&[b"SET", b"before", b"1"]).await.unwrap(), ok);

        // EVAL: -BUSY for others, for several leases; the primary stays the primary.
        let mut runner = Conn::connect(&ep).await.unwrap();
        let script = tokio::spawn(async move { runner.request(&[b"EVAL", SPIN.as_bytes(), b"0"]).await.unwrap() });
        wait_busy(&mut other, BUSY_EVAL).await;
        let until = Instant::now() + Duration::from_millis(3 * lease_ms);
        while Instant::now() < until {
            assert_eq!(other.request(&[b"INCR", b"n"]).await.unwrap(), Reply::Error(BUSY_EVAL.into()));
            assert_eq!(other.request(&[b"FUNCTION", b"KILL"]).await.unwrap(), Reply::Error(BUSY_EVAL.into()));
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        at("EVAL: SCRIPT KILL and the script's answer");
        assert_eq!(other.request(&[b"SCRIPT", b"KILL"]).await.unwrap(), ok);
        let sha = "3fcf51a9b854b8f66cb8685600b0d7df968f4398";
        let killed = format!("ERR Script killed by user with SCRIPT KILL... script: {sha}, on @user_script:1.");
        assert_eq!(script.await.unwrap(), Reply::Error(killed));

        // A read-only function: FUNCTION KILL.
        let lib = format!("#!lua name=spinners\nredis.register_function{{function_name='spin', callback=function() {SPIN} end, flags={{'no-writes'}}}}");
        assert_eq!(other.request(&[b"FUNCTION", b"LOAD", lib.as_bytes()]).await.unwrap(), Reply::Bulk(Some(b"spinners".to_vec())));
        at("FCALL_RO: connecting, waiting for -BUSY, FUNCTION KILL");
        let mut runner = Conn::connect(&ep).await.unwrap();
        let function = tokio::spawn(async move { runner.request(&[b"FCALL_RO", b"spin", b"0"]).await.unwrap() });
        wait_busy(&mut other, BUSY_FUNCTION).await;
        assert_eq!(other.request(&[b"SCRIPT", b"KILL"]).await.unwrap(), Reply::Error(BUSY_FUNCTION.into()));
        assert_eq!(other.request(&[b"FUNCTION", b"KILL"]).await.unwrap(), ok);
        let killed = "ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.";
        assert_eq!(function.await.unwrap(), Reply::Error(killed.into()));

        // The shard serves normally, and durably.
        at("serving after the kills");
        assert_eq!(other.request(&[b"INCR", b"n"]).await.unwrap(), Reply::Int(1));
        assert_eq!(other.request(&[b"GET", b"before"]).await.unwrap(), Reply::Bulk(Some(b"1".to_vec())));
    };
    rt.block_on(async {
        if tokio::time::timeout(Duration::from_secs(300), steps).await.is_err() {
            panic!("stuck at '{}' for 5 minutes; memoria up's log:\n{}", phase.lock().unwrap(), up.tail_log());
        }
    });
    let now = up.wait_primary(Duration::from_secs(60), None);
    assert_eq!(now.name, primary.name, "the primary lost its lease while the script ran");
}
