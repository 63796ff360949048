//! Redis's serialization format where Memoria exchanges it with Redis: the payloads of
//! FUNCTION DUMP / FUNCTION RESTORE (and, later, DUMP / RESTORE of keys). A payload is RDB
//! records followed by the RDB version (u16 LE) and a CRC-64 (Jones, as Redis computes it;
//! u64 LE) of everything before it.

use alloc::vec::Vec;

/// The RDB version Redis 7.0 writes, and the newest this reads.
pub const RDB_VERSION: u16 = 10;

/// The record type of a function library (its code, as a string).
pub const TYPE_FUNCTION2: u8 = 245;
/// Redis 7.0's release candidates' function record, which 7.0 no longer reads either.
pub const TYPE_FUNCTION_PRE_GA: u8 = 246;

/// The longest string a payload may hold (Redis's `proto-max-bulk-len` ceiling): a corrupt
/// length must not become an allocation.
const MAX_STRING: u64 = 512 << 20;

fn crc64(data: &[u8]) -> u64 {
    crc::Crc::<u64>::new(&crc::CRC_64_REDIS).checksum(data)
}

/// Appends an RDB length.
pub fn write_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]);
    } else if n <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// Appends a string, plain (Redis reads it whether or not it would have compressed it).
pub fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    write_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Appends the version and the checksum that end a payload.
pub fn finish_payload(out: &mut Vec<u8>) {
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// The records of a payload whose version this reads and whose checksum holds.
pub fn payload_body(p: &[u8]) -> Option<&[u8]> {
    if p.len() < 10 {
        return None;
    }
    let (body, footer) = p.split_at(p.len() - 10);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..].try_into().ok()?);
    (version <= RDB_VERSION && crc64(&p[..p.len() - 8]) == crc).then_some(body)
}

/// Reads RDB records from a payload's body.
pub struct Reader<'a> {
    buf: &'a [u8],
}

/// A length, or a string stored another way (an integer, LZF).
enum Len {
    Plain(u64),
    Int8,
    Int16,
    Int32,
    Lzf,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Some(head)
    }

    pub fn byte(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn len(&mut self) -> Option<Len> {
        let first = self.byte()?;
        Some(match first >> 6 {
            0 => Len::Plain((first & 0x3f) as u64),
            1 => Len::Plain(((first & 0x3f) as u64) << 8 | self.byte()? as u64),
            2 => match first {
                0x80 => Len::Plain(u32::from_be_bytes(self.take(4)?.try_into().ok()?) as u64),
                0x81 => Len::Plain(u64::from_be_bytes(self.take(8)?.try_into().ok()?)),
                _ => return None,
            },
            _ => match first & 0x3f {
                0 => Len::Int8,
                1 => Len::Int16,
                2 => Len::Int32,
                3 => Len::Lzf,
                _ => return None,
            },
        })
    }

    fn plain_len(&mut self) -> Option<usize> {
        match self.len()? {
            Len::Plain(n) if n <= MAX_STRING => Some(n as usize),
            _ => None,
        }
    }

    /// A string in any of Redis's encodings.
    pub fn string(&mut self) -> Option<Vec<u8>> {
        let int = |v: i64| alloc::format!("{v}").into_bytes();
        match self.len()? {
            Len::Plain(n) if n <= MAX_STRING => self.take(n as usize).map(<[u8]>::to_vec),
            Len::Plain(_) => None,
            Len::Int8 => Some(int(self.byte()? as i8 as i64)),
            Len::Int16 => Some(int(i16::from_le_bytes(self.take(2)?.try_into().ok()?) as i64)),
            Len::Int32 => Some(int(i32::from_le_bytes(self.take(4)?.try_into().ok()?) as i64)),
            Len::Lzf => {
                let compressed = self.plain_len()?;
                let len = self.plain_len()?;
                let data = self.take(compressed)?;
                let mut out = alloc::vec![0u8; len];
                match lzf_rust::decompress(data, &mut out) {
                    Ok(n) if n == len => Some(out),
                    _ => None,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::{format, vec};

    /// FUNCTION DUMP of one library, as redis-server 7.0.15 gave it.
    const REDIS_DUMP: &[u8] = b"\xf5@D#!lua name=l1\nredis.register_function('f1', function() return 1 end)\n\x00N\xdf\x9dI\"\x9e+\xa7";

    const REDIS_LZF_DUMP: &[u8] = b"\xf5\xc3\x40\x48\x40\x9e\x1f\x23\x21\x6c\x75\x61\x20\x6e\x61\x6d\x65\x3d\x72\x65\x70\x0a\x72\x65\x64\x69\x73\x2e\x72\x65\x67\x69\x73\x74\x65\x72\x5f\x66\x75\x0c\x6e\x63\x74\x69\x6f\x6e\x28\x27\x72\x31\x27\x2c\x20\xe0\x00\x0e\x0a\x29\x20\x72\x65\x74\x75\x72\x6e\x20\x27\x61\xe0\x4e\x00\x05\x27\x20\x65\x6e\x64\x29\x0a\x00\xe6\xd0\xf1\x2a\x24\x39\x12\xda";

    #[test]
    fn reads_and_writes_what_redis_does() {
        let body = payload_body(REDIS_DUMP).expect("version and checksum hold");
        let mut r = Reader::new(body);
        assert_eq!(r.byte(), Some(TYPE_FUNCTION2));
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
            assert!(matches!(Reader::new(&out).len(), Some(Len::Plain(m)) if m == n), "{n}");
        }
        assert_eq!(Reader::new(&[0xc0, 0xfe]).string().unwrap(), b"-2");
        assert_eq!(Reader::new(&[0xc1, 0x39, 0x30]).string().unwrap(), b"12345");
        assert_eq!(Reader::new(&[0xc2, 0xff, 0xff, 0xff, 0x7f]).string().unwrap(), b"2147483647");
        // An LZF-compressed string, as redis-server 7.0.15 dumped a repetitive library.
        let body = payload_body(REDIS_LZF_DUMP).unwrap();
        let mut r = Reader::new(body);
        assert_eq!(r.byte(), Some(TYPE_FUNCTION2));
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
        assert!(payload_body(&bad).is_none());
        assert!(payload_body(b"short").is_none());
        let mut newer = vec![TYPE_FUNCTION2, 0];
        newer.extend_from_slice(&(RDB_VERSION + 1).to_le_bytes());
        let crc = crc64(&newer);
        newer.extend_from_slice(&crc.to_le_bytes());
        assert!(payload_body(&newer).is_none());
        // Truncations, huge lengths, bad LZF: None, never a panic or a huge allocation.
        for cut in 0..REDIS_DUMP.len() {
            let _ = Reader::new(&REDIS_DUMP[..cut]).string();
        }
        assert!(Reader::new(&[0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).string().is_none());
        assert!(Reader::new(&[0xc3, 3, 0x3f, 1, 2, 3]).string().is_none());
        assert!(Reader::new(&[0xc4]).string().is_none());
    }
}
