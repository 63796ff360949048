//! Limits against abusive clients: maxclients, client-output-buffer-limit (a slow
//! subscriber flooded by a publisher is dropped at its limit and the server's memory stays
//! bounded), the idle timeout, the guard against half-sent requests, and CONFIG GET/SET of
//! them as redis-server answers.

mod common;

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Memoria, RedisServer};

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s
}

/// Sends `cmd` (space-separated, no quoting) and reads one reply line (or the whole small
/// reply when it is an array of bulk strings).
fn call(s: &mut TcpStream, args: &[&str]) -> String {
    let mut cmd = format!("*{}\r\n", args.len());
    for a in args {
        cmd.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(cmd.as_bytes()).unwrap();
    read_reply(s)
}

fn read_reply(s: &mut TcpStream) -> String {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut out = String::new();
    read_one(&mut r, &mut out);
    out
}

fn read_one(r: &mut BufReader<TcpStream>, out: &mut String) {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    out.push_str(&line);
    match line.as_bytes().first() {
        Some(b'*') => {
            let n: i64 = line[1..].trim().parse().unwrap();
            for _ in 0..n.max(0) {
                read_one(r, out);
            }
        }
        Some(b'$') => {
            let n: i64 = line[1..].trim().parse().unwrap();
            if n >= 0 {
                let mut b = vec![0u8; n as usize + 2];
                r.read_exact(&mut b).unwrap();
                out.push_str(&String::from_utf8_lossy(&b));
            }
        }
        _ => {}
    }
}

/// Reads until the server closes the connection; returns the bytes read. Fails the test
/// if it is still open after `guard` (a hang, not a timing claim).
fn read_to_close(s: &mut TcpStream, guard: Duration) -> usize {
    let deadline = Instant::now() + guard;
    s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0;
    loop {
        match s.read(&mut buf) {
            Ok(0) => return total,
            Ok(n) => total += n,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return total,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("read: {e}"),
        }
        assert!(Instant::now() < deadline, "the server did not close the connection");
    }
}

fn is_open(s: &mut TcpStream) -> bool {
    call(s, &["PING"]) == "+PONG\r\n"
}

#[test]
fn maxclients_refuses_with_redis_error_and_frees_slots() {
    let m = Memoria::start();
    let mut a = connect(m.port);
    assert_eq!(call(&mut a, &["CONFIG", "SET", "maxclients", "2"]), "+OK\r\n");
    assert_eq!(call(&mut a, &["CONFIG", "GET", "maxclients"]), "*2\r\n$10\r\nmaxclients\r\n$1\r\n2\r\n");
    let mut b = connect(m.port);
    assert!(is_open(&mut b));
    let mut c = connect(m.port);
    let mut got = Vec::new();
    c.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"-ERR max number of clients reached\r\n");
    drop(b);
    // The slot is given back once the server has seen b go.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut d = connect(m.port);
        let mut probe = [0u8; 64];
        d.write_all(b"PING\r\n").unwrap();
        let n = d.read(&mut probe).unwrap_or(0);
        if &probe[..n] == b"+PONG\r\n" {
            break;
        }
        assert_eq!(&probe[..n], b"-ERR max number of clients reached\r\n");
        assert!(Instant::now() < deadline, "the slot of a closed client was never freed");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(is_open(&mut a));
}

#[test]
fn idle_clients_time_out_but_subscribers_and_blocked_clients_stay() {
    let m = Memoria::start();
    let mut admin = connect(m.port);
    let mut sub = connect(m.port);
    assert!(call(&mut sub, &["SUBSCRIBE", "ch"]).starts_with("*3\r\n$9\r\nsubscribe\r\n"));
    let mut blocked = connect(m.port);
    blocked.write_all(b"*3\r\n$5\r\nBLPOP\r\n$4\r\nlist\r\n$1\r\n0\r\n").unwrap();
    assert_eq!(call(&mut admin, &["CONFIG", "SET", "timeout", "1"]), "+OK\r\n");
    let mut idle = connect(m.port);
    assert!(is_open(&mut idle));
    // The idle client is closed…
    read_to_close(&mut idle, Duration::from_secs(30));
    // …and the subscriber and the blocked client, idle as long, are not (Redis spares them).
    std::thread::sleep(Duration::from_secs(2));
    let mut p = connect(m.port);
    assert_eq!(call(&mut p, &["PUBLISH", "ch", "hello"]), ":1\r\n");
    assert_eq!(read_reply(&mut sub), "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n");
    assert_eq!(call(&mut p, &["RPUSH", "list", "x"]), ":1\r\n");
    assert_eq!(read_reply(&mut blocked), "*2\r\n$4\r\nlist\r\n$1\r\nx\r\n");
    assert_eq!(call(&mut p, &["CONFIG", "SET", "timeout", "0"]), "+OK\r\n");
}

#[test]
fn a_half_sent_request_that_stalls_is_dropped_and_holds_nobody() {
    let m = Memoria::start();
    let mut admin = connect(m.port);
    assert_eq!(call(&mut admin, &["CONFIG", "GET", "partial-request-timeout"]), "*2\r\n$23\r\npartial-request-timeout\r\n$2\r\n30\r\n");
    assert_eq!(call(&mut admin, &["CONFIG", "SET", "partial-request-timeout", "1"]), "+OK\r\n");
    let mut idle = connect(m.port);
    assert!(is_open(&mut idle));
    let mut half = connect(m.port);
    half.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nabc").unwrap();
    // Others are served while it stalls.
    assert_eq!(call(&mut admin, &["SET", "other", "1"]), "+OK\r\n");
    assert_eq!(read_to_close(&mut half, Duration::from_secs(30)), 0);
    // A client that is merely idle (no partial command) is not affected; nothing was set.
    assert!(is_open(&mut idle));
    assert_eq!(call(&mut admin, &["EXISTS", "k"]), ":0\r\n");
}

#[test]
fn a_normal_client_that_does_not_read_its_replies_is_dropped_at_its_limit() {
    let m = Memoria::start();
    let mut admin = connect(m.port);
    assert_eq!(call(&mut admin, &["CONFIG", "SET", "client-output-buffer-limit", "normal 1mb 0 0"]), "+OK\r\n");
    let big = "x".repeat(100_000);
    assert_eq!(call(&mut admin, &["SET", "big", &big]), "+OK\r\n");
    let mut greedy = connect(m.port);
    greedy.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
    let get = b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n";
    // 200 MB of replies asked for, none read.
    let mut sent = 0;
    for _ in 0..2000 {
        if greedy.write_all(get).is_err() {
            break;
        }
        sent += 1;
    }
    assert!(sent > 0);
    let got = read_to_close(&mut greedy, Duration::from_secs(60));
    assert!(got < 2000 * 100_000, "the client received every reply ({got} bytes): it was not dropped");
    assert!(is_open(&mut admin));
}

#[test]
fn config_of_the_limits_answers_like_redis() {
    let m = Memoria::start();
    let r = RedisServer::start(&[]);
    let script: &[&[&str]] = &[
        &["CONFIG", "GET", "client-output-buffer-limit"],
        &["CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 512kb 10"],
        &["CONFIG", "GET", "client-output-buffer-limit"],
        &["CONFIG", "SET", "client-output-buffer-limit", "normal 1gb 2GB 0 replica 1k 1kb 5"],
        &["CONFIG", "GET", "client-output-buffer-limit"],
        &["CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 512kb"],
        &["CONFIG", "SET", "client-output-buffer-limit", "master 1mb 512kb 10"],
        &["CONFIG", "SET", "client-output-buffer-limit", "pubsub 1xb 512kb 10"],
        &["CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 512kb -1"],
        &["CONFIG", "SET", "client-output-buffer-limit", ""],
        &["CONFIG", "GET", "client-output-buffer-limit"],
        &["CONFIG", "SET", "maxclients", "0"],
        &["CONFIG", "SET", "maxclients", "50"],
        &["CONFIG", "GET", "maxclients"],
        &["CONFIG", "SET", "timeout", "-1"],
        &["CONFIG", "SET", "timeout", "300"],
        &["CONFIG", "GET", "timeout"],
    ];
    let mut mc = connect(m.port);
    let mut rc = connect(r.port);
    for cmd in script {
        assert_eq!(call(&mut mc, cmd), call(&mut rc, cmd), "{cmd:?}");
    }
}

/// The memoria binary as a child process (its memory is measured from outside).
struct Child_(Child);

impl Drop for Child_ {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Peak and current resident set of `pid`, in bytes (VmHWM, VmRSS).
fn memory_of(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Publishes `n` messages of `size` bytes to `ch`, pipelined 64 at a time; returns the
/// receiver counts PUBLISH answered.
fn flood(p: &mut TcpStream, ch: &str, n: usize, size: usize) -> Vec<i64> {
    let payload = "m".repeat(size);
    let one = format!("*3\r\n$7\r\nPUBLISH\r\n${}\r\n{ch}\r\n${size}\r\n{payload}\r\n", ch.len());
    let mut r = BufReader::new(p.try_clone().unwrap());
    let mut counts = Vec::with_capacity(n);
    let mut left = n;
    while left > 0 {
        let k = left.min(64);
        let batch = one.repeat(k);
        p.write_all(batch.as_bytes()).unwrap();
        for _ in 0..k {
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            counts.push(line.trim_start_matches(':').trim().parse().unwrap());
        }
        left -= k;
    }
    counts
}

/// The last message published in a test: a subscriber that has read it has read
/// everything published before it (a channel's messages arrive in order).
const LAST_MESSAGE: &str = "end-of-test";

/// A subscriber that reads everything on a thread until `LAST_MESSAGE`; returns how many
/// bytes it got before it.
fn diligent_subscriber(port: u16, ch: &str) -> (std::thread::JoinHandle<usize>, TcpStream) {
    let mut s = connect(port);
    assert!(call(&mut s, &["SUBSCRIBE", ch]).starts_with("*3\r\n$9\r\nsubscribe\r\n"));
    let mut reader = s.try_clone().unwrap();
    reader.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let end = format!("${}\r\n{LAST_MESSAGE}\r\n", LAST_MESSAGE.len()).into_bytes();
    let h = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut tail: Vec<u8> = Vec::new();
        let mut total = 0;
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n;
            tail.extend_from_slice(&buf[..n]);
            let keep = tail.len().saturating_sub(end.len());
            tail.drain(..keep);
            if tail == end {
                break;
            }
        }
        total
    });
    (h, s)
}

#[test]
fn a_slow_subscriber_is_dropped_at_its_output_limit_and_memory_stays_bounded() {
    let port = common::free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_memoria"))
        .args(["up", "--in-memory", "--bind", "127.0.0.1", "--port", &port.to_string()])
        .args(["--client-output-buffer-limit", "pubsub 8mb 4mb 60"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("memoria binary");
    let child = Child_(child);
    let pid = child.0.id();
    common::wait_listening(port);
    const SIZE: usize = 16 * 1024;
    // Warm up with every client reading (the engine's linear memory and the allocator
    // reach their working size), so growth afterwards is the slow subscriber's backlog.
    let (good, good_conn) = diligent_subscriber(port, "news");
    let mut publisher = connect(port);
    let warm = flood(&mut publisher, "news", 2048, SIZE);
    assert!(warm.iter().all(|&c| c == 1));
    let (peak_before, rss_before) = memory_of(pid);

    // The slow subscriber: subscribes, then never reads again.
    let mut slow = connect(port);
    assert!(call(&mut slow, &["SUBSCRIBE", "news"]).starts_with("*3\r\n$9\r\nsubscribe\r\n"));
    const N: usize = 16 * 1024; // 256 MiB of messages for each subscriber
    let counts = flood(&mut publisher, "news", N, SIZE);
    let (peak_after, rss_after) = memory_of(pid);

    // The server's memory stayed bounded: the backlog never grew past the limit plus the
    // socket buffers and a batch in flight, far below the 256 MiB published.
    let growth = peak_after.saturating_sub(peak_before);
    eprintln!("peak RSS {peak_before} -> {peak_after} (+{growth}); RSS {rss_before} -> {rss_after}");
    assert!(growth < 64 << 20, "peak RSS grew by {} MiB during the flood", growth >> 20);
    // It was dropped: PUBLISH reached two subscribers, then one.
    assert_eq!(counts[0], 2, "the slow subscriber was not subscribed");
    assert_eq!(*counts.last().unwrap(), 1, "the slow subscriber was never disconnected");
    let got = read_to_close(&mut slow, Duration::from_secs(60));
    assert!(got < N * SIZE / 4, "the slow subscriber got {got} bytes of {}", N * SIZE);
    // Everyone else still works: the diligent subscriber got every message, a new client
    // is served.
    let mut other = connect(port);
    assert!(is_open(&mut other));
    // The last message marks the end, so the count is not cut short by messages still
    // on their way.
    assert_eq!(call(&mut publisher, &["PUBLISH", "news", LAST_MESSAGE]), ":1\r\n");
    let received = good.join().unwrap();
    drop(good_conn);
    assert!(received >= (2048 + N) * SIZE, "the diligent subscriber got {received} bytes");
}
