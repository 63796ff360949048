//! The typed HTTP client the host uses to reach a remote log service.

use std::time::Duration;

use bytes::Bytes;
use reqwest::{header, Method, StatusCode};
use serde::de::DeserializeOwned;

use crate::chain::Checksum;
use crate::codec::{AppendRequest, ReadBatch, CONTENT_TYPE};
use crate::core::{Truncated, VerifyReport};
use crate::entry::{Appended, Head, LogInfo};
use crate::error::{ErrorBody, LogError};
use crate::server::{Created, SnapshotBody, SnapshotPublished, TruncateBody};

/// Time allowed for admin calls and for a read beyond its long-poll wait. Appends get no
/// timeout: the service finishes an append whatever the client does, so giving up early
/// only turns a known outcome into an in-doubt one.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Clone)]
pub struct LogClient {
    http: reqwest::Client,
    base: String,
    auth: String,
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

    /// With a caller-built reqwest client (custom TLS roots, proxies).
    pub fn with_http(http: reqwest::Client, base_url: &str, token: &str) -> Result<LogClient, LogError> {
        let base = base_url.trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(LogError::Invalid(format!("log service URL must start with http:// or https://: {base_url}")));
        }
        Ok(LogClient { http, base, auth: format!("Bearer {token}") })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/v1{}", self.base, path)
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<reqwest::Response, LogError> {
        let resp = req.header(header::AUTHORIZATION, &self.auth).send().await.map_err(|e| LogError::Transport(e.to_string()))?;
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

    async fn json<T: DeserializeOwned>(&self, req: reqwest::RequestBuilder) -> Result<T, LogError> {
        let resp = self.send(req.timeout(CALL_TIMEOUT)).await?;
        let b = resp.bytes().await.map_err(|e| LogError::Transport(e.to_string()))?;
        serde_json::from_slice(&b).map_err(|e| LogError::Protocol(e.to_string()))
    }

    async fn bytes(&self, req: reqwest::RequestBuilder) -> Result<Bytes, LogError> {
        let resp = self.send(req).await?;
        resp.bytes().await.map_err(|e| LogError::Transport(e.to_string()))
    }

    pub async fn create(&self, log: &str) -> Result<bool, LogError> {
        let r: Created = self.json(self.http.request(Method::PUT, self.url(&format!("/logs/{log}")))).await?;
        Ok(r.created)
    }

    pub async fn append(&self, log: &str, prev_id: u64, epoch: u64, entries: Vec<crate::entry::NewEntry>) -> Result<Appended, LogError> {
        self.append_request(log, AppendRequest { prev_id, epoch, prev_checksum: None, entries }).await
    }

    /// Append with every option (e.g. `prev_checksum` fencing).
    pub async fn append_request(&self, log: &str, req: AppendRequest) -> Result<Appended, LogError> {
        let body = req.encode();
        let r = self.http.post(self.url(&format!("/logs/{log}/append"))).header(header::CONTENT_TYPE, CONTENT_TYPE).body(body);
        let b = self.bytes(r).await?;
        Appended::decode(b).map_err(|e| LogError::Protocol(e.to_string()))
    }

    pub async fn read(&self, log: &str, after: u64, limit: u32, wait: Duration) -> Result<ReadBatch, LogError> {
        let r = self
            .http
            .get(self.url(&format!("/logs/{log}/entries")))
            .query(&[("after", after), ("limit", limit as u64), ("wait", wait.as_millis() as u64)])
            .timeout(wait + CALL_TIMEOUT);
        let b = self.bytes(r).await?;
        ReadBatch::decode(b).map_err(|e| LogError::Protocol(e.to_string()))
    }

    pub async fn head(&self, log: &str) -> Result<Head, LogError> {
        self.json(self.http.get(self.url(&format!("/logs/{log}")))).await
    }

    pub async fn list(&self) -> Result<Vec<LogInfo>, LogError> {
        self.json(self.http.get(self.url("/logs"))).await
    }

    pub async fn publish_snapshot(&self, log: &str, id: u64, checksum: Checksum) -> Result<u64, LogError> {
        let r: SnapshotPublished =
            self.json(self.http.post(self.url(&format!("/logs/{log}/snapshot"))).header(header::CONTENT_TYPE, "application/json").body(to_json(&SnapshotBody { id, checksum }))).await?;
        Ok(r.snapshot_id)
    }

    pub async fn truncate(&self, log: &str, before: u64) -> Result<Truncated, LogError> {
        self.json(self.http.post(self.url(&format!("/logs/{log}/truncate"))).header(header::CONTENT_TYPE, "application/json").body(to_json(&TruncateBody { before }))).await
    }

    pub async fn verify(&self, log: &str) -> Result<VerifyReport, LogError> {
        self.json(self.http.get(self.url(&format!("/logs/{log}/verify")))).await
    }

    /// Prometheus text from the service.
    pub async fn metrics(&self) -> Result<String, LogError> {
        let r = self.send(self.http.get(format!("{}/metrics", self.base)).timeout(CALL_TIMEOUT)).await?;
        r.text().await.map_err(|e| LogError::Transport(e.to_string()))
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Vec<u8> {
    // These bodies are plain structs of numbers and hex strings: serialising cannot fail.
    serde_json::to_vec(v).unwrap_or_default()
}
