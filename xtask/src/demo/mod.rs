//! `cargo xtask demo` (70 XT-3): a few seconds of the supervisor doing its main job on an embedded default
//! configuration, in a private root and on a private tmux socket, then everything torn down.

mod show;
mod world;

use std::time::{Duration, Instant};

use base::SessionName;
use tmux::TmuxApi;

use crate::exit;
use world::World;

/// How long a milestone may take to hold.
const MILESTONE_DEADLINE: Duration = Duration::from_secs(20);

/// Runs the demo; the exit code of XT-3.6.
pub fn run(keep: bool, quiet: bool) -> u8 {
    let mut world = match World::prepare(quiet) {
        Ok(world) => world,
        Err(code) => return code,
    };
    let failed = timeline(&mut world);
    let interrupted = world.interrupted();
    world.teardown(keep);
    println!("demo: nothing left running");
    if interrupted {
        130
    } else if failed {
        exit::CHECK_FAILED
    } else {
        exit::SUCCESS
    }
}

/// The milestones of XT-3.4, in order; true when one did not hold. After Ctrl-C the current milestone says
/// `interrupted` (never a false ✗) and the rest are skipped.
fn timeline(world: &mut World) -> bool {
    world.start_supervisor();
    let mut failed = false;
    failed |= !milestone(world, "first spawn: main, crasher, hook-demo-a1b2 live; parked stopped", |w| {
        ["main", "crasher", "hook-demo-a1b2"].iter().all(|n| w.state(n) == "live") && w.state("parked") == "stopped"
    });
    failed |= !milestone(world, "crasher exited with status 3: died(3), its post-mortem pane stays", |w| {
        w.state("crasher") == "died(3)"
    });
    if world.interrupted() {
        return true;
    }
    failed |= later_milestones(world);
    failed
}

fn later_milestones(world: &mut World) -> bool {
    let mut failed = false;
    let hook = SessionName::parse("hook-demo-a1b2").ok();
    if let Some(hook) = &hook {
        world.say("killing the pane of hook-demo-a1b2 from outside (no epilogue runs)");
        let _ = world.tmux().kill_session(hook);
    }
    failed |= !milestone(world, "hook-demo-a1b2 respawned; its lease says the work was lost: vanished", |w| {
        w.state("hook-demo-a1b2") == "live, UNRESOLVED ASSIGNMENT (vanished)"
    });
    world.print_leases();
    failed |= !add_extra(world);
    if world.interrupted() {
        return true;
    }
    world.session(&["restart", "crasher"]);
    failed |= !milestone(world, "crasher live again and `died` gone from the registry", |w| {
        w.state("crasher") == "live" && w.entry("crasher").is_some_and(|e| e.get("died").is_none())
    });
    if world.interrupted() {
        return true;
    }
    world.session(&["stop", "main"]);
    failed |= !milestone(world, "main stopped", |w| w.state("main") == "stopped");
    world.print_leases();
    world.print_log();
    failed
}

/// `add extra --prompt hello -- work` and the add→live time (printed, never judged).
fn add_extra(world: &mut World) -> bool {
    let t0 = Instant::now();
    world.session(&["add", "extra", "--prompt", "hello", "--", "work"]);
    let held = milestone(world, "extra added and live", |w| w.state("extra") == "live");
    if held {
        world.say(&format!(
            "add → live took {} ms (the early wake on the registry change, not the 2 s timer)",
            t0.elapsed().as_millis()
        ));
    }
    held
}

/// Polls `holds` until it is true or the deadline passes, then prints the milestone line and the listing.
fn milestone(world: &mut World, what: &str, holds: impl Fn(&World) -> bool) -> bool {
    let start = Instant::now();
    let mut ok = holds(world);
    while !ok && start.elapsed() < MILESTONE_DEADLINE && !world.interrupted() {
        std::thread::sleep(Duration::from_millis(100));
        ok = holds(world);
    }
    let mark = match (ok, world.interrupted()) {
        (true, _) => "✓",
        (false, true) => "interrupted",
        (false, false) => "✗",
    };
    println!("--- t=+{}s {what} {mark}", world.elapsed_secs());
    if !world.quiet() {
        world.print_ls();
    }
    ok
}
