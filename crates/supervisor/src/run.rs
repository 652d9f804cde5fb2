//! Start-up duties and the loop (30-supervisor §2, §3, §14, §15): what `main` runs after parsing flags.

use std::time::{Duration, Instant};

use tmux::{Tmux, TmuxApi};

use crate::config::Config;
use crate::log::{Latch, Log};
use crate::supervisor::Supervisor;
use crate::wake::{RegistryWatch, Signals, Wake, wait};

/// The timer: the next tick is due this long after the previous one ended (SUP-3.1).
pub const TICK_PERIOD: Duration = Duration::from_secs(2);

/// Why the supervisor stopped running.
#[derive(Debug)]
pub enum Stop {
    /// A signal or a completed `--once`: exit 0.
    Done,
    /// tmux older than 3.2 (exit 1).
    TmuxTooOld(String),
    /// The signal pipe could not be set up (exit 1).
    Fatal(String),
}

/// Start-up duties shared by the loop and `--once` (§2 steps 3–6).
fn start(config: Config, log: Log) -> Result<Supervisor, Stop> {
    let tmux = Tmux::new(config.tmux.clone());
    if let Ok(Some((major, minor))) = tmux.version()
        && (major, minor) < (3, 2)
    {
        return Err(Stop::TmuxTooOld(format!("tmux {major}.{minor} is too old: 3.2 or newer is required")));
    }
    let mut supervisor = Supervisor::new(config, Box::new(tmux), log);
    supervisor.start_up();
    Ok(supervisor)
}

/// `--once`: start-up without the watch, one tick, exit.
pub fn once(config: Config) -> Stop {
    match start(config, Log::stderr()) {
        Ok(mut supervisor) => {
            supervisor.log_started();
            supervisor.tick();
            Stop::Done
        }
        Err(stop) => stop,
    }
}

/// The loop: ticks on the timer and on registry changes until SIGTERM, SIGINT or SIGHUP.
pub fn run(config: Config) -> Stop {
    let signals = match Signals::install() {
        Ok(signals) => signals,
        Err(err) => return Stop::Fatal(format!("cannot install signal handlers: {err}")),
    };
    let mut supervisor = match start(config, Log::stderr()) {
        Ok(supervisor) => supervisor,
        Err(stop) => return stop,
    };
    let mut watch = RegistryWatch::new(supervisor.config().paths.registry());
    let mut watch_failed = Latch::default();
    arm(&mut watch, &mut watch_failed, &mut supervisor);
    supervisor.log_started();
    loop {
        supervisor.tick();
        if let Some(signal) = signals.take() {
            return stop_on(&mut supervisor, signal);
        }
        arm(&mut watch, &mut watch_failed, &mut supervisor);
        if let Wake::Signal(signal) = wait(Instant::now() + TICK_PERIOD, &mut watch, &signals) {
            return stop_on(&mut supervisor, signal);
        }
    }
}

fn arm(watch: &mut RegistryWatch, failed: &mut Latch, supervisor: &mut Supervisor) {
    match watch.arm() {
        Ok(()) => {
            failed.clear();
        }
        Err(err) => {
            if failed.raise() {
                let dir = watch.dir().display().to_string();
                supervisor.log_line(&format!("cannot watch {dir} for changes ({err}); polling every 2s"));
            }
        }
    }
}

fn stop_on(supervisor: &mut Supervisor, signal: nix::sys::signal::Signal) -> Stop {
    supervisor.log_line(&format!("{} received; exiting after this tick (sessions keep running)", signal.as_str()));
    Stop::Done
}
