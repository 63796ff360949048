//! Log service benchmark: entries/s and append latency (p50/p99) for batch 1/16/128 ×
//! appenders 1/8/32 on SQLite, a single PostgreSQL and the three-AZ setup (e2e/pg3az), plus
//! tail wake-up latency. Each appender owns one log (one writer per shard, as in Memoria).
//!
//!   cargo bench -p memoria-log --bench log -- [--secs 3] [--only sqlite,pg,pg3az] [--payload 100]
//!                                             [--cells 128x8,1x1]
//!
//! Prints markdown tables. Needs PostgreSQL server binaries (see log-service/README.md).

#[path = "../log-service/tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use memoria_log::{AppendRequest, CoreOptions, LogApi, LogClient, LogCore, NewEntry, PgConfig};

const BATCHES: [usize; 3] = [1, 16, 128];
const APPENDERS: [usize; 3] = [1, 8, 32];

struct Args {
    secs: f64,
    only: Vec<String>,
    payload: usize,
    /// Only these `BATCHxAPPENDERS` cells (all when empty), e.g. `128x8`.
    cells: Vec<(usize, usize)>,
}

fn args() -> Args {
    let mut a = Args { secs: 3.0, only: vec!["sqlite".into(), "pg".into(), "pg3az".into()], payload: 100, cells: Vec::new() };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--secs" => a.secs = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.secs),
            "--only" => a.only = it.next().map(|v| v.split(',').map(str::to_owned).collect()).unwrap_or_default(),
            "--payload" => a.payload = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.payload),
            "--cells" => {
                a.cells = it
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(|c| c.split_once('x').and_then(|(b, n)| Some((b.parse().ok()?, n.parse().ok()?))))
                    .collect()
            }
            // cargo bench passes --bench; ignore what we do not know.
            _ => {}
        }
    }
    a
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

struct Cell {
    entries_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
}

/// `appenders` tasks, each appending `batch`-entry batches to its own log for `secs`.
async fn run_cell(core: &LogCore, tag: &str, batch: usize, appenders: usize, secs: f64, payload: usize) -> Cell {
    let mut tasks = Vec::new();
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let started = Instant::now();
    for a in 0..appenders {
        let core = core.clone();
        let log = format!("{tag}-b{batch}-a{appenders}-{a}");
        core.create(&log).await.expect("create");
        let entries: Vec<NewEntry> = (0..batch).map(|_| NewEntry::data(vec![0x5a; payload])).collect();
        tasks.push(tokio::spawn(async move {
            let mut prev = 0;
            let mut lat = Vec::new();
            let mut n = 0usize;
            while Instant::now() < deadline {
                let t = Instant::now();
                let a = core.append(&log, AppendRequest { prev_id: prev, epoch: 1, prev_checksum: None, entries: entries.clone() }).await.expect("append");
                lat.push(t.elapsed().as_secs_f64() * 1e3);
                prev = a.last_id;
                n += entries.len();
            }
            (n, lat)
        }));
    }
    let mut total = 0;
    let mut lat = Vec::new();
    for t in tasks {
        let (n, l) = t.await.expect("appender");
        total += n;
        lat.extend(l);
    }
    let elapsed = started.elapsed().as_secs_f64();
    lat.sort_by(f64::total_cmp);
    Cell { entries_per_s: total as f64 / elapsed, p50_ms: pct(&lat, 0.5), p99_ms: pct(&lat, 0.99) }
}

async fn matrix(name: &str, tag: &str, core: &LogCore, a: &Args) {
    println!("\n### {name}: appends (in-process core, {} B payloads, {:.0} s per cell)\n", a.payload, a.secs);
    println!("| batch | appenders | entries/s | p50 ms | p99 ms |");
    println!("|------:|----------:|----------:|-------:|-------:|");
    for b in BATCHES {
        for n in APPENDERS {
            if !a.cells.is_empty() && !a.cells.contains(&(b, n)) {
                continue;
            }
            let c = run_cell(core, tag, b, n, a.secs, a.payload).await;
            println!("| {b} | {n} | {:.0} | {:.2} | {:.2} |", c.entries_per_s, c.p50_ms, c.p99_ms);
        }
    }
}

/// Tail wake-up: a reader long-polls; the writer appends one entry at a time. Latency is
/// from the writer's acknowledgement to the reader holding the entry (0 when the reader
/// got it first: both learn of the commit independently).
/// Tail wake-up latency: a reader long-polls (in-process core or HTTP client, through
/// the same `LogApi`) while the writer appends one entry at a time.
async fn tail_latency<L: LogApi + Clone + 'static>(name: &str, writer: L, reader: L, rounds: usize) {
    let log = format!("{name}-tail");
    writer.create(&log).await.expect("create");
    let mut lat = Vec::with_capacity(rounds);
    let mut prev = 0;
    for _ in 0..rounds {
        let r = reader.clone();
        let l = log.clone();
        let after = prev;
        let waiter = tokio::spawn(async move {
            let b = r.read(&l, after, 10, Duration::from_secs(10)).await.expect("read");
            assert!(!b.entries.is_empty(), "long-poll returned nothing");
            Instant::now()
        });
        tokio::time::sleep(Duration::from_millis(3)).await; // let the reader park
        let a = writer.append(&log, prev, 1, vec![NewEntry::data(vec![1; 100])]).await.expect("append");
        let acked = Instant::now();
        prev = a.last_id;
        let got = waiter.await.expect("reader");
        lat.push(got.saturating_duration_since(acked).as_secs_f64() * 1e3);
    }
    lat.sort_by(f64::total_cmp);
    println!("| {name} | {rounds} | {:.3} | {:.3} |", pct(&lat, 0.5), pct(&lat, 0.99));
}

/// Batch 128 × 8 appenders through the HTTP service (what a remote host sees).
async fn http_cell(name: &str, clients: &[LogClient], secs: f64, payload: usize) {
    let (batch, appenders) = (128usize, 8usize);
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for a in 0..appenders {
        let c = clients[a % clients.len()].clone();
        let log = format!("{name}-http-{a}");
        c.create(&log).await.expect("create");
        tasks.push(tokio::spawn(async move {
            let entries: Vec<NewEntry> = (0..batch).map(|_| NewEntry::data(vec![0x5a; payload])).collect();
            let (mut prev, mut n, mut lat) = (0, 0usize, Vec::new());
            while Instant::now() < deadline {
                let t = Instant::now();
                let a = c.append(&log, prev, 1, entries.clone()).await.expect("append");
                lat.push(t.elapsed().as_secs_f64() * 1e3);
                prev = a.last_id;
                n += batch;
            }
            (n, lat)
        }));
    }
    let (mut total, mut lat) = (0, Vec::new());
    for t in tasks {
        let (n, l) = t.await.expect("appender");
        total += n;
        lat.extend(l);
    }
    lat.sort_by(f64::total_cmp);
    println!(
        "| {name} via HTTP | {batch} | {appenders} | {:.0} | {:.2} | {:.2} |",
        total as f64 / started.elapsed().as_secs_f64(),
        pct(&lat, 0.5),
        pct(&lat, 0.99)
    );
}

async fn pg_core(mut cfg: PgConfig) -> LogCore {
    cfg.max_connections = 48;
    LogCore::connect_pg(cfg, CoreOptions::default()).await.expect("connect")
}

fn main() {
    let a = args();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        println!("# memoria-log bench ({} cores)", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0));
        let dir = tempfile::tempdir().expect("tempdir");

        if a.only.iter().any(|o| o == "sqlite") {
            let core = LogCore::open_sqlite(dir.path().join("bench.db")).await.expect("sqlite");
            matrix("SQLite (WAL, synchronous=FULL)", "sqlite", &core, &a).await;
            println!("\n| tail wake-up | rounds | p50 ms | p99 ms |\n|---|---:|---:|---:|");
            tail_latency("sqlite-in-process", core.clone(), core, 300).await;
        }
        if a.only.iter().any(|o| o == "pg") {
            let pg = common::PgInstance::start();
            let core = pg_core(pg.config()).await;
            matrix("PostgreSQL single", "pg", &core, &a).await;
            let other = pg_core(pg.config()).await;
            println!("\n| tail wake-up | rounds | p50 ms | p99 ms |\n|---|---:|---:|---:|");
            tail_latency("pg-single-cross-instance", core, other, 300).await;
        }
        if a.only.iter().any(|o| o == "pg3az") {
            let az = common::Pg3Az::up();
            let core = pg_core(PgConfig::new(az.pg_hosts(), "postgres", "memoria")).await;
            matrix("PostgreSQL 3 AZ (sync quorum ANY 1)", "pg3az", &core, &a).await;
            let clients: Vec<LogClient> = (0..3).map(|i| LogClient::new(&az.url(i), &az.token).expect("client")).collect();
            println!("\n| setup | batch | appenders | entries/s | p50 ms | p99 ms |\n|---|---:|---:|---:|---:|---:|");
            http_cell("pg3az", &clients, a.secs, a.payload).await;
            println!("\n| tail wake-up | rounds | p50 ms | p99 ms |\n|---|---:|---:|---:|");
            let other = pg_core(PgConfig::new(az.pg_hosts(), "postgres", "memoria")).await;
            tail_latency("pg3az-cross-instance", core, other, 300).await;
            tail_latency("pg3az-http-az1-to-az2", clients[0].clone(), clients[1].clone(), 300).await;
        }
    });
}
