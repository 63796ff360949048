//! Numbers with Redis's exact rules: parsing (`string2ll`, `strtold`-like floats) and
//! printing (integers, `%.17g`, the human float format of INCRBYFLOAT).

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

/// A count as a usize, saturating past what the target's usize holds (the wasm32 engine's
/// is 32 bits, where `as usize` would read 4294967297 as 1); negative: 0.
pub fn usize_sat(v: i64) -> usize {
    usize::try_from(v.max(0)).unwrap_or(usize::MAX)
}

/// C's `atoi` as glibc (and x86-64 redis-server) has it, `(int) strtol(s, NULL, 10)`:
/// leading white space, an optional sign, then the digits up to the first other byte
/// (none: 0); past the range of the 64-bit long it saturates, then the long is cut to its
/// low 32 bits. So "4294967297" reads as 1 and "9223372036854775807" as -1. Computed in
/// u64/i64 whatever the target's width.
pub fn c_atoi(s: &[u8]) -> i32 {
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    // The magnitude, stopped just past what a long can hold (2^63 is LONG_MIN's).
    let limit = 1u64 << 63;
    let mut v: u64 = 0;
    while let Some(&c) = s.get(i) {
        if !c.is_ascii_digit() {
            break;
        }
        v = v.saturating_mul(10).saturating_add(u64::from(c - b'0')).min(limit + 1);
        i += 1;
    }
    let long: i64 = if neg {
        if v >= limit { i64::MIN } else { -(v as i64) }
    } else if v >= limit {
        i64::MAX
    } else {
        v as i64
    };
    // The C cast to int: the low 32 bits.
    long as i32
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
    out.extend_from_slice(IntText::new(v).as_bytes());
}

/// An integer's decimal form, on the stack.
pub struct IntText {
    buf: [u8; 20],
    at: usize,
}

impl IntText {
    pub fn new(v: i64) -> Self {
        let mut t = IntText::unsigned(v.unsigned_abs());
        if v < 0 {
            // i64::MIN has 19 digits plus the sign: 20 bytes fit.
            t.at -= 1;
            t.buf[t.at] = b'-';
        }
        t
    }

    pub fn unsigned(mut u: u64) -> Self {
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        // 64-bit division is slow on wasm32: it takes nine digits at a time until the
        // rest fits 32 bits (a millisecond timestamp: one 64-bit step).
        while u > u32::MAX as u64 {
            let mut nine = (u % 1_000_000_000) as u32;
            u /= 1_000_000_000;
            for _ in 0..9 {
                i -= 1;
                buf[i] = b'0' + (nine % 10) as u8;
                nine /= 10;
            }
        }
        let mut w = u as u32;
        loop {
            i -= 1;
            buf[i] = b'0' + (w % 10) as u8;
            w /= 10;
            if w == 0 {
                break;
            }
        }
        IntText { buf, at: i }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[self.at..]
    }
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

/// Parses a stored or given float like Redis's `string2ld` (overflow to ±inf is refused
/// unless "inf" was written out).
pub fn parse_float_strict(s: &[u8]) -> Option<f64> {
    let v = parse_f64(s)?;
    if v.is_infinite() && !s.iter().any(|c| c.eq_ignore_ascii_case(&b'i')) {
        return None;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_text_prints_as_format_does() {
        let mut vals = alloc::vec![
            0,
            1,
            -1,
            9,
            10,
            999_999_999,
            1_000_000_000,
            4_294_967_295,
            4_294_967_296,
            -4_294_967_296,
            1_700_000_000_123,
            1_000_000_000_000_000_000,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1
        ];
        let mut rng = crate::util::Rng::new(7);
        for _ in 0..10_000 {
            let x = rng.next_u64();
            vals.push((x as i64) >> (x % 64));
        }
        for v in vals {
            assert_eq!(IntText::new(v).as_bytes(), alloc::format!("{v}").as_bytes(), "{v}");
            let u = v as u64;
            assert_eq!(IntText::unsigned(u).as_bytes(), alloc::format!("{u}").as_bytes(), "{u}");
        }
    }

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
    fn c_atoi_as_glibc() {
        // Values from glibc's atoi on x86-64.
        let cases: &[(&[u8], i32)] = &[
            (b"1", 1),
            (b"4294967297", 1),
            (b"9223372036854775807", -1),
            (b"18446744073709551617", -1),
            (b"-4294967295", 1),
            (b" \t\n\x0b\x0c\r+7x", 7),
            (b"-9223372036854775808", 0),
            (b"-9223372036854775809", 0),
            (b"2147483648", i32::MIN),
            (b"4294967296", 0),
            (b"", 0),
            (b"-", 0),
            (b"+", 0),
            (b"abc", 0),
            (b" -12 3", -12),
            (b"00012", 12),
            (b"99999999999999999999999999", -1),
        ];
        for &(s, want) in cases {
            assert_eq!(c_atoi(s), want, "{:?}", core::str::from_utf8(s));
        }
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
            // 2^50 + 0.25, exact in f64: a tie that %.17g rounds to even.
            (1125899906842624.0 + 0.25, "1125899906842624.2"),
            (1e-310, "9.9999999999999694e-311"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ];
        for (v, want) in cases {
            assert_eq!(core::str::from_utf8(&format_g17(*v)).unwrap(), *want, "{v:e}");
        }
    }
}
