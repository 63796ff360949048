//! The Rust half of the C library the component's Lua links against (the C half is
//! `core/lua/wasm/libc.c`): memory from the engine's allocator (so Lua's heap counts in
//! `used_memory` and against maxmemory), math from libm, and float parsing and printing
//! from core's correctly rounded routines.

use alloc::alloc::{Layout, alloc, dealloc, realloc as rs_realloc};
use core::ffi::{c_char, c_int};
use core::fmt::Write;

/// Every block starts with its size; 16 keeps the alignment C expects of malloc.
const HEADER: usize = 16;

fn layout(size: usize) -> Option<Layout> {
    Layout::from_size_align(size.checked_add(HEADER)?, HEADER).ok()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc(size: usize) -> *mut u8 {
    let Some(l) = layout(size) else { return core::ptr::null_mut() };
    let p = unsafe { alloc(l) };
    if p.is_null() {
        return p;
    }
    unsafe {
        (p as *mut usize).write(size);
        p.add(HEADER)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn calloc(n: usize, size: usize) -> *mut u8 {
    let Some(total) = n.checked_mul(size) else { return core::ptr::null_mut() };
    let p = unsafe { malloc(total) };
    if !p.is_null() {
        unsafe { core::ptr::write_bytes(p, 0, total) };
    }
    p
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn free(p: *mut u8) {
    if p.is_null() {
        return;
    }
    unsafe {
        let base = p.sub(HEADER);
        let size = (base as *const usize).read();
        dealloc(base, layout(size).unwrap());
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn realloc(p: *mut u8, size: usize) -> *mut u8 {
    if p.is_null() {
        return unsafe { malloc(size) };
    }
    let Some(new) = layout(size) else { return core::ptr::null_mut() };
    unsafe {
        let base = p.sub(HEADER);
        let old = (base as *const usize).read();
        let q = rs_realloc(base, layout(old).unwrap(), new.size());
        if q.is_null() {
            return q;
        }
        (q as *mut usize).write(size);
        q.add(HEADER)
    }
}

// ---- math.h ----
macro_rules! math1 {
    ($($name:ident),*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(x: f64) -> f64 { libm::$name(x) }
    )*};
}
math1!(floor, ceil, fabs, sqrt, sin, cos, tan, asin, acos, atan, exp, log, log10, sinh, cosh, tanh);

#[unsafe(no_mangle)]
pub extern "C" fn fmod(x: f64, y: f64) -> f64 {
    libm::fmod(x, y)
}
#[unsafe(no_mangle)]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}
#[unsafe(no_mangle)]
pub extern "C" fn atan2(y: f64, x: f64) -> f64 {
    libm::atan2(y, x)
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn frexp(x: f64, e: *mut c_int) -> f64 {
    let (m, exp) = libm::frexp(x);
    unsafe { *e = exp };
    m
}
#[unsafe(no_mangle)]
pub extern "C" fn ldexp(x: f64, e: c_int) -> f64 {
    libm::ldexp(x, e)
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn modf(x: f64, ip: *mut f64) -> f64 {
    let (f, i) = libm::modf(x);
    unsafe { *ip = i };
    f
}

// ---- strtod: the C syntax (decimal, inf, nan), the value from core's parser ----
#[unsafe(no_mangle)]
pub unsafe extern "C" fn strtod(s: *const c_char, end: *mut *mut c_char) -> f64 {
    let bytes = unsafe { core::ffi::CStr::from_ptr(s) }.to_bytes();
    let (v, used) = parse_c_double(bytes);
    if !end.is_null() {
        unsafe { *end = s.add(used) as *mut c_char };
    }
    v
}

/// The longest prefix of `b` strtod accepts (after spaces) and its value; (0, 0) if none.
fn parse_c_double(b: &[u8]) -> (f64, usize) {
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
    let digits_from = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
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

// ---- the digits of %e, %f and %g ----

/// A fixed-size writer over the C buffer.
struct Buf<'a> {
    out: &'a mut [u8],
    len: usize,
}

impl Write for Buf<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for &b in s.as_bytes() {
            if self.len < self.out.len() {
                self.out[self.len] = b;
            }
            self.len += 1;
        }
        Ok(())
    }
}

/// `d.ddde±XX` as C prints it, from Rust's `{:.*e}` (`d.ddde-X`).
fn c_exp(s: &str, upper: bool) -> alloc::string::String {
    let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    let sign = if e < 0 { '-' } else { '+' };
    let mark = if upper { 'E' } else { 'e' };
    alloc::format!("{mant}{mark}{sign}{:02}", e.abs())
}

/// The body of one float conversion (no sign: `v` is not negative) into `out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memoria_fmt_double(out: *mut c_char, cap: usize, v: f64, conv: c_char, prec: c_int, alt: c_int) -> usize {
    let out = unsafe { core::slice::from_raw_parts_mut(out.cast::<u8>(), cap) };
    let conv = conv as u8;
    let upper = conv.is_ascii_uppercase();
    let prec = prec.max(0) as usize;
    let text = if v.is_nan() {
        alloc::string::String::from("nan")
    } else if v.is_infinite() {
        alloc::string::String::from("inf")
    } else {
        match conv.to_ascii_lowercase() {
            b'f' => alloc::format!("{v:.prec$}"),
            b'e' => c_exp(&alloc::format!("{v:.prec$e}"), upper),
            _ => {
                // %g: precision P (0 counts as 1); exponent X of the %e form decides.
                let p = prec.max(1);
                let e_form = alloc::format!("{:.*e}", p - 1, v);
                let x: i32 = e_form.split_once('e').map_or(0, |(_, e)| e.parse().unwrap_or(0));
                let mut s =
                    if (x as i64) < p as i64 && x >= -4 { alloc::format!("{:.*}", (p as i32 - 1 - x).max(0) as usize, v) } else { c_exp(&e_form, upper) };
                if alt == 0 {
                    // Trailing zeros of the fraction go, and a bare '.'.
                    let (num, exp) = match s.find(['e', 'E']) {
                        Some(i) => (s[..i].into(), s[i..].into()),
                        None => (s.clone(), alloc::string::String::new()),
                    };
                    let num: alloc::string::String = if num.contains('.') { num.trim_end_matches('0').trim_end_matches('.').into() } else { num };
                    s = num + &exp;
                }
                s
            }
        }
    };
    let text = if upper { text.to_ascii_uppercase() } else { text };
    let mut b = Buf { out, len: 0 };
    let _ = b.write_str(&text);
    b.len.min(cap)
}
