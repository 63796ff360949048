//! The durability gate: the rule at the heart of Memoria. A reply leaves only once every
//! write it depends on is in the log: a write's reply waits for its own entry, a read's for
//! the newest pending write of every key it reads (the tracker), and each client's replies
//! leave in order.
//!
//! Pure: no I/O and no clock but the batch's arrival time (for latency statistics). The
//! shard feeds it the engine's output (`route`), hands its queued effects to the log
//! (`take_append`), and tells it which appends the log acknowledged (`ack`) or that the
//! log refused one (`fail_all`); `take_out` yields what may be sent. `sim.rs` drives it
//! against a fake log.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use memoria_core::protocol::batch::{EffectReader, WaitRequest};
use memoria_core::protocol::resp;
use memoria_core::server::spec::CommandIndex;

use super::ReplyMsg;
use super::stats::Latency;
use super::tracker::Tracker;

/// Joined effects per log entry, at most (a batch's own effects may be more, alone): a
/// quarter of the log's payload limit.
const ENTRY_BYTES: usize = memoria_log::codec::MAX_PAYLOAD / 4;

/// Per connection id (ids are ours, not client data: a fast hasher is safe).
pub(super) type ClientMap<V> = HashMap<u64, V, foldhash::fast::RandomState>;

/// Replies (or pub/sub messages: `answered` 0) waiting for the log to acknowledge
/// sequence `need`: consecutive ones of a batch share one buffer.
struct Held {
    need: u64,
    data: Vec<u8>,
    close: bool,
    /// A WAIT: once `need` is durable, it waits for replicas before its reply (and every
    /// later reply of the client) goes out.
    wait: Option<HeldWait>,
    answered: usize,
    /// When its batch reached the shard (latency statistics).
    since: Instant,
}

/// What a held reply waits for once its client's writes are durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Awaited {
    /// WAIT: replicas that have applied them.
    Replicas(WaitRequest),
    /// SAVE: a snapshot that has them, published.
    Snapshot,
}

struct HeldWait {
    what: Awaited,
    /// Distinguishes this WAIT's answer from a stale one.
    token: u64,
    started: bool,
}

/// A WAIT or SAVE whose client's writes are durable: count the replicas that have them
/// (or take the snapshot), then answer with `Gate::wait_done(client, token, reply)`.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct WaitStart {
    pub client: u64,
    pub token: u64,
    pub what: Awaited,
}

pub(super) struct Gate {
    pub(super) tracker: Tracker,
    index: CommandIndex,
    /// Per client, replies held behind the log, in order.
    held: ClientMap<VecDeque<Held>>,
    /// Effects of batches not yet sent to the log: (tracker sequence, effects).
    queued: Vec<(u64, Vec<u8>)>,
    /// Replies ready to send this round, coalesced per client.
    out: Vec<(u64, ReplyMsg)>,
    /// Where each client's message is in `out`.
    out_at: ClientMap<usize>,
    /// Clients subscribed to something (`batch::OUT_PUBSUB`).
    pub(super) pubsub_clients: HashSet<u64, foldhash::fast::RandomState>,
    /// Clients that must still authenticate (`batch::OUT_AUTH_REQUIRED`).
    pub(super) auth_clients: HashSet<u64, foldhash::fast::RandomState>,
    /// Reply latency per one-second window (INFO replication `memoria_latency_*`).
    pub(super) stats: Latency,
    /// Held replies released since start (the shard's cohort reads the difference an ack
    /// makes, without counting what is still held).
    pub(super) released: u64,
    /// When the batch being routed reached the shard.
    pub(super) batch_t0: Instant,
    /// WAITs held (their tokens).
    wait_seq: u64,
    /// Reused parse buffer.
    pub(super) args: Vec<(usize, usize)>,
}

impl Gate {
    pub(super) fn new(index: CommandIndex, now: Instant) -> Gate {
        Gate {
            tracker: Tracker::new(),
            index,
            held: ClientMap::default(),
            queued: Vec::new(),
            out: Vec::new(),
            out_at: ClientMap::default(),
            pubsub_clients: HashSet::default(),
            auth_clients: HashSet::default(),
            stats: Latency::new(now),
            released: 0,
            batch_t0: now,
            wait_seq: 0,
            args: Vec::new(),
        }
    }

    /// The sequence a command's reply must wait for, from the keys it reads.
    pub(super) fn need_of(&mut self, cmd: &[u8]) -> u64 {
        if self.tracker.is_clear() {
            // Nothing pending (every read of a read-only load): no need to look.
            return 0;
        }
        let args = &mut self.args;
        args.clear();
        if resp::read_command(cmd, args).is_none() || args.is_empty() {
            return 0;
        }
        let argv: Vec<&[u8]> = args.iter().map(|&(a, b)| &cmd[a..b]).collect();
        let Some(spec) = self.index.resolve(&argv) else { return 0 };
        // Whole-keyspace reads, and EXEC (whose queued reads the host does not see), wait
        // for every pending write.
        if spec.reads_keyspace(&argv) {
            return self.tracker.need_all();
        }
        let mut idx = Vec::new();
        spec.key_indexes_argv(&argv, &mut idx);
        self.tracker.need_for(idx.iter().map(|&i| argv[i]))
    }

    /// Starts the sequence of this batch's effects (once per batch that wrote).
    pub(super) fn next_seq(&mut self) -> u64 {
        self.tracker.next_seq()
    }

    /// Records the keys each effect writes (databases are not told apart: a false share
    /// only makes a read wait a little, never return early).
    pub(super) fn track_effects(&mut self, seq: u64, effects: &[u8]) {
        let mut reader = EffectReader::new(effects);
        let mut argv: Vec<&[u8]> = Vec::new();
        let mut idx = Vec::new();
        let args = &mut self.args;
        while let Some(fx) = reader.next_with_args(args) {
            argv.clear();
            argv.extend(args.iter().map(|&(a, b)| &fx.command[a..b]));
            let Some(spec) = self.index.resolve(&argv) else {
                // Cannot happen (the engine wrote it); if it did, hold every read.
                self.tracker.record_everything(seq);
                continue;
            };
            idx.clear();
            spec.key_indexes_argv(&argv, &mut idx);
            if writes_everything(idx.len()) {
                self.tracker.record_everything(seq);
            }
            for &i in &idx {
                self.tracker.record(seq, argv[i]);
            }
        }
    }

    /// Queues a batch's effects for the next append.
    pub(super) fn queue(&mut self, seq: u64, effects: Vec<u8>) {
        self.queued.push((seq, effects));
    }

    pub(super) fn has_queued(&self) -> bool {
        !self.queued.is_empty()
    }

    /// Everything queued, as one append: the last sequence it makes durable, and the
    /// batches' effects in order, joined into entries.
    pub(super) fn take_append(&mut self) -> Option<(u64, Vec<Vec<u8>>)> {
        let last = self.queued.last()?.0;
        // Effects are self-delimiting records, so batches' effects joined are one valid
        // entry: one row, one checksum and one replica apply per append instead of one
        // per batch, while an entry stays well under the log's payload limit.
        let mut entries: Vec<Vec<u8>> = Vec::new();
        for (_, fx) in self.queued.drain(..) {
            match entries.last_mut() {
                Some(cur) if cur.len() + fx.len() <= ENTRY_BYTES => cur.extend_from_slice(&fx),
                _ => entries.push(fx),
            }
        }
        Some((last, entries))
    }

    /// Forgets queued effects (no log to send them to).
    pub(super) fn drop_queued(&mut self) {
        self.queued.clear();
    }

    pub(super) fn deliver(&mut self, client: u64, need: u64, reply: &[u8], close: bool) {
        self.deliver_n(client, need, reply, close, 1);
    }

    /// Queues `reply` (answering `answered` commands) for `client` once `need` is durable,
    /// behind anything of the client's still held.
    pub(super) fn deliver_n(&mut self, client: u64, need: u64, reply: &[u8], close: bool, answered: usize) {
        let queue_empty = self.held.get(&client).is_none_or(|q| q.is_empty());
        if need <= self.tracker.acked() && queue_empty {
            self.stats.immediate += answered;
            self.push_out(client, reply, close, answered);
        } else {
            let q = self.held.entry(client).or_default();
            // Replies of one batch that wait for the same entry go out together: one
            // buffer for a client's whole pipeline, not one per reply.
            match q.back_mut() {
                Some(last) if last.need == need && last.since == self.batch_t0 && last.wait.is_none() && !last.close => {
                    last.data.extend_from_slice(reply);
                    last.close = close;
                    last.answered += answered;
                }
                _ => q.push_back(Held { need, data: reply.to_vec(), close, wait: None, answered, since: self.batch_t0 }),
            }
        }
    }

    /// A WAIT (or SAVE): its reply waits for every write pending now (the caller's
    /// included), then for `what`; the client's later replies stay behind it.
    pub(super) fn hold_wait(&mut self, client: u64, what: Awaited, close: bool) -> Vec<WaitStart> {
        self.wait_seq += 1;
        let wait = HeldWait { what, token: self.wait_seq, started: false };
        let need = self.tracker.need_all();
        self.held.entry(client).or_default().push_back(Held { need, data: Vec::new(), close, wait: Some(wait), answered: 1, since: self.batch_t0 });
        self.release()
    }

    /// WAIT (or SAVE) `token` of `client` is answered with `reply`: it, and what waited
    /// behind it, may go out. A stale token (the client is gone) is ignored.
    pub(super) fn wait_done(&mut self, client: u64, token: u64, reply: &[u8]) -> Vec<WaitStart> {
        if let Some(h) = self.held.get_mut(&client).and_then(|q| q.front_mut())
            && h.wait.as_ref().is_some_and(|w| w.token == token)
        {
            h.wait = None;
            h.data = reply.to_vec();
            return self.release();
        }
        Vec::new()
    }

    /// The log acknowledged every sequence up to `seq`.
    pub(super) fn ack(&mut self, seq: u64) -> Vec<WaitStart> {
        self.tracker.ack(seq);
        self.release()
    }

    /// Moves held replies whose writes are now durable to the outgoing queue, in each
    /// client's order; returns the WAITs that may now count replicas.
    pub(super) fn release(&mut self) -> Vec<WaitStart> {
        let acked = self.tracker.acked();
        let now = Instant::now();
        let mut starts = Vec::new();
        // Taken out so each queue can hand its replies to `push_out_owned` in place.
        let mut held = std::mem::take(&mut self.held);
        held.retain(|&id, q| {
            while let Some(h) = q.front_mut()
                && h.need <= acked
            {
                if let Some(w) = h.wait.as_mut() {
                    // The client's writes are durable: now count the replicas that have
                    // them. Its later replies stay behind the WAIT's.
                    if !w.started {
                        w.started = true;
                        starts.push(WaitStart { client: id, token: w.token, what: w.what });
                    }
                    break;
                }
                let h = q.pop_front().expect("checked");
                self.released += 1;
                self.stats.record(now.saturating_duration_since(h.since), h.answered);
                self.push_out_owned(id, h.data, h.close, h.answered);
            }
            !q.is_empty()
        });
        self.held = held;
        starts
    }

    /// Abandons everything not yet durable: every held reply of a client becomes `msg`,
    /// every client in `clients` is closed, and the tracker and queued effects are
    /// forgotten. Held pub/sub messages are dropped.
    pub(super) fn fail_all(&mut self, msg: &[u8], clients: impl Iterator<Item = u64>) {
        self.tracker.reset();
        self.queued.clear();
        let held: Vec<(u64, VecDeque<Held>)> = self.held.drain().collect();
        for (id, q) in held {
            let n: usize = q.iter().map(|h| h.answered).sum();
            let mut data = Vec::with_capacity(n * msg.len());
            for _ in 0..n {
                data.extend_from_slice(msg);
            }
            self.push_out_owned(id, data, true, n);
        }
        for id in clients {
            self.push_out_owned(id, Vec::new(), true, 0);
        }
    }

    /// A new primary's gate: nothing is pending.
    pub(super) fn reset(&mut self) {
        self.tracker.reset();
        self.queued.clear();
    }

    /// Replies (and messages) held behind the log now.
    pub(super) fn held_replies(&self) -> usize {
        self.held.values().map(|q| q.len()).sum()
    }

    /// A client that is gone: its held replies go nowhere.
    pub(super) fn forget(&mut self, client: u64) {
        self.held.remove(&client);
        self.pubsub_clients.remove(&client);
        self.auth_clients.remove(&client);
    }

    fn push_out(&mut self, client: u64, data: &[u8], close: bool, answered: usize) {
        match self.out_at.get(&client) {
            Some(&at) => self.out[at].1.extend(data, close, answered),
            None => self.push_out_owned(client, data.to_vec(), close, answered),
        }
    }

    /// Like `push_out`, taking the buffer (moved, not copied, when it is the client's
    /// first message this round).
    fn push_out_owned(&mut self, client: u64, data: Vec<u8>, close: bool, answered: usize) {
        match self.out_at.get(&client) {
            Some(&at) => self.out[at].1.extend(&data, close, answered),
            None => {
                self.out_at.insert(client, self.out.len());
                self.out.push((client, ReplyMsg { data, close, answered, pubsub: false, auth_required: false }));
            }
        }
    }

    /// What may be sent now, one message per client.
    pub(super) fn take_out(&mut self) -> impl Iterator<Item = (u64, ReplyMsg)> + '_ {
        self.out_at.clear();
        let (pubsub, auth) = (&self.pubsub_clients, &self.auth_clients);
        self.out.drain(..).map(move |(id, mut m)| {
            m.pubsub = !pubsub.is_empty() && pubsub.contains(&id);
            m.auth_required = !auth.is_empty() && auth.contains(&id);
            (id, m)
        })
    }
}

/// An effect that names no key changes what any read could see (FLUSHALL, FLUSHDB; also
/// ACL SETUSER, MIGRATION IMPORT, whose keys are inside its records): until it is durable,
/// every read waits for it. Only the keys it names count otherwise: SORT … STORE has the
/// KEYSPACE flag for what it reads, but writes only its destination.
fn writes_everything(keys: usize) -> bool {
    keys == 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn flushes_and_keyless_writes_hold_every_read() {
        let index = memoria_core::commands::table::index();
        let scope = |argv: &[&[u8]]| {
            let spec = index.resolve(argv).expect("a known command");
            let mut idx = Vec::new();
            spec.key_indexes_argv(argv, &mut idx);
            super::writes_everything(idx.len())
        };
        assert!(scope(&[b"FLUSHALL"]));
        assert!(scope(&[b"FLUSHDB"]));
        assert!(!scope(&[b"SET", b"k", b"v"]));
        assert!(!scope(&[b"DEL", b"a", b"b"]));
        assert!(!scope(&[b"LMOVE", b"a", b"b", b"LEFT", b"RIGHT"]));
        assert!(!scope(&[b"SORT", b"a", b"BY", b"w_*", b"STORE", b"b"]), "SORT reads the keyspace but writes only b");
    }
}
