//! A lock file held for as long as a value lives, for tests, test slots and the bench: a thread takes the lock
//! through the registry's fd-lock section and parks inside it until the value is dropped. (fd-lock's guard borrows
//! its file, so a value owning both cannot exist; a parked section can.)

use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use registry::LockRefusal;

/// An exclusive flock on a lock file, released when dropped.
#[derive(Debug)]
pub struct HeldLock {
    fd: RawFd,
    release: Option<mpsc::Sender<()>>,
    holder: Option<JoinHandle<()>>,
}

impl HeldLock {
    /// Takes the lock on `path` (an existing directory; the file is created 0600), waiting up to `wait`.
    pub fn acquire(path: &Path, wait: Duration) -> Result<Self, LockRefusal> {
        let (ready, taken) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let path = path.to_path_buf();
        let holder = std::thread::spawn(move || {
            let in_section = ready.clone();
            let held = registry::with_file_lock(&path, wait, false, |lock| {
                let _ = in_section.send(Ok(lock.raw_fd()));
                // Returns once the sender is dropped: the end of the section releases the lock.
                let _ = released.recv();
            });
            if let Err(refusal) = held {
                let _ = ready.send(Err(refusal));
            }
        });
        match taken.recv() {
            Ok(Ok(fd)) => Ok(Self { fd, release: Some(release), holder: Some(holder) }),
            Ok(Err(refusal)) => {
                let _ = holder.join();
                Err(refusal)
            }
            Err(_) => panic!("the lock holder thread ended without an answer"),
        }
    }

    /// Takes the lock on `path` now, or panics (tests that set up contention).
    pub fn now(path: &Path) -> Self {
        Self::acquire(path, Duration::ZERO).unwrap_or_else(|e| panic!("cannot hold {}: {e}", path.display()))
    }

    /// The locked descriptor, valid in this process while the value lives (tests hand it to children).
    pub fn raw_fd(&self) -> RawFd {
        self.fd
    }

    /// Hands this lock to the child `cmd` starts the way a settings daemon hands its registry lock to the CLI
    /// (10 RG-7.6): as descriptor 7 (without close-on-exec), named by `AGENT_BOX_REGISTRY_LOCK_FD=7`. The
    /// descriptor stays open in this process while `self` lives, which the caller's borrow guarantees until spawn.
    pub fn hand_to(&self, cmd: &mut Command) {
        cmd.env("AGENT_BOX_REGISTRY_LOCK_FD", "7");
        pass_fd(cmd, self.fd, 7);
    }
}

/// Puts descriptor `fd` of this process at number `at` in the child `cmd` starts, without close-on-exec.
#[allow(unsafe_code)]
pub fn pass_fd(cmd: &mut Command, fd: i32, at: i32) {
    // SAFETY: dup2 and fcntl are async-signal-safe and are all that runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            // When `fd` already is `at`, dup2 does nothing and leaves its close-on-exec flag set, so the child
            // found no descriptor there (a flake of whichever test drew that number): clear the flag instead.
            let passed = if fd == at { nix::libc::fcntl(at, nix::libc::F_SETFD, 0) } else { nix::libc::dup2(fd, at) };
            if passed == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        self.release.take();
        if let Some(holder) = self.holder.take() {
            let _ = holder.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = HeldLock::now(&path);
        assert!(registry::with_file_lock(&path, Duration::ZERO, false, |_| ()).is_err());
        assert!(HeldLock::acquire(&path, Duration::from_millis(20)).is_err());
        drop(held);
        assert!(registry::with_file_lock(&path, Duration::ZERO, false, |_| ()).is_ok());
    }

    /// A descriptor that already has the number it is passed at (close-on-exec, as every std descriptor is)
    /// reaches the child too, as does one that is dup2'ed there.
    #[test]
    fn a_descriptor_reaches_the_child_whatever_its_number() {
        use std::os::fd::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("f")).unwrap();
        let at = file.as_raw_fd();
        for (fd, target) in [(at, at), (at, 40)] {
            let mut cmd = Command::new("/bin/sh");
            cmd.args(["-c", &format!("test -e /proc/self/fd/{target}")]);
            pass_fd(&mut cmd, fd, target);
            assert!(cmd.status().unwrap().success(), "descriptor {fd} passed at {target}");
        }
    }
}
