//! The command handlers, one file per family as Redis's `t_*.c`, `db.c`, `server.c`… and
//! the command table that names them (`table`). A handler gets a `Ctx` (the shard state,
//! its client, its reply and effects) and the arguments; it drives the value types.

pub mod acl;
pub mod bitmap;
pub mod cluster;
pub mod connection;
pub mod db;
pub mod debug;
pub mod dump;
pub mod functions;
pub mod geo;
pub mod hash;
pub mod hash_ttl;
pub mod hll;
pub mod key_specs;
pub mod keys;
pub mod latency;
pub mod memory;
pub mod lcs;
pub mod list;
pub mod migrate;
pub mod migrate_to;
pub mod multi;
pub mod pubsub;
pub mod scripting;
pub mod server;
pub mod set;
pub mod slowlog;
pub mod sort;
pub mod stream;
pub mod string;
pub mod table;
pub mod tracking;
pub mod zset;

/// Redis's reply to a count outside [-LONG_MAX, LONG_MAX] (SRANDMEMBER, HRANDFIELD,
/// ZRANDMEMBER); Memoria's too to a negative count whose reply could not fit in the engine
/// (`repeated_picks_fit`, DELIBERATE_DIFFERENCES).
pub const COUNT_RANGE_ERR: &str = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";

/// The most picks a negative count (picks with repetitions) may ask for.
pub const MAX_REPEATED_PICKS: u64 = 1 << 27;

/// The largest reply picks with repetitions may build. The reply is held in the engine's
/// memory (wasm32: 4 GiB for the data, the reply and its copy into the batch's output), and
/// its size does not depend on the data's: a set of one 1000-byte member and a count of
/// -10^8 would ask for 100 GB.
pub const MAX_REPEATED_PICKS_REPLY: u64 = 512 << 20;

/// The smallest reply of one pick: an empty bulk string (`$0\r\n\r\n`).
const MIN_PICK_REPLY: u64 = 6;

/// Bytes of the RESP bulk string that carries `len` bytes (`$<len>\r\n…\r\n`).
pub fn bulk_reply_len(len: usize) -> u64 {
    let mut digits = 1;
    let mut n = len as u64;
    while n >= 10 {
        n /= 10;
        digits += 1;
    }
    1 + digits + 2 + len as u64 + 2
}

/// At least the bytes of a double's reply (`$24\r\n…\r\n` or `,…\r\n`; the longest text is
/// 24 bytes, as `-1.7976931348623157e+308`).
pub const DOUBLE_REPLY_MAX: u64 = 31;

/// `count` distinct picks when they are a few of many (Redis's CASE 4 of SRANDMEMBER and
/// HRANDFIELD, count * 3 <= size): `pick` draws at random until `count` with distinct
/// `key`s came up, so the work follows the count, not the value's size. Stops early if
/// `pick` finds nothing.
pub fn distinct_picks<T, K: Ord>(count: usize, mut pick: impl FnMut() -> Option<T>, key: impl Fn(&T) -> K) -> alloc::vec::Vec<T> {
    let mut seen = alloc::collections::BTreeSet::new();
    let mut picks = alloc::vec::Vec::with_capacity(count);
    while picks.len() < count {
        let Some(p) = pick() else { break };
        if seen.insert(key(&p)) {
            picks.push(p);
        }
    }
    picks
}

/// The size of a reply of `picks` picks with repetitions, None if it does not fit
/// (`MAX_REPEATED_PICKS`, `MAX_REPEATED_PICKS_REPLY`): `next` makes the next pick (from a
/// copy of the generator, so that the reply then makes the same ones) and tells (at least)
/// its reply's size. The caller reserves that much, so the reply never grows by doubling.
pub fn repeated_picks_size(picks: u64, mut next: impl FnMut() -> u64) -> Option<usize> {
    if picks > MAX_REPEATED_PICKS || picks.saturating_mul(MIN_PICK_REPLY) > MAX_REPEATED_PICKS_REPLY {
        return None;
    }
    // The array header: `*` and at most 20 digits.
    let mut total: u64 = 23;
    for _ in 0..picks {
        total = total.saturating_add(next());
        if total > MAX_REPEATED_PICKS_REPLY {
            return None;
        }
    }
    // At most MAX_REPEATED_PICKS_REPLY: a usize on every target.
    Some(total as usize)
}
