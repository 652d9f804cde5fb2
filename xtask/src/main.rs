//! Project automation, run as `cargo xtask <command>` (alias in `.cargo/config.toml`, spec 70 §1).

mod ci;
mod exit;
mod run;
mod walk;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Project automation for the agent-box workspace.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run every check (setup, fmt, clippy, test, golden, nix-parse); the project's one test command.
    Ci,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return ExitCode::from(usage_exit(&err)),
    };
    let code = match cli.command {
        Command::Ci => ci::run(),
    };
    ExitCode::from(code)
}

/// Prints clap's message and picks the exit code ourselves, so that 2 comes from the table in `exit.rs`
/// rather than from clap's internals (XT-1.6).
fn usage_exit(err: &clap::Error) -> u8 {
    // A failed print (closed stdout, e.g. `cargo xtask --help | head -0`) leaves nothing better to do.
    let _ = err.print();
    if err.use_stderr() { exit::USAGE } else { exit::SUCCESS }
}
