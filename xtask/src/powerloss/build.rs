//! Building LazyFS from the vendored sources (`../shared/vendor/lazyfs`) into
//! `${XDG_CACHE_HOME:-~/.cache}/agent-box/lazyfs/<hash>/`, cached by the content of those sources and of the two
//! CMake files that replace theirs. why: the build takes minutes on 2 cores and ci runs the power-loss step on every
//! run, each time in a fresh clone (so not under its `target/`); a changed source or patch gives a new hash, so a
//! stale binary is never used.

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::run;

/// The vendored sources, relative to the workspace root (read-only: the build works on a copy).
pub const VENDOR: &str = "../shared/vendor/lazyfs";
/// Replaces `libs/libpcache/CMakeLists.txt`: toml11 and spdlog from Debian via `find_package` (no network).
const LIBPCACHE_CMAKE: &str = include_str!("lazyfs/libpcache.cmake");
/// Replaces `lazyfs/CMakeLists.txt`: spdlog via `find_package`, libpcache from its build directory, no unit tests.
const LAZYFS_CMAKE: &str = include_str!("lazyfs/lazyfs.cmake");
/// The Debian 12 packages the build and the mount need (the vendor README's list).
pub const PACKAGES: [&str; 8] =
    ["cmake", "g++", "pkg-config", "libfuse3-dev", "fuse3", "libtoml11-dev", "libspdlog-dev", "libfmt-dev"];
/// Written last into a finished build directory; a directory without it is a build that was interrupted.
const DONE: &str = "built";

/// Why LazyFS is not available.
#[derive(Debug)]
pub struct BuildError(pub String);

/// The LazyFS binary, built now or found in the cache. Prints one progress line either way.
pub fn lazyfs() -> Result<PathBuf, BuildError> {
    let vendor = run::workspace_root().join(VENDOR);
    let hash = content_hash(&vendor).map_err(|e| BuildError(format!("cannot read {}: {e}", vendor.display())))?;
    let dir = cache_root().join(format!("{hash:016x}"));
    let binary = dir.join("lazyfs/build/lazyfs");
    if dir.join(DONE).is_file() && binary.is_file() {
        println!("powerloss: LazyFS cached at {}", binary.display());
        return Ok(binary);
    }
    println!("powerloss: building LazyFS into {} (about 1–4 minutes, once per source change)", dir.display());
    build_into(&vendor, &dir).map_err(|e| BuildError(format!("the LazyFS build failed: {e}")))?;
    Ok(binary)
}

/// Where finished builds are kept: outside every checkout, shared by all of them.
fn cache_root() -> PathBuf {
    let from_env = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = from_env("XDG_CACHE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| from_env("HOME").map(|home| home.join(".cache")))
        .unwrap_or_else(run::target_dir);
    base.join("agent-box/lazyfs")
}

/// Copies the sources, puts the patched CMake files in place, builds libpcache, then lazyfs (which links it).
fn build_into(vendor: &Path, dir: &Path) -> io::Result<()> {
    match fs::remove_dir_all(dir) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
        _ => {}
    }
    fs::create_dir_all(dir)?;
    for part in ["lazyfs", "libs", "LICENSE"] {
        copy_tree(&vendor.join(part), &dir.join(part))?;
    }
    fs::write(dir.join("libs/libpcache/CMakeLists.txt"), LIBPCACHE_CMAKE)?;
    fs::write(dir.join("lazyfs/CMakeLists.txt"), LAZYFS_CMAKE)?;
    let pcache = dir.join("libs/libpcache/build");
    cmake_build(&dir.join("libs/libpcache"), &pcache, &[])?;
    let define = format!("-DPCACHE_BUILD_DIR={}", pcache.display());
    cmake_build(&dir.join("lazyfs"), &dir.join("lazyfs/build"), &[&define, "-DLAZYFS_BUILD_TESTS=OFF"])?;
    fs::write(dir.join(DONE), b"")
}

/// `cmake -S src -B build <defines>` then `cmake --build build -j2`, both echoed.
fn cmake_build(src: &Path, build: &Path, defines: &[&str]) -> io::Result<()> {
    let mut configure = Command::new("cmake");
    configure.arg("-S").arg(src).arg("-B").arg(build).arg("-DCMAKE_BUILD_TYPE=Release").args(defines);
    checked(&mut configure)?;
    let mut compile = Command::new("cmake");
    compile.arg("--build").arg(build).args(["-j", "2"]);
    checked(&mut compile)
}

fn checked(cmd: &mut Command) -> io::Result<()> {
    let status = run::status(cmd)?;
    if status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!("{} exited with {status}", run::echo_line(cmd))))
    }
}

/// A hash of every file under the vendor tree (path and bytes, in sorted order) and of both patched CMake files.
pub fn content_hash(vendor: &Path) -> io::Result<u64> {
    let mut files = Vec::new();
    list_files(vendor, &mut files)?;
    files.sort();
    let mut hasher = DefaultHasher::new();
    for file in &files {
        file.strip_prefix(vendor).unwrap_or(file).hash(&mut hasher);
        fs::read(file)?.hash(&mut hasher);
    }
    LIBPCACHE_CMAKE.hash(&mut hasher);
    LAZYFS_CMAKE.hash(&mut hasher);
    Ok(hasher.finish())
}

fn list_files(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            list_files(&entry.path(), out)?;
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
    Ok(())
}

/// Copies a file or a directory tree (regular files and directories only; the vendor tree has nothing else).
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    if fs::metadata(from)?.is_file() {
        return fs::copy(from, to).map(drop);
    }
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        copy_tree(&entry.path(), &to.join(entry.file_name()))?;
    }
    Ok(())
}

/// The packages of [`PACKAGES`] that `dpkg-query` does not report as installed.
pub fn missing_packages() -> Vec<&'static str> {
    PACKAGES.iter().copied().filter(|package| !installed(package)).collect()
}

fn installed(package: &str) -> bool {
    let out = Command::new("dpkg-query").args(["-W", "-f=${Status}", package]).output();
    out.is_ok_and(|out| out.status.success() && String::from_utf8_lossy(&out.stdout).ends_with("installed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_follows_the_content() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("a")).unwrap();
        fs::write(dir.path().join("a/f"), b"one").unwrap();
        let first = content_hash(dir.path()).unwrap();
        assert_eq!(content_hash(dir.path()).unwrap(), first);
        fs::write(dir.path().join("a/f"), b"two").unwrap();
        assert_ne!(content_hash(dir.path()).unwrap(), first);
    }

    #[test]
    fn the_patched_cmake_files_use_find_package_and_fetch_nothing() {
        for text in [LIBPCACHE_CMAKE, LAZYFS_CMAKE] {
            assert!(text.contains("find_package(spdlog REQUIRED)"));
            assert!(!text.contains("FetchContent_Declare"));
        }
        assert!(LIBPCACHE_CMAKE.contains("find_package(toml11 REQUIRED)"));
    }
}
