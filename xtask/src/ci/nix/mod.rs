//! ci step 6, nix, and `cargo xtask nix [--bless]` (spec 70 CI-2.4, NX-1, NX-10): every `.nix` file of the
//! repository is parsed with `nix-instantiate --parse`, then the evaluation cases of `nix/tests/` run against
//! the real nixpkgs library (see [`eval`]), and the pinned cases are compared with `golden/nix/`.
//!
//! Discovery (CI-2.4): the `.nix` files tracked by git, or outside a checkout every `*.nix` except under
//! `target/` and `.git/`; none found is a failure, and so is a missing `nix-instantiate` (exit 96, like setup).

pub mod eval;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::{Failed, StepResult};
use crate::{exit, run};

/// ci step 6: parse every `.nix` file, then run the evaluation checks (or say once that there is no lib).
pub fn run() -> StepResult {
    let root = run::workspace_root();
    let parsed = parse_step(&root);
    if matches!(parsed, Err(Failed(code)) if code == i32::from(exit::SETUP)) {
        // Without nix-instantiate nothing can be evaluated either; the reason is printed already.
        return parsed;
    }
    let mut out = io::stdout();
    let evaluated = match eval::find_lib(&root) {
        Ok(Some(lib)) => eval::check(&root, &lib, &mut out),
        Ok(None) => {
            println!("{}", eval::NO_LIB_LINE);
            Ok(())
        }
        Err(msg) => {
            eprintln!("nix: {msg}");
            Err(Failed(exit::CHECK_FAILED.into()))
        }
    };
    parsed.and(evaluated)
}

/// `cargo xtask nix [--bless]`: the step alone (exit 0, 100 for a failed check, 96 without nix-instantiate),
/// or with `--bless` the refresh of `golden/nix/` from two agreeing evaluations.
pub fn command(bless: bool) -> u8 {
    let result = if bless { bless_command() } else { run() };
    match result {
        Ok(()) => exit::SUCCESS,
        Err(Failed(code)) if code == i32::from(exit::SETUP) => exit::SETUP,
        Err(_) => exit::CHECK_FAILED,
    }
}

/// `--bless`: golden/nix/ refreshed from this machine's lib; without one nothing changes (exit 0: there is
/// nothing this machine could bless, and nothing is wrong with the code).
fn bless_command() -> StepResult {
    let root = run::workspace_root();
    match eval::find_lib(&root) {
        Ok(Some(lib)) => eval::bless(&root, &lib, &mut io::stdout()),
        Ok(None) => {
            println!("{}; golden/nix/ left as it is", eval::NO_LIB_LINE);
            Ok(())
        }
        Err(msg) => {
            eprintln!("nix: {msg}");
            Err(Failed(exit::CHECK_FAILED.into()))
        }
    }
}

/// Discovers and parses the `.nix` files under `root`.
fn parse_step(root: &Path) -> StepResult {
    let files = discover(root).map_err(|msg| {
        eprintln!("nix: {msg}");
        Failed(exit::CHECK_FAILED.into())
    })?;
    if files.is_empty() {
        eprintln!("nix: no .nix files found (tracked by git, or in the tree outside a checkout)");
        return Err(Failed(exit::CHECK_FAILED.into()));
    }
    parse_all(root, &files)
}

/// Parses each file, printing nix's message for each one that does not parse.
fn parse_all(root: &Path, files: &[PathBuf]) -> StepResult {
    let mut bad = 0;
    for file in files {
        let mut cmd = run::command("nix-instantiate");
        cmd.current_dir(root).arg("--parse").arg(file).stdout(Stdio::null());
        match run::output(&mut cmd) {
            Ok(out) if out.status.success() => {}
            Ok(out) => {
                bad += 1;
                eprintln!("nix: {} does not parse:", file.display());
                // Best effort: a broken stderr leaves no better place to report to.
                let _ = io::stderr().write_all(&out.stderr);
            }
            Err(err) => {
                eprintln!("{}", missing_nix_line(&err));
                return Err(Failed(exit::SETUP.into()));
            }
        }
    }
    println!("nix: {} file(s) parsed, {bad} did not parse", files.len());
    if bad == 0 { Ok(()) } else { Err(Failed(exit::CHECK_FAILED.into())) }
}

/// The line for a nix-instantiate that cannot be started (the wording of CI-2.2).
pub fn missing_nix_line(err: &io::Error) -> String {
    format!("nix: cannot run nix-instantiate ({err}); install it (Debian: sudo apt-get install nix-bin) and run again")
}

/// The `.nix` files, relative to `root`: the ones git tracks plus new ones it does not ignore (a `.nix` file
/// written but not committed must be parsed before it is committed, not after), through the harness's one
/// source listing.
pub fn discover(root: &Path) -> Result<Vec<PathBuf>, String> {
    agent_box_tests::tree::files(root, &["*.nix"])
        .map_err(|err| format!("cannot list the .nix files of {} ({err}); run inside the git checkout", root.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_has_the_nix_files_of_nx_2_to_nx_8() {
        let files = discover(&run::workspace_root()).unwrap();
        for expected in ["flake.nix", "nix/package.nix", "nix/epilogue.nix", "nix/module.nix", "nix/tests/eval.nix"] {
            assert!(files.contains(&PathBuf::from(expected)), "{expected} not among {files:?}");
        }
    }
}
