//! Shared test helpers: throwaway PostgreSQL instances on loopback ports, and checks on a
//! log's contents. Each test starts its own server so tests never share state.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use memoria_log::{LogCore, PgConfig};

pub fn pg_bin() -> PathBuf {
    let dir = std::env::var_os("MEMORIA_PG_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/lib/postgresql/15/bin"));
    if !dir.join("initdb").exists() || !dir.join("pg_ctl").exists() {
        panic!(
            "PostgreSQL server binaries not found in {}: install them (Debian: `apt-get install postgresql-15`) \
             or point MEMORIA_PG_BIN at the directory holding initdb and pg_ctl",
            dir.display()
        );
    }
    dir
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind loopback").local_addr().expect("addr").port()
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

/// Runs a PostgreSQL tool, as the `postgres` user when we are root (initdb refuses root).
pub fn pg_cmd(tool: &str) -> Command {
    let bin = pg_bin().join(tool);
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin);
        c
    } else {
        Command::new(bin)
    }
}

fn run(mut c: Command, what: &str) {
    let out = c.stdin(Stdio::null()).output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.status.success(), "{what} failed: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

/// A private data directory the `postgres` user can use.
pub fn pg_tempdir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("memoria-pg-").tempdir().expect("tempdir");
    if is_root() {
        run(
            {
                let mut c = Command::new("chown");
                c.args(["postgres:postgres"]).arg(dir.path());
                c
            },
            "chown",
        );
    }
    dir
}

/// One throwaway PostgreSQL server on 127.0.0.1, stopped and deleted on drop.
pub struct PgInstance {
    pub dir: tempfile::TempDir,
    pub port: u16,
}

impl PgInstance {
    pub fn start() -> PgInstance {
        let dir = pg_tempdir();
        let data = dir.path().join("data");
        let mut c = pg_cmd("initdb");
        c.arg("-D").arg(&data).args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]);
        run(c, "initdb");
        let port = free_port();
        let mut c = pg_cmd("pg_ctl");
        c.arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(dir.path().join("log"))
            .arg("-o")
            .arg(format!("-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200", dir.path().display()))
            .args(["-w", "start"]);
        run(c, "pg_ctl start");
        let mut c = pg_cmd("psql");
        c.args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres", "-d", "postgres", "-c", "CREATE DATABASE memoria"]);
        run(c, "createdb");
        PgInstance { dir, port }
    }

    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn config(&self) -> PgConfig {
        PgConfig::new(vec![format!("127.0.0.1:{}", self.port)], "postgres", "memoria")
    }

    pub fn psql(&self, sql: &str) -> String {
        let out =
            pg_cmd("psql").args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "postgres", "-d", "memoria", "-Atc", sql]).output().expect("psql");
        assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for PgInstance {
    fn drop(&mut self) {
        let mut c = pg_cmd("pg_ctl");
        c.arg("-D").arg(self.data()).args(["-m", "immediate", "stop"]);
        let _ = c.stdout(Stdio::null()).stderr(Stdio::null()).status();
    }
}

pub fn sqlite_path(dir: &Path) -> PathBuf {
    dir.join("log.db")
}

/// Reads the whole log and checks it is dense from 1 and the chain verifies.
pub async fn read_all(core: &LogCore, log: &str) -> Vec<memoria_log::Entry> {
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let b = core.read(log, after, 5_000, std::time::Duration::ZERO).await.expect("read");
        if b.entries.is_empty() {
            break;
        }
        for e in &b.entries {
            assert_eq!(e.id, after + 1, "log {log} not dense");
            after = e.id;
        }
        out.extend(b.entries);
    }
    out
}

/// Serves `core` over HTTP on a loopback port; returns the base URL.
pub async fn serve(core: LogCore, token: Option<&str>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = memoria_log::server::router(core, token.map(str::to_owned));
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

pub async fn sqlite_core(dir: &Path) -> LogCore {
    LogCore::open_sqlite(sqlite_path(dir)).await.expect("open sqlite")
}

/// Three consecutive free loopback ports.
pub fn free_port_range() -> u16 {
    loop {
        let base = free_port();
        if base < 65000 && (1..3).all(|i| TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return base;
        }
    }
}

/// Drives `e2e/pg3az` for one test: its own state dir and ports, torn down on drop.
pub struct Pg3Az {
    pub dir: PathBuf,
    pub pg_port: u16,
    pub svc_port: u16,
    pub token: String,
}

impl Pg3Az {
    pub fn up() -> Pg3Az {
        pg_bin();
        let dir = std::env::temp_dir().join(format!("memoria-pg3az-test-{}-{}", std::process::id(), free_port()));
        let mut me = Pg3Az { dir, pg_port: free_port_range(), svc_port: 0, token: "az-test-token".into() };
        me.svc_port = loop {
            let p = free_port_range();
            if p.abs_diff(me.pg_port) > 3 {
                break p;
            }
        };
        me.run(&["up"]);
        me
    }

    pub fn script() -> PathBuf {
        manifest_dir().join("../e2e/pg3az")
    }

    /// Runs a subcommand; panics with its output on failure. Returns stdout.
    pub fn run(&self, args: &[&str]) -> String {
        let out = Command::new(Self::script())
            .args(args)
            .env("PG3AZ_DIR", &self.dir)
            .env("PG3AZ_PG_PORT", self.pg_port.to_string())
            .env("PG3AZ_SVC_PORT", self.svc_port.to_string())
            .env("PG3AZ_TOKEN", &self.token)
            .env("MEMORIA_LOG_BIN", env!("CARGO_BIN_EXE_memoria-log"))
            .stdin(Stdio::null())
            .output()
            .expect("run e2e/pg3az");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        eprintln!("pg3az {}: {}{}", args.join(" "), stdout, String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "pg3az {args:?} failed");
        stdout
    }

    pub fn url(&self, az: usize) -> String {
        format!("http://127.0.0.1:{}", self.svc_port + az as u16)
    }

    pub fn pg_hosts(&self) -> Vec<String> {
        (0..3).map(|i| format!("127.0.0.1:{}", self.pg_port + i)).collect()
    }
}

impl Drop for Pg3Az {
    fn drop(&mut self) {
        let _ = Command::new(Self::script())
            .arg("down")
            .env("PG3AZ_DIR", &self.dir)
            .env("PG3AZ_PG_PORT", self.pg_port.to_string())
            .env("PG3AZ_SVC_PORT", self.svc_port.to_string())
            .env("PG3AZ_TOKEN", &self.token)
            .stdin(Stdio::null())
            .output();
    }
}

/// This crate's directory. `cargo test` sets it when it runs a test; the compile-time
/// value is only the fallback, because a warm target dir shared by two checkouts (a CI
/// clone and a working tree) can hand one checkout a test binary built in the other.
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}
