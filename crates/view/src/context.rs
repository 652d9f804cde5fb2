//! What every verb of both front ends needs, resolved from the environment before anything else (50-session-cli
//! §3.4, 60-webhook-spawn §3.1): per-user paths, the lock bound, the tmux adapter, and the few variables verbs read
//! themselves.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::time::Duration;

use registry::capacity::{Mode, admit, read_limit};
use registry::{CapacityError, ConfigError, Paths, Usage};
use serde_json::{Map, Value};
use tmux::{SessionId, Tmux, TmuxApi, TmuxConfig};

/// Everything a verb reads from outside its arguments.
pub struct Context {
    pub paths: Paths,
    pub lock_wait: Duration,
    /// `REGISTRY_LOCK_WAIT` when it had to be ignored (warned once by writers).
    pub ignored_lock_wait: Option<String>,
    pub tmux: Box<dyn TmuxApi>,
    /// How `tmux` was configured (socket, directory, binary), for `attach`, which hands the terminal to tmux.
    pub tmux_config: TmuxConfig,
    /// `AGENT_BOX_AGENTS`, when set and not blank.
    pub agents: Option<String>,
    /// `AGENT_BOX_DEFAULT_AGENT`, when set and not blank.
    pub default_agent: Option<String>,
    /// `$TMUX` and `$TMUX_PANE` for `peers` self-exclusion.
    pub tmux_env: Option<String>,
    pub tmux_pane: Option<String>,
    pub webhook_session: Option<String>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("paths", &self.paths).finish_non_exhaustive()
    }
}

/// A configuration problem (exit 2): the line to print after the prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem(pub String);

/// Path-valued variables that must be absolute when set (OV-5.2).
const PATH_VARIABLES: [&str; 7] = [
    "AGENT_BOX_SESSIONS_FILE",
    "LOCAL_WEBHOOK_STATE_DIR",
    "AGENT_BOX_SESSION_LIMIT_FILE",
    "AGENT_BOX_MEMINFO_FILE",
    "AGENT_BOX_TMUX_BIN",
    "AGENT_BOX_TMUX_TMPDIR",
    "AGENT_BOX_TMUX_CONF",
];

impl Context {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigProblem> {
        Self::from_lookup(|k| std::env::var_os(k))
    }

    /// Reads an environment given as a lookup.
    pub fn from_lookup(env: impl Fn(&str) -> Option<OsString>) -> Result<Self, ConfigProblem> {
        let set = |k: &str| env(k).filter(|v| !v.is_empty());
        let text = |k: &str| set(k).map(|v| v.to_string_lossy().into_owned()).filter(|v| !v.trim().is_empty());
        for var in PATH_VARIABLES {
            if let Some(value) = set(var).filter(|v| !std::path::Path::new(v).is_absolute()) {
                return Err(ConfigProblem(format!(
                    "{var} must be an absolute path (it is '{}')",
                    value.to_string_lossy()
                )));
            }
        }
        let paths = Paths::from_lookup(&env, registry::paths::passwd_name).map_err(|e| match e {
            ConfigError::NotAbsolute { .. } => ConfigProblem(e.to_string()),
            ConfigError::BadUser { .. } => ConfigProblem(e.to_string()),
        })?;
        let tmux = TmuxConfig::from_lookup(&env, paths.user()).map_err(|e| ConfigProblem(e.to_string()))?;
        let wait = registry::lock::parse_lock_wait(text("REGISTRY_LOCK_WAIT").as_deref());
        Ok(Self {
            lock_wait: wait.wait,
            ignored_lock_wait: wait.ignored,
            tmux: Box::new(Tmux::new(tmux.clone())),
            tmux_config: tmux,
            agents: text("AGENT_BOX_AGENTS"),
            default_agent: text("AGENT_BOX_DEFAULT_AGENT"),
            tmux_env: text("TMUX"),
            tmux_pane: text("TMUX_PANE"),
            webhook_session: text("LOCAL_WEBHOOK_SESSION"),
            paths,
        })
    }

    /// The same context over another tmux (tests put a fake here).
    pub fn with_tmux(mut self, tmux: Box<dyn TmuxApi>) -> Self {
        self.tmux = tmux;
        self
    }

    /// The live set (§3.6): `Ok` (no server = nothing live) or the "unavailable" reason.
    pub fn live_set(&self) -> Result<Vec<String>, String> {
        self.tmux.list_sessions().map_err(|e| e.reason())
    }

    /// Capacity in check mode over `sessions` with the live set probed now (10-registry §11).
    pub fn check_capacity(&self, sessions: &Map<String, Value>, targets: &[&str]) -> Result<Usage, CapacityError> {
        let live = self.live_set().map(|names| names.into_iter().collect());
        self.check_capacity_over(sessions, targets, live)
    }

    /// [`Context::check_capacity`] over a live set the caller probed (`Err`: the "unavailable" reason), so one tmux
    /// call serves the check and what the caller needs of the same instant.
    pub fn check_capacity_over(
        &self,
        sessions: &Map<String, Value>,
        targets: &[&str],
        live: Result<BTreeSet<String>, String>,
    ) -> Result<Usage, CapacityError> {
        let limit = read_limit(self.paths.limit_file(), self.paths.meminfo_file())?;
        let live = live.map_err(CapacityError::Probe)?;
        admit(sessions, &live, limit, targets, Mode::Check)
    }

    /// The live sessions with their identities (issue 25), or the "unavailable" reason: what a verb captures under
    /// the registry lock, so that it ends afterwards only a pane that was there then ([`Context::kill_pane`]).
    pub fn live_panes(&self) -> Result<LivePanes, String> {
        let ids = self.tmux.session_ids().map_err(|e| e.reason())?;
        Ok(LivePanes(ids.into_iter().collect()))
    }
}

/// The live sessions of one instant, by name, each with its identity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LivePanes(BTreeMap<String, SessionId>);

impl LivePanes {
    /// The live set (the names).
    pub fn names(&self) -> BTreeSet<String> {
        self.0.keys().cloned().collect()
    }

    /// The session of `name`, if one was live.
    pub fn get(&self, name: &str) -> Option<SessionId> {
        self.0.get(name).copied()
    }
}

/// What a kill achieved (§3.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillResult {
    Killed,
    AlreadyGone,
    Failed(String),
}

impl Context {
    pub fn kill(&self, name: &base::SessionName) -> KillResult {
        kill_result(self.tmux.kill_session(name))
    }

    /// Ends the one session `id` names (found by [`Context::live_panes`]), never a later one of the same name.
    pub fn kill_pane(&self, id: &SessionId) -> KillResult {
        kill_result(self.tmux.kill_session_id(id))
    }
}

fn kill_result(killed: Result<tmux::Killed, tmux::TmuxError>) -> KillResult {
    match killed {
        Ok(tmux::Killed::Yes) => KillResult::Killed,
        Ok(tmux::Killed::AlreadyGone) => KillResult::AlreadyGone,
        Err(err) => KillResult::Failed(err.reason()),
    }
}
