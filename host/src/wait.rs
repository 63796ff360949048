//! WAIT numreplicas timeout: how many replicas have applied the caller's writes. Replicas
//! read the log, never the primary, so the primary asks the log service, which remembers
//! each named reader's position (a replica asks for what follows what it has applied).

use std::time::{Duration, Instant};

use memoria_log::{LogApi, LogHandle};

/// A WAIT's arguments, already checked by the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitRequest {
    pub numreplicas: i64,
    /// 0: no limit.
    pub timeout_ms: u64,
}

/// Parses `WAIT n timeout` from a command's RESP bytes; None for any other command.
pub fn parse(cmd: &[u8], args: &mut Vec<(usize, usize)>) -> Option<WaitRequest> {
    args.clear();
    memoria_core::protocol::resp::read_command(cmd, args)?;
    if args.len() != 3 || !cmd[args[0].0..args[0].1].eq_ignore_ascii_case(b"wait") {
        return None;
    }
    let num = |i: usize| std::str::from_utf8(&cmd[args[i].0..args[i].1]).ok()?.parse::<i64>().ok();
    Some(WaitRequest { numreplicas: num(1)?, timeout_ms: num(2)?.max(0) as u64 })
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_is_recognised() {
        let mut a = Vec::new();
        assert_eq!(parse(b"*3\r\n$4\r\nwait\r\n$1\r\n2\r\n$3\r\n100\r\n", &mut a), Some(WaitRequest { numreplicas: 2, timeout_ms: 100 }));
        assert_eq!(parse(b"*3\r\n$4\r\nWAIT\r\n$1\r\n1\r\n$1\r\n0\r\n", &mut a), Some(WaitRequest { numreplicas: 1, timeout_ms: 0 }));
        assert_eq!(parse(b"*3\r\n$4\r\nWAIT\r\n$1\r\nx\r\n$1\r\n0\r\n", &mut a), None);
        assert_eq!(parse(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", &mut a), None);
    }
}
