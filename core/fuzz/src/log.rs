//! Target `log`: everything that decodes bytes read back from the log or the wire.
//!
//! Byte 0 picks the decoder, the rest is its input:
//! - 0 `AppendRequest::decode`, 1 `ReadBatch::decode`, 2 `Appended::decode` (the log
//!   service's wire bodies, `log-service/src/codec.rs`): never panic, never allocate by a
//!   claimed count, and whatever decodes re-encodes to the same bytes (one encoding per
//!   message). A decoded read batch then goes through what a node does with it: the hash
//!   chain check (`chain::verify`) and `apply_entries` (`host/src/durable.rs`: format
//!   check, lease payloads, data entries applied to an engine).
//! - 3 `LeasePayload::decode`, 4 `MarkPayload::decode` (`log-service/src/entry.rs`):
//!   same round trip.
//! - 5 `Engine::apply` of raw effects (a data entry's payload, what replicas and log
//!   replay feed the engine): an error or a count, never a panic; applied data survives a
//!   snapshot dump/load with the same digest.
//! - 6 `Engine::load` of a snapshot chunk's key records: same.
//! - 7 `Checksum::from_hex`, `Kind::from_u8`.

use bytes::Bytes;
use memoria_core::Engine;
use memoria_log::chain;
use memoria_log::codec::{AppendRequest, MAX_BATCH, ReadBatch};
use memoria_log::{Appended, Checksum, Entry, Kind, LeasePayload, MarkPayload, FORMAT_VERSION};

const NOW_US: i64 = 1_700_000_000_000_000;

/// `host/src/durable.rs::apply_entries` with the native engine in place of the component
/// (the same engine code, so the same decoding of effects).
fn apply_entries(engine: &mut Engine, entries: &[Entry]) -> Result<(u64, Option<String>), String> {
    let mut effects = 0;
    let mut leader = None;
    for e in entries {
        if e.format > FORMAT_VERSION {
            return Err(format!("entry {} in format {}", e.id, e.format));
        }
        if e.kind == Kind::Data {
            effects += engine.apply(&e.payload, NOW_US).map_err(|e| e.to_string())? as u64;
        } else if e.kind.is_leadership()
            && let Some(p) = LeasePayload::decode(&e.payload)
        {
            leader = Some(p.node);
        }
    }
    Ok((effects, leader))
}

/// Dumps `e` in small chunks into a fresh engine and compares digests.
fn snapshot_round_trip(e: &Engine) {
    let mut restored = Engine::new(5);
    let (mut db, mut cursor) = (0, 0);
    loop {
        let chunk = e.dump(db, cursor, 128);
        if let Err(err) = restored.load(&chunk.data) {
            panic!("a dumped chunk does not load: {err}");
        }
        if chunk.done {
            break;
        }
        (db, cursor) = (chunk.next_db, chunk.next_cursor);
    }
    assert!(restored.digest() == e.digest(), "a snapshot restores another data set");
    assert_eq!(restored.total_keys(), e.total_keys());
}

pub fn run(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else { return };
    let body = Bytes::copy_from_slice(rest);
    match sel % 8 {
        0 => {
            if let Ok(r) = AppendRequest::decode(body.clone()) {
                assert!(!r.entries.is_empty() && r.entries.len() <= MAX_BATCH);
                assert!(r.entries.iter().all(|e| e.kind != Kind::ChecksumMark), "a client-written mark was accepted");
                assert_eq!(r.encode(), body, "append request re-encodes differently");
            }
        }
        1 => {
            if let Ok(b) = ReadBatch::decode(body.clone()) {
                assert_eq!(b.encode(), body, "read batch re-encodes differently");
                if let Some(first) = b.entries.first() {
                    let _ = chain::verify(first.id - 1, chain::GENESIS, &b.entries);
                }
                let mut e = Engine::new(1);
                if apply_entries(&mut e, &b.entries).is_ok() {
                    snapshot_round_trip(&e);
                }
            }
        }
        2 => {
            if let Ok(a) = Appended::decode(body.clone()) {
                assert_eq!(a.encode(), body);
            }
        }
        3 => {
            if let Some(p) = LeasePayload::decode(rest) {
                assert_eq!(&p.encode()[..], rest);
            }
        }
        4 => {
            if let Some(p) = MarkPayload::decode(rest) {
                assert_eq!(&p.encode()[..], rest);
            }
        }
        5 => {
            let mut e = Engine::new(1);
            if e.apply(rest, NOW_US).is_ok() {
                snapshot_round_trip(&e);
            }
        }
        6 => {
            let mut e = Engine::new(1);
            if e.load(rest).is_ok() {
                snapshot_round_trip(&e);
            }
        }
        _ => {
            if let Ok(s) = std::str::from_utf8(rest)
                && let Some(c) = Checksum::from_hex(s)
            {
                assert_eq!(c.to_hex(), s.to_ascii_lowercase());
            }
            if let Some(&k) = rest.first()
                && let Some(kind) = Kind::from_u8(k)
            {
                assert_eq!(kind as u8, k);
            }
        }
    }
}
