//! Locating the product binaries under test: `target/<profile>/`, never `PATH` (80 I2).

use std::path::PathBuf;

/// The directory holding the product binaries of this build.
pub fn bin_dir() -> PathBuf {
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
