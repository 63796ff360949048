//! Dumping and loading the data set in bounded chunks, and the order-independent digest
//! that snapshots and the effects invariant compare.
//!
//! A chunk is a run of key records (`keyspace::record`), each after its db u8.
//! ACL record (first chunk only): 0xFF | len u32 | `ACL SETUSER name reset …` as RESP, one
//!   per user set through the log (`acl::cmd::dump_users`); not counted as a key.
//! The chunk envelope (version, checksum) is the snapshot writer's job.

use alloc::string::String;
use alloc::vec::Vec;

use crate::engine::Engine;
use crate::keyspace::object::{NO_EXPIRE, Value};
use crate::keyspace::record::{Cur, decode_key_record, encode_value_with_key, put_bytes};
use crate::server::state::{NUM_DBS, State};
use xxhash_rust::xxh3::xxh3_128;

pub struct DumpChunk {
    pub data: Vec<u8>,
    pub next_db: u32,
    pub next_cursor: u64,
    pub done: bool,
}

/// Marks a record of logged state other than keys (ACL users, function libraries) in a
/// chunk: an effect command that recreates it (no database has this number).
const STATE_RECORD: u8 = 0xFF;

/// Logged state other than keys, as effect commands: the ACL users, then every function
/// library as `FUNCTION LOAD REPLACE <code>`.
fn state_commands(st: &crate::server::state::State) -> Vec<Vec<u8>> {
    let mut out = crate::server::acl::enforce::dump_users(&st.acl);
    for lib in st.functions.libraries.values() {
        let mut cmd = Vec::new();
        crate::protocol::resp::encode_command(&mut cmd, &[&b"FUNCTION"[..], b"LOAD", b"REPLACE", &lib.code]);
        out.push(cmd);
    }
    out
}

impl Engine {
    /// Writes whole buckets from (db, cursor) until `max_bytes` is reached. The data set
    /// must not change between calls (the snapshot process owns its engine).
    pub fn dump(&self, mut db: u32, mut cursor: u64, max_bytes: usize) -> DumpChunk {
        let mut data = Vec::new();
        if db == 0 && cursor == 0 {
            for u in state_commands(&self.st) {
                data.push(STATE_RECORD);
                put_bytes(&mut data, &u);
            }
        }
        while (db as usize) < NUM_DBS {
            let d = &self.st.dbs[db as usize];
            loop {
                if d.is_empty() {
                    cursor = 0;
                    break;
                }
                cursor = d.keys.scan(cursor, |k, e| {
                    data.push(db as u8);
                    encode_value_with_key(&mut data, k, e.expire_at, &e.val);
                });
                if cursor == 0 {
                    break;
                }
                if data.len() >= max_bytes {
                    return DumpChunk { data, next_db: db, next_cursor: cursor, done: false };
                }
            }
            db += 1;
            if data.len() >= max_bytes && (db as usize) < NUM_DBS {
                return DumpChunk { data, next_db: db, next_cursor: 0, done: false };
            }
        }
        DumpChunk { data, next_db: NUM_DBS as u32, next_cursor: 0, done: true }
    }

    /// Loads key records; validates every length, never panics on bad input.
    pub fn load(&mut self, chunk: &[u8]) -> Result<u32, String> {
        let mut c = Cur { b: chunk, pos: 0 };
        let mut n = 0;
        let seed = self.st.seed;
        while c.pos < chunk.len() {
            if chunk[c.pos] == STATE_RECORD {
                c.pos += 1;
                let cmd = c.bytes()?;
                self.apply(&[&[0u8][..], cmd].concat(), self.st.now_us).map_err(|e| alloc::format!("state record: {e}"))?;
                continue;
            }
            let db = c.u8()? as usize;
            if db >= NUM_DBS {
                return Err(alloc::format!("database {} out of range", db));
            }
            let (key, expire, val) = decode_key_record(&mut c, seed, self.st.config.list_max_listpack_size)?;
            let d = &mut self.st.dbs[db];
            if d.keys.contains_key(key) {
                return Err(String::from("duplicate key in snapshot"));
            }
            d.add(key, val, 0);
            if expire != NO_EXPIRE {
                d.set_expire(key, expire);
            }
            n += 1;
        }
        Ok(n)
    }

    /// Order-independent digest: the wrapping sum of a 128-bit hash of every key record,
    /// where a hash's fields are themselves summed, so iteration order never matters and
    /// string encodings (int/embstr/raw) do not either.
    pub fn digest(&self) -> [u8; 16] {
        state_digest(&self.st)
    }
}

/// [`Engine::digest`] of a state (DEBUG DIGEST reads it from a command).
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
                        let mut p = Vec::with_capacity(f.len() + v.len() + 8);
                        put_bytes(&mut p, f);
                        put_bytes(&mut p, v);
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
