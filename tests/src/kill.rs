//! The one kill-writers-at-random-points engine (80 RG13, X11; 90 Q7), shared by the registry's writers test, the
//! e2e scenario X11 and the bench's `crash` section: a seeded generator picks a writer and a point in its run,
//! the writer is started and killed with SIGKILL there, and the caller checks what it left. Iterations and seed
//! are the caller's (about 50 in a test, 1000 in the bench); the writers and the checks are the caller's too.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// The seed a test uses: `AGENT_BOX_TEST_SEED` when set (a replay), else a fresh one. Print it.
pub fn test_seed() -> u64 {
    std::env::var("AGENT_BOX_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random)
}

/// The seeded generator every random choice of a kill loop comes from, so that a seed replays the loop.
#[derive(Debug)]
pub struct KillLoop {
    pub seed: u64,
    pub rng: StdRng,
}

/// One iteration's draw: which writer, and where in its run the kill comes.
#[derive(Debug, Clone, Copy)]
pub struct Pick {
    pub iteration: usize,
    /// An index into the caller's writers.
    pub writer: usize,
    /// The kill point as a fraction of the writer's bound, uniform in [0, 1].
    pub fraction: f64,
    /// `fraction` × the writer's bound.
    pub delay: Duration,
}

impl KillLoop {
    pub fn new(seed: u64) -> Self {
        Self { seed, rng: StdRng::seed_from_u64(seed) }
    }

    /// Runs `iterations` iterations over writers whose kill points lie in `[0, bounds[w]]` (in the bench and X11
    /// 1.5 × the writer's median complete run). Each draws the writer, then the fraction, then calls `step`, which
    /// may draw more from the generator (a writer's arguments) and starts, kills and checks the writer. A
    /// fraction rather than a duration is drawn, so a replay draws the same numbers though the bounds it measures
    /// differ a little.
    pub fn run<E>(
        &mut self,
        iterations: usize,
        bounds: &[Duration],
        mut step: impl FnMut(&mut StdRng, Pick) -> Result<(), E>,
    ) -> Result<(), E> {
        for iteration in 0..iterations {
            let writer = self.rng.random_range(0..bounds.len());
            let fraction: f64 = self.rng.random_range(0.0..=1.0);
            let delay = bounds[writer].mul_f64(fraction);
            step(&mut self.rng, Pick { iteration, writer, fraction, delay })?;
        }
        Ok(())
    }
}

/// How a writer run ended.
#[derive(Debug)]
pub struct Ended {
    /// The waited-for child, whose piped output the caller may still read.
    pub child: Child,
    pub status: ExitStatus,
    /// True when SIGKILL ended it (false when it finished before the kill point).
    pub killed: bool,
    /// From the start to its exit.
    pub elapsed: Duration,
}

/// Starts `cmd`, kills it with SIGKILL after `delay` (`None`: lets it finish) and waits for it.
pub fn run_killed(cmd: &mut Command, delay: Option<Duration>) -> io::Result<Ended> {
    let started = Instant::now();
    let mut child = cmd.spawn()?;
    if let Some(delay) = delay {
        std::thread::sleep(delay);
        // Not yet waited for, so the pid cannot have been reused: at worst it names our own zombie.
        let _ = child.kill();
    }
    let status = child.wait()?;
    let elapsed = started.elapsed();
    let killed = delay.is_some() && status.signal() == Some(Signal::SIGKILL as i32);
    Ok(Ended { child, status, killed, elapsed })
}

/// The median of complete runs, for a writer's bound (the upper one of an even count).
pub fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draws(seed: u64) -> Vec<(usize, u64)> {
        let mut picks = Vec::new();
        let bounds = [Duration::from_millis(10), Duration::from_millis(30)];
        KillLoop::new(seed)
            .run::<()>(20, &bounds, |_, p| {
                assert!(p.delay <= bounds[p.writer]);
                picks.push((p.writer, p.fraction.to_bits()));
                Ok(())
            })
            .unwrap();
        picks
    }

    #[test]
    fn a_seed_replays_the_same_picks_and_another_seed_does_not() {
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7), draws(8));
    }

    #[test]
    fn a_writer_killed_mid_run_is_reported_killed_and_one_that_finished_is_not() {
        let ended = run_killed(Command::new("sleep").arg("5"), Some(Duration::from_millis(20))).unwrap();
        assert!(ended.killed && ended.status.signal() == Some(9));
        let ended = run_killed(&mut Command::new("true"), None).unwrap();
        assert!(!ended.killed && ended.status.success());
    }

    #[test]
    fn median_is_the_middle_run() {
        let ms = |v: &[u64]| v.iter().map(|&m| Duration::from_millis(m)).collect::<Vec<_>>();
        assert_eq!(median(ms(&[30, 10, 20])), Duration::from_millis(20));
        assert_eq!(median(Vec::new()), Duration::ZERO);
    }
}
