//! The per-scenario sandbox (80 I3–I6): a fresh root with HOME, fake agents and capacity files, a private tmux
//! socket in its own short directory, a cleared environment for every product process, and a teardown that
//! runs even when the test panics.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tmux::{Tmux, TmuxApi, TmuxConfig};

use crate::agents::{AgentRecords, script};
use crate::bake::{Profile, bake};
use crate::bins::bin;
use crate::slots::{Slot, make_writable};

/// The line of 70 CI-2.2 printed when tmux is missing (80 I13: no silent skip).
pub const TMUX_MISSING: &str = "ci: tmux is required by the workspace tests and is not installed; install it (Debian: sudo apt-get install tmux) and run again";

/// Where HOME lives in a sandbox root, as the baked slot epilogues expect it (80 I3, I9).
const HOME_UNDER_ROOT: &str = "home/agent";

static NEXT_SOCKET: AtomicUsize = AtomicUsize::new(0);
static STALE_SWEEP: std::sync::Once = std::sync::Once::new();

/// One scenario's world. Dropping it stops every tracked process, kills the private server and removes the root.
#[derive(Debug)]
pub struct Sandbox {
    root: PathBuf,
    home: PathBuf,
    tmux_dir: PathBuf,
    socket: String,
    env: BTreeMap<String, OsString>,
    tracked: Mutex<Vec<Child>>,
    temp: Option<tempfile::TempDir>,
    slot: Option<Slot>,
    /// Where [`Sandbox::cmd`] finds the products, when not the build's own directory (the bench's baseline).
    bin_dir: Option<PathBuf>,
    /// When set, every product process starts under this umask (and so do the tmux server and panes it starts).
    umask: Option<u32>,
    /// The real tmux program, whatever `AGENT_BOX_TMUX_BIN` later points at (the tmux unit's stand-in runs it).
    real_tmux: PathBuf,
}

impl Sandbox {
    /// A sandbox in a fresh temporary root; the epilogue is the unbaked build (it records nothing).
    pub fn new() -> Self {
        let temp = tempfile::Builder::new().prefix("abs-").tempdir().unwrap();
        let root = temp.path().to_path_buf();
        let epilogue = bin("agent-box-mark-stopped");
        Self::build(root, Some(temp), None, epilogue, HOME_UNDER_ROOT)
    }

    /// [`Sandbox::new`] whose products get `epilogue` as `AGENT_BOX_MARK_STOPPED` (bench's epilogue section, which has
    /// a baked one and builds no other product).
    pub fn with_epilogue(epilogue: PathBuf) -> Self {
        let temp = tempfile::Builder::new().prefix("abs-").tempdir().unwrap();
        let root = temp.path().to_path_buf();
        Self::build(root, Some(temp), None, epilogue, HOME_UNDER_ROOT)
    }

    /// [`Sandbox::new`] with HOME at `<root>/<home>` instead of `<root>/home/agent`: a HOME whose name holds text a
    /// shell or tmux would read as syntax, for the scenarios that prove it is only ever data.
    pub fn with_home(home: &str) -> Self {
        let temp = tempfile::Builder::new().prefix("abs-").tempdir().unwrap();
        let root = temp.path().to_path_buf();
        let epilogue = bin("agent-box-mark-stopped");
        Self::build(root, Some(temp), None, epilogue, home)
    }

    /// A sandbox at `root`, a directory the caller owns and removes (the demo's `target/tmp/demo`, which its
    /// `--keep` leaves for inspection), with HOME at `<root>/<home>` and `epilogue` baked for it. Dropping it
    /// stops its processes and its tmux server as any sandbox does; the root stays.
    pub fn at(root: PathBuf, home: &str, epilogue: PathBuf) -> Self {
        Self::build(root, None, None, epilogue, home)
    }

    /// A sandbox in a claimed slot, with the real epilogue baked for its root (80 I9).
    pub fn in_slot() -> Self {
        let slot = Slot::claim();
        let root = slot.root().to_path_buf();
        let home = root.join("home/agent");
        let epilogue =
            bake(&home.join(".config/agent-box/sessions.json"), &home.join(".local/state/agent-box"), Profile::Dev)
                .unwrap_or_else(|e| panic!("cannot bake the epilogue for the slot: {e}"));
        Self::build(root, None, Some(slot), epilogue, HOME_UNDER_ROOT)
    }

    /// Issue 26: box `k` of a test with several boxes, in box slot `k` with the real epilogue baked for it.
    pub fn in_box_slot(k: usize) -> Self {
        let slot = Slot::claim_box(k);
        let root = slot.root().to_path_buf();
        let home = root.join("home/agent");
        let epilogue =
            bake(&home.join(".config/agent-box/sessions.json"), &home.join(".local/state/agent-box"), Profile::Dev)
                .unwrap_or_else(|e| panic!("cannot bake the epilogue for box slot {k}: {e}"));
        Self::build(root, None, Some(slot), epilogue, HOME_UNDER_ROOT)
    }

    fn build(
        root: PathBuf,
        temp: Option<tempfile::TempDir>,
        slot: Option<Slot>,
        epilogue: PathBuf,
        home_under_root: &str,
    ) -> Self {
        STALE_SWEEP.call_once(sweep_stale_tmux_dirs);
        let real_tmux = tmux::find_on_path("tmux", std::env::var_os("PATH").as_deref()).expect(TMUX_MISSING);
        let home = root.join(home_under_root);
        fs::create_dir_all(&home).unwrap();
        fs::set_permissions(&home, fs::Permissions::from_mode(0o700)).unwrap();
        let (tmux_dir, socket) = private_tmux_dir();
        write_fixtures(&root);
        let mut sandbox = Self {
            root,
            home,
            tmux_dir,
            socket,
            env: BTreeMap::new(),
            tracked: Mutex::new(Vec::new()),
            temp,
            slot,
            bin_dir: None,
            umask: None,
            real_tmux: real_tmux.clone(),
        };
        sandbox.base_env(&epilogue, &real_tmux);
        sandbox
    }

    fn base_env(&mut self, epilogue: &Path, real_tmux: &Path) {
        let root = self.root.clone();
        let agent = |name: &str| format!("{name}={}", root.join("bin").join(name).display());
        let pairs: Vec<(&str, OsString)> = vec![
            ("HOME", self.home.clone().into()),
            ("USER", "agent".into()),
            ("LOGNAME", "agent".into()),
            ("PATH", format!("{}:/usr/bin:/bin", root.join("bin").display()).into()),
            ("LANG", "C.UTF-8".into()),
            ("TZ", "UTC".into()),
            ("AGENT_BOX_TMUX_SOCKET", self.socket.clone().into()),
            ("AGENT_BOX_TMUX_TMPDIR", self.tmux_dir.clone().into()),
            ("AGENT_BOX_TMUX_CONF", "/dev/null".into()),
            ("AGENT_BOX_TMUX_BIN", real_tmux.into()),
            ("TMUX_TMPDIR", self.tmux_dir.clone().into()),
            ("AGENT_BOX_SESSION_LIMIT_FILE", root.join("session-limit").into()),
            ("AGENT_BOX_MEMINFO_FILE", root.join("meminfo").into()),
            ("AGENT_BOX_AGENTS", "claude codex shell tool".into()),
            ("AGENT_BOX_DEFAULT_AGENT", "tool".into()),
            (
                "AGENT_BOX_AGENT_BINS",
                format!("{} {} {} shell=/bin/sh", agent("claude"), agent("codex"), agent("tool")).into(),
            ),
            ("AGENT_BOX_MARK_STOPPED", epilogue.into()),
            ("AGENT_BOX_SESSIONS_SEED", root.join("seed.json").into()),
        ];
        for (key, value) in pairs {
            self.env.insert(key.to_owned(), value);
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn home(&self) -> &Path {
        &self.home
    }
    pub fn socket(&self) -> &str {
        &self.socket
    }
    pub fn tmux_dir(&self) -> &Path {
        &self.tmux_dir
    }
    /// The per-user paths every product process of this sandbox resolves (registry::Paths, the one layout).
    pub fn paths(&self) -> registry::Paths {
        registry::Paths::for_root(&self.home, "agent")
            .with_capacity_files(self.root.join("session-limit"), self.root.join("meminfo"))
    }
    /// The registry every product process of this sandbox uses (the default path under HOME).
    pub fn registry(&self) -> PathBuf {
        self.paths().registry().to_path_buf()
    }
    pub fn state_dir(&self) -> PathBuf {
        self.paths().state_dir().to_path_buf()
    }
    /// The path of the epilogue product processes run.
    pub fn epilogue(&self) -> PathBuf {
        PathBuf::from(self.env_var("AGENT_BOX_MARK_STOPPED").unwrap_or_default())
    }

    pub fn env_var(&self, key: &str) -> Option<&OsStr> {
        self.env.get(key).map(OsString::as_os_str)
    }
    /// Every variable product processes of this sandbox get.
    pub fn env_pairs(&self) -> impl Iterator<Item = (&String, &OsString)> {
        self.env.iter()
    }
    pub fn set_env(&mut self, key: &str, value: impl Into<OsString>) {
        self.env.insert(key.to_owned(), value.into());
    }
    pub fn remove_env(&mut self, key: &str) {
        self.env.remove(key);
    }

    /// Runs the products of `dir` instead of this build's (the bench runs a baseline revision's binaries).
    pub fn set_bin_dir(&mut self, dir: PathBuf) {
        self.bin_dir = Some(dir);
    }

    /// A product binary with exactly the sandbox environment, run in HOME (under the sandbox umask when one is
    /// set: `/bin/sh` sets it and execs the product, so the pid is the product's).
    pub fn cmd(&self, product: &str) -> Command {
        let program = self.bin_dir.as_ref().map_or_else(|| bin(product), |dir| dir.join(product));
        let mut cmd = match self.umask {
            None => Command::new(program),
            Some(mask) => {
                let mut sh = Command::new("/bin/sh");
                sh.arg("-c").arg(format!("umask {mask:03o} && exec \"$0\" \"$@\"")).arg(program);
                sh
            }
        };
        cmd.env_clear().envs(&self.env).current_dir(&self.home);
        cmd
    }

    /// Runs every later product process under `mask` (80 H09, 90 S3); the test process's own umask is shared by
    /// all its threads, so it is never changed.
    pub fn set_umask(&mut self, mask: u32) {
        self.umask = Some(mask);
    }

    /// Starts `cmd` and tracks it, so teardown stops it even after a panic; returns its pid.
    pub fn spawn_tracked(&self, mut cmd: Command) -> u32 {
        let child = cmd.spawn().unwrap();
        let pid = child.id();
        let line = format!("{pid} {}\n", start_time(pid).unwrap_or_default());
        let _ = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.tmux_dir.join("pids"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
        self.tracked.lock().unwrap().push(child);
        pid
    }

    /// Sends `signal` to tracked process `pid`.
    pub fn signal(&self, pid: u32, signal: Signal) {
        assert!(pid > 1, "refusing to signal pid {pid} (a process group or init)");
        let _ = kill(Pid::from_raw(i32::try_from(pid).unwrap()), signal);
    }

    /// Whether tracked process `pid` has exited, without waiting: `None` while it runs (or is not tracked),
    /// `Some(code)` once it ended (`Some(None)` after a signal).
    pub fn exited(&self, pid: u32) -> Option<Option<i32>> {
        let mut tracked = self.tracked.lock().unwrap();
        let child = tracked.iter_mut().find(|c| c.id() == pid)?;
        child.try_wait().ok().flatten().map(|status| status.code())
    }

    /// Waits for tracked process `pid` to exit, returning its exit code.
    pub fn wait_exit(&self, pid: u32, limit: Duration) -> Option<i32> {
        let start = Instant::now();
        loop {
            {
                let mut tracked = self.tracked.lock().unwrap();
                if let Some(child) = tracked.iter_mut().find(|c| c.id() == pid) {
                    if let Ok(Some(status)) = child.try_wait() {
                        return status.code();
                    }
                } else {
                    return None;
                }
            }
            assert!(start.elapsed() < limit, "process {pid} did not exit within {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The adapter on this sandbox's private server, with a scrubbed parent environment.
    pub fn tmux(&self) -> Tmux {
        let bin = PathBuf::from(self.env_var("AGENT_BOX_TMUX_BIN").unwrap_or(OsStr::new("tmux")));
        let config = TmuxConfig::new(bin, self.socket.clone(), self.tmux_dir.clone()).with_conf("/dev/null");
        Tmux::new(config)
            .with_parent_env(vec![("PATH".into(), "/usr/bin:/bin".into()), ("HOME".into(), self.home.clone().into())])
    }

    /// Starts the stand-in of the tmux unit (75-upgrades UP-2.1): `tmux -D` on the private socket, in the foreground,
    /// with the product environment as its unit environment (without `AGENT_BOX_TMUX_SERVER`, which only the
    /// supervisor's unit sets); tracked, so teardown ends it and its panes even after a panic. Returns its pid once
    /// the server answers.
    pub fn start_tmux_unit(&self) -> u32 {
        let unit_env: Vec<(OsString, OsString)> = self
            .env
            .iter()
            .filter(|(k, _)| k.as_str() != "AGENT_BOX_TMUX_SERVER")
            .map(|(k, v)| (k.into(), v.clone()))
            .collect();
        let config =
            TmuxConfig::new(&self.real_tmux, self.socket.clone(), self.tmux_dir.clone()).with_conf("/dev/null");
        let mut cmd = Tmux::new(config).with_parent_env(unit_env).foreground_server();
        cmd.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
        let pid = self.spawn_tracked(cmd);
        crate::wait_until("the tmux unit's server to answer", || {
            self.tmux().list_server().is_ok_and(|s| s.server_pid == Some(pid))
        });
        pid
    }

    /// The live session names (empty when no server runs).
    pub fn live(&self) -> Vec<String> {
        self.tmux().list_sessions().unwrap_or_default()
    }

    /// What fake agent `name` recorded.
    pub fn agent(&self, name: &str) -> AgentRecords {
        AgentRecords::new(&self.root, name)
    }

    /// Writes the registry (creating its directory 0700).
    pub fn write_registry(&self, text: &str) {
        let registry = self.registry();
        registry::ensure_private_dir(registry.parent().unwrap()).unwrap();
        fs::write(&registry, text).unwrap();
    }

    /// The registry document (panics when it is not valid).
    pub fn read_registry(&self) -> registry::Document {
        registry::Document::parse(&fs::read(self.registry()).unwrap()).unwrap()
    }

    /// Writes the limit file.
    pub fn set_limit(&self, limit: &str) {
        fs::write(self.root.join("session-limit"), limit).unwrap();
    }

    /// Routes tmux calls of product processes through a wrapper that logs `<ppid> <argv>` to `<root>/tmux.log`.
    pub fn use_counting_tmux(&mut self) {
        let real = self.env_var("AGENT_BOX_TMUX_BIN").map(PathBuf::from).unwrap();
        let wrapper = self.root.join("bin/tmux-counting");
        let log = self.root.join("tmux.log");
        let text = format!(
            "#!/bin/sh\nprintf '%s %s\\n' \"$PPID\" \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        );
        fs::write(&wrapper, text).unwrap();
        fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
        self.set_env("AGENT_BOX_TMUX_BIN", wrapper);
    }

    /// Routes tmux calls through a wrapper that, right after a successful `new-session` of session `name`,
    /// SIGKILLs its caller (`$PPID`, the supervisor): the supervisor dies between the spawn and the record of it
    /// (30 SUP-7.1 steps 5 and 7), deterministically and without test-only code in the product.
    pub fn kill_caller_after_new_session(&mut self, name: &str) {
        let real = self.env_var("AGENT_BOX_TMUX_BIN").map(PathBuf::from).unwrap();
        let wrapper = self.root.join("bin/tmux-kill-caller");
        let text = format!(
            "#!/bin/sh\n'{}' \"$@\"; s=$?\ncase \" $* \" in *\" new-session \"*\" {name} \"*) [ \"$s\" -eq 0 ] && kill -KILL \"$PPID\" ;; esac\nexit $s\n",
            real.display()
        );
        fs::write(&wrapper, text).unwrap();
        fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
        self.set_env("AGENT_BOX_TMUX_BIN", wrapper);
    }

    /// The counting wrapper's log lines from process `pid` (80 I10).
    pub fn tmux_calls_of(&self, pid: u32) -> Vec<String> {
        let prefix = format!("{pid} ");
        fs::read_to_string(self.root.join("tmux.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
            .collect()
    }

    /// Ticks process `pid` has run: its T1 calls (80 I10).
    pub fn ticks_of(&self, pid: u32) -> usize {
        self.tmux_calls_of(pid).iter().filter(|l| is_tick_call(l)).count()
    }

    fn teardown(&mut self) {
        let mut tracked = std::mem::take(&mut *self.tracked.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        for child in &tracked {
            let _ = kill(Pid::from_raw(i32::try_from(child.id()).unwrap_or(0)), Signal::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for child in &mut tracked {
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = self.tmux().kill_server();
        let _ = fs::remove_dir_all(&self.tmux_dir);
        if std::env::var_os("AGENT_BOX_TEST_KEEP").is_some() {
            eprintln!("AGENT_BOX_TEST_KEEP: kept {}", self.root.display());
            if let Some(temp) = self.temp.take() {
                let _ = temp.keep();
            }
        } else {
            make_writable(&self.root);
        }
        self.slot.take();
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// True for the counting wrapper's line of a T1 call: the one that asks for the server's pid, with `start-server`
/// (30 SUP-4.1) or, with an external server, without (75-upgrades UP-3.1).
pub fn is_tick_call(line: &str) -> bool {
    line.contains("display-message -p #{pid}")
}

/// `/tmp/abt-<pid>-<n>`, 0700, with an owner file for the stale sweep; the socket path stays under 100 bytes.
fn private_tmux_dir() -> (PathBuf, String) {
    let socket = format!("abt-{}-{}", std::process::id(), NEXT_SOCKET.fetch_add(1, Ordering::SeqCst));
    let dir = PathBuf::from("/tmp").join(&socket);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    let me = std::process::id();
    fs::write(dir.join("owner"), format!("{me} {}\n", start_time(me).unwrap_or_default())).unwrap();
    let socket_path = dir.join(format!("tmux-{}", nix::unistd::getuid())).join(&socket);
    assert!(socket_path.as_os_str().len() < 100, "socket path too long: {}", socket_path.display());
    (dir, socket)
}

fn write_fixtures(root: &Path) {
    let bin_dir = root.join("bin");
    fs::create_dir_all(&bin_dir).unwrap();
    let fake = bin_dir.join("fake-agent");
    fs::write(&fake, script(root)).unwrap();
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    for name in ["claude", "codex", "tool"] {
        let link = bin_dir.join(name);
        let _ = fs::remove_file(&link);
        symlink("fake-agent", &link).unwrap();
    }
    fs::write(root.join("session-limit"), "8\n").unwrap();
    fs::write(root.join("meminfo"), "MemTotal:        8388608 kB\nMemFree:         1024 kB\n").unwrap();
}

/// Field 22 of `/proc/<pid>/stat`: the start time that tells a reused pid from the original.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split(' ').nth(19)?.parse().ok()
}

fn alive_as(pid: u32, started: u64) -> bool {
    start_time(pid) == Some(started)
}

/// Cleans private tmux directories whose owning test process is gone (80 I6).
fn sweep_stale_tmux_dirs() {
    let Ok(entries) = fs::read_dir("/tmp") else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("abt-") {
            continue;
        }
        let dir = entry.path();
        let owner = fs::read_to_string(dir.join("owner")).unwrap_or_default();
        let mut fields = owner.split_whitespace().map(|f| f.parse::<u64>().ok());
        if let (Some(Some(pid)), Some(Some(started))) = (fields.next(), fields.next())
            && alive_as(u32::try_from(pid).unwrap_or(0), started)
        {
            continue;
        }
        for line in fs::read_to_string(dir.join("pids")).unwrap_or_default().lines() {
            let mut f = line.split_whitespace().map(|x| x.parse::<u64>().ok());
            if let (Some(Some(pid)), Some(Some(started))) = (f.next(), f.next()) {
                let pid = u32::try_from(pid).unwrap_or(0);
                if alive_as(pid, started) {
                    let _ = kill(Pid::from_raw(i32::try_from(pid).unwrap_or(0)), Signal::SIGKILL);
                }
            }
        }
        if let Some(tmux) = tmux::find_on_path("tmux", std::env::var_os("PATH").as_deref()) {
            let config = TmuxConfig::new(tmux, name.clone(), dir.clone()).with_conf("/dev/null");
            let _ = Tmux::new(config).with_parent_env(Vec::new()).kill_server();
        }
        let _ = fs::remove_dir_all(&dir);
    }
}
