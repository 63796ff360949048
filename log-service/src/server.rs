//! The HTTP API, versioned under /v1: binary bodies for append and read (the hot paths),
//! JSON for everything an operator or the console looks at. Every route needs the bearer
//! token unless the service was explicitly started open on loopback.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::chain::Checksum;
use crate::codec::{AppendRequest, CONTENT_TYPE, MAX_BODY};
use crate::core::LogCore;
use crate::error::LogError;

/// Error responses: status from the error, JSON body with a message and a machine code.
pub struct ApiError(pub LogError);

impl From<LogError> for ApiError {
    fn from(e: LogError) -> Self {
        ApiError(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_server_error() {
            tracing::warn!(error = %self.0, "request failed");
        }
        (status, Json(self.0.to_body())).into_response()
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> Self {
        ApiError(LogError::Invalid(r.body_text()))
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        ApiError(LogError::Invalid(r.body_text()))
    }
}

#[derive(Clone)]
struct AppState {
    core: LogCore,
    /// SHA-256 of the expected token: comparing digests keeps the comparison's timing
    /// independent of how many leading bytes a guess got right.
    token_digest: Option<[u8; 32]>,
    metrics: PrometheusHandle,
    scrape: ScrapeAccess,
}

/// Who may read `/metrics` (every other route needs the API token).
#[derive(Clone, Debug, Default)]
pub enum ScrapeAccess {
    /// Whoever has the API token, as any other route.
    #[default]
    ApiToken,
    /// Anyone who reaches the service (`memoria up`'s log service listens on loopback).
    Open,
    /// A scrape token of its own (the API token works too).
    Token(String),
}

/// SHA-256 of a token, the form tokens are compared in.
pub fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Whether `headers` carry `Authorization: Bearer <t>` with `t` hashing to `want`, compared
/// in constant time.
pub fn bearer_matches(headers: &header::HeaderMap, want: &[u8; 32]) -> bool {
    let got = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer ")).map(token_digest);
    got.is_some_and(|g| digests_match(&g, want))
}

/// Whether two token digests are equal, compared in constant time.
pub fn digests_match(got: &[u8; 32], want: &[u8; 32]) -> bool {
    got.iter().zip(want).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// A 401 with `WWW-Authenticate: Bearer`.
pub fn unauthorized() -> Response {
    let mut r = ApiError(LogError::Unauthorized("missing or wrong bearer token".into())).into_response();
    r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// The process-wide Prometheus recorder (the `metrics` facade allows one per process).
pub fn prometheus() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let latency = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];
            let sizes = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0];
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &latency)
                .and_then(|b| b.set_buckets_for_metric(Matcher::Suffix("_entries".into()), &sizes))
                .unwrap_or_else(|_| PrometheusBuilder::new());
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!("a metrics recorder was already installed; /metrics shows only its own view");
            }
            let upkeep = handle.clone();
            // Histograms need periodic upkeep to bound their memory.
            std::thread::Builder::new()
                .name("metrics-upkeep".into())
                .spawn(move || {
                    loop {
                        std::thread::sleep(Duration::from_secs(5));
                        upkeep.run_upkeep();
                    }
                })
                .ok();
            handle
        })
        .clone()
}

/// Builds the router. `token` = None serves without authentication (the binary allows that
/// only with `--insecure-open` on a loopback address).
pub fn router(core: LogCore, token: Option<String>) -> Router {
    router_with(core, token, ScrapeAccess::ApiToken)
}

/// [`router`] with `/metrics` open to `scrape`.
pub fn router_with(core: LogCore, token: Option<String>, scrape: ScrapeAccess) -> Router {
    let state = AppState { core, token_digest: token.as_deref().map(token_digest), metrics: prometheus(), scrape };
    Router::new()
        .route("/v1/logs", get(list))
        .route("/v1/logs/{log}", get(head).put(create))
        .route("/v1/logs/{log}/append", post(append))
        .route("/v1/logs/{log}/entries", get(read))
        .route("/v1/logs/{log}/snapshot", post(snapshot))
        .route("/v1/logs/{log}/truncate", post(truncate))
        .route("/v1/logs/{log}/verify", get(verify))
        .route("/v1/logs/{log}/readers", get(readers))
        .route("/v1/health", get(health))
        .route("/metrics", get(render_metrics))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(state.clone(), auth_and_trace))
        .with_state(Arc::new(state))
}

async fn auth_and_trace(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    if let Some(want) = &state.token_digest {
        let scrape_ok = path == "/metrics"
            && match &state.scrape {
                ScrapeAccess::ApiToken => false,
                ScrapeAccess::Open => true,
                ScrapeAccess::Token(t) => bearer_matches(req.headers(), &token_digest(t)),
            };
        if !scrape_ok && !bearer_matches(req.headers(), want) {
            metrics::counter!("memoria_log_auth_failures_total").increment(1);
            tracing::info!(%method, %path, "rejected: missing or wrong bearer token");
            return unauthorized();
        }
    }
    let resp = next.run(req).await;
    tracing::debug!(%method, %path, status = resp.status().as_u16(), elapsed_us = started.elapsed().as_micros() as u64, "request");
    resp
}

type St = State<Arc<AppState>>;

async fn health() -> &'static str {
    "ok\n"
}

async fn not_found() -> ApiError {
    ApiError(LogError::Invalid("no such endpoint (the API lives under /v1)".into()))
}

async fn render_metrics(State(s): St) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], s.metrics.render()).into_response()
}

async fn list(State(s): St) -> Result<Response, ApiError> {
    Ok(Json(s.core.list().await?).into_response())
}

#[derive(Serialize, Deserialize)]
pub struct Created {
    pub created: bool,
}

async fn create(State(s): St, Path(log): Path<String>) -> Result<Response, ApiError> {
    let created = s.core.create(&log).await?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, Json(Created { created })).into_response())
}

async fn head(State(s): St, Path(log): Path<String>) -> Result<Response, ApiError> {
    Ok(Json(s.core.head(&log).await?).into_response())
}

fn binary(body: Bytes) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response()
}

async fn append(State(s): St, Path(log): Path<String>, body: Bytes) -> Result<Response, ApiError> {
    let req = AppendRequest::decode(body).map_err(|e| LogError::Invalid(e.to_string()))?;
    // LogCore::append runs on its own task, so a client hanging up here cannot cancel an
    // append that is waiting for synchronous replication.
    let appended = s.core.append(&log, req).await?;
    Ok(binary(appended.encode()))
}

#[derive(Deserialize)]
struct ReadParams {
    #[serde(default)]
    after: u64,
    #[serde(default = "default_limit")]
    limit: u32,
    /// Long-poll: milliseconds to wait for the first entry after `after`.
    #[serde(default)]
    wait: u64,
    /// The reader's name (replicas give theirs: WAIT and CLUSTER SLOTS use it).
    #[serde(default)]
    reader: Option<String>,
    /// `json` for a human/console view (payloads in hex); binary otherwise.
    #[serde(default)]
    format: Option<String>,
}

/// JSON view of an entry (admin and console; the binary body is the hot path).
#[derive(Serialize, Deserialize)]
pub struct EntryView {
    pub id: u64,
    pub prev_id: u64,
    pub epoch: u64,
    pub kind: crate::entry::Kind,
    pub format: u16,
    pub checksum: Checksum,
    pub payload_len: usize,
    pub payload_hex: String,
}

#[derive(Serialize, Deserialize)]
pub struct ReadView {
    pub tail_id: u64,
    pub entries: Vec<EntryView>,
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(char::from_digit((x >> 4) as u32, 16).unwrap_or('0'));
        s.push(char::from_digit((x & 15) as u32, 16).unwrap_or('0'));
    }
    s
}

fn default_limit() -> u32 {
    1000
}

async fn readers(State(s): St, Path(log): Path<String>) -> Json<Vec<crate::entry::ReaderInfo>> {
    Json(s.core.readers(&log))
}

async fn read(State(s): St, Path(log): Path<String>, q: Result<Query<ReadParams>, QueryRejection>) -> Result<Response, ApiError> {
    let Query(q) = q?;
    let wait = Duration::from_millis(q.wait);
    let batch = match q.reader.as_deref() {
        Some(r) => s.core.read_as(&log, q.after, q.limit, wait, r).await?,
        None => s.core.read(&log, q.after, q.limit, wait).await?,
    };
    match q.format.as_deref() {
        None | Some("binary") => Ok(binary(batch.encode())),
        Some("json") => Ok(Json(ReadView {
            tail_id: batch.tail_id,
            entries: batch
                .entries
                .iter()
                .map(|e| EntryView {
                    id: e.id,
                    prev_id: e.prev_id,
                    epoch: e.epoch,
                    kind: e.kind,
                    format: e.format,
                    checksum: e.checksum,
                    payload_len: e.payload.len(),
                    payload_hex: hex(&e.payload),
                })
                .collect(),
        })
        .into_response()),
        Some(f) => Err(LogError::Invalid(format!("unknown format {f:?} (binary or json)")).into()),
    }
}

#[derive(Serialize, Deserialize)]
pub struct SnapshotBody {
    pub id: u64,
    pub checksum: Checksum,
}

#[derive(Serialize, Deserialize)]
pub struct SnapshotPublished {
    pub snapshot_id: u64,
}

async fn snapshot(State(s): St, Path(log): Path<String>, body: Result<Json<SnapshotBody>, JsonRejection>) -> Result<Response, ApiError> {
    let Json(b) = body?;
    let snapshot_id = s.core.publish_snapshot(&log, b.id, b.checksum).await?;
    Ok(Json(SnapshotPublished { snapshot_id }).into_response())
}

#[derive(Serialize, Deserialize)]
pub struct TruncateBody {
    pub before: u64,
}

async fn truncate(State(s): St, Path(log): Path<String>, body: Result<Json<TruncateBody>, JsonRejection>) -> Result<Response, ApiError> {
    let Json(b) = body?;
    Ok(Json(s.core.truncate(&log, b.before).await?).into_response())
}

async fn verify(State(s): St, Path(log): Path<String>) -> Result<Response, ApiError> {
    Ok(Json(s.core.verify(&log).await?).into_response())
}
