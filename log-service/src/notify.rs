//! In-process tail wake-ups: one `watch` channel per log carrying the highest id known to
//! be committed. Appends in this process and NOTIFYs from other instances both feed it;
//! long-polling readers subscribe before they read so no wake-up can slip between. Whether
//! any reader waits is what a PostgreSQL instance listens by (store/pg.rs).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// A reader waiting on a log this instance appended to within this long is woken by those
/// appends in-process; past it, the writer may have moved to another instance.
pub const WRITER_HERE: Duration = Duration::from_secs(10);

struct Tail {
    tx: watch::Sender<u64>,
    /// When this process last appended to the log.
    appended_here: Option<Instant>,
}

#[derive(Clone, Default)]
pub struct Tails {
    inner: Arc<Mutex<HashMap<String, Tail>>>,
    /// Told of every new subscriber (a permit is kept if nobody is waiting for one).
    subscribed: Arc<tokio::sync::Notify>,
}

impl Tails {
    pub fn new() -> Self {
        Self::default()
    }

    fn with_tail<T>(&self, log: &str, f: impl FnOnce(&mut Tail) -> T) -> T {
        let mut map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(map.entry(log.to_owned()).or_insert_with(|| Tail { tx: watch::channel(0).0, appended_here: None }))
    }

    fn sender(&self, log: &str) -> watch::Sender<u64> {
        self.with_tail(log, |t| t.tx.clone())
    }

    pub fn subscribe(&self, log: &str) -> watch::Receiver<u64> {
        let rx = self.sender(log).subscribe();
        self.subscribed.notify_one();
        rx
    }

    /// As [`advance`](Self::advance), for an append made by this process at `now`.
    pub fn advance_here(&self, log: &str, id: u64, now: Instant) {
        let tx = self.with_tail(log, |t| {
            t.appended_here = Some(now);
            t.tx.clone()
        });
        Self::advance_to(&tx, id);
    }

    /// Whether, at `now`, a reader waits on a log whose appends may come through another
    /// instance (none made here within [`WRITER_HERE`]): only those need other instances'
    /// NOTIFYs.
    pub fn waits_on_others(&self, now: Instant) -> bool {
        let map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        map.values().any(|t| t.tx.receiver_count() > 0 && t.appended_here.is_none_or(|at| now.saturating_duration_since(at) >= WRITER_HERE))
    }

    /// Returns once [`waits_on_others`](Self::waits_on_others) holds (looked at on each new
    /// subscriber, and every second as appends here age).
    pub async fn until_waiting_on_others(&self) {
        while !self.waits_on_others(Instant::now()) {
            let _ = tokio::time::timeout(Duration::from_secs(1), self.subscribed.notified()).await;
        }
    }

    /// Wakes every subscribed reader to read again: appends it could have missed (while
    /// nothing here listened for other instances') are in the store.
    pub fn poke(&self) {
        for t in self.inner.lock().unwrap_or_else(|p| p.into_inner()).values() {
            t.tx.send_modify(|_| {});
        }
    }

    /// Records that `log` has entries up to `id`; wakes subscribers only if that is news.
    pub fn advance(&self, log: &str, id: u64) {
        Self::advance_to(&self.sender(log), id);
    }

    fn advance_to(tx: &watch::Sender<u64>, id: u64) {
        let woke = tx.send_if_modified(|cur| {
            if id > *cur {
                *cur = id;
                true
            } else {
                false
            }
        });
        if woke {
            metrics::counter!("memoria_log_tail_advances_total").increment(1);
        }
    }

    /// Forgets the known tail (after truncation or a failover, the next read re-learns it).
    pub fn reset(&self, log: &str) {
        self.sender(log).send_replace(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn advance_wakes_only_forward() {
        let t = Tails::new();
        let mut rx = t.subscribe("a");
        t.advance("a", 5);
        rx.changed().await.expect("sender alive");
        assert_eq!(*rx.borrow_and_update(), 5);
        t.advance("a", 3);
        assert!(!rx.has_changed().expect("sender alive"));
        t.advance("b", 9);
        assert!(!rx.has_changed().expect("sender alive"));
    }

    #[tokio::test]
    async fn readers_wait_on_others_unless_this_process_writes_and_a_poke_wakes_them() {
        let t = Tails::new();
        let t0 = Instant::now();
        t.advance("a", 1);
        assert!(!t.waits_on_others(t0), "a tail nobody reads has no waiter");
        let waiting = tokio::spawn({
            let t = t.clone();
            async move { t.until_waiting_on_others().await }
        });
        let mut rx = t.subscribe("a");
        waiting.await.expect("a subscriber ends the wait");
        assert!(t.waits_on_others(t0));
        t.poke();
        rx.changed().await.expect("a poke wakes the reader");
        assert_eq!(*rx.borrow_and_update(), 1, "a poke moves nothing");
        // A log appended to here: its reader is woken in-process.
        t.advance_here("a", 2, t0);
        assert!(!t.waits_on_others(t0), "the writer's own reader needs no NOTIFY");
        assert!(!t.waits_on_others(t0 + WRITER_HERE / 2));
        assert!(t.waits_on_others(t0 + WRITER_HERE), "appends here stopped: the writer may be elsewhere now");
        t.advance_here("a", 3, t0 + WRITER_HERE);
        let other = t.subscribe("b");
        assert!(t.waits_on_others(t0 + WRITER_HERE), "a reader of a log written elsewhere does");
        drop(other);
        drop(rx);
        assert!(!t.waits_on_others(t0 + 2 * WRITER_HERE), "readers gone are no longer waiting");
    }
}
