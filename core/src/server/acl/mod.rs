//! ACL users and their enforcement, as Redis 7.0 has them: users with flags, SHA-256
//! password hashes and one (root) selector of allowed commands, key patterns and channel
//! patterns. Checked in `dispatch` before a command runs (`enforce`); the same check
//! answers ACL DRYRUN.
//!
//! Durability: ACL SETUSER/DELUSER (and CONFIG SET requirepass) replicate as effects that
//! describe the whole resulting user with `#<sha256>` hashes (`effect_args`), so replicas,
//! log replay and a new primary rebuild the same users, and no plaintext password is ever
//! logged. Snapshots carry the same description (`snapshot.rs`).

pub mod enforce;
pub mod rules;

use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;

use crate::server::client::Client;
use crate::server::spec::{CommandSpec, flags};

/// The user of internal clients (the primary's effects being applied): may run anything.
pub const SUPERUSER: u32 = u32::MAX;
/// Slot of the `default` user (it can never be deleted).
pub const DEFAULT_SLOT: u32 = 0;
/// The credential `memoria up`'s supervisor uses for its health probes (`AUTH
/// __memoria_internal <token>`): not a user (never listed), only usable when the host set
/// the token's hash at start.
pub const INTERNAL_USER: &[u8] = b"__memoria_internal";

pub const WORDS: usize = 8;
/// Bit set only by +@all/allcommands: "may run commands added later" (Redis's reserved bit).
pub const FUTURE_BIT: usize = WORDS * 64 - 1;

pub const KEY_READ: u8 = 1;
pub const KEY_WRITE: u8 = 2;
pub const KEY_ALL: u8 = KEY_READ | KEY_WRITE;

pub const FLAG_ON: u8 = 1;
pub const FLAG_OFF: u8 = 2;
pub const FLAG_NOPASS: u8 = 4;
pub const FLAG_SKIP_SANITIZE: u8 = 8;
pub const FLAG_SANITIZE: u8 = 16;
/// In ACL GETUSER / ACL LIST order.
pub const FLAG_NAMES: &[(u8, &str)] =
    &[(FLAG_ON, "on"), (FLAG_OFF, "off"), (FLAG_NOPASS, "nopass"), (FLAG_SKIP_SANITIZE, "skip-sanitize-payload"), (FLAG_SANITIZE, "sanitize-payload")];

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct KeyPattern {
    pub flags: u8,
    pub pattern: Vec<u8>,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Selector {
    pub allowed: [u64; WORDS],
    pub allcommands: bool,
    pub allkeys: bool,
    pub allchannels: bool,
    pub patterns: Vec<KeyPattern>,
    pub channels: Vec<Vec<u8>>,
    /// `+select|0`: first arguments allowed for an otherwise denied command id.
    pub firstargs: BTreeMap<usize, Vec<Vec<u8>>>,
}

impl Selector {
    pub fn empty() -> Self {
        Selector {
            allowed: [0; WORDS],
            allcommands: false,
            allkeys: false,
            allchannels: false,
            patterns: Vec::new(),
            channels: Vec::new(),
            firstargs: BTreeMap::new(),
        }
    }
    #[inline]
    pub fn bit(&self, id: usize) -> bool {
        self.allowed[id / 64] & (1 << (id % 64)) != 0
    }
    pub fn set_bit(&mut self, id: usize, v: bool) {
        if v {
            self.allowed[id / 64] |= 1 << (id % 64);
        } else {
            self.allowed[id / 64] &= !(1 << (id % 64));
            self.allcommands = false;
        }
    }
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub struct User {
    pub name: Vec<u8>,
    pub flags: u8,
    /// Lower-case hex SHA-256 of each password.
    pub passwords: Vec<Vec<u8>>,
    pub root: Selector,
    /// Set by ACL SETUSER / CONFIG SET requirepass (logged); false for the default user
    /// as configured at start (`--requirepass`), which snapshots then leave out.
    pub logged: bool,
}

impl User {
    pub fn new(name: &[u8]) -> Self {
        User { name: name.to_vec(), flags: FLAG_OFF, passwords: Vec::new(), root: Selector::empty(), logged: false }
    }
    pub fn enabled(&self) -> bool {
        self.flags & FLAG_OFF == 0
    }
    pub fn nopass(&self) -> bool {
        self.flags & FLAG_NOPASS != 0
    }
}

/// Why a command was refused (Redis's ACL_DENIED_*), with the argument position at fault.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Denied {
    Cmd,
    Key(usize),
    Channel(usize),
}

pub const REASON_CMD: u8 = 0;
pub const REASON_KEY: u8 = 1;
pub const REASON_CHANNEL: u8 = 2;
pub const REASON_AUTH: u8 = 3;
pub const CTX_TOPLEVEL: u8 = 0;
pub const CTX_MULTI: u8 = 1;
pub const CTX_LUA: u8 = 2;

pub struct LogEntry {
    pub count: u64,
    pub reason: u8,
    pub context: u8,
    pub object: Vec<u8>,
    pub username: Vec<u8>,
    pub ctime: i64,
    pub cinfo: Vec<u8>,
}

/// The users of one engine, the command ids their bitmaps use, and the ACL LOG.
pub struct Acl {
    slots: Vec<Option<(u32, User)>>,
    names: BTreeMap<Vec<u8>, u32>,
    free: Vec<u32>,
    next_gen: u32,
    pub log: VecDeque<LogEntry>,
    /// SHA-256 hex of the supervisor's internal token (see `INTERNAL_USER`).
    pub internal: Option<Vec<u8>>,
    /// Every command and subcommand, a container followed by its subcommands; the index
    /// is the command's id in the bitmaps.
    pub specs: Vec<&'static CommandSpec>,
    /// For each id: the ids of its subcommands (containers only).
    pub subs: Vec<(usize, usize)>,
    pub cats: Vec<u32>,
    by_addr: Vec<(usize, usize)>,
}

impl Acl {
    /// The default user alone, over the commands of `table`.
    pub fn new(table: &'static [CommandSpec]) -> Self {
        let mut specs: Vec<&'static CommandSpec> = Vec::new();
        let mut subs = Vec::new();
        for c in table {
            specs.push(c);
            let start = specs.len();
            specs.extend(c.subcommands.iter());
            subs.push((start, specs.len()));
            for _ in c.subcommands {
                subs.push((0, 0));
            }
        }
        assert!(specs.len() < FUTURE_BIT, "command ids overflow the ACL bitmap");
        let cats = specs.iter().map(|s| s.acl_category_bits()).collect();
        let mut by_addr: Vec<(usize, usize)> = specs.iter().enumerate().map(|(i, s)| (*s as *const CommandSpec as usize, i)).collect();
        by_addr.sort_unstable();
        let mut acl =
            Acl { slots: Vec::new(), names: BTreeMap::new(), free: Vec::new(), next_gen: 1, log: VecDeque::new(), internal: None, specs, subs, cats, by_addr };
        let mut d = User::new(b"default");
        for op in [&b"+@all"[..], b"~*", b"&*", b"on", b"nopass"] {
            let _ = rules::set_user(&acl, &mut d, op);
        }
        acl.put(d);
        acl
    }

    #[inline]
    pub fn id_of(&self, spec: &CommandSpec) -> Option<usize> {
        let a = spec as *const CommandSpec as usize;
        self.by_addr.binary_search_by_key(&a, |&(addr, _)| addr).ok().map(|i| self.by_addr[i].1)
    }

    pub fn get(&self, name: &[u8]) -> Option<&User> {
        let slot = *self.names.get(name)?;
        self.slots[slot as usize].as_ref().map(|(_, u)| u)
    }

    pub fn get_mut(&mut self, name: &[u8]) -> Option<&mut User> {
        let slot = *self.names.get(name)?;
        self.slots[slot as usize].as_mut().map(|(_, u)| u)
    }

    /// (slot, generation) of a user, for a client authenticating as it.
    pub fn handle(&self, name: &[u8]) -> Option<(u32, u32)> {
        let slot = *self.names.get(name)?;
        self.slots[slot as usize].as_ref().map(|(g, _)| (slot, *g))
    }

    /// The user a client is authenticated as, or None if it was deleted since.
    #[inline]
    pub fn user_of(&self, slot: u32, generation: u32) -> Option<&User> {
        match self.slots.get(slot as usize) {
            Some(Some((g, u))) if *g == generation => Some(u),
            _ => None,
        }
    }

    pub fn default_user(&self) -> &User {
        &self.slots[DEFAULT_SLOT as usize].as_ref().expect("the default user always exists").1
    }

    pub fn default_handle(&self) -> (u32, u32) {
        (DEFAULT_SLOT, self.slots[DEFAULT_SLOT as usize].as_ref().map_or(0, |(g, _)| *g))
    }

    /// Inserts or replaces a user (by name), keeping the slot (and so the clients
    /// authenticated as it) of an existing one.
    pub fn put(&mut self, user: User) {
        if let Some(&slot) = self.names.get(&user.name)
            && let Some((_, u)) = self.slots[slot as usize].as_mut()
        {
            *u = user;
            return;
        }
        let generation = self.next_gen;
        self.next_gen = self.next_gen.wrapping_add(1).max(1);
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some((generation, user.clone()));
                s
            }
            None => {
                self.slots.push(Some((generation, user.clone())));
                (self.slots.len() - 1) as u32
            }
        };
        self.names.insert(user.name, slot);
    }

    /// Removes a user; its clients find their handle stale and are disconnected.
    pub fn remove(&mut self, name: &[u8]) -> bool {
        match self.names.remove(name) {
            Some(slot) => {
                self.slots[slot as usize] = None;
                self.free.push(slot);
                true
            }
            None => false,
        }
    }

    /// Users in name order (Redis keeps them in a radix tree).
    pub fn users(&self) -> impl Iterator<Item = &User> {
        self.names.values().filter_map(|&s| self.slots[s as usize].as_ref().map(|(_, u)| u))
    }

    /// Whether a new connection starts authenticated (default user on and nopass).
    pub fn default_authenticates(&self) -> bool {
        let d = self.default_user();
        d.nopass() && d.enabled()
    }

    /// Redis's authRequired(): the default user needs a password (or is off) and the
    /// client has not authenticated.
    #[inline]
    pub fn auth_required(&self, c: &Client) -> bool {
        !c.authenticated && !self.default_authenticates()
    }

    /// Checks a username/password pair (Redis's ACLCheckUserCredentials).
    pub fn check_credentials(&self, name: &[u8], pass: &[u8]) -> bool {
        let Some(u) = self.get(name) else { return false };
        if !u.enabled() {
            return false;
        }
        if u.nopass() {
            return true;
        }
        let h = hash_password(pass);
        // Every stored hash is compared in full, whatever matched before.
        let mut ok = false;
        for p in &u.passwords {
            ok |= ct_eq(p, &h);
        }
        ok
    }

    /// Whether `c`'s user may read every key (Redis 7.0's
    /// ACLUserCheckCmdWithUnrestrictedKeyAccess with CMD_KEY_ACCESS, which SORT asks
    /// before it takes a BY or GET pattern: CVE-2023-41053): `allkeys`, or the pattern `*`
    /// with read access. Patterns that happen to cover the keys read are not enough. The
    /// command itself has passed `enforce`, the other half of Redis's check.
    pub fn reads_all_keys(&self, c: &Client) -> bool {
        if c.user == SUPERUSER {
            return true;
        }
        let Some(u) = self.user_of(c.user, c.user_gen) else { return false };
        let s = &u.root;
        s.allkeys || s.patterns.iter().any(|p| p.flags & KEY_READ != 0 && p.pattern == b"*")
    }

    /// Whether `user` may run `spec` with `argv` (Redis's ACLCheckAllUserCommandPerm).
    pub fn check(&self, user: &User, spec: &'static CommandSpec, argv: &[&[u8]]) -> Result<(), Denied> {
        let s = &user.root;
        if s.allcommands && s.allkeys && s.allchannels {
            return Ok(());
        }
        self.check_selector(s, spec, argv)
    }

    fn check_selector(&self, s: &Selector, spec: &'static CommandSpec, argv: &[&[u8]]) -> Result<(), Denied> {
        if !s.allcommands && spec.flags & flags::NO_AUTH == 0 {
            let Some(id) = self.id_of(spec) else { return Err(Denied::Cmd) };
            if !s.bit(id) {
                let idx = if spec.name.contains('|') { 2 } else { 1 };
                let ok =
                    argv.len() >= 2 && s.firstargs.get(&id).is_some_and(|args| argv.get(idx).is_some_and(|a| args.iter().any(|x| x.eq_ignore_ascii_case(a))));
                if !ok {
                    return Err(Denied::Cmd);
                }
            }
        }
        if !s.allkeys {
            let mut denied = None;
            for_each_key(spec, argv, |i, need| {
                if !key_allowed(s, argv[i], need) {
                    denied = Some(i);
                    return false;
                }
                true
            });
            if let Some(i) = denied {
                return Err(Denied::Key(i));
            }
        }
        if !s.allchannels {
            let (from, literal) = match spec.name {
                "publish" | "spublish" => (1, false),
                "subscribe" | "ssubscribe" => (1, false),
                "psubscribe" => (1, true),
                _ => return Ok(()),
            };
            let to = if matches!(spec.name, "publish" | "spublish") { 2.min(argv.len()) } else { argv.len() };
            for (i, ch) in argv.iter().enumerate().take(to).skip(from) {
                let ok = s.channels.iter().any(|p| if literal { p.as_slice() == *ch } else { crate::util::glob_match(p, ch, false) });
                if !ok {
                    return Err(Denied::Channel(i));
                }
            }
        }
        Ok(())
    }

    /// Adds an ACL LOG entry, folding it into a recent similar one (Redis's addACLLogEntry);
    /// true when the entry is a new one (the log grew).
    pub fn add_log(&mut self, reason: u8, context: u8, object: &[u8], username: &[u8], now_ms: i64, cinfo: Vec<u8>) -> bool {
        let found = self
            .log
            .iter()
            .take(10)
            .position(|e| e.reason == reason && e.context == context && (e.ctime - now_ms).abs() <= 60_000 && e.object == object && e.username == username);
        if let Some(i) = found {
            let mut e = self.log.remove(i).expect("index from position");
            e.cinfo = cinfo;
            e.ctime = now_ms;
            e.count += 1;
            self.log.push_front(e);
            return false;
        }
        self.log.push_front(LogEntry { count: 1, reason, context, object: object.to_vec(), username: username.to_vec(), ctime: now_ms, cinfo });
        true
    }
}

/// Key access a command needs on `argv[i]` (Redis's key-spec flags: ACCESS → read;
/// INSERT/DELETE/UPDATE → write), for each key argument. Stops when `f` returns false.
pub fn for_each_key(spec: &CommandSpec, argv: &[&[u8]], mut f: impl FnMut(usize, u8) -> bool) {
    let n = argv.len();
    let numkeys = |at: usize| crate::server::spec::numkeys_span(argv, at);
    // Commands whose keys follow a count, with the access each needs (and the destination
    // apart), found as Redis finds them (spec::numkeys_span).
    let (span, dest, src_need) = match spec.name {
        "zunionstore" | "zinterstore" | "zdiffstore" => (numkeys(2), Some(1), KEY_READ),
        "zunion" | "zinter" | "zdiff" | "zintercard" | "sintercard" => (numkeys(1), None, KEY_READ),
        "lmpop" | "zmpop" => (numkeys(1), None, KEY_ALL),
        "blmpop" | "bzmpop" => (numkeys(2), None, KEY_ALL),
        _ => (None, None, 0),
    };
    if let Some(span) = span {
        if span.by_spec {
            if let Some(d) = dest
                && !f(d, KEY_WRITE)
            {
                return;
            }
            for i in span.start..span.end {
                if !f(i, src_need) {
                    return;
                }
            }
        } else {
            // Through the getkeys proc: the destination last, and no access flags.
            for i in (span.start..span.end).chain(dest) {
                if !f(i, 0) {
                    return;
                }
            }
        }
        return;
    }
    let movable = spec.movable_keys();
    if spec.first_key <= 0 && !movable {
        return;
    }
    if spec.first_key > 0 && !movable {
        // Fixed key positions: walked in place (no allocation on the hot path).
        let first = spec.first_key as usize;
        let last = if spec.last_key < 0 { n as i64 + spec.last_key as i64 } else { spec.last_key as i64 };
        let step = spec.step.max(1) as usize;
        let (mut i, mut pos) = (first, 0);
        while (i as i64) <= last && i < n {
            if !f(i, key_need(spec, argv, pos)) {
                return;
            }
            i += step;
            pos += 1;
        }
        return;
    }
    let mut idx = Vec::new();
    spec.key_indexes_argv(argv, &mut idx);
    for (pos, &i) in idx.iter().enumerate() {
        if i >= n {
            break;
        }
        if !f(i, key_need(spec, argv, pos)) {
            return;
        }
    }
}

/// The access a command needs on its `pos`-th key.
fn key_need(spec: &CommandSpec, argv: &[&[u8]], pos: usize) -> u8 {
    let first = pos == 0;
    match spec.name {
        // Source read (and for moves deleted), destination written.
        "copy" => return if first { KEY_READ } else { KEY_WRITE },
        "rename" | "renamenx" | "smove" | "lmove" | "rpoplpush" | "blmove" | "brpoplpush" => return if first { KEY_ALL } else { KEY_WRITE },
        "sinterstore" | "sunionstore" | "sdiffstore" | "zrangestore" => return if first { KEY_WRITE } else { KEY_READ },
        "sort" | "georadius" | "georadiusbymember" => return if first { KEY_READ } else { KEY_WRITE },
        "geosearchstore" => return if first { KEY_WRITE } else { KEY_READ },
        "bitop" | "pfmerge" => return if first { KEY_ALL } else { KEY_READ },
        "set" => return if argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"GET")) { KEY_ALL } else { KEY_WRITE },
        _ => {}
    }
    if spec.flags & flags::READONLY != 0 {
        return KEY_READ;
    }
    if spec.flags & flags::WRITE == 0 {
        // WATCH and the like touch no data: any pattern covers them.
        return 0;
    }
    match spec.name {
        // Writes that also return what they read.
        "getset" | "getdel" | "getex" | "incr" | "decr" | "incrby" | "decrby" | "incrbyfloat" | "hincrby" | "hincrbyfloat" | "zincrby" | "lpop" | "rpop"
        | "blpop" | "brpop" | "spop" | "zpopmin" | "zpopmax" | "bzpopmin" | "bzpopmax" | "bitfield" | "xreadgroup" | "xautoclaim" | "xclaim"
        // Return field values, or send the value elsewhere.
        | "hgetdel" | "hgetex" | "migrate" => KEY_ALL,
        _ => KEY_WRITE,
    }
}

fn key_allowed(s: &Selector, key: &[u8], need: u8) -> bool {
    s.patterns.iter().any(|p| p.flags & need == need && crate::util::glob_match(&p.pattern, key, false))
}

/// Lower-case hex SHA-256, as Redis stores passwords.
pub fn hash_password(pass: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    let d = sha2::Sha256::digest(pass);
    let mut out = Vec::with_capacity(64);
    for b in d.iter() {
        out.push(b"0123456789abcdef"[(b >> 4) as usize]);
        out.push(b"0123456789abcdef"[(b & 15) as usize]);
    }
    out
}

/// Equality that reads every byte whatever differs first.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut d = 0u8;
    for (x, y) in a.iter().zip(b) {
        d |= x ^ y;
    }
    d == 0
}

/// Whether an address (`ip:port` as the host reports it) is a loopback one.
pub fn is_loopback(addr: &[u8]) -> bool {
    let s = core::str::from_utf8(addr).unwrap_or("");
    s.starts_with("127.") || s.starts_with("[::1]") || s.starts_with("::1") || s.starts_with("[::ffff:127.") || s.starts_with("unix")
}

/// A category's bit by name (without the `@`), case-insensitively.
pub fn acl_cat_bit(name: &[u8]) -> Option<u32> {
    crate::server::spec::acl_cat::NAMES.iter().find(|(_, n)| n.as_bytes()[1..].eq_ignore_ascii_case(name)).map(|&(b, _)| b)
}
