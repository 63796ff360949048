//! Routing one engine call's output: per output record, when its reply may go out (the
//! gate's `need`), which effects go to the log, and what the host must do besides
//! (park or release a blocked client, apply a CONFIG SET, hold a WAIT, step down after a
//! FAILOVER). Pure, like the gate.

use memoria_core::protocol::batch::{self, BatchReader, OutputReader, WaitRequest};

use super::blocking::Blocking;
use super::gate::{Awaited, Gate, WaitStart};

/// What routing leaves to the shard.
#[derive(Default)]
pub(super) struct Routed {
    /// CONFIG SETs of host parameters: the current values (`name value` lines).
    pub config: Vec<Vec<u8>>,
    /// Accepted FAILOVERs: (client, the sequence its reply waits for, its reply, close
    /// after it).
    pub failovers: Vec<(u64, u64, Vec<u8>, bool)>,
    /// Blocked clients whose connection is gone (forget them everywhere).
    pub dropped: Vec<u64>,
    /// WAITs that may count replicas now.
    pub waits: Vec<WaitStart>,
    /// BGSAVEs: (client, the sequence its reply waits for, its reply, close after it,
    /// SCHEDULE).
    pub bgsaves: Vec<(u64, u64, Vec<u8>, bool, bool)>,
    /// SHUTDOWNs: (client, the sequence its reply waits for, its reply if the node
    /// cannot stop).
    pub shutdowns: Vec<(u64, u64, Vec<u8>)>,
    /// MIGRATE transfers to run: (client, its REC_MIGRATE payload). The client stays
    /// parked until the engine answers the REC_MIGRATED that reports it.
    pub migrations: Vec<(u64, Vec<u8>)>,
}

impl Gate {
    /// Routes `out`, the engine's answer to `input`. With `durable` (a primary with a log)
    /// replies wait for the log; without, only for their client's earlier replies.
    /// `is_client` says whether a connection is still open (pub/sub messages to a closed
    /// one are dropped).
    pub(super) fn route(&mut self, input: &[u8], out: &[u8], durable: bool, blocking: &mut Blocking, is_client: impl Fn(u64) -> bool) -> Routed {
        let mut routed = Routed::default();
        let mut batch_seq = 0u64;
        let mut batch_fx: Vec<u8> = Vec::new();
        let mut inputs = BatchReader::new(input);
        let mut records = OutputReader::new(out).peekable();
        // Pub/sub messages wait for what the record that caused them waits for.
        let mut need = 0;
        while let Some(rec) = records.next() {
            match rec.kind {
                batch::REC_PUSH => {
                    if is_client(rec.client) {
                        self.deliver_n(rec.client, need, rec.reply, false, 0);
                    }
                    continue;
                }
                // CLIENT KILL: the connection closes once what it is owed is out.
                batch::REC_KILL => {
                    if is_client(rec.client) {
                        self.deliver_n(rec.client, need, b"", true, 0);
                    }
                    continue;
                }
                // A CONFIG SET: the connection limits take effect now.
                batch::REC_CONFIG => {
                    routed.config.push(rec.reply.to_vec());
                    continue;
                }
                // Taken with the record they follow (below); never alone.
                batch::REC_WAIT | batch::REC_FAILOVER | batch::REC_SAVE | batch::REC_SHUTDOWN | batch::REC_MIGRATE => continue,
                _ => {}
            }
            let parked = rec.flags & (batch::OUT_BLOCKED | batch::OUT_DEFERRED) != 0;
            if rec.kind == batch::REC_COMMAND && !parked {
                mark(&mut self.pubsub_clients, rec.client, rec.flags & batch::OUT_PUBSUB != 0);
            }
            if (rec.kind == batch::REC_COMMAND && !parked) || rec.kind == batch::REC_CONNECT {
                mark(&mut self.auth_clients, rec.client, rec.flags & batch::OUT_AUTH_REQUIRED != 0);
            }
            // A served blocked client (REC_UNBLOCKED) answers no input record.
            let inp = if rec.kind == batch::REC_UNBLOCKED {
                None
            } else {
                let Some(i) = inputs.next() else { break };
                Some(i)
            };
            need = 0;
            if durable {
                // A write waits for its own entry, which follows every pending one: the
                // keys it read need no lookup then.
                if rec.kind == batch::REC_COMMAND && rec.effects.is_empty() && !parked {
                    need = inp.as_ref().map_or(0, |i| self.need_of(i.payload));
                } else if rec.flags & batch::OUT_UNBLOCKED != 0 && rec.effects.is_empty() {
                    // A blocked command's answer: what it read is not known here.
                    need = self.tracker.need_all();
                }
                if !rec.effects.is_empty() {
                    if batch_seq == 0 {
                        batch_seq = self.next_seq();
                    }
                    need = batch_seq;
                    self.track_effects(batch_seq, rec.effects);
                    batch_fx.extend_from_slice(rec.effects);
                }
            }
            if rec.flags & batch::OUT_DEFERRED != 0 {
                if let Some(i) = inp {
                    blocking.defer(rec.client, i.payload);
                }
            } else if rec.flags & batch::OUT_BLOCKED != 0 {
                // A MIGRATE blocks until its transfer, which the next record asks for.
                if let Some(r) = records.next_if(|r| r.client == rec.client && r.kind == batch::REC_MIGRATE) {
                    routed.migrations.push((rec.client, r.reply.to_vec()));
                }
                if blocking.park(rec.client, rec.reply) {
                    routed.dropped.push(rec.client);
                }
            } else if rec.flags & batch::OUT_UNBLOCKED != 0 {
                blocking.unpark(rec.client);
                self.deliver(rec.client, need, rec.reply, false);
            } else if rec.kind == batch::REC_CONNECT {
                // The connection frames nothing before this answer (whether the client must
                // authenticate); refused at connect (protected mode), the message and close.
                self.deliver_n(rec.client, 0, rec.reply, rec.flags & batch::OUT_CLOSE != 0, 0);
            } else if rec.kind == batch::REC_COMMAND {
                let close = rec.flags & batch::OUT_CLOSE != 0;
                // What the engine asks of the host for this command, in the next record.
                let request = records
                    .next_if(|r| r.client == rec.client && matches!(r.kind, batch::REC_WAIT | batch::REC_FAILOVER | batch::REC_SAVE | batch::REC_SHUTDOWN));
                match request {
                    // A WAIT on a primary with a log: answered once replicas are counted.
                    Some(r) if r.kind == batch::REC_WAIT && durable => match WaitRequest::decode(r.reply) {
                        Some(req) => routed.waits.extend(self.hold_wait(rec.client, Awaited::Replicas(req), close)),
                        None => self.deliver(rec.client, need, b"-ERR malformed WAIT request from the engine\r\n", close),
                    },
                    Some(r) if r.kind == batch::REC_FAILOVER => routed.failovers.push((rec.client, need, rec.reply.to_vec(), close)),
                    // SAVE: answered once a snapshot with the caller's writes is published.
                    Some(r) if r.kind == batch::REC_SAVE && r.reply.first() == Some(&0) => {
                        routed.waits.extend(self.hold_wait(rec.client, Awaited::Snapshot, close));
                    }
                    Some(r) if r.kind == batch::REC_SAVE => routed.bgsaves.push((rec.client, need, rec.reply.to_vec(), close, r.reply.first() == Some(&2))),
                    Some(r) if r.kind == batch::REC_SHUTDOWN => routed.shutdowns.push((rec.client, need, rec.reply.to_vec())),
                    _ => self.deliver(rec.client, need, rec.reply, close),
                }
            }
        }
        if batch_seq != 0 {
            self.queue(batch_seq, batch_fx);
        }
        routed
    }
}

/// Puts `client` in `set` or takes it out, as the engine's latest flag for it says.
fn mark(set: &mut std::collections::HashSet<u64, foldhash::fast::RandomState>, client: u64, on: bool) {
    if on {
        set.insert(client);
    } else if !set.is_empty() {
        set.remove(&client);
    }
}
