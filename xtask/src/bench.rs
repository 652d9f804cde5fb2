//! `cargo xtask bench [ARGS…]`: a thin door to the bench, which is its own workspace member (`bench/`,
//! `agent-box-bench`) so that xtask depends on no product crate for it. Runs
//! `cargo run -p agent-box-bench --release -- ARGS` and exits as the bench does (`cargo xtask bench --help` lists
//! its sections and options).

use std::ffi::OsString;

use clap::Args;

use crate::{exit, run};

/// Everything after `bench`, passed to agent-box-bench unread (including `--help`).
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct BenchArgs {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
    args: Vec<OsString>,
}

/// Runs the bench and returns its exit code.
pub fn run(args: &BenchArgs) -> u8 {
    // Ctrl-C reaches the bench too (one process group); xtask only waits, so that the bench can tear its
    // sandboxes down and exit 130 before the shell gets its prompt back.
    agent_box_tests::interrupt::install();
    let mut cmd = run::command("cargo");
    cmd.args(["run", "--quiet", "--locked", "--release", "--package", "agent-box-bench", "--"]).args(&args.args);
    match run::status(&mut cmd) {
        Ok(status) => u8::try_from(run::exit_number(status)).unwrap_or(exit::SETUP),
        Err(err) => {
            eprintln!("bench: cannot run cargo: {err}");
            exit::SETUP
        }
    }
}
