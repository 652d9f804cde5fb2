//! The intake burst (issue 24, "Proof required"): hundreds of deliveries, some redelivered and some sharing an
//! object, fired by the receiver stand-in (`crate::receiver`) into a box with a few slots, the real supervisor,
//! tmux and baked epilogue, and fake agents that each run for a seeded time and exit 0. It then checks, from the
//! receiver's answers, the hook log (every line, across its trims) and what each agent recorded, that every
//! distinct assignment was admitted exactly once, nothing was dropped, no two sessions held one assignment at once,
//! the sessions started in the order their records were accepted, and every accepted line reached a prompt; and
//! it reports the figures: accepted, coalesced, duplicates, admitted, the longest wait from acceptance to the
//! agent's start. `cargo test` runs a small fixed seed; `cargo xtask intake-burst` any size.

mod check;
mod plan;
mod report;

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use self::plan::{Delivery, Kind, Plan};
pub use self::report::Report;
use crate::chaos::watch::Watch;
use crate::receiver::{Fate, Receiver};
use crate::sandbox::Sandbox;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    pub deliveries: usize,
    pub redelivered: usize,
    pub shared: usize,
    pub slots: usize,
    /// Seconds each session's agent runs before it exits 0, drawn from this range.
    pub agent_secs: Range<f64>,
    pub seed: u64,
    /// Receiver runs of webhook-spawn at a time (the receiver runs one per batch, batches of different keys at
    /// once).
    pub workers: usize,
}

/// Runs one burst to the end and reports.
pub fn run(options: &Options) -> Report {
    let plan =
        Plan::new(options.seed, options.deliveries, options.redelivered, options.shared, options.agent_secs.clone());
    let sb = burst_box(options.slots);
    for delivery in &plan.deliveries {
        sb.agent(&delivery.label).control(&format!("exit-after {:.2} 0", delivery.agent_secs));
    }
    let paths = sb.paths();
    let mut watch = Watch::start(sb.registry(), paths.lease_dir().to_path_buf(), paths.hook_log().to_path_buf());
    let supervisor = sb.start_supervisor();
    let started = Instant::now();
    let rx = Receiver::new(&sb);
    let fates = deliver_all(&rx, &plan, options.workers.max(1));
    let delivered = started.elapsed();
    let drained = drain(&sb, &plan, options.slots, supervisor);
    watch.stop();
    let mut report = Report::new(options);
    report.delivered_in = delivered;
    report.drained_in = started.elapsed();
    if let Err(why) = drained {
        report.wrong.push(why);
    }
    check::check(&sb, &plan, &fates, &watch, &mut report);
    report.receiver_dropped = rx.dropped().len();
    report
}

/// A slot sandbox (the real epilogue: an agent's exit 0 frees its slot) with `slots` slots and nothing listed.
fn burst_box(slots: usize) -> Sandbox {
    let sb = Sandbox::in_slot();
    registry::ensure_private_dir(&sb.home().join(".local/state/local-webhook")).unwrap();
    sb.set_limit(&slots.to_string());
    sb.write_registry(r#"{"version":1,"sessions":{}}"#);
    sb
}

/// Every delivery of the plan through the receiver, `workers` at a time, taken in plan order; the fates by plan
/// position.
fn deliver_all(rx: &Receiver<'_>, plan: &Plan, workers: usize) -> Vec<Fate> {
    let next = AtomicUsize::new(0);
    let fates: Mutex<Vec<Option<Fate>>> = Mutex::new(vec![None; plan.deliveries.len()]);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let at = next.fetch_add(1, Ordering::SeqCst);
                    let Some(delivery) = plan.deliveries.get(at) else { break };
                    let fate = rx.deliver(&delivery.batch);
                    fates.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[at] = Some(fate);
                }
            });
        }
    });
    let fates = fates.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    let missing = || Fate::Dropped { code: None, stderr: "never delivered".into() };
    fates.into_iter().map(|f| f.unwrap_or_else(missing)).collect()
}

/// Waits until nothing is queued or listed any more (every admitted agent ran and was reaped), within a bound
/// from the agents' total run time; why not, when it did not.
fn drain(sb: &Sandbox, plan: &Plan, slots: usize, supervisor: u32) -> Result<(), String> {
    let total: f64 = plan.deliveries.iter().map(|d| d.agent_secs).sum();
    let limit = Duration::from_secs_f64(3.0 * total / slots.max(1) as f64) + Duration::from_secs(120);
    let start = Instant::now();
    loop {
        if sb.exited(supervisor).is_some() {
            return Err("the supervisor exited during the burst".into());
        }
        let listed = registry::read(&sb.registry())
            .document_or_empty()
            .is_some_and(|doc| doc.names().any(|n| n.starts_with("hook-")));
        if !listed && queue_is_empty(sb) {
            return Ok(());
        }
        if start.elapsed() > limit || crate::interrupt::received() {
            return Err(format!("the box had not drained after {:.0} s", start.elapsed().as_secs_f64()));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// No record and no admission intent in the queue directory.
fn queue_is_empty(sb: &Sandbox) -> bool {
    let Ok(entries) = std::fs::read_dir(sb.paths().queue_dir()) else { return true };
    !entries.flatten().any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name.ends_with(".json") || name.ends_with(".admit")
    })
}
