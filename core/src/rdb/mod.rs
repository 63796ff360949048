//! Redis's serialization format where Memoria exchanges it with Redis: the payloads of
//! DUMP / RESTORE and FUNCTION DUMP / FUNCTION RESTORE. A payload is RDB records (one
//! object for DUMP, function libraries for FUNCTION DUMP) followed by the RDB version
//! (u16 LE) and a CRC-64 (Jones, as Redis computes it; u64 LE) of everything before it.
//!
//! One module per job: `reader`/`writer` (lengths, strings, doubles, times), `lzf`
//! (compressed strings), the packed blobs (`listpack`, `ziplist`, `intset`, `zipmap`),
//! and the values of keys (`object`, with `stream` for streams). This layer sits above
//! `keyspace`: it reads payloads into the engine's values and writes them out.

pub mod intset;
pub mod listpack;
pub mod lzf;
pub mod object;
pub mod reader;
pub mod stream;
pub mod writer;
pub mod ziplist;
pub mod zipmap;

pub use reader::Reader;
pub use writer::{write_len, write_string};

/// The RDB version Redis 7.0 writes, and the newest this reads.
pub const RDB_VERSION: u16 = 10;

/// The record type of a function library (its code, as a string).
pub const TYPE_FUNCTION2: u8 = 245;
/// Redis 7.0's release candidates' function record, which 7.0 no longer reads either.
pub const TYPE_FUNCTION_PRE_GA: u8 = 246;

/// Why a payload cannot be restored.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Error {
    /// The footer: a version newer than this reads, or a checksum that does not hold
    /// (Redis's "DUMP payload version or checksum are wrong").
    Footer,
    /// The records: truncated, malformed or inconsistent (Redis's "Bad data format");
    /// the text says what was wrong, for tests and logs.
    BadData(&'static str),
}

fn crc64(data: &[u8]) -> u64 {
    // Built once, at compile time: `Crc::new` at run time computes its tables on every
    // call (that was nearly half of a RESTORE of 1 KB). Slicing by 16 bytes.
    static CRC64: crc::Crc<u64, crc::Table<16>> = crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);
    CRC64.checksum(data)
}

/// Appends the version and the checksum that end a payload.
pub fn finish_payload(out: &mut alloc::vec::Vec<u8>) {
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Checks a payload's footer (Redis's `verifyDumpPayload`): the records it ends, if its
/// version is one this reads and its checksum holds.
pub fn payload_body(p: &[u8]) -> Result<&[u8], Error> {
    if p.len() < 10 {
        return Err(Error::Footer);
    }
    let (body, footer) = p.split_at(p.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes([footer[2], footer[3], footer[4], footer[5], footer[6], footer[7], footer[8], footer[9]]);
    if version > RDB_VERSION || crc64(&p[..p.len() - 8]) != crc {
        return Err(Error::Footer);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use alloc::{format, vec};

    /// FUNCTION DUMP of one library, as redis-server 7.0.15 gave it.
    const REDIS_DUMP: &[u8] = b"\xf5@D#!lua name=l1\nredis.register_function('f1', function() return 1 end)\n\x00N\xdf\x9dI\"\x9e+\xa7";

    const REDIS_LZF_DUMP: &[u8] = b"\xf5\xc3\x40\x48\x40\x9e\x1f\x23\x21\x6c\x75\x61\x20\x6e\x61\x6d\x65\x3d\x72\x65\x70\x0a\x72\x65\x64\x69\x73\x2e\x72\x65\x67\x69\x73\x74\x65\x72\x5f\x66\x75\x0c\x6e\x63\x74\x69\x6f\x6e\x28\x27\x72\x31\x27\x2c\x20\xe0\x00\x0e\x0a\x29\x20\x72\x65\x74\x75\x72\x6e\x20\x27\x61\xe0\x4e\x00\x05\x27\x20\x65\x6e\x64\x29\x0a\x00\xe6\xd0\xf1\x2a\x24\x39\x12\xda";

    #[test]
    fn reads_and_writes_what_redis_does() {
        let body = payload_body(REDIS_DUMP).expect("version and checksum hold");
        let mut r = Reader::new(body);
        assert_eq!(r.byte(), Ok(TYPE_FUNCTION2));
        let code = r.string().unwrap();
        assert!(r.is_empty());
        let mut out = vec![TYPE_FUNCTION2];
        write_string(&mut out, &code);
        finish_payload(&mut out);
        assert_eq!(out, REDIS_DUMP);
    }

    #[test]
    fn lengths_and_encoded_strings_round_trip() {
        for n in [0u64, 63, 64, 16383, 16384, u32::MAX as u64, u32::MAX as u64 + 1] {
            let mut out = Vec::new();
            write_len(&mut out, n);
            assert_eq!(Reader::new(&out).len(), Ok(n), "{n}");
        }
        assert_eq!(Reader::new(&[0xc0, 0xfe]).string().unwrap(), b"-2");
        assert_eq!(Reader::new(&[0xc1, 0x39, 0x30]).string().unwrap(), b"12345");
        assert_eq!(Reader::new(&[0xc2, 0xff, 0xff, 0xff, 0x7f]).string().unwrap(), b"2147483647");
        // An LZF-compressed string, as redis-server 7.0.15 dumped a repetitive library.
        let body = payload_body(REDIS_LZF_DUMP).unwrap();
        let mut r = Reader::new(body);
        assert_eq!(r.byte(), Ok(TYPE_FUNCTION2));
        let code = r.string().unwrap();
        let want = format!("#!lua name=rep\nredis.register_function('r1', function() return '{}' end)", "a".repeat(88));
        assert_eq!(code, want.as_bytes());
        assert!(r.is_empty());
        // And FUNCTION DUMP with no library: the footer alone.
        let mut empty = Vec::new();
        finish_payload(&mut empty);
        assert_eq!(empty, b"\n\x00]\x9b\\@\x0f\x7f\xa2\xda");
    }

    #[test]
    fn corrupt_payloads_are_refused_without_panics() {
        let mut bad = REDIS_DUMP.to_vec();
        bad[5] ^= 1;
        assert!(payload_body(&bad).is_err());
        assert!(payload_body(b"short").is_err());
        let mut newer = vec![TYPE_FUNCTION2, 0];
        newer.extend_from_slice(&(RDB_VERSION + 1).to_le_bytes());
        let crc = crc64(&newer);
        newer.extend_from_slice(&crc.to_le_bytes());
        assert!(payload_body(&newer).is_err());
        // Truncations, huge lengths, bad LZF: None, never a panic or a huge allocation.
        for cut in 0..REDIS_DUMP.len() {
            let _ = Reader::new(&REDIS_DUMP[..cut]).string();
        }
        assert!(Reader::new(&[0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).string().is_err());
        assert!(Reader::new(&[0xc3, 3, 0x3f, 1, 2, 3]).string().is_err());
        assert!(Reader::new(&[0xc4]).string().is_err());
    }
}
