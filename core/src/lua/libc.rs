//! The Rust half of the C library the component's Lua links against (the C half is
//! `core/lua/wasm/libc.c`): memory from the engine's allocator (so Lua's heap counts in
//! `used_memory` and against maxmemory), math from libm, and float parsing and printing
//! from core's correctly rounded routines.

use alloc::alloc::{Layout, alloc, dealloc, realloc as rs_realloc};
use core::ffi::{c_char, c_int};

/// Every block starts with its size. 8 is the largest alignment our C needs (double,
/// long long, pointers: Lua's LUAI_USER_ALIGNMENT_T); 16 would make every block a
/// dlmalloc memalign, a slower path than its malloc.
const HEADER: usize = 8;

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

macro_rules! math2 {
    ($($name:ident),*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(x: f64, y: f64) -> f64 { libm::$name(x, y) }
    )*};
}
math2!(fmod, pow, atan2);

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
    let (v, used) = super::cnum::parse_c_double(bytes);
    if !end.is_null() {
        unsafe { *end = s.add(used) as *mut c_char };
    }
    v
}

// ---- the digits of %e, %f and %g ----

/// The body of one float conversion (no sign: `v` is not negative) into `out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memoria_fmt_double(out: *mut c_char, cap: usize, v: f64, conv: c_char, prec: c_int, alt: c_int) -> usize {
    let out = unsafe { core::slice::from_raw_parts_mut(out.cast::<u8>(), cap) };
    let text = super::cnum::format_double(v, conv as u8, prec.max(0) as usize, alt != 0);
    let n = text.len().min(cap);
    out[..n].copy_from_slice(&text.as_bytes()[..n]);
    n
}
