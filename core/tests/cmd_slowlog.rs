//! The command clock (the component's one import): durations in SLOWLOG and INFO
//! commandstats come from it, and nothing else does — the same commands under clocks of
//! different speeds leave the same data and the same effects. host/tests/slowlog.rs
//! compares the whole of SLOWLOG and the stats with redis-server.

mod common;

use std::cell::Cell;

use common::H;

thread_local! {
    static NOW: Cell<u64> = const { Cell::new(0) };
    static STEP: Cell<u64> = const { Cell::new(1) };
}

/// Advances by this thread's step at every read: every command takes one step.
fn clock() -> u64 {
    let step = STEP.with(Cell::get);
    NOW.with(|n| {
        n.set(n.get() + step);
        n.get()
    })
}

fn engine(step: u64) -> H {
    STEP.with(|s| s.set(step));
    let mut h = H::new();
    h.e.set_clock(clock);
    h
}

/// Commands, arguments split on spaces (or on '|' where there is one).
const WORKLOAD: &[&str] = &[
    "SET a 1",
    "INCR a",
    "RPUSH l x y z",
    "LPOP l",
    "HSET h f v g w",
    "ZADD z 1 m 2 n",
    "SADD s p q",
    "EXPIRE a 100",
    "EVAL|return redis.call('incr','a')|0",
    "INCR l",
    "DEL s",
];

#[test]
fn the_clock_reaches_no_data_or_effect() {
    let run = |step: u64| {
        let mut h = engine(step);
        h.c("CONFIG SET slowlog-log-slower-than 0");
        let replies: Vec<Vec<u8>> = WORKLOAD.iter().map(|l| h.raw(&l.split(if l.contains('|') { '|' } else { ' ' }).collect::<Vec<_>>())).collect();
        (replies, h.effect_lines(), h.e.digest())
    };
    assert_eq!(run(1), run(1_000_000));
}

#[test]
fn durations_are_the_clock_s() {
    let mut h = engine(25_000);
    // The default threshold is 10 ms: every command here takes 25.
    h.c("SLOWLOG RESET");
    h.c("SET a 1");
    h.c("GET a");
    let log = h.c("SLOWLOG GET 2");
    assert!(log.contains(":25000\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n"), "{log}");
    assert!(log.contains(":25000\r\n*3\r\n$3\r\nSET\r\n"), "{log}");
    let stats = h.c("INFO commandstats");
    assert!(stats.contains("cmdstat_set:calls=1,usec=25000,usec_per_call=25000.00,rejected_calls=0,failed_calls=0"), "{stats}");
    assert!(stats.contains("cmdstat_get:calls=1,usec=25000,usec_per_call=25000.00,"), "{stats}");
    // Faster than the threshold: counted, not logged.
    let mut h = engine(9_999);
    h.c("SLOWLOG RESET");
    h.c("SET a 1");
    assert_eq!(h.c("SLOWLOG LEN"), ":0\r\n");
}

#[test]
fn the_latency_monitor_keeps_the_worst_per_second() {
    let mut h = engine(25_000);
    // Off by default: nothing is recorded.
    h.c("GET a");
    assert_eq!(h.c("LATENCY LATEST"), "*0\r\n");
    h.c("CONFIG SET latency-monitor-threshold 10");
    h.c("GET a");
    h.c("SET a 1");
    let at = h.now_ms / 1000;
    let latest = h.c("LATENCY LATEST");
    assert_eq!(latest, format!("*2\r\n*4\r\n$7\r\ncommand\r\n:{at}\r\n:25\r\n:25\r\n*4\r\n$12\r\nfast-command\r\n:{at}\r\n:25\r\n:25\r\n"), "{latest}");
    // A second sample in the same second is merged; the next second adds one.
    h.c("GET a");
    h.advance(1000);
    h.c("GET a");
    let history = h.c("LATENCY HISTORY fast-command");
    assert_eq!(history, format!("*2\r\n*2\r\n:{at}\r\n:25\r\n*2\r\n:{}\r\n:25\r\n", at + 1));
    assert_eq!(h.c("LATENCY RESET command nosuch"), ":1\r\n");
    // That RESET took 25 ms itself: a `command` event again.
    assert_eq!(h.c("LATENCY RESET"), ":2\r\n");
    // Below the threshold: not an event.
    h.c("CONFIG SET latency-monitor-threshold 26");
    h.c("LATENCY RESET");
    h.c("GET a");
    assert_eq!(h.c("LATENCY LATEST"), "*0\r\n");
}

/// Sends the host's role record (`primary` and `lines`), as the shard does each second.
fn role(h: &mut H, lines: &str) {
    let mut b = memoria_core::protocol::batch::BatchWriter::new();
    b.record(memoria_core::protocol::batch::REC_ROLE, 0, format!("primary\n{lines}").as_bytes());
    h.e.execute(&b.buf, h.now_ms * 1000, 1);
}

#[test]
fn the_host_s_latency_events_reach_the_monitor_once() {
    let mut h = H::new();
    // The monitor is off: the host's events are not kept either.
    role(&mut h, "latency.log-append:30\nmemoria.held_replies:2\n");
    assert_eq!(h.c("LATENCY LATEST"), "*0\r\n");
    h.c("CONFIG SET latency-monitor-threshold 20");
    role(&mut h, "latency.log-append:30\nlatency.engine-rebuild:5\nlatency.nosuch:99\nmemoria.held_replies:2\n");
    let t = h.now_ms / 1000;
    assert_eq!(h.c("LATENCY LATEST"), format!("*1\r\n*4\r\n$10\r\nlog-append\r\n:{t}\r\n:30\r\n:30\r\n"));
    // Sent once: the next record without the line adds nothing; INFO shows the memoria
    // fields and none of the events.
    h.advance(2000);
    role(&mut h, "memoria.held_replies:0\n");
    assert_eq!(h.c("LATENCY HISTORY log-append"), format!("*1\r\n*2\r\n:{t}\r\n:30\r\n"));
    let info = h.c("INFO memoria");
    assert!(info.contains("# Memoria\r\nheld_replies:0\r\n"), "{info}");
    assert!(!h.c("INFO everything").contains("latency."), "the events are not INFO fields");
    assert!(!h.c("INFO").contains("# Memoria"), "not in the default sections");
}
