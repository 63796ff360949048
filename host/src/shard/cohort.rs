//! Group commit across the clients an append answers. A shard keeps one append in flight,
//! so clients at pipeline 1 split into two cohorts: those an append's answer releases send
//! their next command while the next append (carrying the other cohort) is already on its
//! way, and each request waits about two append round trips. After an answer that released
//! a small group, the next append waits until three quarters of its clients have sent
//! again (or a bound passes), so both cohorts ride one append. Large groups (many clients) already
//! amortise the append: waiting there only adds to its round trip, so they never wait.
//! Measured at pipeline 1, alternating, same binary (docs/DURABLE-PATH-PLAN.md): 50
//! clients +15–22 % SETs/s and −12 % CPU per SET; 500 clients unchanged. Waiting for three
//! quarters instead of half: +5–6 % more at 50 clients (7/8 no better than 3/4).

use std::time::{Duration, Instant};

/// The share of a group's clients the next append waits for, in quarters.
const WANT_OF_4: usize = 3;
/// Groups of released replies in this range wait for their clients.
const MIN_RELEASED: usize = 4;
const MAX_RELEASED: usize = 64;
/// The longest wait (tokio's timers are millisecond-coarse: up to about 2 ms).
const BOUND: Duration = Duration::from_millis(1);
/// Appends that go at once after a wait that ran out (clients that went quiet after a
/// write cost a delay once in a while, not on every append).
const BACKOFF: u32 = 64;

#[derive(Default)]
pub(super) struct Cohort {
    /// The wait in progress: messages still wanted, and until when.
    waiting: Option<(usize, Instant)>,
    /// Command messages received since the wait began.
    arrived: usize,
    backoff: u32,
}

impl Cohort {
    /// An append's answer released `released` replies.
    pub(super) fn released(&mut self, released: usize, now: Instant) {
        if !(MIN_RELEASED..=MAX_RELEASED).contains(&released) {
            return;
        }
        if self.backoff > 0 {
            self.backoff -= 1;
            return;
        }
        self.waiting = Some((released * WANT_OF_4 / 4, now + BOUND));
        self.arrived = 0;
    }

    /// A client's commands came in.
    pub(super) fn arrived(&mut self) {
        self.arrived += 1;
    }

    /// Whether the next append may go now (ending the wait if it is over).
    pub(super) fn ready(&mut self, now: Instant) -> bool {
        let Some((need, until)) = self.waiting else { return true };
        if self.arrived >= need {
            self.waiting = None;
        } else if now >= until {
            self.waiting = None;
            self.backoff = BACKOFF;
        }
        self.waiting.is_none()
    }

    /// When the shard must look again by itself, while waiting.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.waiting.map(|(_, until)| until)
    }

    /// Stop waiting (shutdown: every queued effect goes now).
    pub(super) fn cancel(&mut self) {
        self.waiting = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_group_waits_for_three_quarters_of_its_clients() {
        let t0 = Instant::now();
        let mut c = Cohort::default();
        c.released(20, t0);
        assert!(!c.ready(t0));
        for _ in 0..14 {
            c.arrived();
        }
        assert!(!c.ready(t0));
        c.arrived();
        assert!(c.ready(t0));
        assert_eq!(c.deadline(), None);
    }

    #[test]
    fn groups_too_small_or_too_large_never_wait() {
        let t0 = Instant::now();
        let mut c = Cohort::default();
        for n in [0, 1, 3, 65, 500] {
            c.released(n, t0);
            assert!(c.ready(t0), "{n} released");
        }
    }

    #[test]
    fn a_wait_that_runs_out_lets_the_next_appends_go_at_once() {
        let t0 = Instant::now();
        let mut c = Cohort::default();
        c.released(10, t0);
        assert_eq!(c.deadline(), Some(t0 + BOUND));
        assert!(!c.ready(t0 + BOUND / 2));
        assert!(c.ready(t0 + BOUND));
        for i in 0..BACKOFF {
            c.released(10, t0 + BOUND);
            assert!(c.ready(t0 + BOUND), "append {i} after the timeout waited");
        }
        c.released(10, t0 + BOUND);
        assert!(!c.ready(t0 + BOUND), "waiting resumes after the back-off");
    }

    #[test]
    fn cancel_ends_a_wait() {
        let t0 = Instant::now();
        let mut c = Cohort::default();
        c.released(8, t0);
        c.cancel();
        assert!(c.ready(t0));
    }
}
