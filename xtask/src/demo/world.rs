//! The demo's private world: root under `target/tmp/demo`, HOME, a private tmux socket, the embedded agent and
//! seed, the baked epilogue, the supervisor process, and the teardown that runs on every path.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agent_box_tests::bake::{Profile, bake};
use agent_box_tests::bins::bin_dir;
use base::SessionName;
use lease::LeaseDir;
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, kill, sigaction};
use nix::unistd::Pid;
use serde_json::Value;
use tmux::{Tmux, TmuxApi, TmuxConfig};

use crate::{exit, run};

const AGENT_SCRIPT: &str = include_str!("agent.sh");

/// Set by SIGINT/SIGTERM; every wait loop checks it (XT-3.5).
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: nix::libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

#[derive(Debug)]
pub struct World {
    root: PathBuf,
    home: PathBuf,
    tmux_dir: PathBuf,
    env: Vec<(String, OsString)>,
    tmux: Tmux,
    supervisor: Option<Child>,
    started: Instant,
    quiet: bool,
    torn_down: bool,
}

impl World {
    /// XT-3.2: build, bake, wipe and recreate the root, write the agent, seed, limit file and lease.
    pub fn prepare(quiet: bool) -> Result<Self, u8> {
        let Some(real_tmux) = tmux::find_on_path("tmux", std::env::var_os("PATH").as_deref()) else {
            println!(
                "ci: tmux is required by the workspace tests and is not installed; install it (Debian: sudo apt-get install tmux) and run again"
            );
            return Err(exit::SETUP);
        };
        install_interrupt_handler();
        let mut build = run::command("cargo");
        build.args(["build", "--workspace", "--bins", "--locked"]);
        let built = if quiet {
            build.arg("--quiet").status()
        } else {
            println!("demo: building the workspace (the first run compiles everything: a few minutes on 2 cores)");
            run::status(&mut build)
        };
        if !built.is_ok_and(|s| s.success()) {
            return Err(exit::SETUP);
        }
        let root = run::workspace_root().join("target/tmp/demo");
        let home = root.join("home/demo");
        let registry = home.join(".config/agent-box/sessions.json");
        let state = home.join(".local/state/agent-box");
        if !quiet {
            println!("demo: baking the epilogue for the demo root (first run: about a minute; later runs reuse it)…");
        }
        let baked = bake(&registry, &state, Profile::Dev).map_err(|e| {
            println!("demo: cannot bake the epilogue: {e}");
            exit::SETUP
        })?;
        let _ = fs::remove_dir_all(&root);
        // The root and target/tmp above it get ordinary modes first: ensure_private_dir makes every directory it
        // creates 0700, and a 0700 target/tmp kept the unprivileged test user of `cargo xtask ci` (faults::f1) out
        // of its slot sandbox after a demo.
        fs::create_dir_all(&root).map_err(|e| setup_error(&root, &e))?;
        registry::ensure_private_dir(&home).map_err(|e| setup_error(&home, &e))?;
        let pid = std::process::id();
        let socket = format!("abx-demo-{pid}");
        let tmux_dir = PathBuf::from(format!("/tmp/abx-demo-{pid}"));
        let _ = fs::remove_dir_all(&tmux_dir);
        registry::ensure_private_dir(&tmux_dir).map_err(|e| setup_error(&tmux_dir, &e))?;
        let tmux =
            Tmux::new(TmuxConfig::new(real_tmux.clone(), socket.clone(), tmux_dir.clone()).with_conf("/dev/null"))
                .with_parent_env(vec![("PATH".into(), "/usr/bin:/bin".into()), ("HOME".into(), home.clone().into())]);
        let mut world = Self {
            env: Vec::new(),
            root,
            home,
            tmux_dir,
            tmux,
            supervisor: None,
            started: Instant::now(),
            quiet,
            torn_down: false,
        };
        world.write_files(&baked, &socket).map_err(|e| setup_error(&world.root, &e))?;
        Ok(world)
    }

    fn write_files(&mut self, baked: &Path, socket: &str) -> std::io::Result<()> {
        let bin = self.root.join("bin");
        fs::create_dir_all(&bin)?;
        let agent = bin.join("demo-agent");
        fs::write(&agent, AGENT_SCRIPT.replace("@ROOT@", &self.root.display().to_string()))?;
        fs::set_permissions(&agent, fs::Permissions::from_mode(0o755))?;
        let seed = self.root.join("seed.json");
        fs::write(&seed, SEED)?;
        let limit = self.root.join("session-limit");
        fs::write(&limit, "8\n")?;
        let hook = SessionName::parse("hook-demo-a1b2").map_err(std::io::Error::other)?;
        LeaseDir::new(self.state_dir().join("lease"))
            .create(&hook, "github:example/demo", Some("1"), None)
            .map_err(std::io::Error::other)?;
        let pairs: Vec<(&str, OsString)> = vec![
            ("HOME", self.home.clone().into()),
            ("USER", "demo".into()),
            ("PATH", format!("{}:/usr/bin:/bin", bin.display()).into()),
            ("AGENT_BOX_TMUX_SOCKET", socket.into()),
            ("AGENT_BOX_TMUX_TMPDIR", self.tmux_dir.clone().into()),
            ("AGENT_BOX_TMUX_CONF", "/dev/null".into()),
            ("AGENT_BOX_SESSIONS_SEED", seed.into()),
            ("AGENT_BOX_AGENT_BINS", format!("demo={} shell=/bin/sh", agent.display()).into()),
            ("AGENT_BOX_AGENTS", "demo shell".into()),
            ("AGENT_BOX_DEFAULT_AGENT", "demo".into()),
            ("AGENT_BOX_MARK_STOPPED", baked.into()),
            ("AGENT_BOX_SESSION_LIMIT_FILE", limit.into()),
            ("AGENT_BOX_HOST_LABEL", "demo.invalid".into()),
        ];
        self.env = pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        Ok(())
    }

    pub fn registry(&self) -> PathBuf {
        self.home.join(".config/agent-box/sessions.json")
    }
    pub fn state_dir(&self) -> PathBuf {
        self.home.join(".local/state/agent-box")
    }
    pub fn tmux(&self) -> &Tmux {
        &self.tmux
    }
    pub fn interrupted(&self) -> bool {
        INTERRUPTED.load(Ordering::SeqCst)
    }
    pub fn elapsed_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// A product binary with exactly the demo environment.
    pub fn product(&self, name: &str) -> Command {
        let mut cmd = Command::new(bin_dir().join(name));
        cmd.env_clear().envs(self.env.iter().map(|(k, v)| (k, v))).current_dir(&self.home);
        cmd
    }

    pub fn start_supervisor(&mut self) {
        let log = fs::File::create(self.root.join("supervisor.log")).ok();
        let mut cmd = self.product("agent-box-supervisor");
        cmd.stdin(Stdio::null()).stdout(Stdio::null());
        cmd.stderr(log.map_or_else(Stdio::null, Stdio::from));
        self.started = Instant::now();
        self.say("starting agent-box-supervisor (stderr: target/tmp/demo/supervisor.log)");
        self.supervisor = cmd.spawn().ok();
    }

    pub fn say(&self, text: &str) {
        if !self.quiet {
            println!("    {text}");
        }
    }

    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// The raw registry entry of `name`.
    pub fn entry(&self, name: &str) -> Option<Value> {
        let doc: Value = serde_json::from_slice(&fs::read(self.registry()).ok()?).ok()?;
        doc["sessions"].get(name).cloned()
    }

    /// Runs `agent-box-session ARGS`, echoed as the operator would type it.
    pub fn session(&self, args: &[&str]) {
        self.say(&format!("$ agent-box-session {}", args.join(" ")));
        let _ = self.product("agent-box-session").args(args).stdout(Stdio::null()).status();
    }

    /// XT-3.5: supervisor, server, private directory, root; safe to call twice.
    pub fn teardown(&mut self, keep: bool) {
        if std::mem::replace(&mut self.torn_down, true) {
            return;
        }
        if let Some(mut child) = self.supervisor.take() {
            let _ = kill(Pid::from_raw(i32::try_from(child.id()).unwrap_or(0)), Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = self.tmux.kill_server();
        if !matches!(self.tmux.list_sessions(), Ok(list) if list.is_empty()) {
            println!("demo: warning: the private tmux server still answers");
        }
        let _ = fs::remove_dir_all(&self.tmux_dir);
        if keep {
            println!("demo: kept {}", self.root.display());
        } else {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.teardown(false);
    }
}

const SEED: &str = r#"{
  "version": 1,
  "sessions": {
    "main": {"agent": "demo", "extraArgs": ["work"]},
    "crasher": {"agent": "demo", "extraArgs": ["crash-once", "3", "4"]},
    "hook-demo-a1b2": {"agent": "demo", "extraArgs": ["work"], "ephemeral": true},
    "parked": {"agent": "demo", "extraArgs": ["work"], "stopped": true}
  }
}
"#;

fn setup_error(path: &Path, err: &std::io::Error) -> u8 {
    println!("demo: cannot prepare {}: {err}", path.display());
    exit::SETUP
}

fn install_interrupt_handler() {
    let action = SigAction::new(SigHandler::Handler(on_interrupt), SaFlags::SA_RESTART, SigSet::empty());
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only stores to an atomic flag, which is async-signal-safe.
        #[allow(unsafe_code)]
        unsafe {
            let _ = sigaction(signal, &action);
        }
    }
}
