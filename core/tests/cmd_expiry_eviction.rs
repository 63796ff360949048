//! maxmemory: noeviction answers -OOM to commands that may grow memory (also while
//! queueing in MULTI); eviction policies free memory by deleting keys and replicate each
//! eviction as DEL. Memory use is measured by a counting global allocator in this test
//! binary (standing in for the component's allocator), so evictions really shrink it.

mod cmdutil;
mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use cmdutil::*;
use common::{H, NIL, OK, bulk, err, int};

struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            ALLOCATED.fetch_add(l.size(), Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        ALLOCATED.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            ALLOCATED.fetch_add(new, Relaxed);
            ALLOCATED.fetch_sub(l.size(), Relaxed);
        }
        q
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn heap_in_use() -> usize {
    ALLOCATED.load(Relaxed)
}

/// Tests here measure the whole process's heap: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A fixed fake reading for tests that only need "over" or "under".
static FAKE_USED: AtomicUsize = AtomicUsize::new(0);
fn fake_probe() -> usize {
    FAKE_USED.load(Relaxed)
}

const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";

#[test]
fn noeviction_refuses_growing_commands() {
    let _g = serial();
    let mut h = H::new();
    h.e.set_memory_probe(fake_probe);
    FAKE_USED.store(2_000_000, Relaxed);
    ck(&mut h, "SET a 1", OK);
    ck(&mut h, "HSET h f v", int(1));
    ck(&mut h, "CONFIG SET maxmemory 1mb", OK);
    let before = h.effect_lines();
    for c in [
        "SET b 1",
        "SETNX b 1",
        "MSET b 1",
        "APPEND a x",
        "INCR a",
        "INCRBYFLOAT a 1",
        "SETRANGE a 0 x",
        "HSET h g v",
        "HINCRBY h n 1",
        "HSETNX h g v",
        "GETSET a x",
    ] {
        ck(&mut h, c, err(OOM));
    }
    // Reads, deletes and other non-growing commands still run.
    ck(&mut h, "GET a", bulk("1"));
    ck(&mut h, "HGETALL h", bulks(&["f", "v"]));
    ck(&mut h, "EXPIRE a 100", int(1));
    ck(&mut h, "PERSIST a", int(1));
    ck(&mut h, "HDEL h f", int(1));
    ck(&mut h, "DEL a", int(1));
    ck(&mut h, "PING", "+PONG\r\n");
    ck(&mut h, "DBSIZE", int(0));
    let fx = h.effect_lines();
    assert_eq!(fx[before.len()..], ["0:PEXPIREAT a 1700000100000", "0:PERSIST a", "0:HDEL h f", "0:DEL a"]);
    let stats = bulk_text(&h.c("INFO stats"));
    assert!(stats.contains("\r\nrejected_oom_commands:11\r\n") && stats.contains("\r\nevicted_keys:0\r\n"), "{stats:?}");
    // In MULTI the refusal happens at queue time and aborts the transaction.
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "GET a", "+QUEUED\r\n");
    ck(&mut h, "SET a 1", err(OOM));
    ck(&mut h, "EXEC", err("EXECABORT Transaction discarded because of previous errors."));
    // Under the limit again (or with no limit) writes go through.
    FAKE_USED.store(1000, Relaxed);
    ck(&mut h, "SET a 1", OK);
    FAKE_USED.store(2_000_000, Relaxed);
    ck(&mut h, "SET a 2", err(OOM));
    ck(&mut h, "CONFIG SET maxmemory 0", OK);
    ck(&mut h, "SET a 3", OK);
    // A policy that may evict but has nothing to evict also answers OOM.
    ck(&mut h, "CONFIG SET maxmemory 1mb maxmemory-policy volatile-lru", OK);
    ck(&mut h, "SET b 1", err(OOM));
    ck(&mut h, "GET a", bulk("3"));
    // A replica applying effects never refuses them.
    let mut r = memoria_core::Engine::new(1);
    r.set_memory_probe(fake_probe);
    let mut b = memoria_core::protocol::batch::BatchWriter::new();
    b.begin(memoria_core::protocol::batch::REC_COMMAND, 1);
    memoria_core::protocol::resp::encode_command(&mut b.buf, &["CONFIG", "SET", "maxmemory", "1mb"]);
    b.end();
    r.execute(&b.buf, h.now_ms * 1000, 1);
    r.apply(&h.effects, h.now_ms * 1000).unwrap();
    assert_eq!(r.digest(), h.e.digest());
}

/// Fills an engine past its limit and checks what eviction did.
fn fill_with_eviction(policy: &str, volatile_every: usize) -> (H, Vec<String>, usize) {
    let mut h = H::new();
    // Effects accumulate in the harness's buffer: reserve it so its growth does not count.
    h.effects = Vec::with_capacity(8 << 20);
    h.e.set_memory_probe(heap_in_use);
    // Warm up internal tables, then set the limit 256 KiB above what is in use now.
    ck(&mut h, "SET warm up", OK);
    ck(&mut h, "DEL warm", int(1));
    let limit = heap_in_use() + (256 << 10);
    ck(&mut h, &format!("CONFIG SET maxmemory {limit} maxmemory-policy {policy}"), OK);
    let val = "x".repeat(200);
    let n = 4000;
    let mut peak = 0;
    for i in 0..n {
        let cmd = if volatile_every > 0 && i % volatile_every == 0 { format!("SET key:{i} {val} EX 1000") } else { format!("SET key:{i} {val}") };
        let r = h.c(&cmd);
        if r != OK {
            return (h, vec![r], peak);
        }
        peak = peak.max(heap_in_use().saturating_sub(limit));
    }
    (h, vec![], peak)
}

#[test]
fn allkeys_random_evicts_and_replicates_del() {
    let _g = serial();
    let (mut h, errors, overshoot) = fill_with_eviction("allkeys-random", 0);
    assert!(errors.is_empty(), "{errors:?}");
    let n = 4000;
    let left = h.e.dbsize(0);
    assert!(left > 100 && left < n, "eviction kept memory bounded: {left} keys left");
    // Over the limit by little (eviction runs before each command, which then adds a key).
    assert!(overshoot < 64 << 10, "overshoot {overshoot}");
    let fx = h.effect_lines();
    let dels: Vec<&String> = fx.iter().filter(|l| l.starts_with("0:DEL key:")).collect();
    assert_eq!(dels.len(), n - left, "one DEL effect per evicted key");
    let evicted: BTreeSet<String> = dels.iter().map(|l| l["0:DEL ".len()..].to_string()).collect();
    assert_eq!(evicted.len(), dels.len(), "each key evicted once");
    for k in evicted.iter().take(50) {
        ck(&mut h, &format!("EXISTS {k}"), int(0));
    }
    // Random, not oldest-first: some early keys survive, some late keys were evicted.
    assert!((0..n / 4).any(|i| !evicted.contains(&format!("key:{i}"))));
    assert!((n / 2..n).any(|i| evicted.contains(&format!("key:{i}"))));
    let stats = bulk_text(&h.c("INFO stats"));
    assert!(stats.contains(&format!("\r\nevicted_keys:{}\r\n", n - left)), "{stats:?}");
    // The effects (SETs and the eviction DELs) rebuild the same data set.
    let mut replica = memoria_core::Engine::new(5);
    replica.apply(&h.effects, h.now_ms * 1000).unwrap();
    assert_eq!(replica.digest(), h.e.digest());
    // Reads keep working and do not evict.
    let mark = fx_len(&h);
    ck(&mut h, "GET nokey", NIL);
    assert_eq!(fx_len(&h), mark);
}

#[test]
fn volatile_random_spares_keys_without_ttl() {
    let _g = serial();
    // Every 2nd key has a TTL: only those may go; once they are gone, writes get OOM.
    let (mut h, errors, _) = fill_with_eviction("volatile-random", 2);
    assert_eq!(errors, [err(OOM)], "runs out of volatile keys");
    let fx = h.effect_lines();
    let evicted: Vec<usize> = fx.iter().filter_map(|l| l.strip_prefix("0:DEL key:")).map(|k| k.parse().unwrap()).collect();
    assert!(!evicted.is_empty());
    assert!(evicted.iter().all(|i| i % 2 == 0), "only keys with a TTL are evicted");
    let info = bulk_text(&h.c("INFO keyspace"));
    assert!(info.contains(",expires=0,"), "every volatile key was evicted: {info:?}");
    ck(&mut h, "GET key:1", bulk(&"x".repeat(200)));
}

#[test]
fn volatile_ttl_prefers_soonest_expiry() {
    let _g = serial();
    let mut h = H::new();
    h.e.set_memory_probe(fake_probe);
    FAKE_USED.store(0, Relaxed);
    ck(&mut h, "CONFIG SET maxmemory 1mb maxmemory-policy volatile-ttl maxmemory-samples 64", OK);
    for i in 0..20 {
        h.c(&format!("SET k{i} v EX {}", 1000 + i));
    }
    h.c("SET soon v EX 5");
    h.c("SET forever v");
    // Over the limit for exactly one check, then under: exactly one eviction.
    FAKE_USED.store(2_000_000, Relaxed);
    h.e.set_memory_probe(one_over_probe);
    ONE_OVER.store(2, Relaxed);
    let mark = fx_len(&h);
    ck(&mut h, "SET new v", OK);
    assert_eq!(fx_since(&h, mark), ["0:DEL soon", "0:SET new v"]);
    ck(&mut h, "EXISTS forever soon", int(1));
}

static ONE_OVER: AtomicUsize = AtomicUsize::new(0);
/// Reports "over the limit" for the next ONE_OVER readings, then "under".
fn one_over_probe() -> usize {
    if ONE_OVER.load(Relaxed) > 0 {
        ONE_OVER.fetch_sub(1, Relaxed);
        2_000_000
    } else {
        0
    }
}

#[test]
fn eviction_inside_exec_is_part_of_its_effects() {
    let _g = serial();
    let mut h = H::new();
    h.e.set_memory_probe(one_over_probe);
    ONE_OVER.store(0, Relaxed);
    ck(&mut h, "CONFIG SET maxmemory 1mb maxmemory-policy allkeys-random", OK);
    h.c("SET victim v");
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "SET a 1", "+QUEUED\r\n");
    ONE_OVER.store(2, Relaxed);
    let mark = fx_len(&h);
    ck(&mut h, "EXEC", "*1\r\n+OK\r\n");
    assert_eq!(fx_since(&h, mark), ["0:DEL victim", "0:SET a 1"]);
}

#[test]
fn expired_keys_are_not_counted_or_served() {
    let _g = serial();
    // Keys with a past TTL read as absent everywhere and DBSIZE drops once they are reaped.
    let mut h = H::new();
    for i in 0..100 {
        h.c(&format!("SET t{i} v PX {}", 10 + i));
    }
    h.c("SET live v");
    h.advance(60);
    // t0..t50 have expired: reads skip them, KEYS filters them, SCAN returns only live ones.
    let keys = parse_bulks(&h.c("KEYS *"));
    assert_eq!(keys.len(), 50);
    let info = bulk_text(&h.c("INFO keyspace"));
    assert!(info.starts_with("# Keyspace\r\ndb0:keys="), "{info:?}");
    let mut seen = BTreeSet::new();
    let mut cursor = "0".to_string();
    loop {
        let r = h.c(&format!("SCAN {cursor} COUNT 5"));
        let (_, rest) = r.split_once("\r\n").unwrap();
        let next = bulk_text(rest);
        let body = &rest[rest.find("\r\n").unwrap() + 2..];
        let body = &body[body.find("\r\n").unwrap() + 2..];
        seen.extend(parse_bulks(body));
        if next == "0" {
            break;
        }
        cursor = next;
    }
    assert_eq!(seen.len(), 50, "{seen:?}");
    assert!(seen.contains("live"));
    // SCAN reaped the expired keys it met (and replicated their DELs).
    let dels = h.effect_lines().iter().filter(|l| l.starts_with("0:DEL t")).count();
    assert_eq!(dels, 51);
    ck(&mut h, "DBSIZE", int(50));
}

#[test]
fn active_expire_effort_and_replica_mode() {
    let _g = serial();
    let mut h = H::new();
    ck(&mut h, "CONFIG SET active-expire-effort 10", OK);
    for i in 0..1000 {
        h.c(&format!("SET k{i} v PX 5"));
    }
    h.advance(5);
    h.tick();
    // All keys expired: each sample is fully expired, so one tick clears a lot.
    let gone = 1000 - h.e.dbsize(0);
    assert!(gone >= 300, "a single tick with effort 10 expired only {gone}");
    // A replica never expires by itself: the primary's DELs do it.
    let mut r = memoria_core::Engine::new(3);
    let mut replay = Vec::new();
    let mut p = H::new();
    for i in 0..10 {
        p.c(&format!("SET r{i} v PX 5"));
    }
    replay.extend_from_slice(&p.effects);
    r.apply(&replay, p.now_ms * 1000).unwrap();
    assert_eq!(r.dbsize(0), 10);
    let mut b = memoria_core::protocol::batch::BatchWriter::new();
    b.record(memoria_core::protocol::batch::REC_ROLE, 0, b"replica");
    r.execute(&b.buf, (p.now_ms + 100) * 1000, 1);
    let mut b = memoria_core::protocol::batch::BatchWriter::new();
    b.record(memoria_core::protocol::batch::REC_TICK, 0, b"");
    r.execute(&b.buf, (p.now_ms + 100) * 1000, 2);
    // (a replica's state only changes through apply)
    let mark = p.effects.len();
    p.advance(100);
    for _ in 0..50 {
        p.seed += 1;
        p.tick();
    }
    assert_eq!(p.e.dbsize(0), 0);
    r.apply(&p.effects[mark..], p.now_ms * 1000).unwrap();
    assert_eq!(r.dbsize(0), 0);
    assert_eq!(r.digest(), p.e.digest());
}

/// allkeys-lfu evicts the least frequently used keys: keys read often survive a fill that
/// evicts most of the others (with lfu-log-factor 0 every read counts; five samples per
/// eviction rarely hold only hot keys).
#[test]
fn allkeys_lfu_keeps_the_keys_read_often() {
    let _g = serial();
    let mut h = H::new();
    h.effects = Vec::with_capacity(8 << 20);
    h.e.set_memory_probe(heap_in_use);
    ck(&mut h, "CONFIG SET maxmemory-policy allkeys-lfu lfu-log-factor 0", OK);
    let val = "x".repeat(200);
    for i in 0..20 {
        ck(&mut h, &format!("SET hot:{i} {val}"), OK);
        for _ in 0..20 {
            h.c(&format!("GET hot:{i}"));
        }
        ck(&mut h, &format!("OBJECT FREQ hot:{i}"), int(25));
    }
    let limit = heap_in_use() + (256 << 10);
    ck(&mut h, &format!("CONFIG SET maxmemory {limit}"), OK);
    let n = 4000;
    for i in 0..n {
        ck(&mut h, &format!("SET key:{i} {val}"), OK);
    }
    let left = h.e.dbsize(0);
    assert!(left < n, "eviction ran: {left} keys left");
    for i in 0..20 {
        ck(&mut h, &format!("EXISTS hot:{i}"), int(1));
    }
    // The effects rebuild the same data set.
    let mut replica = memoria_core::Engine::new(5);
    replica.apply(&h.effects, h.now_ms * 1000).unwrap();
    assert_eq!(replica.digest(), h.e.digest());
}
