//! `golden/documents/`: the files the programs write, after each step of one scripted life in a slot (the real
//! epilogue, baked for the slot, writes what it writes on a box): the registry after add, first spawn, stop,
//! restart, a clean exit, a crash and rm; a lease after create, heartbeat, a crash, a vanished pane and an
//! operator's stop; and the hook log after one record of each kind. Every step is a single command or one `--once` tick, so the
//! documents do not depend on timing.

use std::fs;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::golden::artefacts::Artefacts;
use crate::golden::capture::{Captured, Invocation};
use crate::golden::world::World;

fn session(args: &[&str]) -> Invocation {
    Invocation::product("agent-box-session").args(args)
}

/// Every artefact of `golden/documents/` except `registry-after-seed.json` (the supervisor section's seed case).
pub fn render(out: &mut Artefacts) {
    let world = World::in_slot();
    world.install_home("documents");
    registry_steps(&world, out);
    lease_steps(&world, out);
    out.document("documents/hook-log.jsonl", &world, &world.sb.state_dir().join("hook-sessions.jsonl"));
}

/// Runs `inv` in `world`, failing the render when it does not exit 0.
fn ok(world: &World, inv: &Invocation) -> Captured {
    let captured = inv.run(world);
    assert_eq!(
        captured.code(),
        Some(0),
        "golden: a documents step failed: {inv:?}\nstderr: {}",
        String::from_utf8_lossy(&captured.stderr)
    );
    captured
}

fn once(world: &World) {
    ok(world, &Invocation::product("agent-box-supervisor").arg("--once"));
}

fn epilogue(world: &World, args: &[&str]) {
    ok(world, &Invocation::at("agent-box-mark-stopped", world.sb.epilogue()).args(args));
}

fn registry_after(world: &World, step: &str, out: &mut Artefacts) {
    out.document(&format!("documents/registry-after-{step}.json"), world, &world.sb.registry());
}

fn registry_steps(world: &World, out: &mut Artefacts) {
    ok(world, &session(&["add", "work", "--harness", "tool", "--prompt", "first task", "--", "--as", "work"]));
    registry_after(world, "add", out);
    once(world);
    registry_after(world, "first-spawn", out);
    out.document("documents/side-file-first-spawn.json", world, &world.sb.side_file("work"));
    ok(world, &session(&["stop", "work"]));
    registry_after(world, "stop", out);
    ok(world, &session(&["restart", "work"]));
    registry_after(world, "restart", out);
    epilogue(world, &["work", "0"]);
    registry_after(world, "mark-stopped-clean", out);
    ok(world, &session(&["restart", "work"]));
    epilogue(world, &["work", "3"]);
    registry_after(world, "mark-stopped-crash", out);
    ok(world, &session(&["rm", "work"]));
    registry_after(world, "rm", out);
}

/// A webhook spawn of batch fixture `case`; returns the minted name.
fn dispatch(world: &World, case: &str, out: &mut Artefacts) -> String {
    let before = world.registry_keys();
    let text = crate::golden::world::fixture(&format!("webhook/batches/{case}.env.json"));
    let env: serde_json::Map<String, Value> = serde_json::from_slice(&text).unwrap();
    let mut inv =
        Invocation::product("agent-box-webhook-spawn").stdin_fixture(&format!("webhook/batches/{case}.stdin"));
    for (key, value) in env {
        if let Value::String(v) = value {
            inv = inv.env(&key, v);
        }
    }
    ok(world, &inv);
    let minted: Vec<String> = world.registry_keys().difference(&before).cloned().collect();
    out.minted(minted.clone());
    minted.into_iter().next().unwrap_or_else(|| panic!("golden: batch {case} added no entry"))
}

fn lease_gen(world: &World, name: &str) -> String {
    world.sb.lease(name).and_then(|l| l["gen"].as_str().map(str::to_owned)).unwrap_or_default()
}

fn lease_as(world: &World, name: &str, state: &str, out: &mut Artefacts) {
    out.document(&format!("documents/lease-{state}.json"), world, &world.sb.lease_path(name));
}

fn lease_steps(world: &World, out: &mut Artefacts) {
    fs::create_dir_all(world.home().join(".local/state/local-webhook")).unwrap();
    let crashed = dispatch(world, "numbered", out);
    lease_as(world, &crashed, "create", out);
    once(world);
    once(world);
    lease_as(world, &crashed, "heartbeat", out);
    epilogue(world, &[&crashed, "2", &lease_gen(world, &crashed)]);
    lease_as(world, &crashed, "died", out);

    let lost = dispatch(world, "sha", out);
    once(world);
    world.sb.kill_pane(&lost);
    once(world);
    lease_as(world, &lost, "vanished", out);

    let stopped = dispatch(world, "assigned", out);
    once(world);
    ok(world, &session(&["stop", &stopped]));
    lease_as(world, &stopped, "stopped", out);

    let finished = dispatch(world, "fallback", out);
    epilogue(world, &[&finished, "0", &lease_gen(world, &finished)]);
    ok(world, &session(&["rm", &crashed]));
    ok(world, &session(&["stop", &lost]));
    sweepable_lease(world);
    once(world);
}

/// An unlisted lease 31 s old, which the next tick sweeps with a `swept` record (30 SUP-10.4).
fn sweepable_lease(world: &World) {
    let name = base::SessionName::parse("hook-acme-gone-0000").unwrap();
    let leases = lease::LeaseDir::new(world.sb.state_dir().join("lease"));
    leases.create(&name, "github:acme/gone", Some("1"), None).unwrap();
    let file = fs::File::options().write(true).open(leases.lease_path(&name)).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(31)).unwrap();
}
