//! What the operator sees and does on a box that shares a claims database (issue 26, docs/boxes.md BX-6, BX-10):
//! `leases` names the claim's box, `boxes` lists the boxes and their live claims, `release` gives a claim up and the
//! other box takes the work over, saying so in its prompt.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agent_box_tests::fixtures::{session, stdout};
use agent_box_tests::postgres::ROLE;
use agent_box_tests::wait::wait_until_or;
use serde_json::Value;

use crate::boxes::{a_box, deliver, deliver_output, server};

// BX-6, BX-7, BX-10
#[test]
fn boxes_lists_the_claims_and_a_released_claim_is_taken_over_by_the_other_box() {
    let Some(server) = server() else { return };
    let (a, b) = (a_box(&server, 0, "box-a", 2, 30), a_box(&server, 1, "box-b", 2, 30));
    a.start_supervisor();
    a.agent("long").control("run");
    // W27: the batch waits for the claim, not for a slot.
    let said = deliver_output(&a, "d-9", 9, "long");
    let line = String::from_utf8_lossy(&said.stdout);
    assert!(said.status.success(), "{said:?}");
    assert!(line.starts_with("batch queued at position 1 of 1; several boxes share this dispatch"), "{line}");
    let dump = || {
        format!(
            "{}\n{}\n{}",
            a.supervisor_log(),
            b.supervisor_log(),
            server.sql(ROLE, "TABLE agent_box_claims").unwrap_or_default()
        )
    };
    wait_until_or("box-a runs the assignment", Duration::from_secs(60), || a.agent("long").starts() == 1, dump);
    b.start_supervisor();
    b.agent("taker").control("run");
    assert_eq!(deliver(&b, "d-9", 9, "taker"), 0);
    wait_until_or(
        "box-b's record waits elsewhere",
        Duration::from_secs(60),
        || b.queue_records().first().is_some_and(|r| r["elsewhere"] == "box-a"),
        dump,
    );
    let queue = stdout(&session(&b, &["queue"]).code(0));
    assert!(queue.contains("held by box box-a"), "{queue}");
    let leases = stdout(&session(&a, &["leases"]).code(0));
    assert!(leases.starts_with("BOX          NAME"), "the BOX column: {leases}");
    assert!(leases.lines().nth(1).is_some_and(|l| l.starts_with("box-a ")), "{leases}");
    let listed: Value = serde_json::from_str(&stdout(&session(&a, &["boxes", "--json"]).code(0))).unwrap();
    let mine = listed["boxes"].as_array().unwrap().iter().find(|x| x["box"] == "box-a").cloned().unwrap();
    assert_eq!(mine["live"][0]["assignment"], "github:acme/widgets#9", "{listed}");
    assert!(stdout(&session(&a, &["boxes"]).code(0)).contains("box-a (this box)"));
    let name = a.read_registry().names().find(|n| n.starts_with("hook-")).unwrap().to_owned();
    let released = session(&a, &["release", &name]).code(0);
    assert!(stdout(&released).contains("claim of github:acme/widgets#9 given up"), "{}", stdout(&released));
    assert!(a.lease(&name).is_none() && !a.read_registry().contains(&name));
    let end = a.hook_log().into_iter().rfind(|l| l["what"] == "end").unwrap();
    assert_eq!(end["how"], "released");
    wait_until_or("box-b takes the work over", Duration::from_secs(60), || b.agent("taker").starts() == 1, dump);
    let prompt = b.agent("taker").last().argv_strings().last().cloned().unwrap_or_default();
    assert!(
        prompt.contains("This assignment was first taken by box box-a, which gave it up or stopped answering"),
        "{prompt}"
    );
    session(&a, &["release", &name]).code(2);
}
