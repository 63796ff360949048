//! Moving slots from the console (the admin endpoint of issue #7): runs the coordinator
//! of `memoria reshard` (host/src/cluster/reshard.rs) inside the console process, one move
//! at a time, and keeps its progress for the Slots page.
//!
//! The console holds nothing the move needs: every step is in the logs, so if the
//! console stops mid-move, asking for the same move again (here or with `memoria
//! reshard --resume`) finishes it.

use std::sync::Mutex;
use std::time::Duration;

use memoria_admin::reshard::{self, Options, Request, ReshardError};
use memoria_admin::topology::{Topology, ranges_text};
use memoria_log::LogHandle;

use super::Shared;
use crate::model::{Migration, MoveStatus};

/// The console's own move: the one running, or the last one finished.
#[derive(Default)]
pub struct Moves {
    status: Mutex<Option<MoveStatus>>,
}

impl Moves {
    /// The status, whatever a panicking holder of the lock left (it is plain data).
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<MoveStatus>> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn status(&self) -> Option<MoveStatus> {
        self.lock().clone()
    }

    fn update(&self, f: impl FnOnce(&mut MoveStatus)) {
        if let Some(s) = self.lock().as_mut() {
            f(s);
        }
    }
}

fn log_handle(c: &Shared) -> Result<LogHandle, String> {
    Ok(LogHandle::Remote(c.log_client(c.cluster_json().ok().flatten().as_ref())?))
}

/// The slot map and open moves from the cluster log.
pub async fn topology(api: &LogHandle) -> Result<Topology, String> {
    match tokio::time::timeout(Duration::from_secs(5), reshard::read(api)).await {
        Ok(Ok((t, _))) => Ok(t),
        Ok(Err(e)) => Err(format!("cluster log: {e}")),
        Err(_) => Err("cluster log: no answer within 5 s".into()),
    }
}

/// Migrations in progress (from the cluster log), with the console's progress for its own.
pub async fn in_progress(c: &Shared) -> Result<Vec<Migration>, String> {
    let t = topology(&log_handle(c)?).await?;
    let mine = c.moves.status().filter(|s| s.running);
    Ok(t.moving
        .iter()
        .map(|m| {
            let slots = ranges_text(&m.slots);
            let progress = match &mine {
                Some(s) if s.slots == slots && s.from == m.from && s.to == m.to => {
                    format!("run by this console: pass {}, {} keys moved, {} exported again", s.passes, s.moved, s.retried)
                }
                _ => "not run by this console: `memoria reshard` is moving it, or it was interrupted (Move with the same slots, or `memoria reshard --resume`, finishes it)".into(),
            };
            // Between the two entries of the commit: Migrate (logged) and Assign (not yet).
            Migration {
                slots,
                from: m.from,
                to: m.to,
                phase: "prepared: the source sends clients to the target with -ASK while keys are copied; the commit (Assign in the cluster log) moves ownership".into(),
                progress,
            }
        })
        .collect())
}

/// Checks the move against the cluster log and starts it in the background; the page
/// shows its progress and result. The same move as the open one resumes it.
pub async fn start(c: &Shared, slots: &str, from: u16, to: u16) -> Result<String, String> {
    let req = Request { slots: reshard::parse_slots(slots)?, from, to };
    let api = log_handle(c)?;
    // Checked here so a bad request is an error in the page, not a failed background task.
    match reshard::plan(&topology(&api).await?, Some(req.clone())) {
        Ok(_) => {}
        Err(ReshardError::Busy { slots, from, to }) => {
            return Err(format!(
                "another migration is in progress (slots {slots} from shard-{from} to shard-{to}): finish it first by moving the same slots again"
            ));
        }
        Err(e) => return Err(e.to_string()),
    }
    let text = ranges_text(&req.slots);
    {
        let mut g = c.moves.lock();
        if let Some(s) = g.as_ref().filter(|s| s.running) {
            return Err(format!("this console is still moving slots {} from shard-{} to shard-{}", s.slots, s.from, s.to));
        }
        *g = Some(MoveStatus { slots: text.clone(), from, to, running: true, ..Default::default() });
    }
    let (user, password) = super::resp::node_auth().map_or((None, None), |(u, p)| (Some(u), Some(p)));
    let opts = Options { user, password, ..Default::default() };
    let c2 = c.clone();
    let task = tokio::spawn(async move {
        let c = c2;
        reshard::run(&api, Some(req), &opts, |p| c.moves.update(|s| (s.moved, s.retried, s.passes) = (p.moved, p.retried, p.passes)), |_| {})
            .await
            .map_err(|e| e.to_string())
    });
    // The outcome is recorded whatever happens to the task (a panic too), so the console
    // never believes a move is still running.
    let c3 = c.clone();
    tokio::spawn(async move {
        let r = task.await.unwrap_or_else(|e| Err(format!("the move's task failed: {e}")));
        c3.moves.update(|s| {
            s.running = false;
            match r {
                Ok(mv) => {
                    s.ok = true;
                    s.result = format!("committed: slots {} now belong to shard-{} ({} keys moved)", ranges_text(&mv.slots), mv.to, s.moved);
                }
                Err(e) => s.result = format!("stopped: {e} (the move stays open; Move with the same slots resumes it)"),
            }
        });
    });
    Ok(format!("moving slots {text} from shard-{from} to shard-{to}: started; progress shows under Migrations in progress"))
}
