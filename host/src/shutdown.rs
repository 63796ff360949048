//! Stopping on SIGTERM or SIGINT, always. The signals are watched on a thread of their own:
//! a shard busy in a long engine call holds its node's event loop, so a handler on that
//! loop would never run. The first signal asks for an orderly shutdown (each shard finishes
//! its append in flight); if that has not ended `grace` later, or a second signal comes,
//! the process exits at once. Exiting loses nothing acknowledged: a reply leaves only once
//! its write is in the log.

use std::time::Duration;

use tokio::sync::watch;

/// How long an orderly shutdown may take unless `MEMORIA_SHUTDOWN_GRACE_MS` says otherwise.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(30);

/// The grace period in force (`MEMORIA_SHUTDOWN_GRACE_MS`, else [`DEFAULT_GRACE`]).
pub fn grace() -> Duration {
    std::env::var("MEMORIA_SHUTDOWN_GRACE_MS").ok().and_then(|v| v.parse().ok()).map(Duration::from_millis).unwrap_or(DEFAULT_GRACE)
}

/// A shutdown request, set by the signal thread.
pub struct Requested(watch::Receiver<bool>);

impl Requested {
    /// Resolves once a signal asked for shutdown.
    pub async fn wait(mut self) {
        let _ = self.0.wait_for(|&r| r).await;
    }
}

/// Whether the signal thread runs in this process (then SHUTDOWN can stop it).
static WATCHING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// SHUTDOWN: asks this process for the orderly shutdown SIGTERM starts (by sending it
/// the signal). False where no signal thread runs (a node embedded in another program,
/// as the tests' are): nothing would stop it.
pub fn request() -> bool {
    if !WATCHING.load(std::sync::atomic::Ordering::Relaxed) {
        return false;
    }
    #[cfg(unix)]
    {
        // SAFETY: kill with our own pid only sends a signal.
        unsafe { libc::kill(libc::getpid(), libc::SIGTERM) == 0 }
    }
    #[cfg(not(unix))]
    false
}

/// Starts the signal thread. Call it before anything else spawns threads.
pub fn watch_signals(grace: Duration) -> std::io::Result<Requested> {
    let (tx, rx) = watch::channel(false);
    WATCHING.store(true, std::sync::atomic::Ordering::Relaxed);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    std::thread::Builder::new().name("signals".into()).spawn(move || rt.block_on(signals(tx, grace)))?;
    Ok(Requested(rx))
}

#[cfg(unix)]
async fn signals(tx: watch::Sender<bool>, grace: Duration) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        eprintln!("cannot watch SIGTERM/SIGINT; stop this process with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    let _ = tx.send(true);
    tokio::select! {
        _ = tokio::time::sleep(grace) => eprintln!("shutdown did not finish within {} ms; exiting now", grace.as_millis()),
        _ = term.recv() => eprintln!("second signal; exiting now"),
        _ = int.recv() => eprintln!("second signal; exiting now"),
    }
    std::process::exit(1);
}

#[cfg(not(unix))]
async fn signals(tx: watch::Sender<bool>, grace: Duration) {
    let _ = tokio::signal::ctrl_c().await;
    let _ = tx.send(true);
    tokio::select! {
        _ = tokio::time::sleep(grace) => eprintln!("shutdown did not finish within {} ms; exiting now", grace.as_millis()),
        _ = tokio::signal::ctrl_c() => eprintln!("second signal; exiting now"),
    }
    std::process::exit(1);
}
