//! bench section `vanish` (bar Q11, issue 12): with the loop idle over 20 live entries, the time from `tmux
//! kill-session` of a leased, live pane to its lease reading outcome `vanished`, over 30 trials, each started at a
//! random phase of the tick (seeded by `--seed`). The loop learns of the kill from tmux's session-closed hook
//! (30-supervisor §3); without it the mark waits for the next 2 s tick, which the ratio to the tick period shows.

use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::Value;

use super::Bench;
use super::fail::{Context, Failure, Outcome, fail};
use super::report::{Bar, Metric, Scope, Unit};
use super::stats::Summary;
use super::world::{Kind, LoopWorld, entry, wait_for};

const SECTION: &str = "vanish";
const TRIALS: usize = 30;
const IDLE_ENTRIES: usize = 20;
/// Q11: median 100 ms, p95 250 ms.
const Q11_MEDIAN_MS: f64 = 100.0;
const Q11_P95_MS: f64 = 250.0;
/// The tick period: a median well under it shows that the kill woke the loop, not the timer.
const PERIOD_MS: f64 = 2000.0;
/// A liveness bound per step, far above any plausible mark (the timer alone marks within 2 s).
const STEP_LIMIT: Duration = Duration::from_secs(20);

/// The vanish section.
pub fn run(bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let world = LoopWorld::start(SECTION, IDLE_ENTRIES, 0, "64")?;
    let hooks = world.fleet.sandbox.tmux_calls_of(world.fleet.pid).iter().filter(|c| c.contains("set-hook")).count();
    metrics.push(
        Metric::single(
            SECTION,
            "session-closed hook installed by the loop (set-hook calls)",
            Unit::Count,
            hooks as f64,
        )
        .with_bar(Bar::exactly("Q11", 1.0)),
    );
    let leases = world.fleet.sandbox.paths().lease_dir();
    registry::ensure_private_dir(&leases).context(|| format!("creating {}", leases.display()))?;
    let watch = LeaseWatch::new(&leases)?;
    let mut rng = StdRng::seed_from_u64(bench.seed);
    println!(
        "{SECTION}: {TRIALS} trials: add a leased hook session (untimed), wait for a tick, then a random 0-{PERIOD_MS} ms, \
         then time kill-session until lease/<name>.json reads vanished; rm afterwards (untimed); seed {}",
        bench.seed
    );
    let mut samples = Vec::with_capacity(TRIALS);
    for trial in 0..TRIALS {
        let name = format!("hook-vanish-{trial:02}");
        let phase = Duration::from_millis(rng.random_range(0..PERIOD_MS as u64));
        samples.push(self::trial(&world, &watch, &name, phase).map_err(|e| world.explain(e))?);
    }
    push_metrics(metrics, samples);
    Ok(())
}

fn push_metrics(metrics: &mut Vec<Metric>, samples: Vec<f64>) {
    let summary = Summary::of(&samples);
    let (median, p95, max) = summary.map_or((f64::NAN, f64::NAN, f64::NAN), |s| (s.median, s.p95, s.max));
    metrics.push(
        Metric::sampled(SECTION, "kill-session of a leased pane -> lease vanished", Unit::Millis, samples)
            .with_bar(Bar::at_most("Q11", Q11_MEDIAN_MS, Scope::ReferenceOnly))
            .with_ratio(median / PERIOD_MS, "2 s tick period"),
    );
    metrics.push(Metric::single(SECTION, "    p95 of the trials", Unit::Millis, p95).with_bar(Bar::at_most(
        "Q11",
        Q11_P95_MS,
        Scope::ReferenceOnly,
    )));
    metrics.push(Metric::single(SECTION, "    max of the trials", Unit::Millis, max));
}

/// One trial; returns the time from the kill to the lease reading `vanished`, in ms.
fn trial(world: &LoopWorld, watch: &LeaseWatch, name: &str, phase: Duration) -> Outcome<f64> {
    let sandbox = &world.fleet.sandbox;
    let gen_ = sandbox.create_lease(name);
    // As webhook-spawn writes it: the entry's life is its lease's gen (issue 17), so the pane is bound to the lease.
    let mut hook = entry(name, Kind::Hook);
    hook.insert(registry::LIFE_KEY.into(), Value::from(gen_.as_str()));
    sandbox.add_entry(name, Value::Object(hook));
    let side = sandbox.side_file(name);
    // The pane runs for this lease once the side file names its gen (SUP-8.2): a kill now leaves a lease to mark.
    wait_for(&format!("{name} to start for its lease"), STEP_LIMIT, Duration::from_millis(10), || {
        sandbox.is_live(name) && std::fs::read_to_string(&side).is_ok_and(|text| text.contains(&gen_))
    })?;
    let ticks = world.ticks();
    world.wait_ticks(ticks + 1)?;
    std::thread::sleep(phase);
    watch.drain();
    let lease = sandbox.lease_path(name);
    let t0 = Instant::now();
    sandbox.kill_pane(name);
    let t1 = watch.wait_until(&lease, t0 + STEP_LIMIT, is_vanished)?;
    let sample = (t1 - t0).as_secs_f64() * 1000.0;
    sandbox.rm(name);
    wait_for(&format!("{name} to be gone"), STEP_LIMIT, Duration::from_millis(20), || !sandbox.is_live(name))?;
    Ok(sample)
}

/// The lease file's outcome reads `vanished`.
fn is_vanished(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Value>(bytes).is_ok_and(|lease| lease["outcome"] == "vanished")
}

/// inotify on the lease directory: lease writers replace a lease by rename, so an `IN_MOVED_TO` for its name is the
/// moment a new version appears.
#[derive(Debug)]
struct LeaseWatch {
    inotify: Inotify,
}

impl LeaseWatch {
    fn new(dir: &Path) -> Outcome<Self> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .map_err(|e| Failure(format!("inotify: {e}")))?;
        inotify
            .add_watch(dir, AddWatchFlags::IN_MOVED_TO | AddWatchFlags::IN_CLOSE_WRITE)
            .map_err(|e| Failure(format!("watching {}: {e}", dir.display())))?;
        Ok(Self { inotify })
    }

    fn drain(&self) {
        while self.inotify.read_events().is_ok_and(|events| !events.is_empty()) {}
    }

    /// The instant `file` was first seen satisfying `done`: checked now and after every event in its directory.
    fn wait_until(&self, file: &Path, deadline: Instant, done: impl Fn(&[u8]) -> bool) -> Outcome<Instant> {
        loop {
            if std::fs::read(file).is_ok_and(|bytes| done(&bytes)) {
                return Ok(Instant::now());
            }
            super::interrupt::check()?;
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return fail(format!("{} did not read vanished within {}s", file.display(), STEP_LIMIT.as_secs()));
            };
            let wait = u16::try_from(left.as_millis()).unwrap_or(u16::MAX).min(100);
            let mut fds = [PollFd::new(self.inotify.as_fd(), PollFlags::POLLIN)];
            if poll(&mut fds, PollTimeout::from(wait)).is_ok_and(|n| n > 0) {
                self.drain();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_reads_vanished_only_with_that_outcome() {
        assert!(is_vanished(br#"{"gen":"g","outcome":"vanished"}"#));
        assert!(!is_vanished(br#"{"gen":"g","outcome":null}"#));
        assert!(!is_vanished(br#"{"gen":"g","outcome":"died:3"}"#));
        assert!(!is_vanished(b"not json"));
    }

    #[test]
    fn the_watch_sees_a_renamed_lease() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hook-x.json");
        std::fs::write(&file, br#"{"outcome":null}"#).unwrap();
        let watch = LeaseWatch::new(dir.path()).unwrap();
        let path = dir.path().to_path_buf();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            std::fs::write(path.join("hook-x.json.tmp"), br#"{"outcome":"vanished"}"#).unwrap();
            std::fs::rename(path.join("hook-x.json.tmp"), path.join("hook-x.json")).unwrap();
        });
        let start = Instant::now();
        let seen = watch.wait_until(&file, start + Duration::from_secs(5), is_vanished).unwrap();
        writer.join().unwrap();
        assert!(seen - start >= Duration::from_millis(40));
    }
}
