//! A real systemd user manager for a dedicated test user (issue 18), so the installed user units are tried under
//! the real thing and not a stand-in. It runs when the test is root: `unshare --mount` gives it a private mount
//! namespace with a tmpfs on `/run/systemd` holding `system/` (only then does systemd believe it booted) and a tmpfs
//! on `/run/user` holding `/run/user/<uid>` (0700, the user's), so nothing of the machine's `/run` changes; the
//! shell moves itself into the delegated cgroup subtree ([`cgroup`]) and execs, as the user, `systemd --user` with
//! `XDG_RUNTIME_DIR` set. `systemctl --user` reaches it through `$XDG_RUNTIME_DIR/systemd/private` (no D-Bus), from
//! inside that namespace through `nsenter`. The namespace also has [`MEMINFO`] bound over `/proc/meminfo` and, when
//! the machine has an `/etc/agent-box`, an empty tmpfs over it, so the installed default session limit (`auto`, one
//! slot per GiB, RG-11.2) is the same on every machine: a machine's `/etc/agent-box/session-limit` of 4 once refused
//! the test's fifth session.
//!
//! One run at a time on a machine (an flock on `/tmp/abx-systemd.lock`: the account name and cgroup names are the
//! machine's). Dropping the value kills the subtree and every process of the account, removes the cgroups, the
//! account and the test root, also after a panic; the next run sweeps what a killed run left behind.

pub mod account;
pub mod cgroup;
pub mod installed;

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use account::Account;
use cgroup::Delegation;

use crate::HeldLock;

/// The account, cgroup and directory name of the test, and the test root under `/tmp` (fixed, so the epilogue baked
/// for its HOME is baked once and then cached; `/tmp` so the user can reach it whatever the workspace's modes).
pub const NAME: &str = "abx-systemd";
const ROOT: &str = "/tmp/abx-systemd";
const LOCK: &str = "/tmp/abx-systemd.lock";
const SYSTEMD: &str = "/lib/systemd/systemd";

/// A running user manager of the test account.
#[derive(Debug)]
pub struct UserManager {
    account: Account,
    delegation: Delegation,
    child: Option<Child>,
    pid: u32,
    root: PathBuf,
    _lock: HeldLock,
}

/// Why the test cannot run here (printed as a `SKIP` line by the test).
#[derive(Debug)]
pub struct Skip(pub String);

/// The reason this machine cannot run a user manager for a test, or `None` when it can.
pub fn skip_reason() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root: a user manager for a test account needs root (useradd, mounts, cgroups)".into());
    }
    let path = std::env::var_os("PATH");
    let missing: Vec<&str> = ["systemctl", "unshare", "nsenter", "setpriv", "useradd", "userdel"]
        .into_iter()
        .filter(|tool| tmux::find_on_path(tool, path.as_deref()).is_none())
        .chain(Some(SYSTEMD).filter(|p| !Path::new(p).is_file()))
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "{} missing (ci setup installs the Debian package systemd as root; the others are util-linux and passwd)",
            missing.join(", ")
        ));
    }
    if cgroup::hierarchies().is_none() {
        return Some("no cgroup v2 hierarchy (neither unified nor hybrid layout) to delegate to a user manager".into());
    }
    let mount_ns = Command::new("unshare").args(["--mount", "true"]).stderr(Stdio::null()).status();
    if !mount_ns.is_ok_and(|s| s.success()) {
        return Some("unshare --mount fails here (no CAP_SYS_ADMIN?)".into());
    }
    None
}

impl UserManager {
    /// Sweeps what an earlier run left, creates the account, its root and its cgroups, and starts the manager;
    /// returns once `systemctl --user` answers. `Err(Skip)` when the machine cannot run it.
    pub fn start() -> Result<Self, Skip> {
        if let Some(why) = skip_reason() {
            return Err(Skip(why));
        }
        let lock = HeldLock::acquire(Path::new(LOCK), Duration::from_secs(600))
            .unwrap_or_else(|e| panic!("cannot take {LOCK}: {e}"));
        sweep();
        let root = PathBuf::from(ROOT);
        fs::create_dir(&root).unwrap_or_else(|e| panic!("mkdir {ROOT}: {e}"));
        let account = Account::create(NAME, &root.join("home")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::chown(&root, Some(account.uid), Some(account.gid)).unwrap();
        let delegation = Delegation::named(NAME).unwrap();
        let mut manager = Self { account, delegation, child: None, pid: 0, root, _lock: lock };
        manager.delegation.create(manager.account.uid, manager.account.gid).unwrap_or_else(|e| panic!("{e}"));
        manager.spawn();
        manager.wait_ready();
        Ok(manager)
    }

    /// `unshare --mount` of the launch script, which execs (same pid) into `systemd --user` as the account.
    fn spawn(&mut self) {
        let log = fs::File::create(self.manager_log_path()).unwrap();
        let meminfo = self.root.join("meminfo");
        fs::write(&meminfo, MEMINFO).unwrap_or_else(|e| panic!("cannot write {}: {e}", meminfo.display()));
        let a = &self.account;
        let mut cmd = Command::new("unshare");
        cmd.args(["--mount", "--propagation", "private", "--", "/bin/sh", "-c", LAUNCH, "sh"])
            .arg(a.uid.to_string())
            .arg(a.gid.to_string())
            .arg(&a.home)
            .arg(&a.name)
            .arg(&meminfo)
            .args(&self.delegation.dirs)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot run unshare: {e}"));
        self.pid = child.id();
        self.child = Some(child);
    }

    fn wait_ready(&self) {
        crate::wait::wait_until_or(
            "the user manager to answer systemctl --user",
            crate::deadline(),
            || {
                let out = self.systemctl(&["is-system-running"]);
                matches!(String::from_utf8_lossy(&out.stdout).trim(), "running" | "degraded")
            },
            || format!("manager log:\n{}", self.manager_log()),
        );
    }

    pub fn account(&self) -> &Account {
        &self.account
    }
    /// The test root (0755, the user's): HOME is `<root>/home`; logs and fake agents live beside it.
    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn home(&self) -> &Path {
        &self.account.home
    }
    /// The manager's pid (`systemd --user`).
    pub fn pid(&self) -> u32 {
        self.pid
    }
    pub fn delegation(&self) -> &Delegation {
        &self.delegation
    }
    /// `/run/user/<uid>`, as seen inside the manager's mount namespace.
    pub fn runtime_dir(&self) -> PathBuf {
        PathBuf::from(format!("/run/user/{}", self.account.uid))
    }

    fn manager_log_path(&self) -> PathBuf {
        self.root.join("manager.log")
    }
    /// What the manager printed (its log target is the console: there is no journal).
    pub fn manager_log(&self) -> String {
        fs::read_to_string(self.manager_log_path()).unwrap_or_default()
    }

    /// `program` run as the account inside the manager's mount namespace, with the environment of a login (HOME,
    /// USER, LOGNAME, PATH, XDG_RUNTIME_DIR, LANG) and nothing of the test's.
    pub fn as_user(&self, program: impl AsRef<OsStr>) -> Command {
        let a = &self.account;
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--target={}", self.pid))
            .args(["--mount", "--", "setpriv"])
            .args([format!("--reuid={}", a.uid), format!("--regid={}", a.gid), "--init-groups".into()])
            .args(["--", "env", "-i"])
            .arg(format!("HOME={}", a.home.display()))
            .args([format!("USER={}", a.name), format!("LOGNAME={}", a.name)])
            .args(["PATH=/usr/bin:/bin", "LANG=C.UTF-8"])
            .arg(format!("XDG_RUNTIME_DIR={}", self.runtime_dir().display()))
            .arg(program)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .stdin(Stdio::null())
            .current_dir(&a.home);
        cmd
    }

    /// `systemctl --user ARGS` as the account, whatever its exit code.
    pub fn systemctl(&self, args: &[&str]) -> Output {
        let mut cmd = self.as_user("systemctl");
        cmd.arg("--user").args(args);
        cmd.output().unwrap_or_else(|e| panic!("cannot run nsenter: {e}"))
    }

    /// `systemctl --user ARGS`, which must exit 0 (a failure shows the command, its exit code, stdout, stderr and
    /// the manager's log).
    pub fn systemctl_ok(&self, args: &[&str]) -> Output {
        let out = self.systemctl(args);
        if !out.status.success() {
            panic!(
                "systemctl --user {} exited with {}\nstdout:\n{}\nstderr:\n{}\nmanager log:\n{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                self.manager_log()
            );
        }
        out
    }

    /// One property of a unit (`systemctl --user show -p P --value UNIT`).
    pub fn property(&self, unit: &str, property: &str) -> String {
        let out = self.systemctl_ok(&["show", "-p", property, "--value", unit]);
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// The unit's main pid (0 when it has none).
    pub fn main_pid(&self, unit: &str) -> u32 {
        self.property(unit, "MainPID").parse().unwrap_or(0)
    }

    /// Every living process of the account other than the manager itself, with its command line and v2 cgroup.
    pub fn user_processes(&self) -> Vec<String> {
        account::processes_of(self.account.uid)
            .into_iter()
            .filter(|(pid, _)| *pid != self.pid)
            .map(|(pid, cmd)| {
                // A dispatched agent's command line holds its whole prompt: the start tells which process it is.
                let cmd: String = cmd.chars().take(120).collect();
                format!("{pid} {cmd} (cgroup {})", cgroup::unified_cgroup_of(pid).unwrap_or_default())
            })
            .collect()
    }
}

/// What the manager's namespace sees as `/proc/meminfo`: 16 GiB, so 16 slots by default, more than the test's seven
/// sessions need.
pub const MEMINFO: &str = "MemTotal:       16777216 kB\n";

/// The launch script: `$1` uid, `$2` gid, `$3` HOME, `$4` user name, `$5` the meminfo file to bind over
/// `/proc/meminfo`, then the delegated cgroup directories. It runs
/// in the new mount namespace as root, and execs the manager, so the pid `unshare` was started as is the manager's.
const LAUNCH: &str = r#"set -eu
uid=$1 gid=$2 home=$3 name=$4 meminfo=$5
shift 5
mount --bind "$meminfo" /proc/meminfo
if [ -d /etc/agent-box ]; then mount -t tmpfs -o mode=0755 tmpfs /etc/agent-box; fi
mkdir -p /run/systemd /run/user
mount -t tmpfs -o mode=0755 tmpfs /run/systemd
mkdir /run/systemd/system
mount -t tmpfs -o mode=0755 tmpfs /run/user
mkdir -m 0700 "/run/user/$uid"
chown "$uid:$gid" "/run/user/$uid"
for dir in "$@"; do echo $$ > "$dir/cgroup.procs"; done
exec setpriv --reuid="$uid" --regid="$gid" --init-groups -- env -i HOME="$home" USER="$name" LOGNAME="$name" \
  PATH=/usr/bin:/bin XDG_RUNTIME_DIR="/run/user/$uid" SYSTEMD_LOG_TARGET=console /lib/systemd/systemd --user
"#;

impl Drop for UserManager {
    fn drop(&mut self) {
        if !self.delegation.kill_all() {
            eprintln!(
                "user manager: processes left in {}: {:?}",
                self.delegation.unified().display(),
                self.delegation.pids()
            );
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!("user manager log:\n{}", self.manager_log());
        }
        sweep();
    }
}

/// Removes whatever a run of this test left: the account's processes, the delegated cgroups, the account and the
/// root. Idempotent; problems are printed (a later run sweeps again), never fatal.
fn sweep() {
    let delegation = Delegation::named(NAME);
    if let Some(delegation) = &delegation {
        delegation.kill_all();
    }
    // Only the account this test makes (its HOME is under the test root), never a user of that name made by others.
    let account = Account::lookup(NAME).filter(|a| a.home == Path::new(ROOT).join("home"));
    if let Some(account) = &account {
        account::kill_processes_of(account.uid);
    }
    if let Some(Err(e)) = delegation.as_ref().map(Delegation::remove) {
        eprintln!("user manager sweep: {e}");
    }
    if let Some(Err(e)) = account.as_ref().map(Account::remove) {
        eprintln!("user manager sweep: {e}");
    }
    if Path::new(ROOT).exists() {
        crate::slots::make_writable(Path::new(ROOT));
        if let Err(e) = fs::remove_dir_all(ROOT) {
            eprintln!("user manager sweep: rm -r {ROOT}: {e}");
        }
    }
}
