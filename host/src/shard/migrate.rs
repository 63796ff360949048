//! MIGRATE's transfer (see `memoria_core::commands::migrate_to`): the engine has no I/O,
//! so the shard runs it here, off its loop, while the client stays blocked: connect,
//! write the commands, read one reply line per command, each step within the command's
//! timeout as Redis bounds each of its syscalls; then the outcome goes back to the engine
//! as a REC_MIGRATED record.

use std::time::Duration;

use memoria_core::protocol::batch::{MigrateOutcome, MigrateRequest};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use super::{Shard, ShardMsg};

/// Bytes written per timed write (Redis writes 64 KiB per syncWrite).
const WRITE_CHUNK: usize = 64 * 1024;
/// The longest reply line read (Redis reads them into 1 KiB buffers); a longer one
/// counts as a broken connection.
const MAX_LINE: u64 = 1024;

/// Runs `req`'s transfer to its end.
pub async fn transfer(req: &MigrateRequest) -> MigrateOutcome {
    let t = Duration::from_millis(req.timeout_ms);
    let stream = match tokio::time::timeout(t, TcpStream::connect((req.host.as_str(), req.port))).await {
        Ok(Ok(s)) => s,
        // Redis's non-blocking connect "succeeds" against a refusing port and its first
        // write fails: it says "writing" then, "connecting" only when the connect times
        // out or cannot start (an unknown host).
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => return MigrateOutcome::Broken { writing: true, replies: Vec::new() },
        _ => return MigrateOutcome::ConnectFailed,
    };
    let _ = stream.set_nodelay(true);
    let (rd, mut wr) = stream.into_split();
    for chunk in req.commands.chunks(WRITE_CHUNK) {
        if !matches!(tokio::time::timeout(t, wr.write_all(chunk)).await, Ok(Ok(()))) {
            return MigrateOutcome::Broken { writing: true, replies: Vec::new() };
        }
    }
    let mut rd = BufReader::new(rd);
    let mut replies = Vec::with_capacity(req.replies as usize);
    for _ in 0..req.replies {
        let mut line = Vec::new();
        let read = tokio::time::timeout(t, (&mut rd).take(MAX_LINE + 2).read_until(b'\n', &mut line)).await;
        if !matches!(read, Ok(Ok(n)) if n > 0) || !line.ends_with(b"\n") {
            return MigrateOutcome::Broken { writing: false, replies };
        }
        line.truncate(line.len() - 1);
        if line.ends_with(b"\r") {
            line.pop();
        }
        replies.push(line);
    }
    MigrateOutcome::Replies(replies)
}

impl Shard {
    /// Starts the transfer a MIGRATE of `client` asked for (`request`: its REC_MIGRATE
    /// payload); its outcome comes back as `ShardMsg::Migrated`.
    pub(super) fn start_migrate(&mut self, client: u64, request: &[u8]) {
        let Some(req) = MigrateRequest::decode(request) else {
            // The engine answers an unreadable outcome with an error.
            self.batch.record(memoria_core::protocol::batch::REC_MIGRATED, client, b"");
            return;
        };
        let tx = self.self_tx.clone();
        let task = tokio::spawn(async move {
            let outcome = transfer(&req).await;
            if let Some(tx) = tx.upgrade() {
                let _ = tx.send(ShardMsg::Migrated { client, outcome: outcome.encode() });
            }
        });
        self.migrations.insert(client, task.abort_handle());
    }

    /// Stops `client`'s transfer, if one runs (the client went: its keys stay here).
    pub(super) fn stop_migrate(&mut self, client: u64) {
        if let Some(t) = self.migrations.remove(&client) {
            t.abort();
        }
    }

    /// Stops every transfer (every client is being dropped).
    pub(super) fn stop_migrations(&mut self) {
        for (_, t) in self.migrations.drain() {
            t.abort();
        }
    }
}
