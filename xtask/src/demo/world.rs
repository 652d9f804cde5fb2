//! The demo's world, a harness [`Sandbox`] at `<target>/tmp/demo` (HOME `home/demo`, a private tmux socket,
//! the baked epilogue) with the demo's own agent, seed, limit and lease on top, and the teardown that runs on
//! every path.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use agent_box_install::bake::{Profile, bake};
use agent_box_install::workspace::Workspace;
use agent_box_tests::Sandbox;
use base::SessionName;
use lease::LeaseDir;
use serde_json::Value;
use tmux::{Tmux, TmuxApi};

use crate::{exit, run};

const AGENT_SCRIPT: &str = include_str!("agent.sh");

/// Where HOME lives under the demo root; the epilogue is baked for it.
const HOME_UNDER_ROOT: &str = "home/demo";

#[derive(Debug)]
pub struct World {
    root: PathBuf,
    /// `None` once torn down.
    sandbox: Option<Sandbox>,
    started: Instant,
    quiet: bool,
}

impl World {
    /// XT-3.2: build, bake, wipe and recreate the root, write the agent, seed, limit file and lease.
    pub fn prepare(quiet: bool) -> Result<Self, u8> {
        if tmux::find_on_path("tmux", std::env::var_os("PATH").as_deref()).is_none() {
            println!("{}", agent_box_tests::sandbox::TMUX_MISSING);
            return Err(exit::SETUP);
        }
        // Every wait loop checks the harness's interrupt flag (XT-3.5).
        agent_box_tests::interrupt::install();
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
        let root = run::target_dir().join("tmp/demo");
        let home = root.join(HOME_UNDER_ROOT);
        if !quiet {
            println!("demo: baking the epilogue for the demo root (first run: about a minute; later runs reuse it)…");
        }
        let workspace = Workspace { root: run::workspace_root(), target: run::target_dir() };
        let registry = home.join(".config/agent-box/sessions.json");
        let baked = bake(&workspace, &registry, &home.join(".local/state/agent-box"), Profile::Dev).map_err(|e| {
            println!("demo: cannot bake the epilogue: {e}");
            exit::SETUP
        })?;
        make_root(&root, &home)?;
        let sandbox = Sandbox::at(root.clone(), HOME_UNDER_ROOT, baked);
        let mut world = Self { root, sandbox: Some(sandbox), started: Instant::now(), quiet };
        world.write_files().map_err(|e| setup_error(&world.root, &e))?;
        Ok(world)
    }

    /// The demo agent, seed, limit and lease, and the variables that name them (over the sandbox's defaults).
    fn write_files(&mut self) -> std::io::Result<()> {
        let root = self.root.clone();
        let agent = root.join("bin/demo-agent");
        fs::write(&agent, AGENT_SCRIPT.replace("@ROOT@", &root.display().to_string()))?;
        fs::set_permissions(&agent, fs::Permissions::from_mode(0o755))?;
        fs::write(root.join("seed.json"), SEED)?;
        fs::write(root.join("session-limit"), "8\n")?;
        let hook = SessionName::parse("hook-demo-a1b2").map_err(std::io::Error::other)?;
        LeaseDir::new(self.state_dir().join("lease"))
            .create(&hook, "github:example/demo", Some("1"), None)
            .map_err(std::io::Error::other)?;
        let sandbox = self.sandbox_mut();
        sandbox.set_env("USER", "demo");
        sandbox.set_env("LOGNAME", "demo");
        sandbox.set_env("AGENT_BOX_AGENT_BINS", format!("demo={} shell=/bin/sh", agent.display()));
        sandbox.set_env("AGENT_BOX_AGENTS", "demo shell");
        sandbox.set_env("AGENT_BOX_DEFAULT_AGENT", "demo");
        sandbox.set_env("AGENT_BOX_HOST_LABEL", "demo.invalid");
        // The demo shows the real machine's memory, not the sandbox's fixture.
        sandbox.remove_env("AGENT_BOX_MEMINFO_FILE");
        Ok(())
    }

    fn sandbox(&self) -> &Sandbox {
        // Only teardown takes it, and nothing runs after teardown but Drop.
        self.sandbox.as_ref().unwrap_or_else(|| unreachable!("the demo world was used after its teardown"))
    }

    fn sandbox_mut(&mut self) -> &mut Sandbox {
        self.sandbox.as_mut().unwrap_or_else(|| unreachable!("the demo world was used after its teardown"))
    }

    pub fn registry(&self) -> PathBuf {
        self.sandbox().registry()
    }
    pub fn state_dir(&self) -> PathBuf {
        self.sandbox().state_dir()
    }
    pub fn tmux(&self) -> Tmux {
        self.sandbox().tmux()
    }
    pub fn interrupted(&self) -> bool {
        agent_box_tests::interrupt::received()
    }
    pub fn elapsed_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// A product binary with exactly the demo environment.
    pub fn product(&self, name: &str) -> Command {
        self.sandbox().cmd(name)
    }

    pub fn start_supervisor(&mut self) {
        self.started = Instant::now();
        let log = run::display_from_root(&self.root.join("supervisor.log"));
        self.say(&format!("starting agent-box-supervisor (stderr: {log})"));
        self.sandbox().start_supervisor();
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

    /// XT-3.5: supervisor, server, private directory (the sandbox's teardown), then the root; safe to call twice.
    pub fn teardown(&mut self, keep: bool) {
        let Some(sandbox) = self.sandbox.take() else { return };
        let tmux = sandbox.tmux();
        drop(sandbox);
        if !matches!(tmux.list_sessions(), Ok(list) if list.is_empty()) {
            println!("demo: warning: the private tmux server still answers");
        }
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

/// Wipes an earlier demo root and makes it again. The root and `<target>/tmp` above it get ordinary modes:
/// `ensure_private_dir` makes every directory it creates 0700, and a 0700 `<target>/tmp` kept the unprivileged
/// test user of `cargo xtask ci` (faults::f1) out of its slot sandbox after a demo. Only HOME is private.
fn make_root(root: &Path, home: &Path) -> Result<(), u8> {
    let _ = fs::remove_dir_all(root);
    fs::create_dir_all(root).map_err(|e| setup_error(root, &e))?;
    registry::ensure_private_dir(home).map_err(|e| setup_error(home, &e))
}

fn setup_error(path: &Path, err: &std::io::Error) -> u8 {
    println!("demo: cannot prepare {}: {err}", path.display());
    exit::SETUP
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// The modes a demo leaves: `cargo xtask ci` after `cargo xtask demo` needs `<target>/tmp` reachable by
    /// another user, as a plain `mkdir` would have made it; only the demo's HOME is private.
    #[test]
    fn the_demo_root_and_target_tmp_get_ordinary_modes_and_home_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let ordinary = dir.path().join("ordinary");
        fs::create_dir(&ordinary).unwrap();
        let root = dir.path().join("target/tmp/demo");
        let home = root.join("home/demo");
        fs::create_dir_all(home.join("left-over")).unwrap();
        make_root(&root, &home).unwrap();
        assert_eq!(mode(&dir.path().join("target/tmp")), mode(&ordinary));
        assert_eq!(mode(&root), mode(&ordinary));
        assert_eq!(mode(&home), 0o700);
        assert!(!home.join("left-over").exists(), "an earlier demo root is wiped");
    }
}
