//! bench section `upgrade` (spec 90 Q12, 75-upgrades §4): a supervisor upgrade over 50 live sessions. The tmux
//! server runs as its unit would (a `tmux -D` the sandbox tracks), the supervisor lists it
//! (`AGENT_BOX_TMUX_SERVER=external`); the upgrade is SIGTERM to the supervisor and a copy of its binary, at another
//! path, started in its place. After the copy has run a few ticks: sessions ended, lease outcomes written and agent
//! pids changed, each with the bar 0. Counts only, so the bar holds on every machine (Q-1.2 is about timings).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use agent_box_tests::Sandbox;
use agent_box_tests::sandbox::is_tick_call;
use nix::sys::signal::Signal;
use serde_json::Value;

use super::Bench;
use super::fail::{Context, Outcome, fail};
use super::report::{Bar, Metric, Unit};
use super::world::{Kind, echo_product, numbered, print_sandbox_env, registry_bytes, sandbox_env, wait_for};

const SECTION: &str = "upgrade";
/// Q12's N, and how many of them are leased hook sessions (their leases are what an upgrade used to settle).
const SESSIONS: usize = 50;
const HOOKS: usize = 10;
/// Ticks of the upgraded supervisor observed: its first tick adopts the panes, the rest would show a late respawn.
const TICKS_AFTER: usize = 5;

/// What the box looks like at one moment.
#[derive(Debug, Default)]
struct Seen {
    live: BTreeSet<String>,
    /// Per session: how many times its agent started, and the pid of the latest start.
    agents: BTreeMap<String, (usize, u32)>,
    /// Leases whose `outcome` is set.
    outcomes: usize,
    /// Lines of the hook log (an end record is a line).
    hook_log: usize,
    /// `lastSeenAt` per lease.
    heartbeats: BTreeMap<String, Value>,
}

/// The upgrade section.
pub fn run(_bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let mut world = World::start()?;
    let before = world.seen();
    world.age_heartbeats()?;
    let aged = world.seen();
    world.upgrade()?;
    let after = world.seen();
    push_metrics(metrics, &world, &before, &aged, &after);
    Ok(())
}

/// The sandbox with its tmux unit, the running supervisor's pid and the session names.
struct World {
    sandbox: Sandbox,
    pid: u32,
    names: Vec<(String, Kind)>,
}

impl World {
    /// The tmux unit, then the supervisor over `SESSIONS` fake agents, waited for until every agent runs and a
    /// whole tick passed without a `new-session`.
    fn start() -> Outcome<Self> {
        let mut sandbox = Sandbox::new();
        sandbox.use_counting_tmux();
        sandbox.set_limit("64");
        let mut names = numbered("live", SESSIONS - HOOKS, Kind::Plain);
        names.extend(numbered("hook-live", HOOKS, Kind::Hook));
        let text = String::from_utf8(registry_bytes(&names)?).context(|| "fixture is not UTF-8".into())?;
        sandbox.write_registry(&text);
        for (name, _) in names.iter().filter(|(_, kind)| *kind == Kind::Hook) {
            sandbox.create_lease(name);
        }
        let unit = sandbox.start_tmux_unit();
        println!(
            "{SECTION}: the tmux unit's stand-in, pid {unit}: tmux -f /dev/null -D -L {} (TMUX_TMPDIR={})",
            sandbox.socket(),
            sandbox.tmux_dir().display()
        );
        sandbox.set_env("AGENT_BOX_TMUX_SERVER", "external");
        print_sandbox_env(SECTION, &sandbox_env(&sandbox));
        println!("{SECTION}: the supervisor over {SESSIONS} sessions ({HOOKS} leased hook sessions):");
        println!("{}", echo_product(&sandbox.cmd("agent-box-supervisor")));
        let pid = sandbox.start_supervisor();
        let world = Self { sandbox, pid, names };
        let limit = Duration::from_secs(60) + Duration::from_millis(500 * SESSIONS as u64);
        wait_for("every agent to run", limit, Duration::from_millis(250), || {
            world.names.iter().all(|(n, _)| world.sandbox.agent(n).starts() >= 1)
        })?;
        world.wait_quiet_tick()?;
        Ok(world)
    }

    fn seen(&self) -> Seen {
        let agents = self
            .names
            .iter()
            .filter_map(|(name, _)| {
                let records = self.sandbox.agent(name);
                let starts = records.starts();
                (starts > 0).then(|| (name.clone(), (starts, records.pid(starts))))
            })
            .collect();
        let leases: Vec<Value> =
            self.names.iter().filter(|(_, k)| *k == Kind::Hook).filter_map(|(n, _)| self.sandbox.lease(n)).collect();
        let hooks = self.names.iter().filter(|(_, k)| *k == Kind::Hook);
        Seen {
            live: self.sandbox.live().into_iter().collect(),
            agents,
            outcomes: leases.iter().filter(|l| l.get("outcome").is_some_and(|o| !o.is_null())).count(),
            hook_log: self.sandbox.hook_log().len(),
            heartbeats: hooks
                .filter_map(|(n, _)| Some((n.clone(), self.sandbox.lease(n)?.get("lastSeenAt")?.clone())))
                .collect(),
        }
    }

    /// Sets every lease's `lastSeenAt` ten minutes back (with the supervisor between ticks, which writes a
    /// heartbeat at most once a minute), so a heartbeat of the upgraded supervisor shows as a change.
    fn age_heartbeats(&self) -> Outcome<()> {
        let old = base::time::format_iso(base::time::now_epoch() - 600);
        for (name, _) in self.names.iter().filter(|(_, k)| *k == Kind::Hook) {
            let mut lease = self.sandbox.lease(name).context(|| format!("the lease of {name} is missing"))?;
            lease["lastSeenAt"] = Value::from(old.clone());
            let bytes = serde_json::to_vec(&lease).context(|| format!("the lease of {name}"))?;
            let path = self.sandbox.lease_path(name);
            std::fs::write(&path, bytes).context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }

    /// SIGTERM, then the supervisor binary copied to `<root>/upgrade/` and started from there; returns after it
    /// has run `TICKS_AFTER` ticks.
    fn upgrade(&mut self) -> Outcome<()> {
        println!("{SECTION}: SIGTERM to the supervisor (pid {})", self.pid);
        self.sandbox.signal(self.pid, Signal::SIGTERM);
        let code = self.sandbox.wait_exit(self.pid, Duration::from_secs(30));
        if code != Some(0) {
            return fail(format!("the supervisor exited with {code:?} after SIGTERM, not 0"));
        }
        let dir = self.sandbox.root().join("upgrade");
        copy_program(&agent_box_tests::bins::bin("agent-box-supervisor"), &dir.join("agent-box-supervisor"))?;
        self.sandbox.set_bin_dir(dir);
        println!("{SECTION}: the upgrade, a copy of the binary at another path:");
        println!("{}", echo_product(&self.sandbox.cmd("agent-box-supervisor")));
        self.pid = self.sandbox.start_supervisor();
        self.wait_ticks(TICKS_AFTER)
    }

    fn ticks(&self) -> usize {
        self.sandbox.ticks_of(self.pid)
    }

    fn wait_ticks(&self, target: usize) -> Outcome<()> {
        let limit = Duration::from_secs(30) + Duration::from_millis(20 * SESSIONS as u64) * target as u32;
        wait_for(&format!("tick {target} of the supervisor"), limit, Duration::from_millis(20), || {
            self.ticks() >= target
        })
        .map_err(|e| super::fail::Failure(format!("{e}; supervisor log:\n{}", self.sandbox.supervisor_log())))
    }

    /// Waits for two ticks in a row with no `new-session` between them: every pane is adopted.
    fn wait_quiet_tick(&self) -> Outcome<()> {
        for _ in 0..30 {
            let t = self.ticks();
            self.wait_ticks(t + 2)?;
            let calls = self.sandbox.tmux_calls_of(self.pid);
            let ticks: Vec<usize> = calls.iter().enumerate().filter(|(_, c)| is_tick_call(c)).map(|(i, _)| i).collect();
            if let (Some(&from), Some(&to)) = (ticks.get(t), ticks.get(t + 1))
                && !calls[from..to].iter().any(|c| c.contains("new-session"))
            {
                return Ok(());
            }
        }
        fail("the supervisor kept starting sessions for 30 ticks")
    }

    /// The running supervisor's `new-session` calls (the wrapper log is per process).
    fn new_sessions(&self) -> usize {
        self.sandbox.tmux_calls_of(self.pid).iter().filter(|c| c.contains("new-session")).count()
    }
}

/// `cp` then a rename, as an install replaces a program; a helper process writes it, so no descriptor of bench
/// open for writing can reach a concurrent fork and make the exec fail with ETXTBSY.
fn copy_program(from: &Path, to: &Path) -> Outcome<()> {
    let dir = to.parent().context(|| format!("{} has no directory", to.display()))?;
    std::fs::create_dir_all(dir).context(|| format!("creating {}", dir.display()))?;
    let temp = to.with_extension("tmp");
    let status = Command::new("cp").arg(from).arg(&temp).status().context(|| "running cp".into())?;
    if !status.success() {
        return fail(format!("cp {} {} failed ({status})", from.display(), temp.display()));
    }
    std::fs::rename(&temp, to).context(|| format!("renaming {} to {}", temp.display(), to.display()))
}

/// True while process `pid` exists.
fn alive(pid: u32) -> bool {
    i32::try_from(pid).is_ok_and(|raw| nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None).is_ok())
}

fn push_metrics(metrics: &mut Vec<Metric>, world: &World, before: &Seen, aged: &Seen, after: &Seen) {
    let count = |name: &str, value: usize| Metric::single(SECTION, name, Unit::Count, value as f64);
    let q12 = |name: &str, value: usize| count(name, value).with_bar(Bar::exactly("Q12", 0.0));
    let ended = before.live.difference(&after.live).count();
    let changed = before
        .agents
        .iter()
        .filter(|(name, (starts, pid))| after.agents.get(*name) != Some(&(*starts, *pid)) || !alive(*pid))
        .count();
    let outcomes = after.outcomes.saturating_sub(before.outcomes);
    let resumed = aged.heartbeats.iter().filter(|(name, at)| after.heartbeats.get(*name) != Some(*at)).count();
    metrics
        .push(count(&format!("live sessions before the upgrade (N, {HOOKS} leased hook sessions)"), before.live.len()));
    metrics.push(q12("sessions ended by the upgrade", ended));
    metrics.push(q12("lease outcomes written", outcomes));
    metrics.push(q12("agent pids changed", changed));
    metrics.push(count("    hook-log end records written", after.hook_log.saturating_sub(before.hook_log)));
    metrics.push(count("    new-session calls of the upgraded supervisor", world.new_sessions()));
    metrics.push(count(&format!("    leases whose heartbeat the upgraded supervisor wrote (of {HOOKS})"), resumed));
    metrics.push(count("    ticks of the upgraded supervisor observed", world.ticks()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_that_exists_is_alive_and_pid_zero_overflow_is_not() {
        assert!(alive(std::process::id()));
        assert!(!alive(u32::MAX), "does not fit a pid_t");
    }
}
