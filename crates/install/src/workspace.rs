//! Where the checkout and cargo's target directory are, asked of cargo at run time (`cargo metadata`), never
//! fixed at compile time: two checkouts (git worktrees) that share one target directory share one xtask binary,
//! so a path compiled into it would be the checkout that happened to build it last.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A checkout and the target directory cargo builds it into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// The directory of the workspace's `Cargo.toml`.
    pub root: PathBuf,
    /// Cargo's target directory for this workspace: `CARGO_TARGET_DIR`, `build.target-dir`, or `<root>/target`.
    pub target: PathBuf,
}

/// Why the workspace could not be found.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("cannot run {program} metadata: {source}")]
    Run { program: String, source: io::Error },
    #[error("{program} metadata failed ({status}): {stderr}")]
    Failed { program: String, status: String, stderr: String },
    #[error("cargo metadata printed no usable {field}")]
    Parse { field: &'static str },
}

impl Workspace {
    /// Asks cargo, as the running program's cargo sees it: `$CARGO` (set by `cargo run` and `cargo test`, else
    /// `cargo` on PATH), in the current directory, so that the same configuration files and the same relative
    /// `CARGO_TARGET_DIR` apply; with the package manifest cargo ran us from (`CARGO_MANIFEST_DIR`, set at run
    /// time by `cargo run`), so that the checkout is the one that was invoked, whatever the binary's history.
    pub fn find() -> Result<Self, WorkspaceError> {
        let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(&program);
        cmd.args(["metadata", "--format-version", "1", "--no-deps"]);
        if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") {
            cmd.arg("--manifest-path").arg(Path::new(&dir).join("Cargo.toml"));
        }
        let name = program.to_string_lossy().into_owned();
        let out = cmd.output().map_err(|source| WorkspaceError::Run { program: name.clone(), source })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            return Err(WorkspaceError::Failed { program: name, status: out.status.to_string(), stderr });
        }
        Self::from_metadata(&String::from_utf8_lossy(&out.stdout))
    }

    /// Reads `workspace_root` and `target_directory` from `cargo metadata --format-version 1` output.
    pub fn from_metadata(json: &str) -> Result<Self, WorkspaceError> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|_| WorkspaceError::Parse { field: "JSON" })?;
        let path = |field: &'static str| {
            value
                .get(field)
                .and_then(serde_json::Value::as_str)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .ok_or(WorkspaceError::Parse { field })
        };
        Ok(Self { root: path("workspace_root")?, target: path("target_directory")? })
    }
}

/// The nearest directory at or above `dir` whose `Cargo.toml` declares `[workspace]`: where cargo itself finds the
/// workspace of a package, for a program that has the package directory and no cargo to ask.
pub fn root_above(dir: &Path) -> Option<PathBuf> {
    let declares = |d: &Path| {
        std::fs::read_to_string(d.join("Cargo.toml")).is_ok_and(|t| t.lines().any(|l| l.trim() == "[workspace]"))
    };
    dir.ancestors().find(|d| declares(d)).map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_above_a_nested_package_is_the_workspace_not_its_parent() {
        let package = Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = root_above(package).unwrap();
        assert_eq!(root, package.parent().unwrap().parent().unwrap(), "crates/install is two levels down");
        assert!(root_above(Path::new("/")).is_none());
    }

    #[test]
    fn metadata_gives_root_and_target() {
        let json = r#"{"packages":[],"workspace_root":"/w/a","target_directory":"/t/shared","version":1}"#;
        let found = Workspace::from_metadata(json).unwrap();
        assert_eq!(found, Workspace { root: "/w/a".into(), target: "/t/shared".into() });
    }

    #[test]
    fn a_missing_or_relative_field_is_an_error_not_a_guess() {
        let relative = r#"{"workspace_root":"w","target_directory":"/t"}"#;
        assert!(matches!(Workspace::from_metadata(relative), Err(WorkspaceError::Parse { field: "workspace_root" })));
        let missing = r#"{"workspace_root":"/w"}"#;
        assert!(matches!(Workspace::from_metadata(missing), Err(WorkspaceError::Parse { field: "target_directory" })));
        assert!(Workspace::from_metadata("not json").is_err());
    }

    /// The rule this module exists for: `CARGO_TARGET_DIR` moves the target directory and cargo says so.
    #[test]
    fn cargo_target_dir_is_honoured() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let out = Command::new(program)
            .args(["metadata", "--format-version", "1", "--no-deps", "--manifest-path"])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let found = Workspace::from_metadata(&String::from_utf8_lossy(&out.stdout)).unwrap();
        assert_eq!(found.target, target);
        assert!(found.root.join("crates/install").is_dir(), "{}", found.root.display());
    }
}
