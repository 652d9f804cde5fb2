//! `cargo xtask golden [--bless]` (70 §4, GD-6, GD-7) and ci step 5: build the binaries, render every
//! artefact with the harness's renderer into `<target>/golden/rendered/`, and compare with `golden/`; `--bless`
//! makes `golden/` equal to a render that is deterministic and leaks nothing, then refreshes `golden/nix/`
//! through the nix step's own bless (when this machine has a nixpkgs lib).

use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

use agent_box_tests::golden::{self, BlessRefusal, CheckReport, Rendered};

use crate::{exit, run};

/// The directory the check renders into, kept afterwards so a reader can look at what differed.
fn rendered_dir() -> PathBuf {
    run::target_dir().join("golden/rendered")
}

/// The command: 0 current or blessed, 100 drift or refused bless, 96 no render.
pub fn run(bless: bool) -> u8 {
    if let Err(code) = prepare() {
        return code;
    }
    if bless { run_bless() } else { run_check() }
}

/// ci step 5: the check alone.
pub fn check_step() -> Result<(), u8> {
    prepare()?;
    match run_check() {
        0 => Ok(()),
        code => Err(code),
    }
}

/// Builds the product binaries the renderer runs; a failure is a setup error (96): nothing can be rendered.
fn prepare() -> Result<(), u8> {
    let mut cmd = run::command("cargo");
    cmd.args(["build", "--workspace", "--bins", "--locked"]);
    match run::status(&mut cmd) {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => {
            eprintln!("golden: the binaries did not build ({status}); nothing can be rendered");
            Err(exit::SETUP)
        }
        Err(err) => {
            eprintln!("golden: cannot run cargo: {err}");
            Err(exit::SETUP)
        }
    }
}

/// Runs `f`, turning a panic of the renderer (tmux missing, a fixture that cannot be set up) into exit 96.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, u8> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        eprintln!("golden: {what} failed: {message}");
        exit::SETUP
    })
}

fn run_check() -> u8 {
    let report = match guarded("the render", || golden::check(&golden::golden_dir(), &rendered_dir())) {
        Ok(Ok(report)) => report,
        Ok(Err(err)) => {
            eprintln!("golden: cannot compare with golden/: {err}");
            return exit::SETUP;
        }
        Err(code) => return code,
    };
    print_check(&report)
}

fn print_check(report: &CheckReport) -> u8 {
    let _ = std::io::stdout().write_all(report.text.as_bytes());
    if report.passed() {
        println!("golden: {} files current (rendered in {:.1}s)", report.files, report.secs);
        exit::SUCCESS
    } else {
        exit::CHECK_FAILED
    }
}

fn run_bless() -> u8 {
    let scratch = run::target_dir().join("golden/bless");
    let renders = guarded("the render", || (golden::render(), golden::render()));
    let (first, second): (Rendered, Rendered) = match renders {
        Ok(pair) => pair,
        Err(code) => return code,
    };
    match golden::bless_rendered(&golden::golden_dir(), &scratch, first, &second) {
        Ok(changes) => {
            for change in changes {
                println!("{change}");
            }
            // golden/nix/ belongs to the nix step, which evaluates and blesses it the same way (NX-10.3).
            crate::ci::nix::command(true)
        }
        Err(BlessRefusal::Io(err)) => {
            eprintln!("golden: cannot bless: {err}");
            exit::SETUP
        }
        Err(refusal) => {
            eprintln!("{refusal}");
            exit::CHECK_FAILED
        }
    }
}
