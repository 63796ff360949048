//! List commands: exact replies and Redis 7.0 errors per command, the quicklist node
//! layout under list-max-listpack-size, snapshot/digest/COPY, the effects each write
//! replicates, and the blocking protocol at the engine boundary (OUT_BLOCKED, deferred
//! commands, REC_UNBLOCKED answers, REC_UNBLOCK deadlines, CLIENT UNBLOCK, disconnects).

mod cmdutil;
mod common;

use cmdutil::*;
use common::{H, NIL, OK, bulk, err, int};
use memoria_core::protocol::batch::{self, BatchWriter, OutputReader};
use memoria_core::protocol::resp::encode_command;

const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NILARR: &str = "*-1\r\n";

#[test]
fn push_pop_len_range() {
    let mut h = H::new();
    ck(&mut h, "RPUSH l a b c", int(3));
    ck(&mut h, "LPUSH l z y", int(5));
    ck(&mut h, "LRANGE l 0 -1", bulks(&["y", "z", "a", "b", "c"]));
    ck(&mut h, "LLEN l", int(5));
    ck(&mut h, "LLEN nokey", int(0));
    ck(&mut h, "TYPE l", "+list\r\n");
    ck(&mut h, "OBJECT ENCODING l", bulk("quicklist"));
    ck(&mut h, "LPOP l", bulk("y"));
    ck(&mut h, "RPOP l", bulk("c"));
    ck(&mut h, "LPOP l 2", bulks(&["z", "a"]));
    ck(&mut h, "RPUSH l x y", int(3));
    ck(&mut h, "RPOP l 2", bulks(&["y", "x"]));
    ck(&mut h, "LPOP l 0", "*0\r\n");
    ck(&mut h, "LPOP l 10", bulks(&["b"]));
    ck(&mut h, "EXISTS l", int(0));
    ck(&mut h, "LPOP l", NIL);
    ck(&mut h, "LPOP l 0", NILARR);
    ck(&mut h, "RPOP l 3", NILARR);
    ck(&mut h, "LPOP l -1", err("ERR value is out of range, must be positive"));
    ck(&mut h, "LPOP l x", err("ERR value is out of range, must be positive"));
    ck(&mut h, "LPOP l 1 2", err("ERR wrong number of arguments for 'lpop' command"));
    ck(&mut h, "RPUSH l", err("ERR wrong number of arguments for 'rpush' command"));
    ck(&mut h, "LPUSHX l a", int(0));
    ck(&mut h, "RPUSHX l a", int(0));
    ck(&mut h, "EXISTS l", int(0));
    ck(&mut h, "RPUSH l a", int(1));
    ck(&mut h, "LPUSHX l b c", int(3));
    ck(&mut h, "RPUSHX l d", int(4));
    ck(&mut h, "LRANGE l 0 -1", bulks(&["c", "b", "a", "d"]));
    ck(&mut h, "SET s v", OK);
    for c in [
        "LPUSH s a",
        "RPUSH s a",
        "LPUSHX s a",
        "LPOP s",
        "RPOP s 1",
        "LLEN s",
        "LRANGE s 0 1",
        "LINDEX s 0",
        "LSET s 0 a",
        "LREM s 0 a",
        "LTRIM s 0 1",
        "LPOS s a",
        "LINSERT s BEFORE a b",
        "RPOPLPUSH s l",
        "RPOPLPUSH l s",
        "LMPOP 1 s LEFT",
    ] {
        ck(&mut h, c, err(WT));
    }
    ck(&mut h, "GET s", bulk("v"));
}

#[test]
fn lrange_and_lindex_bounds() {
    let mut h = H::new();
    ck(&mut h, "RPUSH l 0 1 2 3 4 5", int(6));
    ck(&mut h, "LRANGE l 1 3", bulks(&["1", "2", "3"]));
    ck(&mut h, "LRANGE l -2 -1", bulks(&["4", "5"]));
    ck(&mut h, "LRANGE l -100 1", bulks(&["0", "1"]));
    ck(&mut h, "LRANGE l 4 100", bulks(&["4", "5"]));
    ck(&mut h, "LRANGE l 3 2", "*0\r\n");
    ck(&mut h, "LRANGE l 6 10", "*0\r\n");
    ck(&mut h, "LRANGE l 0 -7", "*0\r\n");
    ck(&mut h, "LRANGE l -9223372036854775808 9223372036854775807", bulks(&["0", "1", "2", "3", "4", "5"]));
    ck(&mut h, "LRANGE nokey 0 -1", "*0\r\n");
    ck(&mut h, "LRANGE l a 1", err("ERR value is not an integer or out of range"));
    ck(&mut h, "LRANGE nokey 0 b", err("ERR value is not an integer or out of range"));
    ck(&mut h, "LINDEX l 0", bulk("0"));
    ck(&mut h, "LINDEX l -1", bulk("5"));
    ck(&mut h, "LINDEX l 6", NIL);
    ck(&mut h, "LINDEX l -7", NIL);
    // Redis looks the key up before it parses the index.
    ck(&mut h, "LINDEX nokey x", NIL);
    ck(&mut h, "LINDEX l x", err("ERR value is not an integer or out of range"));
}

#[test]
fn lset_linsert_lrem_ltrim() {
    let mut h = H::new();
    ck(&mut h, "LSET nokey 0 x", err("ERR no such key"));
    ck(&mut h, "RPUSH l a b c b a", int(5));
    ck(&mut h, "LSET l 1 B", OK);
    ck(&mut h, "LSET l -1 A", OK);
    ck(&mut h, "LSET l 5 x", err("ERR index out of range"));
    ck(&mut h, "LSET l x x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "LRANGE l 0 -1", bulks(&["a", "B", "c", "b", "A"]));
    ck(&mut h, "LINSERT l BEFORE c X", int(6));
    ck(&mut h, "LINSERT l after c Y", int(7));
    ck(&mut h, "LINSERT l AFTER nope Y", int(-1));
    ck(&mut h, "LINSERT nokey AFTER a b", int(0));
    ck(&mut h, "LINSERT l MIDDLE a b", err("ERR syntax error"));
    ck(&mut h, "LINSERT nokey MIDDLE a b", err("ERR syntax error"));
    ck(&mut h, "LRANGE l 0 -1", bulks(&["a", "B", "X", "c", "Y", "b", "A"]));
    ck(&mut h, "RPUSH r x 1 x 2 x 3 x", int(7));
    ck(&mut h, "LREM r 2 x", int(2));
    ck(&mut h, "LRANGE r 0 -1", bulks(&["1", "2", "x", "3", "x"]));
    ck(&mut h, "LREM r -1 x", int(1));
    ck(&mut h, "LRANGE r 0 -1", bulks(&["1", "2", "x", "3"]));
    ck(&mut h, "LREM r 0 x", int(1));
    ck(&mut h, "LREM r 0 zz", int(0));
    ck(&mut h, "LREM nokey 0 x", int(0));
    ck(&mut h, "LREM r y x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "LREM r 0 1", int(1));
    ck(&mut h, "LREM r 0 2", int(1));
    ck(&mut h, "LREM r 0 3", int(1));
    ck(&mut h, "EXISTS r", int(0));
    ck(&mut h, "RPUSH t 0 1 2 3 4 5", int(6));
    ck(&mut h, "LTRIM t 1 -2", OK);
    ck(&mut h, "LRANGE t 0 -1", bulks(&["1", "2", "3", "4"]));
    ck(&mut h, "LTRIM t 0 100", OK);
    ck(&mut h, "LLEN t", int(4));
    ck(&mut h, "LTRIM t 5 10", OK);
    ck(&mut h, "EXISTS t", int(0));
    ck(&mut h, "LTRIM nokey 0 1", OK);
    ck(&mut h, "LTRIM t a 1", err("ERR value is not an integer or out of range"));
}

#[test]
fn lpos_options() {
    let mut h = H::new();
    ck(&mut h, "RPUSH l a b c 1 2 3 c c", int(8));
    ck(&mut h, "LPOS l c", int(2));
    ck(&mut h, "LPOS l c RANK 2", int(6));
    ck(&mut h, "LPOS l c RANK -1", int(7));
    ck(&mut h, "LPOS l c RANK -3", int(2));
    ck(&mut h, "LPOS l c RANK 4", NIL);
    ck(&mut h, "LPOS l c COUNT 0", "*3\r\n:2\r\n:6\r\n:7\r\n");
    ck(&mut h, "LPOS l c COUNT 2", "*2\r\n:2\r\n:6\r\n");
    ck(&mut h, "LPOS l c COUNT 2 RANK -1", "*2\r\n:7\r\n:6\r\n");
    ck(&mut h, "LPOS l c COUNT 0 MAXLEN 7", "*2\r\n:2\r\n:6\r\n");
    ck(&mut h, "LPOS l c MAXLEN 2", NIL);
    ck(&mut h, "LPOS l zz COUNT 1", "*0\r\n");
    ck(&mut h, "LPOS nokey a", NIL);
    ck(&mut h, "LPOS nokey a COUNT 1", "*0\r\n");
    ck(
        &mut h,
        "LPOS l c RANK 0",
        err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"),
    );
    ck(&mut h, "LPOS l c RANK x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "LPOS l c COUNT -1", err("ERR COUNT can't be negative"));
    ck(&mut h, "LPOS l c COUNT x", err("ERR COUNT can't be negative"));
    ck(&mut h, "LPOS l c MAXLEN -1", err("ERR MAXLEN can't be negative"));
    ck(&mut h, "LPOS l c COUNT", err("ERR syntax error"));
    ck(&mut h, "LPOS l c FOO 1", err("ERR syntax error"));
    // Redis negates RANK LONG_MIN into itself: the first match from the tail.
    ck(&mut h, "LPOS l c RANK -9223372036854775808", int(7));
}

#[test]
fn lmove_rpoplpush_lmpop() {
    let mut h = H::new();
    ck(&mut h, "RPUSH a 1 2 3", int(3));
    ck(&mut h, "LMOVE a b LEFT RIGHT", bulk("1"));
    ck(&mut h, "LMOVE a b right left", bulk("3"));
    ck(&mut h, "LRANGE b 0 -1", bulks(&["3", "1"]));
    ck(&mut h, "RPOPLPUSH a b", bulk("2"));
    ck(&mut h, "EXISTS a", int(0));
    ck(&mut h, "LRANGE b 0 -1", bulks(&["2", "3", "1"]));
    ck(&mut h, "LMOVE a b LEFT LEFT", NIL);
    ck(&mut h, "RPOPLPUSH a b", NIL);
    ck(&mut h, "LMOVE a b UP LEFT", err("ERR syntax error"));
    // Rotation onto itself.
    ck(&mut h, "RPOPLPUSH b b", bulk("1"));
    ck(&mut h, "LRANGE b 0 -1", bulks(&["1", "2", "3"]));
    ck(&mut h, "RPUSH one x", int(1));
    ck(&mut h, "LMOVE one one LEFT RIGHT", bulk("x"));
    ck(&mut h, "LRANGE one 0 -1", bulks(&["x"]));
    ck(&mut h, "SET s v", OK);
    ck(&mut h, "LMOVE b s LEFT LEFT", err(WT));
    ck(&mut h, "LLEN b", int(3));
    ck(&mut h, "LMPOP 2 nokey b LEFT", "*2\r\n$1\r\nb\r\n*1\r\n$1\r\n1\r\n");
    ck(&mut h, "LMPOP 1 b RIGHT COUNT 5", "*2\r\n$1\r\nb\r\n*2\r\n$1\r\n3\r\n$1\r\n2\r\n");
    ck(&mut h, "LMPOP 1 b RIGHT", NILARR);
    ck(&mut h, "LMPOP 0 b RIGHT", err("ERR numkeys should be greater than 0"));
    ck(&mut h, "LMPOP x b RIGHT", err("ERR numkeys should be greater than 0"));
    ck(&mut h, "LMPOP 2 b RIGHT", err("ERR syntax error"));
    ck(&mut h, "LMPOP 9223372036854775807 b RIGHT", err("ERR syntax error"));
    ck(&mut h, "LMPOP 1 b UP", err("ERR syntax error"));
    ck(&mut h, "LMPOP 1 b LEFT COUNT 0", err("ERR count should be greater than 0"));
    ck(&mut h, "LMPOP 1 b LEFT COUNT 1 COUNT 1", err("ERR syntax error"));
    ck(&mut h, "LMPOP 1 s LEFT", err(WT));
    ck(&mut h, "LMPOP 2 one s LEFT", "*2\r\n$3\r\none\r\n*1\r\n$1\r\nx\r\n");
    ck(&mut h, "LMPOP 1", err("ERR wrong number of arguments for 'lmpop' command"));
}

#[test]
fn writes_replicate_deterministically() {
    let mut h = H::new();
    h.c("RPUSH l a b c d");
    h.c("LPOP l");
    h.c("RPOP l 5");
    h.c("RPUSH l x y");
    h.c("RPOPLPUSH l m");
    h.c("LMPOP 2 nokey l LEFT COUNT 9");
    h.c("RPUSH q 1");
    h.c("BLPOP q 0");
    h.c("RPUSH q 1 2");
    h.c("BLMPOP 0 1 q RIGHT COUNT 5");
    h.c("RPUSH q 1");
    h.c("BRPOPLPUSH q m 0");
    h.c("LTRIM m 0 100");
    h.c("LREM m 0 nope");
    h.c("LPOP nokey");
    assert_eq!(
        h.effect_lines(),
        [
            "0:RPUSH l a b c d",
            "0:LPOP l",
            "0:RPOP l 5",
            "0:RPUSH l x y",
            "0:LMOVE l m RIGHT LEFT",
            "0:LPOP l 1",
            "0:RPUSH q 1",
            "0:LPOP q",
            "0:RPUSH q 1 2",
            "0:RPOP q 2",
            "0:RPUSH q 1",
            "0:LMOVE q m RIGHT LEFT",
        ]
    );
}

#[test]
fn nodes_split_by_size_and_count_and_survive_edits() {
    // Small fills force many nodes; every operation must agree with a plain model.
    for fill in ["-1", "-2", "1", "2", "3", "0", "-5"] {
        let mut h = H::new();
        ck(&mut h, &format!("CONFIG SET list-max-listpack-size {fill}"), OK);
        let mut model: std::collections::VecDeque<String> = Default::default();
        let mut rng = memoria_core::util::Rng::new(fill.len() as u64 * 31 + 7);
        for step in 0..600 {
            let v = format!("{}{}", "v".repeat(rng.below(3) as usize * 700 + 1), rng.below(5));
            match rng.below(9) {
                0 | 1 => {
                    h.raw(&["RPUSH", "l", &v]);
                    model.push_back(v);
                }
                2 | 3 => {
                    h.raw(&["LPUSH", "l", &v]);
                    model.push_front(v);
                }
                4 if !model.is_empty() => {
                    let i = rng.below(model.len() as u64) as usize;
                    h.raw(&["LSET", "l", &i.to_string(), &v]);
                    model[i] = v;
                }
                5 if !model.is_empty() => {
                    let i = rng.below(model.len() as u64) as usize;
                    let pivot = model[i].clone();
                    h.raw(&["LINSERT", "l", "AFTER", &pivot, &v]);
                    let at = model.iter().position(|x| *x == pivot).unwrap();
                    model.insert(at + 1, v);
                }
                6 => {
                    let n = rng.below(3) as usize;
                    h.raw(&["LPOP", "l", &n.to_string()]);
                    for _ in 0..n.min(model.len()) {
                        model.pop_front();
                    }
                }
                7 if !model.is_empty() => {
                    let x = model[rng.below(model.len() as u64) as usize].clone();
                    let count: i64 = rng.below(5) as i64 - 2;
                    h.raw(&["LREM", "l", &count.to_string(), &x]);
                    let limit = if count == 0 { usize::MAX } else { count.unsigned_abs() as usize };
                    let mut removed = 0;
                    if count >= 0 {
                        let mut i = 0;
                        while i < model.len() && removed < limit {
                            if model[i] == x {
                                model.remove(i);
                                removed += 1;
                            } else {
                                i += 1;
                            }
                        }
                    } else {
                        let mut i = model.len();
                        while i > 0 && removed < limit {
                            i -= 1;
                            if model[i] == x {
                                model.remove(i);
                                removed += 1;
                            }
                        }
                    }
                }
                _ => {
                    let a = rng.below(model.len() as u64 + 2) as i64 - 1;
                    let b = rng.below(model.len() as u64 + 2) as i64 - 1;
                    h.raw(&["LTRIM", "l", &a.to_string(), &b.to_string()]);
                    let len = model.len() as i64;
                    let s = if a < 0 { (len + a).max(0) } else { a };
                    let e = if b < 0 { len + b } else { b.min(len - 1) };
                    if s > e || s >= len {
                        model.clear();
                    } else {
                        model = model.iter().skip(s as usize).take((e - s + 1) as usize).cloned().collect();
                    }
                }
            }
            let got = parse_bulks(&h.c("LRANGE l 0 -1"));
            assert_eq!(got, Vec::from(model.clone()), "fill {fill}, step {step}");
            if !model.is_empty() {
                let i = rng.below(model.len() as u64) as usize;
                assert_eq!(bulk_text(&h.c(&format!("LINDEX l {i}"))), model[i]);
                assert_eq!(bulk_text(&h.c(&format!("LINDEX l -{}", model.len() - i))), model[i]);
                let rev = parse_bulks(&h.c(&format!("RPOP l {}", 0)));
                assert!(rev.is_empty());
            }
        }
    }
}

#[test]
fn snapshot_digest_and_copy() {
    let mut h = H::new();
    ck(&mut h, "CONFIG SET list-max-listpack-size 3", OK);
    for i in 0..50 {
        h.c(&format!("RPUSH l e{i}"));
    }
    h.c("LPUSH small x");
    ck(&mut h, "COPY l l2", int(1));
    ck(&mut h, "RPOP l2", bulk("e49"));
    ck(&mut h, "LLEN l", int(50));
    ck(&mut h, "TYPE l2", "+list\r\n");
    let mut dump = Vec::new();
    let (mut db, mut cur) = (0, 0);
    loop {
        let c = h.e.dump(db, cur, 64);
        dump.extend_from_slice(&c.data);
        if c.done {
            break;
        }
        (db, cur) = (c.next_db, c.next_cursor);
    }
    let mut e2 = memoria_core::Engine::new(99);
    assert_eq!(e2.load(&dump), Ok(3));
    assert_eq!(e2.digest(), h.e.digest());
    // Order is part of a list's digest.
    let mut a = H::new();
    a.c("RPUSH l x y");
    let mut b = H::new();
    b.c("RPUSH l y x");
    assert_ne!(a.e.digest(), b.e.digest());
    assert!(e2.load(&[0, 17, 255, 255, 255, 255, 255, 255, 255, 255, 1, 0, 0, 0, b'k', 0, 0, 0, 0]).is_err(), "an empty list is refused");
    assert!(e2.load(&[0, 17, 255, 255, 255, 255, 255, 255, 255, 255, 1, 0, 0, 0, b'k', 5, 0, 0, 0]).is_err(), "a truncated list is refused");
}

/// Drives several clients through the batch protocol directly.
struct Multi {
    e: memoria_core::Engine,
    now_ms: i64,
}

struct Out {
    kind: u8,
    client: u64,
    flags: u8,
    reply: String,
    raw: Vec<u8>,
    effects: usize,
}

impl Multi {
    fn new() -> Multi {
        Multi { e: memoria_core::Engine::new(1), now_ms: 1_700_000_000_000 }
    }

    /// One batch of (client, command) plus raw records; returns every output record.
    fn batch(&mut self, cmds: &[(u64, &str)], extra: &[(u8, u64)]) -> Vec<Out> {
        let mut b = BatchWriter::new();
        for (c, line) in cmds {
            let args: Vec<&str> = line.split(' ').collect();
            b.begin(batch::REC_COMMAND, *c);
            encode_command(&mut b.buf, &args);
            b.end();
        }
        for &(kind, c) in extra {
            b.record(kind, c, b"");
        }
        let out = self.e.execute(&b.buf, self.now_ms * 1000, 5);
        OutputReader::new(&out)
            .map(|r| Out {
                kind: r.kind,
                client: r.client,
                flags: r.flags,
                reply: String::from_utf8_lossy(r.reply).into_owned(),
                raw: r.reply.to_vec(),
                effects: r.effects.len(),
            })
            .collect()
    }
}

/// CLIENT KILL at the engine boundary: the kill is an extra REC_KILL record for the host;
/// what the killed client sent after it in the same batch runs not at all (an empty,
/// closing answer with no effects), and a killed blocked client takes nothing.
#[test]
fn client_kill_at_the_engine_boundary() {
    let mut m = Multi::new();
    let out = m.batch(&[(1, "SET x 1"), (3, "BLPOP q 0")], &[]);
    assert_eq!(out[1].flags & batch::OUT_BLOCKED, batch::OUT_BLOCKED);
    let out = m.batch(&[(2, "CLIENT KILL ID 1"), (1, "SET after-kill 1"), (2, "CLIENT KILL ID 3"), (2, "RPUSH q a"), (2, "EXISTS after-kill")], &[]);
    let got: Vec<(u8, u64, &str)> = out.iter().map(|o| (o.kind, o.client, o.reply.as_str())).collect();
    assert_eq!(
        got,
        [
            (batch::REC_COMMAND, 2, ":1\r\n"),
            (batch::REC_KILL, 1, ""),
            (batch::REC_COMMAND, 1, ""),
            (batch::REC_COMMAND, 2, ":1\r\n"),
            (batch::REC_KILL, 3, ""),
            (batch::REC_COMMAND, 2, ":1\r\n"),
            (batch::REC_COMMAND, 2, ":0\r\n"),
        ]
    );
    assert_eq!((out[2].flags & batch::OUT_CLOSE, out[2].effects), (batch::OUT_CLOSE, 0));
    let out = m.batch(&[(2, "LLEN q")], &[]);
    assert_eq!(out[0].reply, int(1));
}

#[test]
fn blocking_protocol_at_the_engine_boundary() {
    let mut m = Multi::new();
    // Client 1 blocks; its next command in the same batch is deferred; client 2 pushes and
    // client 1 is served right after the push, before client 3's LPOP.
    let out = m.batch(&[(1, "BLPOP q 5"), (1, "PING"), (2, "RPUSH q a"), (3, "LPOP q")], &[]);
    assert_eq!(out.len(), 5);
    assert_eq!((out[0].client, out[0].flags & batch::OUT_BLOCKED), (1, batch::OUT_BLOCKED));
    assert_eq!(out[0].raw, (m.now_ms + 5000).to_le_bytes(), "the deadline");
    assert_eq!((out[1].client, out[1].flags & batch::OUT_DEFERRED, out[1].reply.as_str()), (1, batch::OUT_DEFERRED, ""));
    assert_eq!(out[2].reply, int(1));
    assert_eq!((out[3].kind, out[3].client), (batch::REC_UNBLOCKED, 1));
    assert_eq!(out[3].flags & batch::OUT_UNBLOCKED, batch::OUT_UNBLOCKED);
    assert_eq!(out[3].reply, "*2\r\n$1\r\nq\r\n$1\r\na\r\n");
    assert!(out[3].effects > 0, "the served pop replicates");
    assert_eq!((out[4].client, out[4].reply.as_str()), (3, NIL));

    // A deadline: REC_UNBLOCK answers with the timeout reply; a second one finds nothing.
    let out = m.batch(&[(1, "BRPOP q 0")], &[]);
    assert_eq!(out[0].raw, 0i64.to_le_bytes(), "no deadline");
    let out = m.batch(&[], &[(batch::REC_UNBLOCK, 1), (batch::REC_UNBLOCK, 1)]);
    assert_eq!((out[0].kind, out[0].flags & batch::OUT_UNBLOCKED, out[0].reply.as_str()), (batch::REC_UNBLOCK, batch::OUT_UNBLOCKED, NILARR));
    assert_eq!((out[1].flags, out[1].reply.as_str()), (0, ""));

    // RESP3 timeout, CLIENT UNBLOCK ERROR from another client.
    m.batch(&[(4, "HELLO 3")], &[]);
    m.batch(&[(4, "BLMOVE x y LEFT LEFT 0")], &[]);
    let out = m.batch(&[], &[(batch::REC_UNBLOCK, 4)]);
    assert_eq!(out[0].reply, "_\r\n");
    m.batch(&[(4, "BLMPOP 0 1 x LEFT")], &[]);
    let out = m.batch(&[(5, "CLIENT UNBLOCK 4 ERROR"), (5, "CLIENT UNBLOCK 4 ERROR")], &[]);
    assert_eq!(out[0].reply, int(1));
    assert_eq!((out[1].kind, out[1].client, out[1].reply.as_str()), (batch::REC_UNBLOCKED, 4, "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"));
    assert_eq!(out[2].reply, int(0));

    // Waiters in FIFO order, a disconnected one forgotten, INFO counts them.
    for c in [10, 11, 12] {
        m.batch(&[(c, "BLPOP w 0")], &[]);
    }
    assert!(m.batch(&[(9, "INFO clients")], &[])[0].reply.contains("blocked_clients:3"));
    m.batch(&[], &[(batch::REC_DISCONNECT, 10)]);
    let out = m.batch(&[(9, "RPUSH w 1 2 3")], &[]);
    let served: Vec<(u64, String)> = out[1..].iter().map(|o| (o.client, o.reply.clone())).collect();
    assert_eq!(served, vec![(11, "*2\r\n$1\r\nw\r\n$1\r\n1\r\n".to_string()), (12, "*2\r\n$1\r\nw\r\n$1\r\n2\r\n".to_string())]);
    assert_eq!(m.batch(&[(9, "LRANGE w 0 -1")], &[])[0].reply, bulks(&["3"]));
    assert!(m.batch(&[(9, "INFO clients")], &[])[0].reply.contains("blocked_clients:0"));
}

/// A list that arrives in a waiter's database by MOVE or SWAPDB serves it, as in Redis
/// (dbAdd and scanDatabaseForReadyKeys signal the key).
#[test]
fn waiters_are_served_by_move_and_swapdb() {
    let mut m = Multi::new();
    m.batch(&[(1, "SELECT 1"), (1, "BLPOP q 0")], &[]);
    let out = m.batch(&[(2, "RPUSH q a b"), (2, "MOVE q 1")], &[]);
    assert_eq!(out[1].reply, int(1));
    assert_eq!((out[2].kind, out[2].client, out[2].reply.as_str()), (batch::REC_UNBLOCKED, 1, "*2\r\n$1\r\nq\r\n$1\r\na\r\n"));
    // Client 3 waits in database 4; database 1's list comes to it by SWAPDB.
    m.batch(&[(3, "SELECT 4"), (3, "BRPOP q 0")], &[]);
    let out = m.batch(&[(2, "SWAPDB 1 4")], &[]);
    assert_eq!(out[0].reply, "+OK\r\n");
    assert_eq!((out[1].kind, out[1].client, out[1].reply.as_str()), (batch::REC_UNBLOCKED, 3, "*2\r\n$1\r\nq\r\n$1\r\nb\r\n"));
    // A waiter whose key is not in the incoming database keeps waiting.
    m.batch(&[(5, "SELECT 6"), (5, "BLPOP q 0")], &[]);
    let out = m.batch(&[(2, "SWAPDB 6 7")], &[]);
    assert_eq!(out.len(), 1);
    assert!(m.batch(&[(9, "INFO clients")], &[])[0].reply.contains("blocked_clients:1"));
}

#[test]
fn blocking_commands_without_waiting() {
    let mut h = H::new();
    ck(&mut h, "RPUSH a 1 2", int(2));
    ck(&mut h, "BLPOP nokey a 0", "*2\r\n$1\r\na\r\n$1\r\n1\r\n");
    ck(&mut h, "BRPOP a 0", "*2\r\n$1\r\na\r\n$1\r\n2\r\n");
    ck(&mut h, "SET s v", OK);
    ck(&mut h, "BLPOP nokey s 0", err(WT));
    ck(&mut h, "BLMOVE s x LEFT LEFT 0", err(WT));
    ck(&mut h, "BLPOP a abc", err("ERR timeout is not a float or out of range"));
    ck(&mut h, "BLPOP a -0.5", err("ERR timeout is negative"));
    ck(&mut h, "BLPOP a 1e400", err("ERR timeout is negative"));
    ck(&mut h, "BLMPOP x 1 a LEFT", err("ERR timeout is not a float or out of range"));
    ck(&mut h, "BLMPOP x 0 a LEFT", err("ERR numkeys should be greater than 0"));
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "BLPOP a 0", "+QUEUED\r\n");
    ck(&mut h, "BRPOPLPUSH a b 0", "+QUEUED\r\n");
    ck(&mut h, "EXEC", "*2\r\n*-1\r\n$-1\r\n");
}
