//! Snapshots: dump/load in bounded chunks round-trips the data set (digest, TTLs,
//! encodings, every database), and corrupt or truncated chunks are rejected with an error,
//! never a panic.

mod cmdutil;
mod common;

use cmdutil::*;
use common::{H, NIL, bulk, int};
use memoria_core::Engine;

const T0: i64 = 1_700_000_000_000;

/// Dumps the whole data set in chunks of about `max` bytes.
fn dump_all(e: &Engine, max: usize) -> Vec<Vec<u8>> {
    let (mut db, mut cursor) = (0u32, 0u64);
    let mut chunks = Vec::new();
    for _ in 0..1_000_000 {
        let c = e.dump(db, cursor, max);
        chunks.push(c.data);
        if c.done {
            return chunks;
        }
        (db, cursor) = (c.next_db, c.next_cursor);
    }
    panic!("dump does not terminate");
}

fn populated() -> H {
    let mut h = H::new();
    h.c("SET int 12345");
    h.c("SET neg -7");
    h.c("SET emb hello");
    h.c(&format!("SET raw {}", "r".repeat(100)));
    h.c("SET app x");
    h.c("APPEND app yz"); // raw though short
    h.c("SET ttl v PX 123456");
    h.c(&format!("SET exat v EXAT {}", T0 / 1000 + 999));
    h.c("HSET small a 1 b 2 c 3");
    h.c("EXPIRE small 500");
    let long = "v".repeat(80);
    h.c(&format!("HSET wide f {long}"));
    h.c("HSET wide g 1");
    h.c("HDEL wide f"); // a hashtable with one short field
    for i in 0..300 {
        h.c(&format!("HSET big f{i} {i}"));
        h.c(&format!("SET key:{i} {i}"));
    }
    ckr(&mut h, &[b"SET".as_slice(), b"bin\r\n\0", b"\0\xff\r\n"], "+OK\r\n");
    ckr(&mut h, &[b"SET".as_slice(), b"", b"empty-key"], "+OK\r\n");
    h.c("SELECT 7");
    h.c("SET db7 x EX 50");
    h.c("HSET h7 f v");
    h.c("SELECT 15");
    h.c("SET last 1");
    h.c("SELECT 0");
    h
}

fn encodings(h: &mut H, keys: &[&str]) -> Vec<String> {
    keys.iter().map(|k| h.c(&format!("OBJECT ENCODING {k}"))).collect()
}

const KEYS: &[&str] = &["int", "neg", "emb", "raw", "app", "ttl", "exat", "small", "wide", "big", "key:1"];

#[test]
fn round_trip_small_and_large_chunks() {
    let mut src = populated();
    let digest = src.e.digest();
    let want_enc = encodings(&mut src, KEYS);
    assert_eq!(want_enc[..5], [bulk("int"), bulk("int"), bulk("embstr"), bulk("raw"), bulk("raw")]);
    assert_eq!(want_enc[7..10], [bulk("listpack"), bulk("hashtable"), bulk("hashtable")]);
    for max in [1, 64, 1000, 1 << 20] {
        let chunks = dump_all(&src.e, max);
        if max == 1 {
            assert!(chunks.len() > 100, "tiny chunks: {}", chunks.len());
        }
        if max == 1 << 20 {
            assert_eq!(chunks.len(), 1);
        }
        // Load into an engine with another hash seed: the digest does not depend on it.
        let mut dst = H::new();
        dst.e = Engine::new(999);
        let mut n = 0;
        for c in &chunks {
            n += dst.e.load(c).unwrap();
        }
        assert_eq!(n as usize, src.e.total_keys());
        assert_eq!(dst.e.total_keys(), src.e.total_keys());
        assert_eq!(dst.e.digest(), digest, "max {max}");
        // TTLs are absolute and survive exactly.
        dst.now_ms = src.now_ms;
        for k in ["ttl", "exat", "small", "int"] {
            assert_eq!(dst.c(&format!("PEXPIRETIME {k}")), src.c(&format!("PEXPIRETIME {k}")), "{k}");
        }
        ck(&mut dst, "PTTL ttl", int(123456));
        // Encodings survive.
        assert_eq!(encodings(&mut dst, KEYS), want_enc);
        // Values, including binary keys and values and every database.
        ckr(&mut dst, &[b"GET".as_slice(), b"bin\r\n\0"], b"$4\r\n\0\xff\r\n\r\n");
        ckr(&mut dst, &[b"GET".as_slice(), b""], bulk("empty-key"));
        ck(&mut dst, "HGETALL small", bulks(&["a", "1", "b", "2", "c", "3"]));
        ck(&mut dst, "HGET big f299", bulk("299"));
        ck(&mut dst, "SELECT 7", "+OK\r\n");
        ck(&mut dst, "TTL db7", int(50));
        ck(&mut dst, "HGET h7 f", bulk("v"));
        ck(&mut dst, "SELECT 15", "+OK\r\n");
        ck(&mut dst, "GET last", bulk("1"));
        // The loaded data set is live: it keeps working and expiring.
        dst.advance(123_456);
        ck(&mut dst, "SELECT 0", "+OK\r\n");
        ck(&mut dst, "GET ttl", NIL);
        ck(&mut dst, "INCR int", int(12346));
    }
}

#[test]
fn empty_and_single_db() {
    let e = Engine::new(1);
    let chunks = dump_all(&e, 100);
    assert!(chunks.iter().all(|c| c.is_empty()));
    let mut f = Engine::new(2);
    for c in &chunks {
        assert_eq!(f.load(c), Ok(0));
    }
    assert_eq!(f.digest(), e.digest());
    // Only db 9 has keys.
    let mut h = H::new();
    h.c("SELECT 9");
    for i in 0..50 {
        h.c(&format!("SET k{i} {i}"));
    }
    let chunks = dump_all(&h.e, 32);
    let mut g = Engine::new(3);
    for c in &chunks {
        g.load(c).unwrap();
    }
    assert_eq!(g.dbsize(9), 50);
    assert_eq!(g.digest(), h.e.digest());
}

#[test]
fn digest_is_order_and_encoding_independent() {
    // Same logical data reached by different histories → same digest.
    let mut a = H::new();
    a.c("SET k 1");
    a.c("HSET h x 1 y 2");
    a.c("SET s abc");
    let mut b = H::new();
    b.e = Engine::new(12345);
    b.c("HSET h y 2");
    b.c("HSET h x 1");
    b.c("SET s ab");
    b.c("APPEND s c"); // raw instead of embstr
    b.c("SET k 0");
    b.c("INCR k");
    assert_eq!(a.e.digest(), b.e.digest());
    // Any difference shows: a value, a TTL, a database, a type.
    let base = a.e.digest();
    for change in ["SET k 2", "EXPIRE k 100", "HSET h z 3", "DEL s", "HSET k2 f v"] {
        let mut c = H::new();
        c.c("SET k 1");
        c.c("HSET h x 1 y 2");
        c.c("SET s abc");
        c.c(change);
        assert_ne!(c.e.digest(), base, "{change}");
    }
    let mut d = H::new();
    d.c("SELECT 1");
    d.c("SET k 1");
    d.c("HSET h x 1 y 2");
    d.c("SET s abc");
    assert_ne!(d.e.digest(), base, "database is part of the digest");
}

#[test]
fn truncated_chunks_are_rejected() {
    let src = populated();
    let chunk = dump_all(&src.e, 1 << 20).remove(0);
    // Record boundaries: dump each key alone is not possible, so find them by loading
    // growing prefixes. Every prefix must load or fail cleanly; the full chunk must load.
    let mut ok_prefixes = 0;
    for cut in 0..chunk.len() {
        let mut e = Engine::new(4);
        match e.load(&chunk[..cut]) {
            Ok(n) => {
                ok_prefixes += 1;
                assert_eq!(n as usize, e.total_keys());
            }
            Err(msg) => assert!(!msg.is_empty()),
        }
    }
    // Exactly the record boundaries load (one per key, counting the empty prefix).
    assert_eq!(ok_prefixes, src.e.total_keys());
    let mut e = Engine::new(4);
    assert_eq!(e.load(&chunk).unwrap() as usize, src.e.total_keys());
    assert!(Engine::new(5).load(&chunk[..chunk.len() - 1]).unwrap_err().contains("truncated"));
}

#[test]
fn corrupt_chunks_are_rejected_without_panicking() {
    let src = populated();
    let chunk = dump_all(&src.e, 1 << 20).remove(0);
    // Structured corruption.
    // (A database past the default 16 is not corrupt: a node with more databases wrote it.)
    let mut db16 = chunk.clone();
    db16[0] = 16;
    assert!(Engine::new(1).load(&db16).is_ok());
    let mut bad_type = chunk.clone();
    bad_type[1] = 9;
    assert!(Engine::new(1).load(&bad_type).unwrap_err().contains("unknown value type"));
    // The same key twice.
    let mut twice = chunk.clone();
    twice.extend_from_slice(&chunk);
    assert!(Engine::new(1).load(&twice).unwrap_err().contains("duplicate"));
    // A key length far beyond the chunk.
    let mut long_key = chunk.clone();
    long_key[10..14].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(Engine::new(1).load(&long_key).is_err());
    // A hash claiming more fields than it carries.
    let mut h = H::new();
    h.c("HSET h a 1");
    let mut hash = dump_all(&h.e, 1 << 20).remove(0);
    let count_at = 1 + 1 + 8 + 4 + 1 + 1; // db, type, expire, key len, key "h", encoding
    assert_eq!(&hash[count_at..count_at + 4], &1u32.to_le_bytes());
    hash[count_at..count_at + 4].copy_from_slice(&1_000_000u32.to_le_bytes());
    assert!(Engine::new(1).load(&hash).unwrap_err().contains("truncated"));
    // Random byte flips and garbage: errors or loads, never a panic or a hang.
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..2000 {
        let mut c = chunk.clone();
        for _ in 0..1 + next() % 4 {
            let i = (next() as usize) % c.len();
            c[i] = next() as u8;
        }
        let mut e = Engine::new(6);
        if e.load(&c).is_ok() {
            // Whatever loaded is a usable data set.
            let _ = e.digest();
            let _ = dump_all(&e, 4096);
        }
    }
    for len in [0usize, 1, 2, 13, 14, 100, 4096] {
        let garbage: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let _ = Engine::new(7).load(&garbage);
    }
}

#[test]
fn corrupt_hash_records_are_rejected() {
    // A hash with no fields, or the same field twice, cannot come from a real dump.
    let mut h = H::new();
    h.c("HSET h a 1 b 2");
    let hash = dump_all(&h.e, 1 << 20).remove(0);
    let count_at = 1 + 1 + 8 + 4 + 1 + 1;
    let fields_at = count_at + 4;
    // Zero fields.
    let mut empty = hash[..count_at].to_vec();
    empty.extend_from_slice(&0u32.to_le_bytes());
    assert!(Engine::new(1).load(&empty).is_err(), "an empty hash is corrupt");
    // Field "a" twice.
    let first_pair_len = 4 + 1 + 4 + 1;
    let mut dup = hash[..count_at].to_vec();
    dup.extend_from_slice(&2u32.to_le_bytes());
    dup.extend_from_slice(&hash[fields_at..fields_at + first_pair_len]);
    dup.extend_from_slice(&hash[fields_at..fields_at + first_pair_len]);
    assert!(Engine::new(1).load(&dup).is_err(), "a repeated field is corrupt");
    // The intact record loads.
    let mut e = Engine::new(1);
    assert_eq!(e.load(&hash), Ok(1));
    assert_eq!(e.digest(), h.e.digest());
}
