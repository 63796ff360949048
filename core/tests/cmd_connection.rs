//! Connection commands: PING ECHO HELLO (RESP3 switch) SELECT QUIT RESET AUTH and CLIENT
//! ID/SETNAME/GETNAME/LIST/INFO/SETINFO/REPLY/NO-EVICT.

mod cmdutil;
mod common;

use cmdutil::*;
use common::{H, NIL, OK, bulk, err, int};

fn hello_reply(proto: i64, id: i64, resp3: bool) -> String {
    let head = if resp3 { "%7\r\n".to_string() } else { "*14\r\n".to_string() };
    format!(
        "{head}{}{}{}{}{}{}{}{}{}{}{}{}{}*0\r\n",
        bulk("server"),
        bulk("redis"),
        bulk("version"),
        bulk("7.0.15"),
        bulk("proto"),
        int(proto),
        bulk("id"),
        int(id),
        bulk("mode"),
        bulk("standalone"),
        bulk("role"),
        bulk("master"),
        bulk("modules"),
    )
}

#[test]
fn ping_echo() {
    let mut h = H::new();
    ck(&mut h, "PING", "+PONG\r\n");
    ck(&mut h, "PING hi", bulk("hi"));
    ck(&mut h, "ping", "+PONG\r\n");
    ck(&mut h, "PING a b", err("ERR wrong number of arguments for 'ping' command"));
    ck(&mut h, "ECHO", err("ERR wrong number of arguments for 'echo' command"));
    ck(&mut h, "ECHO x", bulk("x"));
    ckr(&mut h, &[b"ECHO".as_slice(), b""], "$0\r\n\r\n");
    ckr(&mut h, &[b"ECHO".as_slice(), b"a\r\nb"], "$4\r\na\r\nb\r\n");
    ck(&mut h, "NOSUCH a b", err("ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' "));
    ck(&mut h, "NOSUCH", err("ERR unknown command 'NOSUCH', with args beginning with: "));
    assert!(h.effect_lines().is_empty());
}

#[test]
fn hello_and_resp3() {
    let mut h = H::new();
    ck(&mut h, "HELLO", hello_reply(2, 1, false));
    ck(&mut h, "HELLO 4", err("NOPROTO unsupported protocol version"));
    ck(&mut h, "HELLO 1", err("NOPROTO unsupported protocol version"));
    ck(&mut h, "HELLO x", err("ERR Protocol version is not an integer or out of range"));
    ck(&mut h, "HELLO 3 FOO", err("ERR Syntax error in HELLO option 'FOO'"));
    ck(&mut h, "HELLO 3 SETNAME", err("ERR Syntax error in HELLO option 'SETNAME'"));
    ck(&mut h, "HELLO 3 SETNAME a b", err("ERR Syntax error in HELLO option 'b'"));
    ck(&mut h, "HELLO 3 AUTH default", err("ERR Syntax error in HELLO option 'AUTH'"));
    ck(&mut h, "HELLO 2 AUTH bob pw", err("WRONGPASS invalid username-password pair or user is disabled."));
    // A failed HELLO leaves the protocol alone.
    ck(&mut h, "GET nokey", NIL);
    ck(&mut h, "HELLO 2 AUTH default pw SETNAME app", hello_reply(2, 1, false));
    ck(&mut h, "CLIENT GETNAME", bulk("app"));
    ck(&mut h, "HELLO 3", hello_reply(3, 1, true));
    ck(&mut h, "GET nokey", "_\r\n");
    ck(&mut h, "CLIENT GETNAME", bulk("app"));
    ck(&mut h, "HELLO", hello_reply(3, 1, true));
    ck(&mut h, "CONFIG GET maxmemory", format!("%1\r\n{}{}", bulk("maxmemory"), bulk("3221225472")));
    ck(&mut h, "CONFIG GET nosuch", "%0\r\n");
    ck(&mut h, "COMMAND INFO nosuch", "*1\r\n_\r\n");
    ck(&mut h, "OBJECT ENCODING nokey", "_\r\n");
    // The protocol is per connection.
    h.client = 2;
    ck(&mut h, "GET nokey", NIL);
    h.client = 1;
    ck(&mut h, "HELLO 2", hello_reply(2, 1, false));
    ck(&mut h, "GET nokey", NIL);
    ck(&mut h, "CONFIG GET maxmemory", bulks(&["maxmemory", "3221225472"]));
}

#[test]
fn client_name_and_id() {
    let mut h = H::new();
    ck(&mut h, "CLIENT ID", int(1));
    ck(&mut h, "CLIENT GETNAME", NIL);
    ck(&mut h, "CLIENT SETNAME", err("ERR wrong number of arguments for 'client|setname' command"));
    ck(&mut h, "CLIENT SETNAME a b", err("ERR wrong number of arguments for 'client|setname' command"));
    ck(&mut h, "CLIENT GETNAME x", err("ERR wrong number of arguments for 'client|getname' command"));
    ckr(&mut h, &[b"CLIENT".as_slice(), b"SETNAME", b"a b"], err("ERR Client names cannot contain spaces, newlines or special characters."));
    ckr(&mut h, &[b"CLIENT".as_slice(), b"SETNAME", b"a\nb"], err("ERR Client names cannot contain spaces, newlines or special characters."));
    ck(&mut h, "CLIENT SETNAME worker-1", OK);
    ck(&mut h, "CLIENT GETNAME", bulk("worker-1"));
    ckr(&mut h, &[b"CLIENT".as_slice(), b"SETNAME", b""], OK);
    ck(&mut h, "CLIENT GETNAME", NIL);
    ck(&mut h, "CLIENT FOO", err("ERR unknown subcommand 'FOO'. Try CLIENT HELP."));
    ck(&mut h, "CLIENT", err("ERR wrong number of arguments for 'client' command"));
    h.client = 7;
    ck(&mut h, "CLIENT ID", int(7));
    ck(&mut h, "CLIENT GETNAME", NIL);
    let help = h.c("CLIENT HELP");
    assert!(help.starts_with("*") && help.contains("\r\n+CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"), "{help:?}");
}

#[test]
fn client_list_and_info() {
    let mut h = H::new();
    ck(&mut h, "CLIENT SETNAME one", OK);
    ck(&mut h, "SELECT 2", OK);
    h.advance(3000);
    h.client = 2;
    ck(&mut h, "HELLO 3 SETNAME two", hello_reply(3, 2, true));
    h.advance(2000);
    h.client = 1;
    let info = bulk_text(&h.c("CLIENT INFO"));
    assert!(info.ends_with('\n') && info.lines().count() == 1, "{info:?}");
    let fields: Vec<&str> = info.trim_end().split(' ').collect();
    let get = |k: &str| fields.iter().find_map(|f| f.strip_prefix(&format!("{k}="))).unwrap_or_else(|| panic!("no {k} in {info:?}"));
    assert_eq!(get("id"), "1");
    assert_eq!(get("name"), "one");
    assert_eq!(get("db"), "2");
    assert_eq!(get("age"), "5");
    assert_eq!(get("idle"), "0"); // the command being run is the latest interaction
    assert_eq!(get("flags"), "N");
    assert_eq!(get("multi"), "-1");
    assert_eq!(get("resp"), "2");
    assert_eq!(get("user"), "default");
    assert_eq!(get("cmd"), "client|info");
    // Redis 7 field order.
    let names: Vec<&str> = fields.iter().map(|f| f.split('=').next().unwrap()).collect();
    assert_eq!(
        names[..30],
        [
            "id",
            "addr",
            "laddr",
            "fd",
            "name",
            "age",
            "idle",
            "flags",
            "db",
            "sub",
            "psub",
            "ssub",
            "multi",
            "qbuf",
            "qbuf-free",
            "argv-mem",
            "multi-mem",
            "rbs",
            "rbp",
            "obl",
            "oll",
            "omem",
            "tot-mem",
            "events",
            "cmd",
            "user",
            "redir",
            "resp",
            "lib-name",
            "lib-ver"
        ][..30]
    );

    let list = bulk_text(&h.c("CLIENT LIST"));
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list:?}");
    assert!(lines[0].starts_with("id=1 ") && lines[0].contains(" name=one ") && lines[0].contains(" cmd=client|list "), "{list:?}");
    assert!(lines[1].starts_with("id=2 ") && lines[1].contains(" name=two ") && lines[1].contains(" resp=3") && lines[1].contains(" idle=2 "), "{list:?}");
    assert!(lines[1].contains(" cmd=hello "), "{list:?}");
    let only2 = bulk_text(&h.c("CLIENT LIST ID 2 99"));
    assert_eq!(only2.lines().count(), 1);
    assert!(only2.starts_with("id=2 "));
    ck(&mut h, "CLIENT LIST ID 99999", "$0\r\n\r\n");
    ck(&mut h, "CLIENT LIST TYPE master", "$0\r\n\r\n");
    assert_eq!(bulk_text(&h.c("CLIENT LIST TYPE normal")).lines().count(), 2);
    ck(&mut h, "CLIENT LIST TYPE foo", err("ERR Unknown client type 'foo'"));
    ck(&mut h, "CLIENT LIST ID x", err("ERR Invalid client ID"));
    ck(&mut h, "CLIENT LIST FOO", err("ERR syntax error"));
    ck(&mut h, "CLIENT LIST TYPE normal ID 1", err("ERR syntax error"));
    ck(&mut h, "CLIENT LIST TYPE", err("ERR syntax error"));
    ck(&mut h, "CLIENT LIST ID", err("ERR syntax error"));
    // MULTI shows in the flags and the queue length.
    ck(&mut h, "MULTI", OK);
    ck(&mut h, "PING", "+QUEUED\r\n");
    h.client = 2;
    let list = bulk_text(&h.c("CLIENT LIST ID 1"));
    assert!(list.contains(" flags=x ") && list.contains(" multi=1 "), "{list:?}");
    // RESP3: CLIENT INFO/LIST are verbatim strings.
    let r = h.c("CLIENT INFO");
    assert!(r.starts_with('=') && r.contains("\r\ntxt:id=2 "), "{r:?}");
    ck(&mut h, "CLIENT LIST ID 12345", "=4\r\ntxt:\r\n");
}

#[test]
fn client_setinfo() {
    let mut h = H::new();
    ck(&mut h, "CLIENT SETINFO lib-name redis-py", OK);
    ck(&mut h, "CLIENT SETINFO LIB-VER 5.0.1", OK);
    ckr(&mut h, &[b"CLIENT".as_slice(), b"SETINFO", b"lib-name", b"a b"], err("ERR lib-name cannot contain spaces, newlines or special characters."));
    ck(&mut h, "CLIENT SETINFO foo bar", err("ERR Unrecognized option 'foo'"));
    ck(&mut h, "CLIENT SETINFO lib-name", err("ERR wrong number of arguments for 'client|setinfo' command"));
    let info = bulk_text(&h.c("CLIENT INFO"));
    assert!(info.contains(" lib-name=redis-py lib-ver=5.0.1"), "{info:?}");
}

#[test]
fn client_reply_modes() {
    let mut h = H::new();
    ck(&mut h, "CLIENT REPLY FOO", err("ERR syntax error"));
    ck(&mut h, "CLIENT REPLY SKIP", "");
    ck(&mut h, "PING a", "");
    ck(&mut h, "PING b", bulk("b"));
    ck(&mut h, "CLIENT REPLY OFF", "");
    ck(&mut h, "SET k v", "");
    ck(&mut h, "GET k", "");
    ck(&mut h, "CLIENT REPLY SKIP", "");
    ck(&mut h, "CLIENT REPLY ON", OK);
    ck(&mut h, "GET k", bulk("v"));
    // SKIP then ON: ON clears the skip and answers.
    ck(&mut h, "CLIENT REPLY SKIP", "");
    ck(&mut h, "CLIENT REPLY ON", OK);
    ck(&mut h, "PING", "+PONG\r\n");
    // SKIP twice in a row: the second SKIP is skipped and re-arms the skip.
    ck(&mut h, "CLIENT REPLY SKIP", "");
    ck(&mut h, "CLIENT REPLY SKIP", "");
    ck(&mut h, "PING", "");
    ck(&mut h, "PING", "+PONG\r\n");
    // Errors are skipped too.
    ck(&mut h, "CLIENT REPLY SKIP", "");
    ck(&mut h, "NOSUCH", "");
    ck(&mut h, "PING", "+PONG\r\n");
    // Writes still take effect and replicate while replies are off.
    assert_eq!(h.effect_lines(), ["0:SET k v"]);
}

#[test]
fn auth_without_users() {
    let mut h = H::new();
    ck(&mut h, "AUTH x", err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"));
    ck(&mut h, "AUTH a b", err("WRONGPASS invalid username-password pair or user is disabled."));
    ck(&mut h, "AUTH default anything", OK);
    ck(&mut h, "AUTH a b c", err("ERR syntax error"));
    ck(&mut h, "CLIENT NO-EVICT foo", err("ERR syntax error"));
    ck(&mut h, "CLIENT NO-EVICT on", OK);
}

#[test]
fn reset_and_quit() {
    let mut h = H::new();
    h.c("HELLO 3 SETNAME n");
    h.c("SELECT 3");
    h.c("SET k v");
    h.c("WATCH k");
    h.c("MULTI");
    ck(&mut h, "SET k w", "+QUEUED\r\n");
    ck(&mut h, "RESET", "+RESET\r\n");
    // Back to RESP2, db 0, no name, no transaction, no watches.
    ck(&mut h, "GET nokey", NIL);
    ck(&mut h, "CLIENT GETNAME", NIL);
    ck(&mut h, "EXEC", err("ERR EXEC without MULTI"));
    ck(&mut h, "DBSIZE", int(0));
    h.client = 2;
    h.c("SELECT 3");
    h.c("SET k x");
    h.client = 1;
    h.c("SELECT 3");
    h.c("MULTI");
    h.c("GET k");
    ck(&mut h, "EXEC", format!("*1\r\n{}", bulk("x")));
    ck(&mut h, "QUIT", OK);
}

/// The reply encoder in both dialects (doubles, booleans, sets, pushes and verbatim
/// strings are RESP3 types that degrade to RESP2 forms, as Redis's addReply* do).
#[test]
fn reply_encoder_dialects() {
    use memoria_core::protocol::reply::Reply;
    let enc = |resp3: bool, f: &dyn Fn(&mut Reply)| -> String {
        let mut r = Reply::new();
        r.resp3 = resp3;
        f(&mut r);
        String::from_utf8(r.buf).unwrap()
    };
    assert_eq!(enc(true, &|r| r.double(1.5)), ",1.5\r\n");
    assert_eq!(enc(false, &|r| r.double(1.5)), "$3\r\n1.5\r\n");
    assert_eq!(enc(true, &|r| r.double(3.0)), ",3\r\n");
    assert_eq!(enc(true, &|r| r.double(-0.25)), ",-0.25\r\n");
    assert_eq!(enc(true, &|r| r.double(f64::INFINITY)), ",inf\r\n");
    assert_eq!(enc(true, &|r| r.double(f64::NEG_INFINITY)), ",-inf\r\n");
    assert_eq!(enc(false, &|r| r.double(f64::INFINITY)), "$3\r\ninf\r\n");
    assert_eq!(enc(true, &|r| r.boolean(true)), "#t\r\n");
    assert_eq!(enc(false, &|r| r.boolean(false)), ":0\r\n");
    assert_eq!(enc(true, &|r| r.null()), "_\r\n");
    assert_eq!(enc(false, &|r| r.null()), "$-1\r\n");
    assert_eq!(enc(true, &|r| r.null_array()), "_\r\n");
    assert_eq!(enc(false, &|r| r.null_array()), "*-1\r\n");
    assert_eq!(enc(true, &|r| r.map(2)), "%2\r\n");
    assert_eq!(enc(false, &|r| r.map(2)), "*4\r\n");
    assert_eq!(enc(true, &|r| r.set(3)), "~3\r\n");
    assert_eq!(enc(false, &|r| r.set(3)), "*3\r\n");
    assert_eq!(enc(true, &|r| r.push(2)), ">2\r\n");
    assert_eq!(enc(false, &|r| r.push(2)), "*2\r\n");
    assert_eq!(enc(true, &|r| r.verbatim(b"a\r\nb")), "=8\r\ntxt:a\r\nb\r\n");
    assert_eq!(enc(false, &|r| r.verbatim(b"a\r\nb")), "$4\r\na\r\nb\r\n");
    assert_eq!(enc(false, &|r| r.help(["A", "  b"])), "*2\r\n+A\r\n+  b\r\n");
    // Errors can never break the framing, whatever they quote.
    assert_eq!(enc(false, &|r| r.error(b"ERR bad\r\ninput")), "-ERR bad  input\r\n");
    assert_eq!(enc(true, &|r| r.bulk_int(-42)), "$3\r\n-42\r\n");
}

/// CLIENT NO-TOUCH (Redis 7.2; checked against its documentation and a model: the idle
/// time a key would have): reads and writes of a NO-TOUCH client leave a key's access
/// time alone, TOUCH still touches, OFF and RESET restore the default.
#[test]
fn client_no_touch_leaves_access_times_alone() {
    let mut h = H::new();
    ck(&mut h, "SET k v", OK);
    ck(&mut h, "RPUSH l a", int(1));
    h.advance(10_000);
    ck(&mut h, "CLIENT NO-TOUCH maybe", err("ERR syntax error"));
    ck(&mut h, "CLIENT NO-TOUCH ON", OK);
    assert!(h.c("CLIENT INFO").contains(" flags=T "), "{}", h.c("CLIENT INFO"));
    ck(&mut h, "GET k", bulk("v"));
    ck(&mut h, "LRANGE l 0 -1", "*1\r\n$1\r\na\r\n");
    ck(&mut h, "SET k w", OK);
    ck(&mut h, "RPUSH l b", int(2));
    ck(&mut h, "OBJECT IDLETIME k", int(10));
    ck(&mut h, "OBJECT IDLETIME l", int(10));
    // TOUCH touches whatever the mode.
    ck(&mut h, "TOUCH k", int(1));
    ck(&mut h, "OBJECT IDLETIME k", int(0));
    h.advance(5_000);
    ck(&mut h, "CLIENT NO-TOUCH OFF", OK);
    ck(&mut h, "LRANGE l 0 0", "*1\r\n$1\r\na\r\n");
    ck(&mut h, "OBJECT IDLETIME l", int(0));
    ck(&mut h, "CLIENT NO-TOUCH ON", OK);
    ck(&mut h, "CLIENT NO-EVICT ON", OK);
    assert!(h.c("CLIENT INFO").contains(" flags=eT "), "{}", h.c("CLIENT INFO"));
    ck(&mut h, "RESET", "+RESET\r\n");
    assert!(h.c("CLIENT INFO").contains(" flags=N "), "{}", h.c("CLIENT INFO"));
}
