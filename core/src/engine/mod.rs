//! The engine: all databases, clients and configuration of one shard, driven one batch at
//! a time. Deterministic: time and randomness come from the host with each call.

#[cfg(feature = "component")]
mod guest;
pub mod snapshot;

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::protocol::batch::{self, BatchReader, EffectReader};
use crate::protocol::reply::Reply;
use crate::server::client::Client;
use crate::server::ctx::Ctx;
use crate::server::state::State;
use crate::util::Rng;

/// A batch's key lookups are prefetched this many commands at a time
/// (`Engine::prefetch_ahead`).
const PREFETCH_GROUP: usize = 8;

/// The database a command to prefetch for runs in.
enum PlanDb {
    /// The client's current one (a batch's command).
    OfClient(u64),
    /// This one (an effect's).
    Is(usize),
}

pub struct Engine {
    pub st: State,
    clients: Vec<Option<Client>>,
    client_slots: BTreeMap<u64, usize>,
    /// The last (client id, slot) looked up: a pipeline's commands come in a row.
    last_slot: Option<(u64, usize)>,
    free_slots: Vec<usize>,
    reply: Reply,
    effects: Vec<u8>,
    args: Vec<(usize, usize)>,
    /// Per command of the batch running: its first key's database and hash, if it has
    /// one (`plan_prefetch`).
    first_keys: Vec<Option<(usize, u64)>>,
    /// `first_keys` of the effects `apply` runs, swapped in for the call (a replica may
    /// apply while a suspended script's batch still needs its own).
    apply_keys: Vec<Option<(usize, u64)>>,
    /// Counts `execute` calls (a client's deferral lasts for the rest of one batch).
    batch_no: u64,
    /// A batch whose script yielded, to go on with `resume`.
    suspended: Option<Suspended>,
    /// Clients whose postponed command ran again in this batch when their pause ended
    /// (their own deadline records, later in the batch, are stale).
    resumed_from_pause: Vec<u64>,
}

/// A client's script that yielded (see `Engine::resume`). The records of its batch after
/// it went back to the host with the suspension (`batch::Suspension`): they run as
/// commands that came during the script.
struct Suspended {
    /// The script's client and command.
    client: u64,
    payload: Vec<u8>,
    /// The effects of the script's calls so far.
    effects: Vec<u8>,
    /// The batch's time: the script's calls see the time their batch started.
    now_us: i64,
    /// The script's client disconnected meanwhile: dropped once the script is done.
    gone: bool,
}

/// What a command leaves for its output record besides its reply and effects.
#[derive(Default)]
struct Outcome {
    close: bool,
    pushing: bool,
    block: Option<crate::server::blocked::BlockRequest>,
    unblock: Vec<(u64, bool)>,
    kill: Vec<u64>,
    /// CLIENT UNPAUSE: the postponed clients to run again, in order.
    unpaused: Vec<u64>,
    host: Option<batch::HostRequest>,
}

impl Outcome {
    fn of(ctx: &mut Ctx<'_>) -> Outcome {
        Outcome {
            close: ctx.close,
            pushing: ctx.pushing,
            block: ctx.block.take(),
            unblock: core::mem::take(&mut ctx.unblock),
            kill: core::mem::take(&mut ctx.kill),
            unpaused: core::mem::take(&mut ctx.unpaused),
            host: ctx.host.take(),
        }
    }
}

impl Engine {
    pub fn new(seed: u64) -> Self {
        Engine {
            st: State::new(seed, crate::commands::table::COMMANDS),
            clients: Vec::new(),
            client_slots: BTreeMap::new(),
            last_slot: None,
            free_slots: Vec::new(),
            reply: Reply::new(),
            effects: Vec::new(),
            args: Vec::new(),
            first_keys: Vec::new(),
            apply_keys: Vec::new(),
            batch_no: 0,
            suspended: None,
            resumed_from_pause: Vec::new(),
        }
    }

    pub fn set_memory_probe(&mut self, probe: fn() -> usize) {
        self.st.memory_probe = probe;
        self.st.startup_memory = probe();
    }

    /// The monotonic clock (µs) commands are timed with, for INFO commandstats and the
    /// slow log; without one every command takes 0 µs.
    pub fn set_clock(&mut self, clock: fn() -> u64) {
        self.st.clock = clock;
    }

    fn set_time(&mut self, now_us: i64) {
        // Time passed outside since the last command: the next one reads its own start.
        self.st.clock_mark = None;
        self.st.now_us = now_us;
        self.st.now_ms = now_us / 1000;
        if self.st.start_ms == 0 {
            self.st.start_ms = self.st.now_ms;
            self.st.lastsave = self.st.now_ms / 1000;
        }
    }

    fn slot_of(&mut self, id: u64) -> usize {
        if let Some((last, s)) = self.last_slot
            && last == id
        {
            return s;
        }
        if let Some(&s) = self.client_slots.get(&id) {
            self.last_slot = Some((id, s));
            return s;
        }
        let mut c = Client::new(id, self.st.now_ms);
        c.last_ms = self.st.now_ms;
        crate::server::acl::enforce::init_client(&self.st.acl, &mut c);
        self.st.stats.connections += 1;
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.clients[s] = Some(c);
                s
            }
            None => {
                self.clients.push(Some(c));
                self.clients.len() - 1
            }
        };
        self.client_slots.insert(id, slot);
        slot
    }

    fn drop_client(&mut self, id: u64) {
        self.last_slot = None;
        if let Some(slot) = self.client_slots.remove(&id) {
            if let Some(mut c) = self.clients[slot].take() {
                self.forget_client(&mut c);
            }
            self.free_slots.push(slot);
        }
    }

    /// Takes a client out of everything that names it (watches, subscriptions, MONITOR,
    /// tracking, the keys it waits on, a pause), as Redis's freeClient does.
    fn forget_client(&mut self, c: &mut Client) {
        let id = c.id;
        crate::server::state::unwatch_all(&mut self.st, c);
        self.st.pubsub.drop_client(id, &mut c.subs);
        if core::mem::take(&mut c.monitor) {
            self.st.monitors.remove(id);
        }
        if core::mem::take(&mut c.tracking) {
            self.st.tracking.disable(id);
        }
        if let Some(b) = c.blocked.take() {
            self.st.blocking.remove(id, &b);
        }
        // A MIGRATE cut short: its keys stay here (the target may have them too).
        if let Some(m) = c.migrating.take() {
            for k in &m.keys {
                self.st.migrating.finish(m.db, k);
            }
        }
        self.st.postponed.retain(|&p| p != id);
    }

    /// Finds every command's first key (where its key spec puts it: EVALSHA's after the
    /// digest and the count) and its hash, for `prefetch_ahead`, then loads the first
    /// group's bucket nodes. The same plan serves a batch (each command in its client's
    /// database) and a replica's apply (each effect in its own).
    fn plan_prefetch<'a>(&mut self, commands: impl Iterator<Item = (PlanDb, &'a [u8])>) {
        let mut args = core::mem::take(&mut self.args);
        let mut argv: Vec<&[u8]> = Vec::new();
        for (db, command) in commands {
            args.clear();
            argv.clear();
            if crate::protocol::resp::read_command(command, &mut args).is_some() && args.len() >= 2 {
                argv.extend(args.iter().map(|&(a, b)| &command[a..b]));
            }
            let db = match db {
                PlanDb::Is(db) => db,
                PlanDb::OfClient(id) => self.client_slots.get(&id).and_then(|&s| self.clients[s].as_ref()).map_or(0, |c| c.db),
            };
            let first = self.first_key(db, &argv);
            self.first_keys.push(first);
        }
        self.args = args;
        for n in 0..PREFETCH_GROUP {
            self.prefetch(n, false);
        }
    }

    /// A command's first key as `prefetch` wants it: its database and hash (None: no key,
    /// or a database that does not exist yet).
    fn first_key(&self, db: usize, argv: &[&[u8]]) -> Option<(usize, u64)> {
        let at = argv.first().and_then(|name| self.st.index.lookup(name)).and_then(|spec| spec.first_key_index(argv))?;
        Some((db, self.st.dbs.get(db)?.keys.key_hash(argv[at])))
    }

    /// Before the batch's command `n` runs, at the start of each group of
    /// `PREFETCH_GROUP` commands: loads the bucket nodes of the next group's first keys,
    /// then the keys and values of this group's (whose nodes the previous group's call
    /// brought in). Loads in a tight loop that nothing waits for overlap their cache
    /// misses (wasm has no prefetch instruction; such a load is one), so a group pays
    /// about one miss where its commands would pay one each, and serially. A window, not
    /// the whole batch up front: a long batch would evict what it loaded before using it.
    fn prefetch_ahead(&self, n: usize) {
        if !n.is_multiple_of(PREFETCH_GROUP) || n >= self.first_keys.len() {
            return;
        }
        for i in n + PREFETCH_GROUP..n + 2 * PREFETCH_GROUP {
            self.prefetch(i, false);
        }
        for i in n..n + PREFETCH_GROUP {
            self.prefetch(i, true);
        }
    }

    #[inline(always)]
    fn prefetch(&self, n: usize, entry: bool) {
        use crate::keyspace::object::Value;
        let Some(&Some((db, h))) = self.first_keys.get(n) else { return };
        let keys = &self.st.dbs[db].keys;
        let got = if entry {
            keys.touch_entry(h, |e| match &e.val {
                Value::Str(s) => s.first(),
                Value::Raw(s) => s.first(),
                _ => None,
            })
        } else {
            keys.touch_head(h)
        };
        core::hint::black_box(got);
    }

    /// Runs one batch (see `batch`), returning the output records. While a script of an
    /// earlier batch is suspended, answers the batch as Redis does during a busy script
    /// instead (`execute_busy`).
    pub fn execute(&mut self, input: &[u8], now_us: i64, seed: u64) -> Vec<u8> {
        if self.suspended.is_some() {
            return self.execute_busy(input, now_us);
        }
        self.set_time(now_us);
        self.st.rng = Rng::new(seed);
        self.batch_no += 1;
        self.resumed_from_pause.clear();
        self.first_keys.clear();
        if input.len() > 512 {
            self.plan_prefetch(BatchReader::new(input).filter(|r| r.kind == batch::REC_COMMAND).map(|r| (PlanDb::OfClient(r.client), r.payload)));
        }
        let mut out = Vec::with_capacity(input.len() + 64);
        // Messages raised by `apply` since the last call (a replica's notifications).
        self.flush_pushes(&mut out);
        self.run_records(input, out)
    }

    /// Runs `input`'s records after what `out` holds. A script that yields stops the
    /// batch: the output is then the suspension (see `suspend`).
    fn run_records(&mut self, input: &[u8], mut out: Vec<u8>) -> Vec<u8> {
        let mut records = BatchReader::new(input);
        let mut command_no = 0;
        loop {
            let start = input.len() - records.rest().len();
            let Some(rec) = records.next() else { break };
            if rec.kind == batch::REC_COMMAND {
                self.prefetch_ahead(command_no);
                command_no += 1;
                if self.run_client_command(rec.client, rec.payload, &mut out) {
                    let end = input.len() - records.rest().len();
                    return self.suspend(rec.client, rec.payload, start..end, out);
                }
            } else {
                self.run_record(&rec, &mut out);
            }
        }
        out
    }

    /// Runs one record other than a client's command.
    fn run_record(&mut self, rec: &batch::InRecord<'_>, out: &mut Vec<u8>) {
        match rec.kind {
            batch::REC_CONNECT => self.connect(rec.client, rec.payload, out),
            batch::REC_UNBLOCK => {
                if !self.unblock_client(rec.client, false, batch::REC_UNBLOCK, out) {
                    batch::write_out(out, rec.kind, rec.client, 0, b"", b"");
                }
            }
            batch::REC_MIGRATED => {
                if !self.migrated(rec.client, rec.payload, out) {
                    batch::write_out(out, rec.kind, rec.client, 0, b"", b"");
                }
            }
            batch::REC_DISCONNECT => {
                self.drop_client(rec.client);
                batch::write_out(out, rec.kind, rec.client, 0, b"", b"");
            }
            batch::REC_TICK => {
                self.st.sample_stats();
                self.effects.clear();
                if self.st.active_expire {
                    crate::server::expire::active_expire_cycle(&mut self.st, &mut self.effects);
                }
                let flags = if self.effects.is_empty() { 0 } else { batch::OUT_WRITE };
                batch::write_out(out, rec.kind, 0, flags, b"", &self.effects);
                self.flush_pushes(out);
            }
            batch::REC_SERVER_INFO => {
                // Lines INFO server shows; the password hashes are taken, never shown
                // (Redis shows hashes only through ACL GETUSER/LIST, to admins).
                self.st.server_info.clear();
                for line in rec.payload.split(|&b| b == b'\n') {
                    if let Some(p) = line.iter().position(|&b| b == b':') {
                        let (k, v) = (&line[..p], &line[p + 1..]);
                        let k = core::str::from_utf8(k).unwrap_or("");
                        let v = core::str::from_utf8(v).unwrap_or("").trim_end_matches('\r');
                        match k {
                            "tcp_port" => self.st.config.set_fixed("port", v),
                            "bind" => self.st.config.set_fixed("bind", v),
                            "dir" => self.st.config.set_fixed("dir", v),
                            "protected_mode" => self.st.config.set_fixed("protected-mode", v),
                            "requirepass_sha256" => {
                                crate::server::acl::enforce::init_requirepass(&mut self.st.acl, v.as_bytes());
                                continue;
                            }
                            "internal_sha256" => {
                                if v.len() == 64 {
                                    self.st.acl.internal = Some(v.as_bytes().to_vec());
                                }
                                continue;
                            }
                            _ => {}
                        }
                    }
                    self.st.server_info.extend_from_slice(line);
                    self.st.server_info.push(b'\n');
                }
                batch::write_out(out, rec.kind, 0, 0, b"", b"");
            }
            batch::REC_CONFIG => {
                for line in rec.payload.split(|&b| b == b'\n') {
                    let line = core::str::from_utf8(line).unwrap_or("");
                    if let Some((k, v)) = line.split_once(' ') {
                        self.st.config.set_fixed(k, v);
                    }
                }
                self.st.ensure_dbs(self.st.config.databases);
                batch::write_out(out, rec.kind, 0, 0, b"", b"");
            }
            batch::REC_ROLE => {
                let text = alloc::string::String::from_utf8_lossy(rec.payload);
                let mut lines = text.lines();
                self.st.replica_mode = lines.next() == Some("replica");
                let mut info = Vec::new();
                for (k, v) in lines.filter_map(|l| l.split_once(':')) {
                    // The host's latency events go to the monitor once, not into INFO.
                    match k.strip_prefix("latency.") {
                        Some(event) => self.st.host_latency_event(event, v),
                        None => info.push((k.into(), v.into())),
                    }
                }
                self.st.role_info = info;
                self.st.cluster = crate::server::cluster::ClusterMap::from_facts(&self.st.role_info);
                batch::write_out(out, rec.kind, 0, 0, b"", b"");
            }
            _ => batch::write_out(out, rec.kind, rec.client, 0, b"", b""),
        }
    }

    /// A client connected: `payload` is `addr\nladdr`.
    fn connect(&mut self, id: u64, payload: &[u8], out: &mut Vec<u8>) {
        let slot = self.slot_of(id);
        let c = self.clients[slot].as_mut().unwrap();
        let mut parts = payload.splitn(2, |&b| b == b'\n');
        c.addr = parts.next().unwrap_or_default().to_vec();
        c.laddr = parts.next().unwrap_or_default().to_vec();
        // Protected mode: a non-loopback client while the default user has no password is
        // told how to fix it and disconnected.
        let auth = if self.st.acl.auth_required(c) { batch::OUT_AUTH_REQUIRED } else { 0 };
        if crate::server::acl::enforce::protected_mode_denies(&self.st, &c.addr) {
            let msg = crate::server::acl::enforce::DENIED_MESSAGE.as_bytes();
            batch::write_out(out, batch::REC_CONNECT, id, batch::OUT_CLOSE | auth, msg, b"");
        } else {
            batch::write_out(out, batch::REC_CONNECT, id, auth, b"", b"");
        }
    }

    /// Runs one command of a client and writes its output record. True: it ran a script
    /// that yielded; nothing is written yet (see `resume`).
    fn run_client_command(&mut self, id: u64, payload: &[u8], out: &mut Vec<u8>) -> bool {
        let slot = self.slot_of(id);
        let mut client = self.clients[slot].take().expect("client slot");
        if client.killed {
            // CLIENT KILL closed it: what it sent after that never runs.
            batch::write_out(out, batch::REC_COMMAND, id, batch::OUT_CLOSE, b"", b"");
            self.clients[slot] = Some(client);
            return false;
        }
        if client.blocked.is_some() || client.deferred_in == self.batch_no {
            // Blocked: nothing of this client runs before its blocked command is answered.
            client.deferred_in = self.batch_no;
            batch::write_out(out, batch::REC_COMMAND, id, batch::OUT_DEFERRED, b"", b"");
            self.clients[slot] = Some(client);
            return false;
        }
        self.begin_command(&client);
        let mut outcome = Outcome::default();
        if crate::protocol::resp::read_command(payload, &mut self.args).is_some() && !self.args.is_empty() {
            let (args, clients) = (&self.args, &self.clients);
            let (st, reply, effects) = (&mut self.st, &mut self.reply, &mut self.effects);
            let ran = crate::util::with_args(
                args.len(),
                |i| &payload[args[i].0..args[i].1],
                |argv| {
                    let mut ctx = Ctx::new(st, &mut client, clients, reply, effects);
                    ctx.may_suspend = true;
                    crate::server::dispatch::call(&mut ctx, argv);
                    (!ctx.suspended).then(|| Outcome::of(&mut ctx))
                },
            );
            let Some(ran) = ran else {
                self.clients[slot] = Some(client);
                return true;
            };
            outcome = ran;
        } else {
            self.reply.error(b"ERR Protocol error: malformed command record");
        }
        self.finish_command(slot, client, payload, outcome, out);
        false
    }

    /// Clears the buffers one command's run fills, for `client`'s command.
    fn begin_command(&mut self, client: &Client) {
        self.args.clear();
        self.reply.clear();
        self.effects.clear();
        self.reply.resp3 = client.resp3;
        self.st.tracking.current = client.id;
    }

    /// Writes the output record of client `client`'s command (in `slot`): its reply and
    /// effects (in `self.reply`, `self.effects`), and what it asks of the host.
    fn finish_command(&mut self, slot: usize, client: Client, payload: &[u8], outcome: Outcome, out: &mut Vec<u8>) {
        self.finish_record(slot, client, payload, outcome, batch::REC_COMMAND, out);
    }

    /// `finish_command` in a record of `kind`: REC_COMMAND answers the command's own input
    /// record; a postponed command run again answers in REC_UNBLOCK (the host's deadline)
    /// or an extra REC_UNBLOCKED, flagged OUT_UNBLOCKED once it is answered.
    fn finish_record(&mut self, slot: usize, mut client: Client, payload: &[u8], outcome: Outcome, kind: u8, out: &mut Vec<u8>) {
        let id = client.id;
        if self.reply.has_errors() {
            self.st.cmdstats.not_run(self.reply.take_errors(), None);
        }
        let Outcome { close, pushing, block, unblock, kill, unpaused, host } = outcome;
        let mut flags = 0;
        if close {
            flags |= batch::OUT_CLOSE;
        }
        if !self.effects.is_empty() {
            flags |= batch::OUT_WRITE;
        }
        if client.resp3 {
            flags |= batch::OUT_RESP3;
        }
        // A monitor, like a subscriber, reads pushes: the idle timeout spares it and the
        // pubsub output limit bounds it (Redis gives monitors the replica class).
        if client.subs.active() || client.monitor {
            flags |= batch::OUT_PUBSUB;
        }
        if self.st.acl.auth_required(&client) {
            flags |= batch::OUT_AUTH_REQUIRED;
        }
        if let Some(req) = block {
            let b = crate::server::blocked::Blocked {
                db: client.db,
                keys: dedup_keys(req.keys),
                deadline: req.deadline,
                command: req.rewritten.unwrap_or_else(|| payload.to_vec()),
                asking: req.asking,
                postponed: req.postponed,
            };
            self.st.blocking.add(id, &b);
            if b.postponed {
                self.st.postponed.push(id);
            }
            let deadline = b.deadline.to_le_bytes();
            client.blocked = Some(b);
            batch::write_out(out, kind, id, flags | batch::OUT_BLOCKED, &deadline, &self.effects);
        } else {
            // Like Redis's resetClient: CLIENT REPLY SKIP skips the reply of the command after
            // it. Subscription confirmations go out whatever the mode.
            let suppress = (client.reply_off || client.reply_skip) && !pushing;
            client.reply_skip = core::mem::take(&mut client.reply_skip_next);
            // Invalidations owed to this client for its own command follow its reply.
            let mut after = Vec::new();
            if self.st.tracking.has_events() {
                self.deliver_tracking(Some(&client), &mut after);
            }
            // Pub/sub messages for this client precede its reply (Redis writes them into the
            // output buffer while the command runs), whatever its reply mode.
            let mut mine = Vec::new();
            if self.st.pubsub.has_pending() {
                self.st.pubsub.take_for(id, client.resp3, &mut mine);
            }
            let reply: &[u8] = if suppress {
                b""
            } else if mine.is_empty() {
                &self.reply.buf
            } else {
                mine.extend_from_slice(&self.reply.buf);
                &mine
            };
            let answered = if kind == batch::REC_COMMAND { 0 } else { batch::OUT_UNBLOCKED };
            batch::write_out(out, kind, id, flags | answered, reply, &self.effects);
            if !after.is_empty() {
                self.st.pubsub.queue_raw(&[id], after);
            }
        }
        self.st.tracking.current = 0;
        self.clients[slot] = Some(client);
        match host {
            Some(batch::HostRequest::Wait(w)) => batch::write_out(out, batch::REC_WAIT, id, 0, &w.encode(), b""),
            Some(batch::HostRequest::Failover) => batch::write_out(out, batch::REC_FAILOVER, id, 0, b"", b""),
            Some(batch::HostRequest::Save { background, schedule }) => batch::write_out(out, batch::REC_SAVE, id, 0, &[background as u8 + schedule as u8], b""),
            Some(batch::HostRequest::Shutdown) => batch::write_out(out, batch::REC_SHUTDOWN, id, 0, b"", b""),
            Some(batch::HostRequest::Migrate(m)) => batch::write_out(out, batch::REC_MIGRATE, id, 0, &m.encode(), b""),
            None => {}
        }
        if self.st.config.host_changed {
            self.st.config.host_changed = false;
            let values = self.st.config.host_values();
            batch::write_out(out, batch::REC_CONFIG, id, 0, values.as_bytes(), b"");
        }
        for target in kill {
            self.kill_client(target, out);
        }
        self.flush_pushes(out);
        for (target, error) in unblock {
            self.unblock_client(target, error, batch::REC_UNBLOCKED, out);
        }
        if !self.st.blocking.is_empty() && !self.effects.is_empty() {
            self.signal_ready_from_effects();
            self.serve_ready(out);
        }
        for target in unpaused {
            self.rerun_postponed(target, batch::REC_UNBLOCKED, out);
        }
    }

    /// Runs a command postponed by CLIENT PAUSE again, from the start (its pause ended,
    /// or CLIENT UNPAUSE), answering in a record of `kind`; it may be postponed again (a
    /// pause extended meanwhile). False if `id` has no postponed command.
    fn rerun_postponed(&mut self, id: u64, kind: u8, out: &mut Vec<u8>) -> bool {
        let Some(&slot) = self.client_slots.get(&id) else { return false };
        let Some(mut client) = self.clients[slot].take() else { return false };
        let Some(b) = client.blocked.take_if(|b| b.postponed) else {
            self.clients[slot] = Some(client);
            return false;
        };
        self.st.postponed.retain(|&c| c != id);
        self.begin_command(&client);
        let mut outcome = Outcome::default();
        if crate::protocol::resp::read_command(&b.command, &mut self.args).is_some() && !self.args.is_empty() {
            let argv: Vec<&[u8]> = self.args.iter().map(|&(a, e)| &b.command[a..e]).collect();
            let mut ctx = Ctx::new(&mut self.st, &mut client, &self.clients, &mut self.reply, &mut self.effects);
            // Run as it came: right after ASKING, if it did (cluster mode).
            ctx.client.asking = b.asking;
            crate::server::dispatch::call(&mut ctx, &argv);
            outcome = Outcome::of(&mut ctx);
        }
        self.finish_record(slot, client, &b.command, outcome, kind, out);
        true
    }

    /// Keeps the script (of `client`, command `payload`, at `at` in its batch) that
    /// yielded. Returns the suspension: the REC_SUSPENDED record, then `out`, the output
    /// of the batch's records before the script, which the host releases now; the records
    /// after the script are the host's again (see `batch::Suspension`).
    fn suspend(&mut self, client: u64, payload: &[u8], at: core::ops::Range<usize>, out: Vec<u8>) -> Vec<u8> {
        let now_us = self.st.now_us;
        self.suspended = Some(Suspended { client, payload: payload.to_vec(), effects: core::mem::take(&mut self.effects), now_us, gone: false });
        let mut rec = self.suspended_record(now_us, Some(at));
        rec.extend_from_slice(&out);
        rec
    }

    /// A REC_SUSPENDED record, with SUSPENDED_BUSY once the script has run
    /// `busy-reply-threshold` ms by `now_us`; the first one says where the script's record
    /// is in its batch.
    fn suspended_record(&self, now_us: i64, at: Option<core::ops::Range<usize>>) -> Vec<u8> {
        let threshold = self.st.config.busy_reply_threshold;
        let started = self.st.scripts.running.as_ref().map_or(now_us / 1000, |r| r.started_ms);
        let flags = if now_us / 1000 - started >= threshold { batch::SUSPENDED_BUSY } else { 0 };
        let mut out = Vec::new();
        let at = at.map(|r| batch::encode_script_at(r.start, r.end));
        batch::write_out(&mut out, batch::REC_SUSPENDED, 0, flags, at.as_ref().map_or(&[][..], |a| &a[..]), b"");
        out
    }

    /// Goes on with the suspended script for another slice (SCRIPT KILL, if it came, ends
    /// it). Returns the script's output record once it is done, else REC_SUSPENDED again.
    pub fn resume(&mut self, now_us: i64) -> Vec<u8> {
        let Some(mut s) = self.suspended.take() else {
            return Vec::new();
        };
        self.set_time(s.now_us);
        self.effects = core::mem::take(&mut s.effects);
        let slot = self.slot_of(s.client);
        let mut client = self.clients[slot].take().expect("client slot");
        self.reply.clear();
        self.reply.resp3 = client.resp3;
        self.st.tracking.current = s.client;
        let mut ctx = Ctx::new(&mut self.st, &mut client, &self.clients, &mut self.reply, &mut self.effects);
        ctx.may_suspend = true;
        crate::commands::scripting::resume(&mut ctx);
        if ctx.suspended {
            self.clients[slot] = Some(client);
            s.effects = core::mem::take(&mut self.effects);
            self.suspended = Some(s);
            return self.suspended_record(now_us, None);
        }
        let argv = decode(&s.payload);
        if let Some(cmd) = ctx.st.index.resolve(&argv) {
            let usec = (ctx.st.clock)().saturating_sub(ctx.st.scripts.started_us);
            crate::server::dispatch::finished(&mut ctx, cmd, &argv, usec);
        }
        let outcome = Outcome::of(&mut ctx);
        let mut out = Vec::new();
        self.finish_command(slot, client, &s.payload, outcome, &mut out);
        if s.gone {
            self.drop_client(s.client);
        }
        out
    }

    /// A batch that came while a script is suspended: Redis's answers during a busy
    /// script. Commands run (dispatch answers -BUSY to all but ALLOW_BUSY ones, such as
    /// SCRIPT KILL), except those of the script's own client, which are deferred (its
    /// replies keep their order). No expiry runs: the script's data holds still. The
    /// script's undelivered messages stay queued for after it.
    fn execute_busy(&mut self, input: &[u8], now_us: i64) -> Vec<u8> {
        let batch_now = self.st.now_us;
        self.set_time(now_us);
        self.resumed_from_pause.clear();
        let queued = self.st.pubsub.set_aside();
        let owed = self.st.tracking.set_aside();
        let mut out = Vec::new();
        let script_client = self.suspended.as_ref().expect("suspended").client;
        for rec in BatchReader::new(input) {
            let theirs = rec.client == script_client;
            match rec.kind {
                batch::REC_COMMAND if theirs => batch::write_out(&mut out, rec.kind, rec.client, batch::OUT_DEFERRED, b"", b""),
                batch::REC_COMMAND => {
                    let yielded = self.run_client_command(rec.client, rec.payload, &mut out);
                    debug_assert!(!yielded, "a script started while another is suspended");
                }
                batch::REC_DISCONNECT if theirs => {
                    self.suspended.as_mut().expect("suspended").gone = true;
                    batch::write_out(&mut out, rec.kind, rec.client, 0, b"", b"");
                }
                batch::REC_TICK => batch::write_out(&mut out, rec.kind, 0, 0, b"", b""),
                _ => self.run_record(&rec, &mut out),
            }
        }
        self.st.pubsub.put_back(queued);
        self.st.tracking.put_back(owed);
        self.st.tracking.current = script_client;
        self.set_time(batch_now);
        out
    }

    /// Marks the keys written by the effects just produced as ready for their waiters.
    fn signal_ready_from_effects(&mut self) {
        let mut args = Vec::new();
        let mut idx = Vec::new();
        for fx in EffectReader::new(&self.effects) {
            args.clear();
            if crate::protocol::resp::read_command(fx.command, &mut args).is_none() {
                continue;
            }
            let argv: Vec<&[u8]> = args.iter().map(|&(a, b)| &fx.command[a..b]).collect();
            let Some(spec) = self.st.index.resolve(&argv) else {
                continue;
            };
            idx.clear();
            spec.key_indexes_argv(&argv, &mut idx);
            for &i in &idx {
                self.st.blocking.signal(fx.db, argv[i]);
            }
        }
    }

    /// Serves the waiters of every ready key, in blocking order (Redis's
    /// handleClientsBlockedOnKeys); what a served command writes may ready more keys.
    fn serve_ready(&mut self, out: &mut Vec<u8>) {
        while let Some((db, key)) = self.st.blocking.next_ready() {
            // A deleted key is offered too: a group reader learns its stream is gone
            // (Redis's signalDeletedKeyAsReady); other waiters just keep their place.
            for id in self.st.blocking.waiters(db, &key) {
                self.serve_waiter(id, &key, out);
            }
        }
    }

    /// Re-runs a waiter's command with `key` as the ready key. Served: an extra
    /// REC_UNBLOCKED record with its reply and effects. Not served: it keeps its place.
    fn serve_waiter(&mut self, id: u64, key: &[u8], out: &mut Vec<u8>) {
        let Some(&slot) = self.client_slots.get(&id) else {
            return;
        };
        let Some(mut client) = self.clients[slot].take() else {
            return;
        };
        let Some(b) = client.blocked.take() else {
            self.clients[slot] = Some(client);
            return;
        };
        self.begin_command(&client);
        let mut still = None;
        if crate::protocol::resp::read_command(&b.command, &mut self.args).is_some() && !self.args.is_empty() {
            let argv: Vec<&[u8]> = self.args.iter().map(|&(a, e)| &b.command[a..e]).collect();
            let mut ctx = Ctx::new(&mut self.st, &mut client, &self.clients, &mut self.reply, &mut self.effects);
            ctx.ready_key = Some(key);
            ctx.client.asking = b.asking;
            crate::server::dispatch::call(&mut ctx, &argv);
            // A re-run refused before routing (ACL) must not leave ASKING for the next one.
            ctx.client.asking = false;
            still = ctx.block.take();
        }
        let mut flags = if self.effects.is_empty() { 0 } else { batch::OUT_WRITE };
        if client.resp3 {
            flags |= batch::OUT_RESP3;
        }
        if still.is_some() {
            client.blocked = Some(b);
            if flags & batch::OUT_WRITE != 0 {
                batch::write_out(out, batch::REC_UNBLOCKED, id, flags, b"", &self.effects);
            }
        } else {
            self.st.blocking.remove(id, &b);
            let suppress = client.reply_off || client.reply_skip;
            client.reply_skip = core::mem::take(&mut client.reply_skip_next);
            let reply: &[u8] = if suppress { b"" } else { &self.reply.buf };
            batch::write_out(out, batch::REC_UNBLOCKED, id, flags | batch::OUT_UNBLOCKED, reply, &self.effects);
        }
        self.clients[slot] = Some(client);
        self.flush_pushes(out);
        self.st.tracking.current = 0;
        if !self.effects.is_empty() {
            self.signal_ready_from_effects();
        }
    }

    /// CLIENT KILL of `id`: it runs nothing more (a blocked command of it is forgotten, so
    /// no write serves it), nothing names it, and the host closes its connection.
    fn kill_client(&mut self, id: u64, out: &mut Vec<u8>) {
        let Some(&slot) = self.client_slots.get(&id) else { return };
        let Some(mut c) = self.clients[slot].take() else { return };
        // Freed at once as in Redis: no message, invalidation or wake-up reaches it any
        // more; its slot stays until its disconnect.
        c.killed = true;
        self.forget_client(&mut c);
        self.clients[slot] = Some(c);
        batch::write_out(out, batch::REC_KILL, id, 0, b"", b"");
    }

    /// Answers client `id`'s MIGRATE with what became of its transfer (a REC_MIGRATED
    /// payload), in a REC_MIGRATED record flagged OUT_UNBLOCKED. False if it has none
    /// (it disconnected meanwhile).
    fn migrated(&mut self, id: u64, payload: &[u8], out: &mut Vec<u8>) -> bool {
        let Some(&slot) = self.client_slots.get(&id) else { return false };
        let Some(mut client) = self.clients[slot].take() else { return false };
        let (Some(m), Some(b)) = (client.migrating.take(), client.blocked.take()) else {
            self.clients[slot] = Some(client);
            return false;
        };
        self.st.blocking.remove(id, &b);
        self.begin_command(&client);
        let outcome = {
            let (st, reply, effects, clients) = (&mut self.st, &mut self.reply, &mut self.effects, &self.clients);
            let mut ctx = Ctx::new(st, &mut client, clients, reply, effects);
            crate::commands::migrate_to::complete(&mut ctx, &m, batch::MigrateOutcome::decode(payload));
            Outcome::of(&mut ctx)
        };
        self.finish_record(slot, client, &b.command, outcome, batch::REC_MIGRATED, out);
        true
    }

    /// Answers a blocked client's command as on timeout (null array) or with CLIENT
    /// UNBLOCK's error, in a record of `kind`. False if it was not blocked.
    fn unblock_client(&mut self, id: u64, error: bool, kind: u8, out: &mut Vec<u8>) -> bool {
        let Some(&slot) = self.client_slots.get(&id) else {
            return false;
        };
        // The deadline record of a client whose postponed command already ran again in
        // this batch (its pause ended: see below) is stale; it may wait on keys now.
        if kind == batch::REC_UNBLOCK && self.resumed_from_pause.contains(&id) {
            return false;
        }
        // A command postponed by CLIENT PAUSE runs when the pause's deadline comes; CLIENT
        // UNBLOCK leaves it waiting.
        if self.clients[slot].as_ref().and_then(|c| c.blocked.as_ref()).is_some_and(|b| b.postponed) {
            if kind != batch::REC_UNBLOCK {
                return false;
            }
            if self.st.pause().is_some() {
                // Extended meanwhile: postponed again, to the new end.
                return self.rerun_postponed(id, kind, out);
            }
            // The pause is over: every postponed client runs now, in the order they were
            // postponed (their deadlines, all the same, would fire in id order); this one
            // answers its deadline's record, the others in extra records.
            let mut answered = false;
            for other in core::mem::take(&mut self.st.postponed) {
                let k = if other == id { batch::REC_UNBLOCK } else { batch::REC_UNBLOCKED };
                self.resumed_from_pause.push(other);
                answered |= self.rerun_postponed(other, k, out) && other == id;
            }
            return answered || self.rerun_postponed(id, kind, out);
        }
        let Some(client) = self.clients[slot].as_mut() else {
            return false;
        };
        let Some(b) = client.blocked.take() else {
            return false;
        };
        self.st.blocking.remove(id, &b);
        let mut r = Reply::new();
        r.resp3 = client.resp3;
        if error {
            r.error(b"UNBLOCKED client unblocked via CLIENT UNBLOCK");
        } else {
            r.null_array();
        }
        // The blocked command ends here: counted as Redis 7.0 counts a timed-out or
        // unblocked one (one call, no time of its own, nothing in its latency histogram).
        match self.st.index.resolve(&decode(&b.command)) {
            Some(cmd) => {
                self.st.cmdstats.errors(r.take_errors());
                self.st.cmdstats.ran(cmd, 0, false);
            }
            None => self.st.cmdstats.not_run(r.take_errors(), None),
        }
        let suppress = client.reply_off || client.reply_skip;
        client.reply_skip = core::mem::take(&mut client.reply_skip_next);
        let mut flags = batch::OUT_UNBLOCKED;
        if client.resp3 {
            flags |= batch::OUT_RESP3;
        }
        batch::write_out(out, kind, id, flags, if suppress { b"" } else { &r.buf }, b"");
        true
    }

    /// Hands the queued pub/sub messages and invalidations to the host as REC_PUSH
    /// records.
    fn flush_pushes(&mut self, out: &mut Vec<u8>) {
        if self.st.tracking.has_events() {
            self.deliver_tracking(None, &mut Vec::new());
        }
        if !self.st.pubsub.has_pending() {
            return;
        }
        let (clients, slots) = (&self.clients, &self.client_slots);
        self.st.pubsub.flush(out, |id| slots.get(&id).and_then(|&s| clients[s].as_ref()).map(|c| c.resp3));
    }

    /// Turns the invalidations owed (`tracking::Event`) into messages queued for their
    /// receivers: the tracking client or its redirection, in the receiver's protocol.
    /// `me` is the client whose command just ran (out of its slot): what it is owed
    /// after its reply goes into `after`.
    fn deliver_tracking(&mut self, me: Option<&Client>, after: &mut Vec<u8>) {
        use crate::server::tracking;
        self.st.tracking.broadcast();
        let events = core::mem::take(&mut self.st.tracking.events);
        let (clients, slots) = (&self.clients, &self.client_slots);
        let find = |id: u64| -> Option<&Client> {
            match me {
                Some(c) if c.id == id => Some(c),
                _ => slots.get(&id).and_then(|&s| clients[s].as_ref()),
            }
        };
        for ev in events {
            let Some(mode) = self.st.tracking.clients.get_mut(&ev.client) else { continue };
            let Some(owner) = find(ev.client) else { continue };
            let redirected = mode.redirect != 0;
            let receiver = if redirected { mode.redirect } else { ev.client };
            let (to, msg) = match find(receiver) {
                Some(r) => (receiver, tracking::message(&ev.what, r.resp3, r.subs.active(), redirected, owner.resp3)),
                None => {
                    // The redirection's client is gone: a RESP3 tracking client is told.
                    mode.broken_redirect = true;
                    (ev.client, owner.resp3.then(|| tracking::broken_redirect_message(mode.redirect)))
                }
            };
            let Some(msg) = msg else { continue };
            if me.is_some_and(|c| c.id == to) && ev.after_reply {
                after.extend_from_slice(&msg);
            } else {
                self.st.pubsub.queue_raw(&[to], msg);
            }
        }
    }

    /// Applies effects produced by a primary (replica apply, log replay). Expiry and
    /// eviction are left to the primary's own DEL effects.
    pub fn apply(&mut self, effects: &[u8], now_us: i64) -> Result<usize, ApplyError> {
        self.set_time(now_us);
        let was = (self.st.replica_mode, self.st.applying);
        self.st.replica_mode = true;
        self.st.applying = true;
        let mut client = Client::new(u64::MAX, self.st.now_ms);
        client.user = crate::server::acl::SUPERUSER;
        client.authenticated = true;
        // Its own prefetch plan: the replica's apply meets the same cache misses per key as
        // the primary's batch did, and without it paid them one after another.
        core::mem::swap(&mut self.first_keys, &mut self.apply_keys);
        self.first_keys.clear();
        if effects.len() > 512 {
            self.plan_prefetch(EffectReader::new(effects).map(|fx| (PlanDb::Is(fx.db as usize), fx.command)));
        }
        let mut reader = EffectReader::new(effects);
        let mut n = 0;
        let mut result = Ok(());
        let mut args = Vec::new();
        let mut argv: Vec<&[u8]> = Vec::new();
        for fx in reader.by_ref() {
            if fx.db as usize >= crate::server::state::MAX_DBS {
                result = Err(ApplyError::BadDb(fx.db));
                break;
            }
            // A database past this node's `databases`: the writer had more; keep its data.
            self.st.ensure_dbs(fx.db as usize + 1);
            client.db = fx.db as usize;
            args.clear();
            crate::protocol::resp::read_command(fx.command, &mut args);
            argv.clear();
            argv.extend(args.iter().map(|&(a, b)| &fx.command[a..b]));
            self.prefetch_ahead(n);
            self.reply.clear();
            self.effects.clear();
            let mut ctx = Ctx::new(&mut self.st, &mut client, &self.clients, &mut self.reply, &mut self.effects);
            crate::server::dispatch::call(&mut ctx, &argv);
            if self.reply.buf.first() == Some(&b'-') {
                let msg = alloc::string::String::from_utf8_lossy(&self.reply.buf[1..]).trim_end().into();
                result = Err(ApplyError::Rejected(msg));
                break;
            }
            n += 1;
        }
        if result.is_ok() && !reader.at_end() {
            result = Err(ApplyError::Malformed);
        }
        core::mem::swap(&mut self.first_keys, &mut self.apply_keys);
        (self.st.replica_mode, self.st.applying) = was;
        result.map(|_| n)
    }

    pub fn dbsize(&self, db: usize) -> usize {
        self.st.dbs[db].len()
    }

    pub fn total_keys(&self) -> usize {
        self.st.dbs.iter().map(|d| d.len()).sum()
    }

    /// The engine's counters in Prometheus's text format, each sample with `labels`
    /// (`server::prometheus`). Reads only: a script may be suspended meanwhile.
    pub fn metrics(&self, labels: &str) -> alloc::string::String {
        crate::server::prometheus::render(&self.st, self.clients.iter().flatten().count(), labels)
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum ApplyError {
    BadDb(u8),
    Malformed,
    Rejected(alloc::string::String),
}

impl core::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ApplyError::BadDb(d) => write!(f, "effect names database {d}, out of range"),
            ApplyError::Malformed => write!(f, "malformed effect record"),
            ApplyError::Rejected(m) => write!(f, "effect rejected by the engine: {m}"),
        }
    }
}

/// A client waits once per key even if it names the key twice (Redis's blockForKeys).
fn dedup_keys(keys: Vec<alloc::boxed::Box<[u8]>>) -> Vec<alloc::boxed::Box<[u8]>> {
    let mut out: Vec<alloc::boxed::Box<[u8]>> = Vec::with_capacity(keys.len());
    for k in keys {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// The arguments of an encoded request (a blocked client's, a yielded script's), for its
/// statistics; none when it does not parse.
fn decode(command: &[u8]) -> Vec<&[u8]> {
    let mut args = Vec::new();
    if crate::protocol::resp::read_command(command, &mut args).is_none() {
        return Vec::new();
    }
    args.iter().map(|&(a, b)| &command[a..b]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applying_effects_writes_none_of_its_own() {
        let mut e = Engine::new(1);
        let mut fx = alloc::vec![0u8];
        crate::protocol::resp::encode_command(&mut fx, &[&b"SET"[..], b"k", b"v", b"EX", b"100"]);
        fx.push(0);
        crate::protocol::resp::encode_command(&mut fx, &[&b"INCR"[..], b"n"]);
        assert_eq!(e.apply(&fx, 1_700_000_000_000_000), Ok(2));
        assert!(e.effects.is_empty(), "a replica's apply re-encoded effects: {:?}", alloc::string::String::from_utf8_lossy(&e.effects));
        assert_eq!(e.total_keys(), 2);
    }

    /// A batch long enough to be planned for prefetch, across a database that exists, one
    /// that does not yet (the writer had more) and keyless effects, applies in full.
    #[test]
    fn a_long_apply_with_prefetch_applies_every_effect() {
        let mut e = Engine::new(1);
        let mut fx = Vec::new();
        for round in 0..2 {
            for i in 0..40u32 {
                let key = alloc::format!("key:{i}");
                let val = alloc::format!("value-{round}-{i}");
                let db = if i % 3 == 0 { 40 } else { 0 };
                fx.push(db);
                crate::protocol::resp::encode_command(&mut fx, &[&b"SET"[..], key.as_bytes(), val.as_bytes()]);
                if i % 10 == 0 {
                    fx.push(0);
                    crate::protocol::resp::encode_command(&mut fx, &[&b"PING"[..]]);
                }
            }
        }
        assert!(fx.len() > 512);
        assert_eq!(e.apply(&fx, 1_700_000_000_000_000), Ok(88));
        assert_eq!((e.dbsize(0), e.dbsize(40)), (26, 14));
        let got = e.st.dbs[40].keys.get(&b"key:39"[..]).map(|v| matches!(&v.val, crate::keyspace::object::Value::Str(s) if &s[..] == b"value-1-39"));
        assert_eq!(got, Some(true));
    }
}
