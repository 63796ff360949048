//! WAIT numreplicas timeout: how many replicas have applied the caller's writes. Replicas
//! read the log, never the primary, so the primary asks the log service, which remembers
//! each named reader's position (a replica asks for what follows what it has applied).

use std::time::{Duration, Instant};

use memoria_core::protocol::batch::WaitRequest;
use memoria_log::{LogApi, LogHandle};

/// How often the log service is asked while a WAIT is unanswered.
const POLL: Duration = Duration::from_millis(2);
/// Whether a reader of the log is a live replica: one silent for longer than 3 s is not
/// (a live replica long-polls the log every second). WAIT and CLUSTER SLOTS both use it.
pub fn is_live(r: &memoria_log::ReaderInfo) -> bool {
    r.idle_ms < 3000
}

/// Counts the replicas (readers other than `me`) that have applied `target`, until there
/// are `numreplicas` of them or the timeout passes.
pub async fn count_replicas(api: LogHandle, log: String, me: String, target: u64, req: WaitRequest) -> i64 {
    let deadline = (req.timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(req.timeout_ms));
    loop {
        let n = match api.readers(&log).await {
            Ok(rs) => rs.iter().filter(|r| r.name != me && is_live(r) && r.applied >= target).count() as i64,
            Err(e) => {
                tracing::debug!(error = %e, "WAIT: asking the log service for its readers failed");
                0
            }
        };
        if n >= req.numreplicas || deadline.is_some_and(|d| Instant::now() >= d) {
            return n;
        }
        tokio::time::sleep(POLL).await;
    }
}
