//! The digest of a shard's data set: equal on every node holding the same data (the
//! snapshot checks, replicas against their primary, DEBUG DIGEST), whatever order it was
//! written in.

use alloc::vec::Vec;

use xxhash_rust::xxh3::xxh3_128;

use crate::keyspace::object::Value;
use crate::keyspace::record::put_bytes;
use crate::server::state::State;

/// Logged state other than keys, as effect commands: the ACL users, then every function
/// library as `FUNCTION LOAD REPLACE <code>`.
pub fn state_commands(st: &State) -> Vec<Vec<u8>> {
    let mut out = crate::server::acl::enforce::dump_users(&st.acl);
    for lib in st.functions.libraries.values() {
        let mut cmd = Vec::new();
        crate::protocol::resp::encode_command(&mut cmd, &[&b"FUNCTION"[..], b"LOAD", b"REPLACE", &lib.code]);
        out.push(cmd);
    }
    out
}

/// Order-independent digest of a state (the engine's `digest`, DEBUG DIGEST): the
/// wrapping sum of a 128-bit hash of every key record, where a hash's fields are
/// themselves summed, so iteration order never matters and string encodings
/// (int/embstr/raw) do not either.
pub fn state_digest(st: &State) -> [u8; 16] {
    let mut total: u128 = 0;
    // Users and libraries set through the log count too (none: the data alone).
    for u in state_commands(st) {
        total = total.wrapping_add(xxh3_128(&u));
    }
    for (db, d) in st.dbs.iter().enumerate() {
        for (k, e) in d.keys.iter() {
            let mut rec = Vec::with_capacity(k.len() + 32);
            rec.push(db as u8);
            put_bytes(&mut rec, k);
            rec.extend_from_slice(&e.expire_at.to_le_bytes());
            rec.push(e.val.kind().code());
            match &e.val {
                Value::Hash(h) => {
                    let mut sum: u128 = 0;
                    h.for_each(|f, v| {
                        let mut p = Vec::with_capacity(f.len() + v.len() + 16);
                        put_bytes(&mut p, f);
                        put_bytes(&mut p, v);
                        // A field's expiry is part of it (none: nothing added, so hashes
                        // without any digest as before).
                        if let Some(at) = h.ttl(f) {
                            p.extend_from_slice(&at.to_le_bytes());
                        }
                        sum = sum.wrapping_add(xxh3_128(&p));
                    });
                    rec.extend_from_slice(&sum.to_le_bytes());
                }
                Value::Set(s) => {
                    let mut sum: u128 = 0;
                    s.for_each(|m| {
                        let mut p = Vec::with_capacity(m.len() + 4);
                        put_bytes(&mut p, m);
                        sum = sum.wrapping_add(xxh3_128(&p));
                    });
                    rec.extend_from_slice(&sum.to_le_bytes());
                }
                Value::Zset(z) => {
                    let mut sum: u128 = 0;
                    z.for_each(|m, s| {
                        let mut p = Vec::with_capacity(m.len() + 12);
                        put_bytes(&mut p, m);
                        p.extend_from_slice(&s.to_bits().to_le_bytes());
                        sum = sum.wrapping_add(xxh3_128(&p));
                    });
                    rec.extend_from_slice(&sum.to_le_bytes());
                }
                Value::List(l) => {
                    // Order matters: a running hash over the elements, head first.
                    let mut h = xxhash_rust::xxh3::Xxh3::new();
                    l.for_each(false, |x| {
                        h.update(&(x.len() as u32).to_le_bytes());
                        h.update(x);
                        true
                    });
                    rec.extend_from_slice(&h.digest128().to_le_bytes());
                }
                Value::Stream(st) => rec.extend_from_slice(&crate::types::stream::digest(st).to_le_bytes()),
                v => put_bytes(&mut rec, &v.string_bytes().unwrap_or_default()),
            }
            total = total.wrapping_add(xxh3_128(&rec));
        }
    }
    total.to_le_bytes()
}
