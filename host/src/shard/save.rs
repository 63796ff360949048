//! SAVE and BGSAVE: a snapshot of the shard taken now, by the same child `memoria
//! snapshot` process the scheduler runs (it reads the log, so the serving engine is not
//! touched). SAVE's reply waits for the caller's writes to be durable and then for the
//! snapshot to be published; BGSAVE answers at once. One at a time, as in Redis. INFO
//! persistence and LASTSAVE show the outcome (`persistence.*` lines of the role record).

use std::time::Instant;

use super::{Shard, ShardMsg};
use crate::snapshot::schedule::Runner;

/// A SAVE waiting for the snapshot: (client, its held reply's token).
type Waiter = (u64, u64);

/// How a snapshot ended for those waiting: the SAVEs, their reply, whether a scheduled
/// BGSAVE follows.
type Finished = (Vec<Waiter>, Vec<u8>, bool);

pub(super) struct Saves {
    /// How a snapshot is taken here (None: the node has no snapshot store).
    runner: Option<Runner>,
    /// The one under way: since when, and the SAVEs waiting for it.
    running: Option<(Instant, Vec<Waiter>)>,
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

    /// One is under way from now (`waiter`: a SAVE to answer when it ends), unless one
    /// already is: one at a time, as in Redis.
    fn begin(&mut self, waiter: Option<Waiter>) -> Result<(), String> {
        if self.running.is_some() {
            return Err("ERR Background save already in progress".into());
        }
        self.running = Some((Instant::now(), waiter.into_iter().collect()));
        Ok(())
    }

    /// The one under way ended with `result`: the SAVEs waiting for it, their reply, and
    /// whether a scheduled one follows (None: none was under way).
    fn finish(&mut self, result: &Result<(), String>) -> Option<Finished> {
        let (since, waiters) = self.running.take()?;
        self.last_secs = Some(since.elapsed().as_secs());
        self.last_ok = result.is_ok();
        let reply = match result {
            Ok(()) => {
                self.last_time = unix_secs();
                self.count += 1;
                b"+OK\r\n".to_vec()
            }
            Err(e) => format!("-ERR snapshot failed: {}\r\n", e.replace(['\r', '\n'], " ")).into_bytes(),
        };
        Some((waiters, reply, std::mem::take(&mut self.scheduled)))
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
    pub(super) fn snapshot_now(&mut self, waiter: Option<Waiter>) -> Result<(), String> {
        // (One under way implies all of these: `begin` says so then.)
        let (Some(runner), Some(store), Some((api, name)), Some(tx)) =
            (self.saves.runner.clone(), self.snapshots.clone(), self.source.clone(), self.self_tx.upgrade())
        else {
            return Err("ERR this node takes no snapshots (it has no log or no snapshot store)".into());
        };
        self.saves.begin(waiter)?;
        tracing::info!(shard = self.id, log = %name, "taking a snapshot (SAVE/BGSAVE)");
        self.reported_offset = u64::MAX;
        tokio::spawn(async move {
            let result = crate::snapshot::schedule::snapshot_now(&runner, &api, &name, &store).await.map_err(|e| e.to_string());
            let _ = tx.send(ShardMsg::Saved { result });
        });
        Ok(())
    }

    /// The snapshot is published or failed: answer the SAVEs waiting for it.
    pub(super) fn saved(&mut self, result: Result<(), String>) {
        let Some((waiters, reply, scheduled)) = self.saves.finish(&result) else { return };
        if let Err(e) = &result {
            tracing::error!(shard = self.id, error = %e, "the snapshot SAVE/BGSAVE asked for failed");
        }
        // INFO persistence and LASTSAVE know of it before any command after the replies.
        self.report_role_now();
        for (client, token) in waiters {
            for w in self.gate.wait_done(client, token, &reply) {
                self.start_wait(w);
            }
        }
        self.flush();
        if scheduled && let Err(e) = self.snapshot_now(None) {
            tracing::warn!(shard = self.id, error = %e, "the scheduled BGSAVE could not start");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-at-a-time rules, without a snapshot process whose duration a test would
    /// depend on.
    #[test]
    fn one_at_a_time_and_schedule_follows() {
        let mut s = Saves::new(None);
        assert!(!s.schedule(), "nothing under way: a BGSAVE SCHEDULE starts at once");
        assert_eq!(s.begin(Some((7, 1))), Ok(()));
        assert_eq!(s.begin(None), Err("ERR Background save already in progress".to_string()));
        assert!(s.schedule(), "under way: scheduled after it");
        let (waiters, reply, scheduled) = s.finish(&Ok(())).unwrap();
        assert_eq!((waiters, reply.as_slice(), scheduled), (vec![(7, 1)], &b"+OK\r\n"[..], true));
        assert_eq!((s.count, s.last_ok), (1, true));
        assert!(s.finish(&Ok(())).is_none(), "nothing under way any more");
        s.begin(None).unwrap();
        let (_, reply, scheduled) = s.finish(&Err("disk\nfull".into())).unwrap();
        assert_eq!((reply.as_slice(), scheduled), (&b"-ERR snapshot failed: disk full\r\n"[..], false));
        assert_eq!((s.count, s.last_ok), (1, false));
        let mut t = String::new();
        s.lines(&mut t);
        assert!(t.contains("persistence.rdb_saves:1\n") && t.contains("persistence.rdb_last_bgsave_status:err\n"), "{t}");
    }
}
