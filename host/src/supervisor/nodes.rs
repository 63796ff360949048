//! Node processes: started, watched, and started again when they die (a restarted node
//! rejoins as a replica: leadership is only ever won by election through the log).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};
use tokio::sync::watch;

use super::status::Table;

pub struct NodeSpec {
    pub name: String,
    pub port: u16,
    pub dir: PathBuf,
    pub args: Vec<String>,
    /// The process's Prometheus endpoint (`http://…/metrics`, its `--metrics-port`).
    pub metrics_url: Option<String>,
    /// Secrets for the process, in its environment rather than its command line
    /// (`MEMORIA_METRICS_TOKEN`).
    pub env: Vec<(String, String)>,
}

pub struct Supervisor {
    stop_tx: watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Supervisor {
    pub async fn start(exe: PathBuf, specs: Vec<NodeSpec>, token: String, table: Arc<Table>) -> anyhow::Result<Supervisor> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = Vec::new();
        for (i, spec) in specs.into_iter().enumerate() {
            tasks.push(tokio::spawn(keep_running(i, exe.clone(), spec, token.clone(), table.clone(), stop_rx.clone())));
        }
        Ok(Supervisor { stop_tx, tasks })
    }

    /// Asks every node to stop (SIGTERM: a node finishes its append in flight) and waits,
    /// killing what is still running after `grace`.
    pub async fn stop(self, grace: Duration) {
        let _ = self.stop_tx.send(true);
        let all = futures_join(self.tasks);
        if tokio::time::timeout(grace + Duration::from_secs(1), all).await.is_err() {
            tracing::warn!("some nodes did not stop in time");
        }
    }
}

async fn futures_join(tasks: Vec<tokio::task::JoinHandle<()>>) {
    for t in tasks {
        let _ = t.await;
    }
}

/// Runs one node until asked to stop, restarting it when it exits (with a growing pause
/// when it keeps dying right away, so a node that cannot start does not spin).
async fn keep_running(i: usize, exe: PathBuf, spec: NodeSpec, token: String, table: Arc<Table>, mut stop: watch::Receiver<bool>) {
    let mut pause = Duration::from_millis(200);
    let mut restarts = 0u32;
    loop {
        if *stop.borrow() {
            return;
        }
        let log = spec.dir.join("node.log");
        let mut child = match spawn(&exe, &spec, &token, &log) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{}: cannot start: {e}", spec.name);
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = stop.changed() => return,
                }
                pause = (pause * 2).min(Duration::from_secs(5));
                continue;
            }
        };
        let pid = child.id().unwrap_or(0);
        table.started(i, pid, restarts);
        println!(
            "{} (pid {pid}, port {}): started{}; output in {}",
            spec.name,
            spec.port,
            if restarts > 0 { " again, as a replica" } else { "" },
            log.display()
        );
        let started = Instant::now();
        tokio::select! {
            status = child.wait() => {
                let how = match status {
                    Ok(s) => describe_exit(s),
                    Err(e) => format!("could not be waited for ({e})"),
                };
                println!("{} (pid {pid}) {how}; starting it again", spec.name);
                table.exited(i);
                restarts += 1;
                if started.elapsed() > Duration::from_secs(10) {
                    pause = Duration::from_millis(200);
                }
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = stop.changed() => return,
                }
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            _ = stop.changed() => {
                terminate(&mut child, pid).await;
                table.exited(i);
                return;
            }
        }
    }
}

fn spawn(exe: &PathBuf, spec: &NodeSpec, token: &str, log: &PathBuf) -> std::io::Result<Child> {
    let out = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    let err = out.try_clone()?;
    let mut cmd = Command::new(exe);
    cmd.args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .env("MEMORIA_LOG_TOKEN", token)
        .stdin(std::process::Stdio::null())
        .stdout(out)
        .stderr(err)
        .kill_on_drop(true);
    crate::child::die_with_parent(&mut cmd);
    cmd.spawn()
}

async fn terminate(child: &mut Child, pid: u32) {
    #[cfg(unix)]
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    if tokio::time::timeout(Duration::from_secs(10), child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
}

fn describe_exit(s: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = s.signal() {
            return format!("was killed by signal {sig}");
        }
    }
    match s.code() {
        Some(c) => format!("exited with status {c}"),
        None => "exited".to_string(),
    }
}
