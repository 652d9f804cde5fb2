//! Several boxes, one dispatch (issue 26, docs/boxes.md): boxes with their own homes, tmux servers and supervisors
//! share a real PostgreSQL server the harness starts; every box receives the same deliveries, and every assignment
//! runs on exactly one of them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use agent_box_tests::fixtures::webhook_spawn;
use agent_box_tests::postgres::{Postgres, ROLE};
use agent_box_tests::{Sandbox, wait::wait_until_or};
use serde_json::Value;

/// A server, or a SKIP line when none can run here.
pub fn server() -> Option<Postgres> {
    agent_box_tests::boxes::server("several boxes")
}

pub use agent_box_tests::boxes::a_box;

/// Delivery `id` of issue `number` to box `sb`, its agent `agent` (the fake agent of the harness): the exit code.
pub fn deliver(sb: &Sandbox, id: &str, number: usize, agent: &str) -> i32 {
    deliver_output(sb, id, number, agent).status.code().unwrap_or(-1)
}

/// [`deliver`], with what webhook-spawn said.
pub fn deliver_output(sb: &Sandbox, id: &str, number: usize, agent: &str) -> std::process::Output {
    let meta = format!(r#"{{"number":"{number}","delivery":"{id}"}}"#);
    let args = format!(r#"["--as","{agent}"]"#);
    let vars = [
        ("LOCAL_WEBHOOK_SPAWN_KEY", "acme/widgets"),
        ("LOCAL_WEBHOOK_SPAWN_TOPIC", "github:acme/*"),
        ("LOCAL_WEBHOOK_SPAWN_EVENT", "issues"),
        ("LOCAL_WEBHOOK_SPAWN_META", meta.as_str()),
        ("AGENT_BOX_HOOK_SESSION_ARGS", args.as_str()),
    ];
    let batch = format!("[github] issue #{number} opened on acme/widgets\n");
    webhook_spawn(sb, &vars, batch.as_bytes()).get_output().clone()
}

/// The spawn records of every box, by the delivery they were admitted from: which boxes started it.
pub fn admissions(boxes: &[(&str, &Sandbox)]) -> BTreeMap<String, Vec<String>> {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (label, sb) in boxes {
        for line in sb.hook_log().into_iter().filter(|l| l["what"] == "spawn") {
            if let Some(key) = line["intake"].as_str() {
                seen.entry(key.to_owned()).or_default().push((*label).to_owned());
            }
        }
    }
    seen
}

fn claims_held(server: &Postgres) -> String {
    agent_box_tests::boxes::claims_table(server)
}

// BX-4, BX-5, BX-6
#[test]
fn two_boxes_given_the_same_deliveries_run_each_assignment_once() {
    let Some(server) = server() else { return };
    let boxes = [a_box(&server, 0, "box-a", 3, 30), a_box(&server, 1, "box-b", 3, 30)];
    for sb in &boxes {
        sb.start_supervisor();
    }
    for number in 1..=6 {
        for sb in &boxes {
            let agent = format!("i{number}");
            sb.agent(&agent).control("exit-after 1 0");
            assert_eq!(deliver(sb, &format!("d-{number}"), number, &agent), 0);
        }
    }
    let labelled = [("box-a", &boxes[0]), ("box-b", &boxes[1])];
    let dump = || {
        format!(
            "claims:\n{}\nlogs:\n{}\n{}",
            claims_held(&server),
            boxes[0].supervisor_log(),
            boxes[1].supervisor_log()
        )
    };
    wait_until_or(
        "every assignment admitted and every record ended",
        Duration::from_secs(120),
        || admissions(&labelled).len() == 6 && boxes.iter().all(|sb| sb.queue_records().is_empty()),
        dump,
    );
    let seen = admissions(&labelled);
    assert!(seen.values().all(|on| on.len() == 1), "one box each: {seen:?}\n{}", dump());
    let done = server.sql(ROLE, "SELECT count(*) FROM agent_box_claims WHERE done_at IS NOT NULL").unwrap();
    wait_until_or(
        "every claim done",
        Duration::from_secs(60),
        || server.sql(ROLE, "SELECT count(*) FROM agent_box_claims WHERE done_at IS NOT NULL").unwrap().trim() == "6",
        dump,
    );
    let _ = done;
    let elsewhere: usize = boxes
        .iter()
        .map(|sb| sb.hook_log().iter().filter(|l| l["what"] == "intake" && l["how"] == "elsewhere").count())
        .sum();
    assert!(elsewhere >= 1, "the losing box's records ended elsewhere: {}", dump());
    for sb in &boxes {
        for line in sb.hook_log().iter().filter(|l| l["what"] == "spawn") {
            assert!(line["box"].is_string(), "the spawn record names the claim's box: {line}");
        }
        let lease_keys: Vec<Value> =
            sb.lease_names().iter().filter_map(|n| sb.lease(n)).map(|l| l["claim"].clone()).collect();
        assert!(lease_keys.iter().all(Value::is_object), "{lease_keys:?}");
    }
}
