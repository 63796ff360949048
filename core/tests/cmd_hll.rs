//! HyperLogLog: PFADD, PFCOUNT, PFMERGE. The strings are byte-identical to Redis's (sparse and
//! dense encodings, cached cardinality), and so are the counts.
//! The expected replies were recorded from redis-server 7.0.15 running the same commands.

mod cmdutil;
mod common;

use cmdutil::*;
use common::H;

/// Runs `cmd` (split on spaces) and asserts its exact reply bytes.
#[track_caller]
fn ckb(h: &mut H, cmd: &str, want: &[u8]) {
    let args: Vec<&[u8]> = cmd.split(' ').map(str::as_bytes).collect();
    ckr(h, &args, want);
}

/// Asserts a long reply by its length and FNV-1a hash (12 KB dense HLLs).
#[track_caller]
fn ckh(h: &mut H, cmd: &str, fnv: u64, len: usize) {
    let args: Vec<&str> = cmd.split(' ').collect();
    let got = h.raw(&args);
    let mut x: u64 = 0xcbf29ce484222325;
    for &c in &got {
        x ^= c as u64;
        x = x.wrapping_mul(0x100000001b3);
    }
    assert_eq!((got.len(), x), (len, fnv), "reply to {cmd:?}");
}

#[test]
fn hyperloglog() {
    let mut h = H::new();
    // a new HLL is sparse: header, then XZERO covering all 16384 registers
    ck(&mut h, "PFADD h", ":1\r\n");
    ckb(&mut h, "GET h", b"$18\r\nHYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff\r\n");
    ck(&mut h, "PFCOUNT h", ":0\r\n");
    ckb(&mut h, "GET h", b"$18\r\nHYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff\r\n");
    ck(&mut h, "PFADD h a b c", ":1\r\n");
    ckb(&mut h, "GET h", b"$27\r\nHYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80`\xf3\x80P\xb1\x84K\xfb\x80BZ\r\n");
    ck(&mut h, "PFADD h a", ":0\r\n");
    ck(&mut h, "PFCOUNT h", ":3\r\n");
    ckb(&mut h, "GET h", b"$27\r\nHYLL\x01\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00`\xf3\x80P\xb1\x84K\xfb\x80BZ\r\n");
    ck(&mut h, "PFADD h d e f g", ":1\r\n");
    ck(&mut h, "PFCOUNT h", ":7\r\n");
    ckb(&mut h, "GET h", b"$38\r\nHYLL\x01\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00Fm\x80V\x0c\x80D<\x848\x80P\xb1\x84I\x8c\x80Bm\x80BZ\r\n");
    ck(&mut h, "OBJECT ENCODING h", "$3\r\nraw\r\n");
    ck(&mut h, "TYPE h", "+string\r\n");
    // sparse grows until 3000 bytes or a register above 32, then turns dense
    for i in 0..1500 {
        h.c(&format!("PFADD big e{i}"));
    }
    ckh(&mut h, "GET big", 0x5cca049f4ac82213, 2728);
    ck(&mut h, "PFCOUNT big", ":1509\r\n");
    ck(&mut h, "STRLEN big", ":2719\r\n");
    for i in 1500..3000 {
        h.c(&format!("PFADD big e{i}"));
    }
    ck(&mut h, "STRLEN big", ":12304\r\n");
    ckh(&mut h, "GET big", 0x29001cb315c0ab4c, 12314);
    ck(&mut h, "PFCOUNT big", ":2979\r\n");
    ckh(&mut h, "GET big", 0x16f940bea3803fb0, 12314);
    for i in 0..200 {
        h.c(&format!("PFADD big2 x{i} y{i} z{i} w{i} v{i}"));
    }
    ck(&mut h, "PFCOUNT big2", ":1005\r\n");
    ck(&mut h, "STRLEN big2", ":1889\r\n");
    ckh(&mut h, "GET big2", 0xa96891f95dca12fb, 1898);
    // PFCOUNT of several keys is the count of their union, and stores nothing
    ck(&mut h, "PFCOUNT h big", ":2986\r\n");
    ck(&mut h, "PFCOUNT big big2 nokey", ":3985\r\n");
    ck(&mut h, "PFCOUNT nokey", ":0\r\n");
    ck(&mut h, "PFCOUNT nokey nokey2", ":0\r\n");
    ckh(&mut h, "GET big2", 0xa96891f95dca12fb, 1898);
    // PFMERGE: the destination is a source too; dense if any source is dense
    ck(&mut h, "PFADD m1 a b c d", ":1\r\n");
    ck(&mut h, "PFADD m2 c d e f", ":1\r\n");
    ck(&mut h, "PFMERGE m3 m1 m2", "+OK\r\n");
    ckb(&mut h, "GET m3", b"$36\r\nHYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80Fm\x80V\x0c\x80Dv\x80P\xb1\x84I\x8c\x80Bm\x80BZ\r\n");
    ck(&mut h, "PFCOUNT m3", ":6\r\n");
    ck(&mut h, "PFMERGE m1 m2", "+OK\r\n");
    ckb(&mut h, "GET m1", b"$36\r\nHYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80Fm\x80V\x0c\x80Dv\x80P\xb1\x84I\x8c\x80Bm\x80BZ\r\n");
    ck(&mut h, "PFMERGE m4 m1 big", "+OK\r\n");
    ck(&mut h, "STRLEN m4", ":12304\r\n");
    ckh(&mut h, "GET m4", 0x4a3c9df8d5e99e85, 12314);
    ck(&mut h, "PFCOUNT m4", ":2985\r\n");
    ck(&mut h, "PFMERGE m5", "+OK\r\n");
    ckb(&mut h, "GET m5", b"$18\r\nHYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff\r\n");
    ck(&mut h, "PFMERGE m6 nokey", "+OK\r\n");
    ckb(&mut h, "GET m6", b"$18\r\nHYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff\r\n");
    ck(&mut h, "PFMERGE m1 h big2", "+OK\r\n");
    ckh(&mut h, "GET m1", 0xf58493f7bf3468e5, 1909);
    ck(&mut h, "PFCOUNT m1", ":1012\r\n");
    // a lower hll-sparse-max-bytes promotes sooner
    ck(&mut h, "CONFIG SET hll-sparse-max-bytes 30", "+OK\r\n");
    ck(&mut h, "PFADD s 1 2 3 4 5", ":1\r\n");
    ck(&mut h, "STRLEN s", ":12304\r\n");
    ck(&mut h, "PFADD s2 1", ":1\r\n");
    ckb(&mut h, "GET s2", b"$21\r\nHYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80]f\x80b\x97\r\n");
    ck(&mut h, "CONFIG SET hll-sparse-max-bytes 3000", "+OK\r\n");
    // errors
    ck(&mut h, "SET str hello", "+OK\r\n");
    ck(&mut h, "PFADD str a", "-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n");
    ck(&mut h, "PFCOUNT str", "-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n");
    ck(&mut h, "PFCOUNT h str", "-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n");
    ck(&mut h, "PFMERGE str h", "-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n");
    ck(&mut h, "PFMERGE h str", "-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n");
    ck(&mut h, "SET int 123", "+OK\r\n");
    ck(&mut h, "PFADD int a", "-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n");
    ck(&mut h, "PFCOUNT int", "-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n");
    ck(&mut h, "SADD set a", ":1\r\n");
    ck(&mut h, "PFADD set a", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "PFCOUNT set", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "PFCOUNT h set", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "PFMERGE set h", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "PFMERGE h set", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "PFADD", "-ERR wrong number of arguments for 'pfadd' command\r\n");
    ck(&mut h, "PFCOUNT", "-ERR wrong number of arguments for 'pfcount' command\r\n");
    ck(&mut h, "PFMERGE", "-ERR wrong number of arguments for 'pfmerge' command\r\n");
}

fn hll_with(body: &[u8], stale: bool) -> Vec<u8> {
    let mut v = b"HYLL\x01".to_vec();
    v.extend_from_slice(&[0; 10]);
    v.push(if stale { 0x80 } else { 0 });
    v.extend_from_slice(body);
    v
}

#[test]
fn corrupt_and_foreign_strings() {
    let mut h = H::new();
    let invalid = "-INVALIDOBJ Corrupted HLL object detected\r\n";
    let not_hll = "-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n";
    // Runs that cover 16383 registers, or 16385: corrupt.
    ckr(&mut h, &[b"SET".as_slice(), b"c1", &hll_with(b"\x7f\xfe", true)], "+OK\r\n");
    ck(&mut h, "PFCOUNT c1", invalid);
    ck(&mut h, "PFCOUNT c1 nokey", invalid);
    ck(&mut h, "PFMERGE d c1", invalid);
    ckr(&mut h, &[b"SET".as_slice(), b"c2", &hll_with(b"\x7f\xff\x00", true)], "+OK\r\n");
    ck(&mut h, "PFCOUNT c2", invalid);
    // A valid cached value is trusted without reading the registers, as in Redis.
    ckr(&mut h, &[b"SET".as_slice(), b"c3", &hll_with(b"\x7f\xfe", false)], "+OK\r\n");
    ck(&mut h, "PFCOUNT c3", ":0\r\n");
    // Not an HLL at all: a dense one of the wrong size, an unknown encoding, a short header.
    let mut dense = b"HYLL\x00".to_vec();
    dense.extend_from_slice(&[0; 111]);
    ckr(&mut h, &[b"SET".as_slice(), b"c4", &dense], "+OK\r\n");
    ck(&mut h, "PFCOUNT c4", not_hll);
    let mut enc2 = hll_with(b"\x7f\xff", true);
    enc2[4] = 2;
    ckr(&mut h, &[b"SET".as_slice(), b"c5", &enc2], "+OK\r\n");
    ck(&mut h, "PFADD c5 a", not_hll);
    ckr(&mut h, &[b"SET".as_slice(), b"c6", b"HYLL\x01\0\0\0\0\0\0\0\0\0\0"], "+OK\r\n");
    ck(&mut h, "PFMERGE c6", not_hll);
    // A string ending in half an XZERO opcode: Redis cuts the new sequence short.
    ck(&mut h, "PFADD tb", ":1\r\n");
    ck(&mut h, "SETRANGE tb 16 x", ":18\r\n");
    ck(&mut h, "APPEND tb x", ":19\r\n");
    ck(&mut h, "PFADD tb m0 m1 m2 m3 m4 m5 m6 m7 m8 m9 m10 m11 m12 m13 m14 m15 m16 m17 m18 m19", ":1\r\n");
    ckb(&mut h, "GET tb", b"$78\r\nHYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80A\x19\x90B\xdb\x84C\x85\x80\x05\x8cAR\x80@\x89\x80A\x9e\x90@\xa4\x80A\xe6\x80A\x84\x8cBj\x88B\xc5\x80A\x8f\x88Bv\x80@\xf7\x80B\xbc\x84J\x92\x80D\xe7\x80@\xc3\x80L\xb1A\x94\x80v\r\n");
    ck(&mut h, "PFCOUNT tb", invalid);
    // An HLL set by SET (embstr) works and becomes raw, as Redis's dbUnshareStringValue does.
    ckr(&mut h, &[b"SET".as_slice(), b"e", &hll_with(b"\x7f\xff", false)], "+OK\r\n");
    ck(&mut h, "OBJECT ENCODING e", "$6\r\nembstr\r\n");
    ck(&mut h, "PFCOUNT e", ":0\r\n");
    ck(&mut h, "OBJECT ENCODING e", "$3\r\nraw\r\n");
}

#[test]
fn effects() {
    let mut h = H::new();
    ck(&mut h, "PFADD h a b", ":1\r\n");
    ck(&mut h, "PFADD h a", ":0\r\n");
    // A stale cache is recomputed and stored: PFCOUNT replicates itself.
    ck(&mut h, "PFCOUNT h", ":2\r\n");
    ck(&mut h, "PFCOUNT h", ":2\r\n");
    ck(&mut h, "PFCOUNT h nokey", ":2\r\n");
    ck(&mut h, "PFMERGE m h", "+OK\r\n");
    ck(&mut h, "PFCOUNT nokey", ":0\r\n");
    assert_eq!(h.effect_lines(), vec!["0:PFADD h a b", "0:PFCOUNT h", "0:PFMERGE m h"]);
    // Replaying the effects gives the same bytes, the cached cardinality included.
    let mut replica = memoria_core::Engine::new(3);
    replica.apply(&h.effects, h.now_ms * 1000).unwrap();
    assert_eq!(replica.digest(), h.e.digest());
    // PFADD that fails half-way keeps what it changed (as Redis does) and replicates
    // the resulting bytes, since replaying it would fail again.
    ck(&mut h, "PFADD tc", ":1\r\n");
    ck(&mut h, "SETRANGE tc 16 x", ":18\r\n");
    let mark = fx_len(&h);
    ck(&mut h, "PFADD tc m0 m1 m2 m3 m4 m5 m6 m7 m8 m9 m10 m11 m12 m13 m14 m15 m16 m17 m18 m19", "-INVALIDOBJ Corrupted HLL object detected\r\n");
    let want = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80C\xf6\x84C\x85\x80AY\x80B\xcf\x80E\xd8\x88DV\x88F-\x84O{\x80Mv";
    ckb(&mut h, "GET tc", &[b"$42\r\n".as_slice(), want, b"\r\n"].concat());
    assert_eq!(fx_since(&h, mark).len(), 1);
    assert!(fx_since(&h, mark)[0].starts_with("0:SET tc HYLL"));
    let mut replica = memoria_core::Engine::new(3);
    replica.apply(&h.effects, h.now_ms * 1000).unwrap();
    assert_eq!(replica.digest(), h.e.digest());
    // An expired HLL reads as missing.
    ck(&mut h, "PEXPIRE h 10", ":1\r\n");
    h.advance(10);
    ck(&mut h, "PFCOUNT h", ":0\r\n");
    assert_eq!(fx_since(&h, fx_len(&h) - 2), vec!["0:PEXPIREAT h 1700000000010", "0:DEL h"]);
}
