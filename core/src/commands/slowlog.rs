//! SLOWLOG GET/LEN/RESET/HELP (the log itself is `server::slowlog`).

use crate::server::ctx::Ctx;

pub fn get(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    if argv.len() > 3 {
        // Redis names the subcommand as it was sent.
        let sub = alloc::string::String::from_utf8_lossy(argv[1]);
        return ctx.err(&alloc::format!("ERR unknown subcommand or wrong number of arguments for '{sub}'. Try SLOWLOG HELP."));
    }
    let count = match argv.get(2) {
        None => 10,
        Some(a) => match crate::util::parse_i64(a) {
            Some(n) if n >= -1 => n,
            _ => return ctx.err("ERR count should be greater than or equal to -1"),
        },
    };
    let log = &ctx.st.slowlog.entries;
    let n = if count == -1 { log.len() } else { log.len().min(count as usize) };
    ctx.reply.array(n);
    for e in log.iter().take(n) {
        ctx.reply.array(6);
        ctx.reply.int(e.id as i64);
        ctx.reply.int(e.time);
        ctx.reply.int(e.duration_us as i64);
        ctx.reply.bulks(&e.args);
        ctx.reply.bulk(&e.peer);
        ctx.reply.bulk(&e.name);
    }
}

pub fn len(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.int(ctx.st.slowlog.entries.len() as i64);
}

pub fn reset(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.st.slowlog.reset();
    ctx.reply.ok();
}

pub fn help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
        "HELP",
        "    Prints this help.",
    ]);
}
