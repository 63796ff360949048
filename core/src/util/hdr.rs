//! A latency histogram with HdrHistogram's layout as Redis 7.0 configures it (values
//! 1 ns … 1 s, two significant digits), so the percentiles INFO latencystats prints and
//! the buckets LATENCY HISTOGRAM shows are the values Redis would print for the same
//! samples.

use alloc::vec;
use alloc::vec::Vec;

/// Redis's LATENCY_HISTOGRAM_MIN_VALUE / MAX_VALUE, in ns.
const LOWEST: u64 = 1;
const HIGHEST: u64 = 1_000_000_000;
/// Two significant digits: 256 sub-buckets per bucket, the upper half of each in use.
const SUB_BUCKET_HALF_MAGNITUDE: u32 = 7;
const SUB_BUCKET_HALF: usize = 1 << SUB_BUCKET_HALF_MAGNITUDE;
const SUB_BUCKET_MASK: u64 = (1 << (SUB_BUCKET_HALF_MAGNITUDE + 1)) - 1;
/// Buckets until 256·2^(n-1) exceeds HIGHEST.
const BUCKETS: usize = 23;
const COUNTS: usize = (BUCKETS + 1) * SUB_BUCKET_HALF;

pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: vec![0; COUNTS], total: 0 }
    }
}

fn bucket_index(v: u64) -> u32 {
    64 - (v | SUB_BUCKET_MASK).leading_zeros() - (SUB_BUCKET_HALF_MAGNITUDE + 1)
}

fn counts_index(v: u64) -> usize {
    let b = bucket_index(v);
    let sub = (v >> b) as usize;
    ((b as usize + 1) << SUB_BUCKET_HALF_MAGNITUDE) + sub - SUB_BUCKET_HALF
}

fn value_at_index(i: usize) -> u64 {
    let b = (i >> SUB_BUCKET_HALF_MAGNITUDE) as i64 - 1;
    let sub = (i & (SUB_BUCKET_HALF - 1)) + SUB_BUCKET_HALF;
    if b < 0 { (sub - SUB_BUCKET_HALF) as u64 } else { (sub as u64) << b }
}

fn lowest_equivalent(v: u64) -> u64 {
    let b = bucket_index(v);
    (v >> b) << b
}

fn highest_equivalent(v: u64) -> u64 {
    let b = bucket_index(v);
    let adjusted = if (v >> b) > SUB_BUCKET_MASK { b + 1 } else { b };
    lowest_equivalent(v) + (1 << adjusted) - 1
}

impl Histogram {
    /// Records one sample of `ns`, clamped into the range (as Redis clamps).
    pub fn record(&mut self, ns: u64) {
        self.counts[counts_index(ns.clamp(LOWEST, HIGHEST))] += 1;
        self.total += 1;
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// The value at `percentile` (0–100), as hdr_value_at_percentile: the highest value
    /// equivalent to the sample that reaches that share of the count.
    pub fn value_at_percentile(&self, percentile: f64) -> u64 {
        let p = percentile.min(100.0);
        let wanted = (((p / 100.0) * self.total as f64) + 0.5) as u64;
        let wanted = wanted.max(1);
        let mut seen = 0;
        for (i, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= wanted {
                let v = value_at_index(i);
                return if percentile == 0.0 { lowest_equivalent(v) } else { highest_equivalent(v) };
            }
        }
        0
    }

    /// For each of `bounds` (ns, ascending), the samples recorded at or below it (a
    /// bucket counts once its values all are): the cumulative counts of a Prometheus
    /// histogram's `le` buckets. One pass over the counts.
    pub fn counts_at_most(&self, bounds: &[u64]) -> Vec<u64> {
        let mut per = vec![0u64; bounds.len()];
        for (i, &n) in self.counts.iter().enumerate().filter(|(_, n)| **n > 0) {
            let top = highest_equivalent(value_at_index(i));
            if let Some(first) = bounds.iter().position(|&b| top <= b) {
                per[first] += n;
            }
        }
        let mut seen = 0;
        for c in &mut per {
            seen += *c;
            *c = seen;
        }
        per
    }

    /// The cumulative distribution at powers of two from `first` (hdr's logarithmic
    /// iteration, base 2): (the level's highest value, samples up to it), one entry per
    /// level that added samples, up to the level that holds the last one.
    pub fn log_levels(&self, first: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let (mut level, mut i, mut seen, mut previous) = (first, 0, 0, 0);
        while seen < self.total {
            let upper = level - 1;
            while i < COUNTS && value_at_index(i) <= upper {
                seen += self.counts[i];
                i += 1;
            }
            if seen > previous {
                out.push((highest_equivalent(upper), seen));
            }
            previous = seen;
            level <<= 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_print_as_redis_prints_them() {
        // Seen from redis-server 7.0.15: one sample of 46 µs reads p50=46.079, 8 µs 8.031.
        let mut h = Histogram::default();
        h.record(46_000);
        assert_eq!(h.value_at_percentile(50.0), 46_079);
        let mut h = Histogram::default();
        for _ in 0..3 {
            h.record(8_000);
        }
        assert_eq!(h.value_at_percentile(99.9), 8_031);
        // LATENCY HISTOGRAM's buckets: 3 samples up to 8 µs.
        assert_eq!(h.log_levels(1024).iter().map(|&(v, n)| (v / 1000, n)).collect::<Vec<_>>(), [(8, 3)]);
    }

    #[test]
    fn counts_at_most_are_cumulative() {
        let mut h = Histogram::default();
        for ns in [900, 1_000, 40_000, 2_000_000] {
            h.record(ns);
        }
        // 1000 ns shares its bucket with values up to 1003: it is counted from there.
        assert_eq!(h.counts_at_most(&[1_002, 1_003, 50_000, 1_000_000, 1_000_000_000]), [1, 2, 3, 3, 4]);
    }

    #[test]
    fn small_values_and_the_range_ends() {
        let mut h = Histogram::default();
        h.record(0);
        h.record(200);
        h.record(u64::MAX);
        assert_eq!(h.value_at_percentile(0.0), 1);
        assert_eq!(h.value_at_percentile(50.0), 200);
        assert!(h.value_at_percentile(100.0) >= HIGHEST);
        let levels = h.log_levels(1024);
        assert_eq!(levels.first(), Some(&(1023, 2)));
        assert_eq!(levels.last().map(|l| l.1), Some(3));
    }
}
