//! The built-in runner of spec 90 Q-1.5 (spawn, wait, monotonic clock) and the rounds of: two commands
//! compared are sampled in the same rounds, each round timing both once, so they see the same machine; a ratio is
//! taken per round, and its spread is reported with it (issue 12: a median of one command over a median of the other,
//! taken at different moments, once read a 14× ratio as 4×).

use std::process::Command;
use std::time::Instant;

use super::fail::{Context, Outcome, fail};
use super::stats::Summary;

/// Wall time of one run of `cmd` in milliseconds, process start and exit included; the run must succeed.
pub fn time_once(cmd: &mut Command) -> Outcome<f64> {
    let started = Instant::now();
    let status = cmd.status().context(|| format!("starting {}", cmd.get_program().to_string_lossy()))?;
    let elapsed = started.elapsed();
    if !status.success() {
        return fail(format!("{} exited with {status}", cmd.get_program().to_string_lossy()));
    }
    Ok(elapsed.as_secs_f64() * 1000.0)
}

/// Samples of a measured command and of its baseline, one of each per round.
#[derive(Debug, Clone, Default)]
pub struct Paired {
    pub measured: Vec<f64>,
    pub baseline: Vec<f64>,
}

impl Paired {
    /// measured / baseline of each round.
    pub fn ratios(&self) -> Vec<f64> {
        self.measured.iter().zip(&self.baseline).map(|(a, b)| a / b).collect()
    }

    /// The median of the per-round ratios with its spread.
    pub fn ratio(&self) -> Spread {
        Spread::of(&self.ratios())
    }
}

/// A median with the spread of the values it comes from: the interquartile range and the extremes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub q1: f64,
    pub q3: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    /// NaN figures for no values (a comparison that produced nothing shows as such, never as a ratio of 0).
    pub fn of(values: &[f64]) -> Self {
        let Some(summary) = Summary::of(values) else {
            return Self { median: f64::NAN, q1: f64::NAN, q3: f64::NAN, min: f64::NAN, max: f64::NAN, n: 0 };
        };
        let (q1, q3) = quartiles(values);
        Self { median: summary.median, q1, q3, min: summary.min, max: summary.max, n: summary.n }
    }
}

/// Nearest-rank first and third quartiles (values that were measured, as the other percentiles).
fn quartiles(values: &[f64]) -> (f64, f64) {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    let rank = |p: f64| {
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied().unwrap_or(f64::NAN)
    };
    (rank(25.0), rank(75.0))
}

/// Runs `warmup + rounds` rounds; each times `a` and `b` once, with `prepare` (untimed) before every run, because
/// either command may change what the next one reads. The order alternates (A B, then B A), so neither command
/// always runs right after the other's work (its writeback, its cache footprint). Warm-up rounds are discarded.
/// `measured` holds `a`'s samples, `baseline` `b`'s, round by round.
pub fn rounds(
    a: &mut Command,
    b: &mut Command,
    warmup: usize,
    rounds: usize,
    mut prepare: impl FnMut() -> Outcome<()>,
) -> Outcome<Paired> {
    let mut out = Paired { measured: Vec::with_capacity(rounds), baseline: Vec::with_capacity(rounds) };
    for round in 0..warmup + rounds {
        super::interrupt::check()?;
        let mut time = |cmd: &mut Command| -> Outcome<f64> {
            prepare()?;
            time_once(cmd)
        };
        let (first, second) = if round % 2 == 0 {
            let first = time(a)?;
            (first, time(b)?)
        } else {
            let second = time(b)?;
            (time(a)?, second)
        };
        if round >= warmup {
            out.measured.push(first);
            out.baseline.push(second);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_prepare_before_every_run_and_drop_the_warmup() {
        let mut prepared = 0;
        let paired = rounds(&mut Command::new("/bin/true"), &mut Command::new("/bin/true"), 2, 3, || {
            prepared += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((paired.measured.len(), paired.baseline.len(), prepared), (3, 3, 10));
        assert!(paired.measured.iter().all(|ms| *ms > 0.0));
        assert_eq!(paired.ratios().len(), 3);
    }

    #[test]
    fn the_order_alternates_between_rounds() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let cmd = |word: &str| {
            let mut cmd = Command::new("/bin/sh");
            cmd.arg("-c").arg(format!("echo {word} >> '{}'", log.display()));
            cmd
        };
        rounds(&mut cmd("a"), &mut cmd("b"), 0, 4, || Ok(())).unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "a\nb\nb\na\na\nb\nb\na\n");
    }

    #[test]
    fn spread_of_per_round_ratios() {
        let paired = Paired { measured: vec![2.0, 4.0, 3.0, 10.0], baseline: vec![1.0, 2.0, 1.0, 1.0] };
        let spread = paired.ratio();
        assert_eq!(
            (spread.median, spread.q1, spread.q3, spread.min, spread.max, spread.n),
            (2.5, 2.0, 3.0, 2.0, 10.0, 4)
        );
        assert!(Spread::of(&[]).median.is_nan());
    }

    #[test]
    fn a_failing_run_fails_the_measurement() {
        let err = time_once(&mut Command::new("/bin/false")).unwrap_err();
        assert!(err.0.starts_with("/bin/false exited with"), "{err}");
    }
}
