//! bench section `upgrade` (spec 90 Q12, 75-upgrades §4): a supervisor upgrade over 50 live sessions. The tmux
//! server runs as its unit would (a `tmux -D` the sandbox tracks), the supervisor lists it
//! (`AGENT_BOX_TMUX_SERVER=external`); the upgrade is SIGTERM to the supervisor and a copy of its binary, at another
//! path, started in its place. After the copy has run a few ticks: sessions ended, lease outcomes written and agent
//! pids changed, each with the bar 0. Counts only, so the bar holds on every machine (Q-1.2 is about timings).

use std::collections::{BTreeMap, BTreeSet};

use agent_box_tests::Sandbox;
use agent_box_tests::fleet::Fleet;
use serde_json::Value;

use super::Bench;
use super::fail::{Context, Outcome, fail};
use super::report::{Bar, Metric, Unit};
use super::world::{Kind, echo_product, numbered, print_sandbox_env, registry_bytes, sandbox_env};

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

/// The harness's fleet over the tmux unit, and which of its sessions are hook sessions.
struct World {
    fleet: Fleet,
    names: Vec<(String, Kind)>,
}

impl World {
    /// The tmux unit, then the supervisor over `SESSIONS` fake agents, waited for until every agent runs and a
    /// whole tick passed without a `new-session`.
    fn start() -> Outcome<Self> {
        let mut sandbox = Sandbox::new();
        Fleet::prepare(&mut sandbox, "64");
        let mut names = numbered("live", SESSIONS - HOOKS, Kind::Plain);
        names.extend(numbered("hook-live", HOOKS, Kind::Hook));
        let text = String::from_utf8(registry_bytes(&names)?).context(|| "fixture is not UTF-8".into())?;
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
        let hooks: Vec<String> = names.iter().filter(|(_, k)| *k == Kind::Hook).map(|(n, _)| n.clone()).collect();
        let all = names.iter().map(|(n, _)| n.clone()).collect();
        let fleet = Fleet::start(sandbox, &text, all, &hooks);
        Ok(Self { fleet, names })
    }

    fn seen(&self) -> Seen {
        let sandbox = &self.fleet.sandbox;
        let agents = self
            .names
            .iter()
            .filter_map(|(name, _)| {
                let records = sandbox.agent(name);
                let starts = records.starts();
                (starts > 0).then(|| (name.clone(), (starts, records.pid(starts))))
            })
            .collect();
        let leases: Vec<Value> =
            self.names.iter().filter(|(_, k)| *k == Kind::Hook).filter_map(|(n, _)| sandbox.lease(n)).collect();
        let hooks = self.names.iter().filter(|(_, k)| *k == Kind::Hook);
        Seen {
            live: sandbox.live().into_iter().collect(),
            agents,
            outcomes: leases.iter().filter(|l| l.get("outcome").is_some_and(|o| !o.is_null())).count(),
            hook_log: sandbox.hook_log().len(),
            heartbeats: hooks
                .filter_map(|(n, _)| Some((n.clone(), sandbox.lease(n)?.get("lastSeenAt")?.clone())))
                .collect(),
        }
    }

    /// Sets every lease's `lastSeenAt` ten minutes back (with the supervisor between ticks, which writes a
    /// heartbeat at most once a minute), so a heartbeat of the upgraded supervisor shows as a change.
    fn age_heartbeats(&self) -> Outcome<()> {
        let sandbox = &self.fleet.sandbox;
        let old = base::time::format_iso(base::time::now_epoch() - 600);
        for (name, _) in self.names.iter().filter(|(_, k)| *k == Kind::Hook) {
            let mut lease = sandbox.lease(name).context(|| format!("the lease of {name} is missing"))?;
            lease["lastSeenAt"] = Value::from(old.clone());
            let bytes = serde_json::to_vec(&lease).context(|| format!("the lease of {name}"))?;
            let path = sandbox.lease_path(name);
            std::fs::write(&path, bytes).context(|| format!("writing {}", path.display()))?;
        }
        Ok(())
    }

    /// SIGTERM, then the supervisor binary copied to `<root>/upgrade/` and started from there; returns after it
    /// has run `TICKS_AFTER` ticks.
    fn upgrade(&mut self) -> Outcome<()> {
        println!("{SECTION}: SIGTERM to the supervisor (pid {})", self.fleet.pid);
        let code = self.fleet.stop_supervisor();
        if code != Some(0) {
            return fail(format!("the supervisor exited with {code:?} after SIGTERM, not 0"));
        }
        self.fleet.copy_supervisor_to_upgrade_dir();
        println!("{SECTION}: the upgrade, a copy of the binary at another path:");
        println!("{}", echo_product(&self.fleet.sandbox.cmd("agent-box-supervisor")));
        self.fleet.restart_supervisor();
        self.fleet.wait_ticks(TICKS_AFTER);
        Ok(())
    }
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
    metrics.push(count("    new-session calls of the upgraded supervisor", world.fleet.new_sessions()));
    metrics.push(count(&format!("    leases whose heartbeat the upgraded supervisor wrote (of {HOOKS})"), resumed));
    metrics.push(count("    ticks of the upgraded supervisor observed", world.fleet.ticks()));
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
