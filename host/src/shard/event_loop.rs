//! The shard's loop: wait for client commands, an append's outcome or a timer; drain
//! everything queued (up to `MAX_BATCH_BYTES`) into one batch; make ONE engine call; route
//! the replies through the gate; start the next append; send what may go out.

use std::time::{Duration, Instant};

use memoria_core::protocol::batch;
use tokio::sync::mpsc::UnboundedReceiver;

use super::busy::ScriptEnd;
use super::log_path::append_outcome;
use super::{MAX_BATCH_BYTES, Shard, ShardMsg, Standing, TICK};
use crate::clock::{now_us, seed};

impl Shard {
    pub(super) fn take(&mut self, m: ShardMsg) -> bool {
        match m {
            ShardMsg::Connect { id, addr, laddr, tx, primary_only } => {
                if primary_only && self.standing.is_replica() {
                    // Dropping `tx` closes the connection before it sees anything.
                    return true;
                }
                self.clients.insert(id, tx);
                self.batch.record(batch::REC_CONNECT, id, format!("{addr}\n{laddr}").as_bytes());
            }
            ShardMsg::Commands { id, records } => {
                self.cohort.arrived();
                if self.blocking.is_blocked(id) {
                    self.blocking.defer_records(id, &records);
                } else {
                    self.batch.buf.extend_from_slice(&records);
                    self.batch.records += 1;
                }
            }
            ShardMsg::Disconnect { id } => {
                self.stop_migrate(id);
                self.clients.remove(&id);
                self.gate.forget(id);
                self.blocking.forget(id);
                self.batch.record(batch::REC_DISCONNECT, id, b"");
            }
            ShardMsg::Eof { id } => {
                if self.blocking.closed(id) {
                    self.drop_blocked(id);
                }
            }
            ShardMsg::Apply { generation, entries, tail_id, applied } => {
                if generation == self.tail_gen && self.standing.is_replica() {
                    let before = self.standing.replica().map(|r| r.primary.clone());
                    self.absorb(&entries, tail_id);
                    if self.standing.replica().map(|r| &r.primary) != before.as_ref() {
                        // A new primary: the engine learns it before the commands queued
                        // behind this read (its -MOVED names it), not at the next tick.
                        self.report_role_now();
                    }
                    // Hand out the keyspace notifications the applied effects raised.
                    self.batch.record(batch::REC_DELIVER, 0, b"");
                }
                if let Some(a) = applied {
                    let _ = a.send(());
                }
            }
            ShardMsg::Reload { generation } => self.reload_due |= generation == self.tail_gen && self.standing.is_replica(),
            ShardMsg::WaitDone { client, token, reply } => {
                for w in self.gate.wait_done(client, token, &reply) {
                    self.start_wait(w);
                }
                self.flush();
            }
            ShardMsg::Saved { result } => self.saved(result),
            ShardMsg::Migrated { client, outcome } => {
                self.migrations.remove(&client);
                // Nobody to answer if the client left meanwhile (the engine forgot it).
                if self.clients.contains_key(&client) {
                    self.batch.record(batch::REC_MIGRATED, client, &outcome);
                }
            }
            ShardMsg::Peers(p) => {
                if let Some(c) = self.cluster.as_mut()
                    && c.peers != p
                {
                    c.peers = p;
                    // Re-announce the role (and with it the cluster's nodes) to the engine.
                    self.reported_offset = u64::MAX;
                }
            }
            ShardMsg::Metrics { reply } => {
                let _ = reply.send(self.scrape());
            }
            ShardMsg::Freeze { until } => self.freeze = Some(until),
            ShardMsg::Shutdown => return false,
        }
        true
    }

    /// The watchdog's suspects among the commands of `m` (no look while there are none;
    /// a blocked client's commands wait, they do not run in this batch).
    fn suspects_of(&self, m: &ShardMsg) -> Vec<crate::poison::Fingerprint> {
        let ShardMsg::Commands { id, records } = m else { return Vec::new() };
        if !self.host.poison.has_suspects() || self.blocking.is_blocked(*id) {
            return Vec::new();
        }
        let all: Vec<_> = batch::BatchReader::new(records).filter(|r| r.kind == batch::REC_COMMAND).map(|r| crate::poison::fingerprint(r.payload)).collect();
        self.host.poison.suspects_among(&all)
    }

    /// When the loop must wake up by itself: the engine's tick, or the lease machine's.
    fn next_wake(&self, last_tick: Instant) -> Instant {
        let mut wake = last_tick + TICK;
        if let Some(at) = self.cohort.deadline() {
            wake = wake.min(at);
        }
        if self.blocking.has_resubmit() {
            // Commands released by an unblock run at once.
            return Instant::now();
        }
        if let Some(d) = self.blocking.next_deadline() {
            let ms = (d - now_us() / 1000).max(0) as u64;
            wake = wake.min(Instant::now() + Duration::from_millis(ms));
        }
        if let Some(el) = self.election.as_ref()
            && let Some(ms) = el.m.next_wakeup()
        {
            let at = el.t0 + Duration::from_millis(ms);
            // Never spin: at least a millisecond from now.
            wake = wake.min(at.max(Instant::now() + Duration::from_millis(1)));
        }
        wake
    }

    pub(super) async fn run(&mut self, mut rx: UnboundedReceiver<ShardMsg>) {
        let mut last_tick = Instant::now();
        self.run_actions().await;
        self.flush();
        loop {
            // An append that waited for its cohort goes once the wait is over.
            if self.cohort.deadline().is_some() {
                self.start_append();
            }
            let has_inflight = self.inflight.is_some();
            let wake = self.next_wake(last_tick);
            let inflight = self.inflight.as_mut().map(|i| &mut i.task);
            // Messages held back while a script ran come first.
            let held = self.held.pop_front();
            let first = if held.is_some() {
                held
            } else {
                tokio::select! {
                m = rx.recv() => match m {
                    Some(m) => Some(m),
                    None => return,
                },
                r = async { inflight.unwrap().await }, if has_inflight => {
                    let done = self.inflight.take().unwrap();
                    self.landed(done.last_seq, done.started);
                    let r = append_outcome(r);
                    let released = self.gate.released;
                    self.appended(done.last_seq, done.token, r).await;
                    self.cohort.released((self.gate.released - released) as usize, Instant::now());
                    self.start_append();
                    self.run_actions().await;
                    self.flush();
                    None
                }
                _ = tokio::time::sleep_until(wake.into()) => None,
                }
            };
            self.batch.clear();
            self.batch_suspects.clear();
            // Commands of just-unblocked clients come before anything newer of theirs.
            self.blocking.take_resubmit(&mut self.batch);
            if let Some(m) = first {
                self.gate.batch_t0 = Instant::now();
                self.batch_suspects = self.suspects_of(&m);
                if !self.take(m) {
                    return self.drain_before_exit().await;
                }
                // A batch with a suspect of the watchdog runs alone (`poison.rs`).
                while self.batch.buf.len() < MAX_BATCH_BYTES && self.batch_suspects.is_empty() {
                    match self.held.pop_front().map_or_else(|| rx.try_recv(), Ok) {
                        Ok(m) => {
                            let suspects = self.suspects_of(&m);
                            if !suspects.is_empty() && self.batch.records > 0 {
                                self.held.push_front(m);
                                break;
                            }
                            self.batch_suspects = suspects;
                            if !self.take(m) {
                                return self.drain_before_exit().await;
                            }
                        }
                        Err(_) => break,
                    }
                }
            }
            if let Some(until) = self.freeze.take() {
                tracing::warn!(shard = self.id, "shard frozen (test hook)");
                let _ = until.await;
                tracing::warn!(shard = self.id, "shard resumed");
            }
            if std::mem::take(&mut self.reload_due) {
                self.reload_behind_truncation().await;
                self.batch.clear();
                self.flush();
                continue;
            }
            // With an election, time passes for the lease first: a primary whose lease
            // lapsed (a freeze, a stall) steps down before it could serve this batch, and
            // the batch, whose clients it drops, is not run at all.
            self.lease_tick();
            if self.run_actions().await {
                self.batch.clear();
                self.flush();
                continue;
            }
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                self.batch.record(batch::REC_TICK, 0, b"");
                self.role_record();
            }
            self.blocking.fire_deadlines(now_us() / 1000, &mut self.batch);
            if self.batch.is_empty() {
                continue;
            }
            self.seq = self.seq.wrapping_add(1);
            let batch_seed = seed() ^ self.seq;
            let input = std::mem::take(&mut self.batch.buf);
            // Without a log an interrupted engine could only be rebuilt empty: no watchdog.
            let limit = if matches!(self.standing, Standing::Primary(None)) { 0 } else { self.host.engine_call_ms() };
            self.engine.set_call_limit(limit);
            // The input the final output answers: the batch, or a yielded script's record.
            let mut answers = 0..input.len();
            let result = match self.engine.execute(&input, now_us(), batch_seed) {
                Ok(out) => match batch::suspension(&out) {
                    Some(s) => {
                        // What came before the script is answered now; what came after
                        // goes to the next batch (the busy batches, if it runs long).
                        let (start, end) = s.script;
                        self.route(&input[..start], s.before);
                        self.blocking.send_again(&input[end..]);
                        answers = start..end;
                        self.start_append();
                        self.flush();
                        match self.finish_script(&mut rx, s.flags).await {
                            ScriptEnd::Done(r) => r,
                            ScriptEnd::Replaced => {
                                self.batch.clear();
                                self.flush();
                                continue;
                            }
                            ScriptEnd::Shutdown => return self.drain_before_exit().await,
                        }
                    }
                    None => Ok(out),
                },
                r => r,
            };
            let answered = &input[answers];
            match result {
                Ok(out) => {
                    if !self.batch_suspects.is_empty() {
                        self.host.poison.ran(&self.batch_suspects);
                    }
                    self.route(answered, &out)
                }
                Err(e) => {
                    if let crate::wasm::EngineError::Interrupted(ms) = e {
                        self.interrupted(answered, ms);
                    }
                    self.crashed(e, answered).await
                }
            }
            self.batch.buf = input;
            self.start_append();
            self.run_actions().await;
            self.flush();
            if self.gate.stats.immediate > 0 {
                let n = std::mem::take(&mut self.gate.stats.immediate);
                self.gate.stats.record(self.gate.batch_t0.elapsed(), n);
            }
            if std::mem::take(&mut self.resign) {
                self.resign_now().await;
            }
        }
    }

    /// On shutdown, waits for the append in flight so acknowledged-looking writes land.
    async fn drain_before_exit(&mut self) {
        self.cohort.cancel();
        self.land_inflight().await;
        self.start_append();
        self.land_inflight().await;
        self.flush();
    }

    /// A blocked client whose connection is gone: forget it here and in the engine.
    fn drop_blocked(&mut self, id: u64) {
        self.stop_migrate(id);
        self.clients.remove(&id);
        self.gate.forget(id);
        self.blocking.drop_client(id);
    }

    /// Routes one engine call's output through the gate, then does what routing leaves to
    /// the shard.
    pub(super) fn route(&mut self, input: &[u8], out: &[u8]) {
        let durable = self.standing.log().is_some();
        let clients = &self.clients;
        let routed = self.gate.route(input, out, durable, &mut self.blocking, |id| clients.contains_key(&id));
        for values in &routed.config {
            self.host.apply(&String::from_utf8_lossy(values));
        }
        for id in routed.dropped {
            self.drop_blocked(id);
        }
        for (client, need, reply, close) in routed.failovers {
            if self.election.is_none() || !durable {
                self.gate.deliver(client, need, b"-ERR FAILOVER needs automatic failover: this node was not elected through a log\r\n", close);
            } else {
                self.resign = true;
                self.gate.deliver(client, need, &reply, close);
            }
        }
        for w in routed.waits {
            self.start_wait(w);
        }
        for (client, request) in routed.migrations {
            self.start_migrate(client, &request);
        }
        for (client, need, reply) in routed.shutdowns {
            // The process stops as on SIGTERM (appends in flight land first); the client
            // gets no reply, as from Redis.
            if crate::shutdown::request() {
                tracing::warn!(shard = self.id, client, "SHUTDOWN: stopping the node");
                self.gate.deliver(client, need, b"", true);
            } else {
                self.gate.deliver(client, need, &reply, false);
            }
        }
        for (client, need, reply, close, schedule) in routed.bgsaves {
            match self.snapshot_now(None) {
                Ok(()) => self.gate.deliver(client, need, &reply, close),
                // BGSAVE SCHEDULE while one runs: another follows it, as in Redis.
                Err(_) if schedule && self.saves.schedule() => self.gate.deliver(client, need, b"+Background saving scheduled\r\n", close),
                Err(e) => self.gate.deliver(client, need, format!("-{e}\r\n").as_bytes(), close),
            }
        }
    }

    /// Sends what the gate lets out.
    pub(super) fn flush(&mut self) {
        for (id, m) in self.gate.take_out() {
            if let Some(tx) = self.clients.get(&id) {
                let _ = tx.send(m);
            }
        }
    }
}
