//! No secret where Redis shows none: with a password set, users created, the console
//! reading the nodes and a failover-ready deployment running, the passwords, their SHA-256
//! hashes, the run's internal token and the log's bearer token appear in no INFO section
//! (primary or replica), CLIENT LIST, ROLE, MONITOR's lines, SLOWLOG, node log, `memoria up` log, cluster.json,
//! console page, or node command line. (Redis shows password hashes only to admins, in
//! ACL GETUSER/ACL LIST, and `CONFIG GET requirepass` to admins; both are left out here.)

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{Up, free_port, get, tempdir, words};
use memoria_e2e::workload::{Conn, Reply};

const PASSWORD: &str = "Pw-default-7f3a9c2e51";
const BOB_PASSWORD: &str = "Pw-bob-c81e0d44aa";
const NEW_PASSWORD: &str = "Pw-rotated-52be19f0c3";

fn sha256_hex(s: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("sha256sum").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().expect("sha256sum (coreutils)");
    child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap().to_string()
}

fn text(r: Reply) -> String {
    match r {
        Reply::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
        Reply::Simple(s) | Reply::Error(s) => s,
        Reply::Int(i) => i.to_string(),
        Reply::Array(Some(items)) => items.into_iter().map(text).collect::<Vec<_>>().join("\n"),
        Reply::Bulk(None) | Reply::Array(None) => String::new(),
    }
}

/// Values of `name=` in a process's environment (the node learns secrets from it, never
/// from its command line).
fn environ(pid: u32, name: &str) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    env.split(|&b| b == 0).find_map(|kv| kv.strip_prefix(format!("{name}=").as_bytes()).map(|v| String::from_utf8_lossy(v).into_owned()))
}

async fn authed(addr: &str, user: &str, password: &str) -> Conn {
    let mut c = Conn::connect(addr).await.unwrap();
    assert_eq!(c.request(&[b"AUTH", user.as_bytes(), password.as_bytes()]).await.unwrap(), Reply::Simple("OK".into()));
    c
}

#[test]
fn no_password_hash_or_token_in_info_client_list_logs_cluster_json_or_console() {
    let dir = tempdir("secrets");
    let console_port = free_port();
    let up = Up::start_with(&dir, 1, None, vec!["--requirepass".into(), PASSWORD.into(), "--console-port".into(), console_port.to_string()]);
    let c = up.wait_all_serving(Duration::from_secs(60));
    let primary = c.nodes.iter().find(|n| n.role == "primary").unwrap().clone();
    let replica = c.nodes.iter().find(|n| n.role == "replica").unwrap().clone();
    let internal = environ(primary.pid.unwrap(), "MEMORIA_INTERNAL_TOKEN").expect("the node's internal token");
    let log_token = std::fs::read_to_string(dir.join("log.token")).expect("the log token file").trim().to_string();
    let mut secrets = vec![PASSWORD.to_string(), BOB_PASSWORD.to_string(), NEW_PASSWORD.to_string(), internal.clone(), log_token.clone()];
    for s in [PASSWORD, BOB_PASSWORD, NEW_PASSWORD, &internal, &log_token] {
        secrets.push(sha256_hex(s));
    }

    let mut outputs: Vec<(String, String)> = Vec::new();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut admin = authed(&up.endpoint(), "default", PASSWORD).await;
        // The slow log keeps every command below, admin ones included.
        assert_eq!(admin.request(&words("CONFIG SET slowlog-log-slower-than 0")).await.unwrap(), Reply::Simple("OK".into()));
        // A monitor sees every command below (AUTH and HELLO redacted; ACL SETUSER and
        // CONFIG SET, admin commands, unseen).
        let mut monitor = authed(&up.endpoint(), "default", PASSWORD).await;
        assert_eq!(monitor.request(&[b"MONITOR"]).await.unwrap(), Reply::Simple("OK".into()));
        for cmd in [format!("ACL SETUSER bob on >{BOB_PASSWORD} ~* &* +@all"), "SET k v".into()] {
            assert_eq!(admin.request(&words(&cmd)).await.unwrap(), Reply::Simple("OK".into()), "{cmd}");
        }
        // Bob signs in both ways; HELLO's AUTH too.
        let mut bob = authed(&up.endpoint(), "bob", BOB_PASSWORD).await;
        let mut hello = Conn::connect(&up.endpoint()).await.unwrap();
        hello.request(&[b"HELLO", b"2", b"AUTH", b"bob", BOB_PASSWORD.as_bytes()]).await.unwrap();
        // A wrong password is not echoed anywhere either.
        let mut wrong = Conn::connect(&up.endpoint()).await.unwrap();
        assert!(matches!(wrong.request(&[b"AUTH", b"bob", b"Pw-rotated-52be19f0c3"]).await.unwrap(), Reply::Error(_)));
        assert_eq!(admin.request(&[b"CONFIG", b"SET", b"requirepass", NEW_PASSWORD.as_bytes()]).await.unwrap(), Reply::Simple("OK".into()));
        // Let the replica apply all of it.
        tokio::time::sleep(Duration::from_millis(500)).await;
        // The monitor's lines, up to the marker sent last.
        admin.request(&[b"ECHO", b"monitor-marker"]).await.unwrap();
        let mut lines = Vec::new();
        loop {
            let line = text(tokio::time::timeout(Duration::from_secs(30), monitor.read_reply()).await.expect("MONITOR lines").unwrap());
            let done = line.contains("monitor-marker");
            lines.push(line);
            if done {
                break;
            }
        }
        let lines = lines.join("\n");
        assert!(lines.contains(r#""AUTH" "(redacted)" "(redacted)""#) && lines.contains(r#""HELLO" "2" "AUTH" "(redacted)" "(redacted)""#), "{lines}");
        outputs.push(("MONITOR".into(), lines));
        let slowlog = text(admin.request(&words("SLOWLOG GET -1")).await.unwrap());
        assert!(slowlog.contains("SETUSER") && slowlog.contains("requirepass") && slowlog.contains("HELLO"), "{slowlog}");
        outputs.push(("SLOWLOG GET -1".into(), slowlog));

        for (name, addr) in [("primary", up.endpoint()), ("replica", format!("127.0.0.1:{}", replica.port))] {
            let mut c = authed(&addr, "bob", BOB_PASSWORD).await;
            for cmd in ["INFO everything", "CLIENT LIST", "CLIENT INFO", "ROLE", "ACL WHOAMI", "ACL LOG"] {
                outputs.push((format!("{cmd} on the {name}"), text(c.request(&words(cmd)).await.unwrap())));
            }
        }
        outputs.push(("bob's CLIENT INFO".into(), text(bob.request(&words("CLIENT INFO")).await.unwrap())));

        // The console, which reads every node's INFO with the internal token.
        let base = format!("http://127.0.0.1:{console_port}");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (s, body) = get(&format!("{base}/"), None).await;
            if s == 200 && body.contains("node healthy") {
                break;
            }
            assert!(Instant::now() < deadline, "the console did not come up ({s})");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        for page in
            ["/".to_string(), format!("/node/{}", primary.name), format!("/node/{}", replica.name), "/log/0".into(), "/snapshots".into(), "/slots".into()]
        {
            let (s, body) = get(&format!("{base}{page}"), None).await;
            assert_eq!(s, 200, "console {page}");
            outputs.push((format!("console {page}"), body));
        }
    });

    // Files and command lines.
    outputs.push(("cluster.json".into(), std::fs::read_to_string(dir.join("cluster.json")).unwrap()));
    outputs.push(("memoria up's log".into(), std::fs::read_to_string(dir.join("up.log")).unwrap_or_default()));
    for n in &c.nodes {
        let node_dir = dir.join(&n.name);
        outputs.push((format!("{}'s log", n.name), std::fs::read_to_string(node_dir.join("node.log")).unwrap_or_default()));
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", n.pid.unwrap())).unwrap_or_default();
        outputs.push((format!("{}'s command line", n.name), String::from_utf8_lossy(&cmdline).replace('\0', " ")));
    }
    outputs.push(("console.log".into(), std::fs::read_to_string(dir.join("console.log")).unwrap_or_default()));

    assert!(outputs.iter().any(|(w, o)| w == "INFO everything on the primary" && o.contains("# Replication")), "INFO was read");
    for (what, out) in &outputs {
        for s in &secrets {
            assert!(!out.contains(s.as_str()), "{what} shows a secret ({}…):\n{out}", &s[..6]);
        }
    }
}
