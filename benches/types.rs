//! The write workloads of `redis-benchmark -t lpush,lpop,sadd,zadd,hset -r 1000000 -d 100`
//! through the engine alone, native and as the component: the same commands redis-benchmark
//! sends (one list `mylist` that grows by every LPUSH, random `element:<12 digits>` members
//! for SADD/ZADD/HSET, random ZADD scores), in batches of 64, so a change to a data type can
//! be measured without the network and the event loop around it.
//!
//!     cargo bench -p memoria-benches --bench types
//!
//! Prints ns per command for each (op, engine), over the whole stream and its last tenth. Environment: `MEMORIA_TYPES_N` (commands per
//! op, default 1000000), `MEMORIA_TYPES_OPS` (comma-separated subset, default all five),
//! `MEMORIA_TYPES_NATIVE=0` to skip the native engine.

use std::hint::black_box;
use std::time::Instant;

use memoria_core::Engine;
use memoria_core::protocol::batch::{self, BatchWriter, OutputReader};
use memoria_host::wasm::{EngineFactory, ShardEngine};

const BATCH: usize = 64;
const KEYSPACE: u64 = 1_000_000;
const NOW_US: i64 = 1_700_000_000_000_000;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// redis-benchmark's `element:__rand_int__` (12 zero-padded digits).
fn element(i: u64) -> String {
    format!("element:{i:012}")
}

fn workload(op: &str, n: usize) -> Vec<Vec<u8>> {
    let mut rng = memoria_core::util::Rng::new(0x7e57 ^ op.len() as u64);
    let data = vec![b'x'; 100];
    let mut cmd = Vec::new();
    let mut out = Vec::new();
    let mut b = BatchWriter::new();
    for j in 0..n {
        cmd.clear();
        let e = element(rng.below(KEYSPACE));
        match op {
            "lpush" => memoria_core::protocol::resp::encode_command(&mut cmd, &[&b"LPUSH"[..], b"mylist", &data]),
            "lpop" => memoria_core::protocol::resp::encode_command(&mut cmd, &[&b"LPOP"[..], b"mylist"]),
            "sadd" => memoria_core::protocol::resp::encode_command(&mut cmd, &[&b"SADD"[..], b"myset", e.as_bytes()]),
            "zadd" => {
                let score = rng.below(KEYSPACE).to_string();
                memoria_core::protocol::resp::encode_command(&mut cmd, &[&b"ZADD"[..], b"myzset", score.as_bytes(), e.as_bytes()])
            }
            "hset" => memoria_core::protocol::resp::encode_command(&mut cmd, &[&b"HSET"[..], b"myhash", e.as_bytes(), &data]),
            _ => panic!("unknown op {op}"),
        }
        b.record(batch::REC_COMMAND, 1 + (j % 8) as u64, &cmd);
        if (j + 1) % BATCH == 0 {
            out.push(std::mem::replace(&mut b, BatchWriter::new()).buf);
        }
    }
    if !b.buf.is_empty() {
        out.push(b.buf);
    }
    out
}

trait Exec {
    fn run(&mut self, batch: &[u8]) -> Vec<u8>;
}

impl Exec for Engine {
    fn run(&mut self, batch: &[u8]) -> Vec<u8> {
        self.execute(batch, NOW_US, 7)
    }
}

impl Exec for ShardEngine {
    fn run(&mut self, batch: &[u8]) -> Vec<u8> {
        self.execute(batch, NOW_US, 7).expect("the engine component trapped")
    }
}

fn connects() -> Vec<u8> {
    let mut b = BatchWriter::new();
    for c in 1..=8u64 {
        b.record(batch::REC_CONNECT, c, format!("127.0.0.1:{}\n127.0.0.1:6379", 40000 + c).as_bytes());
    }
    b.buf
}

/// ns per command over the whole stream and over its last tenth (where the set or list is
/// biggest); checks that no reply is an error.
fn run(e: &mut dyn Exec, batches: &[Vec<u8>]) -> (f64, f64) {
    let first = e.run(&batches[0]);
    assert!(OutputReader::new(&first).all(|r| !r.reply.starts_with(b"-")), "error replies");
    let rest = &batches[1..];
    let tail_from = rest.len() - rest.len() / 10;
    let start = Instant::now();
    let mut tail_start = start;
    for (i, b) in rest.iter().enumerate() {
        if i == tail_from {
            tail_start = Instant::now();
        }
        black_box(e.run(b).len());
    }
    let per = |t: Instant, batches: usize| t.elapsed().as_nanos() as f64 / (batches * BATCH) as f64;
    (per(start, rest.len()), per(tail_start, rest.len() - tail_from))
}

fn main() {
    let n = env_usize("MEMORIA_TYPES_N", 1_000_000);
    let ops: Vec<String> =
        std::env::var("MEMORIA_TYPES_OPS").unwrap_or_else(|_| "lpush,lpop,sadd,zadd,hset".into()).split(',').map(|s| s.trim().to_lowercase()).collect();
    let native_too = std::env::var("MEMORIA_TYPES_NATIVE").map(|v| v != "0").unwrap_or(true);
    let factory = EngineFactory::new().expect("compile the engine component");
    let mut native = Engine::new(42);
    let mut wasm = factory.instantiate(42).expect("instantiate the engine component");
    native.run(&connects());
    wasm.run(&connects());
    println!("| op | commands | native ns/cmd | component ns/cmd | native, last tenth | component, last tenth |");
    println!("|----|---------:|--------------:|-----------------:|-------------------:|----------------------:|");
    for op in &ops {
        let batches = workload(op, n);
        let (nat, nat_tail) = if native_too {
            let (a, b) = run(&mut native, &batches);
            (format!("{a:.0}"), format!("{b:.0}"))
        } else {
            ("-".into(), "-".into())
        };
        let (w, w_tail) = run(&mut wasm, &batches);
        println!("| {} | {n} | {nat} | {w:.0} | {nat_tail} | {w_tail:.0} |", op.to_uppercase());
    }
}
