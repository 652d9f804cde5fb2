//! `golden/webhook-spawn/`: one spawn per batch fixture (the run, the stored prompt, the claim filter and the
//! entry), render mode per environment fixture, a batch queued on a full box (the run, its record, a redelivery
//! answered as a duplicate, a second batch of the same assignment coalesced into it; issue 24), and a refusal (the
//! registry lock held) with the record it wrote (60 §10.3, 70 GD-2). Every spawn starts from the same webhook world,
//! so each artefact depends on its fixture alone.

use std::collections::BTreeSet;
use std::fs;

use serde_json::Value;

use crate::fixtures::pane;
use crate::golden::artefacts::Artefacts;
use crate::golden::capture::Invocation;
use crate::golden::world::{World, fixture};

/// The batch fixtures under `tests/fixtures/golden/webhook/batches/`: `<case>.env.json` and `<case>.stdin`.
const BATCHES: [&str; 9] =
    ["numbered", "sha", "fallback", "assigned", "unseeded", "invalid-args", "dangling-args", "long-key", "long"];

/// The render-mode fixtures under `…/webhook/preamble/`, with their arguments.
const PREAMBLES: [(&str, &[&str]); 6] = [
    ("default", &["github:acme/*", "triage new issues"]),
    ("args", &["github:acme/*"]),
    ("invalid-args", &["github:acme/*", "triage new issues"]),
    ("dangling-args", &["github:acme/*", "triage new issues"]),
    ("profile", &["github:acme/*", "triage new issues", "triage"]),
    ("no-default", &["github:acme/*"]),
];

/// Every artefact of `golden/webhook-spawn/`.
pub fn render(out: &mut Artefacts) {
    let world = World::new();
    reset(&world);
    pane(&world.sb, "main");
    pane(&world.sb, "helper");
    for case in BATCHES {
        reset(&world);
        spawn(&world, case, out);
    }
    queued(&world, out);
    refusal(&world, out);
    for (case, args) in PREAMBLES {
        let inv =
            with_env(Invocation::product("agent-box-webhook-spawn").arg("--preamble").args(args), "preamble", case);
        out.capture(&format!("webhook-spawn/preamble-{case}.txt"), &world, &inv);
    }
}

/// The webhook world's files, as the fixture has them (earlier spawns' entries gone).
fn reset(world: &World) {
    world.install_home("webhook");
}

/// Sets the variables of `<dir>/<case>.env.json` (a JSON object; `null` unsets).
fn with_env(mut inv: Invocation, dir: &str, case: &str) -> Invocation {
    let text = fixture(&format!("webhook/{dir}/{case}.env.json"));
    let env: serde_json::Map<String, Value> = serde_json::from_slice(&text).unwrap();
    for (key, value) in env {
        inv = match value {
            Value::String(v) => inv.env(&key, v),
            _ => inv.unset(&key),
        };
    }
    inv
}

fn batch(case: &str) -> Invocation {
    let inv = Invocation::product("agent-box-webhook-spawn").stdin_fixture(&format!("webhook/batches/{case}.stdin"));
    with_env(inv, "batches", case)
}

/// One accepted spawn: the run, then the entry it added, its prompt and its filter.
fn spawn(world: &World, case: &str, out: &mut Artefacts) {
    let before = world.registry_keys();
    let captured = out.capture(&format!("webhook-spawn/run-{case}.txt"), world, &batch(case));
    assert_eq!(captured.code(), Some(0), "golden: webhook-spawn case {case} was not accepted");
    let minted: BTreeSet<String> = world.registry_keys().difference(&before).cloned().collect();
    let name = minted.iter().next().cloned().unwrap_or_else(|| panic!("golden: case {case} added no entry"));
    out.minted(minted);
    let doc: Value = serde_json::from_slice(&fs::read(world.sb.registry()).unwrap()).unwrap();
    let entry = &doc["sessions"][&name];
    let prompt = entry["initialPrompt"].as_str().unwrap_or_default();
    out.add(&format!("webhook-spawn/prompt-{case}.txt"), prompt.as_bytes().to_vec(), world);
    let mut pretty = serde_json::to_string_pretty(entry).unwrap();
    pretty.push('\n');
    out.add(&format!("webhook-spawn/entry-{case}.json"), pretty.into_bytes(), world);
    let filter = world.home().join(format!(".local/state/local-webhook/filter.agent-{name}.json"));
    if filter.exists() {
        out.document(&format!("webhook-spawn/filter-{case}.json"), world, &filter);
    }
}

/// Issue 24: a full box (limit 1 with two sessions) queues the batch; the same delivery again is a duplicate, and
/// another batch of the same issue joins the queued record.
fn queued(world: &World, out: &mut Artefacts) {
    reset(world);
    let limit = world.sb.root().join("limit-1");
    fs::write(&limit, "1\n").unwrap();
    let full = |case: &str| batch(case).env("AGENT_BOX_SESSION_LIMIT_FILE", &limit);
    let captured = out.capture("webhook-spawn/queued.txt", world, &full("queued"));
    assert_eq!(captured.code(), Some(0), "golden: the queued case was not acknowledged");
    out.document("webhook-spawn/queued-record.json", world, &only_record(world));
    out.capture("webhook-spawn/duplicate.txt", world, &full("queued"));
    out.capture("webhook-spawn/coalesced.txt", world, &full("coalesced"));
    out.document("webhook-spawn/queued-record-coalesced.json", world, &only_record(world));
    out.document("webhook-spawn/queued-hook-log.jsonl", world, &world.sb.paths().hook_log());
}

/// The one record of the queue.
fn only_record(world: &World) -> std::path::PathBuf {
    let dir = world.sb.paths().queue_dir();
    let records: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(records.len(), 1, "golden: one queued record");
    records[0].clone()
}

/// A refusal: the registry lock held past the spawner's bound, so nothing could be written (exit 75), and the
/// refusal record it wrote.
fn refusal(world: &World, out: &mut Artefacts) {
    reset(world);
    let lock = world.sb.registry().with_extension("json.lock");
    let _held = crate::HeldLock::acquire(&lock, std::time::Duration::ZERO).unwrap();
    let inv = batch("refused").env("REGISTRY_LOCK_WAIT", "0.1");
    let captured = out.capture("webhook-spawn/refused.txt", world, &inv);
    assert_eq!(captured.code(), Some(75), "golden: the refusal case was not refused");
    let record = world.sb.state_dir().join("webhook-spawn-refused.json");
    out.document("webhook-spawn/refusal-record.json", world, &record);
}
