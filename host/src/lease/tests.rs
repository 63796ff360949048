//! Tests of the lease state machine. Time is simulated throughout: nothing here reads a
//! clock or sleeps.

use super::*;

mod sim;

/// Lease 3000 ms, renewals every 1000, 1% drift: minimum backoff 3062, default 3214.
fn cfg() -> Config {
    Config::new(3000)
}

fn tick(l: &mut Lease, now_ms: u64) -> Vec<Action> {
    l.handle(Event::Tick { now_ms })
}

fn read(l: &mut Lease, id: u64, epoch: u64, kind: EntryKind, at_tail: bool, now_ms: u64) -> Vec<Action> {
    let lease_ms = matches!(kind, EntryKind::LeaseRenewal | EntryKind::LeaderClaim).then_some(3000);
    l.handle(Event::EntryRead { id, epoch, kind, lease_ms, at_tail, now_ms })
}

fn claim_of(actions: &[Action]) -> Option<(AppendToken, u64, u64)> {
    actions.iter().find_map(|a| match *a {
        Action::AppendClaim { token, prev_id, epoch, .. } => Some((token, prev_id, epoch)),
        _ => None,
    })
}

fn renewal_of(actions: &[Action]) -> Option<(AppendToken, u64, u64)> {
    actions.iter().find_map(|a| match *a {
        Action::AppendRenewal { token, prev_id, epoch, .. } => Some((token, prev_id, epoch)),
        _ => None,
    })
}

fn stepped_down(actions: &[Action]) -> Option<StepDownReason> {
    actions.iter().find_map(|a| match *a {
        Action::StepDown { reason, .. } => Some(reason),
        _ => None,
    })
}

/// A node that claimed an empty log at local time `at` and became primary of epoch 1
/// (claim acknowledged as id 1 at `at + 5`).
fn primary_at(at: u64) -> (Lease, AppendToken) {
    let mut l = Lease::new(cfg(), at).unwrap();
    let a = l.handle(Event::TailReached { tail_id: 0, now_ms: at });
    let (token, prev, epoch) = claim_of(&a).expect("an empty log is claimed at once");
    assert_eq!((prev, epoch), (0, 1));
    assert_eq!(l.role(), Role::Candidate);
    let a = l.handle(Event::AppendAcked { token, last_id: 1, now_ms: at + 5 });
    assert!(a.contains(&Action::BecomePrimary { epoch: 1, last_id: 1 }), "{a:?}");
    assert!(a.contains(&Action::ServeReads(true)));
    assert_eq!(l.role(), Role::Primary);
    assert_eq!(l.lease_expiry(), Some(at + 3000), "the lease runs from the claim's send time");
    (l, token)
}

/// The log of the tests: a Vec with the conditional append of the log service.
#[derive(Default)]
struct Log {
    entries: Vec<(u64, EntryKind)>,
}

impl Log {
    fn append(&mut self, prev_id: u64, epoch: u64, kind: EntryKind) -> Result<u64, (u64, u64)> {
        if prev_id != self.entries.len() as u64 {
            return Err(self.tail());
        }
        self.entries.push((epoch, kind));
        Ok(self.entries.len() as u64)
    }

    fn tail(&self) -> (u64, u64) {
        (self.entries.len() as u64, self.entries.last().map_or(0, |e| e.0))
    }

    /// Performs an append action against the log and returns the outcome event.
    fn perform(&mut self, action: Action, now_ms: u64) -> Event {
        let (token, prev, epoch, kind) = match action {
            Action::AppendRenewal { token, prev_id, epoch, .. } => (token, prev_id, epoch, EntryKind::LeaseRenewal),
            Action::AppendClaim { token, prev_id, epoch, .. } => (token, prev_id, epoch, EntryKind::LeaderClaim),
            other => panic!("not an append: {other:?}"),
        };
        match self.append(prev, epoch, kind) {
            Ok(last_id) => Event::AppendAcked { token, last_id, now_ms },
            Err((tail_id, tail_epoch)) => Event::AppendRejected { token, tail_id, tail_epoch, now_ms },
        }
    }

    /// Feeds every entry after `after` to `l`, the last one marked as the tail.
    fn feed(&self, l: &mut Lease, after: u64, now_ms: u64) -> Vec<Action> {
        let mut out = Vec::new();
        let n = self.entries.len() as u64;
        for id in after + 1..=n {
            let (epoch, kind) = self.entries[id as usize - 1];
            out.extend(read(l, id, epoch, kind, id == n, now_ms));
        }
        out
    }
}

#[test]
fn config_defaults_and_validation() {
    let c = Config::default();
    assert_eq!(c.lease_ms, DEFAULT_LEASE_MS);
    assert_eq!(c.renew_interval_ms, DEFAULT_LEASE_MS / 3);
    c.validate().unwrap();
    let c = cfg();
    assert_eq!(Config::min_backoff_ms(3000, 10_000), 3062);
    assert_eq!(c.backoff_ms, 3214);
    c.validate().unwrap();

    let bad = |f: fn(&mut Config)| {
        let mut c = cfg();
        f(&mut c);
        c.validate().unwrap_err()
    };
    assert_eq!(bad(|c| c.lease_ms = 0), ConfigError::ZeroLease);
    assert!(matches!(bad(|c| c.renew_interval_ms = 0), ConfigError::RenewInterval { .. }));
    assert!(matches!(bad(|c| c.renew_interval_ms = 3000), ConfigError::RenewInterval { .. }));
    assert!(matches!(bad(|c| c.max_drift_ppm = MAX_DRIFT_PPM_LIMIT + 1), ConfigError::Drift(_)));
    assert!(matches!(bad(|c| c.backoff_ms = 3061), ConfigError::Backoff { min: 3062, .. }));
    assert!(matches!(bad(|c| c.backoff_ms = 3000), ConfigError::Backoff { .. }), "equal to the lease is not enough");
    assert_eq!(bad(|c| c.retry_ms = 0), ConfigError::ZeroRetry);
    let mut c = cfg();
    c.backoff_ms = 3062;
    c.validate().unwrap();
    assert!(Lease::new(Config { backoff_ms: 10, ..cfg() }, 0).is_err());
    // The error says what to do.
    let msg = bad(|c| c.backoff_ms = 3000).to_string();
    assert!(msg.contains("3062"), "{msg}");
}

#[test]
fn min_backoff_is_the_tight_bound() {
    for lease in [1u64, 2, 3, 10, 299, 300, 1500, 3000, 10_007, 86_400_000] {
        for ppm in [0u32, 1, 50, 500, 10_000, 33_333, 100_000] {
            let b = Config::min_backoff_ms(lease, ppm) as u128;
            let (l, p) = (lease as u128, ppm as u128);
            assert!((b - 1) * (PPM - p) > l * (PPM + p), "lease {lease} ppm {ppm}: {b} too short");
            assert!((b - 2) * (PPM - p) <= l * (PPM + p), "lease {lease} ppm {ppm}: {b} not minimal");
            assert!(Config::with_drift(lease.max(2), ppm).validate().is_ok());
        }
    }
}

#[test]
fn longer_leader_lease_scales_the_backoff() {
    let c = cfg();
    assert_eq!(c.backoff_for(1000), c.backoff_ms);
    assert_eq!(c.backoff_for(3000), c.backoff_ms);
    for leader in [3001u64, 4500, 6000, 60_000] {
        let b = c.backoff_for(leader) as u128;
        let p = c.max_drift_ppm as u128;
        assert!((b - 1) * (PPM - p) > leader as u128 * (PPM + p), "{leader}: {b}");
    }
    assert_eq!(c.backoff_for(u64::MAX), u64::MAX, "saturates, never wraps");

    // A replica reading renewals of a 6 s lease waits for it, not for its own 3 s one.
    let mut l = Lease::starting_at(cfg(), 0, 10, 1).unwrap();
    l.handle(Event::EntryRead { id: 11, epoch: 1, kind: EntryKind::LeaseRenewal, lease_ms: Some(6000), at_tail: true, now_ms: 100 });
    let wait = c.backoff_for(6000);
    assert!(claim_of(&tick(&mut l, 100 + wait - 1)).is_none());
    // Data entries that follow keep the leader's lease.
    read(&mut l, 12, 1, EntryKind::Data, true, 200);
    assert!(claim_of(&tick(&mut l, 200 + wait - 1)).is_none());
    assert!(claim_of(&tick(&mut l, 200 + wait)).is_some());
}

#[test]
fn primary_renews_every_interval_and_the_lease_runs_from_the_send_time() {
    let (mut l, _) = primary_at(0);
    let mut log = Log::default();
    log.append(0, 1, EntryKind::LeaderClaim).unwrap();
    assert!(l.can_serve_reads(2999) && l.can_ack_writes(2999));
    assert!(!l.can_serve_reads(3000) && !l.can_ack_writes(3000));
    assert_eq!(l.next_wakeup(), Some(1000));
    assert!(tick(&mut l, 999).is_empty());
    for round in 1..=20u64 {
        let sent = round * 1000;
        let a = tick(&mut l, sent);
        let (_, prev, epoch) = renewal_of(&a).expect("renewal due");
        assert_eq!((prev, epoch), (round, 1));
        // Acknowledged 400 ms later: the lease counts from the send.
        let ev = log.perform(a[0], sent + 400);
        assert!(l.handle(ev).is_empty());
        assert_eq!(l.lease_expiry(), Some(sent + 3000));
        assert!(l.can_serve_reads(sent + 2999));
        assert!(!l.can_serve_reads(sent + 3000));
    }
    assert_eq!(l.role(), Role::Primary);
    assert_eq!(l.epoch(), 1);
    assert_eq!(l.last_id(), 21);
}

#[test]
fn one_append_in_flight_and_data_acks_count_as_renewals() {
    let (mut l, _) = primary_at(0);
    // A data append at 500: no renewal can start until its outcome.
    let t = l.start_data_append(500).unwrap();
    assert_eq!((t.prev_id, t.epoch), (1, 1));
    assert_eq!(l.append_in_flight().map(|x| x.1), Some(AppendKind::Data));
    assert!(l.start_data_append(501).is_none(), "one append in flight");
    assert!(tick(&mut l, 1200).is_empty(), "no renewal over a data append in flight");
    // Its acknowledgement extends the lease from 500 and moves the renewal to 1500.
    assert!(l.handle(Event::AppendAcked { token: t.token, last_id: 2, now_ms: 1300 }).is_empty());
    assert_eq!(l.lease_expiry(), Some(3500));
    assert_eq!(l.next_wakeup(), Some(1500));
    assert!(tick(&mut l, 1499).is_empty());
    let a = tick(&mut l, 1500);
    let (token, prev, _) = renewal_of(&a).unwrap();
    assert_eq!(prev, 2);
    assert!(l.start_data_append(1501).is_none(), "a renewal is in flight");
    l.handle(Event::AppendAcked { token, last_id: 3, now_ms: 1510 });
    // Under steady writes, no renewals at all.
    for i in 0..50u64 {
        let now = 1600 + i * 200;
        assert!(tick(&mut l, now).is_empty(), "data appends renew the lease");
        let t = l.start_data_append(now).unwrap();
        assert_eq!(t.prev_id, 3 + i);
        l.handle(Event::AppendAcked { token: t.token, last_id: 4 + i, now_ms: now + 20 });
    }
    // Stale or unknown tokens are ignored.
    let before = l.lease_expiry();
    assert!(l.handle(Event::AppendAcked { token: AppendToken(999), last_id: 999, now_ms: 11_700 }).is_empty());
    assert!(l.handle(Event::AppendRejected { token: AppendToken(998), tail_id: 999, tail_epoch: 7, now_ms: 11_700 }).is_empty());
    assert_eq!(l.lease_expiry(), before);
    assert_eq!(l.role(), Role::Primary);
}

#[test]
fn lost_appends_stop_the_primary_at_lease_expiry() {
    let (mut l, _) = primary_at(0);
    // Every renewal is lost: failed after a transport timeout.
    let mut now = 1000;
    let mut attempts = 0;
    while now < 3000 {
        let a = tick(&mut l, now);
        if let Some((token, _, _)) = renewal_of(&a) {
            attempts += 1;
            assert!(l.handle(Event::AppendFailed { token, now_ms: now + 30 }).is_empty());
            if now + 30 < 3000 {
                assert!(l.can_serve_reads(now + 30), "still within the lease");
            }
        }
        now += 10;
    }
    assert!(attempts >= 5, "retried every retry_ms ({attempts})");
    assert!(l.can_serve_reads(2999));
    assert!(!l.can_serve_reads(3000), "not for one ms past the lease, event or none");
    assert!(!l.can_ack_writes(3000));
    assert!(l.start_data_append(3000).is_none());
    let a = tick(&mut l, 3000);
    assert_eq!(stepped_down(&a), Some(StepDownReason::LeaseExpired));
    assert!(a.contains(&Action::ServeReads(false)));
    assert_eq!(l.role(), Role::Replica);
    assert_eq!(l.lease_expiry(), None);
    // As a replica it reads on before it would claim again, and waits a full backoff.
    assert!(tick(&mut l, 10_000).is_empty(), "not caught up");
    let a = l.handle(Event::TailReached { tail_id: 1, now_ms: 10_000 });
    assert_eq!(claim_of(&a).map(|c| (c.1, c.2)), Some((1, 2)), "backoff from 3000 long over");
}

#[test]
fn delayed_renewal_extends_from_its_send_time_but_cannot_revive_a_lapsed_lease() {
    // Acknowledged late but within the lease it grants: counts.
    let (mut l, _) = primary_at(0);
    let (token, _, _) = renewal_of(&tick(&mut l, 1000)).unwrap();
    let a = l.handle(Event::AppendAcked { token, last_id: 2, now_ms: 2900 });
    assert_eq!(renewal_of(&a).map(|r| r.1), Some(2), "the next renewal (due at 2000) goes out at once");
    assert_eq!(l.lease_expiry(), Some(4000));
    assert!(l.can_serve_reads(3999) && !l.can_serve_reads(4000));

    // Acknowledged after the previous lease lapsed (no Tick in between): the lease is gone
    // and stays gone, even though sent+lease (4000) is still ahead.
    let (mut l, _) = primary_at(0);
    let (token, _, _) = renewal_of(&tick(&mut l, 1000)).unwrap();
    assert!(!l.can_serve_reads(3100));
    let a = l.handle(Event::AppendAcked { token, last_id: 2, now_ms: 3100 });
    assert_eq!(stepped_down(&a), Some(StepDownReason::LeaseExpired));
    assert!(!l.can_serve_reads(3100) && !l.can_ack_writes(3100));

    // A replica that reads the delayed renewal restarts its backoff from the read.
    let mut r = Lease::starting_at(cfg(), 0, 1, 1).unwrap();
    read(&mut r, 2, 1, EntryKind::LeaseRenewal, true, 3500);
    assert!(claim_of(&tick(&mut r, 3500 + 3213)).is_none());
    assert!(claim_of(&tick(&mut r, 3500 + 3214)).is_some());
}

#[test]
fn a_replica_claims_only_after_the_backoff_since_its_last_read() {
    let mut r = Lease::starting_at(cfg(), 0, 5, 2).unwrap();
    assert_eq!(r.epoch(), 2);
    // Renewals arrive every second; no claim while they do.
    for i in 0..10u64 {
        assert!(read(&mut r, 6 + i, 2, EntryKind::LeaseRenewal, true, 1000 * (i + 1)).is_empty());
        assert!(tick(&mut r, 1000 * (i + 1) + 999).is_empty());
    }
    // The last one was read at 10_000.
    assert_eq!(r.next_wakeup(), Some(10_000 + 3214));
    assert!(tick(&mut r, 13_213).is_empty());
    let a = tick(&mut r, 13_214);
    let (_, prev, epoch) = claim_of(&a).unwrap();
    assert_eq!((prev, epoch), (15, 3), "prev_id = last read, epoch = highest seen + 1");
    assert_eq!(r.role(), Role::Candidate);
    assert_eq!(r.epoch(), 3);
    assert!(!r.can_serve_reads(13_214), "a candidate serves nothing");
}

#[test]
fn a_replica_behind_the_tail_never_claims() {
    let mut r = Lease::starting_at(cfg(), 0, 0, 0).unwrap();
    // Catching up on an old log: entries read, none of them the tail.
    for id in 1..=100u64 {
        read(&mut r, id, 1, EntryKind::Data, false, id);
    }
    for now in (0..100_000u64).step_by(97) {
        assert!(tick(&mut r, 200 + now).is_empty(), "behind the tail at {now}");
    }
    // A stale "tail" report below a tail already known does not count either.
    r.handle(Event::AppendRejected { token: AppendToken(77), tail_id: 150, tail_epoch: 1, now_ms: 100_300 });
    assert!(r.handle(Event::TailReached { tail_id: 100, now_ms: 100_301 }).is_empty());
    assert!(tick(&mut r, 200_000).is_empty());
    // Read to the tail: the claim follows at once (the backoff from the reads is long over).
    for id in 101..=150u64 {
        read(&mut r, id, 1, EntryKind::Data, id == 150, 200_001);
    }
    assert!(tick(&mut r, 200_001 + 3213).is_empty(), "backoff restarted by the reads");
    let (_, prev, epoch) = claim_of(&tick(&mut r, 200_001 + 3214)).unwrap();
    assert_eq!((prev, epoch), (150, 2));
}

#[test]
fn two_candidates_race_and_exactly_one_wins() {
    let mut log = Log::default();
    let (mut p, _) = primary_at(0);
    log.append(0, 1, EntryKind::LeaderClaim).unwrap();
    let mut a = Lease::starting_at(cfg(), 0, 0, 0).unwrap();
    let mut b = Lease::starting_at(cfg(), 50_000, 0, 0).unwrap(); // another clock origin
    // The primary renews once, then dies.
    let ren = tick(&mut p, 1000);
    let ev = log.perform(ren[0], 1002);
    p.handle(ev);
    log.feed(&mut a, 0, 1003);
    log.feed(&mut b, 0, 51_004);
    assert_eq!(a.last_id(), 2);
    // Both back off and both claim (their timers end 1 ms apart).
    let ca = tick(&mut a, 1003 + 3214);
    let cb = tick(&mut b, 51_004 + 3214);
    let (ca, cb) = (ca[0], cb[0]);
    assert!(matches!(ca, Action::AppendClaim { prev_id: 2, epoch: 2, .. }));
    assert!(matches!(cb, Action::AppendClaim { prev_id: 2, epoch: 2, .. }));
    // B's claim reaches the log first.
    let eb = log.perform(cb, 51_004 + 3220);
    let ea = log.perform(ca, 1003 + 3221);
    assert!(matches!(ea, Event::AppendRejected { tail_id: 3, tail_epoch: 2, .. }));
    let ra = a.handle(ea);
    let rb = b.handle(eb);
    assert_eq!(ra, vec![Action::ClaimLost { resume_after: 2 }]);
    assert!(rb.contains(&Action::BecomePrimary { epoch: 2, last_id: 3 }));
    assert_eq!((a.role(), b.role()), (Role::Replica, Role::Primary));
    assert!(!a.can_serve_reads(4225));
    // The loser reads the winner's claim and from then on follows its renewals.
    assert!(tick(&mut a, 4300).is_empty(), "must read on to the tail first");
    log.feed(&mut a, 2, 4300);
    assert_eq!(a.epoch(), 2);
    assert!(tick(&mut a, 4300 + 3213).is_empty());
    // The old primary wakes up and tries to renew: conflict, deposed.
    let ren = tick(&mut p, 2000);
    assert_eq!(p.role(), Role::Primary);
    let ev = log.perform(ren[0], 2050);
    assert!(matches!(ev, Event::AppendRejected { .. }));
    let d = p.handle(ev);
    assert_eq!(stepped_down(&d), Some(StepDownReason::Deposed));
    assert_eq!(p.role(), Role::Replica);
    assert_eq!(p.epoch(), 2, "learned the new epoch from the conflict");
    // Exactly one claim of epoch 2 in the log.
    let claims: Vec<_> = log.entries.iter().filter(|e| e.1 == EntryKind::LeaderClaim).collect();
    assert_eq!(claims, vec![&(1, EntryKind::LeaderClaim), &(2, EntryKind::LeaderClaim)]);
}

#[test]
fn a_frozen_primary_never_serves_after_its_lease_and_steps_down() {
    // One real timeline; the primary's clock origin is 0, the replica's 7_000_000.
    let mut log = Log::default();
    let (mut p, _) = primary_at(0);
    log.append(0, 1, EntryKind::LeaderClaim).unwrap();
    let mut r = Lease::starting_at(cfg(), 7_000_000, 0, 0).unwrap();
    let ren = tick(&mut p, 1000);
    let ev = log.perform(ren[0], 1005);
    p.handle(ev);
    log.feed(&mut r, 0, 7_001_010);
    // The primary sends its next renewal at 2000 and is frozen (SIGSTOP) right after:
    // the renewal never reaches the log; the process gets no events until 20_000.
    let pending = tick(&mut p, 2000);
    let (ptoken, _, _) = renewal_of(&pending).unwrap();
    // Replica: backoff from its read, then claim and win.
    let c = tick(&mut r, 7_001_010 + 3214);
    let ev = log.perform(c[0], 7_004_230);
    let a = r.handle(ev);
    assert!(a.contains(&Action::BecomePrimary { epoch: 2, last_id: 3 }));
    // The frozen primary's lease (from its renewal sent at 1000) ended at real 4000; the
    // replica claimed at real 4224 and serves from 4230.
    for real in 0..20_000u64 {
        assert_eq!(p.can_serve_reads(real), real < 4000, "at {real}");
    }
    assert!(r.can_serve_reads(7_004_230));
    assert!(!p.can_serve_reads(4224), "the old lease is over before the claim is even sent");
    // Case A: it resumes with a Tick first: lease long gone, steps down at once.
    let mut pa = p.clone();
    let a = tick(&mut pa, 20_000);
    assert_eq!(stepped_down(&a), Some(StepDownReason::LeaseExpired));
    // Its renewal is still outstanding; when the log rejects it nothing more happens.
    assert!(pa.handle(log.perform(pending[0], 20_010)).is_empty());
    assert!(pa.append_in_flight().is_none());
    // Case B: the first thing it hears is the rejection of that renewal.
    let ev = log.perform(pending[0], 20_000);
    assert!(matches!(ev, Event::AppendRejected { token, .. } if token == ptoken));
    let b = p.handle(ev);
    assert!(stepped_down(&b).is_some());
    assert_eq!(p.role(), Role::Replica);
    assert!(!p.can_serve_reads(20_000) && !p.can_ack_writes(20_000));
    assert!(p.start_data_append(20_000).is_none());

    // And a primary frozen for less than its lease, which then renews in time, keeps
    // leading: its lease never lapsed and nobody could have claimed.
    let (mut q, _) = primary_at(0);
    let mut qlog = Log::default();
    qlog.append(0, 1, EntryKind::LeaderClaim).unwrap();
    let ren = tick(&mut q, 2900);
    let ev = qlog.perform(ren[0], 2950);
    assert!(q.handle(ev).is_empty());
    assert_eq!(q.lease_expiry(), Some(5900));
}

#[test]
fn a_partitioned_primary_stops_serving_at_expiry_and_acks_nothing_after_the_new_claim() {
    let mut log = Log::default();
    let (mut p, _) = primary_at(0);
    log.append(0, 1, EntryKind::LeaderClaim).unwrap();
    // Writes flow until 1500 (clocks: p = real, r = real + 1_000_000).
    let mut r = Lease::starting_at(cfg(), 1_000_000, 0, 0).unwrap();
    let t = p.start_data_append(1500).unwrap();
    log.append(t.prev_id, t.epoch, EntryKind::Data).unwrap();
    p.handle(Event::AppendAcked { token: t.token, last_id: 2, now_ms: 1510 });
    assert!(p.can_ack_writes(1510));
    log.feed(&mut r, 0, 1_001_520);
    // Partition at 1600: the next data append reaches the log, but its acknowledgement
    // only arrives after the partition heals at 9000. Renewals cannot be sent.
    let t = p.start_data_append(1600).unwrap();
    log.append(t.prev_id, t.epoch, EntryKind::Data).unwrap();
    let r_read_at = 1_001_700;
    log.feed(&mut r, 2, r_read_at);
    for now in (1601..4600).step_by(5) {
        tick(&mut p, now);
        // Lease from the last acknowledged send (1500): serving ends at 4500.
        assert_eq!(p.can_serve_reads(now), now < 4500, "at {now}");
    }
    assert_eq!(p.role(), Role::Replica, "stepped down at expiry");
    // The replica claims (backoff from its read at real 1700) and wins.
    let c = tick(&mut r, r_read_at + 3214);
    let claim_real = 1700 + 3214 + 6;
    let ev = log.perform(c[0], 1_000_000 + claim_real);
    r.handle(ev);
    assert_eq!(r.role(), Role::Primary);
    assert!(claim_real > 4500, "the new claim lands after the old lease");
    // The partition heals: the old primary hears its data append was acknowledged. The
    // write is in the log, but it must not tell the client OK after the new claim.
    p.handle(Event::AppendAcked { token: t.token, last_id: 3, now_ms: 9000 });
    assert!(!p.can_ack_writes(9000));
    assert!(!p.can_serve_reads(9000));
    assert_eq!(p.role(), Role::Replica);
}

#[test]
fn clock_drift_within_the_bound_cannot_overlap_leases() {
    // The worst case the bound allows: the primary's clock runs slow by 1%, the replica's
    // fast by 1%, and the replica reads the renewal the instant it is sent. Real time in
    // microseconds; a local clock shows whole milliseconds.
    let c = cfg();
    let ppm = c.max_drift_ppm as u128;
    let local = |real_us: u64, fast: bool| -> u64 {
        let rate = if fast { PPM + ppm } else { PPM - ppm };
        (real_us as u128 * rate / PPM / 1000) as u64
    };
    // Returns (last real us the primary serves, first real us the replica claims).
    let race = |backoff: u64| -> (u64, u64) {
        let cfgb = Config { backoff_ms: backoff, ..c.clone() };
        let mut p = Lease::unchecked(cfgb.clone(), 0, 0, 0);
        let mut r = Lease::unchecked(cfgb, 0, 0, 0);
        let mut log = Log::default();
        // p claims the empty log at real 0.
        let a = p.handle(Event::TailReached { tail_id: 0, now_ms: 0 });
        let ev = log.perform(a[0], 0);
        p.handle(ev);
        // r reads the claim at real 0 too, with a fast clock.
        log.feed(&mut r, 0, local(0, true));
        let mut p_last_serving = None;
        let mut r_first_claim = None;
        for real_us in (0..8_000_000u64).step_by(250) {
            if p.can_serve_reads(local(real_us, false)) {
                p_last_serving = Some(real_us);
            }
            if r_first_claim.is_none() && claim_of(&tick(&mut r, local(real_us, true))).is_some() {
                r_first_claim = Some(real_us);
            }
        }
        (p_last_serving.unwrap(), r_first_claim.unwrap())
    };
    for backoff in [Config::min_backoff_ms(3000, c.max_drift_ppm), c.backoff_ms] {
        let (p_end, r_claim) = race(backoff);
        assert!(p_end < r_claim, "backoff {backoff}: old lease served until {p_end} us, claim at {r_claim} us");
    }
    // The test has teeth: a backoff equal to the lease (what validation refuses) lets the
    // fast replica claim while the slow primary still serves.
    let (p_end, r_claim) = race(3000);
    assert!(r_claim < p_end, "expected an overlap with backoff = lease: {r_claim} vs {p_end}");
}

#[test]
fn a_claim_acknowledged_after_its_own_lease_is_not_used() {
    let mut l = Lease::new(cfg(), 0).unwrap();
    let (token, _, _) = claim_of(&l.handle(Event::TailReached { tail_id: 0, now_ms: 0 })).unwrap();
    let a = l.handle(Event::AppendAcked { token, last_id: 1, now_ms: 3000 });
    assert_eq!(a, vec![Action::ClaimLost { resume_after: 0 }]);
    assert_eq!(l.role(), Role::Replica);
    assert!(!l.can_serve_reads(3000));
    // It reads its own claim and later claims anew, with a higher epoch.
    read(&mut l, 1, 1, EntryKind::LeaderClaim, true, 3001);
    assert!(tick(&mut l, 3001 + 3213).is_empty());
    let (_, prev, epoch) = claim_of(&tick(&mut l, 3001 + 3214)).unwrap();
    assert_eq!((prev, epoch), (1, 2));
}

#[test]
fn a_claim_with_unknown_outcome_reads_on_before_claiming_again() {
    let mut l = Lease::starting_at(cfg(), 0, 4, 1).unwrap();
    l.handle(Event::TailReached { tail_id: 4, now_ms: 0 });
    let (token, prev, _) = claim_of(&tick(&mut l, 3214)).unwrap();
    assert_eq!(prev, 4);
    let a = l.handle(Event::AppendFailed { token, now_ms: 3300 });
    assert_eq!(a, vec![Action::ClaimLost { resume_after: 4 }]);
    assert!(tick(&mut l, 100_000).is_empty(), "not caught up: the claim may have landed");
    // It had not: the tail is still 4. Claim again after the backoff from the failure.
    let a = l.handle(Event::TailReached { tail_id: 4, now_ms: 100_001 });
    let (_, prev, epoch) = claim_of(&a).unwrap();
    assert_eq!((prev, epoch), (4, 3), "epochs never repeat, even for lost claims");
}

#[test]
fn a_primary_that_tails_learns_its_in_doubt_append_landed() {
    let (mut p, _) = primary_at(0);
    let t = p.start_data_append(100).unwrap();
    // The transport gave up, but the append landed as id 2.
    assert!(p.handle(Event::AppendFailed { token: t.token, now_ms: 400 }).is_empty());
    assert_eq!(p.lease_expiry(), Some(3000), "no extension for an append not known to land");
    assert!(read(&mut p, 2, 1, EntryKind::Data, true, 410).is_empty());
    let t = p.start_data_append(420).unwrap();
    assert_eq!(t.prev_id, 2, "appends after it instead of conflicting with itself");
}

#[test]
fn a_primary_that_reads_a_newer_epoch_steps_down() {
    let (mut p, _) = primary_at(0);
    // Its own entries are nothing to worry about.
    assert!(read(&mut p, 1, 1, EntryKind::LeaderClaim, true, 100).is_empty());
    assert_eq!(p.role(), Role::Primary);
    let a = read(&mut p, 2, 2, EntryKind::LeaderClaim, true, 200);
    assert_eq!(stepped_down(&a), Some(StepDownReason::Deposed));
    assert!(!p.can_serve_reads(200));
    assert_eq!(p.epoch(), 2);
}

#[test]
fn format_too_new_stops_everything() {
    let (mut p, _) = primary_at(0);
    let a = p.handle(Event::FormatTooNew { now_ms: 500 });
    assert_eq!(stepped_down(&a), Some(StepDownReason::FormatTooNew));
    assert_eq!(a.last(), Some(&Action::Stopped));
    assert_eq!(p.role(), Role::Stopped);
    assert!(!p.can_serve_reads(500));
    let mut r = Lease::new(cfg(), 0).unwrap();
    assert_eq!(r.handle(Event::FormatTooNew { now_ms: 1 }), vec![Action::Stopped]);
    // Nothing brings it back: no claims however long it waits at the tail.
    assert!(r.handle(Event::TailReached { tail_id: 0, now_ms: 2 }).is_empty());
    assert!(tick(&mut r, 1_000_000).is_empty());
    assert!(r.start_data_append(1_000_000).is_none());
    assert_eq!(r.next_wakeup(), None);
}

#[test]
fn time_never_runs_backwards_for_the_lease() {
    let (mut p, _) = primary_at(0);
    tick(&mut p, 3500);
    assert_eq!(p.role(), Role::Replica);
    let (mut p, _) = primary_at(0);
    p.handle(Event::Tick { now_ms: 2999 });
    assert!(p.can_serve_reads(2999));
    // A query with an older time than already seen is judged at the newer one.
    p.handle(Event::Tick { now_ms: 2999 });
    assert!(p.can_serve_reads(10));
    tick(&mut p, 3000);
    assert!(!p.can_serve_reads(10));
}

#[test]
fn a_resigning_primary_steps_down_and_holds_off_while_a_replica_takes_over() {
    let (mut p, _) = primary_at(0);
    let mut r = Lease::new(cfg(), 0).unwrap();
    // The replica read the claim (id 1) at the tail at time 10.
    assert!(read(&mut r, 1, 1, EntryKind::LeaderClaim, true, 10).is_empty());
    let a = p.resign(500, cfg().backoff_ms);
    assert_eq!(stepped_down(&a), Some(StepDownReason::Resigned));
    assert!(a.contains(&Action::ServeReads(false)));
    assert_eq!(p.role(), Role::Replica);
    assert!(!p.can_serve_reads(501), "a resigned primary serves nothing");
    // The old primary reads its claim back and is at the tail, but holds.
    read(&mut p, 1, 1, EntryKind::LeaderClaim, true, 600);
    let backoff = cfg().backoff_ms;
    assert_eq!(claim_of(&tick(&mut p, 500 + 2 * backoff - 1)), None, "held off past its backoff");
    // The replica claims first: its backoff ran from the older entry.
    let (_, prev, epoch) = claim_of(&tick(&mut r, 10 + backoff)).expect("the replica claims after its backoff");
    assert_eq!((prev, epoch), (1, 2));
    assert!(10 + backoff < 500 + 2 * backoff);
    // With nobody else claiming, the old primary claims again after the hold.
    assert!(claim_of(&tick(&mut p, 600 + 2 * backoff)).is_some(), "claims again once the hold is over");
    // Resigning as a replica does nothing.
    let mut q = Lease::new(cfg(), 0).unwrap();
    assert!(q.resign(5, 100).is_empty());
}
