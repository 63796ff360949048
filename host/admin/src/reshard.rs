//! `memoria reshard`: moves slot ranges from one shard to another while clients keep
//! reading and writing. Everything it needs to go on is in the logs, so it holds no state
//! of its own: run again after a crash (its own, or any node's), it resumes.
//!
//! 1. Cluster log `Migrate { slots, from, to }` (a conditional append on the tail read):
//!    every node learns it from the cluster log; the source's primary then sends clients
//!    of keys it does not hold to the target with `-ASK`, and the target serves them after
//!    `ASKING`.
//! 2. Passes over the slots' keys: `MIGRATION EXPORT` at the source's primary (refused
//!    until that engine knows the move), `MIGRATION IMPORT` at the target's primary
//!    (logged in the target's shard log before it answers), `MIGRATION DELIF` back at the
//!    source (logged in the source's log; deletes a key only if unchanged since its
//!    export). Passes repeat until one from cursor 0 finds no key.
//! 3. Cluster log `Assign { slots, shard: to }`: the commit, and the only entry that
//!    moves ownership, so a slot has one owner at every point of the log.
//!
//! Every step is idempotent (an export reads, an import replaces, a delete is
//! conditional), so any step can be retried after an error: a node killed or failed over
//! mid-step costs a retry against the shard's next primary (found from the lease holder
//! in its log), never a key.

use std::time::{Duration, Instant};

use memoria_log::{LogApi, LogError, LogHandle, NewEntry};

use super::topology::{self, CLUSTER_LOG, ClusterEntry, Move, Topology, ranges_text};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub slots: Vec<(u16, u16)>,
    pub from: u16,
    pub to: u16,
}

#[derive(Clone, Debug)]
pub struct Options {
    /// Keys per EXPORT.
    pub batch: usize,
    pub user: Option<String>,
    pub password: Option<String>,
    /// Give up when no step has succeeded for this long.
    pub stall_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options { batch: 200, user: None, password: None, stall_timeout: Duration::from_secs(60) }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Keys deleted at the source after their import (each key once).
    pub moved: u64,
    /// Keys exported again because they changed after an export.
    pub retried: u64,
    pub passes: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum ReshardError {
    #[error("log: {0}")]
    Log(#[from] LogError),
    #[error("the cluster log is empty: start the cluster first (memoria up --shards N)")]
    NoCluster,
    #[error("{0}")]
    Invalid(String),
    #[error("another migration is in progress (slots {slots} from shard {from} to shard {to}); run `memoria reshard --resume` to finish it first")]
    Busy { slots: String, from: u16, to: u16 },
    #[error("no migration is in progress")]
    NothingToResume,
    #[error("stalled for {0:?}: {1}")]
    Stalled(Duration, String),
}

/// What the cluster log says: the map (with open moves) and the last id read.
pub async fn read(api: &LogHandle) -> Result<(Topology, u64), ReshardError> {
    let (topo, last) = topology::read_all(api, 0, None).await?;
    Ok((topo.ok_or(ReshardError::NoCluster)?, last))
}

/// Checks a new request against the map.
pub fn validate(topo: &Topology, req: &Request) -> Result<(), ReshardError> {
    let bad = |m: String| Err(ReshardError::Invalid(m));
    if req.from == req.to {
        return bad(format!("--from and --to are both shard {}", req.from));
    }
    for s in [req.from, req.to] {
        if s >= topo.shards {
            return bad(format!("shard {s} does not exist (the cluster has {} shards)", topo.shards));
        }
    }
    if req.slots.is_empty() {
        return bad("no slots given".into());
    }
    for &(a, b) in &req.slots {
        if a > b || b >= topology::SLOTS {
            return bad(format!("bad slot range {a}-{b} (slots are 0-16383)"));
        }
        if let Some(x) = (a..=b).find(|&x| topo.owner[x as usize] != req.from) {
            return bad(format!("slot {x} belongs to shard {}, not {}", topo.owner[x as usize], req.from));
        }
    }
    Ok(())
}

/// Appends `e` to the cluster log unless `done(topology)` already holds; retries on a
/// conflicting append (someone else wrote), re-reading first.
async fn append_unless(api: &LogHandle, e: &ClusterEntry, done: impl Fn(&Topology) -> bool) -> Result<(), ReshardError> {
    loop {
        let (topo, last) = read(api).await?;
        if done(&topo) {
            return Ok(());
        }
        match api.append(CLUSTER_LOG, last, 0, vec![NewEntry::new(e.kind(), e.encode())]).await {
            Ok(_) => return Ok(()),
            Err(LogError::Conflict { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The move `req` asks for against the map: (the move, whether it is already open in the
/// cluster log). None resumes the open one; the same request as the open one resumes it
/// too (it was interrupted); any other is refused while one is open, or if invalid.
pub fn plan(topo: &Topology, req: Option<Request>) -> Result<(Move, bool), ReshardError> {
    match (topo.moving.first(), req) {
        (Some(open), None) => Ok((open.clone(), true)),
        (Some(open), Some(r)) if open.slots == r.slots && open.from == r.from && open.to == r.to => Ok((open.clone(), true)),
        (Some(open), Some(_)) => Err(ReshardError::Busy { slots: ranges_text(&open.slots), from: open.from, to: open.to }),
        (_, None) => Err(ReshardError::NothingToResume),
        (_, Some(r)) => {
            validate(topo, &r)?;
            Ok((Move { slots: r.slots, from: r.from, to: r.to }, false))
        }
    }
}

/// Starts `req` (or, when None, resumes the open migration) and runs it to its commit.
/// Returns the move that was completed.
/// `checkpoint` is called at each step, by name: "started" (the move is in the cluster
/// log), "imported" (a batch is at the target, not yet deleted at the source), "moved"
/// (no key left at the source, the commit not yet appended); fault-injection tests stop
/// there.
pub async fn run(
    api: &LogHandle,
    req: Option<Request>,
    opts: &Options,
    mut progress: impl FnMut(&Progress),
    mut checkpoint: impl FnMut(&str),
) -> Result<Move, ReshardError> {
    let (topo, _) = read(api).await?;
    let (mv, open) = plan(&topo, req)?;
    if !open {
        let entry = ClusterEntry::Migrate { slots: mv.slots.clone(), from: mv.from, to: mv.to };
        append_unless(api, &entry, |t| t.moving.contains(&mv)).await?;
        tracing::info!(slots = %ranges_text(&mv.slots), from = mv.from, to = mv.to, "migration started");
    }
    checkpoint("started");
    let mut mover = Mover::new(api, &mv, opts);
    let mut p = Progress::default();
    loop {
        p.passes += 1;
        let found = mover.pass(&mut p, &mut progress, &mut checkpoint).await?;
        progress(&p);
        if found == 0 {
            break;
        }
    }
    checkpoint("moved");
    let slots = mv.slots.clone();
    let entry = ClusterEntry::Assign { slots: slots.clone(), shard: mv.to };
    append_unless(api, &entry, |t| slots.iter().all(|&(a, b)| (a..=b).all(|x| t.owner[x as usize] == mv.to))).await?;
    metrics::counter!("memoria_reshard_slots_moved_total").increment(mv.slots.iter().map(|&(a, b)| (b - a) as u64 + 1).sum());
    tracing::info!(slots = %ranges_text(&mv.slots), to = mv.to, moved = p.moved, "migration committed");
    Ok(mv)
}

/// The key-moving half: connections to the two primaries, re-resolved after any error.
struct Mover<'a> {
    api: &'a LogHandle,
    mv: &'a Move,
    opts: &'a Options,
    slots: String,
    src: Option<redis::aio::MultiplexedConnection>,
    dst: Option<redis::aio::MultiplexedConnection>,
    last_ok: Instant,
}

type Step<T> = Result<T, String>;

impl<'a> Mover<'a> {
    fn new(api: &'a LogHandle, mv: &'a Move, opts: &'a Options) -> Self {
        Mover { api, mv, opts, slots: ranges_text(&mv.slots), src: None, dst: None, last_ok: Instant::now() }
    }

    /// One walk of the source's keyspace from cursor 0; returns how many keys it exported.
    async fn pass(&mut self, p: &mut Progress, progress: &mut impl FnMut(&Progress), checkpoint: &mut impl FnMut(&str)) -> Result<u64, ReshardError> {
        // Runs a step until it succeeds (every step is idempotent).
        macro_rules! retry {
            ($step:expr) => {{
                let mut delay = Duration::from_millis(50);
                loop {
                    match $step.await {
                        Ok(v) => {
                            self.last_ok = Instant::now();
                            break v;
                        }
                        Err(why) => self.failed(why, &mut delay).await?,
                    }
                }
            }};
        }
        let mut cursor = 0u64;
        let mut found = 0u64;
        loop {
            let (next, records) = retry!(self.export(cursor));
            if !records.is_empty() {
                found += records.len() as u64;
                retry!(self.import(&records));
                checkpoint("imported");
                let deleted = retry!(self.delif(&records));
                p.moved += deleted;
                p.retried += records.len() as u64 - deleted;
                metrics::counter!("memoria_reshard_keys_moved_total").increment(deleted);
                progress(p);
            }
            cursor = next;
            if cursor == 0 {
                return Ok(found);
            }
        }
    }

    /// After a failed step: drops the connections (the next try finds the shards'
    /// primaries again) and waits, or gives up after `stall_timeout` without progress.
    async fn failed(&mut self, why: String, delay: &mut Duration) -> Result<(), ReshardError> {
        if self.last_ok.elapsed() > self.opts.stall_timeout {
            return Err(ReshardError::Stalled(self.opts.stall_timeout, why));
        }
        tracing::debug!(%why, "migration step failed; retrying");
        self.src = None;
        self.dst = None;
        tokio::time::sleep(*delay).await;
        *delay = (*delay * 2).min(Duration::from_secs(1));
        Ok(())
    }

    /// A connection to the primary of `shard`: the node holding its lease.
    async fn connect(&self, shard: u16) -> Step<redis::aio::MultiplexedConnection> {
        let name = topology::shard_log(shard);
        let logs = self.api.list().await.map_err(|e| format!("log: {e}"))?;
        let leader =
            logs.iter().find(|l| l.name == name).and_then(|l| l.leader.clone()).ok_or_else(|| format!("shard {shard} has no lease holder in its log yet"))?;
        let info = redis::IntoConnectionInfo::into_connection_info(format!("redis://{leader}")).map_err(|e| format!("{leader}: {e}"))?;
        let mut settings = info.redis_settings().clone();
        if let Some(p) = &self.opts.password {
            settings = settings.set_password(p);
        }
        if let Some(u) = &self.opts.user {
            settings = settings.set_username(u);
        }
        let client = redis::Client::open(info.set_redis_settings(settings)).map_err(|e| format!("{leader}: {e}"))?;
        let cfg = redis::AsyncConnectionConfig::new().set_connection_timeout(Some(Duration::from_secs(2))).set_response_timeout(Some(Duration::from_secs(10)));
        client.get_multiplexed_async_connection_with_config(&cfg).await.map_err(|e| format!("{leader}: {e}"))
    }

    async fn src(&mut self) -> Step<&mut redis::aio::MultiplexedConnection> {
        if self.src.is_none() {
            self.src = Some(self.connect(self.mv.from).await?);
        }
        Ok(self.src.as_mut().expect("just set"))
    }

    async fn dst(&mut self) -> Step<&mut redis::aio::MultiplexedConnection> {
        if self.dst.is_none() {
            self.dst = Some(self.connect(self.mv.to).await?);
        }
        Ok(self.dst.as_mut().expect("just set"))
    }

    async fn export(&mut self, cursor: u64) -> Step<(u64, Vec<Vec<u8>>)> {
        let (batch, slots) = (self.opts.batch, self.slots.clone());
        let c = self.src().await?;
        let (next, records): (String, Vec<Vec<u8>>) =
            redis::cmd("MIGRATION").arg("EXPORT").arg(cursor).arg(batch).arg(&slots).query_async(c).await.map_err(|e| format!("export: {e}"))?;
        Ok((next.parse().map_err(|_| format!("export: bad cursor {next:?}"))?, records))
    }

    async fn import(&mut self, records: &[Vec<u8>]) -> Step<()> {
        let c = self.dst().await?;
        let n: u64 = redis::cmd("MIGRATION").arg("IMPORT").arg(records).query_async(c).await.map_err(|e| format!("import: {e}"))?;
        if n as usize != records.len() {
            return Err(format!("import: {n} of {} records written", records.len()));
        }
        Ok(())
    }

    async fn delif(&mut self, records: &[Vec<u8>]) -> Step<u64> {
        let c = self.src().await?;
        let mut pipe = redis::pipe();
        for r in records {
            pipe.cmd("MIGRATION").arg("DELIF").arg(r);
        }
        let deleted: Vec<u64> = pipe.query_async(c).await.map_err(|e| format!("delete: {e}"))?;
        Ok(deleted.iter().sum())
    }
}

/// Parses `0-999,1200,…` (inclusive ranges).
pub fn parse_slots(s: &str) -> Result<Vec<(u16, u16)>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (Ok(a), Ok(b)) = (a.trim().parse::<u16>(), b.trim().parse::<u16>()) else {
            return Err(format!("bad slot range {part:?} (expected a-b or a number)"));
        };
        if a > b || b >= topology::SLOTS {
            return Err(format!("bad slot range {part:?} (slots are 0-16383)"));
        }
        out.push((a, b));
    }
    out.sort_unstable();
    // Merge overlapping or adjacent ranges so the same slot is never named twice.
    let mut merged: Vec<(u16, u16)> = Vec::new();
    for (a, b) in out {
        match merged.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_lists_parse_and_merge() {
        assert_eq!(parse_slots("0-9,5-20,30,31").unwrap(), vec![(0, 20), (30, 31)]);
        assert!(parse_slots("9-0").is_err());
        assert!(parse_slots("16384").is_err());
        assert!(parse_slots("x").is_err());
    }

    #[test]
    fn requests_are_checked_against_the_map() {
        let t = Topology::even(2);
        let ok = Request { slots: vec![(0, 999)], from: 0, to: 1 };
        assert!(validate(&t, &ok).is_ok());
        for (bad, why) in [
            (Request { slots: vec![(0, 9)], from: 1, to: 0 }, "slot 0 belongs to shard 0, not 1"),
            (Request { slots: vec![(0, 9)], from: 0, to: 0 }, "--from and --to are both shard 0"),
            (Request { slots: vec![(0, 9)], from: 0, to: 2 }, "shard 2 does not exist (the cluster has 2 shards)"),
            (Request { slots: vec![], from: 0, to: 1 }, "no slots given"),
        ] {
            assert_eq!(validate(&t, &bad).unwrap_err().to_string(), why);
        }
    }
}
