//! Serialized intsets (RDB type 11): the width of every integer u32 LE (2, 4 or 8), their
//! count u32 LE, then the integers little-endian in ascending order.

use alloc::vec::Vec;

use crate::rdb::Error;

const BAD: Error = Error::BadData("malformed intset");

/// The integers of a serialized intset, which must be strictly ascending (what Redis's
/// deep `intsetValidateIntegrity` checks; lookups rely on it).
pub fn parse(blob: &[u8]) -> Result<Vec<i64>, Error> {
    let word = |at: usize| blob.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    let (Some(width), Some(count)) = (word(0), word(4)) else { return Err(BAD) };
    if !matches!(width, 2 | 4 | 8) || Some(blob.len() - 8) != count.checked_mul(width) {
        return Err(BAD);
    }
    let mut out: Vec<i64> = Vec::with_capacity(count);
    for b in blob[8..].chunks_exact(width) {
        let v = match width {
            2 => i16::from_le_bytes([b[0], b[1]]) as i64,
            4 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
            _ => i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        };
        if out.last().is_some_and(|&prev| prev >= v) {
            return Err(BAD);
        }
        out.push(v);
    }
    Ok(out)
}

/// A serialized intset of `ints` (ascending), in the narrowest width that holds them all.
pub fn serialize(ints: &[i64]) -> Vec<u8> {
    let width_of = |v: i64| {
        if i16::try_from(v).is_ok() {
            2
        } else if i32::try_from(v).is_ok() {
            4
        } else {
            8
        }
    };
    let width: usize = ints.iter().map(|&v| width_of(v)).max().unwrap_or(2);
    let mut out = Vec::with_capacity(8 + ints.len() * width);
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(ints.len() as u32).to_le_bytes());
    for &v in ints {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn widths_order_and_sizes() {
        for ints in [vec![-3i64, 0, 5], vec![1, 70000], vec![i64::MIN, 0, i64::MAX], vec![]] {
            assert_eq!(parse(&serialize(&ints)).unwrap(), ints);
        }
        assert_eq!(serialize(&[1, 70000])[..4], [4, 0, 0, 0]);
        let ok = serialize(&[1, 2, 3]);
        assert!(parse(&ok[..ok.len() - 1]).is_err(), "size must match the count");
        let mut unordered = ok.clone();
        unordered[8..10].copy_from_slice(&5i16.to_le_bytes());
        assert!(parse(&unordered).is_err());
        let mut width = ok.clone();
        width[0] = 3;
        assert!(parse(&width).is_err());
        let mut huge = ok.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse(&huge).is_err());
        assert!(parse(&[2, 0, 0]).is_err());
    }
}
