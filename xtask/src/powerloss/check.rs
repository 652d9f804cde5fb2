//! The checks after the remount: the registry valid, every acknowledged update present, every lease readable,
//! every hook-log line whole, item 2's invariant (a dispatched assignment keeps its lease or its end record, a
//! lease has its spawn record), and the negative control's loss.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;

use lease::{LeaseDir, LeaseState};
use registry::{Document, ReadOutcome, SessionName};
use serde_json::Value;

use super::ledger::{Kind, Ledger};
use super::world::World;
use super::writers::{RMW_LOOPS, SHARED_KEY, epilogue_field_holds};

/// What one round found.
#[derive(Debug, Default)]
pub struct Findings {
    pub acknowledged: BTreeMap<Kind, u64>,
    pub lost: BTreeMap<Kind, u64>,
    /// One line per unreadable or inconsistent file.
    pub corrupt: Vec<String>,
    /// One line per broken promise of item 2.
    pub invariant: Vec<String>,
    pub control_acknowledged: u64,
    pub control_lost: u64,
}

impl Findings {
    fn lose(&mut self, kind: Kind, n: u64) {
        if n > 0 {
            *self.lost.entry(kind).or_default() += n;
        }
    }
}

/// Checks the remounted HOME against what the round acknowledged.
pub fn check(world: &World, ledger: &Ledger) -> Findings {
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
    let log = hook_log(world, &mut found);
    check_leases_and_invariant(&leases, &log, ledger, &mut found);
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
    found.lose(Kind::Rmw, lost_own.max(ledger.shared_max.saturating_sub(shared)));
    if shared != own.iter().sum::<u64>() {
        found.corrupt.push(format!("rmw: shared count {shared} is not the sum of the own counts {own:?}"));
    }
}

fn check_sessions(doc: &Document, ledger: &Ledger, found: &mut Findings) {
    for (name, want) in &ledger.sessions {
        if let Some(present) = want
            && doc.contains(name) != *present
        {
            found.lose(if *present { Kind::Add } else { Kind::Rm }, 1);
        }
    }
}

/// A dispatched entry stays; what the epilogue was read back to have written stays.
fn check_dispatches(doc: &Document, leases: &LeaseDir, ledger: &Ledger, found: &mut Findings) {
    for dispatch in &ledger.dispatched {
        let entry = doc.entry(&dispatch.name);
        found.lose(Kind::Spawn, u64::from(entry.is_none()));
        let Some(ack) = dispatch.epilogue else { continue };
        if ack.registry && !entry.is_some_and(|e| epilogue_field_holds(&e, ack.status)) {
            found.lose(Kind::Epilogue, 1);
        }
        let Ok(key) = SessionName::parse(&dispatch.name) else { continue };
        let lease_holds = match leases.read(&key) {
            LeaseState::Absent => ack.status == 0,
            LeaseState::Present(lease) => ack.status != 0 && lease.outcome_is_set(),
            LeaseState::Unreadable => false,
        };
        if ack.lease && !lease_holds {
            found.lose(Kind::EpilogueLease, 1);
        }
    }
}

/// The hook log's lines, parsed; a line that is not a whole JSON object is corrupt.
fn hook_log(world: &World, found: &mut Findings) -> Vec<Value> {
    let text = match fs::read(world.paths.hook_log()) {
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
