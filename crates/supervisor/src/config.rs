//! The supervisor's configuration, resolved once from the environment at start-up (30-supervisor §1).

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use registry::{ConfigError, Paths};
use tmux::TmuxConfig;

/// The supervisor never waits longer than this for the registry lock (SUP-7.2).
pub const MAX_LOCK_WAIT: Duration = Duration::from_secs(1);

/// When the restart notice is sent to a resumed session (§12.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoticePolicy {
    Never,
    Always,
    Auto,
}

impl NoticePolicy {
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("never" | "0" | "false") => Self::Never,
            Some("always" | "1" | "true") => Self::Always,
            _ => Self::Auto,
        }
    }
}

/// Everything the loop needs to know about its environment.
#[derive(Debug, Clone)]
pub struct Config {
    pub paths: Paths,
    pub seed: PathBuf,
    /// `name=/path` pairs of `AGENT_BOX_AGENT_BINS`, in their order (a path is used only if absolute and executable).
    pub agent_bins: Vec<(String, PathBuf)>,
    pub mark_stopped: PathBuf,
    pub env_exec: Option<PathBuf>,
    /// `AGENT_BOX_HOST_LABEL`, else the kernel hostname, else none.
    pub host_label: Option<String>,
    pub claude_settings: Option<String>,
    /// `AGENT_BOX_WEBHOOK_REPO` is non-empty: panes get the webhook channel and environment.
    pub webhook: bool,
    pub restart_notice: NoticePolicy,
    pub codex_full_access: bool,
    pub codex_home: PathBuf,
    /// `$SHELL` when absolute (a post-mortem shell candidate).
    pub login_shell: Option<PathBuf>,
    pub lock_wait: Duration,
    /// `REGISTRY_LOCK_WAIT` when it was not a usable number.
    pub ignored_lock_wait: Option<String>,
    pub tmux: TmuxConfig,
}

/// A start-up configuration error (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ConfigProblem {
    #[error(transparent)]
    Paths(#[from] ConfigError),
    #[error("{0} is not set")]
    Missing(&'static str),
    #[error("{var} must be an absolute path (it is '{value}')")]
    NotAbsolute { var: &'static str, value: String },
    #[error("AGENT_BOX_MARK_STOPPED '{0}' is not an executable file")]
    EpilogueNotExecutable(String),
    #[error("{0}")]
    Tmux(String),
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigProblem> {
        Self::from_lookup(|k| std::env::var_os(k))
    }

    /// Reads an environment given as a lookup (tests).
    pub fn from_lookup(env: impl Fn(&str) -> Option<OsString>) -> Result<Self, ConfigProblem> {
        let set = |k: &str| env(k).filter(|v| !v.is_empty());
        let text = |k: &str| set(k).map(|v| v.to_string_lossy().into_owned());
        let paths = Paths::from_lookup(&env, registry::paths::passwd_name)?;
        let seed = required_absolute("AGENT_BOX_SESSIONS_SEED", set("AGENT_BOX_SESSIONS_SEED"))?;
        let bins = text("AGENT_BOX_AGENT_BINS").ok_or(ConfigProblem::Missing("AGENT_BOX_AGENT_BINS"))?;
        let mark_stopped = required_absolute("AGENT_BOX_MARK_STOPPED", set("AGENT_BOX_MARK_STOPPED"))?;
        if !is_executable_file(&mark_stopped) {
            return Err(ConfigProblem::EpilogueNotExecutable(mark_stopped.display().to_string()));
        }
        let env_exec = optional_absolute("AGENT_BOX_ENV_EXEC", set("AGENT_BOX_ENV_EXEC"))?;
        let codex_home =
            optional_absolute("CODEX_HOME", set("CODEX_HOME"))?.unwrap_or_else(|| paths.home().join(".codex"));
        let wait = registry::lock::parse_lock_wait(text("REGISTRY_LOCK_WAIT").as_deref());
        let tmux = TmuxConfig::from_lookup(&env, paths.user()).map_err(|e| ConfigProblem::Tmux(e.to_string()))?;
        Ok(Self {
            agent_bins: parse_agent_bins(&bins),
            mark_stopped,
            env_exec,
            host_label: text("AGENT_BOX_HOST_LABEL").or_else(kernel_hostname),
            claude_settings: text("AGENT_BOX_CLAUDE_SETTINGS"),
            webhook: set("AGENT_BOX_WEBHOOK_REPO").is_some(),
            restart_notice: NoticePolicy::parse(text("AGENT_BOX_RESTART_NOTICE").as_deref()),
            codex_full_access: set("AGENT_BOX_CODEX_FULL_ACCESS").is_some(),
            codex_home,
            login_shell: set("SHELL").map(PathBuf::from).filter(|p| p.is_absolute()),
            lock_wait: wait.wait.min(MAX_LOCK_WAIT),
            ignored_lock_wait: wait.ignored,
            tmux,
            seed,
            paths,
        })
    }

    /// The `AGENT_BOX_AGENT_BINS` path of a harness, when it is absolute.
    pub fn agent_bin(&self, agent: &str) -> Option<&Path> {
        self.agent_bins.iter().find(|(name, _)| name == agent).map(|(_, path)| path.as_path())
    }
}

/// `name=/abs/path` words; words without `=` are ignored.
pub fn parse_agent_bins(text: &str) -> Vec<(String, PathBuf)> {
    text.split_whitespace()
        .filter_map(|word| word.split_once('='))
        .filter(|(name, path)| !name.is_empty() && !path.is_empty())
        .map(|(name, path)| (name.to_owned(), PathBuf::from(path)))
        .collect()
}

pub fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn required_absolute(var: &'static str, value: Option<OsString>) -> Result<PathBuf, ConfigProblem> {
    optional_absolute(var, value)?.ok_or(ConfigProblem::Missing(var))
}

fn optional_absolute(var: &'static str, value: Option<OsString>) -> Result<Option<PathBuf>, ConfigProblem> {
    match value.map(PathBuf::from) {
        Some(path) if !path.is_absolute() => {
            Err(ConfigProblem::NotAbsolute { var, value: path.to_string_lossy().into_owned() })
        }
        other => Ok(other),
    }
}

fn kernel_hostname() -> Option<String> {
    nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
        let map: HashMap<String, OsString> = pairs.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        move |k| map.get(k).cloned()
    }

    fn base() -> Vec<(&'static str, &'static str)> {
        vec![
            ("HOME", "/home/agent"),
            ("USER", "agent"),
            ("AGENT_BOX_SESSIONS_SEED", "/etc/seed.json"),
            ("AGENT_BOX_AGENT_BINS", "claude=/opt/claude shell=/bin/sh bogus rel=bin/x"),
            ("AGENT_BOX_MARK_STOPPED", "/bin/true"),
            ("AGENT_BOX_TMUX_TMPDIR", "/tmp"),
        ]
    }

    #[test]
    fn resolves_a_complete_environment() {
        let mut env = base();
        env.push(("REGISTRY_LOCK_WAIT", "10"));
        env.push(("AGENT_BOX_RESTART_NOTICE", "never"));
        let config = Config::from_lookup(lookup(&env)).unwrap();
        assert_eq!(config.lock_wait, MAX_LOCK_WAIT, "capped at 1 s");
        assert_eq!(config.agent_bin("claude"), Some(Path::new("/opt/claude")));
        assert_eq!(config.agent_bins.len(), 3, "words without '=' are ignored");
        assert_eq!(config.restart_notice, NoticePolicy::Never);
        assert_eq!(config.codex_home, PathBuf::from("/home/agent/.codex"));
        assert!(!config.webhook);
    }

    #[test]
    fn required_and_absolute_variables() {
        for missing in ["HOME", "AGENT_BOX_SESSIONS_SEED", "AGENT_BOX_AGENT_BINS", "AGENT_BOX_MARK_STOPPED"] {
            let env: Vec<_> = base().into_iter().filter(|(k, _)| *k != missing).collect();
            assert!(Config::from_lookup(lookup(&env)).is_err(), "{missing}");
        }
        let mut env = base();
        env.retain(|(k, _)| *k != "AGENT_BOX_MARK_STOPPED");
        env.push(("AGENT_BOX_MARK_STOPPED", "/etc/passwd"));
        assert!(matches!(Config::from_lookup(lookup(&env)), Err(ConfigProblem::EpilogueNotExecutable(_))));
        let mut env = base();
        env.push(("AGENT_BOX_ENV_EXEC", "relative"));
        assert!(matches!(Config::from_lookup(lookup(&env)), Err(ConfigProblem::NotAbsolute { .. })));
    }

    #[test]
    fn notice_policy_words() {
        assert_eq!(NoticePolicy::parse(Some("1")), NoticePolicy::Always);
        assert_eq!(NoticePolicy::parse(Some("false")), NoticePolicy::Never);
        assert_eq!(NoticePolicy::parse(Some("whatever")), NoticePolicy::Auto);
        assert_eq!(NoticePolicy::parse(None), NoticePolicy::Auto);
    }
}
