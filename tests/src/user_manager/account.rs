//! The dedicated test account of the user-manager test: created with `useradd` for one run and removed with
//! `userdel` after it (or by the next run, when a killed run left it behind), never a real user of the machine.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Gid, Pid, Uid, User, setfsgid, setfsuid};

/// A system account of the machine's passwd, made for the test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: PathBuf,
}

impl Account {
    /// The account `name` when it exists.
    pub fn lookup(name: &str) -> Option<Self> {
        let user = User::from_name(name).ok().flatten()?;
        Some(Self { name: name.to_owned(), uid: user.uid.as_raw(), gid: user.gid.as_raw(), home: user.dir })
    }

    /// `useradd` of a system account with a group of its own and HOME `home` (created 0700, theirs). A system
    /// account because it gets no subordinate ids, mail spool or skeleton files: nothing outside passwd, group and
    /// shadow to clean up.
    pub fn create(name: &str, home: &Path) -> Result<Self, String> {
        let out = Command::new("useradd")
            .args(["--system", "--user-group", "--no-create-home", "--shell", "/bin/sh", "--home-dir"])
            .arg(home)
            .arg(name)
            .output()
            .map_err(|e| format!("cannot run useradd: {e}"))?;
        if !out.status.success() {
            return Err(format!("useradd {name} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr)));
        }
        let account = Self::lookup(name).ok_or_else(|| format!("useradd made no account {name}"))?;
        fs::create_dir_all(home).map_err(|e| format!("{}: {e}", home.display()))?;
        std::os::unix::fs::chown(home, Some(account.uid), Some(account.gid))
            .map_err(|e| format!("chown {}: {e}", home.display()))?;
        fs::set_permissions(home, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .map_err(|e| format!("chmod {}: {e}", home.display()))?;
        Ok(account)
    }

    /// Runs `f` with this thread's file-system identity set to the account's (setfsuid(2) and setfsgid(2) act on the
    /// calling thread only), so what `f` writes is the user's own, with the user's permissions: the install then
    /// replaces files in place exactly as it does when the user runs it. Restored even when `f` panics.
    pub fn files_as<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Restore(u32, u32);
        impl Drop for Restore {
            fn drop(&mut self) {
                setfsuid(Uid::from_raw(self.0));
                setfsgid(Gid::from_raw(self.1));
            }
        }
        let previous_gid = setfsgid(Gid::from_raw(self.gid)).as_raw();
        let previous_uid = setfsuid(Uid::from_raw(self.uid)).as_raw();
        let _restore = Restore(previous_uid, previous_gid);
        // setfsuid reports no failure; a second call returns the value now in force.
        assert_eq!(setfsuid(Uid::from_raw(self.uid)).as_raw(), self.uid, "setfsuid to {} did not take", self.uid);
        f()
    }

    /// `userdel`, once no process of the account is left (it refuses otherwise).
    pub fn remove(&self) -> Result<(), String> {
        kill_processes_of(self.uid);
        let out = Command::new("userdel").arg(&self.name).output().map_err(|e| format!("cannot run userdel: {e}"))?;
        if out.status.success() || Self::lookup(&self.name).is_none() {
            return Ok(());
        }
        Err(format!("userdel {} failed ({}): {}", self.name, out.status, String::from_utf8_lossy(&out.stderr)))
    }
}

/// Every living process (not a zombie, which nothing can kill and its parent reaps) whose real uid is `uid`, with
/// its command line (NUL bytes as spaces).
pub fn processes_of(uid: u32) -> Vec<(u32, String)> {
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let status = fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        let real_uid = status.lines().find_map(|l| l.strip_prefix("Uid:")).and_then(|l| l.split_whitespace().next());
        let zombie = status.lines().any(|l| l.starts_with("State:") && l.contains("Z (zombie)"));
        if real_uid == Some(uid.to_string().as_str()) && !zombie {
            let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ").trim_end().to_owned();
            found.push((pid, text));
        }
    }
    found
}

/// SIGKILLs every process of `uid` (by pid, found in /proc), until none is left or 10 s have passed: only the
/// test account's own processes, which nothing else on the machine runs as.
pub fn kill_processes_of(uid: u32) {
    assert_ne!(uid, 0, "refusing to kill the processes of root");
    let start = Instant::now();
    loop {
        let left = processes_of(uid);
        if left.is_empty() || start.elapsed() > Duration::from_secs(10) {
            return;
        }
        for (pid, _) in left.into_iter().filter(|(pid, _)| *pid > 1) {
            let _ = kill(Pid::from_raw(i32::try_from(pid).unwrap_or(0)), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
