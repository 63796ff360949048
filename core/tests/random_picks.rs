//! Random picks are as fair as Redis's: its own suite's chi-square check ("SRANDMEMBER
//! histogram distribution", threshold 40 for ten members: df = 9, p ≈ 0.00001) over
//! SRANDMEMBER, SPOP, HRANDFIELD, ZRANDMEMBER and RANDOMKEY, for every encoding.
//! (`Dict::fair_random`'s own test covers a table mid-rehash.)

mod cmdutil;
mod common;

use std::collections::BTreeMap;

use cmdutil::parse_bulks;
use common::H;

/// Redis's chi_square_value: the expected count is the draws over the distinct values
/// seen (integer division), summed over the values seen.
fn chi_square(draws: &[String]) -> f64 {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for d in draws {
        *counts.entry(d).or_default() += 1;
    }
    let p = (draws.len() as u64 / counts.len() as u64) as f64;
    counts.values().map(|&v| (v as f64 - p).powi(2) / p).sum()
}

const STRINGS: [&str; 10] = ["1", "5", "10", "50", "125", "MARY", "PATRICIA", "LINDA", "BARBARA", "ELIZABETH"];
const INTS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];

/// Redis's three draws: one negative count of 1000, then positive counts 8 and 2 until
/// about 1000 members were drawn. `cmd` is the command without its count.
fn check_draws(h: &mut H, cmd: &str, what: &str) {
    let members = |reply: String| parse_bulks(&reply);
    let draws = members(h.c(&format!("{cmd} -1000")));
    assert_eq!(draws.len(), 1000, "{what}");
    let chi = chi_square(&draws);
    assert!(chi < 40.0, "{what}, count -1000: chi-square {chi}");
    for size in [8, 2] {
        let mut all = Vec::new();
        for _ in 0..1000 / size {
            all.extend(members(h.c(&format!("{cmd} {size}"))));
        }
        let chi = chi_square(&all);
        assert!(chi < 40.0, "{what}, count {size}: chi-square {chi}");
    }
}

#[test]
fn srandmember_is_fair_for_every_encoding() {
    let mut h = H::new();
    h.c(&format!("SADD ints {}", INTS.join(" ")));
    assert_eq!(h.c("OBJECT ENCODING ints"), "$6\r\nintset\r\n");
    check_draws(&mut h, "SRANDMEMBER ints", "intset");
    h.c(&format!("SADD strs {}", STRINGS.join(" ")));
    check_draws(&mut h, "SRANDMEMBER strs", "strings");
    // A large table (10 000 members, long chains likely): its picks grouped by member
    // number mod 10, ten groups of equal size, so the same threshold applies.
    let members: Vec<String> = (0..10_000).map(|i| format!("m{i}")).collect();
    for chunk in members.chunks(1000) {
        h.c(&format!("SADD big {}", chunk.join(" ")));
    }
    let draws: Vec<String> = parse_bulks(&h.c("SRANDMEMBER big -20000")).iter().map(|m| (m[1..].parse::<u32>().unwrap() % 10).to_string()).collect();
    let chi = chi_square(&draws);
    assert!(chi < 40.0, "a large table: chi-square {chi}");
}

#[test]
fn spop_is_fair() {
    let mut h = H::new();
    for (set, what) in [(&STRINGS, "strings"), (&INTS, "intset")] {
        let mut popped = Vec::new();
        for _ in 0..1000 {
            h.c("DEL s");
            h.c(&format!("SADD s {}", set.join(" ")));
            popped.extend(parse_bulks(&h.c("SPOP s 1")));
            popped.extend(parse_bulks(&format!("*1\r\n{}", h.c("SPOP s"))));
        }
        let chi = chi_square(&popped);
        assert!(chi < 40.0, "SPOP, {what}: chi-square {chi}");
    }
}

#[test]
fn hrandfield_and_zrandmember_are_fair_for_every_encoding() {
    let mut h = H::new();
    let fields: Vec<String> = STRINGS.iter().map(|f| format!("{f} v")).collect();
    h.c(&format!("HSET small {}", fields.join(" ")));
    assert_eq!(h.c("OBJECT ENCODING small"), "$8\r\nlistpack\r\n");
    check_draws(&mut h, "HRANDFIELD small", "listpack hash");
    h.c("CONFIG SET hash-max-listpack-entries 0");
    h.c(&format!("HSET table {}", fields.join(" ")));
    assert_eq!(h.c("OBJECT ENCODING table"), "$9\r\nhashtable\r\n");
    check_draws(&mut h, "HRANDFIELD table", "hashtable hash");
    // WITHVALUES: the fields of the pairs.
    let with: Vec<String> = parse_bulks(&h.c("HRANDFIELD table -1000 WITHVALUES")).into_iter().step_by(2).collect();
    assert!(chi_square(&with) < 40.0);

    let scored: Vec<String> = STRINGS.iter().enumerate().map(|(i, m)| format!("{i} {m}")).collect();
    h.c(&format!("ZADD zsmall {}", scored.join(" ")));
    check_draws(&mut h, "ZRANDMEMBER zsmall", "listpack zset");
    h.c("CONFIG SET zset-max-listpack-entries 0");
    h.c(&format!("ZADD zbig {}", scored.join(" ")));
    assert_eq!(h.c("OBJECT ENCODING zbig"), "$8\r\nskiplist\r\n");
    check_draws(&mut h, "ZRANDMEMBER zbig", "skiplist zset");
}

#[test]
fn randomkey_is_fair() {
    let mut h = H::new();
    for k in STRINGS {
        h.c(&format!("SET {k} v"));
    }
    let draws: Vec<String> = (0..1000).map(|_| parse_bulks(&format!("*1\r\n{}", h.c("RANDOMKEY"))).remove(0)).collect();
    let chi = chi_square(&draws);
    assert!(chi < 40.0, "RANDOMKEY: chi-square {chi}");
}
