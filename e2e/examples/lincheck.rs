//! Runs the workload against running nodes for a while, then checks the history and the
//! ledger: a manual drill (kill, stop, partition nodes by hand meanwhile).
//!
//!   cargo run --release -p memoria-e2e --example lincheck -- 127.0.0.1:6379[,127.0.0.1:6380] [seconds] [clients]
//!
//! Exit status 1 on a violation or a ledger problem; the history is written to
//! lincheck-history.txt either way.

use std::time::Duration;

use memoria_e2e::linearizability::{Budget, check};
use memoria_e2e::workload::{Config, run_for};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(nodes) = args.first() else {
        eprintln!("usage: lincheck HOST:PORT[,HOST:PORT…] [seconds, default 10] [clients, default 4]");
        std::process::exit(2);
    };
    let nodes: Vec<String> = nodes.split(',').map(str::to_string).collect();
    let secs: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let mut cfg = Config::new(nodes.clone());
    cfg.clients = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(4);
    let run = run_for(cfg, Duration::from_secs(secs)).await;
    println!("run: {}", run.stats);
    let _ = std::fs::write("lincheck-history.txt", run.history.to_text());
    let report = check(&run.history, Budget::default());
    print!("{report}");
    let ledger = match run.ledger.verify(&nodes, Duration::from_secs(30)).await {
        Ok(l) => l,
        Err(e) => {
            println!("ledger: {e}");
            std::process::exit(1);
        }
    };
    print!("{ledger}");
    if !report.is_linearizable() || !ledger.is_clean() {
        std::process::exit(1);
    }
}
