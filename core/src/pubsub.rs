//! Pub/Sub (Redis's pubsub.c): SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE SSUBSCRIBE
//! SUNSUBSCRIBE PUBLISH SPUBLISH PUBSUB, and the delivery of keyspace notifications.
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

use crate::ctx::Ctx;
use crate::protocol::reply::Reply;
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
    items: u8,
    body: Vec<u8>,
}

/// The shard's subscription registry and the messages produced but not yet handed out.
#[derive(Default)]
pub struct PubSub {
    channels: BTreeMap<Box<[u8]>, Vec<u64>>,
    patterns: BTreeMap<Box<[u8]>, Vec<u64>>,
    shard: BTreeMap<Box<[u8]>, Vec<u64>>,
    /// (receiving client, index into `messages`), in delivery order.
    outbox: Vec<(u64, u32)>,
    messages: Vec<Message>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Space {
    Channel,
    Pattern,
    Shard,
}

fn add_id(map: &mut BTreeMap<Box<[u8]>, Vec<u64>>, key: &[u8], id: u64) {
    match map.get_mut(key) {
        Some(ids) => ids.push(id),
        None => {
            map.insert(key.into(), alloc::vec![id]);
        }
    }
}

fn remove_id(map: &mut BTreeMap<Box<[u8]>, Vec<u64>>, key: &[u8], id: u64) {
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

    fn queue(&mut self, ids: &[u64], items: u8, parts: &[&[u8]]) {
        let mut body = Vec::new();
        for p in parts {
            bulk(&mut body, p);
        }
        let idx = self.messages.len() as u32;
        self.messages.push(Message { items, body });
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
    /// `mine` and leaves the others queued. `resp3`/`muted` describe `me`.
    pub fn take_for(&mut self, me: u64, resp3: bool, muted: bool, mine: &mut Vec<u8>) {
        if !self.outbox.iter().any(|&(id, _)| id == me) {
            return;
        }
        let msgs = &self.messages;
        self.outbox.retain(|&(id, m)| {
            if id != me {
                return true;
            }
            if !muted {
                let m = &msgs[m as usize];
                header(mine, resp3, m.items);
                mine.extend_from_slice(&m.body);
            }
            false
        });
        if self.outbox.is_empty() {
            self.messages.clear();
        }
    }

    /// Writes every queued message as a `REC_PUSH` output record; `lookup` gives a
    /// receiver's protocol and whether its replies are off (None: gone, dropped).
    pub fn flush(&mut self, out: &mut Vec<u8>, mut lookup: impl FnMut(u64) -> Option<(bool, bool)>) {
        let mut data = Vec::new();
        for &(id, m) in &self.outbox {
            let Some((resp3, muted)) = lookup(id) else { continue };
            if muted {
                continue;
            }
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
    out.push(if resp3 { b'>' } else { b'*' });
    crate::util::push_int(out, items as i64);
    out.extend_from_slice(b"\r\n");
}

// ---- commands ----

fn confirm(r: &mut Reply, kind: &[u8], name: Option<&[u8]>, count: usize) {
    r.push(3);
    r.bulk(kind);
    match name {
        Some(n) => r.bulk(n),
        None => r.null(),
    }
    r.int(count as i64);
}

fn count_of(ctx: &Ctx<'_>, space: Space) -> usize {
    match space {
        Space::Shard => ctx.client.subs.shard.len(),
        _ => ctx.client.subs.count(),
    }
}

fn subscribe_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], space: Space) {
    let id = ctx.client.id;
    for name in &argv[1..] {
        let subs = &mut ctx.client.subs;
        let added = match space {
            Space::Channel => subs.channels.insert((*name).into()),
            Space::Shard => subs.shard.insert((*name).into()),
            Space::Pattern => {
                let new = !subs.patterns.iter().any(|p| &**p == *name);
                if new {
                    subs.patterns.push((*name).into());
                }
                new
            }
        };
        if added {
            let ps = &mut ctx.st.pubsub;
            let map = match space {
                Space::Channel => &mut ps.channels,
                Space::Pattern => &mut ps.patterns,
                Space::Shard => &mut ps.shard,
            };
            add_id(map, name, id);
        }
        let kind: &[u8] = match space {
            Space::Channel => b"subscribe",
            Space::Pattern => b"psubscribe",
            Space::Shard => b"ssubscribe",
        };
        let n = count_of(ctx, space);
        confirm(ctx.reply, kind, Some(name), n);
    }
}

fn unsubscribe_one(ctx: &mut Ctx<'_>, name: &[u8], space: Space) {
    let id = ctx.client.id;
    let subs = &mut ctx.client.subs;
    let removed = match space {
        Space::Channel => subs.channels.remove(name),
        Space::Shard => subs.shard.remove(name),
        Space::Pattern => match subs.patterns.iter().position(|p| &**p == name) {
            Some(i) => {
                subs.patterns.remove(i);
                true
            }
            None => false,
        },
    };
    if removed {
        let ps = &mut ctx.st.pubsub;
        let map = match space {
            Space::Channel => &mut ps.channels,
            Space::Pattern => &mut ps.patterns,
            Space::Shard => &mut ps.shard,
        };
        remove_id(map, name, id);
    }
    let kind: &[u8] = match space {
        Space::Channel => b"unsubscribe",
        Space::Pattern => b"punsubscribe",
        Space::Shard => b"sunsubscribe",
    };
    let n = count_of(ctx, space);
    confirm(ctx.reply, kind, Some(name), n);
}

fn unsubscribe_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], space: Space) {
    if argv.len() == 1 {
        let all: Vec<Box<[u8]>> = match space {
            Space::Channel => ctx.client.subs.channels.iter().cloned().collect(),
            Space::Pattern => ctx.client.subs.patterns.clone(),
            Space::Shard => ctx.client.subs.shard.iter().cloned().collect(),
        };
        if all.is_empty() {
            // Subscribed to nothing: Redis still confirms, with a null name.
            let kind: &[u8] = match space {
                Space::Channel => b"unsubscribe",
                Space::Pattern => b"punsubscribe",
                Space::Shard => b"sunsubscribe",
            };
            let n = count_of(ctx, space);
            confirm(ctx.reply, kind, None, n);
        }
        for name in all {
            unsubscribe_one(ctx, &name, space);
        }
    } else {
        for name in &argv[1..] {
            unsubscribe_one(ctx, name, space);
        }
    }
}

pub fn subscribe(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    subscribe_generic(ctx, argv, Space::Channel)
}
pub fn psubscribe(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    subscribe_generic(ctx, argv, Space::Pattern)
}
pub fn ssubscribe(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    // Redis refuses SSUBSCRIBE from a client that must get one reply per command, which
    // includes commands run by EXEC (SUBSCRIBE has a backward-compatibility exception).
    if ctx.in_exec {
        return ctx.err("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client");
    }
    subscribe_generic(ctx, argv, Space::Shard)
}
pub fn unsubscribe(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    unsubscribe_generic(ctx, argv, Space::Channel)
}
pub fn punsubscribe(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    unsubscribe_generic(ctx, argv, Space::Pattern)
}
pub fn sunsubscribe(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    unsubscribe_generic(ctx, argv, Space::Shard)
}

pub fn publish(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let n = ctx.st.pubsub.publish(argv[1], argv[2]);
    ctx.reply.int(n as i64);
}

pub fn spublish(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let n = ctx.st.pubsub.spublish(argv[1], argv[2]);
    ctx.reply.int(n as i64);
}

/// The commands a RESP2 client may run while subscribed (Redis's processCommand check).
pub fn allowed_while_subscribed(name: &str) -> bool {
    matches!(name, "ping" | "subscribe" | "ssubscribe" | "unsubscribe" | "sunsubscribe" | "psubscribe" | "punsubscribe" | "quit" | "reset")
}

/// The error Redis gives a RESP2 subscriber for any other command.
pub fn subscribed_context_error(fullname: &str) -> alloc::string::String {
    alloc::format!("ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", fullname)
}

fn syntax_error_sub(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let sub = alloc::string::String::from_utf8_lossy(&argv[1][..argv[1].len().min(128)]).into_owned();
    let cmd = alloc::string::String::from_utf8_lossy(argv[0]).to_ascii_uppercase();
    ctx.err(&alloc::format!("ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.", sub, cmd));
}

fn list_channels(ctx: &mut Ctx<'_>, argv: &[&[u8]], shard: bool) {
    if argv.len() > 3 {
        return syntax_error_sub(ctx, argv);
    }
    let pat = argv.get(2).copied();
    let map = if shard { &ctx.st.pubsub.shard } else { &ctx.st.pubsub.channels };
    let found: Vec<&[u8]> = map.keys().map(|k| &**k).filter(|c| pat.is_none_or(|p| glob_match(p, c, false))).collect();
    ctx.reply.array(found.len());
    for c in found {
        ctx.reply.bulk(c);
    }
}

fn numsub(ctx: &mut Ctx<'_>, argv: &[&[u8]], shard: bool) {
    let map = if shard { &ctx.st.pubsub.shard } else { &ctx.st.pubsub.channels };
    let counts: Vec<usize> = argv[2..].iter().map(|c| map.get(*c).map_or(0, |v| v.len())).collect();
    ctx.reply.array(counts.len() * 2);
    for (c, n) in argv[2..].iter().zip(counts) {
        ctx.reply.bulk(c);
        ctx.reply.int(n as i64);
    }
}

pub fn pubsub_channels(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    list_channels(ctx, argv, false)
}
pub fn pubsub_shardchannels(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    list_channels(ctx, argv, true)
}
pub fn pubsub_numsub(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    numsub(ctx, argv, false)
}
pub fn pubsub_shardnumsub(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    numsub(ctx, argv, true)
}
pub fn pubsub_numpat(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    // Distinct patterns, not subscriptions (dictSize(server.pubsub_patterns)).
    ctx.reply.int(ctx.st.pubsub.patterns.len() as i64);
}

pub fn pubsub_help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Prints this help.",
    ]);
}
