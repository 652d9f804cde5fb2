//! The adapter against the real tmux (and fake tmux scripts), each test on its own private socket (TMX-6).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use agent_box_tests::wait_until;
use base::SessionName;
use tmux::{Killed, NewSession, Tmux, TmuxApi, TmuxConfig, TmuxError};

static NEXT_SANDBOX: AtomicUsize = AtomicUsize::new(1);

/// A private socket directory `/tmp/abt-<pid>-<n>` and socket `abt-<pid>-<n>`; dropping it (also on a
/// panic) kills that server and removes the directory. Never the default or the `agent-box` socket.
struct Sandbox {
    dir: PathBuf,
    socket: String,
}

impl Sandbox {
    fn new() -> Self {
        let tag = format!("abt-{}-{}", std::process::id(), NEXT_SANDBOX.fetch_add(1, Ordering::Relaxed));
        let dir = PathBuf::from("/tmp").join(&tag);
        let _ = fs::remove_dir_all(&dir);
        fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        let sandbox = Self { dir, socket: tag };
        let socket_path = sandbox.real().socket_path();
        assert!(socket_path.as_os_str().len() < 100, "socket path too long: {}", socket_path.display());
        sandbox
    }

    /// The real tmux with `-f /dev/null`, a minimal environment and a temporary HOME; nothing of the
    /// developer's own tmux (`TMUX`, `TMUX_TMPDIR`) reaches it.
    fn real(&self) -> Tmux {
        self.adapter(tmux_bin(), &self.dir)
    }

    fn adapter(&self, bin: PathBuf, socket_dir: &Path) -> Tmux {
        let config = TmuxConfig::new(bin, self.socket.clone(), socket_dir).with_conf("/dev/null");
        Tmux::new(config).with_parent_env(self.base_env())
    }

    fn base_env(&self) -> Vec<(OsString, OsString)> {
        vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into())),
            ("HOME".into(), self.dir.clone().into_os_string()),
        ]
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Writes an executable fake tmux. A helper process writes the file, so this test process never
    /// holds a writable descriptor that a concurrent fork elsewhere could inherit (ETXTBSY on exec).
    fn fake_tmux(&self, name: &str, body: &str) -> PathBuf {
        let path = self.path(name);
        let script = format!("#!/bin/sh\n{body}\n");
        let status = Command::new("/bin/sh")
            .args(["-c", "printf '%s' \"$2\" > \"$1\" && chmod 700 \"$1\"", "sh"])
            .arg(&path)
            .arg(script)
            .status()
            .unwrap();
        assert!(status.success());
        path
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self.real().kill_server();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn tmux_bin() -> PathBuf {
    tmux::find_on_path("tmux", std::env::var_os("PATH").as_deref()).unwrap_or_else(|| "/usr/bin/tmux".into())
}

fn name(text: &str) -> SessionName {
    SessionName::parse(text).unwrap()
}

/// A session whose pane just sleeps.
fn sleeper(session: &str, cwd: &Path) -> NewSession {
    NewSession { name: name(session), cwd: cwd.to_owned(), env: Vec::new(), argv: argv(&["sleep", "60"]) }
}

fn argv(words: &[&str]) -> Vec<OsString> {
    words.iter().map(OsString::from).collect()
}

/// True when `check` turns true at any poll within `period`.
fn becomes_true_within(period: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + period;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    check()
}

/// Reads a file a pane writes with `… > f.tmp && mv f.tmp f`, once it is complete.
fn read_when_written(path: &Path) -> String {
    wait_until(&format!("{}", path.display()), || path.exists());
    fs::read_to_string(path).unwrap()
}

#[test]
fn no_server_reads_as_nothing_live() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    assert_eq!(tmux.list_sessions(), Ok(Vec::new()));
    assert_eq!(tmux.has_session(&name("a")), Ok(false));
    assert_eq!(tmux.kill_session(&name("a")), Ok(Killed::AlreadyGone));
    assert_eq!(tmux.display(&name("a"), "#{session_name}"), Err(TmuxError::NoServer));
    assert_eq!(tmux.kill_server(), Ok(()));
}

#[test]
fn ensure_server_starts_a_server_that_stays_up_without_sessions() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    assert_eq!(tmux.show_global_option("exit-empty"), Err(TmuxError::NoServer));
    assert_eq!(tmux.ensure_server_and_list().map(|s| s.sessions), Ok(Vec::new()));
    // show-options reaches only a running server, so an answer proves it is still up with zero sessions.
    assert_eq!(tmux.show_global_option("exit-empty"), Ok(Some("off".to_owned())));
    assert!(tmux.socket_path().exists());
    assert_eq!(tmux.list_sessions(), Ok(Vec::new()));
    assert_eq!(tmux.ensure_server_and_list().map(|s| s.sessions), Ok(Vec::new()));
}

/// 75-upgrades UP-3.1: the listing of an external server is an answer only while a server runs; it never starts
/// one, and with `-N` not even `new-session` does.
#[test]
fn an_external_server_is_listed_but_never_started() {
    let sandbox = Sandbox::new();
    let config = TmuxConfig::new(tmux_bin(), sandbox.socket.clone(), &sandbox.dir).with_conf("/dev/null");
    let never = Tmux::new(config.never_starting_a_server()).with_parent_env(sandbox.base_env());
    assert_eq!(never.list_server(), Err(TmuxError::NoServer));
    assert_eq!(never.new_session(&sleeper("a", &sandbox.dir)), Err(TmuxError::NoServer));
    assert!(!sandbox.real().socket_path().exists(), "no server was started");

    let server = sandbox.real().ensure_server_and_list().unwrap().server_pid;
    assert!(server.is_some());
    assert_eq!(never.list_server(), Ok(tmux::Snapshot { server_pid: server, sessions: Vec::new() }));
    never.new_session(&sleeper("a", &sandbox.dir)).unwrap();
    assert_eq!(never.list_server().map(|s| (s.server_pid, s.sessions)), Ok((server, vec!["a".to_owned()])));
}

#[test]
fn ensure_server_lists_existing_sessions() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    tmux.new_session(&sleeper("one", &sandbox.dir)).unwrap();
    tmux.new_session(&sleeper("two", &sandbox.dir)).unwrap();
    let mut live = tmux.ensure_server_and_list().unwrap().sessions;
    live.sort();
    assert_eq!(live, ["one", "two"]);
}

#[test]
fn session_lifecycle() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    tmux.ensure_server_and_list().unwrap();
    tmux.new_session(&sleeper("a", &sandbox.dir)).unwrap();
    assert_eq!(tmux.has_session(&name("a")), Ok(true));
    assert_eq!(tmux.list_sessions(), Ok(vec!["a".to_owned()]));
    assert_eq!(tmux.display(&name("a"), "#{session_name}"), Ok("a".to_owned()));
    assert_eq!(tmux.kill_session(&name("a")), Ok(Killed::Yes));
    // The server is up with zero sessions now; tmux 3.3a says `no current target` then.
    assert_eq!(tmux.has_session(&name("a")), Ok(false));
    assert_eq!(tmux.kill_session(&name("a")), Ok(Killed::AlreadyGone));
    assert_eq!(tmux.display(&name("a"), "#{session_name}"), Err(TmuxError::NoSuchSession));
    assert_eq!(tmux.list_sessions(), Ok(Vec::new()));
}

/// Issue 25: a session killed by its identity is that session only: not one started later under the same name,
/// and nothing on a new server that gives the same `$N` again.
#[test]
fn a_session_killed_by_its_identity_is_never_a_later_one() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    assert_eq!(tmux.session_ids(), Ok(Vec::new()), "no server: nothing is live");
    tmux.ensure_server_and_list().unwrap();
    tmux.new_session(&sleeper("a", &sandbox.dir)).unwrap();
    let first = tmux.session_ids().unwrap();
    assert_eq!(first.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["a"]);
    let old = first[0].1;
    assert_eq!(tmux.kill_session(&name("a")), Ok(Killed::Yes));
    tmux.new_session(&sleeper("a", &sandbox.dir)).unwrap();
    assert_eq!(tmux.kill_session_id(&old), Ok(Killed::AlreadyGone), "the later session of the name is another one");
    assert_eq!(tmux.has_session(&name("a")), Ok(true));
    let later = tmux.session_ids().unwrap()[0].1;
    assert_ne!(later, old);
    assert_eq!(tmux.kill_session_id(&later), Ok(Killed::Yes));
    assert_eq!(tmux.has_session(&name("a")), Ok(false));
    assert_eq!(tmux.kill_session_id(&later), Ok(Killed::AlreadyGone));

    // A new server counts from `$0` again: an identity of the old one names nothing there.
    tmux.kill_server().unwrap();
    tmux.new_session(&sleeper("x", &sandbox.dir)).unwrap();
    let fresh = tmux.session_ids().unwrap()[0].1;
    tmux.kill_server().unwrap();
    tmux.new_session(&sleeper("y", &sandbox.dir)).unwrap();
    let (newer_name, newer) = tmux.session_ids().unwrap()[0].clone();
    assert_eq!((newer_name.as_str(), newer.number()), ("y", fresh.number()), "the new server gives the same $N");
    assert_ne!(newer.server_pid(), fresh.server_pid());
    assert_eq!(tmux.kill_session_id(&fresh), Ok(Killed::AlreadyGone), "the old server's $0 on the new one");
    assert_eq!(tmux.has_session(&name("y")), Ok(true));
}

#[test]
fn session_environment_reads_what_new_session_set() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    let mut request = sleeper("a", &sandbox.dir);
    request.env = vec![("AGENT_BOX_SESSION_ID".into(), "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90".into())];
    tmux.new_session(&request).unwrap();
    tmux.new_session(&sleeper("a1", &sandbox.dir)).unwrap();
    let id = tmux.session_environment(&name("a"), "AGENT_BOX_SESSION_ID");
    assert_eq!(id, Ok(Some("0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90".to_owned())));
    assert_eq!(tmux.session_environment(&name("a1"), "AGENT_BOX_SESSION_ID"), Ok(None), "unset");
    assert_eq!(tmux.session_environment(&name("b"), "AGENT_BOX_SESSION_ID"), Err(TmuxError::NoSuchSession));
    assert_eq!(tmux.session_environment(&name("a"), "AGENT_BOX_SESSION_I"), Ok(None), "an exact key");
}

#[test]
fn duplicate_session_is_refused() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    tmux.new_session(&sleeper("a", &sandbox.dir)).unwrap();
    assert_eq!(tmux.new_session(&sleeper("a", &sandbox.dir)), Err(TmuxError::DuplicateSession));
    assert_eq!(tmux.list_sessions(), Ok(vec!["a".to_owned()]));
}

#[test]
fn targets_match_names_exactly() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    tmux.new_session(&sleeper("a1", &sandbox.dir)).unwrap();
    assert_eq!(tmux.has_session(&name("a")), Ok(false));
    assert_eq!(tmux.display(&name("a"), "#{session_name}"), Err(TmuxError::NoSuchSession));
    assert_eq!(tmux.kill_session(&name("a")), Ok(Killed::AlreadyGone));
    assert_eq!(tmux.has_session(&name("a1")), Ok(true));
    assert_eq!(tmux.list_sessions(), Ok(vec!["a1".to_owned()]));
}

#[test]
fn hostile_working_directory_runs_nothing_and_is_the_literal_cwd() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    let marker = sandbox.path("marker");
    let cwd = sandbox.dir.join(format!("w#(touch {})#{{pane_pid}}", marker.display()));
    fs::create_dir_all(&cwd).unwrap();
    let out = sandbox.path("pwd.out");
    let script = "pwd > \"$1.tmp\" && mv \"$1.tmp\" \"$1\"; exec sleep 60";
    let mut request = sleeper("w", &cwd);
    request.argv = vec!["/bin/sh".into(), "-c".into(), script.into(), "sh".into(), out.clone().into()];
    tmux.new_session(&request).unwrap();

    let pane_cwd = read_when_written(&out);
    assert!(!becomes_true_within(Duration::from_millis(500), || marker.exists()), "#(…) in the cwd ran");
    assert_eq!(PathBuf::from(pane_cwd.trim_end_matches('\n')), cwd);
    assert_eq!(tmux.display(&name("w"), "#{pane_current_path}").map(PathBuf::from), Ok(cwd));
}

#[test]
fn env_values_arrive_literally_and_the_server_env_is_scrubbed() {
    let sandbox = Sandbox::new();
    let mut parent = sandbox.base_env();
    for (key, value) in [
        ("TMUX", "/tmp/decoy/default,1,0"),
        ("TMUX_PANE", "%9"),
        ("AGENT_BOX_REGISTRY_LOCK_FD", "9"),
        ("CLAUDECODE", "1"),
        ("TMUX_TMPDIR", "/tmp/decoy"),
    ] {
        parent.push((key.into(), value.into()));
    }
    let tmux = sandbox.real().with_parent_env(parent);
    let marker = sandbox.path("marker");
    let literal = format!("#{{pane_pid}} #(touch {})", marker.display());
    let out = sandbox.path("env.out");
    let mut request = sleeper("e", &sandbox.dir);
    request.env = vec![("ABT_VALUE".to_owned(), literal.clone())];
    request.argv = vec![
        "/bin/sh".into(),
        "-c".into(),
        "env > \"$1.tmp\" && mv \"$1.tmp\" \"$1\"; exec sleep 60".into(),
        "sh".into(),
        out.clone().into(),
    ];
    // This client starts the server, so its environment becomes every pane's.
    tmux.new_session(&request).unwrap();

    let env = read_when_written(&out);
    let lines: Vec<&str> = env.lines().collect();
    assert!(lines.contains(&format!("ABT_VALUE={literal}").as_str()), "{env}");
    assert!(lines.contains(&format!("TMUX_TMPDIR={}", sandbox.dir.display()).as_str()), "{env}");
    for gone in ["AGENT_BOX_REGISTRY_LOCK_FD=", "CLAUDECODE=", "TMUX=/tmp/decoy", "TMUX_PANE=%9"] {
        assert!(!lines.iter().any(|line| line.starts_with(gone)), "{gone} leaked: {env}");
    }
    assert!(!marker.exists());
}

#[test]
fn server_starting_new_session_returns_promptly() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    let started = Instant::now();
    assert!(matches!(tmux.new_session(&sleeper("first", &sandbox.dir)), Ok(Some(pid)) if pid > 1));
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
    assert_eq!(tmux.has_session(&name("first")), Ok(true));
}

#[test]
fn stale_socket_after_kill_server_reads_as_no_server() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    tmux.new_session(&sleeper("a", &sandbox.dir)).unwrap();
    assert_eq!(tmux.kill_server(), Ok(()));
    // kill_server returns only once the server is gone, so the next caller sees "no server", never the
    // fail-closed `server exited unexpectedly` of a server that is still shutting down.
    assert!(UnixStream::connect(tmux.socket_path()).is_err(), "server still listening after kill_server");
    assert_eq!(tmux.list_sessions(), Ok(Vec::new()));
    assert_eq!(tmux.has_session(&name("a")), Ok(false));
    assert_eq!(tmux.kill_session(&name("a")), Ok(Killed::AlreadyGone));
}

#[test]
fn current_session_answers_for_a_pane_and_for_the_callers_tmux_env() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    tmux.new_session(&sleeper("me", &sandbox.dir)).unwrap();
    tmux.new_session(&sleeper("other", &sandbox.dir)).unwrap();
    let pane = tmux.display(&name("me"), "#{pane_id}").unwrap();
    let server_pid = tmux.display(&name("me"), "#{pid}").unwrap();
    let session_id = tmux.display(&name("me"), "#{session_id}").unwrap();

    assert_eq!(tmux.current_session(Some(&pane)), Ok("me".to_owned()));
    assert_eq!(tmux.current_session(Some("%999")), Err(TmuxError::NoSuchSession));
    // Outside tmux there is no "current" session; asked anyway, tmux would name the most recent one.
    assert_eq!(tmux.current_session(None), Err(TmuxError::NoSuchSession));

    // As a program running inside the pane sees it: only kept `TMUX`/`TMUX_PANE` can name "me".
    let tmux_var = format!("{},{server_pid},{}", tmux.socket_path().display(), session_id.trim_start_matches('$'));
    let mut parent = sandbox.base_env();
    parent.push(("TMUX".into(), tmux_var.into()));
    parent.push(("TMUX_PANE".into(), pane.into()));
    let inside = sandbox.real().with_parent_env(parent);
    assert_eq!(inside.current_session(None), Ok("me".to_owned()));
}

#[test]
fn global_options_round_trip() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    tmux.ensure_server_and_list().unwrap();
    assert_eq!(tmux.set_global_option("status-left", "-starts-with-a-dash"), Ok(()));
    assert_eq!(tmux.show_global_option("status-left"), Ok(Some("-starts-with-a-dash".to_owned())));
    assert_eq!(tmux.show_global_option("@abt-unset"), Ok(None));
}

#[test]
fn version_of_the_real_tmux_needs_no_socket_dir() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.adapter(tmux_bin(), &sandbox.path("missing"));
    let version = tmux.version().unwrap();
    assert!(version.is_some_and(|v| v >= (3, 2)), "{version:?}");
}

#[test]
fn missing_socket_dir_refuses_without_running_tmux() {
    let sandbox = Sandbox::new();
    let marker = sandbox.path("ran");
    let fake = sandbox.fake_tmux("fake-tmux", &format!("touch '{}'", marker.display()));
    let missing = sandbox.path("missing");
    let tmux = sandbox.adapter(fake.clone(), &missing);
    // Asking what is live: nothing can listen in a missing directory, so nothing is (issue 11: "no server").
    assert_eq!(tmux.list_sessions(), Ok(Vec::new()));
    assert_eq!(tmux.has_session(&name("a")), Ok(false));
    assert_eq!(tmux.ensure_server_and_list(), Err(TmuxError::SocketDirMissing(missing)));

    let not_a_dir = sandbox.path("file");
    fs::write(&not_a_dir, "").unwrap();
    let tmux = sandbox.adapter(fake, &not_a_dir);
    assert_eq!(tmux.kill_session(&name("a")), Ok(tmux::Killed::AlreadyGone));
    assert_eq!(tmux.new_session(&sleeper("a", &sandbox.dir)), Err(TmuxError::SocketDirMissing(not_a_dir)));
    assert!(!marker.exists(), "tmux ran although the socket dir was missing");
}

#[test]
fn missing_binary_is_not_installed_and_fails_closed() {
    let sandbox = Sandbox::new();
    let bin = sandbox.path("no-such-tmux");
    let tmux = sandbox.adapter(bin.clone(), &sandbox.dir);
    let missing =
        TmuxError::NotInstalled { bin: bin.display().to_string(), error: "No such file or directory".to_owned() };
    assert_eq!(tmux.list_sessions(), Err(missing.clone()));
    assert_eq!(tmux.has_session(&name("a")), Err(missing.clone()));
    assert_eq!(tmux.kill_session(&name("a")), Err(missing.clone()));
    assert_eq!(tmux.version(), Err(missing.clone()));
    let reason = missing.reason();
    assert!(reason.starts_with("tmux did not run ("), "{reason}");
    assert!(reason.contains("no-such-tmux") && reason.contains("apt-get install tmux"), "{reason}");
    assert!(reason.contains("AGENT_BOX_TMUX_BIN"), "{reason}");
}

#[test]
fn hanging_tmux_times_out() {
    let sandbox = Sandbox::new();
    let fake = sandbox.fake_tmux("fake-tmux", "exec sleep 30");
    let config = TmuxConfig::new(fake, sandbox.socket.clone(), &sandbox.dir).with_timeout(Duration::from_millis(300));
    let tmux = Tmux::new(config).with_parent_env(sandbox.base_env());
    let started = Instant::now();
    assert_eq!(tmux.list_sessions(), Err(TmuxError::Timeout));
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(3), "took {elapsed:?}");
    assert_eq!(tmux.has_session(&name("a")), Err(TmuxError::Timeout), "a timeout is never 'no session'");
}

#[test]
fn fake_no_server_answer_means_nothing_live() {
    let sandbox = Sandbox::new();
    let fake = sandbox.fake_tmux("fake-tmux", "echo 'no server running on /tmp/x/tmux-0/abt' >&2; exit 1");
    let tmux = sandbox.adapter(fake, &sandbox.dir);
    assert_eq!(tmux.list_sessions(), Ok(Vec::new()));
    assert_eq!(tmux.has_session(&name("a")), Ok(false));
    assert_eq!(tmux.kill_session(&name("a")), Ok(Killed::AlreadyGone));
}

#[test]
fn fake_other_failure_fails_closed() {
    let sandbox = Sandbox::new();
    let fake = sandbox.fake_tmux("fake-tmux", "echo 'server exited unexpectedly' >&2; echo 'detail' >&2; exit 1");
    let tmux = sandbox.adapter(fake, &sandbox.dir);
    let failed = TmuxError::Failed { status: Some(1), stderr: "server exited unexpectedly\ndetail".to_owned() };
    assert_eq!(tmux.list_sessions(), Err(failed.clone()));
    assert_eq!(tmux.has_session(&name("a")), Err(failed.clone()));
    assert_eq!(tmux.kill_session(&name("a")), Err(failed.clone()));
    assert_eq!(failed.reason(), "server exited unexpectedly");
}

#[test]
fn tmux_children_get_a_scrubbed_env_and_exact_argv() {
    let sandbox = Sandbox::new();
    let body = "env > \"$TMUX_TMPDIR/env.out\"; printf '%s\\n' \"$@\" > \"$TMUX_TMPDIR/argv.out\"; echo me";
    let fake = sandbox.fake_tmux("fake-tmux", body);
    let mut parent = sandbox.base_env();
    for (key, value) in [
        ("TMUX", "/tmp/decoy/default,1,0"),
        ("TMUX_PANE", "%9"),
        ("AGENT_BOX_REGISTRY_LOCK_FD", "9"),
        ("CLAUDECODE", "1"),
        ("TMUX_TMPDIR", "/tmp/decoy"),
        ("ABT_KEPT", "yes"),
    ] {
        parent.push((key.into(), value.into()));
    }
    let tmux = sandbox.adapter(fake, &sandbox.dir).with_parent_env(parent);
    let env_lines = |path: &Path| fs::read_to_string(path).unwrap().lines().map(str::to_owned).collect::<Vec<_>>();

    assert_eq!(tmux.list_sessions(), Ok(vec!["me".to_owned()]));
    let env = env_lines(&sandbox.path("env.out"));
    let argv = env_lines(&sandbox.path("argv.out"));
    assert!(env.contains(&"ABT_KEPT=yes".to_owned()), "{env:?}");
    assert!(env.contains(&format!("TMUX_TMPDIR={}", sandbox.dir.display())), "{env:?}");
    for gone in ["TMUX=", "TMUX_PANE=", "AGENT_BOX_REGISTRY_LOCK_FD=", "CLAUDECODE="] {
        assert!(!env.iter().any(|line| line.starts_with(gone)), "{gone} leaked: {env:?}");
    }
    assert_eq!(argv, ["-f", "/dev/null", "-L", sandbox.socket.as_str(), "list-sessions", "-F", "#{session_name}"]);

    assert_eq!(tmux.current_session(Some("%9")), Ok("me".to_owned()));
    let env = env_lines(&sandbox.path("env.out"));
    assert!(env.contains(&"TMUX=/tmp/decoy/default,1,0".to_owned()), "{env:?}");
    assert!(env.contains(&"TMUX_PANE=%9".to_owned()), "{env:?}");
    for gone in ["AGENT_BOX_REGISTRY_LOCK_FD=", "CLAUDECODE=", "TMUX_TMPDIR=/tmp/decoy"] {
        assert!(!env.iter().any(|line| line.starts_with(gone)), "{gone} leaked: {env:?}");
    }
}

/// The session-closed wake (issue 12): for a wake file under a directory whose name holds quotes, `$(…)`,
/// backquotes, `#(…)`, `#{…}`, `~`, a backslash, `%` and a newline, closing a session opens exactly that file for
/// writing (seen by inotify), writes nothing into it, runs nothing else (no marker), and leaves every other pane out
/// of view mode (the job printed nothing and exited 0).
#[test]
fn the_wake_hook_touches_exactly_a_hostile_path_and_runs_nothing_else() {
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    let marker = |n: u32| sandbox.path(&format!("M{n}"));
    let hostile = format!(
        "h 'q' $(touch {}) `touch {}` #(touch {}) #{{pane_pid}} \"d\" ~x \\y %Y\nz",
        marker(1).display(),
        marker(2).display(),
        marker(3).display()
    );
    let dir = sandbox.path(&hostile);
    fs::create_dir_all(&dir).unwrap();
    let wake = dir.join("tmux-wake");
    fs::write(&wake, b"").unwrap();
    let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).unwrap();
    inotify.add_watch(&wake, AddWatchFlags::IN_CLOSE_WRITE).unwrap();
    tmux.ensure_server_and_list().unwrap();
    tmux.new_session(&sleeper("a", &sandbox.dir)).unwrap();
    tmux.new_session(&sleeper("b", &sandbox.dir)).unwrap();
    tmux.set_wake_hook(&tmux::WakeHook::for_file(&wake).unwrap()).unwrap();
    assert_eq!(tmux.kill_session(&name("a")), Ok(Killed::Yes));
    wait_until("the wake file to be opened for writing", || inotify.read_events().is_ok_and(|e| !e.is_empty()));
    assert_eq!(fs::read(&wake).unwrap(), b"", "the wake writes nothing");
    assert!((1..=3).all(|n| !marker(n).exists()), "a marker exists: the path ran as a command");
    assert_eq!(tmux.display(&name("b"), "#{pane_in_mode}"), Ok("0".to_owned()), "the job printed or failed");
}

/// The wake for a file that is gone (no supervisor ever ran, or its state directory was removed): the job does
/// nothing, creates nothing and still exits 0 silently, so no pane is put into view mode.
#[test]
fn the_wake_hook_for_a_missing_file_is_silent() {
    let sandbox = Sandbox::new();
    let tmux = sandbox.real();
    let wake = sandbox.path("gone/tmux-wake");
    tmux.ensure_server_and_list().unwrap();
    tmux.new_session(&sleeper("a", &sandbox.dir)).unwrap();
    tmux.new_session(&sleeper("b", &sandbox.dir)).unwrap();
    tmux.set_wake_hook(&tmux::WakeHook::for_file(&wake).unwrap()).unwrap();
    tmux.set_wake_hook(&tmux::WakeHook::for_file(&wake).unwrap()).unwrap();
    assert_eq!(tmux.kill_session(&name("a")), Ok(Killed::Yes));
    // The job ends within milliseconds; a pane in view mode would show up within this period.
    // Only an answer other than 0 is view mode: a query that timed out on a loaded machine says nothing about it.
    let in_mode = becomes_true_within(
        Duration::from_millis(500),
        || matches!(tmux.display(&name("b"), "#{pane_in_mode}"), Ok(mode) if mode != "0"),
    );
    assert!(!in_mode, "the job printed or failed");
    assert!(!wake.exists() && !sandbox.path("gone").exists());
}
