//! DEBUG, refused unless `enable-debug-command` (the node's `--enable-debug-command`)
//! allows it for the client, as Redis 7 refuses it (dispatch checks the command's
//! PROTECTED flag). The subcommands test suites and tools use that mean something here:
//! OBJECT, DIGEST, SET-ACTIVE-EXPIRE, SLEEP.

use alloc::format;
use alloc::string::String;

use crate::server::ctx::Ctx;

/// Longest DEBUG SLEEP: the shard does nothing else meanwhile (that is the point of it),
/// so it is bounded like any other request's cost.
const MAX_SLEEP_US: u64 = 60_000_000;

pub fn debug(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let sub = argv[1];
    let is = |name: &str| sub.eq_ignore_ascii_case(name.as_bytes());
    match argv.len() {
        2 if is("help") => help(ctx),
        // Memoria's digest of the data set (32 hex digits: not Redis's 40), the same on
        // every node that holds the same data.
        2 if is("digest") => {
            let hex: String = crate::server::digest::state_digest(ctx.st).iter().map(|b| format!("{b:02x}")).collect();
            ctx.reply.simple(hex.as_bytes());
        }
        3 if is("object") => object(ctx, argv[2]),
        3 if is("set-active-expire") => match crate::util::parse_i64(argv[2]) {
            Some(n) => {
                ctx.st.active_expire = n != 0;
                ctx.reply.ok();
            }
            None => ctx.not_integer(),
        },
        3 if is("sleep") => sleep(ctx, argv[2]),
        _ => {
            let name = String::from_utf8_lossy(&sub[..sub.len().min(128)]);
            ctx.err(&format!("ERR unknown subcommand '{name}'. Try DEBUG HELP."));
        }
    }
}

fn help(ctx: &mut Ctx<'_>) {
    ctx.reply.help([
        "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DIGEST",
        "    Output a hex signature representing the current DB content.",
        "OBJECT <key>",
        "    Show low level info about the key and associated value.",
        "SET-ACTIVE-EXPIRE <0|1>",
        "    Setting it to 0 disables expiring keys in background when they are not",
        "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
        "    default.",
        "SLEEP <seconds>",
        "    Stop the server for <seconds>. Decimals allowed.",
        "HELP",
        "    Prints this help.",
    ]);
}

/// Redis's line, with what Memoria has: no address to show, and the serialized length
/// DUMP would write.
fn object(ctx: &mut Ctx<'_>, key: &[u8]) {
    let db = ctx.db();
    let Some(e) = ctx.st.dbs[db].keys.get(key) else { return ctx.err("ERR no such key") };
    let mut body = alloc::vec::Vec::new();
    crate::rdb::object::write_object(&mut body, &e.val);
    let idle = (ctx.st.lru_clock().wrapping_sub(e.lru)) as u64;
    let line = format!(
        "Value at:0x0 refcount:1 encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{idle}",
        e.val.encoding(),
        body.len().saturating_sub(1),
        e.lru & ((1 << 24) - 1)
    );
    ctx.reply.simple(line.as_bytes());
}

/// Holds the shard for the given seconds (decimals allowed), by the command clock.
fn sleep(ctx: &mut Ctx<'_>, arg: &[u8]) {
    let Some(secs) = core::str::from_utf8(arg).ok().and_then(|s| s.trim().parse::<f64>().ok()).filter(|s| s.is_finite()) else {
        return ctx.err("ERR value is not a valid float");
    };
    let us = (secs.max(0.0) * 1e6).min(MAX_SLEEP_US as f64) as u64;
    let clock = ctx.st.clock;
    let start = clock();
    // Without a clock (a harness that sets none) there is no time to wait.
    let mut last = start;
    let mut still = 0u32;
    while us > 0 && clock().wrapping_sub(start) < us {
        let now = clock();
        still = if now == last { still + 1 } else { 0 };
        last = now;
        if still > 1_000_000 {
            break;
        }
    }
    ctx.reply.ok();
}
