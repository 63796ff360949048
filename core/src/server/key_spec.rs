//! Key specs and command tips as data: how COMMAND INFO describes where a command's keys
//! are and what it does with them (Redis 7.0's key-specs), what COMMAND GETKEYSANDFLAGS
//! reports per key, and the legacy first/last/step COMMAND INFO derives from them. The
//! per-command values are `commands::key_specs`; nothing here names a command.

use alloc::vec::Vec;

use crate::util::c_eq_ic;

/// Key-spec flags, in the order COMMAND INFO prints them.
pub mod key_flags {
    /// Read-only access to the key's value.
    pub const RO: u32 = 1;
    /// Read and write.
    pub const RW: u32 = 1 << 1;
    /// Overwrites the value without reading it.
    pub const OW: u32 = 1 << 2;
    /// Deletes the key.
    pub const RM: u32 = 1 << 3;
    pub const ACCESS: u32 = 1 << 4;
    pub const UPDATE: u32 = 1 << 5;
    pub const INSERT: u32 = 1 << 6;
    pub const DELETE: u32 = 1 << 7;
    /// Names something hashed like a key that is not one (shard channels).
    pub const NOT_KEY: u32 = 1 << 8;
    /// The spec may miss some keys.
    pub const INCOMPLETE: u32 = 1 << 9;
    /// The flags depend on the arguments (`CommandMeta::variable_flags`).
    pub const VARIABLE_FLAGS: u32 = 1 << 10;

    pub const NAMES: &[(u32, &str)] = &[
        (RO, "RO"),
        (RW, "RW"),
        (OW, "OW"),
        (RM, "RM"),
        (ACCESS, "access"),
        (UPDATE, "update"),
        (INSERT, "insert"),
        (DELETE, "delete"),
        (NOT_KEY, "not_key"),
        (INCOMPLETE, "incomplete"),
        (VARIABLE_FLAGS, "variable_flags"),
    ];
}

/// Where the search for a spec's keys starts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BeginSearch {
    /// At this argument (the command name is 0).
    Index(i32),
    /// After `keyword`, searched from `startfrom` (from the end when negative).
    Keyword { keyword: &'static str, startfrom: i32 },
    /// Only the command's own key finder knows (SORT's BY/GET/STORE).
    Unknown,
}

/// Which arguments, from where the search began, are keys.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FindKeys {
    /// Up to `lastkey` past the first (from the end when negative), every `step`th; with
    /// `limit` > 1 (and `lastkey` -1) only the first 1/limit of what is left.
    Range {
        lastkey: i32,
        step: i32,
        limit: i32,
    },
    /// A count at `keynumidx` past the start, then that many keys from `firstkey` past it.
    Keynum {
        keynumidx: i32,
        firstkey: i32,
        step: i32,
    },
    Unknown,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct KeySpec {
    pub notes: Option<&'static str>,
    /// `key_flags` bits.
    pub flags: u32,
    pub begin_search: BeginSearch,
    pub find_keys: FindKeys,
}

/// The key-spec flags of a key for these arguments (name included).
pub type KeyFlagsOf = fn(&[&[u8]]) -> u32;

/// What COMMAND INFO says of one command beyond the command table: its tips and key specs.
pub struct CommandMeta {
    /// As in the command table (`container|sub` for subcommands).
    pub name: &'static str,
    /// Command tips (`nondeterministic_output`, `request_policy:all_shards`…).
    pub tips: &'static [&'static str],
    pub key_specs: &'static [KeySpec],
    /// The flags of a `VARIABLE_FLAGS` spec's key for these arguments (SET with or
    /// without GET).
    pub variable_flags: Option<KeyFlagsOf>,
}

impl KeySpec {
    /// Positions of the keys this spec finds in `argv` (name included); none when the
    /// search finds nothing or the spec is `Unknown`.
    pub fn find(&self, argv: &[&[u8]], out: &mut Vec<usize>) {
        let argc = argv.len() as i64;
        let start = match self.begin_search {
            BeginSearch::Index(i) => i as i64,
            BeginSearch::Keyword { keyword, startfrom } => {
                // The keyword cannot be the last argument: a key must follow it.
                let hit = if startfrom >= 0 {
                    (startfrom as i64..argc - 1).find(|&i| c_eq_ic(argv[i as usize], keyword.as_bytes()))
                } else {
                    (1..=argc + startfrom as i64).rev().find(|&i| i < argc - 1 && c_eq_ic(argv[i as usize], keyword.as_bytes()))
                };
                match hit {
                    Some(i) => i + 1,
                    None => return,
                }
            }
            BeginSearch::Unknown => return,
        };
        if start <= 0 || start >= argc {
            return;
        }
        let (first, last, step) = match self.find_keys {
            FindKeys::Range { lastkey, step, limit } => {
                let last = if lastkey >= 0 {
                    start + lastkey as i64
                } else {
                    let end = argc + lastkey as i64;
                    // A limit keeps the first 1/limit of the arguments left (XREAD's keys
                    // before their IDs).
                    if limit > 1 { start + (end - start + 1) / limit as i64 - 1 } else { end }
                };
                (start, last, step as i64)
            }
            FindKeys::Keynum { keynumidx, firstkey, step } => {
                let at = start + keynumidx as i64;
                let Some(n) = argv.get(at as usize).and_then(|a| crate::util::parse_i64(a)) else { return };
                let first = start + firstkey as i64;
                (first, first.saturating_add(n.saturating_sub(1).saturating_mul(step as i64)), step as i64)
            }
            FindKeys::Unknown => return,
        };
        let mut i = first;
        while i <= last.min(argc - 1) && step > 0 {
            out.push(i as usize);
            i += step;
        }
    }
}

/// The first/last/step COMMAND INFO shows before the key specs: the keys of the specs that
/// start at an index and take a range, merged while they are contiguous with the same
/// step; 0 0 0 when no spec does (keys found by keyword or count: movablekeys).
pub fn legacy_range(specs: &[KeySpec]) -> (i32, i32, i32) {
    let (mut first, mut last, mut step) = (0, 0, 0);
    for s in specs {
        let (BeginSearch::Index(at), FindKeys::Range { lastkey, step: st, .. }) = (s.begin_search, s.find_keys) else { continue };
        let abs_last = if lastkey >= 0 { at + lastkey } else { lastkey };
        if first == 0 {
            (first, last, step) = (at, abs_last, st);
        } else if st == step && last >= 0 && at == last + 1 {
            last = abs_last;
        }
    }
    (first, last, step)
}

#[cfg(test)]
mod tests {
    use super::key_flags::*;
    use super::*;

    fn positions(spec: KeySpec, line: &str) -> Vec<usize> {
        let argv: Vec<&[u8]> = line.split(' ').map(|s| s.as_bytes()).collect();
        let mut out = Vec::new();
        spec.find(&argv, &mut out);
        out
    }

    #[test]
    fn finds_keys_as_specs_describe() {
        let spec = |begin_search, find_keys| KeySpec { notes: None, flags: RO, begin_search, find_keys };
        let streams = spec(BeginSearch::Keyword { keyword: "STREAMS", startfrom: 1 }, FindKeys::Range { lastkey: -1, step: 1, limit: 2 });
        assert_eq!(positions(streams, "XREAD COUNT 2 STREAMS a b 0 0"), [4, 5]);
        assert_eq!(positions(streams, "XREAD COUNT 2 STREAMS"), [0usize; 0]);
        let numkeys = spec(BeginSearch::Index(2), FindKeys::Keynum { keynumidx: 0, firstkey: 1, step: 1 });
        assert_eq!(positions(numkeys, "EVAL s 2 a b c"), [3, 4]);
        let mset = spec(BeginSearch::Index(1), FindKeys::Range { lastkey: -1, step: 2, limit: 0 });
        assert_eq!(positions(mset, "MSET a 1 b 2"), [1, 3]);
        let last = spec(BeginSearch::Keyword { keyword: "STORE", startfrom: -2 }, FindKeys::Range { lastkey: 0, step: 1, limit: 0 });
        assert_eq!(positions(last, "X k STORE d"), [3]);
        assert_eq!(positions(spec(BeginSearch::Unknown, FindKeys::Unknown), "SORT k"), [0usize; 0]);
    }

    #[test]
    fn legacy_range_merges_contiguous_ranges() {
        let r = |at, lastkey, step| KeySpec {
            notes: None,
            flags: RW,
            begin_search: BeginSearch::Index(at),
            find_keys: FindKeys::Range { lastkey, step, limit: 0 },
        };
        assert_eq!(legacy_range(&[r(1, 0, 1), r(2, 0, 1)]), (1, 2, 1));
        assert_eq!(legacy_range(&[r(1, -1, 2)]), (1, -1, 2));
        assert_eq!(legacy_range(&[r(1, 0, 1), r(3, 0, 1)]), (1, 1, 1));
        let keynum =
            KeySpec { notes: None, flags: RO, begin_search: BeginSearch::Index(1), find_keys: FindKeys::Keynum { keynumidx: 0, firstkey: 1, step: 1 } };
        assert_eq!(legacy_range(&[keynum]), (0, 0, 0));
    }
}
