//! Target `engine`: random batches of commands from several clients, run natively through
//! `Engine::execute` exactly as the host calls the component (one buffer of records per
//! batch, time and seed from the caller).
//!
//! Commands are structured so the fuzzer reaches deep code: the name is an index into the
//! command table (`memoria_core::commands::table::COMMANDS`, subcommands included), arguments are
//! drawn from small dictionaries of keys, members, interesting integers and floats, stream
//! ids and option keywords, or are raw bytes. Checks, per batch and at the end:
//! - nothing panics (a panic in the component is a trap: the shard is lost);
//! - the output is well formed: one answering record per input record, every reply a
//!   complete RESP value, effects well formed and naming known commands, OUT_WRITE set
//!   exactly when there are effects;
//! - the effects invariant: replaying every effect on an empty engine gives the same
//!   digest (`core/tests/effects_invariant.rs`);
//! - a snapshot dump (in small chunks) loaded into an empty engine gives the same digest.

use arbitrary::{Arbitrary, Result, Unstructured};
use memoria_core::Engine;
use memoria_core::protocol::batch::{self, BatchWriter, EffectReader, OutputReader};
use memoria_core::commands::table::COMMANDS;
use memoria_core::server::spec::CommandIndex;
use std::sync::OnceLock;

pub const KEYS: &[&str] = &["a", "b", "c", "{a}x", "s", "l", "z", "h", "k:1", ""];
pub const MEMBERS: &[&str] = &["m1", "m2", "m3", "a", "b", "1", "2", "-1", "0", "3.5", "", "f1", "f2", "g1", "c1"];
pub const INTS: &[&str] = &[
    "0", "1", "-1", "2", "3", "5", "7", "10", "16", "63", "64", "100", "128", "255", "256", "511", "512", "1000", "4096", "65535", "65536",
    "100000", "1048576", "2147483647", "2147483648", "-2147483648", "4294967296", "9223372036854775807", "-9223372036854775808",
    "9223372036854775808", "-9223372036854775809", "18446744073709551615", "01", "+1", "-0", " 1", "1 ", "1.0", "0x10", "1e3",
    "1700000000", "1700000000000", "1700000000005", "-100", "-1000", "32", "33", "-64",
];
pub const FLOATS: &[&str] = &[
    "0.5", "-1.25", "inf", "-inf", "+inf", "nan", "1e3", "1e-3", "3.0", "-0", "-0.0", "1.7976931348623157e308", "4.9e-324", "1e309",
    "(1", "(1.5", "[a", "(a", "-", "+", "0.1", "2.5e-5", "123456789.123456789", ".5", "5.",
];
pub const IDS: &[&str] = &[
    "0", "0-0", "0-1", "1-0", "1-1", "1", "5-0", "5-*", "*", "$", ">", "-", "+", "(1-0", "(5", "18446744073709551615-18446744073709551615",
    "18446744073709551615-*", "3-18446744073709551615", "10-5", "1700000000000-0", "1700000000000-*", "1-", "-1", "1-x",
];
pub const KEYWORDS: &[&str] = &[
    "NX", "XX", "GT", "LT", "CH", "INCR", "EX", "PX", "EXAT", "PXAT", "KEEPTTL", "GET", "PERSIST", "COUNT", "MATCH", "TYPE", "WITHSCORES",
    "WITHSCORE", "LIMIT", "BYSCORE", "BYLEX", "REV", "MAXLEN", "MINID", "~", "=", "STREAMS", "GROUP", "NOACK", "BLOCK", "IDLE", "TIME",
    "RETRYCOUNT", "FORCE", "JUSTID", "LASTID", "ENTRIESREAD", "MKSTREAM", "CREATE", "SETID", "DESTROY", "CREATECONSUMER", "DELCONSUMER",
    "CONSUMERS", "GROUPS", "STREAM", "FULL", "NOMKSTREAM", "LEFT", "RIGHT", "BEFORE", "AFTER", "RANK", "MAXLEN", "WEIGHTS", "AGGREGATE",
    "SUM", "MIN", "MAX", "AND", "OR", "XOR", "NOT", "BIT", "BYTE", "OVERFLOW", "WRAP", "SAT", "FAIL", "SET", "INCRBY", "i8", "u4",
    "i64", "u63", "i1", "u1", "i65", "#2", "#0", "DB", "REPLACE", "ABSTTL", "ON", "OFF", "SKIP", "ID", "NAME", "ENCODING", "FREQ", "IDLETIME",
    "REFCOUNT", "HELP", "DOCS", "INFO", "LIST", "GETKEYS", "KEYSLOT", "COUNTKEYSINSLOT", "GETKEYSINSLOT", "NUMSUB", "NUMPAT",
    "CHANNELS", "SHARDCHANNELS", "SETNAME", "ASYNC", "SYNC", "RESETSTAT", "maxmemory", "maxmemory-policy", "allkeys-lru",
    "allkeys-random", "volatile-ttl", "volatile-lru", "allkeys-lfu", "noeviction", "hash-max-listpack-entries",
    "hash-max-listpack-value", "set-max-intset-entries", "zset-max-listpack-entries", "zset-max-listpack-value",
    "list-max-listpack-size", "stream-node-max-entries", "stream-node-max-bytes", "notify-keyspace-events", "KEA", "Ex", "AKE",
    "maxmemory-samples", "hll-sparse-max-bytes", "lfu-log-factor", "maxclients", "timeout", "client-output-buffer-limit", "*", "h?llo", "[a-c]*", "\\", "k*", "2", "3", "RESP3", "AUTH",
    "default", "ch1", "ch*", "__keyspace@0__:*", "string", "hash", "list", "set", "zset", "stream", "ALL", "WITHVALUES", "IDX",
    // SORT / SORT_RO
    "BY", "ALPHA", "ASC", "DESC", "STORE", "nosort", "#", "w_*", "h*->f1", "*->f2", "k:*",
];

/// One client command or a batch-level event.
#[derive(Debug, Clone)]
pub enum Step {
    /// `cmd` indexes `commands()`.
    Cmd { client: u8, cmd: u16, args: Vec<Arg> },
    /// A command whose name is raw bytes (unknown commands, odd casing).
    Raw { client: u8, name: Vec<u8>, args: Vec<Arg> },
    /// Run what is queued as one batch.
    Flush,
    /// Advance the clock (lazy and active expiry, deadlines).
    Sleep(u16),
    /// Active expiry cycle.
    Tick,
    /// The host's deadline for a blocked client fired.
    Unblock(u8),
    Disconnect(u8),
}

#[derive(Debug, Clone)]
pub enum Arg {
    Key(u8),
    Member(u8),
    /// High bit: an entry of `INTS`; else `value - 100`.
    Int(u16),
    Keyword(u16),
    Float(u8),
    Id(u8),
    Bytes(Vec<u8>),
}

const MAX_ARGS: usize = 16;
const MAX_BYTES: usize = 24;

fn u16_le(u: &mut Unstructured<'_>) -> Result<u16> {
    Ok(u16::from_le_bytes([u8::arbitrary(u)?, u8::arbitrary(u)?]))
}

impl<'a> Arbitrary<'a> for Arg {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(match u8::arbitrary(u)? % 8 {
            0 | 7 => Arg::Key(u8::arbitrary(u)?),
            1 => Arg::Member(u8::arbitrary(u)?),
            2 => Arg::Int(u16_le(u)?),
            3 => Arg::Keyword(u16_le(u)?),
            4 => Arg::Float(u8::arbitrary(u)?),
            5 => Arg::Id(u8::arbitrary(u)?),
            _ => {
                let n = (u8::arbitrary(u)? as usize) % (MAX_BYTES + 1);
                Arg::Bytes(u.bytes(n.min(u.len()))?.to_vec())
            }
        })
    }
}

fn args(u: &mut Unstructured<'_>) -> Result<Vec<Arg>> {
    let n = (u8::arbitrary(u)? as usize) % (MAX_ARGS + 1);
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        if u.is_empty() {
            break;
        }
        v.push(Arg::arbitrary(u)?);
    }
    Ok(v)
}

impl<'a> Arbitrary<'a> for Step {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(match u8::arbitrary(u)? % 16 {
            0..=10 => Step::Cmd { client: u8::arbitrary(u)?, cmd: u16_le(u)?, args: args(u)? },
            11 => Step::Flush,
            12 => Step::Sleep(u16_le(u)?),
            13 => Step::Tick,
            14 => Step::Unblock(u8::arbitrary(u)?),
            _ => {
                if u8::arbitrary(u)? & 1 == 0 {
                    Step::Disconnect(u8::arbitrary(u)?)
                } else {
                    let n = (u8::arbitrary(u)? as usize) % 17;
                    let name = u.bytes(n.min(u.len()))?.to_vec();
                    Step::Raw { client: u8::arbitrary(u)?, name, args: args(u)? }
                }
            }
        })
    }
}

/// A whole fuzz input: steps until the data runs out (at most `MAX_STEPS`).
#[derive(Debug, Clone)]
pub struct Steps(pub Vec<Step>);

const MAX_STEPS: usize = 256;

impl<'a> Arbitrary<'a> for Steps {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let mut v = Vec::new();
        while !u.is_empty() && v.len() < MAX_STEPS {
            v.push(Step::arbitrary(u)?);
        }
        Ok(Steps(v))
    }
    fn arbitrary_take_rest(mut u: Unstructured<'a>) -> Result<Self> {
        Self::arbitrary(&mut u)
    }
}

/// A REC_CONFIG payload: one `name value` line for each of `config::HOST_PARAMS`, in order,
/// then one for each other parameter a CONFIG SET changed (each a parameter, once).
fn check_host_config(payload: &[u8]) {
    use memoria_core::server::config::{Config, HOST_PARAMS};
    let text = std::str::from_utf8(payload).expect("config record is UTF-8");
    let names: Vec<&str> = text.lines().map(|l| l.split_once(' ').map_or(l, |(n, _)| n)).collect();
    assert_eq!(&names[..HOST_PARAMS.len().min(names.len())], HOST_PARAMS, "config record names: {text:?}");
    let rest = &names[HOST_PARAMS.len()..];
    for (i, n) in rest.iter().enumerate() {
        assert!(Config::all_names().contains(n) && !HOST_PARAMS.contains(n) && !rest[..i].contains(n), "config record line {n:?}: {text:?}");
    }
    assert!(text.ends_with('\n'), "config record ends with a newline: {text:?}");
}

/// Command names from the table, subcommands as two words, with the total arity of each.
pub fn commands() -> &'static [(Vec<&'static str>, i32)] {
    static C: OnceLock<Vec<(Vec<&'static str>, i32)>> = OnceLock::new();
    C.get_or_init(|| {
        let mut v = Vec::new();
        for c in COMMANDS {
            if c.subcommands.is_empty() {
                v.push((vec![c.name], c.arity));
            } else {
                v.push((vec![c.name], c.arity));
                for s in c.subcommands {
                    let (top, sub) = s.name.split_once('|').unwrap_or((s.name, ""));
                    v.push((vec![top, sub], s.arity));
                }
            }
        }
        v
    })
}

fn keywords() -> &'static [&'static str] {
    static K: OnceLock<Vec<&'static str>> = OnceLock::new();
    K.get_or_init(|| {
        let mut v: Vec<&'static str> = KEYWORDS.to_vec();
        // Command names as arguments: MULTI/EXEC bodies, COMMAND INFO, OBJECT HELP…
        for c in COMMANDS {
            v.push(c.name);
        }
        v
    })
}

fn pick<'s>(t: &[&'s str], i: usize) -> &'s str {
    t[i % t.len()]
}

impl Arg {
    pub fn render(&self) -> Vec<u8> {
        match self {
            Arg::Key(i) => pick(KEYS, *i as usize).into(),
            Arg::Member(i) => pick(MEMBERS, *i as usize).into(),
            Arg::Int(v) if v & 0x8000 != 0 => pick(INTS, (v & 0x7fff) as usize).into(),
            Arg::Int(v) => ((*v as i64 % 1024) - 100).to_string().into_bytes(),
            Arg::Keyword(i) => pick(keywords(), *i as usize).into(),
            Arg::Float(i) => pick(FLOATS, *i as usize).into(),
            Arg::Id(i) => pick(IDS, *i as usize).into(),
            Arg::Bytes(b) => b.clone(),
        }
    }
}

/// The argv a command step sends. Missing arguments (below the command's arity) are
/// filled with keys, so most commands get past the arity check.
pub fn argv(name: &[&[u8]], arity: i32, args: &[Arg]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = name.iter().map(|n| n.to_ascii_uppercase()).collect();
    v.extend(args.iter().map(Arg::render));
    let want = arity.unsigned_abs() as usize;
    let mut i = 0;
    while v.len() < want {
        v.push(pick(KEYS, i).into());
        i += 1;
    }
    v
}

const CLIENTS: u64 = 4;
const START_MS: i64 = 1_700_000_000_000;
/// maxmemory stays on (and small) so a huge SETRANGE/SETBIT offset is refused instead of
/// allocating hundreds of MB; CONFIG SET may lower it to reach eviction.
const MAX_MEMORY: u64 = 64 << 20;

fn probe() -> usize {
    crate::memory_in_use()
}

struct Run {
    e: Engine,
    index: CommandIndex,
    now_ms: i64,
    batches: u64,
    effects: Vec<u8>,
}

/// The client that sends SCRIPT KILL and FUNCTION KILL (not one of the steps' clients).
const KILLER: u64 = 1 << 40;

impl Run {
    fn execute(&mut self, b: &mut BatchWriter) {
        if b.is_empty() {
            return;
        }
        let c = &mut self.e.st.config;
        if c.maxmemory == 0 || c.maxmemory > MAX_MEMORY {
            c.maxmemory = MAX_MEMORY;
        }
        self.batches += 1;
        let mut out = self.e.execute(&b.buf, self.now_ms * 1000, self.batches);
        // A script that yields goes on as the host resumes it; every few slices an
        // operator's SCRIPT KILL and FUNCTION KILL come (from a client of their own).
        let mut slices = 0u32;
        while batch::suspended(&out).is_some() {
            slices += 1;
            if slices % 4 == 0 {
                let mut kill = BatchWriter::new();
                for cmd in [["SCRIPT", "KILL"], ["FUNCTION", "KILL"]] {
                    kill.begin(batch::REC_COMMAND, KILLER);
                    memoria_core::protocol::resp::encode_command(&mut kill.buf, &cmd);
                    kill.end();
                }
                let answers = self.e.execute(&kill.buf, self.now_ms * 1000, self.batches);
                self.check_output(&answers, 2);
            }
            if slices > 64 {
                // A script that wrote cannot be killed: it runs on, and the engine answers
                // -BUSY from here on, which the later steps check.
                b.clear();
                return;
            }
            out = self.e.resume(self.now_ms * 1000);
        }
        self.check_output(&out, b.records);
        for rec in OutputReader::new(&out) {
            self.effects.extend_from_slice(rec.effects);
        }
        b.clear();
    }

    fn check_output(&self, out: &[u8], inputs: usize) {
        let mut len = 0;
        let mut answers = 0;
        for rec in OutputReader::new(out) {
            len += 18 + rec.reply.len() + rec.effects.len();
            if !batch::is_extra(rec.kind) {
                answers += 1;
            }
            // Not replies: what the host must do for the command before it.
            let payload_ok = match rec.kind {
                batch::REC_WAIT => Some(batch::WaitRequest::decode(rec.reply).is_some()),
                batch::REC_SAVE => Some(matches!(rec.reply, [0..=2])),
                batch::REC_FAILOVER | batch::REC_SHUTDOWN | batch::REC_KILL => Some(rec.reply.is_empty()),
                _ => None,
            };
            if let Some(ok) = payload_ok {
                assert!(ok, "malformed host request record (kind {}): {:?}", rec.kind, rec.reply);
                assert!(rec.effects.is_empty() && rec.flags == 0, "effects or flags on a host request record");
                continue;
            }
            if rec.kind == batch::REC_CONFIG {
                // Not a reply: the host parameters' current values after a CONFIG SET.
                check_host_config(rec.reply);
                assert!(rec.effects.is_empty(), "effects on a config record");
                continue;
            }
            if rec.kind == batch::REC_PUSH {
                assert!(!rec.reply.is_empty(), "empty push record");
            }
            if rec.flags & batch::OUT_BLOCKED != 0 {
                assert_eq!(rec.reply.len(), 8, "a blocked record carries its deadline");
            } else if rec.flags & batch::OUT_DEFERRED != 0 {
                assert!(rec.reply.is_empty() && rec.effects.is_empty(), "a deferred command ran");
            } else if let Err(e) = crate::reply::check(rec.reply) {
                panic!("malformed reply ({e}): {:?}", String::from_utf8_lossy(rec.reply));
            }
            if rec.kind != batch::REC_PUSH {
                assert_eq!(rec.flags & batch::OUT_WRITE != 0, !rec.effects.is_empty(), "OUT_WRITE and effects disagree (kind {})", rec.kind);
            }
            let mut fx = EffectReader::new(rec.effects);
            for f in fx.by_ref() {
                assert!((f.db as usize) < memoria_core::server::state::MAX_DBS, "effect in db {}", f.db);
                let mut a = Vec::new();
                memoria_core::protocol::resp::read_command(f.command, &mut a);
                let argv: Vec<&[u8]> = a.iter().map(|&(x, y)| &f.command[x..y]).collect();
                let spec = self.index.resolve(&argv);
                assert!(spec.is_some(), "effect names an unknown command: {:?}", String::from_utf8_lossy(f.command));
            }
            assert!(fx.at_end(), "malformed effects: {:?}", String::from_utf8_lossy(rec.effects));
        }
        assert_eq!(len, out.len(), "output records do not cover the output");
        assert_eq!(answers, inputs, "{inputs} input records got {answers} answers");
    }
}

pub fn run(steps: &Steps) {
    let mut r = Run { e: Engine::new(42), index: memoria_core::commands::table::index(), now_ms: START_MS, batches: 0, effects: Vec::new() };
    r.e.set_memory_probe(probe);
    let cmds = commands();
    let mut b = BatchWriter::new();
    for s in &steps.0 {
        match s {
            Step::Cmd { client, cmd, args } => {
                let (name, arity) = &cmds[*cmd as usize % cmds.len()];
                let name: Vec<&[u8]> = name.iter().map(|n| n.as_bytes()).collect();
                b.begin(batch::REC_COMMAND, 1 + *client as u64 % CLIENTS);
                memoria_core::protocol::resp::encode_command(&mut b.buf, &argv(&name, *arity, args));
                b.end();
            }
            Step::Raw { client, name, args } => {
                let mut v = vec![name.clone()];
                v.extend(args.iter().map(Arg::render));
                b.begin(batch::REC_COMMAND, 1 + *client as u64 % CLIENTS);
                memoria_core::protocol::resp::encode_command(&mut b.buf, &v);
                b.end();
            }
            Step::Flush => r.execute(&mut b),
            Step::Sleep(ms) => {
                r.execute(&mut b);
                r.now_ms += (*ms % 5000) as i64;
            }
            Step::Tick => b.record(batch::REC_TICK, 0, b""),
            Step::Unblock(c) => b.record(batch::REC_UNBLOCK, 1 + *c as u64 % CLIENTS, b""),
            Step::Disconnect(c) => b.record(batch::REC_DISCONNECT, 1 + *c as u64 % CLIENTS, b""),
        }
    }
    r.execute(&mut b);

    let digest = r.e.digest();
    let mut replica = Engine::new(99);
    // The replica applies later than the primary ran: expiry is the primary's decision.
    if let Err(e) = replica.apply(&r.effects, (r.now_ms + 1_000_000) * 1000) {
        panic!("replaying the effects failed: {e}\neffects: {}", effect_lines(&r.effects));
    }
    assert!(replica.digest() == digest, "replayed effects give another data set\neffects: {}", effect_lines(&r.effects));

    let mut restored = Engine::new(7);
    let (mut db, mut cursor) = (0, 0);
    loop {
        let chunk = r.e.dump(db, cursor, 256);
        if let Err(e) = restored.load(&chunk.data) {
            panic!("a dumped chunk does not load: {e}");
        }
        if chunk.done {
            break;
        }
        (db, cursor) = (chunk.next_db, chunk.next_cursor);
    }
    assert!(restored.digest() == digest, "a snapshot restores another data set");
    assert_eq!(restored.total_keys(), r.e.total_keys(), "a snapshot restores another key count");
}

/// Effects as readable lines for failure messages.
pub fn effect_lines(fx: &[u8]) -> String {
    let mut s = String::new();
    for f in EffectReader::new(fx) {
        let mut a = Vec::new();
        memoria_core::protocol::resp::read_command(f.command, &mut a);
        let parts: Vec<String> = a.iter().map(|&(x, y)| String::from_utf8_lossy(&f.command[x..y]).into_owned()).collect();
        s.push_str(&format!("\n  {}: {}", f.db, parts.join(" ")));
    }
    s
}

/// Encodes steps back into the bytes `Steps::arbitrary` decodes (for the seed corpus).
pub fn encode(steps: &[Step]) -> Vec<u8> {
    let mut o = Vec::new();
    let args_enc = |o: &mut Vec<u8>, args: &[Arg]| {
        o.push(args.len() as u8);
        for a in args {
            match a {
                Arg::Key(i) => o.extend([0, *i]),
                Arg::Member(i) => o.extend([1, *i]),
                Arg::Int(v) => {
                    o.push(2);
                    o.extend(v.to_le_bytes());
                }
                Arg::Keyword(v) => {
                    o.push(3);
                    o.extend(v.to_le_bytes());
                }
                Arg::Float(i) => o.extend([4, *i]),
                Arg::Id(i) => o.extend([5, *i]),
                Arg::Bytes(b) => {
                    o.extend([6, b.len() as u8]);
                    o.extend_from_slice(b);
                }
            }
        }
    };
    for s in steps {
        match s {
            Step::Cmd { client, cmd, args } => {
                o.extend([0, *client]);
                o.extend(cmd.to_le_bytes());
                args_enc(&mut o, args);
            }
            Step::Raw { client, name, args } => {
                o.extend([15, 1, name.len() as u8]);
                o.extend_from_slice(name);
                o.push(*client);
                args_enc(&mut o, args);
            }
            Step::Flush => o.push(11),
            Step::Sleep(ms) => {
                o.push(12);
                o.extend(ms.to_le_bytes());
            }
            Step::Tick => o.push(13),
            Step::Unblock(c) => o.extend([14, *c]),
            Step::Disconnect(c) => o.extend([15, 0, *c]),
        }
    }
    o
}

/// Parses "SET a 1 PX 10" into a step of client `client`, mapping each word to the
/// dictionary entry that renders it (raw bytes otherwise).
pub fn parse_line(client: u8, line: &str) -> Step {
    let words: Vec<&str> = line.split(' ').filter(|w| !w.is_empty()).collect();
    let cmds = commands();
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    let find = |n: usize| cmds.iter().position(|(name, _)| name.len() == n && name.iter().zip(&lower).all(|(a, b)| a == b));
    let (cmd, used) = match find(2).map(|i| (i, 2)).or_else(|| find(1).map(|i| (i, 1))) {
        Some(x) => x,
        None => {
            let args = words[1..].iter().map(|w| arg_for(w)).collect();
            return Step::Raw { client, name: words[0].as_bytes().to_vec(), args };
        }
    };
    let args = words[used..].iter().map(|w| arg_for(w)).collect();
    Step::Cmd { client, cmd: cmd as u16, args }
}

fn arg_for(w: &str) -> Arg {
    let pos = |t: &[&str]| t.iter().position(|x| *x == w);
    if let Some(i) = pos(KEYS) {
        return Arg::Key(i as u8);
    }
    if let Some(i) = pos(MEMBERS) {
        return Arg::Member(i as u8);
    }
    if let Ok(v) = w.parse::<i64>()
        && (-100..924).contains(&v)
        && v.to_string() == w
    {
        return Arg::Int((v + 100) as u16);
    }
    if let Some(i) = pos(INTS) {
        return Arg::Int(0x8000 | i as u16);
    }
    if let Some(i) = keywords().iter().position(|x| *x == w) {
        return Arg::Keyword(i as u16);
    }
    if let Some(i) = pos(FLOATS) {
        return Arg::Float(i as u8);
    }
    if let Some(i) = pos(IDS) {
        return Arg::Id(i as u8);
    }
    Arg::Bytes(w.as_bytes().to_vec())
}
