//! A key as one record: its type, expiry, name and value, the unit of snapshot chunks
//! (`engine::snapshot`) and of slot migration (`commands::migrate`).
//!
//! Key record: type u8 | expire_at i64 LE | key_len u32 | key | value (a snapshot chunk
//! puts a db u8 before each)
//!   type 0 Int:  i64 LE        type 1 Str / 2 Raw: len u32 | bytes
//!   type 4 Hash: encoding u8 (0 listpack, 1 table) | n u32 | n × (len u32 | field, len u32 | value)
//!   type 0x14 Hash whose fields have expiries: as type 4, each pair followed by the
//!     field's expiry i64 LE (unix ms, -1: none)
//!   Collection types added later use 0x10 | their kind code:
//!   type 0x12 Set: encoding u8 (0 intset, 1 table) | n u32 | n × (len u32 | member)
//!   type 0x13 Zset: encoding u8 (0 listpack, 1 skiplist) | n u32 | n × (len u32 | member, score f64 LE), ascending
//!   type 0x11 List: n u32 | n × (len u32 | element), head first
//!   type 0x16 Stream: len u32 | payload (see `types::stream::encode`)

use alloc::string::String;
use alloc::vec::Vec;

use crate::keyspace::object::Value;
use crate::types::hash::{HashEnc, HashValue};
use crate::types::set::SetValue;
use crate::types::zset::ZsetValue;

pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

pub fn encode_value(out: &mut Vec<u8>, v: &Value) {
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
            let ttls = h.has_ttls();
            out.push(if ttls { 0x14 } else { 4 });
            out.push(matches!(h.enc, HashEnc::Table(_)) as u8);
            out.extend_from_slice(&(h.len() as u32).to_le_bytes());
            h.for_each(|f, x| {
                put_bytes(out, f);
                put_bytes(out, x);
                if ttls {
                    out.extend_from_slice(&h.ttl(f).unwrap_or(crate::keyspace::object::NO_EXPIRE).to_le_bytes());
                }
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

pub struct Cur<'a> {
    pub b: &'a [u8],
    pub pos: usize,
}

impl<'a> Cur<'a> {
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.b.len() - self.pos < n {
            return Err(String::from("truncated key record"));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    pub fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    pub fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    pub fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

/// One key record (without its database byte): the key, its expiry and its value.
/// Validates every length and count; never panics on bad input.
pub fn decode_key_record<'a>(c: &mut Cur<'a>, seed: u64, fill: i64) -> Result<(&'a [u8], i64, Value), String> {
    let ty_pos = c.pos;
    let ty = c.u8()?;
    let expire = c.i64()?;
    let key = c.bytes()?;
    let val = match ty {
        0 => Value::Int(c.i64()?),
        1 => Value::Str(c.bytes()?.into()),
        2 => Value::Raw(c.bytes()?.to_vec()),
        4 | 0x14 => {
            let table = c.u8()? == 1;
            let count = c.u32()? as usize;
            let enc = if table { HashEnc::Table(crate::types::dict::Dict::new(seed)) } else { HashEnc::Listpack(Vec::new()) };
            let mut h = HashValue::from_enc(enc);
            if count == 0 {
                return Err(alloc::format!("empty hash at byte {}", ty_pos));
            }
            for _ in 0..count {
                let f = c.bytes()?;
                let v = c.bytes()?;
                h.set(f, v);
                if ty == 0x14 {
                    let at = c.i64()?;
                    if at != crate::keyspace::object::NO_EXPIRE {
                        if !(0..=crate::types::field_ttl::MAX_ABS_TIME_MS).contains(&at) {
                            return Err(alloc::format!("field expiry out of range at byte {}", ty_pos));
                        }
                        h.set_ttl(f, at);
                    }
                }
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
pub fn encode_value_with_key(out: &mut Vec<u8>, key: &[u8], expire: i64, v: &Value) {
    // Type first so the loader can dispatch; value bytes follow the key.
    let mut val = Vec::new();
    encode_value(&mut val, v);
    out.push(val[0]);
    out.extend_from_slice(&expire.to_le_bytes());
    put_bytes(out, key);
    out.extend_from_slice(&val[1..]);
}
