//! The compact binary bodies of append and read. Every message starts with a version byte;
//! integers are big-endian; payloads are u32-length-prefixed. Decoding checks every length
//! against the bytes actually present before allocating, and never panics on bad input.

use bytes::{BufMut, Bytes, BytesMut};

use crate::chain::Checksum;
use crate::entry::{Appended, Entry, Kind, NewEntry};

pub const WIRE_VERSION: u8 = 1;
pub const CONTENT_TYPE: &str = "application/x-memoria-log";

/// Most entries one append may carry (all-or-nothing batches must stay bounded).
pub const MAX_BATCH: usize = 65_536;
/// Largest single payload.
pub const MAX_PAYLOAD: usize = 16 << 20;
/// Largest request body the service accepts.
pub const MAX_BODY: usize = 64 << 20;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed body: {0}")]
pub struct DecodeError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, DecodeError> {
    Err(DecodeError(msg.into()))
}

/// A cursor over a body that fails instead of panicking when it runs short (big-endian
/// fields; also the local socket's frames).
pub(crate) struct Reader {
    buf: Bytes,
    pos: usize,
}

impl Reader {
    pub(crate) fn new(buf: Bytes) -> Self {
        Reader { buf, pos: 0 }
    }
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    /// What is left, taken whole.
    pub(crate) fn rest(self) -> Bytes {
        self.buf.slice(self.pos..)
    }
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<Bytes, DecodeError> {
        if self.remaining() < n {
            return err(format!("truncated {what}: need {n} bytes, have {}", self.remaining()));
        }
        let b = self.buf.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(b)
    }
    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }
    pub(crate) fn u16(&mut self, what: &str) -> Result<u16, DecodeError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, DecodeError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, DecodeError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(&b);
        Ok(u64::from_be_bytes(a))
    }
    fn checksum(&mut self, what: &str) -> Result<Checksum, DecodeError> {
        let b = self.take(32, what)?;
        Checksum::from_slice(&b).ok_or_else(|| DecodeError(format!("bad {what}")))
    }
    fn version(&mut self) -> Result<(), DecodeError> {
        match self.u8("version")? {
            WIRE_VERSION => Ok(()),
            v => err(format!("unsupported wire version {v} (this build speaks {WIRE_VERSION})")),
        }
    }
    fn finish(&self) -> Result<(), DecodeError> {
        if self.remaining() != 0 {
            return err(format!("{} trailing bytes", self.remaining()));
        }
        Ok(())
    }
}

/// Body of `POST /v1/logs/{log}/append`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendRequest {
    pub prev_id: u64,
    pub epoch: u64,
    /// When set, the append also fails unless the stored entry `prev_id` has this checksum:
    /// a writer that knows its chain is fenced against a log rewritten under it.
    pub prev_checksum: Option<Checksum>,
    pub entries: Vec<NewEntry>,
}

const FLAG_PREV_CHECKSUM: u8 = 1;
// kind u8 + format u16 + len u32
const ENTRY_HEADER: usize = 7;

impl AppendRequest {
    pub fn encode(&self) -> Bytes {
        let size: usize = 1 + 1 + 16 + 32 + 4 + self.entries.iter().map(|e| ENTRY_HEADER + e.payload.len()).sum::<usize>();
        let mut b = BytesMut::with_capacity(size);
        b.put_u8(WIRE_VERSION);
        b.put_u8(if self.prev_checksum.is_some() { FLAG_PREV_CHECKSUM } else { 0 });
        b.put_u64(self.prev_id);
        b.put_u64(self.epoch);
        if let Some(c) = &self.prev_checksum {
            b.put_slice(c.as_bytes());
        }
        b.put_u32(self.entries.len() as u32);
        for e in &self.entries {
            b.put_u8(e.kind as u8);
            b.put_u16(e.format);
            b.put_u32(e.payload.len() as u32);
            b.put_slice(&e.payload);
        }
        b.freeze()
    }

    pub fn decode(body: Bytes) -> Result<AppendRequest, DecodeError> {
        let mut r = Reader::new(body);
        r.version()?;
        let flags = r.u8("flags")?;
        if flags & !FLAG_PREV_CHECKSUM != 0 {
            return err(format!("unknown flags {flags:#x}"));
        }
        let prev_id = r.u64("prev_id")?;
        let epoch = r.u64("epoch")?;
        let prev_checksum = if flags & FLAG_PREV_CHECKSUM != 0 { Some(r.checksum("prev_checksum")?) } else { None };
        let count = r.u32("entry count")? as usize;
        if count == 0 {
            return err("an append needs at least one entry");
        }
        if count > MAX_BATCH {
            return err(format!("{count} entries exceed the batch limit of {MAX_BATCH}"));
        }
        // Bound the allocation by what the body can actually hold.
        if count > r.remaining() / ENTRY_HEADER {
            return err(format!("{count} entries cannot fit in {} bytes", r.remaining()));
        }
        let mut entries = Vec::with_capacity(count);
        for i in 0..count {
            let k = r.u8("kind")?;
            let kind = Kind::from_u8(k).ok_or_else(|| DecodeError(format!("entry {i}: unknown kind {k}")))?;
            if kind == Kind::ChecksumMark {
                return err(format!("entry {i}: checksum marks are written by the service only"));
            }
            let format = r.u16("format")?;
            let len = r.u32("payload length")? as usize;
            if len > MAX_PAYLOAD {
                return err(format!("entry {i}: payload of {len} bytes exceeds {MAX_PAYLOAD}"));
            }
            let payload = r.take(len, "payload")?;
            entries.push(NewEntry { kind, format, payload });
        }
        r.finish()?;
        Ok(AppendRequest { prev_id, epoch, prev_checksum, entries })
    }
}

impl Appended {
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(49);
        b.put_u8(WIRE_VERSION);
        b.put_u64(self.first_id);
        b.put_u64(self.last_id);
        b.put_slice(self.checksum.as_bytes());
        b.freeze()
    }

    pub fn decode(body: Bytes) -> Result<Appended, DecodeError> {
        let mut r = Reader::new(body);
        r.version()?;
        let first_id = r.u64("first_id")?;
        let last_id = r.u64("last_id")?;
        let checksum = r.checksum("checksum")?;
        r.finish()?;
        Ok(Appended { first_id, last_id, checksum })
    }
}

/// Body of a read: entries after the requested id, plus the tail id at read time so a
/// reader knows how far behind it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadBatch {
    pub tail_id: u64,
    pub entries: Vec<Entry>,
}

// id u64 + epoch u64 + kind u8 + format u16 + checksum 32 + len u32
const READ_ENTRY_HEADER: usize = 8 + 8 + 1 + 2 + 32 + 4;

impl ReadBatch {
    pub fn encode(&self) -> Bytes {
        let size = 1 + 8 + 4 + self.entries.iter().map(|e| READ_ENTRY_HEADER + e.payload.len()).sum::<usize>();
        let mut b = BytesMut::with_capacity(size);
        b.put_u8(WIRE_VERSION);
        b.put_u64(self.tail_id);
        b.put_u32(self.entries.len() as u32);
        for e in &self.entries {
            b.put_u64(e.id);
            b.put_u64(e.epoch);
            b.put_u8(e.kind as u8);
            b.put_u16(e.format);
            b.put_slice(e.checksum.as_bytes());
            b.put_u32(e.payload.len() as u32);
            b.put_slice(&e.payload);
        }
        b.freeze()
    }

    pub fn decode(body: Bytes) -> Result<ReadBatch, DecodeError> {
        let mut r = Reader::new(body);
        r.version()?;
        let tail_id = r.u64("tail_id")?;
        let count = r.u32("entry count")? as usize;
        if count > r.remaining() / READ_ENTRY_HEADER {
            return err(format!("{count} entries cannot fit in {} bytes", r.remaining()));
        }
        let mut entries = Vec::with_capacity(count);
        for i in 0..count {
            let id = r.u64("id")?;
            if id == 0 {
                return err(format!("entry {i}: id 0"));
            }
            let epoch = r.u64("epoch")?;
            let k = r.u8("kind")?;
            let kind = Kind::from_u8(k).ok_or_else(|| DecodeError(format!("entry {i}: unknown kind {k}")))?;
            let format = r.u16("format")?;
            let checksum = r.checksum("checksum")?;
            let len = r.u32("payload length")? as usize;
            let payload = r.take(len, "payload")?;
            entries.push(Entry { id, prev_id: id - 1, epoch, kind, format, payload, checksum });
        }
        r.finish()?;
        Ok(ReadBatch { tail_id, entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::{GENESIS, link};

    fn sample() -> AppendRequest {
        AppendRequest {
            prev_id: 41,
            epoch: 3,
            prev_checksum: Some(Checksum([9; 32])),
            entries: vec![NewEntry::data(&b"SET a 1"[..]), NewEntry::new(Kind::LeaseRenewal, &b""[..])],
        }
    }

    #[test]
    fn append_round_trips() {
        let req = sample();
        assert_eq!(AppendRequest::decode(req.encode()), Ok(req));
        let plain = AppendRequest { prev_checksum: None, ..sample() };
        assert_eq!(AppendRequest::decode(plain.encode()), Ok(plain));
    }

    #[test]
    fn every_truncation_and_corruption_is_an_error_not_a_panic() {
        let full = sample().encode();
        for n in 0..full.len() {
            assert!(AppendRequest::decode(full.slice(..n)).is_err(), "prefix {n} accepted");
        }
        // Flip every byte to every value at a few positions: must never panic.
        for pos in 0..full.len() {
            for v in [0u8, 1, 0x7f, 0xff] {
                let mut b = full.to_vec();
                b[pos] = v;
                let _ = AppendRequest::decode(Bytes::from(b.clone()));
                let _ = ReadBatch::decode(Bytes::from(b.clone()));
                let _ = Appended::decode(Bytes::from(b));
            }
        }
        let mut trailing = full.to_vec();
        trailing.push(0);
        assert!(AppendRequest::decode(Bytes::from(trailing)).is_err());
    }

    #[test]
    fn huge_counts_are_rejected_before_allocating() {
        let mut b = BytesMut::new();
        b.put_u8(WIRE_VERSION);
        b.put_u8(0);
        b.put_u64(0);
        b.put_u64(0);
        b.put_u32(u32::MAX);
        assert!(AppendRequest::decode(b.freeze()).is_err());
        let mut b = BytesMut::new();
        b.put_u8(WIRE_VERSION);
        b.put_u64(0);
        b.put_u32(u32::MAX);
        assert!(ReadBatch::decode(b.freeze()).is_err());
    }

    #[test]
    fn rejects_marks_empty_batches_and_unknown_versions() {
        let mut req = sample();
        req.entries.push(NewEntry::new(Kind::ChecksumMark, &b""[..]));
        assert!(AppendRequest::decode(req.encode()).is_err());
        let empty = AppendRequest { entries: vec![], ..sample() };
        assert!(AppendRequest::decode(empty.encode()).is_err());
        let mut v2 = sample().encode().to_vec();
        v2[0] = 2;
        assert!(AppendRequest::decode(Bytes::from(v2)).unwrap_err().0.contains("version"));
    }

    proptest::proptest! {
        #[test]
        fn decoders_never_panic_on_arbitrary_bytes(b in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let b = Bytes::from(b);
            let _ = AppendRequest::decode(b.clone());
            let _ = ReadBatch::decode(b.clone());
            let _ = Appended::decode(b);
        }

        #[test]
        fn any_valid_append_round_trips(
            prev_id in proptest::num::u64::ANY,
            epoch in proptest::num::u64::ANY,
            sum in proptest::option::of(proptest::array::uniform32(proptest::num::u8::ANY)),
            entries in proptest::collection::vec((1u8..=9, proptest::num::u16::ANY, proptest::collection::vec(proptest::num::u8::ANY, 0..64)), 1..16),
        ) {
            let entries: Vec<NewEntry> = entries
                .into_iter()
                .map(|(k, format, p)| NewEntry { kind: if k == Kind::ChecksumMark as u8 { Kind::Data } else { Kind::from_u8(k).unwrap_or(Kind::Data) }, format, payload: Bytes::from(p) })
                .collect();
            let req = AppendRequest { prev_id, epoch, prev_checksum: sum.map(Checksum), entries };
            proptest::prop_assert_eq!(AppendRequest::decode(req.encode()), Ok(req));
        }
    }

    #[test]
    fn read_batch_round_trips() {
        let c1 = link(&GENESIS, 1, 1, Kind::Data, 1, b"x");
        let batch = ReadBatch {
            tail_id: 9,
            entries: vec![Entry { id: 1, prev_id: 0, epoch: 1, kind: Kind::Data, format: 1, payload: Bytes::from_static(b"x"), checksum: c1 }],
        };
        assert_eq!(ReadBatch::decode(batch.encode()), Ok(batch));
        let a = Appended { first_id: 1, last_id: 2, checksum: c1 };
        assert_eq!(Appended::decode(a.encode()), Ok(a));
    }
}
