//! Number parsing/formatting and glob matching with Redis's exact rules.

use alloc::string::String;
use alloc::vec::Vec;

/// Redis's `getIntFromObjectOrReply` error for an integer outside the C `int` range.
pub const NOT_AN_INT_RANGE: &str = "ERR value is out of range, value must between -2147483648 and 2147483647";

/// Redis's `string2ll`: no sign other than a leading '-', no leading zeros, no spaces,
/// "-0" rejected, and the value must fit in i64.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    // At most 19 digits: the accumulator fits in u64 without overflow checks (wasm32 has
    // no 64×64 overflow flag; checked_mul becomes a 128-bit multiply call).
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = if s[0] == b'-' { (true, &s[1..]) } else { (false, s) };
    if digits.is_empty() || digits[0] < b'1' || digits[0] > b'9' {
        return None;
    }
    if digits.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (c - b'0') as u64;
    }
    if neg {
        if v > i64::MAX as u64 + 1 { None } else { Some((v as i64).wrapping_neg()) }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

/// Parses a float the way Redis's `string2ld`/`string2d` do: no leading space, the whole
/// input consumed, NaN refused. Accepts what strtod accepts (exponents, "inf").
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s.len() > 5000 || s[0].is_ascii_whitespace() {
        return None;
    }
    let t = core::str::from_utf8(s).ok()?;
    if let Some(v) = parse_hex_float(t) {
        return Some(v);
    }
    // Rust accepts "infinity"/"inf"/"nan" in any case like strtod does; hex floats are
    // the one strtod form it lacks, and clients do not send them.
    let v: f64 = match t.parse() {
        Ok(v) => v,
        Err(_) => {
            let l = t.to_ascii_lowercase();
            match l.as_str() {
                "+inf" | "+infinity" => f64::INFINITY,
                _ => return None,
            }
        }
    };
    if v.is_nan() {
        return None;
    }
    Some(v)
}

/// strtod's hexadecimal form: [+-]0x<hex>[.<hex>][p[+-]<dec>].
fn parse_hex_float(t: &str) -> Option<f64> {
    let (neg, rest) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let rest = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X"))?;
    let (mant, exp) = match rest.find(['p', 'P']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i32>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + c.to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += c.to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    let v = v * libm_pow2(exp);
    Some(if neg { -v } else { v })
}

fn libm_pow2(e: i32) -> f64 {
    let mut v = 1.0f64;
    let step = if e >= 0 { 2.0 } else { 0.5 };
    for _ in 0..e.unsigned_abs().min(2100) {
        v *= step;
    }
    v
}

/// Appends the decimal form of an integer.
pub fn push_int(out: &mut Vec<u8>, v: i64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let neg = v < 0;
    let mut u = v.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    if neg {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[i..]);
}

pub fn int_bytes(v: i64) -> Vec<u8> {
    let mut out = Vec::with_capacity(20);
    push_int(&mut out, v);
    out
}

/// Formats a float for INCRBYFLOAT/HINCRBYFLOAT replies and stored values: plain decimal
/// notation (never exponent), trailing zeros trimmed, like Redis's `ld2string(.., LD_STR_HUMAN)`.
/// Redis computes in 80-bit long double; we use f64 and print the shortest representation
/// that round-trips, which agrees except where long double's extra bits change the digits.
pub fn format_human_float(v: f64) -> Vec<u8> {
    if v.is_infinite() {
        return if v > 0.0 { b"inf".to_vec() } else { b"-inf".to_vec() };
    }
    if v == 0.0 {
        return b"0".to_vec();
    }
    let s: String = alloc::format!("{}", v);
    // Rust's Display never uses exponent notation for f64; "-0" was handled above.
    s.into_bytes()
}

/// Formats a double the way Redis 7.0's `addReplyDouble` does: `%.17g` (17 significant
/// digits, so 1.1 prints as 1.1000000000000001), "inf"/"-inf" spelled out.
pub fn format_double(v: f64) -> Vec<u8> {
    if v.is_infinite() {
        return if v > 0.0 { b"inf".to_vec() } else { b"-inf".to_vec() };
    }
    format_g17(v)
}

/// C's `printf("%.17g", v)`. Rust's exact formatting rounds half to even on the exact
/// binary value, as glibc does.
pub fn format_g17(v: f64) -> Vec<u8> {
    if v.is_nan() {
        return if v.is_sign_negative() { b"-nan".to_vec() } else { b"nan".to_vec() };
    }
    if v.is_infinite() {
        return if v > 0.0 { b"inf".to_vec() } else { b"-inf".to_vec() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { b"-0".to_vec() } else { b"0".to_vec() };
    }
    let s = alloc::format!("{:.16e}", v);
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: Vec<u8> = mant.bytes().filter(|c| c.is_ascii_digit()).collect();
    let mut out = Vec::with_capacity(26);
    if neg {
        out.push(b'-');
    }
    if !(-4..17).contains(&exp) {
        let mut d = digits.as_slice();
        while d.len() > 1 && d[d.len() - 1] == b'0' {
            d = &d[..d.len() - 1];
        }
        out.push(d[0]);
        if d.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&d[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(alloc::format!("{}", e).as_bytes());
    } else {
        let mut body: Vec<u8> = Vec::with_capacity(24);
        let point;
        if exp < 0 {
            body.push(b'0');
            body.extend(core::iter::repeat_n(b'0', (-exp - 1) as usize));
            point = 1;
            body.extend_from_slice(&digits);
        } else {
            body.extend_from_slice(&digits);
            point = exp as usize + 1;
        }
        let (int, frac) = body.split_at(point);
        out.extend_from_slice(int);
        let mut frac = frac;
        while let [rest @ .., b'0'] = frac {
            frac = rest;
        }
        if !frac.is_empty() {
            out.push(b'.');
            out.extend_from_slice(frac);
        }
    }
    out
}

/// Glob-style matching with Redis's `stringmatchlen` semantics (`*`, `?`, `[...]`, `\`),
/// including its quirks: ranges compare bytes as C's signed `char`, an unterminated class
/// ends at the pattern's end, and a `\` inside a class compares case-sensitively.
///
/// Bounded as Redis's is since CVE-2022-36021 and CVE-2024-31228. Redis's recursion gives
/// up on every earlier `*` once the rest after the latest one matches nowhere (a longer
/// match for an earlier star would only start that rest later), so only the latest star is
/// ever retried: this is that control flow without the recursion, O(pattern × string).
/// And like Redis, whose recursion stops 1000 stars deep, a match that reaches a 1001st
/// star (not the pattern's last element) fails.
pub fn glob_match(pattern: &[u8], string: &[u8], nocase: bool) -> bool {
    // One copy per case mode: the hot loop then has no case test per byte.
    if nocase { glob::<true>(pattern, string) } else { glob::<false>(pattern, string) }
}

fn glob<const NOCASE: bool>(pattern: &[u8], string: &[u8]) -> bool {
    let nocase = NOCASE;
    let (mut p, mut s) = (0usize, 0usize);
    // The latest star: where the pattern goes on after it, the string position that rest
    // is being tried at, and how many stars deep it is.
    let mut star: Option<(usize, usize, u32)> = None;
    loop {
        let step = if p < pattern.len() && s < string.len() {
            let c = pattern[p];
            if !matches!(c, b'*' | b'?' | b'[' | b'\\') {
                // The common case first: a plain byte.
                if lower(c, nocase) == lower(string[s], nocase) {
                    p += 1;
                    s += 1;
                    continue;
                }
                None
            } else {
                match c {
                    b'*' => {
                        while p + 1 < pattern.len() && pattern[p + 1] == b'*' {
                            p += 1;
                        }
                        if p + 1 == pattern.len() {
                            return true;
                        }
                        let depth = star.map_or(1, |(_, _, d)| d + 1);
                        if depth > 1000 {
                            return false;
                        }
                        let Some(at) = next_start(pattern, p + 1, string, s, nocase) else {
                            return false;
                        };
                        star = Some((p + 1, at, depth));
                        (p, s) = (p + 1, at);
                        continue;
                    }
                    b'?' => Some(p + 1),
                    b'[' => {
                        let (matched, close) = class_match(pattern, p + 1, string[s], nocase);
                        matched.then_some(close + 1)
                    }
                    b'\\' if p + 1 < pattern.len() => (lower(pattern[p + 1], nocase) == lower(string[s], nocase)).then_some(p + 2),
                    // A lone `\` at the end is a plain byte.
                    _ => (lower(c, nocase) == lower(string[s], nocase)).then_some(p + 1),
                }
            }
        } else {
            // The string or the pattern ran out. Trailing stars match nothing, once a byte
            // was consumed (Redis skips them only after a step: `*` does not match "").
            if s == string.len() {
                while s > 0 && p < pattern.len() && pattern[p] == b'*' {
                    p += 1;
                }
                if p == pattern.len() {
                    return true;
                }
            }
            None
        };
        match step {
            Some(next) => {
                p = next;
                s += 1;
            }
            None => {
                // Retry the rest after the latest star one byte later; with no byte left
                // (or no star), nothing can match.
                let Some((after, from, depth)) = star else {
                    return false;
                };
                let Some(at) = next_start(pattern, after, string, from + 1, nocase) else {
                    return false;
                };
                star = Some((after, at, depth));
                (p, s) = (after, at);
            }
        }
    }
}

/// The first position at or after `from` where the pattern's rest (at `after`, just past a
/// star) can start: where its first byte is, when that is a plain byte; None when no byte
/// of the string is left to try, as in Redis's star loop.
fn next_start(pattern: &[u8], after: usize, string: &[u8], from: usize, nocase: bool) -> Option<usize> {
    let literal = match pattern[after] {
        b'*' | b'?' | b'[' => None,
        b'\\' if after + 1 < pattern.len() => Some(pattern[after + 1]),
        c => Some(c),
    };
    let rest = string.get(from..).filter(|r| !r.is_empty())?;
    match literal {
        None => Some(from),
        Some(c) if !nocase => rest.iter().position(|&b| b == c).map(|i| from + i),
        Some(c) => rest.iter().position(|&b| b.to_ascii_lowercase() == c.to_ascii_lowercase()).map(|i| from + i),
    }
}

/// One `[...]` class starting at `p` (just after the `[`) against byte `c`: whether it
/// matches, and the index of its closing `]` (of the pattern's last byte when the class is
/// unterminated).
fn class_match(pattern: &[u8], mut p: usize, c: u8, nocase: bool) -> (bool, usize) {
    let not = p < pattern.len() && pattern[p] == b'^';
    if not {
        p += 1;
    }
    let mut matched = false;
    loop {
        if p >= pattern.len() {
            // Unterminated: Redis steps back onto the last byte and ends the class there.
            p = pattern.len() - 1;
            break;
        }
        if pattern[p] == b'\\' && p + 1 < pattern.len() {
            p += 1;
            matched |= pattern[p] == c;
        } else if pattern[p] == b']' {
            break;
        } else if p + 2 < pattern.len() && pattern[p + 1] == b'-' {
            // C's `char` is signed on the platforms Redis runs on: bytes past 0x7f are
            // negative in the comparison.
            let signed = |b: u8| lower(b, nocase) as i8 as i32;
            let (mut lo, mut hi) = (pattern[p] as i8 as i32, pattern[p + 2] as i8 as i32);
            if lo > hi {
                core::mem::swap(&mut lo, &mut hi);
            }
            if nocase {
                (lo, hi) = (signed(lo as u8), signed(hi as u8));
            }
            let x = signed(c);
            p += 2;
            matched |= x >= lo && x <= hi;
        } else {
            matched |= lower(pattern[p], nocase) == lower(c, nocase);
        }
        p += 1;
    }
    (matched != not, p)
}

fn lower(c: u8, nocase: bool) -> u8 {
    if nocase { c.to_ascii_lowercase() } else { c }
}

/// Deterministic PRNG (splitmix64) seeded by the host for each batch.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// ASCII case-insensitive equality for command and option names.
#[inline]
pub fn eq_ic(a: &[u8], b: &[u8]) -> bool {
    a.eq_ignore_ascii_case(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"99999999999999999999"), None);
        assert_eq!(parse_i64(b"-9999999999999999999"), None);
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        for bad in [&b""[..], b"-0", b"01", b"+1", b" 1", b"1 ", b"1a", b"-"] {
            assert_eq!(parse_i64(bad), None, "{:?}", bad);
        }
        let mut v = Vec::new();
        push_int(&mut v, i64::MIN);
        assert_eq!(v, b"-9223372036854775808");
    }

    #[test]
    fn globs() {
        assert!(glob_match(b"*", b"anything", false));
        assert!(glob_match(b"h?llo", b"hello", false));
        assert!(glob_match(b"h[ae]llo", b"hallo", false));
        assert!(!glob_match(b"h[^e]llo", b"hello", false));
        assert!(glob_match(b"h[a-b]llo", b"hbllo", false));
        assert!(glob_match(b"a\\*b", b"a*b", false));
        assert!(!glob_match(b"a\\*b", b"axb", false));
        assert!(glob_match(b"user:*", b"user:", false));
        assert!(glob_match(b"*a*", b"bab", false));
        assert!(!glob_match(b"", b"a", false));
        assert!(glob_match(b"", b"", false));
        assert!(glob_match(b"A*", b"abc", true));
    }

    /// Redis 7.0.15's `stringmatchlen_impl`, recursion and all (with `skipLongerMatches`
    /// and the nesting limit): the reference the iterative matcher is checked against.
    fn redis_glob(p: &[u8], s: &[u8], nocase: bool) -> bool {
        fn inner(mut p: &[u8], mut s: &[u8], nocase: bool, skip: &mut bool, nesting: u32) -> bool {
            if nesting > 1000 {
                return false;
            }
            let low = |c: u8| if nocase { c.to_ascii_lowercase() } else { c };
            while !p.is_empty() && !s.is_empty() {
                match p[0] {
                    b'*' => {
                        while p.len() > 1 && p[1] == b'*' {
                            p = &p[1..];
                        }
                        if p.len() == 1 {
                            return true;
                        }
                        while !s.is_empty() {
                            if inner(&p[1..], s, nocase, skip, nesting + 1) {
                                return true;
                            }
                            if *skip {
                                return false;
                            }
                            s = &s[1..];
                        }
                        *skip = true;
                        return false;
                    }
                    b'?' => s = &s[1..],
                    b'[' => {
                        p = &p[1..];
                        let not = !p.is_empty() && p[0] == b'^';
                        if not {
                            p = &p[1..];
                        }
                        let mut matched = false;
                        let mut unterminated = false;
                        loop {
                            if p.is_empty() {
                                unterminated = true;
                                break;
                            }
                            if p[0] == b'\\' && p.len() >= 2 {
                                p = &p[1..];
                                matched |= p[0] == s[0];
                            } else if p[0] == b']' {
                                break;
                            } else if p.len() >= 3 && p[1] == b'-' {
                                let (mut a, mut b) = (p[0] as i8 as i32, p[2] as i8 as i32);
                                if a > b {
                                    core::mem::swap(&mut a, &mut b);
                                }
                                let sl = |x: i32| low(x as u8) as i8 as i32;
                                let (a, b, c) = (sl(a), sl(b), sl(s[0] as i8 as i32));
                                p = &p[2..];
                                matched |= c >= a && c <= b;
                            } else if low(p[0]) == low(s[0]) {
                                matched = true;
                            }
                            p = &p[1..];
                        }
                        if matched == not {
                            return false;
                        }
                        s = &s[1..];
                        if unterminated {
                            return s.is_empty();
                        }
                    }
                    b'\\' if p.len() >= 2 => {
                        p = &p[1..];
                        if low(p[0]) != low(s[0]) {
                            return false;
                        }
                        s = &s[1..];
                    }
                    c => {
                        if low(c) != low(s[0]) {
                            return false;
                        }
                        s = &s[1..];
                    }
                }
                p = &p[1..];
                if s.is_empty() {
                    while !p.is_empty() && p[0] == b'*' {
                        p = &p[1..];
                    }
                    break;
                }
            }
            p.is_empty() && s.is_empty()
        }
        inner(p, s, nocase, &mut false, 0)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]
        /// The iterative matcher answers exactly as Redis's recursive one, quirks included.
        #[test]
        fn glob_agrees_with_redis(p in proptest::collection::vec(proptest::sample::select(&b"ab*?[]^-\\Az\x80\xff"[..]), 0..12),
                                  s in proptest::collection::vec(proptest::sample::select(&b"abAz*?[]-\\\x80\xe9\xff"[..]), 0..10),
                                  nocase: bool) {
            proptest::prop_assert_eq!(glob_match(&p, &s, nocase), redis_glob(&p, &s, nocase), "pattern {:?} string {:?}", alloc::string::String::from_utf8_lossy(&p), alloc::string::String::from_utf8_lossy(&s));
        }
    }

    #[test]
    fn deep_stars_agree_with_redis() {
        for stars in [999, 1000, 1001, 1002, 1500] {
            for tail in [&b""[..], b"b", b"a", b"*"] {
                let mut p: Vec<u8> = core::iter::repeat_n(*b"*a", stars).flatten().collect();
                p.extend_from_slice(tail);
                for len in [stars - 1, stars, stars + 1, stars + 5] {
                    let s = alloc::vec![b'a'; len];
                    assert_eq!(glob_match(&p, &s, false), redis_glob(&p, &s, false), "{stars} stars, tail {tail:?}, {len} bytes");
                }
            }
        }
    }

    /// CVE-2022-36021: without the early exit these take 2^20 and more steps (the test
    /// would not finish); with it, a few thousand.
    #[test]
    fn pathological_globs_end() {
        let s = [b'a'; 40];
        assert!(!glob_match(b"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", &s, false));
        assert!(glob_match(b"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*", &s, false));
        let long = [b'a'; 100_000];
        let mut pat = Vec::new();
        for _ in 0..500 {
            pat.extend_from_slice(b"*a");
        }
        pat.push(b'b');
        assert!(!glob_match(&pat, &long, false));
        // Past 1000 nested stars the match gives up (CVE-2024-31228: bounded stack).
        let deep: Vec<u8> = core::iter::repeat_n(*b"*a", 1200).flatten().collect();
        assert!(!glob_match(&deep, &[b'a'; 1300], false));
        // The early exit keeps matches that need a later start of the rest.
        assert!(glob_match(b"*ab*ab", b"aabxab", false));
        assert!(glob_match(b"*a?c*", b"xxabcabd", false));
        assert!(!glob_match(b"*a?c*e", b"xxabcabd", false));
    }

    #[test]
    fn floats() {
        assert_eq!(format_human_float(10.5 + 0.1), b"10.6");
        assert_eq!(format_human_float(3.0), b"3");
        assert_eq!(format_human_float(-1.5e20), b"-150000000000000000000");
        assert_eq!(parse_f64(b"1e3"), Some(1000.0));
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"nan"), None);
    }

    #[test]
    fn g17() {
        let cases: &[(f64, &str)] = &[
            (1.1, "1.1000000000000001"),
            (1e-5, "1.0000000000000001e-05"),
            (0.1, "0.10000000000000001"),
            (1.5e15, "1500000000000000"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1e20, "1e+20"),
            (-0.0, "-0"),
            (3.0, "3"),
            (-2.5, "-2.5"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (1125899906842624.25, "1125899906842624.2"),
            (9.9999999999999694e-311, "9.9999999999999694e-311"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ];
        for (v, want) in cases {
            assert_eq!(core::str::from_utf8(&format_g17(*v)).unwrap(), *want, "{v:e}");
        }
    }
}
