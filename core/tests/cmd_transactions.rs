//! MULTI/EXEC/DISCARD/WATCH/UNWATCH: queueing, EXECABORT, runtime errors inside EXEC,
//! optimistic locking against other clients, expiry and flushes of watched keys, and the
//! effects of one EXEC landing in one output record.

mod cmdutil;
mod common;

use cmdutil::*;
use common::{H, NIL, OK, bulk, err, int};
use memoria_core::protocol::batch::{self, BatchWriter, OutputReader};
use memoria_core::protocol::resp::encode_command;

const Q: &str = "+QUEUED\r\n";
const T0: i64 = 1_700_000_000_000;

#[test]
fn multi_exec_basics() {
    let mut h = H::new();
    ck(&mut h, "EXEC", err("ERR EXEC without MULTI"));
    ck(&mut h, "DISCARD", err("ERR DISCARD without MULTI"));
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "MULTI", err("ERR MULTI calls can not be nested"));
    ck(&mut h, "SET a 1", Q);
    ck(&mut h, "INCR a", Q);
    ck(&mut h, "HSET a f v", Q);
    ck(&mut h, "GET a", Q);
    // A nested MULTI is an error but does not abort; runtime errors are per command.
    ck(&mut h, "EXEC", format!("*4\r\n+OK\r\n:2\r\n{}{}", err("WRONGTYPE Operation against a key holding the wrong kind of value"), bulk("2")));
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "EXEC", "*0\r\n");
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "SET k v", Q);
    ck(&mut h, "DISCARD", OK);
    ck(&mut h, "GET k", NIL);
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "WATCH x", err("ERR WATCH inside MULTI is not allowed"));
    ck(&mut h, "UNWATCH", Q);
    ck(&mut h, "PING", Q);
    ck(&mut h, "SET a 2 EX 0", Q);
    ck(&mut h, "GET a", Q);
    ck(&mut h, "EXEC", format!("*4\r\n+OK\r\n+PONG\r\n{}{}", err("ERR invalid expire time in 'set' command"), bulk("2")));
    ck(&mut h, "WATCH", err("ERR wrong number of arguments for 'watch' command"));
    // Commands of other clients run at once while one client queues.
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "SET shared mine", Q);
    h.client = 2;
    ck(&mut h, "SET shared theirs", OK);
    ck(&mut h, "EXEC", err("ERR EXEC without MULTI"));
    h.client = 1;
    ck(&mut h, "EXEC", "*1\r\n+OK\r\n");
    ck(&mut h, "GET shared", bulk("mine"));
}

#[test]
fn execabort_on_queue_errors() {
    let mut h = H::new();
    for bad in ["SET a", "NOSUCH x", "GET", "CONFIG FOO", "HSET h f"] {
        ck(&mut h, "MULTI", OK);
        ck(&mut h, "SET b 2", Q);
        let r = h.c(bad);
        assert!(r.starts_with("-ERR "), "{bad}: {r:?}");
        ck(&mut h, "SET c 3", Q);
        ck(&mut h, "EXEC", err("EXECABORT Transaction discarded because of previous errors."));
        ck(&mut h, "EXISTS b c", int(0));
        // The transaction is over.
        ck(&mut h, "EXEC", err("ERR EXEC without MULTI"));
    }
    // EXEC with arguments is rejected as Redis's execCommandAbort does: the transaction
    // is discarded, and the same answer comes outside MULTI.
    ck(&mut h, "EXEC x", err("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command"));
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "SET b 2", Q);
    ck(&mut h, "EXEC x", err("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command"));
    ck(&mut h, "EXEC", err("ERR EXEC without MULTI"));
    ck(&mut h, "EXISTS b", int(0));
    // DISCARD after a queue error is fine.
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "NOSUCH", err("ERR unknown command 'NOSUCH', with args beginning with: "));
    ck(&mut h, "DISCARD", OK);
    assert!(h.effect_lines().is_empty());
}

#[test]
fn select_and_protocol_inside_exec() {
    let mut h = H::new();
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "SELECT 2", Q);
    ck(&mut h, "SET s 1", Q);
    ck(&mut h, "SELECT 99", Q);
    ck(&mut h, "EXEC", format!("*3\r\n+OK\r\n+OK\r\n{}", err("ERR DB index is out of range")));
    ck(&mut h, "GET s", bulk("1"));
    assert_eq!(h.effect_lines(), ["2:SET s 1"]);
    // HELLO inside EXEC switches the protocol for the replies after it.
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "HELLO 3", Q);
    ck(&mut h, "GET nokey", Q);
    let r = h.c("EXEC");
    assert!(r.starts_with("*2\r\n%7\r\n") && r.ends_with("*0\r\n_\r\n"), "{r:?}");
    ck(&mut h, "GET nokey", "_\r\n");
}

#[test]
fn watch_other_client_touches_key() {
    let mut h = H::new();
    h.c("SET k 1");
    ck(&mut h, "WATCH k", OK);
    h.client = 2;
    ck(&mut h, "SET k 2", OK);
    h.client = 1;
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "SET k 3", Q);
    ck(&mut h, "EXEC", "*-1\r\n");
    ck(&mut h, "GET k", bulk("2"));
    // EXEC unwatched everything: the next transaction goes through.
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "SET k 3", Q);
    ck(&mut h, "EXEC", "*1\r\n+OK\r\n");

    // A change to an unwatched key does not matter; nor does a read of the watched one.
    ck(&mut h, "WATCH k", OK);
    h.client = 2;
    h.c("SET other 1");
    h.c("GET k");
    h.c("EXISTS k");
    h.client = 1;
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "INCR k", Q);
    ck(&mut h, "EXEC", "*1\r\n:4\r\n");

    // Every kind of write counts: DEL, EXPIRE, HSET on a missing key, RENAME onto it…
    for write in ["DEL k", "EXPIRE k 100", "APPEND k x", "INCR k", "RENAME src k", "FLUSHALL", "FLUSHDB", "SET k 1 KEEPTTL", "GETDEL k", "COPY src k REPLACE"] {
        let mut h = H::new();
        h.c("SET k 1");
        h.c("SET src s");
        ck(&mut h, "WATCH k", OK);
        h.client = 2;
        h.c(write);
        h.client = 1;
        ck(&mut h, "MULTI", OK);
        ck(&mut h, "SET k mine", Q);
        ck(&mut h, "EXEC", "*-1\r\n");
    }
    // A key watched while missing and then created.
    let mut h = H::new();
    ck(&mut h, "WATCH h", OK);
    h.client = 2;
    h.c("HSET h f v");
    h.client = 1;
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "HSET h f mine", Q);
    ck(&mut h, "EXEC", "*-1\r\n");
    ck(&mut h, "HGET h f", bulk("v"));
    // Own writes before MULTI count too.
    ck(&mut h, "WATCH h", OK);
    ck(&mut h, "HSET h g 1", int(1));
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "PING", Q);
    ck(&mut h, "EXEC", "*-1\r\n");
    // RESP3: a failed EXEC is a null.
    assert!(h.c("HELLO 3").starts_with("%7\r\n"));
    ck(&mut h, "WATCH h", OK);
    h.client = 2;
    h.c("HDEL h f");
    h.client = 1;
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "EXEC", "_\r\n");
}

#[test]
fn watch_scoping() {
    let mut h = H::new();
    // Same key name in another database is another key.
    h.c("SELECT 1");
    ck(&mut h, "WATCH k", OK);
    h.client = 2;
    h.c("SET k x");
    h.client = 1;
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "SET k y", Q);
    ck(&mut h, "EXEC", "*1\r\n+OK\r\n");
    // UNWATCH and DISCARD forget the watches.
    ck(&mut h, "WATCH k", OK);
    ck(&mut h, "UNWATCH", OK);
    h.c("SET k z");
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "EXEC", "*0\r\n");
    ck(&mut h, "WATCH k", OK);
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "DISCARD", OK);
    h.c("SET k w");
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "EXEC", "*0\r\n");
    // Another client's watches are its own.
    h.client = 2;
    ck(&mut h, "SELECT 1", OK);
    ck(&mut h, "WATCH k", OK);
    h.client = 1;
    ck(&mut h, "WATCH k", OK);
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "SET k mine", Q);
    ck(&mut h, "EXEC", "*1\r\n+OK\r\n");
    h.client = 2;
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "SET k theirs", Q);
    ck(&mut h, "EXEC", "*-1\r\n");
    // A disconnected client's watches go away with it.
    let mut b = BatchWriter::new();
    b.record(batch::REC_DISCONNECT, 2, b"");
    h.e.execute(&b.buf, h.now_ms * 1000, 1);
    h.client = 1;
    ck(&mut h, "SET k again", OK);
    assert_eq!(h.e.st.watched.len(), 0);
    // FLUSHDB of a database without the watched key does not abort.
    ck(&mut h, "WATCH k", OK);
    h.client = 3;
    h.c("SELECT 4");
    h.c("SET q 1");
    h.c("FLUSHDB");
    h.client = 1;
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "EXEC", "*0\r\n");
    // Nor does FLUSHALL when the watched key does not exist.
    ck(&mut h, "WATCH missing", OK);
    h.client = 3;
    h.c("FLUSHALL");
    h.client = 1;
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "EXEC", "*0\r\n");
}

#[test]
fn watch_and_expiry() {
    // A watched key that expires before EXEC aborts the transaction (Redis 7.0).
    let mut h = H::new();
    h.c("SET k v PX 100");
    ck(&mut h, "WATCH k", OK);
    h.advance(100);
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "GET k", Q);
    ck(&mut h, "EXEC", "*-1\r\n");
    // Same when the expiry was already noticed (lazily deleted) by another client.
    let mut h = H::new();
    h.c("SET k v PX 100");
    ck(&mut h, "WATCH k", OK);
    h.advance(100);
    h.client = 2;
    ck(&mut h, "GET k", NIL);
    h.client = 1;
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "EXEC", "*-1\r\n");
    // … or by active expiry.
    let mut h = H::new();
    h.c("SET k v PX 100");
    ck(&mut h, "WATCH k", OK);
    h.advance(100);
    for _ in 0..20 {
        h.seed += 1;
        h.tick();
    }
    assert_eq!(h.e.dbsize(0), 0);
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "EXEC", "*-1\r\n");
    // A key that had already expired when watched is no change.
    let mut h = H::new();
    h.c("SET k v PX 100");
    h.advance(200);
    ck(&mut h, "WATCH k", OK);
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "PING", Q);
    ck(&mut h, "EXEC", "*1\r\n+PONG\r\n");
    // A TTL that is still in the future at EXEC is fine.
    let mut h = H::new();
    h.c("SET k v PX 100");
    ck(&mut h, "WATCH k", OK);
    h.advance(99);
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "GET k", Q);
    ck(&mut h, "EXEC", format!("*1\r\n{}", bulk("v")));
}

#[test]
fn exec_lazy_expiry_inside() {
    let mut h = H::new();
    h.c("SET k v PX 50");
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "GET k", Q);
    ck(&mut h, "SET j w EX 10", Q);
    h.advance(50);
    let mark = fx_len(&h);
    ck(&mut h, "EXEC", format!("*2\r\n{NIL}+OK\r\n"));
    assert_eq!(fx_since(&h, mark), ["0:DEL k".to_string(), format!("0:SET j w PXAT {}", T0 + 50 + 10_000)]);
}

/// Runs a whole batch of (client, command) records and returns each output record's
/// (client, flags, reply, effects-as-lines).
fn run_batch(h: &mut H, cmds: &[(u64, &str)]) -> Vec<(u64, u8, String, Vec<String>)> {
    let mut b = BatchWriter::new();
    for (c, line) in cmds {
        b.begin(batch::REC_COMMAND, *c);
        let args: Vec<&str> = line.split(' ').collect();
        encode_command(&mut b.buf, &args);
        b.end();
    }
    let out = h.e.execute(&b.buf, h.now_ms * 1000, 99);
    OutputReader::new(&out)
        .map(|r| {
            let fx: Vec<String> = memoria_core::protocol::batch::EffectReader::new(r.effects)
                .map(|fx| {
                    let mut args = Vec::new();
                    memoria_core::protocol::resp::read_command(fx.command, &mut args).unwrap();
                    let parts: Vec<String> = args.iter().map(|&(a, b)| String::from_utf8_lossy(&fx.command[a..b]).into_owned()).collect();
                    format!("{}:{}", fx.db, parts.join(" "))
                })
                .collect();
            (r.client, r.flags, String::from_utf8_lossy(r.reply).into_owned(), fx)
        })
        .collect()
}

#[test]
fn exec_effects_are_one_record() {
    let mut h = H::new();
    h.c("SET n 10");
    h.c("HSET h a 1");
    let out = run_batch(
        &mut h,
        &[
            (1, "MULTI"),
            (1, "INCR n"),
            (2, "SET other 1"),
            (1, "SET k v EX 5"),
            (1, "HINCRBYFLOAT h a 0.5"),
            (1, "GET k"),
            (1, "SELECT 3"),
            (1, "DEL gone"),
            (1, "SET z 1"),
            (1, "EXEC"),
            (1, "GET z"),
        ],
    );
    assert_eq!(out.len(), 11);
    // Queued commands reply QUEUED and replicate nothing.
    for (i, rec) in out.iter().enumerate() {
        if (1..=8).contains(&i) && i != 2 {
            assert_eq!(rec.2, Q, "record {i}");
            assert!(rec.3.is_empty() && rec.1 & batch::OUT_WRITE == 0, "record {i}: {rec:?}");
        }
    }
    assert_eq!(out[2].3, ["0:SET other 1"]);
    let exec = &out[9];
    assert_eq!(exec.0, 1);
    assert_ne!(exec.1 & batch::OUT_WRITE, 0, "EXEC is a write record");
    assert_eq!(exec.2, format!("*7\r\n:11\r\n+OK\r\n{}{}+OK\r\n:0\r\n+OK\r\n", bulk("1.5"), bulk("v")));
    assert_eq!(exec.3, ["0:INCR n".to_string(), format!("0:SET k v PXAT {}", T0 + 5000), "0:HSET h a 1.5".to_string(), "3:SET z 1".to_string()]);
    // The client stays in db 3 after EXEC.
    assert_eq!(out[10].2, bulk("1"));
    // A read-only or aborted EXEC replicates nothing.
    let out = run_batch(&mut h, &[(1, "MULTI"), (1, "GET z"), (1, "EXEC")]);
    assert!(out[2].3.is_empty() && out[2].1 & batch::OUT_WRITE == 0);
    let out = run_batch(&mut h, &[(1, "WATCH z"), (2, "SELECT 3"), (2, "SET z 2"), (1, "MULTI"), (1, "SET z 3"), (1, "EXEC")]);
    assert_eq!(out[5].2, "*-1\r\n");
    assert!(out[5].3.is_empty());
    let out = run_batch(&mut h, &[(1, "MULTI"), (1, "SET z 3"), (1, "SET"), (1, "EXEC")]);
    assert_eq!(out[3].2, err("EXECABORT Transaction discarded because of previous errors."));
    assert!(out[3].3.is_empty());
}

#[test]
fn exec_effects_replay_to_same_digest() {
    let mut h = H::new();
    h.c("MSET a 1 b 2");
    h.c("MULTI");
    h.c("INCRBYFLOAT a 1.5");
    h.c("EXPIRE b 100");
    h.c("SET c 3 PX 500");
    h.c("HSET h f v");
    h.c("DEL a");
    h.c("SELECT 1");
    h.c("SET x y");
    h.c("EXEC");
    let mut replica = memoria_core::Engine::new(42);
    replica.apply(&h.effects, h.now_ms * 1000).unwrap();
    assert_eq!(replica.digest(), h.e.digest());
}
