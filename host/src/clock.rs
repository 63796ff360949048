//! The host's clock and randomness, handed to the engine with every call (the engine has
//! neither: the same inputs give the same replies and effects).

use std::time::{SystemTime, UNIX_EPOCH};

/// Wall-clock time in microseconds since the Unix epoch (the engine's `now`).
pub fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

/// A seed for the engine's per-batch PRNG and a new engine's hash tables: the clock mixed
/// with a stack address (ASLR), so two processes started together still differ.
pub fn seed() -> u64 {
    let t = now_us() as u64;
    let addr = &t as *const u64 as u64;
    t.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ addr.rotate_left(17)
}
