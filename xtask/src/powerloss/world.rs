//! The sandbox the writers run in: a HOME on the LazyFS mount (`<target>/powerloss/mnt/home/agent`), the products'
//! environment, the epilogue baked for that HOME, the queue box beside it (`qbox.rs`), and the reset that gives
//! every crash round fresh registries.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agent_box_install::bake::Profile;

use super::mount::Layout;
use super::qbox::QueueBox;
use crate::{bake_epilogue, run};

/// HOME under the mount point (and, the same relative path, under the backing directory).
const HOME: &str = "home/agent";
/// Far above anything a round dispatches: the capacity check must never be what refuses a writer.
const SESSION_LIMIT: &str = "100000";

/// The fixed places of a power-loss run. Fixed, not temporary: the baked epilogue has the registry path in its
/// binary, and a fixed path lets the bake cache serve every run.
#[derive(Debug, Clone)]
pub struct World {
    pub layout: Layout,
    pub home: PathBuf,
    pub paths: registry::Paths,
    env: Vec<(String, OsString)>,
    bins: PathBuf,
    pub epilogue: PathBuf,
    /// The second box, with 2 slots, whose batches queue (issue 24).
    pub queue: QueueBox,
}

impl World {
    /// Lays out `<target>/powerloss/` and bakes the epilogue for its HOME.
    pub fn prepare(lazyfs: PathBuf) -> Result<Self, String> {
        let work = run::target_dir().join("powerloss");
        let layout = Layout {
            binary: lazyfs,
            mnt: work.join("mnt"),
            backing: work.join("backing"),
            config: work.join("lazyfs.toml"),
            fifo: work.join("faults.fifo"),
            log: work.join("lazyfs.log"),
        };
        let made = [&layout.mnt, &layout.backing, &work.join("tmux")].iter().try_for_each(fs::create_dir_all);
        made.and_then(|()| fs::write(work.join("session-limit"), SESSION_LIMIT))
            .and_then(|()| layout.write_config())
            .map_err(|e| format!("cannot lay out {}: {e}", work.display()))?;
        let home = layout.mnt.join(HOME);
        let paths = registry::Paths::for_root(&home, "agent");
        let epilogue = bake_epilogue::bake_echoed(paths.registry(), paths.state_dir(), Profile::Dev)
            .map_err(|stop| stop.message)?;
        let env = product_env(&home, &work, &epilogue);
        let bins = run::target_dir().join("debug");
        let queue = QueueBox::prepare(&layout, &work, bins.clone())?;
        Ok(Self { layout, home, paths, env, bins, epilogue, queue })
    }

    /// A product (`agent-box-session`, …, or `examples/rmw`) with exactly the sandbox environment, run in HOME.
    pub fn product(&self, name: &str) -> Command {
        self.command(&self.bins.join(name))
    }

    /// `program` with exactly the sandbox environment, run in HOME, all three streams closed.
    pub fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.home)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    /// The negative control's file.
    pub fn control_file(&self) -> PathBuf {
        self.home.join("control/value")
    }

    /// A fresh HOME on the backing directory (the mount must be down): the directories the products expect and
    /// an empty registry, all made durable, so a round starts from the same state whatever the last one left.
    pub fn reset(&self) -> io::Result<()> {
        fresh_home(&self.layout.backing.join(HOME))?;
        fs::create_dir_all(self.layout.backing.join(HOME).join("control"))?;
        self.queue.reset()
    }
}

/// `home` emptied, with the directories the products expect and an empty registry, all made durable.
pub fn fresh_home(home: &Path) -> io::Result<()> {
    match fs::remove_dir_all(home) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
        _ => {}
    }
    for dir in [".config/agent-box", ".local/state/agent-box/lease", ".local/state/local-webhook"] {
        fs::create_dir_all(home.join(dir))?;
    }
    fs::set_permissions(home, fs::Permissions::from_mode(0o700))?;
    let registry = home.join(".config/agent-box/sessions.json");
    registry::write_atomic(&registry, &registry::Document::empty().to_bytes()).map(drop)
}

/// The variables every product gets (after `env_clear`): HOME on the mount, a tmux directory with no server in it
/// (nothing here needs one), a session limit that never refuses, the `tool` harness, the baked epilogue.
fn product_env(home: &Path, work: &Path, epilogue: &Path) -> Vec<(String, OsString)> {
    let pairs: [(&str, OsString); 14] = [
        ("HOME", home.into()),
        ("USER", "agent".into()),
        ("LOGNAME", "agent".into()),
        ("PATH", "/usr/bin:/bin".into()),
        ("LANG", "C.UTF-8".into()),
        ("TZ", "UTC".into()),
        ("AGENT_BOX_TMUX_TMPDIR", work.join("tmux").into()),
        ("AGENT_BOX_TMUX_SOCKET", "powerloss".into()),
        ("AGENT_BOX_TMUX_CONF", "/dev/null".into()),
        ("AGENT_BOX_SESSION_LIMIT_FILE", work.join("session-limit").into()),
        ("AGENT_BOX_AGENTS", "tool".into()),
        ("AGENT_BOX_DEFAULT_AGENT", "tool".into()),
        ("AGENT_BOX_AGENT_BINS", "tool=/bin/true".into()),
        ("AGENT_BOX_MARK_STOPPED", epilogue.into()),
    ];
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}
