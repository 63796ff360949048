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
    /// Every complete window added up (the Prometheus histogram), and the sum of the
    /// replies' latencies so far.
    since_start: Box<[u64; BUCKETS]>,
    sum_us: u64,
}

impl Latency {
    pub fn new(now: Instant) -> Latency {
        Latency {
            counts: [0; BUCKETS],
            total: 0,
            max_us: 0,
            window_start: now,
            immediate: 0,
            last: Summary::default(),
            since_start: Box::new([0; BUCKETS]),
            sum_us: 0,
        }
    }

    pub fn record(&mut self, d: Duration, replies: usize) {
        if replies == 0 {
            return;
        }
        let us = d.as_micros().min(u64::MAX as u128) as u64;
        self.counts[bucket(us)] += replies as u64;
        self.total += replies as u64;
        self.max_us = self.max_us.max(us);
        self.sum_us = self.sum_us.saturating_add(us.saturating_mul(replies as u64));
    }

    /// Closes the window if it is over; true when it did (the node's facts are then
    /// reported again: this summary, and INFO's CPU times).
    pub fn roll(&mut self, now: Instant) -> bool {
        if now.duration_since(self.window_start) < WINDOW {
            return false;
        }
        self.last = self.summarize();
        for (all, n) in self.since_start.iter_mut().zip(&self.counts) {
            *all += n;
        }
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

/// What the host tells the engine's LATENCY monitor (the engine measures only its own
/// commands): the worst wait for the log per window, and how long a rebuild or a snapshot
/// load of the engine took. Each goes out once, on the next role record, as
/// `latency.<event>:<ms>`; the engine keeps those at or above `latency-monitor-threshold`.
#[derive(Default)]
pub struct HostEvents {
    /// The last data append's round trip (INFO memoria).
    pub last_append_us: u64,
    worst_append_ms: u64,
    /// A new engine is being made (event name, since when): reported once it is whole.
    pub loading: Option<(&'static str, Instant)>,
    done: Vec<(&'static str, u64)>,
}

impl HostEvents {
    pub fn append_took(&mut self, d: Duration) {
        self.last_append_us = d.as_micros().min(u64::MAX as u128) as u64;
        self.worst_append_ms = self.worst_append_ms.max(d.as_millis().min(u64::MAX as u128) as u64);
    }

    /// An event that took `ms` (reported with the next role record).
    pub fn happened(&mut self, event: &'static str, ms: u64) {
        self.done.push((event, ms));
    }

    /// The engine is whole again: a `loading` under way is an event.
    pub fn loaded(&mut self) {
        if let Some((event, since)) = self.loading.take() {
            self.done.push((event, since.elapsed().as_millis().min(u64::MAX as u128) as u64));
        }
    }

    /// The events since the last report, as role record lines.
    pub fn take_lines(&mut self, t: &mut String) {
        if self.worst_append_ms > 0 {
            t.push_str(&format!("latency.log-append:{}\n", std::mem::take(&mut self.worst_append_ms)));
        }
        for (event, ms) in self.done.drain(..) {
            t.push_str(&format!("latency.{event}:{ms}\n"));
        }
    }
}

/// The `le` bounds of `memoria_reply_latency_seconds`, in µs.
const REPLY_BOUNDS_US: [u64; 16] =
    [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 10_000_000];

impl Latency {
    /// The replies of complete windows as a Prometheus histogram (a bucket is counted
    /// under the first bound at or above its largest value: conservative, as INFO's).
    pub fn prometheus(&self, labels: &str, out: &mut String) {
        use memoria_core::server::prometheus::family;
        let mut f = family(
            out,
            labels,
            "memoria_reply_latency_seconds",
            "histogram",
            "From a batch reaching the shard to the release of its replies (the wait for the log included, the network not).",
        );
        let mut cumulative = [0u64; REPLY_BOUNDS_US.len()];
        let mut total = 0;
        for (i, &n) in self.since_start.iter().enumerate().filter(|(_, n)| **n > 0) {
            total += n;
            let first = REPLY_BOUNDS_US.iter().position(|&b| upper(i) <= b).unwrap_or(REPLY_BOUNDS_US.len());
            for c in &mut cumulative[first..] {
                *c += n;
            }
        }
        for (b, n) in REPLY_BOUNDS_US.iter().zip(cumulative) {
            f.sample("_bucket", &[("le", &format!("{}", *b as f64 / 1e6))], n);
        }
        f.sample("_bucket", &[("le", "+Inf")], total);
        f.sample("_sum", &[], self.sum_us as f64 / 1e6);
        f.sample("_count", &[], total);
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
        // The windows add up in the Prometheus histogram.
        let mut text = String::new();
        l.prometheus("shard=\"0\"", &mut text);
        assert!(text.contains("memoria_reply_latency_seconds_bucket{shard=\"0\",le=\"0.00005\"} 0\n"), "{text}");
        assert!(text.contains("memoria_reply_latency_seconds_bucket{shard=\"0\",le=\"0.00025\"} 98\n"), "{text}");
        assert!(text.contains("memoria_reply_latency_seconds_bucket{shard=\"0\",le=\"0.01\"} 99\n"), "{text}");
        assert!(text.contains("memoria_reply_latency_seconds_bucket{shard=\"0\",le=\"+Inf\"} 100\n"), "{text}");
        assert!(text.contains("memoria_reply_latency_seconds_count{shard=\"0\"} 100\n"), "{text}");
        assert!(text.contains("memoria_reply_latency_seconds_sum{shard=\"0\"} 0.0348\n"), "{text}");
    }
}
