//! Cluster mode in the engine: routing of keyed commands by slot (-MOVED, -CROSSSLOT,
//! -ASK/ASKING, -TRYAGAIN, READONLY on replicas, EXEC across queued commands), SELECT
//! limited to db 0, and the CLUSTER replies built from the host's slot map.

mod cmdutil;
mod common;

use cmdutil::*;
use common::*;
use memoria_core::protocol::batch::{self, BatchWriter};

/// Gives the engine its role and cluster facts, as the host does in REC_ROLE.
fn role(h: &mut H, text: &str) {
    let mut b = BatchWriter::new();
    b.record(batch::REC_ROLE, 0, text.as_bytes());
    h.e.execute(&b.buf, h.now_ms * 1000, 1);
}

/// Shard 0 (this node, 127.0.0.1:7000) owns 0-8191; shard 1 (127.0.0.1:7001) the rest;
/// 127.0.0.1:7002 replicates shard 0.
const TWO: &str = "primary\noffset:0\ncluster_enabled:1\ncluster_myself:127.0.0.1:7000\ncluster_myshard:0\ncluster_slots:0 0-8191\ncluster_slots:1 8192-16383\ncluster_node:127.0.0.1:7000 master 0 0\ncluster_node:127.0.0.1:7001 master 0 1\ncluster_node:127.0.0.1:7002 replica 0 0\n";

#[test]
fn routing_by_slot() {
    let mut h = H::new();
    role(&mut h, TWO);
    // "foo" is slot 12182 (shard 1), "bar" 5061 and "{b}…" 3300 are here.
    ck(&mut h, "SET foo 1", err("MOVED 12182 127.0.0.1:7001"));
    ck(&mut h, "GET foo", err("MOVED 12182 127.0.0.1:7001"));
    ck(&mut h, "SET bar 1", "+OK\r\n");
    ck(&mut h, "GET bar", bulk("1"));
    ck(&mut h, "MSET bar 1 foo 2", err("CROSSSLOT Keys in request don't hash to the same slot"));
    ck(&mut h, "MSET {b}x 1 {b}y 2", "+OK\r\n");
    ck(&mut h, "MGET {b}x {b}y", bulks(&["1", "2"]));
    // The same key twice is one slot.
    ck(&mut h, "MGET bar bar", bulks(&["1", "1"]));
    // Keyless commands run anywhere.
    ck(&mut h, "PING", "+PONG\r\n");
    ck(&mut h, "DBSIZE", int(3));
    // Database 0 only.
    ck(&mut h, "SELECT 1", err("ERR SELECT is not allowed in cluster mode"));
    ck(&mut h, "SELECT 99", err("ERR SELECT is not allowed in cluster mode"));
    ck(&mut h, "SELECT 0", "+OK\r\n");
    ck(&mut h, "SET {b}m 1", "+OK\r\n");
    ck(&mut h, "MOVE {b}m 1", err("ERR MOVE is not allowed in cluster mode"));
    ck(&mut h, "SWAPDB 0 1", err("ERR SWAPDB is not allowed in cluster mode"));
    ck(&mut h, "COPY {b}m {b}n", int(1));
    // INFO says cluster mode as redis-server does; the slot-map facts stay internal.
    let info = bulk_text(&h.c("INFO"));
    assert!(info.contains("\r\nredis_mode:cluster\r\n") && info.contains("# Cluster\r\ncluster_enabled:1\r\n"), "{info}");
    assert!(!info.contains("cluster_slots") && !info.contains("cluster_node"), "{info}");
    ck(&mut h, "DEL {b}m {b}n", int(2));
    assert!(h.c("HELLO 2").contains("$4\r\nmode\r\n$7\r\ncluster\r\n$4\r\nrole\r\n$6\r\nmaster\r\n"));
    // A redirected command inside MULTI aborts the transaction, as in Redis.
    ck(&mut h, "MULTI", "+OK\r\n");
    ck(&mut h, "SET bar 2", "+QUEUED\r\n");
    ck(&mut h, "SET foo 2", err("MOVED 12182 127.0.0.1:7001"));
    ck(&mut h, "EXEC", err("EXECABORT Transaction discarded because of previous errors."));
    // EXEC checks that everything queued shares one slot, and discards it if not.
    ck(&mut h, "MULTI", "+OK\r\n");
    ck(&mut h, "SET bar 3", "+QUEUED\r\n");
    ck(&mut h, "SET {b}x 3", "+QUEUED\r\n");
    ck(&mut h, "EXEC", err("CROSSSLOT Keys in request don't hash to the same slot"));
    ck(&mut h, "GET bar", bulk("1"));
    ck(&mut h, "EXEC", err("ERR EXEC without MULTI"));
    ck(&mut h, "MULTI", "+OK\r\n");
    ck(&mut h, "SET {b}x 4", "+QUEUED\r\n");
    ck(&mut h, "GET {b}y", "+QUEUED\r\n");
    ck(&mut h, "EXEC", "*2\r\n+OK\r\n$1\r\n2\r\n");
}

#[test]
fn cluster_replies_from_the_slot_map() {
    let mut h = H::new();
    role(&mut h, TWO);
    let slots = h.c("CLUSTER SLOTS");
    assert!(slots.starts_with("*2\r\n*4\r\n:0\r\n:8191\r\n*4\r\n$9\r\n127.0.0.1\r\n:7000\r\n"), "{slots:?}");
    assert!(slots.contains(":8192\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:7001\r\n"), "{slots:?}");
    let nodes = bulk_text(&h.c("CLUSTER NODES"));
    let lines: Vec<&str> = nodes.lines().collect();
    assert_eq!(lines.len(), 3, "{nodes}");
    assert!(lines[0].contains(" 127.0.0.1:7000@17000 myself,master - 0 0 0 connected 0-8191"), "{nodes}");
    assert!(lines[1].contains(" 127.0.0.1:7001@17001 master - 0 0 0 connected 8192-16383"), "{nodes}");
    assert!(lines[2].contains(" 127.0.0.1:7002@17002 slave "), "{nodes}");
    let info = bulk_text(&h.c("CLUSTER INFO"));
    assert!(info.contains("cluster_state:ok") && info.contains("cluster_size:2") && info.contains("cluster_known_nodes:3"), "{info}");
    let shards = h.c("CLUSTER SHARDS");
    assert!(shards.starts_with("*2\r\n"), "{shards:?}");
    assert_ne!(h.c("CLUSTER MYSHARDID"), {
        let mut o = H::new();
        role(&mut o, &TWO.replace("cluster_myshard:0", "cluster_myshard:1"));
        o.c("CLUSTER MYSHARDID")
    });
    // A slot nobody owns.
    role(&mut h, &TWO.replace("cluster_slots:1 8192-16383", "cluster_slots:1 8192-12000"));
    ck(&mut h, "GET foo", err("CLUSTERDOWN Hash slot not served"));
    assert!(bulk_text(&h.c("CLUSTER INFO")).contains("cluster_state:fail"));
}

#[test]
fn migrating_and_importing_slots() {
    // Source: slot 3300 ({b}) migrating to 7001.
    let mut h = H::new();
    role(&mut h, TWO);
    ck(&mut h, "SET {b}1 here", "+OK\r\n");
    role(&mut h, &format!("{TWO}cluster_migrating:3300 127.0.0.1:7001\n"));
    // Keys it still holds are served here (writes too).
    ck(&mut h, "SET {b}1 here", "+OK\r\n");
    ck(&mut h, "GET {b}1", bulk("here"));
    ck(&mut h, "GET {b}2", err("ASK 3300 127.0.0.1:7001"));
    ck(&mut h, "SET {b}2 x", err("ASK 3300 127.0.0.1:7001"));
    ck(&mut h, "MGET {b}1 {b}2", err("TRYAGAIN Multiple keys request during rehashing of slot"));
    assert!(bulk_text(&h.c("CLUSTER NODES")).contains("[3300->-"));
    // While the target shard elects a primary the slot is still migrating: a key not
    // held here is never created here (it may be at the target already).
    role(&mut h, &format!("{TWO}cluster_migrating:3300 ?\n"));
    ck(&mut h, "SET {b}2 x", err("TRYAGAIN Slot 3300 is migrating and its target is electing a primary"));
    ck(&mut h, "GET {b}2", err("TRYAGAIN Slot 3300 is migrating and its target is electing a primary"));
    ck(&mut h, "GET {b}1", bulk("here"));
    role(&mut h, &format!("{TWO}cluster_migrating:3300 127.0.0.1:7001\n"));

    // Target: shard 1 importing 3300 from 7000, which still owns it.
    let mut t = H::new();
    let target = TWO.replace("cluster_myself:127.0.0.1:7000", "cluster_myself:127.0.0.1:7001").replace("cluster_myshard:0", "cluster_myshard:1");
    role(&mut t, &format!("{target}cluster_importing:3300 127.0.0.1:7000\n"));
    ck(&mut t, "GET {b}2", err("MOVED 3300 127.0.0.1:7000"));
    ck(&mut t, "ASKING", "+OK\r\n");
    ck(&mut t, "SET {b}2 there", "+OK\r\n");
    // ASKING lasts one command.
    ck(&mut t, "GET {b}2", err("MOVED 3300 127.0.0.1:7000"));
    ck(&mut t, "ASKING", "+OK\r\n");
    ck(&mut t, "GET {b}2", bulk("there"));
    ck(&mut t, "ASKING", "+OK\r\n");
    ck(&mut t, "MGET {b}2 {b}3", err("TRYAGAIN Multiple keys request during rehashing of slot"));
    // RESTORE-ASKING acts as if ASKING came first (Redis's MIGRATE sends it).
    let payload: &[u8] = b"\x00\x05hello\n\x00cr\xdfve4 \n";
    ckr(&mut t, &[b"RESTORE", b"{b}5", b"0", payload], err("MOVED 3300 127.0.0.1:7000"));
    ckr(&mut t, &[b"RESTORE-ASKING", b"{b}5", b"0", payload], "+OK\r\n");
    ck(&mut t, "ASKING", "+OK\r\n");
    ck(&mut t, "GET {b}5", bulk("hello"));
    // A transaction after ASKING runs whole.
    ck(&mut t, "ASKING", "+OK\r\n");
    ck(&mut t, "MULTI", "+OK\r\n");
    ck(&mut t, "SET {b}4 1", "+QUEUED\r\n");
    ck(&mut t, "EXEC", "*1\r\n+OK\r\n");
    ck(&mut t, "GET {b}4", err("MOVED 3300 127.0.0.1:7000"));
}

#[test]
fn replicas_redirect_unless_readonly() {
    let mut h = H::new();
    role(&mut h, &TWO.replacen("primary\n", "replica\n", 1).replace("cluster_myself:127.0.0.1:7000", "cluster_myself:127.0.0.1:7002"));
    ck(&mut h, "GET bar", err("MOVED 5061 127.0.0.1:7000"));
    ck(&mut h, "READONLY", "+OK\r\n");
    ck(&mut h, "GET bar", "$-1\r\n");
    ck(&mut h, "SET bar 1", err("MOVED 5061 127.0.0.1:7000"));
    // Slots of another shard go there, READONLY or not.
    ck(&mut h, "GET foo", err("MOVED 12182 127.0.0.1:7001"));
    ck(&mut h, "FLUSHALL", err("READONLY You can't write against a read only replica."));
    ck(&mut h, "READWRITE", "+OK\r\n");
    ck(&mut h, "GET bar", err("MOVED 5061 127.0.0.1:7000"));
    // HELLO tells a client what it reached, as Redis does.
    assert!(h.c("HELLO 2").contains("$4\r\nmode\r\n$7\r\ncluster\r\n$4\r\nrole\r\n$7\r\nreplica\r\n"));
}

#[test]
fn cluster_commands_off_outside_cluster_mode() {
    let mut h = H::new();
    for c in ["READONLY", "READWRITE", "ASKING", "CLUSTER SLOTS"] {
        ck(&mut h, c, err("ERR This instance has cluster support disabled"));
    }
    ck(&mut h, "SELECT 1", "+OK\r\n");
    ck(&mut h, "CLUSTER KEYSLOT foo", int(12182));
}

/// The bulks of `*2 [cursor, *n [record…]]` (records are binary).
fn export_reply(r: &[u8]) -> (String, Vec<Vec<u8>>) {
    fn line(r: &[u8], pos: &mut usize) -> String {
        let end = *pos + r[*pos..].windows(2).position(|w| w == b"\r\n").expect("a line");
        let s = String::from_utf8_lossy(&r[*pos..end]).into_owned();
        *pos = end + 2;
        s
    }
    fn bulk(r: &[u8], pos: &mut usize) -> Vec<u8> {
        let head = line(r, pos);
        assert!(head.starts_with('$'), "not a bulk: {head}");
        let n: usize = head[1..].parse().unwrap();
        let b = r[*pos..*pos + n].to_vec();
        *pos += n + 2;
        b
    }
    let mut pos = 0;
    assert_eq!(line(r, &mut pos), "*2", "{}", String::from_utf8_lossy(r));
    let cursor = String::from_utf8(bulk(r, &mut pos)).unwrap();
    let n: usize = line(r, &mut pos)[1..].parse().unwrap();
    let recs = (0..n).map(|_| bulk(r, &mut pos)).collect();
    assert_eq!(pos, r.len());
    (cursor, recs)
}

/// Slots 3300 ("{b}…") and 5061 ("bar") move from shard 0 (127.0.0.1:7000) to shard 1
/// (127.0.0.1:7001) with MIGRATION EXPORT / IMPORT / DELIF, as `memoria reshard` runs them.
#[test]
fn migration_moves_keys_with_their_values_and_expiry_and_keeps_keys_written_meanwhile() {
    let mut src = H::new();
    let mut dst = H::new();
    role(&mut src, TWO);
    ck(&mut src, "SET bar 1 PX 100000", "+OK\r\n");
    ck(&mut src, "HSET {b}h f v g w", int(2));
    ck(&mut src, "RPUSH {b}l a b c", int(3));
    ck(&mut src, "SET hello 1", "+OK\r\n");
    // Not migrating yet: nothing can be exported before the engine sends new keys away.
    ck(&mut src, "MIGRATION EXPORT 0 10 3300,5061", err("ERR slot 3300 is not migrating from this node"));
    role(&mut src, &format!("{TWO}cluster_migrating:3300,5061 127.0.0.1:7001\n"));
    role(
        &mut dst,
        "primary\noffset:0\ncluster_enabled:1\ncluster_myself:127.0.0.1:7001\ncluster_myshard:1\ncluster_slots:0 0-8191\ncluster_slots:1 8192-16383\ncluster_node:127.0.0.1:7000 master 0 0\ncluster_node:127.0.0.1:7001 master 0 1\ncluster_importing:3300,5061 127.0.0.1:7000\n",
    );
    ck(&mut src, "MIGRATION EXPORT 0 10 3300,5062", err("ERR slot 5062 is not migrating from this node"));
    let (cursor, recs) = export_reply(&src.raw(&["MIGRATION", "EXPORT", "0", "10", "3300,5061"]));
    assert_eq!((cursor.as_str(), recs.len()), ("0", 3));
    // Only the target imports, and only whole records.
    let mut args: Vec<&[u8]> = vec![b"MIGRATION", b"IMPORT"];
    args.extend(recs.iter().map(|r| r.as_slice()));
    let refused = String::from_utf8_lossy(&src.raw(&args)).into_owned();
    assert!(refused.starts_with("-ERR slot ") && refused.ends_with(" is not importing into this node\r\n"), "{refused}");
    ckr(&mut dst, &[b"MIGRATION", b"IMPORT", &recs[0][..recs[0].len() - 1]], err("ERR bad key record: truncated key record"));
    ckr(&mut dst, &args, int(3));
    ckr(&mut dst, &args, int(3)); // a retried batch replaces what it wrote
    // A key written after its export stays at the source.
    ck(&mut src, "RPUSH {b}l d", int(4));
    let deleted: Vec<i64> = recs.iter().map(|r| int_of(&String::from_utf8_lossy(&src.raw(&[&b"MIGRATION"[..], b"DELIF", r])))).collect();
    assert_eq!(deleted.iter().sum::<i64>(), 2, "{deleted:?}");
    // Gone from the source: clients are sent to the target, which serves them after ASKING.
    ck(&mut src, "GET bar", err("ASK 5061 127.0.0.1:7001"));
    ck(&mut src, "LLEN {b}l", int(4));
    ck(&mut dst, "GET bar", err("MOVED 5061 127.0.0.1:7000"));
    ck(&mut dst, "ASKING", "+OK\r\n");
    ck(&mut dst, "GET bar", bulk("1"));
    ck(&mut dst, "ASKING", "+OK\r\n");
    let pttl = int_of(&dst.c("PTTL bar"));
    assert!(pttl > 0 && pttl <= 100000, "{pttl}");
    ck(&mut dst, "ASKING", "+OK\r\n");
    ck(&mut dst, "HGET {b}h g", bulk("w"));
    // The next pass moves what was left.
    let (_, recs) = export_reply(&src.raw(&["MIGRATION", "EXPORT", "0", "10", "3300,5061"]));
    assert_eq!(recs.len(), 1);
    ckr(&mut dst, &[&b"MIGRATION"[..], b"IMPORT", &recs[0]], int(1));
    ckr(&mut src, &[&b"MIGRATION"[..], b"DELIF", &recs[0]], int(1));
    ckr(&mut src, &[&b"MIGRATION"[..], b"DELIF", &recs[0]], int(0));
    ck(&mut dst, "ASKING", "+OK\r\n");
    ck(&mut dst, "LRANGE {b}l 0 -1", bulks(&["a", "b", "c", "d"]));
    let (cursor, recs) = export_reply(&src.raw(&["MIGRATION", "EXPORT", "0", "10", "3300,5061"]));
    assert_eq!((cursor.as_str(), recs.len()), ("0", 0));
    ck(&mut src, "GET hello", bulk("1"));
    ck(&mut src, "DBSIZE", int(1));
}

/// On a big keyspace an EXPORT call walks a bounded part of it and returns a cursor; the
/// calls from cursor 0 back to 0 return every key of the slots once.
#[test]
fn migration_export_walks_a_bounded_part_of_the_keyspace_per_call() {
    let mut src = H::new();
    role(&mut src, TWO);
    for i in 0..3000 {
        let k = format!("{{hello}}{i}"); // slot 866, not moving
        ck(&mut src, &format!("SET {k} x"), "+OK\r\n");
    }
    ck(&mut src, "SET bar 1", "+OK\r\n");
    ck(&mut src, "SET {bar}2 2", "+OK\r\n");
    role(&mut src, &format!("{TWO}cluster_migrating:5061 127.0.0.1:7001\n"));
    let (mut cursor, mut got, mut calls) = (String::from("0"), Vec::new(), 0);
    loop {
        let (next, recs) = export_reply(&src.raw(&["MIGRATION", "EXPORT", &cursor, "1", "5061"]));
        got.extend(recs);
        calls += 1;
        if next == "0" {
            break;
        }
        cursor = next;
    }
    assert_eq!(got.len(), 2);
    assert!(calls > 10, "3002 keys at 64 per call took {calls} calls");
}

/// A client blocked at the target (after ASKING) on a key of an importing slot is served
/// when the key arrives with MIGRATION IMPORT, as Redis serves it when the migration's
/// RESTORE adds the key.
#[test]
fn an_import_wakes_a_client_blocked_on_the_key() {
    let mut src = H::new();
    role(&mut src, TWO);
    ck(&mut src, "RPUSH {b}q a b", int(2));
    role(&mut src, &format!("{TWO}cluster_migrating:3300 127.0.0.1:7001\n"));
    let (_, recs) = export_reply(&src.raw(&["MIGRATION", "EXPORT", "0", "10", "3300"]));
    assert_eq!(recs.len(), 1);
    let mut dst = H::new();
    let target = TWO.replace("cluster_myself:127.0.0.1:7000", "cluster_myself:127.0.0.1:7001").replace("cluster_myshard:0", "cluster_myshard:1");
    role(&mut dst, &format!("{target}cluster_importing:3300 127.0.0.1:7000\n"));
    // (client, flags, reply) of every output record.
    let run = |h: &mut H, cmds: &[(u64, &[&[u8]])]| -> Vec<(u64, u8, String)> {
        let mut b = BatchWriter::new();
        for (c, args) in cmds {
            b.begin(batch::REC_COMMAND, *c);
            memoria_core::protocol::resp::encode_command(&mut b.buf, args);
            b.end();
        }
        let out = h.e.execute(&b.buf, h.now_ms * 1000, 9);
        batch::OutputReader::new(&out).map(|r| (r.client, r.flags, String::from_utf8_lossy(r.reply).into_owned())).collect()
    };
    let out = run(&mut dst, &[(5, &[b"ASKING"]), (5, &[b"BLPOP", b"{b}q", b"0"])]);
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0].2, "+OK\r\n");
    assert_eq!(out[1].1 & batch::OUT_BLOCKED, batch::OUT_BLOCKED, "blocked: {out:?}");
    let out = run(&mut dst, &[(6, &[b"MIGRATION", b"IMPORT", &recs[0]])]);
    let served: Vec<&(u64, u8, String)> = out.iter().filter(|o| o.0 == 5).collect();
    assert_eq!(served.len(), 1, "{out:?}");
    assert_eq!(served[0].2, "*2\r\n$4\r\n{b}q\r\n$1\r\na\r\n", "{out:?}");
    ck(&mut dst, "ASKING", "+OK\r\n");
    ck(&mut dst, "LRANGE {b}q 0 -1", bulks(&["b"]));
}

/// Redis 7's checks of the keys a script reaches in cluster mode (texts from a
/// redis-server 7.0.15 cluster node): only keys served here; with a shebang or as a
/// function, only keys of one slot (the declared keys', else the first reached) unless
/// it allows cross-slot keys; a no-cluster script does not run.
#[test]
fn scripts_reach_local_keys_of_one_slot() {
    let mut h = H::new();
    role(&mut h, TWO);
    let eval = |h: &mut H, body: &str, keys: &[&str]| {
        let n = keys.len().to_string();
        let mut argv = vec!["EVAL", body, &n];
        argv.extend(keys);
        String::from_utf8_lossy(&h.raw(&argv)).into_owned()
    };
    let non_local = "-ERR Script attempted to access a non local key in a cluster node script: ";
    let cross = "-ERR Script attempted to access keys that do not hash to the same slot script: ";
    ck(&mut h, "SET bar 1", "+OK\r\n");
    // "foo" lives on shard 1.
    assert!(eval(&mut h, "return redis.call('get', 'foo')", &[]).starts_with(non_local));
    assert_eq!(eval(&mut h, "return redis.pcall('get', 'foo')", &[]), "-ERR Script attempted to access a non local key in a cluster node\r\n");
    assert!(eval(&mut h, "return redis.call('mget', 'bar', '{b}x')", &[]).starts_with(non_local));
    // Without a shebang, any local slot (as before Redis 7).
    assert_eq!(eval(&mut h, "return redis.call('get', 'bar')", &["{b}x"]), bulk("1"));
    // With one: the declared keys' slot, or the first reached.
    assert!(eval(&mut h, "#!lua\nreturn redis.call('get', 'bar')", &["{b}x"]).starts_with(cross));
    assert!(eval(&mut h, "#!lua\nredis.call('set', '{b}x', 1) return redis.call('get', 'bar')", &[]).starts_with(cross));
    assert_eq!(eval(&mut h, "#!lua\nredis.call('set', '{b}x', 1) return redis.call('get', '{b}y')", &[]), NIL);
    assert_eq!(eval(&mut h, "#!lua flags=allow-cross-slot-keys\nredis.call('set', '{b}x', 2) return redis.call('get', 'bar')", &[]), bulk("1"));
    assert_eq!(eval(&mut h, "#!lua flags=no-cluster\nreturn 1", &[]), "-ERR Can not run script on cluster, 'no-cluster' flag is set.\r\n");
    // Functions are checked as shebang scripts.
    let lib = "#!lua name=cl\nredis.register_function('xs', function(k) return redis.call('get', 'bar') end)\nredis.register_function{function_name='xok', callback=function(k) return redis.call('get', 'bar') end, flags={'allow-cross-slot-keys'}}";
    assert_eq!(h.raw(&["FUNCTION", "LOAD", lib]), bulk("cl").as_bytes());
    assert_eq!(
        String::from_utf8_lossy(&h.raw(&["FCALL", "xs", "1", "{b}x"])),
        "-ERR Script attempted to access keys that do not hash to the same slot script: xs, on @user_function:2.\r\n"
    );
    assert_eq!(String::from_utf8_lossy(&h.raw(&["FCALL", "xok", "1", "{b}x"])), bulk("1"));
    assert_eq!(String::from_utf8_lossy(&h.raw(&["FCALL", "xs", "0"])), bulk("1"));
}
