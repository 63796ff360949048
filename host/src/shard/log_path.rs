//! The write path to the log: group commit (the effects of every batch run while an append
//! is in flight go out together as the next one), what an append's outcome means (replies
//! released, or failed with the engine rebuilt), and WAIT's count of replicas.

use memoria_log::{Appended, LogError, NewEntry};

use super::election::append_event;
use super::gate::{Awaited, WaitStart};
use super::{Inflight, Shard, ShardMsg};
use crate::durable;
use crate::lease::AppendToken;

impl Shard {
    /// Sends the queued effects as one append if none is in flight (group commit).
    pub(super) fn start_append(&mut self) {
        if self.inflight.is_some() || !self.gate.has_queued() || !self.cohort.ready(std::time::Instant::now()) {
            return;
        }
        let Some(log) = self.standing.log() else {
            self.gate.drop_queued();
            return;
        };
        // With an election the machine decides (one append in flight, renewals included,
        // and none once the lease has lapsed); its time is read before the append is sent.
        let (prev_id, epoch, token) = match self.election.as_mut() {
            Some(el) => {
                let now = el.now();
                match el.m.start_data_append(now) {
                    Some(t) => (t.prev_id, t.epoch, Some(t.token)),
                    None => return,
                }
            }
            None => (log.prev_id, log.epoch, None),
        };
        let (api, name) = (log.api.clone(), log.name.clone());
        let Some((last_seq, effects)) = self.gate.take_append() else { return };
        let entries: Vec<NewEntry> = effects.into_iter().map(NewEntry::data).collect();
        let (shard, n) = (self.id.to_string(), entries.len() as f64);
        let task = tokio::spawn(async move {
            let t0 = std::time::Instant::now();
            let r = durable::append_settled(api, name, prev_id, epoch, entries).await;
            // Seen from the node: the log service's own figures are on its /metrics.
            let outcome = if r.is_ok() { "ok" } else { "failed" };
            metrics::histogram!("memoria_node_log_append_seconds", "shard" => shard.clone(), "outcome" => outcome).record(t0.elapsed().as_secs_f64());
            metrics::histogram!("memoria_node_log_append_batch_entries", "shard" => shard).record(n);
            r
        });
        self.inflight = Some(Inflight { task, last_seq, token, started: std::time::Instant::now() });
    }

    /// A data append's round trip counts as the wait for the log (renewals hold no reply).
    pub(super) fn landed(&mut self, last_seq: u64, started: std::time::Instant) {
        if last_seq != 0 {
            self.events.append_took(started.elapsed());
        }
    }

    /// The append in flight finished.
    pub(super) async fn appended(&mut self, last_seq: u64, token: Option<AppendToken>, r: Result<Appended, LogError>) {
        if let (Some(el), Some(token)) = (self.election.as_mut(), token) {
            let ev = append_event(token, el.now(), &r);
            self.pending.extend(el.m.handle(ev));
            // A lapsed lease or a rejection steps down here, failing every held reply.
            self.run_actions().await;
            let primary = self.standing.log().is_some();
            let Some(el) = self.election.as_ref() else { return };
            if !primary || last_seq == 0 && r.is_err() {
                // A stale outcome (from before a step-down), or a renewal or claim that
                // did not land: the machine has it; no reply depends on it.
                return;
            }
            match r {
                Ok(a) if el.m.can_ack_writes(el.now()) => {
                    if let Some(log) = self.standing.log_mut() {
                        log.prev_id = a.last_id;
                    }
                    if last_seq != 0 {
                        self.acked(last_seq);
                    }
                }
                Ok(_) => {
                    // Past the lease: nothing may be acknowledged any more.
                    self.fail_everything(
                        b"-ERR write outcome unknown: this node's lease as primary lapsed before the log acknowledged it; reconnect and retry\r\n",
                    );
                }
                // A data append that did not land (or could not be settled): the engine
                // holds writes the log does not. Still the leader: `rebuild` reloads from
                // the log without claiming again.
                Err(e) => self.log_failed(e).await,
            }
            return;
        }
        match r {
            Ok(a) => {
                if let Some(log) = self.standing.log_mut() {
                    log.prev_id = a.last_id;
                }
                self.acked(last_seq);
            }
            Err(e) => self.log_failed(e).await,
        }
    }

    /// Every write up to tracker sequence `seq` is durable: release what waited for it.
    fn acked(&mut self, seq: u64) {
        for w in self.gate.ack(seq) {
            self.start_wait(w);
        }
    }

    /// The client's writes are durable: a WAIT asks the log service, in a task, how many
    /// replicas have applied everything this primary has logged so far (which includes
    /// them); a SAVE takes its snapshot.
    pub(super) fn start_wait(&mut self, w: WaitStart) {
        let WaitStart { client, token, what } = w;
        let req = match what {
            Awaited::Replicas(req) => req,
            Awaited::Snapshot => {
                if let Err(e) = self.snapshot_now(Some((client, token))) {
                    for w in self.gate.wait_done(client, token, format!("-{e}\r\n").as_bytes()) {
                        self.start_wait(w);
                    }
                }
                return;
            }
        };
        let (Some(log), Some(tx)) = (self.standing.log(), self.self_tx.upgrade()) else { return };
        let (api, name, me, target) = (log.api.clone(), log.name.clone(), self.node.clone(), log.prev_id);
        tokio::spawn(async move {
            let count = super::wait::count_replicas(api, name, me, target, req).await;
            let _ = tx.send(ShardMsg::WaitDone { client, token, reply: format!(":{count}\r\n").into_bytes() });
        });
    }

    /// The log refused or lost an append. The engine holds writes that are not in the log,
    /// so nothing it says can be trusted: fail every held reply (no client is told OK for
    /// a write that is not durable), drop the clients, and rebuild the engine from the log.
    pub(super) async fn log_failed(&mut self, e: LogError) {
        let fenced = matches!(e, LogError::Conflict { .. });
        tracing::error!(shard = self.id, error = %e, fenced, "log append failed; failing held replies and rebuilding from the log");
        let msg = format!("-ERR write not durable: the log refused it ({e}); reconnect and retry\r\n");
        self.fail_everything(msg.as_bytes());
        self.rebuild().await;
    }

    /// Abandons everything not yet durable: every held reply fails with `msg`, every
    /// client is dropped, and the tracker and queued effects are forgotten.
    pub(super) fn fail_everything(&mut self, msg: &[u8]) {
        self.stop_migrations();
        self.blocking.clear();
        self.gate.fail_all(msg, self.clients.keys().copied());
        self.flush();
        self.clients.clear();
        self.gate.pubsub_clients.clear();
        self.gate.auth_clients.clear();
    }

    /// Waits for the append in flight (if any) and takes its outcome (`appended`).
    pub(super) async fn land_inflight(&mut self) {
        if let Some(i) = self.inflight.take() {
            let r = append_outcome(i.task.await);
            self.landed(i.last_seq, i.started);
            self.appended(i.last_seq, i.token, r).await;
        }
    }

    /// Waits for the append in flight (if any) and tells the lease machine its outcome.
    pub(super) async fn settle_inflight(&mut self) {
        if let Some(i) = self.inflight.take() {
            let r = append_outcome(i.task.await);
            if let (Some(el), Some(token)) = (self.election.as_mut(), i.token) {
                let ev = append_event(token, el.now(), &r);
                self.pending.extend(el.m.handle(ev));
            }
        }
    }
}

/// An append task's outcome; a task that panicked or was cancelled is an internal error.
pub(super) fn append_outcome(r: Result<Result<Appended, LogError>, tokio::task::JoinError>) -> Result<Appended, LogError> {
    r.unwrap_or_else(|e| Err(LogError::Internal(format!("append task: {e}"))))
}
