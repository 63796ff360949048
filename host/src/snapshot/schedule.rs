//! When to snapshot and how far to truncate. The decisions are pure functions of observed
//! numbers (tested with simulated ones); `spawn` runs them against a log and a store.
//!
//! `memoria up` spawns the scheduler next to its node, taking each snapshot in a child
//! `memoria snapshot` process (off the serving process, at a lower CPU priority); in the
//! three-AZ shape `memoria snapshot --schedule` is the scheduler and takes snapshots in
//! its own process.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;

use memoria_log::{LogApi, LogHandle};

use super::SnapshotError;
use super::make::{Made, MakeOptions, Warm, make_warm};
use super::store::{Listed, SnapshotStore};
use crate::wasm::EngineFactory;
use memoria_admin::snapshot::now_unix_ms;

#[derive(Clone, Debug, PartialEq, clap::Args)]
#[command(next_help_heading = "Snapshot scheduling")]
pub struct Policy {
    /// Snapshot once the log written since the newest snapshot reaches this multiple of the
    /// data set's size.
    #[arg(long = "snapshot-growth-ratio", default_value_t = 1.0)]
    pub growth_ratio: f64,
    /// ...and at least this many log bytes (so small data sets are not snapshotted
    /// constantly).
    #[arg(long = "snapshot-min-log-bytes", default_value_t = 64 << 20)]
    pub min_log_bytes: u64,
    /// ...and at least this many entries.
    #[arg(long = "snapshot-min-entries", default_value_t = 10_000)]
    pub min_entries: u64,
    /// Least time between the starts of two snapshots, in ms.
    #[arg(long = "snapshot-min-interval-ms", default_value_t = 10_000)]
    pub min_interval_ms: u64,
    /// Wait after a failed snapshot, in ms.
    #[arg(long = "snapshot-retry-ms", default_value_t = 30_000)]
    pub retry_ms: u64,
    /// Log entries kept below the truncation point (for readers a little behind).
    #[arg(long = "snapshot-truncate-margin", default_value_t = 10_000)]
    pub margin_entries: u64,
    /// Published snapshots kept; the log is kept back to the oldest of them, so a restore
    /// can always fall back to the previous snapshot.
    #[arg(long = "snapshot-keep", default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    pub keep: u64,
    /// Never truncate the log.
    #[arg(long = "snapshot-no-truncate")]
    pub no_truncate: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            growth_ratio: 1.0,
            min_log_bytes: 64 << 20,
            min_entries: 10_000,
            min_interval_ms: 10_000,
            retry_ms: 30_000,
            margin_entries: 10_000,
            keep: 2,
            no_truncate: false,
        }
    }
}

/// What the scheduler sees of the log and the store.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    pub now_ms: u64,
    pub tail_id: u64,
    /// Newest published snapshot: the log id it covers and its data size.
    pub covered_id: u64,
    pub data_bytes: u64,
    /// Log payload bytes per entry, as measured by the last snapshot's replay.
    pub avg_entry_bytes: f64,
    pub last_attempt_ms: Option<u64>,
    pub last_failed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Snapshot,
    Wait(&'static str),
}

/// Default per-entry estimate before any snapshot measured one (a batch of a few SETs).
pub const DEFAULT_ENTRY_BYTES: f64 = 256.0;

/// Whether to start a snapshot now.
pub fn decide(p: &Policy, o: &Observed) -> Decision {
    if let Some(t) = o.last_attempt_ms {
        let wait = if o.last_failed { p.retry_ms } else { p.min_interval_ms };
        if o.now_ms.saturating_sub(t) < wait {
            return Decision::Wait(if o.last_failed { "backing off after a failure" } else { "too soon after the last snapshot" });
        }
    }
    let entries = o.tail_id.saturating_sub(o.covered_id);
    if entries == 0 || entries < p.min_entries {
        return Decision::Wait("too few new entries");
    }
    let per_entry = if o.avg_entry_bytes > 0.0 { o.avg_entry_bytes } else { DEFAULT_ENTRY_BYTES };
    let growth = entries as f64 * per_entry;
    let threshold = (p.growth_ratio * o.data_bytes as f64).max(p.min_log_bytes as f64);
    if growth >= threshold { Decision::Snapshot } else { Decision::Wait("log growth below the threshold") }
}

/// Where to truncate the log (`truncate(before)` deletes entries below `before`), given the
/// ids covered by the published snapshots, newest first, and the newest one the log itself
/// has recorded. Never past the oldest kept snapshot (the fallback), never past what the
/// log recorded, always `margin` entries behind; None when nothing would be deleted.
pub fn truncate_before(p: &Policy, first_id: u64, log_snapshot_id: u64, published: &[u64]) -> Option<u64> {
    if p.no_truncate || published.is_empty() {
        return None;
    }
    let oldest_kept = published[(p.keep as usize).min(published.len()) - 1];
    let covered = oldest_kept.min(log_snapshot_id);
    let before = (covered + 1).saturating_sub(p.margin_entries);
    (before > first_id.max(1)).then_some(before)
}

/// Snapshots to delete: the usable ones beyond the newest `keep`, and unusable manifests
/// older than the oldest kept one. `listed` is newest first, with usability.
pub fn to_remove(keep: u64, listed: &[(String, bool)]) -> Vec<String> {
    let mut kept = 0u64;
    let mut out = Vec::new();
    for (name, usable) in listed {
        if kept >= keep {
            out.push(name.clone());
        } else if *usable {
            kept += 1;
        }
    }
    out
}

/// Data folders with no manifest that are older than the newest published snapshot: left
/// by a snapshot process that was killed or failed (one still being written covers a
/// newer id, so its name sorts after the newest manifest).
pub fn orphans(data: &[String], manifests: &[String]) -> Vec<String> {
    let Some(newest) = manifests.iter().max() else { return Vec::new() };
    data.iter().filter(|d| !manifests.contains(d) && *d < newest).cloned().collect()
}

/// How the scheduler takes a snapshot.
#[derive(Clone)]
pub enum Runner {
    /// A child `memoria snapshot` process (`exe` with `args`), at nice `nice` and, on
    /// Linux, in the SCHED_IDLE class.
    Process { exe: PathBuf, args: Vec<String>, env: Vec<(String, String)>, nice: i32 },
    /// In this process (the snapshot process's own `--schedule` mode), keeping the engine
    /// of the last verified snapshot for the next one ([`Warm`]).
    InProcess { factory: EngineFactory, opts: MakeOptions, warm: Arc<Mutex<Option<Warm>>> },
}

impl Runner {
    pub fn in_process(factory: EngineFactory, opts: MakeOptions) -> Runner {
        Runner::InProcess { factory, opts, warm: Arc::default() }
    }

    /// A child process of this very binary: `memoria snapshot <args>`.
    pub fn child(args: Vec<String>, env: Vec<(String, String)>) -> std::io::Result<Runner> {
        Ok(Runner::Process { exe: std::env::current_exe()?, args, env, nice: 19 })
    }
}

/// Takes one snapshot of `log` now with `runner` (SAVE/BGSAVE; the scheduler's own runs).
pub async fn snapshot_now(runner: &Runner, api: &LogHandle, log: &str, store: &SnapshotStore) -> Result<(), SnapshotError> {
    run_once(runner, api, log, store).await
}

async fn run_once(runner: &Runner, api: &LogHandle, log: &str, store: &SnapshotStore) -> Result<(), SnapshotError> {
    match runner {
        Runner::InProcess { factory, opts, warm } => make_warm(factory, api, log, store, opts, &mut *warm.lock().await).await.map(|m| {
            if let Made::UpToDate { last_id } = m {
                tracing::debug!(log, last_id, "snapshot already up to date");
            }
        }),
        Runner::Process { exe, args, env, nice } => {
            let mut cmd = if *nice != 0 && std::path::Path::new("/usr/bin/nice").exists() {
                let mut c = tokio::process::Command::new("/usr/bin/nice");
                c.arg("-n").arg(nice.to_string()).arg(exe);
                c
            } else {
                tokio::process::Command::new(exe)
            };
            cmd.arg("snapshot").args(args).envs(env.iter().cloned()).kill_on_drop(true).stdin(std::process::Stdio::null());
            // The snapshot process must not outlive the scheduler's process, and runs
            // only on CPU time the serving processes leave idle (SCHED_IDLE).
            crate::child::die_with_parent(&mut cmd);
            #[cfg(target_os = "linux")]
            unsafe {
                cmd.pre_exec(|| {
                    let param = libc::sched_param { sched_priority: 0 };
                    // Best effort: a kernel without SCHED_IDLE still has the nice level.
                    libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
                    Ok(())
                });
            }
            let status = cmd.status().await?;
            if status.success() { Ok(()) } else { Err(SnapshotError::Invalid(format!("snapshot process exited with {status}"))) }
        }
    }
}

/// What the store holds: (name, usable) newest first, and the newest usable manifest.
fn summarize(listed: &[Listed]) -> (Vec<(String, bool)>, Vec<u64>, Option<&super::Manifest>) {
    let flags = listed.iter().map(|l| (l.name.clone(), l.manifest.is_ok())).collect();
    let published = listed.iter().filter_map(|l| l.manifest.as_ref().ok().map(|m| m.last_id)).collect();
    let newest = listed.iter().find_map(|l| l.manifest.as_ref().ok());
    (flags, published, newest)
}

/// One round: observe, maybe snapshot, truncate, clean up. Returns whether a snapshot ran
/// and how it went.
pub async fn tick(
    policy: &Policy,
    runner: &Runner,
    api: &LogHandle,
    log: &str,
    store: &SnapshotStore,
    state: &mut Observed,
) -> Result<Option<bool>, SnapshotError> {
    let info = api.list().await?.into_iter().find(|i| i.name == log);
    let Some(info) = info else { return Ok(None) };
    let listed = store.manifests(log).await?;
    let (_, _, newest) = summarize(&listed);
    state.now_ms = now_unix_ms();
    state.tail_id = info.tail_id;
    state.covered_id = newest.map_or(0, |m| m.last_id);
    state.data_bytes = newest.map_or(0, |m| m.data_bytes);
    if let Some(avg) = newest.and_then(|m| m.avg_entry_bytes()) {
        state.avg_entry_bytes = avg;
    }
    // Labelled by log: one scheduler per shard shares the process's recorder.
    metrics::gauge!("memoria_snapshot_log_entries_since", "log" => log.to_string()).set(state.tail_id.saturating_sub(state.covered_id) as f64);
    let mut ran = None;
    if decide(policy, state) == Decision::Snapshot {
        tracing::info!(log, tail = state.tail_id, covered = state.covered_id, data_bytes = state.data_bytes, "scheduler: taking a snapshot");
        state.last_attempt_ms = Some(state.now_ms);
        let started = std::time::Instant::now();
        let r = run_once(runner, api, log, store).await;
        let outcome = if r.is_ok() { "ok" } else { "failed" };
        metrics::histogram!("memoria_snapshot_duration_seconds", "log" => log.to_string(), "outcome" => outcome).record(started.elapsed().as_secs_f64());
        if r.is_ok() {
            // The snapshot's age is time() minus this.
            metrics::gauge!("memoria_snapshot_last_success_timestamp_seconds", "log" => log.to_string()).set(now_unix_ms() as f64 / 1000.0);
        }
        state.last_failed = r.is_err();
        if let Err(e) = &r {
            tracing::error!(log, error = %e, "scheduled snapshot failed; the previous snapshot stays current");
        }
        ran = Some(r.is_ok());
    }
    // Re-read: the snapshot just published (or one published by someone else) counts.
    let listed = store.manifests(log).await?;
    let (flags, published, _) = summarize(&listed);
    let log_snapshot = api.list().await?.into_iter().find(|i| i.name == log).map_or(0, |i| i.snapshot_id);
    if let Some(before) = truncate_before(policy, info.first_id, log_snapshot, &published) {
        let t = api.truncate(log, before).await?;
        tracing::info!(log, before, deleted = t.deleted, first_id = t.first_id, "scheduler: truncated the log below the snapshots");
        metrics::counter!("memoria_snapshot_truncated_entries_total").increment(t.deleted);
    }
    for name in to_remove(policy.keep, &flags) {
        tracing::info!(log, snapshot = %name, "scheduler: removing an old snapshot");
        store.remove(log, &name).await?;
    }
    let names: Vec<String> = flags.iter().map(|(n, _)| n.clone()).collect();
    for name in orphans(&store.data_names(log).await?, &names) {
        tracing::info!(log, snapshot = %name, "scheduler: removing the chunks of an unpublished snapshot");
        store.remove(log, &name).await?;
    }
    Ok(ran)
}

/// Runs the scheduler until the task is aborted (a child snapshot process is killed with
/// it). `memoria up` calls this with [`Runner::child`].
pub fn spawn(policy: Policy, runner: Runner, api: LogHandle, log: String, store: SnapshotStore, poll: Duration) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut state = Observed::default();
        loop {
            if let Err(e) = tick(&policy, &runner, &api, &log, &store, &mut state).await {
                tracing::warn!(log, error = %e, "snapshot scheduler round failed");
            }
            tokio::time::sleep(poll).await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy { growth_ratio: 1.0, min_log_bytes: 1000, min_entries: 10, min_interval_ms: 100, retry_ms: 1000, margin_entries: 5, keep: 2, no_truncate: false }
    }

    #[test]
    fn snapshots_when_the_log_outgrows_the_data() {
        let p = policy();
        let mut o = Observed { now_ms: 10_000, tail_id: 0, covered_id: 0, data_bytes: 0, avg_entry_bytes: 100.0, last_attempt_ms: None, last_failed: false };
        assert_eq!(decide(&p, &o), Decision::Wait("too few new entries"));
        o.tail_id = 9;
        assert_eq!(decide(&p, &o), Decision::Wait("too few new entries"));
        o.tail_id = 10; // 1000 bytes = min_log_bytes, no data yet
        assert_eq!(decide(&p, &o), Decision::Snapshot);
        // A 1 MB data set: needs 1 MB of log (10,000 entries of 100 bytes) since the snapshot.
        o.covered_id = 10;
        o.data_bytes = 1_000_000;
        o.tail_id = 10 + 9_999;
        assert!(matches!(decide(&p, &o), Decision::Wait(_)));
        o.tail_id = 10 + 10_000;
        assert_eq!(decide(&p, &o), Decision::Snapshot);
        // Bigger entries reach it sooner; the ratio scales it.
        o.tail_id = 10 + 5_000;
        o.avg_entry_bytes = 200.0;
        assert_eq!(decide(&p, &o), Decision::Snapshot);
        let half = Policy { growth_ratio: 0.5, ..p.clone() };
        o.avg_entry_bytes = 100.0;
        assert_eq!(decide(&half, &o), Decision::Snapshot);
        // Unknown entry size: the default estimate.
        o.avg_entry_bytes = 0.0;
        o.tail_id = 10 + (1_000_000.0 / DEFAULT_ENTRY_BYTES).ceil() as u64;
        assert_eq!(decide(&p, &o), Decision::Snapshot);
    }

    #[test]
    fn spacing_and_backoff() {
        let p = policy();
        let mut o = Observed { now_ms: 10_000, tail_id: 1000, avg_entry_bytes: 100.0, last_attempt_ms: Some(9_950), ..Default::default() };
        assert_eq!(decide(&p, &o), Decision::Wait("too soon after the last snapshot"));
        o.now_ms = 10_050;
        assert_eq!(decide(&p, &o), Decision::Snapshot);
        o.last_failed = true;
        assert_eq!(decide(&p, &o), Decision::Wait("backing off after a failure"));
        o.now_ms = 10_950;
        assert_eq!(decide(&p, &o), Decision::Snapshot);
    }

    #[test]
    fn steady_load_keeps_the_log_bounded() {
        // Simulated steady writes: 1,000 entries of 100 bytes per second on a 1 MB data set;
        // a snapshot takes 3 s, covers the tail at its start, and is followed by truncation.
        let p = Policy { min_interval_ms: 1000, ..policy() };
        let (mut tail, mut first, mut log_snap) = (0u64, 1u64, 0u64);
        let mut published: Vec<u64> = Vec::new();
        let mut o = Observed { data_bytes: 1_000_000, avg_entry_bytes: 100.0, ..Default::default() };
        let mut max_len = 0;
        for sec in 0..600u64 {
            tail += 1000;
            o.now_ms = sec * 1000;
            o.tail_id = tail;
            o.covered_id = published.first().copied().unwrap_or(0);
            if decide(&p, &o) == Decision::Snapshot {
                o.last_attempt_ms = Some(o.now_ms);
                published.insert(0, tail);
                log_snap = tail;
                tail += 3000; // written while the snapshot ran
            }
            if let Some(b) = truncate_before(&p, first, log_snap, &published) {
                assert!(b <= log_snap + 1, "truncated past the log's snapshot");
                assert!(published.iter().take(p.keep as usize).all(|&s| b <= s + 1), "truncated past a kept snapshot");
                first = b;
            }
            published.truncate(p.keep as usize);
            max_len = max_len.max(tail + 1 - first);
        }
        // Bounded by ~two snapshot intervals of log plus the margin, not by the run's length.
        assert!(max_len < 40_000, "log grew to {max_len} entries");
        assert!(tail > 600_000);
    }

    #[test]
    fn truncation_stays_behind_published_snapshots() {
        let p = policy();
        assert_eq!(truncate_before(&p, 1, 0, &[]), None);
        // One snapshot at 100: keep back to it (the only one), minus the margin.
        assert_eq!(truncate_before(&p, 1, 100, &[100]), Some(96));
        // Two kept: the older one bounds it.
        assert_eq!(truncate_before(&p, 1, 200, &[200, 100]), Some(96));
        assert_eq!(truncate_before(&p, 1, 300, &[300, 200, 100]), Some(196));
        // The log has not recorded the newest yet: never past what it recorded.
        assert_eq!(truncate_before(&Policy { keep: 1, ..p.clone() }, 1, 150, &[300, 200]), Some(146));
        // Already truncated that far: nothing to do.
        assert_eq!(truncate_before(&p, 196, 300, &[300, 200]), None);
        assert_eq!(truncate_before(&Policy { no_truncate: true, ..p.clone() }, 1, 300, &[300, 200]), None);
        // A margin larger than the log: nothing.
        assert_eq!(truncate_before(&Policy { margin_entries: 1000, ..p.clone() }, 1, 300, &[300]), None);
    }

    #[test]
    fn orphans_are_older_unpublished_folders() {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(orphans(&v(&["a", "b", "c", "d"]), &v(&["c", "a"])), v(&["b"]));
        assert!(orphans(&v(&["a"]), &[]).is_empty(), "nothing published: nothing is known to be stale");
    }

    #[test]
    fn clean_up_keeps_the_newest_usable() {
        let l = |v: &[(&str, bool)]| v.iter().map(|(n, u)| (n.to_string(), *u)).collect::<Vec<_>>();
        assert_eq!(to_remove(2, &l(&[("c", true), ("b", true), ("a", true)])), vec!["a"]);
        // A damaged newest one does not count as kept, and is left for an operator.
        assert_eq!(to_remove(2, &l(&[("d", false), ("c", true), ("b", true), ("a", true)])), vec!["a"]);
        assert_eq!(to_remove(2, &l(&[("c", true), ("b", false), ("a", true), ("z", false)])), vec!["z"]);
        assert!(to_remove(2, &l(&[("a", true)])).is_empty());
    }
}
