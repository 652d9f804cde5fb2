//! bench section `rmw` (spec 90 §6, bar Q6): concurrent locked read-modify-writes of the registry by the
//! `registry` example `rmw`: 4 processes × 250 released together by a gate, against 1 process × 1000, in rounds
//! that run both (order alternating, the registry fixture restored before each run), so the throughput ratio is
//! taken per round and reported with its spread. Lost updates must be 0, always.

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use agent_box_tests::Sandbox;
use registry::Document;
use serde_json::Value;

use super::baseline::Baseline;
use super::fail::{Context, Failure, Outcome, fail};
use super::report::{Bar, Metric, Unit};
use super::runner::Paired;
use super::stats::Summary;
use super::world::{Kind, command_in, echo_product, numbered, print_sandbox_env, registry_bytes, sandbox_env};
use super::{Bench, facts};

const SECTION: &str = "rmw";
const WRITERS: usize = 4;
const EACH: u64 = 250;
const TOTAL: u64 = 1000;
const FILLERS: usize = 200;
/// Time for the started writers to reach their gate wait before it opens.
const GATE_SETTLE: Duration = Duration::from_millis(300);

/// One writer process and the reader thread that timestamps its `committed` lines.
#[derive(Debug)]
struct Writer {
    child: Child,
    lines: JoinHandle<Vec<(Instant, String)>>,
}

/// What one run of writers produced.
#[derive(Debug)]
struct RunResult {
    wall_ms: f64,
    /// Per writer: the time between consecutive commits (the first from the gate), in ms.
    latencies: Vec<Vec<f64>>,
    /// Per writer: its own `elapsed_us`, in ms.
    own_elapsed_ms: Vec<f64>,
}

/// Rounds of 1 × 1000 and 4 × 250: enough for a median and a spread of the ratio, few because a round is seconds of
/// fsyncs on a disk.
const ROUNDS: usize = 5;

/// What the runs of one kind produced over the rounds.
#[derive(Debug, Default)]
struct Runs {
    results: Vec<RunResult>,
    lost: u64,
    wrong_own: usize,
}

impl Runs {
    fn throughputs(&self) -> Vec<f64> {
        self.results.iter().map(|r| TOTAL as f64 / (r.wall_ms / 1000.0)).collect()
    }
    fn walls(&self) -> Vec<f64> {
        self.results.iter().map(|r| r.wall_ms).collect()
    }
    /// Per-update latency and rmw's own elapsed time, pooled over the rounds.
    fn pooled(&self) -> RunResult {
        let mut pooled = RunResult { wall_ms: 0.0, latencies: Vec::new(), own_elapsed_ms: Vec::new() };
        for result in &self.results {
            pooled.latencies.extend(result.latencies.iter().cloned());
            pooled.own_elapsed_ms.extend(result.own_elapsed_ms.iter().copied());
        }
        pooled
    }
}

/// The rmw section.
pub fn run(bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let sandbox = Sandbox::new();
    let env = sandbox_env(&sandbox);
    print_sandbox_env(SECTION, &env);
    let registry = sandbox.registry();
    let fixture =
        String::from_utf8(registry_bytes(&numbered("fill", FILLERS, Kind::Plain))?).context(|| "fixture".into())?;
    let fs_type = facts::fs_type(registry.parent().unwrap_or(Path::new("/")));
    println!("{SECTION}: registry with {FILLERS} filler entries on {fs_type}: {}", registry.display());
    println!(
        "{SECTION}: {ROUNDS} rounds of 1 x {TOTAL} and {WRITERS} x {EACH} (order alternating), fixture restored before each run"
    );
    let rmw = bench.release.join("examples/rmw");
    let owners: Vec<String> = (1..=WRITERS).map(|k| format!("own-{k}")).collect();
    let (mut single, mut multi) = (Runs::default(), Runs::default());
    for round in 0..ROUNDS {
        for multi_first in [round % 2 == 1, round % 2 == 0] {
            sandbox.write_registry(&fixture);
            let gate = sandbox.root().join(format!("gate-{round}-{multi_first}"));
            if multi_first {
                let specs: Vec<(&str, Option<&str>)> = owners.iter().map(|o| ("shared", Some(o.as_str()))).collect();
                let result = run_writers(&rmw, &env, sandbox.home(), &registry, &specs, EACH, &gate)?;
                let doc = read_doc(&registry)?;
                multi.lost += TOTAL.saturating_sub(count(&doc, "shared"));
                multi.wrong_own += owners.iter().filter(|o| count(&doc, o) != EACH).count();
                multi.results.push(result);
            } else {
                let result = run_writers(&rmw, &env, sandbox.home(), &registry, &[("single", None)], TOTAL, &gate)?;
                single.lost += TOTAL.saturating_sub(count(&read_doc(&registry)?, "single"));
                single.results.push(result);
            }
        }
    }
    push_metrics(metrics, &fs_type, &single, &multi);
    if let Some(baseline) = &bench.baseline {
        sandbox.write_registry(&fixture);
        against_baseline(&rmw, baseline, &env, &sandbox, metrics)?;
    }
    Ok(())
}

fn read_doc(registry: &Path) -> Outcome<Document> {
    Document::parse(&fs::read(registry).context(|| "reading the registry".into())?)
        .map_err(|e| Failure(format!("the registry is not valid after the writers: {e}")))
}

fn count(doc: &Document, key: &str) -> u64 {
    doc.entry(key).and_then(|e| e.get("count")).and_then(Value::as_u64).unwrap_or(0)
}

fn push_metrics(metrics: &mut Vec<Metric>, fs_type: &str, single: &Runs, multi: &Runs) {
    let c = |name: String, v: f64| Metric::single(SECTION, name, Unit::Count, v);
    let rounds = format!("{ROUNDS} rounds");
    metrics.push(
        c(format!("lost updates, {WRITERS} x {EACH}, {rounds}"), multi.lost as f64).with_bar(Bar::exactly("Q6", 0.0)),
    );
    metrics.push(
        c(format!("own counters not at {EACH}, {rounds}"), multi.wrong_own as f64).with_bar(Bar::exactly("Q6", 0.0)),
    );
    metrics
        .push(c(format!("lost updates, 1 x {TOTAL}, {rounds}"), single.lost as f64).with_bar(Bar::exactly("Q6", 0.0)));
    let ratio = Paired { measured: multi.throughputs(), baseline: single.throughputs() }.ratio();
    metrics.push(
        Metric::sampled(
            SECTION,
            format!("throughput, {WRITERS} x {EACH}, {fs_type}"),
            Unit::PerSec,
            multi.throughputs(),
        )
        .with_round_ratio(ratio, format!("1 x {TOTAL} of the same round")),
    );
    metrics.push(Metric::sampled(
        SECTION,
        format!("throughput, 1 x {TOTAL}, {fs_type}"),
        Unit::PerSec,
        single.throughputs(),
    ));
    metrics.push(Metric::sampled(SECTION, format!("wall, {WRITERS} x {EACH}"), Unit::Millis, multi.walls()));
    metrics.push(Metric::sampled(SECTION, format!("wall, 1 x {TOTAL}"), Unit::Millis, single.walls()));
    push_latency(metrics, &format!("{WRITERS} x {EACH}"), &multi.pooled());
    push_latency(metrics, &format!("1 x {TOTAL}"), &single.pooled());
}

/// Rounds of the 4 × 250 run of both builds on the same registry. Each round is a second or two, so a
/// load spike elsewhere on the machine moves single rounds: enough of them keep the medians honest.
const BASELINE_ROUNDS: usize = 9;

/// the 4 × 250 run of this build and of the baseline, alternately (A B, B A, …); wall time and throughput
/// of each.
fn against_baseline(
    rmw: &Path,
    baseline: &Baseline,
    env: &[(OsString, OsString)],
    sandbox: &Sandbox,
    metrics: &mut Vec<Metric>,
) -> Outcome<()> {
    let label = baseline.label();
    let old = baseline.release.join("examples/rmw");
    println!("{SECTION}: {WRITERS} x {EACH} of this build and of the {label}, alternately, {BASELINE_ROUNDS} rounds:");
    let (mut new_walls, mut old_walls) = (Vec::new(), Vec::new());
    for round in 0..BASELINE_ROUNDS {
        let mut both = [(rmw, &mut new_walls, "new"), (old.as_path(), &mut old_walls, "old")];
        // A B, then B A: neither build always runs right after the other's writes.
        if round % 2 == 1 {
            both.reverse();
        }
        for (binary, walls, who) in both {
            let owners: Vec<String> = (1..=WRITERS).map(|k| format!("{who}-{round}-{k}")).collect();
            let shared = format!("{who}-{round}-shared");
            let specs: Vec<(&str, Option<&str>)> = owners.iter().map(|o| (shared.as_str(), Some(o.as_str()))).collect();
            let gate = sandbox.root().join(format!("gate-{who}-{round}"));
            let result = run_writers(binary, env, sandbox.home(), &sandbox.registry(), &specs, EACH, &gate)?;
            walls.push(result.wall_ms);
        }
    }
    let doc = Document::parse(&fs::read(sandbox.registry()).context(|| "reading the registry".into())?)
        .map_err(|e| Failure(format!("the registry is not valid after the baseline rounds: {e}")))?;
    let count = |key: &str| doc.entry(key).and_then(|e| e.get("count")).and_then(Value::as_u64).unwrap_or(0);
    for who in ["new", "old"] {
        if let Some(round) = (0..BASELINE_ROUNDS).find(|r| count(&format!("{who}-{r}-shared")) != TOTAL) {
            return fail(format!("round {round} of the {who} rmw lost updates"));
        }
    }
    let median = |v: &[f64]| Summary::of(v).map_or(f64::NAN, |s| s.median);
    let (new_median, old_median) = (median(&new_walls), median(&old_walls));
    let per_s = |wall_ms: f64| TOTAL as f64 / (wall_ms / 1000.0);
    let wall = |who: &str| format!("wall, {WRITERS} x {EACH}, {who}");
    let ratio = Paired { measured: new_walls.clone(), baseline: old_walls.clone() }.ratio();
    metrics.push(
        Metric::sampled(SECTION, wall("this build"), Unit::Millis, new_walls).against_baseline_rounds(ratio, &label),
    );
    metrics.push(Metric::sampled(SECTION, format!("    {}", wall(&label)), Unit::Millis, old_walls));
    let throughput = |who: &str| format!("throughput, {WRITERS} x {EACH}, {who} (median round)");
    metrics.push(Metric::single(SECTION, throughput("this build"), Unit::PerSec, per_s(new_median)).against_baseline(
        per_s(new_median) / per_s(old_median),
        &label,
        false,
    ));
    metrics.push(Metric::single(SECTION, format!("    {}", throughput(&label)), Unit::PerSec, per_s(old_median)));
    Ok(())
}

/// Per-update latency over every writer (median and p95 in the table, p99 as its own row), and per writer the
/// p50/p99 and rmw's own elapsed time as lines.
fn push_latency(metrics: &mut Vec<Metric>, label: &str, result: &RunResult) {
    let all: Vec<f64> = result.latencies.iter().flatten().copied().collect();
    if let Some(s) = Summary::of(&all) {
        metrics.push(Metric::single(SECTION, format!("    update latency p99, {label}"), Unit::Millis, s.p99));
    }
    metrics.push(Metric::sampled(SECTION, format!("update latency, {label}"), Unit::Millis, all));
    for (k, (lat, own)) in result.latencies.iter().zip(&result.own_elapsed_ms).enumerate() {
        if let Some(s) = Summary::of(lat) {
            println!(
                "{SECTION}: {label} writer {}: p50 {:.3} ms, p99 {:.3} ms, {} commits, own elapsed {:.1} ms",
                k + 1,
                s.median,
                s.p99,
                s.n,
                own
            );
        }
    }
}

/// Starts one `rmw` per spec, all waiting on `gate`, opens the gate and collects the timestamped output.
fn run_writers(
    rmw: &Path,
    env: &[(OsString, OsString)],
    home: &Path,
    registry: &Path,
    specs: &[(&str, Option<&str>)],
    count: u64,
    gate: &Path,
) -> Outcome<RunResult> {
    let _ = fs::remove_file(gate);
    let mut writers = Vec::new();
    for (key, own) in specs {
        let mut cmd = command_in(env, home, rmw);
        cmd.env("RMW_GATE", gate).arg(registry).arg(key).arg(count.to_string()).args(own.iter());
        println!("{}", echo_product(&cmd));
        let mut child = cmd.stdout(Stdio::piped()).spawn().context(|| format!("starting {}", rmw.display()))?;
        let stdout = child.stdout.take().context(|| "rmw has no stdout".into())?;
        let lines = std::thread::spawn(move || {
            BufReader::new(stdout).lines().map_while(Result::ok).map(|l| (Instant::now(), l)).collect()
        });
        writers.push(Writer { child, lines });
    }
    std::thread::sleep(GATE_SETTLE);
    let opened = Instant::now();
    fs::write(gate, b"").context(|| format!("opening the gate {}", gate.display()))?;
    collect(writers, opened, count)
}

fn collect(writers: Vec<Writer>, opened: Instant, count: u64) -> Outcome<RunResult> {
    let mut result = RunResult { wall_ms: 0.0, latencies: Vec::new(), own_elapsed_ms: Vec::new() };
    let mut last = opened;
    for mut writer in writers {
        let lines = writer.lines.join().map_err(|_| Failure("an output reader panicked".into()))?;
        let status = writer.child.wait().context(|| "waiting for rmw".into())?;
        if !status.success() {
            return fail(format!("rmw exited with {status}"));
        }
        let commits: Vec<Instant> =
            lines.iter().filter(|(_, l)| l.starts_with("committed ")).map(|(t, _)| *t).collect();
        if commits.len() as u64 != count {
            return fail(format!("rmw reported {} commits instead of {count}", commits.len()));
        }
        let own = lines.iter().find_map(|(_, l)| l.strip_prefix("elapsed_us ")?.parse::<f64>().ok());
        result.own_elapsed_ms.push(own.map_or(f64::NAN, |us| us / 1000.0));
        result.latencies.push(intervals(opened, &commits));
        last = last.max(commits.last().copied().unwrap_or(opened));
    }
    result.wall_ms = (last - opened).as_secs_f64() * 1000.0;
    Ok(result)
}

/// Gaps between consecutive instants, the first measured from `start`, in ms.
fn intervals(start: Instant, times: &[Instant]) -> Vec<f64> {
    let mut previous = start;
    times
        .iter()
        .map(|t| {
            let gap = t.saturating_duration_since(previous).as_secs_f64() * 1000.0;
            previous = *t;
            gap
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_start_at_the_gate() {
        let start = Instant::now();
        let times = [start + Duration::from_millis(2), start + Duration::from_millis(5)];
        let gaps = intervals(start, &times);
        assert!((gaps[0] - 2.0).abs() < 1e-6 && (gaps[1] - 3.0).abs() < 1e-6, "{gaps:?}");
    }
}
