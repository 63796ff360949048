//! Election wiring: the lease machine (`crate::lease`, pure) decides; this carries out its
//! actions (renewals and claims as log appends, becoming primary, stepping down).

use std::time::Instant;

use memoria_log::{Appended, Kind, LeasePayload, LogError, NewEntry};

use super::replica::ReplicaState;
use super::{Inflight, Shard, Standing};
use crate::durable::{self, ShardLog};
use crate::lease::{Action, AppendToken, EntryKind, Event, Lease, StepDownReason};

/// The lease machine of a shard with automatic failover, and its clock.
pub(super) struct Elect {
    pub(super) m: Lease,
    /// Local monotonic time zero of the machine's milliseconds.
    pub(super) t0: Instant,
    pub(super) node: String,
}

impl Elect {
    pub(super) fn now(&self) -> u64 {
        self.t0.elapsed().as_millis() as u64
    }
}

/// What the lease machine needs to know of an entry's kind.
pub(super) fn entry_kind(k: Kind) -> EntryKind {
    match k {
        Kind::Data => EntryKind::Data,
        Kind::LeaseRenewal => EntryKind::LeaseRenewal,
        Kind::LeaderClaim => EntryKind::LeaderClaim,
        _ => EntryKind::Other,
    }
}

/// What an append's outcome means to the lease machine.
pub(super) fn append_event(token: AppendToken, now_ms: u64, r: &Result<Appended, LogError>) -> Event {
    match r {
        Ok(a) => Event::AppendAcked { token, last_id: a.last_id, now_ms },
        Err(LogError::Conflict { tail_id, tail_epoch, .. }) => Event::AppendRejected { token, tail_id: *tail_id, tail_epoch: *tail_epoch, now_ms },
        Err(_) => Event::AppendFailed { token, now_ms },
    }
}

impl Shard {
    /// FAILOVER: the primary steps down (its reply went out first) and holds off for a
    /// second backoff, so the election through the log makes a replica the primary.
    pub(super) async fn resign_now(&mut self) {
        let Some(el) = self.election.as_mut() else { return };
        let now = el.now();
        let hold = el.m.config().backoff_ms;
        tracing::warn!(shard = self.id, "FAILOVER: stepping down so that a replica takes over");
        self.pending.extend(el.m.resign(now, hold));
        self.run_actions().await;
        self.flush();
    }

    /// Lets time pass for the lease machine (its actions wait in `pending`).
    pub(super) fn lease_tick(&mut self) {
        if let Some(el) = self.election.as_mut() {
            let now = el.now();
            self.pending.extend(el.m.handle(Event::Tick { now_ms: now }));
        }
    }

    /// Carries out the lease machine's actions. True if the engine was replaced (the
    /// node stepped down): whatever batch is being gathered belongs to dropped clients.
    pub(super) async fn run_actions(&mut self) -> bool {
        let mut replaced = false;
        while let Some(a) = self.pending.pop_front() {
            match a {
                Action::AppendRenewal { token, prev_id, epoch, lease_ms } => self.send_lease_entry(Kind::LeaseRenewal, token, prev_id, epoch, lease_ms),
                Action::AppendClaim { token, prev_id, epoch, lease_ms } => {
                    let applied = self.standing.replica().filter(|r| r.stopped.is_none()).map(|r| r.applied);
                    if applied != Some(prev_id) {
                        // The engine must hold exactly what the claim says was read.
                        tracing::warn!(shard = self.id, prev_id, ?applied, "not claiming: the engine is not at the claim's position");
                        if let Some(el) = self.election.as_mut() {
                            let now = el.now();
                            self.pending.extend(el.m.handle(Event::AppendFailed { token, now_ms: now }));
                        }
                        continue;
                    }
                    tracing::info!(shard = self.id, prev_id, epoch, "claiming the shard: the primary's lease has run out");
                    self.send_lease_entry(Kind::LeaderClaim, token, prev_id, epoch, lease_ms);
                }
                Action::BecomePrimary { epoch, last_id } => self.become_primary(epoch, last_id),
                Action::StepDown { reason, resume_after } => {
                    self.step_down(reason, resume_after).await;
                    replaced = true;
                }
                Action::ClaimLost { resume_after } => tracing::info!(shard = self.id, resume_after, "claim lost; staying a replica"),
                Action::ServeReads(on) => tracing::debug!(shard = self.id, on, "serving reads as primary"),
                Action::Stopped => tracing::error!(shard = self.id, "the log needs a newer build: this node stopped applying and takes no part in elections"),
            }
        }
        replaced
    }

    /// Sends a renewal or a claim (the machine allows one append in flight in all).
    fn send_lease_entry(&mut self, kind: Kind, token: AppendToken, prev_id: u64, epoch: u64, lease_ms: u64) {
        let (Some((api, name)), Some(el)) = (self.source.clone(), self.election.as_mut()) else { return };
        if self.inflight.is_some() {
            // Cannot happen: every append goes through the machine. Never send two.
            tracing::error!(shard = self.id, "lease append while another is in flight; skipped");
            let now = el.now();
            self.pending.extend(el.m.handle(Event::AppendFailed { token, now_ms: now }));
            return;
        }
        let entry = NewEntry::new(kind, LeasePayload { node: el.node.clone(), lease_ms }.encode());
        let task = tokio::spawn(durable::append_settled(api, name, prev_id, epoch, vec![entry]));
        self.inflight = Some(Inflight { task, last_seq: 0, token: Some(token), started: std::time::Instant::now() });
    }

    /// The claim landed: the engine already holds everything before it.
    fn become_primary(&mut self, epoch: u64, last_id: u64) {
        let Some((api, name)) = self.source.clone() else { return };
        let node = self.election.as_ref().map(|e| e.node.clone()).unwrap_or_default();
        self.stop_tail();
        self.gate.reset();
        self.standing = Standing::Primary(Some(ShardLog { api, name, node, prev_id: last_id, epoch }));
        tracing::warn!(shard = self.id, epoch, last_id, "this node is now the primary");
        self.send_facts();
    }

    /// Deposed, or the lease lapsed: stop serving at once (held replies fail, clients are
    /// dropped), and rejoin as a replica rebuilt from the log, since memory may hold
    /// effects of appends that never landed. No claim: only an election makes a leader.
    async fn step_down(&mut self, reason: StepDownReason, resume_after: u64) {
        tracing::warn!(shard = self.id, ?reason, resume_after, "stepping down: no longer the primary");
        let why = match reason {
            StepDownReason::Deposed => "another node now leads the shard",
            StepDownReason::LeaseExpired => "its lease as primary lapsed",
            StepDownReason::FormatTooNew => "the log holds entries of a newer format",
            StepDownReason::Resigned => "FAILOVER asked it to step down",
        };
        let msg = format!("-ERR write outcome unknown: this node stopped being the primary ({why}); reconnect and retry\r\n");
        self.fail_everything(msg.as_bytes());
        self.standing = Standing::Replica(ReplicaState { primary: String::new(), applied: 0, tail: 0, stopped: None });
        self.reload_engine().await;
    }
}
