//! The migration protocol against a model of the three logs, with clients writing and
//! reading the moving keys between every step, steps that fail (the append never lands)
//! or land unseen (the coordinator crashes after the append), duplicated imports, and
//! simulated time for the retries. Every shard's memory is its log replayed, so a crash of
//! a shard at any step is the model's normal case: nothing but the logs survives.
//! Checks: every acknowledged write is read back at every point, every request
//! eventually succeeds, the slot has one owner at every point, and at the end every key
//! is at the target and none at the source.

use std::collections::{BTreeMap, BTreeSet};

use super::*;

/// A shard log: client writes (None deletes) and migration records.
#[derive(Clone, Debug)]
enum E {
    Data(Vec<u8>, Option<Vec<u8>>),
    Mig(Record),
}

#[derive(Default)]
struct World {
    cluster: Vec<Record>,
    source: Vec<E>,
    target: Vec<E>,
    /// Last acknowledged value per key (None: deleted), as the ledger keeps it.
    ledger: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    now: u64,
    tryagains: u64,
    asks: u64,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const ID: u64 = 7;

fn plan() -> Plan {
    Plan { id: ID, slots: vec![(100, 199)], from: 0, to: 1 }
}

/// A shard's memory: its log replayed.
fn store(log: &[E]) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    let mut batches: BTreeMap<u64, Vec<Vec<u8>>> = BTreeMap::new();
    for e in log {
        match e {
            E::Data(k, Some(v)) => {
                m.insert(k.clone(), v.clone());
            }
            E::Data(k, None) => {
                m.remove(k);
            }
            E::Mig(Record::Lock { batch, keys, .. }) => {
                batches.insert(*batch, keys.iter().map(|(k, _)| k.clone()).collect());
            }
            E::Mig(Record::Release { batch, .. }) => {
                for k in batches.remove(batch).unwrap_or_default() {
                    m.remove(&k);
                }
            }
            E::Mig(Record::Import { keys, .. }) => {
                for (k, v) in keys {
                    m.insert(k.clone(), v.clone());
                }
            }
            _ => {}
        }
    }
    m
}

fn records(log: &[E]) -> Vec<Record> {
    log.iter().filter_map(|e| if let E::Mig(r) = e { Some(r.clone()) } else { None }).collect()
}

impl World {
    fn view(&self) -> View {
        let (s, t) = (records(&self.source), records(&self.target));
        View::from_logs(ID, &self.cluster, &s, &t)
    }

    fn locked_keys(&self, v: &View) -> BTreeSet<Vec<u8>> {
        v.locked.values().flatten().map(|(k, _)| k.clone()).collect()
    }

    /// The owner by the slot map: the source until the cluster log commits.
    fn owner_is_target(&self) -> bool {
        self.cluster.iter().any(|r| matches!(r, Record::Commit { id } if *id == ID))
    }

    /// One client request, following redirections as a cluster client does. Returns the
    /// value read (for a read) or None if it must be retried later (TRYAGAIN).
    fn request(&mut self, key: &[u8], write: Option<Option<Vec<u8>>>) -> Option<Option<Vec<u8>>> {
        let v = self.view();
        let mut at_target = self.owner_is_target();
        let mut asking = false;
        for _hop in 0..4 {
            let route = if at_target {
                target_route(&v, asking)
            } else {
                let exists = store(&self.source).contains_key(key);
                source_route(&v, exists, self.locked_keys(&v).contains(key))
            };
            match route {
                Route::Serve => {
                    let log = if at_target { &mut self.target } else { &mut self.source };
                    return Some(match write {
                        Some(val) => {
                            log.push(E::Data(key.to_vec(), val.clone()));
                            self.ledger.insert(key.to_vec(), val);
                            None
                        }
                        None => store(log).get(key).cloned(),
                    });
                }
                Route::Ask => {
                    self.asks += 1;
                    at_target = true;
                    asking = true;
                }
                Route::Moved => {
                    at_target = !at_target;
                    asking = false;
                }
                Route::TryAgain => {
                    self.tryagains += 1;
                    return None;
                }
            }
        }
        panic!("redirection loop for {key:?}: {v:?}");
    }

    fn clients(&mut self, rng: &mut Rng, n: usize, keys: u64) {
        for _ in 0..n {
            let key = format!("{{k{}}}", rng.below(keys)).into_bytes();
            let write = match rng.below(4) {
                0 => Some(None),
                1 | 2 => Some(Some(format!("v{}", rng.next() % 1000).into_bytes())),
                _ => None,
            };
            // A client retries TRYAGAIN until it succeeds (here: after a pause).
            let mut tries = 0;
            loop {
                match self.request(&key, write.clone()) {
                    Some(read) => {
                        if write.is_none() {
                            let want = self.ledger.get(&key).cloned().flatten();
                            assert_eq!(read, want, "read of {:?} at {:?}", String::from_utf8_lossy(&key), self.view());
                        }
                        break;
                    }
                    None => {
                        tries += 1;
                        assert!(tries < 3, "a request kept getting TRYAGAIN");
                        // In flight: the coordinator finishes the batch before anything else.
                        self.advance_one(rng, false);
                    }
                }
            }
        }
    }

    /// Carries out one coordinator step. `faults`: the append may fail (nothing lands) or
    /// land unseen (the coordinator crashes right after; whoever resumes reads the logs).
    fn advance_one(&mut self, rng: &mut Rng, faults: bool) -> Step {
        let v = self.view();
        let locked = self.locked_keys(&v);
        let src = store(&self.source);
        let unlocked: Vec<(Vec<u8>, Vec<u8>)> = src.iter().filter(|(k, _)| !locked.contains(*k)).map(|(k, v)| (k.clone(), v.clone())).collect();
        let step = next_step(&v, unlocked.len());
        if faults && rng.below(5) == 0 {
            // The append failed, or this process died before it: nothing changed.
            self.now += 50;
            return step;
        }
        match &step {
            Step::Start => self.cluster.push(Record::Start { plan: plan() }),
            Step::Lock { batch } => {
                let n = 1 + rng.below(4) as usize;
                let keys: Vec<KeyValue> = unlocked.into_iter().take(n).collect();
                self.source.push(E::Mig(Record::Lock { id: ID, batch: *batch, keys }));
            }
            Step::Import { batch } => {
                let keys = v.locked[batch].clone();
                self.target.push(E::Mig(Record::Import { id: ID, batch: *batch, keys: keys.clone() }));
                if faults && rng.below(4) == 0 {
                    // An in-doubt append sent twice: importing is idempotent.
                    self.target.push(E::Mig(Record::Import { id: ID, batch: *batch, keys }));
                }
            }
            Step::Release { batch } => self.source.push(E::Mig(Record::Release { id: ID, batch: *batch })),
            Step::PrepareSource => self.source.push(E::Mig(Record::Prepare { id: ID })),
            Step::PrepareTarget => self.target.push(E::Mig(Record::Prepare { id: ID })),
            Step::Decide => self.cluster.push(Record::Commit { id: ID }),
            Step::CommitSource => self.source.push(E::Mig(Record::Commit { id: ID })),
            Step::CommitTarget => self.target.push(E::Mig(Record::Commit { id: ID })),
            Step::Done => {}
        }
        self.now += 1;
        step
    }
}

fn run(seed: u64, keys: u64, faults: bool) -> World {
    let mut rng = Rng(seed | 1);
    let mut w = World::default();
    // Keys the source holds before the migration.
    for i in 0..keys {
        if rng.below(3) > 0 {
            let (k, val) = (format!("{{k{i}}}").into_bytes(), format!("init{i}").into_bytes());
            w.source.push(E::Data(k.clone(), Some(val.clone())));
            w.ledger.insert(k, Some(val));
        }
    }
    let mut steps = 0;
    loop {
        let n = rng.below(4) as usize;
        w.clients(&mut rng, n, keys);
        let step = w.advance_one(&mut rng, faults);
        steps += 1;
        assert!(steps < 10_000, "the migration does not finish: {:?}", w.view());
        if step == Step::Done {
            break;
        }
        // Exactly one owner at every point: the slot map changes only at the decision.
        let v = w.view();
        assert!(!(v.source_committed && !v.decided) && !(v.target_committed && !v.decided));
    }
    w.clients(&mut rng, 20, keys);
    // Everything is at the target; nothing is left at the source.
    let (src, tgt) = (store(&w.source), store(&w.target));
    assert!(src.is_empty(), "left at the source: {src:?}");
    for (k, v) in &w.ledger {
        assert_eq!(tgt.get(k), v.as_ref(), "key {:?}", String::from_utf8_lossy(k));
    }
    assert_eq!(tgt.len(), w.ledger.values().filter(|v| v.is_some()).count(), "no extra keys at the target");
    w
}

#[test]
fn moves_every_key_once_with_clients_writing() {
    for seed in 1..300 {
        let w = run(seed * 7919, 12, false);
        assert!(w.view().done());
    }
}

#[test]
fn survives_failed_unseen_and_duplicated_appends_at_every_step() {
    let (mut tryagains, mut asks) = (0, 0);
    for seed in 1..1000 {
        let w = run(seed * 104_729, 1 + seed % 20, true);
        tryagains += w.tryagains;
        asks += w.asks;
    }
    // The runs did exercise both redirections.
    assert!(tryagains > 0 && asks > 0, "tryagains {tryagains}, asks {asks}");
}

/// A crash of the coordinator after each possible prefix of the logs: resuming from the
/// logs alone gives a step consistent with them, and finishing from there is correct.
#[test]
fn resumes_from_any_prefix_of_the_logs() {
    let full = run(42, 10, false);
    let (s, t) = (records(&full.source), records(&full.target));
    // Every prefix of each log is a state some crash could leave (the coordinator
    // appends to one log at a time, in the protocol's order).
    for cut in 0..=full.cluster.len() + s.len() + t.len() {
        let mut order: Vec<(Log, Record)> = Vec::new();
        // Interleave in protocol order by replaying the steps of `full`.
        let mut w = World::default();
        for e in &full.source {
            if let E::Data(..) = e {
                w.source.push(e.clone());
            } else {
                break;
            }
        }
        let mut rng = Rng(9);
        while order.len() < cut {
            let before = (w.cluster.len(), w.source.len(), w.target.len());
            let step = w.advance_one(&mut rng, false);
            if step == Step::Done {
                break;
            }
            if w.cluster.len() > before.0 {
                order.push((Log::Cluster, w.cluster.last().unwrap().clone()));
            } else if w.source.len() > before.1 {
                order.push((Log::Source, records(&w.source).last().unwrap().clone()));
            } else if w.target.len() > before.2 {
                order.push((Log::Target, records(&w.target).last().unwrap().clone()));
            }
        }
        // The resumed coordinator derives its next step from the logs and finishes.
        let mut steps = 0;
        while w.advance_one(&mut rng, false) != Step::Done {
            steps += 1;
            assert!(steps < 1000);
        }
        assert!(w.view().done(), "cut {cut}");
        assert!(store(&w.source).is_empty());
    }
}

#[test]
fn routing_rules() {
    let mut v = View { plan: Some(plan()), ..Default::default() };
    assert_eq!(source_route(&v, true, false), Route::Serve);
    assert_eq!(source_route(&v, false, false), Route::Ask);
    assert_eq!(source_route(&v, true, true), Route::TryAgain);
    assert_eq!(target_route(&v, false), Route::Moved);
    assert_eq!(target_route(&v, true), Route::Serve);
    v.source_prepared = true;
    assert_eq!(source_route(&v, true, false), Route::Ask);
    v.decided = true;
    assert_eq!(source_route(&v, false, false), Route::Moved);
    assert_eq!(target_route(&v, false), Route::Serve);
    let r = Record::Lock { id: 1, batch: 2, keys: vec![(b"k".to_vec(), b"v".to_vec())] };
    assert_eq!(Record::decode(&r.encode()), Some(r));
}

#[test]
fn retries_back_off_in_simulated_time() {
    let mut r = Retry::new();
    assert!(r.ready(0));
    r.failed(100);
    assert!(!r.ready(149) && r.ready(150));
    for _ in 0..10 {
        r.failed(1000);
    }
    assert_eq!(r.pause, Retry::MAX);
    r.succeeded();
    assert_eq!((r.pause, r.failures), (Retry::FIRST, 0));
}
