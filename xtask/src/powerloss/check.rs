//! The checks after the remount: the registry valid, every acknowledged update present, every lease readable,
//! every hook-log line whole, item 2's invariant (a dispatched assignment keeps its lease or its end record, a
//! lease has its spawn record), the queue box's intake queue (`queue.rs`), and the negative control's loss.

mod queue;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::Path;

use base::SessionName;
use lease::{LeaseDir, LeaseState};
use registry::{Document, ReadOutcome};
use serde_json::Value;

use super::ledger::{Kind, Ledger};
use super::world::World;
use super::writers::{RMW_LOOPS, SHARED_KEY, epilogue_field_holds};

pub use self::queue::QueueFindings;

/// What one round found.
#[derive(Debug, Default)]
pub struct Findings {
    pub acknowledged: BTreeMap<Kind, u64>,
    pub lost: BTreeMap<Kind, u64>,
    /// One line per lost update (the rmw loops: one line for all of them).
    pub lost_lines: Vec<String>,
    /// One line per unreadable or inconsistent file.
    pub corrupt: Vec<String>,
    /// One line per broken promise of item 2.
    pub invariant: Vec<String>,
    pub control_acknowledged: u64,
    pub control_lost: u64,
    pub queue: QueueFindings,
}

impl Findings {
    fn lose(&mut self, kind: Kind, n: u64, what: impl FnOnce() -> String) {
        if n > 0 {
            *self.lost.entry(kind).or_default() += n;
            self.lost_lines.push(format!("lost ({}): {}", kind.label(), what()));
        }
    }
}

/// Checks the remounted HOMEs against what the round acknowledged; `lazyfs` is the remount's process (the queue
/// box's tick may have to kill it, as a halt does, when one of its processes cannot be stopped).
pub fn check(world: &World, ledger: &Ledger, lazyfs: Option<u32>) -> Findings {
    let mut found = Findings { acknowledged: ledger.acknowledged(), ..Findings::default() };
    let doc = match registry::read(world.paths.registry()) {
        ReadOutcome::Valid(doc) => doc,
        other => {
            found.corrupt.push(format!("registry not valid: {other:?}"));
            Document::empty()
        }
    };
    check_rmw(&doc, ledger, &mut found);
    check_sessions(&doc, ledger, &mut found);
    let leases = LeaseDir::new(world.paths.lease_dir());
    check_dispatches(&doc, &leases, ledger, &mut found);
    let log = hook_log(&world.paths.hook_log(), &mut found);
    check_leases_and_invariant(&leases, &log, ledger, &mut found);
    queue::check_main_box_queued(world, &log, &ledger.spawn_queued, &mut found);
    queue::check_queue_box(world, &ledger.queue, lazyfs, &mut found);
    found.queue.supervisor_kills = ledger.supervisor_kills;
    check_control(world, ledger, &mut found);
    found
}

fn count(doc: &Document, key: &str) -> u64 {
    doc.entry(key).and_then(|e| e.get("count")).and_then(Value::as_u64).unwrap_or(0)
}

/// Each loop's own counter holds at least its committed lines; the shared one at least the highest committed
/// value, and exactly the sum of the own ones (each write bumps both, so anything else is a torn update).
fn check_rmw(doc: &Document, ledger: &Ledger, found: &mut Findings) {
    let own: Vec<u64> = (0..RMW_LOOPS).map(|i| count(doc, &format!("pl-own-{i}"))).collect();
    let lost_own: u64 = ledger.rmw.iter().zip(&own).map(|(acked, got)| acked.saturating_sub(*got)).sum();
    let shared = count(doc, SHARED_KEY);
    let lost = lost_own.max(ledger.shared_max.saturating_sub(shared));
    found.lose(Kind::Rmw, lost, || {
        format!("committed {:?} (highest {}), on disk {own:?} (shared {shared})", ledger.rmw, ledger.shared_max)
    });
    if shared != own.iter().sum::<u64>() {
        found.corrupt.push(format!("rmw: shared count {shared} is not the sum of the own counts {own:?}"));
    }
}

fn check_sessions(doc: &Document, ledger: &Ledger, found: &mut Findings) {
    for (name, want) in &ledger.sessions {
        if let Some(present) = want
            && doc.contains(name) != *present
        {
            let kind = if *present { Kind::Add } else { Kind::Rm };
            found.lose(kind, 1, || {
                format!("{name} {} after the acknowledgement", if *present { "absent" } else { "present" })
            });
        }
    }
}

/// A dispatched entry stays; what the epilogue was read back to have written stays.
fn check_dispatches(doc: &Document, leases: &LeaseDir, ledger: &Ledger, found: &mut Findings) {
    for dispatch in &ledger.dispatched {
        let entry = doc.entry(&dispatch.name);
        found.lose(Kind::Spawn, u64::from(entry.is_none()), || format!("{} has no entry", dispatch.name));
        let Some(ack) = dispatch.epilogue else { continue };
        if ack.registry && !entry.is_some_and(|e| epilogue_field_holds(&e, ack.status)) {
            found.lose(Kind::Epilogue, 1, || format!("{} lost its {} field", dispatch.name, ack.status));
        }
        let Ok(key) = SessionName::parse(&dispatch.name) else { continue };
        let lease_holds = match leases.read(&key) {
            LeaseState::Absent => ack.status == 0,
            LeaseState::Present(lease) => ack.status != 0 && lease.outcome_is_set(),
            LeaseState::Unreadable => false,
        };
        if ack.lease && !lease_holds {
            found.lose(Kind::EpilogueLease, 1, || {
                format!("{}'s lease lost the status {} change", dispatch.name, ack.status)
            });
        }
    }
}

/// The hook log's lines, parsed; a line that is not a whole JSON object is corrupt.
fn hook_log(path: &Path, found: &mut Findings) -> Vec<Value> {
    let text = match fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(err) if err.kind() == io::ErrorKind::NotFound => String::new(),
        Err(err) => {
            found.corrupt.push(format!("hook log unreadable: {err}"));
            String::new()
        }
    };
    let mut lines = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Value>(line) {
            Ok(value @ Value::Object(_)) => lines.push(value),
            _ => found.corrupt.push(format!("hook log line not whole: {line:?}")),
        }
    }
    lines
}

/// Every lease readable; item 2: each dispatched name has its lease or an end record, each lease a spawn record.
fn check_leases_and_invariant(leases: &LeaseDir, log: &[Value], ledger: &Ledger, found: &mut Findings) {
    let names_with = |what: &str| -> BTreeSet<String> {
        log.iter().filter(|l| l["what"] == what).filter_map(|l| l["name"].as_str().map(str::to_owned)).collect()
    };
    let (spawns, ends) = (names_with("spawn"), names_with("end"));
    let listed = leases.list();
    let with_lease: BTreeSet<String> = listed.iter().map(|(name, _)| name.to_string()).collect();
    for (name, state) in &listed {
        if matches!(state, LeaseState::Unreadable) {
            found.corrupt.push(format!("lease {name} unreadable"));
        }
        if !spawns.contains(name.as_str()) {
            found.invariant.push(format!("lease {name} has no spawn record"));
        }
    }
    for dispatch in &ledger.dispatched {
        if !with_lease.contains(&dispatch.name) && !ends.contains(&dispatch.name) {
            found.invariant.push(format!("dispatched {} has neither a lease nor an end record", dispatch.name));
        }
    }
}

/// The control's file holds the value of some rename; every acknowledged rename after it was lost.
fn check_control(world: &World, ledger: &Ledger, found: &mut Findings) {
    let held = fs::read_to_string(world.control_file()).ok().and_then(|t| t.trim().parse::<u64>().ok()).unwrap_or(0);
    found.control_acknowledged = ledger.control_writes;
    found.control_lost = ledger.control_last.saturating_sub(held);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(counts: &[(&str, u64)]) -> Document {
        let mut doc = Document::empty();
        for (key, n) in counts {
            let mut entry = serde_json::Map::new();
            entry.insert("count".into(), Value::from(*n));
            doc.insert_new(&SessionName::parse(key).unwrap(), entry).unwrap();
        }
        doc
    }

    fn ledger(committed: [u64; RMW_LOOPS], shared_max: u64) -> Ledger {
        Ledger { rmw: committed.to_vec(), shared_max, ..Ledger::new(RMW_LOOPS) }
    }

    #[test]
    fn an_rmw_commit_on_disk_or_one_more_is_no_loss() {
        let on_disk = doc(&[("pl-shared", 7), ("pl-own-0", 3), ("pl-own-1", 2), ("pl-own-2", 1), ("pl-own-3", 1)]);
        let mut found = Findings::default();
        check_rmw(&on_disk, &ledger([3, 1, 1, 1], 6), &mut found);
        assert!(found.lost.is_empty() && found.corrupt.is_empty(), "{found:?}");
    }

    #[test]
    fn a_missing_rmw_commit_is_lost_and_a_torn_sum_is_corrupt() {
        let on_disk = doc(&[("pl-shared", 5), ("pl-own-0", 1), ("pl-own-1", 1), ("pl-own-2", 1), ("pl-own-3", 1)]);
        let mut found = Findings::default();
        check_rmw(&on_disk, &ledger([3, 1, 1, 1], 6), &mut found);
        assert_eq!(found.lost.get(&Kind::Rmw), Some(&2));
        assert_eq!(found.corrupt.len(), 1, "{found:?}");
    }

    #[test]
    fn sessions_in_flight_may_go_either_way() {
        let mut ledger = Ledger::new(RMW_LOOPS);
        ledger.session_acked("kept", Kind::Add);
        ledger.session_acked("gone", Kind::Rm);
        ledger.session_in_flight("either");
        let mut found = Findings::default();
        check_sessions(&doc(&[("kept", 0), ("gone", 0)]), &ledger, &mut found);
        assert_eq!(found.lost.get(&Kind::Rm), Some(&1));
        assert_eq!(found.lost.get(&Kind::Add), None);
    }
}
