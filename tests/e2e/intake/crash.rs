//! The crash table of docs/intake.md IN-12, written by hand: each intermediate state an admission can be
//! interrupted in (the intent, the filter, the spawn record, the lease, the entry, a temp file) is laid down as the
//! product would have left it, then the real supervisor's next ticks must roll it forward or back as the table
//! says: never a session twice, never a spawn record without its lease or end record, never a record lost.

use std::fs;
use std::path::PathBuf;

use agent_box_tests::Sandbox;
use agent_box_tests::fixtures::stderr;
use agent_box_tests::receiver::Receiver;
use agent_box_tests::wait_until;
use base::SessionName;
use serde_json::{Value, json};

use super::{done, filter_dir, hook_names, issue, kickoff, occupy, record_path, spawns, world};

/// A box whose two batches d-1 (#7, agent `a1`) and d-2 (#8, agent `a2`) wait on a full box, which is then given
/// room: the admission the test lays down by hand is all that stands between them and their sessions.
fn two_waiting() -> Sandbox {
    let sb = world(Sandbox::new(), "1");
    occupy(&sb, "busy");
    let rx = Receiver::new(&sb);
    for (key, number, agent) in [("d-1", 7, "a1"), ("d-2", 8, "a2")] {
        assert!(done(&rx.deliver(&issue(key, number, agent))).contains("queued"));
    }
    sb.set_limit("8");
    sb
}

/// An admission of the record of `key` as session `name`, interrupted right after its intent (IN-12 row 3): the
/// intent and the claim filter. Returns the intent's gen.
fn intent(sb: &Sandbox, key: &str, name: &str) -> String {
    let record = record_path(sb, key);
    let life = lease::Gen::random().to_string();
    let at = base::time::format_iso(base::time::now_epoch());
    let intent = json!({"name": name, "gen": life, "at": at});
    fs::write(record.with_extension("admit"), intent.to_string()).unwrap();
    fs::write(filter_path(sb, name), r#"{"enabled":true,"topics":[]}"#).unwrap();
    life
}

fn filter_path(sb: &Sandbox, name: &str) -> PathBuf {
    filter_dir(sb).join(format!("filter.agent-{name}.json"))
}

fn log(sb: &Sandbox) -> lease::HookLog {
    lease::HookLog::new(sb.paths().hook_log().to_path_buf())
}

fn spawn_record<'a>(name: &'a SessionName, object: &'a str, key: &'a str) -> lease::SpawnRecord<'a> {
    lease::SpawnRecord {
        name,
        topic: "github:acme/x",
        event: "issues",
        object: Some(object),
        count: Some(1),
        intake: Some(key),
    }
}

/// The ends of `name` in the hook log.
fn ends_of(sb: &Sandbox, name: &str) -> Vec<Value> {
    sb.hook_log().into_iter().filter(|l| l["what"] == "end" && l["name"] == name).map(|l| l["how"].clone()).collect()
}

fn queue_files(sb: &Sandbox) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(sb.paths().queue_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| !matches!(n.as_str(), "keys" | "ended"))
        .collect();
    names.sort();
    names
}

// IN-12
#[test]
fn an_admission_interrupted_before_its_lease_is_taken_back_and_its_batch_admitted_once_later() {
    let sb = two_waiting();
    let (bare, orphaned) = ("hook-acme-x-0001", "hook-acme-x-0002");
    intent(&sb, "d-1", bare);
    intent(&sb, "d-2", orphaned);
    // Row 4: the spawn record was written, the lease not.
    let name = SessionName::parse(orphaned).unwrap();
    assert!(matches!(log(&sb).append_spawn(&spawn_record(&name, "8", "d-2")), lease::Appended::Written));
    let said = stderr(&sb.once());
    for (key, name) in [("d-1", bare), ("d-2", orphaned)] {
        let line = format!("took back the interrupted admission of queued batch '{key}' as '{name}'");
        assert!(said.contains(&line), "L36 for {key}: {said}");
        assert!(!filter_path(&sb, name).exists(), "its filter is gone");
    }
    assert_eq!(ends_of(&sb, orphaned), [json!("refused")], "the orphan spawn record got its end record");
    assert!(ends_of(&sb, bare).is_empty(), "nothing of the bare intent was in the log");
    assert!(queue_files(&sb).iter().all(|f| f.ends_with(".json")), "no intent is left: {:?}", queue_files(&sb));
    wait_until("both batches to be admitted again", || {
        sb.once();
        sb.queue_records().is_empty()
    });
    let names = hook_names(&sb);
    assert_eq!(names.len(), 2);
    assert!(names.iter().all(|n| n != bare && n != orphaned), "fresh names: {names:?}");
    wait_until("both agents to start", || sb.agent("a1").starts() == 1 && sb.agent("a2").starts() == 1);
    assert!(kickoff(&sb, "a1").contains("(delivery d-1)") && kickoff(&sb, "a2").contains("(delivery d-2)"));
    let keys: Vec<String> = spawns(&sb).into_iter().filter(|(n, _)| names.contains(n)).map(|(_, k)| k).collect();
    assert_eq!(keys, ["d-1", "d-2"], "each admitted once, in the order accepted");
}

// IN-12
#[test]
fn an_admission_whose_session_already_ended_is_finished_not_started_again() {
    let sb = two_waiting();
    let gone = "hook-acme-x-0001";
    let life = intent(&sb, "d-1", gone);
    let name = SessionName::parse(gone).unwrap();
    // The session ran and ended before the crash was noticed: its spawn record and its end record are there.
    assert!(matches!(log(&sb).append_spawn(&spawn_record(&name, "7", "d-1")), lease::Appended::Written));
    assert!(matches!(log(&sb).append_end(&name, &lease::EndHow::Exited, None), lease::Appended::Written));
    let said = stderr(&sb.once());
    assert!(said.contains(&format!("finished the interrupted admission of queued batch 'd-1' as '{gone}'")), "{said}");
    assert!(!hook_names(&sb).iter().any(|n| n == gone), "not listed again (life {life})");
    assert_eq!(ends_of(&sb, gone), [json!("exited")], "no second end record");
    assert_eq!(sb.agent("a1").starts(), 0, "never started twice");
}

// IN-12, IN-1
#[test]
fn leftovers_of_an_interrupted_record_write_or_removal_are_cleared_and_nothing_is_admitted() {
    let sb = world(Sandbox::new(), "8");
    let queue = sb.paths().queue_dir().to_path_buf();
    registry::ensure_private_dir(&queue).unwrap();
    // Row 1: the record's temp, before its link. Row 7: an intent whose record is gone.
    let temp = queue.join("00000000000000000001-0123456789abcdef.json.tmp-abcd1234");
    fs::write(&temp, "{}").unwrap();
    let stray = queue.join("00000000000000000002-0123456789abcdef.admit");
    fs::write(&stray, r#"{"name":"hook-acme-x-0003","gen":"g","at":"2026-01-01T00:00:00Z"}"#).unwrap();
    sb.once();
    assert!(!temp.exists(), "the temp is removed (no exit 0 was given for it)");
    assert!(!stray.exists(), "the intent without a record is removed");
    assert!(hook_names(&sb).is_empty() && sb.hook_log().is_empty());
}
