//! LZF-compressed strings (Redis compresses strings of more than 20 bytes when saving),
//! decoded with the `lzf-rust` crate. The declared length is checked against what the
//! compressed bytes could possibly expand to before anything is allocated.

use alloc::vec::Vec;

use crate::rdb::Error;

/// The most one compressed byte can produce: a long back-reference is 3 bytes that copy
/// up to 7 + 255 + 2 = 264 bytes.
const MAX_EXPANSION: u64 = 88;

/// Decompresses `data` into exactly `len` bytes.
pub fn decompress(data: &[u8], len: u64) -> Result<Vec<u8>, Error> {
    const BAD: Error = Error::BadData("invalid LZF string");
    if len > data.len() as u64 * MAX_EXPANSION {
        return Err(BAD);
    }
    let len = usize::try_from(len).map_err(|_| BAD)?;
    lzf_rust::decompress_into_vec(data, len).map_err(|_| BAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_exact() {
        // "aaaa…" (40 bytes): a literal 'a', then a back-reference of 39 at offset 0.
        let data = [0x00, b'a', 0xe0, 30, 0x00];
        assert_eq!(decompress(&data, 40).unwrap(), [b'a'; 40]);
        assert!(decompress(&data, 39).is_err(), "declared length must match");
        assert!(decompress(&data, 41).is_err());
        assert!(decompress(&data, 1 << 40).is_err(), "a huge length allocates nothing");
        assert!(decompress(&[0xe0, 30, 0x00], 33).is_err(), "reference before any output");
        assert!(decompress(&[], 0).unwrap().is_empty());
    }
}
