//! A client's script that outlasts one engine call: the engine runs scripts in slices
//! (a bounded number of Lua instructions each) and answers REC_SUSPENDED between them.
//! Meanwhile the shard keeps its lease, lets its connections run and lands the append in
//! flight; once the script has run past `busy-reply-threshold` it hands what clients send
//! to the engine, which answers as Redis does during a busy script (-BUSY to most
//! commands; SCRIPT KILL, FUNCTION KILL, AUTH, MULTI… run).

use memoria_core::protocol::batch;
use tokio::sync::mpsc::UnboundedReceiver;

use super::{Shard, ShardMsg};
use crate::clock::{now_us, seed};
use crate::wasm::EngineError;

/// How a batch with a suspended script ended.
pub(super) enum ScriptEnd {
    /// The script ran: its output record (or the engine failed).
    Done(Result<Vec<u8>, EngineError>),
    /// The node stepped down meanwhile: the engine was replaced, the batch's clients are
    /// gone.
    Replaced,
    /// The shard is shutting down: the script's writes were never acknowledged.
    Shutdown,
}

impl Shard {
    /// Resumes the suspended script until it is done; `flags` are those of the
    /// REC_SUSPENDED record the engine answered.
    pub(super) async fn finish_script(&mut self, rx: &mut UnboundedReceiver<ShardMsg>, mut flags: u8) -> ScriptEnd {
        loop {
            // The connections read and write; the append task runs.
            tokio::task::yield_now().await;
            if self.inflight.as_ref().is_some_and(|i| i.task.is_finished()) {
                self.land_inflight().await;
            }
            // Also an append that waited for its cohort when the script began.
            self.start_append();
            // A primary renews its lease as usual (a replica's script only reads: its
            // claims can wait).
            if !self.standing.is_replica() {
                self.lease_tick();
            }
            if self.run_actions().await {
                return ScriptEnd::Replaced;
            }
            if flags & batch::SUSPENDED_BUSY != 0 {
                match self.answer_while_busy(rx) {
                    Ok(true) => {}
                    Ok(false) => return ScriptEnd::Shutdown,
                    Err(e) => return ScriptEnd::Done(Err(e)),
                }
            }
            self.flush();
            match self.engine.resume(now_us()) {
                Ok(out) => match batch::suspended(&out) {
                    Some(f) => flags = f,
                    None => return ScriptEnd::Done(Ok(out)),
                },
                Err(e) => return ScriptEnd::Done(Err(e)),
            }
        }
    }

    /// Hands what clients sent meanwhile to the engine as one batch and routes the
    /// answers (a client of the script's batch is answered too, and may SCRIPT KILL it). Ok(false): the shard must shut down.
    fn answer_while_busy(&mut self, rx: &mut UnboundedReceiver<ShardMsg>) -> Result<bool, EngineError> {
        self.batch.clear();
        // First what came before: the records after the script in its batch, and the
        // script's client's commands deferred so far.
        self.blocking.take_resubmit(&mut self.batch);
        while let Ok(m) = rx.try_recv() {
            match m {
                ShardMsg::Shutdown => return Ok(false),
                // The log's entries, a reload and a freeze wait for the script's end.
                m @ (ShardMsg::Apply { .. } | ShardMsg::Reload { .. } | ShardMsg::Freeze { .. }) => self.held.push_back(m),
                m => {
                    self.take(m);
                }
            }
        }
        if self.batch.is_empty() {
            return Ok(true);
        }
        let input = std::mem::take(&mut self.batch.buf);
        self.batch.clear();
        self.seq = self.seq.wrapping_add(1);
        let out = self.engine.execute(&input, now_us(), seed() ^ self.seq)?;
        self.route(&input, &out);
        Ok(true)
    }
}
