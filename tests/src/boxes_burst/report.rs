//! What a boxes burst prints: per box what it admitted and how its other records ended, what happened to the
//! database, the claims table's totals, and every wrong thing found.

use std::fmt;
use std::time::Duration;

use super::Options;

/// One box's figures.
#[derive(Debug, Default, Clone)]
pub struct BoxFigures {
    pub label: String,
    /// Sessions admitted (spawn records) and those that ended exited.
    pub admitted: usize,
    pub exited: usize,
    /// Records that ended because another box ran their assignment (BX-4), joined a waiting record, were a
    /// redelivery, or were claimed by a live session of this box.
    pub elsewhere: usize,
    pub coalesced: usize,
    pub duplicates: usize,
    pub claimed: usize,
    /// Warnings L43 (claimed panes stopped, BX-9), the panes they stopped, and agent starts beyond each one's first (panes started again
    /// once a renewal confirmed the claim).
    pub fenced: usize,
    pub panes_stopped: usize,
    pub restarts: usize,
}

/// The result of a burst; [`Report::passed`] is the verdict.
#[derive(Debug, Default)]
pub struct Report {
    pub options: Options,
    pub per_box: Vec<BoxFigures>,
    pub assignments: usize,
    pub admitted_once: usize,
    pub claims: usize,
    pub claims_done: usize,
    pub taken_over: usize,
    pub db_events: Vec<String>,
    pub delivered_in: Duration,
    pub drained_in: Duration,
    pub wrong: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            boxes: 3,
            deliveries: 150,
            redelivered: 20,
            shared: 20,
            slots: 3,
            agent_secs: 1.0..5.0,
            term_secs: 10,
            seed: 0,
            restart_db: true,
            outage_beyond_term: Some(5),
        }
    }
}

impl Report {
    pub fn passed(&self) -> bool {
        self.wrong.is_empty()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.options;
        writeln!(
            f,
            "boxes burst: {} boxes × {} deliveries ({} redelivered, {} sharing an object), {} slots each, agents {}–{} s, term {} s, seed {}",
            o.boxes,
            o.deliveries,
            o.redelivered,
            o.shared,
            o.slots,
            o.agent_secs.start,
            o.agent_secs.end,
            o.term_secs,
            o.seed
        )?;
        for event in &self.db_events {
            writeln!(f, "  database: {event}")?;
        }
        for b in &self.per_box {
            writeln!(
                f,
                "  {}: admitted {}, exited {}, ended elsewhere {}, coalesced {}, duplicates {}, claimed {}, fenced {} ({} panes stopped), agent restarts {}",
                b.label,
                b.admitted,
                b.exited,
                b.elsewhere,
                b.coalesced,
                b.duplicates,
                b.claimed,
                b.fenced,
                b.panes_stopped,
                b.restarts
            )?;
        }
        writeln!(
            f,
            "  assignments: {}, admitted on exactly one box: {}; claims {}, done {}, taken over {}",
            self.assignments, self.admitted_once, self.claims, self.claims_done, self.taken_over
        )?;
        writeln!(
            f,
            "  delivered in {:.1} s, drained in {:.1} s",
            self.delivered_in.as_secs_f64(),
            self.drained_in.as_secs_f64()
        )?;
        for why in &self.wrong {
            writeln!(f, "  WRONG: {why}")?;
        }
        writeln!(f, "boxes burst: {}", if self.passed() { "every assignment ran on exactly one box" } else { "FAILED" })
    }
}
