//! Project automation, run as `cargo xtask <command>` (alias in `.cargo/config.toml`, spec 70 §1).

mod bake_epilogue;
mod bench;
mod chaos;
mod ci;
mod demo;
mod exit;
mod golden;
mod install;
mod intake_burst;
mod man;
mod mutants;
mod powerloss;
mod run;

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
    /// Run every check (setup, fmt, clippy, test, golden, nix, powerloss, mutants); the project's one test command.
    Ci,
    /// Show the supervisor doing its main job for about 5 s in a private root and tmux server, then tear down.
    Demo {
        /// Keep the demo root (<target>/tmp/demo) for inspection (processes are stopped either way).
        #[arg(long)]
        keep: bool,
        /// Print only the milestone lines.
        #[arg(long)]
        quiet: bool,
    },
    /// Check golden/ against a fresh render of every pinned artefact; --bless makes golden/ equal to it.
    Golden {
        /// Write the render into golden/ (after checking that two renders agree and nothing leaks).
        #[arg(long)]
        bless: bool,
    },
    /// Parse and evaluate the Nix files (ci step 6 alone); --bless refreshes golden/nix/ instead of checking it.
    Nix {
        /// Make golden/nix/ equal to the evaluation (after checking that two evaluations agree).
        #[arg(long)]
        bless: bool,
    },
    /// Build agent-box-mark-stopped with a registry path and state directory baked in, verify it, install it.
    BakeEpilogue(bake_epilogue::BakeArgs),
    /// Install the programs for this user without Nix: release build, baked epilogue, wrappers, environment file,
    /// manual pages and a systemd user unit; re-running upgrades in place.
    Install(install::InstallArgs),
    /// Remove exactly what install wrote (never the registry, leases or logs).
    Uninstall(install::UninstallArgs),
    /// Render the manual pages of the four programs (default into <target>/man/).
    Man {
        /// The directory to write the pages into.
        #[arg(long, value_name = "DIR")]
        out: Option<std::path::PathBuf>,
    },
    /// Dispatch many sessions into a private world and break things at random; check every lease promise.
    Chaos(chaos::ChaosArgs),
    /// Fire a burst of deliveries, redeliveries and shared objects at a box of a few slots through its intake
    /// queue; check every distinct assignment is admitted once, in the order accepted (issue 24).
    IntakeBurst(intake_burst::BurstArgs),
    /// Power losses under LazyFS over concurrent writers; check that nothing acknowledged was lost (issue 18).
    Powerloss(powerloss::PowerlossArgs),
    /// Mutation testing (cargo-mutants) of every file .cargo/mutants.toml names; fails on a survivor that
    /// docs/mutants.md does not list.
    Mutants(mutants::MutantsArgs),
    /// Measure the quality bars of spec 90 (epilogue, tick, add, vanish, rmw, crash, faults, upgrade, intake,
    /// claims, golden) and write <target>/bench/report.json.
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return ExitCode::from(usage_exit(&err)),
    };
    if let Err(err) = run::find_workspace() {
        eprintln!(
            "xtask: cannot find the workspace and its target directory ({err}); run it as cargo xtask inside the checkout"
        );
        return ExitCode::from(exit::SETUP);
    }
    let code = match cli.command {
        Command::Ci => ci::run(),
        Command::Demo { keep, quiet } => demo::run(keep, quiet),
        Command::Golden { bless } => golden::run(bless),
        Command::Nix { bless } => ci::nix::command(bless),
        Command::BakeEpilogue(args) => bake_epilogue::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Install(args) => install::install(&args),
        Command::Uninstall(args) => install::uninstall(&args),
        Command::Man { out } => man::run(out),
        Command::Chaos(args) => chaos::run(&args),
        Command::IntakeBurst(args) => intake_burst::run(&args),
        Command::Powerloss(args) => powerloss::run(&args),
        Command::Mutants(args) => mutants::run(&args),
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
