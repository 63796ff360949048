//! Bit operations on string values (Redis 7.0's bitops.c): SETBIT, GETBIT, BITCOUNT,
//! BITPOS (BYTE and BIT ranges), BITOP, BITFIELD and BITFIELD_RO with every overflow mode.
//! Bit 0 is the most significant bit of the first byte. Writes leave the value as a raw
//! string (Redis's dbUnshareStringValue) and replicate as themselves: they are
//! deterministic.

use alloc::vec::Vec;

use crate::commands::string::WRONGTYPE;
use crate::keyspace::object::Value;
use crate::server::ctx::Ctx;
use crate::server::notify;
use crate::util::{eq_ic, parse_i64};

const OFFSET_ERR: &str = "ERR bit offset is not an integer or out of range";

/// Redis's `getBitOffsetFromArgument`: with `hash`, "#n" means n × `bits`.
fn bit_offset(ctx: &mut Ctx<'_>, arg: &[u8], hash: bool, bits: u32) -> Option<u64> {
    let usehash = hash && bits > 0 && arg.first() == Some(&b'#');
    let digits = if usehash { &arg[1..] } else { arg };
    let Some(mut v) = parse_i64(digits) else {
        ctx.err(OFFSET_ERR);
        return None;
    };
    if usehash {
        // C's signed multiply wraps in practice; a wrapped value is refused below.
        v = v.wrapping_mul(bits as i64);
    }
    // A primary's effect is obeyed whatever this node's proto-max-bulk-len says.
    let limit = ctx.st.config.proto_max_bulk_len;
    if v < 0 || (!ctx.st.applying && (v >> 3) as u64 >= limit) {
        ctx.err(OFFSET_ERR);
        return None;
    }
    Some(v as u64)
}

/// Redis's `lookupStringForBitCommand`: the string at `key` as a raw byte vector padded
/// with zeros up to the byte holding `maxbit`, created if missing. Some(dirty: created or
/// grown), or None after an error reply.
fn string_for_bits(ctx: &mut Ctx<'_>, key: &[u8], maxbit: u64) -> Option<bool> {
    let db = ctx.db();
    // In u64 until the memory check: the wasm32 engine's usize would cut it.
    let need = (maxbit >> 3) + 1;
    let cur = match ctx.st.write(db, key, ctx.fx) {
        None => None,
        Some(e) => match e.val.string_len() {
            Some(l) => Some(l),
            None => {
                ctx.reply.error(WRONGTYPE);
                return None;
            }
        },
    };
    let grow = need.saturating_sub(cur.unwrap_or(0) as u64);
    if grow > 0 && !crate::server::evict::can_allocate(ctx, grow) {
        ctx.err("OOM command not allowed when used memory > 'maxmemory'.");
        return None;
    }
    // Held already, or allowed just above (so below the engine's 4 GiB).
    let need = need as usize;
    let Some(len) = cur else {
        let lru = ctx.lru();
        ctx.st.notify_new(db, key);
        ctx.st.dbs[db].add(key, Value::Raw(alloc::vec![0; need]), lru);
        return Some(true);
    };
    let e = ctx.st.dbs[db].keys.get_mut(key).expect("looked up above");
    if !matches!(e.val, Value::Raw(_)) {
        let bytes = e.val.string_bytes().map(|b| b.into_owned()).unwrap_or_default();
        e.val = Value::Raw(bytes);
    }
    if let Value::Raw(v) = &mut e.val
        && v.len() < need
    {
        v.resize(need, 0);
    }
    Some(len < need)
}

/// The raw bytes of the string at `key` after `string_for_bits`.
fn raw_mut<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> &'c mut Vec<u8> {
    let db = ctx.db();
    match ctx.st.dbs[db].keys.get_mut(key).map(|e| &mut e.val) {
        Some(Value::Raw(v)) => v,
        _ => unreachable!("string_for_bits left a raw string"),
    }
}

pub fn setbit(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(offset) = bit_offset(ctx, argv[2], false, 0) else { return };
    let on = match parse_i64(argv[3]) {
        Some(v @ (0 | 1)) => v as u8,
        _ => return ctx.err("ERR bit is not an integer or out of range"),
    };
    let Some(dirty) = string_for_bits(ctx, argv[1], offset) else { return };
    let v = raw_mut(ctx, argv[1]);
    let byte = (offset >> 3) as usize;
    let bit = 7 - (offset & 7) as u8;
    let old = (v[byte] >> bit) & 1;
    if dirty || old != on {
        v[byte] = (v[byte] & !(1 << bit)) | (on << bit);
        let db = ctx.db();
        ctx.st.signal_modified_key(db, argv[1]);
        ctx.dirty += 1;
        ctx.notify(notify::STRING, "setbit", argv[1]);
    }
    ctx.reply.int(old as i64);
}

pub fn getbit(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(offset) = bit_offset(ctx, argv[2], false, 0) else { return };
    let db = ctx.db();
    let Some(e) = ctx.st.read(db, argv[1], ctx.fx) else { return ctx.reply.int(0) };
    let Some(s) = e.val.string_bytes() else { return ctx.reply.error(WRONGTYPE) };
    // Past what the target's usize holds (wasm32: 4 GiB) there is no byte: a zero.
    let byte = usize::try_from(offset >> 3).ok().and_then(|i| s.get(i));
    let bit = byte.map_or(0, |b| (b >> (7 - (offset & 7))) & 1);
    ctx.reply.int(bit as i64);
}

fn popcount(b: &[u8]) -> u64 {
    let mut chunks = b.chunks_exact(8);
    let mut n: u64 = 0;
    for c in &mut chunks {
        n += u64::from_le_bytes(c.try_into().unwrap()).count_ones() as u64;
    }
    n + chunks.remainder().iter().map(|x| x.count_ones() as u64).sum::<u64>()
}

/// Redis's `redisBitpos`: the first bit equal to `bit`; for 0 the bytes are taken as
/// zero-padded on the right (so `8 × len` when there is none), for 1 it is -1 when none.
fn bitpos_in(b: &[u8], bit: bool) -> i64 {
    let skip = if bit { 0u8 } else { 0xff };
    match b.iter().position(|&x| x != skip) {
        Some(i) => {
            let x = if bit { b[i] } else { !b[i] };
            (i as i64) * 8 + x.leading_zeros() as i64
        }
        None if bit => -1,
        None => b.len() as i64 * 8,
    }
}

/// Start/end with Redis's negative-index rules, over `totlen` units; in BIT mode the
/// masks of the out-of-range bits of the edge bytes, and the range in bytes.
struct Range {
    start: i64,
    end: i64,
    first_mask: u8,
    last_mask: u8,
}

fn clamp_range(mut start: i64, mut end: i64, strlen: i64, isbit: bool) -> Range {
    let totlen = if isbit { strlen << 3 } else { strlen };
    if start < 0 {
        start += totlen;
    }
    if end < 0 {
        end += totlen;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= totlen {
        end = totlen - 1;
    }
    let (mut first_mask, mut last_mask) = (0u8, 0u8);
    if isbit && start <= end {
        first_mask = !((1u16 << (8 - (start & 7))) - 1) as u8;
        last_mask = ((1u16 << (7 - (end & 7))) - 1) as u8;
        start >>= 3;
        end >>= 3;
    }
    Range { start, end, first_mask, last_mask }
}

/// BIT or BYTE (any case); None for anything else.
fn unit_arg(a: &[u8]) -> Option<bool> {
    if eq_ic(a, b"bit") {
        Some(true)
    } else if eq_ic(a, b"byte") {
        Some(false)
    } else {
        None
    }
}

pub fn bitcount(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    // Redis looks the key up before it parses the range.
    match ctx.st.read(db, argv[1], ctx.fx) {
        None => return ctx.reply.int(0),
        Some(e) if e.val.string_len().is_none() => return ctx.reply.error(WRONGTYPE),
        Some(_) => {}
    }
    let Some(Some(s)) = ctx.st.dbs[db].keys.get(argv[1]).map(|e| e.val.string_bytes()) else { return };
    let strlen = s.len() as i64;
    let range = match argv.len() {
        2 => Range { start: 0, end: strlen - 1, first_mask: 0, last_mask: 0 },
        4 | 5 => {
            let Some(start) = parse_i64(argv[2]) else { return ctx.reply.error(b"ERR value is not an integer or out of range") };
            let Some(end) = parse_i64(argv[3]) else { return ctx.reply.error(b"ERR value is not an integer or out of range") };
            if start < 0 && end < 0 && start > end {
                return ctx.reply.int(0);
            }
            let isbit = match argv.get(4) {
                None => false,
                Some(a) => match unit_arg(a) {
                    Some(b) => b,
                    None => return ctx.reply.error(b"ERR syntax error"),
                },
            };
            clamp_range(start, end, strlen, isbit)
        }
        _ => return ctx.reply.error(b"ERR syntax error"),
    };
    if range.start > range.end {
        return ctx.reply.int(0);
    }
    let (a, b) = (range.start as usize, range.end as usize);
    let mut n = popcount(&s[a..=b]);
    n -= (s[a] & range.first_mask).count_ones() as u64;
    n -= (s[b] & range.last_mask).count_ones() as u64;
    ctx.reply.int(n as i64);
}

pub fn bitpos(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(bit) = ctx.int_arg(argv[2]) else { return };
    if bit != 0 && bit != 1 {
        return ctx.err("ERR The bit argument must be 1 or 0.");
    }
    let bit = bit == 1;
    let db = ctx.db();
    match ctx.st.read(db, argv[1], ctx.fx) {
        None => return ctx.reply.int(if bit { -1 } else { 0 }),
        Some(e) if e.val.string_len().is_none() => return ctx.reply.error(WRONGTYPE),
        Some(_) => {}
    }
    let Some(Some(s)) = ctx.st.dbs[db].keys.get(argv[1]).map(|e| e.val.string_bytes()) else { return };
    let strlen = s.len() as i64;
    let mut end_given = false;
    let range = match argv.len() {
        3 => Range { start: 0, end: strlen - 1, first_mask: 0, last_mask: 0 },
        4..=6 => {
            let Some(start) = parse_i64(argv[3]) else { return ctx.reply.error(b"ERR value is not an integer or out of range") };
            let isbit = match argv.get(5) {
                None => false,
                Some(a) => match unit_arg(a) {
                    Some(b) => b,
                    None => return ctx.reply.error(b"ERR syntax error"),
                },
            };
            let end = if argv.len() >= 5 {
                let Some(end) = parse_i64(argv[4]) else { return ctx.reply.error(b"ERR value is not an integer or out of range") };
                end_given = true;
                end
            } else if isbit {
                (strlen << 3) + 7
            } else {
                strlen - 1
            };
            clamp_range(start, end, strlen, isbit)
        }
        _ => return ctx.reply.error(b"ERR syntax error"),
    };
    if range.start > range.end {
        return ctx.reply.int(-1);
    }
    let (mut start, end) = (range.start as usize, range.end as usize);
    let mut bytes = end - start + 1;
    // The edge bytes of a BIT range are searched with their outside bits forced to the
    // value not sought, exactly as Redis does, so the "not found" positions agree too.
    let masked = |x: u8, mask: u8| if bit { x & !mask } else { x | mask };
    let pos = 'found: {
        if range.first_mask != 0 {
            let mut t = masked(s[start], range.first_mask);
            if range.last_mask != 0 && bytes == 1 {
                t = masked(t, range.last_mask);
            }
            let pos = bitpos_in(&[t], bit);
            if bytes == 1 || (pos != -1 && pos != 8) {
                break 'found pos;
            }
            start += 1;
            bytes -= 1;
        }
        let cur = bytes - (range.last_mask != 0) as usize;
        if cur > 0 {
            let pos = bitpos_in(&s[start..start + cur], bit);
            if bytes == cur || (pos != -1 && pos != (cur as i64) << 3) {
                break 'found pos;
            }
            start += cur;
            bytes -= cur;
        }
        bitpos_in(&[masked(s[end], range.last_mask)], bit)
    };
    if end_given && !bit && pos == (bytes as i64) << 3 {
        return ctx.reply.int(-1);
    }
    ctx.reply.int(if pos != -1 { pos + ((start as i64) << 3) } else { pos });
}

pub fn bitop(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    #[derive(PartialEq, Clone, Copy)]
    enum Op {
        And,
        Or,
        Xor,
        Not,
    }
    let op = match argv[1] {
        a if eq_ic(a, b"and") => Op::And,
        a if eq_ic(a, b"or") => Op::Or,
        a if eq_ic(a, b"xor") => Op::Xor,
        a if eq_ic(a, b"not") => Op::Not,
        _ => return ctx.syntax_error(),
    };
    if op == Op::Not && argv.len() != 4 {
        return ctx.err("ERR BITOP NOT must be called with a single source key.");
    }
    let db = ctx.db();
    let srcs = &argv[3..];
    for k in srcs {
        if let Some(e) = ctx.st.read(db, k, ctx.fx)
            && e.val.string_len().is_none()
        {
            return ctx.reply.error(WRONGTYPE);
        }
    }
    let values: Vec<alloc::borrow::Cow<'_, [u8]>> =
        srcs.iter().map(|k| ctx.st.dbs[db].keys.get(k).and_then(|e| e.val.string_bytes()).unwrap_or_default()).collect();
    let maxlen = values.iter().map(|v| v.len()).max().unwrap_or(0);
    if maxlen > 0 && !crate::server::evict::can_allocate(ctx, maxlen as u64) {
        return ctx.err("OOM command not allowed when used memory > 'maxmemory'.");
    }
    let mut res = alloc::vec![0u8; maxlen];
    for (j, out) in res.iter_mut().enumerate() {
        let at = |i: usize| values[i].get(j).copied().unwrap_or(0);
        let mut o = at(0);
        match op {
            Op::Not => o = !o,
            Op::And => (1..values.len()).for_each(|i| o &= at(i)),
            Op::Or => (1..values.len()).for_each(|i| o |= at(i)),
            Op::Xor => (1..values.len()).for_each(|i| o ^= at(i)),
        }
        *out = o;
    }
    drop(values);
    let target = argv[2];
    if maxlen > 0 {
        // Redis stores the result as a raw string, whatever its length.
        ctx.st.set_value(db, target, Value::Raw(res), false);
        ctx.dirty += 1;
        ctx.notify(notify::STRING, "set", target);
    } else {
        ctx.delete_destination(target);
    }
    ctx.reply.int(maxlen as i64);
}

// ---------- BITFIELD ----------

#[derive(Clone, Copy, PartialEq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, PartialEq)]
enum FieldOp {
    Get,
    Set,
    Incrby,
}

struct Field {
    op: FieldOp,
    offset: u64,
    value: i64,
    bits: u32,
    signed: bool,
    overflow: Overflow,
}

fn get_unsigned(p: &[u8], mut offset: u64, bits: u32) -> u64 {
    let mut v = 0u64;
    for _ in 0..bits {
        let byte = p[(offset >> 3) as usize];
        let bit = 7 - (offset & 7);
        v = (v << 1) | ((byte >> bit) & 1) as u64;
        offset += 1;
    }
    v
}

fn get_signed(p: &[u8], offset: u64, bits: u32) -> i64 {
    let mut v = get_unsigned(p, offset, bits) as i64;
    if bits < 64 && v & (1i64 << (bits - 1)) != 0 {
        v |= (u64::MAX << bits) as i64;
    }
    v
}

fn set_unsigned(p: &mut [u8], mut offset: u64, bits: u32, value: u64) {
    for j in 0..bits {
        let bitval = ((value >> (bits - 1 - j)) & 1) as u8;
        let byte = &mut p[(offset >> 3) as usize];
        let bit = 7 - (offset & 7) as u8;
        *byte = (*byte & !(1 << bit)) | (bitval << bit);
        offset += 1;
    }
}

/// Redis's `checkUnsignedBitfieldOverflow`: Some(value to store on overflow; None for
/// FAIL) when `value + incr` does not fit in `bits` unsigned bits.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> Option<Option<u64>> {
    let max = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let maxincr = max.wrapping_sub(value) as i64;
    let minincr = value.wrapping_neg() as i64;
    let wrap = || value.wrapping_add(incr as u64) & !(u64::MAX.checked_shl(bits).unwrap_or(0));
    if value > max || (incr > 0 && incr > maxincr) {
        Some(match ow {
            Overflow::Wrap => Some(wrap()),
            Overflow::Sat => Some(max),
            Overflow::Fail => None,
        })
    } else if incr < 0 && incr < minincr {
        Some(match ow {
            Overflow::Wrap => Some(wrap()),
            Overflow::Sat => Some(0),
            Overflow::Fail => None,
        })
    } else {
        None
    }
}

/// Redis's `checkSignedBitfieldOverflow`, same shape as `unsigned_overflow`.
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> Option<Option<i64>> {
    let max = if bits == 64 { i64::MAX } else { (1i64 << (bits - 1)) - 1 };
    let min = -max - 1;
    let maxincr = (max as u64).wrapping_sub(value as u64) as i64;
    let minincr = min.wrapping_sub(value);
    let wrap = || {
        let mut c = (value as u64).wrapping_add(incr as u64);
        if bits < 64 {
            let mask = u64::MAX << bits;
            if c & (1u64 << (bits - 1)) != 0 {
                c |= mask;
            } else {
                c &= !mask;
            }
        }
        c as i64
    };
    if value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
        Some(match ow {
            Overflow::Wrap => Some(wrap()),
            Overflow::Sat => Some(max),
            Overflow::Fail => None,
        })
    } else if value < min || (bits != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr) {
        Some(match ow {
            Overflow::Wrap => Some(wrap()),
            Overflow::Sat => Some(min),
            Overflow::Fail => None,
        })
    } else {
        None
    }
}

/// Redis's `getBitfieldTypeFromArgument`: i1..i64 or u1..u63 (lower-case sign only).
fn field_type(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<(bool, u32)> {
    // Redis reads the width with strlen(): it ends at the first NUL.
    let a = &a[..a.iter().position(|&c| c == 0).unwrap_or(a.len())];
    let signed = match a.first() {
        Some(b'i') => Some(true),
        Some(b'u') => Some(false),
        _ => None,
    };
    let ok = signed.and_then(|s| match parse_i64(&a[1..]) {
        Some(n) if n >= 1 && n <= if s { 64 } else { 63 } => Some((s, n as u32)),
        _ => None,
    });
    if ok.is_none() {
        ctx.err("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.");
    }
    ok
}

fn bitfield_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], readonly_cmd: bool) {
    let mut ops: Vec<Field> = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut readonly = true;
    let mut highest: u64 = 0;
    let mut j = 2;
    while j < argv.len() {
        let rem = argv.len() - j - 1;
        let sub = argv[j];
        let op = if eq_ic(sub, b"get") && rem >= 2 {
            FieldOp::Get
        } else if eq_ic(sub, b"set") && rem >= 3 {
            FieldOp::Set
        } else if eq_ic(sub, b"incrby") && rem >= 3 {
            FieldOp::Incrby
        } else if eq_ic(sub, b"overflow") && rem >= 1 {
            let t = argv[j + 1];
            overflow = if eq_ic(t, b"wrap") {
                Overflow::Wrap
            } else if eq_ic(t, b"sat") {
                Overflow::Sat
            } else if eq_ic(t, b"fail") {
                Overflow::Fail
            } else {
                return ctx.err("ERR Invalid OVERFLOW type specified");
            };
            j += 2;
            continue;
        } else {
            return ctx.syntax_error();
        };
        let Some((signed, bits)) = field_type(ctx, argv[j + 1]) else { return };
        let Some(offset) = bit_offset(ctx, argv[j + 2], true, bits) else { return };
        let mut value = 0;
        if op != FieldOp::Get {
            readonly = false;
            highest = highest.max(offset + bits as u64 - 1);
            let Some(v) = ctx.int_arg(argv[j + 3]) else { return };
            value = v;
        }
        ops.push(Field { op, offset, value, bits, signed, overflow });
        j += if op == FieldOp::Get { 3 } else { 4 };
    }
    let db = ctx.db();
    let key = argv[1];
    let mut dirty = false;
    if readonly {
        if let Some(e) = ctx.st.read(db, key, ctx.fx)
            && e.val.string_len().is_none()
        {
            return ctx.reply.error(WRONGTYPE);
        }
    } else {
        if readonly_cmd {
            return ctx.err("ERR BITFIELD_RO only supports the GET subcommand");
        }
        let Some(d) = string_for_bits(ctx, key, highest) else { return };
        dirty = d;
    }
    ctx.reply.array(ops.len());
    let mut changes = 0u64;
    for f in &ops {
        if f.op == FieldOp::Get {
            // Read through a zero-padded 9-byte window, as Redis does, so fields past the
            // end of the string read as zeros.
            // The byte index stays a u64: on the wasm32 engine `as usize` would read an
            // offset past 4 GiB (allowed by a large proto-max-bulk-len) near the start.
            let byte = f.offset >> 3;
            let mut buf = [0u8; 9];
            if let Some(s) = ctx.st.dbs[db].keys.get(key).and_then(|e| e.val.string_bytes()) {
                for (i, b) in buf.iter_mut().enumerate() {
                    match usize::try_from(byte + i as u64).ok().and_then(|j| s.get(j)) {
                        Some(&x) => *b = x,
                        None => break,
                    }
                }
            }
            let rel = f.offset - byte * 8;
            let v = if f.signed { get_signed(&buf, rel, f.bits) } else { get_unsigned(&buf, rel, f.bits) as i64 };
            ctx.reply.int(v);
            continue;
        }
        let p = raw_mut(ctx, key);
        let (reply, store, old, new) = if f.signed {
            let old = get_signed(p, f.offset, f.bits);
            let (base, incr) = if f.op == FieldOp::Incrby { (old, f.value) } else { (f.value, 0) };
            let new = match signed_overflow(base, incr, f.bits, f.overflow) {
                None => Some(base.wrapping_add(incr)),
                Some(limit) => limit,
            };
            let reply = if f.op == FieldOp::Incrby { new } else { new.map(|_| old) };
            (reply, new.map(|n| n as u64), old as u64, new.map(|n| n as u64))
        } else {
            let old = get_unsigned(p, f.offset, f.bits);
            let (base, incr) = if f.op == FieldOp::Incrby { (old, f.value) } else { (f.value as u64, 0) };
            let new = match unsigned_overflow(base, incr, f.bits, f.overflow) {
                None => Some(base.wrapping_add(incr as u64)),
                Some(limit) => limit,
            };
            let reply = if f.op == FieldOp::Incrby { new.map(|n| n as i64) } else { new.map(|_| old as i64) };
            (reply, new, old, new)
        };
        match (reply, store) {
            (Some(r), Some(s)) => {
                set_unsigned(p, f.offset, f.bits, s);
                ctx.reply.int(r);
                if dirty || Some(old) != new {
                    changes += 1;
                }
            }
            // FAIL on overflow: nothing written, a null reply.
            _ => ctx.reply.null(),
        }
    }
    // Redis counts only changed fields; creating or padding the key is a change too here,
    // since it must reach the replicas (Redis itself leaves it unreplicated).
    if changes > 0 || dirty {
        ctx.st.signal_modified_key(db, key);
        ctx.dirty += changes.max(1);
    }
    if changes > 0 {
        ctx.notify(notify::STRING, "setbit", key);
    }
}

pub fn bitfield(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    bitfield_generic(ctx, argv, false)
}

pub fn bitfield_ro(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    bitfield_generic(ctx, argv, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields() {
        let mut p = [0u8; 4];
        set_unsigned(&mut p, 7, 5, 23);
        assert_eq!(p[..2], [0b0000_0001, 0b0111_0000]);
        assert_eq!(get_unsigned(&p, 7, 5), 23);
        set_unsigned(&mut p, 0, 8, 0xff);
        assert_eq!(get_signed(&p, 0, 8), -1);
        assert_eq!(get_signed(&p, 0, 4), -1);
        assert_eq!(bitpos_in(&[0, 0x10], true), 11);
        assert_eq!(bitpos_in(&[0xff], false), 8);
        assert_eq!(bitpos_in(&[0], true), -1);
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Wrap), Some(Some(4)));
        assert_eq!(unsigned_overflow(250, 10, 8, Overflow::Sat), Some(Some(255)));
        assert_eq!(unsigned_overflow(5, -10, 8, Overflow::Sat), Some(Some(0)));
        assert_eq!(unsigned_overflow(5, 10, 8, Overflow::Fail), None);
        assert_eq!(signed_overflow(120, 10, 8, Overflow::Wrap), Some(Some(-126)));
        assert_eq!(signed_overflow(-120, -10, 8, Overflow::Sat), Some(Some(-128)));
        assert_eq!(signed_overflow(i64::MAX, 1, 64, Overflow::Wrap), Some(Some(i64::MIN)));
        assert_eq!(signed_overflow(i64::MAX, 1, 64, Overflow::Fail), Some(None));
    }
}
