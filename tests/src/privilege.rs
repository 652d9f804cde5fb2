//! Running a product unprivileged (80 I12): directly when the test is not root, else through
//! `setpriv --reuid=65534 --regid=65534 --clear-groups` on a tree chowned to 65534.

use std::path::Path;
use std::process::Command;

/// The uid and gid an unprivileged run uses when the test runs as root.
pub const NOBODY: u32 = 65534;

/// Chowns `root` and everything below it to [`NOBODY`] (when running as root; a no-op otherwise).
pub fn chown_tree(root: &Path) {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let _ = std::os::unix::fs::chown(root, Some(NOBODY), Some(NOBODY));
    if root.is_dir()
        && let Ok(entries) = std::fs::read_dir(root)
    {
        for entry in entries.flatten() {
            chown_tree(&entry.path());
        }
    }
}

/// `cmd` as an unprivileged process: wrapped in setpriv when we are root, unchanged otherwise. The program,
/// arguments and explicitly set environment carry over.
pub fn unprivileged(cmd: &Command) -> Command {
    if !nix::unistd::geteuid().is_root() {
        let mut same = Command::new(cmd.get_program());
        same.args(cmd.get_args());
        copy_env(cmd, &mut same);
        return same;
    }
    let mut wrapped = Command::new("setpriv");
    wrapped.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(cmd.get_program()).args(cmd.get_args());
    copy_env(cmd, &mut wrapped);
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
}

fn copy_env(from: &Command, to: &mut Command) {
    to.env_clear();
    for (key, value) in from.get_envs() {
        if let Some(value) = value {
            to.env(key, value);
        }
    }
}
