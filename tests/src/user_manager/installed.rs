//! agent-box installed for the test account the way README's "Install without Nix" says (the library `cargo xtask
//! install` writes through, with this build's debug programs and an epilogue baked for the account's HOME, instead of
//! a release build), plus what the test reads: fake harnesses named `claude` and `codex` on the installing PATH (so
//! the default harness is `claude`, as on a box with claude), a `tmux` on that PATH that logs every call with its
//! time and caller before it execs the real one (so a supervisor's ticks can be counted and timed), and a runtime
//! drop-in that appends the supervisor's stderr to a file (there is no journal under this manager).

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::UserManager;
use crate::agents::{AgentRecords, script};
use crate::bake::{Profile, bake};
use crate::bins::bin;
use crate::fixtures::OutputAssertExt;
use crate::sandbox::is_tick_call;
use agent_box_install::{self as install, Inputs, Layout, Sources, UNIT_NAME};

/// The installation of one test account.
#[derive(Debug)]
pub struct Installed {
    pub inputs: Inputs,
    pub layout: Layout,
    sources: Sources,
    paths: registry::Paths,
    root: PathBuf,
}

impl Installed {
    /// Writes the fake harnesses and the logging `tmux` (as the user), bakes the epilogue for the user's registry and
    /// state directory, and works out what `cargo xtask install` would from that user's shell: PATH, tmux, harnesses.
    pub fn prepare(manager: &UserManager) -> Self {
        let root = manager.root().to_path_buf();
        let home = manager.home().to_path_buf();
        let real_tmux =
            tmux::find_on_path("tmux", std::env::var_os("PATH").as_deref()).expect(crate::sandbox::TMUX_MISSING);
        manager.account().files_as(|| write_bin(&root, &real_tmux));
        let paths = registry::Paths::for_root(&home, &manager.account().name);
        let epilogue = bake(paths.registry(), paths.state_dir(), Profile::Dev)
            .unwrap_or_else(|e| panic!("cannot bake the epilogue for {}: {e}", home.display()));
        let inherited = format!("{}:/usr/bin:/bin", root.join("bin").display());
        let prefix = home.join(".local");
        let inputs = Inputs {
            user: manager.account().name.clone(),
            tmux: tmux::find_on_path("tmux", Some(inherited.as_ref())).unwrap(),
            path: install::unit_path(&prefix, &inherited),
            home: home.clone(),
            prefix,
            agents: vec!["claude".into(), "codex".into(), "shell".into()],
            default_agent: "claude".into(),
            unit: true,
            queue: install::QueueBounds::default(),
        };
        let sources = Sources {
            supervisor: bin("agent-box-supervisor"),
            session: bin("agent-box-session"),
            webhook_spawn: bin("agent-box-webhook-spawn"),
            epilogue,
            man_pages: Vec::new(),
        };
        let layout = Layout::new(&inputs.prefix, &inputs.home);
        Self { inputs, layout, sources, paths, root }
    }

    /// `cargo xtask install`'s writes, as the user: a first install or, run again, an upgrade in place.
    pub fn install(&self, manager: &UserManager) -> Vec<PathBuf> {
        manager
            .account()
            .files_as(|| install::install(&self.inputs, &self.sources))
            .unwrap_or_else(|e| panic!("install failed: {e}"))
    }

    /// `cargo xtask uninstall`'s removal of what the manifest lists, as the user (after the test stopped the units).
    pub fn uninstall(&self, manager: &UserManager) -> Vec<PathBuf> {
        manager
            .account()
            .files_as(|| install::uninstall(&self.inputs.prefix))
            .unwrap_or_else(|e| panic!("uninstall failed: {e}"))
    }

    /// The runtime drop-in `$XDG_RUNTIME_DIR/systemd/user/agent-box.service.d/test-log.conf`, which appends the
    /// supervisor's stderr to [`Installed::supervisor_log_path`]. Written by the user inside the manager's namespace
    /// (the runtime directory is a tmpfs only there); takes effect at the next daemon-reload.
    pub fn write_log_drop_in(&self, manager: &UserManager) {
        let dir = manager.runtime_dir().join(format!("systemd/user/{UNIT_NAME}.d"));
        let text = format!(
            "# The test's: there is no journal under this manager.\n[Service]\nStandardError=append:{}\n",
            self.supervisor_log_path().display()
        );
        let mut cmd = manager.as_user("/bin/sh");
        cmd.args(["-c", "mkdir -p \"$1\" && printf '%s' \"$2\" > \"$1/test-log.conf\"", "sh"]).arg(&dir).arg(text);
        cmd.assert().success();
    }

    pub fn supervisor_log_path(&self) -> PathBuf {
        self.root.join("supervisor.log")
    }
    /// The supervisor's stderr so far, across all its restarts.
    pub fn supervisor_log(&self) -> String {
        fs::read_to_string(self.supervisor_log_path()).unwrap_or_default()
    }

    /// The installed wrapper `bin/<program>` as the user would run it, with `env` added to the login environment.
    pub fn command(&self, manager: &UserManager, program: &str, env: &[(&str, &str)]) -> Command {
        let mut cmd = manager.as_user("env");
        cmd.args(env.iter().map(|(k, v)| format!("{k}={v}"))).arg(self.layout.bin.join(program));
        cmd
    }

    /// The names the registry lists.
    pub fn registry_names(&self) -> Vec<String> {
        let doc: Value =
            serde_json::from_slice(&fs::read(self.paths.registry()).unwrap_or_default()).unwrap_or_default();
        doc["sessions"].as_object().map(|s| s.keys().cloned().collect()).unwrap_or_default()
    }

    /// The registry file (it stays after an uninstall).
    pub fn registry(&self) -> &Path {
        self.paths.registry()
    }

    /// `agent-box-session ls --json` as the user (the operator's own view: what tmux runs, through the tmux crate).
    pub fn ls(&self, manager: &UserManager) -> Value {
        let out = self.command(manager, "agent-box-session", &[]).args(["ls", "--json"]).output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("agent-box-session ls --json: {e} ({}): {}", out.status, String::from_utf8_lossy(&out.stderr))
        })
    }

    /// The sessions `ls` reports live, sorted.
    pub fn live(&self, manager: &UserManager) -> Vec<String> {
        let ls = self.ls(manager);
        let sessions = ls["sessions"].as_array().cloned().unwrap_or_default();
        let mut live: Vec<String> = sessions
            .iter()
            .filter(|s| s["state"] == "live")
            .filter_map(|s| s["name"].as_str().map(str::to_owned))
            .collect();
        live.sort();
        live
    }

    /// What fake harness session `name` recorded (the fake agent names itself after its tmux session).
    pub fn agent(&self, name: &str) -> AgentRecords {
        AgentRecords::new(&self.root, name)
    }

    /// The lease of `name`, when present and JSON.
    pub fn lease(&self, name: &str) -> Option<Value> {
        serde_json::from_slice(&fs::read(self.paths.lease_dir().join(format!("{name}.json"))).ok()?).ok()
    }

    /// The hook log's lines.
    pub fn hook_log(&self) -> Vec<String> {
        fs::read_to_string(self.paths.hook_log()).unwrap_or_default().lines().map(str::to_owned).collect()
    }

    /// The times (ns since the epoch) of the ticks process `pid` ran: its T1 calls in the logging tmux's log.
    pub fn ticks_of(&self, pid: u32) -> Vec<u128> {
        let log = fs::read_to_string(self.root.join("tmux.log")).unwrap_or_default();
        log.lines()
            .filter_map(|line| {
                let mut fields = line.splitn(3, ' ');
                let (at, caller, args) = (fields.next()?, fields.next()?, fields.next()?);
                (caller == pid.to_string() && is_tick_call(args)).then(|| at.parse().ok()).flatten()
            })
            .collect()
    }
}

/// `<root>/bin`: the fake agent as `claude` and `codex`, and `tmux`, which appends `<ns> <ppid> <args>` to
/// `<root>/tmux.log` and execs the real tmux (so a unit's main process is still tmux itself).
fn write_bin(root: &Path, real_tmux: &Path) {
    let dir = root.join("bin");
    fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("fake-agent");
    fs::write(&fake, script(root)).unwrap();
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    for name in ["claude", "codex"] {
        symlink("fake-agent", dir.join(name)).unwrap();
    }
    let wrapper = format!(
        "#!/bin/sh\nprintf '%s %s %s\\n' \"$(date +%s%N)\" \"$PPID\" \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
        root.join("tmux.log").display(),
        real_tmux.display()
    );
    fs::write(dir.join("tmux"), wrapper).unwrap();
    fs::set_permissions(dir.join("tmux"), fs::Permissions::from_mode(0o755)).unwrap();
}
