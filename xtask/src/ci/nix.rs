//! The `.nix` files of the repository: discovery (CI-2.4), shared by setup (is nix-instantiate needed?) and
//! ci step 6, nix-parse, which only parses them (NX-1).

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;

use super::{Failed, StepResult};
use crate::{exit, run, walk};

/// THE SWITCH: whether a repository without `.nix` files fails ci. The spec (CI-2.4) says it does; it stays
/// off while `nix/` does not exist yet. Turning it on also makes setup require nix-instantiate.
pub const NIX_FILES_REQUIRED: bool = false;

/// Whether setup must ensure nix-instantiate. When discovery fails, nix counts as needed: the nix-parse step
/// reports the discovery error itself.
pub fn needed() -> bool {
    NIX_FILES_REQUIRED || discover().map_or(true, |files| !files.is_empty())
}

/// ci step 6: `nix-instantiate --parse <file> >/dev/null` for every `.nix` file.
pub fn run() -> StepResult {
    let files = discover().map_err(|msg| {
        eprintln!("nix: {msg}");
        Failed(exit::CHECK_FAILED.into())
    })?;
    if files.is_empty() {
        return no_files();
    }
    let result = parse_all(&files);
    println!("nix: parse check only; not evaluated or built on this machine (NX-1)");
    result
}

fn no_files() -> StepResult {
    if NIX_FILES_REQUIRED {
        eprintln!("nix: no .nix files found (tracked by git, or in the tree outside a checkout)");
        return Err(Failed(exit::CHECK_FAILED.into()));
    }
    println!("nix: no .nix files yet; nothing to parse");
    Ok(())
}

/// Parses each file, printing nix's message for each one that does not parse.
fn parse_all(files: &[PathBuf]) -> StepResult {
    let mut bad = 0;
    for file in files {
        let mut cmd = run::command("nix-instantiate");
        cmd.arg("--parse").arg(file).stdout(Stdio::null());
        match run::output(&mut cmd) {
            Ok(out) if out.status.success() => {}
            Ok(out) => {
                bad += 1;
                eprintln!("nix: {} does not parse:", file.display());
                // Best effort: a broken stderr leaves no better place to report to.
                let _ = std::io::stderr().write_all(&out.stderr);
            }
            Err(err) => {
                // Without the program no later file can be checked either; setup has said why already.
                eprintln!("nix: cannot run nix-instantiate: {err}");
                return Err(Failed(run::spawn_error_number(&err)));
            }
        }
    }
    println!("nix: {} file(s) checked, {bad} did not parse", files.len());
    if bad == 0 { Ok(()) } else { Err(Failed(exit::CHECK_FAILED.into())) }
}

/// The `.nix` files, relative to the workspace root: the ones git tracks, or outside a git checkout every
/// `*.nix` in the tree except under `target/` and `.git/`.
pub fn discover() -> Result<Vec<PathBuf>, String> {
    if let Some(files) = git_tracked() {
        return Ok(files);
    }
    println!("nix: not a git checkout (or git is missing); searching the tree for *.nix");
    let root = run::workspace_root();
    let files = walk::files(&root, is_excluded).map_err(|err| format!("cannot search {}: {err}", root.display()))?;
    Ok(files.into_iter().filter(|rel| is_nix_file(rel)).collect())
}

/// `git ls-files -z -- '*.nix'`, or `None` when git is missing or the root is not in a checkout.
fn git_tracked() -> Option<Vec<PathBuf>> {
    let mut cmd = run::command("git");
    cmd.args(["ls-files", "-z", "--", "*.nix"]);
    let out = run::output(&mut cmd).ok().filter(|out| out.status.success())?;
    Some(split_nul(&out.stdout))
}

/// Splits `-z` output (NUL-terminated names) into paths; names are bytes, not necessarily UTF-8.
fn split_nul(bytes: &[u8]) -> Vec<PathBuf> {
    bytes
        .split(|&b| b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| PathBuf::from(OsStr::from_bytes(name)))
        .collect()
}

/// Directories the tree search does not enter: the build output and git's own files at the root.
fn is_excluded(rel: &Path) -> bool {
    matches!(rel.components().next(), Some(Component::Normal(first)) if first == "target" || first == ".git")
}

/// A file name ending in `.nix`, the same test as git's `*.nix` pathspec.
fn is_nix_file(rel: &Path) -> bool {
    !is_excluded(rel) && rel.file_name().is_some_and(|name| name.as_bytes().ends_with(b".nix"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nix_file_filter() {
        assert!(is_nix_file(Path::new("flake.nix")));
        assert!(is_nix_file(Path::new("nix/package.nix")));
        assert!(is_nix_file(Path::new("tests/fixtures/target/x.nix")));
        assert!(!is_nix_file(Path::new("target/debug/x.nix")));
        assert!(!is_nix_file(Path::new(".git/x.nix")));
        assert!(!is_nix_file(Path::new("nix/package.nix.orig")));
        assert!(!is_nix_file(Path::new("nix/README.md")));
        assert!(!is_nix_file(Path::new("nix")));
    }

    #[test]
    fn excluded_directories_are_only_the_top_level_ones() {
        assert!(is_excluded(Path::new("target")));
        assert!(is_excluded(Path::new(".git")));
        assert!(is_excluded(Path::new("target/debug")));
        assert!(!is_excluded(Path::new("nix")));
        assert!(!is_excluded(Path::new("crates/target")));
        assert!(!is_excluded(Path::new("targets")));
    }

    #[test]
    fn nul_separated_names() {
        assert_eq!(split_nul(b""), Vec::<PathBuf>::new());
        assert_eq!(
            split_nul(b"flake.nix\0nix/a b.nix\0"),
            vec![PathBuf::from("flake.nix"), PathBuf::from("nix/a b.nix")]
        );
    }
}
