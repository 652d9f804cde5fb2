//! Black-box tests of agent-box-webhook-spawn (60-webhook-spawn §12, 80 WH and LS scenarios): the real binary, a
//! temporary HOME and state directory, a private tmux socket with no server unless a test starts one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "cli/hostile.rs"]
mod hostile;

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_box_tests::fixtures::{OutputAssertExt, predicate, stderr, stdout, webhook_spawn, with_stdin};
use agent_box_tests::{HeldLock, Sandbox};
use agent_box_types::refusal::RefusalRecord;
use serde_json::{Value, json};

fn world() -> Sandbox {
    let mut sb = Sandbox::new();
    sb.set_env("AGENT_BOX_DEFAULT_AGENT", "claude");
    fs::create_dir_all(filter_dir(&sb)).unwrap();
    sb
}

fn filter_dir(sb: &Sandbox) -> PathBuf {
    sb.home().join(".local/state/local-webhook")
}

/// The refusal record, read into its type.
fn refusal_record(sb: &Sandbox) -> RefusalRecord {
    serde_json::from_slice(&fs::read(sb.state_dir().join("webhook-spawn-refused.json")).unwrap()).unwrap()
}

const BATCH: &[u8] = b"[github] issue #4242 opened on acme/widgets by alice: the login test is flaky\n";

fn keyed<'a>(key: &'a str, meta: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("LOCAL_WEBHOOK_SPAWN_KEY", key),
        ("LOCAL_WEBHOOK_SPAWN_TOPIC", "github:acme/*"),
        ("LOCAL_WEBHOOK_SPAWN_EVENT", "issues"),
        ("LOCAL_WEBHOOK_SPAWN_NOTE", "CI failures"),
        ("LOCAL_WEBHOOK_SPAWN_COUNT", "3"),
        ("LOCAL_WEBHOOK_SPAWN_META", meta),
    ]
}

/// The single hook name in the registry.
fn only_name(sb: &Sandbox) -> String {
    let doc = sb.read_registry();
    let names: Vec<&str> = doc.names().collect();
    assert_eq!(names.len(), 1, "{names:?}");
    names[0].to_owned()
}

fn filter_of(sb: &Sandbox, name: &str) -> Option<Value> {
    serde_json::from_slice(&fs::read(filter_dir(sb).join(format!("filter.agent-{name}.json"))).ok()?).ok()
}

fn prompt_of(sb: &Sandbox, name: &str) -> String {
    sb.entry(name).unwrap()["initialPrompt"].as_str().unwrap().to_owned()
}

fn tree(root: &Path) -> Vec<PathBuf> {
    agent_box_tests::tree::below(root)
}

fn queue(sb: &Sandbox) -> Vec<Value> {
    sb.queue_records()
}

fn is_hex(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[test]
fn help_and_a_usage_error() {
    let sb = world();
    sb.cmd("agent-box-webhook-spawn").arg("--help").assert().code(0);
    sb.cmd("agent-box-webhook-spawn").arg("--bogus").assert().code(2);
    sb.cmd("agent-box-webhook-spawn")
        .arg("--resolved-profile")
        .arg("x")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("'--resolved-profile' is not part of this build"));
}

// WH01
#[test]
fn an_empty_batch_writes_nothing() {
    let sb = world();
    let before = tree(sb.home());
    for stdin in [&b""[..], b"\n\n", b"  \n"] {
        webhook_spawn(&sb, &keyed("acme/widgets", "{}"), stdin).code(0).stdout("");
    }
    assert_eq!(tree(sb.home()), before);
}

// WH02, LS01
#[test]
fn an_accepted_batch_adds_the_entry_filter_lease_and_line() {
    let sb = world();
    let out = webhook_spawn(&sb, &keyed("acme/widgets", r#"{"number":"535"}"#), BATCH).code(0);
    let name = only_name(&sb);
    let suffix = name.strip_prefix("hook-acme-widgets-").unwrap();
    assert!(suffix.len() == 4 && is_hex(suffix), "{name}");
    out.stdout(format!(
        "session '{name}' (claude) added with a kickoff prompt — the supervisor starts it within ~2s\n"
    ));
    let entry = sb.entry(&name).unwrap();
    assert_eq!(
        (&entry["origin"], &entry["ephemeral"], &entry["workingDirectory"]),
        (&json!("webhook"), &json!(true), &Value::Null)
    );
    assert_eq!(entry["hook"], json!({"source": "github", "repository": "acme/widgets"}));
    let lease = sb.lease(&name).unwrap();
    let keys: Vec<&String> = lease.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["//", "topic", "object", "claimedAt", "gen", "outcome", "lastSeenAt", "intake"]);
    let key = lease["intake"].as_str().unwrap();
    assert!(key.starts_with("sha256:") && key.len() == 71, "IN-3: a batch without a delivery id: {key}");
    assert_eq!((&lease["topic"], &lease["object"]), (&json!("github:acme/widgets"), &json!("535")));
    assert!(base::is_uuid(lease["gen"].as_str().unwrap()));
    assert_eq!((&lease["outcome"], &lease["lastSeenAt"]), (&Value::Null, &Value::Null));
    let mode = |p: &Path| fs::metadata(p).unwrap().mode() & 0o777;
    assert_eq!(mode(&sb.lease_path(&name)), 0o600);
    assert_eq!(mode(&sb.state_dir().join("lease/.lock")), 0o600);
    assert_eq!(mode(&sb.state_dir().join("lease")), 0o700);
    let log = sb.hook_log();
    assert_eq!(log.len(), 1);
    assert_eq!(
        (&log[0]["what"], &log[0]["name"], &log[0]["count"], &log[0]["event"]),
        (&json!("spawn"), &json!(name), &json!(3), &json!("issues"))
    );
    assert_eq!(log[0]["intake"], lease["intake"], "IN-11: the spawn record names the record it was admitted from");
    assert!(filter_of(&sb, &name).is_some());
    assert!(queue(&sb).is_empty(), "admitted at once: nothing waits");
}

// WH02
#[test]
fn names_for_unset_unicode_and_long_keys() {
    let sb = world();
    webhook_spawn(&sb, &[("LOCAL_WEBHOOK_SPAWN_TOPIC", "github:acme/*")], BATCH).code(0);
    let name = only_name(&sb);
    assert!(name.starts_with("hook-event-") && is_hex(&name[11..]) && name.len() == 15, "{name}");
    assert!(filter_of(&sb, &name).is_none() && sb.lease(&name).is_none() && sb.hook_log().is_empty());
    assert!(!prompt_of(&sb, &name).contains("already subscribed"));
    for (key, prefix) in [
        ("é/x", "hook----x-"),
        ("acme/local-channels", "hook-acme-local-channels-"),
        ("acme/local-channels-staging", "hook-acme-local-channels-staging-"),
    ] {
        let sb = world();
        webhook_spawn(&sb, &keyed(key, "{}"), BATCH).code(0);
        assert!(only_name(&sb).starts_with(prefix), "{key}");
    }
    let sb = world();
    webhook_spawn(&sb, &keyed(&"k".repeat(140), "{}"), BATCH).code(0);
    assert_eq!(only_name(&sb).len(), 150);
    for len in [141, 200, 211] {
        let sb = world();
        let key = "k".repeat(len);
        let out = webhook_spawn(&sb, &keyed(&key, "{}"), BATCH).code(0);
        let name = only_name(&sb);
        assert!(name.len() == 13 && is_hex(&name[5..]), "{name}");
        out.stderr(predicate::str::contains("does not fit a session name (at most 150 characters)"))
            .stderr(predicate::str::contains(format!("this session is called '{name}' instead")));
        assert_eq!(sb.lease(&name).unwrap()["topic"], json!(format!("github:{key}")));
    }
}

// WH03
#[test]
fn claim_shapes() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            r#"{"event":"issues","action":"assigned","number":"4242"}"#,
            json!({"any":[{"path":"issue.number","in":[4242]},{"path":"pull_request.number","in":[4242]}]}),
            "acme/numbered#4242 (issues.assigned)",
        ),
        (
            r#"{"number":4242}"#,
            json!({"any":[{"path":"issue.number","in":[4242]},{"path":"pull_request.number","in":[4242]}]}),
            "#4242",
        ),
        (
            r#"{"number":"4242","sha":"da73cb1234"}"#,
            json!({"any":[{"path":"issue.number","in":[4242]},{"path":"pull_request.number","in":[4242]}]}),
            "#4242",
        ),
    ];
    for (meta, include, in_note) in cases {
        let sb = world();
        webhook_spawn(&sb, &keyed("acme/numbered", meta), BATCH).code(0);
        let filter = filter_of(&sb, &only_name(&sb)).unwrap();
        assert_eq!(filter["topics"][0]["include"], include, "{meta}");
        assert!(filter["topics"][0]["note"].as_str().unwrap().contains(in_note), "{meta}");
        assert_eq!(sb.lease(&only_name(&sb)).unwrap()["object"], json!("4242"));
    }
    let sb = world();
    let meta = r#"{"sha":"da73cb12ee","branch":"master","event":"check_run"}"#;
    webhook_spawn(&sb, &keyed("acme/shaclaim", meta), BATCH).code(0);
    let topic = &filter_of(&sb, &only_name(&sb)).unwrap()["topics"][0];
    let paths: Vec<&str> =
        topic["include"]["any"].as_array().unwrap().iter().map(|c| c["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths,
        [
            "workflow_run.head_sha",
            "workflow_job.head_sha",
            "check_run.head_sha",
            "check_suite.head_sha",
            "deployment.sha",
            "sha"
        ]
    );
    assert!(topic["include"].get("all").is_none());
    let note = topic["note"].as_str().unwrap();
    assert!(note.contains("acme/shaclaim@da73cb12") && note.contains("on master") && note.contains("THAT COMMIT"));
    for meta in [
        r#"{"number":"n/a"}"#,
        r#"{"sha":"HEAD"}"#,
        r#"{"sha":"DA73CB12"}"#,
        r#"{"number":"1234567890123456789"}"#,
        "{}",
        "",
    ] {
        let sb = world();
        webhook_spawn(&sb, &keyed("acme/fb", meta), BATCH).code(0);
        let topic = &filter_of(&sb, &only_name(&sb)).unwrap()["topics"][0];
        assert!(topic["include"].get("all").is_some(), "{meta}: fallback");
        let note = topic["note"].as_str().unwrap();
        assert!(note.contains("TOPIC BRANCHES") && !note.contains('#'), "{meta}");
        assert_eq!(sb.lease(&only_name(&sb)).unwrap()["object"], Value::Null);
    }
    let big = format!("{{\"x\":\"{}\"}}", "a".repeat(100 * 1024));
    for meta in ["not json", "[1]", big.as_str()] {
        let sb = world();
        let out = webhook_spawn(&sb, &keyed("acme/bad", meta), BATCH).code(0);
        out.stderr(predicate::str::contains(
            "LOCAL_WEBHOOK_SPAWN_META is not a JSON object; this session claims nothing",
        ));
        let topic = &filter_of(&sb, &only_name(&sb)).unwrap()["topics"][0];
        assert!(topic.get("include").is_none());
        assert!(
            topic["note"].as_str().unwrap().starts_with("seeded at spawn: started for an event on github:acme/bad;")
        );
    }
}

// WH03
#[test]
fn filter_document_shape() {
    let sb = world();
    webhook_spawn(&sb, &keyed("acme/widgets", r#"{"number":"535"}"#), BATCH).code(0);
    let name = only_name(&sb);
    let path = filter_dir(&sb).join(format!("filter.agent-{name}.json"));
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    let filter = filter_of(&sb, &name).unwrap();
    let keys: Vec<&String> = filter.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["//", "enabled", "ttlHours", "topics"]);
    let topic = filter["topics"][0].as_object().unwrap();
    let keys: Vec<&String> = topic.keys().collect();
    assert_eq!(keys, ["topic", "note", "include", "ignoreSenders", "renewOnEvent", "subscribedAt", "lastActivityAt"]);
    assert_eq!(topic["topic"], json!("github:acme/widgets"));
    let at = topic["subscribedAt"].as_str().unwrap();
    assert!(at.ends_with(".000Z") && topic["lastActivityAt"] == json!(at));
}

// WH04, LS02
#[test]
fn lease_and_log_per_spawn() {
    let sb = world();
    for batch in [BATCH, b"[github] issue #4243 opened on acme/widgets by bob\n"] {
        webhook_spawn(&sb, &keyed("acme/widgets", "{}"), batch).code(0);
    }
    let doc = sb.read_registry();
    let names: Vec<&str> = doc.names().collect();
    assert_eq!(names.len(), 2, "two batches, two assignments");
    let gens: Vec<Value> = names.iter().map(|n| sb.lease(n).unwrap()["gen"].clone()).collect();
    assert_ne!(gens[0], gens[1]);
    let sb = world();
    let mut vars = keyed("acme/widgets", r#"{"number":"n/a"}"#);
    vars.retain(|(k, _)| *k != "LOCAL_WEBHOOK_SPAWN_COUNT");
    vars.push(("LOCAL_WEBHOOK_SPAWN_COUNT", "x"));
    webhook_spawn(&sb, &vars, BATCH).code(0);
    assert_eq!(sb.hook_log()[0]["count"], Value::Null);
    assert_eq!(sb.lease(&only_name(&sb)).unwrap()["object"], Value::Null, "LS03");
}

// LS03
#[test]
fn a_non_numeric_number_stores_a_null_object() {
    let sb = world();
    webhook_spawn(&sb, &keyed("acme/x", r#"{"number":"n/a"}"#), BATCH).code(0);
    let name = only_name(&sb);
    assert_eq!(sb.lease(&name).unwrap()["object"], Value::Null);
    assert_eq!(sb.hook_log()[0]["object"], Value::Null);
}

// WH05, WH06
#[test]
fn the_prompt() {
    let sb = world();
    let armed = b"[github] issue #7 assigned on acme/x by bob\n";
    webhook_spawn(&sb, &keyed("acme/x", "{}"), armed).code(0);
    let prompt = prompt_of(&sb, &only_name(&sb));
    for needle in [
        "webhook dispatcher",
        "github:acme/*",
        "(\"CI failures\")",
        "triage a new issue",
        "UNTRUSTED",
        "agent-box-session rm hook-",
        "already subscribed to github:acme/x",
        "may ASSIGN an issue or PR to this box",
        "confirm the assignee first",
        "gh issue view",
    ] {
        assert!(prompt.contains(needle), "missing {needle:?}");
    }
    assert!(prompt.ends_with("[github] issue #7 assigned on acme/x by bob"));
    for batch in [
        &b"[github] issue #8 opened on acme/x"[..],
        b"[github] issue #9 unassigned on acme/x",
        b"[github] issue #9 edited\n assigned on acme/x",
    ] {
        let sb = world();
        webhook_spawn(&sb, &keyed("acme/x", "{}"), batch).code(0);
        assert!(!prompt_of(&sb, &only_name(&sb)).contains("may ASSIGN"));
    }
}

fn filler(sb: &Sandbox) {
    sb.write_registry(r#"{"version":1,"sessions":{"filler":{"agent":"tool"}}}"#);
}

// WH07, LS14, IN-6
#[test]
fn a_full_box_queues_the_batch_and_a_retry_is_a_duplicate() {
    let sb = world();
    sb.set_limit("1");
    filler(&sb);
    let before = fs::read(sb.registry()).unwrap();
    let out = webhook_spawn(&sb, &keyed("acme/widgets", "{}"), BATCH).code(0);
    out.stdout(
        "batch queued at position 1 of 1 (the box is full: 1 of 1 session slots in use); the supervisor starts a session for it when a slot frees (agent-box-session queue lists it)\n",
    );
    assert_eq!(fs::read(sb.registry()).unwrap(), before, "no entry yet");
    assert_eq!(fs::read_dir(filter_dir(&sb)).unwrap().count(), 0, "no filter yet");
    assert!(sb.lease_names().is_empty(), "no lease yet");
    assert!(!sb.state_dir().join("webhook-spawn-refused.json").exists(), "a full box is not a refusal");
    let records = queue(&sb);
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(
        (&record["source"], &record["routingKey"], &record["topic"]),
        (&json!("github"), &json!("acme/widgets"), &json!("github:acme/*"))
    );
    assert_eq!(record["batches"][0]["text"], json!(std::str::from_utf8(BATCH).unwrap().trim_end()));
    assert_eq!(
        (&record["harness"], &record["seed"], &record["batches"][0]["count"]),
        (&json!("claude"), &json!(true), &json!(3))
    );
    let log = sb.hook_log();
    assert_eq!((&log[0]["what"], &log[0]["how"], &log[0]["key"]), (&json!("intake"), &json!("queued"), &record["key"]));
    let again = webhook_spawn(&sb, &keyed("acme/widgets", "{}"), BATCH).code(0);
    assert!(stdout(&again).contains("was already accepted (queued); nothing changed"), "{}", stdout(&again));
    assert_eq!(queue(&sb), records, "IN-3: the retry changed nothing");
    assert_eq!(sb.hook_log().last().unwrap()["how"], json!("duplicate"));
}

/// One more distinct batch, which must be queued behind the `waited` ones, for `why`.
fn queues(sb: &Sandbox, vars: &[(&str, &str)], why: &str, waited: &mut usize) {
    let out = webhook_spawn(sb, vars, format!("event {waited}\n").as_bytes()).code(0);
    *waited += 1;
    let text = stdout(&out);
    assert!(text.contains(&format!("batch queued at position {waited} of {waited}")), "{text}");
    assert!(*waited > 1 || text.contains(why), "{why}: {text}");
    assert_eq!(queue(sb).len(), *waited);
}

// WH08, IN-6, IN-7
#[test]
fn only_a_batch_nothing_could_be_written_of_is_deferred() {
    let sb = world();
    filler(&sb);
    let before = fs::read(sb.registry()).unwrap();
    {
        let _held = HeldLock::acquire(&sb.registry().with_extension("json.lock"), Duration::ZERO).unwrap();
        let mut vars = keyed("acme/widgets", "{}");
        vars.push(("REGISTRY_LOCK_WAIT", "1"));
        let start = Instant::now();
        let out = webhook_spawn(&sb, &vars, BATCH);
        assert!(start.elapsed() < Duration::from_secs(10));
        out.code(75).stderr(predicate::str::contains("could not lock"));
        assert_eq!(fs::read(sb.registry()).unwrap(), before);
        assert!(queue(&sb).is_empty() && sb.hook_log().is_empty(), "nothing written");
        assert_eq!(refusal_record(&sb).count, 1);
    }
    let mut waited = 0;
    for limit in ["0", "lots"] {
        sb.set_limit(limit);
        queues(&sb, &keyed("acme/widgets", "{}"), "cannot check session capacity", &mut waited);
    }
    sb.set_limit("8");
    // A waiting record makes later ones queue behind it whatever the box says: start each case from an empty queue.
    sb.clear_queue();
    waited = 0;
    let no_tmux = [("AGENT_BOX_TMUX_BIN", "/nonexistent/tmux"), ("LOCAL_WEBHOOK_SPAWN_KEY", "acme/w")];
    queues(&sb, &no_tmux, "cannot check session capacity", &mut waited);
    sb.clear_queue();
    waited = 0;
    fs::write(sb.registry(), b"not json").unwrap();
    queues(&sb, &keyed("acme/widgets", "{}"), "does not parse", &mut waited);
    assert_eq!(fs::read(sb.registry()).unwrap(), b"not json", "never quarantined by the spawner");
    assert_eq!(refusal_record(&sb).count, 1, "none of these was a refusal");
    fs::remove_dir_all(sb.state_dir().join("queue")).unwrap();
    fs::write(sb.state_dir().join("queue"), "not a directory\n").unwrap();
    let out = webhook_spawn(&sb, &keyed("acme/widgets", "{}"), b"one more\n").code(75);
    assert!(stderr(&out).contains("the batch was not queued"), "{}", stderr(&out));
    assert_eq!(refusal_record(&sb).count, 2);
}

// WH09, IN-6
#[test]
fn eight_concurrent_spawns_at_limit_four() {
    for harness in ["claude", "shell"] {
        for round in 0..10 {
            let mut sb = world();
            sb.set_limit("4");
            sb.set_env("AGENT_BOX_DEFAULT_AGENT", harness);
            let children: Vec<_> = (0..8)
                .map(|i| {
                    let mut cmd = sb.cmd("agent-box-webhook-spawn");
                    cmd.env("LOCAL_WEBHOOK_SPAWN_KEY", "acme/widgets")
                        .env("LOCAL_WEBHOOK_SPAWN_META", format!(r#"{{"delivery":"d-{i}"}}"#))
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::null());
                    let mut child = cmd.spawn().unwrap();
                    child.stdin.take().unwrap().write_all(BATCH).unwrap();
                    child
                })
                .collect();
            let outputs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
            assert!(
                outputs.iter().all(|o| o.status.code() == Some(0)),
                "{harness} round {round}: a full box never answers 75"
            );
            let said =
                |what: &str| outputs.iter().filter(|o| String::from_utf8_lossy(&o.stdout).contains(what)).count();
            assert_eq!(
                (said("added with a kickoff prompt"), said("batch queued at position")),
                (4, 4),
                "{harness} round {round}"
            );
            let doc = sb.read_registry();
            let names: Vec<&str> = doc.names().collect();
            assert_eq!(names.len(), 4);
            assert!(
                names.iter().all(|n| n.starts_with("hook-") && filter_of(&sb, n).is_some() && sb.lease(n).is_some())
            );
            assert_eq!(fs::read_dir(filter_dir(&sb)).unwrap().count(), 4);
            let spawns: Vec<Value> = sb.hook_log().into_iter().filter(|l| l["what"] == "spawn").collect();
            assert_eq!(spawns.len(), 4);
            let waiting = queue(&sb);
            assert_eq!(waiting.len(), 4);
            let mut keys: Vec<&str> = spawns.iter().map(|l| l["intake"].as_str().unwrap()).collect();
            keys.extend(waiting.iter().map(|r| r["key"].as_str().unwrap()));
            keys.sort_unstable();
            keys.dedup();
            assert_eq!(keys.len(), 8, "every delivery is admitted or queued, once");
        }
    }
}

// WH10
#[test]
fn hostile_input() {
    let sb = world();
    let vars = vec![
        ("LOCAL_WEBHOOK_SPAWN_KEY", "acme/x"),
        ("AGENT_BOX_HOOK_SESSION_ARGS", "[\"--model\",\"sonnet\",\"two\\nlines\"]"),
    ];
    webhook_spawn(&sb, &vars, b"a\0b \xff\n").code(0);
    let name = only_name(&sb);
    assert_eq!(sb.entry(&name).unwrap()["extraArgs"], json!(["--model", "sonnet", "two\nlines"]));
    assert!(!fs::read(sb.registry()).unwrap().windows(6).any(|w| w == b"\\u0000"));
    assert!(prompt_of(&sb, &name).ends_with("a\u{fffd}b \u{fffd}"));
    for args in ["not json", "{}", "[1]", "[\"a\\u0000b\"]"] {
        let sb = world();
        webhook_spawn(&sb, &[("LOCAL_WEBHOOK_SPAWN_KEY", "acme/x"), ("AGENT_BOX_HOOK_SESSION_ARGS", args)], BATCH)
            .code(0)
            .stderr(predicate::str::contains("AGENT_BOX_HOOK_SESSION_ARGS is not a JSON array of strings"));
        assert_eq!(sb.entry(&only_name(&sb)).unwrap()["extraArgs"], json!([]));
    }
    for filler_char in ["x", "'"] {
        let sb = world();
        let mut big: String = (0..20_000).map(|i| format!("[github] event {i} {}\n", filler_char.repeat(40))).collect();
        big.push_str("[github] the newest line\n");
        webhook_spawn(&sb, &[("LOCAL_WEBHOOK_SPAWN_KEY", "acme/x")], big.as_bytes()).code(0);
        let prompt = prompt_of(&sb, &only_name(&sb));
        let quoted = prompt.len() + 3 * prompt.matches('\'').count();
        assert!(quoted <= 96 * 1024, "{quoted}");
        assert!(prompt.contains("earlier line(s) of this batch were left out to keep the prompt small"));
        assert!(prompt.ends_with("[github] the newest line"));
    }
    let sb = world();
    let out = webhook_spawn(
        &sb,
        &[("LOCAL_WEBHOOK_SPAWN_KEY", "acme/x"), ("LOCAL_WEBHOOK_SPAWN_SOURCE", "bad source!")],
        BATCH,
    );
    out.code(0).stderr(predicate::str::contains("the event key or source cannot be claimed"));
    let name = only_name(&sb);
    assert!(sb.entry(&name).unwrap().get("hook").is_none() && sb.lease(&name).is_none());
}

// WH11
#[test]
fn a_missing_filter_directory_starts_unsubscribed() {
    let sb = world();
    fs::remove_dir_all(filter_dir(&sb)).unwrap();
    webhook_spawn(&sb, &keyed("acme/x", "{}"), BATCH)
        .code(0)
        .stderr(predicate::str::contains("the session starts unsubscribed, so its CI may start a duplicate"));
    let name = only_name(&sb);
    assert!(!prompt_of(&sb, &name).contains("already subscribed"));
    assert!(sb.lease(&name).is_some());
}

// WH12
#[test]
fn render_mode_writes_nothing() {
    let mut sb = world();
    fs::write(
        filter_dir(&sb).join("filter.dispatch.json"),
        r#"{"topics":[{"topic":"github:acme/*","name":"","spawnConfig":{"profile":"reviewer"}}]}"#,
    )
    .unwrap();
    sb.set_env("AGENT_BOX_HOOK_SESSION_ARGS", "not json");
    let before = tree(sb.home());
    let out = sb.cmd("agent-box-webhook-spawn").args(["--preamble", "github:acme/*", "CI failures"]).assert().code(0);
    let text = stdout(&out);
    assert!(text.starts_with("Launch command — what a match starts, with the prompt below:\n  claude\n"));
    assert!(text.contains("'reviewer' from the watch's spawnConfig — IGNORED"));
    assert!(text.contains("IGNORED, not a JSON array of strings"));
    assert!(text.contains("the fleet-wide default"));
    assert!(text.contains("hook-<key>-<hex>") && text.contains("(\"CI failures\")"));
    assert_eq!(tree(sb.home()), before);
    sb.remove_env("AGENT_BOX_DEFAULT_AGENT");
    sb.cmd("agent-box-webhook-spawn")
        .args(["--preamble", "github:acme/*"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("<the box default harness>"));
}

// LS11
#[test]
fn a_full_hook_log_is_trimmed_and_made_private() {
    let sb = world();
    fs::create_dir_all(sb.state_dir()).unwrap();
    let log = sb.state_dir().join("hook-sessions.jsonl");
    fs::write(&log, (0..400).map(|i| format!("{{\"n\":{i}}}\n")).collect::<String>()).unwrap();
    fs::set_permissions(&log, fs::Permissions::from_mode(0o644)).unwrap();
    webhook_spawn(&sb, &keyed("acme/x", "{}"), BATCH).code(0);
    let text = fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 200);
    assert!(text.lines().last().unwrap().contains("\"what\":\"spawn\""));
    assert_eq!(fs::metadata(&log).unwrap().mode() & 0o777, 0o600);
}

// LS12
#[test]
fn a_busy_hook_log_skips_the_line_only() {
    let sb = world();
    fs::create_dir_all(sb.state_dir()).unwrap();
    let _held = HeldLock::acquire(&sb.state_dir().join("hook-sessions.jsonl.lock"), Duration::ZERO).unwrap();
    webhook_spawn(&sb, &keyed("acme/x", "{}"), BATCH).code(0);
    assert!(sb.hook_log().is_empty());
    assert!(sb.lease(&only_name(&sb)).is_some());
}

#[test]
fn configuration_errors_drop_the_batch() {
    let mut sb = world();
    sb.remove_env("AGENT_BOX_DEFAULT_AGENT");
    webhook_spawn(&sb, &keyed("acme/x", "{}"), BATCH)
        .code(2)
        .stderr(predicate::str::contains("AGENT_BOX_DEFAULT_AGENT is not set to a harness name"));
    sb.set_env("AGENT_BOX_DEFAULT_AGENT", "nope");
    webhook_spawn(&sb, &keyed("acme/x", "{}"), BATCH)
        .code(2)
        .stderr(predicate::str::contains("harness 'nope' is not available"));
    sb.set_env("AGENT_BOX_DEFAULT_AGENT", "claude");
    sb.set_env("HOME", "relative");
    webhook_spawn(&sb, &keyed("acme/x", "{}"), BATCH).code(2);
    assert!(!sb.registry().exists());
}

// WH11, IN-11
#[test]
fn a_failed_registry_write_removes_the_filter_and_keeps_the_record_queued() {
    use agent_box_tests::privilege::{chown_tree, unprivileged};
    let sb = world();
    filler(&sb);
    fs::write(sb.registry().with_extension("json.lock"), b"").unwrap();
    fs::create_dir_all(sb.state_dir()).unwrap();
    chown_tree(sb.root());
    chown_tree(sb.tmux_dir());
    let conf = sb.registry().parent().unwrap().to_path_buf();
    fs::set_permissions(&conf, fs::Permissions::from_mode(0o500)).unwrap();
    let before = fs::read(sb.registry()).unwrap();
    let mut cmd = sb.cmd("agent-box-webhook-spawn");
    for (k, v) in keyed("acme/widgets", "{}") {
        cmd.env(k, v);
    }
    let out = with_stdin(unprivileged(&cmd), BATCH);
    fs::set_permissions(&conf, fs::Permissions::from_mode(0o700)).unwrap();
    out.code(0).stdout(predicate::str::contains("batch queued at position 1 of 1 (could not write"));
    assert_eq!(fs::read(sb.registry()).unwrap(), before);
    assert_eq!(
        fs::read_dir(filter_dir(&sb)).unwrap().count(),
        0,
        "the filter written before the failed insert is removed"
    );
    // Issue 18: the lease was created (after its spawn record) and is removed again; the spawn record gets its end.
    assert!(sb.lease_names().is_empty());
    let hows: Vec<Value> = sb.hook_log().iter().map(|l| l["how"].clone()).collect();
    assert_eq!(
        hows,
        [Value::Null, json!("refused"), json!("queued")],
        "a spawn record, its refused end, the record queued"
    );
    assert_eq!(queue(&sb).len(), 1, "the batch waits for a later admission");
    let intents = fs::read_dir(sb.state_dir().join("queue"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "admit"))
        .count();
    assert_eq!(intents, 0, "the failed admission's intent is taken back");
}

// WH14, IN-3, IN-11
#[test]
fn a_batch_retried_three_times_on_a_full_box_is_admitted_once() {
    let sb = world();
    sb.set_limit("1");
    filler(&sb);
    for _ in 0..3 {
        webhook_spawn(&sb, &keyed("acme/widgets", r#"{"delivery":"72d3162e"}"#), BATCH).code(0);
    }
    assert_eq!(queue(&sb).len(), 1);
    assert_eq!(queue(&sb)[0]["key"], json!("72d3162e"), "IN-2: the delivery id is the key");
    assert_eq!(fs::read_dir(filter_dir(&sb)).unwrap().count(), 0);
    sb.edit_registry(|doc| {
        doc.remove(&base::SessionName::parse("filler").unwrap());
    });
    sb.once();
    let name = only_name(&sb);
    assert_eq!(fs::read_dir(filter_dir(&sb)).unwrap().count(), 1);
    assert_eq!(sb.lease_names(), std::slice::from_ref(&name));
    assert_eq!(sb.lease(&name).unwrap()["intake"], json!("72d3162e"));
    let spawns: Vec<Value> = sb.hook_log().into_iter().filter(|l| l["what"] == "spawn").collect();
    assert_eq!((spawns.len(), &spawns[0]["name"]), (1, &json!(name)));
    assert!(queue(&sb).is_empty());
    let late = webhook_spawn(&sb, &keyed("acme/widgets", r#"{"delivery":"72d3162e"}"#), BATCH).code(0);
    assert!(stdout(&late).contains(&format!("was already accepted (admitted as '{name}')")), "{}", stdout(&late));
    assert_eq!(only_name(&sb), name, "a redelivery after the admission starts nothing");
}

// WH15
#[test]
fn the_prompt_carries_the_peers_report() {
    let sb = world();
    sb.write_registry(r#"{"version":1,"sessions":{"main":{"agent":"tool"},"helper":{"agent":"codex","workingDirectory":"/home/agent/src"}}}"#);
    for name in ["main", "helper"] {
        agent_box_tests::fixtures::pane(&sb, name);
        let filter = json!({"enabled": true, "topics": [{"topic": format!("github:acme/{name}"), "include": {"any": []}, "note": "busy\twith it"}]});
        fs::write(filter_dir(&sb).join(format!("filter.agent-{name}.json")), filter.to_string()).unwrap();
    }
    let peers = sb.cmd("agent-box-session").arg("peers").assert().code(0);
    let report = stdout(&peers);
    webhook_spawn(&sb, &keyed("acme/x", "{}"), BATCH).code(0);
    let name = sb.read_registry().names().find(|n| n.starts_with("hook-")).unwrap().to_owned();
    let prompt = prompt_of(&sb, &name);
    assert!(prompt.contains(&format!("\n\n{}\n\n", report.trim_end_matches('\n'))), "peers block missing:\n{prompt}");
}

/// Issue 18 item 3 with issue 24: when the lease cannot be created no session starts untracked; the record stays
/// queued (nothing of the session is written: no entry, filter or spawn record) and a later admission retries it.
/// The lease directory's path is taken by a regular file (which stops root too).
#[test]
fn a_batch_whose_lease_cannot_be_created_waits_instead_of_running_untracked() {
    let sb = world();
    fs::create_dir_all(sb.state_dir()).unwrap();
    fs::write(sb.state_dir().join("lease"), "not a directory\n").unwrap();
    let out = webhook_spawn(&sb, &keyed("acme/widgets", r#"{"number":"535"}"#), BATCH).code(0);
    assert!(stdout(&out).contains("(could not create the lease"), "{}", stdout(&out));
    let listed = registry::read(&sb.registry()).document_or_empty().map(|d| d.names().count());
    assert!(matches!(listed, Some(0) | None), "no entry: {listed:?}");
    assert_eq!(fs::read_dir(filter_dir(&sb)).unwrap().count(), 0, "no filter");
    let whats: Vec<Value> = sb.hook_log().iter().map(|l| l["how"].clone()).collect();
    assert_eq!(whats, [json!("queued")], "{:#?}", sb.hook_log());
    assert_eq!(queue(&sb).len(), 1);
    assert_eq!(queue(&sb)[0]["assignment"], json!("github:acme/widgets#535"));
}

// Issue 25 (docs/reference.md, "Extra arguments for claude"): AGENT_BOX_HOOK_SESSION_ARGS that end in an option of
// claude's that takes a value would hand it the `--` and the prompt; like W4, the session starts without them
// (the batch is not lost), and says so. A value after the option, or another harness, keeps them.
#[test]
fn hook_args_ending_in_a_claude_value_option_are_left_out_with_a_warning() {
    let sb = world();
    let args = r#"["--model","sonnet","--add-dir"]"#;
    webhook_spawn(&sb, &[("LOCAL_WEBHOOK_SPAWN_KEY", "acme/x"), ("AGENT_BOX_HOOK_SESSION_ARGS", args)], BATCH)
        .code(0)
        .stderr(predicate::str::contains(
            "agent-box-webhook-spawn: AGENT_BOX_HOOK_SESSION_ARGS ends in '--add-dir', which takes a value: claude would take the prompt for it; starting without extra arguments\n",
        ));
    assert_eq!(sb.entry(&only_name(&sb)).unwrap()["extraArgs"], json!([]));
    for (agent, args, kept) in [
        ("claude", r#"["--add-dir","/srv/a","--model","sonnet"]"#, json!(["--add-dir", "/srv/a", "--model", "sonnet"])),
        ("tool", r#"["--add-dir"]"#, json!(["--add-dir"])),
    ] {
        let sb = world();
        let vars = [("LOCAL_WEBHOOK_SPAWN_KEY", "acme/x"), ("AGENT_BOX_HOOK_SESSION_ARGS", args)];
        let out = webhook_spawn(&sb, &[vars[0], vars[1], ("AGENT_BOX_DEFAULT_AGENT", agent)], BATCH).code(0);
        assert!(!stderr(&out).contains("AGENT_BOX_HOOK_SESSION_ARGS"), "{agent} {args}: {}", stderr(&out));
        assert_eq!(sb.entry(&only_name(&sb)).unwrap()["extraArgs"], kept);
    }
}
