//! What the load benches share: a child process killed on drop, free loopback ports, the
//! built `memoria` binary and a `memoria up` on its documented endpoint.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process, killed and reaped on drop.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The `memoria` binary built beside this bench.
pub fn memoria_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let p = exe.parent().unwrap().parent().unwrap().join("memoria");
    assert!(p.exists(), "{} missing: cargo build --release", p.display());
    p
}

/// A loopback connection to `port`, retried while nothing listens yet (up to 60 s).
pub fn connect(port: u16) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            s.set_nodelay(true).unwrap();
            return s;
        }
        assert!(Instant::now() < deadline, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `memoria up` with its data in `dir` and `extra` flags; returns it and its endpoint's
/// port (the nodes take the ports after a free pair's first).
pub fn memoria_up(dir: &Path, extra: &[&str]) -> (Proc, u16) {
    let port = free_port();
    let base = loop {
        let b = free_port();
        if std::net::TcpListener::bind(("127.0.0.1", b + 1)).is_ok() {
            break b;
        }
    };
    // The two nodes' metrics ports, likewise.
    let metrics = loop {
        let b = free_port();
        if b != base && b != base + 1 && std::net::TcpListener::bind(("127.0.0.1", b + 1)).is_ok() {
            break b;
        }
    };
    let up = Proc(
        Command::new(memoria_bin())
            .args(["up", "--port", &port.to_string(), "--node-port-base", &base.to_string()])
            .args(["--metrics-port-base", &metrics.to_string()])
            .args(extra)
            .arg("--data-dir")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("memoria up"),
    );
    (up, port)
}
