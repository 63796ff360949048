//! Pub/Sub commands (Redis's pubsub.c, command side): SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE
//! PUNSUBSCRIBE SSUBSCRIBE SUNSUBSCRIBE PUBLISH SPUBLISH PUBSUB. The subscriptions and the
//! delivery of messages are `server::pubsub`.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::server::ctx::Ctx;
use crate::server::pubsub::{Space, add_id, remove_id};
use crate::util::glob_match;

fn confirm(ctx: &mut Ctx<'_>, kind: &[u8], name: Option<&[u8]>, count: usize) {
    // Outside EXEC the reply is pushes only, sent even with replies off.
    ctx.pushing |= !ctx.in_exec;
    let r = &mut *ctx.reply;
    r.push(3);
    r.bulk(kind);
    match name {
        Some(n) => r.bulk(n),
        None => r.null(),
    }
    r.int(count as i64);
}

fn count_of(ctx: &Ctx<'_>, space: Space) -> usize {
    match space {
        Space::Shard => ctx.client.subs.shard.len(),
        _ => ctx.client.subs.count(),
    }
}

fn subscribe_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], space: Space) {
    let id = ctx.client.id;
    for name in &argv[1..] {
        let subs = &mut ctx.client.subs;
        let added = match space {
            Space::Channel => subs.channels.insert((*name).into()),
            Space::Shard => subs.shard.insert((*name).into()),
            Space::Pattern => {
                let new = !subs.patterns.iter().any(|p| &**p == *name);
                if new {
                    subs.patterns.push((*name).into());
                }
                new
            }
        };
        if added {
            let ps = &mut ctx.st.pubsub;
            let map = match space {
                Space::Channel => &mut ps.channels,
                Space::Pattern => &mut ps.patterns,
                Space::Shard => &mut ps.shard,
            };
            add_id(map, name, id);
        }
        let kind: &[u8] = match space {
            Space::Channel => b"subscribe",
            Space::Pattern => b"psubscribe",
            Space::Shard => b"ssubscribe",
        };
        let n = count_of(ctx, space);
        confirm(ctx, kind, Some(name), n);
    }
}

fn unsubscribe_one(ctx: &mut Ctx<'_>, name: &[u8], space: Space) {
    let id = ctx.client.id;
    let subs = &mut ctx.client.subs;
    let removed = match space {
        Space::Channel => subs.channels.remove(name),
        Space::Shard => subs.shard.remove(name),
        Space::Pattern => match subs.patterns.iter().position(|p| &**p == name) {
            Some(i) => {
                subs.patterns.remove(i);
                true
            }
            None => false,
        },
    };
    if removed {
        let ps = &mut ctx.st.pubsub;
        let map = match space {
            Space::Channel => &mut ps.channels,
            Space::Pattern => &mut ps.patterns,
            Space::Shard => &mut ps.shard,
        };
        remove_id(map, name, id);
    }
    let kind: &[u8] = match space {
        Space::Channel => b"unsubscribe",
        Space::Pattern => b"punsubscribe",
        Space::Shard => b"sunsubscribe",
    };
    let n = count_of(ctx, space);
    confirm(ctx, kind, Some(name), n);
}

fn unsubscribe_generic(ctx: &mut Ctx<'_>, argv: &[&[u8]], space: Space) {
    if argv.len() == 1 {
        let all: Vec<Box<[u8]>> = match space {
            Space::Channel => ctx.client.subs.channels.iter().cloned().collect(),
            Space::Pattern => ctx.client.subs.patterns.clone(),
            Space::Shard => ctx.client.subs.shard.iter().cloned().collect(),
        };
        if all.is_empty() {
            // Subscribed to nothing: Redis still confirms, with a null name.
            let kind: &[u8] = match space {
                Space::Channel => b"unsubscribe",
                Space::Pattern => b"punsubscribe",
                Space::Shard => b"sunsubscribe",
            };
            let n = count_of(ctx, space);
            confirm(ctx, kind, None, n);
        }
        for name in all {
            unsubscribe_one(ctx, &name, space);
        }
    } else {
        for name in &argv[1..] {
            unsubscribe_one(ctx, name, space);
        }
    }
}

pub fn subscribe(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    subscribe_generic(ctx, argv, Space::Channel)
}
pub fn psubscribe(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    subscribe_generic(ctx, argv, Space::Pattern)
}
pub fn ssubscribe(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    // Redis refuses SSUBSCRIBE from a client that must get one reply per command, which
    // includes commands run by EXEC (SUBSCRIBE has a backward-compatibility exception).
    if ctx.in_exec {
        return ctx.err("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client");
    }
    subscribe_generic(ctx, argv, Space::Shard)
}
pub fn unsubscribe(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    unsubscribe_generic(ctx, argv, Space::Channel)
}
pub fn punsubscribe(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    unsubscribe_generic(ctx, argv, Space::Pattern)
}
pub fn sunsubscribe(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    unsubscribe_generic(ctx, argv, Space::Shard)
}

pub fn publish(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let n = ctx.st.pubsub.publish(argv[1], argv[2]);
    ctx.reply.int(n as i64);
}

pub fn spublish(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let n = ctx.st.pubsub.spublish(argv[1], argv[2]);
    ctx.reply.int(n as i64);
}

fn syntax_error_sub(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let sub = alloc::string::String::from_utf8_lossy(&argv[1][..argv[1].len().min(128)]).into_owned();
    let cmd = alloc::string::String::from_utf8_lossy(argv[0]).to_ascii_uppercase();
    ctx.err(&alloc::format!("ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.", sub, cmd));
}

fn list_channels(ctx: &mut Ctx<'_>, argv: &[&[u8]], shard: bool) {
    if argv.len() > 3 {
        return syntax_error_sub(ctx, argv);
    }
    let pat = argv.get(2).copied();
    let map = if shard { &ctx.st.pubsub.shard } else { &ctx.st.pubsub.channels };
    let found: Vec<&[u8]> = map.keys().map(|k| &**k).filter(|c| pat.is_none_or(|p| glob_match(p, c, false))).collect();
    ctx.reply.array(found.len());
    for c in found {
        ctx.reply.bulk(c);
    }
}

fn numsub(ctx: &mut Ctx<'_>, argv: &[&[u8]], shard: bool) {
    let map = if shard { &ctx.st.pubsub.shard } else { &ctx.st.pubsub.channels };
    let counts: Vec<usize> = argv[2..].iter().map(|c| map.get(*c).map_or(0, |v| v.len())).collect();
    ctx.reply.array(counts.len() * 2);
    for (c, n) in argv[2..].iter().zip(counts) {
        ctx.reply.bulk(c);
        ctx.reply.int(n as i64);
    }
}

pub fn pubsub_channels(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    list_channels(ctx, argv, false)
}
pub fn pubsub_shardchannels(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    list_channels(ctx, argv, true)
}
pub fn pubsub_numsub(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    numsub(ctx, argv, false)
}
pub fn pubsub_shardnumsub(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    numsub(ctx, argv, true)
}
pub fn pubsub_numpat(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    // Distinct patterns, not subscriptions (dictSize(server.pubsub_patterns)).
    ctx.reply.int(ctx.st.pubsub.patterns.len() as i64);
}

pub fn pubsub_help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Prints this help.",
    ]);
}
