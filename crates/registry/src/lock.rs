//! flock(2) on sidecar lock files through fd-lock: the bounded polling loop, the registry lock section, and the
//! inherited-fd protocol (10-registry §7).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::fcntl::{FcntlArg, FdFlag};

use crate::atomic::{ensure_private_dir, parent_dir};
use crate::error::{LockRefusal, RegistryError};
use crate::paths::lock_path_of;

/// Environment variable through which a parent hands us the registry lock it holds (RG-7.6).
pub const INHERITED_LOCK_ENV: &str = "AGENT_BOX_REGISTRY_LOCK_FD";
/// Environment variable bounding the wait for the registry lock, in seconds.
pub const LOCK_WAIT_ENV: &str = "REGISTRY_LOCK_WAIT";
/// Default bound of `REGISTRY_LOCK_WAIT`.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

const FIRST_POLL: Duration = Duration::from_millis(5);
const LONGEST_POLL: Duration = Duration::from_millis(100);

/// The (device, inode) of every registry lock file a section of this process holds (see [`HeldGuard`]).
static HELD_LOCK_FILES: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

/// An exclusive flock held through fd-lock's write guard, lent to the section that runs under it. The guard unlocks
/// when the section ends, and the descriptor closes right after (RG-7.7).
#[derive(Debug)]
pub struct FileLock<'f> {
    guard: fd_lock::RwLockWriteGuard<'f, File>,
}

impl FileLock<'_> {
    /// The locked descriptor (tests inspect `/proc/<pid>/fd` and hand it to children).
    pub fn raw_fd(&self) -> RawFd {
        self.guard.as_raw_fd()
    }
}

/// Opens `path` (`O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC`, 0600), polls for its exclusive lock until `wait` has passed
/// (RG-7.3, RG-7.4) and runs `section` while holding it. With `create_dir`, a missing directory is created (0700)
/// and the open retried once.
///
/// A section rather than a returned guard: fd-lock's guard borrows its lock file, so the file, the guard and the
/// polling loop that produces it live in this one frame.
pub fn with_file_lock<R>(
    path: &Path,
    wait: Duration,
    create_dir: bool,
    section: impl FnOnce(&FileLock<'_>) -> R,
) -> Result<R, LockRefusal> {
    let file =
        open_lock_file(path, create_dir).map_err(|source| LockRefusal::Open { lock: path.to_path_buf(), source })?;
    lock_open_file(file, wait, section)
}

/// The polling loop of [`with_file_lock`] on a lock file already open.
fn lock_open_file<R>(file: File, wait: Duration, section: impl FnOnce(&FileLock<'_>) -> R) -> Result<R, LockRefusal> {
    let mut lock = fd_lock::RwLock::new(file);
    let mut poll = Poll::new(wait);
    loop {
        match lock.try_write() {
            Ok(guard) => return Ok(section(&FileLock { guard })),
            Err(err) => poll.after(err)?,
        }
    }
}

/// Who holds the exclusive lock on `path`, asked without waiting and without creating anything: `Ok(true)` when
/// another process holds it (a shared attempt is refused), `Ok(false)` when nobody does or the file is missing.
/// The shared attempt is released at once; a holder that takes the lock meanwhile waits at most that instant.
pub fn is_held(path: &Path) -> io::Result<bool> {
    let file = match OpenOptions::new().read(true).open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(err) => return Err(err),
    };
    let lock = fd_lock::RwLock::new(file);
    match lock.try_read() {
        Ok(_) => Ok(false),
        Err(err) if err.kind() == io::ErrorKind::WouldBlock => Ok(true),
        Err(err) => Err(err),
    }
}

fn open_lock_file(path: &Path, create_dir: bool) -> io::Result<File> {
    // std opens every file with O_CLOEXEC (RG-7.9).
    let open = || OpenOptions::new().append(true).create(true).mode(0o600).open(path);
    match open() {
        Err(err) if err.kind() == io::ErrorKind::NotFound && create_dir => {
            ensure_private_dir(parent_dir(path))?;
            open()
        }
        other => other,
    }
}

/// The bounded wait of RG-7.4 around non-blocking attempts: 5 ms growing to 100 ms between them, until `wait` has
/// passed (`0` = one attempt).
#[derive(Debug)]
struct Poll {
    start: Instant,
    pause: Duration,
    wait: Duration,
}

impl Poll {
    fn new(wait: Duration) -> Self {
        Self { start: Instant::now(), pause: FIRST_POLL, wait }
    }

    /// After a failed attempt: `Ok` once it is time to try again, the refusal when the wait is over or the error
    /// is not contention. `EINTR` retries at once, `EWOULDBLOCK` keeps polling, anything else refuses.
    fn after(&mut self, err: io::Error) -> Result<(), LockRefusal> {
        match err.kind() {
            io::ErrorKind::Interrupted => return Ok(()),
            io::ErrorKind::WouldBlock => {}
            _ => return Err(LockRefusal::Flock(err)),
        }
        let waited = self.start.elapsed();
        if waited >= self.wait {
            return Err(LockRefusal::TimedOut(self.wait));
        }
        std::thread::sleep(self.pause_after(waited));
        self.pause = (self.pause * 2).min(LONGEST_POLL);
        Ok(())
    }

    /// The next pause, cut so that the last attempt comes when `wait` is over, not a whole pause later.
    fn pause_after(&self, waited: Duration) -> Duration {
        self.pause.min(self.wait - waited)
    }
}

/// Proof that this process holds the registry lock, lent to the section that runs under it; functions that write
/// the registry take `&RegistryLock`.
#[derive(Debug)]
pub struct RegistryLock {
    registry: PathBuf,
    fd: RawFd,
}

impl RegistryLock {
    /// The registry this lock guards.
    pub fn registry(&self) -> &Path {
        &self.registry
    }

    /// The descriptor holding the lock (our own, or the parent's inherited one).
    pub fn raw_fd(&self) -> RawFd {
        self.fd
    }
}

/// Held while a registry section runs on one lock file: a second description of the same file in this process
/// would deadlock against the first, so it is refused as [`RegistryError::AlreadyHeld`]. Keyed by the lock
/// file's (device, inode), not by its path, so another path to the same file is caught too, while sections on
/// different registries (tests with their own temporary homes) run side by side. Lowered on drop, so also when
/// the section panics.
#[derive(Debug)]
struct HeldGuard {
    key: (u64, u64),
}

impl HeldGuard {
    fn raise(key: (u64, u64)) -> Result<Self, RegistryError> {
        let mut held = HELD_LOCK_FILES.lock().unwrap_or_else(PoisonError::into_inner);
        if held.contains(&key) {
            return Err(RegistryError::AlreadyHeld);
        }
        held.push(key);
        Ok(Self { key })
    }
}

impl Drop for HeldGuard {
    fn drop(&mut self) {
        HELD_LOCK_FILES.lock().unwrap_or_else(PoisonError::into_inner).retain(|key| *key != self.key);
    }
}

/// How a registry lock acquisition treats `AGENT_BOX_REGISTRY_LOCK_FD` and a missing directory; the only
/// difference between the programs' locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockPolicy {
    /// Honour a descriptor inherited through [`INHERITED_LOCK_ENV`] (RG-7.6).
    pub adopt_inherited: bool,
    /// Create a missing registry directory (0700) and retry the open once.
    pub create_dir: bool,
}

impl LockPolicy {
    /// The CLI, webhook-spawn and tools addressing one file: honours an inherited descriptor, creates a missing
    /// directory.
    pub const FRONT_END: Self = Self { adopt_inherited: true, create_dir: true };
    /// The supervisor: ignores `AGENT_BOX_REGISTRY_LOCK_FD`, creates a missing directory (first boot).
    pub const SUPERVISOR: Self = Self { adopt_inherited: false, create_dir: true };
    /// The epilogue (RG-7.10): no environment, never creates a directory.
    pub const EPILOGUE: Self = Self { adopt_inherited: false, create_dir: false };
}

/// Runs `section` under the lock of `registry` (its sidecar `sessions.json.lock`), waiting at most `wait`, as
/// `policy` says: acquire, run the section, release (RG-7.8). An inherited descriptor is only checked, outside
/// fd-lock: its guard would unlock the parent's lock when dropped (RG-7.6).
pub fn with_lock<R>(
    registry: &Path,
    wait: Duration,
    policy: LockPolicy,
    section: impl FnOnce(&RegistryLock) -> R,
) -> Result<R, RegistryError> {
    let refused = |reason| RegistryError::LockRefused { path: registry.to_path_buf(), reason };
    let proof = |fd| RegistryLock { registry: registry.to_path_buf(), fd };
    let lock_file = lock_path_of(registry);
    let inherited = if policy.adopt_inherited { std::env::var(INHERITED_LOCK_ENV).ok() } else { None };
    match inherited.filter(|v| !v.is_empty()) {
        Some(value) => {
            let (fd, key) = check_inherited(&value, &lock_file).map_err(refused)?;
            let _held = HeldGuard::raise(key)?;
            let mut poll = Poll::new(wait);
            while let Err(err) = flock_without_guard(fd) {
                poll.after(err).map_err(refused)?;
            }
            Ok(section(&proof(fd.as_raw_fd())))
        }
        None => {
            let open_refused = |source| refused(LockRefusal::Open { lock: lock_file.clone(), source });
            let file = open_lock_file(&lock_file, policy.create_dir).map_err(open_refused)?;
            let key = file.metadata().map(|meta| (meta.dev(), meta.ino())).map_err(open_refused)?;
            let _held = HeldGuard::raise(key)?;
            lock_open_file(file, wait, |lock| section(&proof(lock.raw_fd()))).map_err(refused)
        }
    }
}

/// The inherited descriptor named by `value` when it is open on `lock_file`, with the file's (device, inode).
fn check_inherited(value: &str, lock_file: &Path) -> Result<(BorrowedFd<'static>, (u64, u64)), LockRefusal> {
    let refuse = || {
        LockRefusal::BadInheritedFd(format!(
            "{INHERITED_LOCK_ENV}={value} is not an open descriptor of {}",
            lock_file.display()
        ))
    };
    let raw = parse_inherited_fd(value).ok_or_else(refuse)?;
    let fd = borrow_open_fd(raw).ok_or_else(refuse)?;
    let (fd_stat, file_meta) = (nix::sys::stat::fstat(fd).ok(), std::fs::metadata(lock_file).ok());
    let key = match (fd_stat, file_meta) {
        (Some(st), Some(meta)) if st.st_dev == meta.dev() && st.st_ino == meta.ino() => (meta.dev(), meta.ino()),
        _ => return Err(refuse()),
    };
    let _ = nix::fcntl::fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC));
    Ok((fd, key))
}

/// `flock(fd, LOCK_EX|LOCK_NB)` with nothing that could ever unlock it: on the parent's description it succeeds at
/// once when the parent holds the lock (RG-7.6 item 2), and the parent's lock must outlive us (item 3).
#[allow(unsafe_code)]
fn flock_without_guard(fd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: flock(2) on an open descriptor reads and writes no memory of this process.
    let done = unsafe { nix::libc::flock(fd.as_raw_fd(), nix::libc::LOCK_EX | nix::libc::LOCK_NB) };
    if done == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
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
        let nested = with_lock(&registry, Duration::ZERO, LockPolicy::EPILOGUE, |_| {
            with_lock(&registry, Duration::ZERO, LockPolicy::EPILOGUE, |_| ())
        });
        assert!(matches!(nested, Ok(Err(RegistryError::AlreadyHeld))));
        assert!(
            with_lock(&registry, Duration::ZERO, LockPolicy::EPILOGUE, |_| ()).is_ok(),
            "released after the section"
        );
        let panicked = std::panic::catch_unwind(|| {
            with_lock(&registry, Duration::ZERO, LockPolicy::EPILOGUE, |_| panic!("in section"))
        });
        assert!(panicked.is_err());
        assert!(
            with_lock(&registry, Duration::ZERO, LockPolicy::EPILOGUE, |_| ()).is_ok(),
            "released after a panic too"
        );
    }

    #[test]
    fn sections_on_different_registries_run_side_by_side() {
        let dir = tempfile::tempdir().unwrap();
        let (one, two) = (dir.path().join("one.json"), dir.path().join("two.json"));
        let nested = with_lock(&one, Duration::ZERO, LockPolicy::EPILOGUE, |_| {
            with_lock(&two, Duration::ZERO, LockPolicy::EPILOGUE, |_| ())
        });
        assert!(matches!(nested, Ok(Ok(()))), "{nested:?}");
    }

    #[test]
    fn another_path_to_the_same_lock_file_is_already_held() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("alias")).unwrap();
        let (real, alias) = (dir.path().join("real/sessions.json"), dir.path().join("alias/sessions.json"));
        let nested = with_lock(&real, Duration::ZERO, LockPolicy::EPILOGUE, |_| {
            with_lock(&alias, Duration::ZERO, LockPolicy::EPILOGUE, |_| ())
        });
        assert!(matches!(nested, Ok(Err(RegistryError::AlreadyHeld))), "{nested:?}");
    }

    #[test]
    fn the_epilogue_policy_never_creates_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let registry = dir.path().join("missing/sessions.json");
        let err = with_lock(&registry, Duration::ZERO, LockPolicy::EPILOGUE, |_| ()).unwrap_err();
        assert!(matches!(err, RegistryError::LockRefused { reason: LockRefusal::Open { .. }, .. }));
        assert!(!dir.path().join("missing").exists());
    }

    #[test]
    fn a_held_file_lock_refuses_a_second_description_until_its_section_ends() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("x.lock");
        let inner = with_file_lock(&lock, Duration::ZERO, false, |_| {
            with_file_lock(&lock, Duration::from_millis(30), false, |_| ()).unwrap_err()
        });
        assert!(matches!(inner, Ok(LockRefusal::TimedOut(_))), "{inner:?}");
        assert!(with_file_lock(&lock, Duration::ZERO, false, |_| ()).is_ok());
    }

    #[test]
    fn inherited_fd_values_are_checked_before_use() {
        assert_eq!(parse_inherited_fd("7"), Some(7));
        for bad in ["", "2", "-3", "+7", "x", "07x", "99999999999999"] {
            assert_eq!(parse_inherited_fd(bad), None, "{bad}");
        }
    }

    /// `ls` asks whether a supervisor runs: held, free, missing (false) and unopenable (an error, never "no").
    #[test]
    fn is_held_tells_held_from_free_from_missing_and_fails_on_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.lock");
        assert!(!is_held(&path).unwrap(), "missing");
        let inside = with_file_lock(&path, Duration::ZERO, false, |_| is_held(&path)).unwrap();
        assert!(inside.unwrap(), "held by another open file description");
        assert!(!is_held(&path).unwrap(), "free again");
        std::fs::write(dir.path().join("file"), b"").unwrap();
        assert!(is_held(&dir.path().join("file/s.lock")).is_err(), "ENOTDIR is an error");
    }

    #[test]
    fn the_last_pause_ends_when_the_wait_does() {
        let poll = |pause, wait| Poll { start: Instant::now(), pause, wait };
        let ms = Duration::from_millis;
        assert_eq!(poll(ms(100), ms(10)).pause_after(ms(9)), ms(1));
        assert_eq!(poll(ms(5), ms(1000)).pause_after(ms(0)), ms(5));
    }

    /// The proof lent to a section names the descriptor that holds the lock file.
    #[test]
    fn the_section_s_descriptor_is_open_on_the_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        let registry = dir.path().join("sessions.json");
        let stat = with_lock(&registry, Duration::ZERO, LockPolicy::SUPERVISOR, |guard| {
            let fd = borrow_open_fd(guard.raw_fd()).unwrap();
            nix::sys::stat::fstat(fd).map(|st| (st.st_dev, st.st_ino)).unwrap()
        })
        .unwrap();
        let meta = std::fs::metadata(lock_path_of(&registry)).unwrap();
        assert_eq!(stat, (meta.dev(), meta.ino()));
    }

    /// An open descriptor is lent whatever its flags (std opens with close-on-exec); a closed one never.
    #[test]
    fn only_an_open_descriptor_is_borrowed() {
        let file = std::fs::File::open("/dev/null").unwrap();
        assert!(borrow_open_fd(file.as_raw_fd()).is_some());
        let raw = file.as_raw_fd();
        drop(file);
        assert!(borrow_open_fd(raw).is_none());
    }
}
