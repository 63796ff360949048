//! The stream data structure (Redis's stream.h and the low half of t_stream.c).
//!
//! Entries live in nodes keyed by their master id (the first id ever added to the node),
//! and each node is a listpack laid out byte for byte like Redis's: which node an entry
//! lands in depends on `stream-node-max-bytes` (counted in listpack bytes) and
//! `-entries`, and node boundaries decide what approximate trimming (`~`) removes and
//! what XINFO reports, so they must be Redis's. Deleted entries stay in their node as
//! tombstones until the node empties, as in Redis. Consumer groups keep their pending
//! entries lists (PEL) ordered by id.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::rc::Rc;
use alloc::vec::Vec;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Debug, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId { ms: u64::MAX, seq: u64::MAX };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(&self) -> bool {
        self.ms == 0 && self.seq == 0
    }

    /// The successor (Redis's streamIncrID); None at the maximum.
    pub fn incr(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                return None;
            }
            return Some(StreamId::new(self.ms + 1, 0));
        }
        Some(StreamId::new(self.ms, self.seq + 1))
    }

    /// The predecessor (streamDecrID); None at 0-0.
    pub fn decr(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                return None;
            }
            return Some(StreamId::new(self.ms - 1, u64::MAX));
        }
        Some(StreamId::new(self.ms, self.seq - 1))
    }

    /// `<ms>-<seq>` as Redis prints it.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(24);
        push_u64(&mut v, self.ms);
        v.push(b'-');
        push_u64(&mut v, self.seq);
        v
    }

    /// The 128-bit big-endian form Redis uses as a radix-tree key (and an RDB stream node
    /// key).
    pub fn rax_key(&self) -> [u8; 16] {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&self.ms.to_be_bytes());
        k[8..].copy_from_slice(&self.seq.to_be_bytes());
        k
    }
}

pub fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(crate::util::IntText::unsigned(v).as_bytes());
}

/// Redis's `string2ull`: string2ll for non-negative values, else strtoull (which skips
/// leading white space, takes a sign and leading zeros, and negates a '-' value).
pub fn parse_u64_lenient(s: &[u8]) -> Option<u64> {
    if let Some(v) = crate::util::parse_i64(s) {
        return if v < 0 { None } else { Some(v as u64) };
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    let start = i;
    let mut v: u64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        v = v.checked_mul(10)?.checked_add((s[i] - b'0') as u64)?;
        i += 1;
    }
    if i == start || i != s.len() {
        return None;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// How a stream id argument may be written.
pub struct IdParse {
    /// `-`/`+` are rejected (Redis's "strict" parse).
    pub strict: bool,
    /// The sequence used when only `<ms>` is given.
    pub missing_seq: u64,
    /// `<ms>-*` is accepted (XADD); the result then says the sequence was not given.
    pub allow_auto_seq: bool,
}

/// Redis's streamGenericParseIDOrReply. Returns the id and whether the sequence was
/// given (false only for `<ms>-*`).
pub fn parse_id(arg: &[u8], how: &IdParse) -> Option<(StreamId, bool)> {
    if arg.len() > 127 {
        return None;
    }
    // Redis copies the argument into a C string: a NUL ends it.
    let s = match arg.iter().position(|&b| b == 0) {
        Some(p) => &arg[..p],
        None => arg,
    };
    if s == b"-" || s == b"+" {
        if how.strict {
            return None;
        }
        return Some((if s == b"-" { StreamId::MIN } else { StreamId::MAX }, true));
    }
    let (ms_part, seq_part) = match s.iter().position(|&b| b == b'-') {
        Some(p) => (&s[..p], Some(&s[p + 1..])),
        None => (s, None),
    };
    let ms = parse_u64_lenient(ms_part)?;
    match seq_part {
        Some(b"*") if how.allow_auto_seq => Some((StreamId::new(ms, 0), false)),
        Some(q) => Some((StreamId::new(ms, parse_u64_lenient(q)?), true)),
        None => Some((StreamId::new(ms, how.missing_seq), true)),
    }
}

/// Listpack elements, encoded exactly like Redis's listpack.c (header and terminator are
/// not stored: a node's listpack size is its element bytes plus `LP_OVERHEAD`).
pub mod lp {
    use alloc::vec::Vec;

    pub const LP_OVERHEAD: usize = 7;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Ele<'a> {
        Int(i64),
        Str(&'a [u8]),
    }

    impl Ele<'_> {
        pub fn eq_bytes(&self, b: &[u8]) -> bool {
            match self {
                Ele::Str(s) => *s == b,
                Ele::Int(i) => crate::util::parse_i64(b) == Some(*i),
            }
        }
        pub fn as_int(&self) -> i64 {
            match self {
                Ele::Int(i) => *i,
                Ele::Str(s) => crate::util::parse_i64(s).unwrap_or(0),
            }
        }
        pub fn write_bytes(&self, out: &mut Vec<u8>) {
            match self {
                Ele::Str(s) => out.extend_from_slice(s),
                Ele::Int(i) => crate::util::push_int(out, *i),
            }
        }
    }

    fn backlen_size(l: usize) -> usize {
        if l <= 127 {
            1
        } else if l < 16383 {
            2
        } else if l < 2097151 {
            3
        } else if l < 268435455 {
            4
        } else {
            5
        }
    }

    fn push_backlen(out: &mut Vec<u8>, l: usize) {
        let n = backlen_size(l);
        // Most significant group first, every byte but the first flagged with 128: read
        // backwards from the last byte.
        for i in (0..n).rev() {
            let group = ((l >> (7 * i)) & 127) as u8;
            out.push(if i == n - 1 { group } else { group | 128 });
        }
    }

    fn int_size(v: i64) -> usize {
        if (0..=127).contains(&v) {
            1
        } else if (-4096..=4095).contains(&v) {
            2
        } else if (-32768..=32767).contains(&v) {
            3
        } else if (-8388608..=8388607).contains(&v) {
            4
        } else if (-2147483648..=2147483647).contains(&v) {
            5
        } else {
            9
        }
    }

    pub fn push_int(out: &mut Vec<u8>, v: i64) {
        let n = int_size(v);
        match n {
            1 => out.push(v as u8),
            2 => {
                let u = if v < 0 { (1i64 << 13) + v } else { v } as u16;
                out.push(((u >> 8) as u8) | 0xC0);
                out.push(u as u8);
            }
            _ => {
                let tag = match n {
                    3 => 0xF1,
                    4 => 0xF2,
                    5 => 0xF3,
                    _ => 0xF4,
                };
                out.push(tag);
                out.extend_from_slice(&v.to_le_bytes()[..n - 1]);
            }
        }
        push_backlen(out, n);
    }

    /// lpAppend of a string: stored as an integer when it is one (string2ll rules).
    pub fn push_str(out: &mut Vec<u8>, s: &[u8]) {
        if s.len() <= 20
            && let Some(v) = crate::util::parse_i64(s)
        {
            return push_int(out, v);
        }
        let len = s.len();
        let head = if len < 64 {
            out.push(0x80 | len as u8);
            1
        } else if len < 4096 {
            out.push(0xE0 | (len >> 8) as u8);
            out.push(len as u8);
            2
        } else {
            out.push(0xF0);
            out.extend_from_slice(&(len as u32).to_le_bytes());
            5
        };
        out.extend_from_slice(s);
        push_backlen(out, head + len);
    }

    /// Decodes the encoding and data of the element at `pos`: its value and their size
    /// (what the element's back-length holds).
    fn decode(buf: &[u8], pos: usize) -> Option<(Ele<'_>, usize)> {
        let b = *buf.get(pos)?;
        Some(if b & 0x80 == 0 {
            (Ele::Int((b & 0x7f) as i64), 1)
        } else if b & 0xC0 == 0x80 {
            let l = (b & 0x3f) as usize;
            (Ele::Str(buf.get(pos + 1..pos + 1 + l)?), 1 + l)
        } else if b & 0xE0 == 0xC0 {
            let u = (((b & 0x1f) as i64) << 8) | *buf.get(pos + 1)? as i64;
            (Ele::Int(if u >= 1 << 12 { u - (1 << 13) } else { u }), 2)
        } else if b & 0xF0 == 0xE0 {
            let l = (((b & 0x0f) as usize) << 8) | *buf.get(pos + 1)? as usize;
            (Ele::Str(buf.get(pos + 2..pos + 2 + l)?), 2 + l)
        } else {
            match b {
                0xF1..=0xF4 => {
                    let n = match b {
                        0xF1 => 2,
                        0xF2 => 3,
                        0xF3 => 4,
                        _ => 8,
                    };
                    let raw = buf.get(pos + 1..pos + 1 + n)?;
                    let mut le = [0u8; 8];
                    le[..n].copy_from_slice(raw);
                    // Sign-extend from n bytes.
                    let shift = 64 - 8 * n as u32;
                    (Ele::Int((i64::from_le_bytes(le) << shift) >> shift), 1 + n)
                }
                0xF0 => {
                    let l = u32::from_le_bytes(buf.get(pos + 1..pos + 5)?.try_into().ok()?) as usize;
                    // Checked: on a 32-bit target 5 + l can overflow.
                    let size = l.checked_add(5)?;
                    (Ele::Str(buf.get(pos + 5..pos.checked_add(size)?)?), size)
                }
                _ => return None,
            }
        })
    }

    /// Decodes the element at `pos`: its value and the position of the next element.
    /// None if the bytes are not a well-formed element (only snapshot input can be).
    pub fn get(buf: &[u8], pos: usize) -> Option<(Ele<'_>, usize)> {
        let (ele, len) = decode(buf, pos)?;
        let next = pos + len + backlen_size(len);
        if next > buf.len() {
            return None;
        }
        Some((ele, next))
    }

    /// `get`, also checking the element's back-length (which reverse walks follow): for
    /// listpacks from outside, such as a RESTORE payload's.
    pub fn get_checked(buf: &[u8], pos: usize) -> Option<(Ele<'_>, usize)> {
        let (ele, len) = decode(buf, pos)?;
        let mut back = Vec::with_capacity(5);
        push_backlen(&mut back, len);
        let end = pos + len;
        (buf.get(end..end + back.len())? == back).then_some((ele, end + back.len()))
    }

    /// The element at `pos` (the engine's own bytes: never malformed after loading).
    #[inline]
    pub fn at(buf: &[u8], pos: usize) -> (Ele<'_>, usize) {
        get(buf, pos).unwrap_or((Ele::Int(0), buf.len()))
    }

    #[inline]
    pub fn int_at(buf: &[u8], pos: usize) -> (i64, usize) {
        let (e, n) = at(buf, pos);
        (e.as_int(), n)
    }

    #[inline]
    pub fn next(buf: &[u8], pos: usize) -> usize {
        at(buf, pos).1
    }

    /// Start of the element before the one starting at `pos` (pos > 0).
    pub fn prev(buf: &[u8], pos: usize) -> usize {
        let mut p = pos;
        let mut val = 0usize;
        let mut shift = 0;
        loop {
            if p == 0 {
                return 0;
            }
            p -= 1;
            let b = buf[p];
            val |= ((b & 127) as usize) << shift;
            if b & 128 == 0 {
                break;
            }
            shift += 7;
            if shift > 28 {
                return 0;
            }
        }
        p.saturating_sub(val)
    }

    /// Replaces the element at `pos` with the integer `v` (its size may change).
    pub fn replace_int(buf: &mut Vec<u8>, pos: usize, v: i64) {
        let end = next(buf, pos);
        let mut enc = Vec::with_capacity(10);
        push_int(&mut enc, v);
        if enc.len() == end - pos {
            buf[pos..end].copy_from_slice(&enc);
        } else {
            buf.splice(pos..end, enc);
        }
    }
}

use lp::Ele;

const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;
/// Redis's STREAM_LISTPACK_MAX_SIZE.
pub const LISTPACK_MAX_SIZE: u64 = 1 << 30;
/// Redis's SCG_INVALID_ENTRIES_READ.
pub const INVALID_ENTRIES_READ: i64 = -1;

/// The fixed part of a node: live/deleted counts and the master fields.
struct NodeHead {
    live: i64,
    master_fields: usize,
    /// Position of the first master field.
    fields_pos: usize,
    /// Position of the first entry's flags.
    first_entry: usize,
}

fn node_head(lp: &[u8]) -> NodeHead {
    let (live, p) = lp::int_at(lp, 0);
    let (_deleted, p) = lp::int_at(lp, p);
    let (nf, p) = lp::int_at(lp, p);
    let nf = nf.max(0) as usize;
    let fields_pos = p;
    let mut q = p;
    for _ in 0..nf {
        q = lp::next(lp, q);
    }
    q = lp::next(lp, q); // master terminator
    NodeHead { live, master_fields: nf, fields_pos, first_entry: q }
}

/// One entry inside a node.
pub struct Entry<'a> {
    pub id: StreamId,
    pub deleted: bool,
    lp: &'a [u8],
    same: bool,
    numfields: usize,
    master_fields_pos: usize,
    data_pos: usize,
    flags_pos: usize,
    /// Position after the entry's lp-count.
    end: usize,
}

impl<'a> Entry<'a> {
    pub fn numfields(&self) -> usize {
        self.numfields
    }

    /// Field/value pairs in order.
    pub fn for_each<F: FnMut(Ele<'a>, Ele<'a>)>(&self, mut f: F) {
        let mut mf = self.master_fields_pos;
        let mut p = self.data_pos;
        for _ in 0..self.numfields {
            let field = if self.same {
                let (e, n) = lp::at(self.lp, mf);
                mf = n;
                e
            } else {
                let (e, n) = lp::at(self.lp, p);
                p = n;
                e
            };
            let (v, n) = lp::at(self.lp, p);
            p = n;
            f(field, v);
        }
    }
}

/// Decodes the entry whose flags are at `pos`.
fn entry_at<'a>(lp: &'a [u8], pos: usize, master: StreamId, head: &NodeHead) -> Entry<'a> {
    let (flags, p) = lp::int_at(lp, pos);
    let (msd, p) = lp::int_at(lp, p);
    let (seqd, mut p) = lp::int_at(lp, p);
    let same = flags & FLAG_SAMEFIELDS != 0;
    let numfields = if same {
        head.master_fields
    } else {
        let (n, q) = lp::int_at(lp, p);
        p = q;
        n.max(0) as usize
    };
    let data_pos = p;
    let skip = if same { numfields } else { numfields * 2 };
    for _ in 0..skip {
        p = lp::next(lp, p);
    }
    let end = lp::next(lp, p); // lp-count
    Entry {
        id: StreamId::new(master.ms.wrapping_add(msd as u64), master.seq.wrapping_add(seqd as u64)),
        deleted: flags & FLAG_DELETED != 0,
        lp,
        same,
        numfields,
        master_fields_pos: head.fields_pos,
        data_pos,
        flags_pos: pos,
        end,
    }
}

/// Positions of the entries' flags in a node, in order (for reverse scans).
fn entry_positions(lp: &[u8], head: &NodeHead, master: StreamId) -> Vec<usize> {
    let mut v = Vec::new();
    let mut p = head.first_entry;
    while p < lp.len() {
        v.push(p);
        p = entry_at(lp, p, master, head).end;
    }
    v
}

pub struct Nack {
    /// Unix ms of the last delivery.
    pub delivery_time: i64,
    pub delivery_count: u64,
    pub consumer: Rc<[u8]>,
}

pub struct Consumer {
    /// Unix ms of the consumer's last interaction (not replicated, as in Redis).
    pub seen_time: i64,
    pub pel: BTreeSet<StreamId>,
}

pub struct Group {
    pub last_id: StreamId,
    pub entries_read: i64,
    pub pel: BTreeMap<StreamId, Nack>,
    pub consumers: BTreeMap<Rc<[u8]>, Consumer>,
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group { last_id, entries_read, pel: BTreeMap::new(), consumers: BTreeMap::new() }
    }

    /// Adds a consumer; false if it exists.
    pub fn create_consumer(&mut self, name: &[u8], now: i64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(Rc::from(name), Consumer { seen_time: now, pel: BTreeSet::new() });
        true
    }

    /// The shared name of an existing consumer.
    pub fn consumer_name(&self, name: &[u8]) -> Option<Rc<[u8]>> {
        self.consumers.get_key_value(name).map(|(k, _)| k.clone())
    }

    /// Removes a consumer and its pending entries; returns how many it had.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// Drops a pending entry from the group and its consumer.
    pub fn remove_nack(&mut self, id: &StreamId) -> Option<Nack> {
        let nack = self.pel.remove(id)?;
        if let Some(c) = self.consumers.get_mut(&*nack.consumer) {
            c.pel.remove(id);
        }
        Some(nack)
    }

    fn duplicate(&self) -> Group {
        let mut g = Group::new(self.last_id, self.entries_read);
        for (name, c) in &self.consumers {
            g.consumers.insert(Rc::from(&**name), Consumer { seen_time: c.seen_time, pel: c.pel.clone() });
        }
        for (id, n) in &self.pel {
            let consumer = g.consumer_name(&n.consumer).unwrap_or_else(|| n.consumer.clone());
            g.pel.insert(*id, Nack { delivery_time: n.delivery_time, delivery_count: n.delivery_count, consumer });
        }
        g
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TrimStrategy {
    None,
    MaxLen(u64),
    MinId(StreamId),
}

pub struct TrimArgs {
    pub strategy: TrimStrategy,
    pub approx: bool,
    /// Most entries to remove (0 = no limit).
    pub limit: i64,
}

pub struct Stream {
    /// Nodes by master id; each is a listpack's elements.
    nodes: BTreeMap<StreamId, Vec<u8>>,
    pub length: u64,
    pub last_id: StreamId,
    pub first_id: StreamId,
    pub max_deleted: StreamId,
    pub entries_added: u64,
    pub groups: BTreeMap<Box<[u8]>, Group>,
}

pub enum AppendError {
    /// The id is not greater than the stream's last id (EDOM in Redis).
    NotGreater,
    /// Elements too large for a listpack (ERANGE).
    TooLarge,
}

impl Default for Stream {
    fn default() -> Self {
        Self::new()
    }
}

impl Stream {
    /// MEMORY USAGE of the stream: its nodes (estimated from `samples`), and its consumer
    /// groups with their pending entries and consumers.
    pub fn memory_usage(&self, samples: usize) -> u64 {
        use crate::util::memsize::{alloc, sampled};
        // A BTreeMap entry: key and value plus about a sixth of a node's edges and header.
        fn entry<K, V>() -> u64 {
            (core::mem::size_of::<K>() + core::mem::size_of::<V>() + 16) as u64
        }
        let nodes = sampled(self.nodes.len(), samples, self.nodes.values().map(|n| entry::<StreamId, Vec<u8>>() + alloc(n.capacity())));
        let groups = sampled(
            self.groups.len(),
            samples,
            self.groups.iter().map(|(name, g)| {
                let consumers = sampled(
                    g.consumers.len(),
                    samples,
                    g.consumers.iter().map(|(c, k)| entry::<Rc<[u8]>, Consumer>() + alloc(c.len() + 8) + k.pel.len() as u64 * entry::<StreamId, ()>()),
                );
                entry::<Box<[u8]>, Group>() + alloc(name.len()) + g.pel.len() as u64 * entry::<StreamId, Nack>() + consumers
            }),
        );
        alloc(core::mem::size_of::<Stream>()) + nodes + groups
    }

    pub fn new() -> Stream {
        Stream {
            nodes: BTreeMap::new(),
            length: 0,
            last_id: StreamId::MIN,
            first_id: StreamId::MIN,
            max_deleted: StreamId::MIN,
            entries_added: 0,
            groups: BTreeMap::new(),
        }
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Bytes held in listpacks (for a rough size estimate).
    pub fn listpack_bytes(&self) -> usize {
        self.nodes.values().map(|n| n.len() + lp::LP_OVERHEAD).sum()
    }

    /// Redis's streamAppendItem once the id is known: `pairs` is field, value, ….
    pub fn append(&mut self, id: StreamId, pairs: &[&[u8]], max_bytes: u64, max_entries: i64) -> Result<(), AppendError> {
        if id <= self.last_id {
            return Err(AppendError::NotGreater);
        }
        let totelelen: u64 = pairs.iter().map(|p| p.len() as u64).sum();
        if totelelen > LISTPACK_MAX_SIZE {
            return Err(AppendError::TooLarge);
        }
        let numfields = pairs.len() / 2;
        let mut tail = self.nodes.iter_mut().next_back().map(|(k, v)| (*k, v));
        if let Some((_, lp)) = &tail {
            let node_max = if max_bytes == 0 || max_bytes > LISTPACK_MAX_SIZE { LISTPACK_MAX_SIZE } else { max_bytes };
            let lp_bytes = (lp.len() + lp::LP_OVERHEAD) as u64;
            let full = if lp_bytes + totelelen >= node_max {
                true
            } else if max_entries != 0 {
                let (live, p) = lp::int_at(lp, 0);
                let (deleted, _) = lp::int_at(lp, p);
                live + deleted >= max_entries
            } else {
                false
            };
            if full {
                tail = None;
            }
        }
        let mut flags = 0;
        let (master, lp) = match tail {
            Some((master, lp)) => {
                let (live, _) = lp::int_at(lp, 0);
                lp::replace_int(lp, 0, live + 1);
                let head = node_head(lp);
                if head.master_fields == numfields {
                    let mut p = head.fields_pos;
                    let mut same = true;
                    for i in 0..numfields {
                        let (e, n) = lp::at(lp, p);
                        if !e.eq_bytes(pairs[2 * i]) {
                            same = false;
                            break;
                        }
                        p = n;
                    }
                    if same {
                        flags |= FLAG_SAMEFIELDS;
                    }
                }
                (master, lp)
            }
            None => {
                let mut lp = Vec::with_capacity(64);
                lp::push_int(&mut lp, 1);
                lp::push_int(&mut lp, 0);
                lp::push_int(&mut lp, numfields as i64);
                for i in 0..numfields {
                    lp::push_str(&mut lp, pairs[2 * i]);
                }
                lp::push_int(&mut lp, 0);
                flags |= FLAG_SAMEFIELDS;
                (id, self.nodes.entry(id).or_insert(lp))
            }
        };
        lp::push_int(lp, flags);
        lp::push_int(lp, id.ms.wrapping_sub(master.ms) as i64);
        lp::push_int(lp, id.seq.wrapping_sub(master.seq) as i64);
        let same = flags & FLAG_SAMEFIELDS != 0;
        if !same {
            lp::push_int(lp, numfields as i64);
        }
        for i in 0..numfields {
            if !same {
                lp::push_str(lp, pairs[2 * i]);
            }
            lp::push_str(lp, pairs[2 * i + 1]);
        }
        let lp_count = numfields as i64 + 3 + if same { 0 } else { numfields as i64 + 1 };
        lp::push_int(lp, lp_count);
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
        Ok(())
    }

    /// Calls `f` for every entry with `start <= id <= end`, in order (`rev`: backwards),
    /// until it returns false. Tombstones are skipped unless `tombstones`.
    pub fn scan<F: FnMut(&Entry<'_>) -> bool>(&self, start: StreamId, end: StreamId, rev: bool, tombstones: bool, mut f: F) {
        if start > end {
            return;
        }
        if !rev {
            // The node that may hold `start` is the last one keyed at or before it.
            let from = self.nodes.range(..=start).next_back().map(|(k, _)| *k).unwrap_or(StreamId::MIN);
            for (master, lp) in self.nodes.range(from..) {
                if *master > end {
                    return;
                }
                let head = node_head(lp);
                let mut p = head.first_entry;
                while p < lp.len() {
                    let e = entry_at(lp, p, *master, &head);
                    p = e.end;
                    if e.id < start || (e.deleted && !tombstones) {
                        continue;
                    }
                    if e.id > end || !f(&e) {
                        return;
                    }
                }
            }
        } else {
            for (master, lp) in self.nodes.range(..=end).rev() {
                let head = node_head(lp);
                for &p in entry_positions(lp, &head, *master).iter().rev() {
                    let e = entry_at(lp, p, *master, &head);
                    if e.id > end || (e.deleted && !tombstones) {
                        continue;
                    }
                    if e.id < start || !f(&e) {
                        return;
                    }
                }
            }
        }
    }

    /// The first (or last) entry's id, tombstones included or not.
    pub fn edge_id(&self, first: bool, tombstones: bool) -> Option<StreamId> {
        let mut out = None;
        self.scan(StreamId::MIN, StreamId::MAX, !first, tombstones, |e| {
            out = Some(e.id);
            false
        });
        out
    }

    /// Redis's streamLastValidID.
    pub fn last_valid_id(&self) -> Option<StreamId> {
        self.edge_id(false, false)
    }

    /// A live entry with this id exists.
    pub fn contains(&self, id: StreamId) -> bool {
        let mut found = false;
        self.scan(id, id, false, false, |_| {
            found = true;
            false
        });
        found
    }

    /// Marks the entry deleted (Redis's streamDeleteItem); false if there is none.
    fn delete_item(&mut self, id: StreamId) -> bool {
        let Some((&master, lp)) = self.nodes.range_mut(..=id).next_back() else { return false };
        let head = node_head(lp);
        let mut p = head.first_entry;
        let mut flags_pos = None;
        while p < lp.len() {
            let e = entry_at(lp, p, master, &head);
            if e.id == id && !e.deleted {
                flags_pos = Some(e.flags_pos);
                break;
            }
            if e.id > id {
                break;
            }
            p = e.end;
        }
        let Some(fp) = flags_pos else { return false };
        let (flags, _) = lp::int_at(lp, fp);
        lp::replace_int(lp, fp, flags | FLAG_DELETED);
        if head.live == 1 {
            self.nodes.remove(&master);
        } else {
            lp::replace_int(lp, 0, head.live - 1);
            let p = lp::next(lp, 0);
            let (deleted, _) = lp::int_at(lp, p);
            lp::replace_int(lp, p, deleted + 1);
        }
        self.length -= 1;
        true
    }

    /// XDEL of several ids: how many existed. Keeps first id and max deleted id current.
    pub fn delete_ids(&mut self, ids: &[StreamId]) -> u64 {
        let mut deleted = 0;
        let mut first_entry = false;
        for id in ids {
            if self.delete_item(*id) {
                if *id == self.first_id {
                    first_entry = true;
                }
                if *id > self.max_deleted {
                    self.max_deleted = *id;
                }
                deleted += 1;
            }
        }
        if deleted > 0 {
            if self.length == 0 {
                self.first_id = StreamId::MIN;
            } else if first_entry {
                self.first_id = self.edge_id(true, false).unwrap_or(StreamId::MAX);
            }
        }
        deleted
    }

    /// Redis's streamTrim: returns how many entries were removed.
    pub fn trim(&mut self, args: &TrimArgs) -> u64 {
        let mut deleted: i64 = 0;
        let mut cursor = StreamId::MIN;
        loop {
            let (master, live, remove_node) = {
                let Some((&master, lp)) = self.nodes.range(cursor..).next() else { break };
                let (live, _) = lp::int_at(lp, 0);
                let remove = match args.strategy {
                    TrimStrategy::None => return 0,
                    TrimStrategy::MaxLen(maxlen) => {
                        if self.length <= maxlen {
                            break;
                        }
                        self.length - live as u64 >= maxlen
                    }
                    TrimStrategy::MinId(minid) => {
                        let head = node_head(lp);
                        let positions = entry_positions(lp, &head, master);
                        let last = positions.last().map(|&p| entry_at(lp, p, master, &head).id).unwrap_or(master);
                        last < minid
                    }
                };
                (master, live, remove)
            };
            if args.limit != 0 && deleted + live > args.limit {
                break;
            }
            if remove_node {
                self.nodes.remove(&master);
                self.length -= live as u64;
                deleted += live;
                cursor = master;
                continue;
            }
            if args.approx {
                break;
            }
            // Mark entries inside this node deleted until the target is met.
            let length = &mut self.length;
            let lp = self.nodes.get_mut(&master).expect("node just seen");
            let head = node_head(lp);
            let mut p = head.first_entry;
            let mut from_lp = 0i64;
            while p < lp.len() {
                let e = entry_at(lp, p, master, &head);
                let stop = match args.strategy {
                    TrimStrategy::MaxLen(maxlen) => *length <= maxlen,
                    TrimStrategy::MinId(minid) => e.id >= minid,
                    TrimStrategy::None => true,
                };
                if stop {
                    break;
                }
                let (fp, next, was_deleted) = (e.flags_pos, e.end, e.deleted);
                if !was_deleted {
                    let (flags, _) = lp::int_at(lp, fp);
                    // Same size (flags stay below 128): positions do not move.
                    lp::replace_int(lp, fp, flags | FLAG_DELETED);
                    from_lp += 1;
                    *length -= 1;
                }
                p = next;
            }
            deleted += from_lp;
            lp::replace_int(lp, 0, live - from_lp);
            let q = lp::next(lp, 0);
            let (marked, _) = lp::int_at(lp, q);
            lp::replace_int(lp, q, marked + from_lp);
            break;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.edge_id(true, false).unwrap_or(StreamId::MAX);
        }
        deleted as u64
    }

    /// Redis's streamRangeHasTombstones.
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.length == 0 || self.max_deleted.is_zero() {
            return false;
        }
        start <= self.max_deleted && self.max_deleted <= end
    }

    /// Redis's streamEstimateDistanceFromFirstEverEntry (INVALID_ENTRIES_READ if unknown).
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        if self.length == 0 && id <= self.last_id {
            return self.entries_added as i64;
        }
        if !id.is_zero() && id < self.max_deleted {
            return INVALID_ENTRIES_READ;
        }
        if id == self.last_id {
            return self.entries_added as i64;
        } else if id > self.last_id {
            return INVALID_ENTRIES_READ;
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first_id {
            if id < self.first_id {
                return (self.entries_added - self.length) as i64;
            } else if id == self.first_id {
                return (self.entries_added - self.length + 1) as i64;
            }
        }
        INVALID_ENTRIES_READ
    }

    /// A group's lag (Redis 7.0's streamReplyWithCGLag); None when it cannot be known.
    pub fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read != INVALID_ENTRIES_READ && !self.range_has_tombstones(g.last_id, StreamId::MAX) {
            // Wraps as Redis's does for a counter set near the i64 limits (ENTRIESREAD).
            return Some((self.entries_added as i64).wrapping_sub(g.entries_read));
        }
        let read = self.estimate_distance(g.last_id);
        if read != INVALID_ENTRIES_READ {
            return Some((self.entries_added as i64).wrapping_sub(read));
        }
        None
    }

    /// Moves a group's last delivered id forward to `id` as a delivery does, keeping its
    /// read counter (the part of Redis 7.0's streamReplyWithRange that touches the group:
    /// the counter is bumped when no tombstone lies at or after `id`, else re-estimated).
    pub fn advance_group(&mut self, group: &[u8], id: StreamId) {
        let tombstones = self.range_has_tombstones(id, StreamId::MAX);
        let estimate = if self.entries_added != 0 { Some(self.estimate_distance(id)) } else { None };
        let Some(g) = self.groups.get_mut(group) else { return };
        if id <= g.last_id {
            return;
        }
        if g.entries_read != INVALID_ENTRIES_READ && !tombstones {
            // XGROUP … ENTRIESREAD may set it to the largest i64: Redis's counter wraps.
            g.entries_read = g.entries_read.wrapping_add(1);
        } else if let Some(e) = estimate {
            g.entries_read = e;
        }
        g.last_id = id;
    }

    /// Number of nodes a radix tree holding these node keys has (XINFO's
    /// radix-tree-nodes): keys are 16-byte big-endian ids, one compressed chain per run of
    /// single-child positions, as rax.c builds it.
    pub fn rax_nodes(&self) -> u64 {
        let keys: Vec<[u8; 16]> = self.nodes.keys().map(|k| k.rax_key()).collect();
        if keys.is_empty() {
            return 1;
        }
        fn count(keys: &[[u8; 16]], depth: usize) -> u64 {
            if keys.len() == 1 {
                return if depth == 16 { 1 } else { 2 };
            }
            // Common prefix from `depth` (keys are sorted and distinct).
            let (a, b) = (&keys[0], &keys[keys.len() - 1]);
            let mut d = depth;
            while a[d] == b[d] {
                d += 1;
            }
            let mut n = if d > depth { 2 } else { 1 };
            let mut i = 0;
            while i < keys.len() {
                let mut j = i + 1;
                while j < keys.len() && keys[j][d] == keys[i][d] {
                    j += 1;
                }
                n += count(&keys[i..j], d + 1);
                i = j;
            }
            n
        }
        count(&keys, 0)
    }

    pub fn duplicate(&self) -> Stream {
        Stream {
            nodes: self.nodes.clone(),
            length: self.length,
            last_id: self.last_id,
            first_id: self.first_id,
            max_deleted: self.max_deleted,
            entries_added: self.entries_added,
            groups: self.groups.iter().map(|(k, g)| (k.clone(), g.duplicate())).collect(),
        }
    }

    /// The nodes as (master id, listpack elements), for snapshots.
    pub fn nodes(&self) -> impl Iterator<Item = (&StreamId, &Vec<u8>)> {
        self.nodes.iter()
    }

    /// Adds a node read from a snapshot after checking every element and the node's
    /// layout; returns its (live, deleted) entry counts.
    pub fn load_node(&mut self, master: StreamId, lp: Vec<u8>) -> Result<(u64, u64), &'static str> {
        let (live, deleted) = validate_node(&lp, master)?;
        if let Some((last, _)) = self.nodes.iter().next_back()
            && *last >= master
        {
            return Err("stream nodes out of order");
        }
        self.nodes.insert(master, lp);
        Ok((live, deleted))
    }
}

/// Checks a node's listpack completely (snapshot input): element encodings, counts, and
/// ascending ids. Returns (live, deleted).
fn validate_node(lp: &[u8], master: StreamId) -> Result<(u64, u64), &'static str> {
    const BAD: &str = "malformed stream node";
    let int = |p: usize| -> Result<(i64, usize), &'static str> {
        match lp::get(lp, p) {
            Some((Ele::Int(v), n)) => Ok((v, n)),
            _ => Err(BAD),
        }
    };
    let any = |p: usize| -> Result<usize, &'static str> { lp::get(lp, p).map(|(_, n)| n).ok_or(BAD) };
    let (live, p) = int(0)?;
    let (deleted, p) = int(p)?;
    let (nf, mut p) = int(p)?;
    if live < 1 || deleted < 0 || nf < 0 {
        return Err(BAD);
    }
    for _ in 0..nf {
        p = any(p)?;
    }
    let (zero, mut p) = int(p)?;
    if zero != 0 {
        return Err(BAD);
    }
    let (mut seen_live, mut seen_deleted) = (0i64, 0i64);
    let mut prev: Option<StreamId> = None;
    while p < lp.len() {
        let start = p;
        let (flags, q) = int(p)?;
        let (msd, q) = int(q)?;
        let (seqd, mut q) = int(q)?;
        if !(0..=3).contains(&flags) {
            return Err(BAD);
        }
        let same = flags & FLAG_SAMEFIELDS != 0;
        let n = if same {
            nf
        } else {
            let (n, r) = int(q)?;
            q = r;
            if n < 0 {
                return Err(BAD);
            }
            n
        };
        // Counts come from the input: checked, so a huge one is refused, not wrapped into
        // one that passes (the fuzzer's find, a RESTORE payload could carry it too).
        let fields = if same { Some(n) } else { n.checked_mul(2) };
        for _ in 0..fields.ok_or(BAD)? {
            q = any(q)?;
        }
        let (count, r) = int(q)?;
        let want = if same { n.checked_add(3) } else { n.checked_mul(2).and_then(|x| x.checked_add(4)) };
        if Some(count) != want {
            return Err(BAD);
        }
        let id = StreamId::new(master.ms.wrapping_add(msd as u64), master.seq.wrapping_add(seqd as u64));
        if prev.is_some_and(|x| x >= id) || (prev.is_none() && id != master) {
            return Err(BAD);
        }
        prev = Some(id);
        if flags & FLAG_DELETED != 0 {
            seen_deleted += 1;
        } else {
            seen_live += 1;
        }
        let _ = start;
        p = r;
    }
    if seen_live != live || seen_deleted != deleted {
        return Err(BAD);
    }
    Ok((live as u64, deleted as u64))
}

// ---------- snapshots and digest ----------

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_u64(out, id.ms);
    put_u64(out, id.seq);
}

fn put_blob(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

/// Snapshot form: length, last id, first id, max deleted id, entries added; the nodes
/// (master id, listpack) so node boundaries survive a restore; the groups with their
/// consumers (name, seen time) and pending entries (id, time, count, consumer).
pub fn encode(out: &mut Vec<u8>, s: &Stream) {
    put_u64(out, s.length);
    put_id(out, s.last_id);
    put_id(out, s.first_id);
    put_id(out, s.max_deleted);
    put_u64(out, s.entries_added);
    out.extend_from_slice(&(s.nodes.len() as u32).to_le_bytes());
    for (master, lp) in &s.nodes {
        put_id(out, *master);
        put_blob(out, lp);
    }
    out.extend_from_slice(&(s.groups.len() as u32).to_le_bytes());
    for (name, g) in &s.groups {
        put_blob(out, name);
        put_id(out, g.last_id);
        put_u64(out, g.entries_read as u64);
        out.extend_from_slice(&(g.consumers.len() as u32).to_le_bytes());
        for (cname, c) in &g.consumers {
            put_blob(out, cname);
            put_u64(out, c.seen_time as u64);
        }
        out.extend_from_slice(&(g.pel.len() as u32).to_le_bytes());
        for (id, n) in &g.pel {
            put_id(out, *id);
            put_u64(out, n.delivery_time as u64);
            put_u64(out, n.delivery_count);
            put_blob(out, &n.consumer);
        }
    }
}

struct Rd<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Rd<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        if self.b.len() - self.pos < n {
            return Err("truncated stream record");
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, &'static str> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap_or([0; 4])))
    }
    fn u64(&mut self) -> Result<u64, &'static str> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap_or([0; 8])))
    }
    fn id(&mut self) -> Result<StreamId, &'static str> {
        Ok(StreamId::new(self.u64()?, self.u64()?))
    }
    fn blob(&mut self) -> Result<&'a [u8], &'static str> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

/// Reads `encode`'s form back, checking every node and every cross-reference.
pub fn decode(b: &[u8]) -> Result<Stream, &'static str> {
    let mut r = Rd { b, pos: 0 };
    let mut s = Stream::new();
    s.length = r.u64()?;
    s.last_id = r.id()?;
    s.first_id = r.id()?;
    s.max_deleted = r.id()?;
    s.entries_added = r.u64()?;
    let nodes = r.u32()?;
    let mut live = 0u64;
    for _ in 0..nodes {
        let master = r.id()?;
        let lp = r.blob()?.to_vec();
        live += s.load_node(master, lp)?.0;
    }
    if live != s.length {
        return Err("stream length does not match its nodes");
    }
    if s.edge_id(false, true).is_some_and(|last| last > s.last_id) {
        return Err("stream entry above the last id");
    }
    let groups = r.u32()?;
    for _ in 0..groups {
        let name: Box<[u8]> = r.blob()?.into();
        let mut g = Group::new(r.id()?, r.u64()? as i64);
        for _ in 0..r.u32()? {
            let cname = r.blob()?;
            let seen = r.u64()? as i64;
            if !g.create_consumer(cname, seen) {
                return Err("repeated consumer");
            }
        }
        for _ in 0..r.u32()? {
            let id = r.id()?;
            let delivery_time = r.u64()? as i64;
            let delivery_count = r.u64()?;
            let cname = r.blob()?;
            let Some(consumer) = g.consumer_name(cname) else { return Err("pending entry of an unknown consumer") };
            if g.pel.insert(id, Nack { delivery_time, delivery_count, consumer }).is_some() {
                return Err("repeated pending entry");
            }
            if let Some(c) = g.consumers.get_mut(cname) {
                c.pel.insert(id);
            }
        }
        if s.groups.insert(name, g).is_some() {
            return Err("repeated consumer group");
        }
    }
    if r.pos != b.len() {
        return Err("trailing bytes in stream record");
    }
    Ok(s)
}

/// The logical content's hash: entries, ids and counters, groups with their consumers
/// and pending entries. Node boundaries (which follow the node-size config) and seen
/// times (never replicated) are left out.
pub fn digest(s: &Stream) -> u128 {
    use xxhash_rust::xxh3::xxh3_128;
    let mut sum: u128 = 0;
    let mut buf = Vec::new();
    s.scan(StreamId::MIN, StreamId::MAX, false, false, |e| {
        buf.clear();
        put_id(&mut buf, e.id);
        let mut tmp = Vec::new();
        e.for_each(|f, v| {
            tmp.clear();
            f.write_bytes(&mut tmp);
            put_blob(&mut buf, &tmp);
            tmp.clear();
            v.write_bytes(&mut tmp);
            put_blob(&mut buf, &tmp);
        });
        sum = sum.wrapping_add(xxh3_128(&buf));
        true
    });
    buf.clear();
    put_u64(&mut buf, s.length);
    put_id(&mut buf, s.last_id);
    put_id(&mut buf, s.first_id);
    put_id(&mut buf, s.max_deleted);
    put_u64(&mut buf, s.entries_added);
    for (name, g) in &s.groups {
        put_blob(&mut buf, name);
        put_id(&mut buf, g.last_id);
        put_u64(&mut buf, g.entries_read as u64);
        out_consumers(&mut buf, g);
    }
    sum.wrapping_add(xxh3_128(&buf))
}

fn out_consumers(buf: &mut Vec<u8>, g: &Group) {
    buf.extend_from_slice(&(g.consumers.len() as u32).to_le_bytes());
    for name in g.consumers.keys() {
        put_blob(buf, name);
    }
    buf.extend_from_slice(&(g.pel.len() as u32).to_le_bytes());
    for (id, n) in &g.pel {
        put_id(buf, *id);
        put_u64(buf, n.delivery_time as u64);
        put_u64(buf, n.delivery_count);
        put_blob(buf, &n.consumer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listpack_ints_roundtrip_with_redis_sizes() {
        for (v, size) in [
            (0i64, 2),
            (127, 2),
            (128, 3),
            (-1, 3),
            (-4096, 3),
            (4095, 3),
            (4096, 4),
            (-32768, 4),
            (32768, 5),
            (8388608, 6),
            (-2147483648, 6),
            (2147483648, 10),
            (i64::MIN, 10),
            (i64::MAX, 10),
        ] {
            let mut b = Vec::new();
            lp::push_int(&mut b, v);
            assert_eq!(b.len(), size, "size of {v}");
            assert_eq!(lp::get(&b, 0), Some((Ele::Int(v), b.len())));
            assert_eq!(lp::prev(&b, b.len()), 0);
        }
    }

    #[test]
    fn listpack_strings_roundtrip() {
        for len in [0usize, 1, 63, 64, 126, 127, 128, 4095, 4096, 20000] {
            let s: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let mut b = Vec::new();
            lp::push_str(&mut b, &s);
            lp::push_int(&mut b, 5);
            assert_eq!(lp::get(&b, 0).map(|x| x.0), Some(Ele::Str(&s[..])));
            let second = lp::next(&b, 0);
            assert_eq!(lp::prev(&b, second), 0);
            assert_eq!(lp::prev(&b, b.len()), second);
        }
        let mut b = Vec::new();
        lp::push_str(&mut b, b"-42");
        assert_eq!(lp::get(&b, 0).map(|x| x.0), Some(Ele::Int(-42)));
    }

    /// A node whose entry claims more fields than an i64 can double (found by the `log`
    /// fuzz target): refused, where the count check once overflowed.
    #[test]
    fn a_node_with_a_huge_field_count_is_refused() {
        let master = StreamId::new(5, 0);
        for n in [i64::MAX, i64::MAX / 2 + 1, (1 << 62) + 1] {
            let mut lp = Vec::new();
            for v in [1i64, 0, 0] {
                lp::push_int(&mut lp, v); // live, deleted, master fields
            }
            lp::push_int(&mut lp, 0); // the master entry's terminator
            for v in [0i64, 0, 0, n] {
                lp::push_int(&mut lp, v); // flags, ms delta, seq delta, field count
            }
            // What a wrapped 2 * n and n + 3 + n + 1 would have matched.
            lp::push_int(&mut lp, n.wrapping_mul(2).wrapping_add(4));
            assert_eq!(validate_node(&lp, master), Err("malformed stream node"), "n = {n}");
        }
    }

    #[test]
    fn id_parsing_follows_string2ull() {
        let strict = IdParse { strict: true, missing_seq: 0, allow_auto_seq: false };
        assert_eq!(parse_id(b"07", &strict).map(|x| x.0), Some(StreamId::new(7, 0)));
        assert_eq!(parse_id(b" 9-+1", &strict).map(|x| x.0), Some(StreamId::new(9, 1)));
        assert_eq!(parse_id(b"5--01", &strict).map(|x| x.0), Some(StreamId::new(5, u64::MAX)));
        assert!(parse_id(b"5--1", &strict).is_none());
        assert!(parse_id(b"-", &strict).is_none());
        assert!(parse_id(b"10-", &strict).is_none());
        assert!(parse_id(b"18446744073709551616", &strict).is_none());
        assert_eq!(parse_id(b"18446744073709551615", &strict).map(|x| x.0), Some(StreamId::new(u64::MAX, 0)));
    }
}
