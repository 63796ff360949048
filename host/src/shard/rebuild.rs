//! A new engine for the shard: after a trap (`crashed`) or a refused append (`rebuild`),
//! from the log (and the newest snapshot) when there is one.

use super::{Shard, Standing};
use crate::clock::seed;
use crate::durable;

impl Shard {
    /// Replaces the engine with a fresh one; with a log, replays it and re-claims the shard
    /// (with an election: replays it and keeps the role the lease machine gives it).
    pub(super) async fn rebuild(&mut self) {
        self.events.loading = Some(("engine-rebuild", std::time::Instant::now()));
        if self.election.is_some() {
            return self.reload_engine().await;
        }
        let mut eng = match self.factory.instantiate(seed()) {
            Ok(e) => e,
            Err(e) => {
                tracing::error!(shard = self.id, error = %e, "could not instantiate a new engine");
                return;
            }
        };
        if let Standing::Primary(slot) = &mut self.standing
            && let Some(log) = slot.take()
        {
            let (api, name, node) = (log.api.clone(), log.name.clone(), log.node.clone());
            // Nothing can be served until the engine is whole again, so the shard awaits
            // recovery inline.
            match durable::recover(api, &name, &node, crate::lease::DEFAULT_LEASE_MS, self.snapshots.as_ref(), &mut eng).await {
                Ok(r) => {
                    tracing::info!(shard = self.id, entries = r.applied_entries, "engine rebuilt from the log");
                    self.standing = Standing::Primary(Some(r.log));
                }
                Err(e) => {
                    tracing::error!(shard = self.id, error = %e, "recovery from the log failed; the shard keeps its old log position");
                    self.standing = Standing::Primary(Some(log));
                }
            }
        }
        self.engine = eng;
        self.send_facts();
    }

    /// A trap destroyed the instance: fail the batch, drop this shard's clients (their
    /// MULTI/SELECT state went with it) and rebuild — from the log when there is one.
    pub(super) async fn crashed(&mut self, e: crate::wasm::EngineError, batch: &[u8]) {
        tracing::error!(shard = self.id, error = %e, "engine trapped; rebuilding the shard's engine");
        // Every command of the batch is answered with the error too, after its client's
        // earlier replies: held behind a sequence that is never acknowledged, so the
        // failure below turns each into the error, in order.
        for rec in memoria_core::protocol::batch::BatchReader::new(batch) {
            if rec.kind == memoria_core::protocol::batch::REC_COMMAND && self.clients.contains_key(&rec.client) {
                self.gate.deliver_n(rec.client, u64::MAX, b"", false, 1);
            }
        }
        match e {
            crate::wasm::EngineError::Interrupted(ms) => {
                let msg =
                    format!("-ERR command interrupted: the shard's engine ran past engine-call-timeout ({ms} ms); nothing of it was applied; reconnect\r\n");
                self.fail_everything(msg.as_bytes());
            }
            _ => self.fail_everything(b"-ERR shard engine crashed while running this batch; reconnect\r\n"),
        }
        self.rebuild().await;
    }

    /// The watchdog interrupted the call running `input`: say which clients and commands
    /// it held (the culprit is among them), so an operator can find the request, and strike
    /// them (`poison.rs`: the culprit is refused when it comes back). Nothing of the batch
    /// was logged or acknowledged, and it is not run again.
    pub(super) fn interrupted(&mut self, input: &[u8], ms: u64) {
        metrics::counter!("memoria_engine_interrupts_total").increment(1);
        self.events.happened("engine-interrupt", ms);
        let mut args = Vec::new();
        let mut seen: Vec<(u64, String)> = Vec::new();
        let mut struck = Vec::new();
        for rec in memoria_core::protocol::batch::BatchReader::new(input) {
            if rec.kind != memoria_core::protocol::batch::REC_COMMAND {
                continue;
            }
            args.clear();
            if memoria_core::protocol::resp::read_command(rec.payload, &mut args).is_some()
                && let Some(&(a, b)) = args.first()
            {
                let name = String::from_utf8_lossy(&rec.payload[a..b]).to_ascii_uppercase();
                if seen.len() < 16 && !seen.iter().any(|(c, n)| *c == rec.client && *n == name) {
                    seen.push((rec.client, name.clone()));
                }
                struck.push((crate::poison::fingerprint(rec.payload), name));
            }
        }
        let commands: Vec<String> = seen.iter().map(|(c, n)| format!("client {c}: {n}")).collect();
        tracing::error!(
            shard = self.id,
            limit_ms = ms,
            commands = %commands.join(", "),
            "the watchdog interrupted an engine call that ran past engine-call-timeout; its clients are failed and the engine is rebuilt from the log"
        );
        let refused = self.host.poison.interrupted(&struck);
        if !refused.is_empty() {
            tracing::error!(shard = self.id, commands = %refused.join(", "), "refusing these commands from now on: each ran alone, or came back, in an interrupted engine call (clear with CONFIG SET engine-call-timeout)");
        }
    }

    /// With an election: a fresh engine, replayed from the whole log (the lease machine
    /// reads along). Waits for the append in flight first, so the replay includes it if it
    /// landed. A replica then tails on from where the replay ended.
    pub(super) async fn reload_engine(&mut self) {
        self.events.loading.get_or_insert(("engine-rebuild", std::time::Instant::now()));
        self.settle_inflight().await;
        self.stop_tail();
        match self.factory.instantiate(seed()) {
            Ok(e) => self.engine = e,
            Err(e) => {
                tracing::error!(shard = self.id, error = %e, "could not instantiate a new engine");
                return;
            }
        }
        let Some((api, name)) = self.source.clone() else { return };
        // From the newest usable snapshot when there is one; the lease machine reads along
        // from there (it keeps what it learnt of the entries before).
        let after = match crate::snapshot::restore::start(self.snapshots.as_ref(), &api, &name, &mut self.engine).await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(shard = self.id, error = %e, "could not start from a snapshot; replaying the whole log");
                if let Err(e) = self.engine.reset(seed()) {
                    tracing::error!(shard = self.id, error = %e, "could not instantiate a new engine");
                    return;
                }
                0
            }
        };
        self.replay_and_tail(api, name, after).await;
    }
}
