//! Commands the watchdog had to interrupt ("poison"): a client that re-sends one must not
//! stall its shard again, on this node or (after a failover) on the next.
//!
//! The watchdog interrupts a whole engine call (one batch), so which command of it ran
//! long is not known at once. The rules ([`Strikes`]):
//! - every command of an interrupted batch becomes a suspect;
//! - a batch holding a suspect runs alone: the shard puts no other client's commands in it
//!   (`Shard::take`), so a suspect that comes back is not mixed with innocents again;
//! - a command is refused from then on when it was in an interrupted batch exactly once
//!   and that batch held nothing else, or it was a suspect already (its second strike);
//! - a suspect whose batch runs to the end is cleared.
//!
//! Connections refuse a refused command before it reaches the shard (`conn.rs`), with an
//! error after the client's earlier replies. The list lives in the node's memory; changing
//! `engine-call-timeout` empties it (a limit raised for legitimate long work lets that work
//! run again).

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hasher;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// A command's identity: a hash of its RESP bytes, the same for every client (inline
/// commands are re-encoded as RESP before they are framed).
pub type Fingerprint = u64;

pub fn fingerprint(cmd: &[u8]) -> Fingerprint {
    let mut h = std::hash::DefaultHasher::new();
    h.write(cmd);
    h.finish()
}

/// At most this many suspects are kept; past it they are forgotten (they are only suspects).
const MAX_SUSPECTS: usize = 4096;
/// At most this many refused commands; the oldest goes first.
const MAX_REFUSED: usize = 1024;

/// The strike rules, pure (see the module's comment).
#[derive(Default)]
pub struct Strikes {
    suspects: HashSet<Fingerprint>,
    refused: HashMap<Fingerprint, String>,
    order: VecDeque<Fingerprint>,
}

impl Strikes {
    /// An engine call running `commands` (fingerprint and name, in batch order) was
    /// interrupted. Returns the names of the commands refused from now on.
    pub fn interrupted(&mut self, commands: &[(Fingerprint, String)]) -> Vec<String> {
        let mut count: HashMap<Fingerprint, usize> = HashMap::new();
        for (f, _) in commands {
            *count.entry(*f).or_default() += 1;
        }
        let alone = commands.len() == 1;
        let mut newly = Vec::new();
        for (f, name) in commands {
            let Some(n) = count.remove(f) else { continue };
            // Many copies of one command in a batch: their sum ran long, not one of them.
            if n == 1 && (alone || self.suspects.contains(f)) {
                self.suspects.remove(f);
                if self.refuse(*f, name) {
                    newly.push(name.clone());
                }
            } else {
                self.suspects.insert(*f);
            }
        }
        if self.suspects.len() > MAX_SUSPECTS {
            self.suspects.clear();
        }
        newly
    }

    fn refuse(&mut self, f: Fingerprint, name: &str) -> bool {
        if self.refused.insert(f, name.to_string()).is_some() {
            return false;
        }
        self.order.push_back(f);
        if self.order.len() > MAX_REFUSED
            && let Some(old) = self.order.pop_front()
        {
            self.refused.remove(&old);
        }
        true
    }

    /// A batch holding this command ran to the end: it is not the poison.
    pub fn ran(&mut self, f: Fingerprint) {
        self.suspects.remove(&f);
    }

    pub fn is_suspect(&self, f: Fingerprint) -> bool {
        self.suspects.contains(&f)
    }

    /// The name of the refused command with this fingerprint, if it is one.
    pub fn refuses(&self, f: Fingerprint) -> Option<&str> {
        self.refused.get(&f).map(String::as_str)
    }

    pub fn has_suspects(&self) -> bool {
        !self.suspects.is_empty()
    }

    pub fn refused_count(&self) -> usize {
        self.refused.len()
    }

    pub fn clear(&mut self) {
        *self = Strikes::default();
    }
}

/// The node's poison list: shards strike and isolate, connections refuse. Flags read
/// without a lock keep the hot path free of it while the list is empty.
#[derive(Default)]
pub struct Poison {
    strikes: Mutex<Strikes>,
    any_suspect: AtomicBool,
    any_refused: AtomicBool,
    /// Engine calls the watchdog interrupted (INFO memoria).
    pub interrupts: AtomicU64,
    /// Commands refused because they were poison (INFO memoria).
    pub refusals: AtomicU64,
}

impl Poison {
    fn with<R>(&self, f: impl FnOnce(&mut Strikes) -> R) -> R {
        let mut s = self.strikes.lock().unwrap_or_else(|e| e.into_inner());
        let r = f(&mut s);
        self.any_suspect.store(s.has_suspects(), Relaxed);
        self.any_refused.store(s.refused_count() > 0, Relaxed);
        r
    }

    /// See [`Strikes::interrupted`].
    pub fn interrupted(&self, commands: &[(Fingerprint, String)]) -> Vec<String> {
        self.interrupts.fetch_add(1, Relaxed);
        self.with(|s| s.interrupted(commands))
    }

    /// Whether a shard must look at the commands it batches.
    pub fn has_suspects(&self) -> bool {
        self.any_suspect.load(Relaxed)
    }

    /// The suspects among `fingerprints`.
    pub fn suspects_among(&self, fingerprints: &[Fingerprint]) -> Vec<Fingerprint> {
        self.with(|s| fingerprints.iter().copied().filter(|f| s.is_suspect(*f)).collect())
    }

    /// See [`Strikes::ran`].
    pub fn ran(&self, fingerprints: &[Fingerprint]) {
        self.with(|s| fingerprints.iter().for_each(|f| s.ran(*f)));
    }

    /// The error a connection answers instead of running `cmd`, if `cmd` is refused.
    pub fn refusal(&self, cmd: &[u8]) -> Option<String> {
        if !self.any_refused.load(Relaxed) {
            return None;
        }
        let f = fingerprint(cmd);
        let name = self.with(|s| s.refuses(f).map(str::to_string))?;
        self.refusals.fetch_add(1, Relaxed);
        Some(format!(
            "ERR command refused: this {name} ran past engine-call-timeout before and was interrupted, so it is not run again (see the node's log; changing engine-call-timeout lifts this)"
        ))
    }

    pub fn refused_count(&self) -> usize {
        self.with(|s| s.refused_count())
    }

    /// `engine-call-timeout` changed: what was judged under the old limit is forgotten.
    pub fn clear(&self) {
        self.with(Strikes::clear);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmds(list: &[(u64, &str)]) -> Vec<(Fingerprint, String)> {
        list.iter().map(|(f, n)| (*f, n.to_string())).collect()
    }

    #[test]
    fn a_command_alone_in_an_interrupted_call_is_refused_at_once() {
        let mut s = Strikes::default();
        assert_eq!(s.interrupted(&cmds(&[(7, "KEYS")])), vec!["KEYS".to_string()]);
        assert_eq!(s.refuses(7), Some("KEYS"));
        assert!(!s.has_suspects());
    }

    #[test]
    fn a_suspect_is_refused_on_its_second_strike_and_cleared_when_it_runs() {
        let mut s = Strikes::default();
        assert!(s.interrupted(&cmds(&[(1, "GET"), (2, "SORT"), (3, "PING")])).is_empty());
        assert!(s.is_suspect(1) && s.is_suspect(2) && s.is_suspect(3));
        // GET ran fine in a batch of its own: not the poison.
        s.ran(1);
        assert!(!s.is_suspect(1));
        // SORT comes back (with a command never seen): refused; the other is now a suspect.
        assert_eq!(s.interrupted(&cmds(&[(4, "SET"), (2, "SORT")])), vec!["SORT".to_string()]);
        assert_eq!(s.refuses(2), Some("SORT"));
        assert!(s.is_suspect(4) && s.refuses(4).is_none());
        assert!(s.is_suspect(3));
    }

    #[test]
    fn many_copies_of_one_command_are_never_refused() {
        let mut s = Strikes::default();
        let batch = cmds(&[(5, "SORT"), (5, "SORT"), (5, "SORT")]);
        assert!(s.interrupted(&batch).is_empty());
        assert!(s.interrupted(&batch).is_empty());
        assert!(s.refuses(5).is_none() && s.is_suspect(5));
    }

    #[test]
    fn the_lists_are_bounded() {
        let mut s = Strikes::default();
        for f in 0..(MAX_REFUSED as u64 + 10) {
            s.interrupted(&cmds(&[(f, "X")]));
        }
        assert_eq!(s.refused_count(), MAX_REFUSED);
        assert!(s.refuses(0).is_none() && s.refuses(MAX_REFUSED as u64 + 9).is_some());
        let many: Vec<(Fingerprint, String)> = (0..MAX_SUSPECTS as u64 + 1).map(|f| (f + 1_000_000, "Y".to_string())).collect();
        s.interrupted(&many);
        assert!(!s.has_suspects());
    }

    #[test]
    fn the_node_list_answers_redis_style_errors_and_clears() {
        let p = Poison::default();
        assert!(p.refusal(b"*1\r\n$4\r\nKEYS\r\n").is_none());
        p.interrupted(&[(fingerprint(b"*1\r\n$4\r\nKEYS\r\n"), "KEYS".into())]);
        let e = p.refusal(b"*1\r\n$4\r\nKEYS\r\n").unwrap();
        assert!(e.starts_with("ERR command refused: this KEYS ran past engine-call-timeout"), "{e}");
        assert!(p.refusal(b"*1\r\n$4\r\nPING\r\n").is_none());
        assert_eq!((p.interrupts.load(Relaxed), p.refusals.load(Relaxed)), (1, 1));
        p.clear();
        assert!(p.refusal(b"*1\r\n$4\r\nKEYS\r\n").is_none());
    }
}
