//! Leaf helpers every layer may use: numbers and glob patterns with Redis's exact rules,
//! the seeded PRNG, and ASCII case-insensitive comparison.

pub mod crmath;
mod glob;
mod num;
mod rng;

pub use glob::glob_match;
pub use num::*;
pub use rng::Rng;

/// ASCII case-insensitive equality for command and option names.
#[inline]
pub fn eq_ic(a: &[u8], b: &[u8]) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// Like C's `strcasecmp` on an argument: the comparison stops at an embedded NUL, as in
/// Redis's option parsing that reads arguments as C strings (`STREAMS\0x` is `STREAMS`).
pub fn c_eq_ic(a: &[u8], keyword: &[u8]) -> bool {
    let a = match a.iter().position(|&b| b == 0) {
        Some(p) => &a[..p],
        None => a,
    };
    eq_ic(a, keyword)
}
