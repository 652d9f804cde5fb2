//! Echo-and-run: every subprocess is printed as `$ <argv>` before it starts and runs in the workspace root
//! (XT-1.4), so a reader of a CI log can repeat any step by copy and paste; and where that root and cargo's target
//! directory are.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output};
use std::sync::OnceLock;

use agent_box_install::workspace::{Workspace, WorkspaceError};

/// The checkout and target directory of this run, found once by [`find_workspace`].
static WORKSPACE: OnceLock<Workspace> = OnceLock::new();

/// Asks cargo where the invoked checkout and its target directory are (`cargo metadata`; see
/// `agent_box_install::workspace`), once, before any command runs, and hands the answer to the harness too, so
/// that its sandboxes, slots and golden fixtures are this checkout's.
pub fn find_workspace() -> Result<(), WorkspaceError> {
    let found = Workspace::find()?;
    agent_box_tests::use_workspace(found.clone());
    let _ = WORKSPACE.set(found);
    Ok(())
}

fn workspace() -> &'static Workspace {
    // Unit tests do not run `main`; they ask cargo themselves, as the harness does.
    WORKSPACE.get_or_init(|| agent_box_tests::workspace().clone())
}

/// The root of the invoked checkout (never a path compiled in: a shared target directory holds one xtask binary
/// for every checkout that uses it).
pub fn workspace_root() -> PathBuf {
    workspace().root.clone()
}

/// The project's shared read-only references beside the checkout, as the checks that need them name it.
pub const SHARED: &str = "../shared";

/// Whether `../shared` is beside the checkout at `root`. The checks that read it (the Nix evaluation, the
/// power-loss step) skip, saying so, in a clone without it, and fail when it is there but what they need is not
/// (issue 25): a clone of the repository alone cannot run them, a broken `../shared` must not pass for that.
pub fn shared_present(root: &Path) -> bool {
    root.join(SHARED).is_dir()
}

/// Cargo's target directory for this checkout (`CARGO_TARGET_DIR`, `build.target-dir`, else `<root>/target`).
pub fn target_dir() -> PathBuf {
    workspace().target.clone()
}

/// `path` relative to the workspace root when it is under it (what a reader types there), else as it is.
pub fn display_from_root(path: &Path) -> String {
    let root = workspace_root();
    path.strip_prefix(&root).unwrap_or(path).display().to_string()
}

/// A `Command` for `program` that will run in the workspace root.
pub fn command(program: &str) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(workspace_root());
    cmd
}

/// Echoes `cmd`, then runs it with inherited stdio and waits for it.
pub fn status(cmd: &mut Command) -> io::Result<ExitStatus> {
    println!("{}", echo_line(cmd));
    cmd.status()
}

/// Echoes `cmd`, then runs it and captures whichever of stdout and stderr was not configured otherwise.
pub fn output(cmd: &mut Command) -> io::Result<Output> {
    println!("{}", echo_line(cmd));
    cmd.output()
}

/// The number a shell would report as `$?`: the exit code, or 128 + the signal that ended the process.
pub fn exit_number(status: ExitStatus) -> i32 {
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// The number a shell reports when a program cannot be started: 127 when it is not found, else 126.
pub fn spawn_error_number(err: &io::Error) -> i32 {
    if err.kind() == io::ErrorKind::NotFound { 127 } else { 126 }
}

/// The echo of `cmd`: [`base::quote::command_line`].
pub fn echo_line(cmd: &Command) -> String {
    base::quote::command_line(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_line_shows_env_program_and_quoted_args() {
        let mut cmd = Command::new("git");
        cmd.args(["ls-files", "-z", "--", "*.nix"]);
        assert_eq!(echo_line(&cmd), "$ git ls-files -z -- '*.nix'");

        let mut cmd = Command::new("apt-get");
        cmd.env("DEBIAN_FRONTEND", "noninteractive").args(["install", "-y", "tmux"]);
        assert_eq!(echo_line(&cmd), "$ DEBIAN_FRONTEND=noninteractive apt-get install -y tmux");
    }

    #[test]
    fn workspace_root_holds_the_workspace_manifest() {
        assert!(workspace_root().join("Cargo.toml").is_file());
        assert!(workspace_root().join("xtask").is_dir());
    }

    /// This unit-test binary was built into the target directory cargo uses for this checkout.
    #[test]
    fn target_dir_holds_this_build() {
        let exe = std::env::current_exe().unwrap();
        assert!(exe.starts_with(target_dir()), "{} not under {}", exe.display(), target_dir().display());
    }
}
