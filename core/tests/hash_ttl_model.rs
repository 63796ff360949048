//! Hash-field expiry against a model: one hash as a map of field → (value, expiry) under a
//! simulated clock, where a field whose expiry is at or before now does not exist. Random
//! sequences of the field-expiry commands, plain hash writes, clock steps and ticks
//! (active expiry) must give exactly the replies the model computes.

mod common;

use std::collections::BTreeMap;

use common::H;
use proptest::prelude::*;

const FIELDS: &[&str] = &["f1", "f2", "f3", "f4"];

#[derive(Debug, Clone)]
enum Op {
    Hset(usize, u8),
    Hdel(usize),
    Hincrby(usize),
    Hpexpire(i64, &'static str, Vec<usize>),
    Hpersist(Vec<usize>),
    Hpttl(Vec<usize>),
    Hget(usize),
    Hlen,
    Hgetall,
    Hgetdel(Vec<usize>),
    /// `None`: no option; `Some(None)`: PERSIST; `Some(Some(ms))`: PX ms.
    Hgetex(Option<Option<i64>>, Vec<usize>),
    /// Condition (FNX/FXX/none), TTL option (None: none, Some(None): KEEPTTL, Some(Some(ms)): PX).
    Hsetex(&'static str, Option<Option<i64>>, usize, u8),
    Sleep(i64),
    Tick,
}

fn fields() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..FIELDS.len(), 1..4)
}

fn op() -> impl Strategy<Value = Op> {
    let ms = || 0i64..60;
    prop_oneof![
        4 => (0..FIELDS.len(), 0u8..9).prop_map(|(f, v)| Op::Hset(f, v)),
        1 => (0..FIELDS.len()).prop_map(Op::Hdel),
        1 => (0..FIELDS.len()).prop_map(Op::Hincrby),
        4 => (ms(), prop::sample::select(&["", "NX", "XX", "GT", "LT"][..]), fields()).prop_map(|(m, c, f)| Op::Hpexpire(m, c, f)),
        1 => fields().prop_map(Op::Hpersist),
        2 => fields().prop_map(Op::Hpttl),
        2 => (0..FIELDS.len()).prop_map(Op::Hget),
        1 => Just(Op::Hlen),
        2 => Just(Op::Hgetall),
        1 => fields().prop_map(Op::Hgetdel),
        2 => (prop_oneof![Just(None), Just(Some(None)), ms().prop_map(|m| Some(Some(m)))], fields()).prop_map(|(o, f)| Op::Hgetex(o, f)),
        2 => (prop::sample::select(&["", "FNX", "FXX"][..]), prop_oneof![Just(None), Just(Some(None)), ms().prop_map(|m| Some(Some(m)))], 0..FIELDS.len(), 0u8..9)
            .prop_map(|(c, o, f, v)| Op::Hsetex(c, o, f, v)),
        3 => (1i64..40).prop_map(Op::Sleep),
        1 => Just(Op::Tick),
    ]
}

/// The model: live fields only (expired ones are dropped before every command).
#[derive(Default)]
struct Model {
    fields: BTreeMap<&'static str, (String, Option<i64>)>,
}

fn int(n: i64) -> String {
    format!(":{n}\r\n")
}
fn bulk_or_nil(v: Option<&String>) -> String {
    v.map_or("$-1\r\n".to_string(), |v| format!("${}\r\n{}\r\n", v.len(), v))
}
fn ints(v: &[i64]) -> String {
    let mut s = format!("*{}\r\n", v.len());
    v.iter().for_each(|n| s.push_str(&int(*n)));
    s
}

impl Model {
    fn expire(&mut self, now: i64) {
        self.fields.retain(|_, (_, at)| at.is_none_or(|at| at > now));
    }

    /// The command and the reply the model expects.
    fn run(&mut self, op: &Op, now: i64) -> Option<(Vec<String>, String)> {
        self.expire(now);
        let names = |fs: &[usize]| fs.iter().map(|&i| FIELDS[i].to_string()).collect::<Vec<_>>();
        let with_fields = |mut c: Vec<String>, fs: &[usize]| {
            c.extend(["FIELDS".to_string(), fs.len().to_string()]);
            c.extend(names(fs));
            c
        };
        Some(match op {
            Op::Hset(f, v) => {
                let new = self.fields.insert(FIELDS[*f], (v.to_string(), None)).is_none();
                (vec!["HSET".into(), "h".into(), FIELDS[*f].into(), v.to_string()], int(new as i64))
            }
            Op::Hdel(f) => {
                let had = self.fields.remove(FIELDS[*f]).is_some();
                (vec!["HDEL".into(), "h".into(), FIELDS[*f].into()], int(had as i64))
            }
            Op::Hincrby(f) => {
                let e = self.fields.entry(FIELDS[*f]).or_insert(("0".into(), None));
                let n = e.0.parse::<i64>().unwrap() + 1;
                e.0 = n.to_string();
                (vec!["HINCRBY".into(), "h".into(), FIELDS[*f].into(), "1".into()], int(n))
            }
            Op::Hpexpire(ms, cond, fs) => {
                let at = now + ms;
                let answers: Vec<i64> = fs
                    .iter()
                    .map(|&i| {
                        let Some((_, prev)) = self.fields.get(FIELDS[i]).cloned() else { return -2 };
                        let met = match *cond {
                            "NX" => prev.is_none(),
                            "XX" => prev.is_some(),
                            "GT" => prev.is_some_and(|p| at > p),
                            "LT" => prev.is_none_or(|p| at < p),
                            _ => true,
                        };
                        if !met {
                            0
                        } else if at <= now {
                            self.fields.remove(FIELDS[i]);
                            2
                        } else {
                            self.fields.get_mut(FIELDS[i]).unwrap().1 = Some(at);
                            1
                        }
                    })
                    .collect();
                let mut c = vec!["HPEXPIRE".to_string(), "h".into(), ms.to_string()];
                if !cond.is_empty() {
                    c.push(cond.to_string());
                }
                (with_fields(c, fs), ints(&answers))
            }
            Op::Hpersist(fs) => {
                let answers: Vec<i64> = fs
                    .iter()
                    .map(|&i| match self.fields.get_mut(FIELDS[i]) {
                        None => -2,
                        Some((_, at)) if at.is_some() => {
                            *at = None;
                            1
                        }
                        Some(_) => -1,
                    })
                    .collect();
                (with_fields(vec!["HPERSIST".into(), "h".into()], fs), ints(&answers))
            }
            Op::Hpttl(fs) => {
                let answers: Vec<i64> = fs
                    .iter()
                    .map(|&i| match self.fields.get(FIELDS[i]) {
                        None => -2,
                        Some((_, None)) => -1,
                        Some((_, Some(at))) => at - now,
                    })
                    .collect();
                (with_fields(vec!["HPTTL".into(), "h".into()], fs), ints(&answers))
            }
            Op::Hget(f) => (vec!["HGET".into(), "h".into(), FIELDS[*f].into()], bulk_or_nil(self.fields.get(FIELDS[*f]).map(|(v, _)| v))),
            Op::Hlen => (vec!["HLEN".into(), "h".into()], int(self.fields.len() as i64)),
            Op::Hgetall => {
                // Compared sorted (see `check`): field order is the hash's own.
                let mut s = format!("*{}\r\n", self.fields.len() * 2);
                for (f, (v, _)) in &self.fields {
                    s.push_str(&format!("${}\r\n{}\r\n${}\r\n{}\r\n", f.len(), f, v.len(), v));
                }
                (vec!["HGETALL".into(), "h".into()], s)
            }
            Op::Hgetdel(fs) => {
                let mut s = format!("*{}\r\n", fs.len());
                for &i in fs {
                    s.push_str(&bulk_or_nil(self.fields.remove(FIELDS[i]).map(|(v, _)| v).as_ref()));
                }
                (with_fields(vec!["HGETDEL".into(), "h".into()], fs), s)
            }
            Op::Hgetex(opt, fs) => {
                let mut s = format!("*{}\r\n", fs.len());
                for &i in fs {
                    let v = self.fields.get(FIELDS[i]).map(|(v, _)| v.clone());
                    s.push_str(&bulk_or_nil(v.as_ref()));
                    if v.is_some() {
                        match opt {
                            Some(None) => self.fields.get_mut(FIELDS[i]).unwrap().1 = None,
                            Some(Some(ms)) if *ms == 0 => {
                                self.fields.remove(FIELDS[i]);
                            }
                            Some(Some(ms)) => self.fields.get_mut(FIELDS[i]).unwrap().1 = Some(now + ms),
                            None => {}
                        }
                    }
                }
                let mut c = vec!["HGETEX".to_string(), "h".into()];
                match opt {
                    Some(None) => c.push("PERSIST".into()),
                    Some(Some(ms)) => c.extend(["PX".to_string(), ms.to_string()]),
                    None => {}
                }
                (with_fields(c, fs), s)
            }
            Op::Hsetex(cond, opt, f, v) => {
                let exists = self.fields.contains_key(FIELDS[*f]);
                let ok = match *cond {
                    "FNX" => !exists,
                    "FXX" => exists,
                    _ => true,
                };
                if ok {
                    let keep = self.fields.get(FIELDS[*f]).and_then(|(_, at)| *at);
                    match opt {
                        None => {
                            self.fields.insert(FIELDS[*f], (v.to_string(), None));
                        }
                        Some(None) => {
                            self.fields.insert(FIELDS[*f], (v.to_string(), keep));
                        }
                        Some(Some(0)) => {
                            self.fields.remove(FIELDS[*f]);
                        }
                        Some(Some(ms)) => {
                            self.fields.insert(FIELDS[*f], (v.to_string(), Some(now + ms)));
                        }
                    }
                }
                let mut c = vec!["HSETEX".to_string(), "h".into()];
                if !cond.is_empty() {
                    c.push(cond.to_string());
                }
                match opt {
                    Some(None) => c.push("KEEPTTL".into()),
                    Some(Some(ms)) => c.extend(["PX".to_string(), ms.to_string()]),
                    None => {}
                }
                c.extend(["FIELDS".to_string(), "1".into(), FIELDS[*f].into(), v.to_string()]);
                (c, int(ok as i64))
            }
            Op::Sleep(_) | Op::Tick => return None,
        })
    }
}

/// Sorts the field-value pairs of an HGETALL reply.
fn sorted_pairs(reply: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = reply.split("\r\n").collect();
    let mut pairs: Vec<(String, String)> = lines[1..].chunks(4).filter(|c| c.len() == 4).map(|c| (c[1].to_string(), c[3].to_string())).collect();
    pairs.sort();
    pairs
}

fn check(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut h = H::new();
    let mut m = Model::default();
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Sleep(ms) => h.advance(*ms),
            Op::Tick => h.tick(),
            _ => {
                let (cmd, want) = m.run(op, h.now_ms).expect("a command");
                let got = String::from_utf8_lossy(&h.raw(&cmd)).into_owned();
                if matches!(op, Op::Hgetall) {
                    prop_assert_eq!(sorted_pairs(&got), sorted_pairs(&want), "step {}: {:?}", i, cmd);
                } else {
                    prop_assert_eq!(&got, &want, "step {}: {:?}", i, cmd);
                }
                let exists = String::from_utf8_lossy(&h.raw(&["EXISTS", "h"])).into_owned();
                prop_assert_eq!(exists, int(!m.fields.is_empty() as i64), "after step {}: {:?}", i, cmd);
            }
        }
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("MEMORIA_PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn hash_field_expiry_matches_the_model(ops in prop::collection::vec(op(), 1..80)) {
        check(&ops)?;
    }
}
