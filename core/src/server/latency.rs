//! The latency monitor (Redis's latency.c without its report generator): per event, the
//! samples of at least `latency-monitor-threshold` ms, one per second (the worst of that
//! second), the last 160 kept, and the worst ever seen. Events: `command` and
//! `fast-command`, the engine's run of a command.

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
