//! What an intake burst prints: the figures of issue 24 (accepted, coalesced, duplicates, admitted, max wait),
//! how the receiver's deliveries were answered, the hook log as the tailer saw it, and every wrong thing found.

use std::fmt;
use std::time::Duration;

use super::Options;

/// The result of a burst; [`Report::passed`] is the verdict.
#[derive(Debug, Default)]
pub struct Report {
    pub seed: u64,
    pub deliveries: usize,
    pub redelivered: usize,
    pub shared: usize,
    pub slots: usize,
    pub agent_secs: (f64, f64),
    /// Answers: a record admitted at once, queued, coalesced into a waiting record, ended claimed at once, or a
    /// duplicate; `accepted` is all but the duplicates.
    pub accepted: usize,
    pub at_once: usize,
    pub queued: usize,
    pub coalesced: usize,
    pub claimed: usize,
    pub duplicates: usize,
    /// Records that ended claimed when their turn came (a live session of the same object owned them by then).
    pub claimed_later: usize,
    /// Sessions admitted (spawn records), for how many of the distinct assignments, and how many assignments got
    /// a second session after their first had ended.
    pub admitted: usize,
    pub assignments: usize,
    pub assignments_admitted: usize,
    pub readmitted: usize,
    /// From a record's acceptance (the receiver's exit 0) to its agent's start.
    pub max_wait: Duration,
    pub median_wait: Duration,
    pub receiver_dropped: usize,
    pub log_lines: usize,
    pub log_trims: usize,
    pub log_gaps: usize,
    pub registry_invalid: usize,
    pub lease_unreadable: usize,
    pub delivered_in: Duration,
    pub drained_in: Duration,
    pub wrong: Vec<String>,
}

impl Report {
    pub fn new(options: &Options) -> Self {
        Self {
            seed: options.seed,
            deliveries: options.deliveries,
            redelivered: options.redelivered,
            shared: options.shared,
            slots: options.slots,
            agent_secs: (options.agent_secs.start, options.agent_secs.end),
            ..Self::default()
        }
    }

    /// Nothing wrong, nothing dropped, no hook-log line missed, every sample valid.
    pub fn passed(&self) -> bool {
        self.wrong.is_empty()
            && self.receiver_dropped == 0
            && self.log_gaps == 0
            && self.registry_invalid == 0
            && self.lease_unreadable == 0
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (low, high) = self.agent_secs;
        writeln!(
            f,
            "intake burst: seed {}, {} deliveries ({} redelivered, {} sharing an object), {} slots, agents {low}-{high} s",
            self.seed, self.deliveries, self.redelivered, self.shared, self.slots
        )?;
        writeln!(
            f,
            "accepted:                 {} ({} admitted at once, {} queued, {} coalesced, {} claimed at once), {} dropped",
            self.accepted, self.at_once, self.queued, self.coalesced, self.claimed, self.receiver_dropped
        )?;
        writeln!(f, "duplicates:               {}", self.duplicates)?;
        writeln!(
            f,
            "admitted:                 {} sessions for {} of {} distinct assignments ({} admitted again after their session ended, {} records claimed at their turn)",
            self.admitted, self.assignments_admitted, self.assignments, self.readmitted, self.claimed_later
        )?;
        writeln!(
            f,
            "max wait:                 {:.1} s from acceptance to the agent's start (median {:.1} s)",
            self.max_wait.as_secs_f64(),
            self.median_wait.as_secs_f64()
        )?;
        writeln!(
            f,
            "hook log:                 {} lines seen, {} trims, {} gaps; invalid registry reads {}, unreadable leases {}",
            self.log_lines, self.log_trims, self.log_gaps, self.registry_invalid, self.lease_unreadable
        )?;
        writeln!(
            f,
            "elapsed:                  delivered in {:.1} s, drained in {:.1} s",
            self.delivered_in.as_secs_f64(),
            self.drained_in.as_secs_f64()
        )?;
        for wrong in &self.wrong {
            writeln!(f, "WRONG: {wrong}")?;
        }
        writeln!(f, "intake burst: {}", if self.passed() { "every delivery kept" } else { "FAILED" })
    }
}
