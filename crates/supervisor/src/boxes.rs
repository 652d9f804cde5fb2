//! Issue 26 (docs/boxes.md): the supervisor's side of the claims database. Each tick it renews the claims of its
//! leases and marks those of resolved ones done (BX-5, BX-6), ends the local copy of an assignment another box holds
//! now (BX-8), keeps its claimed panes stopped while it cannot renew (BX-9), and takes the claim of a queued record
//! before the admission (BX-4). Every database call runs outside the registry lock; only what it leads to locally
//! is written under it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use agent_box_types::intake::{How, Record};
use base::SessionName;
use claims::{Claims, ClaimsConfig, Held, Ledger, StoreError, Taken};
use lease::{EndHow, Expect, LeaseState};
use registry::store::{read_for_write, write_document};

use crate::log::Latch;
use crate::messages;
use crate::supervisor::{Supervisor, Tick};

/// Claims are renewed at most this often…
const RENEW_AT_MOST_EVERY: Duration = Duration::from_secs(10);

/// …and at least four times per term: a box is fenced after half a term without a renewal (BX-9), so with a short
/// term (10 s is allowed) a renewal every 10 s would fence every claimed pane between two renewals.
pub(crate) fn renew_every(term: Duration) -> Duration {
    RENEW_AT_MOST_EVERY.min(term / 4)
}

/// What the supervisor keeps of the claims database between ticks.
#[derive(Debug)]
pub(crate) struct ClaimState {
    pub client: Claims,
    pub ledger: Ledger,
    pub started: Instant,
    pub renewed_at: Option<Instant>,
    /// When a renewal last succeeded, and the lives it confirmed as this box's (BX-9: only these may start).
    pub confirmed_at: Option<Instant>,
    pub confirmed: BTreeSet<String>,
    pub down: Latch,
    pub fenced: Latch,
    /// Records waiting for another box's claim, by record stem: the box named when it was last asked.
    pub elsewhere: BTreeMap<String, String>,
}

impl ClaimState {
    pub fn new(config: ClaimsConfig, home: std::path::PathBuf, state_dir: &std::path::Path) -> Self {
        Self {
            client: Claims::new(config, home),
            ledger: Ledger::new(state_dir.join("claims")),
            started: Instant::now(),
            renewed_at: None,
            confirmed_at: None,
            confirmed: BTreeSet::new(),
            down: Latch::default(),
            fenced: Latch::default(),
            elsewhere: BTreeMap::new(),
        }
    }

    pub fn label(&self) -> String {
        self.client.config().label.clone()
    }

    fn term(&self) -> Duration {
        self.client.config().term
    }

    /// BX-9: half a term without a successful renewal (counted from the start before the first one).
    pub fn fenced_now(&self) -> bool {
        self.confirmed_at.unwrap_or(self.started).elapsed() > self.term() / 2
    }

    /// Whether the pane of lease gen `life` may start: its claim was confirmed and the box is not fenced.
    pub fn may_start(&self, life: &str) -> bool {
        !self.fenced_now() && self.confirmed.contains(life)
    }
}

impl Supervisor {
    /// Start-up (BX-1, BX-2): the marker that keeps webhook-spawn from admitting, then one connection, which runs
    /// the migration. A schema of another version stops the start; an unreachable database is only said (the
    /// local sessions are supervised meanwhile, and nothing is admitted until it answers).
    pub(crate) fn check_claims(&mut self) -> Result<(), String> {
        let state_dir = self.config.paths.state_dir().to_path_buf();
        let Some(state) = self.claims.as_mut() else {
            let _ = intake::marker::remove(&state_dir);
            return Ok(());
        };
        let (label, term) = (state.label(), state.term().as_secs());
        if let Err(err) = intake::marker::write(&state_dir, &label, term) {
            self.log.warn(&messages::claims_marker_failed(&err));
        }
        let Some(state) = self.claims.as_mut() else { return Ok(()) };
        match state.client.call(|_| Ok(())) {
            Ok(()) => Ok(()),
            Err(err @ StoreError::Schema { .. }) => Err(err.to_string()),
            Err(err) => {
                self.claims_down(&err);
                Ok(())
            }
        }
    }

    /// The tick's claims step: renewal, done marks, lost claims, fencing.
    pub(crate) fn tend_claims(&mut self, tick: &mut Tick) {
        let Some(state) = self.claims.as_mut() else { return };
        if state.renewed_at.is_none_or(|at| at.elapsed() >= renew_every(state.term())) {
            state.renewed_at = Some(Instant::now());
            self.renew(tick);
        }
        self.fence(tick);
    }

    /// BX-5, BX-6: the ledger completed from the leases, done marks for claims whose lease is gone, one renewal.
    fn renew(&mut self, tick: &mut Tick) {
        self.hold_claimed_leases();
        let Some(state) = self.claims.as_mut() else { return };
        let label = state.label();
        let term = state.term();
        let (mut present, mut gone): (Vec<Held>, Vec<Held>) = (Vec::new(), Vec::new());
        for held in state.ledger.all() {
            match SessionName::parse(&held.name).map(|name| self.leases.read(&name)) {
                Ok(LeaseState::Present(lease)) if lease.gen_value() == Some(held.lease_gen.as_str()) => {
                    present.push(held)
                }
                Ok(LeaseState::Unreadable) => present.push(held),
                _ => gone.push(held),
            }
        }
        for held in gone {
            let (assignment, life_gen, by) = (held.assignment.clone(), held.lease_gen.clone(), label.clone());
            match state.client.call(move |store| store.done(&assignment, &by, &life_gen)) {
                Ok(_) => {
                    let _ = state.ledger.forget(&held.lease_gen);
                }
                Err(err) => return self.claims_down(&err),
            }
        }
        let lives: Vec<String> = present.iter().map(|h| h.lease_gen.clone()).collect();
        let asked = lives.clone();
        let ours = match state.client.call(move |store| store.renew(&label, &asked, term)) {
            Ok(ours) => ours,
            Err(err) => return self.claims_down(&err),
        };
        state.confirmed_at = Some(Instant::now());
        state.confirmed = ours.iter().cloned().collect();
        if state.down.clear() {
            self.log.line(messages::CLAIMS_REACHABLE_AGAIN);
        }
        let lost: Vec<Held> = present.into_iter().filter(|h| !ours.contains(&h.lease_gen)).collect();
        if !lost.is_empty() {
            self.settle_lost(tick, lost);
        }
    }

    /// A lease written with a claim whose ledger file is missing (the supervisor died between the two) gets it.
    fn hold_claimed_leases(&mut self) {
        let Some(state) = self.claims.as_ref() else { return };
        let known: BTreeSet<String> = state.ledger.all().into_iter().map(|h| h.lease_gen).collect();
        for (name, found) in self.leases.list() {
            let LeaseState::Present(lease) = found else { continue };
            let (Some((assignment, label)), Some(life_gen)) = (lease.claim(), lease.gen_value()) else { continue };
            if label == state.label() && !known.contains(life_gen) {
                let held = Held {
                    assignment: assignment.to_owned(),
                    name: name.to_string(),
                    lease_gen: life_gen.to_owned(),
                    box_label: label.to_owned(),
                };
                let _ = state.ledger.hold(&held);
            }
        }
    }

    /// BX-8: claims the renewal did not return: another box holds them (the local copy ends), or the row is gone
    /// (the database was reset: this box takes it again).
    fn settle_lost(&mut self, tick: &mut Tick, lost: Vec<Held>) {
        let Some(state) = self.claims.as_mut() else { return };
        let label = state.label();
        let term = state.term();
        let assignments: Vec<String> = lost.iter().map(|h| h.assignment.clone()).collect();
        let rows = match state.client.call(move |store| store.status(&assignments)) {
            Ok(rows) => rows,
            Err(err) => return self.claims_down(&err),
        };
        for held in lost {
            match rows.iter().find(|r| r.assignment == held.assignment) {
                Some(row) if row.box_label != label => self.end_moved(tick, &held, &row.box_label),
                Some(_) => {}
                None => {
                    let (assignment, by, life_gen) = (held.assignment.clone(), label.clone(), held.lease_gen.clone());
                    if let Some(state) = self.claims.as_mut()
                        && let Ok(Taken::Won { .. }) =
                            state.client.call(move |s| s.take(&assignment, &by, &life_gen, term))
                    {
                        state.confirmed.insert(held.lease_gen.clone());
                    }
                }
            }
        }
    }

    /// BX-8: the local session of an assignment another box holds now ends: the lease with the end record
    /// `elsewhere`, the entry, the claim filter and the pane; nothing is resumed.
    fn end_moved(&mut self, tick: &mut Tick, held: &Held, by: &str) {
        let Ok(name) = SessionName::parse(&held.name) else { return };
        let Some(life_gen) = lease::Gen::parse(&held.lease_gen) else { return };
        let ended = self.locked(tick, |me, _, guard| {
            let mut doc = read_for_write(guard.registry()).ok()?;
            if doc.entry(name.as_str()).is_some_and(|e| e.life() == Some(life_gen.as_str())) {
                doc.remove(&name);
                write_document(guard, &doc).ok()?;
            }
            let how = EndHow::Elsewhere(by.to_owned());
            let _ = me.leases.finish(&name, &how, &Expect::Gen(life_gen.clone()), Some(&me.hook_log));
            let _ = std::fs::remove_file(me.config.paths.filter_file(&name));
            let _ = me.tmux.kill_session(&name);
            Some(())
        });
        if ended.flatten().is_some() {
            if let Some(state) = self.claims.as_ref() {
                let _ = state.ledger.forget(&held.lease_gen);
            }
            self.log.warn(&messages::claim_moved(&name, &held.assignment, by));
        }
    }

    /// BX-9: half a term without a renewal stops every claimed pane (marked as restarted, so no `vanished` is
    /// recorded); [`ClaimState::may_start`] keeps them from starting until a renewal confirms them.
    fn fence(&mut self, tick: &mut Tick) {
        let Some(state) = self.claims.as_mut() else { return };
        if !state.fenced_now() {
            state.fenced.clear();
            return;
        }
        let first = state.fenced.raise();
        let live = tick.snapshot.clone().unwrap_or_default();
        let mut stopped = 0;
        for held in state.ledger.all() {
            let Ok(name) = SessionName::parse(&held.name) else { continue };
            if !live.contains(name.as_str()) {
                continue;
            }
            let expect = lease::Expect::Gen(lease::Gen::parse(&held.lease_gen).unwrap_or_else(lease::Gen::random));
            let _ = self.leases.record_restart(&name, &expect, None);
            if self.tmux.kill_session(&name).is_ok() {
                stopped += 1;
            }
        }
        if first || stopped > 0 {
            self.log.warn(&messages::claims_fenced(stopped));
        }
    }

    /// BX-9: a session whose lease holds a claim of this box starts only once a renewal of this process confirmed
    /// the claim and while the box is not fenced; every other session is not concerned.
    pub(crate) fn claim_allows_start(&self, name: &SessionName, entry: registry::Entry<'_>) -> bool {
        let Some(state) = self.claims.as_ref() else { return true };
        let LeaseState::Present(lease) = self.leases.read(name) else { return true };
        let (Some(_), Some(life)) = (lease.claim(), lease.gen_value()) else { return true };
        if entry.life().is_some_and(|l| l != life) {
            return true;
        }
        state.may_start(life)
    }

    fn claims_down(&mut self, err: &StoreError) {
        let Some(state) = self.claims.as_mut() else { return };
        if state.down.raise() {
            self.log.warn(&messages::claims_unreachable(err));
        }
    }

    /// BX-4: whether the claim of `record` is this box's now; `None` when the record waits (another box holds it,
    /// or the database did not answer: then `stop` is set and no further record is tried this tick).
    pub(crate) fn claim_for(
        &mut self,
        tick: &mut Tick,
        id: &intake::RecordId,
        record: &Record,
        stop: &mut bool,
    ) -> Option<intake::admit::WonClaim> {
        let state = self.claims.as_mut()?;
        let life = lease::Gen::random();
        let (assignment, label, life_gen, term) =
            (record.assignment.clone(), state.label(), life.to_string(), state.term());
        let by = label.clone();
        match state.client.call(move |store| store.take(&assignment, &by, &life_gen, term)) {
            Ok(Taken::Won { from }) => {
                state.elsewhere.remove(&id.stem());
                Some(intake::admit::WonClaim { life, box_label: label, taken_over_from: from })
            }
            Ok(Taken::Held { by, done }) => {
                self.note_elsewhere(tick, id, record, &by, done);
                None
            }
            Err(err) => {
                *stop = true;
                self.claims_down(&err);
                None
            }
        }
    }

    /// A record whose claim another box holds: it waits `elsewhere`, naming the box; when that box is done with the
    /// assignment, the record ends `elsewhere`.
    fn note_elsewhere(&mut self, tick: &mut Tick, id: &intake::RecordId, record: &Record, by: &str, done: bool) {
        if let Some(state) = self.claims.as_mut() {
            state.elsewhere.insert(id.stem(), by.to_owned());
        }
        let now = tick.now;
        self.locked(tick, |me, _, _| {
            if done {
                if intake::end::end(&me.queue, &me.hook_log, id, record, How::Elsewhere, now, Some(by)).is_ok() {
                    me.log.line(&messages::intake_elsewhere_done(&record.key, by));
                }
            } else if record.elsewhere.as_deref() != Some(by) {
                let waiting = Record { elsewhere: Some(by.to_owned()), ..record.clone() };
                let _ = me.queue.replace(id, &waiting);
            }
        });
        if done && let Some(state) = self.claims.as_mut() {
            state.elsewhere.remove(&id.stem());
        }
    }

    /// Records known to wait for another box: one statement asks about all of them; those whose claim is done end
    /// `elsewhere`, those whose claim ran out become candidates again (their stems are returned).
    pub(crate) fn check_elsewhere(&mut self, tick: &mut Tick) -> BTreeSet<String> {
        let Some(state) = self.claims.as_mut() else { return BTreeSet::new() };
        if state.elsewhere.is_empty() {
            return BTreeSet::new();
        }
        let mut waiting = BTreeSet::new();
        let Ok(listing) = self.queue.list() else { return waiting };
        let records: Vec<(intake::RecordId, Record)> = listing
            .queued
            .iter()
            .filter(|id| state.elsewhere.contains_key(&id.stem()))
            .filter_map(|id| Some((id.clone(), self.queue.read(id).ok()?)))
            .collect();
        state.elsewhere.retain(|stem, _| records.iter().any(|(id, _)| id.stem() == *stem));
        let assignments: Vec<String> = records.iter().map(|(_, r)| r.assignment.clone()).collect();
        let rows = match state.client.call(move |store| store.status(&assignments)) {
            Ok(rows) => rows,
            Err(err) => {
                self.claims_down(&err);
                return records.iter().map(|(id, _)| id.stem()).collect();
            }
        };
        for (id, record) in records {
            match rows.iter().find(|r| r.assignment == record.assignment) {
                Some(row) if row.done => self.note_elsewhere(tick, &id, &record, &row.box_label.clone(), true),
                Some(row) if !row.ended => {
                    waiting.insert(id.stem());
                }
                _ => {}
            }
        }
        waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // BX-5, BX-9
    #[test]
    fn claims_are_renewed_every_ten_seconds_and_at_least_four_times_per_term() {
        assert_eq!(renew_every(Duration::from_secs(90)), Duration::from_secs(10));
        assert_eq!(renew_every(Duration::from_secs(40)), Duration::from_secs(10));
        assert_eq!(renew_every(Duration::from_secs(10)), Duration::from_millis(2500));
        for secs in [10, 11, 19, 20, 39, 90, 3600] {
            let term = Duration::from_secs(secs);
            assert!(renew_every(term) * 2 <= term / 2, "two renewals fit in the half term before fencing: {secs} s");
        }
    }
}
