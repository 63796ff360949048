//! Online slot migration as a pure state machine. What happens next is a function of
//! what the three logs hold (the cluster log and the source and target shard logs), so a
//! crash of the source, the target or the coordinator (`memoria reshard`) at any step
//! loses nothing: whoever resumes reads the logs and goes on. No clock of its own: the
//! coordinator's retries take the time as an argument, so tests drive it with simulated
//! time and injected faults.
//!
//! The protocol is forward-only, like Redis's (once a key may have moved, the move
//! completes; there is no abort that could lose what the target acknowledged):
//!
//! 1. cluster log `Start { plan }`: the source's primary serves the slots as MIGRATING (a
//!    missing key gets `-ASK` to the target), the target's as IMPORTING (with `ASKING`).
//! 2. batches, until the source holds no key of the slots:
//!    a. source log `Lock { batch, keys }`: those keys (with their values) answer
//!       `-TRYAGAIN` at the source from here on (not `-ASK`: the target may not have them);
//!    b. target log `Import { batch, keys }`: the values replace whatever the target
//!       holds (a retried batch is idempotent);
//!    c. source log `Release { batch }`: the keys are deleted at the source; requests for
//!       them now go to the target with `-ASK`.
//!    No key is ever writable in two places: the source refuses locked keys, and a client
//!    reaches the target only for a key the source does not hold.
//! 3. the two-phase commit of the ownership:
//!    a. source log `Prepare`: it holds no key of the slots and takes none (`-ASK` for all);
//!    b. target log `Prepare`: it holds every key;
//!    c. cluster log `Commit`: the decision, and the only place the slot map changes, so
//!       the slots have exactly one owner at any time;
//!    d. source log `Commit`, target log `Commit`: both sides drop the migration state (the
//!       target serves the slots without ASKING; the source sends `-MOVED`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// A key with its value, as the engine exports it (opaque here).
pub type KeyValue = (Vec<u8>, Vec<u8>);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub id: u64,
    /// Inclusive slot ranges.
    pub slots: Vec<(u16, u16)>,
    pub from: u16,
    pub to: u16,
}

impl Plan {
    pub fn has_slot(&self, s: u16) -> bool {
        self.slots.iter().any(|&(a, b)| a <= s && s <= b)
    }

    pub fn slot_count(&self) -> usize {
        self.slots.iter().map(|&(a, b)| (b - a) as usize + 1).sum()
    }
}

/// One migration record, in whichever log it belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Record {
    /// Cluster log.
    Start { plan: Plan },
    /// Source log.
    Lock { id: u64, batch: u64, keys: Vec<KeyValue> },
    /// Target log.
    Import { id: u64, batch: u64, keys: Vec<KeyValue> },
    /// Source log.
    Release { id: u64, batch: u64 },
    /// Source and target logs.
    Prepare { id: u64 },
    /// Cluster log (the decision), then source and target logs.
    Commit { id: u64 },
}

impl Record {
    pub fn id(&self) -> u64 {
        match self {
            Record::Start { plan } => plan.id,
            Record::Lock { id, .. } | Record::Import { id, .. } | Record::Release { id, .. } | Record::Prepare { id } | Record::Commit { id } => *id,
        }
    }

    pub fn kind(&self) -> memoria_log::Kind {
        use memoria_log::Kind;
        match self {
            Record::Start { .. } | Record::Lock { .. } | Record::Import { .. } | Record::Release { .. } => Kind::MigrationStart,
            Record::Prepare { .. } => Kind::MigrationPrepare,
            Record::Commit { .. } => Kind::MigrationCommit,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("migration records encode")
    }

    pub fn decode(b: &[u8]) -> Option<Record> {
        serde_json::from_slice(b).ok()
    }
}

/// What the three logs say about one migration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct View {
    pub plan: Option<Plan>,
    pub decided: bool,
    /// Source: batches locked and not released, with their keys.
    pub locked: BTreeMap<u64, Vec<KeyValue>>,
    pub released: BTreeSet<u64>,
    pub imported: BTreeSet<u64>,
    pub source_prepared: bool,
    pub target_prepared: bool,
    pub source_committed: bool,
    pub target_committed: bool,
    /// The highest batch number used so far.
    pub last_batch: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Log {
    Cluster,
    Source,
    Target,
}

impl View {
    /// Folds the records of migration `id` from the three logs (in each log's order).
    pub fn from_logs<'a>(id: u64, cluster: impl IntoIterator<Item = &'a Record>, source: impl IntoIterator<Item = &'a Record>, target: impl IntoIterator<Item = &'a Record>) -> View {
        let mut v = View::default();
        for r in cluster.into_iter().filter(|r| r.id() == id) {
            v.fold(Log::Cluster, r);
        }
        for r in source.into_iter().filter(|r| r.id() == id) {
            v.fold(Log::Source, r);
        }
        for r in target.into_iter().filter(|r| r.id() == id) {
            v.fold(Log::Target, r);
        }
        v
    }

    pub fn fold(&mut self, log: Log, r: &Record) {
        match (log, r) {
            (Log::Cluster, Record::Start { plan }) => self.plan = Some(plan.clone()),
            (Log::Cluster, Record::Commit { .. }) => self.decided = true,
            (Log::Source, Record::Lock { batch, keys, .. }) => {
                self.last_batch = self.last_batch.max(*batch);
                if !self.released.contains(batch) {
                    self.locked.insert(*batch, keys.clone());
                }
            }
            (Log::Source, Record::Release { batch, .. }) => {
                self.locked.remove(batch);
                self.released.insert(*batch);
            }
            (Log::Target, Record::Import { batch, .. }) => {
                self.last_batch = self.last_batch.max(*batch);
                self.imported.insert(*batch);
            }
            (Log::Source, Record::Prepare { .. }) => self.source_prepared = true,
            (Log::Target, Record::Prepare { .. }) => self.target_prepared = true,
            (Log::Source, Record::Commit { .. }) => self.source_committed = true,
            (Log::Target, Record::Commit { .. }) => self.target_committed = true,
            _ => {}
        }
    }

    pub fn done(&self) -> bool {
        self.decided && self.source_committed && self.target_committed
    }
}

/// The coordinator's next step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Append `Start` to the cluster log.
    Start,
    /// The source locks up to `max` keys of the slots as batch `batch` (in its engine,
    /// then its log). Only when it still holds some.
    Lock { batch: u64 },
    /// The target imports locked batch `batch` (its keys are in the source log's `Lock`).
    Import { batch: u64 },
    /// The source deletes the keys of imported batch `batch`.
    Release { batch: u64 },
    PrepareSource,
    PrepareTarget,
    /// Append `Commit` to the cluster log (and the slot map's change with it).
    Decide,
    CommitSource,
    CommitTarget,
    Done,
}

/// What to do next, given the logs and how many keys of the slots the source still holds
/// outside locked batches.
pub fn next_step(v: &View, source_unlocked_keys: usize) -> Step {
    if v.plan.is_none() {
        return Step::Start;
    }
    if v.decided {
        return if !v.source_committed {
            Step::CommitSource
        } else if !v.target_committed {
            Step::CommitTarget
        } else {
            Step::Done
        };
    }
    // A locked batch is finished before anything else (its keys answer -TRYAGAIN).
    if let Some((&batch, _)) = v.locked.iter().next() {
        return if v.imported.contains(&batch) { Step::Release { batch } } else { Step::Import { batch } };
    }
    if !v.source_prepared && source_unlocked_keys > 0 {
        return Step::Lock { batch: v.last_batch + 1 };
    }
    if !v.source_prepared {
        return Step::PrepareSource;
    }
    if !v.target_prepared {
        return Step::PrepareTarget;
    }
    Step::Decide
}

/// How a node routes a request for a key of a migrating slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Serve,
    /// `-ASK slot target`.
    Ask,
    /// `-TRYAGAIN` (the key is in flight).
    TryAgain,
    /// `-MOVED slot owner`.
    Moved,
}

/// The source primary's answer for a key of the plan's slots (`exists`: it holds the key;
/// `locked`: it is in a locked batch).
pub fn source_route(v: &View, exists: bool, locked: bool) -> Route {
    if v.decided || v.source_committed {
        return Route::Moved;
    }
    if locked {
        return Route::TryAgain;
    }
    if v.source_prepared || !exists {
        return Route::Ask;
    }
    Route::Serve
}

/// The target primary's answer (`asking`: the client sent ASKING first).
pub fn target_route(v: &View, asking: bool) -> Route {
    if v.decided {
        return Route::Serve;
    }
    if asking { Route::Serve } else { Route::Moved }
}

/// Retries of a failed step with a growing pause (simulated or real milliseconds).
#[derive(Clone, Debug)]
pub struct Retry {
    pub next_at: u64,
    pub pause: u64,
    pub failures: u32,
}

impl Retry {
    pub const FIRST: u64 = 50;
    pub const MAX: u64 = 2000;

    pub fn new() -> Retry {
        Retry { next_at: 0, pause: Self::FIRST, failures: 0 }
    }

    pub fn ready(&self, now_ms: u64) -> bool {
        now_ms >= self.next_at
    }

    pub fn failed(&mut self, now_ms: u64) {
        self.failures += 1;
        self.next_at = now_ms + self.pause;
        self.pause = (self.pause * 2).min(Self::MAX);
    }

    pub fn succeeded(&mut self) {
        self.pause = Self::FIRST;
        self.failures = 0;
    }
}

impl Default for Retry {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests;
