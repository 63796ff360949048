//! Connection commands: PING ECHO HELLO SELECT QUIT RESET AUTH CLIENT.

use alloc::string::String;
use alloc::vec::Vec;

use crate::server::client::{Client, client_line};
use crate::server::ctx::Ctx;
use crate::util::eq_ic;

/// The Redis version whose behaviour Memoria reproduces (clients gate features on it).
pub const REDIS_VERSION: &str = "7.0.15";

pub fn ping(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() <= 2 && !ctx.client.resp3 && ctx.client.subs.active() {
        // A RESP2 subscriber gets PING's answer in the shape of a message.
        ctx.reply.array(2);
        ctx.reply.bulk(b"pong");
        return ctx.reply.bulk(argv.get(1).copied().unwrap_or(b""));
    }
    match argv.len() {
        1 => ctx.reply.simple(b"PONG"),
        2 => ctx.reply.bulk(argv[1]),
        _ => ctx.err("ERR wrong number of arguments for 'ping' command"),
    }
}

pub fn echo(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    ctx.reply.bulk(argv[1]);
}

pub fn select(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    // Redis checks cluster mode before the range: SELECT 99 there is "not allowed".
    if ctx.st.cluster.is_some() && crate::util::parse_i64(argv[1]).is_some_and(|n| n != 0 && i32::try_from(n).is_ok()) {
        return ctx.err("ERR SELECT is not allowed in cluster mode");
    }
    let Some(n) = crate::commands::db::db_index(ctx, argv[1]) else { return };
    ctx.client.db = n;
    ctx.reply.ok();
}

pub fn quit(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.close = true;
    ctx.reply.ok();
}

pub fn reset(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.client.multi = None;
    crate::server::state::unwatch_all(ctx.st, ctx.client);
    ctx.st.pubsub.drop_client(ctx.client.id, &mut ctx.client.subs);
    if core::mem::take(&mut ctx.client.monitor) {
        ctx.st.monitors.remove(ctx.client.id);
    }
    if core::mem::take(&mut ctx.client.tracking) {
        ctx.st.tracking.disable(ctx.client.id);
    }
    ctx.client.no_evict = false;
    ctx.client.no_touch = false;
    ctx.client.db = 0;
    ctx.client.resp3 = false;
    ctx.client.name = None;
    ctx.client.reply_off = false;
    ctx.client.reply_skip_next = false;
    ctx.client.readonly = false;
    ctx.client.asking = false;
    ctx.reply.resp3 = false;
    // Back to the default user, authenticated only if it needs no password.
    if ctx.client.user != crate::server::acl::SUPERUSER {
        crate::server::acl::enforce::init_client(&ctx.st.acl, ctx.client);
    }
    ctx.reply.simple(b"RESET");
}

/// AUTH's check (Redis's authCommand): the one-argument form needs the default user to
/// have a password; a failure is logged in the ACL LOG.
fn check_auth(ctx: &mut Ctx<'_>, user: Option<&[u8]>, pass: &[u8]) -> bool {
    let name = match user {
        None if crate::server::acl::enforce::default_nopass(ctx.st) => {
            ctx.err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
            return false;
        }
        None => &b"default"[..],
        Some(u) => u,
    };
    if crate::server::acl::enforce::authenticate(ctx, name, pass) {
        return true;
    }
    ctx.err("WRONGPASS invalid username-password pair or user is disabled.");
    false
}

pub fn auth(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let ok = match argv.len() {
        2 => check_auth(ctx, None, argv[1]),
        3 => check_auth(ctx, Some(argv[1]), argv[2]),
        _ => return ctx.syntax_error(),
    };
    if ok {
        ctx.reply.ok();
    }
}

fn valid_client_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

/// AUTH's secrets for MONITOR and SLOWLOG: every argument (the password, and the user).
pub fn auth_secret(_argv: &[&[u8]], i: usize) -> bool {
    i >= 1
}

/// HELLO's secrets: the user and password after AUTH, found as HELLO parses them.
pub fn hello_secret(argv: &[&[u8]], i: usize) -> bool {
    let mut j = 2;
    while j < argv.len() {
        let more = argv.len() - j - 1;
        if eq_ic(argv[j], b"AUTH") && more >= 2 {
            if i == j + 1 || i == j + 2 {
                return true;
            }
            j += 3;
        } else if eq_ic(argv[j], b"SETNAME") && more >= 1 {
            j += 2;
        } else {
            return false;
        }
    }
    false
}

pub fn hello(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let mut ver = None;
    let mut i = 1;
    if argv.len() >= 2 {
        match crate::util::parse_i64(argv[1]) {
            Some(v) => ver = Some(v),
            None => return ctx.err("ERR Protocol version is not an integer or out of range"),
        }
        i = 2;
        if !(2..=3).contains(&ver.unwrap()) {
            return ctx.err("NOPROTO unsupported protocol version");
        }
    }
    let mut setname = None;
    let mut creds = None;
    while i < argv.len() {
        let more = argv.len() - i - 1;
        if eq_ic(argv[i], b"AUTH") && more >= 2 {
            creds = Some((argv[i + 1], argv[i + 2]));
            i += 3;
        } else if eq_ic(argv[i], b"SETNAME") && more >= 1 {
            setname = Some(argv[i + 1]);
            i += 2;
        } else {
            return ctx.err(&alloc::format!("ERR Syntax error in HELLO option '{}'", String::from_utf8_lossy(argv[i])));
        }
    }
    if let Some((u, p)) = creds
        && !check_auth(ctx, Some(u), p)
    {
        return;
    }
    if !ctx.client.authenticated {
        return ctx.err("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time");
    }
    if let Some(n) = setname {
        if !valid_client_name(n) {
            return ctx.err("ERR Client names cannot contain spaces, newlines or special characters.");
        }
        ctx.client.name = if n.is_empty() { None } else { Some(n.to_vec()) };
    }
    if let Some(v) = ver {
        ctx.client.resp3 = v == 3;
        ctx.reply.resp3 = v == 3;
    }
    let mode: &[u8] = if ctx.st.cluster.is_some() { b"cluster" } else { b"standalone" };
    let role: &[u8] = if ctx.st.replica_mode { b"replica" } else { b"master" };
    let r = &mut *ctx.reply;
    r.map(7);
    r.bulk(b"server");
    r.bulk(b"redis");
    r.bulk(b"version");
    r.bulk(REDIS_VERSION.as_bytes());
    r.bulk(b"proto");
    r.int(if ctx.client.resp3 { 3 } else { 2 });
    r.bulk(b"id");
    r.int(ctx.client.id as i64);
    r.bulk(b"mode");
    r.bulk(mode);
    r.bulk(b"role");
    r.bulk(role);
    r.bulk(b"modules");
    r.array(0);
}

pub fn client_id(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.int(ctx.client.id as i64);
}

pub fn client_setname(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if !valid_client_name(argv[2]) {
        return ctx.err("ERR Client names cannot contain spaces, newlines or special characters.");
    }
    ctx.client.name = if argv[2].is_empty() { None } else { Some(argv[2].to_vec()) };
    ctx.reply.ok();
}

pub fn client_getname(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    match ctx.client.name.clone() {
        Some(n) => ctx.reply.bulk(&n),
        None => ctx.reply.null(),
    }
}

pub fn client_setinfo(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let v = argv[3];
    if !v.iter().all(|&c| (b'!'..=b'~').contains(&c)) {
        return ctx.err(&alloc::format!("ERR {} cannot contain spaces, newlines or special characters.", String::from_utf8_lossy(argv[2])));
    }
    let val = if v.is_empty() { None } else { Some(v.to_vec()) };
    if eq_ic(argv[2], b"LIB-NAME") {
        ctx.client.lib_name = val;
    } else if eq_ic(argv[2], b"LIB-VER") {
        ctx.client.lib_ver = val;
    } else {
        return ctx.err(&alloc::format!("ERR Unrecognized option '{}'", String::from_utf8_lossy(argv[2])));
    }
    ctx.reply.ok();
}

pub fn client_noevict(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    set_client_mode(ctx, argv[2], |c| &mut c.no_evict);
}

/// CLIENT NO-TOUCH ON|OFF (Redis 7.2): the client's commands do not change the access
/// time (OBJECT IDLETIME, LRU eviction) of the keys they read or write, except TOUCH.
pub fn client_notouch(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    set_client_mode(ctx, argv[2], |c| &mut c.no_touch);
}

/// Sets the client's `mode` from ON|OFF (a syntax error otherwise).
fn set_client_mode(ctx: &mut Ctx<'_>, arg: &[u8], mode: fn(&mut Client) -> &mut bool) {
    let on = if eq_ic(arg, b"ON") {
        true
    } else if eq_ic(arg, b"OFF") {
        false
    } else {
        return ctx.syntax_error();
    };
    *mode(ctx.client) = on;
    ctx.reply.ok();
}

pub fn client_reply(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if eq_ic(argv[2], b"ON") {
        ctx.client.reply_off = false;
        ctx.client.reply_skip = false;
        ctx.reply.ok();
    } else if eq_ic(argv[2], b"OFF") {
        ctx.client.reply_off = true;
    } else if eq_ic(argv[2], b"SKIP") {
        if !ctx.client.reply_off {
            ctx.client.reply_skip_next = true;
        }
    } else {
        ctx.syntax_error();
    }
}

pub fn client_info(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let mut out = Vec::new();
    client_line(
        ctx.client,
        crate::server::acl::enforce::user_name(&ctx.st.acl, ctx.client),
        ctx.st.tracking.clients.get(&ctx.client.id),
        ctx.st.now_ms,
        &mut out,
    );
    ctx.reply.verbatim(&out);
}

pub fn client_list(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let mut ids: Option<Vec<u64>> = None;
    let mut kind: Option<&'static str> = None;
    let mut i = 2;
    while i < argv.len() {
        // Redis 7.0 takes one filter: TYPE <type>, or ID <id> [<id> ...].
        if eq_ic(argv[i], b"TYPE") && argv.len() == 4 {
            let Some(k) = parse_client_type(ctx, argv[i + 1]) else { return };
            kind = Some(k);
            i += 2;
        } else if eq_ic(argv[i], b"ID") && i + 1 < argv.len() {
            let mut v = Vec::new();
            for a in &argv[i + 1..] {
                match crate::util::parse_i64(a) {
                    Some(n) if n > 0 => v.push(n as u64),
                    _ => return ctx.err("ERR Invalid client ID"),
                }
            }
            ids = Some(v);
            i = argv.len();
        } else {
            return ctx.syntax_error();
        }
    }
    let mut all: Vec<&Client> = ctx.others().collect();
    all.push(ctx.client);
    all.sort_by_key(|c| c.id);
    let mut out = Vec::new();
    for c in all {
        if ids.as_ref().is_none_or(|v| v.contains(&c.id)) && kind.is_none_or(|k| k == client_type(c)) {
            client_line(c, crate::server::acl::enforce::user_name(&ctx.st.acl, c), ctx.st.tracking.clients.get(&c.id), ctx.st.now_ms, &mut out);
        }
    }
    ctx.reply.verbatim(&out);
}

/// A client's type for CLIENT LIST/KILL TYPE (Redis's getClientType): no connection here
/// is a master or a replica (replicas tail the log); a monitor counts as normal.
fn client_type(c: &Client) -> &'static str {
    if c.subs.active() { "pubsub" } else { "normal" }
}

/// A type name as CLIENT LIST/KILL TYPE take it (Redis's getClientTypeByName), or the
/// error Redis answers.
fn parse_client_type(ctx: &mut Ctx<'_>, t: &[u8]) -> Option<&'static str> {
    for (name, kind) in [("normal", "normal"), ("pubsub", "pubsub"), ("master", "master"), ("replica", "replica"), ("slave", "replica")] {
        if eq_ic(t, name.as_bytes()) {
            return Some(kind);
        }
    }
    ctx.err(&alloc::format!("ERR Unknown client type '{}'", String::from_utf8_lossy(t)));
    None
}

/// CLIENT KILL addr:port (the old form: +OK or an error, and it may kill the caller), or
/// CLIENT KILL with filters ID, TYPE, USER, ADDR, LADDR, SKIPME, MAXAGE (all must match;
/// the reply is how many were killed). The host closes the connections (REC_KILL).
pub fn client_kill(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let mut addr: Option<&[u8]> = None;
    let mut laddr: Option<&[u8]> = None;
    let mut user: Option<(u32, u32)> = None;
    let mut kind: Option<&'static str> = None;
    let mut id = 0u64;
    let mut max_age = 0i64;
    let mut skipme = true;
    if argv.len() == 3 {
        addr = Some(argv[2]);
        skipme = false;
    } else {
        let mut i = 2;
        while i < argv.len() {
            let (opt, more) = (argv[i], i + 1 < argv.len());
            if !more {
                return ctx.syntax_error();
            }
            let v = argv[i + 1];
            if eq_ic(opt, b"ID") {
                match crate::util::parse_i64(v) {
                    Some(n) if n >= 1 => id = n as u64,
                    _ => return ctx.err("ERR client-id should be greater than 0"),
                }
            } else if eq_ic(opt, b"TYPE") {
                let Some(k) = parse_client_type(ctx, v) else { return };
                kind = Some(k);
            } else if eq_ic(opt, b"ADDR") {
                addr = Some(v);
            } else if eq_ic(opt, b"LADDR") {
                laddr = Some(v);
            } else if eq_ic(opt, b"USER") {
                match ctx.st.acl.handle(v) {
                    Some(h) => user = Some(h),
                    None => return ctx.err(&alloc::format!("ERR No such user '{}'", String::from_utf8_lossy(v))),
                }
            } else if eq_ic(opt, b"SKIPME") {
                if eq_ic(v, b"YES") {
                    skipme = true;
                } else if eq_ic(v, b"NO") {
                    skipme = false;
                } else {
                    return ctx.syntax_error();
                }
            } else if eq_ic(opt, b"MAXAGE") {
                // Redis 7.4's: connections older than this many seconds.
                match crate::util::parse_i64(v) {
                    Some(n) if n > 0 => max_age = n,
                    Some(_) => return ctx.syntax_error(),
                    None => return ctx.not_integer(),
                }
            } else {
                return ctx.syntax_error();
            }
            i += 2;
        }
    }
    let now = ctx.st.now_ms;
    let matches = |c: &Client| {
        addr.is_none_or(|a| a == c.addr.as_slice())
            && laddr.is_none_or(|a| a == c.laddr.as_slice())
            && kind.is_none_or(|k| k == client_type(c))
            && (id == 0 || c.id == id)
            && user.is_none_or(|(slot, generation)| c.user == slot && c.user_gen == generation)
            && (max_age == 0 || (now - c.created_ms) / 1000 > max_age)
    };
    let hit: Vec<u64> = ctx.others().filter(|c| matches(c)).map(|c| c.id).collect();
    let mut killed = hit.len() as i64;
    ctx.kill.extend(hit);
    if !skipme && matches(ctx.client) {
        // Closed after this reply (Redis's CLIENT_CLOSE_AFTER_REPLY).
        ctx.close = true;
        killed += 1;
    }
    if argv.len() == 3 {
        if killed == 0 { ctx.err("ERR No such client") } else { ctx.reply.ok() }
    } else {
        ctx.reply.int(killed);
    }
}

/// CLIENT PAUSE timeout [WRITE|ALL] (see `server::pause`): the mode is checked before the
/// timeout, as in Redis.
pub fn client_pause(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() > 4 {
        return ctx.err(&alloc::format!("ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.", String::from_utf8_lossy(argv[1])));
    }
    let all = match argv.get(3) {
        None => true,
        Some(m) if eq_ic(m, b"WRITE") => false,
        Some(m) if eq_ic(m, b"ALL") => true,
        Some(_) => return ctx.err("ERR CLIENT PAUSE mode must be WRITE or ALL"),
    };
    let Some(ms) = crate::util::parse_i64(argv[2]) else { return ctx.err("ERR timeout is not an integer or out of range") };
    if ms < 0 {
        return ctx.err("ERR timeout is negative");
    }
    // A zero timeout ends at once (Redis's end time 0); one past the clock's range wraps
    // into the past, so it pauses nothing, as in 7.0.
    let end = if ms == 0 { 0 } else { ctx.st.now_ms.wrapping_add(ms) };
    ctx.st.pause_clients(end, all);
    ctx.reply.ok();
}

/// CLIENT UNPAUSE: the pause ends and the postponed clients run, in order, after this
/// reply.
pub fn client_unpause(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.unpaused = ctx.st.unpause_clients();
    ctx.reply.ok();
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: answers a client blocked on keys as if its timeout
/// fired (or with an error); the engine sends that answer right after this reply.
pub fn client_unblock(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() > 4 {
        return ctx.err("ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.");
    }
    let Some(id) = crate::util::parse_i64(argv[2]) else { return ctx.not_integer() };
    let error = match argv.get(3) {
        None => false,
        Some(r) if eq_ic(r, b"TIMEOUT") => false,
        Some(r) if eq_ic(r, b"ERROR") => true,
        Some(_) => return ctx.err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"),
    };
    // A MIGRATE's client is not unblockable: only its transfer's outcome ends it.
    let blocked = ctx.others().any(|c| c.id as i64 == id && c.migrating.is_none() && c.blocked.as_ref().is_some_and(|b| !b.postponed))
        && !ctx.unblock.iter().any(|&(t, _)| t as i64 == id);
    if blocked {
        ctx.unblock.push((id as u64, error));
    }
    ctx.reply.int(blocked as i64);
}

pub fn client_help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    // Redis 7.0's text and order, for the subcommands Memoria has (SETINFO is 7.2's).
    ctx.reply.help([
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CACHING (YES|NO)",
        "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
        "GETREDIR",
        "    Return the client ID we are redirecting to when tracking is enabled.",
        "GETNAME",
        "    Return the name of the current connection.",
        "ID",
        "    Return the ID of the current connection.",
        "INFO",
        "    Return information about the current client connection.",
        "KILL <ip:port>",
        "    Kill connection made from <ip:port>.",
        "KILL <option> <value> [<option> <value> [...]]",
        "    Kill connections. Options are:",
        "    * ADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made from the specified address",
        "    * LADDR (<ip:port>|<unixsocket>:0)",
        "      Kill connections made to specified local address",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Kill connections by type.",
        "    * USER <username>",
        "      Kill connections authenticated by <username>.",
        "    * SKIPME (YES|NO)",
        "      Skip killing current connection (default: yes).",
        "LIST [options ...]",
        "    Return information about client connections. Options:",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "      Return clients of specified type.",
        "UNPAUSE",
        "    Stop the current client pause, resuming traffic.",
        "PAUSE <timeout> [WRITE|ALL]",
        "    Suspend all, or just write, clients for <timeout> milliseconds.",
        "REPLY (ON|OFF|SKIP)",
        "    Control the replies sent to the current connection.",
        "SETNAME <name>",
        "    Assign the name <name> to the current connection.",
        "SETINFO <option> <value>",
        "    Set client meta attr. Options are:",
        "    * LIB-NAME: the client lib name.",
        "    * LIB-VER: the client lib version.",
        "UNBLOCK <clientid> [TIMEOUT|ERROR]",
        "    Unblock the specified blocked client.",
        "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
        "         [OPTIN] [OPTOUT] [NOLOOP]",
        "    Control server assisted client side caching.",
        "TRACKINGINFO",
        "    Report tracking status for the current connection.",
        "NO-EVICT (ON|OFF)",
        "    Protect current client connection from eviction.",
        "NO-TOUCH (ON|OFF)",
        "    Will not touch LRU/LFU stats when this mode is on.",
        "HELP",
        "    Prints this help.",
    ]);
}
