//! What a chaos run prints: dispatched, settled correctly, wrong, queued-then-admitted, the time from an action to
//! its settled state (median, p95, max), the observers' samples, and what was done to the box.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use super::Options;
use super::watch::Samples;

/// The result of a run; [`Report::passed`] is the verdict.
#[derive(Debug, Default)]
pub struct Report {
    pub seed: u64,
    pub sessions: usize,
    pub duration: Duration,
    /// Lease incarnations created (planned dispatches, accepted burst batches, second lives of reused names).
    pub dispatched: usize,
    pub settled_correctly: usize,
    pub wrong: Vec<String>,
    /// Issue 24: dispatches (planned and of the burst) acknowledged as queued (exit 0), how many of them the
    /// supervisor admitted once a slot freed, each exactly once, the longest wait, and the highest limit the driver
    /// set (the slots the listed entries held plus the few for the sessions still being worked on).
    pub queued: usize,
    pub queued_admitted: usize,
    pub max_wait: Duration,
    pub max_limit: usize,
    pub settle_ms: Vec<f64>,
    pub samples: Samples,
    pub log_lines: usize,
    pub log_trims: usize,
    pub log_gaps: usize,
    pub supervisor_kills: usize,
    pub kills_at_spawn: usize,
    pub server_kills: usize,
    pub fates: BTreeMap<String, usize>,
    /// How the fates of issue 17 went (a `stop` whose restart came first or was beaten by the reap, a kill armed at
    /// a spawn that fired), so a run shows what it exercised.
    pub events: BTreeMap<String, usize>,
    pub truth: Vec<String>,
    pub truth_log: PathBuf,
    pub elapsed: Duration,
    /// The notifier mode's figures (issue 21).
    pub notify: Option<super::notify::NotifyFigures>,
}

impl Report {
    pub fn new(options: &Options) -> Self {
        Self { seed: options.seed, sessions: options.sessions, duration: options.duration, ..Self::default() }
    }

    pub fn count_fate(&mut self, fate: &str) {
        *self.fates.entry(fate.to_owned()).or_insert(0) += 1;
    }

    pub fn count_event(&mut self, event: &str) {
        *self.events.entry(event.to_owned()).or_insert(0) += 1;
    }

    /// 0 wrong, 0 invalid samples, no hook-log line missed, every queued batch admitted.
    pub fn passed(&self) -> bool {
        self.wrong.is_empty()
            && self.samples.registry_invalid == 0
            && self.samples.lease_unreadable == 0
            && self.log_gaps == 0
            && self.queued == self.queued_admitted
    }

    fn percentile(&self, p: f64) -> f64 {
        let mut sorted = self.settle_ms.clone();
        sorted.sort_by(f64::total_cmp);
        if sorted.is_empty() {
            return f64::NAN;
        }
        let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.samples;
        writeln!(f, "chaos: seed {}, {} sessions over {:.0} s", self.seed, self.sessions, self.duration.as_secs_f64())?;
        let fates: Vec<String> = self.fates.iter().map(|(k, v)| format!("{k} {v}")).collect();
        writeln!(f, "fates:                    {}", fates.join(", "))?;
        let events: Vec<String> = self.events.iter().map(|(k, v)| format!("{k} {v}")).collect();
        writeln!(f, "lives:                    {}", events.join(", "))?;
        writeln!(f, "dispatched:               {}", self.dispatched)?;
        writeln!(f, "settled correctly:        {}", self.settled_correctly)?;
        writeln!(f, "wrong:                    {}", self.wrong.len())?;
        writeln!(
            f,
            "queued, then admitted:    {} of {} queued (longest wait {:.1} s; {} slots for sessions being worked on, limit up to {})",
            self.queued_admitted,
            self.queued,
            self.max_wait.as_secs_f64(),
            super::queue::WORKING_SLOTS,
            self.max_limit
        )?;
        writeln!(
            f,
            "action -> settled:        median {:.0} ms, p95 {:.0} ms, max {:.0} ms ({} actions)",
            self.percentile(0.5),
            self.percentile(0.95),
            self.percentile(1.0),
            self.settle_ms.len()
        )?;
        writeln!(f, "registry samples:         {} (invalid: {})", s.registry, s.registry_invalid)?;
        writeln!(f, "lease file reads:         {} (unreadable: {})", s.lease_files, s.lease_unreadable)?;
        writeln!(
            f,
            "hook log:                 {} lines seen, {} trims, {} gaps",
            self.log_lines, self.log_trims, self.log_gaps
        )?;
        writeln!(
            f,
            "faults:                   supervisor SIGKILLed {} times ({} right after a new-session), tmux server killed {} time(s)",
            self.supervisor_kills + self.kills_at_spawn,
            self.kills_at_spawn,
            self.server_kills
        )?;
        if let Some(n) = &self.notify {
            writeln!(
                f,
                "notifier:                 {} outcomes, {} delivered, {} removed before delivery ({}), {} duplicates (each after a supervisor SIGKILL)",
                n.outcomes,
                n.delivered,
                n.removed_first,
                n.removed_by_text(),
                n.duplicates
            )?;
            writeln!(
                f,
                "notifier runs:            {} ({} failed, {} hung past the bound); outcome -> start median {:.0} ms, p95 {:.0} ms (endedAt has 1 s resolution)",
                n.runs,
                n.failed_runs,
                n.hung_runs,
                n.latency(0.5),
                n.latency(0.95)
            )?;
        }
        writeln!(f, "ground truth:             {} ({:.1} s)", self.truth_log.display(), self.elapsed.as_secs_f64())?;
        if let Some(first) = &s.first_invalid {
            writeln!(f, "INVALID registry read: {first}")?;
        }
        for wrong in &self.wrong {
            writeln!(f, "WRONG: {wrong}")?;
        }
        writeln!(f, "chaos: {}", if self.passed() { "every promise kept" } else { "FAILED" })
    }
}
