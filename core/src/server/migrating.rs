//! Keys a MIGRATE has sent and not finished with. A write to one meanwhile (anything that
//! signals the key modified, as WATCH sees it, a flush or a SWAPDB) keeps it at the
//! source when the transfer ends: the target holds the value as it was sent. Redis blocks
//! its whole server during MIGRATE; Memoria serves other clients, so it must know.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::server::state::watch_key;

#[derive(Default)]
pub struct Migrating {
    /// `db ‖ key` → (migrations in flight that sent it, written since the oldest began).
    keys: BTreeMap<Vec<u8>, (u32, bool)>,
}

impl Migrating {
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// A migration sent `key` of `db`.
    pub fn start(&mut self, db: usize, key: &[u8]) {
        self.keys.entry(watch_key(db, key)).or_insert((0, false)).0 += 1;
    }

    /// `key` of `db` was written.
    pub fn touch(&mut self, db: usize, key: &[u8]) {
        if let Some(k) = self.keys.get_mut(&watch_key(db, key)) {
            k.1 = true;
        }
    }

    /// Every key in flight was (or may have been) written: a flush, a SWAPDB.
    pub fn touch_all(&mut self) {
        self.keys.values_mut().for_each(|k| k.1 = true);
    }

    /// A migration is done with `key` of `db`: whether nothing wrote it meanwhile.
    pub fn finish(&mut self, db: usize, key: &[u8]) -> bool {
        let k = watch_key(db, key);
        let Some(e) = self.keys.get_mut(&k) else { return false };
        let untouched = !e.1;
        e.0 -= 1;
        if e.0 == 0 {
            self.keys.remove(&k);
        }
        untouched
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_between_start_and_finish_is_seen_and_entries_go_with_their_last_migration() {
        let mut m = Migrating::default();
        m.start(0, b"a");
        m.start(0, b"a");
        m.start(1, b"a");
        m.touch(1, b"a");
        m.touch(0, b"zz");
        assert!(m.finish(0, b"a"));
        assert!(!m.finish(1, b"a"));
        m.touch(0, b"a");
        assert!(!m.finish(0, b"a"));
        assert!(m.is_empty());
        assert!(!m.finish(0, b"a"), "unknown keys count as written");
    }
}
