//! The memoria-log binary: refuses to run without a token (unless explicitly open on
//! loopback), and serves HTTPS with a given certificate.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use memoria_log::{LogClient, NewEntry};

const BIN: &str = env!("CARGO_BIN_EXE_memoria-log");

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn cmd(dir: &std::path::Path) -> Command {
    let mut c = Command::new(BIN);
    c.env_remove("MEMORIA_LOG_TOKEN").arg("--sqlite").arg(dir.join("log.db")).stdin(Stdio::null());
    c
}

async fn wait_health(url: &str, token: Option<&str>, http: reqwest::Client) -> reqwest::StatusCode {
    let mut last = String::new();
    for _ in 0..200 {
        let mut r = http.get(format!("{url}/v1/health"));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        match r.send().await {
            Ok(resp) => return resp.status(),
            Err(e) => last = format!("{e:?}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("service at {url} never answered: {last}");
}

#[test]
fn refuses_to_start_without_a_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = cmd(dir.path()).args(["--listen", "127.0.0.1:0"]).output().expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no token"), "{}", String::from_utf8_lossy(&out.stderr));

    let out = cmd(dir.path()).args(["--listen", "0.0.0.0:0", "--insecure-open"]).output().expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("only allowed on a loopback"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_open_on_loopback_serves_without_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = common::free_port();
    let _svc = Running(cmd(dir.path()).args(["--listen", &format!("127.0.0.1:{port}"), "--insecure-open"]).stderr(Stdio::null()).spawn().expect("spawn"));
    let status = wait_health(&format!("http://127.0.0.1:{port}"), None, reqwest::Client::new()).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_https_with_the_given_certificate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, cert, key) = (dir.path().join("ca.pem"), dir.path().join("cert.pem"), dir.path().join("key.pem"));
    // A CA and a leaf for 127.0.0.1 (webpki rejects a CA certificate used as the server's).
    let d = dir.path().display().to_string();
    let script = format!(
        "set -e; cd {d}; \
         openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=test-ca -keyout ca.key -out ca.pem; \
         openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 -keyout key.pem -out leaf.csr; \
         printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=CA:FALSE\\n' > ext.cnf; \
         openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -extfile ext.cnf -out cert.pem"
    );
    let ok =
        Command::new("bash").args(["-c", &script]).stdout(Stdio::null()).stderr(Stdio::null()).status().expect("openssl is needed to make test certificates");
    assert!(ok.success());
    let port = common::free_port();
    let _svc = Running(
        cmd(dir.path())
            .env("MEMORIA_LOG_TOKEN", "tls-token")
            .args(["--listen", &format!("127.0.0.1:{port}"), "--create", "cluster"])
            .arg("--tls-cert")
            .arg(&cert)
            .arg("--tls-key")
            .arg(&key)
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn"),
    );
    let pem = std::fs::read(&ca).expect("ca");
    let http = reqwest::Client::builder().add_root_certificate(reqwest::Certificate::from_pem(&pem).expect("pem")).build().expect("client");
    let url = format!("https://127.0.0.1:{port}");
    assert_eq!(wait_health(&url, Some("tls-token"), http.clone()).await, 200);
    let c = LogClient::with_http(http, &url, "tls-token").expect("client");
    let a = c.append("cluster", 0, 1, vec![NewEntry::data(&b"topology"[..])]).await.expect("append over TLS");
    assert_eq!(a.last_id, 1);
    // Plain HTTP to the TLS port does not get through.
    assert!(reqwest::Client::new().get(format!("http://127.0.0.1:{port}/v1/health")).send().await.map(|r| !r.status().is_success()).unwrap_or(true));
}
