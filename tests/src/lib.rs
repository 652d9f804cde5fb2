//! Test harness shared by the workspace's tests and by xtask (80-acceptance §1): product binaries, sandboxes
//! with a temporary HOME and a private tmux server, fake agents, an in-memory fake tmux, baked epilogues, slots,
//! held locks, deadline waits, and a real systemd user manager for a test account.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod agents;
pub mod bake;
pub mod bins;
pub mod chaos;
pub mod fake_tmux;
pub mod faults;
pub mod fixtures;
pub mod fleet;
pub mod golden;
pub mod held;
pub mod install;
pub mod interrupt;
pub mod kill;
pub mod ops;
pub mod privilege;
pub mod property;
pub mod sandbox;
pub mod slots;
pub mod tree;
pub mod user_manager;
pub mod wait;

use std::path::{Path, PathBuf};

pub use held::HeldLock;
pub use sandbox::Sandbox;
pub use wait::{deadline, wait_until};

/// The workspace root (the parent of this crate's directory), whatever the current directory.
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}
