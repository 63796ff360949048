//! Per-field expiry of a hash (Redis 7.4's hash-field expiration): each field with a TTL
//! maps to its absolute expiry in unix ms, and an index by time yields the earliest
//! expiries first, so expiring k fields costs O(k log n) whatever the hash's size.
//! A hash without any field TTL carries none of this (see `HashValue`).

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

/// The largest absolute field expiry Redis accepts, in unix ms (its HFE_MAX_ABS_TIME_MSEC:
/// 2^48 - 1 with two bits reserved).
pub const MAX_ABS_TIME_MS: i64 = ((1i64 << 48) - 1) >> 2;

#[derive(Clone, Default)]
pub struct FieldTtls {
    by_field: BTreeMap<Box<[u8]>, i64>,
    by_time: BTreeSet<(i64, Box<[u8]>)>,
}

impl FieldTtls {
    pub fn len(&self) -> usize {
        self.by_field.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_field.is_empty()
    }

    pub fn get(&self, field: &[u8]) -> Option<i64> {
        self.by_field.get(field).copied()
    }

    /// Sets (or moves) a field's expiry.
    pub fn set(&mut self, field: &[u8], at: i64) {
        if let Some(old) = self.by_field.insert(field.into(), at) {
            self.by_time.remove(&(old, Box::from(field)));
        }
        self.by_time.insert((at, field.into()));
    }

    /// Forgets a field's expiry; returns it if there was one.
    pub fn remove(&mut self, field: &[u8]) -> Option<i64> {
        let at = self.by_field.remove(field)?;
        self.by_time.remove(&(at, Box::from(field)));
        Some(at)
    }

    /// The earliest expiry.
    pub fn min(&self) -> Option<i64> {
        self.by_time.first().map(|(at, _)| *at)
    }

    /// Up to `limit` fields whose expiry is at or before `now`, earliest first.
    pub fn due(&self, now: i64, limit: usize) -> Vec<Box<[u8]>> {
        self.by_time.iter().take_while(|(at, _)| *at <= now).take(limit).map(|(_, f)| f.clone()).collect()
    }

    /// How many fields expire at or before `now`.
    pub fn due_count(&self, now: i64) -> usize {
        self.by_time.iter().take_while(|(at, _)| *at <= now).count()
    }

    /// Every field with its expiry, in field order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], i64)> {
        self.by_field.iter().map(|(f, at)| (&**f, *at))
    }

    /// Heap bytes (both indexes: two copies of each field plus tree nodes, estimated).
    pub fn memory_usage(&self) -> u64 {
        use crate::util::memsize::alloc;
        self.by_field.keys().map(|f| 2 * alloc(f.len()) + 2 * 48).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_fields_come_earliest_first_and_moves_leave_no_trace() {
        let mut t = FieldTtls::default();
        t.set(b"a", 30);
        t.set(b"b", 10);
        t.set(b"c", 20);
        t.set(b"a", 5);
        assert_eq!(t.len(), 3);
        assert_eq!(t.min(), Some(5));
        let due: Vec<&[u8]> = Vec::new();
        assert_eq!(t.due(4, 10).iter().map(|f| &**f).collect::<Vec<_>>(), due);
        assert_eq!(t.due(20, 10).iter().map(|f| &**f).collect::<Vec<_>>(), [&b"a"[..], b"b", b"c"]);
        assert_eq!(t.due(20, 2).len(), 2);
        assert_eq!(t.remove(b"b"), Some(10));
        assert_eq!(t.remove(b"b"), None);
        assert_eq!(t.due(i64::MAX, 10).len(), 2);
        assert_eq!(t.by_time.len(), 2);
    }
}
