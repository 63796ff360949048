//! Active expiry: on each host tick, sample keys with a TTL and delete the expired ones,
//! repeating while a sample is more than a quarter expired (Redis's activeExpireCycle,
//! bounded by sample rounds instead of wall time since the engine has no clock).

use alloc::vec::Vec;

use crate::server::ctx::emit;
use crate::server::state::State;

const SAMPLE: usize = 20;
const MAX_ROUNDS_PER_DB: usize = 16;

pub fn active_expire_cycle(st: &mut State, fx: &mut Vec<u8>) {
    if st.replica_mode || st.writes_paused() {
        return;
    }
    let effort = st.config.value("active-expire-effort").and_then(|v| v.parse::<usize>().ok()).unwrap_or(1);
    let ndb = st.dbs.len();
    for i in 0..ndb {
        let db = (st.expire_cursor_db + i) % ndb;
        for _ in 0..MAX_ROUNDS_PER_DB * effort {
            let n = st.dbs[db].expires.len();
            if n == 0 {
                break;
            }
            let mut expired = Vec::new();
            let samples = SAMPLE.min(n);
            for _ in 0..samples {
                let Some((k, _)) = st.dbs[db].expires.random(&mut st.rng) else { break };
                let at = st.dbs[db].keys.get(k).map(|e| e.expire_at).unwrap_or(i64::MAX);
                if at != crate::keyspace::object::NO_EXPIRE && at <= st.now_ms && !expired.iter().any(|x: &Vec<u8>| x == k) {
                    expired.push(k.to_vec());
                }
            }
            for k in &expired {
                st.dbs[db].remove(k);
                st.stats.expired_keys += 1;
                emit(fx, db, &[b"DEL", k]);
                st.signal_modified_key(db, k);
                st.notify(crate::server::notify::EXPIRED, "expired", k, db);
            }
            if expired.len() * 4 <= samples {
                break;
            }
        }
        crate::server::field_expiry::active_cycle(st, db, effort, fx);
    }
    st.expire_cursor_db = (st.expire_cursor_db + 1) % ndb;
}
