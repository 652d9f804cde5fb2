//! The environment a tmux client gets (TMX-3): a client that starts the server freezes it into every pane.

use std::ffi::OsString;
use std::path::Path;

/// Removed from every tmux child: an ambient `$TMUX` must not redirect the client, the registry lock fd
/// must not leak into a daemonising server (it once wedged every writer), and a parent agent's marker must
/// not leak into the panes.
pub const REMOVED_VARS: [&str; 4] = ["TMUX", "TMUX_PANE", "AGENT_BOX_REGISTRY_LOCK_FD", "CLAUDECODE"];

/// Kept only for the `peers` self-lookup, which asks tmux about the caller's own pane.
const CALLER_PANE_VARS: [&str; 2] = ["TMUX", "TMUX_PANE"];

/// Whether the caller's tmux identity reaches the child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallerPane {
    /// Every call but `current_session`.
    Strip,
    /// `current_session`: tmux needs `$TMUX` to know which session "current" is.
    Keep,
}

/// The parent environment a [`crate::Tmux`] passes on to its children.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ParentEnv {
    /// The process environment at the time of each call.
    #[default]
    Inherit,
    /// A fixed set (tests, and callers that build the environment themselves).
    Fixed(Vec<(OsString, OsString)>),
}

impl ParentEnv {
    pub(crate) fn vars(&self) -> Vec<(OsString, OsString)> {
        match self {
            Self::Inherit => std::env::vars_os().collect(),
            Self::Fixed(vars) => vars.clone(),
        }
    }

    pub(crate) fn has_non_empty(&self, key: &str) -> bool {
        match self {
            Self::Inherit => std::env::var_os(key).is_some_and(|value| !value.is_empty()),
            Self::Fixed(vars) => vars.iter().any(|(k, value)| k == key && !value.is_empty()),
        }
    }
}

/// The complete environment of a tmux child: the parent's minus [`REMOVED_VARS`] (but see [`CallerPane`]),
/// with `TMUX_TMPDIR` replaced by the socket directory.
pub fn child_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    socket_dir: &Path,
    caller_pane: CallerPane,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> =
        parent.into_iter().filter(|(key, _)| passes(key, caller_pane) && key != "TMUX_TMPDIR").collect();
    env.push(("TMUX_TMPDIR".into(), socket_dir.as_os_str().to_owned()));
    env
}

fn passes(key: &OsString, caller_pane: CallerPane) -> bool {
    let removed = REMOVED_VARS.iter().any(|name| key == name);
    let kept = caller_pane == CallerPane::Keep && CALLER_PANE_VARS.iter().any(|name| key == name);
    !removed || kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> Vec<(OsString, OsString)> {
        [
            ("PATH", "/usr/bin"),
            ("TMUX", "/tmp/tmux-0/default,1,0"),
            ("TMUX_PANE", "%3"),
            ("AGENT_BOX_REGISTRY_LOCK_FD", "9"),
            ("CLAUDECODE", "1"),
            ("TMUX_TMPDIR", "/tmp/decoy"),
            ("HOME", "/home/u"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
    }

    fn keys(env: &[(OsString, OsString)]) -> Vec<&str> {
        env.iter().map(|(k, _)| k.to_str().unwrap()).collect()
    }

    #[test]
    fn strips_tmux_identity_lock_fd_and_agent_marker() {
        let env = child_env(parent(), Path::new("/run/agent-box-u"), CallerPane::Strip);
        assert_eq!(keys(&env), ["PATH", "HOME", "TMUX_TMPDIR"]);
        assert_eq!(env.last().unwrap().1, "/run/agent-box-u");
    }

    #[test]
    fn current_session_keeps_only_the_pane_identity() {
        let env = child_env(parent(), Path::new("/run/agent-box-u"), CallerPane::Keep);
        assert_eq!(keys(&env), ["PATH", "TMUX", "TMUX_PANE", "HOME", "TMUX_TMPDIR"]);
    }

    #[test]
    fn tmux_tmpdir_is_always_the_socket_dir() {
        let env = child_env(Vec::new(), Path::new("/tmp/abt-1-1"), CallerPane::Strip);
        assert_eq!(env, [(OsString::from("TMUX_TMPDIR"), OsString::from("/tmp/abt-1-1"))]);
    }
}
