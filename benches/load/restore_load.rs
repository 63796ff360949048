//! RESTORE load for `benches/load/run.sh -t restore`: redis-benchmark cannot send a DUMP
//! payload (its arguments are C strings, and every payload holds NUL bytes: the RDB
//! version is two bytes, 10 and 0). It takes the payload from the server it measures
//! (`SET` a value of -d bytes, `DUMP` it), then -c connections send
//! `RESTORE key:<random of -r> 0 <payload> REPLACE` in pipelines of -P until -n requests,
//! and it prints one line as redis-benchmark's `--csv` does: the header, then
//! `"RESTORE","rps","avg","min","p50","p95","p99","max"` (latencies in ms, per pipeline).
//!
//!   restore-load -p PORT [-h 127.0.0.1] [-c 50] [-P 1] [-n 100000] [-d 1000] [-r 100000]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use memoria_core::protocol::resp::encode_command;

struct Opts {
    host: String,
    port: u16,
    clients: usize,
    pipeline: u64,
    requests: u64,
    size: usize,
    keyspace: u64,
}

fn opts() -> anyhow::Result<Opts> {
    let mut o = Opts { host: "127.0.0.1".into(), port: 0, clients: 50, pipeline: 1, requests: 100_000, size: 1000, keyspace: 100_000 };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))?;
        match flag.as_str() {
            "-h" => o.host = value,
            "-p" => o.port = value.parse()?,
            "-c" => o.clients = value.parse()?,
            "-P" => o.pipeline = value.parse()?,
            "-n" => o.requests = value.parse()?,
            "-d" => o.size = value.parse()?,
            "-r" => o.keyspace = value.parse()?,
            _ => anyhow::bail!("unknown option {flag}"),
        }
    }
    anyhow::ensure!(
        o.port != 0 && o.clients > 0 && o.pipeline > 0 && o.keyspace > 0,
        "usage: restore-load -p PORT [-h HOST] [-c N] [-P N] [-n N] [-d BYTES] [-r KEYS]"
    );
    Ok(o)
}

/// One reply's first line, and a bulk string's body when it is one.
fn read_reply(r: &mut BufReader<TcpStream>) -> anyhow::Result<(String, Vec<u8>)> {
    let mut line = String::new();
    r.read_line(&mut line)?;
    anyhow::ensure!(line.ends_with("\r\n"), "connection closed");
    let line = line.trim_end().to_string();
    if let Some(n) = line.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
        let mut body = vec![0; n + 2];
        std::io::Read::read_exact(r, &mut body)?;
        body.truncate(n);
        return Ok((line, body));
    }
    Ok((line, Vec::new()))
}

/// The payload of a `size`-byte string, as the server itself dumps it.
fn payload(o: &Opts) -> anyhow::Result<Vec<u8>> {
    let s = TcpStream::connect((o.host.as_str(), o.port))?;
    let mut w = s.try_clone()?;
    let mut r = BufReader::new(s);
    let mut req = Vec::new();
    encode_command::<&[u8]>(&mut req, &[b"SET", b"restore-load:payload", &vec![b'x'; o.size]]);
    encode_command::<&[u8]>(&mut req, &[b"DUMP", b"restore-load:payload"]);
    encode_command::<&[u8]>(&mut req, &[b"DEL", b"restore-load:payload"]);
    w.write_all(&req)?;
    let (set, _) = read_reply(&mut r)?;
    anyhow::ensure!(set == "+OK", "SET: {set}");
    let (head, body) = read_reply(&mut r)?;
    anyhow::ensure!(head.starts_with('$') && !body.is_empty(), "DUMP: {head}");
    read_reply(&mut r)?;
    Ok(body)
}

fn main() -> anyhow::Result<()> {
    let o = opts()?;
    let payload = Arc::new(payload(&o)?);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut threads = Vec::new();
    for c in 0..o.clients {
        let (payload, next) = (payload.clone(), next.clone());
        let (host, port, pipeline, requests, keyspace) = (o.host.clone(), o.port, o.pipeline, o.requests, o.keyspace);
        threads.push(std::thread::spawn(move || -> anyhow::Result<Vec<Duration>> {
            let s = TcpStream::connect((host.as_str(), port))?;
            s.set_nodelay(true)?;
            let mut w = s.try_clone()?;
            let mut r = BufReader::new(s);
            // A cheap per-connection generator (xorshift): keys spread over the keyspace.
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (c as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            let mut latencies = Vec::new();
            let mut req = Vec::new();
            loop {
                let first = next.fetch_add(pipeline, Ordering::Relaxed);
                if first >= requests {
                    return Ok(latencies);
                }
                let n = pipeline.min(requests - first);
                req.clear();
                for _ in 0..n {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let key = format!("key:{:012}", x % keyspace);
                    encode_command::<&[u8]>(&mut req, &[b"RESTORE", key.as_bytes(), b"0", &payload, b"REPLACE"]);
                }
                let t = Instant::now();
                w.write_all(&req)?;
                for _ in 0..n {
                    let (reply, _) = read_reply(&mut r)?;
                    anyhow::ensure!(reply == "+OK", "RESTORE: {reply}");
                }
                latencies.push(t.elapsed());
            }
        }));
    }
    let mut all = Vec::new();
    for t in threads {
        all.extend(t.join().map_err(|_| anyhow::anyhow!("a client thread panicked"))??);
    }
    let secs = started.elapsed().as_secs_f64();
    all.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| ms(all[((all.len() - 1) as f64 * q) as usize]);
    let avg = all.iter().map(|d| ms(*d)).sum::<f64>() / all.len().max(1) as f64;
    println!("\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"");
    println!(
        "\"RESTORE\",\"{:.2}\",\"{avg:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\"",
        o.requests as f64 / secs,
        at(0.0),
        at(0.5),
        at(0.95),
        at(0.99),
        at(1.0)
    );
    Ok(())
}
