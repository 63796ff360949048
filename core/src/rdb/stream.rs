//! Streams as RDB objects. RDB_TYPE_STREAM_LISTPACKS_2 (Redis 7.0's): the nodes (master
//! id as a 16-byte big-endian key, the listpack), the length, the last id, the first id,
//! the largest deleted id, the count of entries ever added; then the consumer groups,
//! each with its name, last delivered id, entries read, pending entries (raw id, delivery
//! time, delivery count) and consumers (name, seen time, the raw ids they own).
//! RDB_TYPE_STREAM_LISTPACKS (before 7.0) lacks the first/deleted ids, the added count and
//! the groups' read counts, which are derived as Redis 7.0 derives them.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::rc::Rc;
use alloc::vec::Vec;

use crate::rdb::writer::{write_len, write_ms_time, write_string};
use crate::rdb::{Error, Reader, listpack};
use crate::types::stream::{Group, INVALID_ENTRIES_READ, Nack, Stream, StreamId};

fn write_id(out: &mut Vec<u8>, id: StreamId) {
    write_len(out, id.ms);
    write_len(out, id.seq);
}

/// Appends a stream's value (RDB_TYPE_STREAM_LISTPACKS_2, without the type byte).
pub fn write(out: &mut Vec<u8>, s: &Stream) {
    write_len(out, s.node_count() as u64);
    for (master, body) in s.nodes() {
        write_string(out, &master.rax_key());
        write_string(out, &listpack::serialize(body, listpack::count(body)));
    }
    write_len(out, s.length);
    write_id(out, s.last_id);
    write_id(out, s.first_id);
    write_id(out, s.max_deleted);
    write_len(out, s.entries_added);
    write_len(out, s.groups.len() as u64);
    for (name, g) in &s.groups {
        write_string(out, name);
        write_id(out, g.last_id);
        write_len(out, g.entries_read as u64);
        write_len(out, g.pel.len() as u64);
        for (id, n) in &g.pel {
            out.extend_from_slice(&id.rax_key());
            write_ms_time(out, n.delivery_time);
            write_len(out, n.delivery_count);
        }
        write_len(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            write_string(out, cname);
            write_ms_time(out, c.seen_time);
            write_len(out, c.pel.len() as u64);
            for id in &c.pel {
                out.extend_from_slice(&id.rax_key());
            }
        }
    }
}

fn read_id(r: &mut Reader<'_>) -> Result<StreamId, Error> {
    Ok(StreamId::new(r.len()?, r.len()?))
}

fn raw_id(b: &[u8]) -> StreamId {
    let word = |i: usize| u64::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3], b[i + 4], b[i + 5], b[i + 6], b[i + 7]]);
    StreamId::new(word(0), word(8))
}

/// A pending entry while its group is read: its owner is known only once the consumers
/// are.
struct Pending {
    delivery_time: i64,
    delivery_count: u64,
    consumer: Option<Rc<[u8]>>,
}

/// Reads a stream's value; `v2`: RDB_TYPE_STREAM_LISTPACKS_2. Beyond what Redis checks,
/// the nodes must add up to the length and lie at or below the last id, the counters be
/// what XSETID and XGROUP allow, and every pending entry have exactly one consumer: the
/// engine relies on all of these.
pub fn read(r: &mut Reader<'_>, v2: bool) -> Result<Stream, Error> {
    let mut s = Stream::new();
    // A node is at least a 17-byte key and a 7-byte listpack, each with its length.
    let nodes = r.count(25)?;
    let mut live = 0u64;
    for _ in 0..nodes {
        let key = r.string()?;
        if key.len() != 16 {
            return Err(Error::BadData("stream node key is not an id"));
        }
        let blob = r.string()?;
        let (body, count) = listpack::body(&blob)?;
        if count == 0 {
            return Err(Error::BadData("empty stream node"));
        }
        live += s.load_node(raw_id(&key), body.to_vec()).map_err(Error::BadData)?.0;
    }
    s.length = r.len()?;
    s.last_id = read_id(r)?;
    if v2 {
        s.first_id = read_id(r)?;
        s.max_deleted = read_id(r)?;
        s.entries_added = r.len()?;
    } else {
        // Redis 7.0's migration of an older stream: every entry counted as added, none
        // deleted, the first live entry (none: the largest id) as the first.
        s.entries_added = s.length;
        s.first_id = s.edge_id(true, false).unwrap_or(StreamId::MAX);
    }
    if live != s.length {
        return Err(Error::BadData("stream length does not match its nodes"));
    }
    // What XSETID holds a stream to, and the counters' arithmetic relies on.
    if s.entries_added < s.length || s.entries_added > i64::MAX as u64 || s.max_deleted > s.last_id {
        return Err(Error::BadData("stream counters out of range"));
    }
    if s.edge_id(false, true).is_some_and(|last| last > s.last_id) {
        return Err(Error::BadData("stream entry above the last id"));
    }
    let groups = r.count(5)?;
    for _ in 0..groups {
        let name: Box<[u8]> = r.string()?.into_boxed_slice();
        let last_id = read_id(r)?;
        let entries_read = if v2 { r.len()? as i64 } else { s.estimate_distance(last_id) };
        // As XGROUP's ENTRIESREAD: a count, or -1 for unknown.
        if entries_read < INVALID_ENTRIES_READ {
            return Err(Error::BadData("group read counter out of range"));
        }
        let mut g = Group::new(last_id, entries_read);
        let mut pending: BTreeMap<StreamId, Pending> = BTreeMap::new();
        for _ in 0..r.count(25)? {
            let id = raw_id(r.take(16)?);
            let p = Pending { delivery_time: r.ms_time()?, delivery_count: r.len()?, consumer: None };
            if pending.insert(id, p).is_some() {
                return Err(Error::BadData("repeated pending entry"));
            }
        }
        for _ in 0..r.count(10)? {
            let cname = r.string()?;
            let seen = r.ms_time()?;
            if !g.create_consumer(&cname, seen) {
                return Err(Error::BadData("repeated consumer"));
            }
            let owner = g.consumer_name(&cname).ok_or(Error::BadData("consumer"))?;
            for _ in 0..r.count(16)? {
                let id = raw_id(r.take(16)?);
                let p = pending.get_mut(&id).ok_or(Error::BadData("consumer entry not in the group's pending list"))?;
                if p.consumer.replace(owner.clone()).is_some() {
                    return Err(Error::BadData("pending entry of two consumers"));
                }
                if let Some(c) = g.consumers.get_mut(&*owner) {
                    c.pel.insert(id);
                }
            }
        }
        for (id, p) in pending {
            let consumer = p.consumer.ok_or(Error::BadData("pending entry without a consumer"))?;
            g.pel.insert(id, Nack { delivery_time: p.delivery_time, delivery_count: p.delivery_count, consumer });
        }
        if s.groups.insert(name, g).is_some() {
            return Err(Error::BadData("repeated consumer group"));
        }
    }
    Ok(s)
}
