//! Baking the epilogue (70-golden-nix-xtask XT-5): build `agent-box-mark-stopped` with fixed paths, cache the
//! result by content, and verify it before handing it out. Shared by the tests and `cargo xtask bake-epilogue`.

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::workspace_root;

/// The build profile of a bake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    /// `epilogue`: optimised, static glibc (crt-static), stripped; what a box installs.
    Epilogue,
    /// `dev`: quick to build, dynamically linked; what tests use.
    Dev,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Self::Epilogue => "epilogue",
            Self::Dev => "dev",
        }
    }
    fn dir(self) -> &'static str {
        match self {
            Self::Epilogue => "epilogue",
            Self::Dev => "debug",
        }
    }
}

/// Why a bake did not produce a binary.
#[derive(Debug)]
pub enum BakeError {
    /// A path failed the checks of 40 MS-3.2 (exit 2).
    BadPath(String),
    /// cargo failed or could not run (exit 96).
    Build(String),
    /// The result did not print the expected paths or is not static (exit 100).
    Verify(String),
}

impl std::fmt::Display for BakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BadPath(m) | Self::Build(m) | Self::Verify(m) => f.write_str(m),
        }
    }
}

/// The target triple named explicitly, so RUSTFLAGS reach the binary and not build scripts or proc-macros.
pub const TARGET: &str = "x86_64-unknown-linux-gnu";

/// Checks a baked path exactly as `build.rs` will, before a long build (XT-5.2).
pub fn check_bake_path(var: &str, path: &Path, is_registry: bool) -> Result<(), BakeError> {
    let bad = |why: &str| Err(BakeError::BadPath(format!("{var} '{}' {why}", path.display())));
    let Some(text) = path.to_str() else { return bad("is not valid UTF-8") };
    if !path.is_absolute() {
        return bad("is not an absolute path");
    }
    if text.chars().any(char::is_control) {
        return bad("contains a control character");
    }
    if text.len() > 1 && text.ends_with('/') || text == "/" {
        return bad("ends in '/'");
    }
    if text.split('/').any(|p| p == "." || p == "..") || path.components().any(|c| matches!(c, Component::ParentDir)) {
        return bad("has a '.' or '..' component");
    }
    if is_registry && text.ends_with(".lock") {
        return bad("ends in .lock");
    }
    Ok(())
}

/// A baked epilogue for registry `sessions` and state directory `state`, from the cache when possible.
pub fn bake(sessions: &Path, state: &Path, profile: Profile) -> Result<PathBuf, BakeError> {
    check_bake_path("--sessions-file", sessions, true)?;
    check_bake_path("--state-dir", state, false)?;
    let bake_dir = workspace_root().join("target/bake");
    fs::create_dir_all(&bake_dir)
        .map_err(|e| BakeError::Build(format!("cannot create {}: {e}", bake_dir.display())))?;
    // One bake at a time per target directory, across processes: they share the cache and cargo's build dir.
    registry::with_file_lock(&bake_dir.join(".lock"), Duration::from_secs(1800), false, |_| {
        bake_locked(sessions, state, profile, &bake_dir)
    })
    .map_err(|e| BakeError::Build(format!("cannot lock {}: {e}", bake_dir.display())))?
}

fn bake_locked(sessions: &Path, state: &Path, profile: Profile, bake_dir: &Path) -> Result<PathBuf, BakeError> {
    let key = cache_key(sessions, state, profile)?;
    let cached = bake_dir.join("out").join(format!("{key:016x}")).join("agent-box-mark-stopped");
    if cached.is_file() {
        return Ok(cached);
    }
    let built = build(sessions, state, profile, bake_dir)?;
    verify(&built, sessions, state, profile)?;
    install(&built, &cached).map_err(|e| BakeError::Build(format!("cannot store {}: {e}", cached.display())))?;
    Ok(cached)
}

fn build(sessions: &Path, state: &Path, profile: Profile, bake_dir: &Path) -> Result<PathBuf, BakeError> {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(workspace_root())
        .args(["build", "--frozen", "--package", "agent-box-mark-stopped", "--profile", profile.name(), "--target"])
        .arg(TARGET)
        .arg("--target-dir")
        .arg(bake_dir)
        .env("AGENT_BOX_BAKE_SESSIONS_FILE", sessions)
        .env("AGENT_BOX_BAKE_STATE_DIR", state)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS");
    if profile == Profile::Epilogue {
        cmd.env("RUSTFLAGS", "-C target-feature=+crt-static");
    }
    let out = cmd.output().map_err(|e| BakeError::Build(format!("cannot run cargo: {e}")))?;
    if !out.status.success() {
        return Err(BakeError::Build(format!("cargo build failed:\n{}", String::from_utf8_lossy(&out.stderr))));
    }
    Ok(bake_dir.join(TARGET).join(profile.dir()).join("agent-box-mark-stopped"))
}

/// The five `--print-paths` lines a binary baked for these paths must print (40 MS-3.5).
pub fn expected_paths(sessions: &Path, state: &Path) -> String {
    let (s, d) = (sessions.display(), state.display());
    format!(
        "sessions-file {s}\nregistry-lock {s}.lock\nstate-dir {d}\nlease-dir {d}/lease\nhook-log {d}/hook-sessions.jsonl\n"
    )
}

fn verify(binary: &Path, sessions: &Path, state: &Path, profile: Profile) -> Result<(), BakeError> {
    let out = Command::new(binary)
        .arg("--print-paths")
        .env_clear()
        .output()
        .map_err(|e| BakeError::Verify(format!("cannot run {}: {e}", binary.display())))?;
    let printed = String::from_utf8_lossy(&out.stdout);
    if printed != expected_paths(sessions, state) {
        return Err(BakeError::Verify(format!("{} printed unexpected paths:\n{printed}", binary.display())));
    }
    if profile == Profile::Epilogue && has_interpreter(binary).unwrap_or(true) {
        return Err(BakeError::Verify(format!(
            "{} is not static: it has a PT_INTERP program header",
            binary.display()
        )));
    }
    Ok(())
}

/// True when an ELF64 little-endian file has a `PT_INTERP` program header (a dynamically linked program).
pub fn has_interpreter(binary: &Path) -> io::Result<bool> {
    let bytes = fs::read(binary)?;
    let field = |at: usize, len: usize| -> io::Result<u64> {
        let slice = bytes.get(at..at + len).ok_or_else(|| io::Error::other("truncated ELF"))?;
        Ok(slice.iter().rev().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    };
    if bytes.get(..4) != Some(b"\x7fELF") || bytes.get(4) != Some(&2) || bytes.get(5) != Some(&1) {
        return Err(io::Error::other("not an ELF64 little-endian file"));
    }
    let (phoff, phentsize, phnum) = (field(0x20, 8)?, field(0x36, 2)?, field(0x38, 2)?);
    for index in 0..phnum {
        let at = usize::try_from(phoff + index * phentsize).map_err(io::Error::other)?;
        if field(at, 4)? == 3 {
            return Ok(true);
        }
    }
    Ok(false)
}

fn install(built: &Path, target: &Path) -> io::Result<()> {
    let dir = target.parent().ok_or_else(|| io::Error::other("no parent"))?;
    fs::create_dir_all(dir)?;
    let temp = dir.join(".incoming");
    fs::copy(built, &temp)?;
    fs::set_permissions(&temp, fs::Permissions::from_mode(0o755))?;
    fs::rename(&temp, target)
}

/// XT-5.4: paths, profile, toolchain, Cargo.lock and every source file the epilogue is built from.
fn cache_key(sessions: &Path, state: &Path, profile: Profile) -> Result<u64, BakeError> {
    let mut hasher = DefaultHasher::new();
    (sessions, state, profile).hash(&mut hasher);
    let rustc = Command::new("rustc").arg("-vV").output().map(|o| o.stdout).unwrap_or_default();
    rustc.hash(&mut hasher);
    let root = workspace_root();
    let mut files = vec![root.join("Cargo.lock"), root.join("Cargo.toml")];
    for krate in ["crates/mark-stopped", "crates/base", "crates/registry", "crates/lease"] {
        let krate = root.join(krate);
        files.extend([krate.join("Cargo.toml"), krate.join("build.rs")].into_iter().filter(|f| f.is_file()));
        collect_files(&krate.join("src"), &mut files);
    }
    files.sort();
    for file in files {
        file.hash(&mut hasher);
        fs::read(&file)
            .map_err(|e| BakeError::Build(format!("cannot read {}: {e}", file.display())))?
            .hash(&mut hasher);
    }
    Ok(hasher.finish())
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => collect_files(&path, out),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
}
