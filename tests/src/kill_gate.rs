//! A tmux wrapper that holds every `kill-session` of the processes given it until the test opens the gate: how a
//! scenario reaches the instant between a verb's registry-lock section and its kill, deterministically and without
//! test-only code in the product (issue 25: what the supervisor starts meanwhile must not be the pane killed).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::sandbox::Sandbox;

/// The wrapper and its two files: `held` appears when a kill waits, the kill goes on once `release` exists.
#[derive(Debug)]
pub struct KillGate {
    wrapper: PathBuf,
    held: PathBuf,
    release: PathBuf,
}

impl KillGate {
    /// Writes the wrapper over the sandbox's tmux; only processes given [`KillGate::tmux_bin`] use it.
    pub fn new(sb: &Sandbox) -> Self {
        let real = PathBuf::from(sb.env_var("AGENT_BOX_TMUX_BIN").unwrap());
        let (wrapper, held, release) =
            (sb.root().join("bin/tmux-kill-gate"), sb.root().join("kill-held"), sb.root().join("kill-release"));
        // Any word naming kill-session counts, also one inside a tmux command string (`if-shell … "kill-session …"`).
        let text = format!(
            "#!/bin/sh\nfor word in \"$@\"; do\n  case \"$word\" in *kill-session*)\n    : > '{held}'\n    while [ ! -e '{release}' ]; do sleep 0.02; done ;;\n  esac\ndone\nexec '{real}' \"$@\"\n",
            held = held.display(),
            release = release.display(),
            real = real.display(),
        );
        fs::write(&wrapper, text).unwrap();
        fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
        Self { wrapper, held, release }
    }

    /// The value of `AGENT_BOX_TMUX_BIN` for a process whose kills are to be held.
    pub fn tmux_bin(&self) -> &Path {
        &self.wrapper
    }

    /// A kill is waiting at the gate.
    pub fn holds_a_kill(&self) -> bool {
        self.held.exists()
    }

    /// Lets every held and later kill go on.
    pub fn open(&self) {
        fs::write(&self.release, b"").unwrap();
    }
}
