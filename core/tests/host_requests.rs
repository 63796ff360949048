//! What the engine asks of its host in typed records (REC_WAIT, REC_FAILOVER) instead of
//! the host recognising commands by their replies: an accepted WAIT and FAILOVER add the
//! record right after their own; refused ones, other commands and the same commands
//! inside EXEC add none.

use memoria_core::engine::Engine;
use memoria_core::protocol::batch::{self, BatchWriter, OutputReader, WaitRequest};
use memoria_core::protocol::resp::encode_command;

/// Runs `cmds` for client 1 in one batch; the output records as (kind, reply).
fn run(e: &mut Engine, cmds: &[&[&str]]) -> Vec<(u8, Vec<u8>)> {
    let mut b = BatchWriter::new();
    for c in cmds {
        b.begin(batch::REC_COMMAND, 1);
        encode_command(&mut b.buf, c);
        b.end();
    }
    let out = e.execute(&b.buf, 1_700_000_000_000_000, 1);
    OutputReader::new(&out).map(|r| (r.kind, r.reply.to_vec())).collect()
}

fn engine() -> Engine {
    let mut e = Engine::new(1);
    let mut b = BatchWriter::new();
    b.record(batch::REC_CONNECT, 1, b"127.0.0.1:5000\n127.0.0.1:6379");
    e.execute(&b.buf, 1_700_000_000_000_000, 1);
    e
}

#[test]
fn an_accepted_wait_asks_the_host_to_count_replicas() {
    let mut e = engine();
    let out = run(&mut e, &[&["WAIT", "2", "100"], &["wait", "1", "0"], &["GET", "k"]]);
    assert_eq!(out.len(), 5, "{out:?}");
    assert_eq!(out[0], (batch::REC_COMMAND, b":0\r\n".to_vec()));
    assert_eq!(out[1].0, batch::REC_WAIT);
    assert_eq!(WaitRequest::decode(&out[1].1), Some(WaitRequest { numreplicas: 2, timeout_ms: 100 }));
    assert_eq!(out[2].0, batch::REC_COMMAND);
    assert_eq!(WaitRequest::decode(&out[3].1), Some(WaitRequest { numreplicas: 1, timeout_ms: 0 }));
    assert_eq!(out[4], (batch::REC_COMMAND, b"$-1\r\n".to_vec()));
    assert!(batch::is_extra(batch::REC_WAIT) && batch::is_extra(batch::REC_FAILOVER));
}

#[test]
fn a_refused_wait_asks_nothing() {
    let mut e = engine();
    let out = run(&mut e, &[&["WAIT", "x", "0"], &["WAIT", "1", "-1"], &["WAIT", "1"]]);
    assert!(out.iter().all(|(k, _)| *k == batch::REC_COMMAND), "{out:?}");
    assert!(out.iter().all(|(_, r)| r.starts_with(b"-ERR")), "{out:?}");
}

#[test]
fn an_accepted_failover_asks_the_host_to_step_down() {
    let mut e = engine();
    let out = run(&mut e, &[&["FAILOVER"], &["failover", "TIMEOUT", "10"], &["FAILOVER", "ABORT"]]);
    let kinds: Vec<u8> = out.iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, [batch::REC_COMMAND, batch::REC_FAILOVER, batch::REC_COMMAND, batch::REC_FAILOVER, batch::REC_COMMAND]);
    assert_eq!(out[0].1, b"+OK\r\n");
    assert!(out[1].1.is_empty());
    assert_eq!(out[4].1, b"-ERR No failover in progress.\r\n");
}

#[test]
fn inside_exec_wait_and_failover_answer_at_once() {
    let mut e = engine();
    let out = run(&mut e, &[&["MULTI"], &["WAIT", "1", "0"], &["FAILOVER"], &["EXEC"]]);
    assert!(out.iter().all(|(k, _)| *k == batch::REC_COMMAND), "{out:?}");
    assert_eq!(out[3].1, b"*2\r\n:0\r\n+OK\r\n");
}

#[test]
fn save_and_bgsave_ask_the_host_for_a_snapshot() {
    let mut e = engine();
    let out = run(&mut e, &[&["SAVE"], &["BGSAVE"], &["bgsave", "SCHEDULE"], &["BGSAVE", "x"], &["SAVE", "x"]]);
    let kinds: Vec<u8> = out.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        kinds,
        [batch::REC_COMMAND, batch::REC_SAVE, batch::REC_COMMAND, batch::REC_SAVE, batch::REC_COMMAND, batch::REC_SAVE, batch::REC_COMMAND, batch::REC_COMMAND]
    );
    assert_eq!((out[0].1.as_slice(), out[1].1.as_slice()), (&b"+OK\r\n"[..], &[0u8][..]), "SAVE: +OK, held by the host");
    assert_eq!((out[2].1.as_slice(), out[3].1.as_slice()), (&b"+Background saving started\r\n"[..], &[1u8][..]));
    assert_eq!(out[5].1, [2u8], "BGSAVE SCHEDULE");
    assert_eq!(out[6].1, b"-ERR syntax error\r\n");
    assert_eq!(out[7].1, b"-ERR wrong number of arguments for 'save' command\r\n");
    assert!(batch::is_extra(batch::REC_SAVE));
    // Inside a transaction SAVE is refused as Redis refuses it, and asks nothing.
    let out = run(&mut e, &[&["MULTI"], &["SAVE"], &["EXEC"]]);
    assert!(out.iter().all(|(k, _)| *k == batch::REC_COMMAND), "{out:?}");
    assert_eq!(out[1].1, b"-ERR Command not allowed inside a transaction\r\n");
}

#[test]
fn lastsave_is_the_host_s_last_snapshot() {
    let mut e = engine();
    let started = run(&mut e, &[&["LASTSAVE"]]);
    let mut b = BatchWriter::new();
    b.record(batch::REC_ROLE, 0, b"primary\npersistence.rdb_last_save_time:1800000000\n");
    e.execute(&b.buf, 1_700_000_000_000_000, 1);
    let out = run(&mut e, &[&["LASTSAVE"], &["INFO", "persistence"]]);
    assert_ne!(started[0].1, out[0].1);
    assert_eq!(out[0].1, b":1800000000\r\n");
    assert!(String::from_utf8_lossy(&out[1].1).contains("rdb_last_save_time:1800000000\r\n"));
}

#[test]
fn shutdown_asks_the_host_to_stop() {
    let mut e = engine();
    let out = run(&mut e, &[&["SHUTDOWN", "NOSAVE"], &["SHUTDOWN", "ABORT"], &["SHUTDOWN", "SAVE", "NOSAVE"]]);
    let kinds: Vec<u8> = out.iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, [batch::REC_COMMAND, batch::REC_SHUTDOWN, batch::REC_COMMAND, batch::REC_COMMAND]);
    // The reply if the host cannot stop; a stopping host closes the connection instead.
    assert_eq!(out[0].1, b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n");
    assert_eq!(out[2].1, b"-ERR No shutdown in progress.\r\n");
    assert_eq!(out[3].1, b"-ERR syntax error\r\n");
    assert!(batch::is_extra(batch::REC_SHUTDOWN));
}
