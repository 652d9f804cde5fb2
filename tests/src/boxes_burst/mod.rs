//! The boxes burst (issue 26, "Proof required"): several boxes, each with its own receiver stand-in, receive the
//! same seeded deliveries (some sharing an object, some redelivered, all with GitHub's delivery ids), and the claims
//! database decides which box runs each assignment. Mid-burst the PostgreSQL server is restarted, and later stopped
//! for longer than the claim term, while deliveries keep arriving. It then checks from outside (each receiver's
//! answers, each box's hook log, each fake agent's starts) that every assignment was admitted on exactly one box,
//! none twice, none dropped, and reports the figures. `cargo test` runs a small fixed seed; `cargo xtask boxes`
//! any size.

mod check;
mod report;

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use self::report::Report;
use crate::boxes::a_box;
use crate::chaos::watch::Watch;
use crate::intake_burst::Plan;
use crate::postgres::Postgres;
use crate::receiver::{Fate, Receiver};
use crate::sandbox::Sandbox;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub boxes: usize,
    pub deliveries: usize,
    pub redelivered: usize,
    pub shared: usize,
    pub slots: usize,
    pub agent_secs: Range<f64>,
    pub term_secs: u64,
    pub seed: u64,
    /// Restart the server once a third of the deliveries are in.
    pub restart_db: bool,
    /// Stop the server for the term plus this many seconds once two thirds are in (`None`: no outage).
    pub outage_beyond_term: Option<u64>,
}

/// One box of the burst: its label, sandbox, supervisor pid and hook-log tail.
struct Member {
    label: String,
    sb: Sandbox,
    supervisor: u32,
    watch: Watch,
}

/// Runs one burst to the end and reports; `Err` when no PostgreSQL server can run here (a SKIP).
pub fn run(options: &Options) -> Result<Report, String> {
    let server = Postgres::start()?;
    let plan =
        Plan::new(options.seed, options.deliveries, options.redelivered, options.shared, options.agent_secs.clone());
    let mut members: Vec<Member> = (0..options.boxes).map(|k| member(&server, &plan, options, k)).collect();
    let mut report = Report::new(options);
    let started = Instant::now();
    let fates = deliver_everywhere(&server, &plan, &members, options, &mut report);
    report.delivered_in = started.elapsed();
    if let Err(why) = drain(&members, &plan, options) {
        report.wrong.push(why);
    }
    report.drained_in = started.elapsed();
    for m in &mut members {
        m.watch.stop();
    }
    check::check(&server, &plan, &members, &fates, &mut report);
    Ok(report)
}

fn member(server: &Postgres, plan: &Plan, options: &Options, k: usize) -> Member {
    let label = format!("box-{}", char::from(b'a' + k as u8));
    let sb = a_box(server, k, &label, options.slots, options.term_secs);
    sb.write_registry(r#"{"version":1,"sessions":{}}"#);
    for delivery in &plan.deliveries {
        sb.agent(&delivery.label).control(&format!("exit-after {:.2} 0", delivery.agent_secs));
    }
    let paths = sb.paths();
    let watch = Watch::start(sb.registry(), paths.lease_dir().to_path_buf(), paths.hook_log().to_path_buf());
    let supervisor = sb.start_supervisor();
    Member { label, sb, supervisor, watch }
}

/// Every delivery to every box, each box's receiver in plan order on its own thread, while the server is
/// restarted and stopped as asked once enough deliveries are in; the fates by box, then plan position.
fn deliver_everywhere(
    server: &Postgres,
    plan: &Plan,
    members: &[Member],
    options: &Options,
    report: &mut Report,
) -> Vec<Vec<Fate>> {
    let sent = AtomicUsize::new(0);
    let n = plan.deliveries.len();
    std::thread::scope(|s| {
        let runs: Vec<_> = members
            .iter()
            .map(|m| {
                let sent = &sent;
                s.spawn(move || {
                    let rx = Receiver::new(&m.sb);
                    plan.deliveries
                        .iter()
                        .map(|d| {
                            let fate = rx.deliver(&d.batch);
                            sent.fetch_add(1, Ordering::SeqCst);
                            fate
                        })
                        .collect::<Vec<Fate>>()
                })
            })
            .collect();
        let total = n * members.len();
        let reached = |part: usize| {
            let deadline = Instant::now() + Duration::from_secs(600);
            while sent.load(Ordering::SeqCst) * 3 < total * part && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        if options.restart_db {
            reached(1);
            server.stop();
            let resumed = server.resume();
            report.db_events.push(format!("restarted after {} deliveries: {resumed:?}", sent.load(Ordering::SeqCst)));
        }
        if let Some(beyond) = options.outage_beyond_term {
            reached(2);
            let at = sent.load(Ordering::SeqCst);
            server.stop();
            std::thread::sleep(Duration::from_secs(options.term_secs + beyond));
            let resumed = server.resume();
            report.db_events.push(format!(
                "stopped for {} s (the term plus {beyond} s) after {at} deliveries: {resumed:?}",
                options.term_secs + beyond
            ));
        }
        runs.into_iter().map(|r| r.join().unwrap_or_default()).collect()
    })
}

/// Waits until no box has a queued record or a listed hook session, within a bound from the agents' total run
/// time; why not, when it did not.
fn drain(members: &[Member], plan: &Plan, options: &Options) -> Result<(), String> {
    let total: f64 = plan.deliveries.iter().map(|d| d.agent_secs).sum();
    let slots = (options.slots * options.boxes).max(1) as f64;
    let limit = Duration::from_secs_f64(3.0 * total / slots) + Duration::from_secs(180 + 2 * options.term_secs);
    let start = Instant::now();
    loop {
        if let Some(m) = members.iter().find(|m| m.sb.exited(m.supervisor).is_some()) {
            return Err(format!("the supervisor of {} exited during the burst", m.label));
        }
        let busy: Vec<&str> = members.iter().filter(|m| !idle(&m.sb)).map(|m| m.label.as_str()).collect();
        if busy.is_empty() {
            return Ok(());
        }
        if start.elapsed() > limit || crate::interrupt::received() {
            return Err(format!("{busy:?} had not drained after {:.0} s", start.elapsed().as_secs_f64()));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Nothing queued and no hook session listed.
fn idle(sb: &Sandbox) -> bool {
    let listed = registry::read(&sb.registry())
        .document_or_empty()
        .is_some_and(|doc| doc.names().any(|n| n.starts_with("hook-")));
    !listed && sb.queue_records().is_empty()
}
