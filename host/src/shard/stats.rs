//! Latency of a shard's commands as the node sees it: from the moment a batch reaches the
//! shard to the release of its replies (the wait for the log included, the network not),
//! counted per reply in a log-linear histogram over one-second windows. The last complete
//! window is reported with the role facts, so `INFO replication` shows it
//! (`memoria_latency_*`) and the console can draw it. One clock read per batch and per
//! release, never per command.

use std::time::{Duration, Instant};

/// Exact buckets below 8 µs, then four per power of two, up to 2^40 µs.
const BUCKETS: usize = 8 + 38 * 4;
pub const WINDOW: Duration = Duration::from_secs(1);

fn bucket(us: u64) -> usize {
    if us < 8 {
        return us as usize;
    }
    let e = 63 - us.leading_zeros() as u64; // >= 3
    let frac = (us >> (e - 2)) & 3;
    ((8 + (e - 3) * 4 + frac) as usize).min(BUCKETS - 1)
}

/// The largest value a bucket holds (percentiles are reported conservatively).
fn upper(i: usize) -> u64 {
    if i < 8 {
        return i as u64;
    }
    let (e, frac) = ((i as u64 - 8) / 4 + 3, (i as u64 - 8) % 4);
    ((5 + frac) << (e - 2)) - 1
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Replies released in the window.
    pub replies: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

pub struct Latency {
    counts: [u64; BUCKETS],
    total: u64,
    max_us: u64,
    window_start: Instant,
    /// Replies sent without waiting this round (recorded at the end of the round).
    pub immediate: usize,
    last: Summary,
}

impl Latency {
    pub fn new(now: Instant) -> Latency {
        Latency { counts: [0; BUCKETS], total: 0, max_us: 0, window_start: now, immediate: 0, last: Summary::default() }
    }

    pub fn record(&mut self, d: Duration, replies: usize) {
        if replies == 0 {
            return;
        }
        let us = d.as_micros().min(u64::MAX as u128) as u64;
        self.counts[bucket(us)] += replies as u64;
        self.total += replies as u64;
        self.max_us = self.max_us.max(us);
    }

    /// Closes the window if it is over; true when it did (the node's facts are then
    /// reported again: this summary, and INFO's CPU times).
    pub fn roll(&mut self, now: Instant) -> bool {
        if now.duration_since(self.window_start) < WINDOW {
            return false;
        }
        self.last = self.summarize();
        self.counts = [0; BUCKETS];
        self.total = 0;
        self.max_us = 0;
        self.window_start = now;
        true
    }

    fn summarize(&self) -> Summary {
        if self.total == 0 {
            return Summary::default();
        }
        let pct = |p: f64| {
            let rank = ((self.total as f64) * p).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (i, c) in self.counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return upper(i).min(self.max_us);
                }
            }
            self.max_us
        };
        Summary { replies: self.total, p50_us: pct(0.50), p99_us: pct(0.99), max_us: self.max_us }
    }

    #[cfg(test)]
    pub fn last(&self) -> Summary {
        self.last
    }

    /// REC_ROLE lines (INFO replication).
    pub fn lines(&self, t: &mut String) {
        let s = self.last;
        t.push_str(&format!(
            "memoria_latency_window_ms:{}\nmemoria_latency_replies:{}\nmemoria_latency_p50_usec:{}\nmemoria_latency_p99_usec:{}\nmemoria_latency_max_usec:{}\n",
            WINDOW.as_millis(),
            s.replies,
            s.p50_us,
            s.p99_us,
            s.max_us
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_bound_their_values() {
        let mut prev = 0;
        for us in 1..100_000u64 {
            let b = bucket(us);
            assert!(b >= prev, "bucket of {us} went down");
            prev = b;
            assert!(upper(b) >= us, "{us} above its bucket's bound {}", upper(b));
            assert!(upper(b) <= us + us / 4, "bound {} too far above {us}", upper(b));
        }
    }

    #[test]
    fn percentiles_of_a_window() {
        let t0 = Instant::now();
        let mut l = Latency::new(t0);
        l.record(Duration::from_micros(100), 98);
        l.record(Duration::from_micros(5000), 1);
        l.record(Duration::from_micros(20_000), 1);
        l.record(Duration::from_micros(7), 0);
        assert!(!l.roll(t0 + Duration::from_millis(10)), "the window is not over yet");
        assert!(l.roll(t0 + WINDOW));
        let s = l.last();
        assert_eq!(s.replies, 100);
        assert!((100..=125).contains(&s.p50_us), "{s:?}");
        assert!((5000..=6250).contains(&s.p99_us), "{s:?}");
        assert_eq!(s.max_us, 20_000);
        let mut text = String::new();
        l.lines(&mut text);
        assert!(text.contains("memoria_latency_replies:100\n"), "{text}");
        // An idle window reports zeros.
        assert!(l.roll(t0 + 2 * WINDOW));
        assert_eq!(l.last(), Summary::default());
    }
}
