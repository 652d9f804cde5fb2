//! `cargo xtask chaos [--sessions N] [--seed S] [--duration D]`: builds the workspace, then runs the chaos world of
//! the harness (`agent_box_tests::chaos`, the same engine the fixed-seed `cargo test` run uses) on the debug
//! binaries and prints its report. Exit 0 only with 0 wrong and 0 invalid samples; 100 otherwise; 96 when the
//! build or tmux is missing.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use clap::Args;
use rand::RngExt;

use crate::{exit, run};

/// Arguments of `cargo xtask chaos`.
#[derive(Debug, Args)]
pub struct ChaosArgs {
    /// Sessions dispatched through agent-box-webhook-spawn (plus the burst at the limit and second lives).
    #[arg(long, default_value_t = 20)]
    sessions: usize,
    /// Seed of every random choice; printed, so a run can be replayed.
    #[arg(long)]
    seed: Option<u64>,
    /// Seconds over which dispatches and actions are spread (default: 15, or sessions / 4 when larger).
    #[arg(long, value_name = "SECONDS")]
    duration: Option<u64>,
    /// Run the supervisor with an outcome notifier that fails and hangs at random (issue 21) and check that every
    /// outcome is delivered at least once, none for a stale life, duplicates only after a supervisor SIGKILL.
    #[arg(long)]
    notifier: bool,
}

/// Runs the chaos world and returns the exit code.
pub fn run(args: &ChaosArgs) -> u8 {
    let seed = args.seed.unwrap_or_else(|| rand::rng().random());
    let seconds = args.duration.unwrap_or_else(|| (args.sessions as u64 / 4).max(15));
    let mut build = run::command("cargo");
    build.args(["build", "--workspace", "--bins", "--locked"]);
    match run::status(&mut build) {
        Ok(status) if status.success() => {}
        _ => {
            eprintln!("chaos: the build failed; nothing was run");
            return exit::SETUP;
        }
    }
    agent_box_tests::bins::use_bin_dir(run::target_dir().join("debug"));
    println!(
        "chaos: seed {seed}, {} sessions over {seconds} s (replay: cargo xtask chaos --sessions {} --seed {seed} --duration {seconds}{})",
        args.sessions,
        args.sessions,
        if args.notifier { " --notifier" } else { "" }
    );
    let options = agent_box_tests::chaos::Options {
        sessions: args.sessions,
        seed,
        duration: Duration::from_secs(seconds),
        notifier: args.notifier,
    };
    match catch_unwind(AssertUnwindSafe(|| agent_box_tests::chaos::run(&options))) {
        Ok(report) => {
            print!("{report}");
            if report.passed() { exit::SUCCESS } else { exit::CHECK_FAILED }
        }
        Err(_) => {
            eprintln!("chaos: the world could not be set up or driven (see the panic above)");
            exit::SETUP
        }
    }
}
