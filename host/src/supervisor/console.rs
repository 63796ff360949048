//! The web console (`memoria-console`, its own crate and binary): `memoria up` starts it
//! as a child process next to the nodes, so its dependencies and its work stay out of
//! the nodes and the log service. It reads cluster.json, the log service and the nodes,
//! and is started again if it dies.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::process::Command;

/// What `memoria up` was asked for.
#[derive(Clone, Debug)]
pub struct ConsoleOptions {
    pub port: u16,
    /// Require a login with this token.
    pub token: Option<String>,
}

/// Where the console binary is: MEMORIA_CONSOLE_BIN, or next to `memoria`.
pub fn binary(exe: &Path) -> PathBuf {
    match std::env::var_os("MEMORIA_CONSOLE_BIN") {
        Some(p) => PathBuf::from(p),
        None => exe.with_file_name("memoria-console"),
    }
}

pub struct Spec {
    pub exe: PathBuf,
    pub memoria: PathBuf,
    pub bind: String,
    pub data_dir: PathBuf,
    pub log_url: String,
    pub log_token: String,
    pub store: String,
    pub opts: ConsoleOptions,
}

/// Keeps the console running until the task is aborted (the child is killed with it).
pub async fn keep_running(s: Spec) {
    if !s.exe.exists() {
        println!("console: not started: {} is missing (build it with `cargo build --release -p memoria-console`)", s.exe.display());
        return;
    }
    let host = if s.bind == "0.0.0.0" || s.bind.is_empty() { "127.0.0.1" } else { s.bind.as_str() };
    println!("console: http://{host}:{}/{}", s.opts.port, if s.opts.token.is_some() { " (log in with the console token)" } else { "" });
    let mut pause = Duration::from_millis(500);
    loop {
        let log = s.data_dir.join("console.log");
        let out = match std::fs::OpenOptions::new().create(true).append(true).open(&log) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("console: cannot open {}: {e}", log.display());
                return;
            }
        };
        let Ok(err) = out.try_clone() else { return };
        let mut cmd = Command::new(&s.exe);
        cmd.args(["--bind", &s.bind, "--port", &s.opts.port.to_string(), "--log-url", &s.log_url, "--snapshot-store", &s.store])
            .arg("--data-dir")
            .arg(&s.data_dir)
            .arg("--memoria-bin")
            .arg(&s.memoria)
            .env("MEMORIA_LOG_TOKEN", &s.log_token)
            .env_remove("MEMORIA_CONSOLE_TOKEN")
            .stdin(std::process::Stdio::null())
            .stdout(out)
            .stderr(err)
            .kill_on_drop(true);
        if let Some(t) = &s.opts.token {
            cmd.env("MEMORIA_CONSOLE_TOKEN", t);
        }
        crate::child::die_with_parent(&mut cmd);
        let started = std::time::Instant::now();
        match cmd.spawn() {
            Ok(mut child) => {
                let status = child.wait().await;
                eprintln!("console exited ({status:?}); starting it again (output in {})", log.display());
            }
            Err(e) => eprintln!("console: cannot start {}: {e}", s.exe.display()),
        }
        if started.elapsed() > Duration::from_secs(30) {
            pause = Duration::from_millis(500);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(30));
    }
}
