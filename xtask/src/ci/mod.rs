//! `cargo xtask ci`: the one test command (spec 70 §2). Eight steps in a fixed order; every step runs even
//! after an earlier one failed, so a formatting slip cannot hide a test failure (CI-2.3).

pub mod nix;
pub(crate) mod setup;

use std::time::Instant;

use crate::{exit, run};

/// Why a step failed: the exit number shown in its `--> FAILED` banner. For a subprocess step it is the
/// process's own; for an in-process step it is what the matching xtask command would exit with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failed(pub i32);

/// The outcome of one step.
pub type StepResult = Result<(), Failed>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Setup,
    Fmt,
    Clippy,
    Test,
    Golden,
    Nix,
    Powerloss,
    Mutants,
}

const STEPS: [Step; 8] =
    [Step::Setup, Step::Fmt, Step::Clippy, Step::Test, Step::Golden, Step::Nix, Step::Powerloss, Step::Mutants];

/// Crashes of the ci run of `cargo xtask powerloss`: every crash point comes up twice (about 100 s with the queue box).
const CI_CRASHES: usize = 20;

impl Step {
    fn name(self) -> &'static str {
        match self {
            Step::Setup => "setup",
            Step::Fmt => "fmt",
            Step::Clippy => "clippy",
            Step::Test => "test",
            Step::Golden => "golden",
            Step::Nix => "nix",
            Step::Powerloss => "powerloss",
            Step::Mutants => "mutants",
        }
    }

    fn run(self) -> StepResult {
        match self {
            Step::Setup => setup::run(),
            Step::Fmt => cargo(&["fmt", "--all", "--", "--check"]),
            // --locked everywhere: nix/package.nix builds from Cargo.lock, so a stale lock must fail here (CI-2.5).
            Step::Clippy => cargo(&["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"]),
            Step::Test => cargo(&["test", "--workspace", "--locked"]),
            Step::Golden => crate::golden::check_step().map_err(|code| Failed(code.into())),
            Step::Nix => nix::run(),
            Step::Powerloss => powerloss(),
            // The mutants of the lines the branch changed, bounded in time (docs/mutants.md).
            Step::Mutants => crate::mutants::ci_step(),
        }
    }

    /// The line printed after the step failed when the `CI` variable is set, pointing at the usual fix.
    fn hint(self) -> Option<&'static str> {
        match self {
            Step::Fmt => Some("hint: run cargo fmt --all"),
            Step::Golden => Some("hint: run cargo xtask golden --bless, review the diff, commit golden/"),
            Step::Mutants => {
                Some("hint: kill each survivor with a test, or list it in docs/mutants.md with its reason")
            }
            _ => None,
        }
    }
}

/// Runs every step and returns the process exit code.
pub fn run() -> u8 {
    let show_hints = std::env::var_os("CI").is_some();
    let mut failed = Vec::new();
    for (index, step) in STEPS.iter().copied().enumerate() {
        println!("==> ci [{}/{}] {}", index + 1, STEPS.len(), step.name());
        let started = Instant::now();
        let result = step.run();
        let secs = started.elapsed().as_secs_f64();
        println!("{}", result_banner(result, secs));
        if result.is_err() {
            if let Some(hint) = step.hint().filter(|_| show_hints) {
                println!("{hint}");
            }
            failed.push(step);
        }
    }
    let names: Vec<&str> = failed.iter().map(|step| step.name()).collect();
    println!("{}", final_line(STEPS.len() - failed.len(), &names));
    exit_code(&failed)
}

/// `cargo xtask powerloss --crashes 20` with a fresh seed, where it can run (root with `/dev/fuse`); a `SKIP`
/// line elsewhere, like the other root-only checks.
fn powerloss() -> StepResult {
    if let Some(why) = crate::powerloss::unavailable() {
        println!("SKIP: powerloss {why}");
        return Ok(());
    }
    let args = crate::powerloss::PowerlossArgs { crashes: CI_CRASHES, seed: None };
    match crate::powerloss::run(&args) {
        exit::SUCCESS => Ok(()),
        code => Err(Failed(code.into())),
    }
}

/// Runs `cargo <args>` in the workspace root as one step.
fn cargo(args: &[&str]) -> StepResult {
    let mut cmd = run::command("cargo");
    cmd.args(args);
    match run::status(&mut cmd) {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(Failed(run::exit_number(status))),
        Err(err) => {
            eprintln!("ci: cannot run cargo: {err}");
            Err(Failed(run::spawn_error_number(&err)))
        }
    }
}

fn result_banner(result: StepResult, secs: f64) -> String {
    match result {
        Ok(()) => format!("--> ok ({secs:.1}s)"),
        Err(Failed(code)) => format!("--> FAILED (exit {code}, {secs:.1}s)"),
    }
}

/// `ci: <P> passed, <F> failed`, plus the failed step names in parentheses when there are any (CI-2.6).
fn final_line(passed: usize, failed: &[&str]) -> String {
    let mut line = format!("ci: {passed} passed, {} failed", failed.len());
    if !failed.is_empty() {
        line.push_str(&format!(" ({})", failed.join(", ")));
    }
    line
}

/// 0 when nothing failed; 96 when setup failed, because then the machine, not the code, is the problem;
/// else 100 (CI-2.6).
fn exit_code(failed: &[Step]) -> u8 {
    if failed.is_empty() {
        exit::SUCCESS
    } else if failed.contains(&Step::Setup) {
        exit::SETUP
    } else {
        exit::CHECK_FAILED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_line_without_failures() {
        assert_eq!(final_line(6, &[]), "ci: 6 passed, 0 failed");
    }

    #[test]
    fn final_line_lists_failed_steps_in_order() {
        assert_eq!(final_line(5, &["fmt"]), "ci: 5 passed, 1 failed (fmt)");
        assert_eq!(final_line(3, &["fmt", "test", "nix"]), "ci: 3 passed, 3 failed (fmt, test, nix)");
    }

    #[test]
    fn exit_code_choice() {
        assert_eq!(exit_code(&[]), 0);
        assert_eq!(exit_code(&[Step::Fmt]), 100);
        assert_eq!(exit_code(&[Step::Golden, Step::Nix]), 100);
        assert_eq!(exit_code(&[Step::Setup]), 96);
        assert_eq!(exit_code(&[Step::Setup, Step::Test]), 96);
    }

    #[test]
    fn banners() {
        assert_eq!(result_banner(Ok(()), 1.26), "--> ok (1.3s)");
        assert_eq!(result_banner(Err(Failed(101)), 0.04), "--> FAILED (exit 101, 0.0s)");
    }

    #[test]
    fn steps_are_in_spec_order_with_spec_names() {
        let names: Vec<&str> = STEPS.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["setup", "fmt", "clippy", "test", "golden", "nix", "powerloss", "mutants"]);
    }

    // CI-2.3 for fmt and golden
    #[test]
    fn fmt_golden_and_mutants_have_hints() {
        assert_eq!(Step::Fmt.hint(), Some("hint: run cargo fmt --all"));
        assert_eq!(Step::Golden.hint(), Some("hint: run cargo xtask golden --bless, review the diff, commit golden/"));
        assert!(Step::Mutants.hint().is_some_and(|hint| hint.contains("docs/mutants.md")));
        assert!(STEPS.iter().filter(|s| s.hint().is_some()).count() == 3);
    }
}
