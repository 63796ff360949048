//! The HyperLogLog encoding (a port of Redis 7.0's hyperloglog.c, data half): sparse and
//! dense registers in a plain string with Redis's exact layout, the estimator, merging.

use alloc::vec;
use alloc::vec::Vec;

const P: u32 = 14;
pub const REGISTERS: usize = 1 << P;
const Q: u32 = 64 - P;
pub const HDR: usize = 16;
pub const DENSE_SIZE: usize = HDR + (REGISTERS * 6).div_ceil(8);
pub const DENSE: u8 = 0;
pub const SPARSE: u8 = 1;
const VAL_MAX_VALUE: u8 = 32;
const VAL_MAX_LEN: usize = 4;
const ZERO_MAX_LEN: usize = 64;
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

pub const INVALID_HLL: &[u8] = b"INVALIDOBJ Corrupted HLL object detected";
pub const NOT_HLL: &[u8] = b"WRONGTYPE Key is not a valid HyperLogLog string value.";

/// A corrupt HLL: an unknown encoding, or sparse runs that do not cover exactly the
/// registers. Commands answer it with [`INVALID_HLL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidHll;

/// MurmurHash2, 64-bit version (Redis's endian-neutral variant).
pub fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4a7935bd1e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let mut k = u64::from_le_bytes(c.try_into().unwrap());
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element maps to and the length of its 0…01 pattern (1..=Q+1).
fn pat_len(ele: &[u8]) -> (usize, u8) {
    let hash = murmur64a(ele, 0xadc83b19);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    // The top bit guarantees termination and a count of at most Q+1.
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

// ---------- dense ----------

fn dense_get(regs: &[u8], i: usize) -> u8 {
    let byte = i * 6 / 8;
    let fb = (i * 6) & 7;
    let b0 = regs[byte] as u16;
    let b1 = regs.get(byte + 1).copied().unwrap_or(0) as u16;
    (((b0 >> fb) | (b1 << (8 - fb))) & 63) as u8
}

fn dense_put(regs: &mut [u8], i: usize, v: u8) {
    let byte = i * 6 / 8;
    let fb = (i * 6) & 7;
    let v = v as u16;
    regs[byte] &= !((63u16 << fb) as u8);
    regs[byte] |= (v << fb) as u8;
    if byte + 1 < regs.len() {
        regs[byte + 1] &= !((63u16 >> (8 - fb)) as u8);
        regs[byte + 1] |= (v >> (8 - fb)) as u8;
    }
}

/// Raises register `i` to `count`; true if it changed.
pub fn dense_set(regs: &mut [u8], i: usize, count: u8) -> bool {
    if count > dense_get(regs, i) {
        dense_put(regs, i, count);
        true
    } else {
        false
    }
}

// ---------- sparse ----------

#[inline]
fn is_zero(op: u8) -> bool {
    op & 0xc0 == 0
}
#[inline]
fn is_xzero(op: u8) -> bool {
    op & 0xc0 == 0x40
}
#[inline]
fn is_val(op: u8) -> bool {
    op & 0x80 != 0
}
#[inline]
fn zero_len(op: u8) -> usize {
    (op & 0x3f) as usize + 1
}
#[inline]
fn xzero_len(op: u8, next: u8) -> usize {
    (((op & 0x3f) as usize) << 8 | next as usize) + 1
}
#[inline]
fn val_value(op: u8) -> u8 {
    ((op >> 2) & 0x1f) + 1
}
#[inline]
fn val_len(op: u8) -> usize {
    (op & 0x3) as usize + 1
}
#[inline]
fn val_op(value: u8, len: usize) -> u8 {
    ((value - 1) << 2 | (len as u8 - 1)) | 0x80
}

/// Pushes a run of `len` zero registers as ZERO or XZERO.
fn push_zeros(seq: &mut Vec<u8>, len: usize) {
    if len > ZERO_MAX_LEN {
        let l = len - 1;
        seq.push((l >> 8) as u8 | 0x40);
        seq.push((l & 0xff) as u8);
    } else {
        seq.push((len - 1) as u8);
    }
}

/// Walks a sparse body, calling `run(first_register, len, value)` for every opcode.
/// Err if the runs do not cover exactly the 16384 registers.
fn sparse_runs<F: FnMut(usize, usize, u8)>(body: &[u8], mut run: F) -> Result<(), InvalidHll> {
    let mut idx = 0usize;
    let mut p = 0;
    while p < body.len() {
        let op = body[p];
        let (len, value, step) = if is_zero(op) {
            (zero_len(op), 0, 1)
        } else if is_xzero(op) {
            (xzero_len(op, body.get(p + 1).copied().unwrap_or(0)), 0, 2)
        } else {
            (val_len(op), val_value(op), 1)
        };
        if idx + len > REGISTERS {
            return Err(InvalidHll);
        }
        run(idx, len, value);
        idx += len;
        p += step;
    }
    if idx == REGISTERS { Ok(()) } else { Err(InvalidHll) }
}

/// A new, empty HLL: sparse, one XZERO opcode, cached cardinality 0.
pub fn create() -> Vec<u8> {
    let mut s = Vec::with_capacity(HDR + 2);
    s.extend_from_slice(b"HYLL");
    s.push(SPARSE);
    s.extend_from_slice(&[0; 11]);
    push_zeros(&mut s, REGISTERS);
    s
}

/// Redis's `hllSparseToDense` (a no-op on a dense HLL). The header, cached cardinality
/// included, is kept.
pub fn sparse_to_dense(s: &mut Vec<u8>) -> Result<(), InvalidHll> {
    if s[4] == DENSE {
        return Ok(());
    }
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HDR].copy_from_slice(&s[..HDR]);
    dense[4] = DENSE;
    let regs = &mut dense[HDR..];
    sparse_runs(&s[HDR..], |first, len, value| {
        if value != 0 {
            for i in first..first + len {
                dense_put(regs, i, value);
            }
        }
    })?;
    *s = dense;
    Ok(())
}

pub fn invalidate_cache(s: &mut [u8]) {
    s[15] |= 0x80;
}

/// Redis's `hllSparseSet`: raises register `index` to `count` in place, splitting the
/// opcode that covers it and merging equal neighbours afterwards, exactly as Redis does
/// (so the bytes match); turns dense when needed. Ok(changed), Err if corrupt.
pub fn sparse_set(s: &mut Vec<u8>, index: usize, count: u8, max_bytes: usize) -> Result<bool, InvalidHll> {
    if count > VAL_MAX_VALUE {
        return promote(s, index, count);
    }
    let mut end = s.len();
    let mut p = HDR;
    let mut first = 0usize;
    let mut prev: Option<usize> = None;
    let mut span = 0usize;
    while p < end {
        let op = s[p];
        let mut oplen = 1;
        span = if is_zero(op) {
            zero_len(op)
        } else if is_val(op) {
            val_len(op)
        } else {
            oplen = 2;
            xzero_len(op, s.get(p + 1).copied().unwrap_or(0))
        };
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return Err(InvalidHll);
    }
    let op = s[p];
    let runlen = if is_zero(op) {
        zero_len(op)
    } else if is_xzero(op) {
        xzero_len(op, s.get(p + 1).copied().unwrap_or(0))
    } else {
        val_len(op)
    };
    let updated_in_place = if is_val(op) {
        if val_value(op) >= count {
            return Ok(false);
        }
        runlen == 1
    } else {
        is_zero(op) && runlen == 1
    };
    if updated_in_place {
        s[p] = val_op(count, 1);
    } else {
        // Split the opcode: at worst XZERO becomes XZERO-VAL-XZERO (5 bytes).
        let mut seq: Vec<u8> = Vec::with_capacity(5);
        let last = first + span - 1;
        if is_val(op) {
            let cur = val_value(op);
            if index != first {
                seq.push(val_op(cur, index - first));
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push(val_op(cur, last - index));
            }
        } else {
            if index != first {
                push_zeros(&mut seq, index - first);
            }
            seq.push(val_op(count, 1));
            if index != last {
                push_zeros(&mut seq, last - index);
            }
        }
        let oldlen = if is_xzero(op) { 2 } else { 1 };
        if seq.len() > oldlen && s.len() + seq.len() - oldlen > max_bytes {
            return promote(s, index, count);
        }
        // A corrupt string can end in half an XZERO (Redis reads its terminator as the
        // second byte). Redis then copies the new sequence over the end but grows the
        // length by (new - 2): the last byte falls off. Same here.
        let new_len = s.len() + seq.len() - oldlen;
        let avail = (s.len() - p).min(oldlen);
        s.splice(p..p + avail, seq);
        s.truncate(new_len);
        end = new_len;
    }
    // Merge adjacent VAL opcodes of equal value, scanning at most 5 opcodes from `prev`.
    let mut p = prev.unwrap_or(HDR);
    let mut scan = 5;
    while p < end {
        if scan == 0 {
            break;
        }
        scan -= 1;
        if is_xzero(s[p]) {
            p += 2;
            continue;
        } else if is_zero(s[p]) {
            p += 1;
            continue;
        }
        if p + 1 < end && is_val(s[p + 1]) {
            let (v1, v2) = (val_value(s[p]), val_value(s[p + 1]));
            if v1 == v2 {
                let len = val_len(s[p]) + val_len(s[p + 1]);
                if len <= VAL_MAX_LEN {
                    s[p + 1] = val_op(v1, len);
                    s.remove(p);
                    end -= 1;
                    // Try to merge the result with what follows it.
                    continue;
                }
            }
        }
        p += 1;
    }
    invalidate_cache(s);
    Ok(true)
}

fn promote(s: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, InvalidHll> {
    sparse_to_dense(s)?;
    // Promotion only happens for a register that grows, so this always changes it.
    dense_set(&mut s[HDR..], index, count);
    Ok(true)
}

/// Adds one element. Ok(changed), Err if the representation is corrupt.
pub fn add(s: &mut Vec<u8>, ele: &[u8], max_bytes: usize) -> Result<bool, InvalidHll> {
    let (index, count) = pat_len(ele);
    match s[4] {
        DENSE => Ok(dense_set(&mut s[HDR..], index, count)),
        SPARSE => sparse_set(s, index, count, max_bytes),
        _ => Err(InvalidHll),
    }
}

/// Register histogram of a valid HLL; Err if a sparse body is corrupt.
pub fn histogram(s: &[u8]) -> Result<[u32; 64], InvalidHll> {
    let mut h = [0u32; 64];
    if s[4] == DENSE {
        let regs = &s[HDR..];
        for i in 0..REGISTERS {
            h[dense_get(regs, i) as usize] += 1;
        }
    } else {
        sparse_runs(&s[HDR..], |_, len, value| h[value as usize] += len as u32)?;
    }
    Ok(h)
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let mut y = 1.0;
    let mut z = x;
    loop {
        x *= x;
        let prev = z;
        z += x * y;
        y += y;
        if prev == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let mut y = 1.0;
    let mut z = 1.0 - x;
    loop {
        x = crate::util::sqrt(x);
        let prev = z;
        y *= 0.5;
        // Redis writes pow(1 - x, 2): glibc's pow is within 0.52 ulp, so it agrees with
        // the correctly rounded square except in vanishingly rare cases.
        let d = 1.0 - x;
        z -= d * d * y;
        if prev == z {
            return z / 3.0;
        }
    }
}

/// Ertl's estimator from "New cardinality estimation algorithms for HyperLogLog
/// sketches", evaluated in the same order as Redis.
pub fn estimate(h: &[u32; 64]) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - h[Q as usize + 1] as f64) / m);
    for j in (1..=Q as usize).rev() {
        z += h[j] as f64;
        z *= 0.5;
    }
    z += m * sigma(h[0] as f64 / m);
    let e = ALPHA_INF * m * m / z;
    // Redis's `E = llroundl(e); return (uint64_t) E;` (E a double) as x86-64 runs it.
    // llroundl rounds halves away from zero, and answers LLONG_MIN for what a long long
    // cannot hold (registers past what PFADD sets, all at 63, make z 0 and e infinite).
    // The result is a whole double (or LLONG_MIN), so the trip through the double E is
    // exact, and (uint64_t) of it is the signed conversion: LLONG_MIN becomes 2^63, which
    // PFCOUNT replies as a long long, -9223372036854775808 (CVE-2025-32023).
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    let r = libm::round(e);
    let ll = if (-TWO_63..TWO_63).contains(&r) { r as i64 } else { i64::MIN };
    ll as u64
}

/// Max-merges a valid HLL into `max` (one byte per register). Err if corrupt.
pub fn merge(max: &mut [u8], s: &[u8]) -> Result<(), InvalidHll> {
    if s[4] == DENSE {
        let regs = &s[HDR..];
        for (i, m) in max.iter_mut().enumerate() {
            *m = (*m).max(dense_get(regs, i));
        }
        Ok(())
    } else {
        sparse_runs(&s[HDR..], |first, len, value| {
            for m in &mut max[first..first + len] {
                *m = (*m).max(value);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_past_a_long_long() {
        // Every register at `v`: redis-server 7.0.15's PFCOUNT of such a dense HLL.
        for (v, want) in
            [(63, i64::MIN), (51, i64::MIN), (50, i64::MIN), (45, 415828534307635072), (40, 12994641697113596), (30, 12690079782337), (20, 12392656037)]
        {
            let mut h = [0u32; 64];
            h[v] = REGISTERS as u32;
            assert_eq!(estimate(&h) as i64, want, "registers at {v}");
        }
    }

    #[test]
    fn registers_round_trip() {
        let mut regs = vec![0u8; DENSE_SIZE - HDR];
        for i in 0..REGISTERS {
            dense_put(&mut regs, i, (i % 64) as u8);
        }
        for i in 0..REGISTERS {
            assert_eq!(dense_get(&regs, i), (i % 64) as u8);
        }
    }

    #[test]
    fn sparse_and_dense_agree() {
        let mut sparse = create();
        let mut dense = create();
        sparse_to_dense(&mut dense).unwrap();
        for i in 0..2000u32 {
            let e = alloc::format!("e{i}");
            add(&mut sparse, e.as_bytes(), usize::MAX).unwrap();
            add(&mut dense, e.as_bytes(), usize::MAX).unwrap();
        }
        assert_eq!(sparse[4], SPARSE);
        assert_eq!(histogram(&sparse).unwrap(), histogram(&dense).unwrap());
        let n = estimate(&histogram(&sparse).unwrap());
        assert!((1900..2100).contains(&n), "{n}");
        let mut a = sparse.clone();
        sparse_to_dense(&mut a).unwrap();
        assert_eq!(a[HDR..], dense[HDR..]);
    }
}
