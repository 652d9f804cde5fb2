//! The intake crash table (docs/intake.md IN-12) where a writer dies between two steps of an end, and what a
//! batch may do to a record whose admission a crash interrupted (IN-5, IN-9). A crash is stood in for by a step
//! that fails: `queue/keys` made a regular file, so no tombstone can be written.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod world;

use std::fs;
use std::path::Path;
use std::time::SystemTime;

use agent_box_types::intake::How;
use intake::admit::{Recovered, recover};
use intake::queue::Intent;
use intake::{Accepted, Bounds, Incoming, accept};
use world::{NOW, World, intent, record};

// IN-12, the last row: an end line written, its tombstones not: the next tick ends the record again.
#[test]
fn an_end_interrupted_after_its_end_line_is_finished_by_the_next_recovery() {
    let world = World::new();
    let id = world.queued("d-1", 1);
    let record = world.queue.read(&id).unwrap();
    fs::write(world.paths.queue_dir().join("keys"), "in the way").unwrap();
    assert!(intake::end::end(&world.queue, &world.log, &id, &record, How::Expired, NOW, None).is_err());
    assert_eq!(world.queue.list().unwrap().queued, std::slice::from_ref(&id), "the crash left the record queued");
    assert_eq!(world.log_count("expired"), 1, "its end was announced");
    fs::remove_file(world.paths.queue_dir().join("keys")).unwrap();
    let done = world.locked(recover);
    assert_eq!(done, [Recovered::Ended { key: "d-1".into(), how: How::Expired }]);
    let listing = world.queue.list().unwrap();
    assert!(listing.queued.is_empty() && listing.ends.is_empty(), "{listing:?}");
    assert_eq!(world.queue.tombstone("d-1", SystemTime::now()).map(|t| t.how), Some(How::Expired));
    assert_eq!(world.queue.ended().unwrap(), [id], "the unresolved row is there");
    assert_eq!(world.log_count("expired"), 2, "the end line may appear twice, never not at all");
}

// IN-9 with IN-12: the oldest record past the count is expired, unless it is being admitted.
#[test]
fn a_batch_past_the_count_does_not_expire_a_record_being_admitted() {
    let world = World::new();
    let admitting = world.queued("d-1", 1);
    intent(&world, &admitting);
    let incoming = Incoming { record: record("d-2", "8") };
    let bounds = Bounds { max_records: 1, ..Bounds::default() };
    let accepted = world.locked(|site, guard| accept(site, guard, &incoming, &bounds)).unwrap();
    assert!(matches!(accepted, Accepted::Queued { .. }), "{accepted:?}");
    assert!(world.queue.list().unwrap().queued.contains(&admitting), "the record being admitted stays");
    assert_eq!(world.queue.tombstone("d-1", SystemTime::now()), None);
    assert_eq!(world.log_count("expired"), 0);
}

// IN-5 with IN-12: a batch of the same assignment is not appended to a record being admitted (its session may
// already have its prompt); it waits as a record of its own.
#[test]
fn a_batch_for_a_record_being_admitted_becomes_a_record_of_its_own() {
    let world = World::new();
    let admitting = world.queued("d-1", 1);
    intent(&world, &admitting);
    let incoming = Incoming { record: record("d-2", "7") };
    let accepted = world.locked(|site, guard| accept(site, guard, &incoming, &Bounds::default())).unwrap();
    assert!(matches!(accepted, Accepted::Queued { .. }), "{accepted:?}");
    assert_eq!(world.queue.read(&admitting).unwrap().batches.len(), 1);
    assert_eq!(world.queue.list().unwrap().queued.len(), 2);
}

// IN-12: an admission whose lease write failed logged its spawn line and a `refused` end, then was killed before
// it removed its intent; nothing of the session ran, so the next tick takes it back instead of finishing it.
#[test]
fn an_admission_refused_before_its_intent_went_is_taken_back_not_finished() {
    let world = World::new();
    let id = world.queued("d-1", 1);
    let name = base::SessionName::parse("hook-acme-x-1a2b").unwrap();
    let at = base::time::format_iso(NOW - 10);
    let intent = Intent { name: name.to_string(), lease_gen: lease::Gen::random().to_string(), at };
    world.queue.write_intent(&id, &intent).unwrap();
    let spawn = lease::SpawnRecord {
        name: &name,
        topic: "github:acme/x",
        event: "issues",
        object: Some("7"),
        count: Some(1),
        intake: Some("d-1"),
        claim: None,
    };
    assert!(matches!(world.log.append_spawn(&spawn), lease::Appended::Written));
    assert!(matches!(world.log.append_end(&name, &lease::EndHow::Refused, None), lease::Appended::Written));
    let done = world.locked(recover);
    assert_eq!(done, [Recovered::TakenBack { key: "d-1".into(), name: name.to_string() }]);
    assert_eq!(world.queue.list().unwrap().queued, std::slice::from_ref(&id), "the record waits again");
    assert_eq!(world.queue.tombstone("d-1", SystemTime::now()), None);
}

#[test]
fn an_end_intent_without_its_record_only_goes() {
    let world = World::new();
    let id = world.queued("d-1", 1);
    let record = world.queue.read(&id).unwrap();
    intake::end::end(&world.queue, &world.log, &id, &record, How::Removed, NOW, None).unwrap();
    let intent = intake::queue::EndIntent { how: How::Removed, by: None, at: "t".into() };
    world.queue.write_end(&id, &intent).unwrap();
    assert_eq!(world.locked(recover), [Recovered::Cleared]);
    assert!(world.queue.list().unwrap().ends.is_empty());
    assert!(!Path::new(&world.paths.queue_dir().join(format!("{}.end", id.stem()))).exists());
}
