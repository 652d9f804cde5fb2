//! bench section `crash` (spec 90 §7, bar Q7): writers killed with SIGKILL at random points, seeded and
//! replayable. The writers are `rmw`, `agent-box-session add|stop|restart`, the baked `agent-box-mark-stopped`
//! and `agent-box-webhook-spawn` (admitted and refused); each one's median run is measured first and the kill
//! comes after a uniform delay in [0, 1.5 × median]. After every run the checks of hold; after the loop
//! one `agent-box-supervisor --once` must leave no temp file where looks.

mod checks;
mod writers;

use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use agent_box_tests::kill::{Ended, KillLoop, run_killed};
use base::SessionName;
use rand::rngs::StdRng;
use serde_json::Value;

use self::checks::{Checks, HELD_LOCK_GRACE_MS, Tally, filter_temp_files, temp_files};
use self::writers::{Effect, Planned, WRITERS, World, Writer};
use super::Bench;
use super::fail::{Context, Failure, Outcome};
use super::report::{Bar, Metric, Unit};
use super::world::{echo_product, output, print_sandbox_env};

const SECTION: &str = "crash";
/// Complete runs per writer to find its median duration.
const MEDIAN_RUNS: usize = 15;
/// Defects printed in full; the rest are only counted (a broken invariant tends to repeat every iteration).
const PRINTED_DEFECTS: usize = 20;
/// The writers, as the row labels name them.
const WRITER_NAMES: &str = "rmw, session add|stop|restart, mark-stopped, webhook-spawn";

/// The crash section.
pub fn run(bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let mut crash = Crash::new(bench)?;
    // The harness's kill engine; its generator also draws the writers' arguments of the median runs.
    let mut kills = KillLoop::new(bench.seed);
    println!("{SECTION}: seed {} (replay: cargo xtask bench --seed {} crash)", bench.seed, bench.seed);
    println!("{SECTION}: writers: {WRITER_NAMES} (admitted and refused); each one's command, once:");
    let medians = crash.medians(&mut kills.rng)?;
    for (writer, median) in WRITERS.iter().zip(&medians) {
        println!("{SECTION}: median complete run: {} {median:.3} ms", writer.label());
    }
    crash.kill_loop(&mut kills, bench.crash_iterations, &medians)?;
    let before = temp_files(&crash.world.root).len();
    crash.sweep()?;
    let left = temp_files(&crash.world.root);
    let filter_temps = filter_temp_files(&crash.world.root);
    for path in left.iter().chain(&filter_temps) {
        println!("{SECTION}: left after the sweep: {}", path.display());
    }
    crash.print_per_writer();
    let temps = Temps { killed: before, after_sweep: left.len(), filters: filter_temps.len() };
    push_metrics(metrics, &crash.checks.tally, bench.seed, bench.crash_iterations, &medians, &temps);
    crash.world.root.reset()
}

/// Temp-file counts of.
#[derive(Debug)]
struct Temps {
    killed: usize,
    after_sweep: usize,
    filters: usize,
}

fn push_metrics(metrics: &mut Vec<Metric>, t: &Tally, seed: u64, iterations: usize, medians: &[f64], temps: &Temps) {
    let count = |name: String, v: usize| Metric::single(SECTION, name, Unit::Count, v as f64);
    let q7 = |name: &str, v: usize| count(name.to_owned(), v).with_bar(Bar::exactly("Q7", 0.0));
    metrics.push(count(format!("iterations, seed {seed}, writers: {WRITER_NAMES}"), iterations));
    metrics.push(count("writers killed before they finished".into(), t.killed));
    for (writer, median) in WRITERS.iter().zip(medians) {
        let name = format!("    {}, median complete run", writer.label());
        metrics.push(Metric::single(SECTION, name, Unit::Millis, *median));
    }
    metrics.push(q7("registry not Valid after a kill", t.invalid_registry));
    metrics.push(q7("counter outside [last committed, +1]", t.counter_off));
    // A writer killed while a child it spawned under the lock (the tmux probe) has not yet exec'd leaves that
    // child holding a copy of the close-on-exec descriptor until its exec, under a millisecond: the lock dies
    // with the writer and that child, so only a lock still held after the grace is a leak.
    let leaked = t.held_locks - t.held_locks_freed_soon;
    metrics.push(q7(&format!("lock still held {HELD_LOCK_GRACE_MS} ms after the writer died"), leaked));
    let transient = format!("    held by a pre-exec child of the writer, freed within {HELD_LOCK_GRACE_MS} ms");
    metrics.push(count(transient, t.held_locks_freed_soon));
    metrics.push(q7("torn lease files", t.torn_leases));
    metrics.push(q7("hook-log lines unparseable (not a torn tail)", t.bad_log_lines));
    metrics.push(count("    hook-log torn last lines seen (fresh-line rule tested)".into(), t.torn_tails));
    metrics.push(q7("finished writer exited with an unexpected code", t.unexpected_exits));
    metrics.push(q7("finished writer's change missing from the registry", t.lost_results));
    metrics.push(count("temp files left by killed writers".into(), temps.killed));
    metrics.push(q7("temp files after supervisor --once", temps.after_sweep));
    metrics.push(count("claim-filter temp files after --once (swept under the registry lock)".into(), temps.filters));
}

/// One run of a writer, as the report of a defect names it.
#[derive(Debug, Clone, Copy)]
struct RunId {
    /// The kill-loop iteration, or None for a median run.
    iteration: Option<usize>,
    writer: Writer,
    /// The kill delay as a fraction of 1.5 × median, or None for a run left to finish.
    fraction: Option<f64>,
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.iteration {
            Some(i) => write!(f, "iteration {i}, {}", self.writer.label())?,
            None => write!(f, "median run of {}", self.writer.label())?,
        }
        match self.fraction {
            Some(u) => write!(f, ", kill at {u:.3} x 1.5 x median"),
            None => write!(f, ", not killed"),
        }
    }
}

/// Per-writer counts, printed after the loop.
#[derive(Debug, Default, Clone, Copy)]
struct WriterCount {
    runs: usize,
    killed: usize,
}

/// The section's state: the world and what the checks found.
#[derive(Debug)]
struct Crash {
    world: World,
    checks: Checks,
    per_writer: [WriterCount; WRITERS.len()],
    defects: usize,
}

impl Crash {
    fn new(bench: &Bench) -> Outcome<Self> {
        let world = World::new(bench.root.clone(), bench.baked()?.to_path_buf(), &bench.release)?;
        print_sandbox_env(SECTION, &world.env);
        Ok(Self { world, checks: Checks::default(), per_writer: [WriterCount::default(); WRITERS.len()], defects: 0 })
    }

    /// The median wall time of complete runs of each writer, in ms, in [`WRITERS`] order (each run checked like
    /// any other). The first run of each writer echoes its command.
    fn medians(&mut self, rng: &mut StdRng) -> Outcome<Vec<f64>> {
        let mut medians = Vec::with_capacity(WRITERS.len());
        for writer in WRITERS {
            let mut times = Vec::with_capacity(MEDIAN_RUNS);
            for k in 0..MEDIAN_RUNS {
                super::interrupt::check()?;
                let id = RunId { iteration: None, writer, fraction: None };
                times.push(self.run_writer(rng, id, None, k == 0)?);
            }
            let median = super::stats::Summary::of(&times).map(|s| s.median).context(|| "no median".into())?;
            medians.push(median);
        }
        Ok(medians)
    }

    /// `iterations` writers picked at random, each killed after a uniform delay in [0, 1.5 × median].
    fn kill_loop(&mut self, kills: &mut KillLoop, iterations: usize, medians: &[f64]) -> Outcome<()> {
        let bounds: Vec<Duration> = medians.iter().map(|ms| Duration::from_secs_f64(1.5 * ms / 1000.0)).collect();
        kills.run(iterations, &bounds, |rng, pick| {
            super::interrupt::check()?;
            let writer = WRITERS[pick.writer];
            let id = RunId { iteration: Some(pick.iteration), writer, fraction: Some(pick.fraction) };
            self.run_writer(rng, id, Some(pick.delay), false)?;
            if (pick.iteration + 1) % 250 == 0 {
                let (done, killed) = (pick.iteration + 1, self.checks.tally.killed);
                println!("{SECTION}: {done} iterations, {killed} writers killed mid-run");
            }
            Ok(())
        })
    }

    /// Prepares and starts a writer, kills it after `delay` (None: lets it finish), and runs the checks of
    /// Returns the run's wall time in ms.
    fn run_writer(&mut self, rng: &mut StdRng, id: RunId, delay: Option<Duration>, echo: bool) -> Outcome<f64> {
        let Planned { mut cmd, effect } = self.world.prepare(id.writer, rng)?;
        if echo {
            println!("{}", echo_writer(&cmd, &self.world.env));
        }
        let Ended { mut child, status, killed, elapsed } =
            run_killed(&mut cmd, delay).context(|| format!("running {}", cmd.get_program().to_string_lossy()))?;
        let elapsed = elapsed.as_secs_f64() * 1000.0;
        self.count(id.writer, killed);
        let committed = if id.writer == Writer::Rmw { last_committed(&mut child) } else { None };
        let (doc, mut found) = self.checks.after_run(&self.world.root, committed);
        if !killed {
            found.extend(self.finished_defects(id.writer, status, &effect, doc.as_ref()));
        }
        self.report(id, &found);
        Ok(elapsed)
    }

    fn count(&mut self, writer: Writer, killed: bool) {
        let slot = &mut self.per_writer[writer.index()];
        slot.runs += 1;
        if killed {
            slot.killed += 1;
            self.checks.tally.killed += 1;
        }
    }

    /// A writer that was not killed must have exited as expected and left its change (Q7: no committed update
    /// lost; a refusal changes nothing).
    fn finished_defects(
        &mut self,
        writer: Writer,
        status: ExitStatus,
        effect: &Effect,
        doc: Option<&registry::Document>,
    ) -> Vec<String> {
        if status.code() != Some(writer.expected_exit()) {
            self.checks.tally.unexpected_exits += 1;
            let stderr = fs::read_to_string(&self.world.stderr).unwrap_or_default();
            return vec![format!("exited with {status}, expected {}: {}", writer.expected_exit(), stderr.trim())];
        }
        if doc.is_some_and(|d| !effect.holds(d)) {
            self.checks.tally.lost_results += 1;
            return vec![format!("finished, but the registry does not show its result ({effect:?})")];
        }
        Vec::new()
    }

    fn report(&mut self, id: RunId, found: &[String]) {
        for defect in found {
            self.defects += 1;
            if self.defects <= PRINTED_DEFECTS {
                println!("{SECTION}: DEFECT after {id}: {defect}");
            } else if self.defects == PRINTED_DEFECTS + 1 {
                println!("{SECTION}: more defects follow; only counted");
            }
        }
    }

    fn print_per_writer(&self) {
        let parts: Vec<String> = WRITERS
            .iter()
            .zip(&self.per_writer)
            .map(|(w, c)| format!("{} {}/{}", w.label(), c.killed, c.runs))
            .collect();
        println!("{SECTION}: killed/runs per writer (median runs included): {}", parts.join(", "));
    }

    /// every entry parked (so `--once` starts no agent), then one `agent-box-supervisor --once` with the
    /// bench root as HOME, whose tick sweeps the temp leftovers.
    fn sweep(&self) -> Outcome<()> {
        self.world.edit(|doc| {
            let names: Vec<SessionName> = doc.names().filter_map(|n| SessionName::parse(n).ok()).collect();
            for name in &names {
                if let Some(mut e) = doc.entry_mut(name) {
                    e.set("stopped", Value::Bool(true));
                }
            }
            Ok(true)
        })?;
        println!("{SECTION}: every entry parked; one tick with HOME={}", self.world.root.paths.home().display());
        let mut cmd = self.world.sandbox.cmd("agent-box-supervisor");
        cmd.arg("--once").stdin(Stdio::null());
        let out = output(&mut cmd).context(|| "running agent-box-supervisor --once".into())?;
        if !out.status.success() {
            return Err(Failure(format!(
                "agent-box-supervisor --once exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(())
    }
}

/// The echo line of a writer: the variables it adds to the sandbox environment, the command, and its stdin.
fn echo_writer(cmd: &Command, base: &[(OsString, OsString)]) -> String {
    let extra: Vec<String> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k, v?)))
        .filter(|(k, v)| !base.iter().any(|(bk, bv)| bk == k && bv == v))
        .map(|(k, v)| format!("{}={}", k.to_string_lossy(), crate::run::shell_quote(&v.to_string_lossy())))
        .collect();
    let line = echo_product(cmd);
    let command = line.strip_prefix("$ ").unwrap_or(&line);
    if extra.is_empty() { format!("$ {command}") } else { format!("$ {} {command}", extra.join(" ")) }
}

/// The last `committed <n>` an rmw run printed before it ended.
fn last_committed(child: &mut Child) -> Option<u64> {
    let mut text = String::new();
    child.stdout.take()?.read_to_string(&mut text).ok()?;
    text.lines().rev().find_map(|l| l.strip_prefix("committed ")?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_shows_only_the_added_variables() {
        let base = vec![(OsString::from("HOME"), OsString::from("/h"))];
        let mut cmd = Command::new("/bin/x");
        cmd.env_clear().env("HOME", "/h").env("KEY", "a b").arg("y");
        assert_eq!(echo_writer(&cmd, &base), "$ KEY='a b' /bin/x y");
    }

    #[test]
    fn run_ids_name_iteration_writer_and_kill_point() {
        let id = RunId { iteration: Some(7), writer: Writer::Stop, fraction: Some(0.25) };
        assert_eq!(id.to_string(), "iteration 7, session stop, kill at 0.250 x 1.5 x median");
        let median = RunId { iteration: None, writer: Writer::Rmw, fraction: None };
        assert_eq!(median.to_string(), "median run of rmw x 4, not killed");
    }
}
