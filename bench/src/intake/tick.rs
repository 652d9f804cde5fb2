//! Issue 24 in bench section `intake`, (c), bar Q14: the supervisor's tick with 500 records waiting against one
//! with none. Two loops of 20 live entries on boxes of exactly 20 slots (full, so nothing is admitted and a tick
//! with a queue takes no lock, IN-11), run at once; the first gets 500 records written into its queue directory
//! the way webhook-spawn writes them (the intake crate's own `Queue::create`). The second is sampled in the same
//! rounds as the first (one round per tick of the first), so the ratio of CPU per tick is taken per round under the
//! same load, as the `tick` section's comparisons are.

use std::time::{SystemTime, UNIX_EPOCH};

use agent_box_tests::Sandbox;
use agent_box_types::intake::{Batch, RECORD_NOTE, Record};
use intake::{Queue, RecordId};

use super::super::fail::{Context, Outcome, fail};
use super::super::report::{Bar, Metric, Scope, Unit};
use super::super::runner::Spread;
use super::super::world::LoopWorld;
use super::SECTION;

const ENTRIES: usize = 20;
const QUEUED: usize = 500;
/// Q14: the median of the per-round ratios at most 1.2.
const Q14_RATIO: f64 = 1.2;

/// Runs the comparison and pushes its metrics.
pub fn queued_against_none(metrics: &mut Vec<Metric>) -> Outcome<()> {
    let limit = ENTRIES.to_string();
    let queued = LoopWorld::start(SECTION, ENTRIES, 0, &limit)?;
    println!("{SECTION}: writing {QUEUED} queued records into the first loop's queue directory");
    write_records(&queued.fleet.sandbox, QUEUED)?;
    let none = LoopWorld::start(SECTION, ENTRIES, 0, &limit)?;
    queued.fleet.wait_quiet_tick();
    println!(
        "{SECTION}: {QUEUED} queued records against none, {ENTRIES} live entries on {ENTRIES} slots each, same rounds"
    );
    let observed = queued.observe(Some(&none))?;
    let left = Queue::new(queued.fleet.sandbox.paths().queue_dir()).list().map(|l| l.queued.len());
    if left.as_ref().ok() != Some(&QUEUED) {
        return fail(format!("the full box's queue changed while observed ({left:?} records, not {QUEUED})"));
    }
    let companion = observed.companion.context(|| "the loop without a queue was not sampled".into())?;
    if observed.per_tick_ms.is_empty() || companion.per_tick_ms.is_empty() {
        println!("{SECTION}: no scheduler clock on this kernel; the queue comparison has no figure");
        return Ok(());
    }
    let name = |who: &str| format!("CPU per tick, {ENTRIES} entries on a full box, {who} (scheduler clock)");
    metrics.push(Metric::sampled(SECTION, name("500 queued records"), Unit::Millis, observed.per_tick_ms));
    metrics.push(Metric::sampled(SECTION, format!("    {}", name("none queued")), Unit::Millis, companion.per_tick_ms));
    metrics.push(
        Metric::sampled(SECTION, "CPU per tick, 500 queued / none queued", Unit::Factor, companion.ratios.clone())
            .with_bar(Bar::at_most("Q14", Q14_RATIO, Scope::Everywhere))
            .with_round_ratio(Spread::of(&companion.ratios), "none queued, same round"),
    );
    Ok(())
}

/// `n` records of distinct issues, oldest first, as webhook-spawn writes them (IN-1, IN-2).
fn write_records(sandbox: &Sandbox, n: usize) -> Outcome<()> {
    let paths = sandbox.paths();
    let queue = Queue::new(paths.queue_dir());
    let first = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    for k in 0..n {
        let record = record(&paths, k);
        let id = RecordId::new(first + k as u64, &record.assignment);
        queue.create(&id, &record).context(|| format!("writing queued record {k}"))?;
    }
    Ok(())
}

fn record(paths: &registry::Paths, k: usize) -> Record {
    let (key, now) = (format!("bench-tick-{k}"), base::time::format_iso(base::time::now_epoch()));
    Record {
        note_text: RECORD_NOTE.to_owned(),
        version: 1,
        key: key.clone(),
        assignment: format!("github:acme/widgets#{k}"),
        source: "github".into(),
        routing_key: "acme/widgets".into(),
        name_stem: "acme-widgets".into(),
        topic: "github:acme/*".into(),
        note: String::new(),
        object: Some(k.to_string()),
        harness: "tool".into(),
        args: Vec::new(),
        seed: true,
        filter_dir: paths.webhook_state_dir().display().to_string(),
        user: paths.user().to_owned(),
        accepted_at: now.clone(),
        batches: vec![Batch {
            keys: vec![key.clone()],
            at: now,
            event: "issues".into(),
            count: Some(1),
            meta: Some(format!(r#"{{"number":"{k}","delivery":"{key}"}}"#)),
            text: format!("[github] issue #{k} opened by bench"),
        }],
        outcome: None,
        ended_at: None,
        notified_at: None,
        notify: None,
        elsewhere: None,
    }
}
