//! The calls programs make to tmux (TMX-4), behind a trait so reconcile logic can run against a fake.

use std::ffi::OsString;
use std::path::PathBuf;

use base::SessionName;

use crate::error::TmuxError;
use crate::hook::WakeHook;
use crate::identity::SessionId;

/// One session to start: `new-session -d -s NAME -c CWD [-e K=V]… ARGV…`.
///
/// tmux execs an ARGV of two or more words directly; a single word goes through the user's
/// `default-shell -c`, so callers pass at least two (`/bin/sh <launch file>`). An empty ARGV starts
/// the default shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    pub name: SessionName,
    /// The pane's working directory, taken literally (its `#` are escaped).
    pub cwd: PathBuf,
    /// Pane environment, passed verbatim as `-e KEY=VALUE`; keys must not contain `=`.
    pub env: Vec<(String, String)>,
    pub argv: Vec<OsString>,
}

/// The supervisor's per-tick view of the server (SUP-4.1): its pid, which tells a restarted server from the same
/// one (SUP-4.4), and the live session names in tmux order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// `None` when tmux printed no pid.
    pub server_pid: Option<u32>,
    pub sessions: Vec<String>,
}

/// What `kill_session` achieved (50-session-cli §3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Killed {
    /// tmux killed the session.
    Yes,
    /// The session (or the whole server) was not there.
    AlreadyGone,
}

/// Every tmux call the programs make. Object-safe: callers take `&dyn TmuxApi`.
pub trait TmuxApi {
    /// Starts the server if needed, sets `exit-empty off`, and reports its pid and sessions, in one client (SUP-4.1).
    fn ensure_server_and_list(&self) -> Result<Snapshot, TmuxError>;

    /// The same snapshot from a server that something else runs (75-upgrades UP-3.1): never starts one, never sets
    /// an option; `NoServer` (or `SocketDirMissing`) when none runs.
    fn list_server(&self) -> Result<Snapshot, TmuxError>;

    /// The live set in tmux order; no server (or no socket directory) means nothing is live (`Ok(vec![])`).
    fn list_sessions(&self) -> Result<Vec<String>, TmuxError>;

    /// Whether the exact session exists; no server means `Ok(false)`.
    fn has_session(&self, name: &SessionName) -> Result<bool, TmuxError>;

    /// Starts a detached session and returns its pane's pid when tmux reported one; `DuplicateSession` when the
    /// name is taken.
    fn new_session(&self, request: &NewSession) -> Result<Option<u32>, TmuxError>;

    /// Kills the exact session; a session or server that is not there is `AlreadyGone`.
    fn kill_session(&self, name: &SessionName) -> Result<Killed, TmuxError>;

    /// Every live session with its identity, in tmux order (issue 25): what a caller captures under the registry
    /// lock to end later only the sessions that were there then. No server (or no socket directory) means nothing
    /// is live (`Ok(vec![])`).
    fn session_ids(&self) -> Result<Vec<(String, SessionId)>, TmuxError>;

    /// Kills the one session `id` names, never one started later under the same name or on another server; a
    /// session or server that is not there is `AlreadyGone`.
    fn kill_session_id(&self, id: &SessionId) -> Result<Killed, TmuxError>;

    /// Expands `format` for the session's current pane; `NoSuchSession` when it does not exist.
    fn display(&self, name: &SessionName, format: &str) -> Result<String, TmuxError>;

    /// Variable `key` of the session's environment (where `new-session -e` puts it); `None` when it is not set.
    /// `NoSuchSession` when the session does not exist.
    fn session_environment(&self, name: &SessionName, key: &str) -> Result<Option<String>, TmuxError>;

    /// The session of `pane`, or of the caller's `$TMUX` when `None` (`peers` self-exclusion only:
    /// the one call that keeps `TMUX` and `TMUX_PANE` in the child's environment).
    fn current_session(&self, pane: Option<&str>) -> Result<String, TmuxError>;

    /// `set-option -g KEY VALUE`.
    fn set_global_option(&self, key: &str, value: &str) -> Result<(), TmuxError>;

    /// `set-hook -g session-closed[4242] …`: installs (or re-installs, idempotently) the session-closed wake on a
    /// running server; never starts one.
    fn set_wake_hook(&self, hook: &WakeHook) -> Result<(), TmuxError>;

    /// The value of a global option; `None` when it is unset.
    fn show_global_option(&self, key: &str) -> Result<Option<String>, TmuxError>;

    /// `(major, minor)` of `tmux -V`; `None` when the output cannot be parsed.
    fn version(&self) -> Result<Option<(u32, u32)>, TmuxError>;

    /// Kills the server; no server is success (tests and the demo only).
    fn kill_server(&self) -> Result<(), TmuxError>;

    /// The server socket, `<socket dir>/tmux-<uid>/<socket>`, for comparing with the socket in `$TMUX`.
    fn socket_path(&self) -> PathBuf;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Tmux, TmuxConfig};

    #[test]
    fn callers_can_hold_the_trait_as_an_object() {
        let tmux = Tmux::new(TmuxConfig::new("/nonexistent/tmux", "abt", "/nonexistent-dir"));
        let api: &dyn TmuxApi = &tmux;
        assert_eq!(api.list_sessions(), Ok(Vec::new()), "no socket directory: nothing is live");
        assert_eq!(api.ensure_server_and_list(), Err(TmuxError::SocketDirMissing("/nonexistent-dir".into())));
        assert_eq!(api.list_server(), Err(TmuxError::SocketDirMissing("/nonexistent-dir".into())));
        let boxed: Box<dyn TmuxApi> = Box::new(tmux);
        assert!(boxed.socket_path().ends_with("abt"));
    }
}
