//! LCS (Redis 7.0's t_string.c): the longest common subsequence of two string values, its
//! length (LEN), or the matched ranges (IDX, MINMATCHLEN, WITHMATCHLEN).
//!
//! The cost is Redis's: a table of (len_a + 1) × (len_b + 1) u32 cells filled in
//! O(len_a × len_b), then one walk back of at most len_a + len_b steps. The table is refused
//! with Redis's error when its bytes pass `proto-max-bulk-len` (as redis-server 7.0.15 does),
//! and also when the engine could not hold it (the wasm32 engine's memory ends at 4 GiB, and
//! `proto-max-bulk-len` may be raised past that): the allocation is fallible, so a table too
//! large for the engine is an error reply, never an abort. LEN keeps two rows, not the table,
//! but is refused at the same sizes (as in Redis, and so its time is bounded the same way).

use alloc::vec::Vec;

use crate::server::ctx::Ctx;
use crate::util::{eq_ic, parse_i64};

const NOT_STRINGS: &[u8] = b"ERR The specified keys must contain string values";
const TOO_LARGE: &[u8] = b"ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";
const TOO_LONG: &[u8] = b"ERR String too long for LCS";
const BOTH: &[u8] = b"ERR If you want both the length and indexes, please just use IDX.";

/// One matched run, as IDX reports it: inclusive ranges in each string.
struct Range {
    a: (usize, usize),
    b: (usize, usize),
}

impl Range {
    fn len(&self) -> usize {
        self.a.1 - self.a.0 + 1
    }
}

pub fn lcs(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let db = ctx.db();
    // Both keys are looked up (hits, misses, expiry) before either type is checked, as
    // Redis does.
    let a_ok = ctx.st.read(db, argv[1], ctx.fx).is_none_or(|e| e.val.string_len().is_some());
    let b_ok = ctx.st.read(db, argv[2], ctx.fx).is_none_or(|e| e.val.string_len().is_some());
    if !a_ok || !b_ok {
        return ctx.reply.error(NOT_STRINGS);
    }

    let (mut idx, mut len, mut with_len) = (false, false, false);
    let mut min_len: i64 = 0;
    let mut j = 3;
    while j < argv.len() {
        let opt = argv[j];
        if eq_ic(opt, b"IDX") {
            idx = true;
        } else if eq_ic(opt, b"LEN") {
            len = true;
        } else if eq_ic(opt, b"WITHMATCHLEN") {
            with_len = true;
        } else if eq_ic(opt, b"MINMATCHLEN") && j + 1 < argv.len() {
            let Some(n) = parse_i64(argv[j + 1]) else { return ctx.not_integer() };
            min_len = n.max(0);
            j += 1;
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    if idx && len {
        return ctx.reply.error(BOTH);
    }

    // The values, borrowed where they are stored (a missing key is the empty string).
    let keys = &ctx.st.dbs[db].keys;
    let a = keys.get(argv[1]).and_then(|e| e.val.string_bytes()).unwrap_or_default();
    let b = keys.get(argv[2]).and_then(|e| e.val.string_bytes()).unwrap_or_default();
    let (a, b) = (&a[..], &b[..]);

    // Redis's guard, so that every length fits a u32 cell (out of reach in the engine, whose
    // values stay below 3 GiB; the text is Redis's, not checked against a server).
    if a.len() as u64 >= u32::MAX as u64 - 1 || b.len() as u64 >= u32::MAX as u64 - 1 {
        return ctx.reply.error(TOO_LONG);
    }
    // The size Redis checks is the whole table's, whatever the options.
    let width = b.len() as u64 + 1;
    let cells = (a.len() as u64 + 1).checked_mul(width);
    let bytes = cells.and_then(|c| c.checked_mul(4));
    let Some(bytes) = bytes.filter(|&n| n <= ctx.st.config.proto_max_bulk_len) else {
        return ctx.reply.error(TOO_LARGE);
    };
    // What the engine itself can hold (proto-max-bulk-len may be raised past it). LEN keeps
    // only two rows, but is held to the same table size, which also bounds the time.
    if !crate::server::evict::within_hard_limit(ctx, bytes) {
        return ctx.reply.error(TOO_LARGE);
    }

    if len {
        let Some(n) = lcs_len(a, b) else { return ctx.reply.error(TOO_LARGE) };
        return ctx.reply.int(n as i64);
    }
    let Some(table) = lcs_table(a, b) else { return ctx.reply.error(TOO_LARGE) };
    let total = table[table.len() - 1] as usize;

    if !idx {
        let mut out = Vec::with_capacity(total);
        walk_back(&table, a, b, |i, _| out.push(a[i]));
        out.reverse();
        return ctx.reply.bulk(&out);
    }

    // IDX: the runs of consecutive matches along the same walk, from the ends backwards.
    let mut runs: Vec<Range> = Vec::new();
    let mut open: Option<Range> = None;
    walk_back(&table, a, b, |i, j| {
        if let Some(r) = &mut open {
            if r.a.0 == i + 1 && r.b.0 == j + 1 {
                r.a.0 = i;
                r.b.0 = j;
                return;
            }
            runs.extend(open.take());
        }
        open = Some(Range { a: (i, i), b: (j, j) });
    });
    runs.extend(open);
    let min_len = usize::try_from(min_len).unwrap_or(usize::MAX);
    let shown = runs.iter().filter(|r| r.len() >= min_len).count();
    ctx.reply.map(2);
    ctx.reply.bulk(b"matches");
    ctx.reply.array(shown);
    for r in runs.iter().filter(|r| r.len() >= min_len) {
        ctx.reply.array(if with_len { 3 } else { 2 });
        ctx.reply.array(2);
        ctx.reply.int(r.a.0 as i64);
        ctx.reply.int(r.a.1 as i64);
        ctx.reply.array(2);
        ctx.reply.int(r.b.0 as i64);
        ctx.reply.int(r.b.1 as i64);
        if with_len {
            ctx.reply.int(r.len() as i64);
        }
    }
    ctx.reply.bulk(b"len");
    ctx.reply.int(total as i64);
}

/// Fills `cur` (the row of `a`'s byte `ca`) from `prev`, the row before it: cell `j` is the
/// LCS length of the prefixes up to `ca` and `b[..j]`. `cur[0]` stays 0.
#[inline]
fn fill_row(prev: &[u32], cur: &mut [u32], ca: u8, b: &[u8]) {
    let mut left = 0u32;
    // `up` is (prev[j], prev[j + 1]): the diagonal and the cell above.
    for ((cell, up), &cb) in cur[1..].iter_mut().zip(prev.windows(2)).zip(b) {
        let v = if ca == cb { up[0] + 1 } else { left.max(up[1]) };
        *cell = v;
        left = v;
    }
}

/// Allocates `n` zeroed cells, or None if the allocator cannot give them.
fn zeroed(n: usize) -> Option<Vec<u32>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).ok()?;
    v.resize(n, 0);
    Some(v)
}

/// The LCS length with two rows of the table.
fn lcs_len(a: &[u8], b: &[u8]) -> Option<u32> {
    let w = b.len() + 1;
    let mut rows = zeroed(2 * w)?;
    let (mut prev, mut cur) = rows.split_at_mut(w);
    for &ca in a {
        fill_row(prev, cur, ca, b);
        core::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[w - 1])
}

/// The whole table, row-major: row `i` (the first `i` bytes of `a`) starts at `i * (len_b + 1)`.
fn lcs_table(a: &[u8], b: &[u8]) -> Option<Vec<u32>> {
    let w = b.len() + 1;
    let mut t = zeroed((a.len() + 1).checked_mul(w)?)?;
    for (i, &ca) in a.iter().enumerate() {
        let (prev, cur) = t[i * w..(i + 2) * w].split_at_mut(w);
        fill_row(prev, cur, ca, b);
    }
    Some(t)
}

/// Walks the table back from its last cell as Redis does, calling `hit(i, j)` for each
/// matched pair (`a[i] == b[j]`), last first. On a mismatch it steps up (drops a byte of
/// `a`) only when that keeps a strictly longer LCS than stepping left; ties go left.
fn walk_back(t: &[u32], a: &[u8], b: &[u8], mut hit: impl FnMut(usize, usize)) {
    let w = b.len() + 1;
    let (mut i, mut j) = (a.len(), b.len());
    while i > 0 && j > 0 {
        if a[i - 1] == b[j - 1] {
            hit(i - 1, j - 1);
            i -= 1;
            j -= 1;
        } else if t[(i - 1) * w + j] > t[i * w + j - 1] {
            i -= 1;
        } else {
            j -= 1;
        }
    }
}
