//! bench section `crash` (spec 90 §7, bar Q7): writers killed with SIGKILL at random points, seeded and
//! replayable. After every kill the registry must read Valid, the counter must hold every committed update and at
//! most one more, and no lock may stay held; after the loop one `agent-box-supervisor --once` must leave no temp
//! file. Writers available today: `rmw` and the baked `agent-box-mark-stopped`; `agent-box-session` and
//! `agent-box-webhook-spawn` do not exist yet.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_box_tests::Sandbox;
use lease::{HookLog, Lease, LeaseDir};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use registry::{Document, FileLock, SessionName};
use serde_json::Value;

use super::Bench;
use super::fail::{Context, Failure, Outcome, fail};
use super::report::{Bar, Metric, Unit};
use super::world::{BenchRoot, Kind, command_in, output, print_sandbox_env, registry_bytes, sandbox_env};

const SECTION: &str = "crash";
/// Names the epilogue writer works on: plain entries and leased hook entries.
const PLAIN: [&str; 2] = ["main", "crash-plain"];
const HOOKS: [&str; 2] = ["hook-crash-0001", "hook-crash-0002"];
/// The key `rmw` increments.
const COUNTER: &str = "crash-counter";
/// Updates per `rmw` run: short enough to be killed at every stage, long enough to hold several commits.
const RMW_COUNT: &str = "4";
/// Complete runs per writer to find its median duration.
const MEDIAN_RUNS: usize = 15;
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// The writers of that exist today.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writer {
    Rmw,
    Epilogue,
}

/// Counts of what the checks found.
#[derive(Debug, Default)]
struct Tally {
    killed: usize,
    invalid_registry: usize,
    counter_off: usize,
    held_locks: usize,
    torn_leases: usize,
    bad_log_lines: usize,
}

/// The world the writers run against and what the checks remember between iterations.
#[derive(Debug)]
struct Crash {
    root: BenchRoot,
    baked: PathBuf,
    rmw: PathBuf,
    env: Vec<(OsString, OsString)>,
    home: PathBuf,
    rng: StdRng,
    /// The counter value every check so far agrees on.
    counter: u64,
    /// Unterminated last hook-log lines seen so far: once the next append starts a fresh line, such a torn line
    /// stays unparseable in the middle of the file, and that is allowed.
    torn_tails: HashSet<String>,
    reported_bad: HashSet<String>,
    tally: Tally,
}

/// The crash section.
pub fn run(bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let mut sandbox = Sandbox::new();
    let mut crash = Crash::new(bench, &sandbox)?;
    println!("{SECTION}: seed {} (replay: cargo xtask bench --seed {} crash)", bench.seed, bench.seed);
    println!(
        "{SECTION}: writers: rmw and the baked agent-box-mark-stopped; agent-box-session and agent-box-webhook-spawn do not exist yet"
    );
    let rmw_median = crash.median(Writer::Rmw)?;
    let epilogue_median = crash.median(Writer::Epilogue)?;
    println!(
        "{SECTION}: median complete run: rmw ({RMW_COUNT} updates) {rmw_median:.3} ms, mark-stopped {epilogue_median:.3} ms"
    );
    let iterations = bench.crash_iterations;
    for i in 0..iterations {
        super::interrupt::check()?;
        let writer = if crash.rng.random_bool(0.5) { Writer::Rmw } else { Writer::Epilogue };
        let median = if writer == Writer::Rmw { rmw_median } else { epilogue_median };
        let delay = Duration::from_secs_f64(crash.rng.random_range(0.0..=1.5 * median) / 1000.0);
        crash.iteration(writer, Some(delay))?;
        if (i + 1) % 250 == 0 {
            println!("{SECTION}: {} iterations, {} writers killed mid-run", i + 1, crash.tally.killed);
        }
    }
    let before = temp_files(&crash.root).len();
    crash.sweep(&mut sandbox)?;
    let left = temp_files(&crash.root);
    for path in &left {
        println!("{SECTION}: left after the sweep: {}", path.display());
    }
    push_metrics(metrics, &crash.tally, bench.seed, iterations, (rmw_median, epilogue_median), (before, left.len()));
    crash.root.reset()
}

fn push_metrics(
    metrics: &mut Vec<Metric>,
    t: &Tally,
    seed: u64,
    iterations: usize,
    medians: (f64, f64),
    temps: (usize, usize),
) {
    let count = |name: String, v: usize| Metric::single(SECTION, name, Unit::Count, v as f64);
    let q7 = |name: &str, v: usize| count(name.to_owned(), v).with_bar(Bar::exactly("Q7", 0.0));
    metrics.push(count(format!("iterations, seed {seed}"), iterations));
    metrics.push(count("writers killed before they finished".into(), t.killed));
    metrics.push(Metric::single(
        SECTION,
        format!("    rmw x {RMW_COUNT}, median complete run"),
        Unit::Millis,
        medians.0,
    ));
    metrics.push(Metric::single(SECTION, "    mark-stopped, median complete run", Unit::Millis, medians.1));
    metrics.push(q7("registry not Valid after a kill", t.invalid_registry));
    metrics.push(q7("counter outside [last committed, +1]", t.counter_off));
    metrics.push(q7("lock still held after the writer died", t.held_locks));
    metrics.push(q7("torn lease files", t.torn_leases));
    metrics.push(q7("hook-log lines unparseable (not a torn tail)", t.bad_log_lines));
    metrics.push(count("temp files left by killed writers".into(), temps.0));
    metrics.push(q7("temp files after supervisor --once", temps.1));
}

impl Crash {
    fn new(bench: &Bench, sandbox: &Sandbox) -> Outcome<Self> {
        let root = bench.root.clone();
        root.reset()?;
        let mut names: Vec<(String, Kind)> = PLAIN.iter().map(|n| ((*n).to_owned(), Kind::Plain)).collect();
        names.extend(HOOKS.iter().map(|n| ((*n).to_owned(), Kind::Hook)));
        fs::write(&root.registry, registry_bytes(&names)?).context(|| "writing the registry".into())?;
        let env = sandbox_env(sandbox);
        print_sandbox_env(SECTION, &env);
        Ok(Self {
            baked: bench.baked()?.to_path_buf(),
            rmw: bench.release.join("examples/rmw"),
            env,
            home: sandbox.home().to_path_buf(),
            rng: StdRng::seed_from_u64(bench.seed),
            counter: 0,
            torn_tails: HashSet::new(),
            reported_bad: HashSet::new(),
            tally: Tally::default(),
            root,
        })
    }

    /// The median wall time of complete runs of `writer`, in ms (each run checked like any other).
    fn median(&mut self, writer: Writer) -> Outcome<f64> {
        let mut times = Vec::with_capacity(MEDIAN_RUNS);
        for _ in 0..MEDIAN_RUNS {
            super::interrupt::check()?;
            times.push(self.iteration(writer, None)?);
        }
        super::stats::Summary::of(&times).map(|s| s.median).context(|| "no median".into())
    }

    /// Prepares, starts `writer`, kills it after `delay` (None: lets it finish), and runs the checks of.
    /// Returns the run's wall time in ms.
    fn iteration(&mut self, writer: Writer, delay: Option<Duration>) -> Outcome<f64> {
        let mut cmd = match writer {
            Writer::Rmw => self.rmw_command(),
            Writer::Epilogue => self.epilogue_command()?,
        };
        let started = Instant::now();
        let mut child = cmd.spawn().context(|| format!("starting {}", cmd.get_program().to_string_lossy()))?;
        if let Some(delay) = delay {
            std::thread::sleep(delay);
            kill_child(&child);
        }
        let status = child.wait().context(|| "waiting for a writer".into())?;
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        if status.code().is_none() {
            self.tally.killed += 1;
        } else if !status.success() {
            return fail(format!("{} exited with {status}", cmd.get_program().to_string_lossy()));
        }
        let committed = if writer == Writer::Rmw { last_committed(&mut child) } else { None };
        self.check(committed);
        Ok(elapsed)
    }

    fn rmw_command(&self) -> Command {
        let mut cmd = command_in(&self.env, &self.home, &self.rmw);
        cmd.arg(&self.root.registry).args([COUNTER, RMW_COUNT]).stdout(Stdio::piped());
        cmd
    }

    /// `mark-stopped NAME STATUS [GEN]` on a pool name made ready for it, untimed: the entry neither stopped nor
    /// died (so the registry write happens), and for a hook name a fresh lease whose gen the pane would carry.
    fn epilogue_command(&mut self) -> Outcome<Command> {
        let hook = self.rng.random_bool(0.5);
        let pool: &[&str] = if hook { &HOOKS } else { &PLAIN };
        let name = pool[self.rng.random_range(0..pool.len())];
        let status: u32 = if self.rng.random_bool(0.5) { 0 } else { self.rng.random_range(1..=255) };
        self.revive(name)?;
        let mut cmd = command_in(&self.env, &self.home, &self.baked);
        cmd.args([name.to_owned(), status.to_string()]);
        if hook {
            let key = SessionName::parse(name).context(|| format!("pool name {name}"))?;
            let log = HookLog::new(self.root.hook_log());
            let gen_ = LeaseDir::new(self.root.lease_dir())
                .create(&key, "github:acme/widgets", Some("7"), Some(&log))
                .context(|| format!("creating the lease of {name}"))?;
            cmd.arg(gen_.to_string());
        }
        Ok(cmd)
    }

    /// Clears `stopped` and `died` of `name` under the lock, as `restart` does.
    fn revive(&self, name: &str) -> Outcome<()> {
        let key = SessionName::parse(name).context(|| format!("pool name {name}"))?;
        let guard = registry::lock_ignoring_inherited(&self.root.registry, LOCK_WAIT)
            .context(|| "locking the registry".into())?;
        registry::edit(&guard, |doc| {
            let changed = doc.entry_mut(&key).is_some_and(|mut e| e.remove_key("stopped") | e.remove_key("died"));
            Ok(((), changed))
        })
        .context(|| format!("reviving {name}"))
    }

    /// after every run: registry Valid, counter within [committed, committed + 1], no lock held, leases
    /// Valid or absent, hook-log lines parse except a torn last one.
    fn check(&mut self, committed: Option<u64>) {
        let doc = fs::read(&self.root.registry).ok().and_then(|b| Document::parse(&b).ok());
        let Some(doc) = doc else {
            self.tally.invalid_registry += 1;
            return;
        };
        let value = doc.entry(COUNTER).and_then(|e| e.get("count")).and_then(Value::as_u64).unwrap_or(0);
        let floor = committed.unwrap_or(0).max(self.counter);
        if value < floor || value > floor + 1 {
            self.tally.counter_off += 1;
        }
        self.counter = value.max(floor);
        self.tally.held_locks += self.lock_files().iter().filter(|l| l.exists() && !lock_is_free(l)).count();
        self.tally.torn_leases += torn_leases(&self.root.lease_dir());
        self.check_hook_log();
    }

    fn lock_files(&self) -> [PathBuf; 4] {
        let with_lock = |p: PathBuf| {
            let mut os = p.into_os_string();
            os.push(".lock");
            PathBuf::from(os)
        };
        [
            with_lock(self.root.registry.clone()),
            self.root.lease_dir().join(".lock"),
            with_lock(self.root.hook_log()),
            with_lock(self.root.refusal_record()),
        ]
    }

    fn check_hook_log(&mut self) {
        let text = fs::read(self.root.hook_log()).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        let (complete, tail) = match text.rfind('\n') {
            Some(end) => (&text[..end], &text[end + 1..]),
            None => ("", text.as_str()),
        };
        for line in complete.lines().filter(|l| !l.is_empty()) {
            let parses = serde_json::from_str::<Value>(line).is_ok();
            if !parses && !self.torn_tails.contains(line) && self.reported_bad.insert(line.to_owned()) {
                self.tally.bad_log_lines += 1;
            }
        }
        if !tail.is_empty() {
            self.torn_tails.insert(tail.to_owned());
        }
    }

    /// every entry parked (so `--once` starts no agent), then one `agent-box-supervisor --once` with this
    /// root's HOME, whose tick sweeps the temp leftovers.
    fn sweep(&self, sandbox: &mut Sandbox) -> Outcome<()> {
        let guard = registry::lock_ignoring_inherited(&self.root.registry, LOCK_WAIT)
            .context(|| "locking the registry".into())?;
        registry::edit(&guard, |doc| {
            let names: Vec<String> = doc.names().map(str::to_owned).collect();
            for name in names.iter().filter_map(|n| SessionName::parse(n).ok()) {
                if let Some(mut e) = doc.entry_mut(&name) {
                    e.set("stopped", Value::Bool(true));
                }
            }
            Ok(((), true))
        })
        .context(|| "parking the pool".into())?;
        drop(guard);
        // The registry and the state directory the epilogue was baked for are under this root's HOME.
        sandbox.set_env("HOME", &self.root.home);
        println!("{SECTION}: every entry parked; one tick with HOME={}", self.root.home.display());
        let mut cmd = sandbox.cmd("agent-box-supervisor");
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

fn kill_child(child: &Child) {
    // Not yet waited for, so the pid cannot have been reused: at worst it names our own zombie.
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// The last `committed <n>` an rmw run printed before it ended.
fn last_committed(child: &mut Child) -> Option<u64> {
    let mut text = String::new();
    child.stdout.take()?.read_to_string(&mut text).ok()?;
    text.lines().rev().find_map(|l| l.strip_prefix("committed ")?.parse().ok())
}

/// A lock dies with its process: a fresh non-blocking flock must succeed.
fn lock_is_free(lock: &Path) -> bool {
    FileLock::acquire(lock, Duration::ZERO, false).is_ok()
}

/// Lease files present but not a Valid lease.
fn torn_leases(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".json")))
        .filter(|e| fs::read(e.path()).map_or(true, |b| Lease::parse(&b).is_none()))
        .count()
}

/// Every `<file>.tmp-<8 [a-z0-9]>` next to the registry, the hook log and the refusal record, and in the lease
/// directory.
fn temp_files(root: &BenchRoot) -> Vec<PathBuf> {
    let mut found = registry::atomic::temp_leftovers_of(&root.registry);
    found.extend(registry::atomic::temp_leftovers_of(&root.hook_log()));
    found.extend(registry::atomic::temp_leftovers_of(&root.refusal_record()));
    found.extend(registry::atomic::temp_leftovers_in(&root.lease_dir()));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_held_elsewhere_is_not_free() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("x.lock");
        let held = FileLock::acquire(&lock, Duration::ZERO, false).unwrap();
        assert!(!lock_is_free(&lock));
        drop(held);
        assert!(lock_is_free(&lock));
    }

    #[test]
    fn torn_and_valid_leases() {
        let dir = tempfile::tempdir().unwrap();
        let leases = LeaseDir::new(dir.path().to_path_buf());
        leases.create(&SessionName::parse("hook-a").unwrap(), "t", None, None).unwrap();
        assert_eq!(torn_leases(dir.path()), 0);
        fs::write(dir.path().join("hook-b.json"), b"{\"gen\":").unwrap();
        assert_eq!(torn_leases(dir.path()), 1);
    }

    #[test]
    fn temp_files_are_found_where_the_sweep_looks() {
        let dir = tempfile::tempdir().unwrap();
        let root = BenchRoot::at(dir.path());
        root.reset().unwrap();
        fs::create_dir_all(root.lease_dir()).unwrap();
        fs::write(registry::atomic::temp_path_for(&root.registry), b"").unwrap();
        fs::write(root.lease_dir().join("hook-a.json.tmp-abcd1234"), b"").unwrap();
        fs::write(root.state.join("other.tmp-abcd1234"), b"").unwrap();
        assert_eq!(temp_files(&root).len(), 2);
    }
}
