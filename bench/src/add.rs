//! bench section `add` (spec 90 §5, bar Q4): with the loop idle over 20 live entries, the time from running
//! `agent-box-session add bench-<i> --harness tool -- --as bench-<i>` (the release binary, in the loop's sandbox
//! environment) to the new pane's agent running, over 30 trials; also the add command's own run time.

use std::os::fd::AsFd;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

use super::Bench;
use super::fail::{Context, Failure, Outcome, fail};
use super::report::{Bar, Metric, Scope, Unit};
use super::world::{LoopWorld, echo_product, wait_for};

const SECTION: &str = "add";
const TRIALS: usize = 30;
const IDLE_ENTRIES: usize = 20;
/// Q4: 150 ms median.
const Q4_MS: f64 = 150.0;
/// The tick period: the ratio median / period shows the early wake, not the timer, started the pane.
const PERIOD_MS: f64 = 2000.0;
/// A liveness bound per trial, far above any plausible start.
const TRIAL_LIMIT: Duration = Duration::from_secs(20);

/// The add section.
pub fn run(_bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let world = LoopWorld::start(SECTION, IDLE_ENTRIES, 0, "64")?;
    // the start line shows the watch armed, i.e. no L12 line.
    let armed = !world.fleet.sandbox.supervisor_log().contains("cannot watch");
    metrics.push(
        Metric::single(SECTION, "registry watch armed at start (no L12)", Unit::Count, f64::from(u8::from(armed)))
            .with_bar(Bar::exactly("Q4", 1.0)),
    );
    let agents = world.fleet.sandbox.root().join("agents");
    let watch = Watch::new(&agents);
    if watch.inotify.is_none() {
        println!("{SECTION}: inotify unavailable; falling back to a 1 ms stat poll");
    }
    println!(
        "{SECTION}: {TRIALS} trials of the commands below (bench-0 … bench-{}), timed until agents/bench-<i>.1.argv appears; rm untimed:",
        TRIALS - 1
    );
    println!("{}", echo_product(&add_command(&world, "bench-0")));
    println!("{}", echo_product(&rm_command(&world, "bench-0")));
    let (mut total, mut add_only) = (Vec::new(), Vec::new());
    for i in 0..TRIALS {
        let (t, a) = trial(&world, &watch, &agents, &format!("bench-{i}"))?;
        total.push(t);
        add_only.push(a);
    }
    push_metrics(metrics, total, add_only);
    env_store_cost(&world, &watch, &agents, metrics)
}

/// Rounds of the env-store comparison (issue 20); each round times one add of either store, order alternating.
const ENV_ROUNDS: usize = 20;
/// Keys of the larger store.
const ENV_KEYS: usize = 50;
/// The two header lines the old CLI and the settings daemon write.
const ENV_HEADER: &str = "# Managed by agent-box settings page. KEY=value, one per line.\n\
# Do not add secrets by hand here unless you know what you are doing.\n";

/// Issue 20: every pane's launch script reads the env store when it starts, so its size is paid per spawn. Rounds
/// of add → agent running with an empty store and with one of 50 keys, in alternating order within each round
/// (the same loop, the same idle entries); the per-round ratio says what the 50 keys cost.
fn env_store_cost(world: &LoopWorld, watch: &Watch, agents: &Path, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let store = world.fleet.sandbox.home().join(".config/agent-box/env");
    let full: String = (0..ENV_KEYS).fold(ENV_HEADER.to_owned(), |mut text, k| {
        text.push_str(&format!("BENCH_KEY_{k}=value of key {k} with = and 'quotes'\n"));
        text
    });
    println!(
        "{SECTION}: {ENV_ROUNDS} rounds of add with an empty env store and one of {ENV_KEYS} keys, order alternating:"
    );
    let (mut empty, mut fifty, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ENV_ROUNDS {
        let mut pair = [0.0_f64; 2];
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            let text = if which == 0 { ENV_HEADER } else { full.as_str() };
            std::fs::write(&store, text).context(|| format!("writing {}", store.display()))?;
            pair[which] = trial(world, watch, agents, &format!("env-{which}-{round}"))?.0;
        }
        empty.push(pair[0]);
        fifty.push(pair[1]);
        ratios.push(pair[1] / pair[0]);
    }
    let _ = std::fs::remove_file(&store);
    let ratio = super::stats::Summary::of(&ratios).map_or(f64::NAN, |s| s.median);
    metrics.push(
        Metric::sampled(SECTION, format!("add -> agent running, env store of {ENV_KEYS} keys"), Unit::Millis, fifty)
            .with_ratio(ratio, "empty store, same rounds (median of per-round ratios)"),
    );
    metrics.push(Metric::sampled(
        SECTION,
        "    add -> agent running, empty env store, same rounds",
        Unit::Millis,
        empty,
    ));
    Ok(())
}

fn push_metrics(metrics: &mut Vec<Metric>, total: Vec<f64>, add_only: Vec<f64>) {
    let median = super::stats::Summary::of(&total).map_or(f64::NAN, |s| s.median);
    let max = total.iter().copied().fold(0.0, f64::max);
    metrics.push(
        Metric::sampled(SECTION, format!("add -> agent running, loop idle over {IDLE_ENTRIES}"), Unit::Millis, total)
            .with_bar(Bar::at_most("Q4", Q4_MS, Scope::ReferenceOnly))
            .with_ratio(median / PERIOD_MS, "2 s tick period"),
    );
    metrics.push(Metric::single(SECTION, "    max of the trials", Unit::Millis, max));
    metrics.push(Metric::sampled(SECTION, "    agent-box-session add alone (its exit - t0)", Unit::Millis, add_only));
}

/// `agent-box-session add NAME --harness tool -- --as NAME`: the fake agent names itself from `--as`.
fn add_command(world: &LoopWorld, name: &str) -> Command {
    let mut cmd = world.fleet.sandbox.cmd("agent-box-session");
    cmd.args(["add", name, "--harness", "tool", "--", "--as", name]);
    cmd.stdin(Stdio::null());
    cmd
}

fn rm_command(world: &LoopWorld, name: &str) -> Command {
    let mut cmd = world.fleet.sandbox.cmd("agent-box-session");
    cmd.args(["rm", name]).stdin(Stdio::null());
    cmd
}

/// One trial: (add → agent start file, add alone), both in ms; then, untimed, `rm` and a settled loop.
fn trial(world: &LoopWorld, watch: &Watch, agents: &Path, name: &str) -> Outcome<(f64, f64)> {
    let file = format!("{name}.1.argv");
    let cmd = add_command(world, name);
    watch.drain();
    let t0 = Instant::now();
    let add = run_in_background(cmd);
    let seen = watch.wait_for(agents, &file, t0 + TRIAL_LIMIT);
    let exited = finished(add, "agent-box-session add")?;
    let Some(t1) = seen else {
        return fail(format!("{file} did not appear within {}s", TRIAL_LIMIT.as_secs()));
    };
    let sample = (ms(t1 - t0), ms(exited - t0));
    remove(world, name)?;
    Ok(sample)
}

/// Runs `cmd` on a thread that notes the instant it exited, so the main thread can watch for the pane
/// meanwhile: the agent may start before or after the add command is seen to end.
fn run_in_background(mut cmd: Command) -> JoinHandle<(Instant, std::io::Result<Output>)> {
    std::thread::spawn(move || {
        let out = cmd.output();
        (Instant::now(), out)
    })
}

/// The exit instant of a background run, which must have succeeded.
fn finished(run: JoinHandle<(Instant, std::io::Result<Output>)>, what: &str) -> Outcome<Instant> {
    let (at, out) = run.join().map_err(|_| Failure(format!("the thread running {what} panicked")))?;
    succeeded(&out.context(|| format!("running {what}"))?, what)?;
    Ok(at)
}

fn succeeded(out: &Output, what: &str) -> Outcome<()> {
    if out.status.success() {
        return Ok(());
    }
    fail(format!("{what} exited with {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()))
}

/// Untimed: `agent-box-session rm NAME`, its pane gone, and the tick its registry write woke passed, so the next
/// add meets an idle loop.
fn remove(world: &LoopWorld, name: &str) -> Outcome<()> {
    let before = world.ticks();
    let out = rm_command(world, name).output().context(|| "running agent-box-session rm".into())?;
    succeeded(&out, "agent-box-session rm")?;
    wait_for(&format!("{name} to be gone"), TRIAL_LIMIT, Duration::from_millis(20), || {
        !world.fleet.sandbox.is_live(name)
    })?;
    world.wait_ticks(before + 1)?;
    std::thread::sleep(Duration::from_millis(200));
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Watching the agents' record directory: inotify when it can be armed, else a 1 ms stat poll.
#[derive(Debug)]
struct Watch {
    inotify: Option<Inotify>,
}

impl Watch {
    fn new(dir: &Path) -> Self {
        let flags = AddWatchFlags::IN_MOVED_TO | AddWatchFlags::IN_CREATE | AddWatchFlags::IN_CLOSE_WRITE;
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .ok()
            .filter(|i| i.add_watch(dir, flags).is_ok());
        Self { inotify }
    }

    /// Drops queued events of earlier trials.
    fn drain(&self) {
        if let Some(inotify) = &self.inotify {
            while inotify.read_events().is_ok_and(|events| !events.is_empty()) {}
        }
    }

    /// The instant `dir/file` was seen, or None at `deadline`. The fake agent renames the argv record into
    /// place, so an `IN_MOVED_TO` for the name is the moment it appears.
    fn wait_for(&self, dir: &Path, file: &str, deadline: Instant) -> Option<Instant> {
        let path = dir.join(file);
        loop {
            if path.exists() {
                return Some(Instant::now());
            }
            if super::interrupt::interrupted() {
                return None;
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            match &self.inotify {
                Some(inotify) => {
                    let wait = u16::try_from(left.as_millis()).unwrap_or(u16::MAX).min(1000);
                    let mut fds = [PollFd::new(inotify.as_fd(), PollFlags::POLLIN)];
                    if poll(&mut fds, PollTimeout::from(wait)).is_ok_and(|n| n > 0) {
                        let now = Instant::now();
                        let events = inotify.read_events().unwrap_or_default();
                        if events.iter().any(|e| e.name.as_deref().is_some_and(|n| n == file)) {
                            return Some(now);
                        }
                    }
                }
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_sees_a_renamed_file() {
        let dir = tempfile::tempdir().unwrap();
        let watch = Watch::new(dir.path());
        assert!(watch.inotify.is_some());
        let path = dir.path().to_path_buf();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            std::fs::write(path.join("x.tmp"), b"a").unwrap();
            std::fs::rename(path.join("x.tmp"), path.join("x.1.argv")).unwrap();
        });
        let start = Instant::now();
        let seen = watch.wait_for(dir.path(), "x.1.argv", start + Duration::from_secs(5));
        writer.join().unwrap();
        assert!(seen.is_some_and(|t| t - start >= Duration::from_millis(40)));
        assert!(watch.wait_for(dir.path(), "never", Instant::now() + Duration::from_millis(30)).is_none());
    }
}
