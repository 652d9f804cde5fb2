//! The crash table of docs/intake.md IN-12, written by hand: each intermediate state an admission can be
//! interrupted in (the intent, the filter, the spawn record, the lease, the entry, a temp file) is laid down as the
//! product would have left it, then the real supervisor's next ticks must roll it forward or back as the table
//! says: never a session twice, never a spawn record without its lease or end record, never a record lost.

use std::fs;
use std::path::PathBuf;

use agent_box_tests::Sandbox;
use agent_box_tests::fixtures::{stderr, tool};
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
        claim: None,
    }
}

/// The spawn record and the lease of gen `life`, as the admission writes them after its intent (rows 5–6).
fn lease_of(sb: &Sandbox, name: &str, object: &str, key: &str, life: &str) {
    let name = SessionName::parse(name).unwrap();
    let leases = lease::LeaseDir::new(sb.paths().lease_dir());
    leases.create_with_spawn(&spawn_record(&name, object, key), lease::Gen::parse(life).unwrap(), &log(sb)).unwrap();
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
fn an_admission_interrupted_after_its_lease_is_finished_without_a_second_session() {
    let sb = two_waiting();
    let (leased, listed) = ("hook-acme-x-0001", "hook-acme-x-0002");
    // Row 5: the lease (after its spawn record), no entry.
    let life = intent(&sb, "d-1", leased);
    lease_of(&sb, leased, "7", "d-1", &life);
    // Row 6: the lease and the entry of that life, before the tombstones and the record's removal.
    let listed_life = intent(&sb, "d-2", listed);
    lease_of(&sb, listed, "8", "d-2", &listed_life);
    let entry = tool(json!({
        "extraArgs": ["--as", "a2"], "initialPrompt": "[github] issue #8 (as the admission rendered it)",
        "ephemeral": true, "origin": "webhook", "life": listed_life,
        "hook": {"source": "github", "repository": "acme/x"},
    }));
    sb.add_entry(listed, entry);
    let said = stderr(&sb.once());
    for (key, name) in [("d-1", leased), ("d-2", listed)] {
        let line = format!("finished the interrupted admission of queued batch '{key}' as '{name}'");
        assert!(said.contains(&line), "L35 for {key}: {said}");
    }
    assert!(sb.queue_records().is_empty() && queue_files(&sb).is_empty(), "{:?}", queue_files(&sb));
    let mut names = hook_names(&sb);
    names.sort();
    assert_eq!(names, [leased, listed], "the sessions the intents named, no other");
    assert_eq!(sb.entry(leased).unwrap()["life"], json!(life), "the entry of the lease's life");
    wait_until("both agents to start", || sb.agent("a1").starts() == 1 && sb.agent("a2").starts() == 1);
    assert!(kickoff(&sb, "a1").contains("(delivery d-1)"), "the rolled-forward entry carries the batch");
    let keys: Vec<String> = spawns(&sb).into_iter().map(|(_, k)| k).collect();
    assert_eq!(keys, ["d-1", "d-2"], "one spawn record each: none written again");
    let rx = Receiver::new(&sb);
    let said = done(&rx.deliver(&issue("d-1", 7, "again")));
    assert!(said.contains(&format!("already accepted (admitted as '{leased}')")), "tombstoned: {said}");
    sb.once();
    assert_eq!(sb.agent("again").starts(), 0);
}

// IN-12, IN-5, IN-14
#[test]
fn a_batch_for_a_record_whose_admission_was_interrupted_does_not_join_it() {
    // Row 6 (lease and entry written, record not yet removed): the record is the session's already, with the prompt
    // it was given. A later batch of the same object must not be appended to it (its lines would reach no prompt and
    // its key be buried as admitted); it waits as its own record and is claimed by that session.
    let sb = two_waiting();
    let listed = "hook-acme-x-0001";
    let life = intent(&sb, "d-1", listed);
    lease_of(&sb, listed, "7", "d-1", &life);
    let entry = tool(json!({
        "extraArgs": ["--as", "a1"], "initialPrompt": "[github] issue #7 (as the admission rendered it)",
        "ephemeral": true, "origin": "webhook", "life": life,
        "hook": {"source": "github", "repository": "acme/x"},
    }));
    sb.add_entry(listed, entry);
    let rx = Receiver::new(&sb);
    let said = done(&rx.deliver(&issue("d-3", 7, "a3")));
    assert!(said.starts_with("batch queued at position"), "not appended to the record being admitted: {said}");
    let again = done(&rx.deliver(&issue("d-1", 7, "again")));
    assert!(again.contains("'d-1' was already accepted (queued)"), "its own redelivery is still known: {again}");
    let said = stderr(&sb.once());
    assert!(said.contains(&format!("queued batch 'd-3' ended claimed: live session '{listed}'")), "{said}");
    assert_eq!(sb.agent("a3").starts(), 0);
    assert!(sb.queue_records().is_empty());
}

// IN-12
#[test]
fn an_admission_interrupted_after_its_lease_and_found_minutes_later_is_still_finished() {
    // After a power loss the next supervisor starts when the box is back, long after the 30 s in which the sweeps
    // spare a young lease or filter of a name nothing lists (SUP-10.3): the intent must keep them the admission's.
    let sb = two_waiting();
    let leased = "hook-acme-x-0001";
    let life = intent(&sb, "d-1", leased);
    lease_of(&sb, leased, "7", "d-1", &life);
    for path in [sb.lease_path(leased), filter_path(&sb, leased), record_path(&sb, "d-1").with_extension("admit")] {
        let touched = sb.sh(&format!("touch -d '3 minutes ago' '{}'", path.display()));
        assert!(touched.status.success());
    }
    let said = stderr(&sb.once());
    assert!(
        said.contains(&format!("finished the interrupted admission of queued batch 'd-1' as '{leased}'")),
        "{said}"
    );
    assert_eq!(ends_of(&sb, leased), Vec::<Value>::new(), "the lease was not swept: {said}");
    assert_eq!(sb.lease(leased).map(|l| l["gen"].clone()), Some(json!(life)));
    assert!(filter_path(&sb, leased).exists(), "nor its claim filter");
    assert!(hook_names(&sb).iter().any(|n| n == leased));
    wait_until("the agent to start", || sb.agent("a1").starts() == 1);
    let prompt = kickoff(&sb, "a1");
    assert!(prompt.contains("(delivery d-1)") && prompt.contains("You are already subscribed to github:acme/x"));
}

// IN-12
#[test]
fn a_take_back_interrupted_after_its_refused_end_record_is_taken_back_again_not_finished() {
    // The take-back of row 4 writes the orphan's `refused` end record, then removes the intent: a power loss in
    // between leaves both. `refused` says the session never started, so the batch must wait again.
    let sb = two_waiting();
    let orphaned = "hook-acme-x-0002";
    intent(&sb, "d-1", orphaned);
    let name = SessionName::parse(orphaned).unwrap();
    assert!(matches!(log(&sb).append_spawn(&spawn_record(&name, "7", "d-1")), lease::Appended::Written));
    assert!(matches!(log(&sb).append_end(&name, &lease::EndHow::Refused, None), lease::Appended::Written));
    let said = stderr(&sb.once());
    assert!(
        said.contains(&format!("took back the interrupted admission of queued batch 'd-1' as '{orphaned}'")),
        "{said}"
    );
    wait_until("the batch to be admitted again", || {
        sb.once();
        sb.queue_records().is_empty()
    });
    wait_until("its agent to start", || sb.agent("a1").starts() == 1);
    let keys: Vec<String> = spawns(&sb).into_iter().filter(|(n, _)| n != orphaned).map(|(_, k)| k).collect();
    assert_eq!(keys, ["d-1", "d-2"], "admitted under a fresh name, once");
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

// IN-12, IN-1
#[test]
fn a_record_temp_is_left_alone_while_the_registry_lock_its_writer_holds_is_held() {
    // Every writer of the queue holds the registry lock; a temp next to a record may be a webhook-spawn's, between
    // its write and its link. A supervisor starting meanwhile removed it without the lock, and that spawn failed
    // (exit 75: "could not write …/queue/<stem>.json (No such file or directory)").
    let mut sb = world(Sandbox::new(), "8");
    sb.set_env("REGISTRY_LOCK_WAIT", "0.2");
    let queue = sb.paths().queue_dir().to_path_buf();
    registry::ensure_private_dir(&queue).unwrap();
    let temp = queue.join("00000000000000000001-0123456789abcdef.json.tmp-abcd1234");
    fs::write(&temp, "{}").unwrap();
    {
        let _writer = sb.hold_registry_lock();
        sb.cmd("agent-box-supervisor").arg("--once").stdin(std::process::Stdio::null()).output().unwrap();
        assert!(temp.exists(), "removed while its writer may be between its write and its link");
    }
    sb.once();
    assert!(!temp.exists(), "a leftover, once the lock is free");
}
