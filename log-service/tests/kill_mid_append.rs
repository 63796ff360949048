//! The log service killed -9 in the middle of an append, again and again (issue 23, point
//! 4): no acknowledged entry is ever lost, no entry is visible to a reader before it is
//! durable, and the file and its hash chain stay whole.
//!
//! The service runs as its own process (the `memoria-log` binary, on SQLite). A client
//! appends one entry at a time and records what was acknowledged. Each round kills the
//! service at one moment of an append:
//! - `in-txn`: the rows are written in a transaction that holds the write lock, before
//!   COMMIT (nothing committed, nothing fsynced). A reader on another connection meanwhile
//!   must not see the entry, and after the kill it must be gone.
//! - `after-commit`: committed and fsynced, no reply yet. The entry is durable and stays,
//!   though never acknowledged: a writer's retry finds it (a conflict), never a gap.
//! - `anywhere`: with 256 KiB entries streaming in, at a random moment, so most kills land
//!   inside a write or an fsync; the tail is then the last acknowledged entry or the one
//!   after it.
//!
//! The two named moments come from the writer's test hook (`MEMORIA_TEST_APPEND_PAUSE`):
//! SQLite writes the commit frames and fsyncs them within one call, so "between the write
//! and the fsync" is reached by the `anywhere` rounds, not by a hook.
//!
//! Rounds per moment: `MEMORIA_KILL_APPEND_ROUNDS` (default 5).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use memoria_log::{LogClient, LogError, NewEntry};
use rusqlite::{Connection, OpenFlags};

const BIN: &str = env!("CARGO_BIN_EXE_memoria-log");
const LOG: &str = "killed";

fn rounds() -> usize {
    std::env::var("MEMORIA_KILL_APPEND_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5)
}

struct Service {
    child: Child,
    url: String,
}

impl Service {
    fn start(db: &Path, hooks: &Path) -> Service {
        let port = common::free_port();
        let child = Command::new(BIN)
            .env_remove("MEMORIA_LOG_TOKEN")
            .env("MEMORIA_TEST_APPEND_PAUSE", hooks)
            .args(["--listen", &format!("127.0.0.1:{port}"), "--insecure-open", "--sqlite"])
            .arg(db)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn memoria-log");
        Service { child, url: format!("http://127.0.0.1:{port}") }
    }

    fn kill9(&mut self) {
        // Child::kill is SIGKILL: no destructor, no SQLite close, no flush.
        self.child.kill().expect("kill -9");
        self.child.wait().expect("reap");
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client once the service answers; the test fails if the service exits instead.
async fn client_of(svc: &mut Service) -> LogClient {
    let c = LogClient::new(&svc.url, "").expect("client");
    loop {
        match c.create(LOG).await {
            Ok(_) => return c,
            Err(e) => {
                if let Some(status) = svc.child.try_wait().expect("child status") {
                    panic!("the service at {} exited ({status}) before answering: {e}", svc.url);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The tail as a reader on its own connection sees it: committed entries only.
fn visible_tail(db: &Path) -> u64 {
    let c = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open read-only");
    c.query_row("SELECT coalesce(max(id), 0) FROM entries WHERE log = ?1", [LOG], |r| r.get::<_, i64>(0)).expect("max id") as u64
}

fn integrity(db: &Path) -> String {
    let c = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open read-only");
    c.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0)).expect("integrity_check")
}

fn payload(id: u64, size: usize) -> Vec<u8> {
    let mut p = format!("entry {id} ").into_bytes();
    p.resize(size, b'0' + (id % 10) as u8);
    p
}

/// Appends one entry after `prev`; the acknowledged id, or None once the service is gone.
async fn append_one(c: &LogClient, prev: u64, size: usize) -> Option<u64> {
    match c.append(LOG, prev, 1, vec![NewEntry::data(payload(prev + 1, size))]).await {
        Ok(a) => Some(a.last_id),
        Err(LogError::Conflict { .. }) => panic!("append after {prev} conflicted: nobody else writes this log"),
        Err(_) => None,
    }
}

/// The file the pause hook leaves at `moment` (`at-<moment>-<pid>`). The test fails if
/// the append it stops finishes instead.
async fn wait_for(hooks: &Path, moment: &str, pending: &tokio::task::JoinHandle<Option<u64>>) -> PathBuf {
    let prefix = format!("at-{moment}-");
    loop {
        if let Some(found) = std::fs::read_dir(hooks).expect("hooks dir").flatten().find(|e| e.file_name().to_string_lossy().starts_with(&prefix)) {
            return found.path();
        }
        assert!(!pending.is_finished(), "the append finished without stopping at {moment}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// After a kill: the restarted service verifies the whole chain, the file is intact, and
/// the tail is `expected`. Returns the tail.
async fn check_after(db: &Path, hooks: &Path, expected: std::ops::RangeInclusive<u64>, acked: u64, what: &str) -> u64 {
    assert_eq!(integrity(db), "ok", "{what}: the file is damaged");
    let mut svc = Service::start(db, hooks);
    let c = client_of(&mut svc).await;
    let report = c.verify(LOG).await.unwrap_or_else(|e| panic!("{what}: the chain does not verify: {e}"));
    assert!(report.tail_id >= acked, "{what}: acknowledged entry {acked} lost (tail {})", report.tail_id);
    assert!(expected.contains(&report.tail_id), "{what}: tail {} not in {expected:?}", report.tail_id);
    // The head the restarted service appends after is the verified tail.
    let head = c.head(LOG).await.expect("head");
    assert_eq!(head.id, report.tail_id);
    report.tail_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_killed_mid_append_loses_no_acknowledged_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("log.sqlite");
    let hooks = dir.path().join("hooks");
    std::fs::create_dir(&hooks).expect("hooks dir");
    let mut tail = 0u64;
    for round in 0..rounds() {
        for moment in ["in-txn", "after-commit"] {
            let what = format!("round {round}, {moment}");
            let mut svc = Service::start(&db, &hooks);
            let c = client_of(&mut svc).await;
            // A few appends land first, then the next one stops at the moment.
            for _ in 0..3 {
                tail = append_one(&c, tail, 1024).await.unwrap_or_else(|| panic!("{what}: an append failed before the kill"));
            }
            let acked = tail;
            std::fs::write(hooks.join(format!("arm-{moment}")), b"").expect("arm");
            let pending = tokio::spawn({
                let c = c.clone();
                async move { append_one(&c, acked, 1024).await }
            });
            let at = wait_for(&hooks, moment, &pending).await;
            std::fs::remove_file(at).expect("disarm");
            let seen = visible_tail(&db);
            match moment {
                "in-txn" => assert_eq!(seen, acked, "{what}: a reader saw an entry before it was committed"),
                _ => assert_eq!(seen, acked + 1, "{what}: the committed entry is not visible"),
            }
            svc.kill9();
            assert_eq!(pending.await.expect("task"), None, "{what}: the killed service acknowledged the append");
            let expected = if moment == "in-txn" { acked..=acked } else { acked + 1..=acked + 1 };
            tail = check_after(&db, &hooks, expected, acked, &what).await;
        }
        // Anywhere: big entries back to back, killed after a random few milliseconds.
        let what = format!("round {round}, anywhere");
        let mut svc = Service::start(&db, &hooks);
        let c = client_of(&mut svc).await;
        let acked = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(tail));
        let writer = tokio::spawn({
            let (c, acked) = (c.clone(), acked.clone());
            async move {
                let mut prev = acked.load(std::sync::atomic::Ordering::SeqCst);
                while let Some(id) = append_one(&c, prev, 256 << 10).await {
                    acked.store(id, std::sync::atomic::Ordering::SeqCst);
                    prev = id;
                }
            }
        });
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").subsec_nanos() as u64;
        tokio::time::sleep(Duration::from_millis(20 + nanos % 80)).await;
        svc.kill9();
        writer.await.expect("writer");
        let acked = acked.load(std::sync::atomic::Ordering::SeqCst);
        tail = check_after(&db, &hooks, acked..=acked + 1, acked, &what).await;
    }
}
