//! Protocol tests over TCP: raw bytes (malformed RESP, limits, inline commands, half-closed
//! and vanishing clients, QUIT, RESP3) and the `redis` crate (pipelines, big values, RESP3,
//! async). Where Redis 7 defines the answer, the same bytes go to a real redis-server in
//! the same test and the replies must be identical, error texts included.
//!
//! Nothing here asserts on timing: a read timeout only turns a hang into a failure.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use common::{Memoria, Raw, RedisServer};
use memoria_core::protocol::resp::Limits;
use memoria_core::util::Rng;
use memoria_host::limits::ConnLimits;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum End {
    /// The server closed the connection (FIN).
    Eof,
    /// The server reset the connection (it closed with unread input).
    Reset,
}

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

/// Reads until the server closes. A read timeout means the server neither answered nor
/// closed: that is a hang and fails the test.
fn read_to_end(s: &mut TcpStream, what: &str) -> (Vec<u8>, End) {
    let mut out = Vec::new();
    let mut tmp = vec![0u8; 64 * 1024];
    loop {
        match s.read(&mut tmp) {
            Ok(0) => return (out, End::Eof),
            Ok(n) => out.extend_from_slice(&tmp[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return (out, End::Reset),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                panic!("{what}: the server neither answered nor closed the connection; got so far {:?}", String::from_utf8_lossy(&out))
            }
            Err(e) => panic!("{what}: read failed: {e}"),
        }
    }
}

/// Sends `bytes` on a fresh connection; if `half_close`, shuts our write side down (the
/// server must still answer what it got, like Redis does for `printf … | nc -N`). Returns
/// everything the server wrote before closing.
fn exchange(port: u16, bytes: &[u8], half_close: bool) -> Vec<u8> {
    let mut s = connect(port);
    s.write_all(bytes).unwrap();
    if half_close {
        s.shutdown(Shutdown::Write).unwrap();
    }
    let (out, _) = read_to_end(&mut s, &format!("{:?}", String::from_utf8_lossy(bytes)));
    out
}

/// HELLO replies carry the connection id, which differs between servers.
fn mask_client_id(b: &[u8]) -> Vec<u8> {
    let pat = b"$2\r\nid\r\n:";
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(pat) {
            out.extend_from_slice(pat);
            out.push(b'N');
            i += pat.len();
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---------------------------------------------------------------------------------------
// Malformed and unusual requests: byte-for-byte what Redis 7 answers
// ---------------------------------------------------------------------------------------

/// Requests after which the server must answer and close the connection on its own.
const CLOSING_CASES: &[&[u8]] = &[
    b"*abc\r\n",
    b"*\r\n",
    b"*+1\r\n$4\r\nPING\r\n",
    b"*01\r\n$04\r\nPING\r\n",
    b"*3000000000\r\n",
    b"*1\r\nfoo\r\n",
    b"*2\r\n$4\r\nECHO\r\n:5\r\n",
    b"*1\r\n$-1\r\n",
    b"*1\r\n$abc\r\n",
    b"*1\r\n$\r\n",
    b"*1\r\n$+4\r\nPING\r\n",
    // Larger than proto-max-bulk-len (512 MB): refused from the length line alone.
    b"*1\r\n$2147483648\r\n",
    b"*1\r\n$536870913\r\n",
    b"*2\r\n$4\r\nECHO\r\n$99999999999999999999999\r\n",
    // Earlier commands in the same packet are answered first.
    b"PING\r\n*abc\r\nPING\r\n",
    b"*1\r\n$4\r\nPING\r\n*1\r\nx\r\n",
    // Inline requests with unbalanced quotes.
    b"set \"foo bar\r\n",
    b"set 'a'b c\r\n",
    b"set \"a\"b c\r\n",
    b"\"\r\n",
    b"PING\r\necho 'unterminated\r\n",
    // QUIT answers +OK, closes, and runs nothing pipelined behind it.
    b"QUIT\r\nPING\r\n",
    b"quit\r\n",
    b"*1\r\n$4\r\nQUIT\r\n*1\r\n$4\r\nPING\r\n",
    b"PING\r\nQUIT\r\nPING\r\n",
];

/// Requests that leave the connection open; we half-close and read everything back.
const OPEN_CASES: &[&[u8]] = &[
    b"PING\r\n",
    b"  PING  \r\n",
    b"\r\n\r\nPING\nECHO \"a\\x41\\n\"\r\n",
    b"ECHO 'it\\'s'\r\n",
    b"ECHO \"tab\\there\" 'x'\r\n",
    b"garbage x y\r\n",
    b"*-5\r\nPING\r\n",
    b"*0\r\nPING\r\n",
    // Redis skips the two bytes after a bulk without checking them.
    b"*1\r\n$4\r\nPINGxx\r\n",
    b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n",
    b"*1\r\n$4\r\nPING",
    b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n",
    b"HELLO 4\r\n",
    b"HELLO 3\r\nGET nokey\r\nHSET h a 1\r\nHGETALL h\r\nDEL h\r\nHELLO 2\r\n",
    b"SET big-inline \"a b c\"\r\nGET big-inline\r\nDEL big-inline\r\n",
    b"MULTI\r\nPING\r\nEXEC\r\n",
    b"*1\r\n$5\r\nMULTI\r\nbogus\r\nEXEC\r\n",
];

#[test]
fn malformed_and_unusual_requests_answer_like_redis() {
    let m = Memoria::start();
    let r = RedisServer::start(&[]);
    let mut failures = Vec::new();
    for &case in CLOSING_CASES {
        let want = mask_client_id(&exchange(r.port, case, false));
        let got = mask_client_id(&exchange(m.port, case, false));
        if got != want {
            failures.push(format!("{:?}\n   redis:   {:?}\n   memoria: {:?}", show(case), show(&want), show(&got)));
        }
    }
    for &case in OPEN_CASES {
        let want = mask_client_id(&exchange(r.port, case, true));
        let got = mask_client_id(&exchange(m.port, case, true));
        if got != want {
            failures.push(format!("{:?} (half-closed)\n   redis:   {:?}\n   memoria: {:?}", show(case), show(&want), show(&got)));
        }
    }
    // The server is still fine.
    let mut c = Raw::connect(m.port);
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
    assert!(failures.is_empty(), "{} requests answered differently from Redis 7:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn protocol_error_texts() {
    // The texts themselves, so a regression is readable without a redis-server at hand.
    let m = Memoria::start();
    let cases: &[(&[u8], &[u8])] = &[
        (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*1\r\nfoo\r\n", b"-ERR Protocol error: expected '$', got 'f'\r\n"),
        (b"*1\r\n$-1\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\n$2147483648\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
        (b"set \"foo bar\r\n", b"-ERR Protocol error: unbalanced quotes in request\r\n"),
    ];
    for (req, want) in cases {
        let mut s = connect(m.port);
        s.write_all(req).unwrap();
        let (got, _) = read_to_end(&mut s, &show(req));
        assert_eq!(show(&got), show(want), "for {:?}", show(req));
    }
}

#[test]
fn oversize_lengths_are_refused_before_the_data_arrives() {
    let m = Memoria::start();
    // Only the length line is sent: a server that waited for (or allocated) 2 GiB would
    // never answer. The read timeout turns that into a failure.
    for req in [&b"*1\r\n$2147483648\r\n"[..], b"*2\r\n$3\r\nSET\r\n$9223372036854775807\r\n", b"*3000000000\r\n"] {
        let mut s = connect(m.port);
        s.write_all(req).unwrap();
        let (got, end) = read_to_end(&mut s, &show(req));
        assert!(got.starts_with(b"-ERR Protocol error: invalid "), "{:?} -> {:?}", show(req), show(&got));
        assert_eq!(end, End::Eof);
    }
    let mut c = Raw::connect(m.port);
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn configured_limits_are_enforced() {
    let limits = ConnLimits {
        resp: Limits { max_bulk_len: 1024, max_multibulk_len: 8, max_inline_len: 64 * 1024, unauthenticated: false },
        query_buffer: 1 << 20,
        ..ConnLimits::default()
    };
    let m = Memoria::start_with(limits);

    // A bulk at the limit is fine; one byte more is refused from the length line.
    let mut c = Raw::connect(m.port);
    let v = vec![b'x'; 1024];
    assert_eq!(c.cmd(&[&b"SET"[..], b"k", &v]), b"+OK\r\n");
    let mut s = connect(m.port);
    s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1025\r\n").unwrap();
    assert_eq!(read_to_end(&mut s, "bulk over limit"), (b"-ERR Protocol error: invalid bulk length\r\n".to_vec(), End::Eof));

    // Multibulk count over the limit.
    let mut s = connect(m.port);
    s.write_all(b"*9\r\n").unwrap();
    assert_eq!(read_to_end(&mut s, "multibulk over limit"), (b"-ERR Protocol error: invalid multibulk length\r\n".to_vec(), End::Eof));
    let mut s = connect(m.port);
    s.write_all(b"*8\r\n$4\r\nMGET\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\nf\r\n$1\r\nk\r\n").unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let (got, _) = read_to_end(&mut s, "multibulk at limit");
    assert!(got.starts_with(b"*7\r\n$-1\r\n"), "{:?}", show(&got));

    // An inline request longer than 64 KB without a newline. Exactly one byte over, so
    // the server has read everything we sent when it refuses (no reset).
    let mut s = connect(m.port);
    s.write_all(&vec![b'a'; 64 * 1024 + 1]).unwrap();
    let (got, _) = read_to_end(&mut s, "inline too big");
    assert_eq!(show(&got), "-ERR Protocol error: too big inline request\r\n");

    // A length line (`*…` or `$…`) longer than 64 KB.
    let mut s = connect(m.port);
    let mut req = b"*".to_vec();
    req.extend(std::iter::repeat_n(b'1', 64 * 1024));
    s.write_all(&req).unwrap();
    let (got, _) = read_to_end(&mut s, "mbulk count too big");
    assert_eq!(show(&got), "-ERR Protocol error: too big mbulk count string\r\n");

    // The query buffer limit: a command announcing more than it allows is dropped
    // without waiting for the data.
    let limits = ConnLimits { resp: Limits { max_bulk_len: 8 << 20, ..Limits::default() }, query_buffer: 1 << 20, ..ConnLimits::default() };
    let m2 = Memoria::start_with(limits);
    let mut s = connect(m2.port);
    s.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4000000\r\n").unwrap();
    let (got, _) = read_to_end(&mut s, "query buffer");
    assert!(got.is_empty() || got.starts_with(b"-ERR "), "{:?}", show(&got));

    // Everyone else is unaffected.
    assert_eq!(c.cmd(&["STRLEN", "k"]), b":1024\r\n");
    let mut c2 = Raw::connect(m2.port);
    assert_eq!(c2.cmd(&["PING"]), b"+PONG\r\n");
}

/// A deliberate difference: Redis 7.0 accepts a multibulk count up to INT_MAX (allocating
/// argument slots as they arrive); Memoria keeps the pre-7.0 limit of 1024*1024 arguments
/// per command (`Limits::max_multibulk_len`) and refuses more from the count line.
#[test]
fn multibulk_count_limit() {
    let m = Memoria::start();
    let mut s = connect(m.port);
    s.write_all(b"*1048577\r\n").unwrap();
    let (got, _) = read_to_end(&mut s, "*1048577");
    assert_eq!(show(&got), "-ERR Protocol error: invalid multibulk length\r\n");
    // At the limit, the server waits for the arguments (half-close to end the wait).
    let mut s = connect(m.port);
    s.write_all(b"*1048576\r\n$4\r\nPING\r\n").unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let (got, _) = read_to_end(&mut s, "*1048576");
    assert_eq!(got, b"");
}

// ---------------------------------------------------------------------------------------
// Inline commands
// ---------------------------------------------------------------------------------------

#[test]
fn inline_commands() {
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    c.send_raw(b"SET greeting \"hello world\"\r\n");
    assert_eq!(c.read_reply(), b"+OK\r\n");
    c.send_raw(b"GET greeting\n");
    assert_eq!(c.read_reply(), b"$11\r\nhello world\r\n");
    c.send_raw(b"set bin \"\\x00\\xff\\r\\n\"\r\nstrlen bin\r\n");
    assert_eq!(c.read_reply(), b"+OK\r\n");
    assert_eq!(c.read_reply(), b":4\r\n");
    assert_eq!(c.cmd(&["GET", "bin"]), b"$4\r\n\x00\xff\r\n\r\n");
    c.send_raw(b"\r\n\n   \r\nEXISTS greeting bin nope\r\n");
    assert_eq!(c.read_reply(), b":2\r\n");
    // Inline and multibulk interleaved in one packet.
    c.send_raw(b"INCR n\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\nINCR n\r\n");
    assert_eq!(c.read_reply(), b":1\r\n");
    assert_eq!(c.read_reply(), b":2\r\n");
    assert_eq!(c.read_reply(), b":3\r\n");
    // One byte at a time.
    for &b in b"ECHO \"split up\"\r\n" {
        c.send_raw(&[b]);
    }
    assert_eq!(c.read_reply(), b"$8\r\nsplit up\r\n");
    // Unknown command, inline: Redis's text.
    c.send_raw(b"NOSUCH a b\r\n");
    assert_eq!(show(&c.read_reply()), "-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' \r\n");
}

/// An inline request holding a NUL byte. Redis's sdssplitargs stops at the NUL (C
/// string), so `\0\1\2` is an empty request and `PING\0junk` is PING.
///
/// Regression: split_args once looped forever on a NUL outside quotes, pushing empty
/// arguments until memory ran out — one client hung the whole server.
#[test]
fn inline_nul_byte() {
    let m = Memoria::start();
    let r = RedisServer::start(&[]);
    for case in [&b"\x00\x01\x02\r\n"[..], b"PING\x00junk\r\n", b"ECHO \"a\x00b\"\r\n"] {
        let want = exchange(r.port, case, true);
        let got = exchange(m.port, case, true);
        assert_eq!(show(&got), show(&want), "for {:?}", show(case));
    }
}

// ---------------------------------------------------------------------------------------
// Bad clients next to good ones
// ---------------------------------------------------------------------------------------

/// One random piece of garbage: mangled RESP, random text, random bytes (NULs included).
fn garbage(rng: &mut Rng) -> Vec<u8> {
    let mut g = Vec::new();
    let parts = 1 + rng.below(6);
    for _ in 0..parts {
        match rng.below(8) {
            0 => g.extend_from_slice(format!("*{}\r\n", rng.next_u64() as i64 % 5_000_000_000).as_bytes()),
            1 => g.extend_from_slice(format!("${}\r\n", rng.next_u64() as i64 % 5_000_000_000).as_bytes()),
            2 => g.extend_from_slice(CLOSING_CASES[rng.below(CLOSING_CASES.len() as u64) as usize]),
            3 => g.extend_from_slice(OPEN_CASES[rng.below(OPEN_CASES.len() as u64) as usize]),
            4 => {
                let n = rng.below(200);
                const CHARS: &[u8] = b" \"'\\\r\n*$:+-abcXYZ0123456789";
                g.extend((0..n).map(|_| CHARS[rng.below(CHARS.len() as u64) as usize]));
            }
            5 => {
                let n = rng.below(300);
                g.extend((0..n).map(|_| rng.below(256) as u8));
            }
            6 => g.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$100\r\nshort"),
            _ => g.extend_from_slice(format!("garbage-{} \"x\r\n", rng.below(1000)).as_bytes()),
        }
    }
    g
}

#[test]
fn garbage_from_one_client_does_not_disturb_another() {
    let m = Memoria::start();
    let port = m.port;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let vandal = std::thread::spawn(move || {
        let mut rng = Rng::new(0x5eed_0123_4567_89ab);
        let mut rounds = 0u32;
        while rounds < 300 || !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            rounds += 1;
            let g = garbage(&mut rng);
            let mut s = connect(port);
            s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
            // The server may close or reset at any point: all outcomes are fine here.
            let _ = s.write_all(&g);
            if rng.below(2) == 0 {
                let _ = s.shutdown(Shutdown::Write);
            }
            let mut tmp = [0u8; 4096];
            while let Ok(n) = s.read(&mut tmp) {
                if n == 0 {
                    break;
                }
            }
            if rounds > 5000 {
                break;
            }
        }
        rounds
    });
    // Meanwhile a well-behaved client works through its own keys; every reply must be
    // exact.
    let mut c = Raw::connect(port);
    for i in 0..3000u32 {
        let k = format!("good:{}", i % 100);
        let v = format!("value-{i}");
        assert_eq!(c.cmd(&["SET", &k, &v]), b"+OK\r\n", "round {i}");
        let want = format!("${}\r\n{}\r\n", v.len(), v);
        assert_eq!(show(&c.cmd(&["GET", &k])), want, "round {i}");
        if i % 500 == 0 {
            // A pipelined burst in between.
            let mut batch = Vec::new();
            for j in 0..50 {
                memoria_core::protocol::resp::encode_command(&mut batch, &["ECHO", &format!("{i}-{j}")]);
            }
            c.send_raw(&batch);
            for j in 0..50 {
                let e = format!("{i}-{j}");
                assert_eq!(show(&c.read_reply()), format!("${}\r\n{}\r\n", e.len(), e));
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let rounds = vandal.join().expect("the garbage thread panicked");
    assert!(rounds >= 300);
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
    // The garbage never reached the good client's keys with anything but its own writes.
    assert_eq!(c.cmd(&["GET", "good:99"]), b"$10\r\nvalue-2999\r\n");
}

#[test]
fn clients_that_vanish_mid_command() {
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    // Half a multibulk, then gone.
    {
        let mut s = connect(m.port);
        s.write_all(b"*3\r\n$3\r\nSET\r\n$4\r\nhalf\r\n$10\r\nabc").unwrap();
    }
    // Half an inline command, then gone.
    {
        let mut s = connect(m.port);
        s.write_all(b"SET half-inline 1").unwrap();
    }
    // Inside MULTI, then gone: the transaction is discarded.
    {
        let mut s = Raw::connect(m.port);
        assert_eq!(s.cmd(&["MULTI"]), b"+OK\r\n");
        assert_eq!(s.cmd(&["SET", "in-multi", "1"]), b"+QUEUED\r\n");
    }
    // WATCH, then gone.
    {
        let mut s = Raw::connect(m.port);
        assert_eq!(s.cmd(&["WATCH", "w"]), b"+OK\r\n");
    }
    // A big pipeline whose replies are never read, then gone (the server's writes fail).
    {
        let mut s = connect(m.port);
        let mut batch = Vec::new();
        // Small enough that the replies fit the socket buffers: the server must not block
        // on us while we still write.
        for i in 0..5_000 {
            memoria_core::protocol::resp::encode_command(&mut batch, &["SET", &format!("unread:{i}"), "x"]);
        }
        s.write_all(&batch).unwrap();
    }
    // Half of a 1 MB value, then gone.
    {
        let mut s = connect(m.port);
        s.write_all(b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$1048576\r\n").unwrap();
        s.write_all(&vec![b'v'; 500_000]).unwrap();
    }
    // Ask until the server has seen every close: CLIENT LIST shows only us.
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
    for _ in 0..600 {
        let list = c.cmd(&["CLIENT", "LIST"]);
        if show(&list).matches("id=").count() == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(show(&c.cmd(&["CLIENT", "LIST"])).matches("id=").count(), 1, "closed clients still listed");
    assert_eq!(c.cmd(&["EXISTS", "half", "half-inline", "in-multi", "big"]), b":0\r\n");
    // The unread pipeline may have run any prefix of its commands; the server is fine.
    assert_eq!(c.cmd(&["SET", "w", "1"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn many_connections_at_once() {
    let m = Memoria::start();
    let mut conns: Vec<Raw> = (0..300).map(|_| Raw::connect(m.port)).collect();
    for (i, c) in conns.iter_mut().enumerate() {
        c.send(&["INCR", "conns"]);
        let _ = i;
    }
    let mut seen: Vec<i64> = conns
        .iter_mut()
        .map(|c| {
            let r = c.read_reply();
            show(&r).trim_start_matches(':').trim_end().parse().unwrap()
        })
        .collect();
    seen.sort();
    assert_eq!(seen, (1..=300).collect::<Vec<i64>>());
}

// ---------------------------------------------------------------------------------------
// Pipelines
// ---------------------------------------------------------------------------------------

#[test]
fn pipeline_of_100k_commands_is_answered_completely_and_in_order() {
    const N: usize = 100_000;
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    let mut w = c.s.try_clone().unwrap();
    // Written from another thread, so neither side blocks on a full socket buffer.
    let writer = std::thread::spawn(move || {
        let mut out = Vec::with_capacity(N * 32);
        for i in 0..N {
            match i % 4 {
                0 => memoria_core::protocol::resp::encode_command(&mut out, &["INCR", "seq"]),
                1 => memoria_core::protocol::resp::encode_command(&mut out, &["ECHO", &i.to_string()]),
                2 => memoria_core::protocol::resp::encode_command(&mut out, &["SET", &format!("p:{i}"), &i.to_string()]),
                _ => memoria_core::protocol::resp::encode_command(&mut out, &["GET", &format!("p:{}", i - 1)]),
            }
        }
        // In uneven slices, so commands straddle reads.
        let mut pos = 0;
        let mut step = 1usize;
        while pos < out.len() {
            let end = (pos + step).min(out.len());
            w.write_all(&out[pos..end]).unwrap();
            pos = end;
            step = step * 7 % 65_521 + 1;
        }
    });
    let mut incr = 0;
    for i in 0..N {
        let got = c.read_reply();
        let want = match i % 4 {
            0 => {
                incr += 1;
                format!(":{incr}\r\n")
            }
            1 => format!("${}\r\n{}\r\n", i.to_string().len(), i),
            2 => "+OK\r\n".to_string(),
            _ => format!("${}\r\n{}\r\n", (i - 1).to_string().len(), i - 1),
        };
        if got != want.as_bytes() {
            panic!("reply {i}: want {want:?}, got {:?}", show(&got));
        }
    }
    writer.join().unwrap();
    assert_eq!(c.cmd(&["GET", "seq"]), format!("${}\r\n{}\r\n", (N / 4).to_string().len(), N / 4).as_bytes());
    assert_eq!(c.cmd(&["DBSIZE"]), format!(":{}\r\n", N / 4 + 1).as_bytes());
}

#[test]
fn pipeline_of_100k_commands_with_the_redis_crate() {
    const N: usize = 100_000;
    let m = Memoria::start();
    let client = redis::Client::open(m.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let mut p = redis::pipe();
    for _ in 0..N {
        p.cmd("INCR").arg("ctr");
    }
    let got: Vec<i64> = p.query(&mut con).unwrap();
    assert_eq!(got.len(), N);
    assert!(got.iter().enumerate().all(|(i, &v)| v == i as i64 + 1), "INCR replies out of order");
    let mut p = redis::pipe();
    for i in 0..N {
        p.cmd("HSET").arg("h").arg(format!("f{i}")).arg(i);
    }
    let added: Vec<i64> = p.query(&mut con).unwrap();
    assert!(added.iter().all(|&n| n == 1));
    let len: i64 = redis::cmd("HLEN").arg("h").query(&mut con).unwrap();
    assert_eq!(len, N as i64);
}

// ---------------------------------------------------------------------------------------
// QUIT, RESP3, big values, the redis crate
// ---------------------------------------------------------------------------------------

#[test]
fn quit_closes_after_ok_and_runs_nothing_behind_it() {
    let m = Memoria::start();
    let mut s = connect(m.port);
    s.write_all(b"SET before 1\r\nQUIT\r\nSET after 1\r\n*3\r\n$3\r\nSET\r\n$6\r\nafter2\r\n$1\r\n1\r\n").unwrap();
    let (got, end) = read_to_end(&mut s, "QUIT");
    assert_eq!(show(&got), "+OK\r\n+OK\r\n");
    let _ = end;
    let mut c = Raw::connect(m.port);
    assert_eq!(c.cmd(&["EXISTS", "before"]), b":1\r\n");
    assert_eq!(c.cmd(&["EXISTS", "after", "after2"]), b":0\r\n");
    // QUIT inside MULTI closes too (it is never queued).
    let mut s = Raw::connect(m.port);
    assert_eq!(s.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(s.cmd(&["SET", "tx", "1"]), b"+QUEUED\r\n");
    assert_eq!(s.cmd(&["QUIT"]), b"+OK\r\n");
    assert!(s.closed());
    assert_eq!(c.cmd(&["EXISTS", "tx"]), b":0\r\n");
    // With the redis crate: QUIT answers OK.
    let client = redis::Client::open(m.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let ok: String = redis::cmd("QUIT").query(&mut con).unwrap();
    assert_eq!(ok, "OK");
}

#[test]
fn resp3_via_hello() {
    let m = Memoria::start();
    let r = RedisServer::start(&[]);
    let script: &[&[&str]] = &[
        &["HELLO", "3"],
        &["SET", "s", "1"],
        &["GET", "nokey"],
        &["HSET", "h", "a", "1"],
        &["HGETALL", "h"],
        &["HRANDFIELD", "h", "1", "WITHVALUES"],
        &["INCRBYFLOAT", "f", "1.5"],
        &["TTL", "s"],
        &["EXISTS", "s"],
        &["MGET", "s", "nokey"],
        &["CONFIG", "GET", "maxmemory"],
        &["HELLO", "2"],
        &["HGETALL", "h"],
        &["GET", "nokey"],
        &["HELLO", "3", "SETNAME", "named"],
        &["CLIENT", "GETNAME"],
        &["HELLO", "4"],
        &["HELLO", "x"],
        &["MULTI"],
        &["HGETALL", "h"],
        &["GET", "nokey"],
        &["EXEC"],
    ];
    let run = |port| -> Vec<String> {
        let mut c = Raw::connect(port);
        script.iter().map(|cmd| show(&mask_client_id(&c.cmd(cmd)))).collect()
    };
    let want = run(r.port);
    let got = run(m.port);
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        assert_eq!(g, w, "reply to {:?}", script[i]);
    }
    // The shape, spelled out.
    let hello = &got[0];
    assert!(hello.starts_with("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n"), "{hello:?}");
    for k in ["proto\r\n:3", "id\r\n:N", "mode\r\n$10\r\nstandalone", "role\r\n$6\r\nmaster", "modules\r\n*0"] {
        assert!(hello.contains(k), "HELLO 3 lacks {k:?}: {hello:?}");
    }
    assert_eq!(got[2], "_\r\n");
    assert_eq!(got[4], "%1\r\n$1\r\na\r\n$1\r\n1\r\n");
}

#[test]
fn resp3_with_the_redis_crate() {
    let m = Memoria::start();
    let client = redis::Client::open(format!("{}?protocol=resp3", m.url())).unwrap();
    let mut con = client.get_connection().unwrap();
    let _: () = redis::cmd("HSET").arg("h").arg("a").arg(1).arg("b").arg(2).query(&mut con).unwrap();
    let v: redis::Value = redis::cmd("HGETALL").arg("h").query(&mut con).unwrap();
    let redis::Value::Map(pairs) = v else { panic!("HGETALL under RESP3 is not a map: {v:?}") };
    assert_eq!(pairs.len(), 2);
    let v: redis::Value = redis::cmd("GET").arg("missing").query(&mut con).unwrap();
    assert_eq!(v, redis::Value::Nil);
    let f: f64 = redis::cmd("INCRBYFLOAT").arg("f").arg("0.25").query(&mut con).unwrap();
    assert_eq!(f, 0.25);
}

#[test]
fn big_values_round_trip() {
    let m = Memoria::start();
    // 10 MB of every byte value, through the redis crate.
    let big: Vec<u8> = (0..10 * 1024 * 1024).map(|i: usize| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let client = redis::Client::open(m.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let _: () = redis::cmd("SET").arg("big").arg(&big[..]).query(&mut con).unwrap();
    let back: Vec<u8> = redis::cmd("GET").arg("big").query(&mut con).unwrap();
    assert!(back == big, "10 MB value came back different ({} bytes)", back.len());
    let len: usize = redis::cmd("STRLEN").arg("big").query(&mut con).unwrap();
    assert_eq!(len, big.len());
    let tail: Vec<u8> = redis::cmd("GETRANGE").arg("big").arg(-3).arg(-1).query(&mut con).unwrap();
    assert_eq!(tail, big[big.len() - 3..]);
    // The same over raw bytes, sent in odd-sized pieces, with a command right behind it.
    let mut c = Raw::connect(m.port);
    let mut req = Vec::new();
    memoria_core::protocol::resp::encode_command(&mut req, &[&b"SET"[..], b"big2", &big]);
    memoria_core::protocol::resp::encode_command(&mut req, &["STRLEN", "big2"]);
    for chunk in req.chunks(99_991) {
        c.send_raw(chunk);
    }
    assert_eq!(c.read_reply(), b"+OK\r\n");
    assert_eq!(c.read_reply(), format!(":{}\r\n", big.len()).as_bytes());
    let r = c.cmd(&["GET", "big2"]);
    let head = format!("${}\r\n", big.len());
    assert!(r.starts_with(head.as_bytes()) && r[head.len()..r.len() - 2] == big[..] && r.ends_with(b"\r\n"));
    // A hash with a big field value, and APPEND growing a value past 20 MB.
    let _: () = redis::cmd("HSET").arg("bh").arg("f").arg(&big[..]).query(&mut con).unwrap();
    let hv: Vec<u8> = redis::cmd("HGET").arg("bh").arg("f").query(&mut con).unwrap();
    assert!(hv == big);
    let n: usize = redis::cmd("APPEND").arg("big").arg(&big[..]).query(&mut con).unwrap();
    assert_eq!(n, 2 * big.len());
    let _: () = redis::cmd("DEL").arg("big").arg("big2").arg("bh").query(&mut con).unwrap();
}

#[test]
fn redis_crate_sync_and_async() {
    let m = Memoria::start();
    let client = redis::Client::open(m.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let _: () = redis::cmd("SET").arg("a").arg("1").query(&mut con).unwrap();
    let v: String = redis::cmd("GET").arg("a").query(&mut con).unwrap();
    assert_eq!(v, "1");
    // Errors come back as errors, with Redis's text.
    let e = redis::cmd("HSET").arg("a").arg("f").arg("v").query::<i64>(&mut con).unwrap_err();
    assert_eq!(e.code(), Some("WRONGTYPE"), "{e:?}");
    let e = redis::cmd("GET").query::<String>(&mut con).unwrap_err();
    assert!(e.to_string().contains("wrong number of arguments for 'get' command"), "{e}");
    // An atomic pipeline (MULTI/EXEC).
    let (x, y): (i64, i64) = redis::pipe().atomic().cmd("INCR").arg("x").cmd("INCRBY").arg("x").arg(10).query(&mut con).unwrap();
    assert_eq!((x, y), (1, 11));

    // Async, multiplexed: many concurrent requests over one connection.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        let mut tasks = Vec::new();
        for i in 0..500i64 {
            let mut c = con.clone();
            tasks.push(tokio::spawn(async move {
                let _: () = redis::cmd("SET").arg(format!("as:{i}")).arg(i).query_async(&mut c).await.unwrap();
                let v: i64 = redis::cmd("GET").arg(format!("as:{i}")).query_async(&mut c).await.unwrap();
                assert_eq!(v, i);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let n: i64 = redis::cmd("DBSIZE").query_async(&mut con).await.unwrap();
        assert_eq!(n, 502);
    });
}

/// INFO server tells the truth about the word size clients care about (the server
/// process's: a client library skips its GEO tests on a 32-bit server), and names the
/// engine's own architecture apart.
#[test]
fn info_server_reports_the_hosts_arch_bits_and_the_engines_arch() {
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "server"])).into_owned();
    let field = |name: &str| info.lines().find_map(|l| l.strip_prefix(&format!("{name}:")).map(str::to_string));
    assert_eq!(field("arch_bits").as_deref(), Some(usize::BITS.to_string().as_str()), "{info}");
    assert_eq!(field("memoria_engine_arch").as_deref(), Some("wasm32"), "{info}");
    assert_eq!(info.matches("arch_bits:").count(), 1, "{info}");
}
