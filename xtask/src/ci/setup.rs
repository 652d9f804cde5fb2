//! ci step 1, setup: make sure the tools the later steps need are present, installing them with apt-get only
//! when running as root (CI-2.2). why: a fresh CI machine runs as root without tmux; a developer's machine
//! is not changed behind their back, and ci never calls sudo.

use std::env;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{Failed, StepResult};
use crate::{exit, run};

/// A tool that setup ensures, and how to talk about it.
#[derive(Debug)]
struct Tool {
    program: &'static str,
    version_arg: &'static str,
    /// The Debian package that provides it.
    package: &'static str,
    /// Who needs it, for the "is required by" line.
    needed_by: &'static str,
    /// Where Debian keeps the program off PATH, as `<root>/<major version>/bin/<program>` (the newest version is
    /// run); `None` for a program on PATH.
    versioned_root: Option<&'static str>,
}

const TMUX: Tool = Tool {
    program: "tmux",
    version_arg: "-V",
    package: "tmux",
    needed_by: "the workspace tests",
    versioned_root: None,
};

/// Issue 21: the e2e test of the example notifier (docs/examples/notify-gh.sh) reads its document with jq.
const JQ: Tool = Tool {
    program: "jq",
    version_arg: "--version",
    package: "jq",
    needed_by: "the notifier e2e test",
    versioned_root: None,
};

const NIX_INSTANTIATE: Tool = Tool {
    program: "nix-instantiate",
    version_arg: "--version",
    package: "nix-bin",
    needed_by: "the nix step",
    versioned_root: None,
};

/// Issue 26: the claims tests start a real PostgreSQL server of their own (`initdb` into a temporary directory);
/// Debian puts the server's programs under /usr/lib/postgresql/<n>/bin, off PATH, where the harness looks too.
const POSTGRES: Tool = Tool {
    program: "postgres",
    version_arg: "--version",
    package: "postgresql",
    needed_by: "the claims tests (a real PostgreSQL server)",
    versioned_root: Some("/usr/lib/postgresql"),
};

/// Optional: the install test verifies the user units with it, and the same package brings the `systemd --user`
/// and `systemctl` that the user-units test runs a real user manager with; both skip with a `SKIP` line without it.
const SYSTEMD_ANALYZE: Tool = Tool {
    program: "systemd-analyze",
    version_arg: "--version",
    package: "systemd",
    needed_by: "the install tests (systemd-analyze verify of the user units, a real systemd user manager)",
    versioned_root: None,
};

/// Runs the setup step: tmux, jq, nix-instantiate (the repository has `.nix` files) and the PostgreSQL server,
/// all always needed, and systemd-analyze when it can be installed (its test skips otherwise).
pub fn run() -> StepResult {
    let mut apt = Apt::detect();
    let mut ok = ensure(&TMUX, &mut apt);
    ok &= ensure(&JQ, &mut apt);
    ok &= ensure(&NIX_INSTANTIATE, &mut apt);
    ok &= ensure(&POSTGRES, &mut apt);
    if !ensure(&SYSTEMD_ANALYZE, &mut apt) {
        println!("SKIP: systemd stays missing; the unit verification and user-manager tests will skip");
    }
    if ok { Ok(()) } else { Err(Failed(exit::SETUP.into())) }
}

/// Prints the tool's version, installing it first when it is missing and installing is allowed. On failure
/// prints the one-line instruction of CI-2.2 and returns false.
fn ensure(tool: &Tool, apt: &mut Apt) -> bool {
    if let Some(version) = version(tool) {
        println!("{version}");
        return true;
    }
    if apt.allowed {
        apt.install(&[tool.package]);
        if let Some(version) = version(tool) {
            println!("{version}");
            return true;
        }
    }
    eprintln!("{}", missing_message(tool));
    false
}

/// The tool's version line, when `<program> <version_arg>` runs and exits 0 (how CI-2.2 defines present).
fn version(tool: &Tool) -> Option<String> {
    let mut cmd = match tool.versioned_root {
        None => run::command(tool.program),
        Some(root) => run::command_path(&newest_versioned(Path::new(root), tool.program)?),
    };
    cmd.arg(tool.version_arg);
    match run::output(&mut cmd) {
        Ok(out) if out.status.success() => Some(String::from_utf8_lossy(&out.stdout).trim().to_string()),
        Ok(out) => {
            println!("{}: `{} {}` exited with {}", tool.program, tool.program, tool.version_arg, out.status);
            None
        }
        Err(err) => {
            println!("{}: not available ({err})", tool.program);
            None
        }
    }
}

/// `<root>/<n>/bin/<program>` for the highest numeric `<n>` that has it; `None` (after saying so) when none does.
fn newest_versioned(root: &Path, program: &str) -> Option<std::path::PathBuf> {
    let found = fs::read_dir(root).ok().into_iter().flatten().filter_map(|entry| {
        let entry = entry.ok()?;
        let major: u32 = entry.file_name().to_str()?.parse().ok()?;
        let path = entry.path().join("bin").join(program);
        is_executable(&path).then_some((major, path))
    });
    let newest = found.max_by_key(|(major, _)| *major).map(|(_, path)| path);
    if newest.is_none() {
        println!("{program}: not available (no {}/<version>/bin/{program})", root.display());
    }
    newest
}

fn missing_message(tool: &Tool) -> String {
    format!(
        "ci: {} is required by {} and is not installed; install it (Debian: sudo apt-get install {}) and run again",
        tool.program, tool.needed_by, tool.package
    )
}

/// Installing through apt-get: allowed only as root with apt-get on PATH; the index is refreshed at most once
/// per ci run.
#[derive(Debug)]
struct Apt {
    allowed: bool,
    updated: bool,
}

impl Apt {
    fn detect() -> Self {
        let is_root = running_as_root();
        let has_apt = env::var_os("PATH").is_some_and(|path| in_path(&path, "apt-get"));
        Apt { allowed: is_root && has_apt, updated: false }
    }

    /// Best effort: a failed update or install shows in apt's own output, and the caller checks the tool again.
    fn install(&mut self, packages: &[&str]) {
        if !self.updated {
            self.updated = true;
            let mut cmd = run::command("apt-get");
            cmd.arg("update");
            report(run::status(&mut cmd), "apt-get update");
        }
        let mut cmd = run::command("apt-get");
        cmd.env("DEBIAN_FRONTEND", "noninteractive").args(["install", "-y", "--no-install-recommends"]).args(packages);
        report(run::status(&mut cmd), "apt-get install");
    }
}

fn report(result: std::io::Result<std::process::ExitStatus>, what: &str) {
    match result {
        Ok(status) if status.success() => {}
        Ok(status) => eprintln!("ci: {what} failed ({status})"),
        Err(err) => eprintln!("ci: cannot run {what}: {err}"),
    }
}

/// Whether this process runs as root (effective uid 0).
pub(crate) fn running_as_root() -> bool {
    fs::read_to_string("/proc/self/status").ok().and_then(|s| effective_uid(&s)) == Some(0)
}

/// Installs `packages` with one `apt-get update` and one `apt-get install` when allowed (root, apt-get on PATH);
/// best effort, like [`Apt::install`]: the caller checks again. Used by `cargo xtask powerloss` for LazyFS.
pub(crate) fn apt_install(packages: &[&str]) {
    let mut apt = Apt::detect();
    if !apt.allowed {
        return;
    }
    apt.install(packages);
}

/// The effective uid from the text of `/proc/self/status` (line `Uid: real effective saved fs`). Read from
/// /proc rather than through libc so that xtask needs no extra dependency; unreadable means "not root".
fn effective_uid(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|line| line.strip_prefix("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Whether an executable file `name` exists in one of the directories of a `PATH` value.
fn in_path(path: &OsStr, name: &str) -> bool {
    env::split_paths(path).any(|dir| is_executable(&dir.join(name)))
}

fn is_executable(file: &Path) -> bool {
    fs::metadata(file).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_uid_is_the_second_uid_field() {
        let status = "Name:\tcat\nUmask:\t0022\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n";
        assert_eq!(effective_uid(status), Some(0));
        assert_eq!(effective_uid("Uid:\t1000\t1001\t1000\t1000\n"), Some(1001));
        assert_eq!(effective_uid("Name:\tcat\n"), None);
        assert_eq!(effective_uid("Uid:\t1000\n"), None);
    }

    #[test]
    fn missing_messages_match_ci_2_2() {
        assert_eq!(
            missing_message(&TMUX),
            "ci: tmux is required by the workspace tests and is not installed; install it (Debian: sudo apt-get install tmux) and run again"
        );
        assert_eq!(
            missing_message(&NIX_INSTANTIATE),
            "ci: nix-instantiate is required by the nix step and is not installed; install it (Debian: sudo apt-get install nix-bin) and run again"
        );
    }

    #[test]
    fn the_newest_numbered_version_directory_is_run() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        for (major, with_program) in [("9", true), ("16", true), ("17", false), ("main", true)] {
            let bin = root.join(major).join("bin");
            fs::create_dir_all(&bin).unwrap();
            if with_program {
                fs::write(bin.join("postgres"), "").unwrap();
                fs::set_permissions(bin.join("postgres"), fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        assert_eq!(newest_versioned(&root, "postgres"), Some(root.join("16/bin/postgres")));
        assert_eq!(newest_versioned(&root, "initdb"), None);
        assert_eq!(newest_versioned(&root.join("absent"), "postgres"), None);
    }

    #[test]
    fn finds_executables_on_path() {
        assert!(in_path(OsStr::new("/nonexistent:/bin:/usr/bin"), "sh"));
        assert!(!in_path(OsStr::new("/nonexistent"), "sh"));
        assert!(!in_path(OsStr::new(""), "sh"));
    }
}
