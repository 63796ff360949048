//! The key tracker: for each key, the log sequence of its newest write that is not yet
//! durable. A reply may only be released once the log has acknowledged every write it
//! observed, so no client ever sees a write that could still be lost.
//!
//! Sequences are the shard's own numbering of its appended batches (1, 2, 3…); the log
//! acknowledges them in order.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;

/// Keys are tracked by a 64-bit hash, not by their bytes: no copy or allocation per
/// written key, and an acknowledgement forgets a key by a lookup of a number. Two keys
/// that share a hash only make a read of one wait for a write of the other, which the
/// rule allows (a reply may come later, never earlier). The hash is seeded per tracker
/// (foldhash's RandomState), so clients cannot aim collisions at each other.
type KeyMap = HashMap<u64, u64, foldhash::fast::RandomState>;

#[derive(Default)]
pub struct Tracker {
    /// Seeds the key hashes.
    keys: foldhash::fast::RandomState,
    /// Key hash → newest pending sequence that wrote it.
    pending: KeyMap,
    /// Keys written per sequence, to forget them once acknowledged.
    by_seq: VecDeque<SeqKeys>,
    /// The newest sequence handed out.
    last: u64,
    /// Every sequence up to this one is durable.
    acked: u64,
    /// The newest sequence with a write of no particular key (FLUSHALL, FLUSHDB…):
    /// until it is durable, every read waits for it.
    everything: u64,
}

/// The key hashes one sequence wrote.
struct SeqKeys {
    seq: u64,
    keys: Vec<u64>,
}

impl Tracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a new sequence for a batch that produced effects.
    pub fn next_seq(&mut self) -> u64 {
        self.last += 1;
        self.by_seq.push_back(SeqKeys { seq: self.last, keys: Vec::new() });
        self.last
    }

    #[cfg(test)]
    pub fn last(&self) -> u64 {
        self.last
    }

    pub fn acked(&self) -> u64 {
        self.acked
    }

    /// Nothing is pending: every read may be answered at once, whatever it read.
    pub fn is_clear(&self) -> bool {
        self.acked >= self.last
    }

    /// The sequence a reply that read `keys` must wait for (0: nothing pending).
    pub fn need_for<'a, I: IntoIterator<Item = &'a [u8]>>(&self, keys: I) -> u64 {
        let all = if self.everything > self.acked { self.everything } else { 0 };
        if self.pending.is_empty() {
            return all;
        }
        keys.into_iter().filter_map(|k| self.pending.get(&self.keys.hash_one(k))).copied().max().unwrap_or(0).max(all)
    }

    /// What a whole-keyspace read (DBSIZE, KEYS, SCAN…) must wait for: everything.
    pub fn need_all(&self) -> u64 {
        if self.is_clear() { 0 } else { self.last }
    }

    /// Records that sequence `seq` (the current one) wrote `key`.
    pub fn record(&mut self, seq: u64, key: &[u8]) {
        debug_assert_eq!(seq, self.last);
        let h = self.keys.hash_one(key);
        self.pending.insert(h, seq);
        if let Some(keys) = self.by_seq.back_mut().filter(|k| k.seq == seq) {
            keys.keys.push(h);
        }
    }

    /// Sequence `seq` (the current one) wrote no particular key but may have changed any
    /// (FLUSHALL): every read waits for it.
    pub fn record_everything(&mut self, seq: u64) {
        debug_assert_eq!(seq, self.last);
        self.everything = seq;
    }

    /// Everything up to `seq` is durable: forget keys whose newest write it covers.
    pub fn ack(&mut self, seq: u64) {
        self.acked = self.acked.max(seq);
        while self.by_seq.front().is_some_and(|k| k.seq <= seq) {
            let done = self.by_seq.pop_front().expect("checked");
            for &k in &done.keys {
                // Only if no later sequence wrote it since.
                if let std::collections::hash_map::Entry::Occupied(e) = self.pending.entry(k)
                    && *e.get() == done.seq
                {
                    e.remove();
                }
            }
        }
    }

    /// The log refused or lost sequences after `acked`: nothing pending can be trusted.
    pub fn reset(&mut self) {
        self.pending.clear();
        self.by_seq.clear();
        self.last = self.acked;
        self.everything = 0;
    }

    /// Keys with a write not yet durable.
    pub fn pending_keys(&self) -> usize {
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_wait_for_the_newest_pending_write_of_their_keys() {
        let mut t = Tracker::new();
        assert_eq!(t.need_for([&b"a"[..]]), 0);
        let s1 = t.next_seq();
        t.record(s1, b"a");
        let s2 = t.next_seq();
        t.record(s2, b"a");
        t.record(s2, b"b");
        assert_eq!(t.need_for([&b"a"[..]]), 2);
        assert_eq!(t.need_for([&b"c"[..]]), 0);
        assert_eq!(t.need_all(), 2);
        t.ack(1);
        // a's newest write (2) is still pending.
        assert_eq!(t.need_for([&b"a"[..]]), 2);
        t.ack(2);
        assert_eq!(t.need_for([&b"a"[..], &b"b"[..]]), 0);
        assert_eq!(t.need_all(), 0);
        assert_eq!(t.pending_keys(), 0);
    }

    #[test]
    fn a_write_of_no_particular_key_holds_every_read_until_durable() {
        let mut t = Tracker::new();
        assert!(t.is_clear());
        let s1 = t.next_seq();
        t.record(s1, b"a");
        let s2 = t.next_seq();
        t.record_everything(s2);
        assert!(!t.is_clear());
        // A key no one wrote by name still waits for the FLUSHALL.
        assert_eq!(t.need_for([&b"zzz"[..]]), 2);
        assert_eq!(t.need_for([&b"a"[..]]), 2);
        t.ack(1);
        assert_eq!(t.need_for([&b"zzz"[..]]), 2, "the flush is not durable yet");
        t.ack(2);
        assert_eq!(t.need_for([&b"zzz"[..]]), 0);
        assert!(t.is_clear());
        let s3 = t.next_seq();
        t.record(s3, b"b");
        assert_eq!(t.need_for([&b"zzz"[..]]), 0, "an acknowledged flush holds nothing back");
    }

    #[test]
    fn many_keys_are_told_apart_and_all_forgotten_once_durable() {
        let mut t = Tracker::new();
        let keys: Vec<Vec<u8>> = (0..10_000).map(|i| format!("key:{i}").into_bytes()).collect();
        for chunk in keys.chunks(1000) {
            let s = t.next_seq();
            for k in chunk {
                t.record(s, k);
            }
        }
        assert_eq!(t.pending_keys(), 10_000);
        assert_eq!(t.need_for([&b"key:0"[..]]), 1);
        assert_eq!(t.need_for([&b"key:9999"[..]]), 10);
        assert_eq!(t.need_for([&b"key:10000"[..]]), 0, "never written");
        t.ack(5);
        assert_eq!(t.pending_keys(), 5_000);
        assert_eq!(t.need_for([&b"key:4999"[..]]), 0);
        assert_eq!(t.need_for([&b"key:5000"[..]]), 6);
        t.ack(10);
        assert_eq!(t.pending_keys(), 0);
    }

    #[test]
    fn reset_forgets_unacknowledged() {
        let mut t = Tracker::new();
        let s = t.next_seq();
        t.record(s, b"x");
        t.reset();
        assert_eq!(t.need_for([&b"x"[..]]), 0);
        assert_eq!(t.last(), 0);
    }
}
