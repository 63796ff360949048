//! The log's data model: entries, their kinds, heads and admin views.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::chain::Checksum;

/// The format version this build writes. Readers that see a newer version stop applying
/// rather than misread it (docs/ARCHITECTURE.md "Format versions and upgrades"); the
/// service itself stores it opaquely.
pub const FORMAT_VERSION: u16 = 1;

/// Name of the log that records cluster topology. It is an ordinary log: same primitives.
pub const CLUSTER_LOG: &str = "cluster";

/// What an entry means to the host. Stored as a small integer; the numbers are part of the
/// on-disk and wire formats and must never be reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Kind {
    /// Replicated effects of a batch of write commands.
    Data = 1,
    /// The leader's periodic lease renewal (payload: [`LeasePayload`]).
    LeaseRenewal = 2,
    /// A contender's claim of leadership (payload: [`LeasePayload`]).
    LeaderClaim = 3,
    /// Slot migration: keys start streaming to the target shard.
    MigrationStart = 4,
    /// Slot migration: two-phase commit, prepare.
    MigrationPrepare = 5,
    /// Slot migration: two-phase commit, commit.
    MigrationCommit = 6,
    /// Slot migration: abandoned.
    MigrationAbort = 7,
    /// Written by the service: the chain checksum of a prefix, for snapshot verification
    /// (payload: [`MarkPayload`]).
    ChecksumMark = 8,
    /// Configuration change (shard membership, settings).
    Config = 9,
}

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::Data,
        Kind::LeaseRenewal,
        Kind::LeaderClaim,
        Kind::MigrationStart,
        Kind::MigrationPrepare,
        Kind::MigrationCommit,
        Kind::MigrationAbort,
        Kind::ChecksumMark,
        Kind::Config,
    ];

    pub fn from_u8(v: u8) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| *k as u8 == v)
    }

    /// Kinds that carry a [`LeasePayload`] and so tell who leads the log.
    pub fn is_leadership(self) -> bool {
        matches!(self, Kind::LeaseRenewal | Kind::LeaderClaim)
    }
}

/// An entry as a writer submits it; the service assigns id, prev_id and checksum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewEntry {
    pub kind: Kind,
    pub format: u16,
    pub payload: Bytes,
}

impl NewEntry {
    pub fn new(kind: Kind, payload: impl Into<Bytes>) -> Self {
        NewEntry { kind, format: FORMAT_VERSION, payload: payload.into() }
    }

    pub fn data(payload: impl Into<Bytes>) -> Self {
        Self::new(Kind::Data, payload)
    }
}

/// A stored entry. `prev_id` is always `id - 1` (a CHECK constraint makes it so); it is
/// kept as a column because it is what the conditional append's arbiter compares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub id: u64,
    pub prev_id: u64,
    pub epoch: u64,
    pub kind: Kind,
    pub format: u16,
    pub payload: Bytes,
    pub checksum: Checksum,
}

/// The tail of a log. An empty log has id 0 and the genesis checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    pub id: u64,
    pub checksum: Checksum,
    pub epoch: u64,
}

/// Result of a successful append. Data entries got ids `first_id ..= first_id + n - 1`;
/// `last_id` may be one higher when the service added a checksum mark after them, so the
/// writer's next `prev_id` is always `last_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Appended {
    pub first_id: u64,
    pub last_id: u64,
    pub checksum: Checksum,
}

/// A node tailing a log, as the service last saw it: replicas name themselves in their
/// reads, so the primary can tell how far each has applied (WAIT) and who they are
/// (CLUSTER SLOTS). Kept in the memory of the service instance that served the reads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReaderInfo {
    pub name: String,
    /// The reader has applied every entry up to this id (it asked for what follows).
    pub applied: u64,
    /// Milliseconds since its last read started or ended.
    pub idle_ms: u64,
}

/// Admin view of one log (JSON; the console shows it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogInfo {
    pub name: String,
    /// Node named by the newest lease renewal or leader claim, if any.
    pub leader: Option<String>,
    /// Epoch of the tail entry (the current leader's epoch).
    pub epoch: u64,
    /// Unix ms at which the newest lease expires (service clock at append + lease length).
    pub lease_expires_ms: Option<u64>,
    pub tail_id: u64,
    pub last_checksum: Checksum,
    /// Oldest id still stored (0 when empty).
    pub first_id: u64,
    /// Highest id covered by a published, verified snapshot (0 = none).
    pub snapshot_id: u64,
}

/// Payload of [`Kind::LeaseRenewal`] and [`Kind::LeaderClaim`]: who leads, and for how long
/// a renewal holds. Encoding: u16 BE length + UTF-8 node id, then u64 BE lease ms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeasePayload {
    pub node: String,
    pub lease_ms: u64,
}

impl LeasePayload {
    pub fn encode(&self) -> Bytes {
        let node = self.node.as_bytes();
        let len = node.len().min(u16::MAX as usize);
        let mut out = Vec::with_capacity(2 + len + 8);
        out.extend_from_slice(&(len as u16).to_be_bytes());
        out.extend_from_slice(&node[..len]);
        out.extend_from_slice(&self.lease_ms.to_be_bytes());
        out.into()
    }

    /// `None` for anything that is not exactly a valid encoding; never panics.
    pub fn decode(b: &[u8]) -> Option<LeasePayload> {
        let len = u16::from_be_bytes(b.get(..2)?.try_into().ok()?) as usize;
        let node = std::str::from_utf8(b.get(2..2 + len)?).ok()?.to_owned();
        let rest = b.get(2 + len..)?;
        if rest.len() != 8 {
            return None;
        }
        Some(LeasePayload { node, lease_ms: u64::from_be_bytes(rest.try_into().ok()?) })
    }
}

/// Payload of [`Kind::ChecksumMark`]: the chain checksum of the prefix ending at `id`.
/// Encoding: u64 BE id + 32 checksum bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkPayload {
    pub id: u64,
    pub checksum: Checksum,
}

impl MarkPayload {
    pub fn encode(&self) -> Bytes {
        let mut out = Vec::with_capacity(40);
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(self.checksum.as_bytes());
        out.into()
    }

    pub fn decode(b: &[u8]) -> Option<MarkPayload> {
        if b.len() != 40 {
            return None;
        }
        let id = u64::from_be_bytes(b[..8].try_into().ok()?);
        let checksum = Checksum(b[8..].try_into().ok()?);
        Some(MarkPayload { id, checksum })
    }
}

/// Log names appear in URLs and NOTIFY payloads: keep them to a safe, bounded alphabet.
pub fn valid_log_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 128 && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_payload_round_trips_and_rejects_garbage() {
        let p = LeasePayload { node: "node-a".into(), lease_ms: 3000 };
        assert_eq!(LeasePayload::decode(&p.encode()), Some(p));
        assert_eq!(LeasePayload::decode(&[]), None);
        assert_eq!(LeasePayload::decode(&[0, 200, 1, 2]), None);
        assert_eq!(LeasePayload::decode(&[0, 0, 1, 2, 3]), None);
    }

    #[test]
    fn kinds_round_trip() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_u8(k as u8), Some(k));
        }
        assert_eq!(Kind::from_u8(0), None);
        assert_eq!(Kind::from_u8(200), None);
    }

    #[test]
    fn log_names() {
        assert!(valid_log_name("shard-0"));
        assert!(valid_log_name(CLUSTER_LOG));
        assert!(!valid_log_name(""));
        assert!(!valid_log_name("a/b"));
        assert!(!valid_log_name("a:b"));
        assert!(!valid_log_name(&"x".repeat(129)));
    }
}
