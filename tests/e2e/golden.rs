//! The golden snapshots under plain `cargo test` (70 GD-8): `golden/` must equal a fresh render, and the
//! check and bless must catch every kind of drift (a changed byte, a stale file, a leak, an unstable render).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;

use agent_box_tests::golden::tree::{self, BLESS_HINT};
use agent_box_tests::golden::{self, BlessRefusal, Rendered};

/// GD-8: the same check as `cargo xtask golden`, into a temporary directory; never writes `golden/`.
#[test]
fn golden_snapshots_are_current() {
    let scratch = tempfile::tempdir().unwrap();
    let report = golden::check(&golden::golden_dir(), &scratch.path().join("rendered")).unwrap();
    assert!(report.passed(), "golden/ does not match the render:\n{}", report.text);
}

/// A copy of `golden/` to bless into, so the real one is never written.
fn golden_copy(dir: &Path) -> std::path::PathBuf {
    let copy = dir.join("golden");
    tree::write_tree(&copy, &tree::read_tree(&golden::golden_dir()).unwrap()).unwrap();
    copy
}

fn first_message(rendered: &Rendered) -> String {
    rendered.tree.keys().find(|k| k.starts_with("session/messages/")).unwrap().clone()
}

#[test]
fn golden_check_and_bless_catch_every_kind_of_drift() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let rendered = golden::render();
    assert!(rendered.needles.iter().any(|n| n == "/tmp/"));
    assert!(rendered.needles.iter().any(|n| *n == agent_box_tests::workspace_root().to_string_lossy()));
    let golden_dir = golden_copy(dir);
    let clean = golden::check_rendered(&golden_dir, &dir.join("r0"), rendered.clone()).unwrap();
    assert!(clean.passed(), "the real render must be current first:\n{}", clean.text);

    // One changed character of one message: a unified diff naming golden/<path>, and the bless hint.
    let mut changed = rendered.clone();
    let message = first_message(&changed);
    let bytes = changed.tree.get_mut(&message).unwrap();
    let at = bytes.iter().rposition(|b| b.is_ascii_lowercase()).unwrap();
    bytes[at] = bytes[at].to_ascii_uppercase();
    let report = golden::check_rendered(&golden_dir, &dir.join("r1"), changed).unwrap();
    assert!(!report.passed());
    assert_eq!(report.drift.differ, std::slice::from_ref(&message));
    assert!(report.text.contains(&format!("--- golden/{message}")), "{}", report.text);
    assert!(report.text.contains(&format!("+++ rendered/{message}")), "{}", report.text);
    assert!(report.text.contains("golden: 1 differ, 0 missing, 0 unexpected"), "{}", report.text);
    assert!(report.text.contains(BLESS_HINT), "{}", report.text);

    // A planted /tmp/ path and the real HOME: the leak check names the file and the offset.
    let mut leaky = rendered.clone();
    leaky.tree.get_mut(&message).unwrap().extend_from_slice(b"left behind: /tmp/abt-1-2/x\n");
    let report = golden::check_rendered(&golden_dir, &dir.join("r2"), leaky.clone()).unwrap();
    assert!(!report.passed());
    let leak = report.leaks.iter().find(|l| l.needle == "/tmp/").unwrap();
    assert_eq!(leak.file, message);
    assert_eq!(leak.offset, tree::find(&leaky.tree[&message], b"/tmp/").unwrap());
    assert!(report.text.contains(&format!("rendered/{message} holds '/tmp/' at byte offset")), "{}", report.text);
    assert!(matches!(
        golden::bless_rendered(&golden_dir, &dir.join("b0"), leaky.clone(), &leaky),
        Err(BlessRefusal::Leaks(_))
    ));

    // A fresh uuid left unnormalised in one render: bless refuses, lists the file, and writes nothing.
    let before = tree::read_tree(&golden_dir).unwrap();
    let mut unstable = rendered.clone();
    unstable.tree.get_mut(&message).unwrap().extend_from_slice(base::new_uuid_v4().to_string().as_bytes());
    match golden::bless_rendered(&golden_dir, &dir.join("b1"), unstable, &rendered) {
        Err(BlessRefusal::Unstable(files)) => assert_eq!(files, std::slice::from_ref(&message)),
        other => panic!("bless must refuse an unstable render, got {other:?}"),
    }
    assert_eq!(tree::read_tree(&golden_dir).unwrap(), before, "a refused bless wrote golden/");

    // A stale snapshot: the check reports it as unexpected, bless deletes it, a second bless changes nothing.
    fs::create_dir_all(golden_dir.join("session/messages")).unwrap();
    fs::write(golden_dir.join("session/messages/M99.txt"), "stale\n").unwrap();
    let report = golden::check_rendered(&golden_dir, &dir.join("r3"), rendered.clone()).unwrap();
    assert_eq!(report.drift.unexpected, ["session/messages/M99.txt"]);
    let changes = golden::bless_rendered(&golden_dir, &dir.join("b2"), rendered.clone(), &rendered).unwrap();
    assert_eq!(changes, ["D golden/session/messages/M99.txt"]);
    let again = golden::bless_rendered(&golden_dir, &dir.join("b3"), rendered.clone(), &rendered).unwrap();
    assert!(again.is_empty(), "a second bless must change nothing: {again:?}");
}

/// The stdout section of a golden command capture (`[stdout]` up to `[stderr]`).
fn captured_stdout(text: &str) -> &str {
    let start = text.find("[stdout]\n").map(|at| at + "[stdout]\n".len()).unwrap();
    &text[start..text.find("[stderr]").unwrap()]
}

/// `text` parsed into `T` and written back the way the programs write `T`: equal bytes prove that the type's
/// field order is the pinned key order, and that nothing is skipped or added.
fn round_trips<T: serde::Serialize + serde::de::DeserializeOwned>(file: &str, text: &str, write: fn(&T) -> String) {
    let typed: T = serde_json::from_str(text).unwrap_or_else(|e| panic!("golden/{file} is not its type: {e}"));
    assert_eq!(write(&typed), text, "golden/{file} does not round-trip through its type");
}

fn pretty<T: serde::Serialize>(value: &T) -> String {
    agent_box_types::pretty(value).unwrap()
}

fn line<T: serde::Serialize>(value: &T) -> String {
    String::from_utf8(agent_box_types::line(value).unwrap()).unwrap()
}

#[test]
fn pinned_documents_round_trip_through_their_types() {
    use agent_box_types::{filter, hooklog, refusal, report, side};
    let dir = golden::golden_dir();
    let read = |file: &str| fs::read_to_string(dir.join(file)).unwrap();
    let stdout_of = |file: &str| captured_stdout(&read(file)).to_owned();
    round_trips::<report::LsReport>("session/ls-json.txt", &stdout_of("session/ls-json.txt"), pretty);
    round_trips::<report::PeersReport>("session/peers-json.txt", &stdout_of("session/peers-json.txt"), pretty);
    let capacity = stdout_of("session/capacity-json.txt");
    round_trips::<report::CapacityReport>("session/capacity-json.txt", &capacity, pretty);
    round_trips::<report::LeasesReport>("session/leases-json.txt", &stdout_of("session/leases-json.txt"), pretty);
    // `<SECS>` stands for a number the render normalised; any number round-trips the same way.
    let hook_log = read("documents/hook-log.jsonl").replace("<SECS>", "0");
    for text in hook_log.lines().map(|l| format!("{l}\n")) {
        if text.contains(r#""what":"spawn""#) {
            round_trips::<hooklog::SpawnLine>("documents/hook-log.jsonl", &text, line);
        } else {
            round_trips::<hooklog::EndLine>("documents/hook-log.jsonl", &text, line);
        }
    }
    let side_file = read("documents/side-file-first-spawn.json");
    round_trips::<side::SideFile>("documents/side-file-first-spawn.json", &side_file, line);
    let record = read("webhook-spawn/refusal-record.json");
    round_trips::<refusal::RefusalRecord>("webhook-spawn/refusal-record.json", &record, pretty);
    let mut filters = 0;
    for entry in fs::read_dir(dir.join("webhook-spawn")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("filter-") {
            let file = format!("webhook-spawn/{name}");
            round_trips::<filter::FilterSeed>(&file, &read(&file), pretty);
            filters += 1;
        }
    }
    assert!(filters >= 7, "the filter seeds of golden/webhook-spawn/ ({filters})");
}

/// Issue 20: no value of the env-store fixtures appears anywhere in `golden/` (the verbs never print one, and no
/// artefact puts one on a command line).
#[test]
fn no_env_store_value_is_in_any_golden_file() {
    let fixtures = agent_box_tests::workspace_root().join("tests/fixtures/golden/env");
    let store = registry::envstore::Store::parse(&fs::read(fixtures.join("store")).unwrap());
    let mut values: Vec<Vec<u8>> = store.pairs().into_values().collect();
    values.push(b"golden-fixture-gh-7c1".to_vec());
    values.push(fs::read(fixtures.join("value")).unwrap().trim_ascii_end().to_vec());
    let golden = tree::read_tree(&golden::golden_dir()).unwrap();
    for (file, bytes) in &golden {
        for value in &values {
            assert!(!bytes.windows(value.len()).any(|w| w == value), "{file} holds an env-store value");
        }
    }
    assert!(golden.keys().any(|k| k.starts_with("session/env/")), "the env verbs are pinned");
}
