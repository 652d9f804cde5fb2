//! Echo-and-run for the bench's own subprocesses (cargo, git, rustc): each is printed as `$ <argv>` before it
//! starts and runs in the workspace root, as xtask's commands do (XT-1.4), so a run's log can be replayed by copy
//! and paste.

use std::io;
use std::process::{Command, ExitStatus, Output};

pub use base::quote::quote_arg as shell_quote;

/// A `Command` for `program` that will run in the workspace root.
pub fn command(program: &str) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(agent_box_tests::workspace_root());
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

/// The echo of `cmd`: [`base::quote::command_line`].
pub fn echo_line(cmd: &Command) -> String {
    base::quote::command_line(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_line_shows_env_program_and_quoted_args() {
        let mut cmd = Command::new("strace");
        cmd.env("LC_ALL", "C").args(["-f", "-e", "trace=file,desc"]);
        assert_eq!(echo_line(&cmd), "$ LC_ALL=C strace -f -e trace=file,desc");
        let mut cmd = Command::new("git");
        cmd.args(["rev-parse", "a b"]);
        assert_eq!(echo_line(&cmd), "$ git rev-parse 'a b'");
    }
}
