//! Serialized listpacks (hash, zset and quicklist nodes, stream nodes): a header (total
//! bytes u32 LE, element count u16 LE, 65535 meaning "count them"), the elements, 0xFF.
//! The element coding is `types::stream::lp`'s, which lays elements out as Redis does.

use alloc::vec::Vec;

use crate::rdb::Error;
use crate::types::stream::lp::{self, Ele};

const HEADER: usize = 6;
const EOF: u8 = 0xff;
/// The header's count when it is not known (65535 or more elements).
const COUNT_UNKNOWN: u16 = u16::MAX;

const BAD: Error = Error::BadData("malformed listpack");

/// The elements' bytes of a serialized listpack and how many there are, after checking
/// the header, the terminator and every element (encoding, bounds, back-length), as
/// Redis's deep `lpValidateIntegrity` does.
pub fn body(blob: &[u8]) -> Result<(&[u8], usize), Error> {
    if blob.len() < HEADER + 1 || blob[blob.len() - 1] != EOF {
        return Err(BAD);
    }
    let total = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
    let declared = u16::from_le_bytes([blob[4], blob[5]]);
    if total != blob.len() {
        return Err(BAD);
    }
    let body = &blob[HEADER..blob.len() - 1];
    let mut count = 0usize;
    let mut pos = 0;
    while pos < body.len() {
        pos = lp::get_checked(body, pos).ok_or(BAD)?.1;
        count += 1;
    }
    if declared != COUNT_UNKNOWN && declared as usize != count {
        return Err(BAD);
    }
    Ok((body, count))
}

/// The elements of a serialized listpack (checked as `body` does).
pub fn elements(blob: &[u8]) -> Result<Vec<Ele<'_>>, Error> {
    let (body, count) = body(blob)?;
    let mut out = Vec::with_capacity(count);
    let mut pos = 0;
    while pos < body.len() {
        let (e, next) = lp::at(body, pos);
        out.push(e);
        pos = next;
    }
    Ok(out)
}

/// A serialized listpack of `count` elements whose bytes are `body`.
pub fn serialize(body: &[u8], count: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + body.len() + 1);
    out.extend_from_slice(&((HEADER + body.len() + 1) as u32).to_le_bytes());
    out.extend_from_slice(&u16::try_from(count).unwrap_or(COUNT_UNKNOWN).to_le_bytes());
    out.extend_from_slice(body);
    out.push(EOF);
    out
}

/// The number of elements in a listpack body (the engine's own, well formed).
pub fn count(body: &[u8]) -> usize {
    let mut n = 0;
    let mut pos = 0;
    while pos < body.len() {
        pos = lp::next(body, pos);
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let mut b = Vec::new();
        lp::push_str(&mut b, b"hello");
        lp::push_str(&mut b, b"-42");
        lp::push_str(&mut b, &[b'x'; 300]);
        let blob = serialize(&b, 3);
        assert_eq!(&blob[..6], &((6 + b.len() + 1) as u32).to_le_bytes().iter().chain(&[3, 0]).copied().collect::<Vec<u8>>()[..]);
        assert_eq!(elements(&blob).unwrap(), [Ele::Str(b"hello"), Ele::Int(-42), Ele::Str(&[b'x'; 300])]);
        assert_eq!(count(&b), 3);
        // Wrong count, size, terminator, back-length: refused.
        let mut bad = blob.clone();
        bad[4] = 2;
        assert!(body(&bad).is_err());
        let mut unknown = blob.clone();
        unknown[4] = 0xff;
        unknown[5] = 0xff;
        assert_eq!(body(&unknown).unwrap().1, 3);
        let mut bad = blob.clone();
        *bad.last_mut().unwrap() = 0;
        assert!(body(&bad).is_err());
        assert!(body(&blob[..blob.len() - 1]).is_err());
        let mut bad = blob.clone();
        bad[6 + 6] ^= 1; // the back-length of "hello"
        assert!(body(&bad).is_err());
        for cut in 0..blob.len() {
            assert!(body(&blob[..cut]).is_err());
        }
    }
}
