//! Leadership and leases for one shard, as a pure state machine (docs/ARCHITECTURE.md
//! "Leadership, leases and failover").
//!
//! No I/O, no clock, no runtime: the caller feeds [`Event`]s stamped with `now_ms` from a
//! *monotonic local* clock (e.g. milliseconds since an `Instant` taken at start-up) and
//! performs the [`Action`]s it gets back. Tests drive it with simulated time.
//!
//! # The protocol
//!
//! * The primary appends a lease renewal every `renew_interval_ms` (lease/3 by default).
//!   Every append it makes, renewal or data, is conditional on `prev_id` = the last id it
//!   appended, so a primary that has been replaced gets a conflict: it has been deposed and
//!   steps down at once.
//! * The primary's lease runs for `lease_ms` from the local time an append was **sent**
//!   (not acknowledged), and only appends that were acknowledged count. When it lapses the
//!   primary stops serving reads and acknowledging writes, and rejoins as a replica.
//! * A replica restarts its backoff timer (`backoff_ms`, strictly longer than the lease
//!   stretched by the worst clock drift) every time it reads an entry. When the timer
//!   expires, and the replica has read to the tail, it appends a leader claim with
//!   `prev_id` = the last id it read and `epoch` = highest epoch seen + 1. The conditional
//!   append lets at most one contender win; the others get a conflict and stay replicas.
//!
//! # Why it is safe
//!
//! Let the local clocks run at rates within `1 ± ρ` of real time (`ρ = max_drift_ppm/1e6`).
//! The old primary P serves at most `L / (1-ρ)` real ms after sending its last acknowledged
//! append E. A claim by R succeeds only if its `prev_id` is the tail, so R has read E (and
//! everything P got acknowledged), at a real time no earlier than E was sent; R claims no
//! earlier than `(B-1) / (1+ρ)` real ms after that read (the -1 absorbs whole-ms clock
//! readings). `B` is validated so that `(B-1)(1-ρ) > L(1+ρ)`: P's last instant of
//! serving precedes R's claim, which precedes R's first instant of serving. Appends P sent
//! but never saw acknowledged extend nothing, and if they land after R's read, R's claim
//! conflicts. Message delays, lost messages, freezes and partitions only ever delay things.
//!
//! Two rules for the caller follow from this:
//! * `now_ms` of an append ([`Lease::start_data_append`], or the event that produced an
//!   [`Action::AppendRenewal`]/[`Action::AppendClaim`]) must be read **before** the request
//!   is sent; `now_ms` of [`Event::EntryRead`] must be read **after** the entry arrived.
//! * One append in flight per shard, and every append started gets exactly one outcome
//!   event ([`Event::AppendAcked`], [`Event::AppendRejected`] or [`Event::AppendFailed`])
//!   carrying its [`AppendToken`]. The machine starts nothing new until then. Report
//!   `AppendFailed` only once the append is settled as not written (or given up on): an
//!   append that later lands anyway is harmless but a retry will then conflict and depose.
//!
//! The machine knows nothing of `memoria_log`; map its `Kind` to [`EntryKind`] and decode
//! the [`LeasePayload`](../../memoria_log/entry/struct.LeasePayload.html)'s `lease_ms` into
//! [`Event::EntryRead::lease_ms`]. Pass *every* entry read, checksum marks included (as
//! [`EntryKind::Other`]), so `prev_id` of a claim is the real tail.

use std::fmt;

/// Default lease length. Recovery after a crash takes about the backoff minus the time
/// since the last renewal was read, so ~1.3-1.5 s with this default.
pub const DEFAULT_LEASE_MS: u64 = 1500;
/// Default bound on the rate drift between any two local monotonic clocks' rates and real
/// time: 1% (NTP-slewed clocks stay within 500 ppm; this leaves room for VMs).
pub const DEFAULT_MAX_DRIFT_PPM: u32 = 10_000;
/// Largest drift bound [`Config::validate`] accepts (10%).
pub const MAX_DRIFT_PPM_LIMIT: u32 = 100_000;

const PPM: u128 = 1_000_000;

/// Timing parameters. All in local milliseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// How long an acknowledged append lets the primary serve, from the time it was sent.
    pub lease_ms: u64,
    /// How often the primary renews when it has appended nothing else (lease/3).
    pub renew_interval_ms: u64,
    /// How long a replica waits after the last entry it read before claiming. Must be
    /// at least [`Config::min_backoff_ms`] for `lease_ms` and `max_drift_ppm`.
    pub backoff_ms: u64,
    /// Bound on how far a node's clock rate may differ from real time, in parts per
    /// million.
    pub max_drift_ppm: u32,
    /// After a failed renewal, how long before the next attempt.
    pub retry_ms: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("lease_ms must be at least 1")]
    ZeroLease,
    #[error("renew_interval_ms ({renew}) must be at least 1 and shorter than lease_ms ({lease})")]
    RenewInterval { renew: u64, lease: u64 },
    #[error("max_drift_ppm ({0}) exceeds {MAX_DRIFT_PPM_LIMIT}")]
    Drift(u32),
    #[error("backoff_ms ({backoff}) must be at least {min} for a {lease} ms lease and {ppm} ppm of clock drift")]
    Backoff { backoff: u64, min: u64, lease: u64, ppm: u32 },
    #[error("retry_ms must be at least 1")]
    ZeroRetry,
}

impl Config {
    /// Defaults derived from a lease length: renewals every lease/3, [`DEFAULT_MAX_DRIFT_PPM`],
    /// and a backoff 5% (+2 ms) above the minimum.
    pub fn new(lease_ms: u64) -> Config {
        Config::with_drift(lease_ms, DEFAULT_MAX_DRIFT_PPM)
    }

    pub fn with_drift(lease_ms: u64, max_drift_ppm: u32) -> Config {
        let min = Config::min_backoff_ms(lease_ms, max_drift_ppm);
        Config {
            lease_ms,
            renew_interval_ms: (lease_ms / 3).max(1),
            backoff_ms: min.saturating_add(lease_ms / 20 + 2),
            max_drift_ppm,
            retry_ms: (lease_ms / 12).max(1),
        }
    }

    /// The smallest safe backoff: the least integer `b` with
    /// `(b - 1) * (1 - ρ) > lease * (1 + ρ)`, i.e. strictly longer than the lease as the
    /// fastest replica clock measures the slowest primary clock's lease, plus one ms for
    /// whole-millisecond clock readings.
    pub fn min_backoff_ms(lease_ms: u64, max_drift_ppm: u32) -> u64 {
        let ppm = (max_drift_ppm as u128).min(PPM - 1);
        let q = lease_ms as u128 * (PPM + ppm) / (PPM - ppm);
        u64::try_from(q + 2).unwrap_or(u64::MAX)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.lease_ms == 0 {
            return Err(ConfigError::ZeroLease);
        }
        if self.renew_interval_ms == 0 || self.renew_interval_ms >= self.lease_ms {
            return Err(ConfigError::RenewInterval { renew: self.renew_interval_ms, lease: self.lease_ms });
        }
        if self.max_drift_ppm > MAX_DRIFT_PPM_LIMIT {
            return Err(ConfigError::Drift(self.max_drift_ppm));
        }
        let min = Config::min_backoff_ms(self.lease_ms, self.max_drift_ppm);
        if self.backoff_ms < min {
            return Err(ConfigError::Backoff { backoff: self.backoff_ms, min, lease: self.lease_ms, ppm: self.max_drift_ppm });
        }
        if self.retry_ms == 0 {
            return Err(ConfigError::ZeroRetry);
        }
        Ok(())
    }

    /// Backoff for a leader that announced `leader_lease_ms` (its renewals carry it): ours,
    /// scaled up in proportion when the leader's lease is longer than ours, which keeps
    /// the safety inequality for its lease.
    pub fn backoff_for(&self, leader_lease_ms: u64) -> u64 {
        if leader_lease_ms <= self.lease_ms || self.lease_ms == 0 {
            return self.backoff_ms;
        }
        let b = self.backoff_ms.saturating_sub(1) as u128;
        let scaled = (b * leader_lease_ms as u128).div_ceil(self.lease_ms as u128) + 1;
        u64::try_from(scaled).unwrap_or(u64::MAX)
    }
}

impl Default for Config {
    fn default() -> Config {
        Config::new(DEFAULT_LEASE_MS)
    }
}

/// What an entry read from the log is, as far as leadership is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    Data,
    LeaseRenewal,
    LeaderClaim,
    /// Anything else (checksum marks, migration phases, config).
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Tails the log; claims when the leader's lease has surely run out.
    Replica,
    /// Has a leader claim in flight.
    Candidate,
    /// Leads the shard's log. Serves while [`Lease::can_serve_reads`] says so.
    Primary,
    /// Read an entry written by a newer format version: applies, appends and claims
    /// nothing more until restarted with a newer build.
    Stopped,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Replica => "replica",
            Role::Candidate => "candidate",
            Role::Primary => "primary",
            Role::Stopped => "stopped",
        })
    }
}

/// Names one append from start to outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AppendToken(pub u64);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AppendKind {
    Data,
    Renewal,
    Claim,
}

/// Where a data append goes: `prev_id` and `epoch` for the conditional append.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendTarget {
    pub token: AppendToken,
    pub prev_id: u64,
    pub epoch: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepDownReason {
    /// An append was rejected (conflict) or a newer epoch was read: someone else leads.
    Deposed,
    /// No append was acknowledged within the lease.
    LeaseExpired,
    /// The log holds an entry of a newer format version.
    FormatTooNew,
    /// An operator asked it to (FAILOVER, the console): see [`Lease::resign`].
    Resigned,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Time passed. Send one at least at [`Lease::next_wakeup`].
    Tick { now_ms: u64 },
    /// The next entry of the log (every entry, in order). `lease_ms` is the decoded
    /// `LeasePayload::lease_ms` of renewals and claims (None otherwise or if undecodable).
    /// `at_tail`: this was the last entry the log had when it was read.
    EntryRead { id: u64, epoch: u64, kind: EntryKind, lease_ms: Option<u64>, at_tail: bool, now_ms: u64 },
    /// A tail read found nothing after `tail_id` (an empty long-poll, or a head request).
    TailReached { tail_id: u64, now_ms: u64 },
    /// The append landed; `last_id` is `Appended::last_id` (the next `prev_id`).
    AppendAcked { token: AppendToken, last_id: u64, now_ms: u64 },
    /// The append conflicted (`LogError::Conflict`): the tail was not its `prev_id`.
    AppendRejected { token: AppendToken, tail_id: u64, tail_epoch: u64, now_ms: u64 },
    /// The append did not land, or its outcome could not be settled (transport failure,
    /// timeout). Its lease extension is not counted.
    AppendFailed { token: AppendToken, now_ms: u64 },
    /// An entry written by a newer format version was read.
    FormatTooNew { now_ms: u64 },
}

impl Event {
    pub fn now_ms(&self) -> u64 {
        match *self {
            Event::Tick { now_ms }
            | Event::EntryRead { now_ms, .. }
            | Event::TailReached { now_ms, .. }
            | Event::AppendAcked { now_ms, .. }
            | Event::AppendRejected { now_ms, .. }
            | Event::AppendFailed { now_ms, .. }
            | Event::FormatTooNew { now_ms } => now_ms,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Append a `Kind::LeaseRenewal` with `LeasePayload { node, lease_ms }`, conditional on
    /// `prev_id`, at `epoch`; report the outcome with `token`.
    AppendRenewal { token: AppendToken, prev_id: u64, epoch: u64, lease_ms: u64 },
    /// Append a `Kind::LeaderClaim` likewise.
    AppendClaim { token: AppendToken, prev_id: u64, epoch: u64, lease_ms: u64 },
    /// The claim landed: lead from here. Everything up to `last_id` is in the log and was
    /// read (and must be applied before serving); the next append's prev_id is `last_id`.
    BecomePrimary { epoch: u64, last_id: u64 },
    /// Stop serving at once and rejoin as a replica, tailing the log after
    /// `resume_after` (the last id this node read or had acknowledged). Held write
    /// replies must be failed. Memory may hold effects of appends that never landed.
    StepDown { reason: StepDownReason, resume_after: u64 },
    /// The claim did not win (conflict, or outcome unknown). Keep tailing after
    /// `resume_after`.
    ClaimLost { resume_after: u64 },
    /// Whether linearizable (primary) reads may be served. Informational edge: the
    /// authority is [`Lease::can_serve_reads`], checked per batch.
    ServeReads(bool),
    /// Stop applying and say so (`INFO`, logs, metrics): the log needs a newer build.
    Stopped,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct InFlight {
    token: AppendToken,
    kind: AppendKind,
    sent_ms: u64,
    epoch: u64,
}

/// The state machine. See the module docs.
#[derive(Clone, Debug)]
pub struct Lease {
    cfg: Config,
    role: Role,
    /// Primary/Candidate: the epoch led or claimed. Otherwise 0.
    own_epoch: u64,
    /// Highest epoch seen in the log (read, conflicts, own claims).
    max_epoch: u64,
    /// Highest id read from the log (or known appended by this node as primary).
    read_id: u64,
    /// Highest tail id the log has been seen to have.
    known_tail: u64,
    /// The last read entry was the tail, and nothing since says otherwise.
    caught_up: bool,
    /// Local time before which a replica must not claim.
    backoff_until: u64,
    /// Lease announced by the newest renewal or claim read.
    leader_lease_ms: u64,
    /// Primary: prev_id of the next append (last id acknowledged).
    append_prev: u64,
    /// Primary: serving ends at this local time (exclusive).
    lease_until: u64,
    /// Primary: the next renewal is due at this local time.
    renew_at: u64,
    /// Primary: no renewal before this local time (after a failure).
    retry_at: u64,
    in_flight: Option<InFlight>,
    next_token: u64,
    /// Highest `now_ms` seen: time checks never go backwards.
    clock: u64,
}

impl Lease {
    /// A replica at the start of an empty log.
    pub fn new(cfg: Config, now_ms: u64) -> Result<Lease, ConfigError> {
        Lease::starting_at(cfg, now_ms, 0, 0)
    }

    /// A replica whose state already covers the log up to `last_id` (restored from a
    /// snapshot), the newest entry of which had `epoch`. It waits a full backoff before
    /// claiming: a leader may have renewed in what the snapshot covers.
    pub fn starting_at(cfg: Config, now_ms: u64, last_id: u64, epoch: u64) -> Result<Lease, ConfigError> {
        cfg.validate()?;
        Ok(Lease::unchecked(cfg, now_ms, last_id, epoch))
    }

    fn unchecked(cfg: Config, now_ms: u64, last_id: u64, epoch: u64) -> Lease {
        let backoff_until = now_ms.saturating_add(cfg.backoff_ms);
        let leader_lease_ms = cfg.lease_ms;
        Lease {
            cfg,
            role: Role::Replica,
            own_epoch: 0,
            max_epoch: epoch,
            read_id: last_id,
            known_tail: last_id,
            caught_up: false,
            backoff_until,
            leader_lease_ms,
            append_prev: 0,
            lease_until: 0,
            renew_at: 0,
            retry_at: 0,
            in_flight: None,
            next_token: 1,
            clock: now_ms,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    pub fn role(&self) -> Role {
        self.role
    }

    /// The epoch this node leads or claims; otherwise the highest epoch seen in the log.
    pub fn epoch(&self) -> u64 {
        match self.role {
            Role::Primary | Role::Candidate => self.own_epoch,
            _ => self.max_epoch,
        }
    }

    /// Local time at which the primary's lease ends (it serves while `now < expiry`).
    pub fn lease_expiry(&self) -> Option<u64> {
        (self.role == Role::Primary).then_some(self.lease_until)
    }

    /// Highest log id read (or, as primary, acknowledged).
    pub fn last_id(&self) -> u64 {
        match self.role {
            Role::Primary => self.append_prev.max(self.read_id),
            _ => self.read_id,
        }
    }

    /// Whether an append (data, renewal or claim) is awaiting its outcome.
    pub fn append_in_flight(&self) -> Option<(AppendToken, AppendKind)> {
        self.in_flight.map(|f| (f.token, f.kind))
    }

    /// Linearizable reads: only a primary within its lease.
    pub fn can_serve_reads(&self, now_ms: u64) -> bool {
        self.role == Role::Primary && now_ms.max(self.clock) < self.lease_until
    }

    /// Replies to writes whose appends were acknowledged may be released only while this
    /// holds (check it after handling the `AppendAcked`): a primary past its lease may
    /// already have been replaced, and must not acknowledge anything after a new claim.
    pub fn can_ack_writes(&self, now_ms: u64) -> bool {
        self.can_serve_reads(now_ms)
    }

    /// The local time by which the caller should send a [`Event::Tick`] (if nothing else
    /// happens first): lease expiry, the next renewal, or the end of the backoff.
    pub fn next_wakeup(&self) -> Option<u64> {
        match self.role {
            Role::Primary => {
                let mut t = self.lease_until;
                if self.in_flight.is_none() {
                    t = t.min(self.renew_at.max(self.retry_at));
                }
                Some(t)
            }
            Role::Replica if self.in_flight.is_none() && self.caught_up => Some(if self.read_id == 0 { self.clock } else { self.backoff_until }),
            _ => None,
        }
    }

    /// Starts a data append (the primary's batch of effects). `None` unless this node is
    /// primary within its lease and no other append is in flight; otherwise the caller
    /// keeps the batch queued (group commit) and asks again after the next outcome.
    /// `now_ms` must be read before the append is sent.
    pub fn start_data_append(&mut self, now_ms: u64) -> Option<AppendTarget> {
        self.clock = self.clock.max(now_ms);
        if self.in_flight.is_some() || !self.can_ack_writes(now_ms) {
            return None;
        }
        let token = self.begin(AppendKind::Data, now_ms, self.own_epoch);
        Some(AppendTarget { token, prev_id: self.append_prev, epoch: self.own_epoch })
    }

    /// An operator asks the primary to step down (FAILOVER). It stops serving at once, as
    /// when deposed, and claims nothing for `hold_ms` beyond its usual backoff: the
    /// replicas' backoffs run from the last renewal they read, which is older, so one of
    /// them wins the election. If none does (no replica caught up), this node claims
    /// again once the hold is over. Not a primary: nothing happens.
    pub fn resign(&mut self, now_ms: u64, hold_ms: u64) -> Vec<Action> {
        let mut out = Vec::new();
        self.clock = self.clock.max(now_ms);
        self.check_lease(&mut out);
        if self.role != Role::Primary {
            return out;
        }
        let now = self.clock;
        self.step_down(StepDownReason::Resigned, now, &mut out);
        self.backoff_until = self.backoff_until.max(now.saturating_add(self.cfg.backoff_ms).saturating_add(hold_ms));
        out
    }

    /// Feeds one event; returns what to do, in order.
    pub fn handle(&mut self, ev: Event) -> Vec<Action> {
        let mut out = Vec::new();
        if self.role == Role::Stopped {
            return out;
        }
        let now = ev.now_ms();
        self.clock = self.clock.max(now);
        // A lease that lapsed before this event is gone, whatever the event says: being
        // told of a late acknowledgement does not bring it back.
        self.check_lease(&mut out);
        match ev {
            Event::Tick { .. } => {}
            Event::EntryRead { id, epoch, kind, lease_ms, at_tail, .. } => self.on_entry(id, epoch, kind, lease_ms, at_tail, now, &mut out),
            Event::TailReached { tail_id, .. } => {
                self.known_tail = self.known_tail.max(tail_id);
                if self.role == Role::Replica {
                    self.caught_up = self.read_id >= self.known_tail;
                }
            }
            Event::AppendAcked { token, last_id, .. } => self.on_acked(token, last_id, now, &mut out),
            Event::AppendRejected { token, tail_id, tail_epoch, .. } => {
                self.known_tail = self.known_tail.max(tail_id);
                self.max_epoch = self.max_epoch.max(tail_epoch);
                if let Some(f) = self.take(token) {
                    match self.role {
                        Role::Primary => self.step_down(StepDownReason::Deposed, now, &mut out),
                        Role::Candidate if f.kind == AppendKind::Claim => self.claim_lost(now, &mut out),
                        _ => {}
                    }
                }
            }
            Event::AppendFailed { token, .. } => {
                if let Some(f) = self.take(token) {
                    match self.role {
                        Role::Primary => self.retry_at = now.saturating_add(self.cfg.retry_ms),
                        // The claim may have landed: read on before claiming again.
                        Role::Candidate if f.kind == AppendKind::Claim => self.claim_lost(now, &mut out),
                        _ => {}
                    }
                }
            }
            Event::FormatTooNew { .. } => {
                if self.role == Role::Primary {
                    self.step_down(StepDownReason::FormatTooNew, now, &mut out);
                }
                self.role = Role::Stopped;
                self.own_epoch = 0;
                out.push(Action::Stopped);
                return out;
            }
        }
        self.check_lease(&mut out);
        self.drive(now, &mut out);
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn on_entry(&mut self, id: u64, epoch: u64, kind: EntryKind, lease_ms: Option<u64>, at_tail: bool, now: u64, out: &mut Vec<Action>) {
        self.max_epoch = self.max_epoch.max(epoch);
        self.known_tail = self.known_tail.max(id);
        if self.role == Role::Primary {
            if epoch <= self.own_epoch {
                // Our own entries. One past what we had acknowledged is an append of ours
                // reported failed that landed after all (only the winner of a claim ever
                // writes its epoch): append after it rather than conflict with it.
                self.read_id = self.read_id.max(id);
                if epoch == self.own_epoch && self.in_flight.is_none() {
                    self.append_prev = self.append_prev.max(id);
                }
                return;
            }
            self.step_down(StepDownReason::Deposed, now, out);
        }
        if matches!(kind, EntryKind::LeaseRenewal | EntryKind::LeaderClaim) {
            self.leader_lease_ms = lease_ms.unwrap_or(self.cfg.lease_ms);
        }
        if id > self.read_id {
            self.read_id = id;
        }
        // Every entry proves its writer was alive when it sent it: the backoff restarts.
        // (Reading an old entry restarts it too, which only delays a claim.)
        let until = now.saturating_add(self.cfg.backoff_for(self.leader_lease_ms));
        self.backoff_until = self.backoff_until.max(until);
        if self.role == Role::Replica {
            self.caught_up = at_tail && self.read_id >= self.known_tail;
        }
    }

    fn on_acked(&mut self, token: AppendToken, last_id: u64, now: u64, out: &mut Vec<Action>) {
        let Some(f) = self.take(token) else { return };
        self.known_tail = self.known_tail.max(last_id);
        match (self.role, f.kind) {
            (Role::Primary, AppendKind::Data | AppendKind::Renewal) if f.epoch == self.own_epoch => {
                self.append_prev = self.append_prev.max(last_id);
                self.lease_until = self.lease_until.max(f.sent_ms.saturating_add(self.cfg.lease_ms));
                self.renew_at = self.renew_at.max(f.sent_ms.saturating_add(self.cfg.renew_interval_ms));
                self.retry_at = 0;
            }
            (Role::Candidate, AppendKind::Claim) => {
                let until = f.sent_ms.saturating_add(self.cfg.lease_ms);
                if now >= until {
                    // Won, but too late to use it: leave it to the backoff of whoever
                    // reads the claim (ourselves included).
                    self.claim_lost(now, out);
                    return;
                }
                self.role = Role::Primary;
                self.own_epoch = f.epoch;
                self.append_prev = last_id;
                self.read_id = self.read_id.max(last_id);
                self.lease_until = until;
                self.renew_at = f.sent_ms.saturating_add(self.cfg.renew_interval_ms);
                self.retry_at = 0;
                out.push(Action::BecomePrimary { epoch: f.epoch, last_id });
                out.push(Action::ServeReads(true));
            }
            // Outcomes of appends from a role we have left: nothing to extend. The log
            // tail read later tells the rest.
            _ => {}
        }
    }

    fn take(&mut self, token: AppendToken) -> Option<InFlight> {
        match self.in_flight {
            Some(f) if f.token == token => self.in_flight.take(),
            _ => None,
        }
    }

    fn begin(&mut self, kind: AppendKind, now: u64, epoch: u64) -> AppendToken {
        let token = AppendToken(self.next_token);
        self.next_token += 1;
        self.in_flight = Some(InFlight { token, kind, sent_ms: now, epoch });
        token
    }

    fn check_lease(&mut self, out: &mut Vec<Action>) {
        if self.role == Role::Primary && self.clock >= self.lease_until {
            self.step_down(StepDownReason::LeaseExpired, self.clock, out);
        }
    }

    fn step_down(&mut self, reason: StepDownReason, now: u64, out: &mut Vec<Action>) {
        debug_assert_eq!(self.role, Role::Primary);
        self.role = Role::Replica;
        self.max_epoch = self.max_epoch.max(self.own_epoch);
        self.own_epoch = 0;
        self.read_id = self.read_id.max(self.append_prev);
        self.lease_until = 0;
        self.caught_up = false;
        self.backoff_until = self.backoff_until.max(now.saturating_add(self.cfg.backoff_ms));
        out.push(Action::ServeReads(false));
        out.push(Action::StepDown { reason, resume_after: self.read_id });
    }

    fn claim_lost(&mut self, now: u64, out: &mut Vec<Action>) {
        self.role = Role::Replica;
        self.max_epoch = self.max_epoch.max(self.own_epoch);
        self.own_epoch = 0;
        self.caught_up = false;
        self.backoff_until = self.backoff_until.max(now.saturating_add(self.cfg.backoff_ms));
        out.push(Action::ClaimLost { resume_after: self.read_id });
    }

    fn drive(&mut self, now: u64, out: &mut Vec<Action>) {
        if self.in_flight.is_some() {
            return;
        }
        match self.role {
            Role::Primary if now >= self.renew_at && now >= self.retry_at => {
                let epoch = self.own_epoch;
                let token = self.begin(AppendKind::Renewal, now, epoch);
                out.push(Action::AppendRenewal { token, prev_id: self.append_prev, epoch, lease_ms: self.cfg.lease_ms });
            }
            // An empty log has never had a leader: no lease to wait out.
            Role::Replica if self.caught_up && self.read_id >= self.known_tail && (self.read_id == 0 || now >= self.backoff_until) => {
                let epoch = self.max_epoch + 1;
                self.role = Role::Candidate;
                self.own_epoch = epoch;
                self.max_epoch = epoch;
                let token = self.begin(AppendKind::Claim, now, epoch);
                out.push(Action::AppendClaim { token, prev_id: self.read_id, epoch, lease_ms: self.cfg.lease_ms });
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
