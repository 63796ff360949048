//! A linearizability checker for histories of GET/SET/INCR/APPEND on string registers.
//!
//! The algorithm is Wing & Gong's search as improved by Lowe ("Testing for
//! linearizability", 2017) and used by Porcupine: walk the history's call/return entries
//! in time order; linearize any pending call whose effect the model accepts, lifting the
//! call and its return out of a doubly linked list (so undoing is O(1)); when the next
//! entry is a return whose call is not linearized yet, backtrack. A cache of
//! (set of linearized operations, register state) pairs already explored prunes the search
//! — the same set and state can only lead to the same futures.
//!
//! P-compositionality (Herlihy & Wing): a history is linearizable iff its restriction to
//! every object is. Each key is an independent register and every operation touches one
//! key, so each key is checked on its own: small searches instead of one huge one.
//!
//! Outcomes (see [`crate::history`]): Failed operations had no effect and are dropped, as
//! are reads that did not return (they changed nothing and showed nothing). An Unknown
//! write is given an infinite return time and accepts any result: it may be linearized
//! anywhere after its invocation, and linearizing it last is the same as never.
//!
//! The search is exponential in the worst case, so it runs under a [`Budget`] and says
//! [`Verdict::BudgetExceeded`] rather than hanging.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::time::{Duration, Instant};

use crate::history::{ERR_NOT_INTEGER, ERR_OVERFLOW, History, Op, Operation, Outcome, Ret, show};

/// A register's value: `None` when the key does not exist.
pub type State = Option<Vec<u8>>;

/// The model: applies `op` to `state`. `ret` is what the client heard (`None` for an
/// Unknown operation: any result is acceptable). Returns the new state if the result is
/// the one Redis would give from `state`, `None` if it is impossible.
pub fn step(state: &State, op: &Op, ret: Option<&Ret>) -> Option<State> {
    let (expect, next) = apply(state, op);
    match ret {
        Some(r) if *r != expect => None,
        _ => Some(next),
    }
}

/// What Redis replies to `op` on `state`, and the state after it.
pub fn apply(state: &State, op: &Op) -> (Ret, State) {
    match op {
        Op::Get { .. } => (state.as_ref().map_or(Ret::Nil, |v| Ret::Bulk(v.clone())), state.clone()),
        Op::Set { val, .. } => (Ret::Ok, Some(val.clone())),
        Op::Incr { .. } => {
            let cur = match state {
                None => Some(0),
                Some(v) => parse_redis_i64(v),
            };
            match cur {
                None => (Ret::Err(ERR_NOT_INTEGER.into()), state.clone()),
                Some(n) => match n.checked_add(1) {
                    None => (Ret::Err(ERR_OVERFLOW.into()), state.clone()),
                    Some(m) => (Ret::Int(m), Some(m.to_string().into_bytes())),
                },
            }
        }
        Op::Append { val, .. } => {
            let mut v = state.clone().unwrap_or_default();
            v.extend_from_slice(val);
            (Ret::Int(v.len() as i64), Some(v))
        }
    }
}

/// Redis's string2ll, written here from its definition rather than shared with the engine
/// (a model that reuses the code under test would hide that code's bugs): an optional '-',
/// then digits without a leading zero ("0" alone is fine, "-0" is not), within i64.
pub fn parse_redis_i64(b: &[u8]) -> Option<i64> {
    let (neg, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits[0] == b'0' && (digits.len() > 1 || neg) {
        return None;
    }
    // Accumulate negatively so i64::MIN parses.
    let mut n: i64 = 0;
    for &d in digits {
        n = n.checked_mul(10)?.checked_sub((d - b'0') as i64)?;
    }
    if neg { Some(n) } else { n.checked_neg() }
}

/// Limits on the search.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Search steps (entries visited) per key before giving up on that key.
    pub max_steps_per_key: u64,
    /// Wall-clock limit for the whole check; keys not finished by then are BudgetExceeded.
    pub time_limit: Option<Duration>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { max_steps_per_key: 20_000_000, time_limit: Some(Duration::from_secs(120)) }
    }
}

/// The result for one key.
#[derive(Clone, Debug)]
pub enum Verdict {
    Linearizable,
    Violation(Box<Violation>),
    /// Unknown: search budget exceeded (the history may or may not be linearizable).
    BudgetExceeded {
        steps: u64,
    },
}

/// Why one key's history is not linearizable.
#[derive(Clone, Debug)]
pub struct Violation {
    pub key: Vec<u8>,
    /// The longest linearization the search found, in order, with the state after each op.
    pub longest: Vec<(Operation, State)>,
    /// Operations that could come next after `longest` in real-time order, none of which
    /// the model accepts from that state (with what the model would have replied).
    pub stuck: Vec<(Operation, Ret)>,
    /// A short prefix of the key's history (in invocation order) that is already not
    /// linearizable.
    pub offending_prefix: Vec<Operation>,
    /// The heart of it: operations of that prefix whose results contradict each other.
    /// Every other write of the prefix could have had any result at any time after its
    /// invocation, or no effect (and the other reads could be left out), and it would
    /// still not be linearizable. Usually "an acknowledged write, then a read that missed
    /// it". Best effort, within a budget: None when not found (or for violating keys after
    /// the first few).
    pub core: Option<Vec<Operation>>,
}

/// Per-key results of a whole history.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// (key, operations checked for it, verdict), in key order.
    pub keys: Vec<(Vec<u8>, usize, Verdict)>,
}

impl Report {
    /// True if every key was checked and is linearizable.
    pub fn is_linearizable(&self) -> bool {
        self.keys.iter().all(|(_, _, v)| matches!(v, Verdict::Linearizable))
    }

    pub fn violations(&self) -> Vec<&Violation> {
        self.keys
            .iter()
            .filter_map(|(_, _, v)| match v {
                Verdict::Violation(x) => Some(&**x),
                _ => None,
            })
            .collect()
    }

    /// Keys the search gave up on.
    pub fn undecided(&self) -> Vec<&[u8]> {
        self.keys.iter().filter(|(_, _, v)| matches!(v, Verdict::BudgetExceeded { .. })).map(|(k, _, _)| k.as_slice()).collect()
    }
}

/// Checks a whole history, key by key.
pub fn check(h: &History, budget: Budget) -> Report {
    let deadline = budget.time_limit.map(|d| Instant::now() + d);
    let mut by_key: BTreeMap<&[u8], Vec<&Operation>> = BTreeMap::new();
    for o in &h.ops {
        by_key.entry(o.op.key()).or_default().push(o);
    }
    let mut report = Report::default();
    for (key, ops) in by_key {
        let ops: Vec<Operation> = ops.into_iter().cloned().collect();
        let n = relevant(&ops).len();
        let explain = report.violations().len() < EXPLAIN_KEYS;
        report.keys.push((key.to_vec(), n, check_key(key, &ops, budget.max_steps_per_key, deadline, explain)));
    }
    report
}

/// After a failure, lost writes usually break many keys the same way: the core (the
/// costly part of a report) is worked out for this many.
const EXPLAIN_KEYS: usize = 3;

/// Checks the operations of one key (all must be on `key`); `explain` computes the core of
/// a violation.
pub fn check_key(key: &[u8], ops: &[Operation], max_steps: u64, deadline: Option<Instant>, explain: bool) -> Verdict {
    let rel = relevant(ops);
    match search(&rel, max_steps, deadline) {
        Search::Ok => Verdict::Linearizable,
        Search::Budget(steps) => Verdict::BudgetExceeded { steps },
        Search::Fail(best) => {
            let longest = replay(&rel, &best);
            let stuck = stuck(&rel, &best, longest.last().and_then(|(_, s)| s.clone()));
            let offending_prefix = shortest_failing_prefix(&rel, max_steps, deadline);
            let core = if explain { core_of(&offending_prefix, max_steps, deadline) } else { None };
            Verdict::Violation(Box::new(Violation { key: key.to_vec(), longest, stuck, offending_prefix, core }))
        }
    }
}

/// The operations the search must account for: Failed ones had no effect; a read that did
/// not return showed nothing and changed nothing.
fn relevant(ops: &[Operation]) -> Vec<Operation> {
    ops.iter()
        .filter(|o| match o.outcome {
            Outcome::Ok(_) => true,
            Outcome::Failed(_) => false,
            Outcome::Unknown(_) => !o.op.is_read(),
        })
        .cloned()
        .collect()
}

fn ret_of(o: &Operation) -> Option<&Ret> {
    match &o.outcome {
        Outcome::Ok(r) => Some(r),
        _ => None,
    }
}

enum Search {
    Ok,
    /// Not linearizable; the deepest linearization found (operation indices, in order).
    Fail(Vec<usize>),
    Budget(u64),
}

const HEAD: usize = 0;

/// The call/return entries as a doubly linked list over arrays; node 0 is the head,
/// node 2n+1 the tail sentinel.
struct Entries {
    next: Vec<usize>,
    prev: Vec<usize>,
    /// For a node: (operation index, is_call).
    what: Vec<(usize, bool)>,
    /// A call node's return node.
    ret_node: Vec<usize>,
}

impl Entries {
    fn new(ops: &[Operation]) -> Self {
        let n = ops.len();
        // (time, calls before returns at equal times: equal means concurrent, op index).
        let mut ev: Vec<(u64, u8, usize)> = Vec::with_capacity(2 * n);
        for (i, o) in ops.iter().enumerate() {
            ev.push((o.invoke_ns, 0, i));
            ev.push((o.effective_return(), 1, i));
        }
        ev.sort_unstable();
        let tail = 2 * n + 1;
        let mut what = vec![(usize::MAX, false); 2 * n + 2];
        let mut ret_node = vec![0; 2 * n + 2];
        let mut call_node = vec![0; n];
        for (j, &(_, kind, i)) in ev.iter().enumerate() {
            what[j + 1] = (i, kind == 0);
            if kind == 0 {
                call_node[i] = j + 1;
            }
        }
        for (j, &(_, kind, i)) in ev.iter().enumerate() {
            if kind == 1 {
                ret_node[call_node[i]] = j + 1;
            }
        }
        let next = (0..=tail).map(|j| if j == tail { tail } else { j + 1 }).collect();
        let prev = (0..=tail).map(|j| j.saturating_sub(1)).collect();
        Entries { next, prev, what, ret_node }
    }

    fn unlink(&mut self, j: usize) {
        let (p, n) = (self.prev[j], self.next[j]);
        self.next[p] = n;
        self.prev[n] = p;
    }

    fn relink(&mut self, j: usize) {
        let (p, n) = (self.prev[j], self.next[j]);
        self.next[p] = j;
        self.prev[n] = j;
    }

    /// Takes a call and its return out of the list.
    fn lift(&mut self, call: usize) {
        self.unlink(call);
        self.unlink(self.ret_node[call]);
    }

    /// Undoes `lift` (in reverse order, so the saved neighbours are valid again).
    fn unlift(&mut self, call: usize) {
        self.relink(self.ret_node[call]);
        self.relink(call);
    }
}

fn search(ops: &[Operation], max_steps: u64, deadline: Option<Instant>) -> Search {
    search_counting(ops, max_steps, deadline).0
}

/// The search, also saying how many steps it took.
fn search_counting(ops: &[Operation], max_steps: u64, deadline: Option<Instant>) -> (Search, u64) {
    let n = ops.len();
    let tail = 2 * n + 1;
    let mut e = Entries::new(ops);
    let words = n.div_ceil(64).max(1);
    let mut linearized = vec![0u64; words];
    let mut cache: HashSet<(Vec<u64>, State)> = HashSet::new();
    // The stack of linearized calls, with the state before each.
    let mut calls: Vec<(usize, State)> = Vec::new();
    let mut state: State = None;
    let mut best: Vec<usize> = Vec::new();
    let mut steps: u64 = 0;
    let mut entry = e.next[HEAD];
    while e.next[HEAD] != tail {
        steps += 1;
        if steps > max_steps || (steps.is_multiple_of(4096) && deadline.is_some_and(|d| Instant::now() > d)) {
            return (Search::Budget(steps), steps);
        }
        let (i, is_call) = e.what[entry];
        if entry != tail && is_call {
            if let Some(ns) = step(&state, &ops[i].op, ret_of(&ops[i])) {
                let mut nl = linearized.clone();
                nl[i / 64] |= 1 << (i % 64);
                if !cache.contains(&(nl.clone(), ns.clone())) {
                    cache.insert((nl.clone(), ns.clone()));
                    calls.push((entry, std::mem::replace(&mut state, ns)));
                    linearized = nl;
                    e.lift(entry);
                    if calls.len() > best.len() {
                        best = calls.iter().map(|&(c, _)| e.what[c].0).collect();
                    }
                    entry = e.next[HEAD];
                    continue;
                }
            }
            entry = e.next[entry];
        } else {
            // A return (or the end) whose call is not linearized: undo the last choice.
            let Some((c, s)) = calls.pop() else {
                return (Search::Fail(best), steps);
            };
            state = s;
            let ci = e.what[c].0;
            linearized[ci / 64] &= !(1 << (ci % 64));
            e.unlift(c);
            entry = e.next[c];
        }
    }
    (Search::Ok, steps)
}

/// The states along a linearization.
fn replay(ops: &[Operation], order: &[usize]) -> Vec<(Operation, State)> {
    let mut state: State = None;
    let mut out = Vec::new();
    for &i in order {
        state = apply(&state, &ops[i].op).1;
        out.push((ops[i].clone(), state.clone()));
    }
    out
}

/// After the deepest linearization: the operations that real-time order lets come next
/// (no unlinearized operation returned before they were invoked), with the model's reply.
fn stuck(ops: &[Operation], done: &[usize], state: State) -> Vec<(Operation, Ret)> {
    let mut taken = vec![false; ops.len()];
    for &i in done {
        taken[i] = true;
    }
    let first_return = (0..ops.len()).filter(|&i| !taken[i]).map(|i| ops[i].effective_return()).min().unwrap_or(u64::MAX);
    (0..ops.len()).filter(|&i| !taken[i] && ops[i].invoke_ns <= first_return).map(|i| (ops[i].clone(), apply(&state, &ops[i].op).0)).collect()
}

/// The shortest prefix (in invocation order) found not linearizable, by bisection. Adding
/// operations can make a prefix linearizable again (a read may see a write invoked after
/// it), so this is not always the shortest, but every prefix returned is checked to fail.
fn shortest_failing_prefix(ops: &[Operation], max_steps: u64, deadline: Option<Instant>) -> Vec<Operation> {
    let mut sorted: Vec<Operation> = ops.to_vec();
    sorted.sort_by_key(|o| (o.invoke_ns, o.client));
    let (mut lo, mut hi) = (0usize, sorted.len());
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        match search(&sorted[..mid], max_steps, deadline) {
            Search::Fail(_) => hi = mid,
            _ => lo = mid,
        }
    }
    sorted.truncate(hi);
    sorted
}

/// Shrinks a failing history to operations whose results contradict each other.
///
/// Weakening an operation only adds linearizations, so if the weakened history still
/// fails, that operation's result is not needed for the violation, and it stays weakened:
/// a read is dropped, an acknowledged write becomes Unknown (any result, any time after
/// its invocation, or never). Weakened writes cannot be dropped instead: that would rule
/// out their landing, and a lone read of "5" fails too, which says nothing. But every
/// Unknown INCR or APPEND multiplies the states a failing search must rule out (they do
/// not commute), so the probes share a budget; once it runs out the remaining writes keep
/// their results (a larger core, never a wrong one), and a core too large to help is not
/// reported (None). Writes are weakened oldest first, so those kept are the ones closest
/// to the violation.
fn core_of(ops: &[Operation], max_steps: u64, deadline: Option<Instant>) -> Option<Vec<Operation>> {
    // A core longer than this explains nothing the longest linearization does not.
    const MAX_CORE: usize = 12;
    let mut left = max_steps.min(200_000);
    let mut fails = |h: &[Operation]| -> Option<bool> {
        let (r, steps) = search_counting(h, left, deadline);
        left = left.saturating_sub(steps);
        match r {
            Search::Fail(_) => Some(true),
            Search::Ok => Some(false),
            Search::Budget(_) => None,
        }
    };
    let mut cur: Vec<Operation> = ops.to_vec();
    // Reads first: dropping them adds no Unknowns, so these probes stay cheap.
    let mut i = 0;
    while i < cur.len() {
        if cur[i].op.is_read() {
            let mut weaker = cur.clone();
            weaker.remove(i);
            match fails(&weaker) {
                Some(true) => {
                    cur = weaker;
                    continue;
                }
                Some(false) => {}
                None => return None,
            }
        }
        i += 1;
    }
    for i in 0..cur.len() {
        if cur[i].op.is_read() || !matches!(cur[i].outcome, Outcome::Ok(_)) {
            continue;
        }
        let mut weaker = cur.clone();
        weaker[i].outcome = Outcome::Unknown("weakened".into());
        match fails(&weaker) {
            Some(true) => cur = weaker,
            Some(false) => {}
            None => break,
        }
    }
    let core: Vec<Operation> = cur.into_iter().filter(|o| matches!(o.outcome, Outcome::Ok(_))).collect();
    (core.len() <= MAX_CORE).then_some(core)
}

/// At most this many operations of a list are printed in full.
const SHOW: usize = 40;

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "key {} is not linearizable", show(&self.key))?;
        if let Some(core) = &self.core {
            writeln!(f, "  core ({} ops whose results contradict each other, whatever the other writes did):", core.len())?;
            for o in core.iter().take(SHOW) {
                writeln!(f, "    {o}")?;
            }
        }
        writeln!(f, "  shortest failing prefix found ({} ops, invocation order):", self.offending_prefix.len())?;
        let skip = self.offending_prefix.len().saturating_sub(SHOW);
        if skip > 0 {
            writeln!(f, "    … {skip} earlier ops")?;
        }
        for o in &self.offending_prefix[skip..] {
            writeln!(f, "    {o}")?;
        }
        writeln!(f, "  longest linearization found ({} ops; state after each):", self.longest.len())?;
        let skip = self.longest.len().saturating_sub(SHOW / 2);
        if skip > 0 {
            writeln!(f, "    … {skip} earlier ops")?;
        }
        for (o, s) in &self.longest[skip..] {
            writeln!(f, "    {o}    => {}", s.as_ref().map_or("nil".to_string(), |v| show(v)))?;
        }
        writeln!(f, "  none of these can come next (the model's reply from that state in brackets):")?;
        for (o, r) in self.stuck.iter().take(SHOW) {
            writeln!(f, "    {o}    [model: {r}]")?;
        }
        Ok(())
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ops: usize = self.keys.iter().map(|(_, n, _)| n).sum();
        let bad = self.violations().len();
        let undecided = self.undecided().len();
        writeln!(
            f,
            "{} keys, {ops} operations checked: {} linearizable, {bad} violations, {undecided} undecided",
            self.keys.len(),
            self.keys.len() - bad - undecided
        )?;
        for (k, n, v) in &self.keys {
            match v {
                Verdict::Linearizable => {}
                Verdict::Violation(x) => write!(f, "{x}")?,
                Verdict::BudgetExceeded { steps } => writeln!(f, "key {} ({n} ops): unknown: search budget exceeded after {steps} steps", show(k))?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shorthand: (client, invoke, return, op, outcome).
    fn o(client: u32, invoke_ns: u64, return_ns: u64, op: Op, outcome: Outcome) -> Operation {
        Operation { client, op, invoke_ns, return_ns, outcome }
    }
    fn k() -> Vec<u8> {
        b"k".to_vec()
    }
    fn set(v: &str) -> Op {
        Op::Set { key: k(), val: v.into() }
    }
    fn get() -> Op {
        Op::Get { key: k() }
    }
    fn incr() -> Op {
        Op::Incr { key: k() }
    }
    fn append(v: &str) -> Op {
        Op::Append { key: k(), val: v.into() }
    }
    fn ok() -> Outcome {
        Outcome::Ok(Ret::Ok)
    }
    fn val(v: &str) -> Outcome {
        Outcome::Ok(Ret::Bulk(v.into()))
    }
    fn nil() -> Outcome {
        Outcome::Ok(Ret::Nil)
    }
    fn int(i: i64) -> Outcome {
        Outcome::Ok(Ret::Int(i))
    }
    fn unknown() -> Outcome {
        Outcome::Unknown("connection reset".into())
    }
    fn failed() -> Outcome {
        Outcome::Failed("READONLY".into())
    }
    fn run(ops: Vec<Operation>) -> Report {
        check(&History { ops }, Budget::default())
    }

    #[test]
    fn redis_integer_parsing() {
        assert_eq!(parse_redis_i64(b"0"), Some(0));
        assert_eq!(parse_redis_i64(b"-12"), Some(-12));
        assert_eq!(parse_redis_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_redis_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [&b""[..], b"-", b"-0", b"01", b"+1", b" 1", b"1 ", b"1a", b"9223372036854775808", b"-9223372036854775809"] {
            assert_eq!(parse_redis_i64(bad), None, "{}", show(bad));
        }
    }

    #[test]
    fn model_matches_redis_semantics() {
        let s = |v: &str| Some(v.as_bytes().to_vec());
        assert_eq!(apply(&None, &incr()), (Ret::Int(1), s("1")));
        assert_eq!(apply(&s("41"), &incr()), (Ret::Int(42), s("42")));
        assert_eq!(apply(&s("4a"), &incr()), (Ret::Err(ERR_NOT_INTEGER.into()), s("4a")));
        assert_eq!(apply(&s("9223372036854775807"), &incr()), (Ret::Err(ERR_OVERFLOW.into()), s("9223372036854775807")));
        assert_eq!(apply(&None, &append("ab")), (Ret::Int(2), s("ab")));
        assert_eq!(apply(&s("12"), &append("3")), (Ret::Int(3), s("123")));
        assert_eq!(apply(&None, &get()), (Ret::Nil, None));
        assert_eq!(apply(&s("x"), &set("y")), (Ret::Ok, s("y")));
    }

    #[test]
    fn sequential_and_concurrent_histories_pass() {
        // Sequential: one client.
        let h = vec![
            o(1, 0, 1, set("5"), ok()),
            o(1, 2, 3, incr(), int(6)),
            o(1, 4, 5, append("x"), int(2)),
            o(1, 6, 7, incr(), Outcome::Ok(Ret::Err(ERR_NOT_INTEGER.into()))),
            o(1, 8, 9, get(), val("6x")),
        ];
        assert!(run(h).is_linearizable());
        // Concurrent: a read overlapping a write may see either value.
        for seen in [nil(), val("a")] {
            let h = vec![o(1, 0, 10, set("a"), ok()), o(2, 1, 5, get(), seen)];
            assert!(run(h).is_linearizable());
        }
        // Two reads overlapping one write: the first sees the new value, the second
        // (invoked later, but still during the write) the new one too.
        let h = vec![o(1, 0, 100, set("a"), ok()), o(2, 1, 5, get(), val("a")), o(3, 6, 9, get(), val("a"))];
        assert!(run(h).is_linearizable());
        // Two concurrent INCRs returning 1 and 2, in either order of invocation.
        let h = vec![o(1, 0, 10, incr(), int(2)), o(2, 1, 9, incr(), int(1)), o(3, 11, 12, get(), val("2"))];
        assert!(run(h).is_linearizable());
        // Keys are independent.
        let h = vec![o(1, 0, 1, Op::Set { key: b"a".to_vec(), val: b"1".to_vec() }, ok()), o(1, 2, 3, Op::Get { key: b"b".to_vec() }, nil())];
        assert!(run(h).is_linearizable());
    }

    #[test]
    fn stale_read_after_acknowledged_write() {
        let h = vec![o(1, 0, 1, set("a"), ok()), o(1, 2, 3, set("b"), ok()), o(2, 4, 5, get(), val("a"))];
        let r = run(h);
        assert!(!r.is_linearizable());
        let v = &r.violations()[0];
        assert_eq!(v.key, b"k");
        // The report names the stale read and what the register held.
        assert!(v.stuck.iter().any(|(op, model)| op.op == get() && *model == Ret::Bulk(b"b".to_vec())), "{v}");
        assert_eq!(v.offending_prefix.len(), 3);
        // All three are needed: without the first SET's timing, "a" could have come last.
        assert_eq!(v.core.as_ref().unwrap().len(), 3, "{v}");
        let text = r.to_string();
        assert!(text.contains("GET k -> a") && text.contains("[model: b]"), "{text}");
    }

    #[test]
    fn lost_acknowledged_write() {
        // SET acknowledged, later reads see nothing (the write was lost in a crash).
        let h = vec![o(1, 0, 1, set("a"), ok()), o(2, 10, 11, get(), nil())];
        assert!(!run(h).is_linearizable());
        // An acknowledged INCR lost: the counter goes back.
        let h = vec![o(1, 0, 1, incr(), int(1)), o(1, 2, 3, incr(), int(2)), o(2, 4, 5, incr(), int(2))];
        assert!(!run(h).is_linearizable());
        // Among much else, the core names the write that was lost and the read that missed it.
        let mut h = vec![o(9, 0, 1, set("1"), ok())];
        for i in 0..8u64 {
            h.push(o(1, 10 * i + 2, 10 * i + 9, if i % 2 == 0 { incr() } else { append("7") }, Outcome::Ok(Ret::Int(0))));
            h.push(o(2, 10 * i + 3, 10 * i + 4, get(), Outcome::Ok(Ret::Bulk(b"?".to_vec()))));
            if i % 3 == 0 {
                h.push(o(3, 10 * i + 5, 10 * i + 6, append("x"), unknown()));
            }
        }
        // Replace the guessed results above by the ones a register gives (sequential here,
        // with the unknown appends never applied).
        let mut st: State = None;
        for op in h.iter_mut() {
            if let Outcome::Ok(r) = &mut op.outcome {
                let (reply, next) = apply(&st, &op.op);
                *r = reply;
                st = next;
            }
        }
        h.push(o(4, 1000, 1001, get(), nil()));
        let r = run(h.clone());
        let v = r.violations()[0];
        let last_write = h.iter().rev().find(|x| !x.op.is_read() && matches!(x.outcome, Outcome::Ok(_))).unwrap();
        // The core keeps the writes closest to the read (how many depends on when the
        // weakening runs out of budget: Unknown INCRs and APPENDs do not commute).
        let core = v.core.as_ref().unwrap();
        assert!(core.len() <= 5 && core.contains(last_write) && core.last() == h.last(), "{v}");
        let h = vec![
            o(1, 0, 1, set("1"), ok()),
            o(1, 2, 3, set("2"), ok()),
            o(2, 2, 3, set("x"), unknown()),
            o(1, 4, 5, set("3"), ok()),
            o(3, 4, 5, get(), val("3")),
            o(1, 6, 7, set("4"), ok()),
            o(3, 8, 9, get(), nil()),
        ];
        let r = run(h.clone());
        assert_eq!(r.violations()[0].core, Some(vec![h[5].clone(), h[6].clone()]));
        // With many more writes the weakening runs out of budget: no core then, but still
        // the longest linearization and the read that cannot come next.
        let mut big = h[..h.len() - 1].to_vec();
        for i in 8..40u64 {
            big.push(o(3, 10 * i + 5, 10 * i + 6, set(&i.to_string()), ok()));
        }
        big.push(o(4, 1000, 1001, get(), nil()));
        let r = run(big.clone());
        let v = r.violations()[0];
        if let Some(core) = &v.core {
            assert!(core.ends_with(&big[big.len() - 2..]), "{v}");
        }
        assert_eq!(v.stuck.iter().map(|(x, _)| x).collect::<Vec<_>>(), vec![big.last().unwrap()], "{v}");
    }

    #[test]
    fn concurrent_incrs_returning_the_same_value() {
        let h = vec![o(1, 0, 10, incr(), int(1)), o(2, 1, 9, incr(), int(1))];
        let r = run(h);
        assert!(!r.is_linearizable(), "{r}");
    }

    #[test]
    fn read_of_a_value_never_written() {
        let h = vec![o(1, 0, 10, set("a"), ok()), o(2, 1, 5, get(), val("z"))];
        assert!(!run(h).is_linearizable());
        // APPEND's length must match what was appended to.
        let h = vec![o(1, 0, 1, set("abc"), ok()), o(1, 2, 3, append("d"), int(2))];
        assert!(!run(h).is_linearizable());
    }

    #[test]
    fn incr_errors_are_results_the_model_predicts() {
        // INCR on a non-integer replies an error: fine.
        let e = || Outcome::Ok(Ret::Err(ERR_NOT_INTEGER.into()));
        assert!(run(vec![o(1, 0, 1, set("x"), ok()), o(1, 2, 3, incr(), e())]).is_linearizable());
        // ... but not on an integer: that is a violation, not a transient error.
        assert!(!run(vec![o(1, 0, 1, set("7"), ok()), o(1, 2, 3, incr(), e())]).is_linearizable());
        // APPEND can make an integer of a non-integer's prefix: "1" + "2" = "12".
        assert!(run(vec![o(1, 0, 1, set("1"), ok()), o(1, 2, 3, append("2"), int(2)), o(1, 4, 5, incr(), int(13))]).is_linearizable());
    }

    #[test]
    fn unknown_writes_may_apply_late_or_never() {
        // Never applied.
        let h = vec![o(1, 0, 1, set("a"), ok()), o(2, 2, 3, set("b"), unknown()), o(3, 10, 11, get(), val("a"))];
        assert!(run(h).is_linearizable());
        // Applied, long after its client gave up.
        let h = vec![o(1, 0, 1, set("a"), ok()), o(2, 2, 3, set("b"), unknown()), o(3, 10, 11, get(), val("a")), o(3, 12, 13, get(), val("b"))];
        assert!(run(h).is_linearizable());
        // But never before it was invoked.
        let h = vec![o(1, 0, 1, set("a"), ok()), o(3, 2, 3, get(), val("b")), o(2, 5, 6, set("b"), unknown())];
        assert!(!run(h).is_linearizable());
        // And at most once: an unknown INCR cannot explain two increments.
        let h = vec![o(1, 0, 1, incr(), int(1)), o(2, 2, 3, incr(), unknown()), o(1, 4, 5, incr(), int(4))];
        assert!(!run(h).is_linearizable());
        // Failed writes never apply.
        let h = vec![o(1, 0, 1, set("a"), ok()), o(2, 2, 3, set("b"), failed()), o(3, 10, 11, get(), val("b"))];
        assert!(!run(h).is_linearizable());
        // Reads that did not return are ignored, whatever they were.
        let h = vec![o(1, 0, 1, set("a"), ok()), o(2, 2, 3, get(), unknown()), o(2, 4, 5, get(), failed())];
        assert!(run(h).is_linearizable());
    }

    #[test]
    fn budget_exceeded_is_reported_not_hung() {
        // Many concurrent unknown appends make the search space explode.
        let mut h = Vec::new();
        for c in 0..40u32 {
            h.push(o(c, c as u64, c as u64 + 1, append(&format!("{c},")), unknown()));
        }
        h.push(o(99, 100, 101, get(), val("impossible")));
        let r = check(&History { ops: h }, Budget { max_steps_per_key: 10_000, time_limit: None });
        assert!(matches!(r.keys[0].2, Verdict::BudgetExceeded { .. }), "{r}");
        assert_eq!(r.undecided(), vec![&b"k"[..]]);
        assert!(r.to_string().contains("unknown: search budget exceeded"));
    }

    #[test]
    fn many_operations_check_quickly() {
        // A long sequential counter with overlapping readers: the cache keeps it linear-ish.
        let mut h = Vec::new();
        for i in 0..3000u64 {
            h.push(o(1, 10 * i, 10 * i + 5, incr(), int(i as i64 + 1)));
            h.push(o(2, 10 * i + 1, 10 * i + 12, get(), val(&(i + 1).to_string())));
        }
        let r = check(&History { ops: h }, Budget { max_steps_per_key: 1_000_000, time_limit: None });
        assert!(r.is_linearizable(), "{r}");
    }

    // ---- cross-check against brute force ----

    use proptest::prelude::*;
    use proptest::strategy::ValueTree;

    /// The definition, searched exhaustively with no cache and no partitioning: some order
    /// of all Ok operations plus any subset of the Unknown writes, respecting real time
    /// (a before b when a is Ok and returned before b was invoked), that the model accepts.
    fn brute_force(h: &History) -> bool {
        let ops: Vec<&Operation> =
            h.ops.iter().filter(|o| matches!(o.outcome, Outcome::Ok(_)) || matches!(o.outcome, Outcome::Unknown(_)) && !o.op.is_read()).collect();
        fn go(ops: &[&Operation], placed: &mut Vec<bool>, state: &BTreeMap<Vec<u8>, Vec<u8>>) -> bool {
            let all_ok_placed = ops.iter().zip(placed.iter()).all(|(o, &p)| p || matches!(o.outcome, Outcome::Unknown(_)));
            if all_ok_placed {
                return true;
            }
            for i in 0..ops.len() {
                if placed[i] {
                    continue;
                }
                let blocked = (0..ops.len()).any(|j| j != i && !placed[j] && matches!(ops[j].outcome, Outcome::Ok(_)) && ops[j].return_ns < ops[i].invoke_ns);
                if blocked {
                    continue;
                }
                let key = ops[i].op.key().to_vec();
                let cur = state.get(&key).cloned();
                if let Some(next) = step(&cur, &ops[i].op, ret_of(ops[i])) {
                    let mut st = state.clone();
                    match next {
                        Some(v) => st.insert(key, v),
                        None => st.remove(&key),
                    };
                    placed[i] = true;
                    if go(ops, placed, &st) {
                        return true;
                    }
                    placed[i] = false;
                }
            }
            false
        }
        go(&ops, &mut vec![false; ops.len()], &BTreeMap::new())
    }

    /// One generated operation: client, key, kind, value choice, gap before invoke,
    /// invoke→linearization point, linearization point→return, outcome roll, applied.
    type Spec = (u32, u8, u8, u8, u64, u64, u64, u8, bool);

    const SET_VALS: [&str; 5] = ["1", "x", "9223372036854775806", "-3", ""];
    const APPEND_VALS: [&str; 3] = ["1", "a", ""];

    /// A history from a linearizable register: each client runs its operations one after
    /// another; each takes effect at a point between its invocation and its return (small
    /// integer times, so ties are common), and outputs are what the register gave there.
    /// Some writes become Unknown (applied or not) or Failed (not applied).
    fn simulate(specs: &[Spec]) -> History {
        let mut clock = [0u64; 3];
        // (linearization point, spec index, op, invoke, return, outcome kind)
        let mut planned = Vec::new();
        for (idx, &(c, key, kind, v, gap, d1, d2, roll, applied)) in specs.iter().enumerate() {
            let key = vec![b'a' + key];
            let op = match kind {
                0 => Op::Get { key },
                1 => Op::Set { key, val: SET_VALS[v as usize % SET_VALS.len()].into() },
                2 => Op::Incr { key },
                _ => Op::Append { key, val: APPEND_VALS[v as usize % APPEND_VALS.len()].into() },
            };
            let invoke = clock[c as usize] + gap;
            let lin = invoke + d1;
            let ret = lin + d2;
            clock[c as usize] = ret + 1;
            // 0 ok, 1 unknown, 2 failed (reads are only ever ok here: others are dropped).
            let class = if op.is_read() {
                0
            } else if roll < 15 {
                1
            } else if roll < 20 {
                2
            } else {
                0
            };
            let takes_effect = class == 0 || class == 1 && applied;
            planned.push((lin, idx, op, invoke, ret, c, class, takes_effect));
        }
        planned.sort_by_key(|p| (p.0, p.1));
        let mut regs: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut h = History::new();
        for (_, _, op, invoke, ret, c, class, takes_effect) in planned {
            let key = op.key().to_vec();
            let cur = regs.get(&key).cloned();
            let (reply, next) = apply(&cur, &op);
            if takes_effect {
                match next {
                    Some(v) => regs.insert(key, v),
                    None => regs.remove(&key),
                };
            }
            let outcome = match class {
                0 => Outcome::Ok(reply),
                1 => Outcome::Unknown("simulated".into()),
                _ => Outcome::Failed("simulated".into()),
            };
            h.push(Operation { client: c, op, invoke_ns: invoke, return_ns: ret, outcome });
        }
        h
    }

    /// Perturbs one operation: its result, its timing, or its outcome class.
    fn mutate(h: &mut History, which: usize, how: u8, amount: u64) {
        if h.ops.is_empty() {
            return;
        }
        let i = which % h.ops.len();
        let o = &mut h.ops[i];
        match how % 6 {
            0 => {
                o.outcome = match &o.outcome {
                    Outcome::Ok(Ret::Int(n)) => Outcome::Ok(Ret::Int(n + if amount.is_multiple_of(2) { 1 } else { -1 })),
                    Outcome::Ok(Ret::Bulk(_)) => Outcome::Ok(Ret::Nil),
                    Outcome::Ok(Ret::Nil) => Outcome::Ok(Ret::Bulk(b"1".to_vec())),
                    Outcome::Ok(Ret::Ok) => Outcome::Ok(Ret::Int(0)),
                    other => other.clone(),
                }
            }
            1 => {
                // Return earlier (still after invoke).
                o.return_ns = o.invoke_ns + (o.return_ns - o.invoke_ns) / (amount + 1);
            }
            2 => {
                // Invoke later (still before return).
                o.invoke_ns = (o.invoke_ns + amount).min(o.return_ns);
            }
            3 => {
                // Shift the whole operation in time.
                o.invoke_ns += amount;
                o.return_ns += amount;
            }
            4 => {
                // An Unknown turns out Ok with a guessed result; an Ok write becomes Failed.
                o.outcome = match &o.outcome {
                    Outcome::Unknown(_) => Outcome::Ok(if amount.is_multiple_of(2) { Ret::Ok } else { Ret::Int(amount as i64) }),
                    Outcome::Ok(_) if !o.op.is_read() => Outcome::Failed("mutated".into()),
                    other => other.clone(),
                }
            }
            _ => {
                // Read a value from SET_VALS that may never have been written.
                if let Op::Get { .. } = o.op {
                    o.outcome = Outcome::Ok(Ret::Bulk(SET_VALS[amount as usize % SET_VALS.len()].into()));
                }
            }
        }
    }

    fn spec() -> impl Strategy<Value = Spec> {
        (0..3u32, 0..2u8, 0..4u8, 0..5u8, 0..3u64, 0..3u64, 0..3u64, 0..100u8, any::<bool>())
    }

    fn cases() -> u32 {
        std::env::var("MEMORIA_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

        /// Histories of a linearizable register pass both checkers.
        #[test]
        fn simulated_register_is_linearizable(specs in proptest::collection::vec(spec(), 1..12)) {
            let h = simulate(&specs);
            let r = check(&h, Budget { max_steps_per_key: 1_000_000, time_limit: None });
            prop_assert!(r.is_linearizable(), "{}\n{}", h.to_text(), r);
            if h.len() <= 8 {
                prop_assert!(brute_force(&h), "{}", h.to_text());
            }
        }

        /// On tiny mutated histories the checker and brute force agree exactly.
        #[test]
        fn checker_agrees_with_brute_force(
            specs in proptest::collection::vec(spec(), 1..10),
            muts in proptest::collection::vec((any::<usize>(), 0..6u8, 0..4u64), 0..3),
        ) {
            let mut h = simulate(&specs);
            for (w, how, amount) in muts {
                mutate(&mut h, w, how, amount);
            }
            let r = check(&h, Budget { max_steps_per_key: 1_000_000, time_limit: None });
            prop_assert!(r.undecided().is_empty());
            let bf = brute_force(&h);
            prop_assert_eq!(r.is_linearizable(), bf, "{}\n{}", h.to_text(), r);
        }
    }

    /// The mutations do produce violations, so the agreement above is not vacuous.
    #[test]
    fn mutations_produce_both_verdicts() {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strat = (proptest::collection::vec(spec(), 1..8), any::<usize>(), 0..6u8, 0..4u64);
        let (mut yes, mut no) = (0, 0);
        for _ in 0..500 {
            let (specs, w, how, amount) = strat.new_tree(&mut runner).unwrap().current();
            let mut h = simulate(&specs);
            mutate(&mut h, w, how, amount);
            if brute_force(&h) { yes += 1 } else { no += 1 }
        }
        assert!(yes > 50 && no > 50, "linearizable {yes}, not {no}");
    }
}
