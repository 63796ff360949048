//! The hash chain: `checksum(n) = SHA-256(checksum(n-1) || canonical(entry n))`, so every
//! prefix of a log has exactly one checksum and an altered row breaks the chain after it.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::entry::{Entry, Kind};

/// A chain checksum. Serialised as lowercase hex in JSON views.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Checksum(pub [u8; 32]);

/// The checksum "before" entry 1.
pub const GENESIS: Checksum = Checksum([0; 32]);

impl Checksum {
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    pub fn from_slice(b: &[u8]) -> Option<Checksum> {
        Some(Checksum(b.try_into().ok()?))
    }

    pub fn to_hex(&self) -> String {
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(char::from_digit((b >> 4) as u32, 16).unwrap_or('0'));
            s.push(char::from_digit((b & 15) as u32, 16).unwrap_or('0'));
        }
        s
    }

    pub fn from_hex(s: &str) -> Option<Checksum> {
        let s = s.as_bytes();
        if s.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, pair) in s.chunks_exact(2).enumerate() {
            let hi = (pair[0] as char).to_digit(16)?;
            let lo = (pair[1] as char).to_digit(16)?;
            out[i] = (hi * 16 + lo) as u8;
        }
        Some(Checksum(out))
    }
}

impl fmt::Debug for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Checksum({})", &self.to_hex()[..16])
    }
}

impl fmt::Display for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl Serialize for Checksum {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_hex())
    }
}

impl<'de> Deserialize<'de> for Checksum {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Checksum::from_hex(&s).ok_or_else(|| serde::de::Error::custom("checksum must be 64 hex digits"))
    }
}

/// Checksum of one entry given its predecessor's. The canonical encoding is fixed-width
/// big-endian fields then the payload with its length, so no two entries encode alike.
pub fn link(prev: &Checksum, id: u64, epoch: u64, kind: Kind, format: u16, payload: &[u8]) -> Checksum {
    let mut h = Sha256::new();
    h.update(prev.0);
    h.update(id.to_be_bytes());
    h.update((id - 1).to_be_bytes());
    h.update(epoch.to_be_bytes());
    h.update([kind as u8]);
    h.update(format.to_be_bytes());
    h.update((payload.len() as u64).to_be_bytes());
    h.update(payload);
    Checksum(h.finalize().into())
}

/// Recomputes `entry.checksum` from `prev`.
pub fn expected(prev: &Checksum, e: &Entry) -> Checksum {
    link(prev, e.id, e.epoch, e.kind, e.format, &e.payload)
}

/// Where a chain check failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Broken {
    pub id: u64,
}

/// Checks that `entries` are dense, start right after `anchor_id`, and each checksum
/// continues the previous one starting from `anchor`.
pub fn verify(anchor_id: u64, anchor: Checksum, entries: &[Entry]) -> Result<Checksum, Broken> {
    let mut prev = anchor;
    let mut prev_id = anchor_id;
    for e in entries {
        if e.id != prev_id + 1 || e.prev_id != prev_id || expected(&prev, e) != e.checksum {
            return Err(Broken { id: e.id });
        }
        prev = e.checksum;
        prev_id = e.id;
    }
    Ok(prev)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn entry(prev: &Checksum, id: u64, payload: &'static [u8]) -> Entry {
        let checksum = link(prev, id, 7, Kind::Data, 1, payload);
        Entry { id, prev_id: id - 1, epoch: 7, kind: Kind::Data, format: 1, payload: Bytes::from_static(payload), checksum }
    }

    #[test]
    fn chain_detects_altered_payload_and_gaps() {
        let e1 = entry(&GENESIS, 1, b"a");
        let e2 = entry(&e1.checksum, 2, b"b");
        let e3 = entry(&e2.checksum, 3, b"c");
        let good = vec![e1.clone(), e2.clone(), e3.clone()];
        assert_eq!(verify(0, GENESIS, &good), Ok(e3.checksum));

        let mut altered = good.clone();
        altered[1].payload = Bytes::from_static(b"B");
        assert_eq!(verify(0, GENESIS, &altered), Err(Broken { id: 2 }));

        // Rewriting a row's checksum to match its new payload breaks the next link.
        let mut rewritten = good.clone();
        rewritten[1] = entry(&e1.checksum, 2, b"B");
        assert_eq!(verify(0, GENESIS, &rewritten), Err(Broken { id: 3 }));

        assert_eq!(verify(0, GENESIS, &[e1.clone(), e3.clone()]), Err(Broken { id: 3 }));
        assert_eq!(verify(1, e1.checksum, &[e2, e3.clone()]), Ok(e3.checksum));
    }

    #[test]
    fn hex_round_trips() {
        let c = link(&GENESIS, 1, 1, Kind::Data, 1, b"x");
        assert_eq!(Checksum::from_hex(&c.to_hex()), Some(c));
        assert_eq!(Checksum::from_hex("zz"), None);
        assert_eq!(Checksum::from_hex(&"g".repeat(64)), None);
    }
}
