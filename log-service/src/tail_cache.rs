//! The newest entries this service appended, per log, kept in memory. Replicas read just
//! behind the tail: serving them from here spares the store a read of what it has just
//! written (in SQLite, pages re-read from the WAL) and the re-hash of entries whose
//! checksums this service computed itself. Committed entries never change, so a cached
//! entry is right for as long as it is kept.
//!
//! Only a contiguous run is kept. An append that does not extend it (another service
//! instance wrote in between) starts a new run, so the cache never has holes; what it
//! lacks is read from the store.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::entry::Entry;

pub struct TailCache {
    runs: Mutex<HashMap<String, Run>>,
    /// Payload bytes kept per log; the oldest entries go first.
    budget: usize,
}

#[derive(Default)]
struct Run {
    entries: VecDeque<Entry>,
    bytes: usize,
}

impl Run {
    /// Whether the entry right after `after` is in this run or newer than all of it
    /// (a reader caught up or ahead), rather than older than its first entry.
    fn reaches_back_to(&self, after: u64) -> bool {
        self.entries.front().is_some_and(|first| after >= first.id.saturating_sub(1))
    }
}

/// Entries served from memory, and the highest id the cache knows of.
#[derive(Debug, PartialEq, Eq)]
pub struct Cached {
    pub entries: Vec<Entry>,
    pub last_id: u64,
}

impl TailCache {
    pub fn new(budget: usize) -> TailCache {
        TailCache { runs: Mutex::new(HashMap::new()), budget }
    }

    /// Records committed `rows` (contiguous ids, in order) of `log`.
    pub fn appended(&self, log: &str, rows: &[Entry]) {
        let (Some(first), true) = (rows.first(), self.budget > 0) else { return };
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        let run = runs.entry(log.to_owned()).or_default();
        if run.entries.back().is_some_and(|e| e.id + 1 != first.id) {
            *run = Run::default();
        }
        for e in rows {
            run.bytes += e.payload.len();
            run.entries.push_back(e.clone());
        }
        // The newest entry always stays, however big: it is what a caught-up reader needs.
        while run.bytes > self.budget && run.entries.len() > 1 {
            let old = run.entries.pop_front().expect("more than one entry");
            run.bytes -= old.payload.len();
        }
    }

    /// Up to `limit` entries after `after`, if the cache holds the one right after it.
    /// None sends the reader to the store (nothing newer here, or `after` is older than
    /// the run).
    pub fn read(&self, log: &str, after: u64, limit: usize) -> Option<Cached> {
        let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        let run = runs.get(log)?;
        let first = run.entries.front()?.id;
        let last_id = run.entries.back()?.id;
        if !run.reaches_back_to(after) || after >= last_id {
            return None;
        }
        let skip = (after + 1 - first) as usize;
        let entries = run.entries.iter().skip(skip).take(limit.max(1)).cloned().collect();
        Some(Cached { entries, last_id })
    }

    /// Whether a read after `after` is answered from here: the cache holds what follows
    /// it, or the reader is caught up with (or ahead of) the newest cached entry.
    pub fn covers(&self, log: &str, after: u64) -> bool {
        let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.get(log).is_some_and(|r| r.reaches_back_to(after))
    }

    /// The newest id of `log` this cache holds.
    pub fn last_id(&self, log: &str) -> Option<u64> {
        let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.get(log)?.entries.back().map(|e| e.id)
    }

    /// Drops the entries of `log` before `before`, as the store did: readers behind a
    /// truncation are told so by the store, as they would be without the cache.
    pub fn truncate(&self, log: &str, before: u64) {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        let Some(run) = runs.get_mut(log) else { return };
        while run.entries.front().is_some_and(|e| e.id < before) {
            let old = run.entries.pop_front().expect("checked");
            run.bytes -= old.payload.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::GENESIS;
    use crate::entry::Kind;

    fn rows(ids: std::ops::RangeInclusive<u64>, size: usize) -> Vec<Entry> {
        ids.map(|id| Entry { id, prev_id: id - 1, epoch: 1, kind: Kind::Data, format: 1, payload: vec![id as u8; size].into(), checksum: GENESIS }).collect()
    }

    fn ids(c: &Option<Cached>) -> Vec<u64> {
        c.as_ref().map(|c| c.entries.iter().map(|e| e.id).collect()).unwrap_or_default()
    }

    #[test]
    fn serves_what_follows_after_within_the_run() {
        let c = TailCache::new(1 << 20);
        c.appended("a", &rows(1..=3, 10));
        c.appended("a", &rows(4..=5, 10));
        assert_eq!(ids(&c.read("a", 0, 100)), vec![1, 2, 3, 4, 5]);
        assert_eq!(ids(&c.read("a", 3, 100)), vec![4, 5]);
        assert_eq!(ids(&c.read("a", 1, 2)), vec![2, 3]);
        assert_eq!(c.read("a", 2, 100).unwrap().last_id, 5);
        // Caught up, or another log: the store answers (and the reader waits there).
        assert_eq!(c.read("a", 5, 100), None);
        assert_eq!(c.read("b", 0, 100), None);
    }

    #[test]
    fn covers_what_follows_the_run_start_and_a_caught_up_reader() {
        let c = TailCache::new(1 << 20);
        assert!(!c.covers("l", 0), "nothing cached");
        c.appended("l", &rows(5..=7, 10));
        assert!(!c.covers("l", 3), "entry 4 is not here");
        assert!(c.covers("l", 4));
        assert!(c.covers("l", 6));
        assert!(c.covers("l", 7), "caught up: waits for the next append");
        assert!(c.covers("l", 9), "ahead of the cache: the store says so, not a long read");
        assert!(c.covers("l", u64::MAX), "a client's `after` at the top of the range is ahead, not wrapped");
        assert!(!c.covers("other", 7));
    }

    #[test]
    fn a_gap_starts_a_new_run() {
        let c = TailCache::new(1 << 20);
        c.appended("a", &rows(1..=3, 10));
        // Ids 4..=6 were written through another instance.
        c.appended("a", &rows(7..=8, 10));
        assert_eq!(c.read("a", 3, 100), None, "4..=6 are not here");
        assert_eq!(c.read("a", 0, 100), None);
        assert_eq!(ids(&c.read("a", 6, 100)), vec![7, 8]);
    }

    #[test]
    fn the_budget_evicts_the_oldest_but_keeps_the_newest() {
        let c = TailCache::new(100);
        c.appended("a", &rows(1..=10, 20));
        assert_eq!(ids(&c.read("a", 5, 100)), vec![6, 7, 8, 9, 10]);
        assert_eq!(c.read("a", 4, 100), None, "5 was evicted");
        c.appended("a", &rows(11..=11, 500));
        assert_eq!(ids(&c.read("a", 10, 100)), vec![11]);
        assert_eq!(c.read("a", 9, 100), None);
        c.appended("a", &rows(12..=13, 1));
        c.truncate("a", 12);
        assert_eq!(c.read("a", 10, 100), None, "11 was truncated");
        assert_eq!(ids(&c.read("a", 11, 100)), vec![12, 13]);
        c.truncate("a", 14);
        assert_eq!(c.read("a", 13, 100), None);
        c.appended("a", &rows(14..=14, 1));
        assert_eq!(ids(&c.read("a", 13, 100)), vec![14]);
        let off = TailCache::new(0);
        off.appended("a", &rows(1..=2, 1));
        assert_eq!(off.read("a", 0, 10), None);
    }
}
