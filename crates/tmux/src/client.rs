//! The real [`TmuxApi`]: runs the tmux binary on the box's socket.

use std::ffi::OsString;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use base::SessionName;

use crate::api::{Killed, NewSession, Snapshot, TmuxApi};
use crate::commands;
use crate::config::TmuxConfig;
use crate::env::{CallerPane, ParentEnv, child_env};
use crate::error::TmuxError;
use crate::hook::WakeHook;
use crate::identity::SessionId;
use crate::run::{Finished, RunError, run};
use crate::version::parse_version;

/// Talks to the tmux server described by a [`TmuxConfig`].
#[derive(Debug, Clone)]
pub struct Tmux {
    config: TmuxConfig,
    parent_env: ParentEnv,
}

/// The answer of a client that exited 0.
#[derive(Debug)]
struct Answer {
    stdout: String,
}

impl Answer {
    /// Output split on `\n`, empty lines dropped (TMX-2).
    fn lines(&self) -> Vec<String> {
        self.stdout.split('\n').filter(|line| !line.is_empty()).map(str::to_owned).collect()
    }
}

impl Tmux {
    /// Children inherit the process environment (minus TMX-3's names) at each call.
    pub fn new(config: TmuxConfig) -> Self {
        Self { config, parent_env: ParentEnv::Inherit }
    }

    /// Children get `vars` (minus TMX-3's names) instead of the process environment, so tests control
    /// what reaches tmux without touching the process-wide environment.
    pub fn with_parent_env(mut self, vars: Vec<(OsString, OsString)>) -> Self {
        self.parent_env = ParentEnv::Fixed(vars);
        self
    }

    pub fn config(&self) -> &TmuxConfig {
        &self.config
    }

    /// Runs a client on the socket; refuses before spawning when the socket directory is missing, because
    /// tmux would silently fall back to `/tmp` and split the box across two servers.
    fn on_socket(&self, command: Vec<OsString>, caller_pane: CallerPane) -> Result<Answer, TmuxError> {
        if !self.config.socket_dir.is_dir() {
            return Err(TmuxError::SocketDirMissing(self.config.socket_dir.clone()));
        }
        self.execute(commands::client_args(&self.config, command), caller_pane)
    }

    fn execute(&self, args: Vec<OsString>, caller_pane: CallerPane) -> Result<Answer, TmuxError> {
        let mut command = Command::new(&self.config.bin);
        command.args(args).env_clear().envs(child_env(self.parent_env.vars(), &self.config.socket_dir, caller_pane));
        match run(command, self.config.timeout) {
            Ok(finished) => answer(finished),
            Err(RunError::NotStarted(err)) => {
                Err(TmuxError::NotInstalled { bin: self.config.bin.display().to_string(), error: describe_io(&err) })
            }
            Err(RunError::TimedOut) => Err(TmuxError::Timeout),
            Err(RunError::Io(err)) => {
                Err(TmuxError::Failed { status: None, stderr: format!("could not read tmux's output: {err}") })
            }
        }
    }
}

/// An I/O error as a person reads it: the system's text without Rust's ` (os error N)` suffix.
fn describe_io(err: &std::io::Error) -> String {
    match err.raw_os_error() {
        Some(code) => nix::errno::Errno::from_raw(code).desc().to_owned(),
        None => err.to_string(),
    }
}

/// Probes the socket until nothing listens. No event announces another process's exit without a pidfd
/// (which needs unsafe code here), so this retries a plain connect, bounded by the deadline.
fn wait_until_refused(socket: &Path, deadline: Instant) -> Result<(), TmuxError> {
    const PROBE_INTERVAL: Duration = Duration::from_millis(5);
    while UnixStream::connect(socket).is_ok() {
        if Instant::now() >= deadline {
            return Err(TmuxError::Timeout);
        }
        thread::sleep(PROBE_INTERVAL);
    }
    Ok(())
}

/// The first line is the server's pid (`display-message -p '#{pid}'`), the rest the session names.
fn snapshot(answer: &Answer) -> Snapshot {
    let mut lines = answer.lines().into_iter();
    let server_pid = lines.next().and_then(|line| line.trim().parse().ok());
    Snapshot { server_pid, sessions: lines.collect() }
}

fn answer(finished: Finished) -> Result<Answer, TmuxError> {
    if finished.status.success() {
        return Ok(Answer { stdout: String::from_utf8_lossy(&finished.stdout).into_owned() });
    }
    Err(TmuxError::from_failure(finished.status.code(), &String::from_utf8_lossy(&finished.stderr)))
}

impl TmuxApi for Tmux {
    fn ensure_server_and_list(&self) -> Result<Snapshot, TmuxError> {
        Ok(snapshot(&self.on_socket(commands::ensure_server_and_list(), CallerPane::Strip)?))
    }

    /// Unlike [`TmuxApi::list_sessions`], "no server" stays an error: the supervisor must tell "nothing is live"
    /// from "the server is gone" (75-upgrades UP-3.1).
    fn list_server(&self) -> Result<Snapshot, TmuxError> {
        Ok(snapshot(&self.on_socket(commands::list_server(), CallerPane::Strip)?))
    }

    /// A missing socket directory is "no server" here: nothing can listen in a directory that does not exist, so
    /// nothing is live (a read-only answer, unlike the supervisor's snapshot, which must start a server).
    fn list_sessions(&self) -> Result<Vec<String>, TmuxError> {
        match self.on_socket(commands::list_sessions(), CallerPane::Strip) {
            Ok(answer) => Ok(answer.lines()),
            Err(TmuxError::NoServer | TmuxError::SocketDirMissing(_)) => Ok(Vec::new()),
            Err(err) => Err(err),
        }
    }

    fn has_session(&self, name: &SessionName) -> Result<bool, TmuxError> {
        match self.on_socket(commands::has_session(name), CallerPane::Strip) {
            Ok(_) => Ok(true),
            Err(TmuxError::NoSuchSession | TmuxError::NoServer | TmuxError::SocketDirMissing(_)) => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// `-P -F '#{pane_pid}'` makes tmux print the new pane's pid, for the supervisor's spawn line.
    fn new_session(&self, request: &NewSession) -> Result<Option<u32>, TmuxError> {
        let answer = self.on_socket(commands::new_session(request), CallerPane::Strip)?;
        Ok(answer.lines().first().and_then(|line| line.trim().parse().ok()))
    }

    /// A kill that failed for another reason is still "already gone" when has-session then says the
    /// session is not there (50-session-cli §3.6); otherwise the kill's own error stands.
    fn kill_session(&self, name: &SessionName) -> Result<Killed, TmuxError> {
        match self.on_socket(commands::kill_session(name), CallerPane::Strip) {
            Ok(_) => Ok(Killed::Yes),
            Err(TmuxError::NoSuchSession | TmuxError::NoServer | TmuxError::SocketDirMissing(_)) => {
                Ok(Killed::AlreadyGone)
            }
            Err(failed @ TmuxError::Failed { .. }) => match self.has_session(name) {
                Ok(false) => Ok(Killed::AlreadyGone),
                _ => Err(failed),
            },
            Err(err) => Err(err),
        }
    }

    /// Lines that do not parse are not ours to read (a session name with a newline) and are left out.
    fn session_ids(&self) -> Result<Vec<(String, SessionId)>, TmuxError> {
        match self.on_socket(commands::list_session_ids(), CallerPane::Strip) {
            Ok(answer) => Ok(answer.lines().iter().filter_map(|line| SessionId::parse_line(line)).collect()),
            Err(TmuxError::NoServer | TmuxError::SocketDirMissing(_)) => Ok(Vec::new()),
            Err(err) => Err(err),
        }
    }

    /// As [`TmuxApi::kill_session`]: a kill that failed for another reason is still "already gone" when a listing
    /// then finds no session of that identity.
    fn kill_session_id(&self, id: &SessionId) -> Result<Killed, TmuxError> {
        match self.on_socket(commands::kill_session_id(id), CallerPane::Strip) {
            Ok(answer) if answer.lines().iter().any(|line| line == commands::OTHER_SERVER) => Ok(Killed::AlreadyGone),
            Ok(_) => Ok(Killed::Yes),
            Err(TmuxError::NoSuchSession | TmuxError::NoServer | TmuxError::SocketDirMissing(_)) => {
                Ok(Killed::AlreadyGone)
            }
            Err(failed @ TmuxError::Failed { .. }) => match self.session_ids() {
                Ok(live) if !live.iter().any(|(_, live_id)| live_id == id) => Ok(Killed::AlreadyGone),
                _ => Err(failed),
            },
            Err(err) => Err(err),
        }
    }

    fn display(&self, name: &SessionName, format: &str) -> Result<String, TmuxError> {
        Ok(self.on_socket(commands::display(name, format), CallerPane::Strip)?.lines().join("\n"))
    }

    /// tmux answers `KEY=value`, or `-KEY` for a variable removed from the session; an unset one is the error
    /// `unknown variable: KEY` (measured on 3.3a).
    fn session_environment(&self, name: &SessionName, key: &str) -> Result<Option<String>, TmuxError> {
        match self.on_socket(commands::show_environment(name, key), CallerPane::Strip) {
            Ok(answer) => {
                let prefix = format!("{key}=");
                Ok(answer.lines().into_iter().find_map(|line| line.strip_prefix(&prefix).map(str::to_owned)))
            }
            Err(TmuxError::Failed { stderr, .. }) if stderr.starts_with("unknown variable") => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Without a pane and without `$TMUX` the caller is not inside tmux, and tmux would name the most
    /// recent session instead (50-session-cli §5.2), so it is not asked. An unknown pane makes
    /// display-message answer an empty line with exit 0 (measured on 3.3a); both are "no such session".
    fn current_session(&self, pane: Option<&str>) -> Result<String, TmuxError> {
        if pane.is_none() && !self.parent_env.has_non_empty("TMUX") {
            return Err(TmuxError::NoSuchSession);
        }
        let answer = self.on_socket(commands::current_session(pane), CallerPane::Keep)?;
        answer.lines().into_iter().next().ok_or(TmuxError::NoSuchSession)
    }

    fn set_global_option(&self, key: &str, value: &str) -> Result<(), TmuxError> {
        self.on_socket(commands::set_global_option(key, value), CallerPane::Strip).map(drop)
    }

    /// No server is an error here too: the hook belongs to a server, and the next one gets it when it appears.
    fn set_wake_hook(&self, hook: &WakeHook) -> Result<(), TmuxError> {
        self.on_socket(commands::set_wake_hook(hook), CallerPane::Strip).map(drop)
    }

    fn show_global_option(&self, key: &str) -> Result<Option<String>, TmuxError> {
        Ok(self.on_socket(commands::show_global_option(key), CallerPane::Strip)?.lines().into_iter().next())
    }

    /// `-V` touches no socket, so it runs even when the socket directory is missing.
    fn version(&self) -> Result<Option<(u32, u32)>, TmuxError> {
        Ok(parse_version(&self.execute(commands::version(), CallerPane::Strip)?.stdout))
    }

    /// Returns once the socket refuses connections: the server exits only after the kill-server client
    /// has gone, and a client connecting in between fails with `server exited unexpectedly` (measured on
    /// 3.3a), which callers must not have to tell apart from real trouble.
    fn kill_server(&self) -> Result<(), TmuxError> {
        let deadline = Instant::now() + self.config.timeout;
        match self.on_socket(commands::kill_server(), CallerPane::Strip) {
            Ok(_) => wait_until_refused(&self.config.socket_path(), deadline),
            Err(TmuxError::NoServer) => Ok(()),
            Err(err) => Err(err),
        }
    }

    fn socket_path(&self) -> PathBuf {
        self.config.socket_path()
    }
}

impl Tmux {
    /// The command of this socket's server run in the foreground (`tmux -D`), as the tmux unit of 75-upgrades runs
    /// it, with this adapter's child environment (TMX-3), which the server hands to every pane. Not started here:
    /// the caller owns its life, as systemd owns the unit's (tests and bench stand in for the unit with it).
    pub fn foreground_server(&self) -> Command {
        let mut command = Command::new(&self.config.bin);
        command.args(commands::foreground_server(&self.config)).env_clear().envs(child_env(
            self.parent_env.vars(),
            &self.config.socket_dir,
            CallerPane::Strip,
        ));
        command
    }

    /// Puts the caller's terminal on session `name` and never returns unless tmux could not be started
    /// (`agent-box-session attach`): `switch-client` when the caller is a client of this same server (tmux refuses
    /// to nest), else `attach-session` with the caller's `$TMUX` removed (a client of another server asked for it).
    /// The process is replaced by tmux, which keeps the terminal; its exit status becomes the caller's.
    pub fn attach(&self, name: &SessionName, switch: bool) -> TmuxError {
        use std::os::unix::process::CommandExt;
        let verb = if switch { commands::switch_client(name) } else { commands::attach_session(name) };
        let caller = if switch { CallerPane::Keep } else { CallerPane::Strip };
        let mut command = Command::new(&self.config.bin);
        command.args(commands::client_args(&self.config, verb)).env_clear().envs(child_env(
            self.parent_env.vars(),
            &self.config.socket_dir,
            caller,
        ));
        let err = command.exec();
        TmuxError::NotInstalled { bin: self.config.bin.display().to_string(), error: describe_io(&err) }
    }
}
