//! DEBUG: refused as Redis 7 refuses it unless `enable-debug-command` allows it (for
//! loopback clients only with `local`), and the subcommands Memoria has.

mod common;

use common::{H, OK, err};
use memoria_core::protocol::batch::{self, BatchWriter};

const NOT_ALLOWED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";

/// The host's start-up setting (REC_CONFIG), and a client connected from `addr`.
fn engine(setting: &str, addr: &str) -> H {
    let mut h = H::new();
    let mut b = BatchWriter::new();
    b.record(batch::REC_CONFIG, 0, format!("enable-debug-command {setting}\n").as_bytes());
    b.record(batch::REC_CONNECT, h.client, format!("{addr}\n127.0.0.1:6379").as_bytes());
    h.e.execute(&b.buf, h.now_ms * 1000, 1);
    h
}

#[test]
fn refused_unless_the_node_allows_it() {
    let mut h = engine("no", "127.0.0.1:5000");
    assert_eq!(h.c("DEBUG OBJECT k"), err(NOT_ALLOWED));
    assert_eq!(h.c("DEBUG"), err("ERR wrong number of arguments for 'debug' command"));
    assert_eq!(h.c("CONFIG GET enable-debug-command"), "*2\r\n$20\r\nenable-debug-command\r\n$2\r\nno\r\n");
    assert!(h.c("CONFIG SET enable-debug-command yes").starts_with("-ERR CONFIG SET failed"));
    let mut h = engine("local", "10.1.2.3:5000");
    assert_eq!(h.c("DEBUG HELP"), err(NOT_ALLOWED));
    let mut h = engine("local", "127.0.0.1:5000");
    assert!(h.c("DEBUG HELP").starts_with("*"));
    let mut h = engine("yes", "10.1.2.3:5000");
    assert!(h.c("DEBUG HELP").starts_with("*"));
}

#[test]
fn object_digest_active_expire_and_sleep() {
    let mut h = engine("yes", "127.0.0.1:5000");
    assert_eq!(h.c("DEBUG OBJECT nokey"), err("ERR no such key"));
    h.c("SET s hello");
    let obj = h.c("DEBUG OBJECT s");
    assert!(obj.starts_with("+Value at:0x0 refcount:1 encoding:embstr serializedlength:6 lru:"), "{obj}");
    assert!(obj.contains(" lru_seconds_idle:"), "{obj}");
    h.c("RPUSH l a b c");
    // The encoding OBJECT ENCODING gives.
    let enc = h.c("OBJECT ENCODING l");
    let enc = enc.lines().nth(1).unwrap();
    assert!(h.c("DEBUG OBJECT l").contains(&format!(" encoding:{enc} ")));
    // The digest follows the data, whatever the order it was written in.
    let d1 = h.c("DEBUG DIGEST");
    assert_eq!(d1.len(), 1 + 32 + 2, "{d1}");
    let mut other = engine("yes", "127.0.0.1:5000");
    other.c("RPUSH l a b c");
    other.c("SET s hello");
    assert_eq!(other.c("DEBUG DIGEST"), d1);
    other.c("SET s bye");
    assert_ne!(other.c("DEBUG DIGEST"), d1);
    // SET-ACTIVE-EXPIRE 0: ticks leave an expired key alone; a read still expires it.
    h.c("SET e 1 PX 10");
    assert_eq!(h.c("DEBUG SET-ACTIVE-EXPIRE 0"), OK);
    h.advance(100);
    for _ in 0..20 {
        h.tick();
    }
    assert_eq!(h.c("DBSIZE"), ":3\r\n");
    assert_eq!(h.c("DEBUG SET-ACTIVE-EXPIRE 1"), OK);
    h.tick();
    assert_eq!(h.c("DBSIZE"), ":2\r\n");
    assert_eq!(h.c("DEBUG SET-ACTIVE-EXPIRE x"), err("ERR value is not an integer or out of range"));
    // No clock in this harness: SLEEP answers at once.
    assert_eq!(h.c("DEBUG SLEEP 0"), OK);
    assert_eq!(h.c("DEBUG SLEEP 0.5"), OK);
    assert_eq!(h.c("DEBUG SLEEP x"), err("ERR value is not a valid float"));
    assert_eq!(h.c("DEBUG NOSUCH"), err("ERR unknown subcommand 'NOSUCH'. Try DEBUG HELP."));
}
