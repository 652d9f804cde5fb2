//! bench section `add` (spec 90 §5, bar Q4): with the loop idle over 20 live entries, the time from a locked
//! registry add to the new pane's agent running, over 30 trials. The operator CLI `agent-box-session` does not
//! exist yet; the add is the same locked write it will do (`Sandbox::add_entry`), made from this process.

use std::os::fd::AsFd;
use std::path::Path;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use serde_json::Value;

use super::Bench;
use super::fail::{Outcome, fail};
use super::report::{Bar, Metric, Scope, Unit};
use super::world::{Kind, LoopWorld, entry, wait_for};

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
    let armed = !world.sandbox.supervisor_log().contains("cannot watch");
    metrics.push(
        Metric::single(SECTION, "registry watch armed at start (no L12)", Unit::Count, f64::from(u8::from(armed)))
            .with_bar(Bar::exactly("Q4", 1.0)),
    );
    let agents = world.sandbox.root().join("agents");
    let watch = Watch::new(&agents);
    if watch.inotify.is_none() {
        println!("{SECTION}: inotify unavailable; falling back to a 1 ms stat poll");
    }
    println!(
        "{SECTION}: {TRIALS} trials: locked add of bench-<i> (stands in for agent-box-session add), until agents/bench-<i>.1.argv appears"
    );
    let (mut total, mut add_only) = (Vec::new(), Vec::new());
    for i in 0..TRIALS {
        let (t, a) = trial(&world, &watch, &agents, &format!("bench-{i}"))?;
        total.push(t);
        add_only.push(a);
    }
    let median = super::stats::Summary::of(&total).map_or(f64::NAN, |s| s.median);
    let max = total.iter().copied().fold(0.0, f64::max);
    metrics.push(
        Metric::sampled(SECTION, format!("add -> agent running, loop idle over {IDLE_ENTRIES}"), Unit::Millis, total)
            .with_bar(Bar::at_most("Q4", Q4_MS, Scope::ReferenceOnly))
            .with_ratio(median / PERIOD_MS, "2 s tick period"),
    );
    metrics.push(Metric::single(SECTION, "    max of the trials", Unit::Millis, max));
    metrics.push(Metric::sampled(SECTION, "    the locked add alone", Unit::Millis, add_only));
    Ok(())
}

/// One trial: (add → agent start file, add alone), both in ms; then, untimed, `rm` and a settled loop.
fn trial(world: &LoopWorld, watch: &Watch, agents: &Path, name: &str) -> Outcome<(f64, f64)> {
    let file = format!("{name}.1.argv");
    watch.drain();
    let t0 = Instant::now();
    world.sandbox.add_entry(name, Value::Object(entry(name, Kind::Plain)));
    let added = t0.elapsed();
    let Some(t1) = watch.wait_for(agents, &file, t0 + TRIAL_LIMIT) else {
        return fail(format!("{file} did not appear within {}s", TRIAL_LIMIT.as_secs()));
    };
    let sample = (ms(t1 - t0), ms(added));
    let before = world.ticks();
    world.sandbox.rm(name);
    wait_for(&format!("{name} to be gone"), TRIAL_LIMIT, Duration::from_millis(20), || !world.sandbox.is_live(name))?;
    // rm's registry write wakes the loop; let that tick pass so the next add meets an idle loop.
    world.wait_ticks(before + 1)?;
    std::thread::sleep(Duration::from_millis(200));
    Ok(sample)
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
