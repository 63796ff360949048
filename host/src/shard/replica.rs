//! A replica's side: tailing the primary's log (one long-poll task, its reads handed to the
//! shard in order), applying what it reads, and reloading from a snapshot when the log was
//! truncated past it. Cluster mode also watches which nodes tail the log (`watch_peers`).

use std::time::Duration;

use memoria_log::{Kind, LeasePayload, LogApi, LogError, LogHandle};
use tokio::sync::mpsc::WeakUnboundedSender;
use tokio::sync::oneshot;

use super::election::entry_kind;
use super::{Shard, ShardMsg};
use crate::clock::seed;
use crate::lease::Event;

/// A replica's progress through the primary's log.
pub(super) struct ReplicaState {
    pub(super) primary: String,
    pub(super) applied: u64,
    /// The log's tail at the newest read: `tail - applied` is the lag in entries.
    pub(super) tail: u64,
    /// Applying stopped (an entry in a newer format, or the log truncated past it with no
    /// snapshot to reload from): why.
    pub(super) stopped: Option<String>,
}

/// Replicas read the log, never the primary: long-poll the shard log and hand every read
/// to the shard task, in order (empty ones too: they tell the lease machine it is at the
/// tail).
/// How long a replica at the log's tail waits after applying before it reads again, when
/// appends come often enough that one read then carries several. Each read wakes the
/// replica and the log service; under a stream of small appends that was once per append,
/// on the cores the primary and the log need. Replication lag grows by at most this much.
const TAIL_LINGER: Duration = Duration::from_millis(2);

/// Whether appends arrive often enough to linger: at the rate of the last read cycle
/// (`entries` in `cycle`), at least two per `TAIL_LINGER`. Rarer ones are read as they
/// come: lingering would add a timer's wake-up per read and save none.
fn worth_lingering(entries: usize, cycle: Duration) -> bool {
    entries as u128 * TAIL_LINGER.as_micros() >= 2 * cycle.as_micros()
}

async fn tail_log(api: LogHandle, name: String, reader: String, mut after: u64, generation: u64, shard: WeakUnboundedSender<ShardMsg>) {
    let mut cycle_start = std::time::Instant::now();
    loop {
        match api.read_as(&name, after, 1000, Duration::from_secs(1), &reader).await {
            Ok(b) => {
                // Live tailing (the read reached the tail) of frequent appends.
                let linger = b.entries.last().is_some_and(|e| e.id >= b.tail_id) && worth_lingering(b.entries.len(), cycle_start.elapsed());
                cycle_start = std::time::Instant::now();
                if let Some(last) = b.entries.last() {
                    after = last.id;
                }
                let Some(tx) = shard.upgrade() else { return };
                let (done, applied) = oneshot::channel();
                if tx.send(ShardMsg::Apply { generation, entries: b.entries, tail_id: b.tail_id, applied: Some(done) }).is_err() {
                    return;
                }
                drop(tx);
                // A dropped answer means the shard is gone or moved on; either way go on.
                let _ = applied.await;
                if linger {
                    tokio::time::sleep(TAIL_LINGER).await;
                }
            }
            Err(e @ LogError::Truncated { .. }) => {
                // Fell behind the truncation: only a snapshot can bring it back.
                tracing::warn!(error = %e, "this replica fell behind the log's truncation; reloading from the newest snapshot");
                if let Some(tx) = shard.upgrade() {
                    let _ = tx.send(ShardMsg::Reload { generation });
                }
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the log failed; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Cluster mode: learns every second which nodes tail the shard's log (the replicas).
pub(super) async fn watch_peers(api: LogHandle, name: String, shard: WeakUnboundedSender<ShardMsg>) {
    loop {
        if let Ok(mut peers) = api.readers(&name).await {
            peers.retain(super::wait::is_live);
            let Some(tx) = shard.upgrade() else { return };
            if tx.send(ShardMsg::Peers(peers)).is_err() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

impl Shard {
    /// Applies entries read from the log (a replica's tail, or a rebuild's replay) and,
    /// with an election, tells the lease machine what was read. A newer format stops
    /// applying (and says so in INFO, ROLE and the logs) instead of misreading it.
    /// Returns the last id applied (`None`: applying has stopped).
    pub(super) fn absorb(&mut self, entries: &[memoria_log::Entry], tail_id: u64) -> Option<u64> {
        if self.standing.replica().is_some_and(|r| r.stopped.is_some()) {
            return None;
        }
        let from = self.standing.replica().map_or(0, |r| r.applied);
        let mut r = crate::replay::Replayed { last_id: from, tail_id, max_epoch: 0, data_entries: 0, effects: 0, leader: None };
        let result = crate::replay::apply_entries(&mut self.engine, entries, &mut r);
        if let Some(rep) = self.standing.replica_mut() {
            rep.applied = r.last_id;
            rep.tail = rep.tail.max(tail_id).max(r.last_id);
            if let Some(leader) = r.leader.take() {
                rep.primary = leader;
            }
        }
        if let Some(el) = self.election.as_mut() {
            let now = el.now();
            if entries.is_empty() {
                self.pending.extend(el.m.handle(Event::TailReached { tail_id, now_ms: now }));
            }
            for e in entries.iter().take_while(|e| e.id <= r.last_id && e.format <= memoria_log::FORMAT_VERSION) {
                let payload = matches!(e.kind, Kind::LeaseRenewal | Kind::LeaderClaim).then(|| LeasePayload::decode(&e.payload)).flatten();
                let ev = Event::EntryRead {
                    id: e.id,
                    epoch: e.epoch,
                    kind: entry_kind(e.kind),
                    lease_ms: payload.map(|p| p.lease_ms),
                    at_tail: e.id >= tail_id,
                    now_ms: now,
                };
                self.pending.extend(el.m.handle(ev));
            }
            if result.is_err() {
                self.pending.extend(el.m.handle(Event::FormatTooNew { now_ms: now }));
            }
        }
        match result {
            Ok(()) => Some(r.last_id),
            Err(e) => {
                tracing::error!(shard = self.id, error = %e, applied = r.last_id, "stopped applying the log");
                if let Some(rep) = self.standing.replica_mut() {
                    rep.stopped = Some(e.to_string());
                }
                self.reported_offset = u64::MAX;
                None
            }
        }
    }

    /// Starts (or restarts) tailing the log after `after`.
    pub(super) fn spawn_tail(&mut self, after: u64) {
        self.stop_tail();
        let Some((api, name)) = self.source.clone() else { return };
        let reader = self.node.clone();
        self.tail = Some(tokio::spawn(tail_log(api, name, reader, after, self.tail_gen, self.self_tx.clone())));
    }

    pub(super) fn stop_tail(&mut self) {
        if let Some(t) = self.tail.take() {
            t.abort();
        }
        // Reads already queued by the old task are ignored from here.
        self.tail_gen += 1;
    }

    /// A replica whose next entries were truncated away: the newest snapshot and the log
    /// after it replace the engine. The snapshot is loaded into a new engine first: with
    /// none usable the replica keeps its data and clients and stops applying (INFO says
    /// why) rather than serve an empty engine. The clients' state (MULTI, SELECT,
    /// subscriptions) lives in the engine being replaced, so their connections close, as
    /// after a step-down.
    pub(super) async fn reload_behind_truncation(&mut self) {
        metrics::counter!("memoria_replica_snapshot_reloads_total").increment(1);
        self.events.loading = Some(("snapshot-load", std::time::Instant::now()));
        self.settle_inflight().await;
        self.stop_tail();
        let Some((api, name)) = self.source.clone() else { return };
        let mut fresh = match self.factory.instantiate(seed()) {
            Ok(e) => e,
            Err(e) => return self.stop_applying(format!("could not instantiate an engine to reload into: {e}")),
        };
        let after = match crate::snapshot::restore::start(self.snapshots.as_ref(), &api, &name, &mut fresh).await {
            Ok(a) if a > 0 => a,
            Ok(_) => {
                return self.stop_applying(
                    "the log was truncated past this replica and no usable snapshot covers the gap (give the node --snapshot-store, or restart it)".into(),
                );
            }
            Err(e) => return self.stop_applying(format!("the log was truncated past this replica and loading the newest snapshot failed: {e}")),
        };
        self.fail_everything(b"-LOADING this replica fell behind the log's truncation and is reloading from a snapshot; reconnect\r\n");
        self.engine = fresh;
        self.replay_and_tail(api, name, after).await;
    }

    /// A replica stops applying the log (INFO replication, ROLE and the logs say why) and
    /// serves what it holds.
    pub(super) fn stop_applying(&mut self, why: String) {
        tracing::error!(shard = self.id, %why, "stopped applying the log");
        if let Some(rep) = self.standing.replica_mut() {
            rep.stopped = Some(why);
        }
        self.reported_offset = u64::MAX;
        self.send_facts();
    }

    /// Applies the log after `after` (where the engine is) up to its tail, then a replica
    /// tails on.
    pub(super) async fn replay_and_tail(&mut self, api: LogHandle, name: String, mut after: u64) {
        if let Some(rep) = self.standing.replica_mut() {
            rep.applied = after;
            rep.stopped = None;
        }
        loop {
            let batch = match api.read(&name, after, 1000, Duration::ZERO).await {
                Ok(b) => b,
                Err(e @ LogError::Truncated { .. }) => {
                    // Truncated again while a snapshot loaded (or no snapshot covers the
                    // gap): no read can succeed from here.
                    self.stop_applying(format!("cannot catch up: {e}"));
                    break;
                }
                Err(e) => {
                    tracing::warn!(shard = self.id, error = %e, "reading the log to rebuild failed; retrying");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            let done = batch.entries.is_empty() || batch.entries.last().is_some_and(|e| e.id >= batch.tail_id);
            match self.absorb(&batch.entries, batch.tail_id) {
                Some(last) => after = last,
                None => break,
            }
            if done {
                break;
            }
        }
        if let (Some(log), Some(el)) = (self.standing.log_mut(), self.election.as_ref()) {
            log.prev_id = el.m.last_id();
        }
        tracing::info!(shard = self.id, applied = after, "engine rebuilt from the log");
        self.send_facts();
        if self.standing.replica().is_some_and(|r| r.stopped.is_none()) {
            self.spawn_tail(after);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_lingers_only_behind_frequent_appends() {
        // A stream of small appends, one per 0.7 ms: read as one per cycle otherwise.
        assert!(worth_lingering(1, Duration::from_micros(700)));
        // Lingering, then about three per cycle of 2.3 ms: go on lingering.
        assert!(worth_lingering(3, Duration::from_micros(2300)));
        // One append per 2 ms or rarer (large batches, lease renewals when idle): each read
        // carries one anyway; lingering would only add a wake-up.
        assert!(!worth_lingering(1, Duration::from_millis(2)));
        assert!(!worth_lingering(1, Duration::from_millis(500)));
        assert!(!worth_lingering(0, Duration::from_secs(1)));
    }
}
