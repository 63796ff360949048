//! Just enough RESP to ask a node for INFO, CLUSTER SLOTS, COUNTKEYSINSLOT and FAILOVER,
//! with a deadline on every request (a frozen node must not freeze a page).

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    pub fn text(&self) -> Option<String> {
        match self {
            Reply::Simple(s) => Some(s.clone()),
            Reply::Bulk(Some(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }
}

/// Who the console is to the nodes (user, password), when they may require a password:
/// `memoria up` hands its children a token of the run (MEMORIA_INTERNAL_TOKEN); on its
/// own the console uses MEMORIA_NODE_USER (default `default`) and MEMORIA_NODE_PASSWORD.
pub fn node_auth() -> Option<(String, String)> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    match (env("MEMORIA_INTERNAL_TOKEN"), env("MEMORIA_NODE_PASSWORD")) {
        (Some(t), _) => Some(("__memoria_internal".to_string(), t)),
        (None, Some(p)) => Some((env("MEMORIA_NODE_USER").unwrap_or_else(|| "default".into()), p)),
        (None, None) => None,
    }
}

pub struct Conn {
    r: BufReader<TcpStream>,
}

pub const TIMEOUT: Duration = Duration::from_millis(800);

impl Conn {
    pub async fn connect(addr: &str) -> Result<Conn, String> {
        let s =
            tokio::time::timeout(TIMEOUT, TcpStream::connect(addr)).await.map_err(|_| "connect timed out".to_string())?.map_err(|e| format!("connect: {e}"))?;
        let _ = s.set_nodelay(true);
        let mut c = Conn { r: BufReader::new(s) };
        if let Some((user, pass)) = node_auth() {
            match c.request(&["AUTH", &user, &pass]).await? {
                Reply::Simple(_) => {}
                Reply::Error(e) => return Err(format!("AUTH as {user}: {e}")),
                other => return Err(format!("AUTH as {user}: unexpected {other:?}")),
            }
        }
        Ok(c)
    }

    pub async fn request(&mut self, args: &[&str]) -> Result<Reply, String> {
        let mut b = format!("*{}\r\n", args.len());
        for a in args {
            b.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        let fut = async {
            self.r.get_mut().write_all(b.as_bytes()).await.map_err(|e| format!("write: {e}"))?;
            read_reply(&mut self.r, 0).await
        };
        tokio::time::timeout(TIMEOUT, fut).await.map_err(|_| "no answer within 800 ms".to_string())?
    }
}

/// One request on a fresh connection.
pub async fn once(addr: &str, args: &[&str]) -> Result<Reply, String> {
    Conn::connect(addr).await?.request(args).await
}

fn read_reply<'a>(r: &'a mut BufReader<TcpStream>, depth: usize) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Reply, String>> + Send + 'a>> {
    Box::pin(async move {
        if depth > 8 {
            return Err("reply nested too deeply".into());
        }
        let mut line = String::new();
        let n = r.read_line(&mut line).await.map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err("connection closed".into());
        }
        let line = line.trim_end_matches(['\r', '\n']);
        let (t, rest) = line.split_at(line.len().min(1));
        let num = || rest.parse::<i64>().map_err(|_| format!("bad reply line {line:?}"));
        match t {
            "+" => Ok(Reply::Simple(rest.to_string())),
            "-" => Ok(Reply::Error(rest.to_string())),
            ":" => Ok(Reply::Int(num()?)),
            "$" | "=" => {
                let len = num()?;
                if len < 0 {
                    return Ok(Reply::Bulk(None));
                }
                if len > 64 << 20 {
                    return Err("bulk reply too large".into());
                }
                let mut buf = vec![0u8; len as usize + 2];
                r.read_exact(&mut buf).await.map_err(|e| format!("read: {e}"))?;
                buf.truncate(len as usize);
                // Verbatim strings (RESP3 "=") start with "txt:".
                if t == "=" && buf.len() >= 4 {
                    buf.drain(..4);
                }
                Ok(Reply::Bulk(Some(buf)))
            }
            "*" => {
                let len = num()?;
                if len < 0 {
                    return Ok(Reply::Array(None));
                }
                let mut items = Vec::with_capacity(len.min(1024) as usize);
                for _ in 0..len {
                    items.push(read_reply(r, depth + 1).await?);
                }
                Ok(Reply::Array(Some(items)))
            }
            _ => Err(format!("unexpected reply {line:?}")),
        }
    })
}

/// INFO text → sections of (field, value).
pub fn parse_info(text: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut out: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for line in text.lines() {
        let line = line.trim_end();
        if let Some(name) = line.strip_prefix("# ") {
            out.push((name.to_string(), Vec::new()));
        } else if let Some((k, v)) = line.split_once(':') {
            if out.is_empty() {
                out.push(("Info".into(), Vec::new()));
            }
            out.last_mut().unwrap().1.push((k.to_string(), v.to_string()));
        }
    }
    out
}

/// CLUSTER SLOTS → (first, last, primary "host:port").
pub fn parse_cluster_slots(r: &Reply) -> Vec<(u16, u16, String)> {
    let mut out = Vec::new();
    let Reply::Array(Some(items)) = r else { return out };
    for it in items {
        let Reply::Array(Some(f)) = it else { continue };
        let (Some(Reply::Int(a)), Some(Reply::Int(b))) = (f.first(), f.get(1)) else { continue };
        let primary = match f.get(2) {
            Some(Reply::Array(Some(n))) => match (n.first().and_then(|h| h.text()), n.get(1)) {
                (Some(h), Some(Reply::Int(p))) => format!("{h}:{p}"),
                _ => String::new(),
            },
            _ => String::new(),
        };
        out.push(((*a).clamp(0, 16383) as u16, (*b).clamp(0, 16383) as u16, primary));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_sections() {
        let s = parse_info("# Server\r\nredis_version:7.0.15\r\n\r\n# Replication\r\nrole:master\r\nmemoria_epoch:3\r\n");
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].0, "Replication");
        assert_eq!(s[1].1[1], ("memoria_epoch".to_string(), "3".to_string()));
    }

    #[test]
    fn cluster_slots_ranges() {
        let r = Reply::Array(Some(vec![Reply::Array(Some(vec![
            Reply::Int(0),
            Reply::Int(16383),
            Reply::Array(Some(vec![Reply::Bulk(Some(b"127.0.0.1".to_vec())), Reply::Int(6380), Reply::Bulk(Some(b"id".to_vec()))])),
        ]))]));
        assert_eq!(parse_cluster_slots(&r), vec![(0, 16383, "127.0.0.1:6380".to_string())]);
        assert!(parse_cluster_slots(&Reply::Error("ERR".into())).is_empty());
    }
}
