//! Start-up duties and the loop (30-supervisor §2, §3, §14, §15): what `main` runs after parsing flags.

use std::time::{Duration, Instant};

use tmux::{Tmux, TmuxApi, WakeHook};

use crate::config::Config;
use crate::log::{Latch, Log};
use crate::messages;
use crate::supervisor::Supervisor;
use crate::wake::{QueueWatch, RegistryWatch, Signals, Sources, Wake, WakeFile, wait};

/// Why the supervisor stopped running.
#[derive(Debug)]
pub enum Stop {
    /// A signal or a completed `--once`: exit 0.
    Done,
    /// tmux older than 3.2 (exit 1).
    TmuxTooOld(String),
    /// The signal pipe could not be set up (exit 1).
    Fatal(String),
    /// Another supervisor serves the same registry (exit 2, so a unit with `RestartPreventExitStatus=2` stays down
    /// instead of fighting it).
    AlreadyRunning(String),
    /// Issue 26 (BX-2): the claims database has a schema this build does not know (exit 2: a configuration problem).
    ClaimsSchema(String),
}

/// How long a starting supervisor waits for the single-instance lock: long enough for an `ls` that tests it at
/// that instant, short enough that a second supervisor is refused at once.
const INSTANCE_WAIT: Duration = Duration::from_secs(1);

/// Runs `body` while holding the single-instance lock of this registry (F20), with this process's pid written in
/// it; a lock held by another supervisor stops the start with a line naming it.
fn single_instance(config: &Config, body: fn(Config) -> Stop) -> Stop {
    let lock = config.paths.supervisor_lock();
    let registry = config.paths.registry().display().to_string();
    let held = registry::with_file_lock(&lock, INSTANCE_WAIT, true, |_| {
        // A second descriptor on the same file: the flock belongs to the first one and is unaffected.
        let _ = std::fs::write(&lock, format!("{}\n", std::process::id()));
        body(config.clone())
    });
    match held {
        Ok(stop) => stop,
        Err(registry::LockRefusal::TimedOut(_)) => {
            let pid = std::fs::read_to_string(&lock).ok().and_then(|t| t.trim().parse::<u32>().ok());
            Stop::AlreadyRunning(messages::already_running(pid, &registry, &lock))
        }
        // A registry directory the user cannot write (an admin-managed one, SV19) must not stop supervision: run
        // unguarded, and say so once.
        Err(err @ registry::LockRefusal::Open { .. }) => {
            let mut log = Log::stderr();
            log.warn(&messages::running_without_instance_lock(err));
            body(config.clone())
        }
        Err(err) => Stop::Fatal(messages::instance_lock_failed(&lock, err)),
    }
}

/// Start-up duties shared by the loop and `--once` (§2 steps 3–6).
fn start(config: Config, log: Log) -> Result<Supervisor, Stop> {
    let tmux = Tmux::new(config.tmux.clone());
    if let Ok(Some((major, minor))) = tmux.version()
        && (major, minor) < (3, 2)
    {
        return Err(Stop::TmuxTooOld(messages::tmux_too_old(major, minor)));
    }
    let mut supervisor = Supervisor::new(config, Box::new(tmux), log);
    supervisor.start_up();
    supervisor.check_claims().map_err(Stop::ClaimsSchema)?;
    Ok(supervisor)
}

/// `--once`: start-up without the watch, one tick, exit.
pub fn once(config: Config) -> Stop {
    let owned = config.clone();
    single_instance(&owned, once_locked)
}

fn once_locked(config: Config) -> Stop {
    match start(config, Log::stderr()) {
        Ok(mut supervisor) => {
            supervisor.log_started();
            supervisor.tick();
            // Issue 21: a notifier started by this tick is waited for (within its bound) and recorded.
            let bound = supervisor.config().on_outcome.as_ref().map(|on| on.timeout).unwrap_or_default();
            supervisor.settle_notifier(bound);
            Stop::Done
        }
        Err(stop) => stop,
    }
}

/// The loop: ticks on the timer and on registry changes until SIGTERM, SIGINT or SIGHUP.
pub fn run(config: Config) -> Stop {
    let owned = config.clone();
    single_instance(&owned, run_locked)
}

fn run_locked(config: Config) -> Stop {
    let signals = match Signals::install() {
        Ok(signals) => signals,
        Err(err) => return Stop::Fatal(messages::signal_handlers_failed(err)),
    };
    let mut supervisor = match start(config, Log::stderr()) {
        Ok(supervisor) => supervisor,
        Err(stop) => return stop,
    };
    let mut watches = Watches::new(&mut supervisor);
    watches.arm(&mut supervisor);
    supervisor.log_started();
    let period = supervisor.config().tick_period;
    loop {
        supervisor.tick();
        if let Some(signal) = signals.take() {
            return stop_on(&mut supervisor, signal);
        }
        watches.arm(&mut supervisor);
        let mut sources = Sources {
            registry: &mut watches.registry,
            closed: &mut watches.closed,
            queue: &mut watches.queue,
            signals: &signals,
        };
        if let Wake::Signal(signal) = wait(Instant::now() + period, &mut sources) {
            return stop_on(&mut supervisor, signal);
        }
    }
}

/// The loop's two wake sources besides the timer (SUP-3.2, issue 12) and their once-per-streak latches.
#[derive(Debug)]
struct Watches {
    registry: RegistryWatch,
    registry_failed: Latch,
    closed: WakeFile,
    closed_failed: Latch,
    /// Issue 24: the intake queue's directory.
    queue: QueueWatch,
    queue_failed: Latch,
    /// The session-closed hook, when it could be built for the wake file's path; handed to the supervisor (which
    /// installs it on each new server) once the file is first watched.
    hook: Option<WakeHook>,
    handed: bool,
}

impl Watches {
    fn new(supervisor: &mut Supervisor) -> Self {
        let path = supervisor.config().paths.tmux_wake();
        let hook = match WakeHook::for_file(&path) {
            Ok(hook) => Some(hook),
            Err(err) => {
                supervisor.log_warn(&messages::wake_not_installed(err));
                None
            }
        };
        Self {
            registry: RegistryWatch::new(supervisor.config().paths.registry()),
            registry_failed: Latch::default(),
            closed: WakeFile::new(path),
            closed_failed: Latch::default(),
            queue: QueueWatch::new(supervisor.config().paths.queue_dir()),
            queue_failed: Latch::default(),
            hook,
            handed: false,
        }
    }

    /// Arms what is not armed; each failure is logged once per streak (L12, L25) and retried before every wait.
    fn arm(&mut self, supervisor: &mut Supervisor) {
        match self.registry.arm() {
            Ok(()) => {
                self.registry_failed.clear();
            }
            Err(err) => {
                if self.registry_failed.raise() {
                    let dir = self.registry.dir().display().to_string();
                    supervisor.log_warn(&messages::cannot_watch_registry(&dir, err));
                }
            }
        }
        match self.queue.arm() {
            Ok(()) => {
                self.queue_failed.clear();
            }
            Err(err) => {
                if self.queue_failed.raise() {
                    let dir = self.queue.dir().display().to_string();
                    supervisor.log_warn(&messages::cannot_watch_queue(&dir, err));
                }
            }
        }
        let Some(hook) = &self.hook else { return };
        match self.closed.arm() {
            Ok(()) => {
                self.closed_failed.clear();
                if !std::mem::replace(&mut self.handed, true) {
                    supervisor.enable_wake(hook.clone());
                }
            }
            Err(err) => {
                if self.closed_failed.raise() {
                    let file = self.closed.path().display().to_string();
                    supervisor.log_warn(&messages::cannot_watch_closed(&file, err));
                }
            }
        }
    }
}

/// A running notifier gets this long to end when the supervisor stops (issue 21, N-10).
const NOTIFIER_STOP_GRACE: Duration = Duration::from_secs(5);

/// L18: a stop is announced, and says the sessions keep running, so a journal reader does not expect them gone.
fn stop_on(supervisor: &mut Supervisor, signal: nix::sys::signal::Signal) -> Stop {
    supervisor.settle_notifier(NOTIFIER_STOP_GRACE);
    supervisor.log_line(&messages::signal_received(signal.as_str()));
    Stop::Done
}
