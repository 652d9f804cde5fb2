//! The small fixed-seed intake burst (issue 24): 24 deliveries through the receiver stand-in, 6 of them
//! redelivered and 4 sharing an object with an earlier one, into a box of 2 slots whose agents run 0.2–1 s.
//! `cargo xtask intake-burst` runs any size (200 deliveries by default).

use std::time::Duration;

use agent_box_tests::intake_burst::{Options, run};

/// Fixed, so a failure here is replayed with `cargo xtask intake-burst --deliveries 24 --redelivered 6 --shared 4
/// --slots 2 --agent-secs 0.2-1 --seed 24024`.
const SEED: u64 = 24_024;

// IN-3, IN-5, IN-6, IN-11
#[test]
fn a_burst_into_a_full_box_admits_every_distinct_assignment_once_in_the_order_accepted() {
    let options =
        Options { deliveries: 24, redelivered: 6, shared: 4, slots: 2, agent_secs: 0.2..1.0, seed: SEED, workers: 3 };
    let report = run(&options);
    eprintln!("{report}");
    assert!(report.passed(), "{report}");
    assert_eq!((report.duplicates, report.accepted), (6, 18));
    assert_eq!(report.assignments_admitted, 14);
    assert!(report.queued >= 8, "most of the burst waited in the queue: {report}");
    assert!(report.max_wait > Duration::ZERO);
}
