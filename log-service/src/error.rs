//! One error type for the store, the service and the client, so the host handles a conflict
//! the same way whether the log is embedded or remote.

use serde::{Deserialize, Serialize};

use crate::chain::Checksum;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    /// The append's `prev_id` is not the log's tail (a stale writer, a lost race, or a
    /// `prev_id` ahead of the tail). Nothing was written. Carries the current tail.
    #[error("conflict: log tail is {tail_id} (epoch {tail_epoch})")]
    Conflict { tail_id: u64, tail_checksum: Checksum, tail_epoch: u64 },
    #[error("log not found: {0}")]
    NotFound(String),
    /// The request itself is wrong (malformed body, bad name, limits).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// A well-formed request the log's state does not allow (e.g. truncating above the
    /// published snapshot).
    #[error("refused: {0}")]
    Refused(String),
    /// A read after `after` needs entries that were truncated away (behind a published
    /// snapshot; the oldest one stored is `through + 1`): the reader loads a snapshot.
    #[error("truncated: entries up to {through} of log {log} were truncated; load a snapshot (a read after {after} needs entry {})", after + 1)]
    Truncated { log: String, through: u64, after: u64 },
    /// The stored hash chain does not verify: rows were altered or lost.
    #[error("log {log} is corrupt at id {id}")]
    Corrupt { log: String, id: u64 },
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// The database could not be reached (after retries). For an append this means the
    /// outcome is unknown: settle it by reading the head.
    #[error("log backend unavailable: {0}")]
    Unavailable(String),
    /// The client could not reach the service, or the connection broke mid-request.
    #[error("transport: {0}")]
    Transport(String),
    /// The peer sent something this build cannot understand.
    #[error("protocol: {0}")]
    Protocol(String),
    #[error("internal: {0}")]
    Internal(String),
}

impl LogError {
    /// True when an append that failed this way may nevertheless have been written.
    pub fn is_in_doubt(&self) -> bool {
        matches!(self, LogError::Unavailable(_) | LogError::Transport(_) | LogError::Internal(_))
    }

    pub fn http_status(&self) -> u16 {
        match self {
            LogError::Conflict { .. } => 409,
            LogError::NotFound(_) => 404,
            LogError::Invalid(_) => 400,
            LogError::Refused(_) => 422,
            LogError::Truncated { .. } => 410,
            LogError::Corrupt { .. } => 500,
            LogError::Unauthorized(_) => 401,
            LogError::Unavailable(_) => 503,
            LogError::Transport(_) | LogError::Protocol(_) => 502,
            LogError::Internal(_) => 500,
        }
    }

    pub fn to_body(&self) -> ErrorBody {
        let mut b = ErrorBody { error: self.to_string(), code: self.code().into(), ..Default::default() };
        match self {
            LogError::Conflict { tail_id, tail_checksum, tail_epoch } => {
                b.tail_id = Some(*tail_id);
                b.tail_checksum = Some(*tail_checksum);
                b.tail_epoch = Some(*tail_epoch);
            }
            LogError::Corrupt { log, id } => {
                b.log = Some(log.clone());
                b.id = Some(*id);
            }
            LogError::Truncated { log, through, after } => {
                b.log = Some(log.clone());
                b.id = Some(*through);
                b.after = Some(*after);
            }
            _ => {}
        }
        b
    }

    fn code(&self) -> &'static str {
        match self {
            LogError::Conflict { .. } => "conflict",
            LogError::NotFound(_) => "not_found",
            LogError::Invalid(_) => "invalid",
            LogError::Refused(_) => "refused",
            LogError::Truncated { .. } => "truncated",
            LogError::Corrupt { .. } => "corrupt",
            LogError::Unauthorized(_) => "unauthorized",
            LogError::Unavailable(_) => "unavailable",
            LogError::Transport(_) => "transport",
            LogError::Protocol(_) => "protocol",
            LogError::Internal(_) => "internal",
        }
    }

    /// Rebuilds the error a service reported (the client side of `to_body`).
    pub fn from_body(status: u16, b: ErrorBody) -> LogError {
        let msg = b.error.clone();
        match (b.code.as_str(), b.tail_id, b.tail_checksum, b.tail_epoch) {
            ("conflict", Some(tail_id), Some(tail_checksum), Some(tail_epoch)) => LogError::Conflict { tail_id, tail_checksum, tail_epoch },
            ("not_found", ..) => LogError::NotFound(strip(&msg, "log not found: ")),
            ("invalid", ..) => LogError::Invalid(strip(&msg, "invalid request: ")),
            ("refused", ..) => LogError::Refused(strip(&msg, "refused: ")),
            ("truncated", ..) => LogError::Truncated { log: b.log.unwrap_or_default(), through: b.id.unwrap_or(0), after: b.after.unwrap_or(0) },
            ("corrupt", ..) => LogError::Corrupt { log: b.log.unwrap_or_default(), id: b.id.unwrap_or(0) },
            ("unauthorized", ..) => LogError::Unauthorized(strip(&msg, "unauthorized: ")),
            ("unavailable", ..) => LogError::Unavailable(strip(&msg, "log backend unavailable: ")),
            _ => LogError::Protocol(format!("HTTP {status}: {msg}")),
        }
    }
}

fn strip(msg: &str, prefix: &str) -> String {
    msg.strip_prefix(prefix).unwrap_or(msg).to_owned()
}

/// JSON body of every non-2xx response.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
    pub code: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tail_id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tail_checksum: Option<Checksum>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tail_epoch: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub log: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub after: Option<u64>,
}
