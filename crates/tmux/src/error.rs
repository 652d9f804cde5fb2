//! What can go wrong talking to tmux, and how a failed client's stderr is read (TMX-5, RG-11.3).

use std::path::PathBuf;

/// Every outcome of a tmux call that is not a plain answer.
///
/// Only [`TmuxError::NoServer`] (and, per call, a missing session) is an answer about what is live;
/// every other variant means "could not ask" and must fail closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TmuxError {
    /// The tmux binary could not be spawned (missing, not executable, no resources to fork): `bin` is what was
    /// looked for, `error` why it did not start.
    #[error("{}", not_installed(.bin, .error))]
    NotInstalled { bin: String, error: String },
    /// The socket directory does not exist or is not a directory; tmux was not run, because it would
    /// silently fall back to `/tmp` and reach a different server. Callers that only ask what is live read it
    /// as "no server" (nothing can listen in a directory that does not exist).
    #[error(
        "tmux did not run (socket directory {} does not exist; the agent-box unit creates it when it starts)",
        .0.display()
    )]
    SocketDirMissing(PathBuf),
    /// No tmux server listens on the socket.
    #[error("no tmux server is running")]
    NoServer,
    /// The target session does not exist.
    #[error("no such tmux session")]
    NoSuchSession,
    /// `new-session` found a session of that name already.
    #[error("a tmux session of that name already exists")]
    DuplicateSession,
    /// The client did not finish before the deadline and was killed.
    #[error("tmux timed out")]
    Timeout,
    /// Any other failure: tmux ran and refused, or its output could not be read.
    #[error("tmux failed ({}): {}", describe_status(*.status), first_line(.stderr).unwrap_or("no message"))]
    Failed { status: Option<i32>, stderr: String },
    /// `AGENT_BOX_TMUX_SOCKET` is not a plain socket name.
    #[error("AGENT_BOX_TMUX_SOCKET must match [A-Za-z0-9_.-]+ and not be '.' or '..' (it is '{0}')")]
    InvalidSocketName(String),
    /// A path-valued variable is relative (OV-5.2).
    #[error("{var} must be an absolute path (it is '{value}')")]
    NotAbsolute { var: &'static str, value: String },
    /// The user name cannot be joined into the default socket directory path.
    #[error("cannot build the tmux socket directory from the user name '{0}'")]
    BadUser(String),
}

impl TmuxError {
    /// The short "unavailable" reason of 50-session-cli §3.6 that callers print in their messages.
    pub fn reason(&self) -> String {
        match self {
            Self::NotInstalled { .. } => self.to_string(),
            Self::Timeout => "tmux timed out".to_owned(),
            Self::Failed { status, stderr } => match first_line(stderr) {
                Some(line) => line.to_owned(),
                None => format!("tmux failed ({})", describe_status(*status)),
            },
            other => other.to_string(),
        }
    }

    /// Builds the error for a client that exited unsuccessfully, from its status and stderr.
    pub(crate) fn from_failure(status: Option<i32>, stderr: &str) -> Self {
        match classify_stderr(stderr) {
            StderrKind::NoServer => Self::NoServer,
            StderrKind::SessionMissing => Self::NoSuchSession,
            StderrKind::DuplicateSession => Self::DuplicateSession,
            StderrKind::Other => Self::Failed { status, stderr: stderr.trim_end().to_owned() },
        }
    }
}

/// What a failed client's stderr says, as far as callers care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StderrKind {
    NoServer,
    SessionMissing,
    DuplicateSession,
    Other,
}

/// Texts meaning "nothing listens on the socket": a refused connection, a missing socket file, and the
/// wording older tmux versions used for an empty server (RG-11.3).
const NO_SERVER_TEXTS: [&str; 3] = ["no server running", "no sessions", "No such file or directory"];

/// Texts meaning "the target session does not exist". tmux 3.3a says `no current target` instead of
/// `can't find session` when the server is up with zero sessions, and `show-environment` says
/// `no such session: =NAME` (both measured), which are the same answer.
const SESSION_MISSING_TEXTS: [&str; 3] = ["can't find session", "no current target", "no such session"];

const DUPLICATE_SESSION_TEXT: &str = "duplicate session";

/// Reads the stderr of a client that exited unsuccessfully.
pub(crate) fn classify_stderr(stderr: &str) -> StderrKind {
    if NO_SERVER_TEXTS.iter().any(|text| stderr.contains(text)) {
        StderrKind::NoServer
    } else if SESSION_MISSING_TEXTS.iter().any(|text| stderr.contains(text)) {
        StderrKind::SessionMissing
    } else if stderr.contains(DUPLICATE_SESSION_TEXT) {
        StderrKind::DuplicateSession
    } else {
        StderrKind::Other
    }
}

/// "tmux did not run (…)" naming the binary looked for and the fix (50-session-cli §3.6 reason).
fn not_installed(bin: &str, error: &str) -> String {
    if bin.contains('/') {
        format!(
            "tmux did not run ({bin} cannot be started: {error}; install tmux (Debian: apt-get install tmux) or point AGENT_BOX_TMUX_BIN at it)"
        )
    } else {
        format!(
            "tmux did not run (no '{bin}' on PATH; install it (Debian: apt-get install tmux) or set AGENT_BOX_TMUX_BIN to its path)"
        )
    }
}

fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|line| !line.is_empty())
}

fn describe_status(status: Option<i32>) -> String {
    match status {
        Some(code) => format!("exit status {code}"),
        None => "killed by a signal".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_classification_table() {
        let table = [
            ("no server running on /run/agent-box-u/tmux-1000/agent-box", StderrKind::NoServer),
            ("error connecting to /tmp/x/tmux-0/abt (No such file or directory)", StderrKind::NoServer),
            ("no sessions", StderrKind::NoServer),
            ("can't find session: a", StderrKind::SessionMissing),
            ("no current target", StderrKind::SessionMissing),
            ("no such session: =a", StderrKind::SessionMissing),
            ("duplicate session: a", StderrKind::DuplicateSession),
            ("server exited unexpectedly", StderrKind::Other),
            ("open terminal failed: not a terminal", StderrKind::Other),
            ("", StderrKind::Other),
        ];
        for (stderr, expected) in table {
            assert_eq!(classify_stderr(stderr), expected, "{stderr:?}");
        }
    }

    #[test]
    fn failure_maps_to_error_variants() {
        assert_eq!(TmuxError::from_failure(Some(1), "no server running on /x\n"), TmuxError::NoServer);
        assert_eq!(TmuxError::from_failure(Some(1), "can't find session: a\n"), TmuxError::NoSuchSession);
        assert_eq!(TmuxError::from_failure(Some(1), "duplicate session: a\n"), TmuxError::DuplicateSession);
        assert_eq!(
            TmuxError::from_failure(Some(1), "lost server\n"),
            TmuxError::Failed { status: Some(1), stderr: "lost server".to_owned() }
        );
    }

    #[test]
    fn reasons_follow_session_cli_3_6() {
        let bare = TmuxError::NotInstalled { bin: "tmux".into(), error: "No such file or directory".into() };
        assert_eq!(
            bare.reason(),
            "tmux did not run (no 'tmux' on PATH; install it (Debian: apt-get install tmux) or set AGENT_BOX_TMUX_BIN to its path)"
        );
        let pinned = TmuxError::NotInstalled { bin: "/opt/tmux".into(), error: "Permission denied".into() };
        assert!(pinned.reason().starts_with("tmux did not run (/opt/tmux cannot be started: Permission denied;"));
        assert_eq!(TmuxError::Timeout.reason(), "tmux timed out");
        let failed = TmuxError::Failed { status: Some(1), stderr: "\nfirst problem\nsecond problem".to_owned() };
        assert_eq!(failed.reason(), "first problem");
        let silent = TmuxError::Failed { status: None, stderr: String::new() };
        assert_eq!(silent.reason(), "tmux failed (killed by a signal)");
        assert!(TmuxError::SocketDirMissing("/run/agent-box-u".into()).reason().starts_with("tmux did not run"));
    }
}
