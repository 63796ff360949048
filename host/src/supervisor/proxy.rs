//! The stable endpoint in cluster mode (`--cluster`, `--shards N`; standalone deployments
//! hand connections over instead, `endpoint.rs`): every connection is spliced to the node
//! that is primary (of shard 0) when it arrives. When the primary moves, connections to the old one are closed, so a client
//! reconnects (redis-cli and the usual clients do) and lands on the new primary. Bytes
//! pass through untouched: the node does all the talking, RESP3 included.

use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::status::Primary;

/// How long a new connection waits for a primary (an election under way) before it is
/// closed.
pub(super) const WAIT_FOR_PRIMARY: Duration = Duration::from_secs(10);

/// `port_shift` maps the primary's RESP port to the one to splice to (its TLS port for
/// the TLS endpoint, whose bytes also pass through untouched: TLS ends at the node).
pub async fn serve(listener: TcpListener, node_host: String, primary: watch::Receiver<Option<Primary>>, port_shift: i32) {
    loop {
        if let Some(client) = crate::server::accept(&listener).await {
            let _ = client.set_nodelay(true);
            tokio::spawn(splice(client, node_host.clone(), primary.clone(), port_shift));
        }
    }
}

async fn splice(mut client: TcpStream, node_host: String, mut primary: watch::Receiver<Option<Primary>>, port_shift: i32) {
    let target = match tokio::time::timeout(WAIT_FOR_PRIMARY, primary.wait_for(|p| p.is_some())).await {
        Ok(Ok(p)) => p.unwrap(),
        _ => return,
    };
    let port = (target.port as i32 + port_shift) as u16;
    let Ok(mut node) = TcpStream::connect((node_host.as_str(), port)).await else { return };
    let _ = node.set_nodelay(true);
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut node) => {}
        _ = primary.wait_for(|p| *p != Some(target)) => {}
    }
}
