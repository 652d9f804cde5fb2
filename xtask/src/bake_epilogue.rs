//! `cargo xtask bake-epilogue`: build `agent-box-mark-stopped` with a registry path and a state directory fixed
//! at build time, verify it, and install it at `--out` (spec 70 §5, XT-5.1–XT-5.7). The build, the cache and the
//! verification are the deployment library's (`agent_box_install::bake`), so tests and xtask bake the same way,
//! into `<target>/bake` of cargo's target directory for this checkout.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use agent_box_install::bake::{self, BakeError, Profile};
use agent_box_install::workspace::Workspace;
use clap::{Args, ValueEnum};

use crate::{exit, run};

/// Arguments of `cargo xtask bake-epilogue`.
#[derive(Debug, Args)]
pub struct BakeArgs {
    /// The registry path P the epilogue will edit (absolute).
    #[arg(long, value_name = "P")]
    sessions_file: PathBuf,
    /// The per-user state directory D (lease directory and hook log derive from it; absolute).
    #[arg(long, value_name = "D")]
    state_dir: PathBuf,
    /// Where to write the baked binary; its directory must exist.
    #[arg(long, value_name = "F")]
    out: PathBuf,
    /// Build profile: `epilogue` (static, optimised, stripped; what a box installs) or `dev` (quick, dynamic).
    #[arg(long, value_enum, default_value_t = ProfileArg::Epilogue)]
    profile: ProfileArg,
}

/// The `--profile` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileArg {
    Epilogue,
    Dev,
}

impl ProfileArg {
    pub fn profile(self) -> Profile {
        match self {
            Self::Epilogue => Profile::Epilogue,
            Self::Dev => Profile::Dev,
        }
    }
}

/// Why the command stopped: the exit code and the one line that says why.
#[derive(Debug, PartialEq, Eq)]
pub struct Stop {
    pub code: u8,
    pub message: String,
}

impl Stop {
    fn new(code: u8, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
}

/// Runs the command and returns its exit code.
pub fn run(args: &BakeArgs) -> u8 {
    match bake_to(args) {
        Ok(line) => {
            println!("{line}");
            exit::SUCCESS
        }
        Err(stop) => {
            eprintln!("bake-epilogue: {}", stop.message);
            stop.code
        }
    }
}

/// Checks, bakes, installs; returns the final `baked …` line.
fn bake_to(args: &BakeArgs) -> Result<String, Stop> {
    let out = check_args(args)?;
    let profile = args.profile.profile();
    let baked = bake_echoed(&args.sessions_file, &args.state_dir, profile)?;
    let bytes =
        install(&baked, &out).map_err(|e| Stop::new(exit::SETUP, format!("cannot write {}: {e}", out.display())))?;
    let linkage = linkage(&out).map_err(|e| Stop::new(exit::CHECK_FAILED, format!("{}: {e}", out.display())))?;
    Ok(format!(
        "baked {} ({bytes} bytes, {linkage}) for registry {}, state {}",
        out.display(),
        args.sessions_file.display(),
        args.state_dir.display()
    ))
}

/// XT-5.2: P and D as `build.rs` will check them, and an existing directory for F, all before cargo runs
/// (the same error from `build.rs` would arrive after a long build). Returns F made absolute against the
/// caller's directory: the caller named it, so it is the caller's directory that counts.
pub fn check_args(args: &BakeArgs) -> Result<PathBuf, Stop> {
    let usage = |e: BakeError| Stop::new(exit::USAGE, e.to_string());
    bake::check_bake_path("--sessions-file", &args.sessions_file, true).map_err(usage)?;
    bake::check_bake_path("--state-dir", &args.state_dir, false).map_err(usage)?;
    check_out(&args.out)
}

fn check_out(out: &Path) -> Result<PathBuf, Stop> {
    let bad = |why: String| Err(Stop::new(exit::USAGE, format!("--out '{}' {why}", out.display())));
    let Ok(absolute) = std::path::absolute(out) else { return bad("cannot be resolved".into()) };
    if absolute.file_name().is_none() || out.as_os_str().to_string_lossy().ends_with('/') {
        return bad("does not name a file".into());
    }
    if absolute.is_dir() {
        return bad("is a directory".into());
    }
    let dir = absolute.parent().unwrap_or(Path::new("/"));
    if !dir.is_dir() {
        return bad(format!("is in a directory that does not exist ({})", dir.display()));
    }
    Ok(absolute)
}

/// Bakes through the deployment library, echoing the cargo command it stands for (XT-1.4), and maps its errors to the exit
/// codes of XT-1.6: bad path 2, build 96, verification 100.
pub fn bake_echoed(sessions: &Path, state: &Path, profile: Profile) -> Result<PathBuf, Stop> {
    println!("{}", run::echo_line(&cargo_command(sessions, state, profile)));
    let started = SystemTime::now();
    let workspace = Workspace { root: run::workspace_root(), target: run::target_dir() };
    let baked = bake::bake(&workspace, sessions, state, profile).map_err(|e| match e {
        BakeError::BadPath(m) => Stop::new(exit::USAGE, m),
        BakeError::Build(m) => Stop::new(exit::SETUP, format!("the bake did not build: {m}")),
        BakeError::Verify(m) => Stop::new(exit::CHECK_FAILED, format!("the baked binary failed verification: {m}")),
    })?;
    // The bake skips cargo on a cache hit; say so, since the echoed line above did not run then.
    let fresh = fs::metadata(&baked).and_then(|m| m.modified()).is_ok_and(|t| t >= started);
    if !fresh {
        println!("(cached: {})", baked.display());
    }
    Ok(baked)
}

/// The cargo command the bake runs (XT-5.3), for the echo only; run in the workspace root, so a target directory
/// under it is shown relative to it.
fn cargo_command(sessions: &Path, state: &Path, profile: Profile) -> Command {
    let mut cmd = run::command("cargo");
    // The echo lists variables sorted by name, whatever the order they are set in.
    cmd.env("AGENT_BOX_BAKE_SESSIONS_FILE", sessions).env("AGENT_BOX_BAKE_STATE_DIR", state);
    if profile == Profile::Epilogue {
        cmd.env("RUSTFLAGS", "-C target-feature=+crt-static");
    }
    cmd.args(["build", "--frozen", "--package", "agent-box-mark-stopped", "--profile", profile.name()]).args([
        "--target",
        bake::TARGET,
        "--target-dir",
        &run::display_from_root(&run::target_dir().join("bake")),
    ]);
    cmd
}

/// XT-5.6: a temp file in F's directory, mode 0755, synced, then renamed over F, so F is either the old file or
/// the complete new one. Returns the byte size.
fn install(baked: &Path, out: &Path) -> io::Result<u64> {
    let dir = out.parent().unwrap_or(Path::new("/"));
    let name = out.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = write_temp(baked, &temp).and_then(|bytes| fs::rename(&temp, out).map(|()| bytes));
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

fn write_temp(baked: &Path, temp: &Path) -> io::Result<u64> {
    let bytes = fs::read(baked)?;
    let mut file = File::create(temp)?;
    file.write_all(&bytes)?;
    file.set_permissions(fs::Permissions::from_mode(0o755))?;
    file.sync_all()?;
    Ok(bytes.len() as u64)
}

/// `static` when the ELF has no program interpreter, else `dynamic`.
pub fn linkage(binary: &Path) -> io::Result<&'static str> {
    Ok(if bake::has_interpreter(binary)? { "dynamic" } else { "static" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(p: &str, d: &str, f: &str) -> BakeArgs {
        BakeArgs { sessions_file: p.into(), state_dir: d.into(), out: f.into(), profile: ProfileArg::Epilogue }
    }

    const P: &str = "/home/agent/.config/agent-box/sessions.json";
    const D: &str = "/home/agent/.local/state/agent-box";

    fn usage_message(a: &BakeArgs) -> String {
        let stop = check_args(a).unwrap_err();
        assert_eq!(stop.code, exit::USAGE, "{}", stop.message);
        stop.message
    }

    #[test]
    fn good_arguments_pass_and_out_becomes_absolute() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("epilogue");
        assert_eq!(check_args(&args(P, D, out.to_str().unwrap())).unwrap(), out);
    }

    #[test]
    fn bad_sessions_file_is_named() {
        assert_eq!(
            usage_message(&args("rel/sessions.json", D, "/tmp/x")),
            "--sessions-file 'rel/sessions.json' is not an absolute path"
        );
        assert_eq!(
            usage_message(&args("/a/sessions.json.lock", D, "/tmp/x")),
            "--sessions-file '/a/sessions.json.lock' ends in .lock"
        );
        assert_eq!(
            usage_message(&args("/a/../s.json", D, "/tmp/x")),
            "--sessions-file '/a/../s.json' has a '.' or '..' component"
        );
        assert_eq!(
            usage_message(&args("/a/./s.json", D, "/tmp/x")),
            "--sessions-file '/a/./s.json' has a '.' or '..' component"
        );
        assert_eq!(
            usage_message(&args("/a/s\n.json", D, "/tmp/x")),
            "--sessions-file '/a/s\n.json' contains a control character"
        );
    }

    #[test]
    fn bad_state_dir_is_named() {
        assert_eq!(
            usage_message(&args(P, "/home/agent/state/", "/tmp/x")),
            "--state-dir '/home/agent/state/' ends in '/'"
        );
        assert_eq!(usage_message(&args(P, "state", "/tmp/x")), "--state-dir 'state' is not an absolute path");
        // A state dir ending in .lock is fine: only the registry path may not.
        assert!(check_args(&args(P, "/x/state.lock", "/tmp/x")).is_ok());
    }

    #[test]
    fn non_utf8_paths_are_refused() {
        use std::os::unix::ffi::OsStrExt;
        let bad = std::ffi::OsStr::from_bytes(b"/a/\xff.json");
        let a = BakeArgs { sessions_file: bad.into(), ..args(P, D, "/tmp/x") };
        assert!(usage_message(&a).ends_with("is not valid UTF-8"));
    }

    #[test]
    fn out_must_be_a_file_in_an_existing_directory() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope/epilogue");
        let message = usage_message(&args(P, D, missing.to_str().unwrap()));
        assert!(message.starts_with(&format!("--out '{}' is in a directory that does not exist", missing.display())));
        let is_dir = dir.path().to_str().unwrap().to_owned();
        assert_eq!(usage_message(&args(P, D, &is_dir)), format!("--out '{is_dir}' is a directory"));
        let slash = format!("{is_dir}/new/");
        assert!(usage_message(&args(P, D, &slash)).ends_with("does not name a file"));
    }

    #[test]
    fn install_writes_0755_by_rename_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        fs::write(&src, b"\x7fELF-not-really").unwrap();
        let out = dir.path().join("out");
        fs::write(&out, b"old").unwrap();
        assert_eq!(install(&src, &out).unwrap(), 15);
        assert_eq!(fs::read(&out).unwrap(), b"\x7fELF-not-really");
        assert_eq!(fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o755);
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn echoed_command_matches_xt_5_3() {
        let line = run::echo_line(&cargo_command(Path::new(P), Path::new(D), Profile::Epilogue));
        // `target/bake` with the default target directory; wherever cargo's target directory is, its `bake/`.
        let bake_dir = run::display_from_root(&run::target_dir().join("bake"));
        assert_eq!(
            line,
            format!(
                "$ AGENT_BOX_BAKE_SESSIONS_FILE={P} AGENT_BOX_BAKE_STATE_DIR={D} RUSTFLAGS='-C target-feature=+crt-static' \
                 cargo build --frozen --package agent-box-mark-stopped --profile epilogue \
                 --target x86_64-unknown-linux-gnu --target-dir {bake_dir}"
            )
        );
        let dev = run::echo_line(&cargo_command(Path::new(P), Path::new(D), Profile::Dev));
        assert!(!dev.contains("RUSTFLAGS") && dev.contains("--profile dev"));
    }
}
