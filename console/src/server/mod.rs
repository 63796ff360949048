//! The console's server side: where the facts come from (cluster.json of `memoria up`, the
//! log service, the nodes' INFO), a sampler that keeps a few minutes of each node's
//! throughput and latency, the actions, and the axum app (pages, server functions, the
//! hydration bundle, login).
//!
//! The console only reads what the log service and the nodes already serve, and acts
//! through the same doors an operator has (FAILOVER on a node, a `memoria snapshot`
//! process): it is never on the data path, and a node that does not answer is a red row.

pub mod auth;
pub mod moves;
pub mod resp;

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use memoria_log::{Kind, LeasePayload, LogClient, LogInfo, MarkPayload};
use serde::Deserialize;

use crate::model::*;

/// How the console is run (flags of `memoria-console`, set by `memoria up`).
#[derive(Clone, Debug, clap::Parser)]
#[command(name = "memoria-console", version, about = "Memoria's web console: shards, leases, slot ownership and snapshot checksums, live")]
pub struct Args {
    /// Address to listen on. Loopback by default: the console can step primaries down.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// `memoria up`'s data dir: its cluster.json names the nodes, its snapshots are in
    /// <dir>/snapshots and its log service URL is in cluster.json.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Log service endpoints (comma-separated, one per AZ); default: cluster.json's.
    #[arg(long, value_delimiter = ',')]
    pub log_url: Vec<String>,
    /// Bearer token of the log service.
    #[arg(long, env = "MEMORIA_LOG_TOKEN", hide_env_values = true, default_value = "")]
    pub log_token: String,
    /// A node to watch, `host:port` or `<shard>=host:port` (repeatable); with --data-dir
    /// the nodes come from cluster.json.
    #[arg(long = "node")]
    pub nodes: Vec<String>,
    /// Where the snapshots are (default: <data-dir>/snapshots).
    #[arg(long, env = "MEMORIA_SNAPSHOT_STORE")]
    pub snapshot_store: Option<String>,
    /// The `memoria` binary, for "take a snapshot now" (default: next to this one).
    #[arg(long)]
    pub memoria_bin: Option<PathBuf>,
    /// Require a login with this token (pages, data and actions alike).
    #[arg(long, env = "MEMORIA_CONSOLE_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

/// cluster.json, read leniently (only what the console shows; unknown fields ignored).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ClusterJson {
    #[serde(default)]
    pub endpoint: String,
    #[serde(default)]
    pub nodes: Vec<ClusterNode>,
    #[serde(default)]
    pub log: Option<ClusterLog>,
    #[serde(default)]
    pub running: bool,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct ClusterNode {
    pub name: String,
    pub port: u16,
    #[serde(default)]
    pub pid: Option<u32>,
    #[serde(default)]
    pub role: String,
    #[serde(default)]
    pub epoch: Option<u64>,
    #[serde(default)]
    pub offset: Option<u64>,
    #[serde(default)]
    pub restarts: u32,
    #[serde(default)]
    pub shard: Option<u32>,
    #[serde(default)]
    pub host: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct ClusterLog {
    #[serde(default)]
    pub url: String,
}

/// A node to watch.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub name: String,
    pub addr: String,
    pub shard: u32,
    /// From cluster.json (None for nodes given by flag).
    pub sup: Option<SupFacts>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SupFacts {
    pub pid: Option<u32>,
    pub role: String,
    pub restarts: u32,
}

/// What one poll of a node found: its INFO sections, and a primary's CLUSTER SLOTS.
type Polled = (Vec<(String, Vec<(String, String)>)>, Vec<(u16, u16, String)>);

/// Seconds of history kept per node (the node page's charts).
const HISTORY: usize = 600;
/// A node is shown unhealthy this long after it was seen failing or restarted.
const HEALTH_HOLD: Duration = Duration::from_secs(15);
/// INFO older than this is stale: the node is not answering.
const STALE: Duration = Duration::from_secs(3);
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

#[derive(Default)]
struct NodeState {
    info: Vec<(String, Vec<(String, String)>)>,
    info_at: Option<Instant>,
    error: Option<String>,
    /// The last time something was wrong with it (failed INFO, a restart seen).
    bad_at: Option<Instant>,
    bad_why: String,
    restarts_seen: Option<u32>,
    pid_seen: Option<u32>,
    history: VecDeque<Sample>,
    last_cmds: Option<(Instant, u64)>,
    ops: Option<f64>,
    slots: Vec<(u16, u16, String)>,
}

pub struct Console {
    pub args: Args,
    nodes: Mutex<HashMap<String, NodeState>>,
    log: Mutex<Option<(Vec<String>, LogClient)>>,
    /// Serialises "take a snapshot" per console (one child at a time).
    snapshot_running: tokio::sync::Mutex<()>,
    /// The slot move started from the console.
    pub moves: moves::Moves,
    /// Round trips (µs) of a PING through the stable endpoint, one per sampling round,
    /// the last minute of them: what a client at the documented port sees, next to the
    /// nodes' own reply latency.
    endpoint_rtt: Mutex<VecDeque<u64>>,
}

/// Endpoint round trips kept (one a second).
const ENDPOINT_SAMPLES: usize = 60;

pub type Shared = Arc<Console>;

pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn field<'a>(info: &'a [(String, Vec<(String, String)>)], key: &str) -> Option<&'a str> {
    info.iter().flat_map(|(_, f)| f.iter()).find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

fn field_u64(info: &[(String, Vec<(String, String)>)], key: &str) -> Option<u64> {
    field(info, key).and_then(|v| v.trim().parse().ok())
}

fn keys_of(info: &[(String, Vec<(String, String)>)]) -> Option<u64> {
    let ks = info.iter().find(|(s, _)| s == "Keyspace")?;
    Some(ks.1.iter().filter_map(|(_, v)| v.split(',').find_map(|p| p.strip_prefix("keys=")).and_then(|n| n.parse::<u64>().ok())).sum())
}

impl Console {
    pub fn new(args: Args) -> Shared {
        Arc::new(Console {
            args,
            nodes: Mutex::new(HashMap::new()),
            log: Mutex::new(None),
            snapshot_running: tokio::sync::Mutex::new(()),
            moves: moves::Moves::default(),
            endpoint_rtt: Mutex::new(VecDeque::new()),
        })
    }

    fn cluster_json_path(&self) -> Option<PathBuf> {
        self.args.data_dir.as_ref().map(|d| d.join("cluster.json"))
    }

    pub fn cluster_json(&self) -> Result<Option<ClusterJson>, String> {
        let Some(p) = self.cluster_json_path() else { return Ok(None) };
        let b = std::fs::read(&p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        serde_json::from_slice(&b).map(Some).map_err(|e| format!("cannot parse {}: {e}", p.display()))
    }

    /// Nodes to watch: cluster.json's, then the ones given by flag.
    pub fn targets(&self, cj: Option<&ClusterJson>) -> Vec<Target> {
        let mut out = Vec::new();
        if let Some(c) = cj {
            let host = c.endpoint.rsplit_once(':').map(|(h, _)| h.to_string()).unwrap_or_else(|| "127.0.0.1".into());
            for n in &c.nodes {
                let h = n.host.clone().unwrap_or_else(|| host.clone());
                out.push(Target {
                    name: n.name.clone(),
                    addr: format!("{h}:{}", n.port),
                    shard: n.shard.unwrap_or(0),
                    sup: Some(SupFacts { pid: n.pid, role: n.role.clone(), restarts: n.restarts }),
                });
            }
        }
        for spec in &self.args.nodes {
            let (shard, addr) = match spec.split_once('=') {
                Some((s, a)) => (s.trim().trim_start_matches("shard-").parse().unwrap_or(0), a.trim().to_string()),
                None => (0, spec.trim().to_string()),
            };
            out.push(Target { name: addr.clone(), addr, shard, sup: None });
        }
        out
    }

    /// The log service client (from the flags, or cluster.json's URL, which changes when
    /// `memoria up` restarts).
    pub fn log_client(&self, cj: Option<&ClusterJson>) -> Result<LogClient, String> {
        let urls: Vec<String> = if !self.args.log_url.is_empty() {
            self.args.log_url.clone()
        } else if let Some(u) = cj.and_then(|c| c.log.as_ref()).map(|l| l.url.clone()).filter(|u| !u.is_empty()) {
            vec![u]
        } else {
            return Err("no log service known (give --log-url, or --data-dir of memoria up)".into());
        };
        let mut g = self.log.lock().unwrap();
        if let Some((u, c)) = g.as_ref()
            && *u == urls
        {
            return Ok(c.clone());
        }
        let refs: Vec<&str> = urls.iter().map(|s| s.as_str()).collect();
        let c = LogClient::with_endpoints(&refs, &self.args.log_token).map_err(|e| format!("log service: {e}"))?;
        *g = Some((urls, c.clone()));
        Ok(c)
    }

    async fn logs(&self, cj: Option<&ClusterJson>) -> Result<Vec<LogInfo>, String> {
        let c = self.log_client(cj)?;
        match tokio::time::timeout(Duration::from_secs(2), c.list()).await {
            Ok(Ok(l)) => Ok(l),
            Ok(Err(e)) => Err(format!("log service: {e}")),
            Err(_) => Err("log service: no answer within 2 s".into()),
        }
    }

    pub fn snapshot_store_url(&self) -> Option<String> {
        self.args.snapshot_store.clone().or_else(|| self.args.data_dir.as_ref().map(|d| memoria_admin::snapshot::default_store(&d.display().to_string())))
    }

    fn memoria_bin(&self) -> Option<PathBuf> {
        if let Some(b) = &self.args.memoria_bin {
            return Some(b.clone());
        }
        let exe = std::env::current_exe().ok()?;
        let b = exe.parent()?.join("memoria");
        b.exists().then_some(b)
    }

    // ---- the sampler ----

    /// Polls every node once a second (INFO, and CLUSTER SLOTS of primaries) for as long
    /// as the console runs.
    pub async fn sample_forever(self: Arc<Self>) {
        let mut conns: HashMap<String, resp::Conn> = HashMap::new();
        loop {
            let started = Instant::now();
            let cj = self.cluster_json().ok().flatten();
            let targets = self.targets(cj.as_ref());
            conns.retain(|a, _| targets.iter().any(|t| t.addr == *a) || cj.as_ref().is_some_and(|c| c.endpoint == *a));
            if let Some(ep) = cj.as_ref().map(|c| c.endpoint.clone()) {
                self.probe_endpoint(&ep, &mut conns).await;
            }
            for t in &targets {
                let r = self.sample(t, &mut conns).await;
                if r.is_err() {
                    conns.remove(&t.addr);
                }
            }
            {
                let mut g = self.nodes.lock().unwrap();
                g.retain(|a, _| targets.iter().any(|t| t.addr == *a));
            }
            tokio::time::sleep(SAMPLE_EVERY.saturating_sub(started.elapsed()).max(Duration::from_millis(100))).await;
        }
    }

    /// One PING through the stable endpoint, timed from request to reply (a connection is
    /// kept between rounds, as a client keeps one).
    async fn probe_endpoint(&self, endpoint: &str, conns: &mut HashMap<String, resp::Conn>) {
        let c = match conns.remove(endpoint) {
            Some(c) => Ok(c),
            None => resp::Conn::connect(endpoint).await,
        };
        let Ok(mut c) = c else { return };
        let t0 = Instant::now();
        if let Ok(resp::Reply::Simple(_)) = tokio::time::timeout(Duration::from_secs(2), c.request(&["PING"])).await.unwrap_or(Err(String::new())) {
            let us = t0.elapsed().as_micros().min(u64::MAX as u128) as u64;
            let mut q = self.endpoint_rtt.lock().unwrap();
            q.push_back(us);
            while q.len() > ENDPOINT_SAMPLES {
                q.pop_front();
            }
            conns.insert(endpoint.to_string(), c);
        }
    }

    /// The median and the worst of the recent endpoint round trips.
    fn endpoint_latency(&self) -> (Option<u64>, Option<u64>) {
        let mut v: Vec<u64> = self.endpoint_rtt.lock().unwrap().iter().copied().collect();
        v.sort_unstable();
        (v.get(v.len() / 2).copied(), v.last().copied())
    }

    async fn sample(&self, t: &Target, conns: &mut HashMap<String, resp::Conn>) -> Result<(), ()> {
        // A node the supervisor reports down is not asked (and its restart is noted).
        let down = t.sup.as_ref().is_some_and(|s| s.pid.is_none() || s.role == "down");
        let result = if down {
            Err(format!("{} is not running", t.name))
        } else {
            let c = match conns.remove(&t.addr) {
                Some(c) => Ok(c),
                None => resp::Conn::connect(&t.addr).await,
            };
            match c {
                Err(e) => Err(e),
                Ok(mut c) => match c.request(&["INFO", "all"]).await {
                    Ok(r @ resp::Reply::Bulk(Some(_))) => {
                        let info = resp::parse_info(&r.text().unwrap_or_default());
                        let slots = if field(&info, "role") == Some("master") && field(&info, "cluster_enabled") != Some("0") {
                            match c.request(&["CLUSTER", "SLOTS"]).await {
                                Ok(r) => resp::parse_cluster_slots(&r),
                                Err(_) => Vec::new(),
                            }
                        } else {
                            Vec::new()
                        };
                        conns.insert(t.addr.clone(), c);
                        Ok((info, slots))
                    }
                    Ok(resp::Reply::Error(e)) => Err(format!("INFO: {e}")),
                    Ok(other) => Err(format!("INFO: unexpected reply {other:?}")),
                    Err(e) => Err(e),
                },
            }
        };
        self.record(t, result, Instant::now())
    }

    /// Keeps what one poll of `t` found. A node that has never answered is starting, not
    /// failing: its failures then do not hold it red once it answers (HEALTH_HOLD is for
    /// a node seen up that failed or was replaced since).
    fn record(&self, t: &Target, result: Result<Polled, String>, now: Instant) -> Result<(), ()> {
        let mut g = self.nodes.lock().unwrap();
        let st = g.entry(t.addr.clone()).or_default();
        if let Some(s) = &t.sup {
            if st.restarts_seen.is_some_and(|r| s.restarts > r) {
                st.bad_at = Some(now);
                st.bad_why = format!("restarted by the supervisor (restart #{}): it had died", s.restarts);
            }
            st.restarts_seen = Some(s.restarts);
            if s.pid.is_some() && st.pid_seen.is_some() && s.pid != st.pid_seen {
                st.bad_at = Some(now);
                st.bad_why = "its process was replaced (it had died)".into();
            }
            if s.pid.is_some() {
                st.pid_seen = s.pid;
            }
        }
        match result {
            Ok((info, slots)) => {
                let cmds = field_u64(&info, "total_commands_processed");
                let p99 = field_u64(&info, "memoria_latency_p99_usec").unwrap_or(0);
                if let (Some(c), Some((t0, c0))) = (cmds, st.last_cmds) {
                    let dt = now.duration_since(t0).as_secs_f64();
                    if dt > 0.0 && c >= c0 {
                        let ops = (c - c0) as f64 / dt;
                        st.ops = Some(ops);
                        st.history.push_back(Sample { t_ms: now_ms(), ops_per_sec: ops, p99_us: p99 });
                        while st.history.len() > HISTORY {
                            st.history.pop_front();
                        }
                    }
                }
                st.last_cmds = cmds.map(|c| (now, c));
                st.info = info;
                st.info_at = Some(now);
                st.error = None;
                st.slots = slots;
                Ok(())
            }
            Err(e) => {
                st.error = Some(e.clone());
                if st.info_at.is_some() {
                    st.bad_at = Some(now);
                    st.bad_why = e;
                }
                st.last_cmds = None;
                st.ops = None;
                Err(())
            }
        }
    }

    fn node_view(&self, t: &Target, tail_id: u64) -> NodeView {
        let g = self.nodes.lock().unwrap();
        let st = g.get(&t.addr);
        let now = Instant::now();
        let fresh = st.and_then(|s| s.info_at).is_some_and(|at| now.duration_since(at) < STALE) && st.is_some_and(|s| s.error.is_none());
        let info: &[(String, Vec<(String, String)>)] = match st {
            Some(s) if fresh => &s.info,
            _ => &[],
        };
        let role = match (field(info, "role"), &t.sup) {
            (Some("master"), _) => "primary".to_string(),
            (Some(_), _) => "replica".to_string(),
            (None, Some(s)) if s.role == "primary" || s.role == "replica" => "unresponsive".to_string(),
            (None, Some(s)) => s.role.clone(),
            (None, None) => "unreachable".to_string(),
        };
        let offset = field_u64(info, "offset").or_else(|| field_u64(info, "master_repl_offset"));
        let lag = if role == "replica" { field_u64(info, "memoria_lag_entries").or_else(|| offset.map(|o| tail_id.saturating_sub(o))) } else { None };
        let recent_bad = st.and_then(|s| s.bad_at).is_some_and(|at| now.duration_since(at) < HEALTH_HOLD);
        let serving = role == "primary" || role == "replica";
        let healthy = fresh && serving && !recent_bad;
        let problem = if healthy {
            String::new()
        } else if let Some(e) = st.and_then(|s| s.error.clone()) {
            e
        } else if !fresh {
            format!("no answer to INFO (role: {role})")
        } else if recent_bad {
            let s = st.unwrap();
            format!("{} ({} s ago)", s.bad_why, s.bad_at.map_or(0, |a| now.duration_since(a).as_secs()))
        } else {
            format!("not serving ({role})")
        };
        NodeView {
            name: t.name.clone(),
            addr: t.addr.clone(),
            role,
            healthy,
            problem,
            pid: t.sup.as_ref().and_then(|s| s.pid),
            restarts: t.sup.as_ref().map_or(0, |s| s.restarts),
            epoch: field_u64(info, "memoria_epoch"),
            offset,
            lag,
            ops_per_sec: if fresh { st.and_then(|s| s.ops) } else { None },
            p50_us: field_u64(info, "memoria_latency_p50_usec"),
            p99_us: field_u64(info, "memoria_latency_p99_usec"),
            clients: field_u64(info, "connected_clients"),
            used_memory: field_u64(info, "used_memory"),
            keys: if fresh { keys_of(info) } else { None },
        }
    }

    /// Whether any watched node says it runs without cluster mode (a standalone server).
    fn standalone(&self) -> bool {
        self.nodes.lock().unwrap().values().any(|s| field(&s.info, "cluster_enabled") == Some("0"))
    }

    fn slots_of_primary(&self, addr: &str) -> Vec<(u16, u16, String)> {
        self.nodes.lock().unwrap().get(addr).map(|s| s.slots.clone()).unwrap_or_default()
    }

    // ---- pages ----

    pub async fn overview(&self) -> Overview {
        let mut errors = Vec::new();
        let cj = match self.cluster_json() {
            Ok(c) => c,
            Err(e) => {
                errors.push(e);
                None
            }
        };
        if cj.as_ref().is_some_and(|c| !c.running) {
            errors.push("cluster.json says memoria up is not running".into());
        }
        let logs = match self.logs(cj.as_ref()).await {
            Ok(l) => l,
            Err(e) => {
                errors.push(e);
                Vec::new()
            }
        };
        let targets = self.targets(cj.as_ref());
        let mut ids: Vec<u32> = targets.iter().map(|t| t.shard).collect();
        ids.extend(logs.iter().filter_map(|l| l.name.strip_prefix("shard-").and_then(|n| n.parse::<u32>().ok())));
        ids.sort();
        ids.dedup();
        let now = now_ms();
        let mut shards = Vec::new();
        for id in ids {
            let log = format!("shard-{id}");
            let li = logs.iter().find(|l| l.name == log);
            let tail = li.map_or(0, |l| l.tail_id);
            let nodes: Vec<NodeView> = targets.iter().filter(|t| t.shard == id).map(|t| self.node_view(t, tail)).collect();
            let primary = nodes.iter().filter(|n| n.role == "primary").max_by_key(|n| n.epoch.unwrap_or(0));
            let (health, reason) = match primary {
                None => ("down".to_string(), "no node is serving as primary (an election may be under way)".to_string()),
                Some(p) if !p.healthy => ("degraded".to_string(), format!("primary {}: {}", p.name, p.problem)),
                Some(_) => match nodes.iter().find(|n| !n.healthy) {
                    Some(n) => ("degraded".to_string(), format!("{}: {}", n.name, if n.problem.is_empty() { n.role.clone() } else { n.problem.clone() })),
                    None => ("ok".to_string(), String::new()),
                },
            };
            // CLUSTER SLOTS lists the whole map: this shard's ranges are the ones its
            // primary serves.
            let map = primary.map(|p| self.slots_of_primary(&p.addr)).unwrap_or_default();
            let mine: Vec<(u16, u16)> = map.iter().filter(|(_, _, owner)| primary.is_some_and(|p| *owner == p.addr)).map(|&(a, b, _)| (a, b)).collect();
            let mut slots = if mine.is_empty() && targets.iter().all(|t| t.shard == id) { map.iter().map(|&(a, b, _)| (a, b)).collect() } else { mine };
            if slots.is_empty() && id == 0 && targets.iter().all(|t| t.shard == 0) {
                // One shard (all that exists today): it owns every slot.
                slots.push((0, SLOTS - 1));
            }
            shards.push(ShardView {
                id,
                log: log.clone(),
                primary: primary.map(|p| p.name.clone()),
                epoch: li.map_or(0, |l| l.epoch),
                lease_holder: li.and_then(|l| l.leader.clone()),
                lease_remaining_ms: li.and_then(|l| l.lease_expires_ms).map(|e| e as i64 - now as i64),
                tail_id: tail,
                first_id: li.map_or(0, |l| l.first_id),
                last_checksum: li.map(|l| l.last_checksum.to_hex()).unwrap_or_default(),
                snapshot_id: li.map_or(0, |l| l.snapshot_id),
                nodes,
                health,
                health_reason: reason,
                slots,
            });
        }
        let mut totals = Totals { shards: shards.len(), ..Default::default() };
        for n in shards.iter().flat_map(|s| s.nodes.iter()) {
            totals.nodes += 1;
            totals.healthy_nodes += n.healthy as usize;
            totals.ops_per_sec += n.ops_per_sec.unwrap_or(0.0);
            totals.used_memory += n.used_memory.unwrap_or(0);
            totals.clients += n.clients.unwrap_or(0);
        }
        // Keys: the primaries' (replicas hold the same data).
        (totals.endpoint_p50_us, totals.endpoint_max_us) = self.endpoint_latency();
        totals.keys = shards.iter().filter_map(|s| s.nodes.iter().find(|n| Some(&n.name) == s.primary.as_ref()).and_then(|n| n.keys)).sum();
        let source = match (&self.args.data_dir, self.args.log_url.is_empty()) {
            (Some(d), _) => format!("memoria up in {}", d.display()),
            (None, false) => format!("log service {}", self.args.log_url.join(", ")),
            (None, true) => "nothing configured".into(),
        };
        Overview { now_ms: now, source, shards, totals, errors }
    }

    pub async fn node_detail(&self, name: &str) -> NodeDetail {
        let cj = self.cluster_json().ok().flatten();
        let targets = self.targets(cj.as_ref());
        let Some(t) = targets.iter().find(|t| t.name == name || t.addr == name) else {
            return NodeDetail { error: Some(format!("no node named {name}")), ..Default::default() };
        };
        let tail = match self.logs(cj.as_ref()).await {
            Ok(l) => l.iter().find(|l| l.name == format!("shard-{}", t.shard)).map_or(0, |l| l.tail_id),
            Err(_) => 0,
        };
        let node = self.node_view(t, tail);
        let g = self.nodes.lock().unwrap();
        let st = g.get(&t.addr);
        NodeDetail {
            shard: t.shard,
            info: st.filter(|_| node.healthy || node.role == "primary" || node.role == "replica").map(|s| s.info.clone()).unwrap_or_default(),
            history: st.map(|s| s.history.iter().copied().collect()).unwrap_or_default(),
            error: (!node.healthy).then(|| node.problem.clone()),
            node,
        }
    }

    pub async fn log_page(&self, shard: u32, before: Option<u64>, limit: u32) -> LogPage {
        let log = format!("shard-{shard}");
        let mut page = LogPage { shard, log: log.clone(), ..Default::default() };
        let cj = self.cluster_json().ok().flatten();
        let client = match self.log_client(cj.as_ref()) {
            Ok(c) => c,
            Err(e) => {
                page.error = Some(e);
                return page;
            }
        };
        let head = match tokio::time::timeout(Duration::from_secs(2), client.list()).await {
            Ok(Ok(l)) => l.into_iter().find(|l| l.name == log),
            Ok(Err(e)) => {
                page.error = Some(format!("log service: {e}"));
                return page;
            }
            Err(_) => {
                page.error = Some("log service: no answer within 2 s".into());
                return page;
            }
        };
        let Some(head) = head else {
            page.error = Some(format!("the log service has no log {log}"));
            return page;
        };
        page.first_id = head.first_id;
        page.tail_id = head.tail_id;
        let limit = limit.clamp(1, 500) as u64;
        let end = before.map_or(head.tail_id, |b| b.saturating_sub(1).min(head.tail_id));
        let first = head.first_id.max(1);
        let start = end.saturating_sub(limit - 1).max(first);
        if end >= start {
            match tokio::time::timeout(Duration::from_secs(2), client.read(&log, start - 1, (end - start + 1) as u32, Duration::ZERO)).await {
                Ok(Ok(b)) => {
                    page.entries = b
                        .entries
                        .iter()
                        .rev()
                        .map(|e| LogRow {
                            id: e.id,
                            kind: kind_name(e.kind).into(),
                            epoch: e.epoch,
                            format: e.format,
                            checksum: e.checksum.to_hex(),
                            payload_len: e.payload.len(),
                            detail: detail(e.kind, &e.payload),
                        })
                        .collect();
                }
                Ok(Err(e)) => page.error = Some(format!("log service: {e}")),
                Err(_) => page.error = Some("log service: no answer within 2 s".into()),
            }
        }
        page.older = (start > first).then_some(start);
        page.newer = (end < head.tail_id).then(|| (end + limit + 1).min(head.tail_id + 1));
        page
    }

    pub async fn snapshots_page(&self) -> SnapshotsPage {
        let mut page = SnapshotsPage { now_ms: now_ms(), ..Default::default() };
        let cj = self.cluster_json().ok().flatten();
        let logs = match self.logs(cj.as_ref()).await {
            Ok(l) => l,
            Err(e) => {
                page.errors.push(e);
                Vec::new()
            }
        };
        let Some(url) = self.snapshot_store_url() else {
            page.errors.push("no snapshot store known (give --snapshot-store or --data-dir)".into());
            page.take_disabled = Some("no snapshot store known".into());
            return page;
        };
        if self.memoria_bin().is_none() {
            page.take_disabled = Some("the memoria binary was not found next to the console (give --memoria-bin)".into());
        }
        let store = match memoria_admin::snapshot::SnapshotStore::open(&url) {
            Ok(s) => s,
            Err(e) => {
                page.errors.push(format!("snapshot store {url}: {e}"));
                return page;
            }
        };
        let mut shard_logs: Vec<&LogInfo> = logs.iter().filter(|l| l.name.starts_with("shard-")).collect();
        shard_logs.sort_by_key(|l| l.name.clone());
        for li in shard_logs {
            let shard = li.name.trim_start_matches("shard-").parse().unwrap_or(0);
            let mut ss =
                ShardSnapshots { shard, log: li.name.clone(), store: url.clone(), tail_id: li.tail_id, recorded_id: li.snapshot_id, ..Default::default() };
            match tokio::time::timeout(Duration::from_secs(5), store.manifests(&li.name)).await {
                Ok(Ok(list)) => {
                    let mut newest: Option<&memoria_admin::snapshot::Manifest> = None;
                    for l in &list {
                        let v = match &l.manifest {
                            Ok(m) => {
                                if newest.is_none_or(|n| m.last_id > n.last_id) {
                                    newest = Some(m);
                                }
                                let recorded = m.last_id <= li.snapshot_id;
                                SnapshotView {
                                    name: m.name.clone(),
                                    last_id: m.last_id,
                                    log_checksum: m.log_checksum.clone(),
                                    data_checksum: m.data_checksum.clone(),
                                    digest: m.digest.clone(),
                                    keys: m.keys,
                                    bytes: m.chunks.iter().map(|c| c.bytes).sum(),
                                    chunks: m.chunks.len(),
                                    created_unix_ms: m.created_unix_ms,
                                    age_ms: page.now_ms.saturating_sub(m.created_unix_ms),
                                    status: if recorded { "verified".into() } else { "verified, not yet recorded in the log".into() },
                                    ok: true,
                                }
                            }
                            Err(e) => SnapshotView { name: l.name.clone(), status: format!("refused: {e}"), ok: false, ..Default::default() },
                        };
                        ss.snapshots.push(v);
                    }
                    ss.snapshots.sort_by(|a, b| b.last_id.cmp(&a.last_id).then(b.name.cmp(&a.name)));
                    let covered = newest.map_or(0, |m| m.last_id);
                    ss.entries_since = li.tail_id.saturating_sub(covered);
                    ss.bytes_since_estimate = newest.and_then(|m| m.avg_entry_bytes()).map(|b| (b * ss.entries_since as f64) as u64);
                }
                Ok(Err(e)) => page.errors.push(format!("{}: listing snapshots: {e}", li.name)),
                Err(_) => page.errors.push(format!("{}: listing snapshots took over 5 s", li.name)),
            }
            page.shards.push(ss);
        }
        page
    }

    pub async fn slots_page(self: &Arc<Self>) -> SlotsPage {
        let o = self.overview().await;
        let mut page = SlotsPage { errors: o.errors.clone(), console_move: self.moves.status(), standalone: self.standalone(), ..Default::default() };
        for s in &o.shards {
            page.shards.push(SlotOwner { shard: s.id, primary: s.primary.clone(), ranges: s.slots.clone() });
        }
        if o.shards.len() > 1 {
            match moves::in_progress(self).await {
                Ok(m) => page.migrations = m,
                Err(e) => page.errors.push(format!("migrations: {e}")),
            }
        }
        page
    }

    // ---- actions ----

    /// FAILOVER on the shard's primary: it steps down and the election through the log
    /// makes a replica the primary.
    pub async fn step_down(&self, shard: u32) -> Result<String, String> {
        let o = self.overview().await;
        let s = o.shards.iter().find(|s| s.id == shard).ok_or_else(|| format!("no shard {shard}"))?;
        let p = s.primary.as_ref().ok_or("the shard has no primary right now (an election is under way)")?;
        let n = s.nodes.iter().find(|n| &n.name == p).ok_or("the primary is not among the watched nodes")?;
        if !s.nodes.iter().any(|r| r.role == "replica" && r.healthy) {
            return Err(format!("{} has no healthy replica to take over; it would only claim the shard again", n.name));
        }
        match resp::once(&n.addr, &["FAILOVER"]).await? {
            resp::Reply::Simple(ok) if ok == "OK" => Ok(format!(
                "{} stepped down (epoch {}); the election through the log is choosing the new primary",
                n.name,
                n.epoch.map_or("?".into(), |e| e.to_string())
            )),
            resp::Reply::Error(e) => Err(format!("{}: {e}", n.name)),
            other => Err(format!("{}: unexpected reply {other:?}", n.name)),
        }
    }

    /// Runs `memoria snapshot` for the shard (its own process, like the scheduler's) and
    /// reports what it published.
    pub async fn take_snapshot(&self, shard: u32) -> Result<String, String> {
        let bin = self.memoria_bin().ok_or("the memoria binary was not found next to the console (give --memoria-bin)")?;
        let store = self.snapshot_store_url().ok_or("no snapshot store known")?;
        let cj = self.cluster_json().ok().flatten();
        let urls: Vec<String> = if !self.args.log_url.is_empty() {
            self.args.log_url.clone()
        } else {
            cj.as_ref().and_then(|c| c.log.as_ref()).map(|l| vec![l.url.clone()]).ok_or("no log service known")?
        };
        let _one = self.snapshot_running.try_lock().map_err(|_| "a snapshot taken from the console is already running")?;
        let mut cmd = tokio::process::Command::new(bin);
        cmd.args(["snapshot", "--shard", &shard.to_string(), "--log-url", &urls.join(","), "--store", &store])
            .env("MEMORIA_LOG_TOKEN", &self.args.log_token)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(300), cmd.output())
            .await
            .map_err(|_| "the snapshot took over 5 minutes; stopped".to_string())?
            .map_err(|e| format!("cannot run memoria snapshot: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output");
            return Err(format!("memoria snapshot failed ({}): {last}", out.status));
        }
        Ok(stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("done").to_string())
    }

    /// CLUSTER COUNTKEYSINSLOT on the slot's owner.
    pub async fn count_keys(&self, slot: u16) -> Result<String, String> {
        if slot >= SLOTS {
            return Err(format!("slot {slot} is out of range (0..=16383)"));
        }
        let o = self.overview().await;
        let s = o.shards.iter().find(|s| s.slots.iter().any(|&(a, b)| a <= slot && slot <= b)).ok_or_else(|| format!("no shard owns slot {slot}"))?;
        let p = s.primary.as_ref().ok_or("its shard has no primary right now")?;
        let n = s.nodes.iter().find(|n| &n.name == p).ok_or("the primary is not watched")?;
        match resp::once(&n.addr, &["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()]).await? {
            resp::Reply::Int(k) => Ok(format!("slot {slot} (shard {}, primary {}): {k} keys", s.id, n.name)),
            resp::Reply::Error(e) => Err(format!("{}: {e}", n.name)),
            other => Err(format!("unexpected reply {other:?}")),
        }
    }
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Data => "data",
        Kind::LeaseRenewal => "lease renewal",
        Kind::LeaderClaim => "leader claim",
        Kind::MigrationStart => "migration start",
        Kind::MigrationPrepare => "migration prepare",
        Kind::MigrationCommit => "migration commit",
        Kind::MigrationAbort => "migration abort",
        Kind::ChecksumMark => "checksum mark",
        Kind::Config => "config",
    }
}

fn detail(k: Kind, payload: &[u8]) -> String {
    match k {
        Kind::LeaseRenewal | Kind::LeaderClaim => match LeasePayload::decode(payload) {
            Some(p) => format!("{} for {} ms", p.node, p.lease_ms),
            None => "(undecodable lease payload)".into(),
        },
        Kind::ChecksumMark => match MarkPayload::decode(payload) {
            Some(m) => format!("chain at {} = {}", m.id, short(&m.checksum.to_hex())),
            None => "(undecodable mark)".into(),
        },
        Kind::Data => format!("effects, {}", human_bytes(payload.len() as u64)),
        _ => String::from_utf8_lossy(&payload[..payload.len().min(80)]).into_owned(),
    }
}

/// The hydration bundle, built by build.rs.
pub const CONSOLE_JS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/pkg/console.js"));
pub const CONSOLE_WASM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/pkg/console_bg.wasm"));

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> Args {
        Args {
            bind: "127.0.0.1".into(),
            port: 0,
            data_dir: None,
            log_url: vec![],
            log_token: String::new(),
            nodes: vec![],
            snapshot_store: None,
            memoria_bin: None,
            token: None,
        }
    }

    #[test]
    fn targets_from_cluster_json_and_flags() {
        let mut a = args();
        a.nodes = vec!["127.0.0.1:7000".into(), "2=10.0.0.5:7001".into()];
        let c = Console::new(a);
        let cj: ClusterJson = serde_json::from_str(r#"{"endpoint":"127.0.0.1:6379","nodes":[{"name":"node-1","port":6380,"pid":12,"role":"primary","epoch":3,"offset":9,"restarts":1,"extra":true}],"log":{"backend":"sqlite","path":"x","url":"http://127.0.0.1:1"},"running":true,"supervisor_pid":1,"updated_unix_ms":0}"#).unwrap();
        let t = c.targets(Some(&cj));
        assert_eq!(t.len(), 3);
        assert_eq!((t[0].name.as_str(), t[0].addr.as_str(), t[0].shard), ("node-1", "127.0.0.1:6380", 0));
        assert_eq!(t[0].sup.as_ref().map(|s| (s.pid, s.restarts)), Some((Some(12), 1)));
        assert_eq!((t[1].addr.as_str(), t[1].shard), ("127.0.0.1:7000", 0));
        assert_eq!((t[2].addr.as_str(), t[2].shard), ("10.0.0.5:7001", 2));
    }

    #[test]
    fn a_node_that_does_not_answer_is_unhealthy() {
        let c = Console::new(args());
        let t = Target { name: "n".into(), addr: "127.0.0.1:1".into(), shard: 0, sup: Some(SupFacts { pid: None, role: "down".into(), restarts: 0 }) };
        let v = c.node_view(&t, 10);
        assert!(!v.healthy);
        assert_eq!(v.role, "down");
        assert!(!v.problem.is_empty());
    }

    #[test]
    fn a_node_that_was_starting_is_healthy_once_it_answers() {
        let c = Console::new(args());
        let t = Target { name: "n".into(), addr: "127.0.0.1:1".into(), shard: 0, sup: Some(SupFacts { pid: Some(7), role: "primary".into(), restarts: 0 }) };
        let info = || resp::parse_info("# Replication\r\nrole:master\r\n");
        // Not answering yet while it starts: red, but nothing held against it.
        let _ = c.record(&t, Err("connection refused".into()), Instant::now());
        assert!(!c.node_view(&t, 0).healthy);
        let _ = c.record(&t, Ok((info(), Vec::new())), Instant::now());
        assert!(c.node_view(&t, 0).healthy, "{}", c.node_view(&t, 0).problem);
        // A node seen up that fails stays red for HEALTH_HOLD after it answers again.
        let _ = c.record(&t, Err("connection reset".into()), Instant::now());
        let _ = c.record(&t, Ok((info(), Vec::new())), Instant::now());
        let v = c.node_view(&t, 0);
        assert!(!v.healthy && v.problem.contains("connection reset"), "{}", v.problem);
    }

    #[test]
    fn payload_details() {
        let p = LeasePayload { node: "127.0.0.1:6380".into(), lease_ms: 1500 }.encode();
        assert_eq!(detail(Kind::LeaseRenewal, &p), "127.0.0.1:6380 for 1500 ms");
        assert_eq!(detail(Kind::LeaderClaim, b"x"), "(undecodable lease payload)");
        assert_eq!(detail(Kind::Data, &[0u8; 10]), "effects, 10 B");
    }

    #[test]
    fn keyspace_keys_are_summed() {
        let info = resp::parse_info("# Keyspace\r\ndb0:keys=3,expires=0,avg_ttl=0\r\ndb1:keys=4,expires=1,avg_ttl=0\r\n");
        assert_eq!(keys_of(&info), Some(7));
    }
}
