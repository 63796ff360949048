//! Keyspace notifications (Redis's notify.c): `notify-keyspace-events` flags and the
//! events commands raise. A command that changes a key calls
//! `ctx.notify(notify::STRING, "set", key)` after the change; the event is published on
//! `__keyspace@<db>__:<key>` (message: the event) and `__keyevent@<db>__:<event>`
//! (message: the key) when the configuration enables its class. Delivery goes through
//! the pub/sub outbox, so the host releases a write's notifications together with its
//! reply, once the write is durable.
//!
//! Event names and classes per command follow Redis 7.0 (e.g. LPUSH -> `lpush`, class
//! LIST; SADD -> `sadd`, SET; ZADD -> `zadd`, ZSET; XADD -> `xadd`, STREAM; a container
//! emptied by a removal also raises `del`, class GENERIC).

use alloc::string::String;
use alloc::vec::Vec;

use crate::server::ctx::Ctx;
use crate::server::state::State;

pub const KEYSPACE: u32 = 1 << 0; // K
pub const KEYEVENT: u32 = 1 << 1; // E
pub const GENERIC: u32 = 1 << 2; // g
pub const STRING: u32 = 1 << 3; // $
pub const LIST: u32 = 1 << 4; // l
pub const SET: u32 = 1 << 5; // s
pub const HASH: u32 = 1 << 6; // h
pub const ZSET: u32 = 1 << 7; // z
pub const EXPIRED: u32 = 1 << 8; // x
pub const EVICTED: u32 = 1 << 9; // e
pub const STREAM: u32 = 1 << 10; // t
pub const KEY_MISS: u32 = 1 << 11; // m (not part of A)
pub const MODULE: u32 = 1 << 13; // d
pub const NEW: u32 = 1 << 14; // n (not part of A)
pub const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// Parses a `notify-keyspace-events` value like keyspaceEventsStringToFlags.
pub fn parse(s: &str) -> Option<u32> {
    let mut f = 0;
    for c in s.chars() {
        f |= match c {
            'A' => ALL,
            'g' => GENERIC,
            '$' => STRING,
            'l' => LIST,
            's' => SET,
            'h' => HASH,
            'z' => ZSET,
            'x' => EXPIRED,
            'e' => EVICTED,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            't' => STREAM,
            'm' => KEY_MISS,
            'd' => MODULE,
            'n' => NEW,
            _ => return None,
        };
    }
    Some(f)
}

/// Renders flags like keyspaceEventsFlagsToString in 7.0 (which omits `n` after `A`).
pub fn render(f: u32) -> String {
    let mut s = String::new();
    if f & ALL == ALL {
        s.push('A');
    } else {
        for (c, bit) in [
            ('g', GENERIC),
            ('$', STRING),
            ('l', LIST),
            ('s', SET),
            ('h', HASH),
            ('z', ZSET),
            ('x', EXPIRED),
            ('e', EVICTED),
            ('t', STREAM),
            ('d', MODULE),
            ('n', NEW),
        ] {
            if f & bit != 0 {
                s.push(c);
            }
        }
    }
    for (c, bit) in [('K', KEYSPACE), ('E', KEYEVENT), ('m', KEY_MISS)] {
        if f & bit != 0 {
            s.push(c);
        }
    }
    s
}

impl State {
    /// Raises keyspace event `event` of class `class` for `key` in `db`.
    pub fn notify(&mut self, class: u32, event: &str, key: &[u8], db: usize) {
        let flags = self.config.notify_flags;
        if flags & class == 0 || flags & (KEYSPACE | KEYEVENT) == 0 || self.pubsub.is_idle() {
            return;
        }
        let mut chan = Vec::with_capacity(16 + key.len().max(event.len()));
        if flags & KEYSPACE != 0 {
            chan.extend_from_slice(b"__keyspace@");
            crate::util::push_int(&mut chan, db as i64);
            chan.extend_from_slice(b"__:");
            chan.extend_from_slice(key);
            self.pubsub.publish(&chan, event.as_bytes());
        }
        if flags & KEYEVENT != 0 {
            chan.clear();
            chan.extend_from_slice(b"__keyevent@");
            crate::util::push_int(&mut chan, db as i64);
            chan.extend_from_slice(b"__:");
            chan.extend_from_slice(event.as_bytes());
            self.pubsub.publish(&chan, key);
        }
    }

    /// `new` event for a key about to be created, when `n` is on (dbAdd's notification).
    pub fn notify_new(&mut self, db: usize, key: &[u8]) {
        if self.config.notify_flags & NEW != 0 && !self.dbs[db].keys.contains_key(key) {
            self.notify(NEW, "new", key, db);
        }
    }
}

impl Ctx<'_> {
    /// Raises a keyspace event for `key` in the client's database (see the module doc).
    pub fn notify(&mut self, class: u32, event: &str, key: &[u8]) {
        let db = self.client.db;
        self.st.notify(class, event, key, db);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_like_redis_7_0() {
        for (input, shown) in [
            ("KEA", "AKE"),
            ("AKEmn", "AKEm"),
            ("gx$", "g$x"),
            ("mnKE", "nKEm"),
            ("Kd", "dK"),
            ("tdn", "tdn"),
            ("g$lshzxetd", "A"),
            ("g$lshzxet", "g$lshzxet"),
            ("EK", "KE"),
            ("", ""),
        ] {
            assert_eq!(render(parse(input).unwrap()), shown, "{input}");
        }
        assert_eq!(parse("q"), None);
    }
}
