//! The cgroup subtree delegated to the test user's manager: a directory of the test's name in each hierarchy
//! systemd uses (on a hybrid layout the named v1 `systemd` one and the v2 `unified` one, on a unified layout the v2
//! root), owned by the user so that the manager can create its slices and service cgroups below it. The manager is
//! moved into it before it starts, so every unit's processes end up there, and a kill of the subtree ends all of
//! them.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const ROOT: &str = "/sys/fs/cgroup";

/// The hierarchies a manager needs delegated on this machine, v2 first; `None` on a v1-only layout, where the test
/// does not run.
pub fn hierarchies() -> Option<Vec<PathBuf>> {
    let root = Path::new(ROOT);
    if root.join("unified/cgroup.controllers").is_file() && root.join("systemd/cgroup.procs").is_file() {
        return Some(vec![root.join("unified"), root.join("systemd")]);
    }
    if root.join("cgroup.controllers").is_file() {
        return Some(vec![root.to_path_buf()]);
    }
    None
}

/// The delegated directories, one per hierarchy, v2 first.
#[derive(Debug, Clone)]
pub struct Delegation {
    pub dirs: Vec<PathBuf>,
}

impl Delegation {
    /// The directories named `name` (whether they exist or not).
    pub fn named(name: &str) -> Option<Self> {
        Some(Self { dirs: hierarchies()?.into_iter().map(|h| h.join(name)).collect() })
    }

    /// `mkdir` and `chown -R` of each directory to `uid`:`gid` (its interface files included: the manager writes
    /// `cgroup.procs` and `cgroup.subtree_control` of its own subtree).
    pub fn create(&self, uid: u32, gid: u32) -> Result<(), String> {
        for dir in &self.dirs {
            fs::create_dir(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
            let mut paths = vec![dir.clone()];
            paths.extend(fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?.flatten().map(|e| e.path()));
            for path in paths {
                std::os::unix::fs::chown(&path, Some(uid), Some(gid))
                    .map_err(|e| format!("chown {}: {e}", path.display()))?;
            }
        }
        Ok(())
    }

    /// The v2 directory, where the processes of the subtree are counted.
    pub fn unified(&self) -> &Path {
        &self.dirs[0]
    }

    /// Every pid in the subtree (v2).
    pub fn pids(&self) -> Vec<u32> {
        subtree(self.unified())
            .iter()
            .flat_map(|dir| {
                fs::read_to_string(dir.join("cgroup.procs"))
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter_map(|line| line.trim().parse().ok())
            .collect()
    }

    /// Kills every process in the subtree (`cgroup.kill` where the kernel has it, else SIGKILL by pid) and waits up to
    /// 10 s for the subtree to empty; returns whether it did.
    pub fn kill_all(&self) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            let pids = self.pids();
            if pids.is_empty() {
                return true;
            }
            if fs::write(self.unified().join("cgroup.kill"), "1").is_err() {
                for pid in pids.into_iter().filter(|&p| p > 1) {
                    let _ = kill(Pid::from_raw(i32::try_from(pid).unwrap_or(0)), Signal::SIGKILL);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.pids().is_empty()
    }

    /// Removes every directory of the subtree in each hierarchy, deepest first (they must be empty of processes).
    pub fn remove(&self) -> Result<(), String> {
        for dir in &self.dirs {
            let mut dirs = subtree(dir);
            dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
            for dir in dirs {
                fs::remove_dir(&dir).map_err(|e| format!("rmdir {}: {e}", dir.display()))?;
            }
        }
        Ok(())
    }
}

/// `dir` and every cgroup below it (none when `dir` does not exist).
fn subtree(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut found = vec![dir.to_path_buf()];
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(subtree(&entry.path()));
        }
    }
    found
}

/// The v2 cgroup of `pid` (the `0::` line of `/proc/<pid>/cgroup`), relative to the hierarchy's root.
pub fn unified_cgroup_of(pid: u32) -> Option<String> {
    let text = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines().find_map(|l| l.strip_prefix("0::")).map(str::to_owned)
}
