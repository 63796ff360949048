//! CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO: client-side caching's commands
//! (Redis's networking.c client command); the state is `server::tracking`.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::server::ctx::Ctx;
use crate::server::tracking::Options;
use crate::util::eq_ic;

/// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP],
/// with Redis's checks in Redis's order.
pub fn client_tracking(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let mut o = Options { redirect: 0, bcast: false, optin: false, optout: false, noloop: false, prefixes: Vec::new() };
    let mut j = 3;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        let a = argv[j];
        if eq_ic(a, b"REDIRECT") && more {
            j += 1;
            if o.redirect != 0 {
                return ctx.err("ERR A client can only redirect to a single other client");
            }
            let Some(id) = crate::util::parse_i64(argv[j]) else { return ctx.not_integer() };
            let exists = id as u64 == ctx.client.id || ctx.others().any(|c| c.id as i64 == id);
            if !exists {
                return ctx.err("ERR The client ID you want redirect to does not exist");
            }
            o.redirect = id as u64;
        } else if eq_ic(a, b"BCAST") {
            o.bcast = true;
        } else if eq_ic(a, b"OPTIN") {
            o.optin = true;
        } else if eq_ic(a, b"OPTOUT") {
            o.optout = true;
        } else if eq_ic(a, b"NOLOOP") {
            o.noloop = true;
        } else if eq_ic(a, b"PREFIX") && more {
            j += 1;
            o.prefixes.push(Box::from(argv[j]));
        } else {
            return ctx.syntax_error();
        }
        j += 1;
    }
    let id = ctx.client.id;
    if eq_ic(argv[2], b"ON") {
        if !o.bcast && !o.prefixes.is_empty() {
            return ctx.err("ERR PREFIX option requires BCAST mode to be enabled");
        }
        let old = ctx.st.tracking.clients.get(&id).cloned();
        if let Some(m) = &old
            && m.bcast != o.bcast
        {
            return ctx.err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.");
        }
        if o.bcast && (o.optin || o.optout) {
            return ctx.err("ERR OPTIN and OPTOUT are not compatible with BCAST");
        }
        if o.optin && o.optout {
            return ctx.err("ERR You can't specify both OPTIN mode and OPTOUT mode");
        }
        if let Some(m) = &old
            && ((o.optin && m.optout) || (o.optout && m.optin))
        {
            return ctx.err("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.");
        }
        if o.bcast
            && let Some(e) = ctx.st.tracking.prefix_collision(id, &o.prefixes)
        {
            return ctx.err(&e);
        }
        ctx.st.tracking.enable(id, o);
        ctx.client.tracking = true;
    } else if eq_ic(argv[2], b"OFF") {
        ctx.st.tracking.disable(id);
        ctx.client.tracking = false;
    } else {
        return ctx.syntax_error();
    }
    ctx.reply.ok();
}

/// CLIENT CACHING YES|NO: the next command's keys are (OPTIN) or are not (OPTOUT) tracked.
pub fn client_caching(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(mode) = ctx.st.tracking.clients.get_mut(&ctx.client.id) else {
        return ctx.err("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled");
    };
    if eq_ic(argv[2], b"YES") {
        if !mode.optin {
            return ctx.err("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
        }
    } else if eq_ic(argv[2], b"NO") {
        if !mode.optout {
            return ctx.err("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
        }
    } else {
        return ctx.syntax_error();
    }
    mode.caching = true;
    ctx.reply.ok();
}

/// CLIENT GETREDIR: the redirection (0: none), -1 when tracking is off.
pub fn client_getredir(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let r = ctx.st.tracking.clients.get(&ctx.client.id).map_or(-1, |m| m.redirect as i64);
    ctx.reply.int(r);
}

/// CLIENT TRACKINGINFO: flags (a set), redirect, prefixes, as Redis 7.0 lists them.
pub fn client_trackinginfo(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let mode = ctx.st.tracking.clients.get(&ctx.client.id).cloned();
    let mut flags: Vec<&[u8]> = Vec::new();
    match &mode {
        None => flags.push(b"off"),
        Some(m) => {
            let named: [(bool, &[u8]); 8] = [
                (true, b"on"),
                (m.bcast, b"bcast"),
                (m.optin, b"optin"),
                (m.optin && m.caching, b"caching-yes"),
                (m.optout, b"optout"),
                (m.optout && m.caching, b"caching-no"),
                (m.noloop, b"noloop"),
                (m.broken_redirect, b"broken_redirect"),
            ];
            flags.extend(named.iter().filter(|(on, _)| *on).map(|&(_, f)| f));
        }
    }
    ctx.reply.map(3);
    ctx.reply.bulk(b"flags");
    ctx.reply.set(flags.len());
    for f in flags {
        ctx.reply.bulk(f);
    }
    ctx.reply.bulk(b"redirect");
    ctx.reply.int(mode.as_ref().map_or(-1, |m| m.redirect as i64));
    ctx.reply.bulk(b"prefixes");
    let prefixes = mode.map(|m| m.prefixes).unwrap_or_default();
    ctx.reply.array(prefixes.len());
    for p in &prefixes {
        ctx.reply.bulk(p);
    }
}
