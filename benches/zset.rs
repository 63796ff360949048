//! Sorted-set complexity: ZADD (update of an existing member's score: a delete and an
//! insert), ZRANK and ZRANGE of 10 elements at a random rank, on one sorted set of
//! 1k / 100k / 1M members, through the native engine in batches of 64. Redis documents
//! these as O(log n) and O(log n + m): the time per command should grow by a small factor
//! from 1k to 1M, never by the 1000× a linear structure would show.
//!
//!     cargo bench -p memoria-benches --bench zset
//!     MEMORIA_BENCH_SUMMARY_ONLY=1 cargo bench -p memoria-benches --bench zset   # table only
//!
//! At the end it prints a table of ns per command per size and the ratio to the 1k size.
//! Environment: `MEMORIA_ZSET_SIZES` (comma-separated, default 1000,100000,1000000),
//! `MEMORIA_BENCH_SECS` (criterion measurement seconds, default 2).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use memoria_core::Engine;
use memoria_core::protocol::batch::{self, BatchWriter, OutputReader};

const BATCH: usize = 64;
const NOW_US: i64 = 1_700_000_000_000_000;
/// Distinct batches cycled through per (op, size).
const BATCHES: usize = 256;

#[derive(Clone, Copy, Debug)]
enum Op {
    Zadd,
    Zrank,
    Zrange,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Zadd => "ZADD",
            Op::Zrank => "ZRANK",
            Op::Zrange => "ZRANGE(10)",
        }
    }
}

fn member(i: u64) -> String {
    format!("member:{i:012}")
}

fn sizes() -> Vec<u64> {
    std::env::var("MEMORIA_ZSET_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 100_000, 1_000_000])
}

/// An engine holding `zs` with n members, scores 0..n, inserted in a shuffled order (as a
/// real workload would: memory order then has nothing to do with score order).
fn loaded(n: u64) -> Engine {
    let mut e = Engine::new(11);
    let mut cmd = Vec::new();
    let mut order: Vec<u64> = (0..n).collect();
    let mut rng = memoria_core::util::Rng::new(n);
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut next = order.into_iter().peekable();
    while next.peek().is_some() {
        let mut b = BatchWriter::new();
        let mut args: Vec<Vec<u8>> = vec![b"ZADD".to_vec(), b"zs".to_vec()];
        for i in next.by_ref().take(1000) {
            args.push(i.to_string().into_bytes());
            args.push(member(i).into_bytes());
        }
        cmd.clear();
        memoria_core::protocol::resp::encode_command(&mut cmd, &args);
        b.record(batch::REC_COMMAND, 1, &cmd);
        let out = e.execute(&b.buf, NOW_US, 1);
        assert!(OutputReader::new(&out).all(|r| r.reply.starts_with(b":")));
    }
    e
}

fn workload(op: Op, n: u64) -> Vec<Vec<u8>> {
    let mut rng = memoria_core::util::Rng::new(0x5eed ^ n);
    let mut cmd = Vec::new();
    (0..BATCHES)
        .map(|_| {
            let mut b = BatchWriter::new();
            for _ in 0..BATCH {
                let i = rng.below(n);
                cmd.clear();
                match op {
                    // XX: the set keeps its size, each command moves one member.
                    Op::Zadd => memoria_core::protocol::resp::encode_command(&mut cmd, &["ZADD", "zs", "XX", &rng.below(n).to_string(), &member(i)]),
                    Op::Zrank => memoria_core::protocol::resp::encode_command(&mut cmd, &["ZRANK", "zs", &member(i)]),
                    Op::Zrange => {
                        let s = i.min(n - 10);
                        memoria_core::protocol::resp::encode_command(&mut cmd, &["ZRANGE", "zs", &s.to_string(), &(s + 9).to_string()])
                    }
                }
                b.record(batch::REC_COMMAND, 1, &cmd);
            }
            b.buf
        })
        .collect()
}

fn check(op: Op, out: &[u8]) {
    for r in OutputReader::new(out).filter(|r| r.kind == batch::REC_COMMAND) {
        let ok = match op {
            Op::Zadd => r.reply == b":0\r\n",
            Op::Zrank => r.reply.starts_with(b":"),
            Op::Zrange => r.reply.starts_with(b"*10\r\n"),
        };
        assert!(ok, "{op:?} reply {:?}", String::from_utf8_lossy(r.reply));
    }
}

fn ns_per_cmd(e: &mut Engine, batches: &[Vec<u8>], budget: Duration) -> f64 {
    let start = Instant::now();
    let mut cmds = 0usize;
    let mut i = 0usize;
    loop {
        for _ in 0..8 {
            black_box(e.execute(&batches[i % batches.len()], NOW_US, 7).len());
            i += 1;
            cmds += BATCH;
        }
        if start.elapsed() >= budget {
            return start.elapsed().as_nanos() as f64 / cmds as f64;
        }
    }
}

fn main() {
    let summary_only = std::env::var("MEMORIA_BENCH_SUMMARY_ONLY").is_ok();
    let secs: u64 = std::env::var("MEMORIA_BENCH_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
    let mut c = Criterion::default().measurement_time(Duration::from_secs(secs)).warm_up_time(Duration::from_millis(500)).configure_from_args();
    let ops = [Op::Zadd, Op::Zrank, Op::Zrange];
    let mut table: Vec<(u64, [f64; 3])> = Vec::new();
    for n in sizes() {
        let mut e = loaded(n);
        let mut row = [0.0; 3];
        for (k, op) in ops.iter().enumerate() {
            let batches = workload(*op, n);
            check(*op, &e.execute(&batches[0], NOW_US, 7));
            if !summary_only {
                let mut g = c.benchmark_group(format!("zset/{}", op.name()));
                g.throughput(criterion::Throughput::Elements(BATCH as u64));
                let mut next = 0usize;
                g.bench_function(BenchmarkId::from_parameter(n), |b| {
                    b.iter(|| {
                        let out = e.execute(&batches[next % batches.len()], NOW_US, 7);
                        next += 1;
                        black_box(out.len())
                    })
                });
                g.finish();
            }
            // Median of 5 short runs for the table.
            let mut v: Vec<f64> = (0..5).map(|_| ns_per_cmd(&mut e, &batches, Duration::from_millis(200))).collect();
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            row[k] = v[2];
        }
        table.push((n, row));
    }
    println!();
    println!("Sorted set, native engine, batches of {BATCH}: ns per command (median of 5 × 200 ms) and the ratio to the smallest size");
    println!();
    println!("| members | ZADD XX ns | ZRANK ns | ZRANGE 10 ns | ZADD ×1k | ZRANK ×1k | ZRANGE ×1k |");
    println!("|--------:|-----------:|---------:|-------------:|---------:|----------:|-----------:|");
    let base = table[0].1;
    for (n, r) in &table {
        println!("| {n} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} | {:.2} |", r[0], r[1], r[2], r[0] / base[0], r[1] / base[1], r[2] / base[2]);
    }
    c.final_summary();
}
