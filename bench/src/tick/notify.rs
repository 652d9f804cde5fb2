//! Issue 21 in bench section `tick`: the cost of a tick with 50 undelivered outcomes waiting for their retry against
//! one with none. Two loops of 60 entries run at once, both with a notifier configured and the same kind of registry:
//! 10 live entries and 50 stopped hook entries (no pane, so no heartbeat touches their leases). Only the first has a
//! lease with an undelivered outcome for each stopped entry (`notify.nextAt` far ahead, so no program runs: what
//! differs is the per-tick scan of N-6). The second loop is sampled in the same rounds as the first (one round per
//! tick of the first), so the ratio is taken per round under the same load.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use super::super::fail::{Context, Outcome};
use super::super::report::{Metric, Unit};
use super::super::runner::Spread;
use super::{LoopWorld, SECTION};

const ENTRIES: usize = 60;
const OUTCOMES: usize = 50;

/// Runs the comparison and pushes its metrics.
pub fn pending_against_none(metrics: &mut Vec<Metric>) -> Outcome<()> {
    let pending = outcome_world(true)?;
    let none = outcome_world(false)?;
    println!("{SECTION}: {OUTCOMES} undelivered outcomes against none, {ENTRIES} entries each, same rounds");
    let observed = pending.observe(Some(&none))?;
    let companion = observed.companion.context(|| "the loop without outcomes was not sampled".into())?;
    if observed.per_tick_ms.is_empty() || companion.per_tick_ms.is_empty() {
        println!("{SECTION}: no scheduler clock on this kernel; the outcome comparison has no figure");
        return Ok(());
    }
    let name = |who: &str| format!("CPU per tick, {ENTRIES} entries, {who} (scheduler clock)");
    metrics.push(Metric::sampled(SECTION, name("50 pending outcomes"), Unit::Millis, observed.per_tick_ms));
    metrics.push(Metric::sampled(
        SECTION,
        format!("    {}", name("no pending outcome")),
        Unit::Millis,
        companion.per_tick_ms,
    ));
    metrics.push(
        Metric::sampled(
            SECTION,
            "CPU per tick, 50 pending / no pending outcome",
            Unit::Factor,
            companion.ratios.clone(),
        )
        .with_round_ratio(Spread::of(&companion.ratios), "no pending outcome, same round"),
    );
    Ok(())
}

/// A loop world whose supervisor runs with a notifier (never due here); 50 stopped entries added and, when
/// `pending`, a lease with an undelivered outcome for each; restarted once so the notifier variables apply.
fn outcome_world(pending: bool) -> Outcome<LoopWorld> {
    let mut world = LoopWorld::start(SECTION, ENTRIES - OUTCOMES, 0, "256")?;
    let script = world.fleet.sandbox.root().join("notify.sh");
    fs::write(&script, "#!/bin/sh\nexit 1\n").context(|| "cannot write the notifier".into())?;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).context(|| "cannot chmod the notifier".into())?;
    world.fleet.sandbox.set_env("AGENT_BOX_ON_OUTCOME", &script);
    let registry_path = world.fleet.sandbox.registry();
    let text = fs::read_to_string(&registry_path).context(|| "cannot read the registry".into())?;
    let mut doc: serde_json::Value = serde_json::from_str(&text).context(|| "the registry is not JSON".into())?;
    let lease_dir = world.fleet.sandbox.state_dir().join("lease");
    registry::ensure_private_dir(&lease_dir).context(|| "cannot create the lease directory".into())?;
    for k in 0..OUTCOMES {
        // Stopped entries have no pane, so no heartbeat touches their leases; the lease's gen is the entry's life,
        // so no sweep takes it for an older life's (L-4).
        let (name, life) = (format!("hook-ended-{k:03}"), base::new_uuid_v4());
        doc["sessions"][&name] = json!({"agent": "tool", "stopped": true, "life": life});
        if !pending {
            continue;
        }
        let lease = json!({"topic": "github:acme/bench", "object": "1", "claimedAt": "2026-01-01T00:00:00Z",
            "gen": life, "outcome": "died:1", "lastSeenAt": null, "endedAt": "2026-01-01T00:10:00Z",
            "notify": {"attempts": 9, "nextAt": "2099-01-01T00:00:00Z"}});
        let path = lease_dir.join(format!("{name}.json"));
        fs::write(&path, lease.to_string()).context(|| format!("cannot write {}", path.display()))?;
    }
    world.fleet.sandbox.write_registry(&doc.to_string());
    world.fleet.stop_supervisor();
    world.fleet.restart_supervisor();
    world.fleet.wait_quiet_tick();
    Ok(world)
}
