//! CLIENT KILL against redis-server 7.0.15: the same conversation on both servers, every
//! reply identical byte for byte, and the same connections closed. Ids and addresses
//! differ between the servers, so the conversation names connections by index.

mod common;

use common::{Memoria, Raw};

struct Conns {
    port: u16,
    conns: Vec<Raw>,
    ids: Vec<i64>,
}

impl Conns {
    fn start(port: u16, n: usize) -> Conns {
        let mut c = Conns { port, conns: Vec::new(), ids: Vec::new() };
        for _ in 0..n {
            c.open();
        }
        c
    }

    fn open(&mut self) -> usize {
        let mut raw = Raw::connect(self.port);
        let r = raw.cmd(&["CLIENT", "ID"]);
        self.ids.push(std::str::from_utf8(&r[1..r.len() - 2]).unwrap().parse().unwrap());
        self.conns.push(raw);
        self.conns.len() - 1
    }

    /// Connection `i`'s address as the server sees it.
    fn addr(&self, i: usize) -> String {
        self.conns[i].s.local_addr().unwrap().to_string()
    }

    fn id(&self, i: usize) -> String {
        self.ids[i].to_string()
    }

    fn cmd(&mut self, i: usize, args: &[&str]) -> String {
        String::from_utf8_lossy(&self.conns[i].cmd(args)).into_owned()
    }

    /// Whether connection `i` was closed by the server (a PING gets no answer but EOF).
    fn closed(&mut self, i: usize) -> bool {
        use std::io::Write;
        let _ = self.conns[i].s.write_all(b"*1\r\n$4\r\nPING\r\n");
        self.conns[i].closed()
    }
}

/// The conversation; returns what was seen, one line per step.
fn conversation(port: u16) -> Vec<String> {
    let mut c = Conns::start(port, 4);
    let mut seen = Vec::new();
    let mut note = |what: &str, got: String| seen.push(format!("{what} -> {got:?}"));

    // Errors, in Redis's order of checks.
    for args in [
        vec!["CLIENT", "KILL"],
        vec!["CLIENT", "KILL", "ID", "0"],
        vec!["CLIENT", "KILL", "ID", "x"],
        vec!["CLIENT", "KILL", "ID", "-3"],
        vec!["CLIENT", "KILL", "TYPE", "nope"],
        vec!["CLIENT", "KILL", "USER", "nosuch"],
        vec!["CLIENT", "KILL", "SKIPME", "maybe"],
        vec!["CLIENT", "KILL", "FOO", "bar"],
        vec!["CLIENT", "KILL", "ID", "5", "TYPE"],
        vec!["CLIENT", "KILL", "1.2.3.4:5"],
        vec!["CLIENT", "KILL", "ID", "999999"],
        vec!["CLIENT", "KILL", "TYPE", "master"],
        vec!["CLIENT", "KILL", "TYPE", "replica"],
        vec!["CLIENT", "KILL", "TYPE", "SLAVE"],
    ] {
        let got = c.cmd(0, &args);
        note(&args.join(" "), got);
    }

    // The old form by address, then the connection is gone.
    let a1 = c.addr(1);
    let got = c.cmd(0, &["CLIENT", "KILL", &a1]);
    note("CLIENT KILL <addr of 1>", got);
    note("1 closed", c.closed(1).to_string());

    // By id; the caller is skipped unless SKIPME no.
    let id2 = c.id(2);
    let got = c.cmd(0, &["CLIENT", "KILL", "ID", &id2]);
    note("CLIENT KILL ID <2>", got);
    note("2 closed", c.closed(2).to_string());
    let id0 = c.id(0);
    let got = c.cmd(0, &["CLIENT", "KILL", "ID", &id0]);
    note("CLIENT KILL ID <0> (itself, skipped)", got);

    // By type: a subscriber is pubsub, not normal.
    let s = c.open();
    let got = c.cmd(s, &["SUBSCRIBE", "ch"]);
    note("SUBSCRIBE", got);
    let got = c.cmd(0, &["CLIENT", "KILL", "TYPE", "pubsub"]);
    note("CLIENT KILL TYPE pubsub", got);
    let got = c.cmd(0, &["PUBLISH", "ch", "x"]);
    note("PUBLISH to the killed subscriber's channel (it is gone)", got);
    note("subscriber closed", c.closed(s).to_string());
    note("3 still open", (!c.closed(3)).to_string());

    // By user.
    let got = c.cmd(0, &["ACL", "SETUSER", "killme", "on", "nopass", "+@all", "~*"]);
    note("ACL SETUSER", got);
    let u = c.open();
    let got = c.cmd(u, &["AUTH", "killme", "x"]);
    note("AUTH killme", got);
    let got = c.cmd(0, &["CLIENT", "KILL", "USER", "killme", "TYPE", "pubsub"]);
    note("CLIENT KILL USER killme TYPE pubsub (no match)", got);
    let got = c.cmd(0, &["CLIENT", "KILL", "USER", "killme"]);
    note("CLIENT KILL USER killme", got);
    note("its connection closed", c.closed(u).to_string());

    // A blocked client that is killed consumes nothing.
    let b = c.open();
    c.conns[b].send(&["BLPOP", "list", "0"]);
    common::wait_blocked(c.port, 1);
    let idb = c.id(b);
    let got = c.cmd(0, &["CLIENT", "KILL", "ID", &idb]);
    note("CLIENT KILL ID <blocked>", got);
    let got = c.cmd(0, &["RPUSH", "list", "a"]);
    note("RPUSH list a", got);
    let got = c.cmd(0, &["LLEN", "list"]);
    note("LLEN list", got);

    // By local address: every connection to this port but the caller's.
    let others = [c.open(), c.open()];
    let laddr = format!("127.0.0.1:{}", c.port);
    let got = c.cmd(0, &["CLIENT", "KILL", "LADDR", &laddr, "SKIPME", "yes"]);
    note("CLIENT KILL LADDR <server> SKIPME yes", got);
    for o in others {
        note("other closed", c.closed(o).to_string());
    }

    // The caller itself: answered, then closed.
    let got = c.cmd(0, &["CLIENT", "KILL", "ID", &id0, "SKIPME", "no"]);
    note("CLIENT KILL ID <0> SKIPME no", got);
    note("0 closed", c.closed(0).to_string());
    let mut d = Conns::start(port, 1);
    let a = d.addr(0);
    let got = d.cmd(0, &["CLIENT", "KILL", &a]);
    note("CLIENT KILL <own addr> (the old form kills the caller)", got);
    note("closed", d.closed(0).to_string());
    seen
}

#[test]
fn client_kill_matches_redis() {
    common::same_as_redis("CLIENT KILL", conversation);
}

/// What a killed connection had sent and not yet had run never runs (Redis frees it with
/// its query buffer): here a SET pipelined behind a BLPOP that blocks. The same batch
/// case (commands after the kill in one engine call) is core/tests/cmd_lists.rs's.
#[test]
fn a_killed_clients_pending_commands_never_run() {
    let m = Memoria::start();
    let mut killer = Raw::connect(m.port);
    let mut victim = Raw::connect(m.port);
    let r = victim.cmd(&["CLIENT", "ID"]);
    let id = String::from_utf8_lossy(&r[1..r.len() - 2]).into_owned();
    victim.send(&["BLPOP", "q", "0"]);
    victim.send(&["SET", "after-kill", "1"]);
    common::wait_blocked(m.port, 1);
    assert_eq!(killer.cmd(&["CLIENT", "KILL", "ID", &id]), b":1\r\n");
    assert!(victim.closed(), "the killed connection is closed");
    assert_eq!(killer.cmd(&["RPUSH", "q", "a"]), b":1\r\n");
    assert_eq!(killer.cmd(&["EXISTS", "after-kill"]), b":0\r\n");
    assert_eq!(killer.cmd(&["LLEN", "q"]), b":1\r\n");
}
