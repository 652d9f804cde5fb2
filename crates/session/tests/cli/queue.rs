//! `queue` and `queue rm` (issue 24, docs/intake.md IN-15) against batches webhook-spawn queued on a full box.

use std::fs;

use agent_box_tests::Sandbox;
use agent_box_tests::fixtures::{session, stdout, webhook_spawn};
use serde_json::{Value, json};

/// A box at its limit (one session, limit 1) with two batches queued, each with a delivery id.
fn full_box_with_two_queued() -> Sandbox {
    let mut sb = Sandbox::new();
    sb.set_env("AGENT_BOX_DEFAULT_AGENT", "claude");
    sb.set_limit("1");
    sb.write_registry(r#"{"version":1,"sessions":{"filler":{"agent":"tool"}}}"#);
    for (id, number) in [("d-one", "7"), ("d-two", "8")] {
        let meta = format!(r#"{{"number":"{number}","delivery":"{id}"}}"#);
        let vars = [("LOCAL_WEBHOOK_SPAWN_KEY", "acme/x"), ("LOCAL_WEBHOOK_SPAWN_META", meta.as_str())];
        webhook_spawn(&sb, &vars, format!("[github] issue #{number} opened\n").as_bytes()).code(0);
    }
    sb
}

// IN-15
#[test]
fn the_queue_lists_waiting_batches_oldest_first_with_their_positions() {
    let sb = full_box_with_two_queued();
    let listed: Value = serde_json::from_str(&stdout(&session(&sb, &["queue", "--json"]).code(0))).unwrap();
    assert_eq!((&listed["queued"], &listed["expired"], &listed["maxRecords"]), (&json!(2), &json!(0), &json!(500)));
    let keys: Vec<(&Value, &Value)> =
        listed["rows"].as_array().unwrap().iter().map(|r| (&r["position"], &r["key"])).collect();
    assert_eq!(keys, [(&json!(1), &json!("d-one")), (&json!(2), &json!("d-two"))]);
    let text = stdout(&session(&sb, &["queue"]).code(0));
    assert!(text.starts_with("2 batch(es) wait for a session slot"), "{text}");
    let ls = stdout(&session(&sb, &["ls"]).code(0));
    assert!(ls.contains("2 batch(es) of events wait in the intake queue"), "{ls}");
    assert!(stdout(&session(&sb, &["capacity"]).code(0)).contains("\"queued\": 2"));
}

// IN-15, IN-8, IN-4
#[test]
fn queue_rm_ends_a_record_with_its_end_line_and_its_redelivery_is_a_duplicate() {
    let sb = full_box_with_two_queued();
    session(&sb, &["queue", "rm", "d-one"]).code(0);
    let left: Vec<Value> = sb.queue_records().iter().map(|r| r["key"].clone()).collect();
    assert_eq!(left, [json!("d-two")], "only the named record ended");
    let end = sb.hook_log().into_iter().rfind(|l| l["what"] == "intake").unwrap();
    assert_eq!((&end["how"], &end["key"]), (&json!("removed"), &json!("d-one")));
    let tombstones = fs::read_dir(sb.paths().queue_dir().join("keys")).unwrap().count();
    assert_eq!(tombstones, 1, "the removed record's key is remembered");
    let meta = r#"{"number":"7","delivery":"d-one"}"#;
    let again =
        webhook_spawn(&sb, &[("LOCAL_WEBHOOK_SPAWN_KEY", "acme/x"), ("LOCAL_WEBHOOK_SPAWN_META", meta)], b"x\n");
    assert!(stdout(&again.code(0)).contains("was already accepted (removed)"));
    assert_eq!(sb.queue_records().len(), 1, "a removed batch is not queued again by its redelivery");
    session(&sb, &["queue", "rm", "d-one"]).code(2);
}
