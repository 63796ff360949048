//! TLS on the RESP port: redis-cli --tls and the redis crate (rustls) connect with a test CA
//! (certificates made here with rcgen); plaintext on the TLS port, an untrusted or expired
//! certificate, and a missing client certificate when one is required are refused, while
//! the server and its other clients carry on.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use memoria_host::limits::ConnLimits;
use memoria_host::server::{self, NetOptions, ServerOptions};
use memoria_host::tls::{ClientAuth, TlsSettings};
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// A CA and the certificates it (or a stranger) issued, as PEM files in a temp dir.
struct Pki {
    dir: tempfile::TempDir,
}

struct Ca {
    params: CertificateParams,
    key: KeyPair,
}

fn make_ca(name: &str) -> (Ca, String) {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, name);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let key = KeyPair::generate().unwrap();
    let cert = p.self_signed(&key).unwrap();
    (Ca { params: p, key }, cert.pem())
}

/// A leaf signed by `ca`: (cert PEM, key PEM). `expired` puts its validity in the past.
fn make_leaf(ca: &Ca, cn: &str, server: bool, expired: bool) -> (String, String) {
    let sans: Vec<String> = if server { vec!["localhost".into(), "127.0.0.1".into()] } else { vec![] };
    let mut p = CertificateParams::new(sans).unwrap();
    p.distinguished_name.push(DnType::CommonName, cn);
    p.extended_key_usages = vec![if server { ExtendedKeyUsagePurpose::ServerAuth } else { ExtendedKeyUsagePurpose::ClientAuth }];
    if expired {
        p.not_before = rcgen::date_time_ymd(2001, 1, 1);
        p.not_after = rcgen::date_time_ymd(2002, 1, 1);
    }
    let key = KeyPair::generate().unwrap();
    let issuer = Issuer::from_params(&ca.params, &ca.key);
    let cert = p.signed_by(&key, &issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let (ca, ca_pem) = make_ca("memoria test CA");
        let (other, other_pem) = make_ca("some other CA");
        let files: Vec<(&str, (String, String))> = vec![
            ("server", make_leaf(&ca, "memoria server", true, false)),
            ("server-expired", make_leaf(&ca, "memoria server (expired)", true, true)),
            ("server-stranger", make_leaf(&other, "memoria server (other CA)", true, false)),
            ("client", make_leaf(&ca, "client", false, false)),
            ("client-expired", make_leaf(&ca, "client (expired)", false, true)),
            ("client-stranger", make_leaf(&other, "client (other CA)", false, false)),
        ];
        std::fs::write(dir.path().join("ca.pem"), ca_pem).unwrap();
        std::fs::write(dir.path().join("other-ca.pem"), other_pem).unwrap();
        for (name, (cert, key)) in files {
            std::fs::write(dir.path().join(format!("{name}.pem")), cert).unwrap();
            std::fs::write(dir.path().join(format!("{name}.key")), key).unwrap();
        }
        Pki { dir }
    }
    fn path(&self, f: &str) -> PathBuf {
        self.dir.path().join(f)
    }
    fn read(&self, f: &str) -> Vec<u8> {
        std::fs::read(self.path(f)).unwrap()
    }
    fn settings(&self, server: &str, auth: ClientAuth) -> TlsSettings {
        TlsSettings {
            cert_file: self.path(&format!("{server}.pem")),
            key_file: self.path(&format!("{server}.key")),
            ca_file: Some(self.path("ca.pem")),
            auth_clients: auth,
        }
    }
}

/// An in-process server with a TLS port, on its own thread and runtime.
struct Server {
    port: u16,
    tls_port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(tls: TlsSettings) -> Server {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let opts = ServerOptions {
                    bind: "127.0.0.1".into(),
                    port: 0,
                    data_dir: "/nonexistent".into(),
                    limits: ConnLimits::default(),
                    log: None,
                    node: "test".into(),
                    replica_of: None,
                    lease_ms: None,
                    cluster: false,
                    snapshots: None,
                    auth: Default::default(),
                };
                let net = NetOptions { tls: Some((0, tls)), ..Default::default() };
                let srv = server::start_with(opts, net).await.expect("server starts");
                tx.send((srv.addr.port(), srv.tls_addr.unwrap().port())).unwrap();
                let _ = stop_rx.await;
                srv.shutdown().await;
            });
        });
        let (port, tls_port) = rx.recv_timeout(Duration::from_secs(60)).expect("memoria did not start");
        Server { port, tls_port, stop: Some(stop_tx), thread: Some(thread) }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// redis-cli over TLS; returns (success, stdout + stderr).
fn cli(port: u16, ca: &Path, cert: Option<(&Path, &Path)>, args: &[&str]) -> (bool, String) {
    let mut c = Command::new("redis-cli");
    c.args(["-h", "127.0.0.1", "-p", &port.to_string(), "--tls", "--cacert"]).arg(ca);
    if let Some((cert, key)) = cert {
        c.arg("--cert").arg(cert).arg("--key").arg(key);
    }
    let out = c.args(args).output().expect("redis-cli (redis-tools) is needed");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

fn plain_roundtrip(port: u16, cmd: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(cmd).unwrap();
    let mut buf = vec![0u8; 256];
    let n = s.read(&mut buf).unwrap();
    buf.truncate(n);
    buf
}

fn rt() -> tokio::runtime::Runtime {
    // The redis crate builds rustls configs with the process-wide provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// A redis-crate connection over TLS (client certificate optional).
async fn redis_tls(port: u16, pki: &Pki, ca: &str, client: Option<&str>) -> redis::RedisResult<redis::aio::MultiplexedConnection> {
    let client_tls = client.map(|c| redis::ClientTlsConfig { client_cert: pki.read(&format!("{c}.pem")), client_key: pki.read(&format!("{c}.key")) });
    let certs = redis::TlsCertificates { client_tls, root_cert: Some(pki.read(ca)) };
    let client = redis::Client::build_with_tls(format!("rediss://127.0.0.1:{port}/"), certs)?;
    let mut con = tokio::time::timeout(Duration::from_secs(30), client.get_multiplexed_async_connection())
        .await
        .map_err(|_| redis::RedisError::from((redis::ErrorKind::Io, "timed out")))??;
    // With TLS 1.3 a refused client certificate shows on the first exchange.
    redis::cmd("PING").query_async::<String>(&mut con).await?;
    Ok(con)
}

#[test]
fn redis_cli_and_redis_crate_connect_over_tls_and_bad_peers_are_refused() {
    let pki = Pki::new();
    let srv = Server::start(pki.settings("server", ClientAuth::Yes));
    let ca = pki.path("ca.pem");
    let (cert, key) = (pki.path("client.pem"), pki.path("client.key"));

    // redis-cli --tls with the test CA and a client certificate.
    let (ok, out) = cli(srv.tls_port, &ca, Some((&cert, &key)), &["SET", "k", "over-tls"]);
    assert!(ok && out.trim() == "OK", "redis-cli SET over TLS: {out}");
    let (ok, out) = cli(srv.tls_port, &ca, Some((&cert, &key)), &["GET", "k"]);
    assert!(ok && out.trim() == "over-tls", "redis-cli GET over TLS: {out}");

    let rt = rt();
    rt.block_on(async {
        // The redis crate over rustls; this connection stays open through what follows.
        let mut good = redis_tls(srv.tls_port, &pki, "ca.pem", Some("client")).await.expect("redis crate over TLS");
        let v: String = redis::cmd("GET").arg("k").query_async(&mut good).await.unwrap();
        assert_eq!(v, "over-tls");

        // Plaintext on the TLS port: no reply, the connection is closed.
        let got = plain_roundtrip(srv.tls_port, b"PING\r\n");
        assert!(!got.windows(4).any(|w| w == b"PONG"), "plaintext on the TLS port got {:?}", String::from_utf8_lossy(&got));

        // Client certificates are required: none, one from another CA, an expired one.
        for client in [None, Some("client-stranger"), Some("client-expired")] {
            let r = redis_tls(srv.tls_port, &pki, "ca.pem", client).await;
            assert!(r.is_err(), "client certificate {client:?} was accepted");
        }
        let (_, out) = cli(srv.tls_port, &ca, None, &["PING"]);
        assert!(!out.contains("PONG"), "redis-cli without a client certificate: {out}");
        let (_, out) = cli(srv.tls_port, &ca, Some((&pki.path("client-stranger.pem"), &pki.path("client-stranger.key"))), &["PING"]);
        assert!(!out.contains("PONG"), "redis-cli with an untrusted client certificate: {out}");
        let (_, out) = cli(srv.tls_port, &ca, Some((&pki.path("client-expired.pem"), &pki.path("client-expired.key"))), &["PING"]);
        assert!(!out.contains("PONG"), "redis-cli with an expired client certificate: {out}");

        // A client that trusts another CA refuses this server.
        assert!(redis_tls(srv.tls_port, &pki, "other-ca.pem", Some("client")).await.is_err(), "a client trusting another CA accepted the server");

        // The server and its other clients are unaffected.
        let n: i64 = redis::cmd("INCR").arg("n").query_async(&mut good).await.unwrap();
        assert_eq!(n, 1);
        assert_eq!(plain_roundtrip(srv.port, b"PING\r\n"), b"+PONG\r\n");
        let (ok, out) = cli(srv.tls_port, &ca, Some((&cert, &key)), &["GET", "n"]);
        assert!(ok && out.trim() == "1", "{out}");
    });
}

#[test]
fn an_expired_or_untrusted_server_certificate_is_refused_by_clients() {
    let pki = Pki::new();
    let rt = rt();
    for server in ["server-expired", "server-stranger"] {
        let srv = Server::start(pki.settings(server, ClientAuth::No));
        let (_, out) = cli(srv.tls_port, &pki.path("ca.pem"), None, &["PING"]);
        assert!(!out.contains("PONG"), "redis-cli accepted {server}: {out}");
        rt.block_on(async {
            assert!(redis_tls(srv.tls_port, &pki, "ca.pem", None).await.is_err(), "the redis crate accepted {server}");
        });
        // Control: the plain port of the same server answers.
        assert_eq!(plain_roundtrip(srv.port, b"PING\r\n"), b"+PONG\r\n");
    }
}

#[test]
fn client_certificates_no_and_optional() {
    let pki = Pki::new();
    let rt = rt();
    // no: a client without a certificate gets in.
    let srv = Server::start(pki.settings("server", ClientAuth::No));
    let (ok, out) = cli(srv.tls_port, &pki.path("ca.pem"), None, &["PING"]);
    assert!(ok && out.trim() == "PONG", "{out}");
    drop(srv);
    // optional: without one, yes; with a bad one, no.
    let srv = Server::start(pki.settings("server", ClientAuth::Optional));
    rt.block_on(async {
        redis_tls(srv.tls_port, &pki, "ca.pem", None).await.expect("no certificate, optional");
        redis_tls(srv.tls_port, &pki, "ca.pem", Some("client")).await.expect("a good certificate, optional");
        assert!(redis_tls(srv.tls_port, &pki, "ca.pem", Some("client-stranger")).await.is_err(), "an untrusted certificate with optional auth");
    });
    // CONFIG GET reports the TLS settings as Redis does.
    let got = plain_roundtrip(srv.port, b"CONFIG GET tls-auth-clients\r\n");
    assert_eq!(got, b"*2\r\n$16\r\ntls-auth-clients\r\n$8\r\noptional\r\n");
    let got = plain_roundtrip(srv.port, b"CONFIG GET tls-port\r\n");
    let want = format!("*2\r\n$8\r\ntls-port\r\n${}\r\n{}\r\n", srv.tls_port.to_string().len(), srv.tls_port);
    assert_eq!(String::from_utf8_lossy(&got), want);
}

#[test]
fn bad_tls_settings_stop_the_server_at_start() {
    let pki = Pki::new();
    let rt = rt();
    rt.block_on(async {
        let opts = || ServerOptions {
            bind: "127.0.0.1".into(),
            port: 0,
            data_dir: "/nonexistent".into(),
            limits: ConnLimits::default(),
            log: None,
            node: "test".into(),
            replica_of: None,
            lease_ms: None,
            cluster: false,
            snapshots: None,
            auth: Default::default(),
        };
        let mut s = pki.settings("server", ClientAuth::Yes);
        s.ca_file = None;
        let e = server::start_with(opts(), NetOptions { tls: Some((0, s)), ..Default::default() }).await.err().expect("client auth without a CA");
        assert!(e.to_string().contains("--tls-ca-cert-file"), "{e}");
        let mut s = pki.settings("server", ClientAuth::No);
        s.key_file = pki.path("client.key");
        let e = server::start_with(opts(), NetOptions { tls: Some((0, s)), ..Default::default() }).await.err().expect("a key of another certificate");
        assert!(e.to_string().contains("server.pem"), "{e}");
    });
}
