//! Progress of long snapshot phases (replay, dump, restore): an indicatif bar on a
//! terminal, a log line every few seconds, and metrics gauges either way.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

const LOG_EVERY: Duration = Duration::from_secs(2);

pub struct Progress {
    bar: ProgressBar,
    phase: &'static str,
    unit: &'static str,
    total: u64,
    done: u64,
    started: Instant,
    last_log: Instant,
}

impl Progress {
    /// `total` in `unit`s (entries, bytes); the bar only draws on a terminal.
    pub fn new(phase: &'static str, total: u64, unit: &'static str) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let tmpl = if unit == "bytes" {
            "{prefix:>8} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})"
        } else {
            "{prefix:>8} [{bar:30}] {pos}/{len} {msg} ({per_sec}, eta {eta})"
        };
        if let Ok(style) = ProgressStyle::with_template(tmpl) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(phase);
        if unit != "bytes" {
            bar.set_message(unit);
        }
        let now = Instant::now();
        metrics::gauge!("memoria_snapshot_progress_ratio", "phase" => phase).set(0.0);
        Progress { bar, phase, unit, total, done: 0, started: now, last_log: now }
    }

    pub fn inc(&mut self, n: u64) {
        self.done += n;
        self.bar.inc(n);
        metrics::counter!("memoria_snapshot_work_total", "phase" => self.phase).increment(n);
        if self.last_log.elapsed() >= LOG_EVERY {
            self.last_log = Instant::now();
            let ratio = self.ratio();
            metrics::gauge!("memoria_snapshot_progress_ratio", "phase" => self.phase).set(ratio);
            tracing::info!(
                phase = self.phase,
                done = self.done,
                total = self.total,
                unit = self.unit,
                percent = format!("{:.1}", ratio * 100.0),
                "snapshot progress"
            );
        }
    }

    fn ratio(&self) -> f64 {
        if self.total == 0 { 1.0 } else { (self.done as f64 / self.total as f64).min(1.0) }
    }

    pub fn finish(self) -> Duration {
        let took = self.started.elapsed();
        self.bar.finish_and_clear();
        metrics::gauge!("memoria_snapshot_progress_ratio", "phase" => self.phase).set(1.0);
        metrics::histogram!("memoria_snapshot_phase_seconds", "phase" => self.phase).record(took.as_secs_f64());
        tracing::info!(phase = self.phase, done = self.done, unit = self.unit, ms = took.as_millis() as u64, "snapshot phase done");
        took
    }
}
