//! Automatic failover through the log: nodes in one process sharing one embedded SQLite
//! log, with leases. A frozen primary (its shard stopped, as SIGSTOP would) is replaced by
//! the replica, which loses no acknowledged write; the old primary, resumed, acknowledges
//! nothing and serves no read, and rejoins as a replica; a primary whose append is
//! rejected has been deposed and steps down without claiming again.
//!
//! No assertion depends on elapsed time: waits are liveness waits with generous deadlines.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::reply_len;
use memoria_host::limits::ConnLimits;
use memoria_host::server::{self, Freezer, ServerOptions};
use memoria_log::{Kind, LeasePayload, LogApi, LogCore, LogHandle, NewEntry};

const LEASE_MS: u64 = 1000;
const DEADLINE: Duration = Duration::from_secs(60);

type Started = std::sync::mpsc::Sender<(u16, Freezer)>;

/// Nodes on one runtime thread (like one machine's event loops), sharing one log.
struct Cluster {
    log: LogCore,
    ctl: tokio::sync::mpsc::UnboundedSender<(String, Option<String>, Started)>,
    /// Removed when the cluster goes.
    _dir: tempfile::TempDir,
}

impl Cluster {
    fn start() -> Cluster {
        // RUST_LOG=warn shows the elections and step-downs.
        let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "off".into());
        let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
        let dir = tempfile::Builder::new().prefix("memoria-failover-").tempdir().unwrap();
        let path = dir.path().join("log.sqlite");
        let (log_tx, log_rx) = std::sync::mpsc::channel();
        let (ctl, mut ctl_rx) = tokio::sync::mpsc::unbounded_channel::<(String, Option<String>, Started)>();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let log = LogCore::open_sqlite(&path).await.unwrap();
                log_tx.send(log.clone()).unwrap();
                let mut nodes = Vec::new();
                while let Some((node, replica_of, started)) = ctl_rx.recv().await {
                    let opts = ServerOptions {
                        bind: "127.0.0.1".into(),
                        port: 0,
                        data_dir: "/nonexistent".into(),
                        limits: ConnLimits::default(),
                        log: Some(LogHandle::Embedded(log.clone())),
                        node,
                        replica_of,
                        lease_ms: Some(LEASE_MS),
                        cluster: false,
                        snapshots: None,
                        auth: Default::default(),
                    };
                    let s = server::start(opts).await.unwrap();
                    started.send((s.addr.port(), s.freezer())).unwrap();
                    nodes.push(s);
                }
                std::future::pending::<()>().await;
            });
        });
        let log = log_rx.recv_timeout(DEADLINE).expect("log opens");
        Cluster { log, ctl, _dir: dir }
    }

    fn node(&self, name: &str, replica_of: Option<u16>) -> (u16, Freezer) {
        let (tx, rx) = std::sync::mpsc::channel();
        self.ctl.send((name.to_string(), replica_of.map(|p| format!("127.0.0.1:{p}")), tx)).unwrap();
        rx.recv_timeout(DEADLINE).expect("node starts")
    }
}

/// A blocking RESP client that reports a closed or silent connection instead of panicking.
struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn connect(port: u16, timeout: Duration) -> std::io::Result<Conn> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(timeout))?;
        s.set_nodelay(true)?;
        Ok(Conn { s, buf: Vec::new() })
    }

    fn send(&mut self, args: &[&str]) -> std::io::Result<()> {
        let mut out = Vec::new();
        memoria_core::protocol::resp::encode_command(&mut out, args);
        self.s.write_all(&out)
    }

    fn read(&mut self) -> std::io::Result<Vec<u8>> {
        loop {
            if let Some(n) = reply_len(&self.buf, 0) {
                return Ok(self.buf.drain(..n).collect());
            }
            let mut tmp = [0u8; 65536];
            let n = self.s.read(&mut tmp)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            self.buf.extend_from_slice(&tmp[..n]);
        }
    }

    fn cmd(&mut self, args: &[&str]) -> std::io::Result<Vec<u8>> {
        self.send(args)?;
        self.read()
    }

    /// Everything the server sends until it closes the connection (or `deadline`).
    fn rest(&mut self, deadline: Instant) -> Vec<u8> {
        let mut all = std::mem::take(&mut self.buf);
        while Instant::now() < deadline {
            let mut tmp = [0u8; 65536];
            match self.s.read(&mut tmp) {
                Ok(0) => break,
                Ok(n) => all.extend_from_slice(&tmp[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => continue,
                Err(_) => break,
            }
        }
        all
    }
}

/// One command on a fresh connection; None if the node closed it or did not answer.
fn once(port: u16, args: &[&str]) -> Option<Vec<u8>> {
    Conn::connect(port, Duration::from_secs(5)).ok()?.cmd(args).ok()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Waits until `port` acknowledges a write (it is the primary).
fn wait_writable(port: u16) {
    let deadline = Instant::now() + DEADLINE;
    let mut last = None;
    loop {
        let r = once(port, &["SET", "__probe", "x"]);
        if r.as_deref() == Some(b"+OK\r\n") {
            return;
        }
        last = r.map(|r| text(&r)).or(last);
        assert!(Instant::now() < deadline, "node on {port} never took a write (last reply {last:?})");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until `cmd` on `port` answers `want`.
fn wait_reply(port: u16, cmd: &[&str], want: &[u8]) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let r = once(port, cmd);
        if r.as_deref() == Some(want) {
            return;
        }
        assert!(Instant::now() < deadline, "{cmd:?} on {port} never answered {:?} (last {:?})", text(want), r.map(|r| text(&r)));
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn role(port: u16) -> String {
    once(port, &["ROLE"]).map(|r| text(&r)).unwrap_or_default()
}

fn wait_role(port: u16, want: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let r = role(port);
        if r.contains(want) {
            return;
        }
        assert!(Instant::now() < deadline, "node on {port} never reported role {want} (last {r:?})");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A primary elected on an empty log, then a replica.
fn pair(c: &Cluster) -> ((u16, Freezer), (u16, Freezer)) {
    let p = c.node("p", None);
    wait_writable(p.0);
    let r = c.node("r", Some(p.0));
    // On a loaded machine the replica may win a legitimate election before the test
    // starts (the primary's renewal came late): the pair is then the other way round.
    let deadline = Instant::now() + DEADLINE;
    loop {
        assert!(Instant::now() < deadline, "no stable primary and replica (roles {:?}, {:?})", role(p.0), role(r.0));
        if role(p.0).contains("master") && role(r.0).contains("slave") && once(p.0, &["SET", "__probe", "x"]).as_deref() == Some(b"+OK\r\n") {
            return (p, r);
        }
        if role(r.0).contains("master") && role(p.0).contains("slave") && once(r.0, &["SET", "__probe", "x"]).as_deref() == Some(b"+OK\r\n") {
            return (r, p);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn replica_takes_over_from_a_frozen_primary_and_keeps_every_acknowledged_write() {
    let c = Cluster::start();
    let ((p, pf), (r, _)) = pair(&c);

    // Writers with unique keys: a write without a reply may or may not have landed, but
    // every acknowledged one must be on the new primary.
    let ledger: Arc<Mutex<HashMap<String, String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let (ledger, stop) = (ledger.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                let mut conn = None;
                while !stop.load(Ordering::Relaxed) {
                    if conn.is_none() {
                        conn = Conn::connect(p, Duration::from_secs(2)).ok();
                    }
                    let Some(cn) = conn.as_mut() else { continue };
                    i += 1;
                    let (k, v) = (format!("k{t}-{i}"), format!("v{i}"));
                    match cn.cmd(&["SET", &k, &v]) {
                        Ok(r) if r == b"+OK\r\n" => {
                            ledger.lock().unwrap().insert(k, v);
                        }
                        // An error (the node stepped down under load): not acknowledged.
                        Ok(r) => assert!(r.starts_with(b"-"), "unexpected reply to SET: {}", text(&r)),
                        Err(_) => conn = None,
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + DEADLINE;
    while ledger.lock().unwrap().len() < 400 {
        assert!(Instant::now() < deadline, "writers made no progress");
        std::thread::sleep(Duration::from_millis(10));
    }

    // The primary stops dead, mid-load, without a clean exit.
    let _frozen = pf.freeze();
    wait_writable(r);
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    assert!(role(r).starts_with("*3\r\n$6\r\nmaster"), "{}", role(r));

    let ledger = ledger.lock().unwrap().clone();
    let mut cn = Conn::connect(r, Duration::from_secs(30)).unwrap();
    let keys: Vec<&String> = ledger.keys().collect();
    for chunk in keys.chunks(500) {
        for k in chunk {
            cn.send(&["GET", k]).unwrap();
        }
        for k in chunk {
            let got = cn.read().unwrap();
            let want = &ledger[*k];
            assert_eq!(text(&got), format!("${}\r\n{want}\r\n", want.len()), "acknowledged write of {k} lost in the failover");
        }
    }
    // And the new primary keeps taking writes.
    assert_eq!(cn.cmd(&["SET", "after", "1"]).unwrap(), b"+OK\r\n");
}

#[test]
fn frozen_primary_resumed_after_the_claim_acknowledges_nothing_and_serves_no_read() {
    let c = Cluster::start();
    let ((p, pf), (r, _)) = pair(&c);
    assert_eq!(once(p, &["SET", "k", "old"]).unwrap(), b"+OK\r\n");

    // A client of the old primary, connected and known before the freeze.
    let mut old = Conn::connect(p, Duration::from_millis(200)).unwrap();
    assert_eq!(old.cmd(&["PING"]).unwrap(), b"+PONG\r\n");
    let resume = pf.freeze();
    // Sent while it is frozen: a write and reads it must never answer from its old state.
    old.send(&["SET", "late", "1"]).unwrap();
    old.send(&["GET", "k"]).unwrap();
    old.send(&["SET", "k", "stale"]).unwrap();
    old.send(&["GET", "k"]).unwrap();

    wait_writable(r);
    assert_eq!(once(r, &["SET", "k", "new"]).unwrap(), b"+OK\r\n");
    resume.send(()).unwrap();

    // Whatever the old primary sends that client, it is neither an acknowledgement nor
    // a value: only errors, then the connection closes.
    let got = old.rest(Instant::now() + DEADLINE);
    let mut pos = 0;
    while let Some(n) = reply_len(&got, pos) {
        assert_eq!(got[pos], b'-', "the resumed old primary answered {:?} (all: {:?})", text(&got[pos..pos + n]), text(&got));
        pos += n;
    }

    // It rejoined as a replica and follows the new primary.
    wait_role(p, "slave");
    wait_reply(p, &["GET", "k"], b"$3\r\nnew\r\n");
    assert_eq!(once(p, &["SET", "x", "1"]).unwrap(), b"-READONLY You can't write against a read only replica.\r\n");
    assert_eq!(once(r, &["GET", "late"]).unwrap(), b"$-1\r\n");
    assert_eq!(once(p, &["GET", "late"]).unwrap(), b"$-1\r\n");
    assert!(role(r).starts_with("*3\r\n$6\r\nmaster"), "{}", role(r));
}

#[test]
fn deposed_primary_acknowledges_nothing_and_only_an_election_makes_it_lead_again() {
    let c = Cluster::start();
    let (p, _) = c.node("p", None);
    wait_writable(p);
    assert_eq!(once(p, &["SET", "a", "1"]).unwrap(), b"+OK\r\n");
    let mut cn = Conn::connect(p, Duration::from_secs(30)).unwrap();
    assert_eq!(cn.cmd(&["PING"]).unwrap(), b"+PONG\r\n");

    // Another node claims the shard at the tail (and then falls silent).
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let rogue_epoch = rt.block_on(async {
        let head = LogApi::head(&c.log, "shard-0").await.unwrap();
        let claim = NewEntry::new(Kind::LeaderClaim, LeasePayload { node: "rogue".into(), lease_ms: LEASE_MS }.encode());
        LogApi::append(&c.log, "shard-0", head.id, head.epoch + 1, vec![claim]).await.unwrap();
        head.epoch + 1
    });

    // The old primary's next append (a write's or a renewal) conflicts: this write is
    // never acknowledged, whichever comes first.
    let r = cn.cmd(&["SET", "b", "2"]);
    assert!(!matches!(&r, Ok(r) if r == b"+OK\r\n"), "a deposed primary acknowledged a write");
    if let Ok(r) = &r {
        assert!(r.starts_with(b"-"), "{}", text(r));
    }

    // Nobody renews the rogue's lease: after the backoff the node wins an election (a
    // new epoch), rather than re-claiming at once. Its state is the log's.
    wait_writable(p);
    let mut head_epoch = 0;
    rt.block_on(async {
        let mut after = 0;
        loop {
            let b = LogApi::read(&c.log, "shard-0", after, 1000, Duration::ZERO).await.unwrap();
            let Some(last) = b.entries.last() else { break };
            after = last.id;
            for e in &b.entries {
                if e.kind == Kind::LeaderClaim {
                    head_epoch = head_epoch.max(e.epoch);
                }
            }
        }
    });
    assert!(head_epoch > rogue_epoch, "no election after the rogue claim (highest claim epoch {head_epoch})");
    assert_eq!(once(p, &["GET", "a"]).unwrap(), b"$1\r\n1\r\n");
    assert_eq!(once(p, &["GET", "b"]).unwrap(), b"$-1\r\n");
}

/// One command after AUTH on a fresh connection (None: no answer).
fn once_as(port: u16, user: &str, pass: &str, args: &[&str]) -> Option<Vec<u8>> {
    let mut c = Conn::connect(port, Duration::from_secs(5)).ok()?;
    let a = c.cmd(&["AUTH", user, pass]).ok()?;
    if a != b"+OK\r\n" {
        return Some(a);
    }
    c.cmd(args).ok()
}

/// Waits until `args` run as `user` on `port` answer `want`.
fn wait_reply_as(port: u16, user: &str, pass: &str, args: &[&str], want: &[u8]) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let r = once_as(port, user, pass, args);
        if r.as_deref() == Some(want) {
            return;
        }
        assert!(Instant::now() < deadline, "{args:?} as {user} on {port} never answered {:?} (last {:?})", text(want), r.map(|r| text(&r)));
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The users and permissions one node enforces, as seen by clients.
fn assert_acl_enforced(port: u16) {
    assert_eq!(once(port, &["GET", "app:1"]).map(|r| text(&r)).as_deref(), Some("-NOAUTH Authentication required.\r\n"));
    assert_eq!(
        once_as(port, "default", "wrong", &["PING"]).map(|r| text(&r)).as_deref(),
        Some("-WRONGPASS invalid username-password pair or user is disabled.\r\n")
    );
    assert_eq!(
        once_as(port, "app", "apppw", &["GET", "other:x"]).map(|r| text(&r)).as_deref(),
        Some("-NOPERM this user has no permissions to access one of the keys used as arguments\r\n")
    );
    assert_eq!(
        once_as(port, "app", "apppw", &["DEL", "app:1"]).map(|r| text(&r)).as_deref(),
        Some("-NOPERM this user has no permissions to run the 'del' command\r\n")
    );
    assert_eq!(once_as(port, "app", "apppw", &["GET", "app:1"]).map(|r| text(&r)).as_deref(), Some("$1\r\nv\r\n"));
    let list = once_as(port, "default", "adminpw", &["ACL", "LIST"]).map(|r| text(&r)).unwrap_or_default();
    assert!(list.contains("user app on #") && list.contains("~app:* resetchannels -@all +@read"), "{list}");
    assert!(!list.contains("apppw") && !list.contains("adminpw"), "{list}");
    assert!(!list.contains("gone"), "{list}");
}

/// Runs `cmd` as `user` on whichever of `ports` is primary (retrying while leadership
/// settles: on a loaded machine the lease may move right after `pair`).
fn on_primary(ports: &[u16], user: &str, pass: &str, cmd: &[&str]) -> u16 {
    let deadline = Instant::now() + DEADLINE;
    loop {
        for &port in ports {
            let got = once_as(port, user, pass, cmd).unwrap_or_default();
            if got == b"+OK\r\n" || got.starts_with(b":") {
                return port;
            }
        }
        assert!(Instant::now() < deadline, "no primary took {cmd:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// ACL changes are effects in the log: the replica enforces them, and so do the new
/// primary after a failover and a node that starts over from the log.
#[test]
fn acl_users_hold_after_failover_and_restart() {
    let c = Cluster::start();
    let ((p, pf), (r, rf)) = pair(&c);
    let nodes = [p, r];
    for cmd in [
        &["ACL", "SETUSER", "app", "on", ">apppw", "~app:*", "+@read"][..],
        &["ACL", "SETUSER", "gone", "on", "nopass", "+@all"],
        &["SET", "app:1", "v"],
        &["SET", "other:x", "w"],
        &["ACL", "DELUSER", "gone"],
    ] {
        on_primary(&nodes, "default", "", cmd);
    }
    let primary = on_primary(&nodes, "default", "", &["CONFIG", "SET", "requirepass", "adminpw"]);
    let (replica, primary_f, replica_f) = if primary == p { (r, pf, rf) } else { (p, rf, pf) };
    // Both nodes enforce the same users (the replica applied the log). The replica is
    // waited for up to the last change (requirepass): an earlier one being there says
    // nothing of the ones after it.
    wait_reply_as(replica, "app", "apppw", &["GET", "app:1"], b"$1\r\nv\r\n");
    wait_reply(replica, &["GET", "app:1"], b"-NOAUTH Authentication required.\r\n");
    assert_acl_enforced(primary);
    assert_acl_enforced(replica);
    if !role(replica).contains("master") {
        assert_eq!(
            once_as(replica, "default", "adminpw", &["ACL", "SETUSER", "x"]).map(|r| text(&r)).as_deref(),
            Some("-READONLY You can't write against a read only replica.\r\n")
        );
    }
    // Failover: the primary freezes, the replica takes over with the same users.
    let thaw = primary_f.freeze();
    wait_reply_as(replica, "default", "adminpw", &["SET", "after", "1"], b"+OK\r\n");
    assert_acl_enforced(replica);
    // A node that starts over from the log (every other node frozen) has them too.
    let _thaw_r = replica_f.freeze();
    let (n, _) = c.node("n3", None);
    wait_reply_as(n, "default", "adminpw", &["SET", "after", "2"], b"+OK\r\n");
    assert_acl_enforced(n);
    drop(thaw);
}

#[test]
fn failover_command_hands_the_shard_to_the_replica_through_an_election() {
    let c = Cluster::start();
    let ((p, _fp), (r, _fr)) = pair(&c);
    // Starting the second node can stall the shared runtime past the lease on a loaded
    // machine, and then either node may have won the next election: use whichever leads.
    let deadline = Instant::now() + DEADLINE;
    let (p, r) = loop {
        if once(p, &["SET", "k", "v"]).as_deref() == Some(&b"+OK\r\n"[..]) {
            break (p, r);
        }
        if once(r, &["SET", "k", "v"]).as_deref() == Some(&b"+OK\r\n"[..]) {
            break (r, p);
        }
        assert!(Instant::now() < deadline, "no node took a write");
        std::thread::sleep(Duration::from_millis(10));
    };
    wait_role(r, "slave");
    // On a replica FAILOVER is refused, as in Redis.
    assert_eq!(text(&once(r, &["FAILOVER"]).unwrap()), "-ERR FAILOVER is not valid when server is a replica.\r\n");
    let before = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(LogApi::head(&c.log, "shard-0")).unwrap();
    // The primary answers, then steps down; the replica wins the election.
    assert_eq!(once(p, &["FAILOVER"]).as_deref(), Some(&b"+OK\r\n"[..]));
    wait_writable(r);
    wait_role(p, "slave");
    assert_eq!(once(r, &["GET", "k"]).as_deref(), Some(&b"$1\r\nv\r\n"[..]), "nothing acknowledged is lost");
    // The new leader's claim is in the log, at a higher epoch.
    let head = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(LogApi::head(&c.log, "shard-0")).unwrap();
    assert!(head.epoch > before.epoch, "epoch {} after {}", head.epoch, before.epoch);
}
