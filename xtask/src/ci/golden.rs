//! ci step 5, golden: a stand-in until the golden renderer exists (spec 70 §6). An empty `golden/` passes;
//! snapshots that cannot be rendered fail, so nothing committed there goes unchecked.

use std::io;
use std::path::{Path, PathBuf};

use super::{Failed, StepResult};
use crate::{exit, run, walk};

/// Checks `golden/` in the workspace root.
pub fn run() -> StepResult {
    match snapshots(&run::workspace_root().join("golden")) {
        Ok(files) if files.is_empty() => {
            println!("golden: no snapshots yet (golden/ is empty); nothing to check");
            Ok(())
        }
        Ok(files) => {
            eprintln!(
                "golden: golden/ holds {} snapshot file(s), but the golden renderer is not implemented yet, so they cannot be checked",
                files.len()
            );
            // "No render" is exit 96 of `cargo xtask golden` (spec 70 §4).
            Err(Failed(exit::SETUP.into()))
        }
        Err(err) => {
            eprintln!("golden: cannot list golden/: {err}");
            Err(Failed(exit::CHECK_FAILED.into()))
        }
    }
}

/// The snapshot files under `dir` (relative paths); a missing directory has none.
fn snapshots(dir: &Path) -> io::Result<Vec<PathBuf>> {
    match walk::files(dir, |_| false) {
        Ok(files) => Ok(files.into_iter().filter(|rel| is_snapshot(rel)).collect()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(err),
    }
}

/// Every file under `golden/` is a snapshot except the top-level `README.md` (GD-6.2).
fn is_snapshot(rel: &Path) -> bool {
    rel != Path::new("README.md")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readme_is_not_a_snapshot() {
        assert!(!is_snapshot(Path::new("README.md")));
        assert!(is_snapshot(Path::new("help/README.md")));
        assert!(is_snapshot(Path::new("help/agent-box-session.txt")));
    }

    #[test]
    fn missing_directory_has_no_snapshots() {
        assert_eq!(snapshots(Path::new("/nonexistent/golden")).unwrap(), Vec::<PathBuf>::new());
    }
}
