//! Reaping parked one-shot sessions (waiting for an undelivered outcome, N-11) and sweeping what no listed session
//! owns (SUP-10.1–10.3, SUP-10.5).

use std::fs;
use std::path::Path;
use std::time::UNIX_EPOCH;

use base::SessionName;
use lease::{EndHow, Expect, ListedNames};
use registry::store::{read_for_write, write_document};
use registry::{Document, RegistryLock};

use crate::side::{SideFile, SideFileIo};
use crate::supervisor::{QUARANTINE_SWEEP_PAUSE_SECS, Supervisor, Tick};

/// Filters younger than this may belong to a spawn still in its critical section (SUP-10.3).
pub const FILTER_GRACE_SECS: i64 = 30;

impl Supervisor {
    /// T3: delete parked ephemeral entries whose pane is gone, in one registry write; then settle their leases.
    /// With a notifier (N-11) an entry whose lease holds an undelivered outcome waits for a later tick.
    pub(crate) fn reap(&mut self, tick: &mut Tick, doc: &mut Document) {
        let snapshot = tick.snapshot.clone().unwrap_or_default();
        let candidates: Vec<SessionName> = doc
            .names()
            .filter(|key| !snapshot.contains(*key))
            .filter(|key| doc.entry(key).is_some_and(|e| reapable(&e, false)))
            .filter_map(|key| SessionName::parse(key).ok())
            .filter(|name| reapable_now(&self.leases, self.config.on_outcome.is_some(), name))
            .collect();
        if candidates.is_empty() || tick.lock_refused {
            return;
        }
        let waits = self.config.on_outcome.is_some();
        let reaped = self.locked(tick, |me, _, guard| {
            let reaped = reap_locked(guard, &me.leases, waits, candidates);
            // Still under the registry lock (order registry → lease → hook log, OV-5.5): nothing can give the name a new
            // entry and lease between the decision and the lease's end.
            for name in &reaped {
                if let Err(err) = me.leases.finish(name, &EndHow::Reaped, &Expect::Any, Some(&me.hook_log)) {
                    me.warn_lease(&err);
                }
            }
            reaped
        });
        let Some(reaped) = reaped.filter(|r| !r.is_empty()) else { return };
        for name in &reaped {
            doc.remove(name);
            self.log.line(&crate::messages::reaped_parked(name));
        }
        tick.reaped = reaped;
    }

    /// T4: side and launch files, leases, orphan filters, temp leftovers.
    pub(crate) fn sweep(&mut self, tick: &mut Tick, doc: &Document) {
        self.sweep_side_files(doc);
        let paused = self.quarantined_at.is_some_and(|at| tick.now - at < QUARANTINE_SWEEP_PAUSE_SECS);
        // Issue 24: while the intake queue cannot be listed, a lease of an admission in progress cannot be told
        // from an orphan, so none is swept (IN-1: an error is never read as "nothing waits").
        if let (false, Some(admitting)) = (paused, &tick.admitting) {
            let listed = ListedNames::from_document(doc).without(&tick.reaped).with_admitting(admitting);
            let report = self.leases.sweep(&listed, Some(&self.hook_log));
            for name in &report.swept {
                self.log.line(&crate::messages::swept_lease(name));
            }
            if let Some(err) = report.error {
                self.warn_lease(&err);
            }
        }
        let filters_due = !tick.reaped.is_empty() || self.filter_sweep_due.is_some_and(|due| tick.now >= due);
        if filters_due {
            self.sweep_orphan_filters(doc, tick);
        }
        self.sweep_temps(tick);
    }

    /// SUP-10.2 (a): `session/<stem>.json` and `.launch` of legal names that are not keys; one line per name.
    fn sweep_side_files(&mut self, doc: &Document) {
        let Ok(entries) = fs::read_dir(self.config.paths.side_dir()) else { return };
        let mut swept = std::collections::BTreeSet::new();
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(text) = file_name.to_str() else { continue };
            let stem = text.strip_suffix(".json").or_else(|| text.strip_suffix(".launch"));
            let Some(stem) = stem.filter(|s| SessionName::parse(s).is_ok()) else { continue };
            if doc.contains(stem) || !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let orphaned_gen = text.ends_with(".json").then(|| SideFile::read(&entry.path()).lease_gen).flatten();
            if fs::remove_file(entry.path()).is_ok() {
                swept.insert(stem.to_owned());
                self.mark_orphaned(stem, orphaned_gen.as_deref());
            }
        }
        for name in swept {
            self.log.line(&crate::messages::swept_side_file(name));
        }
    }

    /// Issue 17: the lease this delisted life's pane was started for is that life's; a newer life of the name that
    /// an entry without a life token brings must not take it over (`life.rs`).
    fn mark_orphaned(&mut self, stem: &str, lease_gen: Option<&str>) {
        let (Ok(name), Some(lease_gen)) = (SessionName::parse(stem), lease_gen.and_then(lease::Gen::parse)) else {
            return;
        };
        if let Err(err) = self.leases.mark_orphaned(&name, &lease_gen) {
            self.warn_lease(&err);
        }
    }

    /// SUP-10.3: `filter.<user>-<name>.json` of legal names that are not keys, once 30 s old; never the filter of
    /// an admission in progress (issue 24), and none while the queue cannot be listed.
    pub(crate) fn sweep_orphan_filters(&mut self, doc: &Document, tick: &Tick) {
        let now = tick.now;
        self.filter_sweep_due = None;
        let Some(admitting) = &tick.admitting else { return };
        let prefix = format!("filter.{}-", self.config.paths.user());
        let Ok(entries) = fs::read_dir(self.config.paths.webhook_state_dir()) else { return };
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(stem) = file_name.to_str().and_then(|t| t.strip_prefix(&prefix)?.strip_suffix(".json")) else {
                continue;
            };
            if SessionName::parse(stem).is_err()
                || doc.contains(stem)
                || admitting.contains_key(stem)
                || !entry.file_type().is_ok_and(|t| t.is_file())
            {
                continue;
            }
            match age_secs(&entry.path(), now) {
                Some(age) if age >= FILTER_GRACE_SECS => {
                    if fs::remove_file(entry.path()).is_ok() {
                        self.log.line(&crate::messages::swept_filter(stem));
                    }
                }
                _ => {
                    let due = now + FILTER_GRACE_SECS;
                    self.filter_sweep_due = Some(self.filter_sweep_due.map_or(due, |d| d.min(due)));
                }
            }
        }
    }

    /// SUP-10.5: temp leftovers of killed writers, each deleted under the lock that guards its file, and
    /// only when a lock-free listing found one. Claim-filter temps belong here too: webhook-spawn writes the
    /// filter inside its registry-lock section, so a filter temp a registry-lock holder can see is an orphan.
    fn sweep_temps(&mut self, tick: &mut Tick) {
        let found = !self.registry_guarded_temps().is_empty();
        if found && !tick.lock_refused {
            self.locked(tick, |me, _, _| {
                for temp in me.registry_guarded_temps() {
                    let _ = fs::remove_file(temp);
                }
            });
        }
        self.leases.remove_temp_leftovers();
        self.hook_log.remove_temp_leftovers();
        self.refusals.remove_temp_leftovers();
    }

    /// `<registry>.tmp-XXXXXXXX` and `filter.<user>-<name>.json.tmp-XXXXXXXX` in the webhook state directory.
    fn registry_guarded_temps(&self) -> Vec<std::path::PathBuf> {
        let mut temps = registry::atomic::temp_leftovers_of(self.config.paths.registry());
        let prefix = format!("filter.{}-", self.config.paths.user());
        let Ok(entries) = fs::read_dir(self.config.paths.webhook_state_dir()) else { return temps };
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(text) = file_name.to_str() else { continue };
            let Some(base) = text.strip_prefix(&prefix).and_then(|rest| rest.split_once(".json.tmp-")) else {
                continue;
            };
            let legal = SessionName::parse(base.0).is_ok();
            if legal && registry::atomic::is_temp_of(text, &format!("{prefix}{}.json", base.0)) {
                temps.push(entry.path());
            }
        }
        temps
    }

    /// Start-up: side-directory temps are ours alone (the supervisor is their only writer).
    pub(crate) fn remove_side_temps(&self) {
        let Ok(entries) = fs::read_dir(self.config.paths.side_dir()) else { return };
        for entry in entries.flatten() {
            if entry.file_name().to_str().is_some_and(|n| n.contains(".tmp-")) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// D6 after a re-read: still ephemeral, parked and not crashed, and (N-11) its lease holds no outcome that a
/// configured notifier has yet to deliver (`outcome_pending`, read from the lease by the caller).
fn reapable(entry: &registry::Entry<'_>, outcome_pending: bool) -> bool {
    entry.ephemeral() && entry.stopped() && entry.died().is_none() && !outcome_pending
}

/// N-11: without a notifier nothing waits; with one, a name waits while its lease holds an undelivered outcome
/// (read without a lock, fresh: a delivery recorded since the last scan counts at once). Only a filter that spares
/// an idle tick the lock: the reap decides again under the locks (`reap_locked`).
fn reapable_now(leases: &lease::LeaseDir, notifier_set: bool, name: &SessionName) -> bool {
    !notifier_set || leases.pending_outcome(name).is_none()
}

/// N-11 under the registry lock: the lease read under its own lock (order registry → lease, OV-5.5) holds no undelivered
/// outcome. `stop` records its outcome in the registry-lock section that sets `stopped`, so a lease read before
/// that lock was taken can miss it. A lease lock that is busy or fails reaps nothing this tick.
fn outcome_settled(leases: &lease::LeaseDir, notifier_set: bool, name: &SessionName) -> bool {
    !notifier_set || matches!(leases.pending_outcome_locked(name), Ok(None))
}

/// Seconds since the file's mtime; `None` when it cannot be told or lies in the future.
fn age_secs(path: &Path, now: i64) -> Option<i64> {
    let modified = fs::metadata(path).ok()?.modified().ok()?;
    let mtime = i64::try_from(modified.duration_since(UNIX_EPOCH).ok()?.as_secs()).ok()?;
    (now >= mtime).then_some(now - mtime)
}

/// Under the lock: the candidates still reapable in a fresh read and (N-11) whose lease holds no undelivered outcome,
/// deleted in one write; none when the read or the write failed (nothing was deleted then).
fn reap_locked(
    guard: &RegistryLock,
    leases: &lease::LeaseDir,
    notifier_set: bool,
    candidates: Vec<SessionName>,
) -> Vec<SessionName> {
    let Ok(mut fresh) = read_for_write(guard.registry()) else { return Vec::new() };
    let reaped: Vec<SessionName> = candidates
        .into_iter()
        .filter(|n| fresh.entry(n.as_str()).is_some_and(|e| reapable(&e, false)))
        .filter(|n| outcome_settled(leases, notifier_set, n))
        .collect();
    for name in &reaped {
        fresh.remove(name);
    }
    if reaped.is_empty() || write_document(guard, &fresh).is_err() {
        return Vec::new();
    }
    reaped
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    // D6
    #[test]
    fn waits_for_an_outcome_pending_delivery_n_11() {
        let parked = map(json!({"stopped": true, "ephemeral": true}));
        assert!(reapable(&registry::Entry::of(&parked), false), "D6");
        assert!(!reapable(&registry::Entry::of(&parked), true), "N-11: waits while its outcome is undelivered");
        let crashed = map(json!({"stopped": true, "ephemeral": true, "died": 1}));
        assert!(!reapable(&registry::Entry::of(&crashed), false), "D7");
        let kept = map(json!({"stopped": true}));
        assert!(!reapable(&registry::Entry::of(&kept), false), "D5");
    }
}
