//! MIGRATE in the engine: the transfer it asks the host for (REC_MIGRATE: AUTH, SELECT and
//! the RESTOREs, byte for byte), and how it ends with what the host reports
//! (REC_MIGRATED): keys the target accepted are deleted and logged as DEL, a key written
//! during the transfer is kept, errors are Redis's.

mod common;

use common::H;
use memoria_core::protocol::batch::{self, BatchWriter, MigrateOutcome, MigrateRequest, OutputReader};
use memoria_core::protocol::resp::encode_command;

/// Runs MIGRATE (or anything) as client `who`: the first record's reply and flags, and the
/// REC_MIGRATE request if one follows.
fn run(h: &mut H, who: u64, args: &[&[u8]]) -> (String, u8, Option<MigrateRequest>) {
    let mut b = BatchWriter::new();
    b.begin(batch::REC_COMMAND, who);
    encode_command(&mut b.buf, args);
    b.end();
    let out = h.e.execute(&b.buf, h.now_ms * 1000, 1);
    let recs: Vec<_> = OutputReader::new(&out).collect();
    h.effects.extend_from_slice(recs[0].effects);
    let req = recs.iter().find(|r| r.kind == batch::REC_MIGRATE).map(|r| MigrateRequest::decode(r.reply).expect("a readable request"));
    (String::from_utf8_lossy(recs[0].reply).into_owned(), recs[0].flags, req)
}

/// Reports a transfer's outcome for `who`: the answer record's reply and flags.
fn report(h: &mut H, who: u64, outcome: &MigrateOutcome) -> (String, u8) {
    let mut b = BatchWriter::new();
    b.record(batch::REC_MIGRATED, who, &outcome.encode());
    let out = h.e.execute(&b.buf, h.now_ms * 1000, 1);
    let rec = OutputReader::new(&out).next().expect("a record");
    assert_eq!(rec.kind, batch::REC_MIGRATED);
    h.effects.extend_from_slice(rec.effects);
    (String::from_utf8_lossy(rec.reply).into_owned(), rec.flags)
}

fn lines(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|l| l.as_bytes().to_vec()).collect()
}

fn cmds(v: &[&[&[u8]]]) -> Vec<u8> {
    let mut out = Vec::new();
    for c in v {
        encode_command(&mut out, c);
    }
    out
}

#[test]
fn asks_the_host_for_auth_select_and_restores() {
    let mut h = H::new();
    h.c("SET a 1");
    h.c("SET t x PX 5000");
    let payload_a = h.raw(&["DUMP", "a"]);
    let payload_t = h.raw(&["DUMP", "t"]);
    let body = |r: &[u8]| r[r.iter().position(|&c| c == b'\n').unwrap() + 1..r.len() - 2].to_vec();
    let (pa, pt) = (body(&payload_a), body(&payload_t));
    let (reply, flags, req) =
        run(&mut h, 1, &[b"MIGRATE", b"127.0.0.1", b"7001", b"", b"2", b"250", b"REPLACE", b"AUTH2", b"u", b"p", b"KEYS", b"a", b"none", b"t"]);
    assert_ne!(flags & batch::OUT_BLOCKED, 0, "the client waits for the transfer ({reply:?})");
    let req = req.expect("a REC_MIGRATE");
    assert_eq!((req.host.as_str(), req.port, req.timeout_ms, req.replies), ("127.0.0.1", 7001, 250, 4));
    let want = cmds(&[&[b"AUTH", b"u", b"p"], &[b"SELECT", b"2"], &[b"RESTORE", b"a", b"0", &pa, b"REPLACE"], &[b"RESTORE", b"t", b"5000", &pt, b"REPLACE"]]);
    assert_eq!(req.commands, want);
    // A timeout of 0 or less is 1000 ms, as in Redis.
    let (_, _, req) = run(&mut h, 2, &[b"MIGRATE", b"localhost", b"7001", b"a", b"0", b"0", b"COPY"]);
    assert_eq!(req.unwrap().timeout_ms, 1000);
}

#[test]
fn deletes_what_the_target_took_and_logs_del() {
    let mut h = H::new();
    h.c("MSET a 1 b 2 c 3");
    let (_, _, req) = run(&mut h, 1, &[b"MIGRATE", b"127.0.0.1", b"7001", b"", b"0", b"1000", b"KEYS", b"a", b"b", b"c"]);
    assert_eq!(req.unwrap().replies, 4);
    let mark = h.effect_lines().len();
    // `b` is refused by the target: kept here, and its error is the reply.
    let (reply, flags) = report(&mut h, 1, &MigrateOutcome::Replies(lines(&["+OK", "+OK", "-BUSYKEY Target key name already exists.", "+OK"])));
    assert_eq!(reply, "-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n");
    assert_ne!(flags & batch::OUT_UNBLOCKED, 0);
    assert_eq!(h.effect_lines()[mark..], ["0:DEL a c"]);
    assert_eq!(h.c("EXISTS a b c"), ":1\r\n");
    // All accepted: +OK.
    let (_, _, _) = run(&mut h, 1, &[b"MIGRATE", b"127.0.0.1", b"7001", b"b", b"0", b"1000"]);
    assert_eq!(report(&mut h, 1, &MigrateOutcome::Replies(lines(&["+OK", "+OK"]))).0, "+OK\r\n");
    assert_eq!(h.c("DBSIZE"), ":0\r\n");
    // Nothing there: +NOKEY at once, no transfer.
    let (reply, flags, req) = run(&mut h, 1, &[b"MIGRATE", b"127.0.0.1", b"7001", b"b", b"0", b"1000"]);
    assert_eq!((reply.as_str(), flags & batch::OUT_BLOCKED, req), ("+NOKEY\r\n", 0, None));
}

#[test]
fn copy_keeps_and_errors_keep_the_keys() {
    let mut h = H::new();
    h.c("SET a 1");
    run(&mut h, 1, &[b"MIGRATE", b"127.0.0.1", b"7001", b"a", b"0", b"1000", b"COPY"]);
    assert_eq!(report(&mut h, 1, &MigrateOutcome::Replies(lines(&["+OK", "+OK"]))).0, "+OK\r\n");
    assert_eq!(h.c("EXISTS a"), ":1\r\n");
    for (outcome, want) in [
        (MigrateOutcome::ConnectFailed, "-IOERR error or timeout connecting to the client\r\n"),
        (MigrateOutcome::Broken { writing: true, replies: vec![] }, "-IOERR error or timeout writing to target instance\r\n"),
        (MigrateOutcome::Broken { writing: false, replies: lines(&["+OK"]) }, "-IOERR error or timeout reading to target instance\r\n"),
        // AUTH's error comes first, then SELECT's, then the key's.
        (MigrateOutcome::Replies(lines(&["-WRONGPASS bad", "-NOAUTH x", "-NOAUTH y"])), "-ERR Target instance replied with error: WRONGPASS bad\r\n"),
    ] {
        let auth = matches!(&outcome, MigrateOutcome::Replies(_));
        let mut args: Vec<&[u8]> = vec![b"MIGRATE", b"127.0.0.1", b"7001", b"a", b"0", b"1000"];
        if auth {
            args.extend([&b"AUTH"[..], b"pw"]);
        }
        run(&mut h, 1, &args);
        assert_eq!(report(&mut h, 1, &outcome).0, want);
        assert_eq!(h.c("EXISTS a"), ":1\r\n", "kept after {want}");
    }
}

#[test]
fn a_key_written_during_the_transfer_is_kept() {
    // (Another client's write, seen as WATCH sees writes.)
    let mut h = H::new();
    h.c("MSET a 1 b 2");
    run(&mut h, 1, &[b"MIGRATE", b"127.0.0.1", b"7001", b"", b"0", b"1000", b"KEYS", b"a", b"b"]);
    // Another client writes `a` meanwhile; CLIENT UNBLOCK cannot end the transfer.
    assert_eq!(run(&mut h, 2, &[b"SET", b"a", b"newer"]).0, "+OK\r\n");
    assert_eq!(run(&mut h, 2, &[b"CLIENT", b"UNBLOCK", b"1"]).0, ":0\r\n");
    let (reply, _) = report(&mut h, 1, &MigrateOutcome::Replies(lines(&["+OK", "+OK", "+OK"])));
    assert_eq!(reply, "-ERR the target has the keys, but one was written here during the transfer and kept (first: 'a')\r\n");
    assert_eq!(h.c("GET a"), "$5\r\nnewer\r\n");
    assert_eq!(h.c("EXISTS b"), ":0\r\n");
}

#[test]
fn argument_errors_as_redis_words_them() {
    let mut h = H::new();
    h.c("SET a 1");
    let e = |h: &mut H, args: &[&[u8]]| run(h, 1, args).0;
    assert_eq!(
        e(&mut h, &[b"MIGRATE", b"h", b"1", b"a", b"0", b"10", b"KEYS", b"a"]),
        "-ERR When using MIGRATE KEYS option, the key argument must be set to the empty string\r\n"
    );
    assert_eq!(e(&mut h, &[b"MIGRATE", b"h", b"1", b"a", b"0", b"10", b"FOO"]), "-ERR syntax error\r\n");
    assert_eq!(e(&mut h, &[b"MIGRATE", b"h", b"1", b"a", b"0", b"10", b"AUTH"]), "-ERR syntax error\r\n");
    assert_eq!(e(&mut h, &[b"MIGRATE", b"h", b"1", b"a", b"0", b"x"]), "-ERR value is not an integer or out of range\r\n");
    assert_eq!(e(&mut h, &[b"MIGRATE", b"h", b"1", b"a", b"x", b"10"]), "-ERR value is not an integer or out of range\r\n");
    assert_eq!(e(&mut h, &[b"MIGRATE", b"h", b"99999", b"a", b"0", b"10"]), "-IOERR error or timeout connecting to the client\r\n");
    assert_eq!(e(&mut h, &[b"MIGRATE", b"h", b"1"]), "-ERR wrong number of arguments for 'migrate' command\r\n");
    // In MULTI it cannot wait for the target.
    h.c("MULTI");
    h.c("MIGRATE h 1 a 0 10");
    let exec = h.c("EXEC");
    assert!(exec.contains("MIGRATE cannot run inside MULTI"), "{exec}");
    // COMMAND GETKEYS finds the keys as Redis does.
    assert_eq!(h.c("COMMAND GETKEYS MIGRATE h 1 k 0 10"), "*1\r\n$1\r\nk\r\n");
    let keys = h.raw(&["COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "10", "COPY", "KEYS", "x", "y"]);
    assert_eq!(keys, b"*2\r\n$1\r\nx\r\n$1\r\ny\r\n");
}

#[test]
fn a_client_gone_before_the_report_is_forgotten() {
    let mut h = H::new();
    h.c("SET a 1");
    run(&mut h, 1, &[b"MIGRATE", b"127.0.0.1", b"7001", b"a", b"0", b"1000"]);
    let mut b = BatchWriter::new();
    b.record(batch::REC_DISCONNECT, 1, b"");
    h.e.execute(&b.buf, h.now_ms * 1000, 1);
    let (reply, flags) = report(&mut h, 1, &MigrateOutcome::Replies(lines(&["+OK", "+OK"])));
    assert_eq!((reply.as_str(), flags), ("", 0));
    assert_eq!(h.c("EXISTS a"), ":1\r\n");
}

#[test]
fn monitor_and_slowlog_hide_the_passwords() {
    use memoria_core::commands::migrate_to::migrate_secret;
    let argv: Vec<&[u8]> = vec![b"MIGRATE", b"h", b"1", b"", b"0", b"10", b"COPY", b"AUTH2", b"user", b"pw", b"AUTH", b"pw2", b"KEYS", b"AUTH", b"k"];
    let secret: Vec<usize> = (0..argv.len()).filter(|&i| migrate_secret(&argv, i)).collect();
    assert_eq!(secret, [8, 9, 11]);
}

#[test]
fn a_restore_of_the_same_value_during_the_transfer_keeps_the_key() {
    // MIGRATE to this very server with REPLACE: the target's RESTORE rewrites the key with
    // the same value while the transfer runs; deleting it then would lose it everywhere.
    let mut h = H::new();
    h.c("SET k v");
    let dump = h.raw(&["DUMP", "k"]);
    let payload = &dump[dump.iter().position(|&c| c == b'\n').unwrap() + 1..dump.len() - 2];
    run(&mut h, 1, &[b"MIGRATE", b"127.0.0.1", b"7001", b"k", b"0", b"1000", b"REPLACE"]);
    assert_eq!(run(&mut h, 2, &[b"RESTORE", b"k", b"0", payload, b"REPLACE"]).0, "+OK\r\n");
    let (reply, _) = report(&mut h, 1, &MigrateOutcome::Replies(lines(&["+OK", "+OK"])));
    assert!(reply.starts_with("-ERR the target has the keys, but one was written here"), "{reply}");
    assert_eq!(h.c("GET k"), "$1\r\nv\r\n");
}

#[test]
fn reads_during_the_transfer_do_not_keep_a_key() {
    // A large hash mid-rehash: HRANDFIELD moves buckets (and iteration order) but writes
    // nothing, so the key still moves.
    let mut h = H::new();
    for i in 0..2000 {
        h.c(&format!("HSET big f{i} v"));
    }
    run(&mut h, 1, &[b"MIGRATE", b"127.0.0.1", b"7001", b"big", b"0", b"1000"]);
    for _ in 0..50 {
        run(&mut h, 2, &[b"HRANDFIELD", b"big", b"3"]);
    }
    assert_eq!(report(&mut h, 1, &MigrateOutcome::Replies(lines(&["+OK", "+OK"]))).0, "+OK\r\n");
    assert_eq!(h.c("EXISTS big"), ":0\r\n");
}

#[test]
fn during_client_pause_the_keys_stay() {
    let mut h = H::new();
    h.c("SET k v");
    run(&mut h, 1, &[b"MIGRATE", b"127.0.0.1", b"7001", b"k", b"0", b"1000"]);
    assert_eq!(run(&mut h, 2, &[b"CLIENT", b"PAUSE", b"100000", b"WRITE"]).0, "+OK\r\n");
    let mark = h.effect_lines().len();
    let (reply, _) = report(&mut h, 1, &MigrateOutcome::Replies(lines(&["+OK", "+OK"])));
    assert!(reply.contains("writes are paused (CLIENT PAUSE)"), "{reply}");
    assert_eq!(h.effect_lines().len(), mark, "nothing logged during the pause");
    assert_eq!(h.c("EXISTS k"), ":1\r\n");
}

#[test]
fn a_password_named_keys_is_a_password() {
    // The key positions come from the same reading of the options as the command's: a
    // password "keys" neither hides the key from ACL and cluster routing nor names others.
    let mut h = H::new();
    assert_eq!(h.c("COMMAND GETKEYS MIGRATE h 1 secret 0 10 AUTH keys"), "*1\r\n$6\r\nsecret\r\n");
    let keys = h.raw(&["COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "10", "AUTH2", "keys", "pw", "KEYS", "a"]);
    assert_eq!(keys, b"*1\r\n$1\r\na\r\n");
    h.c("ACL SETUSER u on nopass ~allowed* +@all");
    h.c("SET secret s");
    h.c("AUTH u x");
    let r = h.c("MIGRATE 127.0.0.1 7001 secret 0 10 AUTH keys");
    assert!(r.starts_with("-NOPERM"), "{r}");
}

#[test]
fn missing_keys_are_found_before_the_target() {
    let mut h = H::new();
    assert_eq!(run(&mut h, 1, &[b"MIGRATE", b"h", b"99999", b"nokey", b"0", b"10"]).0, "+NOKEY\r\n");
}
