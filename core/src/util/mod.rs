//! Leaf helpers every layer may use: numbers and glob patterns with Redis's exact rules,
//! the seeded PRNG, and ASCII case-insensitive comparison.

pub mod crmath;
pub mod hdr;
pub mod memsize;
mod glob;
mod num;
mod rng;

pub use glob::glob_match;
pub use num::*;
pub use rng::Rng;

/// The square root, correctly rounded (IEEE 754 requires it of both paths, so they agree
/// bit for bit). In the component, std's: wasm's `f64.sqrt` instruction; `libm`'s on
/// wasm32 is a software loop (a fifth of a GEOSEARCH's time). Natively, `libm` uses the
/// CPU's instruction itself.
#[inline]
pub fn sqrt(x: f64) -> f64 {
    #[cfg(feature = "component")]
    {
        x.sqrt()
    }
    #[cfg(not(feature = "component"))]
    {
        libm::sqrt(x)
    }
}

/// Runs `f` on the `n` arguments `arg` gives, held on the stack up to 16 (every usual
/// command), so running a command allocates nothing for its argument vector.
pub fn with_args<'a, R>(n: usize, arg: impl Fn(usize) -> &'a [u8], f: impl FnOnce(&[&'a [u8]]) -> R) -> R {
    let mut held: [&[u8]; 16] = [&[]; 16];
    if n <= held.len() {
        for (i, slot) in held.iter_mut().enumerate().take(n) {
            *slot = arg(i);
        }
        f(&held[..n])
    } else {
        f(&(0..n).map(arg).collect::<alloc::vec::Vec<_>>())
    }
}

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
