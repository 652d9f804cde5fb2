//! Test harness shared by the workspace's tests and by xtask (80-acceptance §1): product binaries, sandboxes
//! with a temporary HOME and a private tmux server, fake agents, an in-memory fake tmux, baked epilogues, slots,
//! held locks, deadline waits, a receiver stand-in, the intake burst, several boxes on one claims database and their burst, and a real systemd user manager for a test account.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod agents;
pub mod bake;
pub mod bins;
pub mod boxes;
pub mod boxes_burst;
pub mod chaos;
pub mod fake_tmux;
pub mod faults;
pub mod fixtures;
pub mod fleet;
pub mod golden;
pub mod held;
pub mod intake_burst;
pub mod interrupt;
pub mod kill;
pub mod kill_gate;
pub mod ops;
pub mod postgres;
pub mod privilege;
pub mod property;
pub mod receiver;
pub mod sandbox;
pub mod slots;
pub mod tree;
pub mod user_manager;
pub mod wait;

use std::path::PathBuf;
use std::sync::OnceLock;

use agent_box_install::workspace::Workspace;

pub use held::HeldLock;
pub use sandbox::Sandbox;
pub use wait::{deadline, wait_until};

/// The workspace chosen by the running program (xtask passes the one `cargo metadata` named).
static WORKSPACE: OnceLock<Workspace> = OnceLock::new();

/// Makes [`workspace`] answer `chosen` for the rest of the process; the first call wins. Returns false when
/// another workspace had already been chosen or found.
pub fn use_workspace(chosen: Workspace) -> bool {
    WORKSPACE.set(chosen.clone()).is_ok() || WORKSPACE.get() == Some(&chosen)
}

/// The checkout under test and cargo's target directory, from run-time facts only, so that checkouts sharing a
/// target directory (and so one test binary path) never read each other's files: the root is the workspace above
/// the package directory cargo ran this program from (`CARGO_MANIFEST_DIR` in the environment, which `cargo test`
/// and `cargo run` set; the compile-time value only when run by hand), the target directory the one this program
/// was built into (see [`bins::target_dir`]). No `cargo metadata` here: a test runs in its package directory,
/// where a relative `CARGO_TARGET_DIR` would name another directory than the one cargo built into.
pub fn workspace() -> &'static Workspace {
    WORKSPACE.get_or_init(|| {
        let package =
            std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), PathBuf::from);
        let root = agent_box_install::workspace::root_above(&package).unwrap_or(package);
        Workspace { root, target: bins::target_dir() }
    })
}

/// The root of the checkout under test, whatever the current directory.
pub fn workspace_root() -> PathBuf {
    workspace().root.clone()
}

/// Cargo's target directory of this run.
pub fn target_dir() -> PathBuf {
    workspace().target.clone()
}
