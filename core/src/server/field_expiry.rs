//! Hash-field expiry on the shard (Redis 7.4's HFE): a hash's expired fields are removed
//! when the hash is looked up (lazily, all of them, so every command sees only live
//! fields) and by the active cycle (a bounded number per tick). The removed fields leave
//! as one `HDEL key field…` effect, so a replica or a replay removes exactly what
//! the primary removed: nothing expires by itself while applying effects, and a replica
//! only hides expired fields (`HashValue::live_copy`) until its primary's HDEL comes.

use alloc::vec::Vec;

use crate::keyspace::object::Value;
use crate::server::ctx::emit;
use crate::server::notify;
use crate::server::state::State;

/// Hashes sampled per active round, and fields removed per hash per round.
const SAMPLE: usize = 20;
const FIELDS_PER_HASH: usize = 64;
const MAX_ROUNDS_PER_DB: usize = 16;

/// Removes up to `limit` expired fields of the hash at `key`: HDEL effects, an `hexpired`
/// event, and the key (with a `del` event) once its last field went. Returns how many
/// fields went. The caller has checked that this node may expire (a primary, not paused).
pub fn remove_expired(st: &mut State, db: usize, key: &[u8], fx: &mut Vec<u8>, limit: usize) -> usize {
    let now = st.now_ms;
    let Some(Value::Hash(h)) = st.dbs[db].keys.get_mut(key).map(|e| &mut e.val) else { return 0 };
    let due = h.due(now, limit);
    if due.is_empty() {
        return 0;
    }
    for f in &due {
        h.remove(f);
    }
    let (empty, no_ttls) = (h.is_empty(), !h.has_ttls());
    if no_ttls {
        st.dbs[db].hexpires.remove(key);
    }
    // One HDEL for all of them: one log record per hash, not per field.
    let mut hdel: Vec<&[u8]> = Vec::with_capacity(due.len() + 2);
    hdel.extend_from_slice(&[b"HDEL", key]);
    hdel.extend(due.iter().map(|f| &**f));
    emit(fx, db, &hdel);
    st.stats.expired_subkeys += due.len() as u64;
    st.signal_modified_key(db, key);
    st.notify(notify::HASH, "hexpired", key, db);
    if empty {
        st.dbs[db].remove(key);
        st.notify(notify::GENERIC, "del", key, db);
    }
    due.len()
}

/// Lazy expiry of fields: before a command sees the hash at `key`, its expired fields go.
pub fn expire_fields_if_needed(st: &mut State, db: usize, key: &[u8], fx: &mut Vec<u8>) {
    if st.applying || st.replica_mode || st.writes_paused() {
        return;
    }
    let now = st.now_ms;
    let due = matches!(st.dbs[db].keys.get(key).map(|e| &e.val), Some(Value::Hash(h)) if h.min_ttl().is_some_and(|at| at <= now));
    if due {
        remove_expired(st, db, key, fx, usize::MAX);
    }
}

/// Active expiry of fields in `db` (called from the active expiry cycle): samples hashes
/// with field expiries and removes their due fields, repeating while more than a quarter
/// of a sample had some. Hashes that no longer have any field expiry leave the index.
pub fn active_cycle(st: &mut State, db: usize, effort: usize, fx: &mut Vec<u8>) {
    let now = st.now_ms;
    for _ in 0..MAX_ROUNDS_PER_DB * effort {
        let n = st.dbs[db].hexpires.len();
        if n == 0 {
            return;
        }
        let samples = SAMPLE.min(n);
        let mut picked: Vec<Vec<u8>> = Vec::with_capacity(samples);
        for _ in 0..samples {
            let Some((k, _)) = st.dbs[db].hexpires.random(&mut st.rng) else { break };
            if !picked.iter().any(|p| p == k) {
                picked.push(k.to_vec());
            }
        }
        let mut with_due = 0;
        for k in &picked {
            let min = match st.dbs[db].keys.get(k).map(|e| &e.val) {
                Some(Value::Hash(h)) => h.min_ttl(),
                _ => None,
            };
            match min {
                None => {
                    st.dbs[db].hexpires.remove(k);
                }
                Some(at) if at <= now => {
                    with_due += 1;
                    remove_expired(st, db, k, fx, FIELDS_PER_HASH);
                }
                Some(_) => {}
            }
        }
        if with_due * 4 <= samples {
            return;
        }
    }
}
