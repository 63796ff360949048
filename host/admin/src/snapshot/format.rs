//! The snapshot chunk format. A snapshot is a sequence of chunk objects, each one a page of
//! the engine's dump (core/src/snapshot.rs key records) in an envelope:
//!
//! ```text
//! magic "MSNP" | format u16 BE | index u32 BE | payload_len u32 BE | checksum 16 | payload
//! ```
//!
//! `checksum` is xxh3-128 over the header fields before it and the payload, so a flipped
//! byte anywhere, a chunk cut short, or a chunk moved to another position is detected
//! before a single record reaches the engine. The data checksum of the whole snapshot is
//! SHA-256 over the chunks' (index, length, checksum) in order: it pins the sequence.
//! Everything here is pure.

use sha2::{Digest, Sha256};
use thiserror::Error;
use xxhash_rust::xxh3::Xxh3;

/// The chunk and manifest format this build writes and the newest it reads.
pub const FORMAT_VERSION: u16 = 1;
pub const MAGIC: [u8; 4] = *b"MSNP";
pub const HEADER_LEN: usize = 4 + 2 + 4 + 4 + 16;
/// A chunk larger than this is refused before it is read into memory (the writer pages at
/// a few MiB; one very large hash can overshoot that, never by this much).
pub const MAX_CHUNK_BYTES: usize = 1 << 30;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum FormatError {
    #[error("chunk {index}: not a snapshot chunk (bad magic)")]
    BadMagic { index: u32 },
    #[error("chunk {index}: format {found} is newer than this build reads ({known})")]
    TooNew { index: u32, found: u16, known: u16 },
    #[error("chunk {index}: truncated ({got} bytes, expected {expected})")]
    Truncated { index: u32, got: usize, expected: usize },
    #[error("chunk {index}: {extra} bytes after the payload")]
    Trailing { index: u32, extra: usize },
    #[error("chunk {index}: found chunk {found} in its place")]
    WrongIndex { index: u32, found: u32 },
    #[error("chunk {index}: checksum mismatch (stored {stored}, computed {computed})")]
    Checksum { index: u32, stored: String, computed: String },
    #[error("chunk {index}: {len} bytes is more than a chunk may hold")]
    TooLarge { index: u32, len: usize },
}

fn chunk_checksum(index: u32, payload: &[u8]) -> [u8; 16] {
    let mut h = Xxh3::new();
    h.update(&MAGIC);
    h.update(&FORMAT_VERSION.to_be_bytes());
    h.update(&index.to_be_bytes());
    h.update(&(payload.len() as u32).to_be_bytes());
    h.update(payload);
    h.digest128().to_be_bytes()
}

/// Wraps one dump page as chunk `index`; returns the bytes and the chunk's checksum.
pub fn encode_chunk(index: u32, payload: &[u8]) -> (Vec<u8>, [u8; 16]) {
    let sum = chunk_checksum(index, payload);
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_be_bytes());
    out.extend_from_slice(&index.to_be_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(&sum);
    out.extend_from_slice(payload);
    (out, sum)
}

/// A checked chunk: its payload (key records) and checksum.
#[derive(Debug, PartialEq, Eq)]
pub struct Chunk<'a> {
    pub index: u32,
    pub payload: &'a [u8],
    pub checksum: [u8; 16],
}

/// Checks a chunk object read back from the store as chunk number `index`. Never panics.
pub fn decode_chunk(index: u32, b: &[u8]) -> Result<Chunk<'_>, FormatError> {
    if b.len() < 4 || b[..4] != MAGIC {
        return Err(if b.len() < 4 { FormatError::Truncated { index, got: b.len(), expected: HEADER_LEN } } else { FormatError::BadMagic { index } });
    }
    if b.len() < HEADER_LEN {
        return Err(FormatError::Truncated { index, got: b.len(), expected: HEADER_LEN });
    }
    let format = u16::from_be_bytes([b[4], b[5]]);
    if format > FORMAT_VERSION || format == 0 {
        return Err(FormatError::TooNew { index, found: format, known: FORMAT_VERSION });
    }
    let found = u32::from_be_bytes([b[6], b[7], b[8], b[9]]);
    let len = u32::from_be_bytes([b[10], b[11], b[12], b[13]]) as usize;
    let mut stored = [0u8; 16];
    stored.copy_from_slice(&b[14..30]);
    let expected = HEADER_LEN + len;
    if b.len() < expected {
        return Err(FormatError::Truncated { index, got: b.len(), expected });
    }
    if b.len() > expected {
        return Err(FormatError::Trailing { index, extra: b.len() - expected });
    }
    let payload = &b[HEADER_LEN..];
    let computed = chunk_checksum(found, payload);
    if computed != stored {
        return Err(FormatError::Checksum { index, stored: hex(&stored), computed: hex(&computed) });
    }
    if found != index {
        return Err(FormatError::WrongIndex { index, found });
    }
    Ok(Chunk { index, payload, checksum: stored })
}

/// Folds chunks, in order, into the snapshot's data checksum.
#[derive(Clone, Default)]
pub struct DataChecksum {
    h: Sha256,
    chunks: u32,
}

impl DataChecksum {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, index: u32, payload_len: usize, checksum: &[u8; 16]) {
        self.h.update(index.to_be_bytes());
        self.h.update((payload_len as u64).to_be_bytes());
        self.h.update(checksum);
        self.chunks += 1;
    }

    pub fn chunks(&self) -> u32 {
        self.chunks
    }

    pub fn finish(self) -> [u8; 32] {
        self.h.finalize().into()
    }
}

pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(char::from_digit((x >> 4) as u32, 16).unwrap_or('0'));
        s.push(char::from_digit((x & 15) as u32, 16).unwrap_or('0'));
    }
    s
}

pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.as_bytes().chunks_exact(2).map(|p| Some(((p[0] as char).to_digit(16)? * 16 + (p[1] as char).to_digit(16)?) as u8)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let (bytes, sum) = encode_chunk(7, b"records");
        let c = decode_chunk(7, &bytes).unwrap();
        assert_eq!(c.payload, b"records");
        assert_eq!(c.checksum, sum);
        let (empty, _) = encode_chunk(0, b"");
        assert_eq!(decode_chunk(0, &empty).unwrap().payload, b"");
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let (bytes, _) = encode_chunk(3, b"some key records of a dump page");
        for i in 0..bytes.len() {
            for bit in [0x01u8, 0x80] {
                let mut b = bytes.clone();
                b[i] ^= bit;
                assert!(decode_chunk(3, &b).is_err(), "flip of bit {bit:#x} in byte {i} went unnoticed");
            }
        }
    }

    #[test]
    fn truncation_trailing_and_position() {
        let (bytes, _) = encode_chunk(2, b"0123456789");
        for n in 0..bytes.len() {
            let e = decode_chunk(2, &bytes[..n]).unwrap_err();
            assert!(matches!(e, FormatError::Truncated { .. }), "{n}: {e}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode_chunk(2, &longer), Err(FormatError::Trailing { index: 2, extra: 1 }));
        // A valid chunk in the wrong place (chunks swapped or renamed).
        assert_eq!(decode_chunk(5, &bytes), Err(FormatError::WrongIndex { index: 5, found: 2 }));
        let mut newer = bytes.clone();
        newer[5] = 9;
        assert!(matches!(decode_chunk(2, &newer), Err(FormatError::TooNew { found: 9, .. })));
        assert_eq!(decode_chunk(2, b"XXXX"), Err(FormatError::BadMagic { index: 2 }));
    }

    #[test]
    fn data_checksum_pins_the_sequence() {
        let a = encode_chunk(0, b"a").1;
        let b = encode_chunk(1, b"b").1;
        let mut x = DataChecksum::new();
        x.add(0, 1, &a);
        x.add(1, 1, &b);
        let mut y = DataChecksum::new();
        y.add(0, 1, &a);
        assert_ne!(x.clone().finish(), y.finish());
        let mut z = DataChecksum::new();
        z.add(0, 1, &a);
        z.add(1, 1, &b);
        assert_eq!(x.finish(), z.finish());
        assert_eq!(unhex(&hex(&[0, 15, 255])), Some(vec![0, 15, 255]));
        assert_eq!(unhex("0g"), None);
    }
}
