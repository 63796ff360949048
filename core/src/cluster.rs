//! Cluster mode's view from one node: CRC16 key slots with hash tags, and the CLUSTER
//! commands, answered from the facts the host reports in REC_ROLE (`cluster_enabled:1`,
//! `cluster_myself:host:port`, one `cluster_node:host:port role offset` line per node,
//! the primary first). One shard owns all 16384 slots until slot migration exists.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::ctx::Ctx;

pub const SLOTS: u16 = 16384;

/// CRC16-CCITT (XMODEM), as Redis Cluster uses it.
pub fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
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

pub struct Node {
    pub host: String,
    pub port: u16,
    pub primary: bool,
    pub offset: i64,
    pub id: String,
}

pub fn enabled(ctx: &Ctx<'_>) -> bool {
    fact(ctx, "cluster_enabled").as_deref() == Some("1")
}

fn fact(ctx: &Ctx<'_>, k: &str) -> Option<String> {
    ctx.st.role_info.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
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

pub fn nodes(ctx: &Ctx<'_>) -> Vec<Node> {
    let mut out: Vec<Node> = Vec::new();
    for (k, v) in ctx.st.role_info.iter() {
        if k != "cluster_node" {
            continue;
        }
        let mut parts = v.split(' ');
        let (Some(addr), Some(role)) = (parts.next(), parts.next()) else { continue };
        let offset = parts.next().and_then(|o| o.parse().ok()).unwrap_or(0);
        let Some((host, port)) = addr.rsplit_once(':') else { continue };
        let port: u16 = port.parse().unwrap_or(0);
        if out.iter().any(|n| n.host == host && n.port == port) {
            continue;
        }
        out.push(Node { host: host.into(), port, primary: role == "master", offset, id: node_id(addr) });
    }
    out
}

/// The primary's address for -MOVED, when known.
pub fn primary_addr(ctx: &Ctx<'_>) -> Option<String> {
    nodes(ctx).into_iter().find(|n| n.primary).map(|n| format!("{}:{}", n.host, n.port))
}

fn myself(ctx: &Ctx<'_>) -> String {
    fact(ctx, "cluster_myself").unwrap_or_default()
}

fn disabled(ctx: &mut Ctx<'_>) -> bool {
    if enabled(ctx) {
        return false;
    }
    ctx.err("ERR This instance has cluster support disabled");
    true
}

pub fn keyslot(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    // Redis answers KEYSLOT even with cluster support disabled.
    ctx.reply.int(key_slot(argv[2]) as i64);
}

pub fn myid(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let id = node_id(&myself(ctx));
    ctx.reply.bulk(id.as_bytes());
}

pub fn myshardid(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    // Derived from the shard's name: its nodes' addresses change across failovers.
    ctx.reply.bulk(node_id("shard-0").as_bytes());
}

pub fn info(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let n = nodes(ctx);
    let epoch = fact(ctx, "memoria_epoch").unwrap_or_else(|| "0".into());
    let has_primary = n.iter().any(|x| x.primary);
    let (state, ok) = if has_primary { ("ok", SLOTS) } else { ("fail", 0) };
    let s = format!(
        "cluster_enabled:1\r\ncluster_state:{state}\r\ncluster_slots_assigned:{SLOTS}\r\ncluster_slots_ok:{ok}\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:{}\r\ncluster_known_nodes:{}\r\ncluster_size:1\r\ncluster_current_epoch:{epoch}\r\ncluster_my_epoch:{epoch}\r\n",
        SLOTS - ok,
        n.len()
    );
    ctx.reply.verbatim(s.as_bytes());
}

/// CLUSTER SLOTS: one range, 0-16383, the primary then its replicas.
pub fn slots(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let mut n = nodes(ctx);
    n.sort_by_key(|x| !x.primary);
    if !n.first().is_some_and(|x| x.primary) {
        ctx.reply.array(0);
        return;
    }
    ctx.reply.array(1);
    ctx.reply.array(2 + n.len());
    ctx.reply.int(0);
    ctx.reply.int((SLOTS - 1) as i64);
    for x in &n {
        ctx.reply.array(4);
        ctx.reply.bulk(x.host.as_bytes());
        ctx.reply.int(x.port as i64);
        ctx.reply.bulk(x.id.as_bytes());
        ctx.reply.map(0);
    }
}

/// CLUSTER SHARDS (Redis 7.0's shape).
pub fn shards(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let mut n = nodes(ctx);
    n.sort_by_key(|x| !x.primary);
    ctx.reply.array(1);
    ctx.reply.map(2);
    ctx.reply.bulk(b"slots");
    ctx.reply.array(2);
    ctx.reply.int(0);
    ctx.reply.int((SLOTS - 1) as i64);
    ctx.reply.bulk(b"nodes");
    ctx.reply.array(n.len());
    for x in &n {
        ctx.reply.map(7);
        ctx.reply.bulk(b"id");
        ctx.reply.bulk(x.id.as_bytes());
        ctx.reply.bulk(b"port");
        ctx.reply.int(x.port as i64);
        ctx.reply.bulk(b"ip");
        ctx.reply.bulk(x.host.as_bytes());
        ctx.reply.bulk(b"endpoint");
        ctx.reply.bulk(x.host.as_bytes());
        ctx.reply.bulk(b"role");
        ctx.reply.bulk(if x.primary { b"master" as &[u8] } else { b"replica" });
        ctx.reply.bulk(b"replication-offset");
        ctx.reply.int(x.offset);
        ctx.reply.bulk(b"health");
        ctx.reply.bulk(b"online");
    }
}

/// CLUSTER NODES: Redis's text format, one line per node.
pub fn nodes_cmd(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let me = myself(ctx);
    let n = nodes(ctx);
    let epoch = fact(ctx, "memoria_epoch").unwrap_or_else(|| "0".into());
    let primary_id = n.iter().find(|x| x.primary).map(|x| x.id.clone()).unwrap_or_else(|| "-".into());
    let mut s = String::new();
    for x in &n {
        let addr = format!("{}:{}", x.host, x.port);
        let mut flags = String::new();
        if addr == me {
            flags.push_str("myself,");
        }
        flags.push_str(if x.primary { "master" } else { "slave" });
        let (master, slots) = if x.primary { ("-".into(), " 0-16383") } else { (primary_id.clone(), "") };
        s.push_str(&format!("{} {addr}@{} {flags} {master} 0 0 {epoch} connected{slots}\n", x.id, x.port as u32 + 10000));
    }
    ctx.reply.verbatim(s.as_bytes());
}

fn slot_arg(ctx: &mut Ctx<'_>, a: &[u8]) -> Option<u16> {
    match crate::util::parse_i64(a) {
        Some(s) if (0..SLOTS as i64).contains(&s) => Some(s as u16),
        _ => {
            ctx.err("ERR Invalid slot");
            None
        }
    }
}

pub fn countkeysinslot(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let Some(slot) = slot_arg(ctx, argv[2]) else { return };
    // A scan of the keyspace: one shard keeps no per-slot index yet.
    let n = ctx.st.dbs[0].keys.iter().filter(|(k, _)| key_slot(k) == slot).count();
    ctx.reply.int(n as i64);
}

pub fn getkeysinslot(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let Some(slot) = slot_arg(ctx, argv[2]) else { return };
    let count = match crate::util::parse_i64(argv[3]) {
        Some(c) if c >= 0 => c as usize,
        _ => return ctx.err("ERR Invalid number of keys"),
    };
    let keys: Vec<Vec<u8>> = ctx.st.dbs[0].keys.iter().filter(|(k, _)| key_slot(k) == slot).take(count).map(|(k, _)| k.to_vec()).collect();
    ctx.reply.array(keys.len());
    for k in keys {
        ctx.reply.bulk(&k);
    }
}

pub fn help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "COUNTKEYSINSLOT <slot>",
        "    Return the number of keys in <slot>.",
        "GETKEYSINSLOT <slot> <count>",
        "    Return key names stored by current node in a slot.",
        "INFO",
        "    Return information about the cluster.",
        "KEYSLOT <key>",
        "    Return the hash slot for <key>.",
        "MYID",
        "    Return the node id.",
        "MYSHARDID",
        "    Return the node's shard id.",
        "NODES",
        "    Return cluster configuration seen by node. Output format:",
        "    <id> <ip:port@bus-port[,hostname]> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
        "SHARDS",
        "    Return information about slot range mappings and the nodes associated with them.",
        "SLOTS",
        "    Return information about slots range mappings. Each range is made of:",
        "    start, end, master and replicas IP addresses, ports and ids",
        "HELP",
        "    Print this help.",
    ]);
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
