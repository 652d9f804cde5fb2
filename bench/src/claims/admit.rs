//! Issue 26 in bench section `claims`, (a): a delivery to its agent running, with the claims database against
//! without, in the same rounds. Each round sends one batch (a new issue) to each box, the order alternating, and
//! times from webhook-spawn's start to the moment the batch's fake agent recorded its start (`started_at`, the mtime
//! of its argv record). The agents keep running, so after the rounds each box holds [`SESSIONS`] sessions, the
//! load of (b).

use std::time::{Duration, SystemTime};

use agent_box_tests::fleet::Fleet;

use super::super::fail::{Context, Failure, Outcome};
use super::super::intake::{dispatch, echo_dispatch, run_dispatch};
use super::super::report::{Metric, Unit};
use super::super::runner::Spread;
use super::super::world::wait_for;
use super::{Pair, SECTION, SESSIONS};

/// A liveness bound per delivery, far above any plausible admission (the 2 s timer alone admits within 2 s).
const STEP_LIMIT: Duration = Duration::from_secs(20);

/// Runs the rounds and pushes the metrics.
pub fn delivery_to_agent(pair: &Pair, metrics: &mut Vec<Metric>) -> Outcome<()> {
    println!(
        "{SECTION}: {SESSIONS} rounds, one new issue to each box per round (order alternating), timed from \
         webhook-spawn's start to the batch's agent recording its start; the agents keep running:"
    );
    println!("{}", echo_dispatch(&dispatch(&pair.claimed.sandbox, "bench-c-0", 0, &["--as", "c-0"]).0));
    let (mut plain, mut claimed, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..SESSIONS {
        super::super::interrupt::check()?;
        let (p, c) = if round % 2 == 0 {
            let p = one(&pair.plain, "p", round, "session '")?;
            (p, one(&pair.claimed, "c", round, "batch queued")?)
        } else {
            let c = one(&pair.claimed, "c", round, "batch queued")?;
            (one(&pair.plain, "p", round, "session '")?, c)
        };
        plain.push(p);
        claimed.push(c);
        ratios.push(c / p.max(0.001));
    }
    let name = |who: &str| format!("delivery -> its agent running, {who}");
    metrics.push(
        Metric::sampled(SECTION, name("with the claims database"), Unit::Millis, claimed)
            .with_round_ratio(Spread::of(&ratios), "without, same round"),
    );
    metrics.push(Metric::sampled(SECTION, format!("    {}", name("without (admitted at once)")), Unit::Millis, plain));
    Ok(())
}

/// One batch to `fleet` for issue `round`, its agent `<prefix>-<round>`: ms from the spawn to the agent's start.
fn one(fleet: &Fleet, prefix: &str, round: usize, want: &str) -> Outcome<f64> {
    let name = format!("{prefix}-{round}");
    let agent = fleet.sandbox.agent(&name);
    agent.control("poll");
    let sent = SystemTime::now();
    run_dispatch(dispatch(&fleet.sandbox, &format!("bench-{name}"), round, &["--as", &name]), want)
        .map_err(|e| Failure(format!("{e}; {}", fleet.log_tail())))?;
    wait_for(&format!("{name} to start"), STEP_LIMIT, Duration::from_millis(1), || agent.started_at(1).is_some())
        .map_err(|e| Failure(format!("{e}; {}", fleet.log_tail())))?;
    let started = agent.started_at(1).context(|| "no start recorded".into())?;
    // The mtime comes from the kernel's coarse clock: a start can read a few ms early; 0 then.
    Ok(started.duration_since(sent).map_or(0.0, |d| d.as_secs_f64() * 1000.0))
}
