//! Per-user paths of 00-overview §5, resolved once from the environment.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use base::name::SessionName;

/// A configuration problem found before anything was touched (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{var} must be an absolute path (it is '{value}')")]
    NotAbsolute { var: &'static str, value: String },
    #[error("cannot tell a usable user name (USER='{user}', uid {uid})")]
    BadUser { user: String, uid: u32 },
}

/// Every file and directory the programs share, for one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    home: PathBuf,
    user: String,
    registry: PathBuf,
    state_dir: PathBuf,
    webhook_state_dir: PathBuf,
    limit_file: PathBuf,
    meminfo_file: PathBuf,
}

impl Paths {
    /// Resolves the paths from the process environment (HOME, USER, AGENT_BOX_*, LOCAL_WEBHOOK_STATE_DIR).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|key| std::env::var_os(key), passwd_name)
    }

    /// Same as [`Paths::from_env`] with the environment and the passwd lookup passed in (for tests).
    pub fn from_lookup(
        env: impl Fn(&str) -> Option<OsString>,
        passwd: impl FnOnce() -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let set = |key: &str| env(key).filter(|v| !v.is_empty());
        let home = absolute("HOME", Some(set("HOME").unwrap_or_default()))?;
        let user = resolve_user(set("USER"), passwd)?;
        let mut paths = Self::for_root(&home, &user);
        if let Some(registry) = absolute_if_set("AGENT_BOX_SESSIONS_FILE", set("AGENT_BOX_SESSIONS_FILE"))? {
            paths.registry = registry;
        }
        if let Some(dir) = absolute_if_set("LOCAL_WEBHOOK_STATE_DIR", set("LOCAL_WEBHOOK_STATE_DIR"))? {
            paths.webhook_state_dir = dir;
        }
        if let Some(file) = absolute_if_set("AGENT_BOX_SESSION_LIMIT_FILE", set("AGENT_BOX_SESSION_LIMIT_FILE"))? {
            paths.limit_file = file;
        }
        if let Some(file) = absolute_if_set("AGENT_BOX_MEMINFO_FILE", set("AGENT_BOX_MEMINFO_FILE"))? {
            paths.meminfo_file = file;
        }
        Ok(paths)
    }

    /// The default layout under `home` for `user`, with no environment overrides.
    pub fn for_root(home: &Path, user: &str) -> Self {
        Self {
            home: home.to_path_buf(),
            user: user.to_owned(),
            registry: home.join(".config/agent-box/sessions.json"),
            state_dir: home.join(".local/state/agent-box"),
            webhook_state_dir: home.join(".local/state/local-webhook"),
            limit_file: PathBuf::from("/etc/agent-box/session-limit"),
            meminfo_file: PathBuf::from("/proc/meminfo"),
        }
    }

    /// Replaces the registry path (tests and tools that address one file).
    pub fn with_registry(mut self, registry: PathBuf) -> Self {
        self.registry = registry;
        self
    }

    /// Replaces the limit and meminfo files (tests).
    pub fn with_capacity_files(mut self, limit_file: PathBuf, meminfo_file: PathBuf) -> Self {
        self.limit_file = limit_file;
        self.meminfo_file = meminfo_file;
        self
    }

    pub fn home(&self) -> &Path {
        &self.home
    }
    pub fn user(&self) -> &str {
        &self.user
    }
    pub fn registry(&self) -> &Path {
        &self.registry
    }
    pub fn lock_file(&self) -> PathBuf {
        lock_path_of(&self.registry)
    }
    /// The supervisor's single-instance lock beside the registry (F20, issue 11): held by the running supervisor
    /// for its whole life, holding its pid as text; `ls` tests it to tell whether a supervisor runs.
    pub fn supervisor_lock(&self) -> PathBuf {
        let mut name = self.registry.as_os_str().to_owned();
        name.push(".supervisor.lock");
        PathBuf::from(name)
    }
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }
    pub fn webhook_state_dir(&self) -> &Path {
        &self.webhook_state_dir
    }
    pub fn limit_file(&self) -> &Path {
        &self.limit_file
    }
    pub fn meminfo_file(&self) -> &Path {
        &self.meminfo_file
    }
    /// Directory of the supervisor's side files and launch scripts (F6, F19).
    pub fn side_dir(&self) -> PathBuf {
        self.state_dir.join("session")
    }
    pub fn side_file(&self, name: &SessionName) -> PathBuf {
        self.side_dir().join(format!("{name}.json"))
    }
    pub fn launch_file(&self, name: &SessionName) -> PathBuf {
        self.side_dir().join(format!("{name}.launch"))
    }
    /// Where claude's session-start hook records the live id of a launch (F7).
    pub fn live_id_dir(&self) -> PathBuf {
        self.state_dir.join("live-session-id")
    }
    pub fn lease_dir(&self) -> PathBuf {
        self.state_dir.join("lease")
    }
    /// The intake queue (issue 24, docs/intake.md): queued records, tombstones, admission intents, ended rows.
    pub fn queue_dir(&self) -> PathBuf {
        self.state_dir.join("queue")
    }
    pub fn hook_log(&self) -> PathBuf {
        self.state_dir.join("hook-sessions.jsonl")
    }
    pub fn refusal_record(&self) -> PathBuf {
        self.state_dir.join("webhook-spawn-refused.json")
    }
    /// The session-closed wake file (F21, issue 12): empty, 0600, created by the supervisor and watched by it with
    /// inotify; the tmux server's `session-closed` hook appends nothing to it, which wakes the loop at once.
    pub fn tmux_wake(&self) -> PathBuf {
        self.state_dir.join("tmux-wake")
    }
    /// The receiver's filter file of one of our sessions (F12).
    pub fn filter_file(&self, name: &SessionName) -> PathBuf {
        self.webhook_state_dir.join(format!("filter.{}-{name}.json", self.user))
    }
    /// The codex-wake pointer that `rm` prunes (F14).
    pub fn codex_wake(&self, name: &SessionName) -> PathBuf {
        self.state_dir.join("codex-wake").join(format!("{}-{name}", self.user))
    }
}

/// `<registry>.lock`, the flock(2) target of every writer.
pub fn lock_path_of(registry: &Path) -> PathBuf {
    let mut os = registry.as_os_str().to_owned();
    os.push(".lock");
    PathBuf::from(os)
}

fn absolute(var: &'static str, value: Option<OsString>) -> Result<PathBuf, ConfigError> {
    let value = value.unwrap_or_default();
    let path = PathBuf::from(&value);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(ConfigError::NotAbsolute { var, value: value.to_string_lossy().into_owned() })
    }
}

fn absolute_if_set(var: &'static str, value: Option<OsString>) -> Result<Option<PathBuf>, ConfigError> {
    value.map(|v| absolute(var, Some(v))).transpose()
}

fn resolve_user(from_env: Option<OsString>, passwd: impl FnOnce() -> Option<String>) -> Result<String, ConfigError> {
    let candidate = match from_env {
        Some(value) => value.to_string_lossy().into_owned(),
        None => passwd().unwrap_or_default(),
    };
    if base::name::is_usable_user(&candidate) {
        Ok(candidate)
    } else {
        Err(ConfigError::BadUser { user: candidate, uid: nix::unistd::getuid().as_raw() })
    }
}

/// The passwd name of the real uid, when there is one.
pub fn passwd_name() -> Option<String> {
    nix::unistd::User::from_uid(nix::unistd::getuid()).ok().flatten().map(|u| u.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
        let map: HashMap<String, OsString> = pairs.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn defaults_follow_home_and_user() {
        let paths = Paths::from_lookup(env_of(&[("HOME", "/home/agent"), ("USER", "agent")]), || None).unwrap();
        assert_eq!(paths.registry(), Path::new("/home/agent/.config/agent-box/sessions.json"));
        assert_eq!(paths.lock_file(), PathBuf::from("/home/agent/.config/agent-box/sessions.json.lock"));
        let name = SessionName::parse("main").unwrap();
        assert_eq!(paths.side_file(&name), PathBuf::from("/home/agent/.local/state/agent-box/session/main.json"));
        assert_eq!(
            paths.filter_file(&name),
            PathBuf::from("/home/agent/.local/state/local-webhook/filter.agent-main.json")
        );
        assert_eq!(paths.codex_wake(&name), PathBuf::from("/home/agent/.local/state/agent-box/codex-wake/agent-main"));
        let state = Path::new("/home/agent/.local/state/agent-box");
        assert_eq!(
            paths.supervisor_lock(),
            PathBuf::from("/home/agent/.config/agent-box/sessions.json.supervisor.lock")
        );
        assert_eq!(paths.launch_file(&name), state.join("session/main.launch"));
        assert_eq!(paths.live_id_dir(), state.join("live-session-id"));
        assert_eq!(paths.lease_dir(), state.join("lease"));
        assert_eq!(paths.hook_log(), state.join("hook-sessions.jsonl"));
        assert_eq!(paths.refusal_record(), state.join("webhook-spawn-refused.json"));
        assert_eq!(paths.tmux_wake(), state.join("tmux-wake"));
    }

    /// The passwd name of the real uid, checked against /etc/passwd read by hand.
    #[test]
    fn the_passwd_name_is_the_real_uid_s_entry() {
        let uid = nix::unistd::getuid().as_raw().to_string();
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        let expected = passwd
            .lines()
            .map(|line| line.split(':').collect::<Vec<_>>())
            .find_map(|fields| (fields.get(2) == Some(&uid.as_str())).then(|| fields[0].to_owned()));
        let Some(expected) = expected else {
            println!("SKIP: uid {uid} has no line in /etc/passwd (a directory service); nothing to compare with");
            return;
        };
        assert_eq!(passwd_name(), Some(expected));
    }

    #[test]
    fn relative_or_missing_home_is_a_config_error() {
        let err = Paths::from_lookup(env_of(&[("HOME", "rel"), ("USER", "a")]), || None).unwrap_err();
        assert_eq!(err.to_string(), "HOME must be an absolute path (it is 'rel')");
        assert!(Paths::from_lookup(env_of(&[("USER", "a")]), || None).is_err());
    }

    #[test]
    fn relative_override_is_refused_and_empty_means_default() {
        let env = env_of(&[("HOME", "/h"), ("USER", "a"), ("AGENT_BOX_SESSIONS_FILE", "x.json")]);
        assert!(matches!(Paths::from_lookup(env, || None), Err(ConfigError::NotAbsolute { .. })));
        let env = env_of(&[("HOME", "/h"), ("USER", "a"), ("AGENT_BOX_SESSIONS_FILE", "")]);
        assert_eq!(
            Paths::from_lookup(env, || None).unwrap().registry(),
            Path::new("/h/.config/agent-box/sessions.json")
        );
    }

    #[test]
    fn user_falls_back_to_passwd_and_must_be_file_safe() {
        let paths = Paths::from_lookup(env_of(&[("HOME", "/h")]), || Some("pw".into())).unwrap();
        assert_eq!(paths.user(), "pw");
        for bad in ["..", ".", "a/b", "a b", ""] {
            let env = env_of(&[("HOME", "/h"), ("USER", bad)]);
            assert!(Paths::from_lookup(env, || None).is_err(), "{bad:?}");
        }
    }
}
