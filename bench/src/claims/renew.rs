//! Issue 26 in bench section `claims`, (b): the renewal with 50 live claims (BX-5). (1) The statement itself: a
//! client in this process holding 50 claims under a label of its own renews them 50 times; the wall time of each
//! round trip. (2) The supervisors: CPU per renewal period (the supervisor renews at most every 10 s, so a period
//! is 5 ticks of the 2 s timer) of the box holding 50 claims against the box with 50 sessions and no database,
//! both read at the same instants (one round per period of the claimed box), every thread counted (the claims
//! client works on a thread of its own). At the end every one of the 50 claims must have been renewed within the
//! last period, or the figure measured nothing.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use agent_box_tests::postgres::{PASSWORD, Postgres, ROLE};
use claims::config::{CLAIMS_ENV, ClaimsConfig};
use claims::store::{Store, Taken};

use super::super::fail::{Context, Failure, Outcome, fail};
use super::super::procfs;
use super::super::report::{Metric, Unit};
use super::super::runner::Spread;
use super::{LABEL, Pair, SECTION, SESSIONS};

const STATEMENTS: usize = 50;
/// Ticks per renewal period: the supervisor's 10 s renewal interval over its 2 s timer.
const PERIOD_TICKS: usize = 5;
const PERIODS: usize = 12;
const TERM: Duration = Duration::from_secs(90);

/// (1): the renewal statement's round trip with 50 claims.
pub fn statement(server: &Postgres, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let connection = server.connection(ROLE);
    let lookup = |key: &str| (key == CLAIMS_ENV).then(|| OsString::from(&connection));
    let config = ClaimsConfig::from_lookup(&lookup, Some("bench-direct"))
        .map_err(|e| Failure(e.to_string()))?
        .context(|| "no claims configuration".into())?;
    let mut store = Store::open(&config, Some(PASSWORD.as_bytes())).map_err(|e| Failure(e.to_string()))?;
    let lives: Vec<String> = (0..SESSIONS).map(|k| format!("direct-{k}")).collect();
    for (k, life) in lives.iter().enumerate() {
        match store.take(&format!("bench:direct#{k}"), &config.label, life, TERM) {
            Ok(Taken::Won { .. }) => {}
            other => return fail(format!("the bench's own claim {k} was not won: {other:?}")),
        }
    }
    println!("{SECTION}: {STATEMENTS} renewals of {SESSIONS} claims by a client in this process (one statement each)");
    let mut samples = Vec::with_capacity(STATEMENTS);
    for _ in 0..STATEMENTS {
        let started = Instant::now();
        let still = store.renew(&config.label, &lives, TERM).map_err(|e| Failure(e.to_string()))?;
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        if still.len() != SESSIONS {
            return fail(format!("a renewal answered {} of the {SESSIONS} claims", still.len()));
        }
    }
    metrics.push(Metric::sampled(SECTION, format!("one renewal statement, {SESSIONS} claims"), Unit::Millis, samples));
    Ok(())
}

/// (2): each supervisor's CPU per renewal period, the claimed box against the plain one, in the same rounds.
pub fn per_period(pair: &Pair, server: &Postgres, metrics: &mut Vec<Metric>) -> Outcome<()> {
    let (claimed, plain) = (&pair.claimed, &pair.plain);
    println!(
        "{SECTION}: {PERIODS} periods of {PERIOD_TICKS} ticks (one renewal each) of the box with {SESSIONS} claims, \
         the box without a database read at the same instants"
    );
    claimed.wait_ticks(claimed.ticks() + 1);
    let cpu = |pid: u32| procfs::process_run_time_ns(pid).context(|| format!("no schedstat for process {pid}"));
    let (mut before_c, mut before_p) = (cpu(claimed.pid)?, cpu(plain.pid)?);
    let (mut with, mut without, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..PERIODS {
        super::super::interrupt::check()?;
        claimed.wait_ticks(claimed.ticks() + PERIOD_TICKS);
        let (now_c, now_p) = (cpu(claimed.pid)?, cpu(plain.pid)?);
        let (c, p) = (ms(now_c - before_c), ms(now_p - before_p));
        (before_c, before_p) = (now_c, now_p);
        with.push(c);
        without.push(p);
        ratios.push(c / p.max(0.001));
    }
    renewed_lately(server)?;
    let name =
        |who: &str| format!("supervisor CPU per renewal period ({PERIOD_TICKS} ticks), {SESSIONS} sessions, {who}");
    metrics.push(
        Metric::sampled(SECTION, name("50 claims"), Unit::Millis, with)
            .with_round_ratio(Spread::of(&ratios), "no database, same round"),
    );
    metrics.push(Metric::sampled(SECTION, format!("    {}", name("no database")), Unit::Millis, without));
    Ok(())
}

/// Every claim of the benched box was renewed within the last period and none was lost: else (2) measured no
/// renewal at all.
fn renewed_lately(server: &Postgres) -> Outcome<()> {
    let query = format!(
        "SELECT count(*) FROM agent_box_claims WHERE box = '{LABEL}' AND done_at IS NULL \
         AND renewed_at > now() - interval '15 seconds'"
    );
    let count = server.sql(ROLE, &query).map_err(Failure)?;
    if count.trim() != SESSIONS.to_string() {
        return fail(format!("{} of the {SESSIONS} claims were renewed in the last period", count.trim()));
    }
    Ok(())
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}
