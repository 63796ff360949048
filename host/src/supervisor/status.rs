//! What the supervisor knows of its nodes: each node's pid and port from the process
//! table, its role, epoch and log offset from `INFO replication`, polled. Role changes
//! are printed; the whole table is kept in `<data-dir>/cluster.json` for scripts.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use memoria_admin::cluster_file::{ClusterFile, LogFacts, NodeRole, NodeStatus};

use super::nodes::NodeSpec;

/// Where clients are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Primary {
    pub port: u16,
    pub epoch: u64,
}

pub struct Table {
    state: Mutex<ClusterFile>,
    /// Entries per node process (its shards).
    per: usize,
    bind: String,
    path: PathBuf,
}

impl Table {
    pub fn new(specs: &[NodeSpec], shards: u16, port: u16, bind: &str, log_url: &str, log_path: &Path, path: PathBuf) -> Table {
        let nodes = specs
            .iter()
            .flat_map(|s| {
                (0..shards).map(move |k| NodeStatus {
                    name: s.name.clone(),
                    port: s.port + k,
                    pid: None,
                    role: NodeRole::Down,
                    epoch: None,
                    offset: None,
                    restarts: 0,
                    shard: k,
                    metrics: s.metrics_url.clone(),
                })
            })
            .collect();
        let state = ClusterFile {
            endpoint: format!("{bind}:{port}"),
            primary: None,
            shards,
            nodes,
            log: LogFacts {
                backend: "sqlite".into(),
                path: log_path.display().to_string(),
                url: log_url.to_string(),
                metrics: Some(format!("{log_url}/metrics")),
            },
            running: true,
            supervisor_pid: std::process::id(),
            updated_unix_ms: 0,
        };
        let t = Table { state: Mutex::new(state), per: shards.max(1) as usize, bind: bind.to_string(), path };
        t.save();
        t
    }

    /// Node process `i` started (all its shards' entries).
    pub fn started(&self, i: usize, pid: u32, restarts: u32) {
        let per = self.per;
        self.update(|s| {
            for n in &mut s.nodes[i * per..(i + 1) * per] {
                n.pid = Some(pid);
                n.role = NodeRole::Starting;
                n.epoch = None;
                n.restarts = restarts;
            }
        });
    }

    pub fn exited(&self, i: usize) {
        let per = self.per;
        self.update(|s| {
            for n in &mut s.nodes[i * per..(i + 1) * per] {
                n.pid = None;
                n.role = NodeRole::Down;
                n.epoch = None;
            }
        });
    }

    pub fn mark_stopped(&self) {
        self.update(|s| s.running = false);
    }

    pub fn snapshot(&self) -> ClusterFile {
        self.state.lock().unwrap().clone()
    }

    /// Applies `f`, prints role changes and rewrites cluster.json if anything changed.
    fn update(&self, f: impl FnOnce(&mut ClusterFile)) {
        let mut s = self.state.lock().unwrap();
        let before = s.clone();
        f(&mut s);
        s.primary = elect_view(&s.nodes).map(|i| s.nodes[i].name.clone());
        if *s == before {
            return;
        }
        for (a, b) in before.nodes.iter().zip(s.nodes.iter()) {
            if a.role != b.role && b.role != NodeRole::Starting && b.role != NodeRole::Down {
                let epoch = b.epoch.map(|e| format!(", epoch {e}")).unwrap_or_default();
                let shard = if s.shards > 1 { format!(" shard {}", b.shard) } else { String::new() };
                println!(
                    "{}{shard} (pid {}, port {}): {}{epoch}",
                    b.name,
                    b.pid.map_or("-".into(), |p| p.to_string()),
                    b.port,
                    format!("{:?}", b.role).to_lowercase()
                );
            }
        }
        if before.primary != s.primary {
            match &s.primary {
                Some(p) => println!("primary: {p}; {} leads there", s.endpoint),
                None => println!("no primary serving at the moment (an election is under way)"),
            }
        }
        s.updated_unix_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
        let file = s.clone();
        drop(s);
        write_json(&self.path, &file);
    }

    fn save(&self) {
        let s = self.state.lock().unwrap().clone();
        write_json(&self.path, &s);
    }
}

/// The node clients should go to: a primary of shard 0, the highest epoch if two say so
/// (a deposed primary that has not noticed yet is behind the new one's epoch).
fn elect_view(nodes: &[NodeStatus]) -> Option<usize> {
    nodes.iter().enumerate().filter(|(_, n)| n.role == NodeRole::Primary && n.shard == 0).max_by_key(|(_, n)| n.epoch.unwrap_or(0)).map(|(i, _)| i)
}

/// Replaces the file atomically (write aside, then rename), so readers never see half.
fn write_json(path: &Path, file: &ClusterFile) {
    let tmp = path.with_extension("json.tmp");
    let body = match serde_json::to_vec_pretty(file) {
        Ok(b) => b,
        Err(e) => return tracing::warn!(error = %e, "encoding cluster.json"),
    };
    if let Err(e) = std::fs::write(&tmp, body).and_then(|_| std::fs::rename(&tmp, path)) {
        tracing::warn!(error = %e, path = %path.display(), "writing cluster.json");
    }
}

const POLL: Duration = Duration::from_millis(100);

/// Polls every node's `INFO replication` and publishes where the primary is.
pub async fn poll(table: Arc<Table>, primary: watch::Sender<Option<Primary>>) {
    let mut conns: Vec<Option<TcpStream>> = Vec::new();
    loop {
        let snap = table.snapshot();
        conns.resize_with(snap.nodes.len(), || None);
        let mut seen = Vec::with_capacity(snap.nodes.len());
        for (i, n) in snap.nodes.iter().enumerate() {
            if n.pid.is_none() {
                conns[i] = None;
                seen.push(None);
                continue;
            }
            seen.push(probe(&table.bind, n.port, &mut conns[i]).await);
        }
        // One update (and at most one rewrite of cluster.json) per round.
        table.update(|s| {
            for ((m, n), p) in s.nodes.iter_mut().zip(&snap.nodes).zip(seen) {
                // A node that restarted while it was probed is left to its new process.
                if m.pid != n.pid || n.pid.is_none() || p.as_ref().is_some_and(|p| p.busy) {
                    continue;
                }
                m.role = match &p {
                    Some(p) => p.role,
                    None if n.role == NodeRole::Starting || n.role == NodeRole::Down => n.role,
                    None => NodeRole::Unresponsive,
                };
                m.epoch = p.as_ref().and_then(|p| p.epoch);
                if let Some(p) = &p {
                    m.offset = Some(p.offset);
                }
            }
        });
        let now = table.snapshot();
        let p = elect_view(&now.nodes).map(|i| Primary { port: now.nodes[i].port, epoch: now.nodes[i].epoch.unwrap_or(0) });
        primary.send_if_modified(|cur| {
            let changed = *cur != p;
            *cur = p;
            changed
        });
        tokio::time::sleep(POLL).await;
    }
}

struct Probe {
    /// The node answered -BUSY (a script runs past `busy-reply-threshold`): alive, and
    /// what it was before (a primary keeps its lease meanwhile), so nothing changes.
    busy: bool,
    role: NodeRole,
    epoch: Option<u64>,
    offset: u64,
}

async fn probe(host: &str, port: u16, conn: &mut Option<TcpStream>) -> Option<Probe> {
    let r = tokio::time::timeout(Duration::from_millis(500), async {
        if conn.is_none() {
            let mut s = TcpStream::connect((host, port)).await.ok()?;
            // Authenticate as the supervisor, so probes work whatever passwords are set.
            if let Some(auth) = crate::acl::internal_auth_command() {
                s.write_all(&auth).await.ok()?;
                let mut ok = [0u8; 5];
                s.read_exact(&mut ok).await.ok()?;
                if &ok != b"+OK\r\n" {
                    return None;
                }
            }
            *conn = Some(s);
        }
        let c = conn.as_mut()?;
        c.write_all(b"*2\r\n$4\r\nINFO\r\n$11\r\nreplication\r\n").await.ok()?;
        read_bulk(c).await
    })
    .await;
    match r {
        Ok(Some(Answer::Info(text))) => Some(parse_info(&text)),
        Ok(Some(Answer::Busy)) => Some(Probe { busy: true, role: NodeRole::Unresponsive, epoch: None, offset: 0 }),
        _ => {
            *conn = None;
            None
        }
    }
}

/// What a node answered to INFO.
enum Answer {
    Info(String),
    Busy,
}

/// Reads one RESP bulk string reply, or a -BUSY error.
async fn read_bulk(c: &mut TcpStream) -> Option<Answer> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        c.read_exact(&mut byte).await.ok()?;
        buf.push(byte[0]);
        if buf.ends_with(b"\r\n") {
            break;
        }
        if buf == b"-BUSY" {
            // The rest of Redis's BUSY text, to the end of its line.
            while !buf.ends_with(b"\r\n") && buf.len() < 1024 {
                c.read_exact(&mut byte).await.ok()?;
                buf.push(byte[0]);
            }
            return buf.ends_with(b"\r\n").then_some(Answer::Busy);
        }
        if buf.len() > 32 {
            return None;
        }
    }
    if buf[0] != b'$' {
        return None;
    }
    let len: usize = std::str::from_utf8(&buf[1..buf.len() - 2]).ok()?.parse().ok()?;
    let mut body = vec![0u8; len + 2];
    c.read_exact(&mut body).await.ok()?;
    body.truncate(len);
    String::from_utf8(body).ok().map(Answer::Info)
}

fn parse_info(text: &str) -> Probe {
    let field = |k: &str| text.lines().find_map(|l| l.strip_prefix(k).and_then(|v| v.strip_prefix(':'))).map(|v| v.trim().to_string());
    let role = match field("role").as_deref() {
        Some("master") => NodeRole::Primary,
        _ => NodeRole::Replica,
    };
    Probe { busy: false, role, epoch: field("memoria_epoch").and_then(|v| v.parse().ok()), offset: field("offset").and_then(|v| v.parse().ok()).unwrap_or(0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, role: NodeRole, epoch: Option<u64>) -> NodeStatus {
        NodeStatus { name: name.into(), port: 0, pid: Some(1), role, epoch, offset: None, restarts: 0, shard: 0, metrics: None }
    }

    #[test]
    fn the_newest_primary_is_the_one_clients_reach() {
        let nodes = vec![node("a", NodeRole::Primary, Some(3)), node("b", NodeRole::Primary, Some(5)), node("c", NodeRole::Replica, None)];
        assert_eq!(elect_view(&nodes), Some(1));
        assert_eq!(elect_view(&nodes[2..]), None);
    }

    #[test]
    fn info_replication_is_read() {
        let p = parse_info("# Replication\r\nrole:master\r\nconnected_slaves:0\r\noffset:42\r\nmemoria_epoch:7\r\n");
        assert_eq!((p.role, p.epoch, p.offset), (NodeRole::Primary, Some(7), 42));
        let r = parse_info("# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\noffset:9\r\n");
        assert_eq!((r.role, r.epoch, r.offset), (NodeRole::Replica, None, 9));
    }
}
