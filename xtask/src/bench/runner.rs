//! The built-in runner of spec 90: spawn, wait, monotonic clock; and the interleaving of, so a
//! measured command and its baseline see the same machine load.

use std::process::Command;
use std::time::Instant;

use super::fail::{Context, Outcome, fail};

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

/// Samples of a measured command and of its baseline.
#[derive(Debug, Clone, Default)]
pub struct Paired {
    pub measured: Vec<f64>,
    pub baseline: Vec<f64>,
}

/// Runs `warmup + runs` rounds of: `prepare` (untimed), `measured`, `baseline` (A B A B …); the warm-up rounds are
/// discarded. `prepare` restores what the measured command changes, so every sample does the same work.
pub fn interleaved(
    measured: &mut Command,
    baseline: &mut Command,
    warmup: usize,
    runs: usize,
    mut prepare: impl FnMut() -> Outcome<()>,
) -> Outcome<Paired> {
    let mut out = Paired { measured: Vec::with_capacity(runs), baseline: Vec::with_capacity(runs) };
    for round in 0..warmup + runs {
        super::interrupt::check()?;
        prepare()?;
        let a = time_once(measured)?;
        let b = time_once(baseline)?;
        if round >= warmup {
            out.measured.push(a);
            out.baseline.push(b);
        }
    }
    Ok(out)
}

/// Runs `warmup + runs` rounds of `a` then `b` (Q-1.7: this build and the baseline alternately, A B A B …), each
/// run after its own `prepare` (untimed), because both commands change the same files; the warm-up rounds are
/// discarded. `measured` holds `a`'s samples, `baseline` `b`'s.
pub fn alternated(
    a: &mut Command,
    b: &mut Command,
    warmup: usize,
    runs: usize,
    mut prepare: impl FnMut() -> Outcome<()>,
) -> Outcome<Paired> {
    let mut out = Paired { measured: Vec::with_capacity(runs), baseline: Vec::with_capacity(runs) };
    for round in 0..warmup + runs {
        super::interrupt::check()?;
        prepare()?;
        let first = time_once(a)?;
        prepare()?;
        let second = time_once(b)?;
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
    fn interleaves_and_drops_warmup() {
        let mut prepared = 0;
        let paired = interleaved(&mut Command::new("/bin/true"), &mut Command::new("/bin/true"), 2, 3, || {
            prepared += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((paired.measured.len(), paired.baseline.len(), prepared), (3, 3, 5));
        assert!(paired.measured.iter().all(|ms| *ms > 0.0));
    }

    #[test]
    fn alternation_prepares_before_every_run() {
        let mut prepared = 0;
        let paired = alternated(&mut Command::new("/bin/true"), &mut Command::new("/bin/true"), 1, 2, || {
            prepared += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((paired.measured.len(), paired.baseline.len(), prepared), (2, 2, 6));
    }

    #[test]
    fn a_failing_run_fails_the_measurement() {
        let err = time_once(&mut Command::new("/bin/false")).unwrap_err();
        assert!(err.0.starts_with("/bin/false exited with"), "{err}");
    }
}
