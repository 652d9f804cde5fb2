//! The accept step of webhook-spawn (docs/intake.md IN-3, IN-5, IN-6, IN-9) against a box on disk: what a batch
//! becomes (a duplicate, a batch joined to the queued record of its assignment, a record queued at its position,
//! a session admitted at once) and what it writes. Each test names the rule it checks.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod world;

use std::fs;
use std::time::SystemTime;

use agent_box_types::intake::How;
use intake::{Accepted, Bounds, Incoming, accept};
use world::{NOW, Probe, World, record, record_in};

fn accepted(world: &World, incoming: &Incoming, bounds: &Bounds) -> Accepted {
    world.locked(|site, guard| accept(site, guard, incoming, bounds)).unwrap()
}

fn incoming(key: &str, object: &str) -> Incoming {
    Incoming { record: record(key, object) }
}

/// A batch of issue `object` naming the delivery ids `keys`.
fn naming(keys: &[&str], object: &str) -> Incoming {
    let mut record = record(keys[0], object);
    record.batches[0].keys = keys.iter().map(|k| (*k).to_owned()).collect();
    Incoming { record }
}

// IN-3: a batch all of whose keys have a tombstone from within the redelivery window is a duplicate; it is told
// what the key's record became and changes nothing but one log line.
#[test]
fn in3_a_batch_whose_keys_all_have_tombstones_is_a_duplicate() {
    let world = World::new();
    let gone = record("d-1", "7");
    world.queue.bury(&gone, How::Admitted, Some("hook-acme-x-1a2b"), &base::time::format_iso(NOW)).unwrap();
    let answer = accepted(&world, &incoming("d-1", "8"), &Bounds::default());
    let Accepted::Duplicate { key, how, name } = answer else { panic!("{answer:?}") };
    assert_eq!((key.as_str(), how.as_str(), name.as_deref()), ("d-1", "admitted", Some("hook-acme-x-1a2b")));
    assert!(world.queue.list().unwrap().queued.is_empty(), "nothing queued");
    assert!(world.registry().names().next().is_none(), "nothing admitted");
    assert_eq!(world.log_count("duplicate"), 1);
}

// IN-3: a batch that names a new key besides an accepted one is accepted (its keys include the old one).
#[test]
fn in3_a_batch_naming_a_new_key_besides_an_old_one_is_accepted() {
    let world = World::new();
    world.queue.bury(&record("d-1", "7"), How::Admitted, Some("hook-x-0001"), "t").unwrap();
    let answer = accepted(&world, &naming(&["d-1", "d-2"], "8"), &Bounds::default());
    assert!(matches!(answer, Accepted::Admitted(_)), "{answer:?}");
    assert_eq!(world.queue.tombstone("d-2", SystemTime::now()).map(|t| t.how), Some(How::Admitted));
}

// IN-3 with IN-5: a redelivery of the keys a queued record already holds is a duplicate of that record.
#[test]
fn in3_a_redelivery_of_a_queued_records_keys_is_a_duplicate_queued() {
    let world = World::new();
    let id = world.queued("d-1", 1);
    let answer = accepted(&world, &incoming("d-1", "7"), &Bounds::default());
    let Accepted::Duplicate { key, how, name } = answer else { panic!("{answer:?}") };
    assert_eq!((key.as_str(), how.as_str(), name), ("d-1", "queued", None));
    assert_eq!(world.queue.read(&id).unwrap().batches.len(), 1, "nothing appended");
}

// IN-5: a batch for the assignment of a queued record is appended to it (one session for all of them), at the
// record's position, not queued beside it.
#[test]
fn in5_a_batch_for_a_queued_assignment_joins_its_record() {
    let world = World::new();
    let first = world.queued("d-1", 1);
    world.queued_record(&record("d-9", "9"), 2);
    let answer = accepted(&world, &incoming("d-2", "7"), &Bounds::default());
    let Accepted::Coalesced { key, into, position, events } = answer else { panic!("{answer:?}") };
    assert_eq!((key.as_str(), into.as_str(), position, events), ("d-2", "d-1", 1, 2));
    let joined = world.queue.read(&first).unwrap();
    let keys: Vec<&str> = joined.batches.iter().flat_map(|b| &b.keys).map(String::as_str).collect();
    assert_eq!(keys, ["d-1", "d-2"], "oldest first");
    assert_eq!(world.queue.list().unwrap().queued.len(), 2, "no record beside it");
    assert_eq!(world.log_count("coalesced"), 1);
}

// IN-5: only a record of the same assignment takes the batch: a record whose file name has the assignment's digest
// but whose assignment differs (the digest is 16 hex digits of it) is not joined.
#[test]
fn in5_a_record_of_another_assignment_is_not_joined() {
    let world = World::new();
    let mut other = record("d-1", "7");
    let id = intake::queue::RecordId::new(1, &other.assignment);
    other.assignment = "github:acme/y#7".into();
    world.queue.create(&id, &other).unwrap();
    let answer = accepted(&world, &incoming("d-2", "7"), &Bounds::default());
    assert!(matches!(answer, Accepted::Queued { position: 2, .. }), "{answer:?}");
    assert_eq!(world.queue.read(&id).unwrap().batches.len(), 1);
}

// IN-6: with a record waiting before it, a new batch is queued behind it, even with a slot free: oldest first.
#[test]
fn in6_a_batch_behind_a_queued_record_waits_its_turn() {
    let world = World::new();
    world.queued("d-1", 1);
    let answer = accepted(&world, &incoming("d-2", "8"), &Bounds::default());
    let Accepted::Queued { key, position, queued, why } = answer else { panic!("{answer:?}") };
    assert_eq!((key.as_str(), position, queued, why), ("d-2", 2, 2, None), "older records wait before it");
    assert!(world.registry().names().next().is_none());
    assert_eq!(world.log_count("queued"), 1);
}

// IN-6: a batch nothing waits before is admitted at once: the entry, the claim filter, the lease carrying the
// record's key, the tombstone and no record left.
#[test]
fn in6_a_batch_nothing_waits_before_is_admitted_at_once() {
    let world = World::new();
    let dir = world.paths.webhook_state_dir().display().to_string();
    let answer = accepted(&world, &Incoming { record: record_in("d-1", "7", &dir) }, &Bounds::default());
    let Accepted::Admitted(admitted) = answer else { panic!("{answer:?}") };
    assert_eq!(admitted.notes, Vec::<String>::new(), "no warning: the filter was written");
    let name = base::SessionName::parse(admitted.name.as_str()).unwrap();
    let doc = world.registry();
    let entry = doc.entry(name.as_str()).expect("the entry");
    let prompt = entry.initial_prompt().unwrap();
    assert!(!prompt.contains("These events waited"), "admitted as it arrived: the prompt of before (IN-16)");
    assert!(prompt.contains("You are already subscribed to github:acme/x"), "seeded: {prompt}");
    assert!(world.paths.filter_file(&name).is_file(), "the claim filter");
    let lease::LeaseState::Present(lease) = world.leases.read(&name) else { panic!("no lease") };
    assert_eq!(lease.gen_value(), entry.life(), "the entry's life is the lease's gen");
    let spawn = world.log_lines().into_iter().find(|l| l["what"] == "spawn").expect("the spawn line");
    assert_eq!(spawn["intake"], "d-1", "the spawn record carries the key");
    assert_eq!(world.queue.tombstone("d-1", SystemTime::now()).map(|t| t.how), Some(How::Admitted));
    assert!(world.queue.list().unwrap().queued.is_empty(), "the record is gone");
}

// IN-6: a batch that cannot be admitted now stays queued and says why: a full box.
#[test]
fn in6_a_full_box_keeps_the_batch_queued_and_says_so() {
    let world = World::new();
    world.limit(1);
    assert!(matches!(accepted(&world, &incoming("d-1", "7"), &Bounds::default()), Accepted::Admitted(_)));
    let answer = accepted(&world, &incoming("d-2", "8"), &Bounds::default());
    let Accepted::Queued { position, queued, why, .. } = answer else { panic!("{answer:?}") };
    assert_eq!((position, queued), (1, 1));
    assert_eq!(why.as_deref(), Some("the box is full: 1 of 1 session slots in use"));
    assert_eq!(world.registry().names().count(), 1);
}

// IN-6: an unreadable registry keeps the batch queued, and the reason names the registry.
#[test]
fn in6_an_unparsable_registry_keeps_the_batch_queued_with_the_reason() {
    let world = World::new();
    fs::write(world.paths.registry(), b"{ not json").unwrap();
    let answer = accepted(&world, &incoming("d-1", "7"), &Bounds::default());
    let Accepted::Queued { why, .. } = answer else { panic!("{answer:?}") };
    let why = why.unwrap();
    let registry = world.paths.registry().display().to_string();
    assert!(why.starts_with(&format!("{registry} does not parse (")), "{why}");
    assert_eq!(world.queue.list().unwrap().queued.len(), 1);
}

// IN-6 with issue 26: on a box with a claims database webhook-spawn only queues, whatever is free.
#[test]
fn in6_without_admission_at_once_a_lone_batch_is_queued() {
    let world = World::new();
    let probe = Probe { admit_at_once: false, ..Probe::default() };
    let answer = world.with(&probe, |site, guard| accept(site, guard, &incoming("d-1", "7"), &Bounds::default()));
    assert!(matches!(answer.unwrap(), Accepted::Queued { position: 1, queued: 1, why: None, .. }));
}

// IN-9: a batch that would make the queue longer than the maximum count ends the oldest record expired first, and
// then waits at the front of the shorter queue.
#[test]
fn in9_a_batch_past_the_count_expires_the_oldest_first() {
    let world = World::new();
    let oldest = world.queued("d-1", 1);
    let bounds = Bounds { max_records: 1, ..Bounds::default() };
    let probe = Probe { admit_at_once: false, ..Probe::default() };
    let answer = world.with(&probe, |site, guard| accept(site, guard, &incoming("d-2", "8"), &bounds)).unwrap();
    assert!(matches!(answer, Accepted::Queued { position: 1, queued: 1, .. }), "{answer:?}");
    assert!(!world.queue.list().unwrap().queued.contains(&oldest));
    assert_eq!(world.queue.tombstone("d-1", SystemTime::now()).map(|t| t.how), Some(How::Expired));
    assert_eq!(world.queue.ended().unwrap(), [oldest], "kept for the operator (IN-10)");
}

// IN-9: a batch within the count expires nothing.
#[test]
fn in9_a_batch_within_the_count_expires_nothing() {
    let world = World::new();
    world.queued("d-1", 1);
    let bounds = Bounds { max_records: 2, ..Bounds::default() };
    let answer = accepted(&world, &incoming("d-2", "8"), &bounds);
    assert!(matches!(answer, Accepted::Queued { position: 2, queued: 2, .. }), "{answer:?}");
    assert_eq!(world.log_count("expired"), 0);
}
