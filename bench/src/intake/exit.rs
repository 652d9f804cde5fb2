//! Issue 24 in bench section `intake`, (a): webhook-spawn's run to exit 0 when its batch is admitted at once
//! against when it queues because the box is full. Two sandboxes without a supervisor: `free` (8 slots, an empty
//! registry) and `full` (2 slots, two entries that take them). Before every run, untimed, both get their state back
//! (registry, empty queue, lease and filter directories, no hook log), so every sample meets the same box; each
//! round runs both once, in alternating order, and the ratio queued / admitted is taken per round.

use std::fs;
use std::io;
use std::path::Path;

use agent_box_tests::Sandbox;

use super::super::fail::{Context, Outcome};
use super::super::report::{Metric, Unit};
use super::super::runner::Spread;
use super::super::world::{Kind, numbered, print_sandbox_env, registry_bytes, sandbox_env};
use super::{SECTION, dispatch, echo_dispatch, run_dispatch};

const ROUNDS: usize = 30;
const WARMUP: usize = 3;
/// The stdout lines of the two outcomes (W20 for a queued batch).
const ADMITTED: &str = "session '";
const QUEUED: &str = "batch queued at position 1 of 1 (the box is full";

/// Runs the comparison and pushes its metrics.
pub fn admitted_against_queued(metrics: &mut Vec<Metric>) -> Outcome<()> {
    let free = Sandbox::new();
    let full = Sandbox::new();
    full.set_limit("2");
    let empty = registry::Document::empty().to_bytes();
    let busy = registry_bytes(&numbered("busy", 2, Kind::Plain))?;
    print_sandbox_env(SECTION, &sandbox_env(&free));
    println!(
        "{SECTION}: {ROUNDS} rounds (+{WARMUP} warm-up) of the command below, once in a box with free slots (admitted \
         at once) and once in a box whose 2 slots are taken (queued), order alternating; state restored before each"
    );
    println!("{}", echo_dispatch(&dispatch(&free, "bench-0", 0, &[]).0));
    let (mut admitted, mut queued, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..WARMUP + ROUNDS {
        super::super::interrupt::check()?;
        let mut pair = [0.0_f64; 2];
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            let delivery = format!("bench-{round}");
            pair[which] = if which == 0 {
                restore(&free, &empty)?;
                run_dispatch(dispatch(&free, &delivery, round, &[]), ADMITTED)?
            } else {
                restore(&full, &busy)?;
                run_dispatch(dispatch(&full, &delivery, round, &[]), QUEUED)?
            };
        }
        if round >= WARMUP {
            admitted.push(pair[0]);
            queued.push(pair[1]);
            ratios.push(pair[1] / pair[0]);
        }
    }
    push_metrics(metrics, admitted, queued, ratios);
    Ok(())
}

fn push_metrics(metrics: &mut Vec<Metric>, admitted: Vec<f64>, queued: Vec<f64>, ratios: Vec<f64>) {
    metrics.push(
        Metric::sampled(SECTION, "webhook-spawn to exit 0, batch queued (box full)", Unit::Millis, queued)
            .with_round_ratio(Spread::of(&ratios), "admitted at once, same rounds"),
    );
    metrics.push(Metric::sampled(
        SECTION,
        "    webhook-spawn to exit 0, batch admitted at once, same rounds",
        Unit::Millis,
        admitted,
    ));
}

/// The box as before any batch: `registry`, and empty state directories (queue with its tombstone directory,
/// leases, claim filters), no hook log.
fn restore(sandbox: &Sandbox, registry: &[u8]) -> Outcome<()> {
    let state = sandbox.state_dir();
    let filters = sandbox.paths().webhook_state_dir().to_path_buf();
    let fresh = |dir: &Path| -> io::Result<()> {
        match fs::remove_dir_all(dir) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
            _ => {}
        }
        registry::ensure_private_dir(dir)
    };
    let made = fresh(&state)
        .and_then(|()| registry::ensure_private_dir(&state.join("lease")))
        .and_then(|()| registry::ensure_private_dir(&state.join("queue/keys")))
        .and_then(|()| fresh(&filters))
        .and_then(|()| registry::ensure_private_dir(registry::atomic::parent_dir(&sandbox.registry())))
        .and_then(|()| registry::write_atomic(&sandbox.registry(), registry).map(drop));
    made.context(|| format!("restoring {}", sandbox.home().display()))
}
