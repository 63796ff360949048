//! In-process tail wake-ups: one `watch` channel per log carrying the highest id known to
//! be committed. Appends in this process and NOTIFYs from other instances both feed it;
//! long-polling readers subscribe before they read so no wake-up can slip between.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

#[derive(Clone, Default)]
pub struct Tails {
    inner: Arc<Mutex<HashMap<String, watch::Sender<u64>>>>,
}

impl Tails {
    pub fn new() -> Self {
        Self::default()
    }

    fn sender(&self, log: &str) -> watch::Sender<u64> {
        let mut map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(log.to_owned()).or_insert_with(|| watch::channel(0).0).clone()
    }

    pub fn subscribe(&self, log: &str) -> watch::Receiver<u64> {
        self.sender(log).subscribe()
    }

    /// Records that `log` has entries up to `id`; wakes subscribers only if that is news.
    pub fn advance(&self, log: &str, id: u64) {
        let woke = self.sender(log).send_if_modified(|cur| {
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
}
