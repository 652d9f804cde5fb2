//! What the epilogue records: the registry field under a verified write of up to three passes, then the lease and
//! hook log in one locked step (MS-5, MS-6). A registry the workspace wrote is only recognised and its one entry
//! edited in place (`registry::splice`), so the cost no longer grows with the number of entries (issue 12).

use std::path::Path;
use std::time::Duration;

use base::SessionName;
use lease::{EndHow, HookLog, LeaseDir};
use registry::splice::{Canonical, Edited, Found};
use registry::{Document, EntryMut, Raw, ReadOutcome, holds_exactly, read_raw, with_lock, write_atomic_parts};
use serde_json::{Map, Value};

use mark_stopped::args::{Life, Report};

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
    /// Issue 17: the entry names another life than the pane's (the name was removed and added again): the report
    /// is a late one of an older life and changes nothing of the entry.
    Stale,
}

pub fn record(registry: &Path, state_dir: &Path, report: &Report) {
    let target = if report.status == 0 { ("stopped", Value::Bool(true)) } else { ("died", Value::from(report.status)) };
    let life = &report.life;
    let leases = LeaseDir::new(state_dir.join("lease"));
    let owner = Owner { state_dir, leases: &leases };
    let mut outcome = Registry::Retry;
    for pass in 0..PASSES {
        outcome = registry_pass(registry, &report.name, &target, life, &owner);
        if outcome != Registry::Retry {
            break;
        }
        if pauses_after(pass) {
            std::thread::sleep(PAUSE_BETWEEN_PASSES);
        }
    }
    let log = HookLog::new(state_dir.join("hook-sessions.jsonl"));
    let log = (outcome != Registry::EntryAbsent).then_some(&log);
    // A stale report still settles its own life's lease (its gen guards that), but nothing unleased or unguarded.
    if outcome == Registry::Stale && !matches!(report.expect, lease::Expect::Gen(_)) {
        return;
    }
    let _ = if report.status == 0 {
        leases.finish(&report.name, &EndHow::Exited, &report.expect, log)
    } else {
        leases.record_death(&report.name, report.status, &report.expect, log)
    };
}

/// Whether pass `pass` (from 0) is followed by the pause: every pass but the last, so an epilogue whose passes all
/// failed settles the lease without waiting once more for nothing.
fn pauses_after(pass: usize) -> bool {
    pass + 1 < PASSES
}

/// One pass: lock-free read, lock, re-read, decide, write, verify, release. The lock-free read already
/// settles the cases that need no write (absent entry, target state), so they never open the lock; reads that
/// return the bytes already seen are not looked at again.
fn registry_pass(
    registry: &Path,
    name: &SessionName,
    target: &(&str, Value),
    life: &Life,
    owner: &Owner<'_>,
) -> Registry {
    let Raw::Bytes(seen) = read_raw(registry) else { return Registry::Done };
    let Some(view) = View::of(&seen, name) else { return Registry::Done };
    if let Some(settled) = view.settled(name, target, life) {
        return settled;
    }
    with_lock(registry, LOCK_WAIT, registry::LockPolicy::EPILOGUE, |_| {
        locked_pass(registry, name, target, life, &seen, view, owner)
    })
    .unwrap_or(Registry::Retry)
}

/// The locked part of a pass: re-read (compared piece by piece with the bytes seen; looked at again only when they
/// changed), decide, write, verify.
fn locked_pass(
    registry: &Path,
    name: &SessionName,
    target: &(&str, Value),
    life: &Life,
    seen: &[u8],
    view: View<'_>,
    owner: &Owner<'_>,
) -> Registry {
    if holds_exactly(registry, &[seen]).unwrap_or(false) {
        return write_and_verify(registry, name, target, life, view, owner);
    }
    match read_raw(registry) {
        Raw::Bytes(again) => match View::of(&again, name) {
            Some(fresh) => write_and_verify(registry, name, target, life, fresh, owner),
            None => Registry::Done,
        },
        _ => Registry::Done,
    }
}

/// Decide on the document read under the lock, write it with the target value, read it back (MS-6.1).
fn write_and_verify(
    registry: &Path,
    name: &SessionName,
    target: &(&str, Value),
    life: &Life,
    view: View<'_>,
    owner: &Owner<'_>,
) -> Registry {
    if let Some(settled) = view.settled(name, target, life) {
        return settled;
    }
    if let Life::FromGen(lease_gen) = life
        && view.names_no_life(name)
    {
        match owner.binds(name, lease_gen) {
            Some(true) => {}
            Some(false) => return Registry::Stale,
            None => return Registry::Retry,
        }
    }
    let Some(written) = view.edited(name, target) else { return Registry::Done };
    let parts = written.parts();
    if write_atomic_parts(registry, &parts).is_err() {
        return Registry::Retry;
    }
    // The read-back of MS-6.1: the bytes written, compared piece by piece; only other bytes are parsed.
    if holds_exactly(registry, &parts).unwrap_or(false) {
        return Registry::Done;
    }
    let (key, value) = target;
    read_back(read_raw(registry), name, key, value)
}

/// The read-back of a file that is not byte for byte what this pass wrote (a writer that ignores the lock came in
/// between): done when it is a valid registry whose entry holds the target (or that no longer lists the name),
/// else another pass.
fn read_back(after: Raw, name: &SessionName, key: &str, value: &Value) -> Registry {
    match after {
        Raw::Bytes(after) => match ReadOutcome::from_bytes(&after) {
            ReadOutcome::Valid(after) if holds(&after, name, key, value) => Registry::Done,
            _ => Registry::Retry,
        },
        _ => Registry::Retry,
    }
}

/// What tells whether a report `NAME STATUS G` without LIFE is the pane of an entry that names no life (L-6).
struct Owner<'a> {
    state_dir: &'a Path,
    leases: &'a LeaseDir,
}

impl Owner<'_> {
    /// Asked under the registry lock: the pane is the entry's only on the evidence L-1 would give the entry the
    /// life G by, a side file that names no life (one that does was written for an entry this one replaced) and
    /// G's lease, there and not orphaned (read under its lock, OV-5.5). `None`: the lease lock was busy, the pass
    /// is tried again.
    fn binds(&self, name: &SessionName, lease_gen: &str) -> Option<bool> {
        let Some(lease_gen) = lease::Gen::parse(lease_gen) else { return Some(false) };
        let side = self.state_dir.join("session").join(format!("{name}.json"));
        if side_names_a_life(&side) {
            return Some(false);
        }
        self.leases.binds(name, &lease_gen).ok()
    }
}

/// Whether the supervisor's side file names a life (a UUID under `life`, as the supervisor reads it); a missing or
/// unreadable one names none.
fn side_names_a_life(path: &Path) -> bool {
    let Ok(bytes) = std::fs::read(path) else { return false };
    let Ok(Value::Object(side)) = serde_json::from_slice::<Value>(&bytes) else { return false };
    side.get(registry::LIFE_KEY).and_then(Value::as_str).is_some_and(base::is_uuid)
}

/// The registry as this pass sees it. A file the workspace wrote is only recognised, and the entry alone parsed and
/// re-serialised (`registry::splice`: the cost no longer grows with the number of entries, issue 12); anything else
/// is parsed whole. Both give the same decisions and the same bytes.
enum View<'a> {
    Spliced { file: Canonical<'a>, entry: Option<Map<String, Value>> },
    Whole(Document),
}

impl<'a> View<'a> {
    /// `None` when the registry is Empty or Invalid: step 1 does nothing (MS-5.3).
    fn of(bytes: &'a [u8], name: &SessionName) -> Option<Self> {
        if let Some(file) = Canonical::scan(bytes, name) {
            let entry = file.entry();
            return Some(Self::Spliced { file, entry });
        }
        match ReadOutcome::from_bytes(bytes) {
            ReadOutcome::Valid(doc) => Some(Self::Whole(doc)),
            _ => None,
        }
    }

    /// `Some` when this document needs no write: the entry is absent, not an object, of another life than the
    /// pane's, or already in the target state.
    fn settled(&self, name: &SessionName, (key, value): &(&str, Value), life: &Life) -> Option<Registry> {
        let other_life = |entry: &Map<String, Value>| {
            let named = entry.get(registry::LIFE_KEY).and_then(Value::as_str);
            match life {
                Life::Exact(life) => named != Some(life.as_str()),
                Life::FromGen(life) => named.is_some_and(|named| named != life),
                Life::Unknown => false,
            }
        };
        match self {
            Self::Spliced { file, entry } => match (file.found(), entry) {
                (Found::Absent, _) => Some(Registry::EntryAbsent),
                (Found::NotObject, _) | (Found::Object(_), None) => Some(Registry::Done),
                (Found::Object(_), Some(entry)) if other_life(entry) => Some(Registry::Stale),
                (Found::Object(_), Some(entry)) => (entry.get(*key) == Some(value)).then_some(Registry::Done),
            },
            Self::Whole(doc) => match doc.entry(name.as_str()) {
                None if doc.contains(name.as_str()) => Some(Registry::Done),
                None => Some(Registry::EntryAbsent),
                Some(entry) if other_life(entry.raw()) => Some(Registry::Stale),
                Some(entry) if entry.get(key) == Some(value) => Some(Registry::Done),
                Some(_) => None,
            },
        }
    }

    /// Whether the entry of `name` is an object without a `life` key.
    fn names_no_life(&self, name: &SessionName) -> bool {
        let entry = match self {
            Self::Spliced { entry, .. } => entry.as_ref(),
            Self::Whole(doc) => doc.entry(name.as_str()).map(|e| e.raw()),
        };
        entry.is_some_and(|entry| entry.get(registry::LIFE_KEY).and_then(Value::as_str).is_none())
    }

    /// The registry's bytes with the target value set through `entry_mut` (RG-9.2: an existing entry only).
    fn edited(self, name: &SessionName, (key, value): &(&str, Value)) -> Option<Written<'a>> {
        match self {
            Self::Spliced { file, entry } => {
                let mut entry = entry?;
                EntryMut::of(&mut entry).set(key, value.clone());
                file.with_entry(&entry).map(Written::Spliced)
            }
            Self::Whole(mut doc) => {
                doc.entry_mut(name)?.set(key, value.clone());
                Some(Written::Whole(doc.to_bytes()))
            }
        }
    }
}

/// What a pass writes: the edited file in parts, or a whole document.
enum Written<'a> {
    Spliced(Edited<'a>),
    Whole(Vec<u8>),
}

impl Written<'_> {
    fn parts(&self) -> Vec<&[u8]> {
        match self {
            Self::Spliced(edited) => edited.parts().to_vec(),
            Self::Whole(bytes) => vec![bytes],
        }
    }
}

/// The verification of MS-6.1: the target value is present, or the entry is gone.
fn holds(doc: &Document, name: &SessionName, key: &str, value: &Value) -> bool {
    match doc.entry(name.as_str()) {
        Some(entry) => entry.get(key) == Some(value),
        None => !doc.contains(name.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_back_is_done_only_when_the_entry_holds_the_target() {
        let main = SessionName::parse("main").unwrap();
        let back = |bytes: &[u8]| read_back(Raw::Bytes(bytes.to_vec()), &main, "died", &Value::from(3));
        assert!(back(br#"{"version":1,"sessions":{"main":{"died":3},"other":{}}}"#) == Registry::Done);
        assert!(back(br#"{"version":1,"sessions":{"other":{}}}"#) == Registry::Done, "the entry was removed");
        assert!(back(br#"{"version":1,"sessions":{"main":{"died":1}}}"#) == Registry::Retry);
        assert!(back(b"{not json") == Registry::Retry);
        assert!(read_back(Raw::Missing, &main, "died", &Value::from(3)) == Registry::Retry);
    }

    #[test]
    fn every_pass_but_the_last_is_followed_by_the_pause() {
        let pauses: Vec<bool> = (0..PASSES).map(pauses_after).collect();
        assert_eq!(pauses, [true, true, false]);
    }
}
