//! `cargo xtask intake-burst [--deliveries N] [--redelivered R] [--shared S] [--slots K] [--agent-secs A-B]
//! [--seed S]`: builds the workspace, then runs the intake burst of the harness (`agent_box_tests::intake_burst`,
//! the same engine the fixed-seed `cargo test` run uses) on the debug binaries and prints its figures (issue 24).
//! Exit 0 only when every delivery was kept as the queue promises; 100 otherwise; 96 when the build or tmux is
//! missing; 2 for a bad argument.

use std::ops::Range;
use std::panic::{AssertUnwindSafe, catch_unwind};

use clap::Args;
use rand::RngExt;

use crate::{exit, run};

/// Arguments of `cargo xtask intake-burst`.
#[derive(Debug, Args)]
pub struct BurstArgs {
    /// Deliveries through the receiver stand-in, redeliveries and shared objects included.
    #[arg(long, default_value_t = 200)]
    deliveries: usize,
    /// How many of them are a second send of an earlier delivery (same delivery id, same text).
    #[arg(long, default_value_t = 40)]
    redelivered: usize,
    /// How many of them are a new delivery for the object of an earlier one (the same issue or commit).
    #[arg(long, default_value_t = 30)]
    shared: usize,
    /// Session slots of the box.
    #[arg(long, default_value_t = 2)]
    slots: usize,
    /// How long each session's agent runs before it exits 0, drawn from this range of seconds.
    #[arg(long, value_name = "A-B", default_value = "1-20", value_parser = parse_secs)]
    agent_secs: Range<f64>,
    /// Seed of every random choice; printed, so a run can be replayed.
    #[arg(long)]
    seed: Option<u64>,
}

/// `A-B` (or one number) of non-negative seconds, A ≤ B.
fn parse_secs(text: &str) -> Result<Range<f64>, String> {
    let (low, high) = text.split_once('-').unwrap_or((text, text));
    let number = |s: &str| s.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
    match (number(low), number(high)) {
        (Some(low), Some(high)) if low <= high => Ok(low..high),
        _ => Err(format!("'{text}' is not a range of seconds like 1-20")),
    }
}

/// Runs the burst and returns the exit code.
pub fn run(args: &BurstArgs) -> u8 {
    if args.redelivered + args.shared >= args.deliveries || args.slots == 0 {
        eprintln!(
            "intake-burst: --redelivered plus --shared must leave distinct deliveries, and --slots be at least 1"
        );
        return exit::USAGE;
    }
    let seed = args.seed.unwrap_or_else(|| rand::rng().random());
    let mut build = run::command("cargo");
    build.args(["build", "--workspace", "--bins", "--locked"]);
    match run::status(&mut build) {
        Ok(status) if status.success() => {}
        _ => {
            eprintln!("intake-burst: the build failed; nothing was run");
            return exit::SETUP;
        }
    }
    agent_box_tests::bins::use_bin_dir(run::target_dir().join("debug"));
    let range = format!("{}-{}", args.agent_secs.start, args.agent_secs.end);
    println!(
        "intake-burst: replay with cargo xtask intake-burst --deliveries {} --redelivered {} --shared {} --slots {} --agent-secs {range} --seed {seed}",
        args.deliveries, args.redelivered, args.shared, args.slots
    );
    let options = agent_box_tests::intake_burst::Options {
        deliveries: args.deliveries,
        redelivered: args.redelivered,
        shared: args.shared,
        slots: args.slots,
        agent_secs: args.agent_secs.clone(),
        seed,
        workers: 3,
    };
    match catch_unwind(AssertUnwindSafe(|| agent_box_tests::intake_burst::run(&options))) {
        Ok(report) => {
            print!("{report}");
            if report.passed() { exit::SUCCESS } else { exit::CHECK_FAILED }
        }
        Err(_) => {
            eprintln!("intake-burst: the box could not be set up or driven (see the panic above)");
            exit::SETUP
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_seconds_are_a_range() {
        assert_eq!(parse_secs("1-20"), Ok(1.0..20.0));
        assert_eq!(parse_secs("0.2-1"), Ok(0.2..1.0));
        assert_eq!(parse_secs("3"), Ok(3.0..3.0));
        for bad in ["", "5-1", "a-b", "-1", "1-", "inf-inf"] {
            assert!(parse_secs(bad).is_err(), "{bad}");
        }
    }
}
