//! Numbers as C prints and parses them, for the C library of the component's Lua
//! (`libc.rs`): strtod's syntax and printf's %e/%f/%g, from Rust's correctly rounded
//! parsing and formatting. Compiled on every target so native tests check it against the
//! system's C library.

use alloc::format;
use alloc::string::String;

/// The longest prefix of `b` strtod accepts (after spaces) and its value; (0, 0) if none.
pub(crate) fn parse_c_double(b: &[u8]) -> (f64, usize) {
    let mut i = 0;
    while i < b.len() && (b[i] == b' ' || (b'\t'..=b'\r').contains(&b[i])) {
        i += 1;
    }
    let start = i;
    let neg = i < b.len() && b[i] == b'-';
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let rest = &b[i..];
    let word = |w: &[u8]| rest.len() >= w.len() && rest[..w.len()].eq_ignore_ascii_case(w);
    if word(b"infinity") || word(b"inf") {
        let n = if word(b"infinity") { 8 } else { 3 };
        return (if neg { f64::NEG_INFINITY } else { f64::INFINITY }, i + n);
    }
    if word(b"nan") {
        return (if neg { -f64::NAN } else { f64::NAN }, i + 3);
    }
    if rest.len() > 2
        && rest[0] == b'0'
        && (rest[1] | 0x20) == b'x'
        && (rest[2].is_ascii_hexdigit() || (rest[2] == b'.' && rest.get(3).is_some_and(u8::is_ascii_hexdigit)))
    {
        let (v, used) = parse_hex(&rest[2..]);
        return (if neg { -v } else { v }, i + 2 + used);
    }
    let digits_from = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    // A plain integer of up to 15 digits is exact in a double: no need for the general
    // parser (tonumber(ARGV[1]) in a script is the usual case).
    if (1..=15).contains(&(i - digits_from)) && !b.get(i).is_some_and(|c| matches!(c, b'.' | b'e' | b'E')) {
        let v = b[digits_from..i].iter().fold(0u64, |v, d| v * 10 + (d - b'0') as u64) as f64;
        return (if neg { -v } else { v }, i);
    }
    let mut any = i > digits_from;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let f = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        any |= i > f;
    }
    if !any {
        return (0.0, 0);
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let ed = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > ed {
            i = j;
        }
    }
    let text = core::str::from_utf8(&b[start..i]).unwrap_or("0");
    // Rust's parser rejects a trailing '.' ("1.") and a bare '.5' is fine.
    let v = text.trim_end_matches('.').parse::<f64>().or_else(|_| alloc::format!("{text}0").parse::<f64>()).unwrap_or(0.0);
    (v, i)
}

/// C99's hexadecimal floating constant after its "0x": digits, an optional fraction and
/// an optional binary exponent (`p[+-]d`).
fn parse_hex(b: &[u8]) -> (f64, usize) {
    let mut i = 0;
    let mut v = 0f64;
    let mut scale = 0i32;
    while i < b.len() && b[i].is_ascii_hexdigit() {
        v = v * 16.0 + (b[i] as char).to_digit(16).unwrap_or(0) as f64;
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_hexdigit() {
            v = v * 16.0 + (b[i] as char).to_digit(16).unwrap_or(0) as f64;
            scale -= 4;
            i += 1;
        }
    }
    if i < b.len() && (b[i] | 0x20) == b'p' {
        let mut j = i + 1;
        let neg = j < b.len() && b[j] == b'-';
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let start = j;
        let mut e = 0i32;
        while j < b.len() && b[j].is_ascii_digit() {
            e = e.saturating_mul(10).saturating_add((b[j] - b'0') as i32);
            j += 1;
        }
        if j > start {
            scale = scale.saturating_add(if neg { -e } else { e });
            i = j;
        }
    }
    (libm::ldexp(v, scale), i)
}

/// `d.ddde±XX` as C prints it, from Rust's `{:.*e}` (`d.ddde-X`).
fn c_exp(s: &str, upper: bool) -> alloc::string::String {
    let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    let sign = if e < 0 { '-' } else { '+' };
    let mark = if upper { 'E' } else { 'e' };
    alloc::format!("{mant}{mark}{sign}{:02}", e.abs())
}

/// The body of one %e/%f/%g conversion (upper case for E/G) of a value that is not
/// negative: no sign, no padding.
pub(crate) fn format_double(v: f64, conv: u8, prec: usize, alt: bool) -> String {
    let upper = conv.is_ascii_uppercase();
    let text = if v.is_nan() {
        String::from("nan")
    } else if v.is_infinite() {
        String::from("inf")
    } else {
        match conv.to_ascii_lowercase() {
            b'f' => format!("{v:.prec$}"),
            b'e' => c_exp(&format!("{v:.prec$e}"), upper),
            _ => {
                // %g: precision P (0 counts as 1); exponent X of the %e form decides.
                let p = prec.max(1);
                let e_form = format!("{:.*e}", p - 1, v);
                let x: i32 = e_form.split_once('e').map_or(0, |(_, e)| e.parse().unwrap_or(0));
                let mut s = if (x as i64) < p as i64 && x >= -4 { format!("{:.*}", (p as i32 - 1 - x).max(0) as usize, v) } else { c_exp(&e_form, upper) };
                if !alt {
                    // Trailing zeros of the fraction go, and a bare '.'.
                    let (num, exp) = match s.find(['e', 'E']) {
                        Some(i) => (String::from(&s[..i]), String::from(&s[i..])),
                        None => (s.clone(), String::new()),
                    };
                    let num = if num.contains('.') { String::from(num.trim_end_matches('0').trim_end_matches('.')) } else { num };
                    s = num + &exp;
                }
                s
            }
        }
    };
    // The # flag: a decimal point even without digits after it.
    let text = if alt && v.is_finite() && !text.contains('.') {
        match text.find(['e', 'E']) {
            Some(i) => format!("{}.{}", &text[..i], &text[i..]),
            None => text + ".",
        }
    } else {
        text
    };
    if upper { text.to_ascii_uppercase() } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" {
        fn snprintf(buf: *mut u8, n: usize, fmt: *const u8, ...) -> i32;
        fn strtod(s: *const u8, end: *mut *const u8) -> f64;
    }

    fn c_format(fmt: &str, v: f64) -> String {
        let mut buf = [0u8; 512];
        let f = format!("{fmt}\0");
        let n = unsafe { snprintf(buf.as_mut_ptr(), buf.len(), f.as_ptr(), v) };
        String::from_utf8(buf[..n as usize].to_vec()).unwrap()
    }

    #[test]
    fn formats_as_the_c_library_does() {
        let values = [0.0, 1.0, 0.1, 1.0 / 3.0, 2.5, 1e20, 1e-5, 123456789.0, 9007199254740993.0, 1e300, 5e-324, 0.5, 100000.0, 1e6, 1234.5, 0.000123456];
        for v in values {
            for (conv, c) in [(b'f', "f"), (b'e', "e"), (b'g', "g"), (b'G', "G"), (b'E', "E")] {
                for prec in [0usize, 1, 3, 6, 14, 17] {
                    for alt in [false, true] {
                        let want = c_format(&format!("%{}.{prec}{c}", if alt { "#" } else { "" }), v);
                        assert_eq!(format_double(v, conv, prec, alt), want, "%{}.{prec}{c} of {v:e}", if alt { "#" } else { "" });
                    }
                }
            }
        }
    }

    #[test]
    fn parses_as_the_c_library_does() {
        for s in [
            "1",
            " 12 ",
            "-0.5e3x",
            "1.",
            ".5",
            "1e",
            "1e+",
            "0x10",
            "0x1p4",
            "0X1.8p1",
            "-0x.8",
            "inf",
            "-Infinity",
            "nan",
            "x",
            "",
            "+7",
            "1e400",
            "0x",
            "0xg",
            // The integer fast path and its edges.
            "-0",
            "007",
            "999999999999999",
            "9999999999999999",
            "-123456789012345x",
            "12e2",
            "12.",
            "1000000",
        ] {
            let z = format!("{s}\0");
            let mut end: *const u8 = core::ptr::null();
            let want = unsafe { strtod(z.as_ptr(), &mut end) };
            let used = unsafe { end.offset_from(z.as_ptr()) } as usize;
            let (got, got_used) = parse_c_double(s.as_bytes());
            assert_eq!(got_used, used, "length of {s:?}");
            assert!(got == want || (got.is_nan() && want.is_nan()), "{s:?}: {got} vs {want}");
        }
    }
}
