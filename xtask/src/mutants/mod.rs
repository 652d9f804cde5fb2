//! `cargo xtask mutants` and the ci step `mutants` (docs/mutants.md): mutation testing with cargo-mutants over the
//! files `.cargo/mutants.toml` names. The full run tests every mutant; the ci step only those in the lines changed
//! since the merge base with main (or the previous commit), within a time budget. Both fail when a mutant survives
//! that docs/mutants.md does not list with its reason.

mod diff;
mod report;

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::mpsc;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::ci::{Failed, StepResult};
use crate::{exit, run};

/// The ci step stops cargo-mutants after this long and reports what it did not reach (the step stays well under
/// 5 minutes; the full run has no bound).
const CI_BUDGET: Duration = Duration::from_secs(200);
/// How long cargo-mutants gets to clean up after the interrupt before it is killed.
const GRACE: Duration = Duration::from_secs(30);
/// The per-mutant test timeout of the ci step, which skips the baseline run (the test step just ran the tests).
const CI_TEST_TIMEOUT: &str = "150";

/// Arguments of `cargo xtask mutants`.
#[derive(Debug, clap::Args)]
pub struct MutantsArgs {
    /// Only the mutants of the lines changed since the merge base with main, within the ci budget: exactly the ci
    /// step `mutants`.
    #[arg(long)]
    changed: bool,
    /// Passed to cargo mutants after the configured ones, e.g. `-p agent-box-lease`, or `--re REGEX` to try a few
    /// mutants again (with the configuration's files, `--file` does not narrow the run).
    #[arg(last = true, value_name = "CARGO_MUTANTS_ARGS")]
    extra: Vec<String>,
}

/// The full run: every mutant of the configured files; 0 when every survivor is listed, 100 otherwise, 96 when
/// cargo-mutants is missing and cannot be installed.
pub fn run(args: &MutantsArgs) -> u8 {
    if args.changed {
        return match ci_step() {
            Ok(()) => exit::SUCCESS,
            Err(Failed(code)) => u8::try_from(code).unwrap_or(exit::CHECK_FAILED),
        };
    }
    if let Err(code) = ensure_tool() {
        return code;
    }
    let out = run::target_dir().join("mutants/full");
    if let Err(err) = set_aside(&out) {
        eprintln!("mutants: cannot set the last run aside in {}: {err}", run::display_from_root(&out));
        return exit::SETUP;
    }
    let mut cmd = cargo_mutants(&out);
    cmd.args(&args.extra);
    let started = std::time::Instant::now();
    match run::status(&mut cmd) {
        Ok(status) if judgeable(status) => {}
        Ok(status) => {
            eprintln!("mutants: cargo mutants exited with {status}; see its output above");
            return exit::CHECK_FAILED;
        }
        Err(err) => {
            eprintln!("mutants: cannot run cargo mutants: {err}");
            return exit::SETUP;
        }
    }
    println!("mutants: the run took {:.0} s", started.elapsed().as_secs_f64());
    match judge(&out, None) {
        Ok(()) => exit::SUCCESS,
        Err(code) => code,
    }
}

/// The ci step: the mutants of the changed lines, bounded by [`CI_BUDGET`]; nothing to do (quickly, and said) when
/// no examined file changed.
pub fn ci_step() -> StepResult {
    let Some(diff) = diff::changed_lines().map_err(|err| {
        eprintln!("mutants: {err}");
        Failed(exit::SETUP.into())
    })?
    else {
        return Ok(());
    };
    ensure_tool().map_err(|code| Failed(code.into()))?;
    let out = run::target_dir().join("mutants/ci");
    set_aside(&out).map_err(|err| {
        eprintln!("mutants: cannot set the last run aside in {}: {err}", run::display_from_root(&out));
        Failed(exit::SETUP.into())
    })?;
    let mut cmd = cargo_mutants(&out);
    cmd.arg("--in-diff").arg(&diff).args(["--baseline", "skip", "--timeout", CI_TEST_TIMEOUT]);
    let ended = run_bounded(&mut cmd, CI_BUDGET).map_err(|err| {
        eprintln!("mutants: cannot run cargo mutants: {err}");
        Failed(exit::SETUP.into())
    })?;
    if let Some(status) = ended.filter(|status| !judgeable(*status)) {
        eprintln!("mutants: cargo mutants exited with {status}; see its output above");
        return Err(Failed(exit::CHECK_FAILED.into()));
    }
    judge(&out, ended.is_none().then_some(CI_BUDGET)).map_err(|code| Failed(code.into()))
}

/// cargo-mutants' exits that leave outcomes to judge: 0 all caught, 2 survivors, 3 timeouts, 4 the baseline failed
/// (the others are usage or internal errors).
fn judgeable(status: ExitStatus) -> bool {
    matches!(status.code(), Some(0 | 2 | 3 | 4))
}

/// Reads the outcomes, prints the figures and every survivor docs/mutants.md does not list; `cut` is the budget
/// after which the run was stopped.
fn judge(out: &Path, cut: Option<Duration>) -> Result<(), u8> {
    let listed = report::listed_in(&run::workspace_root().join("docs/mutants.md")).map_err(|err| {
        eprintln!("mutants: cannot read the listed survivors: {err}");
        exit::CHECK_FAILED
    })?;
    let path = out.join("mutants.out/outcomes.json");
    if !path.exists() {
        match cut {
            // cargo mutants writes nothing when the filters leave no mutant (a change of tests or comments only).
            None => println!("mutants: no mutant to test in these lines"),
            Some(budget) => println!(
                "SKIP: mutants: no mutant was tested within {} s; cargo xtask mutants tests them all",
                budget.as_secs()
            ),
        }
        return Ok(());
    }
    let outcomes = report::read_outcomes(&path).map_err(|err| {
        eprintln!("mutants: cannot read what cargo mutants found: {err}");
        exit::CHECK_FAILED
    })?;
    println!("{}", report::figures_table(&outcomes, &listed));
    let unlisted = report::unlisted_survivors(&outcomes, &listed);
    for name in &unlisted {
        println!("mutants: survived, and docs/mutants.md does not list it: {name}");
    }
    // outcomes.json counts only what was tested when a run is stopped; mutants.json lists every mutant it set out to
    // test.
    let total = report::count_mutants(&out.join("mutants.out/mutants.json")).unwrap_or(outcomes.total);
    let untested = total.saturating_sub(outcomes.tested());
    if let Some(budget) = cut.filter(|_| untested > 0) {
        println!(
            "SKIP: {untested} of {total} mutants were not tested within {} s; cargo xtask mutants tests them all",
            budget.as_secs()
        );
    }
    if !outcomes.baseline_ok {
        eprintln!("mutants: the tests fail without any mutation; fix them first (cargo test)");
        return Err(exit::CHECK_FAILED);
    }
    if unlisted.is_empty() { Ok(()) } else { Err(exit::CHECK_FAILED) }
}

/// Moves the report of the last run to `mutants.out.old` (as cargo-mutants itself does), so that what is judged
/// afterwards can only be this run's.
fn set_aside(out: &Path) -> io::Result<()> {
    let (last, old) = (out.join("mutants.out"), out.join("mutants.out.old"));
    if !last.exists() {
        return Ok(());
    }
    if old.exists() {
        std::fs::remove_dir_all(&old)?;
    }
    std::fs::rename(last, old)
}

/// `nice -n 19 cargo mutants --jobs 1 --output OUT` (the machine is shared: one mutant at a time, at the lowest
/// priority), building into its own target directory so the checkout's binaries are never replaced by mutants.
fn cargo_mutants(out: &Path) -> Command {
    let mut cmd = run::command("nice");
    cmd.args(["-n", "19", "cargo", "mutants", "--jobs", "1", "--colors", "never", "--output"]).arg(out);
    cmd.env("CARGO_TARGET_DIR", build_dir());
    // An interrupted run (the ci budget) ends with a one-line error, not an error backtrace; panics keep theirs.
    cmd.env("RUST_LIB_BACKTRACE", "0");
    cmd
}

/// `<target>/mutants/build`, seeded from `<target>/debug` the first time (see [`seed_build_dir`]).
fn build_dir() -> PathBuf {
    run::target_dir().join("mutants/build")
}

/// Makes sure `cargo mutants` runs, installing it with `cargo install cargo-mutants --locked` when it does not;
/// then seeds the build directory.
fn ensure_tool() -> Result<(), u8> {
    if !tool_runs() {
        let mut cmd = run::command("cargo");
        cmd.args(["install", "cargo-mutants", "--locked"]);
        let installed = run::status(&mut cmd).is_ok_and(|status| status.success());
        if !installed || !tool_runs() {
            eprintln!(
                "mutants: cargo-mutants is not installed and cargo install failed; run cargo install cargo-mutants --locked"
            );
            return Err(exit::SETUP);
        }
    }
    seed_build_dir().and_then(|()| build_bins()).map_err(|err| {
        eprintln!("mutants: cannot prepare {}: {err}", run::display_from_root(&build_dir()));
        exit::SETUP
    })
}

fn tool_runs() -> bool {
    let mut cmd = run::command("cargo");
    cmd.args(["mutants", "--version"]);
    run::output(&mut cmd).is_ok_and(|out| out.status.success())
}

/// why: a mutant's tree is a fresh copy in /tmp, so its build starts from nothing; a copy of the test build's
/// `<target>/debug` lets it reuse every compiled dependency (only our crates are built again), which turns the
/// first build of a ci run from minutes into seconds. Done once; later runs reuse the directory.
fn seed_build_dir() -> io::Result<()> {
    let seeded = build_dir().join("debug");
    let source = run::target_dir().join("debug");
    if seeded.exists() || !source.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(build_dir())?;
    let mut cmd = run::command("cp");
    cmd.arg("-a").arg(&source).arg(&seeded);
    let status = run::status(&mut cmd)?;
    if status.success() { Ok(()) } else { Err(io::Error::other(format!("cp exited with {status}"))) }
}

/// why: cargo-mutants builds only the mutated package, but its tests may run other products: webhook-spawn's
/// sandbox takes the epilogue (`agent-box-mark-stopped`) from the build directory. A seed from a `cargo test -p`
/// build lacks them and the baseline fails; building every binary here, unmutated, also keeps them current with
/// the checkout (a no-op when nothing changed).
fn build_bins() -> io::Result<()> {
    let mut cmd = run::command("nice");
    cmd.args(["-n", "19", "cargo", "build", "--workspace", "--bins"]).env("CARGO_TARGET_DIR", build_dir());
    let status = run::status(&mut cmd)?;
    if status.success() { Ok(()) } else { Err(io::Error::other(format!("cargo build exited with {status}"))) }
}

/// Runs `cmd` in a process group of its own; after `budget`, interrupts the group (cargo-mutants then stops its
/// build or test and removes its scratch copy) and kills it after [`GRACE`]. Its exit status when it ended by
/// itself, `None` when it was stopped.
fn run_bounded(cmd: &mut Command, budget: Duration) -> io::Result<Option<ExitStatus>> {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    println!("{}", run::echo_line(cmd));
    let mut child = cmd.spawn()?;
    let group = Pid::from_raw(i32::try_from(child.id()).map_err(io::Error::other)?);
    let (done, finished) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = done.send(child.wait());
    });
    let ended = match finished.recv_timeout(budget) {
        Ok(waited) => Some(waited?),
        Err(_) => {
            println!("mutants: the budget of {} s is spent; stopping cargo mutants", budget.as_secs());
            let _ = killpg(group, Signal::SIGINT);
            if finished.recv_timeout(GRACE).is_err() {
                let _ = killpg(group, Signal::SIGKILL);
                let _ = finished.recv();
            }
            None
        }
    };
    let _ = waiter.join();
    Ok(ended)
}
