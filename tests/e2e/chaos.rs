//! The small fixed-seed chaos run (issue 13): 20 dispatched sessions through the real spawner, supervisor and
//! epilogue, with every fate (issue 17's too: late epilogues after a reused name's new life runs, `restart` of a
//! running leased session, `stop` → `restart` → crash, a supervisor SIGKILL right after a `new-session` followed
//! by a pane kill), supervisor kills, one tmux-server kill and a burst at the limit, all through the intake queue
//! with a limit that leaves three slots for the sessions being worked on (issue 24); every lease must end as the
//! spec and docs/lives.md say, every hook-log end and `restart` line must survive the trim, no assignment may get
//! its kickoff prompt twice, and no sample may be invalid. It runs in a slot (80 I9). `cargo xtask chaos
//! --sessions N --seed S` runs any size.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use agent_box_tests::chaos::{Options, run};

/// Fixed, so a failure here is replayed with `cargo xtask chaos --sessions 20 --seed 20261130 --duration 15`.
const SEED: u64 = 20_261_130;

#[test]
fn chaos_twenty_dispatched_sessions_keep_every_lease_promise() {
    let report = run(&Options { sessions: 20, seed: SEED, duration: Duration::from_secs(15), notifier: false });
    eprintln!("{report}");
    assert!(report.passed(), "{report}");
    assert!(report.log_trims >= 1, "the run crossed the hook log's trim bound");
    assert_eq!(report.server_kills, 1);
    assert!(report.settled_correctly == report.dispatched);
    assert!(2 * report.queued > report.dispatched, "most dispatches waited in the queue: {report}");
    assert_eq!(report.queued_admitted, report.queued, "each admitted once");
}
