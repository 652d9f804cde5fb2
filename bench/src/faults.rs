//! bench section `faults` (spec 90 §8, bar Q8): runs the fault procedures F1–F9 of the harness
//! (`agent_box_tests::faults`, whose result checks are also the e2e tests 90 F1–90 F9) on the release binaries,
//! and reports every result check as a count that must be 1, every bounded time with its bound, and every
//! counted bound (ticks). A case that needs root prints `SKIP <id>: <reason>`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use agent_box_tests::faults::{self, Case};

use super::Bench;
use super::fail::Outcome;
use super::report::{Bar, Metric, Scope, Unit};

const SECTION: &str = "faults";

type Procedure = fn() -> Case;

/// The faults section.
pub fn run(_bench: &Bench, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let cases: [(&str, Procedure); 9] = [
        ("F1", faults::f1),
        ("F2", faults::f2),
        ("F3", faults::f3),
        ("F4", faults::f4),
        ("F5", faults::f5),
        ("F6", faults::f6),
        ("F7", faults::f7),
        ("F8", faults::f8),
        ("F9", faults::f9),
    ];
    for (id, procedure) in cases {
        match catch_unwind(AssertUnwindSafe(procedure)) {
            Ok(case) => report(&case, metrics),
            Err(_) => {
                println!("{SECTION}: {id} could not run to the end (see the panic above)");
                metrics.push(
                    Metric::single(SECTION, format!("{id} ran to the end"), Unit::Count, 0.0)
                        .with_bar(Bar::exactly("Q8", 1.0)),
                );
            }
        }
    }
    Ok(())
}

fn report(case: &Case, metrics: &mut Vec<Metric>) {
    if let Some(why) = &case.skipped {
        println!("SKIP {}: {why}", case.id);
        return;
    }
    for check in &case.checks {
        if !check.ok {
            println!("{SECTION}: {} {} failed: {}", case.id, check.what, check.detail.trim_end());
        }
        let value = f64::from(u8::from(check.ok));
        metrics.push(
            Metric::single(SECTION, format!("{} {}", case.id, check.what), Unit::Count, value)
                .with_bar(Bar::exactly("Q8", 1.0)),
        );
    }
    for bounded in &case.bounded {
        let took = bounded.took.as_secs_f64() * 1000.0;
        let bound = bounded.bound.as_secs_f64() * 1000.0;
        // The bounds of §8 are worst cases of the programs' own waits, so they hold on any machine.
        metrics.push(
            Metric::single(SECTION, format!("{} {}", case.id, bounded.what), Unit::Millis, took)
                .with_bar(Bar::at_most("Q8", bound, Scope::Everywhere)),
        );
    }
    for (what, count, limit) in &case.counted {
        #[allow(clippy::cast_precision_loss)]
        let (count, limit) = (*count as f64, *limit as f64);
        metrics.push(
            Metric::single(SECTION, format!("{} {what}", case.id), Unit::Count, count).with_bar(Bar::at_most(
                "Q8",
                limit,
                Scope::Everywhere,
            )),
        );
    }
}
