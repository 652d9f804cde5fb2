//! A lock file held for as long as a value lives, for tests, test slots and the bench: a thread takes the lock
//! through the registry's fd-lock section and parks inside it until the value is dropped. (fd-lock's guard borrows
//! its file, so a value owning both cannot exist; a parked section can.)

use std::os::fd::RawFd;
use std::path::Path;
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
}
