//! The seeded plan of a chaos run: when each session is dispatched and what happens to it, and when the
//! supervisor is killed, the tmux server killed and the capacity burst fired. Everything random comes from one
//! seed, so a run is replayed by its seed (timing differs; what is done does not).

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// What happens to one dispatched session after its dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Nothing: it runs to the end of the run.
    RunOn,
    /// The agent exits 0.
    ExitClean,
    /// The agent exits with this status (1–9).
    Crash(u32),
    /// Its pane is killed from outside (no epilogue runs).
    PaneKilled,
    /// `agent-box-session rm`.
    Rm,
    /// `agent-box-session stop`.
    Stop,
    /// The agent exits with this status, then `rm`.
    CrashThenRm(u32),
    /// `rm`, then the name is dispatched again, and the old pane's epilogues (`1 G L` and `0 G L`, the old gen and
    /// life) arrive late: once before the new entry exists, once after the new life's pane runs.
    ReusedAfterRm,
    /// `agent-box-session restart` of the running leased session (its assignment goes on), then the agent exits 0.
    RestartThenExit,
    /// `stop`, `restart` right after it (the assignment is revived, unless the reap won the race), then the revived
    /// agent exits with this status.
    StopRestartCrash(u32),
    /// The supervisor is SIGKILLed right after this session's `new-session`, and the pane is killed while no
    /// supervisor runs (issue 17 row 6).
    KilledAtSpawn,
}

/// One fate of each kind, for the runs large enough to hold them all (so the fixed seed meets every fate).
const EVERY_FATE: [Fate; 11] = [
    Fate::RunOn,
    Fate::ExitClean,
    Fate::Crash(3),
    Fate::PaneKilled,
    Fate::Rm,
    Fate::Stop,
    Fate::CrashThenRm(2),
    Fate::ReusedAfterRm,
    Fate::RestartThenExit,
    Fate::StopRestartCrash(4),
    Fate::KilledAtSpawn,
];

impl Fate {
    fn draw(rng: &mut StdRng) -> Self {
        match rng.random_range(0..100) {
            0..12 => Self::RunOn,
            12..24 => Self::ExitClean,
            24..35 => Self::Crash(rng.random_range(1..=9)),
            35..45 => Self::PaneKilled,
            45..53 => Self::Rm,
            53..62 => Self::Stop,
            62..71 => Self::CrashThenRm(rng.random_range(1..=9)),
            71..80 => Self::ReusedAfterRm,
            80..88 => Self::RestartThenExit,
            88..95 => Self::StopRestartCrash(rng.random_range(1..=9)),
            _ => Self::KilledAtSpawn,
        }
    }

    /// The fate's name in reports.
    pub fn label(self) -> &'static str {
        match self {
            Self::RunOn => "run on",
            Self::ExitClean => "exit 0",
            Self::Crash(_) => "crash",
            Self::PaneKilled => "pane killed",
            Self::Rm => "rm",
            Self::Stop => "stop",
            Self::CrashThenRm(_) => "crash then rm",
            Self::ReusedAfterRm => "name reused after rm",
            Self::RestartThenExit => "restart then exit 0",
            Self::StopRestartCrash(_) => "stop, restart, crash",
            Self::KilledAtSpawn => "supervisor killed at spawn, pane killed",
        }
    }
}

/// One planned session.
#[derive(Debug, Clone)]
pub struct Planned {
    pub index: usize,
    pub dispatch_at: Duration,
    /// When its fate's first action is due (it also waits for the dispatch to settle).
    pub act_at: Duration,
    pub fate: Fate,
    /// The supervisor is armed to be SIGKILLed right after the `new-session` of this dispatch.
    pub kill_supervisor_at_spawn: bool,
}

/// An event that concerns the whole box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Global {
    /// SIGKILL the supervisor now; it is restarted after a short pause.
    KillSupervisor,
    /// Kill the tmux server (after the box is quiet, so every expectation stays exact).
    KillServer,
    /// Lower the limit to leave `accept` free slots and fire `burst` concurrent dispatches (after the box is quiet).
    Burst { accept: usize, burst: usize },
}

/// The whole plan.
#[derive(Debug, Clone)]
pub struct Plan {
    pub sessions: Vec<Planned>,
    pub globals: Vec<(Duration, Global)>,
}

impl Plan {
    /// `sessions` dispatches spread over the first 60 % of `duration`, each fate's action due 1 s to 40 % of
    /// `duration` later (the first sessions get one fate of each kind); max(2, sessions / 10) supervisor kills
    /// (every other one armed at a spawn), one server kill and one burst.
    pub fn new(seed: u64, sessions: usize, duration: Duration) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let span = duration.as_secs_f64();
        let at = |rng: &mut StdRng, from: f64, to: f64| Duration::from_secs_f64(rng.random_range(from..to) * span);
        let kills = (sessions / 10).max(2);
        let mut planned: Vec<Planned> = (0..sessions)
            .map(|index| {
                let dispatch_at = at(&mut rng, 0.0, 0.6);
                let act_at = dispatch_at + Duration::from_secs_f64(rng.random_range(1.0..(0.4 * span).max(1.5)));
                Planned { index, dispatch_at, act_at, fate: Fate::draw(&mut rng), kill_supervisor_at_spawn: false }
            })
            .collect();
        for (planned, fate) in planned.iter_mut().zip(EVERY_FATE) {
            planned.fate = fate;
        }
        // A kill right after a first spawn matters most for a pane that is killed later (30 §2 step 6a), so those
        // sessions are the victims while there are some.
        // A session of the fate `KilledAtSpawn` arms its own kill.
        let mut victims: Vec<usize> = (0..sessions).filter(|i| planned[*i].fate == Fate::PaneKilled).collect();
        victims.extend((0..sessions).filter(|i| !matches!(planned[*i].fate, Fate::PaneKilled | Fate::KilledAtSpawn)));
        for victim in victims.into_iter().take(kills / 2) {
            planned[victim].kill_supervisor_at_spawn = true;
        }
        let mut globals: Vec<(Duration, Global)> =
            (0..kills - kills / 2).map(|_| (at(&mut rng, 0.0, 1.0), Global::KillSupervisor)).collect();
        globals.push((at(&mut rng, 0.3, 0.7), Global::KillServer));
        globals.push((at(&mut rng, 0.2, 0.8), Global::Burst { accept: 3, burst: 6 }));
        globals.sort_by_key(|(t, _)| *t);
        planned.sort_by_key(|p| p.dispatch_at);
        Self { sessions: planned, globals }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_plan() {
        let a = Plan::new(7, 30, Duration::from_secs(20));
        let b = Plan::new(7, 30, Duration::from_secs(20));
        let fates = |p: &Plan| p.sessions.iter().map(|s| (s.index, s.fate)).collect::<Vec<_>>();
        assert_eq!(fates(&a), fates(&b));
        assert_eq!(a.globals.iter().filter(|(_, g)| *g == Global::KillServer).count(), 1);
        assert!(a.sessions.iter().all(|s| s.act_at > s.dispatch_at));
        let labels: std::collections::BTreeSet<&str> = a.sessions.iter().map(|s| s.fate.label()).collect();
        assert_eq!(labels.len(), EVERY_FATE.len(), "a run of 30 meets every fate");
    }
}
