//! LCS: every expected reply here (and in `data/lcs_redis_7_0_15.tsv`) is the raw RESP that
//! redis-server 7.0.15 sent for the same commands, recorded over a socket — strings, LEN,
//! IDX with MINMATCHLEN/WITHMATCHLEN in RESP2 and RESP3, missing and empty keys, wrong types,
//! option errors and the refusal of tables past `proto-max-bulk-len`. A property test checks
//! the results against a plain reference LCS.

mod cmdutil;
mod common;

use cmdutil::*;
use common::{H, OK, bulk, err, int};
use proptest::prelude::*;

/// Runs `LCS a b opts…` after setting `a` and `b` to the given values.
fn lcs(h: &mut H, a: &[u8], b: &[u8], opts: &[&str]) -> Vec<u8> {
    assert_eq!(h.raw(&[b"SET".as_slice(), b"a", a]), b"+OK\r\n");
    assert_eq!(h.raw(&[b"SET".as_slice(), b"b", b]), b"+OK\r\n");
    let mut args: Vec<&[u8]> = vec![b"LCS", b"a", b"b"];
    args.extend(opts.iter().map(|o| o.as_bytes()));
    h.raw(&args)
}

const DOC_IDX: &str = "*4\r\n$7\r\nmatches\r\n*2\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n*2\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n$3\r\nlen\r\n:6\r\n";

#[test]
fn documented_example() {
    let mut h = H::new();
    ck(&mut h, "MSET key1 ohmytext key2 mynewtext", OK);
    ck(&mut h, "LCS key1 key2", bulk("mytext"));
    ck(&mut h, "LCS key1 key2 LEN", int(6));
    ck(&mut h, "LCS key1 key2 IDX", DOC_IDX);
    ck(&mut h, "LCS key1 key2 IDX MINMATCHLEN 4", "*4\r\n$7\r\nmatches\r\n*1\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n$3\r\nlen\r\n:6\r\n");
    ck(
        &mut h,
        "LCS key1 key2 IDX MINMATCHLEN 4 WITHMATCHLEN",
        "*4\r\n$7\r\nmatches\r\n*1\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n$3\r\nlen\r\n:6\r\n",
    );
    ck(
        &mut h,
        "LCS key1 key2 IDX WITHMATCHLEN",
        "*4\r\n$7\r\nmatches\r\n*2\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n*3\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n:2\r\n$3\r\nlen\r\n:6\r\n",
    );
    ck(
        &mut h,
        "LCS key1 key2 idx minmatchlen 2 withmatchlen",
        "*4\r\n$7\r\nmatches\r\n*2\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n*3\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n:2\r\n$3\r\nlen\r\n:6\r\n",
    );
    ck(&mut h, "LCS key1 key2 idx minmatchlen 3", "*4\r\n$7\r\nmatches\r\n*1\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n$3\r\nlen\r\n:6\r\n");
    // MINMATCHLEN 0 or negative: every match.
    ck(&mut h, "LCS key1 key2 idx minmatchlen 0", DOC_IDX);
    ck(&mut h, "LCS key1 key2 MINMATCHLEN -5 IDX", DOC_IDX);
    ck(&mut h, "LCS key1 key2 MINMATCHLEN -9223372036854775808 IDX", DOC_IDX);
    ck(&mut h, "LCS key1 key2 MINMATCHLEN 9223372036854775807 IDX", "*4\r\n$7\r\nmatches\r\n*0\r\n$3\r\nlen\r\n:6\r\n");
    // Repeated options: the last MINMATCHLEN wins.
    ck(&mut h, "LCS key1 key2 IDX IDX MINMATCHLEN 1 MINMATCHLEN 100", "*4\r\n$7\r\nmatches\r\n*0\r\n$3\r\nlen\r\n:6\r\n");
    ck(&mut h, "LCS key1 key2 LEN LEN", int(6));
    // Without IDX, WITHMATCHLEN and MINMATCHLEN change nothing.
    ck(&mut h, "LCS key1 key2 WITHMATCHLEN", bulk("mytext"));
    ck(&mut h, "LCS key1 key2 MINMATCHLEN 3", bulk("mytext"));
    ck(&mut h, "LCS key1 key2 LEN WITHMATCHLEN MINMATCHLEN 9", int(6));
    // The same key twice.
    ck(&mut h, "LCS key1 key1", bulk("ohmytext"));
}

#[test]
fn resp3_shapes() {
    let mut h = H::new();
    ck(&mut h, "MSET key1 ohmytext key2 mynewtext", OK);
    h.c("HELLO 3");
    ck(
        &mut h,
        "LCS key1 key2 IDX WITHMATCHLEN",
        "%2\r\n$7\r\nmatches\r\n*2\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n*3\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n:2\r\n$3\r\nlen\r\n:6\r\n",
    );
    ck(&mut h, "LCS nokey nokey2 IDX", "%2\r\n$7\r\nmatches\r\n*0\r\n$3\r\nlen\r\n:0\r\n");
    ck(&mut h, "LCS key1 key2", bulk("mytext"));
    ck(&mut h, "LCS key1 key2 LEN", int(6));
}

#[test]
fn values_of_every_encoding() {
    let mut h = H::new();
    // Missing keys are empty strings.
    ck(&mut h, "SET key2 mynewtext", OK);
    ck(&mut h, "LCS nokey key2", "$0\r\n\r\n");
    ck(&mut h, "LCS nokey key2 IDX", "*4\r\n$7\r\nmatches\r\n*0\r\n$3\r\nlen\r\n:0\r\n");
    ck(&mut h, "LCS nokey nokey2 LEN", int(0));
    ck(&mut h, "LCS nokey nokey2 IDX", "*4\r\n$7\r\nmatches\r\n*0\r\n$3\r\nlen\r\n:0\r\n");
    ckr(&mut h, &[b"SET", b"e", b""], OK);
    ck(&mut h, "LCS e key2 IDX", "*4\r\n$7\r\nmatches\r\n*0\r\n$3\r\nlen\r\n:0\r\n");
    ck(&mut h, "LCS e e", "$0\r\n\r\n");
    // Integer-encoded values.
    ck(&mut h, "SET n1 1234567", OK);
    ck(&mut h, "SET n2 7654321", OK);
    ck(&mut h, "LCS n1 n2 IDX WITHMATCHLEN", "*4\r\n$7\r\nmatches\r\n*1\r\n*3\r\n*2\r\n:6\r\n:6\r\n*2\r\n:0\r\n:0\r\n:1\r\n$3\r\nlen\r\n:1\r\n");
    ck(&mut h, "LCS n1 n2", bulk("7"));
    // Binary values.
    ckr(&mut h, &[b"SET", b"bin1", b"a\r\nb\x00c\xff"], OK);
    ckr(&mut h, &[b"SET", b"bin2", b"\x00\r\xff"], OK);
    ckr(&mut h, &[b"LCS", b"bin1", b"bin2"], b"$2\r\n\x00\xff\r\n");
    ck(
        &mut h,
        "LCS bin1 bin2 idx withmatchlen",
        "*4\r\n$7\r\nmatches\r\n*2\r\n*3\r\n*2\r\n:6\r\n:6\r\n*2\r\n:2\r\n:2\r\n:1\r\n*3\r\n*2\r\n:4\r\n:4\r\n*2\r\n:0\r\n:0\r\n:1\r\n$3\r\nlen\r\n:2\r\n",
    );
    // Ties in the walk back, runs of one, a whole string matched.
    ck(&mut h, "MSET x1 abcabcabc x2 cbacbacba", OK);
    ck(&mut h, "LCS x1 x2", bulk("cbabc"));
    ck(
        &mut h,
        "LCS x1 x2 IDX WITHMATCHLEN",
        "*4\r\n$7\r\nmatches\r\n*5\r\n*3\r\n*2\r\n:8\r\n:8\r\n*2\r\n:6\r\n:6\r\n:1\r\n*3\r\n*2\r\n:7\r\n:7\r\n*2\r\n:4\r\n:4\r\n:1\r\n*3\r\n*2\r\n:6\r\n:6\r\n*2\r\n:2\r\n:2\r\n:1\r\n*3\r\n*2\r\n:4\r\n:4\r\n*2\r\n:1\r\n:1\r\n:1\r\n*3\r\n*2\r\n:2\r\n:2\r\n*2\r\n:0\r\n:0\r\n:1\r\n$3\r\nlen\r\n:5\r\n",
    );
    ck(&mut h, "MSET y1 GTTCCTAATA y2 CGATAATTGAGA", OK);
    ck(&mut h, "LCS y1 y2", bulk("CTAATA"));
    ck(
        &mut h,
        "LCS y1 y2 IDX WITHMATCHLEN",
        "*4\r\n$7\r\nmatches\r\n*4\r\n*3\r\n*2\r\n:9\r\n:9\r\n*2\r\n:11\r\n:11\r\n:1\r\n*3\r\n*2\r\n:8\r\n:8\r\n*2\r\n:7\r\n:7\r\n:1\r\n*3\r\n*2\r\n:5\r\n:7\r\n*2\r\n:3\r\n:5\r\n:3\r\n*3\r\n*2\r\n:4\r\n:4\r\n*2\r\n:0\r\n:0\r\n:1\r\n$3\r\nlen\r\n:6\r\n",
    );
    ck(
        &mut h,
        "LCS y2 y1 IDX",
        "*4\r\n$7\r\nmatches\r\n*6\r\n*2\r\n*2\r\n:11\r\n:11\r\n*2\r\n:9\r\n:9\r\n*2\r\n*2\r\n:9\r\n:9\r\n*2\r\n:6\r\n:6\r\n*2\r\n*2\r\n:7\r\n:7\r\n*2\r\n:5\r\n:5\r\n*2\r\n*2\r\n:6\r\n:6\r\n*2\r\n:2\r\n:2\r\n*2\r\n*2\r\n:3\r\n:3\r\n*2\r\n:1\r\n:1\r\n*2\r\n*2\r\n:1\r\n:1\r\n*2\r\n:0\r\n:0\r\n$3\r\nlen\r\n:6\r\n",
    );
    ck(&mut h, "MSET sub foobarbaz sub2 xxfoobarbazyy", OK);
    ck(&mut h, "LCS sub sub2 IDX WITHMATCHLEN", "*4\r\n$7\r\nmatches\r\n*1\r\n*3\r\n*2\r\n:0\r\n:8\r\n*2\r\n:2\r\n:10\r\n:9\r\n$3\r\nlen\r\n:9\r\n");
    // LCS reads only: no effects.
    assert!(h.effect_lines().iter().all(|l| !l.contains("LCS")), "{:?}", h.effect_lines());
}

#[test]
fn errors_and_their_order() {
    let mut h = H::new();
    ck(&mut h, "MSET key1 ohmytext key2 mynewtext", OK);
    ck(&mut h, "HSET h f v", int(1));
    let not_strings = err("ERR The specified keys must contain string values");
    let both = err("ERR If you want both the length and indexes, please just use IDX.");
    let syntax = err("ERR syntax error");
    let not_int = err("ERR value is not an integer or out of range");
    ck(&mut h, "LCS key1", err("ERR wrong number of arguments for 'lcs' command"));
    ck(&mut h, "LCS", err("ERR wrong number of arguments for 'lcs' command"));
    ck(&mut h, "LCS key1 key2 LEN IDX", &both);
    ck(&mut h, "LCS key1 key2 IDX LEN", &both);
    ck(&mut h, "LCS key1 key2 len idx", &both);
    ck(&mut h, "LCS nokey nokey2 LEN IDX", &both);
    ck(&mut h, "LCS key1 key2 foo", &syntax);
    ck(&mut h, "LCS nokey nokey2 foo", &syntax);
    // Options are read to the end before LEN+IDX is refused.
    ck(&mut h, "LCS key1 key2 IDX LEN foo", &syntax);
    // MINMATCHLEN without a value is an unknown option.
    ck(&mut h, "LCS key1 key2 MINMATCHLEN", &syntax);
    ck(&mut h, "LCS key1 key2 MINMATCHLEN x", &not_int);
    ck(&mut h, "LCS key1 key2 MINMATCHLEN 1.5", &not_int);
    ck(&mut h, "LCS key1 key2 MINMATCHLEN 9223372036854775808", &not_int);
    // Types are checked (both keys looked up) before the options are read.
    ck(&mut h, "LCS h key2", &not_strings);
    ck(&mut h, "LCS h nokey", &not_strings);
    ck(&mut h, "LCS nokey h LEN", &not_strings);
    ck(&mut h, "LCS key1 h foo", &not_strings);
    ck(&mut h, "LCS nokey h foo", &not_strings);
    ck(&mut h, "RPUSH l x", int(1));
    ck(&mut h, "LCS l l IDX LEN", &not_strings);
    ck(&mut h, "COMMAND GETKEYS LCS a b", bulks(&["a", "b"]));
    ck(&mut h, "COMMAND GETKEYS LCS a b IDX", bulks(&["a", "b"]));
    ck(&mut h, "COMMAND GETKEYS LCS a", err("ERR Invalid number of arguments specified for command"));
}

/// Redis refuses a table of (len_a + 1) * (len_b + 1) u32 cells past proto-max-bulk-len
/// (checked after the options): at 1 MiB, 262144 cells pass and 262145 do not.
#[test]
fn tables_past_proto_max_bulk_len_are_refused() {
    let mut h = H::new();
    ck(&mut h, "CONFIG SET proto-max-bulk-len 1048576", OK);
    let too_large = "-ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len\r\n";
    let x = |n: usize| vec![b'x'; n];
    let all = |n: usize| format!("${n}\r\n{}\r\n", "x".repeat(n));
    assert_eq!(lcs(&mut h, &x(511), &x(511), &[]), all(511).as_bytes());
    assert_eq!(lcs(&mut h, &x(511), &x(511), &["LEN"]), b":511\r\n");
    for (n, m) in [(512, 512), (512, 511), (262144, 0), (0, 262144), (1, 131072)] {
        for opts in [&[][..], &["LEN"], &["IDX"], &["IDX", "WITHMATCHLEN"]] {
            assert_eq!(String::from_utf8_lossy(&lcs(&mut h, &x(n), &x(m), opts)), too_large, "{n} x {m} {opts:?}");
        }
        // Option errors come first.
        assert_eq!(lcs(&mut h, &x(n), &x(m), &["IDX", "foo"]), b"-ERR syntax error\r\n");
        assert_eq!(lcs(&mut h, &x(n), &x(m), &["IDX", "MINMATCHLEN", "abc"]), b"-ERR value is not an integer or out of range\r\n");
        assert_eq!(lcs(&mut h, &x(n), &x(m), &["LEN", "IDX"]), b"-ERR If you want both the length and indexes, please just use IDX.\r\n");
    }
    assert_eq!(lcs(&mut h, &x(262143), b"", &[]), b"$0\r\n\r\n");
    assert_eq!(lcs(&mut h, b"", &x(262143), &["LEN"]), b":0\r\n");
    assert_eq!(lcs(&mut h, b"x", &x(131071), &[]), b"$1\r\nx\r\n");
    // A missing key counts as an empty string.
    ckr(&mut h, &[b"SET", b"b", &x(300000)], OK);
    ck(&mut h, "DEL a", int(1));
    assert_eq!(h.c("LCS a b LEN"), too_large);
    assert_eq!(h.c("LCS a a LEN"), ":0\r\n");
}

/// With proto-max-bulk-len raised as far as it goes, a table the engine could not hold (the
/// wasm32 engine ends at 4 GiB; 40000 x 40000 is 6.4 GB of cells, and its size overflows 32
/// bits) is refused with the same error at once, where Redis would try to allocate it.
#[test]
fn tables_past_the_engine_are_refused() {
    let mut h = H::new();
    ck(&mut h, "CONFIG SET proto-max-bulk-len 9223372036854775807", OK);
    let too_large = "-ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len\r\n";
    let big = vec![b'y'; 40000];
    // LEN is refused too although it keeps only two rows: the table's size also bounds the
    // time (at most 3 GiB / 4 cells), whatever proto-max-bulk-len says.
    // (The refusal comes before any table is built: the reply is the error, not a result.)
    for opts in [&[][..], &["LEN"], &["IDX"]] {
        assert_eq!(String::from_utf8_lossy(&lcs(&mut h, &big, &big, opts)), too_large);
    }
    // A moderate table still runs.
    assert_eq!(lcs(&mut h, &[b'y'; 300], &[b'y'; 200], &["LEN"]), b":200\r\n");
}

/// The replies in `data/lcs_redis_7_0_15.tsv` (400 random cases recorded from
/// redis-server 7.0.15 by `data/lcs_redis_7_0_15.py`); MEMORIA_LCS_CASES names another file
/// of the same format to run as well.
#[test]
fn recorded_random_cases() {
    let mut files = vec![include_str!("data/lcs_redis_7_0_15.tsv").to_string()];
    if let Ok(path) = std::env::var("MEMORIA_LCS_CASES") {
        files.push(std::fs::read_to_string(path).unwrap());
    }
    let mut h = H::new();
    let mut n = 0;
    for text in &files {
        for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 5, "{line:?}");
            let val = |s: &str| if s == "-" { Vec::new() } else { s.as_bytes().to_vec() };
            let opts: Vec<&str> = if f[3] == "-" { vec![] } else { f[3].split(',').collect() };
            h.c(&format!("HELLO {}", f[0]));
            let got = lcs(&mut h, &val(f[1]), &val(f[2]), &opts);
            let want = f[4].replace('|', "\r\n");
            assert_eq!(String::from_utf8_lossy(&got), want, "RESP{} LCS {:?} {:?} {opts:?}", f[0], f[1], f[2]);
            n += 1;
        }
    }
    assert!(n >= 400);
}

/// A plain O(n*m) LCS length, for reference.
fn ref_len(a: &[u8], b: &[u8]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    for &x in a {
        let mut cur = vec![0usize; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            cur[j + 1] = if x == y { prev[j] + 1 } else { cur[j].max(prev[j + 1]) };
        }
        prev = cur;
    }
    prev[b.len()]
}

fn is_subsequence(s: &[u8], of: &[u8]) -> bool {
    let mut it = of.iter();
    s.iter().all(|c| it.any(|d| d == c))
}

/// Parses an IDX reply (RESP2, WITHMATCHLEN) into ((a0, a1), (b0, b1), len) triples and the total.
type Run = ((usize, usize), (usize, usize), usize);
fn parse_idx(reply: &str) -> (Vec<Run>, usize) {
    let lines: Vec<&str> = reply.split("\r\n").collect();
    let mut at = 0;
    let mut next = || {
        at += 1;
        lines[at - 1]
    };
    let num = |l: &str| -> usize { l[1..].parse().unwrap() };
    assert_eq!([next(), next(), next()], ["*4", "$7", "matches"]);
    let n = num(next());
    let mut out = Vec::new();
    for _ in 0..n {
        assert_eq!([next(), next()], ["*3", "*2"]);
        let a = (num(next()), num(next()));
        assert_eq!(next(), "*2");
        let b = (num(next()), num(next()));
        out.push((a, b, num(next())));
    }
    assert_eq!([next(), next()], ["$3", "len"]);
    (out, num(next()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(std::env::var("MEMORIA_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300)))]
    #[test]
    fn agrees_with_a_reference_lcs(a in proptest::collection::vec(prop::sample::select(b"abcd".to_vec()), 0..40),
                                   b in proptest::collection::vec(prop::sample::select(b"abcd".to_vec()), 0..40),
                                   min in 0usize..5) {
        let mut h = H::new();
        let want = ref_len(&a, &b);
        prop_assert_eq!(lcs(&mut h, &a, &b, &["LEN"]), format!(":{want}\r\n").into_bytes());
        // The string: a common subsequence of that length.
        let s = lcs(&mut h, &a, &b, &[]);
        let s = bulk_text(&String::from_utf8(s).unwrap()).into_bytes();
        prop_assert_eq!(s.len(), want);
        prop_assert!(is_subsequence(&s, &a) && is_subsequence(&s, &b));
        // IDX: disjoint runs, from the ends backwards, each the same bytes in both strings,
        // together the LCS string; MINMATCHLEN keeps those of at least that length.
        let all = String::from_utf8(lcs(&mut h, &a, &b, &["IDX", "WITHMATCHLEN"])).unwrap();
        let (runs, total) = parse_idx(&all);
        prop_assert_eq!(total, want);
        let mut joined = Vec::new();
        let mut last: Option<(usize, usize)> = None;
        for &((a0, a1), (b0, b1), len) in &runs {
            prop_assert_eq!(a1 - a0 + 1, len);
            prop_assert_eq!(b1 - b0 + 1, len);
            prop_assert_eq!(&a[a0..=a1], &b[b0..=b1]);
            if let Some((pa, pb)) = last {
                prop_assert!(a1 < pa && b1 < pb);
            }
            last = Some((a0, b0));
            joined.splice(0..0, a[a0..=a1].iter().copied());
        }
        prop_assert_eq!(&joined, &s);
        let filtered = String::from_utf8(lcs(&mut h, &a, &b, &["IDX", "WITHMATCHLEN", "MINMATCHLEN", &min.to_string()])).unwrap();
        let (kept, total2) = parse_idx(&filtered);
        prop_assert_eq!(total2, want);
        let expect: Vec<_> = runs.iter().copied().filter(|r| r.2 >= min).collect();
        prop_assert_eq!(kept, expect);
    }
}
