//! The manifest: what a snapshot covers and how to check it. Written last, after the
//! snapshot was restored into a fresh engine and matched; its presence is publication.
//! Pure (serde JSON with its own SHA-256, so a damaged manifest is refused too).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use super::format::{self, FORMAT_VERSION};

/// One chunk object of the snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkRef {
    pub index: u32,
    /// Size of the stored object (envelope included).
    pub bytes: u64,
    /// xxh3-128 of the chunk (hex), as in its envelope.
    pub checksum: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Chunk/manifest format version.
    pub format: u16,
    /// memoria-core version and a hash of the engine component that wrote the dump.
    pub engine_version: String,
    pub engine_build: String,
    /// The shard log this snapshot covers, its last id, and the log's chain checksum
    /// at that id (hex): the snapshot holds exactly the effects of entries 1..=last_id.
    pub log: String,
    pub last_id: u64,
    pub log_checksum: String,
    /// Name of the snapshot (its folder in the store).
    pub name: String,
    /// The snapshot this one was built from (None: from an empty engine).
    pub base: Option<String>,
    /// Engine digest of the whole data set (hex, order-independent; core/src/snapshot.rs).
    pub digest: String,
    /// SHA-256 over the chunks' (index, length, checksum) in order (hex).
    pub data_checksum: String,
    pub keys: u64,
    /// Sum of the dump pages (key records), without envelopes.
    pub data_bytes: u64,
    pub chunks: Vec<ChunkRef>,
    /// Log entries and payload bytes replayed on top of the base.
    pub replayed_entries: u64,
    pub replayed_bytes: u64,
    pub created_unix_ms: u64,
    pub took_ms: u64,
    /// SHA-256 (hex) of this manifest's JSON with this field empty.
    pub checksum: String,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ManifestError {
    #[error("manifest is not valid JSON: {0}")]
    Json(String),
    #[error("manifest checksum mismatch (damaged or edited)")]
    Checksum,
    #[error("manifest format {found} is newer than this build reads ({known})")]
    TooNew { found: u16, known: u16 },
    #[error("manifest is inconsistent: {0}")]
    Inconsistent(String),
}

impl Manifest {
    fn body_checksum(&self) -> String {
        let mut m = self.clone();
        m.checksum = String::new();
        let json = serde_json::to_vec(&m).unwrap_or_default();
        format::hex(&Sha256::digest(&json))
    }

    /// Sets `checksum` and returns the bytes to store.
    pub fn seal(&mut self) -> Vec<u8> {
        self.checksum = self.body_checksum();
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// Parses and checks a stored manifest: its checksum, its format, and that its facts
    /// agree with each other. Never panics.
    pub fn parse(b: &[u8]) -> Result<Manifest, ManifestError> {
        let m: Manifest = serde_json::from_slice(b).map_err(|e| ManifestError::Json(e.to_string()))?;
        if m.format > FORMAT_VERSION || m.format == 0 {
            return Err(ManifestError::TooNew { found: m.format, known: FORMAT_VERSION });
        }
        if m.body_checksum() != m.checksum {
            return Err(ManifestError::Checksum);
        }
        let bad = |s: String| Err(ManifestError::Inconsistent(s));
        for (i, c) in m.chunks.iter().enumerate() {
            if c.index as usize != i {
                return bad(format!("chunk {i} is listed as {}", c.index));
            }
            if format::unhex(&c.checksum).is_none_or(|h| h.len() != 16) {
                return bad(format!("chunk {i} checksum is not 32 hex digits"));
            }
            if (c.bytes as usize) < format::HEADER_LEN {
                return bad(format!("chunk {i} is smaller than its envelope"));
            }
        }
        let envelopes = m.chunks.len() as u64 * format::HEADER_LEN as u64;
        if m.chunks.iter().map(|c| c.bytes).sum::<u64>() != m.data_bytes + envelopes {
            return bad("chunk sizes do not add up to data_bytes".into());
        }
        if m.keys > 0 && m.chunks.is_empty() {
            return bad(format!("{} keys in no chunks", m.keys));
        }
        if memoria_log::Checksum::from_hex(&m.log_checksum).is_none() {
            return bad("log_checksum is not 64 hex digits".into());
        }
        if format::unhex(&m.digest).is_none_or(|d| d.len() != 16) || format::unhex(&m.data_checksum).is_none_or(|d| d.len() != 32) {
            return bad("digest or data_checksum malformed".into());
        }
        if m.name != snapshot_name(m.last_id, m.created_unix_ms) {
            return bad(format!("name {} does not match last_id {} and time", m.name, m.last_id));
        }
        Ok(m)
    }

    pub fn log_checksum(&self) -> memoria_log::Checksum {
        memoria_log::Checksum::from_hex(&self.log_checksum).unwrap_or_default()
    }

    /// Average log payload bytes per replayed entry (the scheduler's growth estimate).
    pub fn avg_entry_bytes(&self) -> Option<f64> {
        (self.replayed_entries > 0).then(|| self.replayed_bytes as f64 / self.replayed_entries as f64)
    }
}

/// Snapshot names sort by the log id they cover, then by time.
pub fn snapshot_name(last_id: u64, created_unix_ms: u64) -> String {
    format!("{last_id:020}-{created_unix_ms:013}")
}

#[cfg(test)]
pub(crate) fn sample() -> Manifest {
    let (_, sum) = format::encode_chunk(0, b"abc");
    let mut m = Manifest {
        format: FORMAT_VERSION,
        engine_version: "0.1.0".into(),
        engine_build: "00".into(),
        log: "shard-0".into(),
        last_id: 42,
        log_checksum: "ab".repeat(32),
        name: snapshot_name(42, 1000),
        base: None,
        digest: "11".repeat(16),
        data_checksum: "22".repeat(32),
        keys: 1,
        data_bytes: 3,
        chunks: vec![ChunkRef { index: 0, bytes: 3 + format::HEADER_LEN as u64, checksum: format::hex(&sum) }],
        replayed_entries: 10,
        replayed_bytes: 500,
        created_unix_ms: 1000,
        took_ms: 5,
        checksum: String::new(),
    };
    m.seal();
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_and_parse() {
        let mut m = sample();
        let bytes = m.seal();
        assert_eq!(Manifest::parse(&bytes), Ok(m.clone()));
        assert_eq!(m.avg_entry_bytes(), Some(50.0));
        assert!(snapshot_name(9, 1) < snapshot_name(10, 0), "names sort by log id");
    }

    #[test]
    fn damage_is_refused() {
        let mut m = sample();
        let bytes = m.seal();
        // An edited fact without a new checksum.
        let edited = String::from_utf8(bytes.clone()).unwrap().replace("\"last_id\": 42", "\"last_id\": 43");
        assert_eq!(Manifest::parse(edited.as_bytes()), Err(ManifestError::Checksum));
        assert!(matches!(Manifest::parse(&bytes[..bytes.len() / 2]), Err(ManifestError::Json(_))));
        assert!(matches!(Manifest::parse(b"\xff\x00"), Err(ManifestError::Json(_))));
        // Re-sealed but inconsistent facts.
        let mut gap = m.clone();
        gap.chunks[0].index = 1;
        assert!(matches!(Manifest::parse(&gap.seal()), Err(ManifestError::Inconsistent(_))));
        let mut sizes = m.clone();
        sizes.data_bytes = 4;
        assert!(matches!(Manifest::parse(&sizes.seal()), Err(ManifestError::Inconsistent(_))));
        let mut name = m.clone();
        name.last_id = 41;
        assert!(matches!(Manifest::parse(&name.seal()), Err(ManifestError::Inconsistent(_))));
        let mut newer = m.clone();
        newer.format = FORMAT_VERSION + 1;
        assert!(matches!(Manifest::parse(&newer.seal()), Err(ManifestError::TooNew { .. })));
    }
}
