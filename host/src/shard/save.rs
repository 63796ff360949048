//! SAVE and BGSAVE: a snapshot of the shard taken now, by the same child `memoria
//! snapshot` process the scheduler runs (it reads the log, so the serving engine is not
//! touched). SAVE's reply waits for the caller's writes to be durable and then for the
//! snapshot to be published; BGSAVE answers at once. One at a time, as in Redis. INFO
//! persistence and LASTSAVE show the outcome (`persistence.*` lines of the role record).

use std::time::Instant;

use super::{Shard, ShardMsg};
use crate::snapshot::schedule::Runner;

pub(super) struct Saves {
    /// How a snapshot is taken here (None: the node has no snapshot store).
    runner: Option<Runner>,
    /// The one under way: since when, and the SAVEs waiting for it (client, token).
    running: Option<(Instant, Vec<(u64, u64)>)>,
    /// A BGSAVE SCHEDULE came while one ran: another is taken once it ends.
    scheduled: bool,
    /// Unix seconds of the last published snapshot (or of the start), how long the last
    /// one took, whether it succeeded, how many succeeded.
    last_time: i64,
    last_secs: Option<u64>,
    last_ok: bool,
    count: u64,
}

impl Saves {
    pub(super) fn new(runner: Option<Runner>) -> Saves {
        Saves { runner, running: None, scheduled: false, last_time: unix_secs(), last_secs: None, last_ok: true, count: 0 }
    }

    /// BGSAVE SCHEDULE: true when one is under way and another will follow it.
    pub(super) fn schedule(&mut self) -> bool {
        self.scheduled = self.running.is_some();
        self.scheduled
    }

    /// INFO persistence's lines for them, as Redis names its RDB saves'.
    pub(super) fn lines(&self, t: &mut String) {
        use std::fmt::Write;
        let current = self.running.as_ref().map_or(-1, |(at, _)| at.elapsed().as_secs() as i64);
        let _ = write!(
            t,
            "persistence.rdb_saves:{}\npersistence.rdb_bgsave_in_progress:{}\npersistence.rdb_last_save_time:{}\npersistence.rdb_last_bgsave_status:{}\npersistence.rdb_last_bgsave_time_sec:{}\npersistence.rdb_current_bgsave_time_sec:{current}\n",
            self.count,
            u8::from(self.running.is_some()),
            self.last_time,
            if self.last_ok { "ok" } else { "err" },
            self.last_secs.map_or(-1, |s| s as i64),
        );
    }
}

fn unix_secs() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

impl Shard {
    /// Starts a snapshot (`waiter`: a SAVE to answer when it is done), or says why not.
    pub(super) fn snapshot_now(&mut self, waiter: Option<(u64, u64)>) -> Result<(), String> {
        if self.saves.running.is_some() {
            return Err("ERR Background save already in progress".into());
        }
        let (Some(runner), Some(store), Some((api, name)), Some(tx)) =
            (self.saves.runner.clone(), self.snapshots.clone(), self.source.clone(), self.self_tx.upgrade())
        else {
            return Err("ERR this node takes no snapshots (it has no log or no snapshot store)".into());
        };
        tracing::info!(shard = self.id, log = %name, "taking a snapshot (SAVE/BGSAVE)");
        self.saves.running = Some((Instant::now(), waiter.into_iter().collect()));
        self.reported_offset = u64::MAX;
        tokio::spawn(async move {
            let result = crate::snapshot::schedule::snapshot_now(&runner, &api, &name, &store).await.map_err(|e| e.to_string());
            let _ = tx.send(ShardMsg::Saved { result });
        });
        Ok(())
    }

    /// The snapshot is published or failed: answer the SAVEs waiting for it.
    pub(super) fn saved(&mut self, result: Result<(), String>) {
        let Some((since, waiters)) = self.saves.running.take() else { return };
        let s = &mut self.saves;
        s.last_secs = Some(since.elapsed().as_secs());
        s.last_ok = result.is_ok();
        let reply = match &result {
            Ok(()) => {
                s.last_time = unix_secs();
                s.count += 1;
                b"+OK\r\n".to_vec()
            }
            Err(e) => {
                tracing::error!(shard = self.id, error = %e, "the snapshot SAVE/BGSAVE asked for failed");
                format!("-ERR snapshot failed: {}\r\n", e.replace(['\r', '\n'], " ")).into_bytes()
            }
        };
        // INFO persistence and LASTSAVE know of it before any command after the replies.
        self.report_role_now();
        for (client, token) in waiters {
            for w in self.gate.wait_done(client, token, &reply) {
                self.start_wait(w);
            }
        }
        self.flush();
        if std::mem::take(&mut self.saves.scheduled)
            && let Err(e) = self.snapshot_now(None)
        {
            tracing::warn!(shard = self.id, error = %e, "the scheduled BGSAVE could not start");
        }
    }
}
