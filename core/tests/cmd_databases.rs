//! The 16 databases of a standalone server: SELECT, MOVE, SWAPDB, COPY … DB, FLUSHDB and
//! the counts per database, WATCH across them, and effects that replay every database.
//! Replies recorded from redis-server 7.0.15.

mod cmdutil;
mod common;

use cmdutil::*;
use common::*;

const OK: &str = "+OK\r\n";

#[test]
fn move_between_databases() {
    let mut h = H::new();
    ck(&mut h, "SET a 1", OK);
    ck(&mut h, "PEXPIRE a 100000", int(1));
    ck(&mut h, "MOVE a 1", int(1));
    ck(&mut h, "MOVE a 1", int(0));
    ck(&mut h, "MOVE nokey 2", int(0));
    ck(&mut h, "MOVE a x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "MOVE a 99999999999", err("ERR value is out of range, value must between -2147483648 and 2147483647"));
    ck(&mut h, "MOVE a -1", err("ERR DB index is out of range"));
    ck(&mut h, "MOVE a 16", err("ERR DB index is out of range"));
    ck(&mut h, "MOVE a 0", err("ERR source and destination objects are the same"));
    ck(&mut h, "SELECT 1", OK);
    ck(&mut h, "GET a", bulk("1"));
    // The TTL travels with the key.
    assert!(int_of(&h.c("PTTL a")) > 99_000);
    // Not moved onto an existing key.
    ck(&mut h, "SELECT 0", OK);
    ck(&mut h, "SET a 0", OK);
    ck(&mut h, "SELECT 1", OK);
    ck(&mut h, "MOVE a 0", int(0));
    ck(&mut h, "GET a", bulk("1"));
    ck(&mut h, "DBSIZE", int(1));
    ck(&mut h, "MOVE", err("ERR wrong number of arguments for 'move' command"));
}

#[test]
fn swapdb_exchanges_data_not_clients() {
    let mut h = H::new();
    ck(&mut h, "SET a 0", OK);
    ck(&mut h, "SELECT 1", OK);
    ck(&mut h, "SET b 1", OK);
    ck(&mut h, "SET c 1", OK);
    ck(&mut h, "SWAPDB 0 1", OK);
    // This client stays in database 1, which now holds database 0's keys.
    ck(&mut h, "DBSIZE", int(1));
    ck(&mut h, "GET a", bulk("0"));
    ck(&mut h, "SELECT 0", OK);
    ck(&mut h, "MGET b c a", bulks(&["1", "1"]).replace("*2", "*3") + "$-1\r\n");
    ck(&mut h, "SWAPDB 3 3", OK);
    ck(&mut h, "SWAPDB x 1", err("ERR invalid first DB index"));
    ck(&mut h, "SWAPDB 0 y", err("ERR invalid second DB index"));
    ck(&mut h, "SWAPDB 0 99999999999", err("ERR invalid second DB index"));
    ck(&mut h, "SWAPDB 0 16", err("ERR DB index is out of range"));
    ck(&mut h, "SWAPDB -1 0", err("ERR DB index is out of range"));
    let info = bulk_text(&h.c("INFO keyspace"));
    assert_eq!(info, "# Keyspace\r\ndb0:keys=2,expires=0,avg_ttl=0\r\ndb1:keys=1,expires=0,avg_ttl=0\r\n");
}

#[test]
fn select_copy_and_flushdb_per_database() {
    let mut h = H::new();
    ck(&mut h, "SELECT 99999999999", err("ERR value is out of range, value must between -2147483648 and 2147483647"));
    ck(&mut h, "SELECT x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "SELECT 16", err("ERR DB index is out of range"));
    ck(&mut h, "SET k v", OK);
    ck(&mut h, "COPY k k DB 5", int(1));
    ck(&mut h, "COPY k k DB 99999999999", err("ERR value is out of range, value must between -2147483648 and 2147483647"));
    ck(&mut h, "COPY k k DB x", err("ERR value is not an integer or out of range"));
    ck(&mut h, "COPY k k", err("ERR source and destination objects are the same"));
    ck(&mut h, "SELECT 5", OK);
    ck(&mut h, "GET k", bulk("v"));
    ck(&mut h, "FLUSHDB", OK);
    ck(&mut h, "DBSIZE", int(0));
    ck(&mut h, "SELECT 0", OK);
    ck(&mut h, "DBSIZE", int(1));
    ck(&mut h, "RANDOMKEY", bulk("k"));
}

#[test]
fn watch_sees_move_and_swapdb() {
    for (here, there, write) in [
        ("SET k 1", "PING", "MOVE k 1"),
        ("SET k 1", "SET k other", "SWAPDB 0 1"),
        // A watched key missing here but present in the other database changes too.
        ("PING", "SET k other", "SWAPDB 1 0"),
    ] {
        let mut h = H::new();
        h.c(here);
        h.client = 3;
        h.c("SELECT 1");
        h.c(there);
        h.client = 1;
        ck(&mut h, "WATCH k", OK);
        h.client = 2;
        h.c(write);
        h.client = 1;
        ck(&mut h, "MULTI", OK);
        ck(&mut h, "SET k mine", "+QUEUED\r\n");
        ck(&mut h, "EXEC", "*-1\r\n");
    }
    // A MOVE refused (the target has the key) and a SWAPDB of two other databases leave
    // the watched key alone.
    let mut h = H::new();
    h.c("SET k 1");
    ck(&mut h, "WATCH k", OK);
    h.client = 2;
    h.c("SELECT 1");
    h.c("SET k other");
    h.c("SELECT 0");
    ck(&mut h, "MOVE k 1", int(0));
    h.c("SWAPDB 2 3");
    h.client = 1;
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "SET k mine", "+QUEUED\r\n");
    ck(&mut h, "EXEC", "*1\r\n+OK\r\n");
}

#[test]
fn effects_replay_every_database() {
    let mut h = H::new();
    h.c("SET a 1");
    h.c("MOVE a 3");
    h.c("SELECT 3");
    h.c("RPUSH l x y");
    h.c("COPY l l DB 7");
    h.c("SWAPDB 3 4");
    h.c("SELECT 7");
    h.c("SET z 1 PX 100000");
    h.c("SWAPDB 7 0");
    h.c("SELECT 4");
    h.c("MOVE a 0");
    assert_eq!(
        h.effect_lines(),
        ["0:SET a 1", "0:MOVE a 3", "3:RPUSH l x y", "3:COPY l l DB 7", "3:SWAPDB 3 4", "7:SET z 1 PXAT 1700000100000", "7:SWAPDB 7 0", "4:MOVE a 0"]
    );
    let mut replica = memoria_core::Engine::new(42);
    replica.apply(&h.effects, h.now_ms * 1000).unwrap();
    assert_eq!(replica.digest(), h.e.digest());
    ck(&mut h, "SELECT 0", OK);
    ck(&mut h, "MGET a z", bulks(&["1", "1"]));
    ck(&mut h, "SELECT 4", OK);
    ck(&mut h, "LRANGE l 0 -1", bulks(&["x", "y"]));
}
