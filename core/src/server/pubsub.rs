//! Pub/Sub's state (Redis's pubsub.c, data side): who is subscribed to what, and the
//! delivery of messages, keyspace notifications included. The commands are
//! `commands::pubsub`.
//!
//! Subscriptions live in the engine, next to the per-client state. A message for another
//! connection cannot be written by the engine, so `publish` queues it in `PubSub::outbox`;
//! after each record the engine turns the outbox into `REC_PUSH` output records addressed
//! to the receiving clients (see `batch`), formatted in each receiver's protocol. The host
//! writes them with the same durability wait as the record that caused them, so a
//! keyspace notification never overtakes the write it reports. Messages for the client
//! running the command go in front of its reply, as Redis writes them into its output
//! buffer during the command.
//!
//! Pub/sub is node-local and fire-and-forget: nothing here is logged or replicated.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;

use crate::util::glob_match;

/// A client's subscriptions.
#[derive(Default)]
pub struct ClientSubs {
    pub channels: BTreeSet<Box<[u8]>>,
    /// In subscription order (a list in Redis, so PUNSUBSCRIBE without arguments answers
    /// in that order).
    pub patterns: Vec<Box<[u8]>>,
    pub shard: BTreeSet<Box<[u8]>>,
}

impl ClientSubs {
    /// Channel + pattern subscriptions: the count SUBSCRIBE/PSUBSCRIBE replies carry.
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }
    /// Redis's CLIENT_PUBSUB flag: set by any subscription, cleared with the last one.
    pub fn active(&self) -> bool {
        self.count() + self.shard.len() > 0
    }
}

/// One message body (the items after the array/push header).
struct Message {
    /// Elements of the message array; 0: `body` is a whole reply (a MONITOR line).
    items: u8,
    body: Vec<u8>,
}

/// Messages queued and not yet delivered (`PubSub::set_aside`).
pub struct Queued {
    outbox: Vec<(u64, u32)>,
    messages: Vec<Message>,
}

/// The shard's subscription registry and the messages produced but not yet handed out.
#[derive(Default)]
pub struct PubSub {
    pub channels: BTreeMap<Box<[u8]>, Vec<u64>>,
    pub patterns: BTreeMap<Box<[u8]>, Vec<u64>>,
    pub shard: BTreeMap<Box<[u8]>, Vec<u64>>,
    /// (receiving client, index into `messages`), in delivery order.
    outbox: Vec<(u64, u32)>,
    messages: Vec<Message>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Space {
    Channel,
    Pattern,
    Shard,
}

pub fn add_id(map: &mut BTreeMap<Box<[u8]>, Vec<u64>>, key: &[u8], id: u64) {
    match map.get_mut(key) {
        Some(ids) => ids.push(id),
        None => {
            map.insert(key.into(), alloc::vec![id]);
        }
    }
}

pub fn remove_id(map: &mut BTreeMap<Box<[u8]>, Vec<u64>>, key: &[u8], id: u64) {
    if let Some(ids) = map.get_mut(key) {
        ids.retain(|&x| x != id);
        if ids.is_empty() {
            map.remove(key);
        }
    }
}

fn bulk(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'$');
    crate::util::push_int(out, s.len() as i64);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(s);
    out.extend_from_slice(b"\r\n");
}

impl PubSub {
    /// True when nobody is subscribed to anything (publishing reaches no one).
    pub fn is_idle(&self) -> bool {
        self.channels.is_empty() && self.patterns.is_empty() && self.shard.is_empty()
    }

    pub fn has_pending(&self) -> bool {
        !self.outbox.is_empty()
    }

    /// Takes the queued messages out (a running script's, kept back while other clients
    /// are answered), to be put back with `put_back`.
    pub fn set_aside(&mut self) -> Queued {
        Queued { outbox: core::mem::take(&mut self.outbox), messages: core::mem::take(&mut self.messages) }
    }

    /// Queues `q` again, before anything queued since.
    pub fn put_back(&mut self, q: Queued) {
        let base = q.messages.len() as u32;
        let later = core::mem::replace(&mut self.outbox, q.outbox);
        self.outbox.extend(later.into_iter().map(|(id, m)| (id, m + base)));
        let later = core::mem::replace(&mut self.messages, q.messages);
        self.messages.extend(later);
    }

    fn queue(&mut self, ids: &[u64], items: u8, parts: &[&[u8]]) {
        let mut body = Vec::new();
        for p in parts {
            bulk(&mut body, p);
        }
        let idx = self.messages.len() as u32;
        self.messages.push(Message { items, body });
        self.outbox.extend(ids.iter().map(|&id| (id, idx)));
    }

    /// Queues a whole reply for `ids`, sent as it is whatever their protocol (MONITOR's
    /// lines are simple strings in RESP3 too).
    pub fn queue_raw(&mut self, ids: &[u64], body: Vec<u8>) {
        let idx = self.messages.len() as u32;
        self.messages.push(Message { items: 0, body });
        self.outbox.extend(ids.iter().map(|&id| (id, idx)));
    }

    /// Queues `message` for every subscriber of `channel` and of every pattern matching
    /// it; returns the number of deliveries (PUBLISH's reply).
    pub fn publish(&mut self, channel: &[u8], message: &[u8]) -> usize {
        let mut n = 0;
        if let Some(ids) = self.channels.get(channel) {
            let ids = ids.clone();
            n += ids.len();
            self.queue(&ids, 3, &[b"message", channel, message]);
        }
        let matching: Vec<(Box<[u8]>, Vec<u64>)> =
            self.patterns.iter().filter(|(p, _)| glob_match(p, channel, false)).map(|(p, ids)| (p.clone(), ids.clone())).collect();
        for (p, ids) in matching {
            n += ids.len();
            self.queue(&ids, 4, &[b"pmessage", &p, channel, message]);
        }
        n
    }

    /// SPUBLISH: shard channels have no patterns.
    pub fn spublish(&mut self, channel: &[u8], message: &[u8]) -> usize {
        let Some(ids) = self.shard.get(channel).cloned() else { return 0 };
        self.queue(&ids, 3, &[b"smessage", channel, message]);
        ids.len()
    }

    /// Forgets every subscription of a client (disconnect, RESET), without replies.
    pub fn drop_client(&mut self, id: u64, subs: &mut ClientSubs) {
        for c in core::mem::take(&mut subs.channels) {
            remove_id(&mut self.channels, &c, id);
        }
        for p in core::mem::take(&mut subs.patterns) {
            remove_id(&mut self.patterns, &p, id);
        }
        for c in core::mem::take(&mut subs.shard) {
            remove_id(&mut self.shard, &c, id);
        }
    }

    /// Formats the queued messages for client `me` (who runs the current command) into
    /// `mine` and leaves the others queued. `resp3` is `me`'s protocol.
    pub fn take_for(&mut self, me: u64, resp3: bool, mine: &mut Vec<u8>) {
        if !self.outbox.iter().any(|&(id, _)| id == me) {
            return;
        }
        let msgs = &self.messages;
        self.outbox.retain(|&(id, m)| {
            if id != me {
                return true;
            }
            let m = &msgs[m as usize];
            header(mine, resp3, m.items);
            mine.extend_from_slice(&m.body);
            false
        });
        if self.outbox.is_empty() {
            self.messages.clear();
        }
    }

    /// Writes every queued message as a `REC_PUSH` output record; `lookup` gives a
    /// receiver's protocol (None: gone, dropped). Messages go out whatever the receiver's
    /// CLIENT REPLY mode, as Redis sends them.
    pub fn flush(&mut self, out: &mut Vec<u8>, mut lookup: impl FnMut(u64) -> Option<bool>) {
        let mut data = Vec::new();
        for &(id, m) in &self.outbox {
            let Some(resp3) = lookup(id) else { continue };
            let m = &self.messages[m as usize];
            data.clear();
            header(&mut data, resp3, m.items);
            data.extend_from_slice(&m.body);
            crate::protocol::batch::write_out(out, crate::protocol::batch::REC_PUSH, id, 0, &data, b"");
        }
        self.outbox.clear();
        self.messages.clear();
    }
}

fn header(out: &mut Vec<u8>, resp3: bool, items: u8) {
    if items == 0 {
        return;
    }
    out.push(if resp3 { b'>' } else { b'*' });
    crate::util::push_int(out, items as i64);
    out.extend_from_slice(b"\r\n");
}

// ---- commands ----

/// The error Redis gives a RESP2 subscriber for any other command.
pub fn subscribed_context_error(fullname: &str) -> alloc::string::String {
    alloc::format!("ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", fullname)
}
