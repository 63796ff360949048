//! Cluster mode's view from one node: CRC16 key slots with hash tags, the slot map, the
//! routing of every keyed command (-MOVED, -ASK, -CROSSSLOT, -TRYAGAIN, READONLY reads on
//! replicas); the CLUSTER commands are `commands::cluster`. The host reports the facts in
//! REC_ROLE:
//!
//! - `cluster_enabled:1`, `cluster_myself:host:port`, `cluster_myshard:<n>` (default 0);
//! - `cluster_slots:<n> <a>-<b>,<c>,…`: the slots shard `n` owns (none at all: this node's
//!   shard owns every slot, the single-shard shape);
//! - `cluster_node:host:port role offset [shard]`, one line per node, the primary first;
//! - `cluster_migrating:<slots> host:port` / `cluster_importing:<slots> host:port`: slots
//!   this shard is moving out to / taking in from that node (Redis's MIGRATING/IMPORTING);
//!   `?` for the node while that shard has no known primary.
//!
//! They are parsed once per REC_ROLE into a [`ClusterMap`], so routing a command costs a
//! CRC16 per key and one table lookup.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::server::ctx::Ctx;
use crate::server::spec::CommandSpec;

pub const SLOTS: u16 = 16384;
/// No shard owns the slot.
pub const UNOWNED: u16 = u16::MAX;

const CRC16_TABLE: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut b = 0;
        while b < 8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            b += 1;
        }
        t[i] = crc;
        i += 1;
    }
    t
};

/// CRC16-CCITT (XMODEM), as Redis Cluster uses it (table-driven: it runs per key).
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc = (crc << 8) ^ CRC16_TABLE[((crc >> 8) as u8 ^ b) as usize];
    }
    crc
}

/// The slot of a key: only the part inside the first non-empty `{…}` counts.
pub fn key_slot(key: &[u8]) -> u16 {
    if let Some(open) = key.iter().position(|&c| c == b'{')
        && let Some(len) = key[open + 1..].iter().position(|&c| c == b'}')
        && len > 0
    {
        return crc16(&key[open + 1..open + 1 + len]) & (SLOTS - 1);
    }
    crc16(key) & (SLOTS - 1)
}

/// The address in `cluster_migrating`/`cluster_importing` while the other side's shard
/// has no known primary (an election): the source answers -TRYAGAIN for keys it does not
/// hold instead of -ASK.
pub const UNKNOWN_NODE: &str = "?";

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub host: String,
    pub port: u16,
    pub primary: bool,
    pub offset: i64,
    pub id: String,
    pub shard: u16,
}

impl Node {
    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// What this node knows of the cluster (see the module docs for where it comes from).
#[derive(Clone, Debug, Default)]
pub struct ClusterMap {
    pub myself: String,
    pub myshard: u16,
    /// Owner shard per slot (`UNOWNED` when none).
    pub owner: Vec<u16>,
    pub nodes: Vec<Node>,
    /// Slots being moved out of this shard, and the node they go to (the target's
    /// primary, `UNKNOWN_NODE` while it has none).
    pub migrating: BTreeMap<u16, String>,
    /// Slots being moved into this shard, and the node they come from.
    pub importing: BTreeMap<u16, String>,
    pub epoch: String,
}

/// Parses `a-b,c,d-e` into slot ranges (inclusive); bad parts are skipped.
pub fn parse_ranges(s: &str) -> Vec<(u16, u16)> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<u16>(), b.parse::<u16>())
            && a <= b
            && b < SLOTS
        {
            out.push((a, b));
        }
    }
    out
}

impl ClusterMap {
    /// Builds the map from REC_ROLE facts; None when cluster mode is off.
    pub fn from_facts(facts: &[(String, String)]) -> Option<ClusterMap> {
        let get = |k: &str| facts.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        if get("cluster_enabled") != Some("1") {
            return None;
        }
        let myshard: u16 = get("cluster_myshard").and_then(|s| s.parse().ok()).unwrap_or(0);
        let mut m = ClusterMap {
            myself: get("cluster_myself").unwrap_or_default().into(),
            myshard,
            owner: alloc::vec![UNOWNED; SLOTS as usize],
            nodes: Vec::new(),
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
            epoch: get("memoria_epoch").unwrap_or("0").into(),
        };
        let mut any_slots = false;
        for (k, v) in facts {
            match k.as_str() {
                "cluster_slots" => {
                    any_slots = true;
                    let (shard, ranges) = v.split_once(' ').unwrap_or((v.as_str(), ""));
                    let Ok(shard) = shard.parse::<u16>() else { continue };
                    for (a, b) in parse_ranges(ranges) {
                        for s in a..=b {
                            m.owner[s as usize] = shard;
                        }
                    }
                }
                "cluster_migrating" | "cluster_importing" => {
                    let Some((ranges, addr)) = v.split_once(' ') else { continue };
                    let into = if k == "cluster_migrating" { &mut m.migrating } else { &mut m.importing };
                    for (a, b) in parse_ranges(ranges) {
                        for s in a..=b {
                            into.insert(s, addr.into());
                        }
                    }
                }
                "cluster_node" => {
                    let mut parts = v.split(' ');
                    let (Some(addr), Some(role)) = (parts.next(), parts.next()) else { continue };
                    let offset = parts.next().and_then(|o| o.parse().ok()).unwrap_or(0);
                    let shard = parts.next().and_then(|o| o.parse().ok()).unwrap_or(myshard);
                    let Some((host, port)) = addr.rsplit_once(':') else { continue };
                    let port: u16 = port.parse().unwrap_or(0);
                    if m.nodes.iter().any(|n| n.host == host && n.port == port) {
                        continue;
                    }
                    m.nodes.push(Node { host: host.into(), port, primary: role == "master", offset, id: node_id(addr), shard });
                }
                _ => {}
            }
        }
        if !any_slots {
            // The single-shard shape: this shard owns everything.
            m.owner.iter_mut().for_each(|o| *o = myshard);
        }
        Some(m)
    }

    pub fn primary_of(&self, shard: u16) -> Option<&Node> {
        self.nodes.iter().find(|n| n.shard == shard && n.primary)
    }

    /// Shards that own slots or have nodes, in order.
    pub fn shard_ids(&self) -> Vec<u16> {
        let mut v: Vec<u16> = self.nodes.iter().map(|n| n.shard).collect();
        let mut seen = alloc::vec![false; SLOTS as usize];
        for &o in &self.owner {
            if o != UNOWNED && !seen[o as usize % SLOTS as usize] {
                seen[o as usize % SLOTS as usize] = true;
                v.push(o);
            }
        }
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The contiguous slot ranges each shard owns, in slot order: (start, end, shard).
    pub fn ranges(&self) -> Vec<(u16, u16, u16)> {
        let mut out: Vec<(u16, u16, u16)> = Vec::new();
        for (s, &o) in self.owner.iter().enumerate() {
            if o == UNOWNED {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.2 == o && last.1 as usize + 1 == s => last.1 = s as u16,
                _ => out.push((s as u16, s as u16, o)),
            }
        }
        out
    }
}

/// A stable 40-hex-digit node id derived from the node's address (Redis ids are random,
/// but ours must agree across nodes without talking to each other).
pub fn node_id(addr: &str) -> String {
    let mut s = String::with_capacity(48);
    for seed in 0..3u64 {
        s.push_str(&format!("{:016x}", xxhash_rust::xxh3::xxh3_64_with_seed(addr.as_bytes(), seed)));
    }
    s.truncate(40);
    s
}

pub fn shard_id(shard: u16) -> String {
    // Derived from the shard's name: its nodes' addresses change across failovers.
    node_id(&format!("shard-{shard}"))
}

pub fn enabled(ctx: &Ctx<'_>) -> bool {
    ctx.st.cluster.is_some()
}

fn existing(ctx: &Ctx<'_>, key: &[u8]) -> bool {
    match ctx.st.dbs[0].keys.get(key) {
        Some(e) => e.expire_at == crate::keyspace::object::NO_EXPIRE || e.expire_at > ctx.st.now_ms,
        None => false,
    }
}

/// Redis's getNodeByQuery: whether this node runs a keyed command, or the error that sends
/// the client elsewhere. `asking`: the client sent ASKING just before. None: run it here.
pub fn route(ctx: &Ctx<'_>, cmd: &CommandSpec, argv: &[&[u8]], asking: bool) -> Option<String> {
    let map = ctx.st.cluster.as_ref()?;
    let mut keys: Vec<usize> = Vec::new();
    let mut slot = UNOWNED;
    let mut first: Option<&[u8]> = None;
    let mut multiple = false;
    let (mut missing, mut existing_keys) = (0usize, 0usize);
    let mut is_write = cmd.is_write();
    let mut parsed: Vec<(usize, usize)> = Vec::new();
    // EXEC routes every queued command together (they must share one slot).
    let exec = cmd.flags & crate::server::spec::flags::EXEC != 0;
    let queue: Vec<&[u8]> = if exec {
        match ctx.client.multi.as_ref() {
            Some(m) => m.queue.iter().map(|q| q.as_slice()).collect(),
            None => return None,
        }
    } else {
        Vec::new()
    };
    let mut visit = |key: &[u8], first: &mut Option<&[u8]>| -> Result<(), String> {
        let s = key_slot(key);
        match *first {
            None => slot = s,
            Some(f) if f != key => {
                if s != slot {
                    return Err("CROSSSLOT Keys in request don't hash to the same slot".into());
                }
                multiple = true;
            }
            Some(_) => {}
        }
        let open = map.migrating.contains_key(&s) || map.importing.contains_key(&s);
        if open {
            if existing(ctx, key) {
                existing_keys += 1;
            } else {
                missing += 1;
            }
        }
        Ok(())
    };
    if exec {
        for raw in &queue {
            parsed.clear();
            if crate::protocol::resp::read_command(raw, &mut parsed).is_none() {
                continue;
            }
            let qargv: Vec<&[u8]> = parsed.iter().map(|&(a, b)| &raw[a..b]).collect();
            let Some(spec) = ctx.st.index.resolve(&qargv) else { continue };
            is_write |= spec.is_write();
            keys.clear();
            spec.key_indexes_argv(&qargv, &mut keys);
            for &i in &keys {
                // The borrow of `raw` lives as long as the queue: keep the first key.
                let k: &[u8] = &raw[parsed[i].0..parsed[i].1];
                if let Err(e) = visit(k, &mut first) {
                    return Some(e);
                }
                if first.is_none() {
                    first = Some(k);
                }
            }
        }
    } else {
        cmd.key_indexes_argv(argv, &mut keys);
        for &i in &keys {
            if let Err(e) = visit(argv[i], &mut first) {
                return Some(e);
            }
            if first.is_none() {
                first = Some(argv[i]);
            }
        }
    }
    first?;
    let owner = map.owner[slot as usize];
    if owner == UNOWNED {
        return Some("CLUSTERDOWN Hash slot not served".into());
    }
    let replica = ctx.st.replica_mode;
    if owner == map.myshard && !replica {
        if let Some(to) = map.migrating.get(&slot)
            && missing > 0
        {
            if existing_keys > 0 {
                return Some("TRYAGAIN Multiple keys request during rehashing of slot".into());
            }
            if to == UNKNOWN_NODE {
                // Never create the key here: it may already be at the target, and the
                // commit would lose what was written here.
                return Some(format!("TRYAGAIN Slot {slot} is migrating and its target is electing a primary"));
            }
            return Some(format!("ASK {slot} {to}"));
        }
        return None;
    }
    if !replica && map.importing.contains_key(&slot) && asking {
        if multiple && missing > 0 {
            return Some("TRYAGAIN Multiple keys request during rehashing of slot".into());
        }
        return None;
    }
    if replica && owner == map.myshard && ctx.client.readonly && !is_write {
        return None;
    }
    match map.primary_of(owner) {
        Some(p) => Some(format!("MOVED {slot} {}", p.addr())),
        None => Some("CLUSTERDOWN The cluster is down".into()),
    }
}

/// Answers the cluster-disabled error outside cluster mode (true: the caller stops).
pub(crate) fn disabled(ctx: &mut Ctx<'_>) -> bool {
    if enabled(ctx) {
        return false;
    }
    ctx.err("ERR This instance has cluster support disabled");
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"{user1000}.followers"));
        assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") & 16383);
        assert_eq!(key_slot(b"foo{{bar}}zap"), crc16(b"{bar") & 16383);
        assert_eq!(key_slot(b"foo{bar}{zap}"), crc16(b"bar") & 16383);
    }
}
