//! Histories of concurrent operations on string registers, as clients saw them.
//!
//! Each [`Operation`] is one command of one client (a client runs one command at a time):
//! what it asked, when it asked (`invoke_ns`), when it heard back (`return_ns`), and what
//! it heard ([`Outcome`]). Times are monotonic nanoseconds from one shared [`Clock`], so
//! "a returned before b was invoked" is meaningful across clients.
//!
//! # Ok, Failed and Unknown
//!
//! A linearizability check is only as honest as this classification. The rule: an
//! operation is [`Outcome::Failed`] only when the server *guarantees* it had no effect;
//! anything else that is not a proper reply is [`Outcome::Unknown`] — it may take effect at
//! any time after its invocation, or never (the checker gives it an infinite return time).
//! Calling a failed operation Unknown only weakens the check; calling an applied one Failed
//! makes the checker report violations that did not happen. So: when in doubt, Unknown.
//!
//! Failed (see [`classify_error`]):
//! - the request was never sent (no connection; the driver does not even record these);
//! - error replies that Redis and Memoria give *before* executing the command:
//!   `-READONLY` (a replica refuses client writes in dispatch), `-MOVED`/`-ASK`/
//!   `-TRYAGAIN`/`-CLUSTERDOWN`/`-CROSSSLOT` (routing), `-LOADING`, `-MASTERDOWN`,
//!   `-NOAUTH`/`-NOPERM`, `-OOM` (denyoom check), `-BUSY`, `-NOSCRIPT`, `-EXECABORT`, and
//!   `-ERR unknown command` / `-ERR wrong number of arguments` (arity is checked first).
//!
//! Unknown:
//! - the connection died, or the reply did not come within the client's timeout, after
//!   the first byte of the request was written (the server may have read it; a SIGSTOPped
//!   primary may even execute it much later, after being resumed);
//! - any other error reply to a write. Memoria is write-behind: memory changes first, the
//!   log append follows, the reply is held until the log acknowledges. An error at that
//!   stage ("-ERR write not durable: the log refused it", "-ERR write outcome unknown: this
//!   node stopped being the primary", "-ERR shard engine crashed") means the append's fate
//!   was not (or could not be) settled by this node: it may be in the log, and a new
//!   primary replaying the log would apply it. Only a conflict proves the entry is absent,
//!   and the reply text does not promise which case it was — so Unknown.
//!
//! Ok with an error result: some error replies are the command's *result*, fully
//! determined by the register's state, and the model predicts them: INCR on a value that is
//! not an integer (`ERR value is not an integer or out of range`) or would overflow
//! (`ERR increment or decrement would overflow`). These are `Outcome::Ok(Ret::Err(..))`.
//!
//! A read (GET) that is not Ok has no effect whatever happened, so the checker drops it.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

/// Redis 7.0's INCR reply for a value that is not a 64-bit integer.
pub const ERR_NOT_INTEGER: &str = "ERR value is not an integer or out of range";
/// Redis 7.0's INCR reply when the result would overflow an i64.
pub const ERR_OVERFLOW: &str = "ERR increment or decrement would overflow";

/// A command on one key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Get { key: Vec<u8> },
    Set { key: Vec<u8>, val: Vec<u8> },
    Incr { key: Vec<u8> },
    Append { key: Vec<u8>, val: Vec<u8> },
}

impl Op {
    pub fn key(&self) -> &[u8] {
        match self {
            Op::Get { key } | Op::Set { key, .. } | Op::Incr { key } | Op::Append { key, .. } => key,
        }
    }

    /// True for commands that cannot change the register.
    pub fn is_read(&self) -> bool {
        matches!(self, Op::Get { .. })
    }

    /// The command's arguments as sent on the wire.
    pub fn argv(&self) -> Vec<&[u8]> {
        match self {
            Op::Get { key } => vec![b"GET", key],
            Op::Set { key, val } => vec![b"SET", key, val],
            Op::Incr { key } => vec![b"INCR", key],
            Op::Append { key, val } => vec![b"APPEND", key, val],
        }
    }
}

/// A reply the server gave (only the shapes these four commands produce).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ret {
    /// GET of a missing key.
    Nil,
    /// GET of an existing key.
    Bulk(Vec<u8>),
    /// SET.
    Ok,
    /// INCR's new value, APPEND's new length.
    Int(i64),
    /// An error reply that is the command's deterministic result (text without the '-').
    Err(String),
}

/// How an operation ended, as far as the client can know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The server replied; the reply is the operation's result.
    Ok(Ret),
    /// Definitely had no effect (why, for the report).
    Failed(String),
    /// Sent, but no usable reply: it may take effect at any time after invocation, or never.
    Unknown(String),
}

/// One operation of one client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation {
    pub client: u32,
    pub op: Op,
    /// Monotonic ns, taken just before the request was written.
    pub invoke_ns: u64,
    /// Monotonic ns, taken just after the reply was read (for Unknown: when the client gave
    /// up; the checker treats it as +infinity).
    pub return_ns: u64,
    pub outcome: Outcome,
}

impl Operation {
    /// The return time the checker uses: +infinity for Unknown.
    pub fn effective_return(&self) -> u64 {
        match self.outcome {
            Outcome::Unknown(_) => u64::MAX,
            _ => self.return_ns,
        }
    }
}

/// A whole history (any order; the checker sorts by time).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    pub ops: Vec<Operation>,
}

impl History {
    pub fn new() -> Self {
        History { ops: Vec::new() }
    }

    pub fn push(&mut self, o: Operation) {
        self.ops.push(o);
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Counts of (ok, failed, unknown) operations.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut c = (0, 0, 0);
        for o in &self.ops {
            match o.outcome {
                Outcome::Ok(_) => c.0 += 1,
                Outcome::Failed(_) => c.1 += 1,
                Outcome::Unknown(_) => c.2 += 1,
            }
        }
        c
    }

    /// Writes the history as text, one operation per line, in invocation order (for a
    /// failed drill's artifacts; [`History::parse`] reads it back).
    pub fn to_text(&self) -> String {
        let mut ops: Vec<&Operation> = self.ops.iter().collect();
        ops.sort_by_key(|o| (o.invoke_ns, o.client));
        let mut s = String::new();
        for o in ops {
            s.push_str(&to_line(o));
            s.push('\n');
        }
        s
    }

    /// Reads [`History::to_text`]'s format back.
    pub fn parse(text: &str) -> Result<History, String> {
        let mut h = History::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            h.push(from_line(line).map_err(|e| format!("line {}: {e}", n + 1))?);
        }
        Ok(h)
    }
}

/// The one time base of a run (clones share it).
#[derive(Clone, Debug)]
pub struct Clock {
    base: Arc<Instant>,
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock {
    pub fn new() -> Self {
        Clock { base: Arc::new(Instant::now()) }
    }

    /// Monotonic ns since the clock was made.
    pub fn now_ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }
}

/// Whether an error reply proves the command had no effect (see the module docs).
/// `Some(reason)` means Failed; `None` means the caller must treat it as Unknown (or, for
/// INCR's deterministic errors, as a result: see [`is_result_error`]).
pub fn classify_error(msg: &str) -> Option<String> {
    const NO_EFFECT: [&str; 14] = [
        "READONLY",
        "MOVED",
        "ASK",
        "TRYAGAIN",
        "CLUSTERDOWN",
        "CROSSSLOT",
        "LOADING",
        "MASTERDOWN",
        "NOAUTH",
        "NOPERM",
        "OOM",
        "BUSY",
        "NOSCRIPT",
        "EXECABORT",
    ];
    let code = msg.split(' ').next().unwrap_or("");
    if NO_EFFECT.contains(&code) || msg.starts_with("ERR unknown command") || msg.starts_with("ERR wrong number of arguments") {
        return Some(msg.to_string());
    }
    None
}

/// True if `msg` is an error reply that is the result of `op` given the register's state
/// (the model predicts it).
pub fn is_result_error(op: &Op, msg: &str) -> bool {
    matches!(op, Op::Incr { .. }) && (msg == ERR_NOT_INTEGER || msg == ERR_OVERFLOW)
}

/// Bytes as a readable, unambiguous token: printable ASCII as is, the rest as \xNN
/// (backslash, quote and space escaped too, so a line splits on spaces).
pub fn show(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        match c {
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            0x21..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    if b.is_empty() {
        s.push_str("\"\"");
    }
    s
}

fn unshow(t: &str) -> Result<Vec<u8>, String> {
    if t == "\"\"" {
        return Ok(Vec::new());
    }
    let b = t.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'\\') => out.push(b'\\'),
            Some(b'"') => out.push(b'"'),
            Some(b'x') => {
                let h = t.get(i + 2..i + 4).ok_or("short \\x escape")?;
                out.push(u8::from_str_radix(h, 16).map_err(|e| e.to_string())?);
                i += 2;
            }
            _ => return Err(format!("bad escape in {t}")),
        }
        i += 2;
    }
    Ok(out)
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Get { key } => write!(f, "GET {}", show(key)),
            Op::Set { key, val } => write!(f, "SET {} {}", show(key), show(val)),
            Op::Incr { key } => write!(f, "INCR {}", show(key)),
            Op::Append { key, val } => write!(f, "APPEND {} {}", show(key), show(val)),
        }
    }
}

impl fmt::Display for Ret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ret::Nil => write!(f, "nil"),
            Ret::Bulk(v) => write!(f, "{}", show(v)),
            Ret::Ok => write!(f, "OK"),
            Ret::Int(i) => write!(f, "(integer) {i}"),
            Ret::Err(e) => write!(f, "(error) {e}"),
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Ok(r) => write!(f, "{r}"),
            Outcome::Failed(why) => write!(f, "FAILED ({why})"),
            Outcome::Unknown(why) => write!(f, "UNKNOWN ({why})"),
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ret = match self.outcome {
            Outcome::Unknown(_) => "∞".to_string(),
            _ => ms(self.return_ns),
        };
        write!(f, "c{:<3} [{} .. {}] {} -> {}", self.client, ms(self.invoke_ns), ret, self.op, self.outcome)
    }
}

fn ms(ns: u64) -> String {
    format!("{}.{:06}ms", ns / 1_000_000, ns % 1_000_000)
}

// The text format: `client invoke_ns return_ns VERB key [val] -> OUTCOME`, with OUTCOME one
// of `ok nil`, `ok bulk <v>`, `ok OK`, `ok int <n>`, `ok err <text…>`, `failed <text…>`,
// `unknown <text…>`.
fn to_line(o: &Operation) -> String {
    let out = match &o.outcome {
        Outcome::Ok(Ret::Nil) => "ok nil".to_string(),
        Outcome::Ok(Ret::Bulk(v)) => format!("ok bulk {}", show(v)),
        Outcome::Ok(Ret::Ok) => "ok OK".to_string(),
        Outcome::Ok(Ret::Int(i)) => format!("ok int {i}"),
        Outcome::Ok(Ret::Err(e)) => format!("ok err {e}"),
        Outcome::Failed(e) => format!("failed {e}"),
        Outcome::Unknown(e) => format!("unknown {e}"),
    };
    format!("{} {} {} {} -> {}", o.client, o.invoke_ns, o.return_ns, o.op, out.replace('\n', " "))
}

fn from_line(line: &str) -> Result<Operation, String> {
    let (lhs, rhs) = line.split_once(" -> ").ok_or("no ' -> '")?;
    let t: Vec<&str> = lhs.split(' ').collect();
    if t.len() < 5 {
        return Err("too few fields".into());
    }
    let num = |s: &str| s.parse::<u64>().map_err(|e| format!("{s}: {e}"));
    let (client, invoke_ns, return_ns) = (num(t[0])? as u32, num(t[1])?, num(t[2])?);
    let key = unshow(t[4])?;
    let op = match (t[3], t.len()) {
        ("GET", 5) => Op::Get { key },
        ("INCR", 5) => Op::Incr { key },
        ("SET", 6) => Op::Set { key, val: unshow(t[5])? },
        ("APPEND", 6) => Op::Append { key, val: unshow(t[5])? },
        _ => return Err(format!("bad command '{lhs}'")),
    };
    let (kind, rest) = rhs.split_once(' ').unwrap_or((rhs, ""));
    let outcome = match kind {
        "ok" => {
            let (k, v) = rest.split_once(' ').unwrap_or((rest, ""));
            Outcome::Ok(match k {
                "nil" => Ret::Nil,
                "OK" => Ret::Ok,
                "bulk" => Ret::Bulk(unshow(v)?),
                "int" => Ret::Int(v.parse().map_err(|e| format!("{v}: {e}"))?),
                "err" => Ret::Err(v.to_string()),
                _ => return Err(format!("bad result '{rest}'")),
            })
        }
        "failed" => Outcome::Failed(rest.to_string()),
        "unknown" => Outcome::Unknown(rest.to_string()),
        _ => return Err(format!("bad outcome '{rhs}'")),
    };
    Ok(Operation { client, op, invoke_ns, return_ns, outcome })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trip() {
        let mut h = History::new();
        let k = b"k\x00 \"\\".to_vec();
        h.push(Operation { client: 1, op: Op::Set { key: k.clone(), val: b"".to_vec() }, invoke_ns: 5, return_ns: 9, outcome: Outcome::Ok(Ret::Ok) });
        h.push(Operation { client: 2, op: Op::Get { key: k.clone() }, invoke_ns: 6, return_ns: 10, outcome: Outcome::Ok(Ret::Bulk(b"a b\xff".to_vec())) });
        h.push(Operation { client: 3, op: Op::Get { key: k.clone() }, invoke_ns: 7, return_ns: 10, outcome: Outcome::Ok(Ret::Nil) });
        h.push(Operation { client: 1, op: Op::Incr { key: k.clone() }, invoke_ns: 11, return_ns: 12, outcome: Outcome::Ok(Ret::Err(ERR_NOT_INTEGER.into())) });
        h.push(Operation { client: 1, op: Op::Incr { key: k.clone() }, invoke_ns: 13, return_ns: 14, outcome: Outcome::Ok(Ret::Int(-3)) });
        h.push(Operation {
            client: 2,
            op: Op::Append { key: k.clone(), val: b"x".to_vec() },
            invoke_ns: 15,
            return_ns: 20,
            outcome: Outcome::Unknown("timeout".into()),
        });
        h.push(Operation {
            client: 3,
            op: Op::Append { key: k, val: b"y".to_vec() },
            invoke_ns: 16,
            return_ns: 17,
            outcome: Outcome::Failed("READONLY You can't write against a read only replica.".into()),
        });
        let back = History::parse(&h.to_text()).unwrap();
        assert_eq!(back, h);
        assert!(History::parse("1 2 3 DEL k -> ok OK").is_err());
    }

    #[test]
    fn error_classes() {
        assert!(classify_error("READONLY You can't write against a read only replica.").is_some());
        assert!(classify_error("MOVED 3999 127.0.0.1:6381").is_some());
        assert!(classify_error("ERR wrong number of arguments for 'get' command").is_some());
        // Write-behind: the append's fate is not settled by the text.
        assert!(classify_error("ERR write not durable: the log refused it (conflict); reconnect and retry").is_none());
        assert!(classify_error("ERR write outcome unknown: this node stopped being the primary (x); reconnect and retry").is_none());
        let incr = Op::Incr { key: b"k".to_vec() };
        assert!(is_result_error(&incr, ERR_NOT_INTEGER));
        assert!(!is_result_error(&Op::Get { key: b"k".to_vec() }, ERR_NOT_INTEGER));
    }
}
