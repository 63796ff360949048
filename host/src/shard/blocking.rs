//! Blocked clients, the connection side (the engine keeps who waits on which key and
//! serves them; see `memoria_core::protocol::batch` for the protocol).
//!
//! While a client is blocked, nothing else of it may run: its later pipelined commands
//! wait here, in order, and go into the batch after it is answered. Deadlines are fired
//! from here as REC_UNBLOCK records. A client that disconnects is forgotten at once (the
//! engine forgets its waits on REC_DISCONNECT).

use std::collections::{BTreeSet, HashMap, HashSet};

use memoria_core::protocol::batch::{self, BatchReader, BatchWriter};

#[derive(Default)]
struct Parked {
    /// Unix ms; 0 = none.
    deadline: i64,
    /// REC_COMMAND payloads of commands that arrived (or were deferred) while blocked.
    deferred: Vec<Vec<u8>>,
}

#[derive(Default)]
pub struct Blocking {
    parked: HashMap<u64, Parked>,
    deadlines: BTreeSet<(i64, u64)>,
    /// Commands of clients unblocked since the last batch, and the records after a script
    /// that yielded (`send_again`): they open the next batch.
    resubmit: BatchWriter,
    /// Clients that closed their side with commands in flight. Redis drops a client at
    /// EOF; we answer what it sent, unless it blocks, which would then wait forever.
    eof: HashSet<u64>,
}

impl Blocking {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_blocked(&self, id: u64) -> bool {
        self.parked.contains_key(&id)
    }

    #[cfg(test)]
    pub fn blocked_count(&self) -> usize {
        self.parked.len()
    }

    /// The client closed its side. True if it is blocked: drop it now (`drop_client`).
    pub fn closed(&mut self, id: u64) -> bool {
        self.eof.insert(id);
        self.is_blocked(id)
    }

    /// Forgets a client and queues REC_DISCONNECT for the engine (it vanished while blocked).
    pub fn drop_client(&mut self, id: u64) {
        self.forget(id);
        self.resubmit.record(batch::REC_DISCONNECT, id, b"");
    }

    /// The engine answered OUT_BLOCKED: `payload` is the deadline (i64 LE unix ms).
    /// True if the client already closed its side: drop it (`drop_client`).
    pub fn park(&mut self, id: u64, payload: &[u8]) -> bool {
        let deadline = payload.get(..8).and_then(|b| b.try_into().ok()).map(i64::from_le_bytes).unwrap_or(0);
        let p = self.parked.entry(id).or_default();
        if p.deadline != 0 {
            self.deadlines.remove(&(p.deadline, id));
        }
        p.deadline = deadline;
        if deadline != 0 {
            self.deadlines.insert((deadline, id));
        }
        self.eof.contains(&id)
    }

    /// A command of `id` that must wait: commands arriving while it is blocked, and those
    /// the engine deferred (OUT_DEFERRED). Framed records (`records`) or one payload.
    pub fn defer_records(&mut self, id: u64, records: &[u8]) {
        for r in BatchReader::new(records) {
            self.defer(id, r.payload);
        }
    }

    pub fn defer(&mut self, id: u64, payload: &[u8]) {
        match self.parked.get_mut(&id) {
            Some(p) => p.deferred.push(payload.to_vec()),
            // Deferred by the engine in the batch that also unblocked it: it runs right after
            // the commands released before it.
            None => self.resubmit.record(batch::REC_COMMAND, id, payload),
        }
    }

    /// The engine answered the client's blocked command: its waiting commands go next.
    pub fn unpark(&mut self, id: u64) {
        if let Some(p) = self.parked.remove(&id) {
            if p.deadline != 0 {
                self.deadlines.remove(&(p.deadline, id));
            }
            for cmd in p.deferred {
                self.resubmit.record(batch::REC_COMMAND, id, &cmd);
            }
        }
    }

    /// The client disconnected: nothing of it stays behind.
    pub fn forget(&mut self, id: u64) {
        self.eof.remove(&id);
        if let Some(p) = self.parked.remove(&id)
            && p.deadline != 0
        {
            self.deadlines.remove(&(p.deadline, id));
        }
        if !self.resubmit.is_empty() {
            let mut kept = BatchWriter::new();
            for r in BatchReader::new(&self.resubmit.buf) {
                if r.client != id {
                    kept.record(r.kind, r.client, r.payload);
                }
            }
            self.resubmit = kept;
        }
    }

    /// Every client is gone (the shard failed its clients or was rebuilt).
    pub fn clear(&mut self) {
        self.parked.clear();
        self.deadlines.clear();
        self.eof.clear();
        self.resubmit.clear();
    }

    pub fn has_resubmit(&self) -> bool {
        !self.resubmit.is_empty()
    }

    /// Records of a batch that stopped at a script that yielded, after the script's own:
    /// they go into the next batch (the script's client's wait in the engine for it).
    pub fn send_again(&mut self, records: &[u8]) {
        for r in BatchReader::new(records) {
            self.resubmit.record(r.kind, r.client, r.payload);
        }
    }

    /// Moves the released commands to the front of the batch being built.
    pub fn take_resubmit(&mut self, into: &mut BatchWriter) {
        if self.resubmit.is_empty() {
            return;
        }
        into.buf.extend_from_slice(&self.resubmit.buf);
        into.records += self.resubmit.records;
        self.resubmit.clear();
    }

    /// The earliest deadline (unix ms).
    pub fn next_deadline(&self) -> Option<i64> {
        self.deadlines.first().map(|&(d, _)| d)
    }

    /// Adds a REC_UNBLOCK record for every deadline that has passed. The client stays
    /// parked until the engine's answer (it may have been served in the same batch).
    pub fn fire_deadlines(&mut self, now_ms: i64, into: &mut BatchWriter) {
        while let Some(&(d, id)) = self.deadlines.first() {
            if d > now_ms {
                break;
            }
            self.deadlines.remove(&(d, id));
            if let Some(p) = self.parked.get_mut(&id) {
                p.deadline = 0;
            }
            into.record(batch::REC_UNBLOCK, id, b"");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deferred_commands_follow_the_unblock_in_order() {
        let mut b = Blocking::new();
        b.park(7, &0i64.to_le_bytes());
        b.defer(7, b"first");
        b.defer(7, b"second");
        assert!(b.is_blocked(7));
        assert!(!b.has_resubmit());
        b.unpark(7);
        // Deferred by the engine after the unblock in the same batch: after the others.
        b.defer(7, b"third");
        let mut w = BatchWriter::new();
        b.take_resubmit(&mut w);
        let got: Vec<Vec<u8>> = BatchReader::new(&w.buf).map(|r| r.payload.to_vec()).collect();
        assert_eq!(got, vec![b"first".to_vec(), b"second".to_vec(), b"third".to_vec()]);
        assert!(!b.is_blocked(7));
    }

    #[test]
    fn deadlines_fire_once_and_disconnects_leave_nothing() {
        let mut b = Blocking::new();
        b.park(1, &100i64.to_le_bytes());
        b.park(2, &50i64.to_le_bytes());
        b.park(3, &0i64.to_le_bytes());
        assert_eq!(b.next_deadline(), Some(50));
        let mut w = BatchWriter::new();
        b.fire_deadlines(60, &mut w);
        let ids: Vec<u64> = BatchReader::new(&w.buf).map(|r| r.client).collect();
        assert_eq!(ids, vec![2]);
        b.forget(1);
        b.forget(2);
        b.unpark(3);
        assert_eq!(b.next_deadline(), None);
        assert_eq!(b.blocked_count(), 0);
    }
}
