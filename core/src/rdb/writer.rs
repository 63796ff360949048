//! Writes the RDB primitives: lengths, strings, doubles, millisecond times.

use alloc::vec::Vec;

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

/// Appends an integer the way Redis saves an int-encoded string: in 1, 2 or 4 bytes when
/// it fits 32 bits, else as its decimal text.
pub fn write_int(out: &mut Vec<u8>, v: i64) {
    if let Ok(b) = i8::try_from(v) {
        out.extend_from_slice(&[0xc0, b as u8]);
    } else if let Ok(h) = i16::try_from(v) {
        out.push(0xc1);
        out.extend_from_slice(&h.to_le_bytes());
    } else if let Ok(w) = i32::try_from(v) {
        out.push(0xc2);
        out.extend_from_slice(&w.to_le_bytes());
    } else {
        write_string(out, crate::util::IntText::new(v).as_bytes());
    }
}

/// Appends a string as Redis's `rdbSaveRawString` does, short of compressing it: a short
/// canonical integer in its integer encoding, anything else plain.
pub fn write_value_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11
        && let Some(v) = crate::util::parse_i64(s)
        && i32::try_from(v).is_ok()
    {
        return write_int(out, v);
    }
    write_string(out, s);
}

/// Appends a double as RDB_TYPE_ZSET_2 stores it.
pub fn write_binary_double(out: &mut Vec<u8>, v: f64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a unix-millisecond time (`rdbSaveMillisecondTime`).
pub fn write_ms_time(out: &mut Vec<u8>, t: i64) {
    out.extend_from_slice(&t.to_le_bytes());
}
