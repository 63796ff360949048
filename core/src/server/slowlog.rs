//! The slow log (Redis's slowlog.c): the latest `slowlog-max-len` commands that ran for
//! at least `slowlog-log-slower-than` µs, newest first, with their arguments trimmed as
//! Redis trims them and secrets shown as `(redacted)`.

use alloc::collections::VecDeque;
use alloc::format;
use alloc::vec::Vec;

/// Arguments kept per entry; the last one kept says how many more there were.
const MAX_ARGC: usize = 32;
/// Bytes kept per argument; the rest is counted, not kept.
const MAX_STRING: usize = 128;

pub struct Entry {
    pub id: u64,
    /// Unix time, in seconds, when the command ended.
    pub time: i64,
    pub duration_us: u64,
    pub args: Vec<Vec<u8>>,
    /// `ip:port` of the client (`?:0` for a script's own calls, as Redis shows them).
    pub peer: Vec<u8>,
    pub name: Vec<u8>,
}

#[derive(Default)]
pub struct SlowLog {
    /// Newest first.
    pub entries: VecDeque<Entry>,
    next_id: u64,
}

/// What one finished command looked like, for the slow log.
pub struct Call<'a> {
    pub argv: &'a [&'a [u8]],
    /// Whether argument `i` is a secret (the command's redactor).
    pub redacted: &'a dyn Fn(usize) -> bool,
    pub duration_us: u64,
    pub time: i64,
    pub peer: &'a [u8],
    pub name: &'a [u8],
}

impl SlowLog {
    /// Logs `call` if it was slow enough (`slower_than` < 0: never) and trims the log to
    /// `max_len` entries.
    pub fn push_if_slow(&mut self, call: &Call<'_>, slower_than: i64, max_len: usize) {
        if slower_than < 0 || call.duration_us < slower_than as u64 {
            return;
        }
        let argc = call.argv.len();
        let kept = argc.min(MAX_ARGC);
        let mut args = Vec::with_capacity(kept);
        for (i, a) in call.argv[..kept].iter().enumerate() {
            if kept != argc && i == kept - 1 {
                args.push(format!("... ({} more arguments)", argc - kept + 1).into_bytes());
            } else if (call.redacted)(i) {
                args.push(b"(redacted)".to_vec());
            } else if a.len() > MAX_STRING {
                let mut s = a[..MAX_STRING].to_vec();
                s.extend_from_slice(format!("... ({} more bytes)", a.len() - MAX_STRING).as_bytes());
                args.push(s);
            } else {
                args.push(a.to_vec());
            }
        }
        self.entries.push_front(Entry {
            id: self.next_id,
            time: call.time,
            duration_us: call.duration_us,
            args,
            peer: call.peer.to_vec(),
            name: call.name.to_vec(),
        });
        self.next_id += 1;
        self.entries.truncate(max_len);
    }

    /// SLOWLOG RESET: the entries go; ids keep counting up, as in Redis.
    pub fn reset(&mut self) {
        self.entries.clear();
    }
}
