//! CLIENT PAUSE / UNPAUSE against redis-server 7.0.15: the same conversation on both
//! servers, every reply identical. Whether a command waited is shown by order, not by
//! time: a read answered during a WRITE pause does not see a write sent before it, and
//! the paused write's reply comes only after CLIENT UNPAUSE.

mod common;

use std::time::Duration;

use common::Raw;

fn s(r: Vec<u8>) -> String {
    String::from_utf8_lossy(&r).into_owned()
}

fn conversation(port: u16) -> Vec<String> {
    let mut c: Vec<Raw> = (0..5).map(|_| Raw::connect(port)).collect();
    let id4 = s(c[4].cmd(&["CLIENT", "ID"])).trim_start_matches(':').trim_end().to_string();
    let mut seen = Vec::new();
    let mut note = |what: &str, got: String| seen.push(format!("{what} -> {got:?}"));

    for args in [
        vec!["CLIENT", "PAUSE"],
        vec!["CLIENT", "PAUSE", "abc"],
        vec!["CLIENT", "PAUSE", "-1"],
        vec!["CLIENT", "PAUSE", "100", "FOO"],
        vec!["CLIENT", "PAUSE", "abc", "FOO"],
        vec!["CLIENT", "PAUSE", "100", "WRITE", "x"],
        vec!["CLIENT", "UNPAUSE", "x"],
        vec!["CLIENT", "PAUSE", "0"],
        vec!["CLIENT", "PAUSE", "9223372036854775807"],
        vec!["PING"],
        vec!["CLIENT", "UNPAUSE"],
    ] {
        let got = s(c[0].cmd(&args));
        note(&args.join(" "), got);
    }

    // WRITE: writes (and EVAL, PUBLISH…) wait, reads run; keys do not expire meanwhile.
    note("SET e v PX 30", s(c[0].cmd(&["SET", "e", "v", "PX", "30"])));
    note("CLIENT PAUSE 100000 WRITE", s(c[0].cmd(&["CLIENT", "PAUSE", "100000", "WRITE"])));
    c[1].send(&["SET", "k", "1"]);
    c[3].send(&["PUBLISH", "ch", "m"]);
    note("MULTI (4)", s(c[4].cmd(&["MULTI"])));
    c[4].send(&["SET", "k", "2"]);
    // At least e's 30 ms pass (it must have expired); the postponed commands need no wait:
    // their replies are the same whenever they arrive.
    std::thread::sleep(Duration::from_millis(60));
    note("GET k (read during the pause)", s(c[2].cmd(&["GET", "k"])));
    note("GET e (expired, not deleted)", s(c[2].cmd(&["GET", "e"])));
    note("DBSIZE (e still counted)", s(c[2].cmd(&["DBSIZE"])));
    note("MULTI GET EXEC (reads only)", {
        c[2].send(&["MULTI"]);
        c[2].send(&["GET", "k"]);
        c[2].send(&["EXEC"]);
        let r: Vec<String> = (0..3).map(|_| s(c[2].read_reply())).collect();
        r.join("")
    });
    note("CLIENT PAUSE 100000 WRITE again", s(c[0].cmd(&["CLIENT", "PAUSE", "100000", "WRITE"])));
    note("CLIENT UNPAUSE", s(c[0].cmd(&["CLIENT", "UNPAUSE"])));
    note("SET k 1 (paused)", s(c[1].read_reply()));
    note("PUBLISH (paused)", s(c[3].read_reply()));
    note("SET k 2 queued after the pause", s(c[4].read_reply()));
    note("EXEC", s(c[4].cmd(&["EXEC"])));
    note("GET k", s(c[2].cmd(&["GET", "k"])));
    note("GET e", s(c[2].cmd(&["GET", "e"])));
    note("DBSIZE", s(c[2].cmd(&["DBSIZE"])));

    // When a pause ends by itself, the postponed commands run in the order they came,
    // whatever the clients' ids (4 was connected after 1).
    note("CLIENT PAUSE 500 WRITE", s(c[0].cmd(&["CLIENT", "PAUSE", "500", "WRITE"])));
    c[4].send(&["SET", "order", "first"]);
    // 1 sends only once 4's SET is in: postponed (flag b), or already run.
    loop {
        let list = s(c[2].cmd(&["CLIENT", "LIST", "ID", &id4]));
        if list.contains(" flags=b ") || s(c[2].cmd(&["GET", "order"])) == "$5\r\nfirst\r\n" {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    c[1].send(&["SET", "order", "second"]);
    note("SET order first", s(c[4].read_reply()));
    note("SET order second", s(c[1].read_reply()));
    note("GET order", s(c[2].cmd(&["GET", "order"])));

    // ALL: everything waits, CLIENT UNPAUSE too, until the pause ends by itself.
    note("CLIENT PAUSE 300 ALL", s(c[0].cmd(&["CLIENT", "PAUSE", "300", "ALL"])));
    // (Commands of several clients postponed together: their replies do not depend on
    // which arrived first.)
    c[1].send(&["INCR", "n"]);
    c[2].send(&["PING"]);
    c[0].send(&["CLIENT", "UNPAUSE"]);
    note("INCR n", s(c[1].read_reply()));
    note("PING", s(c[2].read_reply()));
    note("CLIENT UNPAUSE (waited too)", s(c[0].read_reply()));
    note("GET n", s(c[2].cmd(&["GET", "n"])));

    // A WRITE pause widened to ALL while clients wait: they run when it ends.
    note("CLIENT PAUSE 200 WRITE", s(c[0].cmd(&["CLIENT", "PAUSE", "200", "WRITE"])));
    note("CLIENT PAUSE 300 ALL", s(c[0].cmd(&["CLIENT", "PAUSE", "300", "ALL"])));
    c[1].send(&["INCR", "n"]);
    c[2].send(&["PING"]);
    note("INCR n", s(c[1].read_reply()));
    note("PING", s(c[2].read_reply()));
    note("GET n", s(c[2].cmd(&["GET", "n"])));
    seen
}

#[test]
fn client_pause_matches_redis() {
    common::same_as_redis("CLIENT PAUSE", conversation);
}

/// A primary paused for longer than its lease keeps the lease (the host renews it while
/// commands wait): the other node never takes over, and the write goes through after.
#[test]
fn a_paused_primary_keeps_its_lease() {
    let l = common::start_logged_pair_with_lease("pause", Some(300));
    let role = |port: u16| s(Raw::connect(port).cmd(&["ROLE"]));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let (primary, other) = loop {
        if role(l.primary).contains("master") {
            break (l.primary, l.replica);
        }
        if role(l.replica).contains("master") {
            break (l.replica, l.primary);
        }
        assert!(std::time::Instant::now() < deadline, "no node was elected");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut p = Raw::connect(primary);
    // A pause far longer than the test; UNPAUSE ends it, so nothing hangs on a clock.
    assert_eq!(p.cmd(&["CLIENT", "PAUSE", "600000", "WRITE"]), b"+OK\r\n");
    let mut w = Raw::connect(primary);
    w.send(&["SET", "k", "v"]);
    // Some eight leases: still the primary, and a read answers.
    std::thread::sleep(Duration::from_millis(2500));
    assert!(role(primary).contains("master"), "the paused node lost its lease");
    assert!(!role(other).contains("master"), "the other node took over during the pause");
    assert_eq!(p.cmd(&["GET", "k"]), b"$-1\r\n");
    assert_eq!(p.cmd(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    assert_eq!(w.read_reply(), b"+OK\r\n");
    assert!(role(primary).contains("master"));
    assert_eq!(p.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
}
