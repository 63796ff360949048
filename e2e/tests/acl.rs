//! ACL users with real `memoria up` processes: users and passwords set through the
//! stable endpoint hold on the new primary after its predecessor is killed with -9, and
//! after the whole of `memoria up` is stopped and started again; the supervisor keeps
//! finding its nodes while every connection needs a password; and `memoria up` refuses to
//! listen beyond loopback without one.

mod common;

use std::time::{Duration, Instant};

use common::{Up, memoria_bin, signal, tempdir};
use memoria_e2e::workload::{Conn, Reply};

const DEADLINE: Duration = Duration::from_secs(60);

async fn as_user(addr: &str, user: &str, pass: &str, argv: &[&[u8]]) -> Option<Reply> {
    let mut c = Conn::connect(addr).await.ok()?;
    match c.request(&[b"AUTH", user.as_bytes(), pass.as_bytes()]).await.ok()? {
        Reply::Simple(s) if s == "OK" => {}
        other => return Some(other),
    }
    c.request(argv).await.ok()
}

/// Retries (the endpoint closes connections while the primary moves) until `want`.
async fn wait_for(addr: &str, user: &str, pass: &str, argv: &[&[u8]], want: &Reply) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let r = as_user(addr, user, pass, argv).await;
        if r.as_ref() == Some(want) {
            return;
        }
        assert!(Instant::now() < deadline, "{argv:?} as {user} never answered {want:?} (last {r:?})");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn assert_enforced(addr: &str) {
    let mut c = Conn::connect(addr).await.unwrap();
    assert_eq!(c.request(&[b"GET", b"app:1"]).await.unwrap(), Reply::Error("NOAUTH Authentication required.".into()));
    assert_eq!(
        as_user(addr, "app", "apppw", &[b"GET", b"other:x"]).await,
        Some(Reply::Error("NOPERM this user has no permissions to access one of the keys used as arguments".into()))
    );
    assert_eq!(
        as_user(addr, "app", "apppw", &[b"SET", b"app:1", b"z"]).await,
        Some(Reply::Error("NOPERM this user has no permissions to run the 'set' command".into()))
    );
    assert_eq!(as_user(addr, "app", "apppw", &[b"GET", b"app:1"]).await, Some(Reply::Bulk(Some(b"v".to_vec()))));
    assert_eq!(as_user(addr, "default", "wrong", &[b"PING"]).await, Some(Reply::Error("WRONGPASS invalid username-password pair or user is disabled.".into())));
}

#[test]
fn users_hold_after_kill9_failover_and_full_restart() {
    let dir = tempdir("acl");
    let mut up = Up::start(&dir, 1, None);
    let primary = up.wait_primary(DEADLINE, None);
    let ep = up.endpoint();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let ok = Reply::Simple("OK".into());
        wait_for(&ep, "default", "", &[b"ACL", b"SETUSER", b"app", b"on", b">apppw", b"~app:*", b"+@read"], &ok).await;
        wait_for(&ep, "default", "", &[b"SET", b"app:1", b"v"], &ok).await;
        wait_for(&ep, "default", "", &[b"SET", b"other:x", b"w"], &ok).await;
        wait_for(&ep, "default", "", &[b"CONFIG", b"SET", b"requirepass", b"adminpw"], &ok).await;
        assert_enforced(&ep).await;
    });
    // kill -9 of the primary: the replica takes over with the same users, and the
    // supervisor (which authenticates its probes) still finds it.
    signal(primary.pid.unwrap(), "KILL");
    let next = up.wait_primary(DEADLINE, Some(&primary.name));
    assert_ne!(next.name, primary.name);
    rt.block_on(async {
        wait_for(&ep, "default", "adminpw", &[b"SET", b"after", b"1"], &Reply::Simple("OK".into())).await;
        assert_enforced(&ep).await;
    });
    // Everything stopped and started again from the log.
    up.restart();
    up.wait_primary(DEADLINE, None);
    rt.block_on(async {
        wait_for(&ep, "default", "adminpw", &[b"GET", b"after"], &Reply::Bulk(Some(b"1".to_vec()))).await;
        assert_enforced(&ep).await;
        let list = as_user(&ep, "default", "adminpw", &[b"ACL", b"LIST"]).await;
        let text = match list {
            Some(Reply::Array(Some(users))) => users
                .iter()
                .map(|u| match u {
                    Reply::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
                    other => format!("{other:?}"),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            other => format!("{other:?}"),
        };
        assert!(text.contains("user app on #") && !text.contains("apppw") && !text.contains("adminpw"), "{text}");
    });
    // The log (SQLite file and its WAL) never holds a plaintext password.
    let mut log = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("log.sqlite") {
            log.extend(std::fs::read(e.path()).unwrap_or_default());
        }
    }
    assert!(log.len() > 4096, "log not found in {}", dir.display());
    for secret in [&b"apppw"[..], b"adminpw"] {
        assert!(!log.windows(secret.len()).any(|w| w == secret), "{} in the log", String::from_utf8_lossy(secret));
    }
}

#[test]
fn up_refuses_to_listen_beyond_loopback_without_a_password() {
    let dir = tempdir("acl-bind");
    let out = std::process::Command::new(memoria_bin())
        .args(["up", "--bind", "0.0.0.0", "--port", &common::free_port().to_string(), "--data-dir"])
        .arg(&dir)
        .env_remove("MEMORIA_REQUIREPASS")
        .output()
        .expect("run memoria up");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--requirepass") && err.contains("--protected-mode no"), "{err}");
}
