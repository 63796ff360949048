//! The typed HTTP client the host uses to reach a remote log service.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use reqwest::{Method, StatusCode, header};
use serde::de::DeserializeOwned;

use crate::chain::Checksum;
use crate::codec::{AppendRequest, CONTENT_TYPE, ReadBatch};
use crate::core::{Truncated, VerifyReport};
use crate::entry::{Appended, Head, LogInfo};
use crate::error::{ErrorBody, LogError};
use crate::local_socket::{LocalSocket, Sent};
use crate::server::{Created, SnapshotBody, SnapshotPublished, TruncateBody};

/// Time allowed for admin calls and for a read beyond its long-poll wait. Appends get no
/// timeout: the service finishes an append whatever the client does, so giving up early
/// only turns a known outcome into an in-doubt one.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Clone)]
pub struct LogClient {
    http: reqwest::Client,
    /// One service per AZ; requests go to `bases[current]` and move on when it cannot be
    /// reached at all (a request that never left is safe to send elsewhere).
    bases: Arc<Vec<String>>,
    current: Arc<AtomicUsize>,
    auth: String,
    /// Appends and tail reads go here first when set (`local_socket.rs`); HTTP when nothing
    /// could be sent.
    local: Option<Arc<LocalSocket>>,
}

impl LogClient {
    /// `base_url` like `http://127.0.0.1:7480` (no trailing `/v1`).
    pub fn new(base_url: &str, token: &str) -> Result<LogClient, LogError> {
        let http = reqwest::Client::builder()
            .tcp_nodelay(true)
            .tcp_keepalive(Duration::from_secs(15))
            .connect_timeout(Duration::from_secs(5))
            .pool_idle_timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| LogError::Transport(e.to_string()))?;
        Self::with_http(http, base_url, token)
    }

    /// Like [`LogClient::with_endpoints`], trusting the CA certificates in `ca_pem` (PEM,
    /// one or more) for `https://` services, besides the usual roots.
    pub fn with_endpoints_ca(base_urls: &[&str], token: &str, ca_pem: Option<&[u8]>) -> Result<LogClient, LogError> {
        let Some(pem) = ca_pem else { return Self::with_endpoints(base_urls, token) };
        let first = base_urls.first().ok_or_else(|| LogError::Invalid("no log service URL given".into()))?;
        let mut b = reqwest::Client::builder()
            .tcp_nodelay(true)
            .tcp_keepalive(Duration::from_secs(15))
            .connect_timeout(Duration::from_secs(5))
            .pool_idle_timeout(Duration::from_secs(60));
        for cert in reqwest::Certificate::from_pem_bundle(pem).map_err(|e| LogError::Invalid(format!("CA certificate: {e}")))? {
            b = b.add_root_certificate(cert);
        }
        let http = b.build().map_err(|e| LogError::Transport(e.to_string()))?;
        let mut c = Self::with_http(http, first, token)?;
        c.bases = Arc::new(base_urls.iter().map(|u| normalise(u)).collect::<Result<_, _>>()?);
        Ok(c)
    }

    /// Several equivalent services (one per AZ), tried in order when one is unreachable.
    pub fn with_endpoints(base_urls: &[&str], token: &str) -> Result<LogClient, LogError> {
        let first = base_urls.first().ok_or_else(|| LogError::Invalid("no log service URL given".into()))?;
        let mut c = Self::new(first, token)?;
        c.bases = Arc::new(base_urls.iter().map(|u| normalise(u)).collect::<Result<_, _>>()?);
        Ok(c)
    }

    /// With a caller-built reqwest client (custom TLS roots, proxies).
    pub fn with_http(http: reqwest::Client, base_url: &str, token: &str) -> Result<LogClient, LogError> {
        Ok(LogClient {
            http,
            bases: Arc::new(vec![normalise(base_url)?]),
            current: Arc::new(AtomicUsize::new(0)),
            auth: format!("Bearer {token}"),
            local: None,
        })
    }

    /// Sends appends and reads over the service's Unix socket at `path` (same token),
    /// falling back to HTTP only when no connection can be made.
    pub fn with_local_socket(mut self, path: std::path::PathBuf) -> LogClient {
        let token = self.auth.strip_prefix("Bearer ").unwrap_or_default().to_owned();
        self.local = Some(Arc::new(LocalSocket::new(path, &token)));
        self
    }

    /// The service currently in use.
    pub fn endpoint(&self) -> &str {
        &self.bases[self.current.load(Ordering::Relaxed) % self.bases.len()]
    }

    async fn send(&self, build: impl Fn(&str) -> reqwest::RequestBuilder) -> Result<reqwest::Response, LogError> {
        let n = self.bases.len();
        let start = self.current.load(Ordering::Relaxed);
        let mut attempt = 0;
        let resp = loop {
            let i = (start + attempt) % n;
            match build(&self.bases[i]).header(header::AUTHORIZATION, &self.auth).send().await {
                Ok(r) => {
                    if attempt > 0 {
                        self.current.store(i, Ordering::Relaxed);
                        tracing::info!(endpoint = %self.bases[i], "log service endpoint switched");
                    }
                    break r;
                }
                // Nothing was sent: another AZ's service can take the request as is.
                Err(e) if e.is_connect() && attempt + 1 < n => attempt += 1,
                Err(e) => return Err(LogError::Transport(e.to_string())),
            }
        };
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status();
        let text = resp.text().await.map_err(|e| LogError::Transport(e.to_string()))?;
        Err(match serde_json::from_str::<ErrorBody>(&text) {
            Ok(b) => LogError::from_body(status.as_u16(), b),
            Err(_) if status == StatusCode::PAYLOAD_TOO_LARGE => LogError::Invalid(format!("body too large: {text}")),
            Err(_) => LogError::Protocol(format!("HTTP {status}: {text}")),
        })
    }

    async fn json<T: DeserializeOwned>(&self, build: impl Fn(&str) -> reqwest::RequestBuilder) -> Result<T, LogError> {
        let resp = self.send(|b| build(b).timeout(CALL_TIMEOUT)).await?;
        let b = resp.bytes().await.map_err(|e| LogError::Transport(e.to_string()))?;
        serde_json::from_slice(&b).map_err(|e| LogError::Protocol(e.to_string()))
    }

    async fn bytes(&self, build: impl Fn(&str) -> reqwest::RequestBuilder) -> Result<Bytes, LogError> {
        let resp = self.send(build).await?;
        resp.bytes().await.map_err(|e| LogError::Transport(e.to_string()))
    }

    pub async fn create(&self, log: &str) -> Result<bool, LogError> {
        let r: Created = self.json(|b| self.http.request(Method::PUT, format!("{b}/v1/logs/{log}"))).await?;
        Ok(r.created)
    }

    pub async fn append(&self, log: &str, prev_id: u64, epoch: u64, entries: Vec<crate::entry::NewEntry>) -> Result<Appended, LogError> {
        self.append_request(log, AppendRequest { prev_id, epoch, prev_checksum: None, entries }).await
    }

    /// Append with every option (e.g. `prev_checksum` fencing).
    pub async fn append_request(&self, log: &str, req: AppendRequest) -> Result<Appended, LogError> {
        if let Some(socket) = &self.local {
            match socket.append(log, &req).await {
                Sent::Answered(r) => return r,
                Sent::NotSent(e) => tracing::debug!(error = %e, "log socket unreachable; appending over HTTP"),
            }
        }
        let body = req.encode();
        let b = self.bytes(|b| self.http.post(format!("{b}/v1/logs/{log}/append")).header(header::CONTENT_TYPE, CONTENT_TYPE).body(body.clone())).await?;
        Appended::decode(b).map_err(|e| LogError::Protocol(e.to_string()))
    }

    pub async fn read(&self, log: &str, after: u64, limit: u32, wait: Duration) -> Result<ReadBatch, LogError> {
        self.read_as(log, after, limit, wait, None).await
    }

    /// A read naming its reader (see `LogCore::read_as`).
    pub async fn read_as(&self, log: &str, after: u64, limit: u32, wait: Duration, reader: Option<&str>) -> Result<ReadBatch, LogError> {
        if let Some(socket) = &self.local {
            match socket.read(log, after, limit, wait, reader).await {
                Sent::Answered(r) => return r,
                Sent::NotSent(e) => tracing::debug!(error = %e, "log socket unreachable; reading over HTTP"),
            }
        }
        let b = self
            .bytes(|b| {
                let mut req =
                    self.http.get(format!("{b}/v1/logs/{log}/entries")).query(&[("after", after), ("limit", limit as u64), ("wait", wait.as_millis() as u64)]);
                if let Some(r) = reader {
                    req = req.query(&[("reader", r)]);
                }
                req.timeout(wait + CALL_TIMEOUT)
            })
            .await?;
        ReadBatch::decode(b).map_err(|e| LogError::Protocol(e.to_string()))
    }

    pub async fn readers(&self, log: &str) -> Result<Vec<crate::entry::ReaderInfo>, LogError> {
        self.json(|b| self.http.get(format!("{b}/v1/logs/{log}/readers"))).await
    }

    pub async fn head(&self, log: &str) -> Result<Head, LogError> {
        self.json(|b| self.http.get(format!("{b}/v1/logs/{log}"))).await
    }

    pub async fn list(&self) -> Result<Vec<LogInfo>, LogError> {
        self.json(|b| self.http.get(format!("{b}/v1/logs"))).await
    }

    pub async fn publish_snapshot(&self, log: &str, id: u64, checksum: Checksum) -> Result<u64, LogError> {
        let r: SnapshotPublished = self.json(|b| self.post_json(format!("{b}/v1/logs/{log}/snapshot"), &SnapshotBody { id, checksum })).await?;
        Ok(r.snapshot_id)
    }

    pub async fn truncate(&self, log: &str, before: u64) -> Result<Truncated, LogError> {
        self.json(|b| self.post_json(format!("{b}/v1/logs/{log}/truncate"), &TruncateBody { before })).await
    }

    pub async fn verify(&self, log: &str) -> Result<VerifyReport, LogError> {
        self.json(|b| self.http.get(format!("{b}/v1/logs/{log}/verify"))).await
    }

    /// Prometheus text from the service.
    pub async fn metrics(&self) -> Result<String, LogError> {
        let r = self.send(|b| self.http.get(format!("{b}/metrics")).timeout(CALL_TIMEOUT)).await?;
        r.text().await.map_err(|e| LogError::Transport(e.to_string()))
    }
}

impl LogClient {
    fn post_json<T: serde::Serialize>(&self, url: String, v: &T) -> reqwest::RequestBuilder {
        // These bodies are plain structs of numbers and hex strings: serialising cannot fail.
        let body = serde_json::to_vec(v).unwrap_or_default();
        self.http.post(url).header(header::CONTENT_TYPE, "application/json").body(body)
    }
}

fn normalise(url: &str) -> Result<String, LogError> {
    let base = url.trim_end_matches('/').to_owned();
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(LogError::Invalid(format!("log service URL must start with http:// or https://: {url}")));
    }
    Ok(base)
}
