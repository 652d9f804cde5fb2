//! Helpers shared by the registry's process-level tests: example binaries and holders (waits are the harness's).

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

/// The path of a registry example, building it if a partial test run skipped it.
pub fn example(bin: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join("examples").join(bin);
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "agent-box-registry", "--example", bin])
            .status()
            .unwrap();
        assert!(status.success(), "could not build example {bin}");
    }
    path
}

/// A Command for an example with a clean environment (no inherited lock variables).
pub fn example_cmd(bin: &str) -> Command {
    let mut cmd = Command::new(example(bin));
    cmd.env_clear().env("PATH", "/usr/bin:/bin");
    cmd
}

/// Another process holding the registry lock until dropped.
pub struct Holder {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Holder {
    pub fn start(mut cmd: Command) -> Self {
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "held", "holder did not take the lock");
        let stdin = child.stdin.take();
        Self { child, stdin }
    }

    /// `regctl hold REGISTRY`.
    pub fn ours(registry: &Path) -> Self {
        let mut cmd = example_cmd("regctl");
        cmd.arg("hold").arg(registry);
        Self::start(cmd)
    }

    pub fn release(mut self) {
        self.stdin.take();
        let _ = self.child.wait();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.stdin.take();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How many descriptors of process `pid` point at `path`.
pub fn fds_of_pid_on(pid: u32, path: &Path) -> usize {
    let Ok(target) = fs::canonicalize(path) else { return 0 };
    let Ok(entries) = fs::read_dir(format!("/proc/{pid}/fd")) else { return 0 };
    entries.filter_map(|e| fs::read_link(e.ok()?.path()).ok()).filter(|p| *p == target).count()
}

/// True when a fresh description of `lock` can take the flock right now.
pub fn lock_is_free(lock: &Path) -> bool {
    registry::with_file_lock(lock, Duration::ZERO, false, |_| ()).is_ok()
}

/// Runs `cmd` as uid/gid 65534 when we are root (80 I12), directly otherwise.
pub fn unprivileged(mut cmd: Command) -> Command {
    if !nix::unistd::geteuid().is_root() {
        return cmd;
    }
    let mut wrapped = Command::new("setpriv");
    wrapped.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(cmd.get_program());
    wrapped.args(cmd.get_args());
    wrapped.env_clear().env("PATH", "/usr/bin:/bin");
    for (key, value) in cmd.get_envs() {
        if let Some(value) = value {
            wrapped.env(key, value);
        }
    }
    let _ = &mut cmd;
    wrapped
}

/// Chowns every path under `root` (inclusive) to 65534 so an unprivileged run owns it.
pub fn chown_tree(root: &Path) {
    std::os::unix::fs::chown(root, Some(65534), Some(65534)).unwrap();
    if root.is_dir() {
        for entry in fs::read_dir(root).unwrap() {
            chown_tree(&entry.unwrap().path());
        }
    }
}

pub fn read_counter(registry: &Path, key: &str) -> u64 {
    let doc = registry::Document::parse(&fs::read(registry).unwrap()).unwrap();
    doc.entry(key).and_then(|e| e.get("count")).and_then(|v| v.as_u64()).unwrap_or(0)
}
