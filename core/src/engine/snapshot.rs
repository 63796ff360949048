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
use crate::keyspace::object::NO_EXPIRE;
use crate::keyspace::record::{Cur, decode_key_record, encode_value_with_key, put_bytes};

pub struct DumpChunk {
    pub data: Vec<u8>,
    pub next_db: u32,
    pub next_cursor: u64,
    pub done: bool,
}

/// Marks a record of logged state other than keys (ACL users, function libraries) in a
/// chunk: an effect command that recreates it (no database has this number).
const STATE_RECORD: u8 = 0xFF;

impl Engine {
    /// Writes whole buckets from (db, cursor) until `max_bytes` is reached. The data set
    /// must not change between calls (the snapshot process owns its engine).
    pub fn dump(&self, mut db: u32, mut cursor: u64, max_bytes: usize) -> DumpChunk {
        let mut data = Vec::new();
        if db == 0 && cursor == 0 {
            for u in crate::server::digest::state_commands(&self.st) {
                data.push(STATE_RECORD);
                put_bytes(&mut data, &u);
            }
        }
        let dbs = self.st.dbs.len();
        while (db as usize) < dbs {
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
            if data.len() >= max_bytes && (db as usize) < dbs {
                return DumpChunk { data, next_db: db, next_cursor: 0, done: false };
            }
        }
        DumpChunk { data, next_db: dbs as u32, next_cursor: 0, done: true }
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
            // A byte below 0xFF (STATE_RECORD) names it: within MAX_DBS. A snapshot of a
            // node with more databases than this one's `databases` keeps its data.
            self.st.ensure_dbs(db + 1);
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
        crate::server::digest::state_digest(&self.st)
    }
}
