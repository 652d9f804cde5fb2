//! The admission step (docs/intake.md IN-11, IN-16) and the recovery of interrupted admissions (IN-12, the rows of
//! the crash table a crash leaves with an intent) against a box on disk. Each test names the rule it checks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod world;

use std::fs;

use agent_box_types::intake::How;
use base::SessionName;
use intake::admit::{Admission, Recovered, admit_next, recover};
use intake::queue::{Intent, RecordId};
use lease::{EndHow, SpawnRecord};
use registry::store::{read_for_write, write_document};
use world::{NOW, World, record, record_in};

const NAME: &str = "hook-acme-x-1a2b";

fn admitted(world: &World) -> Box<intake::admit::Admitted> {
    match world.locked(admit_next) {
        Admission::Admitted(admitted) => admitted,
        other => panic!("{other:?}"),
    }
}

/// The stamp of a record accepted `secs` seconds before [`NOW`].
fn accepted_ago(secs: i64) -> u64 {
    u64::try_from(NOW - secs).unwrap() * 1_000_000_000
}

// IN-11 with IN-16: a record admitted from the queue is told how long its events waited, and the admission says it.
#[test]
fn in16_a_record_admitted_from_the_queue_is_told_how_long_it_waited() {
    let world = World::new();
    world.queued("d-1", accepted_ago(600));
    let admitted = admitted(&world);
    assert_eq!(admitted.waited, 600);
    let doc = world.registry();
    let prompt = doc.entry(admitted.name.as_str()).unwrap().initial_prompt().unwrap().to_owned();
    assert!(prompt.contains("These events waited 10 min in this box's intake queue"), "{prompt}");
}

// IN-11 (W2, W7 of 60-webhook-spawn): the start's warnings come back with the admission: a filter that cannot be
// written, and a key too long for a name.
#[test]
fn in11_an_admission_returns_the_warnings_of_its_start() {
    let world = World::new();
    let mut long = record("d-1", "7");
    long.name_stem = "k".repeat(141);
    world.queued_record(&long, 1);
    let admitted = admitted(&world);
    let name = admitted.name.as_str();
    assert_eq!(admitted.notes.len(), 2, "{:?}", admitted.notes);
    assert_eq!(admitted.notes[0], format!("this session is called '{name}' instead"));
    assert!(admitted.notes[1].starts_with(&format!("could not write /nonexistent/filter.agent-{name}.json (")));
    assert!(admitted.notes[1].ends_with("the session starts unsubscribed, so its CI may start a duplicate"));
}

// IN-11: an unseeded record (no claim) gets no claim filter and no lease, only its entry.
#[test]
fn in11_an_unseeded_record_gets_no_filter_and_no_lease() {
    let world = World::new();
    let dir = world.paths.webhook_state_dir().display().to_string();
    let mut plain = record_in("d-1", "7", &dir);
    plain.seed = false;
    world.queued_record(&plain, 1);
    let admitted = admitted(&world);
    let name = SessionName::parse(admitted.name.as_str()).unwrap();
    assert!(admitted.notes.is_empty(), "{:?}", admitted.notes);
    assert!(!world.paths.filter_file(&name).exists(), "no filter without the seed");
    assert!(matches!(world.leases.read(&name), lease::LeaseState::Absent), "no lease without the seed");
    assert!(world.registry().contains(name.as_str()));
}

/// Queues the record of `d-1` with an admission intent for [`NAME`], as a crash after the intent leaves it.
fn interrupted(world: &World, seed: bool) -> (RecordId, Intent, lease::Gen) {
    let dir = world.paths.webhook_state_dir().display().to_string();
    let mut queued = record_in("d-1", "7", &dir);
    queued.seed = seed;
    let id = world.queued_record(&queued, 1);
    let life = lease::Gen::random();
    let intent = Intent { name: NAME.into(), lease_gen: life.to_string(), at: base::time::format_iso(NOW - 10) };
    world.queue.write_intent(&id, &intent).unwrap();
    (id, intent, life)
}

fn name() -> SessionName {
    SessionName::parse(NAME).unwrap()
}

/// The lease of [`NAME`] of life `life`, and its spawn record, as the admission writes them.
fn lease_of(world: &World, life: &lease::Gen) {
    let spawn = SpawnRecord {
        name: &name(),
        topic: "github:acme/x",
        event: "issues",
        object: Some("7"),
        count: Some(1),
        intake: Some("d-1"),
        claim: None,
    };
    world.leases.create_with_spawn(&spawn, life.clone(), &world.log).unwrap();
}

/// The ephemeral entry of [`NAME`] of life `life`.
fn entry_of(world: &World, life: &str) {
    world.locked(|_, guard| {
        let mut doc = read_for_write(guard.registry()).unwrap();
        let made = record("d-1", "7");
        doc.insert_new(&name(), intake::session::entry(&made, "prompt", life, NOW)).unwrap();
        write_document(guard, &doc).unwrap();
    });
}

fn finished() -> Vec<Recovered> {
    vec![Recovered::Finished { key: "d-1".into(), name: NAME.into() }]
}

fn taken_back() -> Vec<Recovered> {
    vec![Recovered::TakenBack { key: "d-1".into(), name: NAME.into() }]
}

// IN-12, "the lease, before the entry": rolled forward, the entry written with the intent's life.
#[test]
fn in12_an_admission_with_its_lease_and_no_entry_is_rolled_forward() {
    let world = World::new();
    let (_, intent, life) = interrupted(&world, true);
    lease_of(&world, &life);
    assert_eq!(world.locked(recover), finished());
    let doc = world.registry();
    assert_eq!(doc.entry(NAME).and_then(|e| e.life()), Some(intent.lease_gen.as_str()), "the entry is written");
    assert!(world.queue.list().unwrap().queued.is_empty(), "the record is gone");
    assert!(world.queue.tombstone("d-1", std::time::SystemTime::now()).is_some());
}

// IN-12, "the entry, before the tombstones or the removal": lease and entry there; only finished, the entry kept.
#[test]
fn in12_an_admission_with_its_lease_and_entry_is_finished_as_it_is() {
    let world = World::new();
    let (_, intent, life) = interrupted(&world, true);
    lease_of(&world, &life);
    entry_of(&world, &intent.lease_gen);
    assert_eq!(world.locked(recover), finished());
    assert_eq!(world.registry().names().count(), 1);
    assert!(world.queue.list().unwrap().queued.is_empty());
}

// IN-12, the same row unseeded: no lease is ever written, so the entry of the intent's life says it was made.
#[test]
fn in12_an_unseeded_admission_with_its_entry_is_finished() {
    let world = World::new();
    let (_, intent, _) = interrupted(&world, false);
    entry_of(&world, &intent.lease_gen);
    assert_eq!(world.locked(recover), finished());
}

// IN-12: an entry of that name but of another life is not this admission's: it is taken back.
#[test]
fn in12_an_entry_of_another_life_does_not_finish_an_admission() {
    let world = World::new();
    interrupted(&world, false);
    entry_of(&world, &lease::Gen::random().to_string());
    assert_eq!(world.locked(recover), taken_back());
    assert_eq!(world.queue.list().unwrap().queued.len(), 1, "the record waits again");
}

// IN-12: a session that already ended (an end line of its name after the intent, not `refused`) is finished.
#[test]
fn in12_an_admission_whose_session_already_ended_is_finished() {
    let world = World::new();
    interrupted(&world, true);
    assert!(matches!(world.log.append_end(&name(), &EndHow::Exited, None), lease::Appended::Written));
    assert_eq!(world.locked(recover), finished());
}

// IN-12: an end line older than the intent is another life's: the admission is taken back.
#[test]
fn in12_an_end_line_before_the_intent_does_not_finish_it() {
    let world = World::new();
    let (id, mut intent, _) = interrupted(&world, true);
    intent.at = "2999-01-01T00:00:00Z".into();
    world.queue.write_intent(&id, &intent).unwrap();
    assert!(matches!(world.log.append_end(&name(), &EndHow::Exited, None), lease::Appended::Written));
    assert_eq!(world.locked(recover), taken_back());
}

// IN-12: the whole bounded log is read: an end line that is the oldest of a full log (400 lines) still counts.
#[test]
fn in12_the_oldest_line_of_a_full_hook_log_is_read() {
    let world = World::new();
    interrupted(&world, true);
    assert!(matches!(world.log.append_end(&name(), &EndHow::Exited, None), lease::Appended::Written));
    let mut text = fs::read_to_string(world.paths.hook_log()).unwrap();
    let filler = r#"{"what":"end","name":"hook-other-0000","how":"exited","at":"2999-01-01T00:00:00Z"}"#;
    for _ in 1..lease::TRIM_ABOVE_LINES {
        text.push_str(filler);
        text.push('\n');
    }
    fs::write(world.paths.hook_log(), text).unwrap();
    assert_eq!(world.locked(recover), finished());
}

// IN-12, "the spawn record, before the lease": taken back, and the orphan spawn record gets its end `refused`.
#[test]
fn in12_an_orphan_spawn_record_is_taken_back_and_gets_its_end() {
    let world = World::new();
    interrupted(&world, true);
    let spawn = SpawnRecord {
        name: &name(),
        topic: "github:acme/x",
        event: "issues",
        object: Some("7"),
        count: Some(1),
        intake: Some("d-1"),
        claim: None,
    };
    assert!(matches!(world.log.append_spawn(&spawn), lease::Appended::Written));
    assert_eq!(world.locked(recover), taken_back());
    assert_eq!(world.log_count("refused"), 1);
}

// IN-12, "the removal of the record, before the intent's": the intent alone is removed, and said.
#[test]
fn in12_an_intent_without_its_record_is_cleared() {
    let world = World::new();
    let (id, ..) = interrupted(&world, true);
    fs::remove_file(world.queue.record_path(&id)).unwrap();
    assert_eq!(world.locked(recover), [Recovered::Cleared]);
    assert!(world.queue.list().unwrap().intents.is_empty());
}

// IN-12: an intent whose record is there but does not read is removed, and the record is not called cleared.
#[test]
fn in12_an_intent_of_an_unreadable_record_is_removed_without_clearing_it() {
    let world = World::new();
    let (id, ..) = interrupted(&world, true);
    fs::write(world.queue.record_path(&id), b"{ torn").unwrap();
    assert_eq!(world.locked(recover), []);
    let listing = world.queue.list().unwrap();
    assert!(listing.intents.is_empty() && listing.queued == [id], "{listing:?}");
}

const OWNER: &str = "hook-owner-0001";

/// A listed session [`OWNER`] (its entry with `extra` fields) holding an open lease of `topic` and `object`.
fn owner_with_lease(world: &World, topic: &str, object: &str, extra: &[(&str, serde_json::Value)]) {
    // A slot beside the owner, so a record it does not claim is admitted.
    world.limit(4);
    let owner = SessionName::parse(OWNER).unwrap();
    let life = lease::Gen::random();
    let spawn = SpawnRecord {
        name: &owner,
        topic,
        event: "issues",
        object: Some(object),
        count: Some(1),
        intake: None,
        claim: None,
    };
    world.leases.create_with_spawn(&spawn, life.clone(), &world.log).unwrap();
    world.locked(|_, guard| {
        let mut doc = read_for_write(guard.registry()).unwrap();
        let mut entry = intake::session::entry(&record("d-0", object), "prompt", life.as_str(), NOW);
        for (key, value) in extra {
            entry.insert((*key).to_owned(), value.clone());
        }
        doc.insert_new(&owner, entry).unwrap();
        write_document(guard, &doc).unwrap();
    });
}

// IN-14: a live session's open lease of the record's topic and object claims it: the record ends `claimed` by it.
#[test]
fn in14_an_open_lease_of_the_same_object_claims_the_record() {
    let world = World::new();
    owner_with_lease(&world, "github:acme/x", "7", &[]);
    world.queued("d-1", 1);
    let answer = world.locked(admit_next);
    let Admission::Claimed { by, key } = answer else { panic!("{answer:?}") };
    assert_eq!((by.as_str(), key.as_str()), (OWNER, "d-1"));
    assert_eq!(world.queue.tombstone("d-1", std::time::SystemTime::now()).map(|t| t.how), Some(How::Claimed));
    assert_eq!(world.log_count("claimed"), 1);
    assert_eq!(world.registry().names().count(), 1, "no session beside the owner");
}

// IN-14: a lease of another object or another topic does not claim the record.
#[test]
fn in14_a_lease_of_another_object_or_topic_does_not_claim() {
    for (topic, object) in [("github:acme/x", "8"), ("github:acme/y", "7")] {
        let world = World::new();
        owner_with_lease(&world, topic, object, &[]);
        world.queued("d-1", 1);
        let answer = world.locked(admit_next);
        assert!(matches!(answer, Admission::Admitted(_)), "{topic} {object}: {answer:?}");
    }
}

// IN-14: only a session that is not stopped and not crashed claims.
#[test]
fn in14_a_stopped_or_crashed_session_does_not_claim() {
    for extra in [("stopped", serde_json::json!(true)), ("died", serde_json::json!("2025-12-02T13:00:00Z"))] {
        let world = World::new();
        owner_with_lease(&world, "github:acme/x", "7", std::slice::from_ref(&extra));
        world.queued("d-1", 1);
        assert!(matches!(world.locked(admit_next), Admission::Admitted(_)), "{extra:?}");
    }
}

// IN-14: an unseeded record claims nothing, so nothing claims it.
#[test]
fn in14_an_unseeded_record_is_never_claimed() {
    let world = World::new();
    owner_with_lease(&world, "github:acme/x", "7", &[]);
    let mut plain = record("d-1", "7");
    plain.seed = false;
    world.queued_record(&plain, 1);
    assert!(matches!(world.locked(admit_next), Admission::Admitted(_)));
}

/// A listed session [`OWNER`] without a lease whose claim filter is the one an admission of `claimed` writes,
/// with `enabled` as given.
fn owner_with_filter(world: &World, claimed: &agent_box_types::intake::Record, enabled: bool) {
    world.limit(4);
    let owner = SessionName::parse(OWNER).unwrap();
    intake::session::write_filter(claimed, &owner, NOW).unwrap();
    if !enabled {
        let path = world.paths.filter_file(&owner);
        let mut filter: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        filter["enabled"] = serde_json::json!(false);
        fs::write(&path, filter.to_string()).unwrap();
    }
    world.locked(|_, guard| {
        let mut doc = read_for_write(guard.registry()).unwrap();
        doc.insert_new(&owner, intake::session::entry(claimed, "prompt", "life", NOW)).unwrap();
        write_document(guard, &doc).unwrap();
    });
}

// IN-14: a session whose claim filter on the record's own topic holds for its newest event claims it.
#[test]
fn in14_a_claim_filter_that_holds_for_the_newest_event_claims_the_record() {
    let world = World::new();
    let dir = world.paths.webhook_state_dir().display().to_string();
    owner_with_filter(&world, &record_in("d-0", "7", &dir), true);
    world.queued("d-1", 1);
    let answer = world.locked(admit_next);
    assert!(matches!(&answer, Admission::Claimed { by, .. } if by == OWNER), "{answer:?}");
}

// IN-14: a filter for another object, or one that is disabled, claims nothing.
#[test]
fn in14_a_filter_of_another_object_or_disabled_does_not_claim() {
    for (object, enabled) in [("8", true), ("7", false)] {
        let world = World::new();
        let dir = world.paths.webhook_state_dir().display().to_string();
        owner_with_filter(&world, &record_in("d-0", object, &dir), enabled);
        world.queued("d-1", 1);
        assert!(matches!(world.locked(admit_next), Admission::Admitted(_)), "{object} {enabled}");
    }
}
