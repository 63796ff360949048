//! Values stored under keys, with the compact encodings Redis reports in OBJECT ENCODING.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::types::hash::HashValue;
use crate::types::set::SetValue;
use crate::types::zset::ZsetValue;

pub enum Value {
    /// A string that is a canonical integer (OBJECT ENCODING "int").
    Int(i64),
    /// An immutable string ("embstr" up to 44 bytes, "raw" above).
    Str(Box<[u8]>),
    /// A string grown in place by APPEND/SETRANGE ("raw"): amortised growth like an sds.
    Raw(Vec<u8>),
    Hash(HashValue),
    Set(SetValue),
    Zset(ZsetValue),
    List(Box<crate::types::list::ListValue>),
    Stream(Box<crate::types::stream::Stream>),
}

/// A key's value plus its metadata.
pub struct Entry {
    pub val: Value,
    /// Absolute expiry in unix ms, or `NO_EXPIRE`.
    pub expire_at: i64,
    /// Access clock (unix seconds, truncated) for LRU eviction sampling.
    pub lru: u32,
}

pub const NO_EXPIRE: i64 = -1;

/// The largest string Redis stores as embstr.
pub const EMBSTR_LIMIT: usize = 44;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    String,
    Hash,
    Set,
    Zset,
    List,
    Stream,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Hash => "hash",
            Kind::Set => "set",
            Kind::Zset => "zset",
            Kind::List => "list",
            Kind::Stream => "stream",
        }
    }
    pub fn code(self) -> u8 {
        match self {
            Kind::String => 0,
            Kind::Hash => 4,
            Kind::Set => 2,
            Kind::Zset => 3,
            Kind::List => 1,
            Kind::Stream => 6,
        }
    }
}

impl Value {
    /// The heap bytes of the value beyond its place in the keyspace (aggregates estimated
    /// from `samples` elements; `usize::MAX`: all).
    pub fn memory_usage(&self, samples: usize) -> u64 {
        use crate::util::memsize::alloc;
        match self {
            Value::Int(_) => 0,
            Value::Str(b) => alloc(b.len()),
            Value::Raw(v) => alloc(v.capacity()),
            Value::Hash(h) => h.memory_usage(samples),
            Value::Set(s) => s.memory_usage(samples),
            Value::Zset(z) => z.memory_usage(samples),
            Value::List(l) => l.memory_usage(samples),
            Value::Stream(s) => s.memory_usage(samples),
        }
    }

    /// Builds a string value the way SET does (`tryObjectEncoding`).
    pub fn from_bytes(b: &[u8]) -> Value {
        if b.len() <= 20
            && let Some(i) = crate::util::parse_i64(b)
        {
            return Value::Int(i);
        }
        Value::Str(b.into())
    }

    pub fn kind(&self) -> Kind {
        match self {
            Value::Int(_) | Value::Str(_) | Value::Raw(_) => Kind::String,
            Value::Hash(_) => Kind::Hash,
            Value::Set(_) => Kind::Set,
            Value::Zset(_) => Kind::Zset,
            Value::List(_) => Kind::List,
            Value::Stream(_) => Kind::Stream,
        }
    }

    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Int(_) => "int",
            Value::Str(s) if s.len() <= EMBSTR_LIMIT => "embstr",
            Value::Str(_) | Value::Raw(_) => "raw",
            Value::Hash(h) => h.encoding(),
            Value::Set(s) => s.encoding(),
            Value::Zset(z) => z.encoding(),
            // Redis 7.0 stores every list as a quicklist (listpack lists came in 7.2).
            Value::List(_) => "quicklist",
            Value::Stream(_) => "stream",
        }
    }

    /// The string's bytes, materialising an integer; None for non-strings.
    pub fn string_bytes(&self) -> Option<alloc::borrow::Cow<'_, [u8]>> {
        use alloc::borrow::Cow;
        match self {
            Value::Int(i) => Some(Cow::Owned(crate::util::int_bytes(*i))),
            Value::Str(s) => Some(Cow::Borrowed(s)),
            Value::Raw(s) => Some(Cow::Borrowed(s)),
            _ => None,
        }
    }

    pub fn string_len(&self) -> Option<usize> {
        match self {
            Value::Int(i) => Some(crate::util::int_bytes(*i).len()),
            Value::Str(s) => Some(s.len()),
            Value::Raw(s) => Some(s.len()),
            _ => None,
        }
    }

    /// Deep copy (COPY command).
    pub fn duplicate(&self, seed: u64) -> Value {
        match self {
            Value::Int(i) => Value::Int(*i),
            Value::Str(s) => Value::Str(s.clone()),
            // Redis's dupStringObject keeps the encoding (COPY of a raw string is raw).
            Value::Raw(s) => Value::Raw(s.clone()),
            Value::Hash(h) => Value::Hash(h.duplicate(seed)),
            Value::Set(s) => Value::Set(s.duplicate(seed)),
            Value::Zset(z) => Value::Zset(z.duplicate(seed)),
            Value::List(l) => Value::List(Box::new(l.duplicate())),
            Value::Stream(s) => Value::Stream(Box::new(s.duplicate())),
        }
    }
}
