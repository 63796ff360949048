//! Replica read-your-log lag: a client writes `SET k i` to the primary; the moment the
//! acknowledgement arrives, another connection polls the replica with `GET k` until it
//! returns `i`. The lag is that polling time (loopback round trips included, a few tens of
//! µs each). Memoria: `memoria up --replicas 1` (the replica tails the log service, never
//! the primary). Redis: redis-server with a `--replicaof` replica (asynchronous
//! replication straight from the primary) in the same run. Prints p50/p99/max.
//!
//!   cargo bench -p memoria-benches --bench replica_lag [-- SAMPLES]

#[path = "support.rs"]
mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{Proc, free_port};

struct Conn {
    r: BufReader<TcpStream>,
}

impl Conn {
    fn connect(port: u16) -> Conn {
        Conn { r: BufReader::new(support::connect(port)) }
    }

    fn cmd(&mut self, args: &[&str]) -> String {
        let mut b = format!("*{}\r\n", args.len());
        for a in args {
            b.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        self.r.get_mut().write_all(b.as_bytes()).unwrap();
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        if let Some(n) = line.strip_prefix('$') {
            let n: i64 = n.trim().parse().unwrap();
            if n < 0 {
                return "(nil)".into();
            }
            let mut body = vec![0u8; n as usize + 2];
            std::io::Read::read_exact(&mut self.r, &mut body).unwrap();
            body.truncate(n as usize);
            return String::from_utf8(body).unwrap();
        }
        line.trim_end().to_string()
    }
}

/// Lag samples: write on `primary`, poll `replica` until the value shows.
fn measure(primary: u16, replica: u16, samples: usize) -> Vec<Duration> {
    let mut w = Conn::connect(primary);
    let mut r = Conn::connect(replica);
    // Warm up, and wait until the replica follows at all.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert_eq!(w.cmd(&["SET", "lag:warm", "1"]), "+OK");
        if r.cmd(&["GET", "lag:warm"]) == "1" {
            break;
        }
        assert!(Instant::now() < deadline, "the replica never caught up");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut out = Vec::with_capacity(samples);
    for i in 0..samples {
        let v = i.to_string();
        assert_eq!(w.cmd(&["SET", "lag:k", &v]), "+OK");
        let acked = Instant::now();
        while r.cmd(&["GET", "lag:k"]) != v {
            assert!(acked.elapsed() < Duration::from_secs(10), "sample {i} never reached the replica");
        }
        out.push(acked.elapsed());
        // Spread the samples over the primary's renewal cycle and batching.
        std::thread::sleep(Duration::from_micros(500 + (i as u64 * 7919) % 2000));
    }
    out
}

fn summary(name: &str, xs: &mut [Duration]) -> (f64, f64) {
    xs.sort();
    let q = |p: f64| xs[((xs.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1000.0;
    println!("| {name} | {} | {:.3} | {:.3} | {:.3} |", xs.len(), q(0.5), q(0.99), q(1.0));
    (q(0.5), q(0.99))
}

fn main() {
    let samples: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(2000);
    let dir = std::env::temp_dir().join(format!("memoria-lag-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    // Memoria: the supervisor, a primary and a replica.
    let (_up, _) = support::memoria_up(&dir, &["--replicas", "1"]);
    let cluster = dir.join("cluster.json");
    let deadline = Instant::now() + Duration::from_secs(60);
    let (primary, replica) = loop {
        let text = std::fs::read_to_string(&cluster).unwrap_or_default();
        let file: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let roles: Vec<(u16, String)> =
            file["nodes"].as_array().into_iter().flatten().filter_map(|n| Some((n["port"].as_u64()? as u16, n["role"].as_str()?.to_string()))).collect();
        let p = roles.iter().find(|(_, r)| r == "primary").map(|x| x.0);
        let r = roles.iter().find(|(_, r)| r == "replica").map(|x| x.0);
        if let (Some(p), Some(r)) = (p, r) {
            break (p, r);
        }
        assert!(Instant::now() < deadline, "memoria up did not elect a primary: {text}");
        std::thread::sleep(Duration::from_millis(50));
    };

    // redis-server: a primary and a replica.
    let (rp, rr) = (free_port(), free_port());
    let redis = |port: u16, extra: &[&str]| {
        Proc(
            Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .args(extra)
                .stdout(Stdio::null())
                .spawn()
                .expect("redis-server (apt-get install redis-server)"),
        )
    };
    let _redis_primary = redis(rp, &[]);
    let _redis_replica = redis(rr, &["--replicaof", "127.0.0.1", &rp.to_string()]);

    println!("Replica lag: acknowledged on the primary -> visible on the replica ({samples} samples each)\n");
    println!("| server | samples | p50 ms | p99 ms | max ms |");
    println!("|---|---:|---:|---:|---:|");
    let (_, r99) = summary("redis-server 7.0 (async replication)", &mut measure(rp, rr, samples));
    let (_, m99) = summary("Memoria (replica tails the log)", &mut measure(primary, replica, samples));
    println!("\np99 Memoria/Redis: {:.2}x", m99 / r99.max(1e-9));
    let _ = std::fs::remove_dir_all(&dir);
}
