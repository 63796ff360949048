//! What values cost in the engine's heap, for MEMORY USAGE and MEMORY STATS, in the
//! bytes `used_memory` counts: the component's counting allocator adds up the sizes
//! asked for (as `maxmemory` is enforced on them), so an allocation counts as its size.
//! Aggregates are estimated from a sample of their elements, as Redis's objectComputeSize
//! does (so the command's cost is bounded by SAMPLES).

/// What an allocation of `n` bytes adds to `used_memory`.
pub fn alloc(n: usize) -> u64 {
    n as u64
}

/// `len` elements estimated from the first `samples` of `sizes` (all of them when
/// `samples` ≥ `len`): their mean times `len`.
pub fn sampled(len: usize, samples: usize, sizes: impl Iterator<Item = u64>) -> u64 {
    let (sum, seen) = sizes.take(samples.min(len)).fold((0u64, 0u64), |(s, n), x| (s.saturating_add(x), n + 1));
    if seen == 0 { 0 } else { ((sum as u128 * len as u128) / seen as u128).min(u64::MAX as u128) as u64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_stands_for_the_whole() {
        assert_eq!(sampled(10, 2, [4, 6, 1000].into_iter()), 50);
        assert_eq!(sampled(3, usize::MAX, [4, 6, 8].into_iter()), 18);
        assert_eq!(sampled(0, 5, core::iter::empty()), 0);
    }
}
