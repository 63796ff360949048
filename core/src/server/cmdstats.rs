//! Per-command and per-error statistics (INFO commandstats and errorstats, Redis's
//! `calls`/`usec`/`rejected_calls`/`failed_calls` and afterErrorReply's counts).
//!
//! A command failed when an error was written since the last command ended (Redis's
//! incrCommandStatsOnError keeps the same one watermark, so EXEC does not fail because a
//! command inside it did).

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use alloc::boxed::Box;

use crate::protocol::reply::ErrorCode;
use crate::server::spec::CommandSpec;
use crate::util::hdr::Histogram;

/// Distinct error codes counted at most: a client inventing codes (a script's
/// `redis.error_reply`) cannot grow the table without bound. Later ones still count in
/// `total_error_replies`.
const MAX_ERROR_CODES: usize = 128;

#[derive(Default, Clone, Copy)]
pub struct Counts {
    pub calls: u64,
    pub usec: u64,
    pub rejected: u64,
    pub failed: u64,
}

#[derive(Default)]
pub struct CommandStats {
    /// Keyed by the command's address (specs are statics), sorted by name when shown;
    /// with the latency histogram (`latency-tracking`) once the command ran.
    by_command: BTreeMap<usize, (&'static CommandSpec, Counts, Option<Box<Histogram>>)>,
    errors: BTreeMap<Vec<u8>, u64>,
    pub total_error_replies: u64,
    /// `total_error_replies` when the last command's outcome was counted.
    mark: u64,
}

impl CommandStats {
    fn entry(&mut self, cmd: &'static CommandSpec) -> &mut (&'static CommandSpec, Counts, Option<Box<Histogram>>) {
        self.by_command.entry(cmd as *const CommandSpec as usize).or_insert((cmd, Counts::default(), None))
    }

    fn counts(&mut self, cmd: &'static CommandSpec) -> &mut Counts {
        &mut self.entry(cmd).1
    }

    /// Counts error replies (their codes) written to a client.
    pub fn errors<I: Iterator<Item = ErrorCode>>(&mut self, codes: I) {
        for code in codes {
            self.total_error_replies += 1;
            let room = self.errors.len() < MAX_ERROR_CODES;
            match self.errors.get_mut(code.as_bytes()) {
                Some(n) => *n += 1,
                None if room => {
                    self.errors.insert(code.as_bytes().to_vec(), 1);
                }
                None => {}
            }
        }
    }

    /// `cmd` ran to its end in `usec` µs; `track`: its latency histogram records it
    /// (`latency-tracking`).
    pub fn ran(&mut self, cmd: &'static CommandSpec, usec: u64, track: bool) {
        let failed = self.total_error_replies > self.mark;
        self.mark = self.total_error_replies;
        let (_, c, histogram) = self.entry(cmd);
        c.calls += 1;
        c.usec += usec;
        c.failed += u64::from(failed);
        if track {
            // Redis records µs × 1000 in its nanosecond histogram.
            histogram.get_or_insert_with(Default::default).record(usec.saturating_mul(1000));
        }
    }

    /// `cmd` was refused before it ran (arity, ACL, OOM, READONLY, -BUSY…).
    fn rejected(&mut self, cmd: &'static CommandSpec) {
        if self.total_error_replies > self.mark {
            self.counts(cmd).rejected += 1;
        }
        self.mark = self.total_error_replies;
    }

    /// Nothing of a command was counted (unknown, queued, blocked): errors so far belong
    /// to no command.
    fn settle(&mut self) {
        self.mark = self.total_error_replies;
    }

    /// A command that did not run to its end: its `errors` are counted, and `refused`
    /// (when it was refused before running) gets them as rejected_calls.
    pub fn not_run<I: Iterator<Item = ErrorCode>>(&mut self, errors: I, refused: Option<&'static CommandSpec>) {
        self.errors(errors);
        match refused {
            Some(cmd) => self.rejected(cmd),
            None => self.settle(),
        }
    }

    /// An error already counted ran through a script's reply again: the command fails
    /// without a second count (Redis's ERR_REPLY_FLAG_NO_STATS_UPDATE).
    pub fn failed_without_count(&mut self, cmd: &'static CommandSpec) {
        self.counts(cmd).failed += 1;
    }

    /// The INFO commandstats lines, by command name.
    pub fn commandstats(&self) -> Vec<(&'static str, Counts)> {
        let mut v: Vec<_> = self.by_command.values().map(|(c, n, _)| (c.name, *n)).collect();
        v.sort_unstable_by_key(|(name, _)| *name);
        v
    }

    /// The commands with a latency histogram, by name.
    pub fn histograms(&self) -> Vec<(&'static str, &Histogram)> {
        let mut v: Vec<_> = self.by_command.values().filter_map(|(c, _, h)| Some((c.name, h.as_deref()?))).collect();
        v.sort_unstable_by_key(|(name, _)| *name);
        v
    }

    /// The INFO errorstats counts, by code.
    pub fn errorstats(&self) -> impl Iterator<Item = (&[u8], u64)> {
        self.errors.iter().map(|(k, v)| (k.as_slice(), *v))
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&mut self) {
        *self = CommandStats::default();
    }
}
