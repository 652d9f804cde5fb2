//! A supervisor over a fleet of fake agents, the set-up the upgrade test and the bench's `tick` and `upgrade`
//! sections share: the registry written, a lease per hook entry, the limit, the counting tmux wrapper, the
//! supervisor started and waited for until every agent runs and a whole tick passed without a `new-session`; and
//! the switch of the supervisor binary under the live panes (75-upgrades §4).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::sandbox::is_tick_call;
use crate::{Sandbox, deadline, wait::wait_until_or};

/// The sandbox, the running supervisor's pid and the names of its entries.
#[derive(Debug)]
pub struct Fleet {
    pub sandbox: Sandbox,
    pub pid: u32,
    pub names: Vec<String>,
}

impl Fleet {
    /// The counting tmux wrapper (ticks are counted from its log) and the limit `limit`: the first step, before
    /// whatever else the caller sets up on `sandbox` (a tmux unit, its environment).
    pub fn prepare(sandbox: &mut Sandbox, limit: &str) {
        sandbox.use_counting_tmux();
        sandbox.set_limit(limit);
    }

    /// Writes `registry` (whose entries are `names`) into `sandbox` (made ready by [`Fleet::prepare`]) and a
    /// lease for each of `hooks`; starts the supervisor and returns once every agent has started and a tick passed
    /// without a `new-session`.
    pub fn start(sandbox: Sandbox, registry: &str, names: Vec<String>, hooks: &[String]) -> Self {
        sandbox.write_registry(registry);
        for name in hooks {
            sandbox.create_lease(name);
        }
        let pid = sandbox.start_supervisor();
        let fleet = Self { sandbox, pid, names };
        // Far above a healthy start (200 panes take seconds), low enough that a supervisor which starts nothing
        // fails within minutes.
        let limit = deadline() * 3 + Duration::from_millis(500 * fleet.names.len() as u64);
        let n = fleet.names.len();
        wait_until_or(
            &format!("all {n} agents to run"),
            limit,
            || fleet.names.iter().all(|name| fleet.sandbox.agent(name).starts() >= 1),
            || fleet.log_tail(),
        );
        fleet.wait_quiet_tick();
        fleet
    }

    /// Ticks the running supervisor has run (its wrapper lines of the tick's first call).
    pub fn ticks(&self) -> usize {
        self.sandbox.ticks_of(self.pid)
    }

    /// Waits until the running supervisor has run `target` ticks; a bound far above 2 s per tick.
    pub fn wait_ticks(&self, target: usize) {
        let limit = deadline() * 3 / 2 + Duration::from_millis(20 * self.names.len() as u64);
        wait_until_or(
            &format!("tick {target} of the supervisor"),
            limit,
            || self.ticks() >= target,
            || self.log_tail(),
        );
    }

    /// Waits for a tick whose calls, from its first to the next tick's, hold no `new-session`: every pane is there.
    pub fn wait_quiet_tick(&self) {
        for _ in 0..30 {
            let t = self.ticks();
            self.wait_ticks(t + 2);
            let calls = self.sandbox.tmux_calls_of(self.pid);
            let ticks: Vec<usize> = calls.iter().enumerate().filter(|(_, c)| is_tick_call(c)).map(|(i, _)| i).collect();
            if let (Some(&from), Some(&to)) = (ticks.get(t), ticks.get(t + 1))
                && !calls[from..to].iter().any(|c| c.contains("new-session"))
            {
                return;
            }
        }
        panic!("the supervisor kept starting sessions for 30 ticks\n{}", self.log_tail());
    }

    /// SIGTERM to the running supervisor (the sessions stay, 75-upgrades); its exit code once it has exited.
    pub fn stop_supervisor(&self) -> Option<i32> {
        self.sandbox.signal(self.pid, Signal::SIGTERM);
        self.sandbox.wait_exit(self.pid, Duration::from_secs(30))
    }

    /// The "upgrade": the supervisor binary copied to `<root>/upgrade/`, which the sandbox runs from now on;
    /// returns that directory.
    pub fn copy_supervisor_to_upgrade_dir(&mut self) -> PathBuf {
        let dir = self.sandbox.root().join("upgrade");
        replace_in_place(&crate::bins::bin("agent-box-supervisor"), &dir.join("agent-box-supervisor"));
        self.sandbox.set_bin_dir(dir.clone());
        dir
    }

    /// Starts the supervisor again (from the sandbox's binary directory) and makes it the running one.
    pub fn restart_supervisor(&mut self) {
        self.pid = self.sandbox.start_supervisor();
    }

    /// Stops the running supervisor, starts the one of `bin_dir` over the same live panes and returns once it has
    /// run a whole tick without a `new-session` (it adopted every pane).
    pub fn switch_to(&mut self, bin_dir: &Path) {
        self.stop_supervisor();
        self.sandbox.set_bin_dir(bin_dir.to_path_buf());
        self.restart_supervisor();
        self.wait_quiet_tick();
    }

    /// The running supervisor's `new-session` calls (the wrapper log is per process).
    pub fn new_sessions(&self) -> usize {
        self.sandbox.tmux_calls_of(self.pid).iter().filter(|c| c.contains("new-session")).count()
    }

    /// The supervisor log's last ten lines: where the cause of a failed wait usually is.
    pub fn log_tail(&self) -> String {
        let log = self.sandbox.supervisor_log();
        let lines: Vec<&str> = log.lines().collect();
        format!("supervisor log tail:\n{}", lines[lines.len().saturating_sub(10)..].join("\n"))
    }
}

/// Copies `from` to `to` through a temp file and a rename in `to`'s directory, as an install replaces a program:
/// a pane that runs the path later runs the new file. `cp` writes it, so no descriptor of this process open for
/// writing can leak into a concurrent fork and make the exec fail with ETXTBSY.
pub fn replace_in_place(from: &Path, to: &Path) {
    fs::create_dir_all(to.parent().unwrap()).unwrap();
    let temp = to.with_extension("tmp");
    let status = Command::new("cp").arg(from).arg(&temp).status().unwrap();
    assert!(status.success(), "cp {} {}", from.display(), temp.display());
    fs::rename(&temp, to).unwrap();
}
