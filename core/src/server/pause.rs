//! CLIENT PAUSE (Redis 7.0's pauseClients): for a while, the commands of every client
//! (ALL), or those that write or may replicate (WRITE), wait instead of running, and no
//! key expires or is evicted, so the data holds still (what a controlled failover
//! needs). A paused command is a postponed client: blocked with the pause's end as its
//! deadline (the host parks its connection and fires the deadline), re-run from the start
//! when the pause ends or at CLIENT UNPAUSE, in the order the clients were postponed.
//! The pause stops commands only: the host renews the primary's lease all the while.

use alloc::vec::Vec;

use crate::server::client::Client;
use crate::server::spec::{CommandSpec, flags};
use crate::server::state::State;

pub struct Pause {
    /// Unix ms the pause ends at.
    pub end_ms: i64,
    /// ALL (every command) rather than WRITE.
    pub all: bool,
}

impl State {
    /// The pause in force now, if any (one whose end passed is over).
    pub fn pause(&self) -> Option<&Pause> {
        self.paused.as_ref().filter(|p| self.now_ms < p.end_ms)
    }

    /// Whether expiry and eviction hold still (any pause, as Redis's
    /// checkClientPauseTimeoutAndReturnIfPaused).
    pub fn writes_paused(&self) -> bool {
        self.pause().is_some()
    }

    /// CLIENT PAUSE: the later end and the wider mode of this and any pause in force.
    pub fn pause_clients(&mut self, end_ms: i64, all: bool) {
        let (end_ms, all) = match self.pause() {
            Some(p) => (p.end_ms.max(end_ms), p.all || all),
            None => (end_ms, all),
        };
        self.paused = Some(Pause { end_ms, all });
    }

    /// CLIENT UNPAUSE: the pause ends; the postponed clients, in order, to re-run.
    pub fn unpause_clients(&mut self) -> Vec<u64> {
        self.paused = None;
        core::mem::take(&mut self.postponed)
    }

    /// The deadline until which `cmd` of `client` must wait, if a pause holds it: under
    /// ALL every command, under WRITE a write or a command that may replicate (EVAL,
    /// PUBLISH…), or an EXEC whose queue has one.
    pub fn paused_until(&self, cmd: &CommandSpec, client: &Client) -> Option<i64> {
        let p = self.pause()?;
        let writes = |c: &CommandSpec| c.flags & (flags::WRITE | flags::MAY_REPLICATE) != 0;
        let held = p.all || writes(cmd) || (cmd.flags & flags::EXEC != 0 && self.queue_writes(client, writes));
        held.then_some(p.end_ms)
    }

    fn queue_writes(&self, client: &Client, writes: impl Fn(&CommandSpec) -> bool) -> bool {
        let Some(m) = &client.multi else { return false };
        let mut args = Vec::new();
        m.queue.iter().any(|raw| {
            args.clear();
            if crate::protocol::resp::read_command(raw, &mut args).is_none() {
                return false;
            }
            let argv: Vec<&[u8]> = args.iter().map(|&(a, b)| &raw[a..b]).collect();
            self.index.resolve(&argv).is_some_and(&writes)
        })
    }
}
