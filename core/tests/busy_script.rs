//! A client's script that outlasts an engine call: it yields every slice of instructions
//! (REC_SUSPENDED), the host resumes it, and once it has run past `busy-reply-threshold`
//! other clients' batches get Redis's answers during a busy script: -BUSY, SCRIPT KILL,
//! FUNCTION KILL, FUNCTION STATS, MULTI/EXEC. Error texts recorded from redis-server
//! 7.0.15. Clock and slices are driven by hand, as the host drives them.

mod common;

use common::{NIL, OK, bulk, int};
use memoria_core::Engine;
use memoria_core::protocol::batch::{self, BatchWriter, OutputReader};
use memoria_core::protocol::resp::encode_command;

const BUSY_EVAL: &str = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";
const BUSY_FUNCTION: &str = "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n";
const UNKILLABLE: &str = "-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n";
const SPIN: &str = "local i = 0 while true do i = i + 1 end";

struct Shard {
    e: Engine,
    now_ms: i64,
    /// The records after a script that yielded: the host sends them again, as commands
    /// that came during the script.
    carried: Vec<u8>,
}

/// One output record: (kind, client, flags, reply).
type Out = (u8, u64, u8, String);

impl Shard {
    fn new() -> Shard {
        Shard { e: Engine::new(3), now_ms: 1_700_000_000_000, carried: Vec::new() }
    }

    fn execute(&mut self, cmds: &[(u64, &str)]) -> Vec<Out> {
        let mut b = BatchWriter::new();
        for &(client, line) in cmds {
            // Arguments split on '|' (scripts contain spaces).
            let args: Vec<&str> = line.split('|').collect();
            b.begin(batch::REC_COMMAND, client);
            encode_command(&mut b.buf, &args);
            b.end();
        }
        self.execute_records(&b.buf)
    }

    /// Runs a batch as the host does: a suspension's records after the script are kept
    /// in `carried`.
    fn execute_records(&mut self, input: &[u8]) -> Vec<Out> {
        let out = self.e.execute(input, self.now_ms * 1000, 9);
        if let Some(s) = batch::suspension(&out) {
            self.carried.extend_from_slice(&input[s.script.1..]);
        }
        records(&out)
    }

    /// Sends the carried records (before anything newer, as the host does).
    fn execute_carried(&mut self) -> Vec<Out> {
        let input = std::mem::take(&mut self.carried);
        self.execute_records(&input)
    }

    fn resume(&mut self) -> Vec<Out> {
        records(&self.e.resume(self.now_ms * 1000))
    }

    /// Runs one command of client 9 outside any script.
    fn c(&mut self, line: &str) -> String {
        let out = self.execute(&[(9, line)]);
        out[0].3.clone()
    }
}

fn records(out: &[u8]) -> Vec<Out> {
    OutputReader::new(out).map(|r| (r.kind, r.client, r.flags, String::from_utf8_lossy(r.reply).into_owned())).collect()
}

/// The flags of a REC_SUSPENDED output, which comes first (a batch's output before its
/// script follows it).
fn suspended(out: &[Out]) -> Option<u8> {
    match out {
        [(batch::REC_SUSPENDED, _, flags, _), ..] => Some(*flags),
        _ => None,
    }
}

/// Resumes until the script has run past the threshold (the clock moved past it).
fn until_busy(s: &mut Shard, first: Vec<Out>) {
    assert_eq!(suspended(&first), Some(0), "{first:?}");
    assert_eq!(suspended(&s.resume()), Some(0), "not busy before the threshold");
    s.now_ms += 150;
    assert_eq!(suspended(&s.resume()), Some(batch::SUSPENDED_BUSY));
}

#[test]
fn a_runaway_script_gets_others_busy_and_script_kill_stops_it() {
    let mut s = Shard::new();
    assert_eq!(s.c("CONFIG|SET|busy-reply-threshold|100"), OK);
    let first = s.execute(&[(1, &format!("EVAL|{SPIN}|0"))]);
    until_busy(&mut s, first);
    let out = s.execute(&[
        (2, "GET|x"),
        (2, "FUNCTION|KILL"),
        (2, "FUNCTION|STATS"),
        (3, "MULTI"),
        (3, "GET|x"),
        (3, "EXEC"),
        (3, "EXEC"),
        (4, "PING"),
        // The script's own client waits for its reply first.
        (1, "PING"),
        (2, "SCRIPT|KILL"),
    ]);
    let replies: Vec<&str> = out.iter().map(|r| r.3.as_str()).collect();
    let abort = "-EXECABORT Transaction discarded because of: BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";
    assert_eq!(replies, [BUSY_EVAL, BUSY_EVAL, BUSY_EVAL, OK, BUSY_EVAL, abort, abort, BUSY_EVAL, "", OK]);
    assert_eq!(out[8].2, batch::OUT_DEFERRED);
    let done = s.resume();
    assert_eq!(done.len(), 1);
    let sha = "3fcf51a9b854b8f66cb8685600b0d7df968f4398";
    assert_eq!(done[0].3, format!("-ERR Script killed by user with SCRIPT KILL... script: {sha}, on @user_script:1.\r\n"));
    // The shard serves normally again.
    assert_eq!(s.c("SCRIPT|KILL"), "-NOTBUSY No scripts in execution right now.\r\n");
    assert_eq!(s.c("SET|x|1"), OK);
    assert_eq!(s.c("EVAL|return redis.call('get', 'x')|0"), bulk("1"));
}

#[test]
fn a_script_that_wrote_cannot_be_killed() {
    let mut s = Shard::new();
    assert_eq!(s.c("CONFIG|SET|busy-reply-threshold|100"), OK);
    let first = s.execute(&[(1, &format!("EVAL|redis.call('set', 'k', 'v') {SPIN}|0"))]);
    until_busy(&mut s, first);
    let out = s.execute(&[(2, "SCRIPT|KILL"), (2, "FUNCTION|KILL"), (2, "GET|k")]);
    let replies: Vec<&str> = out.iter().map(|r| r.3.as_str()).collect();
    assert_eq!(replies, [UNKILLABLE, UNKILLABLE, BUSY_EVAL]);
    assert_eq!(suspended(&s.resume()), Some(batch::SUSPENDED_BUSY));
}

#[test]
fn function_kill_stops_a_function_and_function_stats_shows_it() {
    let mut s = Shard::new();
    assert_eq!(s.c("CONFIG|SET|busy-reply-threshold|100"), OK);
    let lib = format!("#!lua name=spinners\nredis.register_function{{function_name='spin', callback=function(k, a) {SPIN} end, flags={{'no-writes'}}}}");
    assert_eq!(s.c(&format!("FUNCTION|LOAD|{lib}")), bulk("spinners"));
    let first = s.execute(&[(1, "FCALL_RO|spin|0")]);
    until_busy(&mut s, first);
    let out = s.execute(&[(2, "FUNCTION|STATS"), (2, "SCRIPT|KILL"), (2, "FUNCTION|KILL")]);
    let stats = "*4\r\n$14\r\nrunning_script\r\n*6\r\n$4\r\nname\r\n$4\r\nspin\r\n$7\r\ncommand\r\n*3\r\n$8\r\nFCALL_RO\r\n$4\r\nspin\r\n$1\r\n0\r\n$11\r\nduration_ms\r\n:150\r\n$7\r\nengines\r\n*2\r\n$3\r\nLUA\r\n*4\r\n$15\r\nlibraries_count\r\n:1\r\n$15\r\nfunctions_count\r\n:1\r\n";
    assert_eq!(out[0].3, stats);
    assert_eq!(out[1].3, BUSY_FUNCTION);
    assert_eq!(out[2].3, OK);
    let done = s.resume();
    assert_eq!(done[0].3, "-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.\r\n");
    assert_eq!(s.c("FUNCTION|KILL"), "-NOTBUSY No scripts in execution right now.\r\n");
    assert!(s.c("FUNCTION|STATS").starts_with("*4\r\n$14\r\nrunning_script\r\n$-1\r\n"));
}

#[test]
fn a_long_script_runs_across_calls_and_its_batch_goes_on_in_order() {
    let mut s = Shard::new();
    let script = "local i = 0 while i < 3000000 do i = i + 1 end redis.call('set', 'k', i) return i";
    let mut out = s.execute(&[(5, "SET|k|before"), (1, &format!("EVAL|{script}|0")), (2, "GET|k"), (3, "INCR|n")]);
    // What came before the script is answered at once; what came after goes back to the
    // host, which sends nothing before the threshold.
    assert_eq!(out[1..], [(batch::REC_COMMAND, 5, batch::OUT_WRITE, OK.to_string())]);
    let mut slices = 0;
    while suspended(&out).is_some() {
        slices += 1;
        if slices == 1 {
            // The script's client waits for it; others are answered -BUSY (the host
            // sends nothing before the threshold, but the answer would be the same).
            let meanwhile = s.execute(&[(1, "PING"), (6, "PING")]);
            assert_eq!(meanwhile[0].2, batch::OUT_DEFERRED);
            assert_eq!(meanwhile[1].3, BUSY_EVAL);
        }
        out = s.resume();
    }
    assert!(slices > 1, "the script ran in one call");
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!((out[0].1, out[0].3.as_str()), (1, ":3000000\r\n"));
    assert_ne!(out[0].2 & batch::OUT_WRITE, 0, "the script's effects come with its reply");
    // The records after the script run next, and see its write.
    let rest = s.execute_carried();
    let replies: Vec<(u64, &str)> = rest.iter().map(|r| (r.1, r.3.as_str())).collect();
    assert_eq!(replies, [(2, "$7\r\n3000000\r\n"), (3, ":1\r\n")]);
}

/// Found by the runaway-script e2e test: a client whose command came in the same batch as
/// a runaway script, after it, waited for the script (forever, since that client was the
/// one to send SCRIPT KILL). In Redis it gets -BUSY once the script is past the threshold.
#[test]
fn a_command_after_a_runaway_script_in_its_batch_gets_busy_and_can_kill_it() {
    let mut s = Shard::new();
    assert_eq!(s.c("CONFIG|SET|busy-reply-threshold|100"), OK);
    let first = s.execute(&[(2, "SET|before|1"), (1, &format!("EVAL|{SPIN}|0")), (2, "GET|x"), (1, "PING")]);
    assert_eq!(first[1..], [(batch::REC_COMMAND, 2, batch::OUT_WRITE, OK.to_string())]);
    until_busy(&mut s, first);
    // The host sends the carried records first, then what came since.
    let mut input = std::mem::take(&mut s.carried);
    let mut b = BatchWriter::new();
    b.begin(batch::REC_COMMAND, 2);
    encode_command(&mut b.buf, &["SCRIPT", "KILL"]);
    b.end();
    input.extend_from_slice(&b.buf);
    let out = s.execute_records(&input);
    let replies: Vec<(u64, u8, &str)> = out.iter().map(|r| (r.1, r.2, r.3.as_str())).collect();
    assert_eq!(replies, [(2, 0, BUSY_EVAL), (1, batch::OUT_DEFERRED, ""), (2, 0, OK)]);
    let done = s.resume();
    let sha = "3fcf51a9b854b8f66cb8685600b0d7df968f4398";
    assert_eq!(done[0].3, format!("-ERR Script killed by user with SCRIPT KILL... script: {sha}, on @user_script:1.\r\n"));
    // The deferred PING runs once the host sends it again.
    assert_eq!(s.execute(&[(1, "PING")])[0].3, "+PONG\r\n");
}

#[test]
fn clients_that_leave_during_a_script_are_dropped_and_its_own_client_after_it() {
    let mut s = Shard::new();
    assert_eq!(s.c("CONFIG|SET|busy-reply-threshold|100"), OK);
    let first = s.execute(&[(1, &format!("EVAL|{SPIN}|0")), (2, "CLIENT|SETNAME|two")]);
    until_busy(&mut s, first);
    let mut b = BatchWriter::new();
    b.buf = std::mem::take(&mut s.carried);
    b.record(batch::REC_DISCONNECT, 2, b"");
    b.record(batch::REC_DISCONNECT, 1, b"");
    let out = s.execute_records(&b.buf);
    assert_eq!(out.len(), 3);
    assert_eq!(out[0].3, BUSY_EVAL);
    let out = s.execute(&[(3, "SCRIPT|KILL")]);
    assert_eq!(out[0].3, OK);
    let done = s.resume();
    assert_eq!(done.len(), 1, "the script's reply");
    // Both are gone now.
    let list = s.c("CLIENT|LIST");
    assert!(!list.contains("name=two"), "{list}");
    assert_eq!(list.matches(" addr=").count(), 2, "{list}");
}

#[test]
fn scripts_in_a_transaction_do_not_yield() {
    let mut s = Shard::new();
    let script = "local i = 0 while i < 3000000 do i = i + 1 end return i";
    assert_eq!(s.c("MULTI"), OK);
    assert_eq!(s.c(&format!("EVAL|{script}|0")), "+QUEUED\r\n");
    assert_eq!(s.c("EXEC"), "*1\r\n:3000000\r\n");
    assert_eq!(s.c("GET|nothing"), NIL);
    assert_eq!(s.c("EVAL|return 1|0"), int(1));
}
