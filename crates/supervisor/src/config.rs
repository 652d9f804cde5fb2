//! The supervisor's configuration, resolved once from the environment at start-up (30-supervisor §1).
//!
//! Defaults chosen where the specification required a variable (issue 11):
//! - **Installed mode.** When the directory of the running binary also holds an `agent-box-mark-stopped` that is
//!   baked for this user's registry and state directory (its `--print-paths` says so), the programs were installed
//!   by `cargo xtask install`. Then `AGENT_BOX_MARK_STOPPED` defaults to that epilogue (its stable path),
//!   `AGENT_BOX_SESSIONS_SEED` to no seed (a missing registry becomes the empty document), and
//!   `AGENT_BOX_AGENT_BINS` to none, with every harness resolved from `PATH` when it is not in the list.
//! - Outside installed mode (the NixOS unit, a bare `cargo build`) the three stay required, exactly as before, but
//!   every missing or bad variable is reported at once, in one line that says how to get them.
//! - Only a baked epilogue that prints this user's paths counts: an unbaked one (what `cargo build` puts next to
//!   the supervisor) would record nothing, and one baked for another registry would record in the wrong place.
//!
//! Issue 14 (75-upgrades): `AGENT_BOX_TMUX_SERVER=external` says that the tmux server is its own unit's, so the
//! loop only lists it and every tmux client carries `-N`; and the unit variables a pane needs are taken from this
//! process's environment once, so that every `new-session` can pass them with `-e` (see [`unit_env`]).

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use registry::{ConfigError, Paths};
use tmux::TmuxConfig;

/// The supervisor never waits longer than this for the registry lock (SUP-7.2).
pub const MAX_LOCK_WAIT: Duration = Duration::from_secs(1);

/// The timer: the next tick is due this long after the previous one ended (SUP-3.1).
pub const TICK_PERIOD: Duration = Duration::from_secs(2);

/// `AGENT_BOX_TICK_SECS`, a test and bench knob (issue 12): the timer's period, so a test can put the timer out of
/// the way (60 s and more) and prove that a wake, not the timer, ran a tick. Neither the NixOS module nor the
/// install sets it. Accepted: a decimal number of seconds (fraction allowed) from 0.05 to 86400.
pub const TICK_SECS_ENV: &str = "AGENT_BOX_TICK_SECS";
const TICK_BOUNDS: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(86_400));

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
    /// `AGENT_BOX_SESSIONS_SEED`; `None` only in installed mode (no seed: the empty document).
    pub seed: Option<PathBuf>,
    /// `name=/path` pairs of `AGENT_BOX_AGENT_BINS`, in their order (a path is used only if absolute and executable).
    pub agent_bins: Vec<(String, PathBuf)>,
    /// Installed mode: `PATH`, where harnesses missing from `agent_bins` are looked up last (§12.1 addition).
    pub harness_path: Option<OsString>,
    pub mark_stopped: PathBuf,
    /// The programs were installed by `cargo xtask install` (see the module documentation).
    pub installed: bool,
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
    /// The timer's period: [`TICK_PERIOD`], or `AGENT_BOX_TICK_SECS` (tests and bench only).
    pub tick_period: Duration,
    /// `AGENT_BOX_TICK_SECS` when it was not a usable number of seconds.
    pub ignored_tick_secs: Option<String>,
    /// `AGENT_BOX_TMUX_SERVER=external` (UP-3.1): the server is another unit's; T1 lists it and never starts one,
    /// and `tmux` (below) carries `-N` so that no client can start one either.
    pub external_server: bool,
    /// UP-3.2: the unit variables every `new-session` passes with `-e`, from this process's environment.
    pub unit_env: Vec<(String, String)>,
    /// Issue 21: `AGENT_BOX_ON_OUTCOME` and its bound; `None` = no notification.
    pub on_outcome: Option<crate::notify::OnOutcome>,
    /// Issue 24: the intake queue's bounds (`AGENT_BOX_QUEUE_MAX`, `AGENT_BOX_QUEUE_MAX_AGE`).
    pub queue_bounds: intake::Bounds,
    /// Issue 26: the claims database shared with other boxes (`AGENT_BOX_CLAIMS`); `None` = one box.
    pub claims: Option<claims::ClaimsConfig>,
    pub tmux: TmuxConfig,
}

/// One thing wrong with the start-up configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
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
    #[error("AGENT_BOX_TMUX_SERVER must be 'external' or unset (it is '{0}')")]
    TmuxServer(String),
    #[error("AGENT_BOX_ON_OUTCOME '{0}' is not an executable file")]
    NotifierNotExecutable(String),
    #[error("AGENT_BOX_ON_OUTCOME_TIMEOUT must be a whole number of seconds from 1 to 3600 (it is '{0}')")]
    NotifierTimeout(String),
    #[error(transparent)]
    QueueBound(#[from] intake::bounds::BoundProblem),
    #[error(transparent)]
    Claims(#[from] claims::ConfigError),
}

/// Every problem of the start-up configuration, reported together in one line (exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem(pub Vec<Problem>);

/// How to get the required variables, appended when one is missing.
pub const HOW_TO_CONFIGURE: &str = "run `cargo xtask install` in a checkout of agent-box (it installs the programs with defaults for all three, an environment file and a systemd user unit) or enable the NixOS module services.agent-box; agent-box-supervisor --help lists every variable";

impl std::fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let missing: Vec<&str> =
            self.0.iter().filter_map(|p| if let Problem::Missing(var) = p { Some(*var) } else { None }).collect();
        let mut parts: Vec<String> = Vec::new();
        match missing.as_slice() {
            [] => {}
            [one] => parts.push(format!("{one} is not set")),
            [init @ .., last] => parts.push(format!("{} and {last} are not set", init.join(", "))),
        }
        parts.extend(self.0.iter().filter(|p| !matches!(p, Problem::Missing(_))).map(ToString::to_string));
        write!(f, "cannot start: {}", parts.join("; "))?;
        if !missing.is_empty() {
            write!(f, "; {HOW_TO_CONFIGURE}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigProblem {}

impl Config {
    /// Reads the process environment; installed mode is detected next to the running binary.
    pub fn from_env() -> Result<Self, ConfigProblem> {
        let mut config = Self::from_lookup_with(|k| std::env::var_os(k), installed_epilogue)?;
        config.unit_env = unit_env(std::env::vars_os());
        Ok(config)
    }

    /// Reads an environment given as a lookup, outside installed mode (tests).
    pub fn from_lookup(env: impl Fn(&str) -> Option<OsString>) -> Result<Self, ConfigProblem> {
        Self::from_lookup_with(env, |_| None)
    }

    /// Reads an environment given as a lookup; `installed` finds the installed epilogue for these paths, if any.
    pub fn from_lookup_with(
        env: impl Fn(&str) -> Option<OsString>,
        installed: impl FnOnce(&Paths) -> Option<PathBuf>,
    ) -> Result<Self, ConfigProblem> {
        let set = |k: &str| env(k).filter(|v| !v.is_empty());
        let text = |k: &str| set(k).map(|v| v.to_string_lossy().into_owned());
        let mut problems = Vec::new();
        let paths = Paths::from_lookup(&env, registry::paths::passwd_name).map_err(|e| problems.push(e.into())).ok();
        let installed_epilogue = paths.as_ref().and_then(installed);
        let is_installed = installed_epilogue.is_some();
        let seed = absolute("AGENT_BOX_SESSIONS_SEED", set("AGENT_BOX_SESSIONS_SEED"), !is_installed, &mut problems);
        let bins = text("AGENT_BOX_AGENT_BINS");
        if bins.is_none() && !is_installed {
            problems.push(Problem::Missing("AGENT_BOX_AGENT_BINS"));
        }
        let mark_stopped = absolute("AGENT_BOX_MARK_STOPPED", set("AGENT_BOX_MARK_STOPPED"), false, &mut problems)
            .or(installed_epilogue);
        match &mark_stopped {
            Some(path) if !is_executable_file(path) => {
                problems.push(Problem::EpilogueNotExecutable(path.display().to_string()));
            }
            Some(_) => {}
            None => problems.push(Problem::Missing("AGENT_BOX_MARK_STOPPED")),
        }
        let env_exec = absolute("AGENT_BOX_ENV_EXEC", set("AGENT_BOX_ENV_EXEC"), false, &mut problems);
        let codex_home = absolute("CODEX_HOME", set("CODEX_HOME"), false, &mut problems);
        let on_outcome = crate::notify::OnOutcome::from_lookup(&set, &mut problems);
        let (queue_bounds, bound_problems) = intake::Bounds::from_lookup(&env);
        problems.extend(bound_problems.into_iter().map(Problem::from));
        let external_server = match text(SERVER_VAR).as_deref() {
            None => false,
            Some(EXTERNAL) => true,
            Some(other) => {
                problems.push(Problem::TmuxServer(other.to_owned()));
                false
            }
        };
        let tmux = paths.as_ref().and_then(|paths| {
            TmuxConfig::from_lookup(&env, paths.user()).map_err(|e| problems.push(Problem::Tmux(e.to_string()))).ok()
        });
        let tmux = tmux.map(|tmux| if external_server { tmux.never_starting_a_server() } else { tmux });
        let (Some(paths), Some(mark_stopped), Some(tmux), true) = (paths, mark_stopped, tmux, problems.is_empty())
        else {
            return Err(ConfigProblem(problems));
        };
        let wait = registry::lock::parse_lock_wait(text("REGISTRY_LOCK_WAIT").as_deref());
        let (tick_period, ignored_tick_secs) = parse_tick_secs(text(TICK_SECS_ENV).as_deref());
        let host_label = text("AGENT_BOX_HOST_LABEL").or_else(kernel_hostname);
        let claims = claims::ClaimsConfig::from_lookup(&env, host_label.as_deref())
            .map_err(|e| ConfigProblem(vec![Problem::Claims(e)]))?;
        Ok(Self {
            agent_bins: parse_agent_bins(bins.as_deref().unwrap_or("")),
            harness_path: if is_installed { set("PATH") } else { None },
            installed: is_installed,
            codex_home: codex_home.unwrap_or_else(|| paths.home().join(".codex")),
            mark_stopped,
            env_exec,
            host_label,
            claude_settings: text("AGENT_BOX_CLAUDE_SETTINGS"),
            webhook: set("AGENT_BOX_WEBHOOK_REPO").is_some(),
            restart_notice: NoticePolicy::parse(text("AGENT_BOX_RESTART_NOTICE").as_deref()),
            codex_full_access: set("AGENT_BOX_CODEX_FULL_ACCESS").is_some(),
            login_shell: set("SHELL").map(PathBuf::from).filter(|p| p.is_absolute()),
            lock_wait: wait.wait.min(MAX_LOCK_WAIT),
            ignored_lock_wait: wait.ignored,
            tick_period,
            ignored_tick_secs,
            external_server,
            unit_env: Vec::new(),
            on_outcome,
            queue_bounds,
            claims,
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

/// The timer's period from `AGENT_BOX_TICK_SECS`: unset means [`TICK_PERIOD`]; a value that is not a decimal number
/// of seconds within the bounds is ignored (returned, for one warning line) and the default used.
pub fn parse_tick_secs(value: Option<&str>) -> (Duration, Option<String>) {
    let Some(text) = value.filter(|t| !t.is_empty()) else { return (TICK_PERIOD, None) };
    let parsed = registry::lock::parse_lock_wait(Some(text));
    match parsed.ignored {
        None if (TICK_BOUNDS.0..=TICK_BOUNDS.1).contains(&parsed.wait) => (parsed.wait, None),
        _ => (TICK_PERIOD, Some(text.to_owned())),
    }
}

/// The variable that names who runs the tmux server (UP-3.1), and its one value.
pub const SERVER_VAR: &str = "AGENT_BOX_TMUX_SERVER";
pub const EXTERNAL: &str = "external";

/// Names of `AGENT_BOX_*` never carried into a pane: the inherited lock descriptor (RG-7.6), a pane's own identity
/// (§12.7: a supervisor started by hand inside a pane must not hand that pane's id to every other), and the
/// supervisor's own mode.
const NOT_CARRIED: [&str; 4] =
    [registry::lock::INHERITED_LOCK_ENV, "AGENT_BOX_SESSION_ID", "AGENT_BOX_PROFILE", SERVER_VAR];

/// UP-3.2: the variables of this process's environment that every `new-session` passes with `-e`, sorted by name:
/// `PATH` (harnesses, the user's wrappers) and every `AGENT_BOX_*` but [`NOT_CARRIED`] (what `agent-box-session` and
/// `agent-box-webhook-spawn` in a pane read, the epilogue's path, and the operator's own `AGENT_BOX_*` additions).
/// A tmux server keeps the environment it started with, and the server now outlives the supervisor, so without
/// these a pane started after an upgrade would see the values of the install that started the server. A name or
/// value that is not UTF-8 is left out (tmux's `-e` is text); an empty value is kept (it may mean "off").
pub fn unit_env(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<(String, String)> {
    let mut carried: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(key, _)| is_carried(key))
        .filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?)))
        .collect();
    carried.sort();
    carried
}

fn is_carried(key: &OsStr) -> bool {
    let Some(key) = key.to_str() else { return false };
    key == "PATH" || (key.starts_with("AGENT_BOX_") && !NOT_CARRIED.contains(&key))
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

/// A path-valued variable (OV-5.2): a relative value, or a missing one when `required`, is noted in `problems`.
pub(crate) fn absolute(
    var: &'static str,
    value: Option<OsString>,
    required: bool,
    problems: &mut Vec<Problem>,
) -> Option<PathBuf> {
    match value.map(PathBuf::from) {
        Some(path) if !path.is_absolute() => {
            problems.push(Problem::NotAbsolute { var, value: path.to_string_lossy().into_owned() });
            None
        }
        None if required => {
            problems.push(Problem::Missing(var));
            None
        }
        other => other,
    }
}

/// The installed epilogue beside the running binary, when it is baked for `paths` (installed mode).
pub fn installed_epilogue(paths: &Paths) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let candidate = exe.parent()?.join("agent-box-mark-stopped");
    baked_for(&candidate, paths).then_some(candidate)
}

/// True when `epilogue` is an executable whose `--print-paths` names this registry and state directory (MS-3.5).
pub fn baked_for(epilogue: &Path, paths: &Paths) -> bool {
    if !is_executable_file(epilogue) {
        return false;
    }
    let Ok(out) = std::process::Command::new(epilogue)
        .arg("--print-paths")
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    lines.next() == Some(&format!("sessions-file {}", paths.registry().display()))
        && lines.nth(1) == Some(&format!("state-dir {}", paths.state_dir().display()))
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
        let err = Config::from_lookup(lookup(&env)).unwrap_err();
        assert_eq!(err.0, [Problem::EpilogueNotExecutable("/etc/passwd".into())]);
        let mut env = base();
        env.push(("AGENT_BOX_ENV_EXEC", "relative"));
        assert!(matches!(Config::from_lookup(lookup(&env)).unwrap_err().0[..], [Problem::NotAbsolute { .. }]));
    }

    #[test]
    fn every_missing_variable_is_reported_in_one_line_with_the_way_to_get_them() {
        let env: Vec<_> =
            base().into_iter().filter(|(k, _)| !k.starts_with("AGENT_BOX_") || *k == "AGENT_BOX_TMUX_TMPDIR").collect();
        let mut env = env;
        env.push(("AGENT_BOX_ENV_EXEC", "relative"));
        let text = Config::from_lookup(lookup(&env)).unwrap_err().to_string();
        assert!(
            text.starts_with(
                "cannot start: AGENT_BOX_SESSIONS_SEED, AGENT_BOX_AGENT_BINS and AGENT_BOX_MARK_STOPPED are not set; \
                 AGENT_BOX_ENV_EXEC must be an absolute path (it is 'relative'); run `cargo xtask install`"
            ),
            "{text}"
        );
        assert!(text.contains("NixOS module") && !text.contains('\n'), "{text}");
    }

    #[test]
    fn installed_mode_defaults_the_seed_the_harness_list_and_the_epilogue() {
        let env = [
            ("HOME", "/home/agent"),
            ("USER", "agent"),
            ("AGENT_BOX_TMUX_TMPDIR", "/tmp"),
            ("PATH", "/opt/bin:/usr/bin"),
        ];
        let config = Config::from_lookup_with(lookup(&env), |_| Some(PathBuf::from("/bin/true"))).unwrap();
        assert!(config.installed);
        assert_eq!(config.seed, None);
        assert!(config.agent_bins.is_empty());
        assert_eq!(config.mark_stopped, PathBuf::from("/bin/true"));
        assert_eq!(config.harness_path, Some(OsString::from("/opt/bin:/usr/bin")));
        let explicit = [
            ("HOME", "/home/agent"),
            ("USER", "agent"),
            ("AGENT_BOX_TMUX_TMPDIR", "/tmp"),
            ("AGENT_BOX_MARK_STOPPED", "/bin/sh"),
        ];
        let config = Config::from_lookup_with(lookup(&explicit), |_| Some(PathBuf::from("/bin/true"))).unwrap();
        assert_eq!(config.mark_stopped, PathBuf::from("/bin/sh"), "an explicit epilogue wins");
        let outside = Config::from_lookup(lookup(&env)).unwrap_err();
        assert_eq!(outside.0.len(), 3, "{outside}");
    }

    #[test]
    fn only_an_epilogue_baked_for_these_paths_counts() {
        let paths = Paths::for_root(Path::new("/home/agent"), "agent");
        assert!(!baked_for(Path::new("/bin/true"), &paths), "prints nothing");
        assert!(!baked_for(Path::new("/nonexistent/agent-box-mark-stopped"), &paths));
    }

    #[test]
    fn tick_period_knob() {
        assert_eq!(parse_tick_secs(None), (TICK_PERIOD, None));
        assert_eq!(parse_tick_secs(Some("60")), (Duration::from_secs(60), None));
        assert_eq!(parse_tick_secs(Some("0.25")), (Duration::from_millis(250), None));
        for bad in ["0", "0.01", "x", "-1", "100000", "1e3"] {
            assert_eq!(parse_tick_secs(Some(bad)), (TICK_PERIOD, Some(bad.to_owned())), "{bad}");
        }
        let mut env = base();
        env.push((TICK_SECS_ENV, "600"));
        assert_eq!(Config::from_lookup(lookup(&env)).unwrap().tick_period, Duration::from_secs(600));
    }

    #[test]
    fn an_external_server_is_listed_never_started() {
        let mut env = base();
        assert!(!Config::from_lookup(lookup(&env)).unwrap().external_server, "unset: SUP-4.1 unchanged");
        env.push(("AGENT_BOX_TMUX_SERVER", "external"));
        let config = Config::from_lookup(lookup(&env)).unwrap();
        assert!(config.external_server && config.tmux.never_start);
        env.pop();
        env.push(("AGENT_BOX_TMUX_SERVER", "own"));
        let err = Config::from_lookup(lookup(&env)).unwrap_err();
        assert_eq!(err.0, [Problem::TmuxServer("own".into())]);
        assert_eq!(err.to_string(), "cannot start: AGENT_BOX_TMUX_SERVER must be 'external' or unset (it is 'own')");
    }

    #[test]
    fn notice_policy_words() {
        assert_eq!(NoticePolicy::parse(Some("1")), NoticePolicy::Always);
        assert_eq!(NoticePolicy::parse(Some("false")), NoticePolicy::Never);
        assert_eq!(NoticePolicy::parse(Some("whatever")), NoticePolicy::Auto);
        assert_eq!(NoticePolicy::parse(None), NoticePolicy::Auto);
    }
}
