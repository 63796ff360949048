//! A key's value as one RDB object (a type byte, then the value), the body of a DUMP
//! payload. Written in forms Redis 7.0 loads with the encoding it would have given the
//! value itself; read from every form Redis 7.0 loads, into the encoding Redis 7.0 would
//! choose under the same limits (`rdbLoadObject`).

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::keyspace::object::Value;
use crate::rdb::writer::{write_binary_double, write_int, write_len, write_string, write_value_string};
use crate::rdb::{Error, Reader, intset, listpack, payload_body, ziplist, zipmap};
use crate::types::dict::Dict;
use crate::types::hash::{HashEnc, HashValue};
use crate::types::list::{End, ListValue};
use crate::types::set::{IntSet, SetValue};
use crate::types::stream::lp::{self, Ele};
use crate::types::zset::{AddFlags, AddOut, ZsetValue};

pub const TYPE_STRING: u8 = 0;
pub const TYPE_LIST: u8 = 1;
pub const TYPE_SET: u8 = 2;
pub const TYPE_ZSET: u8 = 3;
pub const TYPE_HASH: u8 = 4;
pub const TYPE_ZSET_2: u8 = 5;
pub const TYPE_HASH_ZIPMAP: u8 = 9;
pub const TYPE_LIST_ZIPLIST: u8 = 10;
pub const TYPE_SET_INTSET: u8 = 11;
pub const TYPE_ZSET_ZIPLIST: u8 = 12;
pub const TYPE_HASH_ZIPLIST: u8 = 13;
pub const TYPE_LIST_QUICKLIST: u8 = 14;
pub const TYPE_STREAM_LISTPACKS: u8 = 15;
pub const TYPE_HASH_LISTPACK: u8 = 16;
pub const TYPE_ZSET_LISTPACK: u8 = 17;
pub const TYPE_LIST_QUICKLIST_2: u8 = 18;
pub const TYPE_STREAM_LISTPACKS_2: u8 = 19;

/// A quicklist node's container (RDB_TYPE_LIST_QUICKLIST_2): one element as it is, or a
/// listpack of elements.
const CONTAINER_PLAIN: u64 = 1;
const CONTAINER_PACKED: u64 = 2;

/// The encoding limits a restored value is built under: the configuration's
/// `*-max-listpack-*`, `set-max-intset-entries` and `list-max-listpack-size`.
#[derive(Clone, Copy)]
pub struct Limits {
    pub hash_entries: usize,
    pub hash_value: usize,
    pub set_intset_entries: usize,
    pub zset_entries: usize,
    pub zset_value: usize,
    pub list_fill: i64,
    /// Seeds the hash tables built.
    pub seed: u64,
}

/// A field and its value, as read.
type Pair = (Vec<u8>, Vec<u8>);

const EMPTY: Error = Error::BadData("empty value");
const DUPLICATE: Error = Error::BadData("repeated member");

/// DUMP: the payload of a value (the object, the RDB version, the checksum).
pub fn dump(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write_object(&mut out, v);
    crate::rdb::finish_payload(&mut out);
    out
}

/// RESTORE: the value a payload holds. The object is read from the whole payload, footer
/// included, as Redis reads it: a string whose length runs into the footer takes its
/// bytes, and bytes after the object are not looked at.
pub fn restore(payload: &[u8], lim: &Limits) -> Result<Value, Error> {
    payload_body(payload)?;
    let mut r = Reader::new(payload);
    let ty = r.byte()?;
    read_object(ty, &mut r, lim)
}

/// Appends the type byte and the value.
pub fn write_object(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Int(i) => {
            out.push(TYPE_STRING);
            write_int(out, *i);
        }
        Value::Str(s) => {
            out.push(TYPE_STRING);
            write_value_string(out, s);
        }
        Value::Raw(s) => {
            out.push(TYPE_STRING);
            write_value_string(out, s);
        }
        Value::List(l) => write_list(out, l),
        Value::Set(SetValue::Ints(s)) => {
            out.push(TYPE_SET_INTSET);
            write_string(out, &intset::serialize(&s.iter().collect::<Vec<i64>>()));
        }
        Value::Set(s) => {
            out.push(TYPE_SET);
            write_len(out, s.len() as u64);
            s.for_each(|m| write_value_string(out, m));
        }
        Value::Hash(HashValue { enc: HashEnc::Listpack(pairs), .. }) => {
            out.push(TYPE_HASH_LISTPACK);
            let mut body = Vec::new();
            for (f, x) in pairs {
                lp::push_str(&mut body, f);
                lp::push_str(&mut body, x);
            }
            write_string(out, &listpack::serialize(&body, pairs.len() * 2));
        }
        Value::Hash(h) => {
            out.push(TYPE_HASH);
            write_len(out, h.len() as u64);
            h.for_each(|f, x| {
                write_value_string(out, f);
                write_value_string(out, x);
            });
        }
        Value::Zset(z) if z.is_listpack() => {
            out.push(TYPE_ZSET_LISTPACK);
            let mut body = Vec::new();
            z.for_each(|m, s| {
                lp::push_str(&mut body, m);
                push_score(&mut body, s);
            });
            write_string(out, &listpack::serialize(&body, z.len() * 2));
        }
        Value::Zset(z) => {
            out.push(TYPE_ZSET_2);
            write_len(out, z.len() as u64);
            z.for_each(|m, s| {
                write_value_string(out, m);
                write_binary_double(out, s);
            });
        }
        Value::Stream(s) => {
            out.push(TYPE_STREAM_LISTPACKS_2);
            crate::rdb::stream::write(out, s);
        }
    }
}

/// A score in a zset listpack as Redis stores it: an integer when the double is one
/// (`double2ll`, which also makes -0 an integer 0), else its `%.17g` text.
fn push_score(body: &mut Vec<u8>, s: f64) {
    const LIMIT: f64 = (i64::MAX / 2) as f64;
    if (-LIMIT..=LIMIT).contains(&s) && (s as i64) as f64 == s {
        lp::push_int(body, s as i64);
    } else {
        lp::push_str(body, &crate::util::format_g17(s));
    }
}

/// A list as RDB_TYPE_LIST_QUICKLIST_2: one listpack node per node of the list.
fn write_list(out: &mut Vec<u8>, l: &ListValue) {
    out.push(TYPE_LIST_QUICKLIST_2);
    let counts: Vec<usize> = l.node_counts().filter(|&n| n > 0).collect();
    write_len(out, counts.len() as u64);
    let mut node = 0;
    let (mut body, mut in_node) = (Vec::new(), 0);
    l.for_each(false, |x| {
        lp::push_str(&mut body, x);
        in_node += 1;
        if counts.get(node) == Some(&in_node) {
            write_len(out, CONTAINER_PACKED);
            write_string(out, &listpack::serialize(&body, in_node));
            body.clear();
            in_node = 0;
            node += 1;
        }
        true
    });
}

/// The bytes of a listpack or ziplist element.
fn ele_bytes(e: &Ele<'_>) -> Vec<u8> {
    let mut v = Vec::new();
    e.write_bytes(&mut v);
    v
}

/// Reads the value of an object of type `ty`.
pub fn read_object(ty: u8, r: &mut Reader<'_>, lim: &Limits) -> Result<Value, Error> {
    match ty {
        TYPE_STRING => Ok(Value::from_bytes(&r.string()?)),
        TYPE_LIST => {
            let n = r.count(1)?;
            let mut l = ListValue::new();
            for _ in 0..n {
                l.push(End::Tail, &r.string()?, lim.list_fill);
            }
            list_value(l)
        }
        TYPE_LIST_ZIPLIST => {
            let blob = r.string()?;
            let mut l = ListValue::new();
            for e in ziplist::elements(&blob)? {
                l.push(End::Tail, &ele_bytes(&e), lim.list_fill);
            }
            list_value(l)
        }
        TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => read_quicklist(ty == TYPE_LIST_QUICKLIST_2, r, lim),
        TYPE_SET => read_set(r, lim),
        TYPE_SET_INTSET => {
            let ints = intset::parse(&r.string()?)?;
            let mut s = SetValue::Ints(IntSet::from_sorted(&ints).ok_or(Error::BadData("unordered intset"))?);
            // Refused as Redis refuses it: a key never holds an empty set.
            if s.is_empty() {
                return Err(EMPTY);
            }
            if s.len() > lim.set_intset_entries {
                s.to_table(lim.seed);
            }
            Ok(Value::Set(s))
        }
        TYPE_HASH => read_hash(r, lim),
        TYPE_HASH_ZIPMAP => {
            let blob = r.string()?;
            let pairs = zipmap::pairs(&blob)?;
            let longest = pairs.iter().map(|(f, v)| f.len().max(v.len())).max().unwrap_or(0);
            let convert = pairs.len() > lim.hash_entries || longest > lim.hash_value;
            hash_from_pairs(pairs.iter().map(|&(f, v)| (f.to_vec(), v.to_vec())).collect(), convert, lim)
        }
        TYPE_HASH_ZIPLIST | TYPE_HASH_LISTPACK => {
            let blob = r.string()?;
            let eles = if ty == TYPE_HASH_ZIPLIST { ziplist::elements(&blob)? } else { listpack::elements(&blob)? };
            let pairs = packed_pairs(&eles)?;
            // Only the count decides, as in Redis (a long value stays in the listpack).
            let convert = pairs.len() > lim.hash_entries;
            hash_from_pairs(pairs, convert, lim)
        }
        TYPE_ZSET | TYPE_ZSET_2 => read_zset(ty == TYPE_ZSET_2, r, lim),
        TYPE_ZSET_ZIPLIST | TYPE_ZSET_LISTPACK => {
            let blob = r.string()?;
            let eles = if ty == TYPE_ZSET_ZIPLIST { ziplist::elements(&blob)? } else { listpack::elements(&blob)? };
            if !eles.len().is_multiple_of(2) {
                return Err(Error::BadData("odd number of elements"));
            }
            let mut scored = Vec::with_capacity(eles.len() / 2);
            for p in eles.chunks_exact(2) {
                let score = match p[1] {
                    Ele::Int(i) => i as f64,
                    Ele::Str(s) => crate::util::parse_f64(s).ok_or(Error::BadData("malformed score"))?,
                };
                scored.push((ele_bytes(&p[0]), score));
            }
            // Only the count decides, as in Redis.
            let listpack = scored.len() <= lim.zset_entries;
            zset_from(scored, listpack, lim)
        }
        TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 => Ok(Value::Stream(Box::new(crate::rdb::stream::read(r, ty == TYPE_STREAM_LISTPACKS_2)?))),
        _ => Err(Error::BadData("unknown object type")),
    }
}

fn list_value(l: ListValue) -> Result<Value, Error> {
    if l.is_empty() {
        return Err(EMPTY);
    }
    Ok(Value::List(Box::new(l)))
}

/// RDB_TYPE_LIST_QUICKLIST (ziplist nodes) and _2 (a container, then a listpack or one
/// plain element). Empty nodes are skipped, as Redis skips them.
fn read_quicklist(v2: bool, r: &mut Reader<'_>, lim: &Limits) -> Result<Value, Error> {
    let nodes = r.count(2)?;
    let mut l = ListValue::new();
    for _ in 0..nodes {
        let container = if v2 { r.len()? } else { CONTAINER_PACKED };
        if container != CONTAINER_PLAIN && container != CONTAINER_PACKED {
            return Err(Error::BadData("unknown quicklist container"));
        }
        let data = r.string()?;
        if data.is_empty() {
            return Err(Error::BadData("empty quicklist node"));
        }
        if container == CONTAINER_PLAIN {
            l.push(End::Tail, &data, lim.list_fill);
            continue;
        }
        let eles = if v2 { listpack::elements(&data)? } else { ziplist::elements(&data)? };
        for e in eles {
            l.push(End::Tail, &ele_bytes(&e), lim.list_fill);
        }
    }
    list_value(l)
}

/// RDB_TYPE_SET: an intset while the count allows and every member is an integer.
fn read_set(r: &mut Reader<'_>, lim: &Limits) -> Result<Value, Error> {
    let n = r.count(1)?;
    if n == 0 {
        return Err(EMPTY);
    }
    let mut s = if n > lim.set_intset_entries.min(1 << 30) { SetValue::Table(Dict::new(lim.seed)) } else { SetValue::new_intset() };
    for _ in 0..n {
        // Never converted by count here: the count was checked above.
        if !s.add(&r.string()?, usize::MAX, lim.seed) {
            return Err(DUPLICATE);
        }
    }
    Ok(Value::Set(s))
}

/// RDB_TYPE_HASH: a listpack while the count allows and until a field or value is too
/// long for one.
fn read_hash(r: &mut Reader<'_>, lim: &Limits) -> Result<Value, Error> {
    let n = r.count(2)?;
    if n == 0 {
        return Err(EMPTY);
    }
    let mut pairs = Vec::with_capacity(n);
    let mut convert = n > lim.hash_entries;
    for _ in 0..n {
        let (f, v) = (r.string()?, r.string()?);
        convert |= f.len() > lim.hash_value || v.len() > lim.hash_value;
        pairs.push((f, v));
    }
    hash_from_pairs(pairs, convert, lim)
}

/// The (field, value) pairs of a packed hash or zset's elements.
fn packed_pairs(eles: &[Ele<'_>]) -> Result<Vec<Pair>, Error> {
    if !eles.len().is_multiple_of(2) {
        return Err(Error::BadData("odd number of elements"));
    }
    Ok(eles.chunks_exact(2).map(|p| (ele_bytes(&p[0]), ele_bytes(&p[1]))).collect())
}

/// A hash of `pairs` in their order, a table if `table`. Repeated fields are refused
/// (found by sorting a copy of the fields: no quadratic scan of a long listpack).
fn hash_from_pairs(pairs: Vec<Pair>, table: bool, lim: &Limits) -> Result<Value, Error> {
    if pairs.is_empty() {
        return Err(EMPTY);
    }
    if table {
        let mut d = Dict::new(lim.seed);
        for (f, v) in pairs {
            if d.contains_key(&f) {
                return Err(DUPLICATE);
            }
            d.insert_new(f.into_boxed_slice(), v.into_boxed_slice());
        }
        return Ok(Value::Hash(HashValue::from_enc(HashEnc::Table(d))));
    }
    let mut fields: Vec<&[u8]> = pairs.iter().map(|(f, _)| &f[..]).collect();
    fields.sort_unstable();
    if fields.windows(2).any(|w| w[0] == w[1]) {
        return Err(DUPLICATE);
    }
    Ok(Value::Hash(HashValue::from_enc(HashEnc::Listpack(pairs.into_iter().map(|(f, v)| (f.into_boxed_slice(), v.into_boxed_slice())).collect()))))
}

/// RDB_TYPE_ZSET (scores as text) and _2 (binary doubles): a listpack after loading when
/// the count and the longest member allow.
fn read_zset(binary: bool, r: &mut Reader<'_>, lim: &Limits) -> Result<Value, Error> {
    let n = r.count(2)?;
    let mut scored = Vec::with_capacity(n);
    let mut longest = 0;
    for _ in 0..n {
        let m = r.string()?;
        let s = if binary { r.binary_double()? } else { r.text_double()? };
        longest = longest.max(m.len());
        scored.push((m, s));
    }
    let listpack = n <= lim.zset_entries && longest <= lim.zset_value;
    zset_from(scored, listpack, lim)
}

/// A sorted set of `scored` members, a listpack if `listpack`. NaN scores and repeated
/// members are refused.
fn zset_from(scored: Vec<(Vec<u8>, f64)>, listpack: bool, lim: &Limits) -> Result<Value, Error> {
    if scored.is_empty() {
        return Err(EMPTY);
    }
    // Built as a skiplist (each insert O(log n)), converted after, as Redis converts.
    let mut z = ZsetValue::new_skiplist(lim.seed);
    let never = crate::types::zset::Limits { entries: usize::MAX, value: usize::MAX, seed: lim.seed };
    for (m, s) in scored {
        if s.is_nan() {
            return Err(Error::BadData("NaN score"));
        }
        if !matches!(z.add(&m, s, AddFlags { nx: true, ..AddFlags::default() }, never), AddOut::Added(_)) {
            return Err(DUPLICATE);
        }
    }
    if listpack {
        z.to_listpack();
    }
    Ok(Value::Zset(z))
}
