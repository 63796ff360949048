//! Dumping and loading the data set in bounded chunks, and the order-independent digest
//! that snapshots and the effects invariant compare.
//!
//! Key record: db u8 | type u8 | expire_at i64 LE | key_len u32 | key | value
//!   type 0 Int:  i64 LE        type 1 Str / 2 Raw: len u32 | bytes
//!   type 4 Hash: encoding u8 (0 listpack, 1 table) | n u32 | n × (len u32 | field, len u32 | value)
//!   Collection types added later use 0x10 | their kind code:
//!   type 0x12 Set: encoding u8 (0 intset, 1 table) | n u32 | n × (len u32 | member)
//!   type 0x13 Zset: encoding u8 (0 listpack, 1 skiplist) | n u32 | n × (len u32 | member, score f64 LE), ascending
//!   type 0x11 List: n u32 | n × (len u32 | element), head first
//!   type 0x16 Stream: len u32 | payload (see `stream::encode`)
//! ACL record (first chunk only): 0xFF | len u32 | `ACL SETUSER name reset …` as RESP, one
//!   per user set through the log (`acl::cmd::dump_users`); not counted as a key.
//! The chunk envelope (version, checksum) is the snapshot writer's job.

use alloc::string::String;
use alloc::vec::Vec;

use crate::engine::{Engine, NUM_DBS};
use crate::keyspace::object::{NO_EXPIRE, Value};
use crate::types::hash::HashValue;
use crate::types::set::SetValue;
use crate::types::zset::ZsetValue;
use xxhash_rust::xxh3::xxh3_128;

pub struct DumpChunk {
    pub data: Vec<u8>,
    pub next_db: u32,
    pub next_cursor: u64,
    pub done: bool,
}

/// Marks an ACL user record in a chunk (no database has this number).
const ACL_RECORD: u8 = 0xFF;

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn encode_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Int(i) => {
            out.push(0);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Value::Str(s) => {
            out.push(1);
            put_bytes(out, s);
        }
        Value::Raw(s) => {
            out.push(2);
            put_bytes(out, s);
        }
        Value::Stream(st) => {
            out.push(0x16);
            let mut payload = Vec::new();
            crate::types::stream::encode(&mut payload, st);
            put_bytes(out, &payload);
        }
        Value::Hash(h) => {
            out.push(4);
            out.push(matches!(h, HashValue::Table(_)) as u8);
            out.extend_from_slice(&(h.len() as u32).to_le_bytes());
            h.for_each(|f, x| {
                put_bytes(out, f);
                put_bytes(out, x);
            });
        }
        Value::Set(s) => {
            out.push(0x12);
            out.push(matches!(s, SetValue::Table(_)) as u8);
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            s.for_each(|m| put_bytes(out, m));
        }
        Value::Zset(z) => {
            out.push(0x13);
            out.push(!z.is_listpack() as u8);
            out.extend_from_slice(&(z.len() as u32).to_le_bytes());
            z.for_each(|m, s| {
                put_bytes(out, m);
                out.extend_from_slice(&s.to_le_bytes());
            });
        }
        Value::List(l) => {
            out.push(0x11);
            out.extend_from_slice(&(l.len() as u32).to_le_bytes());
            l.for_each(false, |x| {
                put_bytes(out, x);
                true
            });
        }
    }
}

pub(crate) struct Cur<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.b.len() - self.pos < n {
            return Err(String::from("truncated key record"));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

impl Engine {
    /// Writes whole buckets from (db, cursor) until `max_bytes` is reached. The data set
    /// must not change between calls (the snapshot process owns its engine).
    pub fn dump(&self, mut db: u32, mut cursor: u64, max_bytes: usize) -> DumpChunk {
        let mut data = Vec::new();
        if db == 0 && cursor == 0 {
            for u in crate::acl::cmd::dump_users(&self.st.acl) {
                data.push(ACL_RECORD);
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
            if chunk[c.pos] == ACL_RECORD {
                c.pos += 1;
                let cmd = c.bytes()?;
                self.apply(&[&[0u8][..], cmd].concat(), self.st.now_us).map_err(|e| alloc::format!("ACL record: {e}"))?;
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
        let mut total: u128 = 0;
        // Users set through the log count too (none: the digest of the data alone).
        for u in crate::acl::cmd::dump_users(&self.st.acl) {
            total = total.wrapping_add(xxh3_128(&u));
        }
        for (db, d) in self.st.dbs.iter().enumerate() {
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
}

/// One key record (without its database byte): the key, its expiry and its value.
/// Validates every length and count; never panics on bad input.
pub(crate) fn decode_key_record<'a>(c: &mut Cur<'a>, seed: u64, fill: i64) -> Result<(&'a [u8], i64, Value), String> {
    let ty_pos = c.pos;
    let ty = c.u8()?;
    let expire = c.i64()?;
    let key = c.bytes()?;
    let val = match ty {
        0 => Value::Int(c.i64()?),
        1 => Value::Str(c.bytes()?.into()),
        2 => Value::Raw(c.bytes()?.to_vec()),
        4 => {
            let table = c.u8()? == 1;
            let count = c.u32()? as usize;
            let mut h = if table { HashValue::Table(crate::types::dict::Dict::new(seed)) } else { HashValue::Listpack(Vec::new()) };
            if count == 0 {
                return Err(alloc::format!("empty hash at byte {}", ty_pos));
            }
            for _ in 0..count {
                let f = c.bytes()?;
                let v = c.bytes()?;
                h.set(f, v);
            }
            if h.len() != count {
                return Err(alloc::format!("repeated hash field at byte {}", ty_pos));
            }
            Value::Hash(h)
        }
        0x12 => {
            let table = c.u8()? == 1;
            let count = c.u32()? as usize;
            if count == 0 {
                return Err(alloc::format!("empty set at byte {}", ty_pos));
            }
            let mut s = if table { SetValue::Table(crate::types::dict::Dict::new(seed)) } else { SetValue::new_intset() };
            for _ in 0..count {
                let m = c.bytes()?;
                if !table && crate::util::parse_i64(m).is_none() {
                    return Err(alloc::format!("non-integer member in an intset at byte {}", ty_pos));
                }
                // No limit on an intset's size here: the snapshot keeps the encoding it had.
                s.add(m, usize::MAX, seed);
            }
            if s.len() != count {
                return Err(alloc::format!("repeated set member at byte {}", ty_pos));
            }
            Value::Set(s)
        }
        0x13 => {
            let skiplist = c.u8()? == 1;
            let count = c.u32()? as usize;
            if count == 0 {
                return Err(alloc::format!("empty zset at byte {}", ty_pos));
            }
            let mut z = if skiplist { ZsetValue::new_skiplist(seed) } else { ZsetValue::new_listpack() };
            // Limits that never convert: the dump says which encoding it had.
            let lim = crate::types::zset::Limits { entries: usize::MAX, value: usize::MAX, seed };
            for _ in 0..count {
                let m = c.bytes()?;
                let s = f64::from_le_bytes(c.take(8)?.try_into().unwrap());
                if s.is_nan() {
                    return Err(alloc::format!("NaN score at byte {}", ty_pos));
                }
                z.add(m, s, crate::types::zset::AddFlags::default(), lim);
            }
            if z.len() != count {
                return Err(alloc::format!("repeated zset member at byte {}", ty_pos));
            }
            Value::Zset(z)
        }
        0x11 => {
            let count = c.u32()? as usize;
            if count == 0 {
                return Err(alloc::format!("empty list at byte {}", ty_pos));
            }
            let mut l = crate::types::list::ListValue::new();
            for _ in 0..count {
                l.push(crate::types::list::End::Tail, c.bytes()?, fill);
            }
            Value::List(alloc::boxed::Box::new(l))
        }
        0x16 => match crate::types::stream::decode(c.bytes()?) {
            Ok(st) => Value::Stream(alloc::boxed::Box::new(st)),
            Err(e) => return Err(alloc::format!("{} at byte {}", e, ty_pos)),
        },
        t => return Err(alloc::format!("unknown value type {} at byte {}", t, ty_pos)),
    };
    Ok((key, expire, val))
}

/// One key record (see the module comment), without its database byte.
pub(crate) fn encode_value_with_key(out: &mut Vec<u8>, key: &[u8], expire: i64, v: &Value) {
    // Type first so the loader can dispatch; value bytes follow the key.
    let mut val = Vec::new();
    encode_value(&mut val, v);
    out.push(val[0]);
    out.extend_from_slice(&expire.to_le_bytes());
    put_bytes(out, key);
    out.extend_from_slice(&val[1..]);
}
