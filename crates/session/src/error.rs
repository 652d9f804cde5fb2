//! Why a verb failed (50-session-cli §13, §14): each error knows its exit code and the stderr line(s) that
//! report it; `main` prints them after the verb's warnings.

use base::{NameError, exit};
use registry::{CapacityError, RegistryError};

use crate::messages;
use crate::out::Line;

/// A session that could not be killed: its name as given and tmux's reason (M24).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillFailure {
    pub name: String,
    pub reason: String,
}

/// The failure of one verb.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// M1–M3: a name failing the charset or creation check (exit 2).
    #[error("{}", messages::bad_name(.raw, .reason))]
    BadName { raw: String, reason: NameError },
    /// M4, printed bare (exit 2).
    #[error("{}", messages::exists(.0))]
    Exists(String),
    /// M8, printed bare (exit 2).
    #[error("{}", messages::harness_unavailable(.harness, .agents))]
    HarnessUnavailable { harness: String, agents: String },
    /// M25, printed bare (exit 2).
    #[error("{}", messages::no_such_session(.0))]
    NoSuchSession(String),
    /// Any other usage, validation or configuration problem, with its message (exit 2).
    #[error("{0}")]
    Usage(String),
    /// M17 (exit 75), or a second lock in one process (exit 1).
    #[error(transparent)]
    Lock(RegistryError),
    /// M18 and M19: a capacity refusal or policy error (exit 75).
    #[error(transparent)]
    Capacity(#[from] CapacityError),
    /// M20 (exit 1).
    #[error("{}", messages::does_not_parse(.file, .detail))]
    RegistryInvalid { file: String, detail: String },
    /// M20b (exit 1).
    #[error("{}", messages::cannot_read(.file, .error))]
    RegistryUnreadable { file: String, error: String },
    /// M21 (exit 1).
    #[error("{}", messages::could_not_write(.file, .reason))]
    RegistryWrite { file: String, reason: String },
    /// M16 (exit 1).
    #[error("{}", messages::no_free_name(.0))]
    NoFreeName(String),
    /// M24, one line per session that could not be killed (exit 1).
    #[error("{}", kill_lines(.0))]
    KillFailed(Vec<KillFailure>),
    /// `restart --all`: M24 per session that could not be killed, then M48 when `stopped` was cleared (exit 1).
    #[error("{}", kill_lines(.failures))]
    KillsFailedAfterWrite { failures: Vec<KillFailure>, cleared: usize },
    /// M42–M44: the registry was changed but the kill did not happen; the line says both (exit 1).
    #[error("{0}")]
    PartlyDone(String),
    /// M34: `peers` could not ask tmux (exit 1).
    #[error("{}", messages::live_unknown(.0))]
    LiveUnknown(String),
    /// M59: `ls`/`leases` cannot tell whether outcomes are reported (exit 1).
    #[error("{}", messages::notifier_unknown(&.0.to_string()))]
    NotifierUnknown(view::notification::MarkerUnknown),
    /// A run-time failure with no message of its own in §14 (exit 1).
    #[error("{0}")]
    Failed(String),
}

impl SessionError {
    /// The exit code of §13.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::BadName { .. } | Self::Exists(_) | Self::HarnessUnavailable { .. } => exit::USAGE,
            Self::NoSuchSession(_) | Self::Usage(_) => exit::USAGE,
            Self::Lock(err) => err.exit_code(),
            Self::Capacity(_) => exit::TEMPFAIL,
            Self::RegistryInvalid { .. } | Self::RegistryUnreadable { .. } | Self::RegistryWrite { .. } => {
                exit::FAILURE
            }
            Self::NoFreeName(_) | Self::KillFailed(_) | Self::LiveUnknown(_) | Self::Failed(_) => exit::FAILURE,
            Self::NotifierUnknown(_) => exit::FAILURE,
            Self::KillsFailedAfterWrite { .. } | Self::PartlyDone(_) => exit::FAILURE,
        }
    }

    /// The stderr lines that report the error, in order.
    pub fn lines(&self) -> Vec<Line> {
        match self {
            Self::Exists(_) | Self::HarnessUnavailable { .. } | Self::NoSuchSession(_) => {
                vec![Line::Bare(self.to_string())]
            }
            Self::KillFailed(failures) => {
                failures.iter().map(|f| Line::Prefixed(messages::kill_failed(&f.name, &f.reason))).collect()
            }
            Self::KillsFailedAfterWrite { failures, cleared } => {
                let mut lines: Vec<Line> =
                    failures.iter().map(|f| Line::Prefixed(messages::kill_failed(&f.name, &f.reason))).collect();
                if *cleared > 0 {
                    lines.push(Line::Prefixed(messages::all_unstopped_kills_failed(*cleared)));
                }
                lines
            }
            _ => vec![Line::Prefixed(self.to_string())],
        }
    }
}

fn kill_lines(failures: &[KillFailure]) -> String {
    failures.iter().map(|f| messages::kill_failed(&f.name, &f.reason)).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_lines_follow_the_message_table() {
        let exists = SessionError::Exists("a".into());
        assert_eq!((exists.exit_code(), exists.lines()), (2, vec![Line::Bare(messages::exists("a"))]));
        let kills = SessionError::KillFailed(vec![
            KillFailure { name: "a".into(), reason: "x".into() },
            KillFailure { name: "b".into(), reason: "y".into() },
        ]);
        assert_eq!(kills.exit_code(), 1);
        assert_eq!(
            kills.lines(),
            [Line::Prefixed(messages::kill_failed("a", "x")), Line::Prefixed(messages::kill_failed("b", "y"))]
        );
        let refused = SessionError::Capacity(CapacityError::Refused { used: 2, max: 1 });
        assert_eq!(refused.exit_code(), 75);
        assert_eq!(SessionError::Usage("u".into()).lines(), [Line::Prefixed("u".into())]);
    }
}
