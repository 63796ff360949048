//! Bitmap commands on strings: SETBIT, GETBIT, BITCOUNT, BITPOS (BYTE and BIT ranges), BITOP,
//! BITFIELD and BITFIELD_RO with every overflow mode, errors included.
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

#[test]
fn bit_commands() {
    let mut h = H::new();
    // SETBIT/GETBIT: bit 0 is the top bit of byte 0; the string grows with zero bytes
    ck(&mut h, "SETBIT b 7 1", ":0\r\n");
    ck(&mut h, "GET b", "$1\r\n\x01\r\n");
    ck(&mut h, "SETBIT b 7 1", ":1\r\n");
    ck(&mut h, "SETBIT b 7 0", ":1\r\n");
    ck(&mut h, "SETBIT b 0 1", ":0\r\n");
    ck(&mut h, "SETBIT b 20 1", ":0\r\n");
    ck(&mut h, "STRLEN b", ":3\r\n");
    ckb(&mut h, "GET b", b"$3\r\n\x80\x00\x08\r\n");
    ck(&mut h, "GETBIT b 0", ":1\r\n");
    ck(&mut h, "GETBIT b 1", ":0\r\n");
    ck(&mut h, "GETBIT b 20", ":1\r\n");
    ck(&mut h, "GETBIT b 100000", ":0\r\n");
    ck(&mut h, "GETBIT nokey 5", ":0\r\n");
    ck(&mut h, "OBJECT ENCODING b", "$3\r\nraw\r\n");
    // an integer or embstr value becomes raw
    ck(&mut h, "SET n 12", "+OK\r\n");
    ck(&mut h, "GETBIT n 2", ":1\r\n");
    ck(&mut h, "GETBIT n 10", ":1\r\n");
    ck(&mut h, "SETBIT n 7 0", ":1\r\n");
    ck(&mut h, "GET n", "$2\r\n02\r\n");
    ck(&mut h, "OBJECT ENCODING n", "$3\r\nraw\r\n");
    ck(&mut h, "SET e ab", "+OK\r\n");
    ck(&mut h, "SETBIT e 0 0", ":0\r\n");
    ck(&mut h, "OBJECT ENCODING e", "$3\r\nraw\r\n");
    // errors
    ck(&mut h, "SETBIT b -1 1", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "SETBIT b 4294967296 1", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "SETBIT b abc 1", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "SETBIT b 1 2", "-ERR bit is not an integer or out of range\r\n");
    ck(&mut h, "SETBIT b 1 -1", "-ERR bit is not an integer or out of range\r\n");
    ck(&mut h, "SETBIT b 1 x", "-ERR bit is not an integer or out of range\r\n");
    ck(&mut h, "GETBIT b -1", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "GETBIT b 4294967296", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "HSET h f v", ":1\r\n");
    ck(&mut h, "SETBIT h 1 1", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "GETBIT h 1", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "SETBIT h x 1", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "GETBIT h x", "-ERR bit offset is not an integer or out of range\r\n");
    // BITCOUNT in BYTE and BIT ranges
    ck(&mut h, "SET s foobar", "+OK\r\n");
    ck(&mut h, "BITCOUNT s", ":26\r\n");
    ck(&mut h, "BITCOUNT s 0 0", ":4\r\n");
    ck(&mut h, "BITCOUNT s 1 1", ":6\r\n");
    ck(&mut h, "BITCOUNT s 1 -2", ":18\r\n");
    ck(&mut h, "BITCOUNT s -2 -1", ":7\r\n");
    ck(&mut h, "BITCOUNT s -1 -2", ":0\r\n");
    ck(&mut h, "BITCOUNT s -100 100", ":26\r\n");
    ck(&mut h, "BITCOUNT s 5 30", ":4\r\n");
    ck(&mut h, "BITCOUNT s 0 0 BYTE", ":4\r\n");
    ck(&mut h, "BITCOUNT s 5 30 BIT", ":17\r\n");
    ck(&mut h, "BITCOUNT s 0 -1 bit", ":26\r\n");
    ck(&mut h, "BITCOUNT s 1 6 BIT", ":4\r\n");
    ck(&mut h, "BITCOUNT s -5 -2 BIT", ":2\r\n");
    ck(&mut h, "BITCOUNT s 9 9 BIT", ":1\r\n");
    ck(&mut h, "BITCOUNT s 3 2 BIT", ":0\r\n");
    ck(&mut h, "BITCOUNT s 1", "-ERR syntax error\r\n");
    ck(&mut h, "BITCOUNT s 1 2 3", "-ERR syntax error\r\n");
    ck(&mut h, "BITCOUNT s a b", "-ERR value is not an integer or out of range\r\n");
    ck(&mut h, "BITCOUNT s 0 a", "-ERR value is not an integer or out of range\r\n");
    ck(&mut h, "BITCOUNT s 0 1 WORD", "-ERR syntax error\r\n");
    ck(&mut h, "BITCOUNT s -1 -5 WORD", ":0\r\n");
    ck(&mut h, "BITCOUNT nokey a b", ":0\r\n");
    ck(&mut h, "BITCOUNT nokey 1", ":0\r\n");
    ck(&mut h, "BITCOUNT h", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "BITCOUNT h a b", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "SET i 255", "+OK\r\n");
    ck(&mut h, "BITCOUNT i", ":11\r\n");
    // BITPOS
    ck(&mut h, "SETBIT z 0 0", ":0\r\n");
    ck(&mut h, "SETBIT z 17 1", ":0\r\n");
    ck(&mut h, "BITPOS z 1", ":17\r\n");
    ck(&mut h, "BITPOS z 0", ":0\r\n");
    ck(&mut h, "BITPOS z 1 1", ":17\r\n");
    ck(&mut h, "BITPOS z 1 3", ":-1\r\n");
    ck(&mut h, "BITPOS z 0 3", ":-1\r\n");
    ck(&mut h, "BITPOS z 1 0 -1", ":17\r\n");
    ck(&mut h, "BITPOS z 1 2 2", ":17\r\n");
    ck(&mut h, "BITPOS z 0 2 2", ":16\r\n");
    ck(&mut h, "BITPOS z 1 0 0", ":-1\r\n");
    ck(&mut h, "BITPOS z 0 0 0", ":0\r\n");
    ck(&mut h, "BITPOS z 1 17 17 BIT", ":17\r\n");
    ck(&mut h, "BITPOS z 1 16 16 BIT", ":-1\r\n");
    ck(&mut h, "BITPOS z 1 16 23 BIT", ":17\r\n");
    ck(&mut h, "BITPOS z 0 17 17 BIT", ":-1\r\n");
    ck(&mut h, "BITPOS z 0 0 -1 BIT", ":0\r\n");
    ck(&mut h, "BITPOS z 1 3 12 bit", ":-1\r\n");
    ck(&mut h, "BITPOS z 1 1 -1 BYTE", ":17\r\n");
    ck(&mut h, "BITPOS z 0 -3 -1 BIT", ":21\r\n");
    ck(&mut h, "BITPOS z 1 -100 -90 BIT", ":-1\r\n");
    ck(&mut h, "BITPOS z 0 100 200", ":-1\r\n");
    ck(&mut h, "SETBIT f 0 1", ":0\r\n");
    ck(&mut h, "SETBIT f 1 1", ":0\r\n");
    ck(&mut h, "SETBIT f 2 1", ":0\r\n");
    ck(&mut h, "SETBIT f 3 1", ":0\r\n");
    ck(&mut h, "SETBIT f 4 1", ":0\r\n");
    ck(&mut h, "SETBIT f 5 1", ":0\r\n");
    ck(&mut h, "SETBIT f 6 1", ":0\r\n");
    ck(&mut h, "SETBIT f 7 1", ":0\r\n");
    ck(&mut h, "BITPOS f 0", ":8\r\n");
    ck(&mut h, "BITPOS f 0 0", ":8\r\n");
    ck(&mut h, "BITPOS f 0 0 -1", ":-1\r\n");
    ck(&mut h, "BITPOS f 0 0 7 BIT", ":-1\r\n");
    ck(&mut h, "BITPOS f 0 2 5 BIT", ":-1\r\n");
    ck(&mut h, "BITPOS f 1 2 5 BIT", ":2\r\n");
    ck(&mut h, "BITPOS f 1", ":0\r\n");
    ck(&mut h, "BITPOS nokey 1", ":-1\r\n");
    ck(&mut h, "BITPOS nokey 0", ":0\r\n");
    ck(&mut h, "BITPOS nokey 0 a", ":0\r\n");
    ck(&mut h, "BITPOS nokey 2", "-ERR The bit argument must be 1 or 0.\r\n");
    ck(&mut h, "BITPOS f 2", "-ERR The bit argument must be 1 or 0.\r\n");
    ck(&mut h, "BITPOS f x", "-ERR value is not an integer or out of range\r\n");
    ck(&mut h, "BITPOS f 1 x", "-ERR value is not an integer or out of range\r\n");
    ck(&mut h, "BITPOS f 1 0 x", "-ERR value is not an integer or out of range\r\n");
    ck(&mut h, "BITPOS f 1 0 1 NOPE", "-ERR syntax error\r\n");
    ck(&mut h, "BITPOS f 1 0 1 BIT 2", "-ERR syntax error\r\n");
    ck(&mut h, "BITPOS h 1", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "BITPOS h 2", "-ERR The bit argument must be 1 or 0.\r\n");
    // BITOP
    ck(&mut h, "SET k1 foobar", "+OK\r\n");
    ck(&mut h, "SET k2 abcdef", "+OK\r\n");
    ck(&mut h, "BITOP AND dest k1 k2", ":6\r\n");
    ck(&mut h, "GET dest", "$6\r\n`bc`ab\r\n");
    ck(&mut h, "BITOP OR dest k1 k2", ":6\r\n");
    ck(&mut h, "GET dest", "$6\r\ngoofev\r\n");
    ck(&mut h, "BITOP XOR dest k1 k2 nokey", ":6\r\n");
    ck(&mut h, "GET dest", "$6\r\n\x07\r\x0c\x06\x04\x14\r\n");
    ck(&mut h, "BITOP NOT dest k1", ":6\r\n");
    ckb(&mut h, "GET dest", b"$6\r\n\x99\x90\x90\x9d\x9e\x8d\r\n");
    ck(&mut h, "BITOP not dest nokey", ":0\r\n");
    ck(&mut h, "EXISTS dest", ":0\r\n");
    ck(&mut h, "SET short ab", "+OK\r\n");
    ck(&mut h, "BITOP AND dest k1 short", ":6\r\n");
    ck(&mut h, "GET dest", "$6\r\n`b\x00\x00\x00\x00\r\n");
    ck(&mut h, "BITOP OR dest short nokey", ":2\r\n");
    ck(&mut h, "GET dest", "$2\r\nab\r\n");
    ck(&mut h, "OBJECT ENCODING dest", "$3\r\nraw\r\n");
    ck(&mut h, "BITOP NOT dest k1 k2", "-ERR BITOP NOT must be called with a single source key.\r\n");
    ck(&mut h, "BITOP NAND dest k1", "-ERR syntax error\r\n");
    ck(&mut h, "BITOP AND dest k1 h", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "BITOP AND h k1", ":6\r\n");
    ck(&mut h, "TYPE h", "+string\r\n");
    ck(&mut h, "SET i2 123", "+OK\r\n");
    ck(&mut h, "BITOP XOR dest i2", ":3\r\n");
    ck(&mut h, "GET dest", "$3\r\n123\r\n");
}

#[test]
fn bitfield() {
    let mut h = H::new();
    // GET/SET/INCRBY, signed and unsigned, at byte and unaligned offsets
    ck(&mut h, "BITFIELD bf SET u8 0 255 GET u8 0 GET i8 0", "*3\r\n:0\r\n:255\r\n:-1\r\n");
    ck(&mut h, "BITFIELD bf SET i5 3 -7 GET i5 3 GET u5 3 GET u16 0", "*4\r\n:-1\r\n:-7\r\n:25\r\n:63744\r\n");
    ck(&mut h, "BITFIELD bf INCRBY u2 100 1 INCRBY u2 100 1 INCRBY u2 100 1 INCRBY u2 100 1", "*4\r\n:1\r\n:2\r\n:3\r\n:0\r\n");
    ck(&mut h, "BITFIELD bf GET u64 0", "-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.\r\n");
    ck(&mut h, "BITFIELD bf GET i64 0 GET u63 1 GET i1 0 GET u1 200000", "*4\r\n:-504403158265495552\r\n:8718968878589280256\r\n:-1\r\n:0\r\n");
    ck(&mut h, "STRLEN bf", ":13\r\n");
    // #N offsets are N times the width
    ck(&mut h, "BITFIELD bf SET u8 #2 65 GET u8 #2 GET u8 16 GET u4 #5", "*4\r\n:0\r\n:65\r\n:65\r\n:1\r\n");
    // overflow modes
    ck(&mut h, "BITFIELD o OVERFLOW WRAP INCRBY u8 0 300 INCRBY i8 8 200 INCRBY i8 8 -300", "*3\r\n:44\r\n:-56\r\n:-100\r\n");
    ck(&mut h, "BITFIELD o OVERFLOW SAT INCRBY u8 0 300 INCRBY u8 0 -300 INCRBY i8 8 200 INCRBY i8 8 -300", "*4\r\n:255\r\n:0\r\n:100\r\n:-128\r\n");
    ck(&mut h, "BITFIELD o OVERFLOW FAIL INCRBY u8 0 300 INCRBY u8 0 -1 INCRBY u8 0 255 INCRBY i8 8 -200", "*4\r\n$-1\r\n$-1\r\n:255\r\n$-1\r\n");
    ck(
        &mut h,
        "BITFIELD o OVERFLOW FAIL SET u8 0 256 SET i8 8 -129 SET i8 8 127 OVERFLOW SAT SET u8 0 999 SET i8 8 -999 OVERFLOW WRAP SET u8 0 257 SET i8 8 200",
        "*7\r\n$-1\r\n$-1\r\n:-128\r\n:255\r\n:127\r\n:255\r\n:-128\r\n",
    );
    ck(&mut h, "BITFIELD o SET u8 0 -1 GET u8 0 OVERFLOW SAT SET u8 0 -1 GET u8 0", "*4\r\n:1\r\n:255\r\n:255\r\n:255\r\n");
    ck(
        &mut h,
        "BITFIELD o OVERFLOW wrap INCRBY i64 16 9223372036854775807 INCRBY i64 16 1 OVERFLOW sat INCRBY i64 16 -1 INCRBY i64 16 -9223372036854775808 INCRBY i64 16 -9223372036854775808",
        "*5\r\n:9223372036854775807\r\n:-9223372036854775808\r\n:-9223372036854775808\r\n:-9223372036854775808\r\n:-9223372036854775808\r\n",
    );
    ck(
        &mut h,
        "BITFIELD o OVERFLOW fail INCRBY i64 16 -9223372036854775808 SET u63 16 -1 SET u63 16 9223372036854775807 INCRBY u63 16 1",
        "*4\r\n$-1\r\n$-1\r\n:4611686018427387904\r\n$-1\r\n",
    );
    ck(
        &mut h,
        "BITFIELD o OVERFLOW SAT INCRBY u63 16 1 INCRBY u63 16 -9223372036854775807 INCRBY u1 0 5 INCRBY i1 0 5 INCRBY i1 0 -5",
        "*5\r\n:9223372036854775807\r\n:0\r\n:1\r\n:0\r\n:-1\r\n",
    );
    ckb(&mut h, "GET o", b"$10\r\n\xff\xc8\x00\x00\x00\x00\x00\x00\x00\x00\r\n");
    // FAIL still creates (and pads) the key
    ck(&mut h, "BITFIELD nk OVERFLOW FAIL INCRBY u2 0 5", "*1\r\n$-1\r\n");
    ck(&mut h, "GET nk", "$1\r\n\x00\r\n");
    ck(&mut h, "BITFIELD nk2 OVERFLOW FAIL SET u8 #3 256", "*1\r\n$-1\r\n");
    ck(&mut h, "STRLEN nk2", ":4\r\n");
    ck(&mut h, "BITFIELD nokey GET u8 0 GET i32 100", "*2\r\n:0\r\n:0\r\n");
    ck(&mut h, "EXISTS nokey", ":0\r\n");
    ck(&mut h, "BITFIELD nokey", "*0\r\n");
    ck(&mut h, "BITFIELD_RO o GET u8 0 GET i8 #1", "*2\r\n:255\r\n:-56\r\n");
    ck(&mut h, "BITFIELD_RO nokey GET u8 0", "*1\r\n:0\r\n");
    // integers and embstr values
    ck(&mut h, "SET n 12", "+OK\r\n");
    ck(&mut h, "BITFIELD n GET u8 0 GET u8 8", "*2\r\n:49\r\n:50\r\n");
    ck(&mut h, "BITFIELD n INCRBY u8 0 1", "*1\r\n:50\r\n");
    ck(&mut h, "GET n", "$2\r\n22\r\n");
    // errors
    ck(&mut h, "BITFIELD_RO o SET u8 0 1", "-ERR BITFIELD_RO only supports the GET subcommand\r\n");
    ck(&mut h, "BITFIELD_RO o GET u8 0 INCRBY u8 0 1", "-ERR BITFIELD_RO only supports the GET subcommand\r\n");
    ck(&mut h, "BITFIELD_RO o INCRBY u8 0 1 GET u8 x", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "BITFIELD o GET u64 0", "-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.\r\n");
    ck(&mut h, "BITFIELD o GET i65 0", "-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.\r\n");
    ck(&mut h, "BITFIELD o GET u0 0", "-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.\r\n");
    ck(&mut h, "BITFIELD o GET I8 0", "-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.\r\n");
    ck(&mut h, "BITFIELD o GET x8 0", "-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.\r\n");
    ck(&mut h, "BITFIELD o GET i 0", "-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.\r\n");
    ck(&mut h, "BITFIELD o GET u8 -1", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "BITFIELD o GET u8 #-1", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "BITFIELD o GET u8 4294967296", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "BITFIELD o GET u8 #536870912", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "BITFIELD o GET u8 #536870911", "*1\r\n:0\r\n");
    ck(&mut h, "BITFIELD o GET u8 #x", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "BITFIELD o GET u8 0x", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "BITFIELD o SET u8 0 x", "-ERR value is not an integer or out of range\r\n");
    ck(&mut h, "BITFIELD o INCRBY u8 0 1.5", "-ERR value is not an integer or out of range\r\n");
    ck(&mut h, "BITFIELD o SET u8 0", "-ERR syntax error\r\n");
    ck(&mut h, "BITFIELD o GET u8", "-ERR syntax error\r\n");
    ck(&mut h, "BITFIELD o FOO u8 0", "-ERR syntax error\r\n");
    ck(&mut h, "BITFIELD o OVERFLOW", "-ERR syntax error\r\n");
    ck(&mut h, "BITFIELD o OVERFLOW BAD GET u8 0", "-ERR Invalid OVERFLOW type specified\r\n");
    ck(&mut h, "BITFIELD o GET u8 0 OVERFLOW BAD", "-ERR Invalid OVERFLOW type specified\r\n");
    ck(&mut h, "HSET h f v", ":1\r\n");
    ck(&mut h, "BITFIELD h GET u8 0", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "BITFIELD h SET u8 0 1", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "BITFIELD_RO h GET u8 0", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
    ck(&mut h, "BITFIELD h GET u8 x", "-ERR bit offset is not an integer or out of range\r\n");
    ck(&mut h, "BITFIELD", "-ERR wrong number of arguments for 'bitfield' command\r\n");
    ck(&mut h, "BITFIELD_RO", "-ERR wrong number of arguments for 'bitfield_ro' command\r\n");
}
