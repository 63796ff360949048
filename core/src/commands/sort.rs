//! SORT and SORT_RO (Redis's sort.c): sort a list, set or sorted set numerically or
//! lexicographically, by its own elements or by external keys (`BY pattern`), fetch
//! external keys per element (`GET pattern`), page (`LIMIT`), and store the result as a
//! list (`STORE`).
//!
//! SORT … STORE replicates as itself: with the same data (external keys included) it
//! produces the same list, because every order here is total or stable, a set sorted
//! "by nothing" is sorted alphabetically when stored, as Redis does for replication, and
//! a stored set's ties are broken by element (its own order differs between replicas).

use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::keyspace::object::Value;
use crate::server::ctx::Ctx;
use crate::server::notify;
use crate::types::list::{End, ListValue};
use crate::util::eq_ic;

struct Item {
    ele: Vec<u8>,
    score: f64,
    /// ALPHA + BY: the external value (None sorts first).
    by: Option<Vec<u8>>,
}

/// SORT key [BY pattern] [LIMIT offset count] [GET pattern …] [ASC|DESC] [ALPHA] [STORE dst]
pub fn sort(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    sort_generic(ctx, argv, false)
}

/// SORT_RO: SORT without STORE.
pub fn sort_ro(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    sort_generic(ctx, argv, true)
}

fn sort_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], readonly: bool) {
    let mut desc = false;
    let mut alpha = false;
    let (mut limit_start, mut limit_count) = (0i64, -1i64);
    let mut dontsort = false;
    let mut sortby: Option<&[u8]> = None;
    let mut store: Option<&[u8]> = None;
    let mut gets: Vec<&[u8]> = Vec::new();
    let mut j = 2;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let a = argv[j];
        if eq_ic(a, b"asc") {
            desc = false;
        } else if eq_ic(a, b"desc") {
            desc = true;
        } else if eq_ic(a, b"alpha") {
            alpha = true;
        } else if eq_ic(a, b"limit") && left >= 2 {
            let Some(s) = ctx.int_arg(argv[j + 1]) else { return };
            let Some(c) = ctx.int_arg(argv[j + 2]) else { return };
            (limit_start, limit_count) = (s, c);
            j += 2;
        } else if !readonly && eq_ic(a, b"store") && left >= 1 {
            store = Some(argv[j + 1]);
            j += 1;
        } else if eq_ic(a, b"by") && left >= 1 {
            let p = argv[j + 1];
            // A pattern without `*` names no per-element key: nothing to sort by.
            if !p.contains(&b'*') {
                dontsort = true;
            } else if crate::server::cluster::enabled(ctx) {
                return ctx.err("ERR BY option of SORT denied in Cluster mode.");
            } else if !ctx.st.acl.reads_all_keys(ctx.client) {
                // The pattern reads keys the ACL never checked (CVE-2023-41053).
                return ctx.err("ERR BY option of SORT denied due to insufficient ACL permissions.");
            }
            sortby = Some(p);
            j += 1;
        } else if eq_ic(a, b"get") && left >= 1 {
            if crate::server::cluster::enabled(ctx) {
                return ctx.err("ERR GET option of SORT denied in Cluster mode.");
            }
            // Even `GET #` (CVE-2023-41053).
            if !ctx.st.acl.reads_all_keys(ctx.client) {
                return ctx.err("ERR GET option of SORT denied due to insufficient ACL permissions.");
            }
            gets.push(argv[j + 1]);
            j += 1;
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }

    let db = ctx.db();
    let key = argv[1];
    let kind = match ctx.st.read(db, key, ctx.fx).map(|e| &e.val) {
        None => None,
        Some(Value::List(_)) => Some(Kind::List),
        Some(Value::Set(_)) => Some(Kind::Set),
        Some(Value::Zset(_)) => Some(Kind::Zset),
        Some(_) => return ctx.wrongtype(),
    };
    // A set has no order of its own: stored (and so replicated) it is sorted anyway.
    if dontsort && kind == Some(Kind::Set) && store.is_some() {
        dontsort = false;
        alpha = true;
        sortby = None;
    }
    // Redis converts a listpack sorted set to a skiplist before sorting it.
    if kind == Some(Kind::Zset) {
        let seed = ctx.st.seed;
        if let Some(Value::Zset(z)) = ctx.st.dbs[db].keys.get_mut(key).map(|e| &mut e.val) {
            z.to_skiplist(seed);
        }
    }

    let mut items = load(ctx, key, kind, dontsort, desc);
    let len = items.len() as i64;
    let start = limit_start.clamp(0, len);
    let count = limit_count.clamp(-1, len);
    let mut end = if count < 0 { len - 1 } else { start + count - 1 };
    let start = if start >= len {
        end = len - 2;
        len - 1
    } else {
        start
    };
    if end >= len {
        end = len - 1;
    }

    if !dontsort {
        let mut bad_score = false;
        for it in items.iter_mut() {
            let byval = match sortby {
                Some(p) => match lookup_by_pattern(ctx, p, &it.ele) {
                    Some(v) => v,
                    None => continue,
                },
                None => it.ele.clone(),
            };
            if alpha {
                if sortby.is_some() {
                    it.by = Some(byval);
                }
            } else {
                match strtod(&byval) {
                    Some(s) => it.score = s,
                    None => bad_score = true,
                }
            }
        }
        if bad_score {
            return ctx.err("ERR One or more scores can't be converted into double");
        }
        let by_pattern = sortby.is_some();
        // A set's elements come in its hash table's order, which differs between a
        // primary and its replicas: when the result is stored (and so replicated), ties
        // (equal or missing BY weights) are broken by the elements themselves.
        let total = kind == Some(Kind::Set) && store.is_some();
        items.sort_by(|a, b| {
            let o = compare(a, b, alpha, by_pattern);
            let o = if desc { o.reverse() } else { o };
            if total { o.then_with(|| a.ele.cmp(&b.ele)) } else { o }
        });
    }

    let range = if end >= start { &items[start as usize..=end as usize] } else { &items[..0] };
    let per = gets.len().max(1);
    let outputlen = range.len() * per;
    match store {
        None => {
            ctx.reply.array(outputlen);
            for it in range {
                if gets.is_empty() {
                    ctx.reply.bulk(&it.ele);
                }
                for g in &gets {
                    match lookup_by_pattern(ctx, g, &it.ele) {
                        Some(v) => ctx.reply.bulk(&v),
                        None => ctx.reply.null(),
                    }
                }
            }
        }
        Some(dst) => {
            let fill = ctx.st.config.list_max_listpack_size;
            let mut list = ListValue::new();
            for it in range {
                if gets.is_empty() {
                    list.push(End::Tail, &it.ele, fill);
                }
                for g in &gets {
                    let v = lookup_by_pattern(ctx, g, &it.ele).unwrap_or_default();
                    list.push(End::Tail, &v, fill);
                }
            }
            if outputlen > 0 {
                ctx.st.set_value(db, dst, Value::List(alloc::boxed::Box::new(list)), false);
                ctx.notify(notify::LIST, "sortstore", dst);
                ctx.dirty += outputlen as u64;
            } else {
                ctx.delete_destination(dst);
            }
            ctx.reply.int(outputlen as i64);
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    List,
    Set,
    Zset,
}

/// The elements to sort. Unsorted lists and sorted sets keep their own order (reversed
/// for DESC); everything else comes in storage order and is sorted afterwards.
fn load(ctx: &mut Ctx<'_>, key: &[u8], kind: Option<Kind>, dontsort: bool, desc: bool) -> Vec<Item> {
    let db = ctx.db();
    let mut out = Vec::new();
    let item = |e: &[u8]| Item { ele: e.to_vec(), score: 0.0, by: None };
    let keep_order_reversed = dontsort && desc;
    match (kind, ctx.st.dbs[db].keys.get(key).map(|e| &e.val)) {
        (Some(Kind::List), Some(Value::List(l))) => {
            l.for_each(keep_order_reversed, |e| {
                out.push(item(e));
                true
            });
        }
        (Some(Kind::Set), Some(Value::Set(s))) => s.for_each(|e| out.push(item(e))),
        (Some(Kind::Zset), Some(Value::Zset(z))) => {
            z.for_each(|m, _| out.push(item(m)));
            if keep_order_reversed {
                out.reverse();
            }
        }
        _ => {}
    }
    out
}

/// Redis's sortCompare (before DESC): numeric by score with ties broken by the element's
/// bytes; ALPHA by the element, or by the external value with missing values first.
fn compare(a: &Item, b: &Item, alpha: bool, by_pattern: bool) -> Ordering {
    if !alpha {
        return match a.score.partial_cmp(&b.score) {
            Some(Ordering::Equal) | None => a.ele.cmp(&b.ele),
            Some(o) => o,
        };
    }
    if by_pattern {
        return match (&a.by, &b.by) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => x.cmp(y),
        };
    }
    a.ele.cmp(&b.ele)
}

/// Redis's lookupKeyByPattern: `#` is the element itself; otherwise the first `*` of the
/// pattern is replaced by the element and the key read as a string, or, with `->field`
/// after the `*`, as a hash field. None when there is no `*` or nothing of that type.
fn lookup_by_pattern(ctx: &mut Ctx<'_>, pattern: &[u8], subst: &[u8]) -> Option<Vec<u8>> {
    if pattern == b"#" {
        return Some(subst.to_vec());
    }
    let star = pattern.iter().position(|&c| c == b'*')?;
    // The first `->` after the `*`, naming a hash field when something follows it.
    let arrow = pattern[star + 1..].windows(2).position(|w| w == b"->").map(|a| a + star + 1).filter(|&a| a + 2 < pattern.len());
    let (key_end, field) = match arrow {
        Some(a) => (a, Some(&pattern[a + 2..])),
        None => (pattern.len(), None),
    };
    let mut name = Vec::with_capacity(key_end + subst.len());
    name.extend_from_slice(&pattern[..star]);
    name.extend_from_slice(subst);
    name.extend_from_slice(&pattern[star + 1..key_end]);
    let (db, now, applying) = (ctx.db(), ctx.st.now_ms, ctx.st.applying);
    let val = &ctx.st.read(db, &name, ctx.fx)?.val;
    match field {
        // A replica still holds fields expired until its primary's HDEL; applying a
        // logged SORT … STORE, the field was live when the primary ran it.
        Some(f) => match val {
            Value::Hash(h) if applying || !h.is_expired(f, now) => h.get(f).map(|v| v.to_vec()),
            _ => None,
        },
        None => val.string_bytes().map(|b| b.into_owned()),
    }
}

/// strtod as SORT uses it: leading whitespace skipped, the rest consumed whole, NaN and
/// out-of-range values (ERANGE) refused; an empty string is 0.
fn strtod(s: &[u8]) -> Option<f64> {
    let t = match s.iter().position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')) {
        Some(i) => &s[i..],
        None => return Some(0.0),
    };
    let v = crate::util::parse_f64(t)?;
    let digits_nonzero = t.iter().take_while(|&&c| c != b'e' && c != b'E' && c != b'p' && c != b'P').any(|c| (b'1'..=b'9').contains(c));
    let named_inf = t.iter().any(|c| c.eq_ignore_ascii_case(&b'i'));
    if (v.is_infinite() && !named_inf) || (v == 0.0 && digits_nonzero && !t.starts_with(b"0x") && !t.starts_with(b"0X")) {
        return None;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::strtod;

    #[test]
    fn strtod_like_sort() {
        assert_eq!(strtod(b""), Some(0.0));
        assert_eq!(strtod(b" 2"), Some(2.0));
        assert_eq!(strtod(b"0x10"), Some(16.0));
        assert_eq!(strtod(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(strtod(b"1 "), None);
        assert_eq!(strtod(b"1e400"), None);
        assert_eq!(strtod(b"1e-400"), None);
        assert_eq!(strtod(b"nan"), None);
        assert_eq!(strtod(b"abc"), None);
    }
}
