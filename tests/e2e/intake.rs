//! The durable intake queue from outside (issue 24, docs/intake.md): batches delivered by the receiver stand-in
//! (`agent_box_tests::receiver`, which follows 60-webhook-spawn §8.1 and IN-17) into a box whose real supervisor,
//! tmux and fake agents admit them. Each test names the rules it proves in the comment above it; the crash table
//! of IN-12 is in `intake/crash.rs`, the small fixed-seed burst in `intake/burst.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "intake/burst.rs"]
mod burst;
#[path = "intake/crash.rs"]
mod crash;

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use agent_box_tests::fixtures::{ok, stderr, tool};
use agent_box_tests::receiver::{Batch, Event, Fate, Receiver};
use agent_box_tests::{HeldLock, Sandbox, wait_until};
use serde_json::{Value, json};

/// `sb` with its claim-filter directory, an empty registry and `limit` session slots.
fn world(sb: Sandbox, limit: &str) -> Sandbox {
    fs::create_dir_all(filter_dir(&sb)).unwrap();
    sb.set_limit(limit);
    sb.write_registry(r#"{"version":1,"sessions":{}}"#);
    sb
}

fn filter_dir(sb: &Sandbox) -> PathBuf {
    sb.home().join(".local/state/local-webhook")
}

/// An `issues` event of acme/x issue `number` with delivery id `delivery`, whose session's agent is `agent`.
fn issue(delivery: &str, number: u64, agent: &str) -> Batch {
    let line = format!("[github] issue #{number} opened on acme/x (delivery {delivery})");
    Batch::one("acme/x", Event::issue(Some(delivery), number, &line)).as_agent(agent)
}

/// A listed entry that holds a slot (the supervisor starts it when one runs).
fn occupy(sb: &Sandbox, name: &str) {
    sb.add_entry(name, tool(json!({"extraArgs": ["--as", name]})));
}

/// The result line of a batch the receiver got exit 0 for.
fn done(fate: &Fate) -> String {
    assert!(fate.is_done(), "the batch was not acknowledged: {fate:?}");
    fate.stdout().to_owned()
}

/// The hook log's `spawn` records as `(name, intake key)`, in order.
fn spawns(sb: &Sandbox) -> Vec<(String, String)> {
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
    sb.hook_log().iter().filter(|l| l["what"] == "spawn").map(|l| (text(l, "name"), text(l, "intake"))).collect()
}

/// The hook log's intake lines of kind `how`.
fn intake_lines(sb: &Sandbox, how: &str) -> Vec<Value> {
    sb.hook_log().into_iter().filter(|l| l["what"] == "intake" && l["how"] == how).collect()
}

/// The listed `hook-*` sessions.
fn hook_names(sb: &Sandbox) -> Vec<String> {
    sb.read_registry().names().filter(|n| n.starts_with("hook-")).map(str::to_owned).collect()
}

/// The kickoff prompt agent `agent` got at its first start (the tool harness passes it last).
fn kickoff(sb: &Sandbox, agent: &str) -> String {
    sb.agent(agent).start(1).argv_strings().last().cloned().unwrap_or_default()
}

/// Every file under HOME but the hook log, with its bytes: what "nothing changed" compares.
fn files(sb: &Sandbox) -> BTreeMap<PathBuf, Vec<u8>> {
    let log = sb.paths().hook_log().to_path_buf();
    agent_box_tests::tree::below(sb.home())
        .into_iter()
        .filter(|p| p.is_file() && *p != log)
        .map(|p| {
            let bytes = fs::read(&p).unwrap_or_default();
            (p, bytes)
        })
        .collect()
}

/// The path of the queued record whose key is `key`.
fn record_path(sb: &Sandbox, key: &str) -> PathBuf {
    let dir = sb.paths().queue_dir();
    fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .find(|p| {
            let record: Value = serde_json::from_slice(&fs::read(p).unwrap()).unwrap_or_default();
            record["key"] == key
        })
        .unwrap_or_else(|| panic!("no queued record of key {key} in {}", dir.display()))
}

/// Makes the record of `key` `secs` older: its name's acceptance stamp (IN-1) moved back, as if it had been
/// accepted then. Returns its new path.
fn age(sb: &Sandbox, key: &str, secs: u64) -> PathBuf {
    let path = record_path(sb, key);
    let name = path.file_name().unwrap().to_str().unwrap().to_owned();
    let (stamp, rest) = name.split_once('-').unwrap();
    let older = stamp.parse::<u64>().unwrap() - secs * 1_000_000_000;
    let aged = path.with_file_name(format!("{older:020}-{rest}"));
    fs::rename(&path, &aged).unwrap();
    aged
}

// IN-3, IN-4
#[test]
fn a_redelivered_batch_is_acknowledged_once_changes_nothing_and_logs_one_duplicate_line() {
    let sb = world(Sandbox::new(), "1");
    let rx = Receiver::new(&sb);
    let admitted = issue("d-1", 7, "a1");
    let waiting = issue("d-2", 8, "a2");
    let unnamed = Batch::one("acme/x", Event::issue(None, 9, "[github] issue #9 opened on acme/x")).as_agent("a3");
    assert!(done(&rx.deliver(&admitted)).contains("added with a kickoff prompt"));
    assert!(done(&rx.deliver(&waiting)).contains("batch queued at position 1 of 1"));
    assert!(done(&rx.deliver(&unnamed)).contains("batch queued at position 2 of 2"));
    let name = hook_names(&sb).pop().unwrap();
    let before = files(&sb);
    let lines_before = sb.hook_log().len();
    let said = |batch: &Batch| done(&rx.deliver(batch));
    assert_eq!(said(&admitted), format!("delivery 'd-1' was already accepted (admitted as '{name}'); nothing changed"));
    assert_eq!(said(&waiting), "delivery 'd-2' was already accepted (queued); nothing changed");
    assert!(said(&unnamed).contains("was already accepted (queued)"), "a batch without an id is known by its inputs");
    assert_eq!(files(&sb), before, "a redelivery changes no file");
    let new: Vec<(Value, Value)> =
        sb.hook_log()[lines_before..].iter().map(|l| (l["how"].clone(), l["by"].clone())).collect();
    assert_eq!(
        new,
        [
            (json!("duplicate"), json!("admitted")),
            (json!("duplicate"), json!("queued")),
            (json!("duplicate"), json!("queued"))
        ],
        "one duplicate line per redelivery"
    );
    // The tombstone outlives the session: a redelivery after its end is still the same delivery (IN-4).
    ok(&sb, &["rm", &name]);
    let before = files(&sb);
    assert!(said(&admitted).contains("already accepted (admitted"));
    assert_eq!(files(&sb), before);
    assert_eq!(spawns(&sb).len(), 1, "one session for d-1, ever");
}

// IN-5, IN-11
#[test]
fn batches_for_one_object_that_wait_together_start_one_session_whose_prompt_carries_every_line() {
    let sb = world(Sandbox::new(), "1");
    occupy(&sb, "busy");
    let rx = Receiver::new(&sb);
    let first = issue("d-1", 7, "first");
    let mut comment = issue("d-2", 7, "second");
    comment.events[0].line = "[github] comment on issue #7 by bob: still broken".into();
    let other = issue("d-3", 8, "third");
    assert!(done(&rx.deliver(&first)).contains("batch queued at position 1 of 1"));
    assert_eq!(
        done(&rx.deliver(&comment)),
        "batch added to the queued assignment 'd-1' (position 1, 2 batches); one session starts for all of them"
    );
    assert!(done(&rx.deliver(&other)).contains("batch queued at position 2 of 2"));
    let records = sb.queue_records();
    assert_eq!(records.len(), 2, "one record per assignment");
    assert_eq!(records[0]["assignment"], "github:acme/x#7");
    assert_eq!(records[0]["batches"].as_array().unwrap().len(), 2);
    sb.set_limit("3");
    sb.once();
    wait_until("both sessions to start", || sb.agent("first").starts() == 1 && sb.agent("third").starts() == 1);
    let keys: Vec<String> = spawns(&sb).into_iter().map(|(_, key)| key).collect();
    assert_eq!(keys, ["d-1", "d-3"], "one session per assignment, in the order accepted");
    assert_eq!(sb.agent("second").starts(), 0, "the coalesced batch started nothing of its own");
    let prompt = kickoff(&sb, "first");
    let (opened, commented) = (prompt.find(&first.events[0].line), prompt.find(&comment.events[0].line));
    assert!(opened.is_some() && commented.is_some() && opened < commented, "every line, oldest first:\n{prompt}");
    assert!(!kickoff(&sb, "third").contains("still broken"));
    assert!(sb.queue_records().is_empty());
}

// IN-6, IN-11, IN-17
#[test]
fn a_full_box_acknowledges_every_batch_and_admits_the_waiting_ones_in_the_order_accepted() {
    let sb = world(Sandbox::in_slot(), "2");
    sb.start_supervisor();
    let rx = Receiver::new(&sb);
    let agents = ["a0", "a1", "a2", "a3", "a4"];
    for (i, agent) in agents.iter().enumerate() {
        sb.agent(agent).control(if i < 2 { "poll" } else { "exit-after 0.3 0" });
    }
    for (i, agent) in agents.iter().enumerate() {
        let said = done(&rx.deliver(&issue(&format!("d-{i}"), 10 + i as u64, agent)));
        let expected =
            if i < 2 { "added with a kickoff prompt".to_owned() } else { format!("position {0} of {0}", i - 1) };
        assert!(said.contains(&expected), "batch {i}: {said}");
    }
    assert!(rx.log().iter().all(|l| l.code == Some(0)) && rx.dropped().is_empty(), "a full box never answers 75");
    wait_until("the two admitted at once to start", || sb.agent("a0").starts() == 1 && sb.agent("a1").starts() == 1);
    assert_eq!((hook_names(&sb).len(), sb.queue_records().len()), (2, 3), "two slots, three waiting");
    sb.agent("a0").control("exit-now 0");
    wait_until("every waiting batch to be admitted and run", || {
        sb.queue_records().is_empty() && agents[2..].iter().all(|a| sb.agent(a).starts() == 1)
    });
    sb.agent("a1").control("exit-now 0");
    wait_until("every session to end and be reaped", || hook_names(&sb).is_empty());
    let keys: Vec<String> = spawns(&sb).into_iter().map(|(_, key)| key).collect();
    assert_eq!(keys, ["d-0", "d-1", "d-2", "d-3", "d-4"], "admitted once each, in the order accepted");
    assert!(agents.iter().all(|a| sb.agent(a).starts() == 1), "no session started twice");
    let started: Vec<_> = agents[2..].iter().map(|a| sb.agent(a).started_at(1).unwrap()).collect();
    assert!(started.windows(2).all(|w| w[0] <= w[1]), "oldest first: {started:?}");
    let queued: Vec<Value> = intake_lines(&sb, "queued").iter().map(|l| l["key"].clone()).collect();
    assert_eq!(queued, [json!("d-2"), json!("d-3"), json!("d-4")]);
}

// IN-9, IN-10, IN-4
#[test]
fn a_record_older_than_the_maximum_age_ends_expired_and_stays_visible() {
    let mut sb = world(Sandbox::new(), "1");
    sb.set_env("AGENT_BOX_QUEUE_MAX_AGE", "60");
    occupy(&sb, "busy");
    let rx = Receiver::new(&sb);
    let batch = issue("d-1", 7, "late");
    assert!(done(&rx.deliver(&batch)).contains("batch queued at position 1 of 1"));
    let aged = age(&sb, "d-1", 150);
    let said = stderr(&sb.once());
    assert!(
        said.contains("queued batch 'd-1' (github:acme/x#7) expired after 2 min without a free slot; it is kept as an unresolved row"),
        "L31: {said}"
    );
    assert!(sb.queue_records().is_empty(), "the record left the queue");
    let ended = sb.ended_records();
    assert_eq!(ended.len(), 1);
    assert_eq!((&ended[0]["key"], &ended[0]["outcome"]), (&json!("d-1"), &json!("expired")));
    assert!(ended[0]["endedAt"].is_string());
    let kept = sb.paths().queue_dir().join("ended").join(aged.file_name().unwrap());
    assert!(kept.is_file(), "kept under queue/ended/ by its own name");
    let end = intake_lines(&sb, "expired");
    assert_eq!(end.len(), 1);
    assert_eq!((&end[0]["key"], &end[0]["assignment"]), (&json!("d-1"), &json!("github:acme/x#7")));
    assert!(end[0]["waitedSeconds"].as_i64().unwrap() >= 150);
    assert!(done(&rx.deliver(&batch)).contains("already accepted (expired)"), "its key is remembered");
    assert!(hook_names(&sb).is_empty() && sb.agent("late").starts() == 0);
}

// IN-9, IN-10
#[test]
fn a_batch_past_the_maximum_count_ends_the_oldest_record_expired() {
    let mut sb = world(Sandbox::new(), "1");
    sb.set_env("AGENT_BOX_QUEUE_MAX", "2");
    occupy(&sb, "busy");
    let rx = Receiver::new(&sb);
    for (i, number) in [7, 8].into_iter().enumerate() {
        let said = done(&rx.deliver(&issue(&format!("d-{i}"), number, "x")));
        assert!(said.contains(&format!("position {0} of {0}", i + 1)), "{said}");
    }
    let said = done(&rx.deliver(&issue("d-2", 9, "x")));
    assert!(said.contains("batch queued at position 2 of 2"), "the newest waits, the stalest loses: {said}");
    let keys: Vec<Value> = sb.queue_records().iter().map(|r| r["key"].clone()).collect();
    assert_eq!(keys, [json!("d-1"), json!("d-2")]);
    let end = intake_lines(&sb, "expired");
    assert_eq!(end.len(), 1);
    assert_eq!(end[0]["key"], "d-0");
    let ended = sb.ended_records();
    assert_eq!((ended.len(), &ended[0]["key"], &ended[0]["outcome"]), (1, &json!("d-0"), &json!("expired")));
}

// IN-14
#[test]
fn a_waiting_record_whose_topic_a_live_session_claims_by_its_filter_ends_claimed_naming_it() {
    let sb = world(Sandbox::new(), "2");
    occupy(&sb, "busy");
    occupy(&sb, "owner");
    sb.once();
    sb.wait_live("owner");
    let rx = Receiver::new(&sb);
    let batch = issue("d-1", 7, "never");
    assert!(done(&rx.deliver(&batch)).contains("batch queued at position 1 of 1"));
    // While the batch waits, the operator's session takes the issue on (its receiver plugin writes the claim).
    let filter = json!({"enabled": true, "topics": [{
        "topic": "github:acme/x",
        "include": {"any": [{"path": "issue.number", "in": [7]}, {"path": "pull_request.number", "in": [7]}]},
    }]});
    fs::write(filter_dir(&sb).join("filter.agent-owner.json"), filter.to_string()).unwrap();
    ok(&sb, &["rm", "busy"]);
    let said = stderr(&sb.once());
    assert!(said.contains("queued batch 'd-1' ended claimed: live session 'owner' already claims its work"), "{said}");
    let end = intake_lines(&sb, "claimed");
    assert_eq!((end.len(), &end[0]["by"], &end[0]["key"]), (1, &json!("owner"), &json!("d-1")));
    assert!(sb.queue_records().is_empty() && hook_names(&sb).is_empty() && spawns(&sb).is_empty());
    assert!(done(&rx.deliver(&batch)).contains("already accepted (claimed as 'owner')"));
    assert_eq!(sb.agent("never").starts(), 0);
}

// IN-14, IN-11
#[test]
fn a_waiting_record_whose_object_a_live_hook_session_holds_a_lease_for_ends_claimed() {
    let sb = world(Sandbox::new(), "2");
    occupy(&sb, "busy");
    let rx = Receiver::new(&sb);
    assert!(done(&rx.deliver(&issue("d-1", 7, "first"))).contains("added"));
    let owner = hook_names(&sb).pop().unwrap();
    sb.once();
    sb.wait_live(&owner);
    // The box is full. #8 waits; a later event of #7 waits behind it as a record of its own (no record of #7
    // waits to join: #7's is the running session's).
    assert!(done(&rx.deliver(&issue("d-2", 8, "second"))).contains("batch queued at position 1 of 1"));
    assert!(done(&rx.deliver(&issue("d-3", 7, "third"))).contains("batch queued at position 2 of 2"));
    ok(&sb, &["rm", "busy"]);
    sb.set_limit("3");
    let said = stderr(&sb.once());
    assert!(said.contains(&format!("queued batch 'd-3' ended claimed: live session '{owner}'")), "{said}");
    let keys: Vec<String> = spawns(&sb).into_iter().map(|(_, key)| key).collect();
    assert_eq!(keys, ["d-1", "d-2"], "no second session for #7");
    assert!(sb.queue_records().is_empty());
    assert_eq!(sb.agent("third").starts(), 0);
}

// IN-14, IN-6
#[test]
fn a_second_batch_for_an_object_whose_session_was_just_admitted_is_claimed_before_it_runs() {
    // No supervisor runs: the first session is listed, leased and filtered but not started yet, which is how every
    // admitted session looks until the supervisor's next tick. The receiver would route the second event to it by
    // its filter; the queue must not start a second session beside it either.
    let sb = world(Sandbox::new(), "4");
    let rx = Receiver::new(&sb);
    assert!(done(&rx.deliver(&issue("d-1", 7, "first"))).contains("added"));
    let owner = hook_names(&sb).pop().unwrap();
    let said = done(&rx.deliver(&issue("d-2", 7, "second")));
    assert_eq!(
        said,
        format!("session '{owner}' already claims this work; no session was started (the batch ended claimed)")
    );
    assert_eq!((hook_names(&sb), spawns(&sb).len()), (vec![owner.clone()], 1));
    let end = intake_lines(&sb, "claimed");
    assert_eq!((end.len(), &end[0]["by"]), (1, &json!(owner)));
}

// IN-16
#[test]
fn an_admitted_prompt_says_how_long_its_events_waited_and_an_immediate_one_does_not() {
    let sb = world(Sandbox::new(), "1");
    occupy(&sb, "busy");
    let rx = Receiver::new(&sb);
    assert!(done(&rx.deliver(&issue("d-1", 7, "waited"))).contains("queued"));
    let accepted_at = sb.queue_records()[0]["acceptedAt"].as_str().unwrap().to_owned();
    age(&sb, "d-1", 3 * 3600 + 20 * 60 + 5);
    ok(&sb, &["rm", "busy"]);
    sb.once();
    wait_until("the admitted session to start", || sb.agent("waited").starts() == 1);
    let prompt = kickoff(&sb, "waited");
    let sentence = format!(
        "These events waited 3 h 20 min in this box's intake queue (the first was accepted at {accepted_at}) until a session slot freed: check that each still needs doing before you act on it."
    );
    assert!(prompt.contains(&sentence), "{prompt}");
    let (first_paragraph, _) = prompt.split_once("\n\n").unwrap();
    assert!(
        prompt[first_paragraph.len()..].trim_start().starts_with("These events waited"),
        "after the first paragraph"
    );
    sb.set_limit("2");
    assert!(done(&rx.deliver(&issue("d-2", 8, "at-once"))).contains("added"));
    sb.once();
    wait_until("the immediate session to start", || sb.agent("at-once").starts() == 1);
    assert!(!kickoff(&sb, "at-once").contains("waited"), "admitted as it arrived: the prompt of before");
}

// IN-7, IN-17
#[test]
fn the_receiver_retries_a_deferred_batch_until_it_is_recorded_and_drops_what_cannot_succeed() {
    let mut sb = world(Sandbox::new(), "2");
    sb.set_env("REGISTRY_LOCK_WAIT", "0.2");
    let rx = Receiver::new(&sb);
    let held = HeldLock::acquire(&sb.registry_lock_file(), Duration::ZERO).unwrap();
    let fate = std::thread::scope(|s| {
        let delivery = s.spawn(|| rx.deliver(&issue("d-1", 7, "retried")));
        wait_until("the first refusal", || rx.log().iter().any(|l| l.code == Some(75)));
        drop(held);
        delivery.join().unwrap()
    });
    assert!(matches!(&fate, Fate::Done { attempts, .. } if *attempts >= 2), "{fate:?}");
    assert!(fate.stdout().contains("added"));
    assert_eq!(spawns(&sb).len(), 1, "retried until recorded, recorded once");
    let refusal: Value =
        serde_json::from_slice(&fs::read(sb.state_dir().join("webhook-spawn-refused.json")).unwrap()).unwrap();
    assert_eq!((&refusal["live"], &refusal["max"]), (&Value::Null, &Value::Null), "not a capacity decision");
    sb.remove_env("AGENT_BOX_DEFAULT_AGENT");
    let rx = Receiver::new(&sb);
    let fate = rx.deliver(&issue("d-2", 8, "dropped"));
    assert!(matches!(fate, Fate::Dropped { code: Some(2), .. }), "{fate:?}");
    let log = rx.log();
    assert_eq!(log.len(), 2, "one run, then the drop: {log:?}");
    assert!(log[1].dropped && log[1].text.contains("AGENT_BOX_DEFAULT_AGENT"), "{log:?}");
    assert!(sb.queue_records().is_empty() && spawns(&sb).len() == 1, "nothing of a dropped batch was kept");
}
