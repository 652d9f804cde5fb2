//! flock(2) on sidecar lock files: the bounded polling loop, the registry guard, and the inherited-fd protocol.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, FlockArg};

use crate::atomic::{ensure_private_dir, parent_dir};
use crate::error::{LockRefusal, RegistryError};
use crate::paths::{Paths, lock_path_of};

/// Environment variable through which a parent hands us the registry lock it holds (RG-7.6).
pub const INHERITED_LOCK_ENV: &str = "AGENT_BOX_REGISTRY_LOCK_FD";
/// Environment variable bounding the wait for the registry lock, in seconds.
pub const LOCK_WAIT_ENV: &str = "REGISTRY_LOCK_WAIT";
/// Default bound of `REGISTRY_LOCK_WAIT`.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

const FIRST_POLL: Duration = Duration::from_millis(5);
const LONGEST_POLL: Duration = Duration::from_millis(100);

/// Set while a [`RegistryLock`] is alive: a second description in one process would deadlock against the first.
static REGISTRY_GUARD_ALIVE: AtomicBool = AtomicBool::new(false);

/// An exclusive flock on an open file description; dropping it closes the descriptor, which releases the lock.
#[derive(Debug)]
pub struct FileLock {
    file: File,
}

impl FileLock {
    /// Opens `path` (`O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC`, 0600) and polls for the lock until `wait` has passed.
    /// With `create_dir`, a missing directory is created (0700) and the open retried once.
    pub fn acquire(path: &Path, wait: Duration, create_dir: bool) -> Result<Self, LockRefusal> {
        let file = open_lock_file(path, create_dir)
            .map_err(|source| LockRefusal::Open { lock: path.to_path_buf(), source })?;
        poll_flock(file.as_fd(), wait)?;
        Ok(Self { file })
    }

    /// The locked descriptor (tests inspect `/proc/<pid>/fd`).
    pub fn raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

fn open_lock_file(path: &Path, create_dir: bool) -> io::Result<File> {
    let open = || OpenOptions::new().append(true).create(true).mode(0o600).open(path);
    match open() {
        Err(err) if err.kind() == io::ErrorKind::NotFound && create_dir => {
            ensure_private_dir(parent_dir(path))?;
            open()
        }
        other => other,
    }
}

/// Non-blocking attempts, 5 ms growing to 100 ms between them, until `wait` has passed (`0` = one try).
fn poll_flock(fd: BorrowedFd<'_>, wait: Duration) -> Result<(), LockRefusal> {
    let start = Instant::now();
    let mut pause = FIRST_POLL;
    loop {
        match try_flock(fd) {
            Ok(()) => return Ok(()),
            Err(Errno::EINTR) => continue,
            Err(Errno::EWOULDBLOCK) => {}
            Err(errno) => return Err(LockRefusal::Flock(io::Error::from(errno))),
        }
        let waited = start.elapsed();
        if waited >= wait {
            return Err(LockRefusal::TimedOut(wait));
        }
        std::thread::sleep(pause.min(wait - waited));
        pause = (pause * 2).min(LONGEST_POLL);
    }
}

// The plain flock(2) call is needed for descriptors we do not own (the inherited one must never be unlocked
// or closed by us); nix marks it deprecated in favour of an owning wrapper that unlocks on drop.
#[allow(deprecated)]
fn try_flock(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    nix::fcntl::flock(fd.as_raw_fd(), FlockArg::LockExclusiveNonblock)
}

/// Proof that this process holds the registry lock; functions that write the registry take `&RegistryLock`.
#[derive(Debug)]
pub struct RegistryLock {
    registry: PathBuf,
    held: Held,
}

#[derive(Debug)]
enum Held {
    Own(FileLock),
    /// A parent's descriptor: never unlocked, never closed (RG-7.6).
    Inherited(#[allow(dead_code)] RawFd),
}

impl RegistryLock {
    /// The registry this lock guards.
    pub fn registry(&self) -> &Path {
        &self.registry
    }

    /// The descriptor holding the lock.
    pub fn raw_fd(&self) -> RawFd {
        match &self.held {
            Held::Own(lock) => lock.raw_fd(),
            Held::Inherited(fd) => *fd,
        }
    }
}

impl Drop for RegistryLock {
    fn drop(&mut self) {
        REGISTRY_GUARD_ALIVE.store(false, Ordering::SeqCst);
    }
}

/// How an acquisition treats `AGENT_BOX_REGISTRY_LOCK_FD` and a missing directory.
#[derive(Debug, Clone, Copy)]
struct Policy {
    adopt_inherited: bool,
    create_dir: bool,
}

/// The lock of the CLI and webhook-spawn: honours an inherited descriptor, creates a missing directory.
pub fn lock(paths: &Paths, wait: Duration) -> Result<RegistryLock, RegistryError> {
    acquire(paths.registry(), wait, Policy { adopt_inherited: true, create_dir: true })
}

/// The supervisor's lock: ignores `AGENT_BOX_REGISTRY_LOCK_FD`, creates a missing directory (first boot).
pub fn lock_ignoring_inherited(registry: &Path, wait: Duration) -> Result<RegistryLock, RegistryError> {
    acquire(registry, wait, Policy { adopt_inherited: false, create_dir: true })
}

/// The epilogue's lock (RG-7.10): an explicit path, no environment, never creates a directory.
pub fn lock_at(registry: &Path, wait: Duration) -> Result<RegistryLock, RegistryError> {
    acquire(registry, wait, Policy { adopt_inherited: false, create_dir: false })
}

/// Like [`lock`] for a registry path given directly (the `rmw` example and tools addressing one file).
pub fn lock_path(registry: &Path, wait: Duration) -> Result<RegistryLock, RegistryError> {
    acquire(registry, wait, Policy { adopt_inherited: true, create_dir: true })
}

fn acquire(registry: &Path, wait: Duration, policy: Policy) -> Result<RegistryLock, RegistryError> {
    if REGISTRY_GUARD_ALIVE.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).is_err() {
        return Err(RegistryError::AlreadyHeld);
    }
    let lock_file = lock_path_of(registry);
    let inherited = if policy.adopt_inherited { std::env::var(INHERITED_LOCK_ENV).ok() } else { None };
    let held = match inherited.filter(|v| !v.is_empty()) {
        Some(value) => adopt_inherited(&value, &lock_file, wait).map(Held::Inherited),
        None => FileLock::acquire(&lock_file, wait, policy.create_dir).map(Held::Own),
    };
    match held {
        Ok(held) => Ok(RegistryLock { registry: registry.to_path_buf(), held }),
        Err(reason) => {
            REGISTRY_GUARD_ALIVE.store(false, Ordering::SeqCst);
            Err(RegistryError::LockRefused { path: registry.to_path_buf(), reason })
        }
    }
}

fn adopt_inherited(value: &str, lock_file: &Path, wait: Duration) -> Result<RawFd, LockRefusal> {
    let refuse = || {
        LockRefusal::BadInheritedFd(format!(
            "{INHERITED_LOCK_ENV}={value} is not an open descriptor of {}",
            lock_file.display()
        ))
    };
    let raw = parse_inherited_fd(value).ok_or_else(refuse)?;
    let fd = borrow_open_fd(raw).ok_or_else(refuse)?;
    let (fd_stat, file_meta) = (nix::sys::stat::fstat(fd).ok(), std::fs::metadata(lock_file).ok());
    match (fd_stat, file_meta) {
        (Some(st), Some(meta)) if st.st_dev == meta.dev() && st.st_ino == meta.ino() => {}
        _ => return Err(refuse()),
    }
    let _ = nix::fcntl::fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC));
    poll_flock(fd, wait)?;
    Ok(raw)
}

fn parse_inherited_fd(value: &str) -> Option<RawFd> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse::<RawFd>().ok().filter(|fd| *fd >= 3)
}

#[allow(unsafe_code)]
fn borrow_open_fd(raw: RawFd) -> Option<BorrowedFd<'static>> {
    // SAFETY: F_GETFD on any integer only reads descriptor flags; it fails with EBADF unless `raw` is open.
    let open = unsafe { nix::libc::fcntl(raw, nix::libc::F_GETFD) } != -1;
    // SAFETY: `raw` is open, and this process never closes an inherited lock descriptor (RG-7.6), so the
    // borrow stays valid for the rest of the process.
    open.then(|| unsafe { BorrowedFd::borrow_raw(raw) })
}

/// Marks an inherited lock descriptor close-on-exec at start-up, so no child (a tmux server above all) can keep
/// the parent's lock alive (RG-7.6 item 3). Does nothing when the variable is unset or names no open descriptor.
pub fn protect_inherited_lock_fd() {
    let Ok(value) = std::env::var(INHERITED_LOCK_ENV) else {
        return;
    };
    if let Some(fd) = parse_inherited_fd(&value).and_then(borrow_open_fd) {
        let _ = nix::fcntl::fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC));
    }
}

/// The bound for registry lock waits, with the raw value when it had to be ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct LockWait {
    pub wait: Duration,
    /// The value of `REGISTRY_LOCK_WAIT` when it was not a usable number (the default applies).
    pub ignored: Option<String>,
}

/// Reads `REGISTRY_LOCK_WAIT`: decimal seconds, a fraction allowed, `0` = one attempt; invalid → 10 s.
pub fn lock_wait_from_env() -> LockWait {
    parse_lock_wait(std::env::var(LOCK_WAIT_ENV).ok().as_deref())
}

/// The parsing rule of [`lock_wait_from_env`].
pub fn parse_lock_wait(value: Option<&str>) -> LockWait {
    let Some(text) = value.filter(|t| !t.is_empty()) else {
        return LockWait { wait: DEFAULT_LOCK_WAIT, ignored: None };
    };
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let shaped = digits(whole)
        && digits(fraction)
        && !(whole.is_empty() && fraction.is_empty())
        && !(text.contains('.') && fraction.is_empty());
    let parsed = shaped.then(|| text.parse::<f64>().ok()).flatten().and_then(|s| Duration::try_from_secs_f64(s).ok());
    match parsed {
        Some(wait) => LockWait { wait, ignored: None },
        None => LockWait { wait: DEFAULT_LOCK_WAIT, ignored: Some(text.to_owned()) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_wait_parsing() {
        assert_eq!(parse_lock_wait(None).wait, DEFAULT_LOCK_WAIT);
        assert_eq!(parse_lock_wait(Some("0")).wait, Duration::ZERO);
        assert_eq!(parse_lock_wait(Some("2.5")).wait, Duration::from_millis(2500));
        assert_eq!(parse_lock_wait(Some(".5")).wait, Duration::from_millis(500));
        for bad in ["-1", "abc", "1e3", "inf", "NaN", "1.", " 1", "1.2.3", "."] {
            let parsed = parse_lock_wait(Some(bad));
            assert_eq!(parsed, LockWait { wait: DEFAULT_LOCK_WAIT, ignored: Some(bad.to_owned()) }, "{bad}");
        }
    }

    #[test]
    fn second_guard_in_one_process_is_already_held() {
        let dir = tempfile::tempdir().unwrap();
        let registry = dir.path().join("sessions.json");
        let first = lock_at(&registry, Duration::ZERO).unwrap();
        assert!(matches!(lock_at(&registry, Duration::ZERO), Err(RegistryError::AlreadyHeld)));
        drop(first);
        assert!(lock_at(&registry, Duration::ZERO).is_ok());
    }

    #[test]
    fn lock_at_never_creates_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let registry = dir.path().join("missing/sessions.json");
        let err = lock_at(&registry, Duration::ZERO).unwrap_err();
        assert!(matches!(err, RegistryError::LockRefused { reason: LockRefusal::Open { .. }, .. }));
        assert!(!dir.path().join("missing").exists());
    }

    #[test]
    fn inherited_fd_values_are_checked_before_use() {
        assert_eq!(parse_inherited_fd("7"), Some(7));
        for bad in ["", "2", "-3", "x", "07x", "99999999999999"] {
            assert_eq!(parse_inherited_fd(bad), None, "{bad}");
        }
    }
}
