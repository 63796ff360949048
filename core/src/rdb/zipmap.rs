//! Serialized zipmaps (RDB type 9), the small-hash encoding of Redis before 2.6, read
//! only: Redis 7.0 still loads them. Layout: a count byte (254 or more: count them), then
//! per pair the field's length, the field, the value's length, a byte of free space
//! after the value, the value and that free space; then 0xFF. A length is one byte below
//! 254, else 254 and a u32 LE.

use alloc::vec::Vec;

use crate::rdb::Error;

const BIG_LEN: u8 = 254;
const EOF: u8 = 0xff;

const BAD: Error = Error::BadData("malformed zipmap");

/// A field and its value.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// The (field, value) pairs of a serialized zipmap, checked as Redis's deep
/// `zipmapValidateIntegrity` checks it: every length in bounds, the count, the
/// terminator as the last byte.
pub fn pairs(zm: &[u8]) -> Result<Vec<Pair<'_>>, Error> {
    let declared = *zm.first().ok_or(BAD)?;
    let mut p = 1;
    let len = |p: &mut usize| -> Result<usize, Error> {
        match *zm.get(*p).ok_or(BAD)? {
            BIG_LEN => {
                let b = zm.get(*p + 1..*p + 5).ok_or(BAD)?;
                *p += 5;
                Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            }
            EOF => Err(BAD),
            n => {
                *p += 1;
                Ok(n as usize)
            }
        }
    };
    let take = |p: &mut usize, n: usize| -> Result<&[u8], Error> {
        let s = zm.get(*p..p.checked_add(n).ok_or(BAD)?).ok_or(BAD)?;
        *p += n;
        Ok(s)
    };
    let mut out = Vec::new();
    while *zm.get(p).ok_or(BAD)? != EOF {
        let flen = len(&mut p)?;
        let field = take(&mut p, flen)?;
        let vlen = len(&mut p)?;
        let free = *zm.get(p).ok_or(BAD)? as usize;
        p += 1;
        let value = take(&mut p, vlen)?;
        take(&mut p, free)?;
        out.push((field, value));
    }
    if p != zm.len() - 1 || (declared < BIG_LEN && declared as usize != out.len()) {
        return Err(BAD);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_and_refusals() {
        // {"foo" => "bar", "hello" => "world"}, the second value with 2 bytes of free space.
        let zm = b"\x02\x03foo\x03\x00bar\x05hello\x05\x02worldxx\xff";
        assert_eq!(pairs(zm).unwrap(), [(&b"foo"[..], &b"bar"[..]), (&b"hello"[..], &b"world"[..])]);
        for cut in 0..zm.len() {
            assert!(pairs(&zm[..cut]).is_err());
        }
        let mut bad = zm.to_vec();
        bad[0] = 3;
        assert!(pairs(&bad).is_err(), "count");
        let mut trailing = zm.to_vec();
        trailing.push(0);
        assert!(pairs(&trailing).is_err());
        let big = b"\x01\xfe\x03\x00\x00\x00foo\x01\x00x\xff";
        assert_eq!(pairs(big).unwrap(), [(&b"foo"[..], &b"x"[..])]);
        assert!(pairs(b"\xfe\xfe\xff\xff\xff\xff").is_err(), "a huge length");
    }
}
