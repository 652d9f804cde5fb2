//! The supervisor's side of the intake queue (issue 24, docs/intake.md IN-11…IN-13): each tick, after the reap
//! and the sweeps and before the per-entry decisions (so a record admitted now is started in the same tick), it
//! finishes admissions a crash interrupted, ends records past the queue's bounds, and admits records oldest first
//! while a slot is free, one registry-lock section per record. A tick with nothing to do costs one `stat` of the
//! queue directory (its listing is kept while the directory is unchanged, Q14); a full box takes no lock.

use std::collections::{BTreeMap, BTreeSet};
use std::time::SystemTime;

use agent_box_types::intake::How;
use intake::IntakeError;
use intake::admit::{Admission, Recovered, Site, Waited, Waiting, admit_record, recover};
use intake::queue::{Listing, RecordId};
use registry::capacity::{Mode, admit, read_limit};
use registry::store::read_for_write;
use registry::{Document, RegistryLock};

use crate::messages;
use crate::supervisor::{Supervisor, Tick};

/// How often the tombstones past the redelivery window are pruned.
const PRUNE_EVERY_SECS: i64 = 3600;

/// A name no entry can have (`?` fails the charset): the capacity pre-check asks for one more session.
const ONE_MORE: &str = "hook-?";

impl Supervisor {
    /// The sessions the admissions in progress are making, from the intents of `listing` (name → lease gen);
    /// `None` when the queue could not be listed.
    pub(crate) fn admitting(&self, listing: Result<&Listing, &IntakeError>) -> Option<BTreeMap<String, String>> {
        let listing = listing.ok()?;
        let intents = listing.intents.iter().filter_map(|id| self.queue.read_intent(id));
        Some(intents.map(|intent| (intent.name, intent.lease_gen)).collect())
    }

    /// The intake step of one tick; `doc` becomes the registry as the admissions left it.
    pub(crate) fn intake(&mut self, tick: &mut Tick, doc: &mut Document, snapshot: &BTreeSet<String>) {
        let mut listing = match self.queue.list_cached(&mut self.queue_cache, SystemTime::now()) {
            Ok(listing) => {
                if self.latches.queue_unreadable.clear() {
                    self.log.line(messages::QUEUE_READABLE_AGAIN);
                }
                listing
            }
            Err(err) => {
                if self.latches.queue_unreadable.raise() {
                    self.log.error(&messages::queue_unreadable(&err));
                }
                return;
            }
        };
        self.prune_tombstones(tick.now);
        if listing.queued.is_empty() && listing.intents.is_empty() && listing.ends.is_empty() {
            return;
        }
        let in_progress = !listing.intents.is_empty() || !listing.ends.is_empty();
        if in_progress && !tick.lock_refused {
            // What recovery finished is started in this tick, what it took back is admitted in this tick.
            if let Some(Some(fresh)) = self.locked(tick, |me, tick, guard| me.recover_locked(tick, guard)) {
                *doc = fresh;
                listing = self.queue.list_cached(&mut self.queue_cache, SystemTime::now()).unwrap_or(listing);
            }
        }
        let expired = self.expire(tick, &listing);
        self.admit_waiting(tick, doc, snapshot, &listing, &expired);
    }

    fn prune_tombstones(&mut self, now: i64) {
        if self.intake_pruned_at.is_some_and(|at| now - at < PRUNE_EVERY_SECS) {
            return;
        }
        self.intake_pruned_at = Some(now);
        self.queue.prune_tombstones(SystemTime::now());
    }

    /// IN-12 under the lock; the registry as recovery left it when it finished or took back anything.
    fn recover_locked(&mut self, tick: &mut Tick, guard: &RegistryLock) -> Option<Document> {
        let live = self.live_in_lock(tick);
        let peers = || peers_text(&self.config.paths, &live);
        let recovered = recover(&self.site(&live, &peers, tick.now), guard);
        let changed = recovered.iter().any(|r| *r != Recovered::Cleared);
        for recovered in recovered {
            match recovered {
                Recovered::Finished { key, name } => self.log.line(&messages::admission_finished(&key, &name)),
                Recovered::TakenBack { key, name } => self.log.warn(&messages::admission_taken_back(&key, &name)),
                Recovered::Ended { key, how } => self.log.warn(&messages::end_finished(&key, how.as_str())),
                Recovered::Cleared => {}
            }
        }
        changed.then(|| read_for_write(guard.registry()).ok()).flatten()
    }

    /// IN-9: records older than the maximum age, and the oldest ones past the maximum count, end `expired`; the
    /// ones that did.
    fn expire(&mut self, tick: &mut Tick, listing: &Listing) -> Vec<RecordId> {
        let bounds = self.config.queue_bounds;
        let too_many = listing.queued.len().saturating_sub(usize::try_from(bounds.max_records).unwrap_or(usize::MAX));
        let elsewhere: BTreeSet<String> =
            self.claims.as_ref().map(|c| c.elsewhere.keys().cloned().collect()).unwrap_or_default();
        let due: Vec<_> = listing
            .queued
            .iter()
            .enumerate()
            .filter(|(_, id)| !elsewhere.contains(&id.stem()))
            .filter(|(index, id)| *index < too_many || tick.now - id.accepted_secs() > bounds.max_age())
            // A record being admitted may already be a session (IN-12): its recovery, not its expiry, ends it.
            .filter(|(_, id)| !listing.intents.contains(id))
            .map(|(_, id)| id.clone())
            .collect();
        if due.is_empty() || tick.lock_refused {
            return Vec::new();
        }
        self.locked(tick, |me, tick, _| {
            let mut ended = Vec::new();
            for id in &due {
                let Ok(record) = me.queue.read(id) else { continue };
                let result = intake::end::end(&me.queue, &me.hook_log, id, &record, How::Expired, tick.now, None);
                match result {
                    Ok(()) => {
                        let waited = intake::session::waited_text(tick.now - id.accepted_secs());
                        me.log.warn(&messages::intake_expired(&record.key, &record.assignment, &waited));
                        ended.push(id.clone());
                    }
                    Err(err) => me.log.error(&messages::intake_not_ended(&record.key, &err)),
                }
            }
            ended
        })
        .unwrap_or_default()
    }

    /// IN-11: oldest first, while a slot is free; one lock section per record. With a claims database (issue 26,
    /// BX-4) each record's claim is taken first, outside the lock; a record another box holds waits `elsewhere`.
    fn admit_waiting(
        &mut self,
        tick: &mut Tick,
        doc: &mut Document,
        snapshot: &BTreeSet<String>,
        listing: &Listing,
        expired: &[RecordId],
    ) {
        let waiting_elsewhere = self.check_elsewhere(tick);
        for id in listing.queued.iter().filter(|id| !listing.in_progress(id) && !expired.contains(id)) {
            if waiting_elsewhere.contains(&id.stem()) {
                continue;
            }
            if tick.lock_refused || !self.slot_free(doc, snapshot) {
                return;
            }
            let claim = if self.claims.is_some() {
                let Ok(record) = self.queue.read(id) else { continue };
                let mut stop = false;
                match self.claim_for(tick, id, &record, &mut stop) {
                    Some(won) => Some(won),
                    None if stop => return,
                    None => continue,
                }
            } else {
                None
            };
            let admitted = self.locked(tick, |me, tick, guard| {
                let record = me.queue.read(id).ok()?;
                let live = me.live_in_lock(tick);
                let peers = || peers_text(&me.config.paths, &live);
                let site = me.site(&live, &peers, tick.now);
                Some(admit_record(&site, guard, id, &record, Waited::Say, claim.as_ref()))
            });
            if !self.settle_admission(admitted.flatten(), doc, claim.as_ref()) {
                return;
            }
        }
    }

    /// What one admission step says; false when the loop stops (no slot, or nothing can be decided).
    fn settle_admission(
        &mut self,
        admission: Option<Admission>,
        doc: &mut Document,
        claim: Option<&intake::admit::WonClaim>,
    ) -> bool {
        match admission {
            Some(Admission::Admitted(admitted)) => {
                let waited = intake::session::waited_text(admitted.waited);
                self.log.line(&messages::intake_admitted(&admitted.key, &admitted.name, &waited));
                admitted.notes.iter().for_each(|note| self.log.warn(&messages::admission_note(&admitted.name, note)));
                self.latches.intake_waiting.clear();
                if let (Some(claim), Some(state)) = (claim, self.claims.as_mut()) {
                    state.confirmed.insert(claim.life.to_string());
                    let held = claims::Held {
                        assignment: admitted.assignment.clone(),
                        name: admitted.name.to_string(),
                        lease_gen: claim.life.to_string(),
                        box_label: claim.box_label.clone(),
                    };
                    let _ = state.ledger.hold(&held);
                }
                *doc = admitted.document;
                true
            }
            Some(Admission::Claimed { by, key }) => {
                self.log.line(&messages::intake_claimed(&key, &by));
                true
            }
            Some(Admission::Waits(Waiting::Full { .. })) => false,
            Some(Admission::Waits(Waiting::Undecided(why))) => {
                if self.latches.intake_waiting.raise() {
                    self.log.warn(&messages::intake_undecided(&why));
                }
                false
            }
            Some(Admission::Failed { key, why }) => {
                if self.latches.intake_failed.raise(&key) {
                    self.log.error(&messages::intake_failed(&key, &why));
                }
                true
            }
            Some(Admission::Empty) | None => true,
        }
    }

    /// The lock-free capacity pre-check: is there a slot for one more session, with the tick's live set?
    fn slot_free(&self, doc: &Document, snapshot: &BTreeSet<String>) -> bool {
        let paths = &self.config.paths;
        read_limit(paths.limit_file(), paths.meminfo_file())
            .and_then(|limit| admit(doc.sessions(), snapshot, limit, &[ONE_MORE], Mode::Check))
            .is_ok()
    }

    /// The live set probed under the lock (RG-11.4), once per tick and reused; an error keeps it unknown.
    fn live_in_lock(&mut self, tick: &mut Tick) -> Result<BTreeSet<String>, String> {
        if tick.probed.is_none() {
            match self.tmux.list_sessions() {
                Ok(names) => tick.probed = Some(names.into_iter().collect()),
                Err(err) => return Err(err.reason()),
            }
        }
        Ok(tick.probed.clone().unwrap_or_default())
    }

    fn site<'a>(
        &'a self,
        live: &'a Result<BTreeSet<String>, String>,
        peers: &'a dyn Fn() -> String,
        now: i64,
    ) -> Site<'a> {
        Site {
            paths: &self.config.paths,
            queue: &self.queue,
            leases: &self.leases,
            log: &self.hook_log,
            live,
            peers,
            now,
            admit_at_once: self.claims.is_none(),
        }
    }
}

/// The peers report of an admitted session's prompt, cut as webhook-spawn cuts it.
fn peers_text(paths: &registry::Paths, live: &Result<BTreeSet<String>, String>) -> String {
    match live {
        Ok(live) => {
            let live: Vec<String> = live.iter().cloned().collect();
            intake::prompt::bounded_peers(&view::peers::report_text_for(paths, &live))
        }
        Err(reason) => intake::prompt::peers_unavailable(reason),
    }
}
