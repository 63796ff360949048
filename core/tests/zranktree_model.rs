//! The rank tree against a BTreeMap model: random inserts, deletes and rank-range deletes,
//! then ranks, rank lookups and score/lex ranges must agree with the model, and every
//! structural invariant (counts, exact separators, fill, leaf links, order) must hold. Small
//! node capacities grow deep trees from a few hundred elements.

use std::collections::BTreeMap;

use memoria_core::types::zranktree::{NIL, RankTree};
use proptest::prelude::*;

/// (score, member) with a total order (scores are never NaN here).
#[derive(Clone, Debug, PartialEq)]
struct K(f64, Vec<u8>);
impl Eq for K {}
impl PartialOrd for K {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for K {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.partial_cmp(&o.0).unwrap().then_with(|| self.1.cmp(&o.1))
    }
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u8, i8),
    /// A present member moves to a new score (ZADD's update); absent: inserted.
    Update(u8, i8),
    Remove(u8),
    RemoveRanks(u8, u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<u8>(), -8i8..8).prop_map(|(m, s)| Op::Insert(m, s)),
        4 => (any::<u8>(), -8i8..8).prop_map(|(m, s)| Op::Update(m, s)),
        3 => any::<u8>().prop_map(Op::Remove),
        1 => (any::<u8>(), 0u8..6).prop_map(|(a, n)| Op::RemoveRanks(a, n)),
    ]
}

fn member(m: u8) -> Vec<u8> {
    format!("m{:03}", m).into_bytes()
}

fn cases() -> u32 {
    std::env::var("MEMORIA_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(500)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn tree_matches_model(ops in prop::collection::vec(op(), 1..400), cap in 8usize..=32) {
        let mut sl = RankTree::with_node_capacity(cap);
        // member → score, plus the ordered view.
        let mut scores: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
        let mut order: BTreeMap<K, ()> = BTreeMap::new();
        for op in &ops {
            match *op {
                Op::Insert(m, s) => {
                    let m = member(m);
                    let s = s as f64 / 2.0;
                    if let Some(old) = scores.insert(m.clone(), s) {
                        prop_assert!(sl.remove(&m, old));
                        order.remove(&K(old, m.clone()));
                    }
                    sl.insert(&m, s);
                    order.insert(K(s, m), ());
                }
                Op::Update(m, s) => {
                    let m = member(m);
                    let s = s as f64 / 2.0;
                    match scores.insert(m.clone(), s) {
                        Some(old) => {
                            prop_assert!(sl.update_score(&m, old, s));
                            order.remove(&K(old, m.clone()));
                        }
                        None => {
                            prop_assert!(!sl.update_score(&m, s, s));
                            sl.insert(&m, s);
                        }
                    }
                    order.insert(K(s, m), ());
                }
                Op::Remove(m) => {
                    let m = member(m);
                    match scores.remove(&m) {
                        Some(old) => {
                            prop_assert!(sl.remove(&m, old));
                            order.remove(&K(old, m));
                        }
                        None => prop_assert!(!sl.remove(&m, 0.0)),
                    }
                }
                Op::RemoveRanks(a, n) => {
                    let lo = if order.is_empty() { 0 } else { a as usize % (order.len() + 1) };
                    let hi = lo + n as usize;
                    let gone: Vec<K> = order.keys().skip(lo).take(n as usize).cloned().collect();
                    let mut seen = Vec::new();
                    let removed = sl.remove_rank_range(lo, hi, |m, s| seen.push(K(s, m.to_vec())));
                    prop_assert_eq!(removed, gone.len());
                    prop_assert_eq!(&seen, &gone);
                    for k in gone {
                        order.remove(&k);
                        scores.remove(&k.1);
                    }
                }
            }
            prop_assert_eq!(sl.len(), order.len());
        }
        sl.check().map_err(TestCaseError::fail)?;
        let sorted: Vec<K> = order.keys().cloned().collect();
        for (r, k) in sorted.iter().enumerate() {
            prop_assert_eq!(sl.rank_of(&k.1, k.0), r);
            let n = sl.at_rank(r);
            prop_assert!(n != NIL);
            let (m, s) = sl.get(n);
            prop_assert_eq!(&K(s, m.to_vec()), k);
        }
        prop_assert_eq!(sl.at_rank(sorted.len()), NIL);
        // Score ranges: [lo, hi) by partition points, for every bound in the score domain.
        for min in -9..9 {
            let min = min as f64 / 2.0;
            let want = sorted.iter().filter(|k| k.0 < min).count();
            prop_assert_eq!(sl.partition_point(|s, _| s < min), want);
            let want_le = sorted.iter().filter(|k| k.0 <= min).count();
            prop_assert_eq!(sl.partition_point(|s, _| s <= min), want_le);
        }
        // Backward walk equals the reversed order.
        let mut back = Vec::new();
        let mut n = sl.last();
        while n != NIL {
            let (m, s) = sl.get(n);
            back.push(K(s, m.to_vec()));
            n = sl.prev(n);
        }
        back.reverse();
        prop_assert_eq!(back, sorted);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Lex ranges: with one score for every member (BYLEX's precondition) the order is the
    /// members' byte order, and partition points by member bound give the model's counts.
    #[test]
    fn lex_ranges_match_model(members in prop::collection::btree_set(prop::collection::vec(97u8..101, 0..4), 0..120), bounds in prop::collection::vec(prop::collection::vec(97u8..101, 0..4), 1..10), cap in 8usize..=32) {
        let mut sl = RankTree::with_node_capacity(cap);
        for m in &members {
            sl.insert(m, 0.0);
        }
        sl.check().map_err(TestCaseError::fail)?;
        for b in &bounds {
            let lt = members.iter().filter(|m| m.as_slice() < b.as_slice()).count();
            let le = members.iter().filter(|m| m.as_slice() <= b.as_slice()).count();
            prop_assert_eq!(sl.partition_point(|_, m| m < b.as_slice()), lt);
            prop_assert_eq!(sl.partition_point(|_, m| m <= b.as_slice()), le);
        }
        for (r, m) in members.iter().enumerate() {
            let (got, _) = sl.get(sl.at_rank(r));
            prop_assert_eq!(got, m.as_slice());
        }
    }
}
