//! Client-side caching, the server's half (Redis's tracking.c): which clients cached which
//! keys, and the invalidation messages a change to a key owes them.
//!
//! Default mode remembers the keys a tracking client reads (`remember`), by name in any
//! database, as Redis does; a change to one (`State::signal_modified_key`) invalidates it
//! once for every client that read it, and forgets it. BCAST mode remembers nothing: a
//! change to a key under one of a client's prefixes is announced to it, the keys of one
//! command in one message. FLUSHDB and FLUSHALL announce a null to every tracking client.
//!
//! Nothing here can see other connections, so an invalidation is an `Event` addressed to
//! the tracking client; the engine turns events into pushes after each record
//! (`Engine::deliver_tracking`), resolving the redirection and the receiver's protocol
//! then. The host releases them with the durability wait of the record that caused them
//! (as pub/sub messages): a client never drops a cached value for a write that could
//! still be lost, and the push reaches it before any reply that shows the new value.
//! Invalidations owed to the client running the command follow its reply, as in 7.0.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::protocol::reply::Reply;
use crate::types::dict::Dict;
use crate::util::Rng;

/// Random keys a read may invalidate beyond one per key it added, to bring the table
/// back under a lowered `tracking-table-max-keys`.
const EVICT_EFFORT: usize = 100;

/// A key's reader list this long is cleared of clients no longer tracking.
const STALE_CHECK_LEN: usize = 16;

/// A tracking client's mode (CLIENT TRACKING ON's options).
#[derive(Default, Clone)]
pub struct Mode {
    /// REDIRECT: the client that receives the invalidations (0: this one).
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    /// CLIENT CACHING YES (OPTIN) or NO (OPTOUT) was given for the next command.
    pub caching: bool,
    /// The redirection's client went away (CLIENT LIST flag R).
    pub broken_redirect: bool,
    /// BCAST prefixes, in order.
    pub prefixes: Vec<Box<[u8]>>,
}

/// CLIENT TRACKING ON's options, as parsed.
pub struct Options {
    pub redirect: u64,
    pub bcast: bool,
    pub optin: bool,
    pub optout: bool,
    pub noloop: bool,
    pub prefixes: Vec<Box<[u8]>>,
}

/// What a tracking client is told.
pub enum Invalidation {
    Key(Box<[u8]>),
    /// BCAST: the keys under one prefix changed by one command, in order.
    Keys(Vec<Box<[u8]>>),
    /// The databases were flushed: drop everything.
    Flush,
}

pub struct Event {
    /// The tracking client (its redirection is resolved on delivery).
    pub client: u64,
    pub what: Invalidation,
    /// Sent after the reply of the command running (else at once, before it).
    pub after_reply: bool,
}

/// Invalidations held back (`Tracking::set_aside`).
pub struct Held {
    events: Vec<Event>,
    changed: Vec<(Box<[u8]>, Changed)>,
}

/// Keys changed under a prefix since its last broadcast, each with the client that
/// changed it last (for NOLOOP).
type Changed = BTreeMap<Box<[u8]>, u64>;

/// A BCAST prefix: its clients and the keys under it changed since the last broadcast.
#[derive(Default)]
struct Prefix {
    clients: Vec<u64>,
    changed: Changed,
}

pub struct Tracking {
    /// Clients with tracking on.
    pub clients: BTreeMap<u64, Mode>,
    /// Default mode: key → clients that read it since its last invalidation.
    keys: Dict<Vec<u64>>,
    /// (key, client) pairs in `keys` (INFO's tracking_total_items).
    items: usize,
    prefixes: BTreeMap<Box<[u8]>, Prefix>,
    /// Invalidations not yet delivered.
    pub events: Vec<Event>,
    /// The client whose command runs (0: none, as in the expiry cycle).
    pub current: u64,
    /// The keys declared to the script running (EVAL's KEYS): what a tracking client's
    /// script reads is remembered as these, as Redis 7.0 remembers the caller's keys.
    pub script_keys: Vec<Box<[u8]>>,
    /// A BCAST prefix noted a change not yet broadcast (saves walking the prefixes).
    bcast_pending: bool,
}

impl Tracking {
    pub fn new(seed: u64) -> Tracking {
        Tracking {
            clients: BTreeMap::new(),
            keys: Dict::new(seed),
            items: 0,
            prefixes: BTreeMap::new(),
            events: Vec::new(),
            current: 0,
            script_keys: Vec::new(),
            bcast_pending: false,
        }
    }

    /// Nothing to track and nothing to say: the fast path of every write.
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.keys.is_empty() && self.prefixes.is_empty() && self.clients.is_empty()
    }

    pub fn has_events(&self) -> bool {
        !self.events.is_empty() || self.bcast_pending
    }

    /// INFO's tracking_total_keys, tracking_total_items, tracking_total_prefixes.
    pub fn totals(&self) -> (usize, usize, usize) {
        (self.keys.len(), self.items, self.prefixes.len())
    }

    /// The first prefix of `new` that overlaps (one is a prefix of the other) with one the
    /// client has or with a later one of `new`: Redis refuses overlapping prefixes.
    pub fn prefix_collision(&self, id: u64, new: &[Box<[u8]>]) -> Option<alloc::string::String> {
        let overlap = |a: &[u8], b: &[u8]| a[..a.len().min(b.len())] == b[..a.len().min(b.len())];
        let show = |s: &[u8]| alloc::string::String::from_utf8_lossy(s).into_owned();
        let have: &[Box<[u8]>] = self.clients.get(&id).map_or(&[], |m| &m.prefixes);
        for (i, p) in new.iter().enumerate() {
            if let Some(old) = have.iter().find(|o| overlap(o, p)) {
                return Some(alloc::format!(
                    "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                    show(p),
                    show(old)
                ));
            }
            if let Some(q) = new[i + 1..].iter().find(|q| overlap(p, q)) {
                return Some(alloc::format!(
                    "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                    show(p),
                    show(q)
                ));
            }
        }
        None
    }

    /// CLIENT TRACKING ON (Redis's enableTracking): options replace the old ones, BCAST
    /// prefixes add to those the client has.
    pub fn enable(&mut self, id: u64, opts: Options) {
        let mode = self.clients.entry(id).or_default();
        mode.redirect = opts.redirect;
        mode.broken_redirect = false;
        mode.bcast = opts.bcast;
        mode.optin = opts.optin;
        mode.optout = opts.optout;
        mode.noloop = opts.noloop;
        if !opts.bcast {
            return;
        }
        let mut added = opts.prefixes;
        if added.is_empty() {
            added.push(Box::from(&b""[..]));
        }
        for p in added {
            if let Err(at) = mode.prefixes.binary_search(&p) {
                mode.prefixes.insert(at, p.clone());
                let prefix = self.prefixes.entry(p).or_default();
                if !prefix.clients.contains(&id) {
                    prefix.clients.push(id);
                }
            }
        }
    }

    /// CLIENT TRACKING OFF, RESET or a disconnect (Redis's disableTracking). The keys it
    /// read stay in the table until they change (then it is skipped), as in Redis.
    pub fn disable(&mut self, id: u64) {
        let Some(mode) = self.clients.remove(&id) else { return };
        for p in mode.prefixes {
            if let Some(prefix) = self.prefixes.get_mut(&p) {
                prefix.clients.retain(|&c| c != id);
                if prefix.clients.is_empty() {
                    self.prefixes.remove(&p);
                }
            }
        }
    }

    /// After a command of client `id` that reads `keys`: in default mode they are
    /// remembered, unless OPTIN without CACHING YES or OPTOUT with CACHING NO. Beyond
    /// `max_keys` (tracking-table-max-keys, 0: no limit) random keys are invalidated, at
    /// most `EVICT_EFFORT` more than the command added (a lowered limit is reached over
    /// several reads, as Redis spreads it over its event loop), so a command's cost stays
    /// bounded by its keys.
    pub fn remember<'k>(&mut self, id: u64, keys: impl Iterator<Item = &'k [u8]>, max_keys: u64, rng: &mut Rng) {
        let Some(mode) = self.clients.get(&id) else { return };
        if mode.bcast || (mode.optin && !mode.caching) || (mode.optout && mode.caching) {
            return;
        }
        let mut effort = EVICT_EFFORT;
        for key in keys {
            effort += 1;
            match self.keys.get_mut(key) {
                Some(ids) if ids.contains(&id) => continue,
                Some(ids) => {
                    // Clients gone since they read it stay listed (as in Redis) until the
                    // list grows: then they go, so it stays as long as its live readers.
                    if ids.len() >= STALE_CHECK_LEN {
                        let before = ids.len();
                        ids.retain(|c| self.clients.contains_key(c));
                        self.items -= before - ids.len();
                    }
                    ids.push(id)
                }
                None => {
                    self.keys.insert(key, alloc::vec![id]);
                }
            }
            self.items += 1;
        }
        while max_keys != 0 && self.keys.len() as u64 > max_keys && effort > 0 {
            effort -= 1;
            let Some(victim) = self.keys.random(rng).map(|(k, _)| Box::<[u8]>::from(k)) else { break };
            self.invalidate(&victim, false);
        }
    }

    /// `remember` for a command a script of client `id` ran: the keys declared to the
    /// script stand for what it read (`script_keys`).
    pub fn remember_script_keys(&mut self, id: u64, max_keys: u64, rng: &mut Rng) {
        let keys = core::mem::take(&mut self.script_keys);
        self.remember(id, keys.iter().map(|k| &k[..]), max_keys, rng);
        self.script_keys = keys;
    }

    /// Clears CLIENT CACHING's one-command effect (Redis's resetClient, after any command
    /// but CLIENT outside a transaction).
    pub fn command_done(&mut self, id: u64) {
        if let Some(m) = self.clients.get_mut(&id) {
            m.caching = false;
        }
    }

    /// `key` changed (Redis's trackingInvalidateKey): every client that read it is owed an
    /// invalidation, and with `bcast` the BCAST prefixes over it note it.
    pub fn invalidate(&mut self, key: &[u8], bcast: bool) {
        if bcast && !self.prefixes.is_empty() {
            for (p, prefix) in self.prefixes.iter_mut() {
                if key.starts_with(p) {
                    prefix.changed.insert(Box::from(key), self.current);
                    self.bcast_pending = true;
                }
            }
        }
        let Some((key, ids)) = self.keys.remove(key) else { return };
        self.items -= ids.len();
        for id in ids {
            let Some(mode) = self.clients.get(&id) else { continue };
            if mode.bcast || (mode.noloop && id == self.current) {
                continue;
            }
            self.events.push(Event { client: id, what: Invalidation::Key(key.clone()), after_reply: id == self.current });
        }
    }

    /// FLUSHDB/FLUSHALL (Redis's trackingInvalidateKeysOnFlush): a null to every tracking
    /// client, and the key table starts over.
    pub fn flush(&mut self) {
        for &id in self.clients.keys() {
            self.events.push(Event { client: id, what: Invalidation::Flush, after_reply: id == self.current });
        }
        self.keys.clear();
        self.items = 0;
    }

    /// Takes out what a running script is owed so far (kept back while other clients are
    /// answered during it), to be put back with `put_back`.
    pub fn set_aside(&mut self) -> Held {
        self.bcast_pending = false;
        let changed = self.prefixes.iter_mut().map(|(p, prefix)| (p.clone(), core::mem::take(&mut prefix.changed))).collect();
        Held { events: core::mem::take(&mut self.events), changed }
    }

    /// Owes `held` again, before anything owed since.
    pub fn put_back(&mut self, held: Held) {
        let later = core::mem::replace(&mut self.events, held.events);
        self.events.extend(later);
        for (p, mut changed) in held.changed {
            if let Some(prefix) = self.prefixes.get_mut(&p) {
                changed.append(&mut prefix.changed);
                prefix.changed = changed;
            }
        }
        self.bcast_pending = self.prefixes.values().any(|p| !p.changed.is_empty());
    }

    /// Turns the keys the BCAST prefixes noted into one event per (prefix, client), each
    /// client's without the keys it changed itself if NOLOOP (Redis sends these before
    /// it sleeps: after the reply).
    pub fn broadcast(&mut self) {
        if !core::mem::take(&mut self.bcast_pending) {
            return;
        }
        for prefix in self.prefixes.values_mut() {
            if prefix.changed.is_empty() {
                continue;
            }
            let changed = core::mem::take(&mut prefix.changed);
            for &id in &prefix.clients {
                let noloop = self.clients.get(&id).is_some_and(|m| m.noloop);
                let keys: Vec<Box<[u8]>> = changed.iter().filter(|&(_, &by)| !(noloop && by == id)).map(|(k, _)| k.clone()).collect();
                if !keys.is_empty() {
                    self.events.push(Event { client: id, what: Invalidation::Keys(keys), after_reply: true });
                }
            }
        }
    }
}

/// The bytes of an invalidation for a receiver in RESP3 (a push) or a RESP2 subscriber
/// (a message on `__redis__:invalidate`); None when the receiver can take neither (a
/// RESP2 client without redirection, or a redirection target that subscribes to
/// nothing). `null_resp3`: the protocol of the tracking client, whose null a flush
/// carries (Redis's shared.null[c->resp]).
pub fn message(what: &Invalidation, resp3: bool, subscribed: bool, redirected: bool, null_resp3: bool) -> Option<Vec<u8>> {
    let mut r = Reply::with(Vec::new(), resp3);
    if resp3 {
        r.push(2);
        r.bulk(b"invalidate");
    } else if redirected && subscribed {
        r.push(3);
        r.bulk(b"message");
        r.bulk(b"__redis__:invalidate");
    } else {
        return None;
    }
    match what {
        Invalidation::Key(k) => r.bulks([k]),
        Invalidation::Keys(keys) => r.bulks(keys),
        Invalidation::Flush => {
            r.resp3 = null_resp3;
            r.null();
        }
    }
    Some(r.buf)
}

/// The push a RESP3 tracking client gets when its redirection's client is gone.
pub fn broken_redirect_message(redirect: u64) -> Vec<u8> {
    let mut r = Reply::with(Vec::new(), true);
    r.push(2);
    r.bulk(b"tracking-redir-broken");
    r.int(redirect as i64);
    r.buf
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options { redirect: 0, bcast: false, optin: false, optout: false, noloop: false, prefixes: Vec::new() }
    }

    #[test]
    fn a_read_key_is_invalidated_once_then_forgotten() {
        let mut t = Tracking::new(1);
        let mut rng = Rng::new(1);
        t.enable(7, opts());
        t.remember(7, [&b"k"[..], b"k", b"j"].into_iter(), 0, &mut rng);
        assert_eq!(t.totals(), (2, 2, 0));
        t.invalidate(b"k", true);
        t.invalidate(b"k", true);
        assert_eq!(t.events.len(), 1);
        assert_eq!(t.totals(), (1, 1, 0));
    }

    #[test]
    fn the_table_stays_within_its_limit() {
        let mut t = Tracking::new(1);
        let mut rng = Rng::new(1);
        t.enable(7, opts());
        let keys: Vec<Vec<u8>> = (0..50).map(|i| alloc::format!("k{i}").into_bytes()).collect();
        t.remember(7, keys.iter().map(|k| &k[..]), 10, &mut rng);
        assert_eq!(t.totals().0, 10);
        assert_eq!(t.events.len(), 40, "every key pushed out is invalidated");
    }

    #[test]
    fn bcast_noloop_leaves_out_the_clients_own_keys() {
        let mut t = Tracking::new(1);
        let mut o = opts();
        o.bcast = true;
        o.noloop = true;
        o.prefixes = alloc::vec![Box::from(&b"a"[..])];
        t.enable(7, o);
        t.current = 7;
        t.invalidate(b"a1", true);
        t.current = 8;
        t.invalidate(b"a2", true);
        t.invalidate(b"b1", true);
        t.broadcast();
        assert_eq!(t.events.len(), 1);
        match &t.events[0].what {
            Invalidation::Keys(k) => assert_eq!(k, &alloc::vec![Box::<[u8]>::from(&b"a2"[..])]),
            _ => panic!("expected keys"),
        }
        t.disable(7);
        assert!(t.is_idle());
    }
}
