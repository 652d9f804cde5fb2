//! Several boxes when things fail (issue 26, docs/boxes.md "Failures"): a box killed outright while it holds
//! claims, the PostgreSQL server restarted and stopped for longer than the term during a burst, and a database of
//! another schema version. Real boxes (homes, tmux servers, supervisors) on one real server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use agent_box_tests::boxes::claims_table;
use agent_box_tests::boxes_burst::{self, Options};
use agent_box_tests::postgres::ROLE;
use agent_box_tests::wait::wait_until_or;
use nix::sys::signal::Signal;
use tmux::TmuxApi;

use crate::boxes::{a_box, deliver, server};

/// Claims `box` holds now (not done, term running).
fn live_claims_of(server: &agent_box_tests::postgres::Postgres, label: &str) -> usize {
    let sql = format!("SELECT count(*) FROM agent_box_claims WHERE box = '{label}' AND done_at IS NULL");
    server.sql(ROLE, &sql).ok().and_then(|n| n.trim().parse().ok()).unwrap_or(usize::MAX)
}

// BX-4, BX-7, BX-8
#[test]
fn a_box_killed_holding_ten_claims_loses_them_to_the_others_and_resumes_none_when_it_returns() {
    let Some(server) = server() else { return };
    let term = 10;
    let boxes = [
        a_box(&server, 0, "box-a", 10, term),
        a_box(&server, 1, "box-b", 5, term),
        a_box(&server, 2, "box-c", 5, term),
    ];
    let [a, b, c] = &boxes;
    let dump = || {
        format!(
            "claims:\n{}\na:\n{}\nb:\n{}\nc:\n{}",
            claims_table(&server),
            a.supervisor_log(),
            b.supervisor_log(),
            c.supervisor_log()
        )
    };
    let supervisor_a = a.start_supervisor();
    for n in 1..=10 {
        assert_eq!(deliver(a, &format!("d-{n}"), n, &format!("i{n}")), 0);
    }
    wait_until_or(
        "box-a runs all ten",
        Duration::from_secs(90),
        || (1..=10).all(|n| a.agent(&format!("i{n}")).starts() == 1),
        dump,
    );
    assert_eq!(live_claims_of(&server, "box-a"), 10, "{}", dump());
    for sb in [b, c] {
        sb.start_supervisor();
        for n in 1..=10 {
            assert_eq!(deliver(sb, &format!("d-{n}"), n, &format!("i{n}")), 0);
        }
    }
    wait_until_or(
        "box-b and box-c wait for box-a's claims",
        Duration::from_secs(60),
        || [b, c].iter().all(|sb| sb.queue_records().iter().filter(|r| r["elsewhere"] == "box-a").count() == 10),
        dump,
    );
    a.signal(supervisor_a, Signal::SIGKILL);
    let _ = a.tmux().kill_server();
    let killed = Instant::now();
    wait_until_or(
        "the others take the ten over",
        Duration::from_secs(3 * term),
        || live_claims_of(&server, "box-a") == 0,
        dump,
    );
    let taken_in = killed.elapsed();
    eprintln!("box-a's ten claims were taken over {:.1} s after it was killed (term {term} s)", taken_in.as_secs_f64());
    assert!(taken_in >= Duration::from_secs(term / 2), "not before the term ran out: {taken_in:?}");
    wait_until_or(
        "each assignment runs on box-b or box-c, once",
        Duration::from_secs(60),
        || (1..=10).all(|n| b.agent(&format!("i{n}")).starts() + c.agent(&format!("i{n}")).starts() == 1),
        dump,
    );
    let taker = |n: usize| if b.agent(&format!("i{n}")).starts() == 1 { b } else { c };
    let prompt = taker(1).agent("i1").last().argv_strings().last().cloned().unwrap_or_default();
    assert!(prompt.contains("This assignment was first taken by box box-a"), "BX-7: {prompt}");
    assert_eq!(a.lease_names().len(), 10, "box-a's leases wait for its return");
    a.start_supervisor();
    wait_until_or(
        "returning box-a ends its ten local copies",
        Duration::from_secs(60),
        || {
            a.lease_names().is_empty()
                && a.hook_log().iter().filter(|l| l["what"] == "end" && l["how"] == "elsewhere").count() == 10
        },
        dump,
    );
    assert!((1..=10).all(|n| a.agent(&format!("i{n}")).starts() == 1), "box-a resumed none: {}", dump());
    assert!(!a.read_registry().names().any(|n| n.starts_with("hook-")), "{}", dump());
}

// BX-4, BX-9, BX-11
#[test]
fn three_boxes_through_a_database_restart_and_an_outage_longer_than_the_term_run_each_assignment_once() {
    let options = Options {
        deliveries: 36,
        redelivered: 6,
        shared: 6,
        slots: 2,
        agent_secs: 4.0..8.0,
        seed: 20261202,
        outage_beyond_term: Some(3),
        ..Options::default()
    };
    let report = match boxes_burst::run(&options) {
        Ok(report) => report,
        Err(why) => return eprintln!("SKIP: several boxes: {why}"),
    };
    eprint!("{report}");
    assert!(report.passed(), "{report}");
    let stopped: usize = report.per_box.iter().map(|b| b.panes_stopped).sum();
    assert!(stopped >= 1, "the outage stopped running panes, which started again after it: {report}");
}

// BX-2
#[test]
fn a_claims_database_of_another_schema_version_stops_the_supervisor_with_exit_2() {
    let Some(server) = server() else { return };
    let sb = a_box(&server, 0, "box-a", 2, 30);
    sb.once();
    server.sql(ROLE, "UPDATE agent_box_schema SET version = 7").unwrap();
    let out = sb.cmd("agent-box-supervisor").arg("--once").output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("has schema version 7; this agent-box knows version 1"), "{text}");
    assert_eq!(text.lines().count(), 1, "one line: {text}");
}
