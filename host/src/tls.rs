//! TLS on the RESP port (rustls with ring), with Redis's options: `tls-port`,
//! `tls-cert-file`, `tls-key-file`, `tls-ca-cert-file` and `tls-auth-clients yes|no|optional`
//! (client certificates checked against the CA file).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio_rustls::TlsAcceptor;

/// `tls-auth-clients`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// A client must present a certificate signed by the CA (Redis's default).
    #[default]
    Yes,
    No,
    /// A certificate is checked if presented, but none is needed.
    Optional,
}

impl ClientAuth {
    pub fn parse(s: &str) -> Result<ClientAuth, String> {
        match s.to_ascii_lowercase().as_str() {
            "yes" => Ok(ClientAuth::Yes),
            "no" => Ok(ClientAuth::No),
            "optional" => Ok(ClientAuth::Optional),
            _ => Err(format!("tls-auth-clients must be yes, no or optional, not {s:?}")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ClientAuth::Yes => "yes",
            ClientAuth::No => "no",
            ClientAuth::Optional => "optional",
        }
    }
}

#[derive(Clone, Debug)]
pub struct TlsSettings {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    pub ca_file: Option<PathBuf>,
    pub auth_clients: ClientAuth,
}

fn certs(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| anyhow::anyhow!("reading certificates from {}: {e}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("reading certificates from {}: {e}", path.display()))?;
    if certs.is_empty() {
        anyhow::bail!("no certificate found in {}", path.display());
    }
    Ok(certs)
}

/// The acceptor for these settings; every file is read and checked now, so a bad one
/// stops the node at start rather than failing each client.
pub fn acceptor(s: &TlsSettings) -> anyhow::Result<TlsAcceptor> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certs(&s.cert_file)?;
    let key = PrivateKeyDer::from_pem_file(&s.key_file).map_err(|e| anyhow::anyhow!("reading the private key from {}: {e}", s.key_file.display()))?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
    let builder = match (s.auth_clients, &s.ca_file) {
        (ClientAuth::No, _) => builder.with_no_client_auth(),
        (auth, Some(ca)) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in certs(ca)? {
                roots.add(c).map_err(|e| anyhow::anyhow!("CA certificate in {}: {e}", ca.display()))?;
            }
            let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let v = if auth == ClientAuth::Optional { v.allow_unauthenticated() } else { v };
            builder.with_client_cert_verifier(v.build().map_err(|e| anyhow::anyhow!("client certificate verifier: {e}"))?)
        }
        (auth, None) => {
            anyhow::bail!("--tls-auth-clients {} needs --tls-ca-cert-file (the CA that signs client certificates); or use --tls-auth-clients no", auth.name())
        }
    };
    let mut cfg =
        builder.with_single_cert(chain, key).map_err(|e| anyhow::anyhow!("certificate {} with key {}: {e}", s.cert_file.display(), s.key_file.display()))?;
    // Redis clients do not negotiate ALPN; nothing to offer.
    cfg.alpn_protocols.clear();
    Ok(TlsAcceptor::from(Arc::new(cfg)))
}

/// A root store for clients of a service signed by `ca_file` (the log service over HTTPS).
pub fn read_ca_pem(ca_file: &Path) -> anyhow::Result<Vec<u8>> {
    certs(ca_file)?;
    std::fs::read(ca_file).map_err(|e| anyhow::anyhow!("reading {}: {e}", ca_file.display()))
}

/// A server config for HTTPS (the embedded log service of `memoria up`), ring provider.
pub fn https_server_config(cert_file: &Path, key_file: &Path) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certs(cert_file)?;
    let key = PrivateKeyDer::from_pem_file(key_file).map_err(|e| anyhow::anyhow!("reading the private key from {}: {e}", key_file.display()))?;
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| anyhow::anyhow!("certificate {} with key {}: {e}", cert_file.display(), key_file.display()))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}
