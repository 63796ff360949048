//! What client-side caching costs the server: GETs (pipeline 1, 100-byte values, random
//! keys of 100,000) from N RESP3 connections with `CLIENT TRACKING ON` against the same
//! without it, at the port users use (`memoria up`'s endpoint), with redis-server 7.0 in
//! the same run for reference. Tracking on, every GET remembers its key for its client
//! (the table grows as a cache's would). Rounds alternate off/on so a busy machine slows
//! both alike; prints the median throughput of each and the on/off ratio (issue 24 asks
//! Memoria's to stay at or above 0.9).
//!
//!   cargo bench -p memoria-benches --bench tracking
//!
//! `MEMORIA_BENCH_CLIENTS` (default "50 500"), `MEMORIA_BENCH_SECS` (per round, default 3),
//! `MEMORIA_BENCH_ROUNDS` (default 3).

#[path = "support.rs"]
mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use support::{Proc, connect, free_port};

const KEYS: u64 = 100_000;
const VALUE: usize = 100;

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut b = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        b.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        b.extend_from_slice(a);
        b.extend_from_slice(b"\r\n");
    }
    b
}

/// Sends `request` and reads until the bytes received end with `until`.
fn exchange(s: &mut TcpStream, request: &[u8], until: &[u8]) {
    s.write_all(request).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.ends_with(until) {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed; got {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key:{i:012}").into_bytes()
}

fn preload(port: u16) {
    let mut s = connect(port);
    let value = vec![b'v'; VALUE];
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(1000) {
        let keys: Vec<Vec<u8>> = chunk.iter().map(|&i| key(i)).collect();
        let mut args: Vec<&[u8]> = vec![b"MSET"];
        for k in &keys {
            args.push(k);
            args.push(&value);
        }
        exchange(&mut s, &encode(&args), b"+OK\r\n");
    }
}

/// GETs per second from `clients` connections for `secs`, each in RESP3, tracking or not.
fn measure(port: u16, clients: usize, tracking: bool, secs: u64) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicU64::new(0));
    let ready = Arc::new(Barrier::new(clients + 1));
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let (stop, total, ready) = (stop.clone(), total.clone(), ready.clone());
            std::thread::spawn(move || {
                let mut s = connect(port);
                exchange(&mut s, &[encode(&[b"HELLO", b"3"]), encode(&[b"PING"])].concat(), b"+PONG\r\n");
                if tracking {
                    exchange(&mut s, &encode(&[b"CLIENT", b"TRACKING", b"ON"]), b"+OK\r\n");
                }
                let mut reply = vec![0u8; VALUE + 8];
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ c as u64;
                let mut n = 0u64;
                ready.wait();
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    s.write_all(&encode(&[b"GET", &key(x % KEYS)])).unwrap();
                    // `$100\r\n` + value + `\r\n`: every key exists, and GET-only load
                    // invalidates nothing, so no push comes between replies.
                    s.read_exact(&mut reply).unwrap();
                    n += 1;
                }
                total.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    ready.wait();
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    total.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[xs.len() / 2]
}

fn main() {
    let clients: Vec<usize> = env("MEMORIA_BENCH_CLIENTS", "50 500").split_whitespace().filter_map(|c| c.parse().ok()).collect();
    let secs: u64 = env("MEMORIA_BENCH_SECS", "3").parse().unwrap();
    let rounds: usize = env("MEMORIA_BENCH_ROUNDS", "3").parse().unwrap();
    let dir = std::env::temp_dir().join(format!("memoria-tracking-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    // `memoria up` as users run it (durable, a replica); its documented endpoint.
    let (_up, port) = support::memoria_up(&dir, &["--no-console"]);
    let rport = free_port();
    let _redis = Proc(
        Command::new("redis-server")
            .args(["--port", &rport.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server (apt-get install redis-server)"),
    );
    preload(port);
    preload(rport);

    println!("GET with CLIENT TRACKING ON vs off (RESP3, pipeline 1, {KEYS} keys, median of {rounds} rounds of {secs} s)\n");
    println!("| server | clients | GET/s tracking off | GET/s tracking on | on/off |");
    println!("|---|---:|---:|---:|---:|");
    for &n in &clients {
        for (name, p) in [("redis-server 7.0", rport), ("Memoria (memoria up endpoint)", port)] {
            let (mut off, mut on) = (Vec::new(), Vec::new());
            for r in 0..rounds {
                // Alternate which goes first, so a drift in the machine's load hits both.
                if r % 2 == 0 {
                    off.push(measure(p, n, false, secs));
                    on.push(measure(p, n, true, secs));
                } else {
                    on.push(measure(p, n, true, secs));
                    off.push(measure(p, n, false, secs));
                }
            }
            let (off, on) = (median(off), median(on));
            println!("| {name} | {n} | {off:.0} | {on:.0} | {:.2}x |", on / off);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
