//! Writes the committed seed corpora: `cargo +nightly run --bin gen-seeds -- core/fuzz/seeds`
//! (from the repository root, or with the crate's path). The engine seeds are the command
//! shapes of the effects-invariant and differential families; the log seeds carry real
//! effects and snapshot records produced by running them.

use bytes::Bytes;
use memoria_core::Engine;
use memoria_core::protocol::batch::{self, BatchWriter, OutputReader};
use memoria_fuzz::engine::{Step, encode, parse_line};
use memoria_log::codec::{AppendRequest, ReadBatch};
use memoria_log::{Appended, Checksum, Entry, Kind, LeasePayload, MarkPayload, NewEntry, chain};
use std::path::Path;

/// One family per seed: lines run by client 1 unless prefixed "2>" or "3>"; "." flushes
/// the batch, "~N" sleeps N ms, "!" ticks.
const FAMILIES: &[(&str, &str)] = &[
    ("strings", "SET a 1|SET b x PX 10|SET c 5 KEEPTTL GET|SETNX a 2|SETEX b 1 y|PSETEX c 20 z|APPEND a xy|INCR a|DECRBY c 3|INCRBYFLOAT a 0.5|.|SETRANGE b 3 q|GETSET a 7|GETDEL b|GETEX c PX 5|GETEX a PERSIST|MSET a 1 b 2|MSETNX c 1 h 2|~30|GET a|STRLEN b|GETRANGE a 0 -1|!"),
    ("hashes", "HSET h f1 1 f2 2|HMSET h f1 3 m1 4|HSETNX h f2 5|HDEL h f1|HINCRBY h f2 2|HINCRBYFLOAT h f2 0.5|PEXPIRE h 10|HGETALL h|HRANDFIELD h -3 WITHVALUES|HSCAN h 0 MATCH f* COUNT 10|CONFIG SET hash-max-listpack-entries 1|HSET h m2 x|OBJECT ENCODING h|~20|HLEN h|!"),
    ("hash_ttl", "HSET h f1 1 f2 2 f3 3|HEXPIRE h 100 FIELDS 2 f1 f2|HPEXPIRE h 5 NX FIELDS 1 f3|HTTL h FIELDS 3 f1 f2 f3|HPEXPIRETIME h FIELDS 1 f1|HPERSIST h FIELDS 1 f1|HGETEX h PX 10 FIELDS 1 f2|HSETEX h FNX PX 20 FIELDS 1 f4 4|HSETEX h FXX KEEPTTL FIELDS 1 f4 5|HGETDEL h FIELDS 1 f1|HINCRBYFLOAT h f2 0.5|~8|HGETALL h|!|~30|!|HLEN h|EXISTS h"),
    ("sets", "SADD s 1 2 3|SADD z a b|SREM s 2|SPOP s|SPOP z 2|SRANDMEMBER s -3|SMOVE s z 1|SINTERSTORE c s z|SUNIONSTORE c s z|SDIFFSTORE c s z|SINTER s z|SINTERCARD 2 s z LIMIT 1|PEXPIRE s 5|COPY s c REPLACE|CONFIG SET set-max-intset-entries 3|SADD s 5 7 10 16|OBJECT ENCODING s|SSCAN s 0|~10|!"),
    ("zsets", "ZADD z 1 a 2 b|ZADD z NX 1.5 c|ZADD z XX CH GT 3 a|ZADD z INCR 2 b|ZINCRBY z -inf c|ZREM z a m1|ZPOPMIN z|ZPOPMAX z 2|ZADD c 1 m1 2 m2|ZMPOP 2 z c MAX COUNT 2|ZRANGESTORE h c 0 -1|ZUNIONSTORE a 2 c h WEIGHTS 2 0.5|ZINTERSTORE a 2 c h AGGREGATE MAX|ZDIFFSTORE a 2 c h|ZREMRANGEBYRANK a 0 1|ZREMRANGEBYSCORE h -inf (1|ZREMRANGEBYLEX c [a +|ZRANDMEMBER c -3 WITHSCORES|ZRANGE c 0 -1 REV WITHSCORES|ZRANGE c (1 +inf BYSCORE LIMIT 0 2|ZRANGEBYLEX c - +|ZRANK c m1|ZSCAN c 0"),
    ("bitmaps", "SETBIT a 7 1|SETBIT a 100 1|BITFIELD b SET i8 0 100|BITFIELD b OVERFLOW SAT INCRBY u4 #2 7|BITFIELD b OVERFLOW FAIL INCRBY i64 0 1|BITOP AND c a b|BITOP NOT c a|BITCOUNT a|BITCOUNT a 0 -1 BIT|BITPOS a 1|GETBIT a 7|BITFIELD_RO b GET u4 0|APPEND a x"),
    ("hll", "PFADD h a b c|PFADD c 1 2 3 m1 m2|PFCOUNT h|PFCOUNT h c|PFMERGE a h c|APPEND h x|PFCOUNT h|COPY a b REPLACE"),
    ("keys", "SET a 1|HSET h f1 1|DEL a|UNLINK a b|EXPIRE h 1|PEXPIRE c 10 NX|PEXPIREAT h 1700000000005|PERSIST h|RENAME h a|RENAMENX a b|COPY b c DB 1|SELECT 1|GET c|SELECT 0|FLUSHDB|TTL a|SCAN 0 MATCH * COUNT 10 TYPE string|RANDOMKEY|KEYS *|EXISTS a b|TYPE a|TOUCH a|OBJECT FREQ a|EXPIRETIME a|DBSIZE|FLUSHALL"),
    ("streams", "XADD s * f1 1|XADD s MAXLEN ~ 2 * f2 2|XADD s 5-0 f1 x|XADD s NOMKSTREAM MINID = 1 * f1 y|XDEL s 5-0|XTRIM s MAXLEN = 1|XGROUP CREATE s g1 0 MKSTREAM|XGROUP CREATECONSUMER s g1 c1|XREADGROUP GROUP g1 c1 COUNT 2 STREAMS s >|XACK s g1 1-0|XPENDING s g1 - + 10|XCLAIM s g1 c1 0 1-0 FORCE JUSTID|XAUTOCLAIM s g1 c1 0 0 COUNT 2|XSETID s 1700000000000-0|XINFO STREAM s FULL|XINFO GROUPS s|XRANGE s - +|XREVRANGE s + - COUNT 1|XREAD COUNT 2 STREAMS s 0|XGROUP SETID s g1 $|XGROUP DESTROY s g1|CONFIG SET stream-node-max-entries 2|XADD s * f1 1|XADD s * f1 2|XADD s * f1 3|XLEN s"),
    ("multi", "WATCH a|MULTI|SET a 1|INCR a|HSET h f1 2|EXEC|2>SET a 2|MULTI|INCR a 1 2|NOSUCHCMD|EXEC|MULTI|SET b 1|DISCARD|UNWATCH"),
    ("lists", "2>BLPOP l a 0|3>BRPOP l 1|RPUSH l a b c|.|LPUSH a 1|LPOP l 2|RPOP a|LSET l 0 x|LINSERT l BEFORE x y|LREM l -1 a|LTRIM l 0 1|2>BLMOVE a l LEFT RIGHT 0|LMOVE l a RIGHT LEFT|RPOPLPUSH a l|LMPOP 2 l a RIGHT COUNT 2|3>BLMPOP 0 2 l a LEFT COUNT 2|RPUSH l 1 2|.|~1500|!|LPOS l 1 RANK -1|LRANGE l 0 -1|LINDEX l -1|LLEN l"),
    ("pubsub", "2>SUBSCRIBE ch1|3>PSUBSCRIBE ch*|CONFIG SET notify-keyspace-events KEA|SET a 1|PUBLISH ch1 hi|3>SSUBSCRIBE c|SPUBLISH c x|PUBSUB CHANNELS|PUBSUB NUMSUB ch1|2>UNSUBSCRIBE|2>HELLO 3|2>SUBSCRIBE __keyspace@0__:*|DEL a|3>PUNSUBSCRIBE"),
    ("server", "PING|ECHO a|HELLO 3|CLIENT SETNAME x|CLIENT INFO|CLIENT LIST|CLIENT REPLY SKIP|PING|CLIENT ID|COMMAND INFO get|COMMAND COUNT|COMMAND GETKEYS set a 1|CONFIG GET maxmemory*|CONFIG SET maxclients 100 timeout 5|CONFIG GET timeout|INFO|INFO keyspace|ROLE|TIME|LASTSAVE|CLUSTER KEYSLOT a|CLUSTER INFO|OBJECT HELP|RESET|QUIT"),
    ("sort", "RPUSH l 3 1 2|SADD s b a c|SET k:1 10|HSET h1 f1 5|SORT l|SORT l DESC LIMIT 0 2|SORT s ALPHA|SORT l BY k:* GET # GET h*->f1|SORT l BY nosort STORE z|SORT_RO s ALPHA DESC|SORT l BY w_* ASC STORE l"),
    ("eviction", "CONFIG SET maxmemory-policy allkeys-random|SET a 1|SET b 2|HSET h f1 1|SADD s 1|CONFIG SET maxmemory 1000|SET c 3|.|CONFIG SET maxmemory-policy volatile-ttl|SET a x PX 100|SET b y|CONFIG SET maxmemory-policy noeviction|SET z 1|CONFIG SET maxmemory 0"),
];

fn steps_of(family: &str) -> Vec<Step> {
    family
        .split('|')
        .map(|l| match l {
            "." => Step::Flush,
            "!" => Step::Tick,
            l if l.starts_with('~') => Step::Sleep(l[1..].parse().unwrap()),
            l => match l.split_once('>') {
                Some((c, rest)) if c.len() == 1 => parse_line(c.parse::<u8>().unwrap() - 1, rest),
                _ => parse_line(0, l),
            },
        })
        .collect()
}

/// The effects a family produces (run the way the engine target runs it).
fn effects_of(family: &str) -> Vec<u8> {
    let mut e = Engine::new(42);
    let mut fx = Vec::new();
    let mut now = 1_700_000_000_000i64;
    for (i, line) in family.split('|').enumerate() {
        if let Some(ms) = line.strip_prefix('~') {
            now += ms.parse::<i64>().unwrap();
            continue;
        }
        let (client, line) = match line.split_once('>') {
            Some((c, rest)) if c.len() == 1 => (c.parse().unwrap(), rest),
            _ => (1u64, line),
        };
        let mut b = BatchWriter::new();
        match line {
            "." => continue,
            "!" => b.record(batch::REC_TICK, 0, b""),
            l => {
                b.begin(batch::REC_COMMAND, client);
                let words: Vec<&str> = l.split(' ').collect();
                memoria_core::protocol::resp::encode_command(&mut b.buf, &words);
                b.end();
            }
        }
        for r in OutputReader::new(&e.execute(&b.buf, now * 1000, i as u64)) {
            fx.extend_from_slice(r.effects);
        }
    }
    fx
}

fn write(dir: &Path, target: &str, name: &str, bytes: &[u8]) {
    let d = dir.join(target);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join(name), bytes).unwrap();
}

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "core/fuzz/seeds".into());
    let dir = Path::new(&dir);

    // engine: one seed per family.
    for (name, fam) in FAMILIES {
        write(dir, "engine", name, &encode(&steps_of(fam)));
    }

    // resp: byte 0 = limits (low 2 bits) and read pattern (the rest).
    let resp: &[(&str, u8, &[u8])] = &[
        ("pipeline", 0, b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n"),
        ("pipeline-bytewise", 4, b"*2\r\n$4\r\nECHO\r\n$5\r\nhe\r\nl\r\n*1\r\n$4\r\nPING\r\n"),
        ("inline", 0, b"set k \"a b\\x41\\n\" 'c\\'d'\r\nPING\r\n\r\nget k\n"),
        ("inline-cr-cuts", 8, b"ECHO \"x\r\ny\"\r\nPING\r\n"),
        ("skip-and-quit", 0, b"*0\r\n*-1\r\n*1\r\n$4\r\nQUIT\r\n*1\r\n$4\r\nPING\r\n"),
        ("small-limits", 1, b"*9\r\n$1\r\na\r\n"),
        ("tiny-limits", 2, b"*1\r\n$2\r\nab\r\n"),
        ("bulk-limit", 3, b"*1\r\n$100\r\n"),
        ("bad-dollar", 0, b"*1\r\n+a\r\n"),
        ("bad-len", 12, b"*1\r\n$-1\r\n*x\r\n"),
        ("unbalanced", 0, b"\"abc\r\n"),
        ("nul-inline", 0, b"ping\x00junk\r\n"),
        ("half-bulk", 16, b"*2\r\n$3\r\nGET\r\n$10\r\nabc"),
    ];
    for (name, cfg, body) in resp {
        let mut v = vec![*cfg];
        v.extend_from_slice(body);
        write(dir, "resp", name, &v);
    }

    // log: wire bodies around real effects, payloads, raw effects and snapshot records.
    let fx_all: Vec<Vec<u8>> = FAMILIES.iter().map(|(_, f)| effects_of(f)).collect();
    let sel = |s: u8, b: &[u8]| {
        let mut v = vec![s];
        v.extend_from_slice(b);
        v
    };
    let lease = LeasePayload { node: "127.0.0.1:6380".into(), lease_ms: 1500 }.encode();
    let mut prev = chain::GENESIS;
    let mut entries = Vec::new();
    for (i, (kind, payload)) in [(Kind::LeaderClaim, lease.clone()), (Kind::Data, Bytes::from(fx_all[0].clone())), (Kind::LeaseRenewal, lease.clone()), (Kind::Data, Bytes::from(fx_all[1].clone()))].into_iter().enumerate() {
        let id = i as u64 + 1;
        let checksum = chain::link(&prev, id, 1, kind, 1, &payload);
        entries.push(Entry { id, prev_id: id - 1, epoch: 1, kind, format: 1, payload, checksum });
        prev = checksum;
    }
    write(dir, "log", "read-batch", &sel(1, &ReadBatch { tail_id: 4, entries }.encode()));
    let req = AppendRequest {
        prev_id: 4,
        epoch: 2,
        prev_checksum: Some(prev),
        entries: vec![NewEntry::data(Bytes::from(fx_all[2].clone())), NewEntry::new(Kind::LeaseRenewal, lease.clone())],
    };
    write(dir, "log", "append", &sel(0, &req.encode()));
    write(dir, "log", "appended", &sel(2, &Appended { first_id: 5, last_id: 7, checksum: prev }.encode()));
    write(dir, "log", "lease", &sel(3, &lease));
    write(dir, "log", "mark", &sel(4, &MarkPayload { id: 4, checksum: prev }.encode()));
    write(dir, "log", "hex", &sel(7, prev.to_hex().as_bytes()));
    let _ = Checksum::from_hex(&prev.to_hex());
    for (i, (name, fam)) in FAMILIES.iter().enumerate() {
        if !fx_all[i].is_empty() {
            write(dir, "log", &format!("effects-{name}"), &sel(5, &fx_all[i]));
        }
        // The family's data set as snapshot key records.
        let mut e = Engine::new(1);
        e.apply(&effects_of(fam), 1_700_000_000_000_000).unwrap();
        let chunk = e.dump(0, 0, usize::MAX);
        if !chunk.data.is_empty() {
            write(dir, "log", &format!("snapshot-{name}"), &sel(6, &chunk.data));
        }
    }
}
