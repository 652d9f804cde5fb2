//! Issue 24 in bench section `intake`, (b), bar Q13: a slot freed to the next queued record's agent running. A loop
//! over a box of 2 slots (the epilogue baked for the bench root, so an exit 0 parks and frees the slot), both
//! taken by sessions admitted from webhook-spawn batches, with 3 more batches queued behind them; each batch's fake
//! agent names itself `q-<k>` (`--as`, the batch's `AGENT_BOX_HOOK_SESSION_ARGS`) and polls its control file. A trial
//! tells the oldest running agent to exit 0, notes when its process is gone, and measures to the moment the agent
//! of the oldest queued record recorded its start (`started_at`, the mtime of its argv record); then, untimed, one
//! more batch is queued, so every trial meets 3 waiting records.

use std::fs;
use std::time::{Duration, SystemTime};

use agent_box_tests::Sandbox;
use agent_box_tests::fleet::Fleet;

use super::super::Bench;
use super::super::fail::{Context, Failure, Outcome, fail};
use super::super::report::{Bar, Metric, Scope, Unit};
use super::super::stats::Summary;
use super::super::world::wait_for;
use super::{SECTION, dispatch, echo_dispatch, run_dispatch};

const TRIALS: usize = 30;
/// Records waiting behind the 2 running sessions at every trial.
const DEPTH: usize = 3;
const SLOTS: usize = 2;
/// Q13: the median at most 100 ms.
const Q13_MS: f64 = 100.0;
const PERIOD_MS: f64 = 2000.0;
/// A liveness bound per step, far above any plausible admission (the 2 s timer alone admits within 2 s; a
/// polling agent obeys its control file within 1 s).
const STEP_LIMIT: Duration = Duration::from_secs(20);

/// Runs the trials and pushes the metrics.
pub fn slot_to_agent(bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
    bench.root.reset()?;
    let mut sandbox = Sandbox::at(bench.root.root.clone(), "home/agent", bench.baked()?.to_path_buf());
    Fleet::prepare(&mut sandbox, &SLOTS.to_string());
    let fleet = Fleet::start(sandbox, &String::from_utf8_lossy(&registry::Document::empty().to_bytes()), vec![], &[]);
    println!(
        "{SECTION}: a loop over {SLOTS} slots, both taken, {DEPTH} batches queued; {TRIALS} trials: the oldest agent \
         exits 0, timed until the next admitted agent records its start; one more batch queued (untimed) per trial:"
    );
    println!("{}", echo_dispatch(&dispatch(&fleet.sandbox, "bench-q-0", 0, &["--as", "q-0"]).0));
    for k in 0..SLOTS + DEPTH {
        queue_one(&fleet, k)?;
    }
    for k in 0..SLOTS {
        wait_started(&fleet, k)?;
    }
    let mut samples = Vec::with_capacity(TRIALS);
    for trial in 0..TRIALS {
        super::super::interrupt::check()?;
        samples.push(self::trial(&fleet, trial).map_err(|e| Failure(format!("{e}; {}", fleet.log_tail())))?);
        let before = fleet.ticks();
        queue_one(&fleet, trial + SLOTS + DEPTH)?;
        settle(&fleet, before)?;
    }
    push_metrics(metrics, samples);
    Ok(())
}

fn push_metrics(metrics: &mut Vec<Metric>, samples: Vec<f64>) {
    let summary = Summary::of(&samples);
    let (median, p95, max) = summary.map_or((f64::NAN, f64::NAN, f64::NAN), |s| (s.median, s.p95, s.max));
    metrics.push(
        Metric::sampled(
            SECTION,
            "slot freed (agent exit 0) -> next queued record's agent running",
            Unit::Millis,
            samples,
        )
        .with_bar(Bar::at_most("Q13", Q13_MS, Scope::ReferenceOnly))
        .with_ratio(median / PERIOD_MS, "2 s tick period"),
    );
    metrics.push(Metric::single(SECTION, "    p95 of the trials", Unit::Millis, p95));
    metrics.push(Metric::single(SECTION, "    max of the trials", Unit::Millis, max));
}

fn name(k: usize) -> String {
    format!("q-{k}")
}

/// One more batch, whose agent will poll its control file (written before the batch, so its first start reads it).
fn queue_one(fleet: &Fleet, k: usize) -> Outcome<()> {
    fleet.sandbox.agent(&name(k)).control("poll");
    let args = ["--as", &name(k)];
    let want = if k < SLOTS { "session '" } else { "batch queued" };
    run_dispatch(dispatch(&fleet.sandbox, &format!("bench-q-{k}"), k, &args), want).map(drop)
}

/// One trial: the agent of record `trial` exits 0; ms from its process gone to record `trial + 2`'s agent start.
fn trial(fleet: &Fleet, trial: usize) -> Outcome<f64> {
    let ending = fleet.sandbox.agent(&name(trial));
    let pid = ending.pid(1);
    ending.control("exit-now 0");
    wait_for(&format!("{} to exit", name(trial)), STEP_LIMIT, Duration::from_millis(1), || !running(pid))?;
    let exited = SystemTime::now();
    let next = fleet.sandbox.agent(&name(trial + SLOTS));
    wait_for(&format!("{} to start", name(trial + SLOTS)), STEP_LIMIT, Duration::from_millis(1), || {
        next.started_at(1).is_some()
    })?;
    let started = next.started_at(1).context(|| "no start recorded".into())?;
    // The mtime comes from the kernel's coarse clock (a tick behind at most): a start can read up to a few ms
    // early, never before the exit it follows by more than that; 0 then.
    Ok(started.duration_since(exited).map_or(0.0, |d| d.as_secs_f64() * 1000.0))
}

fn wait_started(fleet: &Fleet, k: usize) -> Outcome<()> {
    let agent = fleet.sandbox.agent(&name(k));
    wait_for(&format!("{} to start", name(k)), STEP_LIMIT, Duration::from_millis(10), || agent.starts() >= 1)
}

/// Whether process `pid` still runs (a zombie does not).
fn running(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

/// Untimed: the tick the new record's write woke (after tick `before`) has passed and the box is quiet again.
fn settle(fleet: &Fleet, before: usize) -> Outcome<()> {
    fleet.wait_ticks(before + 1);
    std::thread::sleep(Duration::from_millis(200));
    if fleet.sandbox.live().len() != SLOTS {
        return fail(format!("{} sessions live after a trial, not {SLOTS}", fleet.sandbox.live().len()));
    }
    Ok(())
}
