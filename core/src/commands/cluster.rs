//! Cluster commands (Redis's cluster.c, command side): CLUSTER SLOTS/SHARDS/NODES/INFO/
//! MYID/MYSHARDID/KEYSLOT/COUNTKEYSINSLOT/GETKEYSINSLOT/HELP, READONLY, READWRITE and
//! ASKING. The slot map and the routing of keyed commands are `server::cluster`.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::server::cluster::*;
use crate::server::ctx::Ctx;

/// READONLY / READWRITE: whether this connection may read from a replica.
pub fn readonly(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    ctx.client.readonly = argv[0].eq_ignore_ascii_case(b"readonly");
    ctx.reply.ok();
}

/// ASKING: the next command may touch a slot this node is importing.
pub fn asking(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    ctx.client.asking = true;
    ctx.reply.ok();
}

pub fn keyslot(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    // Redis answers KEYSLOT even with cluster support disabled.
    ctx.reply.int(key_slot(argv[2]) as i64);
}

pub fn myid(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let id = node_id(&ctx.st.cluster.as_ref().map(|m| m.myself.clone()).unwrap_or_default());
    ctx.reply.bulk(id.as_bytes());
}

pub fn myshardid(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let id = shard_id(ctx.st.cluster.as_ref().map_or(0, |m| m.myshard));
    ctx.reply.bulk(id.as_bytes());
}

pub fn info(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let m = ctx.st.cluster.as_ref().unwrap();
    let assigned = m.owner.iter().filter(|&&o| o != UNOWNED).count();
    let ok = m.owner.iter().filter(|&&o| o != UNOWNED && m.primary_of(o).is_some()).count();
    let size = m.shard_ids().into_iter().filter(|&s| m.owner.contains(&s)).count();
    let state = if ok == SLOTS as usize { "ok" } else { "fail" };
    let s = format!(
        "cluster_enabled:1\r\ncluster_state:{state}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{ok}\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:{}\r\ncluster_known_nodes:{}\r\ncluster_size:{size}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{}\r\n",
        assigned - ok,
        m.nodes.len(),
        m.epoch,
        m.epoch
    );
    ctx.reply.verbatim(s.as_bytes());
}

fn node_entry(ctx: &mut Ctx<'_>, x: &Node) {
    ctx.reply.array(4);
    ctx.reply.bulk(x.host.as_bytes());
    ctx.reply.int(x.port as i64);
    ctx.reply.bulk(x.id.as_bytes());
    ctx.reply.map(0);
}

/// The nodes of a shard, its primary first.
fn shard_nodes(m: &ClusterMap, shard: u16) -> Vec<Node> {
    let mut n: Vec<Node> = m.nodes.iter().filter(|x| x.shard == shard).cloned().collect();
    n.sort_by_key(|x| !x.primary);
    n
}

/// CLUSTER SLOTS: each contiguous range, its shard's primary then its replicas (ranges of a
/// shard with no known primary are left out: there is nowhere to send their clients).
pub fn slots(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let m = ctx.st.cluster.as_ref().unwrap();
    let rows: Vec<(u16, u16, Vec<Node>)> =
        m.ranges().into_iter().map(|(a, b, s)| (a, b, shard_nodes(m, s))).filter(|(_, _, n)| n.first().is_some_and(|x| x.primary)).collect();
    ctx.reply.array(rows.len());
    for (a, b, n) in rows {
        ctx.reply.array(2 + n.len());
        ctx.reply.int(a as i64);
        ctx.reply.int(b as i64);
        for x in &n {
            node_entry(ctx, x);
        }
    }
}

/// CLUSTER SHARDS (Redis 7.0's shape).
pub fn shards(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let m = ctx.st.cluster.as_ref().unwrap();
    let ranges = m.ranges();
    // Per shard: its slot ranges and its nodes.
    type Row = (Vec<(u16, u16)>, Vec<Node>);
    let rows: Vec<Row> = m.shard_ids().into_iter().map(|s| (ranges.iter().filter(|r| r.2 == s).map(|r| (r.0, r.1)).collect(), shard_nodes(m, s))).collect();
    ctx.reply.array(rows.len());
    for (r, n) in rows {
        ctx.reply.map(2);
        ctx.reply.bulk(b"slots");
        ctx.reply.array(2 * r.len());
        for (a, b) in r {
            ctx.reply.int(a as i64);
            ctx.reply.int(b as i64);
        }
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
}

/// CLUSTER NODES: Redis's text format, one line per node; primaries list their slots and
/// this node's open migrations (`[slot->-id]`, `[slot-<-id]`).
pub fn nodes_cmd(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    if disabled(ctx) {
        return;
    }
    let m = ctx.st.cluster.as_ref().unwrap();
    let ranges = m.ranges();
    let mut s = String::new();
    for x in &m.nodes {
        let addr = x.addr();
        let mut flags = String::new();
        if addr == m.myself {
            flags.push_str("myself,");
        }
        flags.push_str(if x.primary { "master" } else { "slave" });
        let master = if x.primary { "-".into() } else { m.primary_of(x.shard).map(|p| p.id.clone()).unwrap_or_else(|| "-".into()) };
        let mut slots = String::new();
        if x.primary {
            for r in ranges.iter().filter(|r| r.2 == x.shard) {
                if r.0 == r.1 {
                    slots.push_str(&format!(" {}", r.0));
                } else {
                    slots.push_str(&format!(" {}-{}", r.0, r.1));
                }
            }
            if addr == m.myself {
                for (slot, to) in &m.migrating {
                    slots.push_str(&format!(" [{slot}->-{}]", node_id(to)));
                }
                for (slot, from) in &m.importing {
                    slots.push_str(&format!(" [{slot}-<-{}]", node_id(from)));
                }
            }
        }
        s.push_str(&format!("{} {addr}@{} {flags} {master} 0 0 {} connected{slots}\n", x.id, x.port as u32 + 10000, m.epoch));
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
    // A scan of the keyspace: no per-slot index yet.
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
        "    Prints this help.",
    ]);
}
