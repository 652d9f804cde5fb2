//! Dispatching through the intake queue (issue 24, docs/intake.md): the box gets only a few slots for the sessions
//! that still have something coming (an action of their fate, or a settle), so most dispatches are acknowledged as
//! queued and admitted by the supervisor as those slots free. A queued dispatch becomes an incarnation when the
//! supervisor admits it (its session name is minted then), and its fate is acted on only once it runs.
//!
//! The limit is set from outside, each round: the slots the registry's entries hold (listed, not stopped, not
//! crashed) plus whatever is left of [`WORKING_SLOTS`] once the sessions still being worked on are counted. A
//! session whose fate is over and whose pane stays up (run on, a pane killed and respawned, a burst batch) keeps
//! its slot and no longer counts as working, so the queue never starves behind it; the limit never falls below
//! the entries already listed, so every listed entry can always be (re)started.

use std::time::{Duration, Instant};

use super::model::Incarnation;
use super::plan::Fate;
use super::{Driver, Step};

/// Sessions with something still coming that may hold a slot at once; every other dispatch waits in the queue.
pub(super) const WORKING_SLOTS: usize = 3;
/// How long a queued dispatch may wait for its admission before it counts as wrong (a liveness bound).
pub(super) const ADMIT_LIMIT: Duration = Duration::from_secs(900);
/// How often the limit is recomputed (a lock-free read of the registry).
const LIMIT_EVERY: Duration = Duration::from_millis(100);

/// A dispatch acknowledged with exit 0 whose session the queue has not admitted yet.
#[derive(Debug)]
pub(super) struct Waiting {
    pub label: String,
    pub agent: String,
    /// The planned session's position, `None` for a burst batch.
    pub planned: Option<usize>,
    pub fate: &'static str,
    pub since: Instant,
}

impl Driver {
    /// Registers every waiting dispatch the supervisor has admitted since the last look: its incarnation is the
    /// session its admission minted, with that admission's lease gen, to be started once with its kickoff prompt.
    pub(super) fn discover(&mut self) {
        if self.waiting.is_empty() {
            return;
        }
        let listed = self.world.listed();
        for waiting in std::mem::take(&mut self.waiting) {
            match self.world.minted_in(&listed, &waiting.label) {
                Some(name) => self.admitted(waiting, &name),
                None if waiting.since.elapsed() > ADMIT_LIMIT => {
                    self.report.wrong.push(format!("dispatch {} was never admitted from the queue", waiting.label));
                }
                None => self.waiting.push(waiting),
            }
        }
    }

    fn admitted(&mut self, waiting: Waiting, name: &str) {
        let lease_gen = self.world.lease_gen(name).unwrap_or_default();
        let waited = waiting.since.elapsed();
        self.report.queued_admitted += 1;
        self.report.max_wait = self.report.max_wait.max(waited);
        self.truth(format!(
            "admitted {} -> {name} gen {lease_gen} after {:.1} s in the queue",
            waiting.label,
            waited.as_secs_f64()
        ));
        self.report.count_fate(waiting.fate);
        let inc = self.add(Incarnation::dispatched(name, &waiting.agent, &lease_gen), "admission");
        if let Some(at) = waiting.planned {
            self.of_planned.insert(at, inc);
            self.admitted_at.insert(at, self.started.elapsed());
            if let Some(kill) = self.spawn_kill.as_mut().filter(|k| k.planned == at) {
                kill.armed = Instant::now();
            }
        }
    }

    /// A dispatch acknowledged as queued.
    pub(super) fn queued(&mut self, label: &str, agent: &str, planned: Option<usize>, fate: &'static str) {
        self.report.queued += 1;
        self.truth(format!("dispatch {label} queued (fate {fate})"));
        let since = Instant::now();
        self.waiting.push(Waiting { label: label.to_owned(), agent: agent.to_owned(), planned, fate, since });
    }

    /// Planned session `planned` was dispatched and waits for its admission.
    pub(super) fn is_waiting(&self, planned: usize) -> bool {
        self.waiting.iter().any(|w| w.planned == Some(planned))
    }

    /// When planned session `planned` was admitted from the queue (zero when at once or not yet).
    pub(super) fn admitted_at(&self, planned: usize) -> Duration {
        self.admitted_at.get(&planned).copied().unwrap_or_default()
    }

    /// Writes the limit of the module doc when it changed (not while a step holds the limit itself).
    pub(super) fn manage_limit(&mut self) {
        if self.limit_frozen || self.limit_read.is_some_and(|at| at.elapsed() < LIMIT_EVERY) {
            return;
        }
        self.limit_read = Some(Instant::now());
        let Some(held) = self.world.held_slots() else { return };
        let working = (0..self.incs.len()).filter(|i| self.working(*i)).count();
        let limit = held + WORKING_SLOTS.saturating_sub(working);
        if self.limit != Some(limit) {
            self.world.sb.set_limit(&limit.max(1).to_string());
            self.limit = Some(limit);
            self.report.max_limit = self.report.max_limit.max(limit);
        }
    }

    /// Incarnation `inc` holds a slot and has something still coming: an action of its fate, or a settle.
    fn working(&self, inc: usize) -> bool {
        let i = &self.incs[inc];
        if i.superseded || !i.pane_expected() || i.post_mortem {
            return false;
        }
        if self.pending.iter().any(|p| p.inc == inc) {
            return true;
        }
        let planned = self.of_planned.iter().find(|(_, of)| **of == inc).map(|(at, _)| *at);
        planned.is_some_and(|at| {
            self.plan.sessions[at].fate != Fate::RunOn
                && self.steps.iter().any(|(_, step)| matches!(step, Step::Act(p, _) if *p == at))
        })
    }

    /// Nothing waits in the queue, so nothing can be admitted while a step that needs exact expectations runs.
    pub(super) fn queue_drained(&self) -> bool {
        self.waiting.is_empty() && self.world.queue_len() == 0
    }
}
