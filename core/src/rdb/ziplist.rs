//! Serialized ziplists, the small-collection encoding before listpacks (RDB types 10, 12,
//! 13 and the nodes of type 14), read only: Redis 7.0 still loads them. Layout: total
//! bytes u32 LE, offset of the last entry u32 LE, entry count u16 LE (65535: count them),
//! the entries, 0xFF. An entry is the previous entry's size (1 byte, or 0xFE and u32 LE),
//! an encoding, and its data.

use alloc::vec::Vec;

use crate::rdb::Error;
use crate::types::stream::lp::Ele;

const HEADER: usize = 10;
const EOF: u8 = 0xff;
const BIG_PREVLEN: u8 = 0xfe;

const BAD: Error = Error::BadData("malformed ziplist");

fn le_u32(b: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(..4)?.try_into().ok()?))
}

/// The entry at `pos` of `zl`: its previous-entry size, value, and the next entry's
/// position. None if it runs out of bounds or has an unknown encoding.
fn entry(zl: &[u8], pos: usize) -> Option<(usize, Ele<'_>, usize)> {
    let (prev, mut p) = match *zl.get(pos)? {
        BIG_PREVLEN => (le_u32(zl.get(pos + 1..)?)? as usize, pos + 5),
        EOF => return None,
        b => (b as usize, pos + 1),
    };
    let enc = *zl.get(p)?;
    p += 1;
    let int = |n: usize| -> Option<[u8; 8]> {
        let raw = zl.get(p..p + n)?;
        let mut le = [0u8; 8];
        le[..n].copy_from_slice(raw);
        Some(le)
    };
    let (ele, size) = match enc >> 6 {
        0 => {
            let l = (enc & 0x3f) as usize;
            (Ele::Str(zl.get(p..p + l)?), l)
        }
        1 => {
            let l = ((enc & 0x3f) as usize) << 8 | *zl.get(p)? as usize;
            p += 1;
            (Ele::Str(zl.get(p..p + l)?), l)
        }
        // 32-bit length, big-endian (the encoding byte's low bits are not part of it).
        2 => {
            let l = u32::from_be_bytes(zl.get(p..p + 4)?.try_into().ok()?) as usize;
            p += 4;
            (Ele::Str(zl.get(p..p.checked_add(l)?)?), l)
        }
        _ => match enc {
            0xc0 => (Ele::Int(i16::from_le_bytes(int(2)?[..2].try_into().ok()?) as i64), 2),
            0xd0 => (Ele::Int(i32::from_le_bytes(int(4)?[..4].try_into().ok()?) as i64), 4),
            0xe0 => (Ele::Int(i64::from_le_bytes(int(8)?)), 8),
            // 24 bits, sign-extended.
            0xf0 => (Ele::Int((i64::from_le_bytes(int(3)?) << 40) >> 40), 3),
            0xfe => (Ele::Int(int(1)?[0] as i8 as i64), 1),
            // 0xf1..=0xfd: an immediate 0..=12.
            0xf1..=0xfd => (Ele::Int((enc & 0x0f) as i64 - 1), 0),
            _ => return None,
        },
    };
    Some((prev, ele, p + size))
}

/// The entries of a serialized ziplist, after checking what Redis's deep
/// `ziplistValidateIntegrity` checks: the sizes in the header, the terminator, every
/// entry's bounds and encoding, each previous-entry size, the tail offset and the count.
pub fn elements(zl: &[u8]) -> Result<Vec<Ele<'_>>, Error> {
    if zl.len() < HEADER + 1 || zl[zl.len() - 1] != EOF {
        return Err(BAD);
    }
    let total = le_u32(zl).ok_or(BAD)? as usize;
    let tail = le_u32(&zl[4..]).ok_or(BAD)? as usize;
    let declared = u16::from_le_bytes([zl[8], zl[9]]);
    if total != zl.len() {
        return Err(BAD);
    }
    let end = zl.len() - 1;
    let mut out = Vec::new();
    let (mut pos, mut prev_size, mut last) = (HEADER, 0usize, HEADER);
    while pos < end {
        let (prev, ele, next) = entry(zl, pos).ok_or(BAD)?;
        if next > end || prev != prev_size {
            return Err(BAD);
        }
        out.push(ele);
        last = pos;
        prev_size = next - pos;
        pos = next;
    }
    if tail != last || (declared != u16::MAX && declared as usize != out.len()) {
        return Err(BAD);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ziplist of `entries` (each already prevlen-less: encoding and data).
    fn build(entries: &[&[u8]]) -> Vec<u8> {
        let mut body = Vec::new();
        let (mut prev, mut tail) = (0usize, HEADER);
        for e in entries {
            tail = HEADER + body.len();
            let start = body.len();
            body.push(prev as u8);
            body.extend_from_slice(e);
            prev = body.len() - start;
        }
        let mut zl = Vec::new();
        zl.extend_from_slice(&((HEADER + body.len() + 1) as u32).to_le_bytes());
        zl.extend_from_slice(&(tail as u32).to_le_bytes());
        zl.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        zl.extend_from_slice(&body);
        zl.push(EOF);
        zl
    }

    #[test]
    fn every_encoding() {
        let zl = build(&[
            b"\x03abc",
            b"\xc0\x39\x30",
            b"\xd0\x00\x00\x00\x80",
            b"\xe0\xff\xff\xff\xff\xff\xff\xff\x7f",
            b"\xf0\xff\xff\xff",
            b"\xfe\x80",
            b"\xf1",
            b"\xfd",
            b"\x40\x02hi",
        ]);
        assert_eq!(
            elements(&zl).unwrap(),
            [
                Ele::Str(b"abc"),
                Ele::Int(12345),
                Ele::Int(i32::MIN as i64),
                Ele::Int(i64::MAX),
                Ele::Int(-1),
                Ele::Int(-128),
                Ele::Int(0),
                Ele::Int(12),
                Ele::Str(b"hi")
            ]
        );
        assert!(elements(&build(&[])).unwrap().is_empty());
    }

    #[test]
    fn refusals() {
        let zl = build(&[b"\x03abc", b"\xfe\x05"]);
        assert!(elements(&zl).is_ok());
        for cut in 0..zl.len() {
            assert!(elements(&zl[..cut]).is_err());
        }
        let mut bad = zl.clone();
        bad[8] = 3; // count
        assert!(elements(&bad).is_err());
        let mut bad = zl.clone();
        bad[4] = 10; // tail offset
        assert!(elements(&bad).is_err());
        let mut bad = zl.clone();
        bad[15] = 4; // the second entry's prevlen
        assert!(elements(&bad).is_err());
        let mut bad = zl.clone();
        bad[16] = 0xff; // an encoding that is the terminator
        assert!(elements(&bad).is_err());
        assert!(elements(&build(&[b"\x3fabc"])).is_err(), "string past the end");
    }
}
