//! The stable endpoint of a standalone deployment: each connection accepted on `--port`
//! (and `--tls-port`) is handed, socket and all, to the process of the node that is primary
//! when it arrives (`crate::handoff`); the client then talks to that node directly, with
//! nothing in between. When the primary moves, the old one drops its clients (it stepped
//! down) and they reconnect here, to be handed to the new one.

use std::path::PathBuf;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::proxy::WAIT_FOR_PRIMARY;
use super::status::Primary;
use crate::handoff::{self, Kind};

pub async fn serve(listener: TcpListener, data_dir: PathBuf, primary: watch::Receiver<Option<Primary>>, kind: Kind) {
    loop {
        if let Some(client) = crate::server::accept(&listener).await {
            let _ = client.set_nodelay(true);
            tokio::spawn(hand_over(client, data_dir.clone(), primary.clone(), kind));
        }
    }
}

/// Hands the client to the primary; if that fails (it died or is going), once more to the
/// next primary. Otherwise the client is closed and reconnects.
async fn hand_over(client: TcpStream, data_dir: PathBuf, mut primary: watch::Receiver<Option<Primary>>, kind: Kind) {
    let Ok(client) = client.into_std() else { return };
    let mut tried: Option<Primary> = None;
    for _ in 0..2 {
        let target = match tokio::time::timeout(WAIT_FOR_PRIMARY, primary.wait_for(|p| p.is_some() && *p != tried)).await {
            Ok(Ok(p)) => p.expect("waited for a primary"),
            _ => return,
        };
        let path = handoff::socket_path(&data_dir, target.port);
        match handoff::send(&path, &client, kind).await {
            Ok(()) => return,
            Err(e) => tracing::debug!(port = target.port, error = %e, "hand-off to the primary failed"),
        }
        tried = Some(target);
    }
}
