//! The two file listings every test and command uses. [`files`]: the workspace's source files, through
//! `git ls-files`, for the tidy checks and xtask's `.nix` parse: what git tracks plus new files it does not ignore,
//! so `target/`, `.git/` and a `result` link into the Nix store are never entered, and a file written but not
//! committed is checked before it is committed. [`below`]: everything under a sandbox directory, which no git
//! knows, for the tests that compare or search a tree.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The files under `root` matching any of the git `pathspecs` (e.g. `*.rs`), relative to `root`, sorted. A file
/// deleted in the working tree but still in the index is left out: it is gone, not broken. Fails when git is
/// missing or `root` is not in a git checkout.
pub fn files(root: &Path, pathspecs: &[&str]) -> io::Result<Vec<PathBuf>> {
    let out = Command::new("git")
        .current_dir(root)
        .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--"])
        .args(pathspecs)
        .output()?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(io::Error::other(format!("git ls-files failed in {}: {}", root.display(), stderr.trim())));
    }
    let mut found: Vec<PathBuf> = split_nul(&out.stdout).into_iter().filter(|rel| root.join(rel).is_file()).collect();
    found.sort();
    found.dedup();
    Ok(found)
}

/// Every path below `dir` (files, directories and links; links are listed, never followed), sorted; nothing when
/// `dir` is missing. An entry that vanishes while it is listed is left out.
pub fn below(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            out.push(path.clone());
            if is_dir {
                walk(&path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// Splits `-z` output (NUL-terminated names) into paths; names are bytes, not necessarily UTF-8.
fn split_nul(bytes: &[u8]) -> Vec<PathBuf> {
    bytes
        .split(|&b| b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| PathBuf::from(OsStr::from_bytes(name)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_separated_names() {
        assert_eq!(split_nul(b""), Vec::<PathBuf>::new());
        assert_eq!(
            split_nul(b"flake.nix\0nix/a b.nix\0"),
            vec![PathBuf::from("flake.nix"), PathBuf::from("nix/a b.nix")]
        );
    }

    #[test]
    fn lists_tracked_and_new_files_but_not_ignored_or_deleted_ones() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            assert!(Command::new("git").current_dir(dir.path()).args(args).output().unwrap().status.success())
        };
        git(&["init", "-q"]);
        std::fs::write(dir.path().join(".gitignore"), "ignored.rs\n").unwrap();
        for name in ["kept.rs", "gone.rs", "ignored.rs", "other.txt"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        git(&["add", "kept.rs", "gone.rs"]);
        std::fs::remove_file(dir.path().join("gone.rs")).unwrap();
        std::fs::create_dir(dir.path().join("new")).unwrap();
        std::fs::write(dir.path().join("new/fresh.rs"), "").unwrap();
        assert_eq!(
            files(dir.path(), &["*.rs"]).unwrap(),
            vec![PathBuf::from("kept.rs"), PathBuf::from("new/fresh.rs")]
        );
    }

    #[test]
    fn below_lists_every_path_sorted_and_does_not_follow_links() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "").unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/c"), "").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let rel: Vec<PathBuf> =
            below(dir.path()).iter().map(|p| p.strip_prefix(dir.path()).unwrap().to_owned()).collect();
        assert_eq!(rel, ["a", "a/b", "a/b/c", "link"].map(PathBuf::from));
        assert!(below(&dir.path().join("missing")).is_empty());
    }

    #[test]
    fn outside_a_checkout_is_an_error() {
        // The system temporary directory is not inside a git checkout.
        let dir = tempfile::tempdir().unwrap();
        assert!(files(dir.path(), &["*.rs"]).is_err());
    }
}
