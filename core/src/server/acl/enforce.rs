//! AUTH's credential check, `requirepass` at start, the logged users for snapshots, and
//! the per-command enforcement `dispatch` calls before a handler runs.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{Acl, CTX_LUA, CTX_MULTI, CTX_TOPLEVEL, Denied, REASON_AUTH, REASON_CHANNEL, REASON_CMD, REASON_KEY, SUPERUSER, rules};
use crate::server::client::Client;
use crate::server::ctx::Ctx;
use crate::server::spec::{CommandSpec, flags};
use crate::server::state::State;

/// Why `enforce` refused a command.
pub enum Refusal {
    /// The client's user was deleted: close the connection without a reply.
    Close,
    Error(String),
}

/// The name of the user a client is authenticated as (for CLIENT LIST and the ACL LOG).
pub fn user_name<'a>(acl: &'a Acl, c: &Client) -> &'a [u8] {
    if c.user == SUPERUSER {
        return b"";
    }
    acl.user_of(c.user, c.user_gen).map_or(b"default", |u| u.name.as_slice())
}

fn client_info(st: &State, c: &Client) -> Vec<u8> {
    let mut out = Vec::new();
    crate::server::client::client_line(c, user_name(&st.acl, c), st.tracking.clients.get(&c.id), st.now_ms, &mut out);
    if out.last() == Some(&b'\n') {
        out.pop();
    }
    out
}

fn log_denial(ctx: &mut Ctx<'_>, d: Denied, spec: &CommandSpec, argv: &[&[u8]], context: u8) {
    let (reason, object): (u8, &[u8]) = match d {
        Denied::Cmd => (REASON_CMD, spec.name.as_bytes()),
        Denied::Key(i) => (REASON_KEY, argv[i]),
        Denied::Channel(i) => (REASON_CHANNEL, argv[i]),
    };
    let cinfo = client_info(ctx.st, ctx.client);
    let user = user_name(&ctx.st.acl, ctx.client).to_vec();
    log_entry(ctx, reason, context, object, &user, cinfo);
}

/// Adds an ACL LOG entry; a new one trims the log to the newest `acllog-max-len`, as in
/// Redis (a folded one leaves its length alone).
fn log_entry(ctx: &mut Ctx<'_>, reason: u8, context: u8, object: &[u8], username: &[u8], cinfo: Vec<u8>) {
    let (now, max_len) = (ctx.st.now_ms, ctx.st.config.acllog_max_len);
    if ctx.st.acl.add_log(reason, context, object, username, now, cinfo) {
        ctx.st.acl.log.truncate(max_len);
    }
}

/// Authentication and permissions of `ctx.client` for `spec` (Redis's processCommand
/// checks, and execCommand's re-check of queued commands). Cheap for a user that may run
/// everything: two flag tests.
#[inline]
pub fn enforce(ctx: &mut Ctx<'_>, spec: &'static CommandSpec, argv: &[&[u8]]) -> Result<(), Refusal> {
    let c = &*ctx.client;
    if c.user == SUPERUSER {
        return Ok(());
    }
    let acl = &ctx.st.acl;
    let Some(user) = acl.user_of(c.user, c.user_gen) else {
        return Err(Refusal::Close);
    };
    if !ctx.in_exec && acl.auth_required(c) && spec.flags & flags::NO_AUTH == 0 {
        return Err(Refusal::Error("NOAUTH Authentication required.".into()));
    }
    let Err(d) = acl.check(user, spec, argv) else { return Ok(()) };
    let context = if ctx.in_script {
        CTX_LUA
    } else if ctx.in_exec || c.multi.is_some() {
        CTX_MULTI
    } else {
        CTX_TOPLEVEL
    };
    log_denial(ctx, d, spec, argv, context);
    let msg = if ctx.in_script {
        match d {
            Denied::Cmd => "ERR The user executing the script can't run this command or subcommand".into(),
            Denied::Key(_) => "ERR The user executing the script can't access at least one of the keys mentioned in the command".into(),
            Denied::Channel(_) => "ERR The user executing the script can't publish to the channel mentioned in the command".into(),
        }
    } else if ctx.in_exec {
        let why = match d {
            Denied::Cmd => "no permission to execute the command or subcommand",
            Denied::Key(_) => "no permission to touch the specified keys",
            Denied::Channel(_) => "no permission to access one of the channels used as arguments",
        };
        format!(
            "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {why}"
        )
    } else {
        match d {
            Denied::Cmd => format!("NOPERM this user has no permissions to run the '{}' command", spec.name),
            Denied::Key(_) => "NOPERM this user has no permissions to access one of the keys used as arguments".into(),
            Denied::Channel(_) => "NOPERM this user has no permissions to access one of the channels used as arguments".into(),
        }
    };
    Err(Refusal::Error(msg))
}

/// Sets a new client's user: `default`, authenticated if it needs no password.
pub fn init_client(acl: &Acl, c: &mut Client) {
    let (slot, generation) = acl.default_handle();
    c.user = slot;
    c.user_gen = generation;
    c.authenticated = acl.default_authenticates();
}

/// AUTH / HELLO AUTH: on success the client is authenticated as `name`; on failure the
/// attempt goes to the ACL LOG.
pub fn authenticate(ctx: &mut Ctx<'_>, name: &[u8], pass: &[u8]) -> bool {
    if name == super::INTERNAL_USER
        && let Some(h) = ctx.st.acl.internal.as_ref()
        && super::ct_eq(h, &super::hash_password(pass))
    {
        ctx.client.user = SUPERUSER;
        ctx.client.authenticated = true;
        return true;
    }
    if ctx.st.acl.check_credentials(name, pass)
        && let Some((slot, generation)) = ctx.st.acl.handle(name)
    {
        ctx.client.user = slot;
        ctx.client.user_gen = generation;
        ctx.client.authenticated = true;
        return true;
    }
    let context = if ctx.client.multi.is_some() { CTX_MULTI } else { CTX_TOPLEVEL };
    let cinfo = client_info(ctx.st, ctx.client);
    log_entry(ctx, REASON_AUTH, context, b"AUTH", name, cinfo);
    false
}

/// Whether the default user takes no password (AUTH <password> is then an error).
pub fn default_nopass(st: &State) -> bool {
    st.acl.default_user().nopass()
}

/// `--requirepass` at start, as a SHA-256 hex from the host: the default user's password
/// unless the log (or a snapshot) has set the default user since.
pub fn init_requirepass(acl: &mut Acl, hex: &[u8]) {
    let d = acl.default_user();
    if d.logged || hex.len() != 64 {
        return;
    }
    let mut u = d.clone();
    u.flags &= !super::FLAG_NOPASS;
    u.passwords = alloc::vec![hex.to_vec()];
    acl.put(u);
}

/// The logged users as effect commands (`ACL SETUSER name reset …`), for snapshots and
/// the digest, in name order.
pub fn dump_users(acl: &Acl) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for u in acl.users().filter(|u| u.logged) {
        let words = rules::exact_rules(acl, u);
        let mut args: Vec<&[u8]> = alloc::vec![b"ACL", b"SETUSER", &u.name];
        args.extend(words.iter().map(|w| w.as_slice()));
        let mut cmd = Vec::new();
        crate::protocol::resp::encode_command(&mut cmd, &args);
        out.push(cmd);
    }
    out
}

/// Whether a connection from `addr` is refused by protected mode (on, default user
/// without a password, not a loopback client), with Redis's message.
pub fn protected_mode_denies(st: &State, addr: &[u8]) -> bool {
    st.config.value("protected-mode") == Some("yes") && st.acl.default_user().nopass() && !addr.is_empty() && !super::is_loopback(addr)
}

pub const DENIED_MESSAGE: &str = "-DENIED Memoria is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers, you may adopt one of the following solutions: 1) Set a password for the default user: start the nodes with --requirepass <password> (or MEMORIA_REQUIREPASS), or run 'CONFIG SET requirepass <password>' / 'ACL SETUSER default resetpass >password' from the loopback interface. 2) If the network is trusted, restart with '--protected-mode no'.\r\n";
