//! The one listing of the workspace's source files, through `git ls-files`, for the tidy checks and xtask's `.nix`
//! parse: what git tracks plus new files it does not ignore, so `target/`, `.git/` and a `result` link into the
//! Nix store are never entered, and a file written but not committed is checked before it is committed.

use std::ffi::OsStr;
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
    fn outside_a_checkout_is_an_error() {
        // The system temporary directory is not inside a git checkout.
        let dir = tempfile::tempdir().unwrap();
        assert!(files(dir.path(), &["*.rs"]).is_err());
    }
}
