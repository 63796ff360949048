//! GEO commands replayed against replies recorded from redis-server 7.0.15: random point
//! clouds (near the ±180 meridian, the latitude limits, the 66°/80° step changes, the
//! origin and anywhere) and random searches, stores, distances, positions and hashes.
//! The corpus (`data/geo_oracle.txt`) was recorded by `data/geo_oracle_gen.py 7 60`,
//! which sends each command to a redis-server 7.0.15 and keeps its raw RESP reply; set
//! MEMORIA_GEO_ORACLE to the path of another corpus (another seed, more scenarios) to
//! replay it too.
//!
//! Format: `> arg arg …` is a command (arguments split on single spaces), the next line
//! `< reply` its reply with `\r`, `\n` and `\\` escaped, or `<*` for a reply not compared
//! (HELLO's carries the server's id). `#` lines are comments.
//!
//! One difference is accepted, and counted: a distance printed to 17 digits (a STOREDIST
//! score read back) may differ in its last bits. Memoria's sin/cos/asin round correctly;
//! glibc's, which redis-server uses, are off by one ulp in about 0.1 % of calls.

mod common;

use common::H;

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('r') => out.push('\r'),
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// Whether two replies differ only in floats within a few ulps (and the bulk lengths
/// that their digits change).
fn same_but_last_bits(got: &str, want: &str) -> bool {
    let (g, w): (Vec<&str>, Vec<&str>) = (got.split("\r\n").collect(), want.split("\r\n").collect());
    g.len() == w.len()
        && g.iter().zip(&w).all(|(a, b)| {
            if a == b || (a.starts_with('$') && b.starts_with('$')) {
                return true;
            }
            let num = |t: &str| t.trim_start_matches(',').parse::<f64>().ok();
            match (num(a), num(b)) {
                (Some(x), Some(y)) => (x - y).abs() <= 4.0 * f64::EPSILON * x.abs().max(y.abs()),
                _ => false,
            }
        })
}

struct Outcome {
    compared: usize,
    last_bits: usize,
}

/// Replays a corpus.
fn replay(corpus: &str, name: &str) -> Outcome {
    let mut h = H::new();
    let (mut compared, mut last_bits) = (0, 0);
    let mut lines = corpus.lines().enumerate();
    let mut context: Vec<String> = Vec::new();
    while let Some((n, line)) = lines.next() {
        if line.starts_with('#') {
            context.clear();
            continue;
        }
        let Some(cmd) = line.strip_prefix("> ") else { panic!("{name}:{}: expected a command, got {line:?}", n + 1) };
        let (_, want) = lines.next().unwrap_or_else(|| panic!("{name}:{}: command without a reply", n + 1));
        let args: Vec<&str> = cmd.split(' ').collect();
        let got = String::from_utf8_lossy(&h.raw(&args)).into_owned();
        context.push(cmd.to_string());
        if want == "<*" {
            continue;
        }
        let want = unescape(want.strip_prefix("< ").unwrap_or_else(|| panic!("{name}:{}: expected a reply", n + 2)));
        compared += 1;
        if got != want && cmd.starts_with("ZRANGE ") && same_but_last_bits(&got, &want) {
            last_bits += 1;
            continue;
        }
        assert_eq!(got, want, "{name}:{}: reply to {cmd:?}\nafter:\n{}", n + 1, context.join("\n"));
    }
    Outcome { compared, last_bits }
}

#[test]
fn recorded_corpus() {
    let o = replay(include_str!("data/geo_oracle.txt"), "data/geo_oracle.txt");
    assert!(o.compared > 800, "only {} replies compared", o.compared);
    assert!(o.last_bits * 50 < o.compared, "{} of {} replies differ in last bits", o.last_bits, o.compared);
}

#[test]
fn extra_corpus_from_env() {
    let Ok(path) = std::env::var("MEMORIA_GEO_ORACLE") else { return };
    let corpus = std::fs::read_to_string(&path).expect("MEMORIA_GEO_ORACLE names a readable file");
    let o = replay(&corpus, &path);
    eprintln!("{path}: {} replies match, {} of them up to the last bits of a distance", o.compared, o.last_bits);
}
