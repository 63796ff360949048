//! What the watchdog costs: the engine component compiled with epoch checks (the default;
//! `engine-call-timeout` works) against the same component without them, on the same
//! batches of GET, SET, and SORT (a loop-heavy command), alternating in short rounds so a
//! busy machine slows both alike. Prints the time per command of each and the ratio.
//! The watchdog stays on by default only while the ratio is within 3 % (issue 21).
//!
//!     cargo bench -p memoria-benches --bench watchdog
//!
//! `MEMORIA_BENCH_KEYS` (preloaded keys, default 100000), `MEMORIA_BENCH_ROUNDS`
//! (alternating rounds, default 21).

use std::time::{Duration, Instant};

use memoria_core::protocol::batch::{self, BatchWriter, OutputReader};
use memoria_core::protocol::resp::encode_command;
use memoria_host::wasm::{EngineFactory, ShardEngine};

const NOW_US: i64 = 1_700_000_000_000_000;
const BATCH: usize = 64;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn batch_of(cmds: &[Vec<Vec<u8>>]) -> Vec<u8> {
    let mut b = BatchWriter::new();
    let mut cmd = Vec::new();
    for (i, argv) in cmds.iter().enumerate() {
        cmd.clear();
        encode_command(&mut cmd, argv);
        b.record(batch::REC_COMMAND, 1 + (i as u64 % 8), &cmd);
    }
    b.buf
}

fn run(e: &mut ShardEngine, b: &[u8]) -> usize {
    let out = e.execute(b, NOW_US, 1).expect("execute");
    let n = OutputReader::new(&out).filter(|r| r.kind == batch::REC_COMMAND).count();
    assert!(OutputReader::new(&out).all(|r| !r.reply.starts_with(b"-")), "an error reply: the bench would measure an error path");
    n
}

fn engine(factory: &EngineFactory, keys: u64) -> ShardEngine {
    let mut e = factory.instantiate(42).expect("instantiate");
    let mut b = BatchWriter::new();
    for c in 1..=8u64 {
        b.record(batch::REC_CONNECT, c, format!("127.0.0.1:{}\n127.0.0.1:6379", 40000 + c).as_bytes());
    }
    e.execute(&b.buf, NOW_US, 1).expect("connect");
    for chunk in (0..keys).collect::<Vec<_>>().chunks(1000) {
        let cmds: Vec<Vec<Vec<u8>>> = chunk.iter().map(|i| vec![b"SET".to_vec(), format!("key:{i:012}").into_bytes(), vec![b'v'; 100]]).collect();
        run(&mut e, &batch_of(&cmds));
    }
    let members: Vec<Vec<u8>> = std::iter::once(b"RPUSH".to_vec())
        .chain(std::iter::once(b"list".to_vec()))
        .chain((0..1000u64).map(|i| format!("m{}", (i * 7919) % 1009).into_bytes()))
        .collect();
    run(&mut e, &batch_of(&[members]));
    e
}

fn main() {
    let keys = env_usize("MEMORIA_BENCH_KEYS", 100_000) as u64;
    let rounds = env_usize("MEMORIA_BENCH_ROUNDS", 21);
    let on = EngineFactory::with_watchdog(true).expect("compile with epoch checks");
    let off = EngineFactory::with_watchdog(false).expect("compile without epoch checks");
    eprintln!("preloading {keys} keys into both engines…");
    let (mut with, mut without) = (engine(&on, keys), engine(&off, keys));
    with.set_call_limit(5000);
    let key = |i: u64| format!("key:{:012}", (i * 2_654_435_761) % keys).into_bytes();
    let workloads: Vec<(&str, Vec<Vec<u8>>)> = vec![
        ("GET", (0..256).map(|j| batch_of(&(0..BATCH as u64).map(|i| vec![b"GET".to_vec(), key(j * 64 + i)]).collect::<Vec<_>>())).collect()),
        ("SET", (0..256).map(|j| batch_of(&(0..BATCH as u64).map(|i| vec![b"SET".to_vec(), key(j * 64 + i), vec![b'x'; 100]]).collect::<Vec<_>>())).collect()),
        (
            "SORT",
            (0..16)
                .map(|_| {
                    batch_of(
                        &(0..8)
                            .map(|_| vec![b"SORT".to_vec(), b"list".to_vec(), b"ALPHA".to_vec(), b"LIMIT".to_vec(), b"0".to_vec(), b"1".to_vec()])
                            .collect::<Vec<_>>(),
                    )
                })
                .collect(),
        ),
    ];
    println!("| workload | without checks (ns/cmd) | with checks (ns/cmd) | ratio |");
    println!("| --- | --- | --- | --- |");
    let mut worst: f64 = 0.0;
    for (name, batches) in &workloads {
        let (mut t_on, mut t_off, mut n) = (Duration::ZERO, Duration::ZERO, 0usize);
        for round in 0..rounds {
            // Alternate which goes first, so drift favours neither.
            for checked in [round % 2 == 0, round % 2 == 1] {
                let e = if checked { &mut with } else { &mut without };
                let t = Instant::now();
                let mut cmds = 0;
                for b in batches {
                    cmds += run(e, b);
                }
                let d = t.elapsed();
                if checked {
                    t_on += d;
                    n += cmds;
                } else {
                    t_off += d;
                }
            }
        }
        let per = |d: Duration| d.as_nanos() as f64 / n as f64;
        let ratio = per(t_on) / per(t_off);
        worst = worst.max(ratio);
        println!("| {name} | {:.0} | {:.0} | {ratio:.3}× |", per(t_off), per(t_on));
    }
    println!();
    println!("watchdog cost (worst ratio): {worst:.3}× — {}", if worst <= 1.03 { "within 3 %: on by default" } else { "over 3 %" });
}
