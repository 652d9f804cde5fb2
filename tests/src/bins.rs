//! Locating the product binaries under test: `target/<profile>/`, never `PATH` (80 I2).

use std::path::PathBuf;
use std::sync::OnceLock;

/// A directory chosen by the running program instead of its own (the bench names the release binaries it just
/// built; xtask's commands name the debug ones).
static BIN_DIR_OVERRIDE: OnceLock<PathBuf> = OnceLock::new();

/// Makes [`bin_dir`] answer `dir` for the rest of the process; the first call wins. Returns false when
/// another directory had already been chosen.
pub fn use_bin_dir(dir: PathBuf) -> bool {
    BIN_DIR_OVERRIDE.set(dir.clone()).is_ok() || BIN_DIR_OVERRIDE.get() == Some(&dir)
}

/// The directory holding the product binaries of this build.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = BIN_DIR_OVERRIDE.get() {
        return dir.clone();
    }
    own_dir()
}

/// The target directory this program was built into: the directory above its profile directory
/// (`<target>/debug/deps/e2e-…` and `<target>/debug/xtask` both give `<target>`), which is where cargo put the
/// product binaries of this same run, shared target directory or not.
pub fn target_dir() -> PathBuf {
    let dir = own_dir();
    dir.parent().map_or_else(|| dir.clone(), std::path::Path::to_path_buf)
}

/// The profile directory of the running program itself (`target/debug`), whatever [`use_bin_dir`] chose.
fn own_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().to_path_buf();
    if dir.file_name().is_some_and(|n| n == "deps" || n == "examples") {
        dir.parent().unwrap().to_path_buf()
    } else {
        dir
    }
}

/// The path of product binary `name`; panics with the build command when it is missing.
pub fn bin(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.is_file(),
        "{} is missing: run cargo build --workspace --bins (or cargo test --workspace)",
        path.display()
    );
    path
}
