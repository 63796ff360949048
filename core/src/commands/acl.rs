//! The ACL command (Redis's acl.c, command side): SETUSER DELUSER GETUSER LIST USERS
//! WHOAMI CAT DRYRUN GENPASS LOG LOAD SAVE HELP, and CONFIG SET requirepass. Users and
//! their enforcement are `server::acl`.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::server::acl::enforce::*;
use crate::server::acl::*;
use crate::server::ctx::Ctx;
use crate::util::eq_ic;

/// Replicates a user as its exact rules (hashes only, never a plaintext password).
fn propagate_user(ctx: &mut Ctx<'_>, u: &User) {
    let words = rules::exact_rules(&ctx.st.acl, u);
    let mut args: Vec<&[u8]> = Vec::with_capacity(words.len() + 3);
    args.push(b"ACL");
    args.push(b"SETUSER");
    args.push(&u.name);
    args.extend(words.iter().map(|w| w.as_slice()));
    ctx.propagate(&args);
}
fn refuse_on_replica(ctx: &mut Ctx<'_>) -> bool {
    if ctx.st.replica_mode && !ctx.st.applying {
        ctx.err("READONLY You can't write against a read only replica.");
        return true;
    }
    false
}
pub fn setuser(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let name = argv[2];
    if name.iter().any(|&c| c == 0 || c.is_ascii_whitespace() || c == 0x0b) {
        return ctx.err("ERR Usernames can't contain spaces or null characters");
    }
    if refuse_on_replica(ctx) {
        return;
    }
    let mut ops = &argv[3..];
    // Replayed effects rebuild the user from scratch (`reset` then the exact rules).
    let mut u = if ctx.st.applying && ops.first().is_some_and(|o| eq_ic(o, b"reset")) {
        ops = &ops[1..];
        User::new(name)
    } else {
        ctx.st.acl.get(name).cloned().unwrap_or_else(|| User::new(name))
    };
    for op in ops {
        if op.first() == Some(&b'(') {
            return ctx.err(&format!("ERR Error in ACL SETUSER modifier '{}': Selectors are not supported", String::from_utf8_lossy(op)));
        }
        if let Err(e) = rules::set_user(&ctx.st.acl, &mut u, op) {
            let shown = op.split(|&c| c == 0).next().unwrap_or(b"");
            return ctx.err(&format!("ERR Error in ACL SETUSER modifier '{}': {}", String::from_utf8_lossy(shown), e));
        }
    }
    u.logged = true;
    propagate_user(ctx, &u);
    ctx.st.acl.put(u);
    ctx.reply.ok();
}
pub fn deluser(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv[2..].iter().any(|n| *n == b"default") {
        return ctx.err("ERR The 'default' user cannot be removed");
    }
    if refuse_on_replica(ctx) {
        return;
    }
    let me = user_name(&ctx.st.acl, ctx.client).to_vec();
    let mut deleted: Vec<&[u8]> = Vec::new();
    for n in &argv[2..] {
        if ctx.st.acl.remove(n) {
            deleted.push(n);
        }
    }
    if !deleted.is_empty() {
        let mut args: Vec<&[u8]> = Vec::with_capacity(deleted.len() + 2);
        args.push(b"ACL");
        args.push(b"DELUSER");
        args.extend(deleted.iter().copied());
        ctx.propagate(&args);
        // Redis closes the connections of a deleted user, this one after its reply.
        if ctx.client.user != SUPERUSER && deleted.contains(&me.as_slice()) {
            ctx.close = true;
        }
    }
    ctx.reply.int(deleted.len() as i64);
}
pub fn getuser(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let acl = &ctx.st.acl;
    let Some(u) = acl.get(argv[2]) else {
        return ctx.reply.null();
    };
    let r = &mut *ctx.reply;
    r.map(6);
    r.bulk(b"flags");
    let fl: Vec<&str> = FLAG_NAMES.iter().filter(|(f, _)| u.flags & f != 0).map(|(_, n)| *n).collect();
    r.set(fl.len());
    for f in fl {
        r.bulk(f.as_bytes());
    }
    r.bulk(b"passwords");
    r.array(u.passwords.len());
    for p in &u.passwords {
        r.bulk(p);
    }
    r.bulk(b"commands");
    r.bulk(&rules::describe_commands(acl, &u.root));
    r.bulk(b"keys");
    r.bulk(&rules::describe_keys(&u.root));
    r.bulk(b"channels");
    r.bulk(&rules::describe_channels(&u.root));
    r.bulk(b"selectors");
    r.array(0);
}
pub fn list(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let acl = &ctx.st.acl;
    let lines: Vec<Vec<u8>> = acl
        .users()
        .map(|u| {
            let mut l = b"user ".to_vec();
            l.extend_from_slice(&u.name);
            l.push(b' ');
            l.extend_from_slice(&rules::describe_user(acl, u));
            l
        })
        .collect();
    ctx.reply.bulks(lines);
}
pub fn users(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let names: Vec<Vec<u8>> = ctx.st.acl.users().map(|u| u.name.clone()).collect();
    ctx.reply.bulks(names);
}
pub fn whoami(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let n = user_name(&ctx.st.acl, ctx.client).to_vec();
    ctx.reply.bulk(&n);
}
pub fn cat(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    match argv.len() {
        2 => {
            let names = crate::server::spec::acl_cat::NAMES.iter().map(|(_, n)| &n.as_bytes()[1..]);
            ctx.reply.bulks(names)
        }
        3 => {
            let Some(bit) = acl_cat_bit(argv[2]) else {
                let s = String::from_utf8_lossy(&argv[2][..argv[2].len().min(128)]).into_owned();
                return ctx.err(&format!("ERR Unknown category '{s}'"));
            };
            let acl = &ctx.st.acl;
            let names: Vec<&[u8]> = (0..acl.specs.len()).filter(|&id| acl.cats[id] & bit != 0).map(|id| acl.specs[id].name.as_bytes()).collect();
            ctx.reply.bulks(names);
        }
        _ => subcommand_syntax(ctx, "cat"),
    }
}
fn subcommand_syntax(ctx: &mut Ctx<'_>, sub: &str) {
    ctx.err(&format!("ERR unknown subcommand or wrong number of arguments for '{sub}'. Try ACL HELP."));
}
pub fn dryrun(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let acl = &ctx.st.acl;
    let Some(u) = acl.get(argv[2]) else {
        return ctx.err(&format!("ERR User '{}' not found", String::from_utf8_lossy(argv[2])));
    };
    let cmd_argv = &argv[3..];
    let spec = match ctx.st.index.lookup(cmd_argv[0]) {
        Some(top) if top.subcommands.is_empty() || cmd_argv.len() == 1 => Some(top),
        Some(top) => crate::server::spec::find_sub(top, cmd_argv[1]),
        None => None,
    };
    let Some(spec) = spec else {
        return ctx.err(&format!("ERR Command '{}' not found", String::from_utf8_lossy(cmd_argv[0])));
    };
    if !spec.arity_ok(cmd_argv.len()) {
        return ctx.err(&format!("ERR wrong number of arguments for '{}' command", spec.name));
    }
    match acl.check(u, spec, cmd_argv) {
        Ok(()) => ctx.reply.ok(),
        Err(Denied::Cmd) => ctx.reply.bulk(format!("This user has no permissions to run the '{}' command", spec.name).as_bytes()),
        Err(Denied::Key(i)) => ctx.reply.bulk(format!("This user has no permissions to access the '{}' key", String::from_utf8_lossy(cmd_argv[i])).as_bytes()),
        Err(Denied::Channel(i)) => {
            ctx.reply.bulk(format!("This user has no permissions to access the '{}' channel", String::from_utf8_lossy(cmd_argv[i])).as_bytes())
        }
    }
}
pub fn genpass(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() > 3 {
        return subcommand_syntax(ctx, "genpass");
    }
    let mut bits = 256;
    if argv.len() == 3 {
        let Some(b) = ctx.int_arg(argv[2]) else { return };
        bits = b;
    }
    if bits <= 0 || bits > 4096 {
        return ctx.err("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096");
    }
    let chars = ((bits + 3) / 4) as usize;
    let mut out = Vec::with_capacity(chars);
    // The seed the host gives every batch: fresh per call, never derived from a clock here.
    while out.len() < chars {
        let r = ctx.st.rng.next_u64();
        for i in 0..16 {
            if out.len() < chars {
                out.push(b"0123456789abcdef"[((r >> (i * 4)) & 15) as usize]);
            }
        }
    }
    ctx.reply.bulk(&out);
}
pub fn log(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() > 3 {
        return subcommand_syntax(ctx, "log");
    }
    let mut count: i64 = 10;
    if argv.len() == 3 {
        if eq_ic(argv[2], b"reset") {
            ctx.st.acl.log.clear();
            return ctx.reply.ok();
        }
        let Some(n) = ctx.int_arg(argv[2]) else { return };
        count = n.max(0);
    }
    let now = ctx.st.now_ms;
    let acl = &ctx.st.acl;
    let n = crate::util::usize_sat(count).min(acl.log.len());
    let r = &mut *ctx.reply;
    r.array(n);
    for e in acl.log.iter().take(n) {
        r.map(7);
        r.bulk(b"count");
        r.int(e.count as i64);
        r.bulk(b"reason");
        r.bulk(match e.reason {
            REASON_CMD => b"command",
            REASON_KEY => b"key",
            REASON_CHANNEL => b"channel",
            _ => b"auth",
        });
        r.bulk(b"context");
        r.bulk(match e.context {
            CTX_MULTI => b"multi",
            CTX_LUA => b"lua",
            _ => b"toplevel",
        });
        r.bulk(b"object");
        r.bulk(&e.object);
        r.bulk(b"username");
        r.bulk(&e.username);
        r.bulk(b"age-seconds");
        r.double((now - e.ctime) as f64 / 1000.0);
        r.bulk(b"client-info");
        r.bulk(&e.cinfo);
    }
}
pub fn load_save(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.err("ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.");
}
pub fn help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Prints this help.",
    ]);
}
/// CONFIG SET requirepass (Redis's ACLUpdateDefaultUserPassword): `resetpass` then the
/// password, or `nopass` when empty. Logged like ACL SETUSER default.
pub fn set_requirepass(ctx: &mut Ctx<'_>, pass: &[u8]) {
    let mut u = ctx.st.acl.default_user().clone();
    let _ = rules::set_user(&ctx.st.acl, &mut u, b"resetpass");
    if pass.is_empty() {
        let _ = rules::set_user(&ctx.st.acl, &mut u, b"nopass");
    } else {
        u.passwords.push(hash_password(pass));
    }
    u.logged = true;
    propagate_user(ctx, &u);
    ctx.st.acl.put(u);
}

/// ACL SETUSER's secrets for SLOWLOG (and MONITOR): every argument after the subcommand,
/// the user's name and rules included, as Redis 7.0 redacts them.
pub fn setuser_secret(_argv: &[&[u8]], i: usize) -> bool {
    i >= 2
}
