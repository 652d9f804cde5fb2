//! The claims table against a real PostgreSQL server the harness starts (issue 26, docs/boxes.md BX-2…BX-6):
//! the migration, the race of two boxes, a takeover after the term, done, release, renewal and the boxes' report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agent_box_tests::postgres::{PASSWORD, Postgres, ROLE};
use claims::{ClaimsConfig, Store, StoreError, Taken};

/// A server, or a SKIP line when none can run here.
fn server() -> Option<Postgres> {
    match Postgres::start() {
        Ok(server) => Some(server),
        Err(why) => {
            eprintln!("SKIP: claims store tests: {why}");
            None
        }
    }
}

fn config(server: &Postgres, label: &str) -> ClaimsConfig {
    ClaimsConfig {
        connection: server.connection(ROLE),
        passfile: None,
        label: label.to_owned(),
        term: Duration::from_secs(2),
    }
}

fn open(server: &Postgres, label: &str) -> Store {
    Store::open(&config(server, label), Some(PASSWORD.as_bytes())).unwrap()
}

const LIFE_A: &str = "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90";
const LIFE_B: &str = "1c7f4d1f-7b62-4c9f-8b4f-3e8e2d5f6ba1";

// BX-2
#[test]
fn the_schema_is_made_once_and_another_version_is_refused() {
    let Some(server) = server() else { return };
    drop(open(&server, "a"));
    drop(open(&server, "b"));
    assert_eq!(server.sql(ROLE, "SELECT count(*) FROM agent_box_schema").unwrap().trim(), "1");
    server.sql(ROLE, "UPDATE agent_box_schema SET version = 7").unwrap();
    let refused = Store::open(&config(&server, "a"), Some(PASSWORD.as_bytes())).unwrap_err();
    assert!(matches!(refused, StoreError::Schema { found: 7 }), "{refused}");
    let wrong = Store::open(&config(&server, "a"), Some(b"nope")).unwrap_err();
    assert!(matches!(wrong, StoreError::Unreachable(_)), "a wrong password: {wrong}");
}

// BX-4, BX-7
#[test]
fn one_box_wins_the_other_is_told_who_and_takes_over_after_the_term() {
    let Some(server) = server() else { return };
    let (mut a, mut b) = (open(&server, "box-a"), open(&server, "box-b"));
    let term = Duration::from_secs(2);
    assert_eq!(a.take("github:acme/x#7", "box-a", LIFE_A, term).unwrap(), Taken::Won { from: None });
    assert_eq!(
        b.take("github:acme/x#7", "box-b", LIFE_B, term).unwrap(),
        Taken::Held { by: "box-a".into(), done: false }
    );
    assert_eq!(
        a.take("github:acme/x#7", "box-a", LIFE_B, term).unwrap(),
        Taken::Won { from: None },
        "a box may take its own claim again"
    );
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(b.take("github:acme/x#7", "box-b", LIFE_B, term).unwrap(), Taken::Won { from: Some("box-a".into()) });
    assert_eq!(a.renew("box-a", &[LIFE_B.to_owned()], term).unwrap(), Vec::<String>::new(), "box-a lost it");
    assert_eq!(b.renew("box-b", &[LIFE_B.to_owned()], term).unwrap(), [LIFE_B]);
}

// BX-4
#[test]
fn many_boxes_racing_on_one_assignment_give_one_winner() {
    let Some(server) = server() else { return };
    for round in 0..5 {
        let assignment = format!("github:acme/race#{round}");
        let outcomes: Vec<Taken> = std::thread::scope(|s| {
            let runs: Vec<_> = (0..6)
                .map(|i| {
                    let (server, assignment) = (&server, &assignment);
                    s.spawn(move || {
                        let label = format!("box-{i}");
                        open(server, &label).take(assignment, &label, LIFE_A, Duration::from_secs(60)).unwrap()
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let winners = outcomes.iter().filter(|t| matches!(t, Taken::Won { .. })).count();
        assert_eq!(winners, 1, "round {round}: {outcomes:?}");
        let holder =
            server.sql(ROLE, &format!("SELECT box FROM agent_box_claims WHERE assignment = '{assignment}'")).unwrap();
        assert!(
            outcomes.iter().all(|t| match t {
                Taken::Held { by, .. } => by == holder.trim(),
                Taken::Won { .. } => true,
            }),
            "every loser names the winner: {outcomes:?}"
        );
    }
}

// BX-6
#[test]
fn done_is_never_taken_again_and_a_release_is_taken_at_once() {
    let Some(server) = server() else { return };
    let (mut a, mut b) = (open(&server, "box-a"), open(&server, "box-b"));
    let term = Duration::from_secs(60);
    a.take("github:acme/x#1", "box-a", LIFE_A, term).unwrap();
    assert!(a.done("github:acme/x#1", "box-a", LIFE_A).unwrap());
    assert_eq!(
        b.take("github:acme/x#1", "box-b", LIFE_B, term).unwrap(),
        Taken::Held { by: "box-a".into(), done: true }
    );
    a.take("github:acme/x#2", "box-a", LIFE_A, term).unwrap();
    assert!(!b.release("github:acme/x#2", "box-b", LIFE_A).unwrap(), "only the holder releases");
    assert!(a.release("github:acme/x#2", "box-a", LIFE_A).unwrap());
    assert_eq!(b.take("github:acme/x#2", "box-b", LIFE_B, term).unwrap(), Taken::Won { from: Some("box-a".into()) });
    let boxes = b.boxes().unwrap();
    assert!(boxes.is_empty(), "no box renewed yet: {boxes:?}");
    b.renew("box-b", &[LIFE_B.to_owned()], term).unwrap();
    let boxes = b.boxes().unwrap();
    assert_eq!((boxes.len(), boxes[0].box_label.as_str(), boxes[0].live.len()), (1, "box-b", 1));
}

/// Whether the server has been up for longer than `secs` (its own clock, as the take statement reads it).
fn up_for_more_than(server: &Postgres, secs: u64) -> bool {
    let sql = format!("SELECT now() - pg_postmaster_start_time() > interval '{secs} seconds'");
    server.sql(ROLE, &sql).is_ok_and(|out| out.trim() == "t")
}

// BX-11
#[test]
fn a_term_that_ran_out_while_the_database_was_down_is_not_taken_over_before_the_owner_could_renew() {
    let Some(server) = server() else { return };
    let term = Duration::from_secs(2);
    let mut a = open(&server, "box-a");
    a.take("github:acme/x#1", "box-a", LIFE_A, term).unwrap();
    a.take("github:acme/x#2", "box-a", LIFE_B, term).unwrap();
    drop(a);
    server.stop();
    std::thread::sleep(term + Duration::from_millis(500));
    server.resume().unwrap();
    let (mut a, mut b) = (open(&server, "box-a"), open(&server, "box-b"));
    assert!(!up_for_more_than(&server, 2), "the check below needs a server younger than the term");
    assert_eq!(
        b.take("github:acme/x#1", "box-b", LIFE_B, term).unwrap(),
        Taken::Held { by: "box-a".into(), done: false },
        "the term ran out while nobody could renew: the owner gets a term of the new server first"
    );
    assert_eq!(a.renew("box-a", &[LIFE_A.to_owned()], term).unwrap(), [LIFE_A], "the owner renews and keeps it");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let taken = loop {
        let taken = b.take("github:acme/x#2", "box-b", LIFE_B, term).unwrap();
        if matches!(taken, Taken::Won { .. }) || std::time::Instant::now() > deadline {
            break taken;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(taken, Taken::Won { from: Some("box-a".into()) }, "an owner that did not renew loses it");
    assert!(up_for_more_than(&server, 2), "taken over only once the server had been up for a term");
    assert_eq!(
        b.take("github:acme/x#1", "box-b", LIFE_B, term).unwrap(),
        Taken::Held { by: "box-a".into(), done: false },
        "the claim its owner renewed stays the owner's"
    );
}
