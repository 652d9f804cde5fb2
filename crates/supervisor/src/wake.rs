//! What ends a wait between ticks (SUP-3.2–3.4, SUP-14): the timer, a change of the registry's directory seen
//! by inotify, or a termination signal delivered through a self-pipe. One `poll(2)` covers all three.

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};

/// The write end of the self-pipe, for the signal handler (`-1` before installation).
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

/// Writers' bursts settle for this long before the woken tick runs (SUP-3.2).
const SETTLE: Duration = Duration::from_millis(50);

/// Why the wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    Timer,
    RegistryChanged,
    Signal(Signal),
}

/// The signal self-pipe; installing it sets the handlers for SIGTERM, SIGINT and SIGHUP.
#[derive(Debug)]
pub struct Signals {
    read: OwnedFd,
    _write: OwnedFd,
}

extern "C" fn on_signal(signal: nix::libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::SeqCst);
    let byte = u8::try_from(signal).unwrap_or(0);
    // SAFETY: write(2) is async-signal-safe; the pipe is non-blocking, so a full pipe drops the byte instead of
    // blocking the handler (one pending byte is enough to end the wait).
    #[allow(unsafe_code)]
    unsafe {
        nix::libc::write(fd, (&raw const byte).cast(), 1);
    }
}

impl Signals {
    pub fn install() -> nix::Result<Self> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)?;
        SIGNAL_PIPE.store(write.as_raw_fd(), Ordering::SeqCst);
        let action = SigAction::new(SigHandler::Handler(on_signal), SaFlags::SA_RESTART, SigSet::empty());
        for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
            // SAFETY: the handler only calls write(2) on a descriptor that lives as long as the process.
            #[allow(unsafe_code)]
            unsafe {
                sigaction(signal, &action)?;
            }
        }
        Ok(Self { read, _write: write })
    }

    /// The signal received, if any (non-blocking).
    pub fn take(&self) -> Option<Signal> {
        let mut byte = [0u8; 1];
        match nix::unistd::read(&self.read, &mut byte) {
            Ok(1) => Signal::try_from(i32::from(byte[0])).ok(),
            _ => None,
        }
    }
}

/// The inotify watch on the registry's directory, armed lazily and re-armed after the directory went away.
#[derive(Debug)]
pub struct RegistryWatch {
    dir: PathBuf,
    file_name: OsString,
    inotify: Option<Inotify>,
}

impl RegistryWatch {
    pub fn new(registry: &Path) -> Self {
        Self {
            dir: registry::atomic::parent_dir(registry).to_path_buf(),
            file_name: registry.file_name().map(OsString::from).unwrap_or_default(),
            inotify: None,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Arms the watch when it is not; the error is reported once per streak by the caller (L12).
    pub fn arm(&mut self) -> nix::Result<()> {
        if self.inotify.is_some() {
            return Ok(());
        }
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)?;
        let mask = AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_CLOSE_WRITE
            | AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_DELETE
            | AddWatchFlags::IN_MOVED_FROM;
        inotify.add_watch(&self.dir, mask)?;
        self.inotify = Some(inotify);
        Ok(())
    }

    /// Drains the queue; true when an event names the registry. A vanished directory disarms the watch.
    fn drain(&mut self) -> bool {
        let Some(inotify) = &self.inotify else { return false };
        let mut relevant = false;
        let mut lost = false;
        while let Ok(events) = inotify.read_events() {
            if events.is_empty() {
                break;
            }
            for event in events {
                let gone = AddWatchFlags::IN_DELETE_SELF | AddWatchFlags::IN_MOVE_SELF | AddWatchFlags::IN_IGNORED;
                lost |= event.mask.intersects(gone);
                relevant |= event.name.as_deref() == Some(self.file_name.as_os_str());
            }
        }
        if lost {
            self.inotify = None;
        }
        relevant || lost
    }
}

/// Waits until `due`, a registry change (after the settle time) or a signal.
pub fn wait(due: Instant, watch: &mut RegistryWatch, signals: &Signals) -> Wake {
    loop {
        if let Some(signal) = signals.take() {
            return Wake::Signal(signal);
        }
        let left = due.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Wake::Timer;
        }
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        let watch_ready = {
            let mut fds = vec![PollFd::new(signals.read.as_fd(), PollFlags::POLLIN)];
            if let Some(inotify) = &watch.inotify {
                fds.push(PollFd::new(inotify.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, timeout) {
                Ok(_) => fds.get(1).and_then(PollFd::revents).is_some_and(|r| r.contains(PollFlags::POLLIN)),
                Err(_) => false,
            }
        };
        if watch_ready && watch.drain() {
            std::thread::sleep(SETTLE);
            watch.drain();
            return Wake::RegistryChanged;
        }
    }
}
