//! The latency monitor (Redis's latency.c): per event, the
//! samples of at least `latency-monitor-threshold` ms, one per second (the worst of that
//! second), the last 160 kept, and the worst ever seen. Events: `command` and
//! `fast-command`, the engine's run of a command. LATENCY DOCTOR's report and GRAPH's
//! sparkline are drawn here as Redis draws them.

use alloc::collections::{BTreeMap, VecDeque};

/// Samples kept per event (Redis's LATENCY_TS_LEN).
const KEPT: usize = 160;

#[derive(Default)]
pub struct Series {
    /// (unix seconds, ms), oldest first.
    pub samples: VecDeque<(i64, u64)>,
    /// The worst latency ever recorded for the event.
    pub max: u64,
}

#[derive(Default)]
pub struct LatencyMonitor {
    pub events: BTreeMap<&'static str, Series>,
}

impl LatencyMonitor {
    /// Records `ms` for `event` at `now_s` if the threshold (ms, 0: off) is reached.
    pub fn add_if_needed(&mut self, event: &'static str, ms: u64, now_s: i64, threshold: u64) {
        if threshold == 0 || ms < threshold {
            return;
        }
        let s = self.events.entry(event).or_default();
        s.max = s.max.max(ms);
        match s.samples.back_mut() {
            Some(last) if last.0 == now_s => last.1 = last.1.max(ms),
            _ => {
                if s.samples.len() == KEPT {
                    s.samples.pop_front();
                }
                s.samples.push_back((now_s, ms));
            }
        }
    }

    /// Forgets the named events (all with None); returns how many there were.
    pub fn reset(&mut self, events: Option<&[&[u8]]>) -> usize {
        match events {
            None => {
                let n = self.events.len();
                self.events.clear();
                n
            }
            Some(names) => {
                let before = self.events.len();
                self.events.retain(|name, _| !names.iter().any(|n| n.eq_ignore_ascii_case(name.as_bytes())));
                before - self.events.len()
            }
        }
    }
}

/// The events the host reports (`latency.<event>:<ms>` on its role record): the wait for
/// the log, and the making of a new engine (after a trap or a refused append; a replica's
/// reload from a snapshot).
pub const HOST_EVENTS: [&str; 3] = ["log-append", "engine-rebuild", "snapshot-load"];

/// What LATENCY DOCTOR reads besides the samples.
pub struct DoctorInputs {
    pub now_s: i64,
    /// `latency-monitor-threshold` in ms.
    pub threshold: u64,
    /// `slowlog-log-slower-than` (µs, negative: off) and `slowlog-max-len`.
    pub slowlog_slower_than: i64,
    pub slowlog_max_len: usize,
    pub hz: u64,
}

/// Redis's advices, in the order its report gives them (those about fork, AOF and disks
/// have no event here that would raise them).
const ADVICE_SLOWLOG_INSPECT: &str = "- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n";
const ADVICE_SCHEDULER: &str = "- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for Redis if you are running other software in the same system.\n  3) Check if you have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n";
const ADVICE_HZ: &str =
    "- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n";
const ADVICE_LARGE_OBJECTS: &str = "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n";
const ADVICE_MASS_EVICTION: &str = "- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure forcing the server to block trying to evict keys. \n";

impl Series {
    /// (samples, average, mean deviation, seconds since the oldest (at least 1)) in ms,
    /// with Redis's integer arithmetic.
    fn analyze(&self, now_s: i64) -> (u64, u64, u64, i64) {
        let n = self.samples.len() as u64;
        if n == 0 {
            return (0, 0, 0, 0);
        }
        let avg = self.samples.iter().map(|s| s.1).sum::<u64>() / n;
        let oldest = self.samples.iter().map(|s| s.0).min().unwrap_or(now_s);
        let period = (now_s - oldest).max(1);
        let mad = self.samples.iter().map(|s| s.1.abs_diff(avg)).sum::<u64>() / n;
        (n, avg, mad, period)
    }
}

impl LatencyMonitor {
    /// LATENCY DOCTOR's report, as Redis 7.0 writes it.
    pub fn doctor(&self, x: &DoctorInputs) -> alloc::string::String {
        use alloc::format;
        use alloc::string::String;
        if self.events.is_empty() && x.threshold == 0 {
            return String::from(
                "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n",
            );
        }
        let mut report = String::new();
        let (mut slowlog_enabled, mut slowlog_tuning, mut inspect, mut scheduler, mut hz, mut large, mut eviction) =
            (false, false, false, false, false, false, false);
        let mut advices = 0;
        for (i, (event, s)) in self.events.iter().enumerate() {
            if i == 0 {
                report.push_str("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n");
            }
            let (n, avg, mad, period) = s.analyze(x.now_s);
            report.push_str(&format!(
                "{}. {event}: {n} latency spikes (average {avg}ms, mean deviation {mad}ms, period {:.2} sec). Worst all time event {}ms.",
                i + 1,
                period as f64 / n as f64,
                s.max
            ));
            match *event {
                "command" => {
                    if x.slowlog_slower_than < 0 || x.slowlog_max_len == 0 {
                        slowlog_enabled = true;
                        advices += 1;
                    } else if (x.slowlog_slower_than / 1000) as u64 > x.threshold {
                        slowlog_tuning = true;
                        advices += 1;
                    }
                    (inspect, large) = (true, true);
                    advices += 2;
                }
                "fast-command" => {
                    scheduler = true;
                    advices += 1;
                }
                "expire-cycle" => {
                    (hz, large) = (true, true);
                    advices += 2;
                }
                "eviction-del" => {
                    large = true;
                    advices += 1;
                }
                "eviction-cycle" => {
                    eviction = true;
                    advices += 1;
                }
                _ => {}
            }
            report.push('\n');
        }
        if self.events.is_empty() && advices == 0 {
            report.push_str("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n");
        } else if advices == 0 {
            report.push_str("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n");
        } else {
            report.push_str("\nI have a few advices for you:\n\n");
            let threshold_us = x.threshold * 1000;
            if slowlog_enabled {
                report.push_str(&format!("- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than {threshold_us}'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n"));
            }
            if slowlog_tuning {
                report.push_str(&format!("- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than {threshold_us}'.\n"));
            }
            for (on, text) in [
                (inspect, ADVICE_SLOWLOG_INSPECT),
                (scheduler, ADVICE_SCHEDULER),
                (hz && x.hz < 100, ADVICE_HZ),
                (large, ADVICE_LARGE_OBJECTS),
                (eviction, ADVICE_MASS_EVICTION),
            ] {
                if on {
                    report.push_str(text);
                }
            }
        }
        report
    }

    /// LATENCY GRAPH's ASCII sparkline of `event` (None: no samples), as Redis draws it:
    /// 80 columns, 4 rows, filled, each sample labelled with its age.
    pub fn graph(&self, event: &str, now_s: i64) -> Option<alloc::string::String> {
        use alloc::format;
        use alloc::string::String;
        use alloc::vec::Vec;
        let (&name, s) = self.events.iter().find(|(n, _)| **n == event)?;
        let values: Vec<u64> = s.samples.iter().map(|x| x.1).collect();
        let (min, max) = (values.iter().copied().min().unwrap_or(0), values.iter().copied().max().unwrap_or(0));
        let labels: Vec<String> = s
            .samples
            .iter()
            .map(|&(t, _)| {
                let e = now_s - t;
                match e {
                    ..60 => format!("{e}s"),
                    60..3600 => format!("{}m", e / 60),
                    3600..86400 => format!("{}h", e / 3600),
                    _ => format!("{}d", e / 86400),
                }
            })
            .collect();
        let mut out = format!("{name} - high {max} ms, low {min} ms (all time high {} ms)\n", s.max);
        out.push_str(&"-".repeat(80));
        out.push('\n');
        for (i, start) in (0..values.len()).step_by(80).enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let end = (start + 80).min(values.len());
            sparkline(&mut out, &values[start..end], &labels[start..end], min, max);
        }
        Some(out)
    }
}

/// Redis's sparkline renderer with its fill charset: 4 rows of `_o#` steps (`|` below the
/// top), a blank row, then the labels written downwards.
fn sparkline(out: &mut alloc::string::String, values: &[u64], labels: &[alloc::string::String], min: u64, max: u64) {
    const CHARS: [char; 3] = ['_', 'o', '#'];
    const ROWS: i64 = 4;
    let steps = CHARS.len() as i64 * ROWS;
    let relmax = if max == min { 1.0 } else { (max - min) as f64 };
    let step_of = |v: u64| {
        let relval = (v - min) as f64;
        // C's `(int)(relval*steps)/relmax`, truncated again into an int.
        (((relval * steps as f64) as i64) as f64 / relmax) as i64
    };
    for row in 0.. {
        let mut line = alloc::vec![' '; values.len()];
        let mut more = false;
        if row < ROWS {
            more = true;
            for (j, &v) in values.iter().enumerate() {
                let idx = step_of(v).clamp(0, steps - 1) - (ROWS - row - 1) * CHARS.len() as i64;
                if (0..CHARS.len() as i64).contains(&idx) {
                    line[j] = CHARS[idx as usize];
                } else if idx >= CHARS.len() as i64 {
                    line[j] = '|';
                }
            }
        } else if row == ROWS {
            // The spacing row between the graph and the labels.
            more = true;
        } else {
            let at = (row - ROWS - 1) as usize;
            for (j, l) in labels.iter().enumerate() {
                if let Some(c) = l.as_bytes().get(at) {
                    line[j] = *c as char;
                    more = true;
                }
            }
        }
        if !more {
            break;
        }
        out.extend(line);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::vec::Vec;

    #[test]
    fn a_one_sample_graph_is_redis_s() {
        let mut m = LatencyMonitor::default();
        m.add_if_needed("command", 1, 100, 1);
        let g = m.graph("command", 100).unwrap();
        // Seen from redis-server 7.0.15 after one 1 ms command event.
        assert_eq!(g, format!("command - high 1 ms, low 1 ms (all time high 1 ms)\n{}\n \n \n \n_\n \n0\ns\n", "-".repeat(80)));
        assert!(m.graph("nosuch", 100).is_none());
    }

    #[test]
    fn a_graph_scales_between_low_and_high() {
        let mut m = LatencyMonitor::default();
        for (t, ms) in [(1, 1), (2, 7), (3, 13)] {
            m.add_if_needed("command", ms, t, 1);
        }
        let g = m.graph("command", 70).unwrap();
        let rows: Vec<&str> = g.lines().skip(2).collect();
        // 1 is the floor, 7 half way (step 6 of 12: row 2's `#`, `|` below), 13 the top.
        assert_eq!(rows[..4], ["  #", " _|", " ||", "_||"]);
        assert_eq!(rows[5..], ["111", "mmm"]);
    }

    #[test]
    fn the_doctor_s_reports() {
        let mut m = LatencyMonitor::default();
        let mut x = DoctorInputs { now_s: 10, threshold: 0, slowlog_slower_than: 10_000, slowlog_max_len: 128, hz: 10 };
        assert!(m.doctor(&x).starts_with("I'm sorry, Dave, I can't do that."));
        x.threshold = 1;
        assert!(m.doctor(&x).starts_with("Dave, no latency spike was observed"));
        m.add_if_needed("command", 1, 9, 1);
        let r = m.doctor(&x);
        assert!(r.starts_with("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n1. command: 1 latency spikes (average 1ms, mean deviation 0ms, period 1.00 sec). Worst all time event 1ms.\n\nI have a few advices for you:\n\n- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than 1000'.\n- Check your Slow Log"), "{r}");
        assert!(r.ends_with(ADVICE_LARGE_OBJECTS));
    }
}
