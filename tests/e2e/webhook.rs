//! Webhook-spawn with the supervisor running (80 WH13, WH16, X07, X09): the dispatched session starts, gets its
//! prompt byte for byte, reports against its lease, and leaves a complete audit trail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;

use agent_box_tests::fixtures::{Assert, predicate, session, webhook_spawn};
use agent_box_tests::{Sandbox, wait_until};
use serde_json::{Value, json};

/// One batch keyed `key` through the real spawner, with a claimable META and the fake agent naming itself.
fn spawn(sb: &Sandbox, key: &str, batch: &[u8]) -> Assert {
    let vars = [
        ("LOCAL_WEBHOOK_SPAWN_KEY", key),
        ("LOCAL_WEBHOOK_SPAWN_TOPIC", "github:acme/*"),
        ("LOCAL_WEBHOOK_SPAWN_META", r#"{"number":"7"}"#),
        ("AGENT_BOX_HOOK_SESSION_ARGS", r#"["--as","hooked"]"#),
    ];
    webhook_spawn(sb, &vars, batch)
}

fn hook_name(sb: &Sandbox) -> String {
    sb.read_registry().names().find(|n| n.starts_with("hook-")).unwrap().to_owned()
}

fn prepared(sb: &mut Sandbox) {
    sb.set_env("AGENT_BOX_DEFAULT_AGENT", "claude");
    fs::create_dir_all(sb.home().join(".local/state/local-webhook")).unwrap();
}

// WH13
#[test]
fn the_dispatched_session_gets_its_prompt_and_its_gen() {
    let mut sb = Sandbox::new();
    prepared(&mut sb);
    sb.use_counting_tmux();
    sb.write_registry(r#"{"version":1,"sessions":{}}"#);
    sb.start_supervisor();
    spawn(&sb, "acme/widgets", b"[github] issue #7 opened on acme/widgets\n").code(0);
    let name = hook_name(&sb);
    wait_until("the hook agent", || sb.agent("hooked").starts() == 1);
    let argv = sb.agent("hooked").last().argv_strings();
    let stored = serde_json::from_slice::<Value>(&fs::read(sb.registry()).unwrap()).unwrap();
    let lease_gen = sb.lease(&name).unwrap()["gen"].as_str().unwrap().to_owned();
    let at = argv.iter().position(|a| a == "--as").unwrap();
    assert!(argv[..at].iter().any(|a| a == "--session-id"), "extraArgs follow the harness flags: {argv:?}");
    assert_eq!(argv[argv.len() - 2], "--");
    let first_prompt = argv.last().unwrap();
    assert!(first_prompt.starts_with("This is a fresh session: the webhook dispatcher"));
    assert!(first_prompt.ends_with("[github] issue #7 opened on acme/widgets"));
    assert_eq!(stored["sessions"][&name]["initialPrompt"], Value::Null, "consumed at the first spawn");
    let script = fs::read_to_string(sb.launch_file(&name)).unwrap();
    assert!(script.contains(&format!("{name} 0 {lease_gen}")), "the epilogue carries the lease gen");
}

// WH16, H05
#[test]
fn a_batch_near_the_bound_arrives_whole() {
    let mut sb = Sandbox::new();
    prepared(&mut sb);
    sb.write_registry(r#"{"version":1,"sessions":{}}"#);
    let line = format!("[github] comment on acme/x: {}\n", "it's long ".repeat(40));
    // 85 lines of about 550 bytes of quoted size: just under the batch bound of 48 KiB.
    let batch: String = std::iter::repeat_n(line.as_str(), 85).collect();
    spawn(&sb, "acme/x", batch.as_bytes()).code(0);
    let name = hook_name(&sb);
    let stored = sb.entry(&name).unwrap()["initialPrompt"].as_str().unwrap().to_owned();
    sb.once();
    wait_until("the hook agent", || sb.agent("hooked").starts() == 1);
    let argv = sb.agent("hooked").last().argv;
    assert_eq!(argv.last().unwrap(), stored.as_bytes(), "byte for byte");
    let quoted = stored.len() + 3 * stored.matches('\'').count();
    assert!(quoted > 45 * 1024 && !stored.contains("were left out"), "{quoted}");
}

// X07
#[test]
fn spawn_crash_rm_leaves_a_complete_audit_trail() {
    let mut sb = Sandbox::in_slot();
    prepared(&mut sb);
    sb.write_registry(r#"{"version":1,"sessions":{}}"#);
    sb.agent("hooked").control("exit 1");
    spawn(&sb, "acme/widgets", b"[github] issue #7 opened\n").code(0);
    let name = hook_name(&sb);
    sb.once();
    // The epilogue writes the entry, then the lease (lock order registry → lease): wait for both.
    wait_until("died:1", || sb.entry(&name).is_some_and(|e| e["died"] == json!(1)));
    wait_until("the lease's died:1", || sb.lease(&name).is_some_and(|l| l["outcome"] == json!("died:1")));
    session(&sb, &["leases"]).code(0).stdout(predicate::str::contains("died:1"));
    session(&sb, &["rm", &name]).code(0);
    assert!(sb.lease(&name).is_none());
    let trail: Vec<(Value, Value)> = sb.hook_log().into_iter().map(|l| (l["what"].clone(), l["how"].clone())).collect();
    assert_eq!(
        trail,
        vec![(json!("spawn"), Value::Null), (json!("end"), json!("died:1")), (json!("end"), json!("rm"))]
    );
}

// X09, IN-6, IN-11
#[test]
fn a_batch_queued_on_a_full_box_starts_once_a_slot_frees() {
    let mut sb = Sandbox::new();
    prepared(&mut sb);
    sb.set_limit("2");
    sb.write_registry(r#"{"version":1,"sessions":{"a":{"agent":"tool"},"b":{"agent":"tool"}}}"#);
    sb.once();
    sb.wait_live("a");
    sb.wait_live("b");
    spawn(&sb, "acme/x", b"[github] push\n")
        .code(0)
        .stdout(predicates::str::contains("batch queued at position 1 of 1"));
    assert!(sb.read_registry().names().all(|n| !n.starts_with("hook-")), "nothing started on a full box");
    let rm = sb.cmd("agent-box-session").args(["rm", "a"]).output().unwrap();
    assert_eq!(rm.status.code(), Some(0));
    sb.once();
    let name = hook_name(&sb);
    sb.wait_live(&name);
    assert!(sb.queue_records().is_empty(), "admitted: the record left the queue");
}
