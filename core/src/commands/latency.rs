//! LATENCY LATEST/HISTORY/RESET/HISTOGRAM/DOCTOR/GRAPH/HELP (the monitor, its report and
//! its graph are `server::latency`, the histograms `server::cmdstats`).

use alloc::vec::Vec;

use crate::server::ctx::Ctx;
use crate::util::hdr::Histogram;

pub fn latest(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let events = &ctx.st.latency.events;
    ctx.reply.array(events.len());
    for (name, s) in events {
        let &(time, ms) = s.samples.back().unwrap_or(&(0, 0));
        ctx.reply.array(4);
        ctx.reply.bulk(name.as_bytes());
        ctx.reply.int(time);
        ctx.reply.int(ms as i64);
        ctx.reply.int(s.max as i64);
    }
}

pub fn history(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let Some(s) = ctx.st.latency.events.iter().find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(argv[2])).map(|(_, s)| s) else {
        return ctx.reply.array(0);
    };
    ctx.reply.array(s.samples.len());
    for &(time, ms) in &s.samples {
        ctx.reply.array(2);
        ctx.reply.int(time);
        ctx.reply.int(ms as i64);
    }
}

pub fn doctor(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    let c = &ctx.st.config;
    let inputs = crate::server::latency::DoctorInputs {
        now_s: ctx.st.now_ms / 1000,
        threshold: c.latency_monitor_threshold,
        slowlog_slower_than: c.slowlog_log_slower_than,
        slowlog_max_len: c.slowlog_max_len,
        hz: c.value("hz").and_then(|v| v.parse().ok()).unwrap_or(10),
    };
    let report = ctx.st.latency.doctor(&inputs);
    ctx.reply.verbatim(report.as_bytes());
}

pub fn graph(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let event = alloc::string::String::from_utf8_lossy(argv[2]);
    match ctx.st.latency.graph(&event, ctx.st.now_ms / 1000) {
        Some(g) => ctx.reply.verbatim(g.as_bytes()),
        None => ctx.reply.error(alloc::format!("ERR No samples available for event '{event}'").as_bytes()),
    }
}

pub fn reset(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let n = ctx.st.latency.reset((argv.len() > 2).then_some(&argv[2..]));
    ctx.reply.int(n as i64);
}

/// The histograms of the named commands (a container names its subcommands; a name given
/// twice is answered twice, as Redis does), or of every command that has one.
pub fn histogram(ctx: &mut Ctx<'_>, argv: &[&[u8]]) {
    let all = ctx.st.cmdstats.histograms();
    let wanted: Vec<(&str, &Histogram)> = if argv.len() == 2 {
        all
    } else {
        let mut v = Vec::new();
        for name in &argv[2..] {
            for h in &all {
                let matches =
                    h.0.as_bytes().eq_ignore_ascii_case(name) || h.0.split_once('|').is_some_and(|(top, _)| top.as_bytes().eq_ignore_ascii_case(name));
                if matches {
                    v.push(*h);
                }
            }
        }
        v
    };
    ctx.reply.map(wanted.len());
    for (name, h) in wanted {
        ctx.reply.bulk(name.as_bytes());
        ctx.reply.map(2);
        // The samples in the histogram (calls made while `latency-tracking` was off are
        // not), as Redis counts them here.
        ctx.reply.bulk(b"calls");
        ctx.reply.int(h.total() as i64);
        ctx.reply.bulk(b"histogram_usec");
        // Redis's buckets: powers of two from 1024 ns, in µs, cumulative.
        let levels = h.log_levels(1024);
        ctx.reply.map(levels.len());
        for (ns, count) in levels {
            ctx.reply.int((ns / 1000) as i64);
            ctx.reply.int(count as i64);
        }
    }
}

pub fn help(ctx: &mut Ctx<'_>, _argv: &[&[u8]]) {
    ctx.reply.help([
        "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HISTOGRAM [COMMAND ...]",
        "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
        "    If no commands are specified then all histograms are replied.",
        "HELP",
        "    Prints this help.",
    ]);
}
