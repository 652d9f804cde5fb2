//! Which tmux binary, socket and socket directory every program uses (TMX-1, OV-5.3).
//!
//! The socket directory is resolved here and nowhere else, so the supervisor, every session verb, the wrappers
//! and the printed hints agree with nothing exported by the operator:
//! 1. `AGENT_BOX_TMUX_TMPDIR` when set and non-empty (tests and the demo);
//! 2. else `/run/agent-box-<user>` when it is a directory (the NixOS unit's `RuntimeDirectory`);
//! 3. else `/run/user/<uid>/agent-box` when it is a directory (the `RuntimeDirectory` of the systemd *user* unit
//!    that `cargo xtask install` writes: `%t/agent-box`, and `%t` of a user manager is always `/run/user/<uid>`,
//!    so no inherited `XDG_RUNTIME_DIR` can redirect it);
//! 4. else `/run/agent-box-<user>`, which does not exist: read-only callers then see "no server", and the error
//!    names the directory a NixOS box would have.
//!
//! The system directory wins over the user one so that a NixOS box behaves exactly as before.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::TmuxError;

/// The socket name of the box's one server; only tests and the demo override it.
pub const DEFAULT_SOCKET: &str = "agent-box";

/// How long one tmux client may run before it is killed (OV-5.3 item 5).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// How to reach the box's tmux server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmuxConfig {
    /// The tmux program.
    pub bin: PathBuf,
    /// Passed as `-L <socket>`.
    pub socket: String,
    /// Exported to tmux as `TMUX_TMPDIR`; the socket lives at `<socket_dir>/tmux-<uid>/<socket>`.
    pub socket_dir: PathBuf,
    /// Passed as `-f <conf>` when set.
    pub conf: Option<PathBuf>,
    /// Passed as `-N` when set: no client of this configuration ever starts a server, not even `new-session`
    /// (75-upgrades UP-3.1: a server another unit owns must never be replaced by one in the caller's cgroup).
    pub never_start: bool,
    /// Deadline for one tmux client.
    pub timeout: Duration,
}

impl TmuxConfig {
    /// A configuration with no config file and the default timeout (tests and tools that pass everything).
    pub fn new(bin: impl Into<PathBuf>, socket: impl Into<String>, socket_dir: impl Into<PathBuf>) -> Self {
        Self {
            bin: bin.into(),
            socket: socket.into(),
            socket_dir: socket_dir.into(),
            conf: None,
            never_start: false,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The same configuration with `-f <conf>`.
    pub fn with_conf(mut self, conf: impl Into<PathBuf>) -> Self {
        self.conf = Some(conf.into());
        self
    }

    /// The same configuration with `-N` on every client: tmux refuses to start a server instead of starting one.
    pub fn never_starting_a_server(mut self) -> Self {
        self.never_start = true;
        self
    }

    /// The same configuration with another client deadline.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Resolves the configuration from the process environment for `user` (the `<user>` of OV-5.2).
    pub fn from_env(user: &str) -> Result<Self, TmuxError> {
        Self::from_lookup(|key| std::env::var_os(key), user)
    }

    /// Same as [`TmuxConfig::from_env`] with the environment passed in.
    ///
    /// An inherited `TMUX_TMPDIR` is never consulted: an operator shell pointing elsewhere must still
    /// reach the box's one server (OV-5.3 item 2).
    pub fn from_lookup(env: impl Fn(&str) -> Option<OsString>, user: &str) -> Result<Self, TmuxError> {
        let set = |key: &str| env(key).filter(|value| !value.is_empty());
        let bin = match set("AGENT_BOX_TMUX_BIN") {
            Some(value) => absolute("AGENT_BOX_TMUX_BIN", value)?,
            // Left bare when PATH has no tmux, so the spawn fails as NotInstalled at call time, when
            // callers know whether an answer was required.
            None => find_on_path("tmux", set("PATH").as_deref()).unwrap_or_else(|| PathBuf::from("tmux")),
        };
        let socket = match set("AGENT_BOX_TMUX_SOCKET") {
            Some(value) => socket_name(value)?,
            None => DEFAULT_SOCKET.to_owned(),
        };
        let socket_dir = match set("AGENT_BOX_TMUX_TMPDIR") {
            Some(value) => absolute("AGENT_BOX_TMUX_TMPDIR", value)?,
            None => default_socket_dir(user, nix::unistd::getuid().as_raw(), |dir| dir.is_dir())?,
        };
        let conf = set("AGENT_BOX_TMUX_CONF").map(|value| absolute("AGENT_BOX_TMUX_CONF", value)).transpose()?;
        Ok(Self { bin, socket, socket_dir, conf, never_start: false, timeout: DEFAULT_TIMEOUT })
    }

    /// Where tmux puts the server socket for the current uid: `<socket_dir>/tmux-<uid>/<socket>`.
    pub fn socket_path(&self) -> PathBuf {
        let uid = nix::unistd::getuid().as_raw();
        self.socket_dir.join(format!("tmux-{uid}")).join(&self.socket)
    }
}

/// True for a name tmux joins into a path as one plain file name.
pub fn is_valid_socket_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn socket_name(value: OsString) -> Result<String, TmuxError> {
    match value.into_string() {
        Ok(name) if is_valid_socket_name(&name) => Ok(name),
        Ok(name) => Err(TmuxError::InvalidSocketName(name)),
        Err(raw) => Err(TmuxError::InvalidSocketName(raw.to_string_lossy().into_owned())),
    }
}

/// The socket directories a box may have, in the order they are tried: the NixOS unit's, then the user unit's.
pub fn socket_dir_candidates(user: &str, uid: u32) -> [PathBuf; 2] {
    [PathBuf::from(format!("/run/agent-box-{user}")), PathBuf::from(format!("/run/user/{uid}/agent-box"))]
}

/// Steps 2–4 of the module documentation; `is_dir` is injected so the order can be tested.
fn default_socket_dir(user: &str, uid: u32, is_dir: impl Fn(&Path) -> bool) -> Result<PathBuf, TmuxError> {
    if !base::name::is_usable_user(user) {
        return Err(TmuxError::BadUser(user.to_owned()));
    }
    let [system, user_unit] = socket_dir_candidates(user, uid);
    if !is_dir(&system) && is_dir(&user_unit) { Ok(user_unit) } else { Ok(system) }
}

/// OV-5.2: a relative path would depend on the working directory of whichever program reads it.
fn absolute(var: &'static str, value: OsString) -> Result<PathBuf, TmuxError> {
    let path = PathBuf::from(value);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(TmuxError::NotAbsolute { var, value: path.to_string_lossy().into_owned() })
    }
}

/// The first executable file `program` in the absolute directories of `path`; relative entries are
/// skipped, as they would make the binary depend on the working directory.
pub fn find_on_path(program: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable_file(candidate))
}

fn is_executable_file(path: &Path) -> bool {
    path.metadata().is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::fs;

    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs.iter().map(|(k, v)| ((*k).to_owned(), OsString::from(v))).collect();
        move |key| map.get(key).cloned()
    }

    #[test]
    fn defaults_use_the_agent_box_socket_under_run() {
        let config = TmuxConfig::from_lookup(lookup(&[("PATH", "/nonexistent-dir")]), "alice").unwrap();
        assert_eq!(config.socket, "agent-box");
        assert_eq!(config.socket_dir, PathBuf::from("/run/agent-box-alice"));
        assert_eq!(config.conf, None);
        assert!(!config.never_start, "only the supervisor of an external server sets -N");
        assert_eq!(config.timeout, Duration::from_secs(5));
        assert_eq!(config.bin, PathBuf::from("tmux"), "not on PATH: left bare, fails at spawn");
    }

    #[test]
    fn the_system_dir_wins_then_the_user_unit_dir_then_the_system_default() {
        let only = |present: &'static str| move |dir: &Path| dir == Path::new(present);
        let system = PathBuf::from("/run/agent-box-alice");
        let user_unit = PathBuf::from("/run/user/1000/agent-box");
        assert_eq!(default_socket_dir("alice", 1000, |_| true).unwrap(), system, "both: NixOS wins");
        assert_eq!(default_socket_dir("alice", 1000, only("/run/user/1000/agent-box")).unwrap(), user_unit);
        assert_eq!(default_socket_dir("alice", 1000, only("/run/agent-box-alice")).unwrap(), system);
        assert_eq!(default_socket_dir("alice", 1000, |_| false).unwrap(), system, "none: the NixOS name");
    }

    #[test]
    fn inherited_tmux_tmpdir_is_ignored() {
        let env = lookup(&[("TMUX_TMPDIR", "/tmp/decoy")]);
        let config = TmuxConfig::from_lookup(env, "alice").unwrap();
        assert_eq!(config.socket_dir, PathBuf::from("/run/agent-box-alice"));
    }

    #[test]
    fn agent_box_tmpdir_wins_and_empty_means_unset() {
        let env = lookup(&[("TMUX_TMPDIR", "/tmp/decoy"), ("AGENT_BOX_TMUX_TMPDIR", "/tmp/abt-1-1")]);
        assert_eq!(TmuxConfig::from_lookup(env, "alice").unwrap().socket_dir, PathBuf::from("/tmp/abt-1-1"));
        let empty = lookup(&[("AGENT_BOX_TMUX_TMPDIR", ""), ("AGENT_BOX_TMUX_SOCKET", "")]);
        let config = TmuxConfig::from_lookup(empty, "bob").unwrap();
        assert_eq!(config.socket_dir, PathBuf::from("/run/agent-box-bob"));
        assert_eq!(config.socket, "agent-box");
    }

    #[test]
    fn socket_override_is_validated() {
        let ok = TmuxConfig::from_lookup(lookup(&[("AGENT_BOX_TMUX_SOCKET", "abt-12.3_x")]), "u").unwrap();
        assert_eq!(ok.socket, "abt-12.3_x");
        for bad in ["a/b", "a b", "..", ".", "a;b", "é"] {
            let result = TmuxConfig::from_lookup(lookup(&[("AGENT_BOX_TMUX_SOCKET", bad)]), "u");
            assert_eq!(result, Err(TmuxError::InvalidSocketName(bad.to_owned())), "{bad:?}");
        }
    }

    #[test]
    fn conf_is_taken_when_set() {
        let config = TmuxConfig::from_lookup(lookup(&[("AGENT_BOX_TMUX_CONF", "/dev/null")]), "u").unwrap();
        assert_eq!(config.conf, Some(PathBuf::from("/dev/null")));
    }

    #[test]
    fn relative_paths_are_refused() {
        for var in ["AGENT_BOX_TMUX_BIN", "AGENT_BOX_TMUX_TMPDIR", "AGENT_BOX_TMUX_CONF"] {
            let result = TmuxConfig::from_lookup(lookup(&[(var, "relative/path")]), "u");
            assert_eq!(result, Err(TmuxError::NotAbsolute { var, value: "relative/path".to_owned() }));
        }
    }

    #[test]
    fn unusable_user_is_refused_only_for_the_default_dir() {
        assert_eq!(TmuxConfig::from_lookup(lookup(&[]), ".."), Err(TmuxError::BadUser("..".to_owned())));
        let env = lookup(&[("AGENT_BOX_TMUX_TMPDIR", "/tmp/x")]);
        assert!(TmuxConfig::from_lookup(env, "..").is_ok());
    }

    #[test]
    fn bin_override_and_path_lookup() {
        let config = TmuxConfig::from_lookup(lookup(&[("AGENT_BOX_TMUX_BIN", "/opt/tmux")]), "u").unwrap();
        assert_eq!(config.bin, PathBuf::from("/opt/tmux"));

        let dir = tempfile::tempdir().unwrap();
        let not_executable = dir.path().join("a");
        let executable = dir.path().join("b");
        fs::create_dir_all(&not_executable).unwrap();
        fs::create_dir_all(&executable).unwrap();
        fs::write(not_executable.join("tmux"), "").unwrap();
        fs::write(executable.join("tmux"), "").unwrap();
        fs::set_permissions(executable.join("tmux"), fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("relative:{}:{}", not_executable.display(), executable.display());
        let config = TmuxConfig::from_lookup(lookup(&[("PATH", &path)]), "u").unwrap();
        assert_eq!(config.bin, executable.join("tmux"));
    }

    #[test]
    fn socket_path_is_under_the_uid_dir() {
        let config = TmuxConfig::new("tmux", "abt-1-1", "/tmp/abt-1-1");
        let uid = nix::unistd::getuid().as_raw();
        assert_eq!(config.socket_path(), PathBuf::from(format!("/tmp/abt-1-1/tmux-{uid}/abt-1-1")));
    }
}
