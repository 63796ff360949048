//! Redis's and Valkey's security advisories since 2021 that concern the network layer or
//! the engine as it really runs (the wasm32 component), as regression tests; SECURITY.md
//! lists every advisory and where it is covered. Engine-level ones are in
//! core/tests/advisories.rs. Where a side-by-side check helps, the same bytes go to a
//! redis-server 7.0.15 started by the test and the replies must be identical.
//!
//! Already covered elsewhere, not repeated here: pathological glob patterns
//! (CVE-2022-36021, CVE-2024-31228) in no_stall.rs; oversize and malformed requests,
//! the multibulk and bulk limits in protocol.rs; a normal client that never reads its
//! replies (the disputed CVE-2025-46686) in limits.rs.
//!
//! A test marked `#[ignore = "bug: …"]` asserts the behaviour Memoria should have and does
//! not have yet; `cargo test --test advisories -- --ignored` runs them.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Memoria, Raw, RedisServer, blocked_clients};
use memoria_host::acl::AuthOptions;

const PASS: &str = "s3cret";

fn with_password() -> AuthOptions {
    AuthOptions { requirepass: Some(PASS.into()), ..Default::default() }
}

/// A redis-server whose default user needs `PASS` (set after start: the harness checks a
/// new server with an unauthenticated INFO).
fn redis_with_password() -> RedisServer {
    let r = RedisServer::start(&[]);
    assert_eq!(Raw::connect(r.port).cmd(&["CONFIG", "SET", "requirepass", PASS]), b"+OK\r\n");
    r
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `memoria up --in-memory` on a free loopback port with `extra` flags (its memory is
/// measured from outside).
fn spawn_memoria(extra: &[&str]) -> (common::UpProcess, u16) {
    let mut args = vec!["--in-memory"];
    args.extend_from_slice(extra);
    common::memoria_up(&args)
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

/// Writes `bytes` and reads until the server closes the connection or `want` bytes came;
/// returns what was read and whether the server closed. Fails the test if neither happens
/// within `guard` (a hang, not a timing claim).
fn exchange(port: u16, bytes: &[u8], want: usize, guard: Duration) -> (Vec<u8>, bool) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let _ = s.write_all(bytes);
    read_until(&mut s, want, guard)
}

fn read_until(s: &mut TcpStream, want: usize, guard: Duration) -> (Vec<u8>, bool) {
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let deadline = Instant::now() + guard;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe) => return (got, true),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("read: {e}"),
        }
        if got.len() >= want {
            return (got, false);
        }
        assert!(Instant::now() < deadline, "neither {want} bytes nor a close came; got {:?}", show(&got[..got.len().min(200)]));
    }
}

/// Runs `script` on both servers, one connection each, and checks the replies are equal.
fn same_on_both(m: u16, r: u16, script: &[Vec<&str>]) {
    let (mut mc, mut rc) = (Raw::connect(m), Raw::connect(r));
    for cmd in script {
        let (got, want) = (mc.cmd(cmd), rc.cmd(cmd));
        assert_eq!(show(&got), show(&want), "{cmd:?}");
    }
}

fn split(line: &str) -> Vec<&str> {
    line.split(' ').collect()
}

// ---------------------------------------------------------------------------------------
// CVE-2021-32675: unauthenticated clients and huge declared lengths
// ---------------------------------------------------------------------------------------

/// CVE-2021-32675: Redis allocated argument slots and buffers from the counts and lengths a
/// request declares, so unauthenticated connections sending a few bytes each could make it
/// allocate gigabytes. Memoria allocates nothing from a declared length (it buffers only
/// bytes that arrived): 400 unauthenticated connections each declaring a 1M-argument
/// request with a 512 MiB first argument leave the server's memory where it was.
#[test]
fn cve_2021_32675_declared_lengths_allocate_nothing() {
    let (child, port) = spawn_memoria(&["--requirepass", PASS]);
    let pid = child.0.id();
    let mut admin = Raw::connect(port);
    assert_eq!(admin.cmd(&["AUTH", PASS]), b"+OK\r\n");
    for i in 0..1000 {
        admin.cmd(&["SET", &format!("warm{i}"), "v"]);
    }
    let (peak_before, _) = memory_of(pid);
    let mut conns = Vec::new();
    for i in 0..400 {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let head: &[u8] = if i % 2 == 0 { b"*1048576\r\n$536870912\r\n" } else { b"*1048576\r\n$536870912\r\nxxxxxxxx" };
        s.write_all(head).unwrap();
        conns.push(s);
    }
    // The server has read them all once a later request on a new connection is answered
    // (and a moment more for the slowest connection task).
    let mut probe = Raw::connect(port);
    assert_eq!(probe.cmd(&["PING"]), b"-NOAUTH Authentication required.\r\n");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(admin.cmd(&["PING"]), b"+PONG\r\n");
    let (peak_after, rss_after) = memory_of(pid);
    let growth = peak_after.saturating_sub(peak_before);
    eprintln!("peak RSS {peak_before} -> {peak_after} (+{growth}); RSS now {rss_after}");
    // 400 × (8 MiB of argument slots + 512 MiB) had they been allocated.
    assert!(growth < 64 << 20, "peak RSS grew by {} MiB", growth >> 20);
    drop(conns);
    assert_eq!(admin.cmd(&["DBSIZE"]), b":1000\r\n");
}

/// CVE-2021-32675's fix: until a client authenticates, Redis 7.0.15 accepts at most 10
/// arguments per request and 16 KiB per argument, refusing more from the header with a
/// protocol error and closing; so does Memoria (the engine flags every answer to a client
/// that must still authenticate, and its connection frames one request at a time under
/// these limits).
#[test]
fn cve_2021_32675_unauthenticated_request_limits() {
    let r = redis_with_password();
    let m = Memoria::start_with_auth(with_password());
    let noauth = b"-NOAUTH Authentication required.\r\n";
    let mb_err = b"-ERR Protocol error: unauthenticated multibulk length\r\n";
    let bulk_err = b"-ERR Protocol error: unauthenticated bulk length\r\n";
    let mut ten = b"*10\r\n$3\r\nDEL\r\n".to_vec();
    for _ in 0..9 {
        ten.extend_from_slice(b"$1\r\na\r\n");
    }
    let mut big_ok = b"*2\r\n$4\r\nECHO\r\n$16384\r\n".to_vec();
    big_ok.extend(std::iter::repeat_n(b'x', 16384));
    big_ok.extend_from_slice(b"\r\n");
    let mut big_bad = b"*2\r\n$4\r\nECHO\r\n$16385\r\n".to_vec();
    big_bad.extend(std::iter::repeat_n(b'x', 16385));
    big_bad.extend_from_slice(b"\r\n");
    for (name, port) in [("redis", r.port), ("memoria", m.port)] {
        let g = Duration::from_secs(30);
        assert_eq!(exchange(port, b"*11\r\n", usize::MAX, g), (mb_err.to_vec(), true), "{name}");
        assert_eq!(exchange(port, b"*1048576\r\n", usize::MAX, g), (mb_err.to_vec(), true), "{name}");
        assert_eq!(exchange(port, b"*1\r\n$16385\r\n", usize::MAX, g), (bulk_err.to_vec(), true), "{name}");
        assert_eq!(exchange(port, &big_bad, usize::MAX, g), (bulk_err.to_vec(), true), "{name}");
        assert_eq!(exchange(port, &ten, noauth.len(), g), (noauth.to_vec(), false), "{name}");
        assert_eq!(exchange(port, &big_ok, noauth.len(), g), (noauth.to_vec(), false), "{name}");
        // Authenticated, the usual limits apply.
        let mut c = Raw::connect(port);
        assert_eq!(c.cmd(&["AUTH", PASS]), b"+OK\r\n", "{name}");
        let mut del = vec!["DEL"];
        del.extend(std::iter::repeat_n("k", 20));
        assert_eq!(c.cmd(&del), b":0\r\n", "{name}");
        let big = "y".repeat(100_000);
        assert_eq!(show(&c.cmd(&["ECHO", &big])), format!("$100000\r\n{big}\r\n"), "{name}");
    }
}

// ---------------------------------------------------------------------------------------
// CVE-2025-21605: output buffers of unauthenticated clients
// ---------------------------------------------------------------------------------------

/// Sends `bytes` of PINGs as an unauthenticated client without reading, then reads.
/// Returns (bytes sent, bytes received, whether the server closed the connection).
fn flood_without_reading(port: u16, bytes: usize) -> (usize, usize, bool) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = b"PING\r\n".repeat(10_000);
        let mut sent = 0;
        while sent < bytes {
            if w.write_all(&chunk).is_err() {
                break;
            }
            sent += chunk.len();
        }
        sent
    });
    let sent = writer.join().unwrap();
    let all = sent / 6 * b"-NOAUTH Authentication required.\r\n".len();
    let (got, closed) = read_until(&mut s, all, Duration::from_secs(120));
    (sent, got.len(), closed)
}

/// CVE-2025-21605: an unauthenticated client that sends commands and never reads made
/// Redis's output buffer grow without limit (the normal class is unlimited by default).
/// Redis 7.0.15 closes an unauthenticated client once its reply list passes 1 KiB;
/// Memoria closes it past 1 KiB of pending output.
#[test]
fn cve_2025_21605_unauthenticated_output_buffer_is_limited() {
    let r = redis_with_password();
    let m = Memoria::start_with_auth(with_password());
    for (name, port) in [("redis", r.port), ("memoria", m.port)] {
        let (sent, got, closed) = flood_without_reading(port, 12 << 20);
        let all = sent / 6 * 34;
        eprintln!("{name}: sent {sent} bytes, received {got} of {all}, closed: {closed}");
        assert!(closed, "{name} kept the flooding client");
        assert!(got < all / 10, "{name} buffered {got} bytes of replies");
        // Everyone else is served.
        let mut c = Raw::connect(port);
        assert_eq!(c.cmd(&["AUTH", PASS]), b"+OK\r\n");
        assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
    }
}

// ---------------------------------------------------------------------------------------
// CVE-2025-48367: connections that fail at accept
// ---------------------------------------------------------------------------------------

/// CVE-2025-48367: an unauthenticated client causing repeated accept errors made Redis stop
/// accepting until the next event, starving other clients. Memoria's accept loop retries
/// on every error. Here 1000 connections are reset by the client (RST, some before the
/// server accepted them, some mid-request), interleaved with normal clients: every normal
/// client is served, and no connection is left behind.
#[test]
fn cve_2025_48367_aborted_connections_do_not_starve_clients() {
    let m = Memoria::start_with_auth(with_password());
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", m.port).parse().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for round in 0..20 {
        rt.block_on(async {
            for i in 0..50 {
                let sock = tokio::net::TcpSocket::new_v4().unwrap();
                sock.set_zero_linger().unwrap();
                let Ok(stream) = sock.connect(addr).await else { continue };
                match i % 3 {
                    0 => {}
                    1 => {
                        let _ = stream.try_write(b"*3\r\n$3\r\nSET\r\n$1\r\nk");
                    }
                    _ => {
                        let _ = stream.try_write(b"AUTH wrong\r\nPING\r\n");
                    }
                }
                drop(stream); // SO_LINGER 0: the close is a RST
            }
        });
        let mut c = Raw::connect(m.port);
        assert_eq!(c.cmd(&["PING"]), b"-NOAUTH Authentication required.\r\n", "round {round}");
        assert_eq!(c.cmd(&["AUTH", PASS]), b"+OK\r\n", "round {round}");
        assert_eq!(c.cmd(&["SET", "k", &round.to_string()]), b"+OK\r\n", "round {round}");
    }
    let mut c = Raw::connect(m.port);
    assert_eq!(c.cmd(&["AUTH", PASS]), b"+OK\r\n");
    assert_eq!(c.cmd(&["GET", "k"]), b"$2\r\n19\r\n");
    // Every reset connection was let go: only this one is left.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = show(&c.cmd(&["INFO", "clients"]));
        let n: usize = info.lines().find_map(|l| l.strip_prefix("connected_clients:")).unwrap().trim().parse().unwrap();
        if n == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "{n} clients still connected");
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------------------
// CVE-2026-27623 (Valkey): empty requests and the parser's state
// ---------------------------------------------------------------------------------------

/// Writes each chunk separately (so the server reads them one at a time), then an
/// `ECHO END`, and reads until its reply or a close.
fn chunked(port: u16, chunks: &[&[u8]]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_nodelay(true).unwrap();
    for c in chunks {
        if s.write_all(c).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = s.write_all(b"*2\r\n$4\r\nECHO\r\n$3\r\nEND\r\n");
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset) => return got,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("read: {e}"),
        }
        if got.ends_with(b"$3\r\nEND\r\n") {
            return got;
        }
        assert!(Instant::now() < deadline, "no END after {chunks:?}: {:?}", show(&got));
    }
}

/// CVE-2026-27623 (Valkey): after an empty request (`*0`, `*-1`, a blank line) the parser
/// kept the previous request's type, and the next request was misparsed. Empty requests
/// of every form, whole or split across reads, followed by inline and multibulk commands,
/// answer exactly as redis-server 7.0.15.
#[test]
fn cve_2026_27623_empty_requests_reset_the_parser() {
    let m = Memoria::start();
    let r = RedisServer::start(&[]);
    let cases: &[&[&[u8]]] = &[
        &[b"*0\r\nPING\r\n"],
        &[b"*0\r\n", b"PING\r\n"],
        &[b"*0\r", b"\n", b"PING\r\n"],
        &[b"*0\r\n*1\r\n$4\r\nPING\r\n"],
        &[b"*0\r\n", b"*1\r\n$4\r\nPING\r\n"],
        &[b"\r\n*1\r\n$4\r\nPING\r\n"],
        &[b"\r\n", b"*1\r\n$4\r\nPING\r\n"],
        &[b"\r\nPING\r\n"],
        &[b"*-1\r\nPING\r\n"],
        &[b"*-1\r\n", b"*1\r\n$4\r\nPING\r\n"],
        &[b"*-5\r\n*1\r\n$4\r\nPING\r\n"],
        &[b"*0\r\n$4\r\nPING\r\n"],
        &[b"*0\r\n*0\r\n\r\n\r\nECHO x\r\n*2\r\n$4\r\nECHO\r\n$1\r\ny\r\n"],
        &[b"*0\r\n", b"*0\r\n", b"\r\n", b"\r\n", b"ECHO x\r\n", b"*2\r\n$4\r\nECHO\r\n$1\r\ny\r\n"],
        &[b"*1\r\n$0\r\n\r\nPING\r\n"],
        &[b"   \r\nPING\r\n"],
        &[b"\n\n\nPING\n"],
        &[b"*0\r\n$-1\r\n"],
        &[b"*1\r\n*0\r\n"],
        &[b"*1\r", b"\n*0\r\n"],
        &[b"*2\r\n$4\r\nECHO\r\n", b"*0\r\n"],
    ];
    for chunks in cases {
        let (got, want) = (chunked(m.port, chunks), chunked(r.port, chunks));
        assert_eq!(show(&got), show(&want), "{chunks:?}");
    }
    let many: Vec<u8> = [b"*0\r\n".repeat(1000), b"PING\r\n".to_vec()].concat();
    assert_eq!(show(&chunked(m.port, &[&many])), show(&chunked(r.port, &[&many])));
    let mut c = Raw::connect(m.port);
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
}

// ---------------------------------------------------------------------------------------
// CVE-2026-23479 (Valkey): unblocking a client
// ---------------------------------------------------------------------------------------

fn client_id(c: &mut Raw) -> String {
    show(&c.cmd(&["CLIENT", "ID"])).trim_start_matches(':').trim().to_string()
}

fn wait_blocked(port: u16, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while blocked_clients(port) != n {
        assert!(Instant::now() < deadline, "blocked_clients never reached {n}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Unblock-flow scenarios on one server; returns every reply, in order.
fn unblock_scenarios(port: u16) -> Vec<String> {
    let mut out = Vec::new();
    let mut admin = Raw::connect(port);
    let pipeline = |admin: &mut Raw, cmds: &[Vec<&str>]| -> Vec<String> {
        let mut bytes = Vec::new();
        for c in cmds {
            memoria_core::protocol::resp::encode_command(&mut bytes, c);
        }
        admin.send_raw(&bytes);
        cmds.iter().map(|_| show(&admin.read_reply())).collect()
    };
    // Unblocked with an error, then the key is pushed in the same pipeline.
    let mut w = Raw::connect(port);
    let id = client_id(&mut w);
    w.send(&["BLPOP", "k1", "0"]);
    wait_blocked(port, 1);
    out.extend(pipeline(&mut admin, &[vec!["CLIENT", "UNBLOCK", &id, "ERROR"], vec!["LPUSH", "k1", "v"]]));
    out.push(show(&w.read_reply()));
    out.push(show(&admin.cmd(&["LLEN", "k1"])));
    // Pushed first: served, and the unblock finds nothing to do.
    w.send(&["BLPOP", "k2", "0"]);
    wait_blocked(port, 1);
    out.extend(pipeline(&mut admin, &[vec!["LPUSH", "k2", "v"], vec!["CLIENT", "UNBLOCK", &id, "ERROR"]]));
    out.push(show(&w.read_reply()));
    out.push(show(&admin.cmd(&["LLEN", "k2"])));
    // Timed out, then unblocked again, then pushed.
    w.send(&["BLPOP", "k3", "0"]);
    wait_blocked(port, 1);
    out.extend(pipeline(&mut admin, &[vec!["CLIENT", "UNBLOCK", &id, "TIMEOUT"], vec!["CLIENT", "UNBLOCK", &id, "ERROR"], vec!["LPUSH", "k3", "a"]]));
    out.push(show(&w.read_reply()));
    out.push(show(&admin.cmd(&["LLEN", "k3"])));
    // Blocked inside a pipeline, unblocked, and the rest of the pipeline runs.
    w.send_raw(b"*3\r\n$5\r\nBLPOP\r\n$2\r\nk4\r\n$1\r\n0\r\n*2\r\n$4\r\nECHO\r\n$5\r\nafter\r\n");
    wait_blocked(port, 1);
    out.extend(pipeline(&mut admin, &[vec!["CLIENT", "UNBLOCK", &id]]));
    out.push(show(&w.read_reply()));
    out.push(show(&w.read_reply()));
    // A waiter that disconnects: nothing of it is left to unblock or serve.
    let mut gone = Raw::connect(port);
    let gone_id = client_id(&mut gone);
    gone.send(&["BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"]);
    wait_blocked(port, 1);
    drop(gone);
    wait_blocked(port, 0);
    out.extend(pipeline(&mut admin, &[vec!["CLIENT", "UNBLOCK", &gone_id, "ERROR"], vec!["LPUSH", "src", "x"], vec!["LLEN", "src"], vec!["EXISTS", "dst"]]));
    out.push(show(&admin.cmd(&["PING"])));
    out
}

/// CVE-2026-23479 (Valkey): a use-after-free in the flow that unblocks a client. CLIENT
/// UNBLOCK racing a push to the key, repeated unblocks, an unblock in the middle of a
/// pipeline and a waiter that disconnects answer exactly as redis-server 7.0.15.
#[test]
fn cve_2026_23479_unblock_flows() {
    let m = Memoria::start();
    let r = RedisServer::start(&[]);
    let got = unblock_scenarios(m.port);
    let want = unblock_scenarios(r.port);
    assert_eq!(got, want);
    assert_eq!(want[2], "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n");
}

// ---------------------------------------------------------------------------------------
// CVE-2021-32761, CVE-2021-21309: the 32-bit engine
// ---------------------------------------------------------------------------------------

/// CVE-2021-32761: BITFIELD (and SETBIT, GETRANGE…) offsets overflowed on 32-bit builds.
/// The engine is a wasm32 component, a 32-bit build: offsets around 2^32 bits and bytes,
/// with the default limits, answer exactly as redis-server 7.0.15 (64-bit).
#[test]
fn cve_2021_32761_bit_offsets_on_the_32_bit_engine() {
    let m = Memoria::start();
    let r = RedisServer::start(&[]);
    let script = [
        "SETBIT b 4294967296 1",
        "SETBIT b 4294967295 1",
        "SETBIT b 9223372036854775807 1",
        "SETBIT b 18446744073709551615 1",
        "GETBIT b 4294967295",
        "GETBIT b 4294967296",
        "STRLEN b",
        "BITFIELD b GET u8 4294967288",
        "BITFIELD b GET u8 4294967289",
        "BITFIELD b GET i64 4294967232",
        "BITFIELD b GET u8 #536870911",
        "BITFIELD b GET u8 #536870912",
        "BITFIELD b SET i64 #67108863 -1",
        "BITFIELD b SET i64 #67108864 -1",
        "BITFIELD b INCRBY i64 9223372036854775807 1",
        "BITFIELD b OVERFLOW SAT INCRBY i64 4294967232 9223372036854775807 INCRBY i64 4294967232 1",
        "BITFIELD_RO b GET u8 4294967296",
        "BITCOUNT b 0 -1",
        "BITCOUNT b 536870911 4294967296",
        "BITCOUNT b 4294967295 4294967296 BIT",
        "BITPOS b 1 536870911",
        "BITPOS b 1 -1 -1",
        "GETRANGE b 536870910 4294967296",
        "SETRANGE s 536870911 x",
        "SETRANGE s 536870912 x",
        "SETRANGE s 4294967295 x",
        "SETRANGE s 4294967296 x",
        "APPEND s y",
        "STRLEN s",
        "GETRANGE s 4294967295 4294967296",
        "LINDEX nokey 4294967296",
        "DEL b s",
    ];
    let script: Vec<Vec<&str>> = script.iter().map(|l| split(l)).collect();
    same_on_both(m.port, r.port, &script);
}

/// CVE-2021-21309: on 32-bit builds a proto-max-bulk-len raised past 4 GiB overflowed.
/// On the wasm32 engine the setting is cut to 32 bits: 4294967296 becomes 0 and refuses
/// every string write and bit offset, 8589934593 becomes 1, and 9223372036854775807 caps
/// offsets at 4 GiB where redis-server reads a zero.
#[test]
fn cve_2021_21309_proto_max_bulk_len_on_the_32_bit_engine() {
    let m = Memoria::start();
    let r = RedisServer::start(&[]);
    let script = [
        "CONFIG SET proto-max-bulk-len 4294967296",
        "CONFIG GET proto-max-bulk-len",
        "SETRANGE k 0 x",
        "APPEND k yy",
        "SETBIT b 0 1",
        "GETBIT k 0",
        "BITFIELD b SET u8 0 1",
        "CONFIG SET proto-max-bulk-len 4294967297",
        "SETRANGE k2 1 xx",
        "SETBIT b2 8 1",
        "CONFIG SET proto-max-bulk-len 8589934593",
        "SETRANGE k3 1 xx",
        "APPEND k3 zz",
        "CONFIG SET proto-max-bulk-len 9223372036854775807",
        "SET b x",
        "GETBIT b 34359738368",
        "GETBIT b 9223372036854775807",
        "BITFIELD_RO b GET u8 34359738368",
        "BITFIELD b GET u8 #4294967296",
        "GETRANGE b 4294967296 4294967297",
        "CONFIG SET proto-max-bulk-len 536870912",
        "SETRANGE k4 1 xx",
    ];
    let script: Vec<Vec<&str>> = script.iter().map(|l| split(l)).collect();
    same_on_both(m.port, r.port, &script);
}

/// CVE-2023-36824 on the wasm32 engine: numkeys past the int range, in COMMAND GETKEYS, ACL
/// DRYRUN and ACL enforcement. Redis reads numkeys with atoi (4294967297 counts as 1,
/// 9223372036854775807 as -1: no keys, so the ACL check passes and the command's syntax
/// error answers). The wasm32 engine agrees on 4294967297 (its usize is 32 bits) but wraps
/// the key span of 9223372036854775807 and checks the destination: -NOPERM.
#[test]
fn cve_2023_36824_numkeys_on_the_32_bit_engine() {
    let m = Memoria::start();
    let r = RedisServer::start(&[]);
    let script = [
        "ACL SETUSER u on nopass +@all ~a* -@dangerous",
        "COMMAND GETKEYS SINTERCARD 4294967297 a",
        "COMMAND GETKEYS LMPOP 4294967297 a LEFT",
        "COMMAND GETKEYS ZDIFFSTORE dst 4294967297 a",
        "COMMAND GETKEYS ZUNIONSTORE dst 9223372036854775807 a",
        "COMMAND GETKEYS ZUNIONSTORE dst 18446744073709551617 a",
        "ACL DRYRUN u ZDIFFSTORE dst 4294967297 a",
        "ACL DRYRUN u LMPOP 4294967297 b LEFT",
        "ACL DRYRUN u SINTERCARD 4294967298 a b",
        "ACL DRYRUN u ZUNIONSTORE dst 9223372036854775807 a",
        "AUTH u x",
        "ZDIFFSTORE dst 4294967297 a",
        "ZUNIONSTORE dst 18446744073709551617 a",
        "LMPOP 4294967297 b LEFT",
        "SINTERCARD 4294967297 b",
        "LMPOP 18446744073709551617 b LEFT",
        "ZUNIONSTORE dst 9223372036854775807 a",
        "ZINTERSTORE dst 9223372036854775807 a",
        "ZDIFFSTORE dst 9223372036854775807 a",
    ];
    let script: Vec<Vec<&str>> = script.iter().map(|l| split(l)).collect();
    same_on_both(m.port, r.port, &script);
}

// ---------------------------------------------------------------------------------------
// CVE-2023-25155 family: replies that cannot fit in the engine
// ---------------------------------------------------------------------------------------

/// CVE-2023-25155's family on the real engine: Memoria refuses a SRANDMEMBER /
/// ZRANDMEMBER / HRANDFIELD count below -2^27 because the reply could not fit in memory
/// (DELIBERATE_DIFFERENCES). The guard counts members, not bytes: with 1000-byte members a
/// count of -10^8 (allowed) asks for a 100 GB reply; the wasm32 engine (4 GiB) runs out of
/// memory and traps, the connection drops and the shard's engine is rebuilt (without a
/// log, empty). The reply should be the same range error.
#[test]
fn cve_2023_25155_reply_larger_than_the_engine() {
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    let member = "m".repeat(1000);
    assert_eq!(c.cmd(&["SET", "keep", "me"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["SADD", "s", &member]), b":1\r\n");
    assert_eq!(c.cmd(&["HSET", "h", "f", &member]), b":1\r\n");
    assert_eq!(c.cmd(&["ZADD", "z", "1", &member]), b":1\r\n");
    let range = b"-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n";
    assert_eq!(show(&c.cmd(&["SRANDMEMBER", "s", "-100000000"])), show(range));
    assert_eq!(show(&c.cmd(&["HRANDFIELD", "h", "-60000000", "WITHVALUES"])), show(range));
    assert_eq!(show(&c.cmd(&["ZRANDMEMBER", "z", "-100000000"])), show(range));
    assert_eq!(c.cmd(&["GET", "keep"]), b"$2\r\nme\r\n");
}

// ---------------------------------------------------------------------------------------
// CVE-2023-41056: buffer resizing
// ---------------------------------------------------------------------------------------

/// CVE-2023-41056: Redis mis-accounted a buffer's size when resizing it for large
/// arguments, overflowing the heap. Values of every size around the buffer boundaries
/// (16 KiB, 32 KiB, 64 KiB, 1 MiB), pipelined and written in odd-sized pieces so that
/// arguments straddle reads, come back intact.
#[test]
fn cve_2023_41056_arguments_around_buffer_boundaries() {
    let m = Memoria::start();
    let mut c = Raw::connect(m.port);
    let mut sizes = Vec::new();
    for b in [16 * 1024, 32 * 1024, 64 * 1024, 1 << 20] {
        sizes.extend([b - 1, b, b + 1]);
    }
    sizes.extend([0, 1, 2]);
    let value = |i: usize, n: usize| -> Vec<u8> { (0..n).map(|j| (j.wrapping_mul(31).wrapping_add(i * 7) % 251) as u8).collect() };
    let mut pipeline = Vec::new();
    for (i, &n) in sizes.iter().enumerate() {
        memoria_core::protocol::resp::encode_command(&mut pipeline, &[b"SET".as_slice(), format!("k{i}").as_bytes(), &value(i, n)]);
    }
    for piece in pipeline.chunks(7777) {
        c.send_raw(piece);
    }
    for _ in &sizes {
        assert_eq!(c.read_reply(), b"+OK\r\n");
    }
    for (i, &n) in sizes.iter().enumerate() {
        let got = c.cmd(&["GET", &format!("k{i}")]);
        let mut want = format!("${n}\r\n").into_bytes();
        want.extend(value(i, n));
        want.extend_from_slice(b"\r\n");
        assert!(got == want, "value {i} of {n} bytes came back different ({} bytes)", got.len());
        assert_eq!(c.cmd(&["STRLEN", &format!("k{i}")]), format!(":{n}\r\n").into_bytes());
    }
    // Replies of those sizes pipelined back to back.
    let mut gets = Vec::new();
    for i in 0..sizes.len() {
        memoria_core::protocol::resp::encode_command(&mut gets, &[b"GET".as_slice(), format!("k{i}").as_bytes()]);
    }
    c.send_raw(&gets);
    for (i, &n) in sizes.iter().enumerate() {
        let got = c.read_reply();
        assert_eq!(got.len(), n + format!("${n}\r\n").len() + 2, "reply {i}");
    }
}

// ---------------------------------------------------------------------------------------
// CVE-2026-81934, CVE-2026-56684: TLS connections that go away with data pending
// ---------------------------------------------------------------------------------------

/// A test CA and a server certificate it signed, as PEM files in a temp dir.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose};
        let dir = tempfile::tempdir().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.distinguished_name.push(DnType::CommonName, "advisories test CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let ca_key = KeyPair::generate().unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.self_signed(&ca_key).unwrap().pem()).unwrap();
        let mut leaf = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        leaf.distinguished_name.push(DnType::CommonName, "memoria server");
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().unwrap();
        let cert = leaf.signed_by(&key, &Issuer::from_params(&ca, &ca_key)).unwrap();
        std::fs::write(dir.path().join("server.pem"), cert.pem()).unwrap();
        std::fs::write(dir.path().join("server.key"), key.serialize_pem()).unwrap();
        Pki { dir }
    }
    fn path(&self, f: &str) -> std::path::PathBuf {
        self.dir.path().join(f)
    }
}

/// An in-process server with a plaintext and a TLS port, on its own thread and runtime.
struct TlsServer {
    port: u16,
    tls_port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TlsServer {
    fn start(pki: &Pki) -> TlsServer {
        use memoria_host::server::{self, NetOptions, ServerOptions};
        use memoria_host::tls::{ClientAuth, TlsSettings};
        let tls = TlsSettings {
            cert_file: pki.path("server.pem"),
            key_file: pki.path("server.key"),
            ca_file: Some(pki.path("ca.pem")),
            auth_clients: ClientAuth::No,
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let opts = ServerOptions {
                    bind: "127.0.0.1".into(),
                    port: 0,
                    data_dir: "/nonexistent".into(),
                    limits: memoria_host::limits::ConnLimits::default(),
                    log: None,
                    node: "test".into(),
                    replica_of: None,
                    lease_ms: None,
                    cluster: false,
                    snapshots: None,
                    auth: Default::default(),
                };
                let net = NetOptions { tls: Some((0, tls)), ..Default::default() };
                let srv = server::start_with(opts, net).await.expect("server starts");
                tx.send((srv.addr.port(), srv.tls_addr.unwrap().port())).unwrap();
                let _ = stop_rx.await;
                srv.shutdown().await;
            });
        });
        let (port, tls_port) = rx.recv_timeout(Duration::from_secs(60)).expect("memoria did not start");
        TlsServer { port, tls_port, stop: Some(stop_tx), thread: Some(thread) }
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// redis-cli over TLS with `args`; returns its output.
fn cli_tls(port: u16, pki: &Pki, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "--tls", "--cacert"])
        .arg(pki.path("ca.pem"))
        .args(args)
        .output()
        .expect("redis-cli (redis-tools) is needed");
    format!("{}{}", show(&out.stdout), show(&out.stderr))
}

/// CVE-2026-81934 (use-after-free of pending TLS data) and Valkey's CVE-2026-56684 (a TLS
/// connection freed by CLIENT KILL while still in use): TLS clients killed mid-pipeline,
/// with requests and replies in flight both ways, half handshakes and resets leave the
/// server whole: it serves TLS and plaintext clients after, and holds none of the dead
/// connections. (CLIENT KILL does not exist here; the TLS layer is rustls.)
#[test]
fn cve_2026_81934_tls_clients_leaving_with_data_pending() {
    let pki = Pki::new();
    let srv = TlsServer::start(&pki);
    assert_eq!(cli_tls(srv.tls_port, &pki, &["PING"]).trim(), "PONG");
    let mut pipeline = Vec::new();
    for i in 0..100_000 {
        memoria_core::protocol::resp::encode_command(&mut pipeline, &["SET", &format!("tls:{i}"), "some value to write"]);
    }
    for _ in 0..5 {
        // redis-cli --pipe writes the whole pipeline over TLS and reads the replies; it is
        // killed while both are under way.
        let mut child = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &srv.tls_port.to_string(), "--tls", "--cacert"])
            .arg(pki.path("ca.pem"))
            .arg("--pipe")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-cli (redis-tools) is needed");
        let mut stdin = child.stdin.take().unwrap();
        let half = pipeline.len() / 2;
        let _ = stdin.write_all(&pipeline[..half]);
        let _ = child.kill();
        let _ = child.wait();
        // A handshake cut short, and a reset mid-handshake.
        let mut s = TcpStream::connect(("127.0.0.1", srv.tls_port)).unwrap();
        let _ = s.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]);
        drop(s);
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        for _ in 0..20 {
            let sock = tokio::net::TcpSocket::new_v4().unwrap();
            sock.set_zero_linger().unwrap();
            if let Ok(stream) = sock.connect(format!("127.0.0.1:{}", srv.tls_port).parse().unwrap()).await {
                let _ = stream.try_write(&[0x16, 0x03, 0x01, 0x00, 0x40]);
                drop(stream);
            }
        }
    });
    assert_eq!(cli_tls(srv.tls_port, &pki, &["SET", "after", "1"]).trim(), "OK");
    assert_eq!(cli_tls(srv.tls_port, &pki, &["GET", "after"]).trim(), "1");
    let mut plain = Raw::connect(srv.port);
    assert_eq!(plain.cmd(&["GET", "after"]), b"$1\r\n1\r\n");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let info = show(&plain.cmd(&["INFO", "clients"]));
        let n: usize = info.lines().find_map(|l| l.strip_prefix("connected_clients:")).unwrap().trim().parse().unwrap();
        if n == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "{n} clients still connected");
        std::thread::sleep(Duration::from_millis(100));
    }
}
