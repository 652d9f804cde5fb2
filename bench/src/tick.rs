//! bench section `tick` (spec 90 §4, bars Q3 and Q5): a supervisor loop with 200 live entries and nothing to do,
//! observed over 30 ticks: CPU per tick, tmux processes per tick, writes, memory. A loop with 20 entries runs at the
//! same time in its own sandbox and is sampled in the same rounds (one round per tick of the large loop), so the
//! 200/20 ratio of CPU per tick is taken per round, under the same load, and reported with its spread.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use super::Bench;
use super::baseline::Baseline;
use super::epilogue::callgrind_ir;
use super::fail::{Context, Outcome};
use super::procfs::{self, CpuTicks, Memory};
use super::report::{Bar, Metric, Scope, Unit};
use super::runner::{Paired, Spread};
use super::world::{LoopWorld, command_in, identity, mtimes, sandbox_env};
use crate::run;

mod notify;

const SECTION: &str = "tick";
/// Ticks observed per world.
const OBSERVED: usize = 30;
/// The tick period of 30 SUP-3.1, the denominator of the CPU ratio.
const PERIOD_MS: f64 = 2000.0;
/// How long after a tick's first tmux call its work is surely over: an idle tick takes milliseconds, and the
/// next one is 2 s away, so snapshots taken then fall between ticks.
const SETTLE: Duration = Duration::from_millis(500);
/// Bars: Q3 CPU ≤ 5 ms; Q5 RSS ≤ 8 MiB, growth ≤ 256 KiB.
const Q3_CPU_MS: f64 = 5.0;
const Q5_RSS_KIB: f64 = 8192.0;
const Q5_GROWTH_KIB: f64 = 256.0;

/// The 20-entry loop sampled alongside, round by round.
#[derive(Debug, Default)]
pub(crate) struct Companion {
    /// Scheduler run time per tick of each round, in ms (rounds in which it did not tick are left out).
    pub(crate) per_tick_ms: Vec<f64>,
    /// Large / small CPU per tick, per round in which both have a figure.
    pub(crate) ratios: Vec<f64>,
    cpu: CpuTicks,
    ticks: usize,
}

/// What one observation window measured.
#[derive(Debug)]
pub(crate) struct Observed {
    ticks: usize,
    cpu: CpuTicks,
    /// Scheduler run time of each observed tick, in ms; empty when the kernel keeps none.
    pub(crate) per_tick_ms: Vec<f64>,
    calls: usize,
    other_calls: usize,
    registry_changed: bool,
    side_files_changed: usize,
    lease_rewrites: usize,
    heartbeats: usize,
    memory_5: Memory,
    memory_30: Memory,
    pub(crate) companion: Option<Companion>,
}

/// The tick section.
pub fn run(bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let big = LoopWorld::start(SECTION, 200, 20, "256")?;
    let small = LoopWorld::start(SECTION, 20, 2, "256")?;
    let large = big.observe(Some(&small))?;
    drop(small);
    let clk = procfs::clock_ticks_per_second()?;
    push_cpu(metrics, 200, &large, clk);
    push_counts(metrics, &large);
    push_memory(metrics, &large);
    if let Some(companion) = &large.companion {
        push_companion(metrics, companion, clk);
    }
    big.strace_locks(bench, metrics)?;
    if bench.callgrind {
        big.callgrind_once(bench, metrics)?;
    }
    drop(big);
    notify::pending_against_none(metrics)?;
    if let Some(baseline) = &bench.baseline {
        against_baseline(bench, baseline, clk, metrics)?;
    }
    Ok(())
}

/// The 20-entry loop's CPU per tick over the same window, and the per-round 200/20 ratio with its spread.
fn push_companion(metrics: &mut Vec<Metric>, companion: &Companion, clk: f64) {
    let own = companion.cpu.own as f64 / clk * 1000.0 / companion.ticks.max(1) as f64;
    metrics.push(
        Metric::single(SECTION, "CPU per tick, 20 entries (utime+stime), same window", Unit::Millis, own)
            .with_ratio(own / PERIOD_MS, "2 s tick period"),
    );
    if !companion.per_tick_ms.is_empty() {
        metrics.push(Metric::sampled(
            SECTION,
            "    per tick, scheduler clock, 20 entries, same rounds",
            Unit::Millis,
            companion.per_tick_ms.clone(),
        ));
        metrics.push(
            Metric::sampled(
                SECTION,
                "CPU per tick, 200 / 20 entries (scheduler clock)",
                Unit::Factor,
                companion.ratios.clone(),
            )
            .with_round_ratio(Spread::of(&companion.ratios), "20 entries, same round"),
        );
    }
}

/// The builds of the observation windows when comparing with `--baseline`, in order: A B B A, so that a drift of
/// the machine over the windows (the first ones follow the start of 200 panes) weighs on both builds alike.
const BASELINE_WINDOWS: [bool; 4] = [true, false, false, true];
/// Ticks the loop runs before the first window, after all 200 panes started.
const SETTLE_TICKS: usize = 15;

/// one loop world of 200 entries whose supervisor alternates between this build's and the baseline's
/// (each adopting the same live panes), a window of 30 ticks each time; CPU per tick of each.
fn against_baseline(bench: &Bench, baseline: &Baseline, clk: f64, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let label = baseline.label();
    println!("{SECTION}: 200 entries, windows of this build and of the {label} in the order A B B A");
    let mut world = LoopWorld::start(SECTION, 200, 20, "256")?;
    world.wait_ticks(world.ticks() + SETTLE_TICKS)?;
    let (mut new, mut old) = (Vec::new(), Vec::new());
    let mut running_new = true;
    for this_build in BASELINE_WINDOWS {
        if this_build != running_new {
            world.switch_to(if this_build { &bench.release } else { &baseline.release })?;
            running_new = this_build;
        }
        let observed = world.observe(None)?;
        if this_build { new.push(observed) } else { old.push(observed) }
    }
    drop(world);
    let per_tick = |o: &[Observed]| -> Vec<f64> { o.iter().map(|o| cpu_ms(o, clk)).collect() };
    let precise = |o: &[Observed]| -> Vec<f64> { o.iter().flat_map(|o| o.per_tick_ms.clone()).collect() };
    // Rounds: the windows A B and B A; within a round, window k of one build against window k of the other.
    let ratio = |a: &[f64], b: &[f64]| Paired { measured: a.to_vec(), baseline: b.to_vec() }.ratio();
    let (new_cpu, old_cpu) = (per_tick(&new), per_tick(&old));
    let name = |what: &str, who: &str| format!("CPU per tick, 200 entries ({what}), {who}");
    let cpu_ratio = ratio(&new_cpu, &old_cpu);
    metrics.push(
        Metric::sampled(SECTION, name("utime+stime", "this build"), Unit::Millis, new_cpu)
            .against_baseline_rounds(cpu_ratio, &label),
    );
    metrics.push(Metric::sampled(SECTION, format!("    {}", name("utime+stime", &label)), Unit::Millis, old_cpu));
    let (new_precise, old_precise) = (precise(&new), precise(&old));
    if !new_precise.is_empty() && !old_precise.is_empty() {
        let precise_ratio = ratio(&new_precise, &old_precise);
        metrics.push(
            Metric::sampled(SECTION, name("scheduler clock", "this build"), Unit::Millis, new_precise)
                .against_baseline_rounds(precise_ratio, &label),
        );
        metrics.push(Metric::sampled(
            SECTION,
            format!("    {}", name("scheduler clock", &label)),
            Unit::Millis,
            old_precise,
        ));
    }
    Ok(())
}

fn cpu_ms(observed: &Observed, clk: f64) -> f64 {
    observed.cpu.own as f64 / clk * 1000.0 / observed.ticks as f64
}

fn median(values: &[f64]) -> f64 {
    super::stats::Summary::of(values).map_or(0.0, |s| s.median)
}

fn push_cpu(metrics: &mut Vec<Metric>, entries: usize, o: &Observed, clk: f64) {
    let own = cpu_ms(o, clk);
    let mut metric =
        Metric::single(SECTION, format!("CPU per tick, {entries} entries (utime+stime)"), Unit::Millis, own)
            .with_ratio(own / PERIOD_MS, "2 s tick period");
    if entries == 200 {
        metric = metric.with_bar(Bar::at_most("Q3", Q3_CPU_MS, Scope::ReferenceOnly));
    }
    metrics.push(metric);
    if !o.per_tick_ms.is_empty() {
        let precise = median(&o.per_tick_ms);
        metrics.push(
            Metric::sampled(
                SECTION,
                format!("    per tick, scheduler clock, {entries} entries"),
                Unit::Millis,
                o.per_tick_ms.clone(),
            )
            .with_ratio(precise / PERIOD_MS, "2 s tick period"),
        );
    }
    let children = o.cpu.children as f64 / clk * 1000.0 / o.ticks as f64;
    metrics.push(Metric::single(
        SECTION,
        format!("    tmux client CPU per tick, {entries} entries (not in Q3)"),
        Unit::Millis,
        children,
    ));
}

fn push_counts(metrics: &mut Vec<Metric>, o: &Observed) {
    let per_tick = o.calls as f64 / o.ticks as f64;
    let count = |name: &str, value: f64| Metric::single(SECTION, name, Unit::Count, value);
    metrics.push(count("ticks observed, 200 entries", o.ticks as f64));
    metrics.push(count("tmux processes per tick", per_tick).with_bar(Bar::exactly("Q3", 1.0)));
    metrics.push(
        count("tmux calls other than the tick's listing", o.other_calls as f64).with_bar(Bar::exactly("Q3", 0.0)),
    );
    metrics.push(
        count("registry writes (inode or mtime changed)", f64::from(u8::from(o.registry_changed)))
            .with_bar(Bar::exactly("Q3", 0.0)),
    );
    metrics.push(count("side and launch files changed", o.side_files_changed as f64).with_bar(Bar::exactly("Q3", 0.0)));
    metrics.push(
        count("lease rewrites other than a heartbeat", o.lease_rewrites as f64).with_bar(Bar::exactly("Q3", 0.0)),
    );
    metrics.push(count("leases heartbeated in the window (<= 1 per 60 s each)", o.heartbeats as f64));
}

fn push_memory(metrics: &mut Vec<Metric>, o: &Observed) {
    let kib = |name: &str, value: u64| Metric::single(SECTION, name, Unit::KiB, value as f64);
    let growth = o.memory_30.rss_kib as f64 - o.memory_5.rss_kib as f64;
    metrics.push(kib("VmRSS at tick 30", o.memory_30.rss_kib).with_bar(Bar::at_most(
        "Q5",
        Q5_RSS_KIB,
        Scope::Everywhere,
    )));
    metrics.push(Metric::single(SECTION, "VmRSS growth, tick 5 to tick 30", Unit::KiB, growth).with_bar(Bar::at_most(
        "Q5",
        Q5_GROWTH_KIB,
        Scope::Everywhere,
    )));
    metrics.push(kib("VmRSS at tick 5", o.memory_5.rss_kib));
    metrics.push(kib("VmHWM at tick 30", o.memory_30.hwm_kib));
}

/// What is compared between the two ends of the window.
#[derive(Debug)]
struct Snapshot {
    ticks: usize,
    calls: Vec<String>,
    cpu: CpuTicks,
    registry: Option<(u64, std::time::SystemTime)>,
    side: Vec<(String, Option<(u64, std::time::SystemTime)>)>,
    leases: BTreeMap<String, Option<Value>>,
}

impl LoopWorld {
    fn snapshot(&self) -> Outcome<Snapshot> {
        let state = self.fleet.sandbox.state_dir();
        Ok(Snapshot {
            ticks: self.ticks(),
            calls: self.fleet.sandbox.tmux_calls_of(self.fleet.pid),
            cpu: procfs::cpu_ticks(self.fleet.pid)?,
            registry: identity(&self.fleet.sandbox.registry()),
            side: mtimes(&state.join("session"), |n| n.ends_with(".json") || n.ends_with(".launch")),
            leases: leases(&state.join("lease")),
        })
    }

    /// a window of exactly 30 ticks, from just after one tick to just after the 30th next one; with a
    /// `companion` loop, that loop is sampled at the same instants (one round per tick of this one).
    pub(crate) fn observe(&self, companion: Option<&LoopWorld>) -> Outcome<Observed> {
        let first = self.ticks() + 1;
        self.wait_ticks(first)?;
        std::thread::sleep(SETTLE);
        let start = self.snapshot()?;
        println!(
            "{SECTION}: observing {OBSERVED} ticks of {} entries (about {} s)",
            self.fleet.names.len(),
            OBSERVED * 2
        );
        let mut per_tick_ms = Vec::new();
        let mut previous_ns = procfs::run_time_ns(self.fleet.pid);
        let mut other = companion.map(Sampler::start).transpose()?;
        let (mut memory_5, mut memory_30) = (None, None);
        for k in 1..=OBSERVED {
            self.wait_ticks(start.ticks + k)?;
            std::thread::sleep(SETTLE);
            let now_ns = procfs::run_time_ns(self.fleet.pid);
            let this_tick = match (previous_ns, now_ns) {
                (Some(before), Some(after)) => Some(after.saturating_sub(before) as f64 / 1e6),
                _ => None,
            };
            per_tick_ms.extend(this_tick);
            if let Some(other) = other.as_mut() {
                other.round(this_tick);
            }
            previous_ns = now_ns;
            match k {
                5 => memory_5 = Some(procfs::memory(self.fleet.pid)?),
                OBSERVED => memory_30 = Some(procfs::memory(self.fleet.pid)?),
                _ => {}
            }
        }
        let end = self.snapshot()?;
        let window = end.calls.get(start.calls.len()..).unwrap_or_default();
        let (rewrites, heartbeats) = compare_leases(&start.leases, &end.leases);
        // A kernel without schedstat reports zeros; an all-zero series says nothing.
        if per_tick_ms.iter().all(|ms| *ms == 0.0) {
            per_tick_ms.clear();
        }
        Ok(Observed {
            ticks: end.ticks - start.ticks,
            cpu: CpuTicks { own: end.cpu.own - start.cpu.own, children: end.cpu.children - start.cpu.children },
            per_tick_ms,
            calls: window.len(),
            other_calls: window.iter().filter(|c| !c.contains("start-server")).count(),
            registry_changed: start.registry != end.registry,
            side_files_changed: changed_files(&start.side, &end.side),
            lease_rewrites: rewrites,
            heartbeats,
            memory_5: memory_5.context(|| "no memory reading at tick 5".into())?,
            memory_30: memory_30.context(|| "no memory reading at tick 30".into())?,
            companion: other.map(Sampler::finish).transpose()?,
        })
    }

    /// lock acquisitions: `strace -f -y -e trace=flock` attached for 3 ticks after the window (attached
    /// during it, ptrace would inflate the CPU figure). Registry-lock calls must be none; lease-lock calls come
    /// from heartbeats and are reported.
    fn strace_locks(&self, bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
        let Some(strace) = &bench.tools.strace else { return Ok(()) };
        let out = self.fleet.sandbox.root().join("strace.out");
        let mut cmd = run::command(&strace.to_string_lossy());
        cmd.args(["-f", "-y", "-e", "trace=flock", "-o"]).arg(&out).args(["-p", &self.fleet.pid.to_string()]);
        println!("{}", run::echo_line(&cmd));
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context(|| "starting strace".into())?;
        let traced = Traced(Some(child));
        std::thread::sleep(SETTLE);
        let t = self.ticks();
        self.wait_ticks(t + 3)?;
        std::thread::sleep(SETTLE);
        drop(traced);
        let text = fs::read_to_string(&out).unwrap_or_default();
        let calls: Vec<&str> = text.lines().filter(|l| l.contains("flock(")).collect();
        let registry_lock = calls.iter().filter(|l| l.contains("sessions.json.lock")).count();
        let count = |name: &str, v: usize| Metric::single(SECTION, name, Unit::Count, v as f64);
        metrics.push(
            count("registry-lock flock calls in 3 ticks (strace)", registry_lock).with_bar(Bar::exactly("Q3", 0.0)),
        );
        metrics.push(count("other flock calls in 3 ticks (strace; heartbeats)", calls.len() - registry_lock));
        Ok(())
    }

    /// `Ir` of `agent-box-supervisor --once` against the same state (the tmux child is not traced). The
    /// loop is stopped first (SIGTERM leaves every pane running): a second supervisor on the same registry refuses to
    /// start (issue 11's single-instance lock), so `--once` beside the loop exits 2 and counts nothing.
    fn callgrind_once(&self, bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
        let Some(valgrind) = &bench.tools.valgrind else {
            println!("{SECTION}: --callgrind needs valgrind (Debian: sudo apt-get install valgrind); skipped");
            return Ok(());
        };
        self.fleet.stop_supervisor();
        let out_file = bench.dir.join("callgrind.supervisor-once.out");
        let env = sandbox_env(&self.fleet.sandbox);
        let mut cmd = command_in(&env, self.fleet.sandbox.home(), valgrind);
        cmd.arg("--tool=callgrind").arg(format!("--callgrind-out-file={}", out_file.display()));
        cmd.arg(bench.release.join("agent-box-supervisor")).arg("--once");
        let ir = callgrind_ir(&mut cmd, &out_file)?;
        metrics.push(Metric::single(
            SECTION,
            "supervisor --once, 200 entries, instructions (callgrind)",
            Unit::Instr,
            ir,
        ));
        Ok(())
    }
}

/// Samples a companion loop at the observed loop's instants: its scheduler run time and tick count per round.
struct Sampler<'a> {
    world: &'a LoopWorld,
    start_cpu: CpuTicks,
    start_ticks: usize,
    ticks: usize,
    run_ns: Option<u64>,
    out: Companion,
}

impl<'a> Sampler<'a> {
    fn start(world: &'a LoopWorld) -> Outcome<Self> {
        let ticks = world.ticks();
        let start_cpu = procfs::cpu_ticks(world.fleet.pid)?;
        Ok(Self {
            world,
            start_cpu,
            start_ticks: ticks,
            ticks,
            run_ns: procfs::run_time_ns(world.fleet.pid),
            out: Companion::default(),
        })
    }

    /// One round: the companion's run time per tick since the last round, and its ratio to `large_ms` (the observed
    /// loop's tick of this round). A round in which the companion did not tick gives no figure.
    fn round(&mut self, large_ms: Option<f64>) {
        let (ticks, run_ns) = (self.world.ticks(), procfs::run_time_ns(self.world.fleet.pid));
        if let (Some(before), Some(after), true) = (self.run_ns, run_ns, ticks > self.ticks) {
            let small = after.saturating_sub(before) as f64 / 1e6 / (ticks - self.ticks) as f64;
            if small > 0.0 {
                self.out.per_tick_ms.push(small);
                self.out.ratios.extend(large_ms.map(|large| large / small));
            }
        }
        (self.ticks, self.run_ns) = (ticks, run_ns);
    }

    fn finish(mut self) -> Outcome<Companion> {
        let cpu = procfs::cpu_ticks(self.world.fleet.pid)?;
        self.out.cpu = CpuTicks { own: cpu.own - self.start_cpu.own, children: cpu.children - self.start_cpu.children };
        self.out.ticks = self.world.ticks() - self.start_ticks;
        Ok(self.out)
    }
}

/// A strace we started; ended with SIGINT (strace detaches cleanly on it) and reaped when dropped.
#[derive(Debug)]
struct Traced(Option<Child>);

impl Drop for Traced {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGINT);
            }
            let _ = child.wait();
        }
    }
}

/// Each lease file's JSON (None when unreadable or torn).
fn leases(dir: &Path) -> BTreeMap<String, Option<Value>> {
    let Ok(entries) = fs::read_dir(dir) else { return BTreeMap::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let path: PathBuf = e.path();
            name.ends_with(".json").then(|| (name, fs::read(&path).ok().and_then(|b| serde_json::from_slice(&b).ok())))
        })
        .collect()
}

/// (rewrites that changed more than `lastSeenAt`, leases whose `lastSeenAt` changed). A lease that appeared or
/// went away counts as a rewrite.
fn compare_leases(before: &BTreeMap<String, Option<Value>>, after: &BTreeMap<String, Option<Value>>) -> (usize, usize) {
    let without_seen = |v: &Option<Value>| {
        let mut v = v.clone();
        if let Some(Value::Object(map)) = v.as_mut() {
            map.remove("lastSeenAt");
        }
        v
    };
    let seen = |v: &Option<Value>| v.as_ref().and_then(|v| v.get("lastSeenAt").cloned());
    let names: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let (mut rewrites, mut heartbeats) = (0, 0);
    for name in names {
        match (before.get(name), after.get(name)) {
            (Some(b), Some(a)) if without_seen(b) == without_seen(a) => heartbeats += usize::from(seen(b) != seen(a)),
            _ => rewrites += 1,
        }
    }
    (rewrites, heartbeats)
}

/// Files added, removed or changed between two listings.
fn changed_files<T: PartialEq>(before: &[(String, T)], after: &[(String, T)]) -> usize {
    let b: BTreeMap<&String, &T> = before.iter().map(|(n, v)| (n, v)).collect();
    let a: BTreeMap<&String, &T> = after.iter().map(|(n, v)| (n, v)).collect();
    let names: std::collections::BTreeSet<&&String> = b.keys().chain(a.keys()).collect();
    names.into_iter().filter(|n| b.get(*n) != a.get(*n)).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn heartbeats_are_told_from_rewrites() {
        let lease = |seen: Value, outcome: Value| Some(json!({"gen": "g", "outcome": outcome, "lastSeenAt": seen}));
        let before: BTreeMap<String, Option<Value>> = [
            ("a.json".to_owned(), lease(Value::Null, Value::Null)),
            ("b.json".to_owned(), lease(Value::Null, Value::Null)),
            ("c.json".to_owned(), lease(Value::Null, Value::Null)),
        ]
        .into();
        let after: BTreeMap<String, Option<Value>> = [
            ("a.json".to_owned(), lease(json!("2001-01-01T00:00:00Z"), Value::Null)),
            ("b.json".to_owned(), lease(Value::Null, json!("vanished"))),
            ("c.json".to_owned(), lease(Value::Null, Value::Null)),
            ("d.json".to_owned(), lease(Value::Null, Value::Null)),
        ]
        .into();
        assert_eq!(compare_leases(&before, &after), (2, 1));
    }

    #[test]
    fn counts_changed_files() {
        let before = vec![("a".to_owned(), 1), ("b".to_owned(), 2)];
        let after = vec![("a".to_owned(), 1), ("b".to_owned(), 3), ("c".to_owned(), 4)];
        assert_eq!(changed_files(&before, &after), 2);
        assert_eq!(changed_files(&before, &before), 0);
    }
}
