//! What a command is, as data: its name, arity, flags, key positions, ACL categories and
//! handler (`CommandSpec`), and the index dispatch looks commands up in. The table of every
//! command is `commands::table`; nothing here names a command.

use alloc::vec::Vec;

use crate::server::ctx::Ctx;
use crate::util::c_eq_ic;

pub type Handler = fn(&mut Ctx<'_>, &[&[u8]]);

pub mod flags {
    pub const WRITE: u32 = 1;
    pub const READONLY: u32 = 1 << 1;
    pub const DENYOOM: u32 = 1 << 2;
    pub const ADMIN: u32 = 1 << 3;
    pub const PUBSUB: u32 = 1 << 4;
    pub const NOSCRIPT: u32 = 1 << 5;
    pub const LOADING: u32 = 1 << 6;
    pub const STALE: u32 = 1 << 7;
    pub const FAST: u32 = 1 << 8;
    pub const NO_AUTH: u32 = 1 << 9;
    pub const NO_MULTI: u32 = 1 << 10;
    pub const ALLOW_BUSY: u32 = 1 << 11;
    pub const MAY_REPLICATE: u32 = 1 << 12;
    /// Observes the whole keyspace of its database (DBSIZE, KEYS, SCAN, RANDOMKEY,
    /// FLUSHDB…): the host's tracker holds it until every pending write is durable.
    pub const KEYSPACE: u32 = 1 << 13;
    /// Changes per-connection state only (SELECT, HELLO, CLIENT SETNAME…).
    pub const CONNECTION: u32 = 1 << 14;
    /// May block the client (BLPOP, BLMOVE…; see `blocked`).
    pub const BLOCKING: u32 = 1 << 15;
    // Internal behaviour, not shown by COMMAND INFO (Redis compares handler addresses).
    /// Runs at once inside MULTI instead of being queued (EXEC, DISCARD, MULTI, WATCH,
    /// QUIT, RESET).
    pub const TX_CONTROL: u32 = 1 << 16;
    /// Runs the queued transaction: refusing it discards the transaction (EXECABORT),
    /// and slot routing and the host's read tracking look at every queued command.
    pub const EXEC: u32 = 1 << 17;
    /// Leaves a pending ASKING for the command after it (ASKING itself, MULTI).
    pub const KEEPS_ASKING: u32 = 1 << 18;
    /// Allowed to a RESP2 client while it is subscribed (the (UN)SUBSCRIBE family, PING,
    /// QUIT, RESET).
    pub const SUBSCRIBED: u32 = 1 << 19;
    /// Runs a script (EVAL, EVALSHA…): the host's tracker holds its reply until every
    /// pending write is durable, since it cannot see which keys the script read.
    pub const SCRIPT: u32 = 1 << 20;
    /// Keys are optional (EVAL's numkeys may be 0): COMMAND GETKEYS answers an empty list
    /// where it would otherwise be an error.
    pub const NO_MANDATORY_KEYS: u32 = 1 << 21;
    /// Not shown to MONITOR after it runs (scripts: they are shown before they run, so
    /// the commands they call follow them).
    pub const SKIP_MONITOR: u32 = 1 << 22;
    /// Not logged by SLOWLOG (EXEC: the commands it runs are).
    pub const SKIP_SLOWLOG: u32 = 1 << 23;
    /// Runs as if ASKING had been sent before it (RESTORE-ASKING).
    pub const ASKING: u32 = 1 << 24;
    /// Refused unless `enable-debug-command` allows it for the client (DEBUG; Redis's
    /// CMD_PROTECTED, which COMMAND INFO does not show either).
    pub const PROTECTED: u32 = 1 << 25;
    /// Redis refuses these (SAVE, BGSAVE) while a replica loads its data asynchronously;
    /// Memoria has no such loading, so only COMMAND INFO shows it.
    pub const NO_ASYNC_LOADING: u32 = 1 << 26;

    /// The flags COMMAND INFO shows, in Redis 7.0's order (addReplyFlagsForCommand):
    /// `movablekeys` is not a bit here (it comes from `CommandSpec::movable`) and goes
    /// after `no_multi`; `may_replicate` is hidden, as Redis hides it.
    pub const NAMES: &[(u32, &str)] = &[
        (WRITE, "write"),
        (READONLY, "readonly"),
        (DENYOOM, "denyoom"),
        (ADMIN, "admin"),
        (PUBSUB, "pubsub"),
        (NOSCRIPT, "noscript"),
        (BLOCKING, "blocking"),
        (LOADING, "loading"),
        (STALE, "stale"),
        (SKIP_MONITOR, "skip_monitor"),
        (SKIP_SLOWLOG, "skip_slowlog"),
        (ASKING, "asking"),
        (FAST, "fast"),
        (NO_AUTH, "no_auth"),
        (NO_MANDATORY_KEYS, "no_mandatory_keys"),
        (NO_ASYNC_LOADING, "no_async_loading"),
        (NO_MULTI, "no_multi"),
        (ALLOW_BUSY, "allow_busy"),
    ];
}

use flags::*;

pub struct CommandSpec {
    /// Lower-case name; for subcommands `container|sub`.
    pub name: &'static str,
    /// Redis arity: exact count if positive, minimum count if negative (name included).
    pub arity: i32,
    pub flags: u32,
    /// Key positions: first, last (negative counts from the end), step. 0 = no keys.
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub group: &'static str,
    pub since: &'static str,
    pub summary: &'static str,
    pub handler: Option<Handler>,
    pub subcommands: &'static [CommandSpec],
    /// Keys found by reading the arguments (Redis's movablekeys); `Movable::No`: the
    /// fixed first/last/step above.
    pub movable: Movable,
    /// A container called without a subcommand runs this one (bare COMMAND lists every
    /// command through COMMAND INFO); None: it is an arity error.
    pub bare: Option<&'static CommandSpec>,
    /// Observes the whole keyspace only with some arguments (INFO with its keyspace
    /// section): the host's tracker then holds it as it holds a KEYSPACE command.
    pub keyspace_if: Option<ArgsPredicate>,
    /// Arguments never echoed (MONITOR, SLOWLOG): passwords. None: none.
    pub redact: Option<Redactor>,
}

/// Whether argument `i` of `argv` (name included) is a secret shown as `(redacted)`.
pub type Redactor = fn(argv: &[&[u8]], i: usize) -> bool;

/// A test on a command's arguments (name included).
pub type ArgsPredicate = fn(&[&[u8]]) -> bool;

/// How a command with movable keys names them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Movable {
    No,
    /// `numkeys` at this position, then that many keys (ZUNION, SINTERCARD, LMPOP…).
    NumKeys(usize),
    /// A destination at 1, `numkeys` at 2, then the sources (ZUNIONSTORE…).
    DestNumKeys,
    /// The first half of what follows STREAMS (XREAD, XREADGROUP).
    Streams,
    /// The key at 1 and STORE's destination (SORT).
    Sort,
    /// The key at 1 only, read by a key procedure in Redis (SORT_RO), which makes it
    /// movablekeys there.
    First,
    /// The key at 1 and the destinations of STORE/STOREDIST options, which start at this
    /// position (GEORADIUS, GEORADIUSBYMEMBER).
    GeoStore(usize),
    /// The key at 3, or when it is empty every argument after KEYS (MIGRATE).
    Migrate,
}

impl CommandSpec {
    /// Whether this invocation reads the whole keyspace (its count, its keys, a key named
    /// by a pattern): a reply the host holds until every pending write is durable.
    pub fn reads_keyspace(&self, argv: &[&[u8]]) -> bool {
        self.flags & (KEYSPACE | EXEC | SCRIPT) != 0 || self.keyspace_if.is_some_and(|f| f(argv))
    }

    pub fn is_write(&self) -> bool {
        self.flags & WRITE != 0
    }
    pub fn arity_ok(&self, argc: usize) -> bool {
        let a = self.arity;
        (a > 0 && argc == a as usize) || (a < 0 && argc >= (-a) as usize)
    }
    /// Indexes of key arguments in `argv` (argv[0] is the command name).
    pub fn key_indexes(&self, argc: usize, out: &mut Vec<usize>) {
        if self.first_key <= 0 {
            return;
        }
        let first = self.first_key as usize;
        let last = if self.last_key < 0 { argc as i64 + self.last_key as i64 } else { self.last_key as i64 };
        if last < first as i64 {
            return;
        }
        let last = (last as usize).min(argc.saturating_sub(1));
        let step = self.step.max(1) as usize;
        let mut i = first;
        while i <= last {
            out.push(i);
            i += step;
        }
    }
    /// Key positions for commands whose keys depend on the arguments (Redis's
    /// movablekeys); the fixed first/last/step otherwise.
    pub fn key_indexes_argv(&self, argv: &[&[u8]], out: &mut Vec<usize>) {
        match self.movable {
            Movable::No => self.key_indexes(argv.len(), out),
            Movable::NumKeys(at) => numkeys_keys(argv, at, false, out),
            Movable::Streams => stream_keys(argv, out),
            Movable::Sort => sort_keys(argv, out),
            Movable::First => out.extend((argv.len() > 1).then_some(1)),
            Movable::DestNumKeys => numkeys_keys(argv, 2, true, out),
            Movable::GeoStore(at) => geo_store_keys(argv, at, out),
            Movable::Migrate => migrate_keys(argv, out),
        }
    }
    /// Where this invocation's first key is, if it names one (what a batch prefetches).
    pub fn first_key_index(&self, argv: &[&[u8]]) -> Option<usize> {
        match self.movable {
            Movable::No => Some(self.first_key as usize).filter(|&i| i > 0 && i < argv.len()),
            Movable::NumKeys(at) => numkeys_span(argv, at).map(|s| s.start),
            _ => {
                let mut at = Vec::new();
                self.key_indexes_argv(argv, &mut at);
                at.first().copied()
            }
        }
    }
    /// Keys found by reading the arguments (Redis's movablekeys).
    pub fn movable_keys(&self) -> bool {
        self.movable != Movable::No
    }
    /// ACL categories as a bit set (`acl_cat`), derived as Redis 7.0 derives them: the
    /// implicit ones from the flags (write, read, admin+dangerous, pubsub, fast/slow,
    /// blocking) plus the explicit ones of the command's group and a few named commands.
    pub fn acl_category_bits(&self) -> u32 {
        use acl_cat::*;
        if !self.subcommands.is_empty() {
            // Containers carry only @slow (COMMAND's also @connection), as in Redis.
            return CAT_SLOW | if self.name == "command" { CAT_CONNECTION } else { 0 };
        }
        let f = self.flags;
        let mut b = 0;
        if f & WRITE != 0 {
            b |= CAT_WRITE;
        }
        // Redis leaves scripting commands (EVAL_RO, FCALL_RO) out of @read.
        if f & READONLY != 0 && self.group != "scripting" {
            b |= CAT_READ;
        }
        if f & ADMIN != 0 {
            b |= CAT_ADMIN | CAT_DANGEROUS;
        }
        if f & PUBSUB != 0 {
            b |= CAT_PUBSUB;
        }
        b |= if f & FAST != 0 { CAT_FAST } else { CAT_SLOW };
        if f & BLOCKING != 0 {
            b |= CAT_BLOCKING;
        }
        b |= match self.group {
            "generic" => CAT_KEYSPACE,
            "string" => CAT_STRING,
            "hash" => CAT_HASH,
            "set" => CAT_SET,
            "bitmap" => CAT_BITMAP,
            "hyperloglog" => CAT_HYPERLOGLOG,
            "sorted-set" => CAT_SORTEDSET,
            "list" => CAT_LIST,
            "stream" => CAT_STREAM,
            "geo" => CAT_GEO,
            "transactions" => CAT_TRANSACTION,
            "connection" => CAT_CONNECTION,
            "scripting" => CAT_SCRIPTING,
            _ => 0,
        };
        // Explicit categories of single commands (Redis's command JSON files).
        b |= match self.name {
            "wait" | "asking" | "readonly" | "readwrite" => CAT_CONNECTION,
            "info" | "keys" => CAT_DANGEROUS,
            "dbsize" => CAT_KEYSPACE,
            "flushdb" | "flushall" | "swapdb" => CAT_KEYSPACE | CAT_DANGEROUS,
            "role" | "lastsave" => CAT_ADMIN | CAT_DANGEROUS,
            "xread" | "xreadgroup" => CAT_BLOCKING,
            "sort" | "sort_ro" => CAT_SET | CAT_SORTEDSET | CAT_LIST | CAT_DANGEROUS,
            "restore" | "migrate" => CAT_DANGEROUS,
            "restore-asking" => CAT_KEYSPACE | CAT_DANGEROUS,
            _ if self.name.starts_with("command|") => CAT_CONNECTION,
            _ => 0,
        };
        if matches!(self.name, "wait" | "sort" | "sort_ro") {
            b &= !CAT_KEYSPACE;
        }
        b
    }

    /// Categories reported by COMMAND INFO / used by ACL (`@read`, `@write`…), in
    /// Redis's order.
    pub fn acl_categories(&self) -> Vec<&'static str> {
        let bits = self.acl_category_bits();
        acl_cat::NAMES.iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0).map(|(_, n)| n.1).collect()
    }
}

/// ACL command categories, in the order of Redis's ACLCommandCategories (ACL CAT lists
/// them so, COMMAND INFO reports them so).
pub mod acl_cat {
    pub const CAT_KEYSPACE: u32 = 1;
    pub const CAT_READ: u32 = 1 << 1;
    pub const CAT_WRITE: u32 = 1 << 2;
    pub const CAT_SET: u32 = 1 << 3;
    pub const CAT_SORTEDSET: u32 = 1 << 4;
    pub const CAT_LIST: u32 = 1 << 5;
    pub const CAT_HASH: u32 = 1 << 6;
    pub const CAT_STRING: u32 = 1 << 7;
    pub const CAT_BITMAP: u32 = 1 << 8;
    pub const CAT_HYPERLOGLOG: u32 = 1 << 9;
    pub const CAT_GEO: u32 = 1 << 10;
    pub const CAT_STREAM: u32 = 1 << 11;
    pub const CAT_PUBSUB: u32 = 1 << 12;
    pub const CAT_ADMIN: u32 = 1 << 13;
    pub const CAT_FAST: u32 = 1 << 14;
    pub const CAT_SLOW: u32 = 1 << 15;
    pub const CAT_BLOCKING: u32 = 1 << 16;
    pub const CAT_DANGEROUS: u32 = 1 << 17;
    pub const CAT_CONNECTION: u32 = 1 << 18;
    pub const CAT_TRANSACTION: u32 = 1 << 19;
    pub const CAT_SCRIPTING: u32 = 1 << 20;
    /// (bit, "@name") in Redis's order.
    pub const NAMES: &[(u32, &str)] = &[
        (CAT_KEYSPACE, "@keyspace"),
        (CAT_READ, "@read"),
        (CAT_WRITE, "@write"),
        (CAT_SET, "@set"),
        (CAT_SORTEDSET, "@sortedset"),
        (CAT_LIST, "@list"),
        (CAT_HASH, "@hash"),
        (CAT_STRING, "@string"),
        (CAT_BITMAP, "@bitmap"),
        (CAT_HYPERLOGLOG, "@hyperloglog"),
        (CAT_GEO, "@geo"),
        (CAT_STREAM, "@stream"),
        (CAT_PUBSUB, "@pubsub"),
        (CAT_ADMIN, "@admin"),
        (CAT_FAST, "@fast"),
        (CAT_SLOW, "@slow"),
        (CAT_BLOCKING, "@blocking"),
        (CAT_DANGEROUS, "@dangerous"),
        (CAT_CONNECTION, "@connection"),
        (CAT_TRANSACTION, "@transaction"),
        (CAT_SCRIPTING, "@scripting"),
    ];
}

/// XREAD/XREADGROUP key positions: the first half of the arguments after STREAMS
/// (searched from argument 1, or 4 past `GROUP <group> <consumer>`, as Redis's key specs).
pub fn stream_keys(argv: &[&[u8]], out: &mut Vec<usize>) {
    let from = if c_eq_ic(argv[0], b"xreadgroup") { 4 } else { 1 };
    let Some(p) = argv.iter().skip(from).position(|a| c_eq_ic(a, b"STREAMS")) else { return };
    let first = from + p + 1;
    let n = (argv.len() - first) / 2;
    out.extend(first..first + n);
}

/// The arguments COMMAND GETKEYS, the key tracker, ACL and slot checks see for
/// GEORADIUS/GEORADIUSBYMEMBER (options from `options_at`): the source, then as Redis
/// 7.0's key specs find them the key after the first STORE and after the first STOREDIST
/// (a keyword in last position names nothing), then any destination named by a later
/// STORE/STOREDIST: the command writes the last one given, which Redis's specs miss.
pub fn geo_store_keys(argv: &[&[u8]], options_at: usize, out: &mut Vec<usize>) {
    out.push(1);
    let end = argv.len().saturating_sub(1);
    let first_after = |kw: &[u8]| (options_at..end).find(|&i| crate::util::c_eq_ic(argv[i], kw)).map(|i| i + 1);
    let store = first_after(b"store");
    let storedist = first_after(b"storedist");
    out.extend(store);
    out.extend(storedist);
    for (i, a) in argv.iter().enumerate().take(end).skip(options_at) {
        if (crate::util::c_eq_ic(a, b"store") || crate::util::c_eq_ic(a, b"storedist")) && !out.contains(&(i + 1)) {
            out.push(i + 1);
        }
    }
}

/// MIGRATE's options from argument 6, read as MIGRATE reads them.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct MigrateOptions {
    pub copy: bool,
    pub replace: bool,
    /// AUTH's password or AUTH2's user and password: their positions.
    pub auth: Option<core::ops::Range<usize>>,
    /// Where the keys after KEYS start.
    pub keys_from: Option<usize>,
}

/// MIGRATE's options, or the position of the first argument it refuses (a syntax error).
/// One reader for the command, its key positions and its secrets, so none of them can
/// take a password named "keys" for the option.
pub fn migrate_options(argv: &[&[u8]]) -> Result<MigrateOptions, usize> {
    migrate_options_with(argv, |_| {})
}

/// `migrate_options`, telling `on_auth` where each AUTH/AUTH2's secrets are (a later one
/// replaces an earlier one for the command; every one is a secret).
pub fn migrate_options_with(argv: &[&[u8]], mut on_auth: impl FnMut(core::ops::Range<usize>)) -> Result<MigrateOptions, usize> {
    let mut o = MigrateOptions::default();
    let mut j = 6;
    while j < argv.len() {
        let (a, more) = (argv[j], argv.len() - j - 1);
        if crate::util::eq_ic(a, b"COPY") {
            o.copy = true;
        } else if crate::util::eq_ic(a, b"REPLACE") {
            o.replace = true;
        } else if crate::util::eq_ic(a, b"AUTH") && more >= 1 {
            o.auth = Some(j + 1..j + 2);
            on_auth(j + 1..j + 2);
            j += 1;
        } else if crate::util::eq_ic(a, b"AUTH2") && more >= 2 {
            o.auth = Some(j + 1..j + 3);
            on_auth(j + 1..j + 3);
            j += 2;
        } else if crate::util::eq_ic(a, b"KEYS") {
            o.keys_from = Some(j + 1);
            return Ok(o);
        } else {
            return Err(j);
        }
        j += 1;
    }
    Ok(o)
}

/// MIGRATE's keys: the key at 3, or with KEYS (and an empty key at 3) every argument
/// after it; none when MIGRATE would refuse its arguments (it then touches no key).
fn migrate_keys(argv: &[&[u8]], out: &mut Vec<usize>) {
    match migrate_options(argv) {
        Ok(MigrateOptions { keys_from: Some(i), .. }) if argv.get(3).is_some_and(|k| k.is_empty()) => out.extend(i..argv.len()),
        Ok(MigrateOptions { keys_from: None, .. }) => out.extend((argv.len() > 3).then_some(3)),
        _ => {}
    }
}

/// SORT's keys: the sorted key and STORE's destination (the last one given wins, as in
/// Redis; BY and GET patterns name keys only per element, which the caller cannot know).
fn sort_keys(argv: &[&[u8]], out: &mut Vec<usize>) {
    out.push(1);
    let mut j = 2;
    let mut dst = None;
    while j < argv.len() {
        if crate::util::eq_ic(argv[j], b"limit") {
            j += 3;
            continue;
        }
        if (crate::util::eq_ic(argv[j], b"store") || crate::util::eq_ic(argv[j], b"by") || crate::util::eq_ic(argv[j], b"get")) && j + 1 < argv.len() {
            if crate::util::eq_ic(argv[j], b"store") {
                dst = Some(j + 1);
            }
            j += 2;
            continue;
        }
        j += 1;
    }
    out.extend(dst);
}

/// The keys a `numkeys` argument counts (`numkeys_span`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct NumKeysSpan {
    /// The first key's position, and one past the last.
    pub start: usize,
    pub end: usize,
    /// Found through the command's key specs: a destination comes first, and each key
    /// needs its spec's access. Otherwise through its getkeys proc: the destination comes
    /// last, and the keys carry no access flags (any key pattern covers them).
    pub by_spec: bool,
}

/// The keys counted by a `numkeys` argument at `at`, as Redis 7.0.15 finds them
/// (getKeysFromCommandWithSpecs). A number `string2ll` reads, not negative, goes through
/// the command's keynum key spec, which casts it to an int: 4294967297 counts 1 key. When
/// that fails (" 1", "+1", "01", "-4294967295", or a count that is not positive or runs
/// past the arguments) Redis asks the command's getkeys proc, which reads the count with
/// atoi (`c_atoi`). None when that count is not positive or runs past the arguments
/// either (the command itself then errors). Computed in 64 bits whatever the target's
/// width: the count is never cut to a 32-bit usize.
pub fn numkeys_span(argv: &[&[u8]], at: usize) -> Option<NumKeysSpan> {
    let arg = argv.get(at)?;
    let (count, by_spec) = match crate::util::parse_i64(arg) {
        // The key spec's C cast of the long long to an int: its low 32 bits.
        Some(n) if n >= 0 => (n as i32, true),
        _ => (crate::util::c_atoi(arg), false),
    };
    let start = at + 1;
    let available = (argv.len() - start) as u64;
    if count <= 0 || count as u64 > available {
        return None;
    }
    // The spec's keys when its count fits; else the proc's, whose atoi reads a number the
    // spec read the same way (so the same count, which fits no better).
    Some(NumKeysSpan { start, end: start + count as usize, by_spec })
}

/// Keys counted by a `numkeys` argument at `at` (`numkeys_span`), with the destination
/// at 1 (first or last, as Redis) when `dest`.
fn numkeys_keys(argv: &[&[u8]], at: usize, dest: bool, out: &mut Vec<usize>) {
    let Some(span) = numkeys_span(argv, at) else { return };
    if dest && span.by_spec {
        out.push(1);
    }
    out.extend(span.start..span.end);
    if dest && !span.by_spec {
        out.push(1);
    }
}

/// Case-insensitive command lookup through a hash index (dispatch is on the hot path).
pub struct CommandIndex {
    top: crate::types::dict::Dict<&'static CommandSpec>,
}

impl CommandIndex {
    /// An index of `table`'s top-level commands (subcommands are found through them).
    pub fn new(table: &'static [CommandSpec]) -> Self {
        let mut top = crate::types::dict::Dict::new(0x6d656d6f);
        for c in table {
            top.insert(c.name.as_bytes(), c);
        }
        CommandIndex { top }
    }

    pub fn lookup(&self, name: &[u8]) -> Option<&'static CommandSpec> {
        if name.len() > 32 {
            return None;
        }
        let mut lower = [0u8; 32];
        for (i, c) in name.iter().enumerate() {
            lower[i] = c.to_ascii_lowercase();
        }
        self.top.get(&lower[..name.len()]).copied()
    }

    /// Resolves a command and, for containers, its subcommand. None for unknown ones.
    pub fn resolve(&self, argv: &[&[u8]]) -> Option<&'static CommandSpec> {
        let top = self.lookup(argv.first()?)?;
        if top.subcommands.is_empty() {
            return Some(top);
        }
        find_sub(top, argv.get(1)?)
    }
}

pub fn find_sub(top: &'static CommandSpec, sub: &[u8]) -> Option<&'static CommandSpec> {
    top.subcommands.iter().find(|s| {
        let n = s.name.split('|').nth(1).unwrap_or("");
        n.as_bytes().eq_ignore_ascii_case(sub)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn getkeys_as_redis() {
        let keys = |line: &str, at: usize| {
            let argv: Vec<&[u8]> = line.split(' ').map(|s| s.as_bytes()).collect();
            let mut out = Vec::new();
            geo_store_keys(&argv, at, &mut out);
            out.iter().map(|&i| argv[i]).map(|k| alloc::string::String::from_utf8_lossy(k).into_owned()).collect::<Vec<_>>().join(" ")
        };
        assert_eq!(keys("GEORADIUS k 1 2 3 m", 6), "k");
        assert_eq!(keys("GEORADIUS k 1 2 3 m store a", 6), "k a");
        assert_eq!(keys("GEORADIUS k 1 2 3 m STOREDIST b STORE a", 6), "k a b");
        assert_eq!(keys("GEORADIUS k 1 2 3 m STORE", 6), "k");
        assert_eq!(keys("GEORADIUS k 1 2 3 STORE x", 6), "k");
        // Redis reports only `a`; the command writes `b`, so it is listed too.
        assert_eq!(keys("GEORADIUS k 1 2 3 m STORE a STORE b", 6), "k a b");
        assert_eq!(keys("GEORADIUSBYMEMBER k m 3 STORE x y", 5), "k");
        assert_eq!(keys("GEORADIUSBYMEMBER k STORE 3 km STORE y", 5), "k y");
    }
}
