//! MONITOR: the clients that asked see every command the shard runs, one line each, as
//! Redis's replicationFeedMonitors writes them: `+<unix s>.<µs> [<db> <addr>] "arg" …`.
//! A command is shown once it has run (with the database it left selected), except
//! scripts, shown before they run so the commands they call (`[<db> lua]`) follow them.
//! Commands refused before running, queued in MULTI, admin commands and re-runs of a
//! blocked command are not shown. Secrets (AUTH, HELLO AUTH) read `(redacted)`.
//!
//! Lines for other clients go out as pushes after the command's own output record (so a
//! write's line waits for the log like its reply); the line for a monitor's own command
//! follows its reply, as in Redis's output buffer.

use alloc::vec::Vec;

use crate::server::ctx::Ctx;
use crate::server::spec::{CommandSpec, flags};

/// The monitoring clients, in the order they asked.
#[derive(Default)]
pub struct Monitors {
    ids: Vec<u64>,
}

impl Monitors {
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
    pub fn add(&mut self, id: u64) {
        if !self.ids.contains(&id) {
            self.ids.push(id);
        }
    }
    pub fn remove(&mut self, id: u64) {
        self.ids.retain(|&x| x != id);
    }
    pub fn contains(&self, id: u64) -> bool {
        self.ids.contains(&id)
    }
}

/// When a command is shown: before its handler (scripts) or after it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    Before,
    After,
}

/// Shows `argv`, run as `cmd` by `ctx.client`, to the monitors, if this is its moment.
pub fn feed(ctx: &mut Ctx<'_>, cmd: &CommandSpec, argv: &[&[u8]], moment: Moment) {
    if ctx.st.monitors.is_empty() || ctx.st.applying || cmd.flags & flags::ADMIN != 0 {
        return;
    }
    let before = cmd.flags & flags::SKIP_MONITOR != 0;
    if before != (moment == Moment::Before) || ctx.ready_key.is_some() {
        return;
    }
    let line = line(ctx, cmd, argv);
    let me = ctx.client.id;
    // A monitor's own command, once run: its line follows its reply. (A blocked command
    // has no reply yet, and lines before a script's reply or from inside it go ahead of
    // it: those go as messages.)
    let in_reply = moment == Moment::After && ctx.block.is_none() && !ctx.in_script && ctx.st.monitors.contains(me);
    if in_reply {
        ctx.reply.buf.extend_from_slice(&line);
    }
    let ids: Vec<u64> = ctx.st.monitors.ids.iter().copied().filter(|&id| !(in_reply && id == me)).collect();
    if !ids.is_empty() {
        ctx.st.pubsub.queue_raw(&ids, line);
    }
}

/// One MONITOR line.
fn line(ctx: &Ctx<'_>, cmd: &CommandSpec, argv: &[&[u8]]) -> Vec<u8> {
    let us = ctx.st.now_us;
    let mut out = Vec::with_capacity(64 + argv.iter().map(|a| a.len() + 3).sum::<usize>());
    out.push(b'+');
    crate::util::push_int(&mut out, us.div_euclid(1_000_000));
    out.push(b'.');
    let frac = us.rem_euclid(1_000_000);
    let mut digits = [b'0'; 6];
    let mut f = frac;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (f % 10) as u8;
        f /= 10;
    }
    out.extend_from_slice(&digits);
    out.extend_from_slice(b" [");
    crate::util::push_int(&mut out, ctx.client.db as i64);
    out.push(b' ');
    if ctx.in_script {
        out.extend_from_slice(b"lua");
    } else {
        out.extend_from_slice(&ctx.client.addr);
    }
    out.push(b']');
    for (i, a) in argv.iter().enumerate() {
        out.push(b' ');
        if cmd.redact.is_some_and(|r| r(argv, i)) {
            out.extend_from_slice(b"\"(redacted)\"");
        } else {
            repr(&mut out, a);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Redis's sdscatrepr: a quoted string with C escapes, other unprintable bytes as \xHH.
pub fn repr(out: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    for &b in s {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(&[b'\\', b'x', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]),
        }
    }
    out.push(b'"');
}
