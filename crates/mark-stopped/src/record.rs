//! What the epilogue records: the registry field under a verified write of up to three passes, then the lease
//! and hook log in one locked step (MS-5, MS-6).

use std::path::Path;
use std::time::Duration;

use lease::{EndHow, HookLog, LeaseDir};
use registry::{Document, Raw, ReadOutcome, SessionName, read_raw, with_lock_at, write_atomic};
use serde_json::Value;

use mark_stopped::args::Report;

/// The epilogue's fixed lock bound per pass (RG-7.10).
const LOCK_WAIT: Duration = Duration::from_secs(2);
const PASSES: usize = 3;
const PAUSE_BETWEEN_PASSES: Duration = Duration::from_secs(1);

/// What the registry step learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Registry {
    /// Recorded, already in the target state, or nothing to do (missing, invalid, unreadable registry).
    Done,
    /// The registry was readable and the entry was absent: `rm` already wrote this life's end record.
    EntryAbsent,
    /// This pass could not make the write stick.
    Retry,
}

pub fn record(registry: &Path, state_dir: &Path, report: &Report) {
    let target = if report.status == 0 { ("stopped", Value::Bool(true)) } else { ("died", Value::from(report.status)) };
    let mut outcome = Registry::Retry;
    for pass in 0..PASSES {
        outcome = registry_pass(registry, &report.name, &target);
        if outcome != Registry::Retry {
            break;
        }
        if pass + 1 < PASSES {
            std::thread::sleep(PAUSE_BETWEEN_PASSES);
        }
    }
    let leases = LeaseDir::new(state_dir.join("lease"));
    let log = HookLog::new(state_dir.join("hook-sessions.jsonl"));
    let log = (outcome != Registry::EntryAbsent).then_some(&log);
    let _ = if report.status == 0 {
        leases.finish(&report.name, &EndHow::Exited, &report.expect, log)
    } else {
        leases.record_death(&report.name, report.status, &report.expect, log)
    };
}

/// One pass: lock-free read, lock, re-read, decide, write, verify, release. The lock-free read already
/// settles the cases that need no write (absent entry, target state), so they never open the lock; reads that
/// return the bytes already seen are not parsed again (the epilogue's cost is mostly parsing and fsync).
fn registry_pass(registry: &Path, name: &SessionName, target: &(&str, Value)) -> Registry {
    let Raw::Bytes(seen) = read_raw(registry) else { return Registry::Done };
    let ReadOutcome::Valid(doc) = ReadOutcome::from_bytes(&seen) else { return Registry::Done };
    if let Some(settled) = settled(&doc, name, target) {
        return settled;
    }
    with_lock_at(registry, LOCK_WAIT, |_| locked_pass(registry, name, target, &seen, doc)).unwrap_or(Registry::Retry)
}

/// The locked part of a pass: re-read (parsing only bytes not seen before), decide, write, verify.
fn locked_pass(registry: &Path, name: &SessionName, target: &(&str, Value), seen: &[u8], doc: Document) -> Registry {
    let mut doc = match read_raw(registry) {
        Raw::Bytes(again) if again == seen => doc,
        Raw::Bytes(again) => match ReadOutcome::from_bytes(&again) {
            ReadOutcome::Valid(fresh) => fresh,
            _ => return Registry::Done,
        },
        _ => return Registry::Done,
    };
    if let Some(settled) = settled(&doc, name, target) {
        return settled;
    }
    let (key, value) = target;
    let Some(mut entry) = doc.entry_mut(name) else { return Registry::Done };
    entry.set(key, value.clone());
    let written = doc.to_bytes();
    if write_atomic(registry, &written).is_err() {
        return Registry::Retry;
    }
    match read_raw(registry) {
        Raw::Bytes(after) if after == written => Registry::Done,
        Raw::Bytes(after) => match ReadOutcome::from_bytes(&after) {
            ReadOutcome::Valid(after) if holds(&after, name, key, value) => Registry::Done,
            _ => Registry::Retry,
        },
        _ => Registry::Retry,
    }
}

/// `Some` when this document needs no write: the entry is absent, not an object, or already in the target state.
fn settled(doc: &Document, name: &SessionName, (key, value): &(&str, Value)) -> Option<Registry> {
    match doc.entry(name.as_str()) {
        None if doc.contains(name.as_str()) => Some(Registry::Done),
        None => Some(Registry::EntryAbsent),
        Some(entry) if entry.get(key) == Some(value) => Some(Registry::Done),
        Some(_) => None,
    }
}

/// The verification of MS-6.1: the target value is present, or the entry is gone.
fn holds(doc: &Document, name: &SessionName, key: &str, value: &Value) -> bool {
    match doc.entry(name.as_str()) {
        Some(entry) => entry.get(key) == Some(value),
        None => !doc.contains(name.as_str()),
    }
}
