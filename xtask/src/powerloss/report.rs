//! The figures of a power-loss run, summed over its rounds, and the lines that print them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::check::{Findings, QueueFindings};
use super::faults::{CRASH_POINTS, Fault};
use super::ledger::{KINDS, Kind};
use super::qbox::{QUEUE_MAX, SLOTS};
use super::round::Round;

/// Detail lines (corrupt files, broken invariants) printed in full; the rest are only counted.
const PRINTED_DETAILS: usize = 10;

/// Sums over every round.
#[derive(Debug, Default)]
pub struct Totals {
    pub crashes: u64,
    pub acknowledged: BTreeMap<Kind, u64>,
    pub lost: BTreeMap<Kind, u64>,
    pub corrupt: u64,
    pub invariant: u64,
    pub control_acknowledged: u64,
    pub control_lost: u64,
    /// Rounds in which LazyFS stopped answering and was killed instead.
    pub hung: u64,
    /// The queue box's figures, summed (its broken promises in `queue_details`).
    pub queue: QueueFindings,
    queue_details: Vec<String>,
    /// Per fault: rounds, and (for a crash) how many fired at the armed syscall.
    faults: BTreeMap<&'static str, (u64, u64)>,
    /// Lost updates and corrupt files, then broken invariants: printed apart, so the second cannot crowd out the
    /// first.
    details: Vec<String>,
    invariant_details: Vec<String>,
}

impl Totals {
    pub fn add(&mut self, index: u64, round: &Round) {
        self.crashes += 1;
        let found = &round.findings;
        merge(&mut self.acknowledged, &found.acknowledged);
        merge(&mut self.lost, &found.lost);
        self.corrupt += found.corrupt.len() as u64;
        self.invariant += found.invariant.len() as u64;
        self.control_acknowledged += found.control_acknowledged;
        self.control_lost += found.control_lost;
        let slot = self.faults.entry(round.fault.label()).or_default();
        slot.0 += 1;
        slot.1 += u64::from(round.fired);
        self.hung += u64::from(round.hung);
        for line in found.lost_lines.iter().chain(&found.corrupt) {
            self.details.push(format!("round {index}: {line}"));
        }
        for line in &found.invariant {
            self.invariant_details.push(format!("round {index}: {line}"));
        }
        self.add_queue(index, &found.queue);
    }

    fn add_queue(&mut self, index: u64, found: &QueueFindings) {
        let sum = &mut self.queue;
        for (label, n) in &found.acked {
            *sum.acked.entry(label).or_default() += n;
        }
        for (into, from) in [
            (&mut sum.queued, found.queued),
            (&mut sum.admitted, found.admitted),
            (&mut sum.ended, found.ended),
            (&mut sum.duplicated, found.duplicated),
            (&mut sum.intents, found.intents),
            (&mut sum.finished, found.finished),
            (&mut sum.taken_back, found.taken_back),
            (&mut sum.end_intents, found.end_intents),
            (&mut sum.ends_finished, found.ends_finished),
            (&mut sum.unresolved, found.unresolved),
            (&mut sum.supervisor_kills, found.supervisor_kills),
        ] {
            *into += from;
        }
        self.queue_details.extend(found.broken.iter().map(|line| format!("round {index}: queue box: {line}")));
    }

    pub fn lost_total(&self) -> u64 {
        self.lost.values().sum()
    }

    /// Exit 0 needs 0 lost, 0 corrupt, item 2's invariant held, no key of the queue box twice and no admission
    /// left unresolved (docs/intake.md IN-12), and a control that lost data (else the run could not have seen a
    /// missing fsync at all).
    pub fn passed(&self) -> bool {
        self.lost_total() == 0
            && self.corrupt == 0
            && self.invariant == 0
            && self.queue_details.is_empty()
            && self.control_lost > 0
    }

    /// The summary: one line per figure, the invariant on its own line.
    pub fn summary(&self, seed: u64, secs: f64) -> String {
        let mut out = String::new();
        print_details(&mut out, &self.details);
        print_details(&mut out, &self.invariant_details);
        print_details(&mut out, &self.queue_details);
        let _ = writeln!(out, "powerloss: faults: {}", self.fault_list());
        if self.hung > 0 {
            let _ = writeln!(out, "powerloss: LazyFS hung in {} rounds and was killed (a power loss too)", self.hung);
        }
        let _ = writeln!(out, "crashes: {} (seed {seed}, {secs:.0} s)", self.crashes);
        let acknowledged: u64 = self.acknowledged.values().sum();
        let _ = writeln!(out, "acknowledged: {acknowledged} ({})", by_kind(&self.acknowledged));
        let _ = writeln!(out, "lost: {} ({})", self.lost_total(), by_kind(&self.lost));
        let _ = writeln!(out, "corrupt: {}", self.corrupt);
        let _ = writeln!(
            out,
            "invariant (item 2: a dispatched assignment keeps its lease or end record; a lease has its spawn record): \
             {} broken",
            self.invariant
        );
        out.push_str(&queue_lines(&self.queue, self.lost.get(&Kind::Queue).copied().unwrap_or(0)));
        let verdict = if self.control_lost > 0 { "lost data, as it must" } else { "LOST NOTHING: the run is blind" };
        let _ = writeln!(
            out,
            "negative control (rename without fsync): {} acknowledged, {} lost — {verdict}",
            self.control_acknowledged, self.control_lost
        );
        out
    }

    fn fault_list(&self) -> String {
        let mut parts = Vec::new();
        let clear = Fault::ClearCache.label();
        if let Some((n, _)) = self.faults.get(clear) {
            parts.push(format!("{clear} {n}"));
        }
        for point in CRASH_POINTS {
            if let Some((n, fired)) = self.faults.get(point.label()) {
                parts.push(format!("crash {} {n} (fired {fired})", point.label()));
            }
        }
        parts.join(", ")
    }
}

/// The queue box's two lines: what webhook-spawn acknowledged and what each key was after the tick; what was
/// lost or doubled, and what the crash table (IN-12) had to do.
fn queue_lines(q: &QueueFindings, lost: u64) -> String {
    let acked: u64 = q.acked.values().sum();
    let by: Vec<String> = ["admitted at once", "queued", "coalesced", "duplicate", "claimed"]
        .iter()
        .map(|label| format!("{label} {}", q.acked.get(label).copied().unwrap_or(0)))
        .collect();
    format!(
        "queue box ({SLOTS} slots, at most {QUEUE_MAX} queued): acknowledged {acked} ({}); their delivery ids after \
         the remount and one tick: {} queued, {} admitted, {} ended\n\
         queue box: lost {lost}, duplicated {}; interrupted admissions {} (finished {}, taken back {}), interrupted \
         ends {} (finished {}), left unresolved {}; supervisor SIGKILLed {} times\n",
        by.join(", "),
        q.queued,
        q.admitted,
        q.ended,
        q.duplicated,
        q.intents,
        q.finished,
        q.taken_back,
        q.end_intents,
        q.ends_finished,
        q.unresolved,
        q.supervisor_kills
    )
}

fn print_details(out: &mut String, lines: &[String]) {
    for line in lines.iter().take(PRINTED_DETAILS) {
        let _ = writeln!(out, "powerloss: {line}");
    }
    if lines.len() > PRINTED_DETAILS {
        let _ = writeln!(out, "powerloss: … and {} more like these", lines.len() - PRINTED_DETAILS);
    }
}

fn merge(into: &mut BTreeMap<Kind, u64>, from: &BTreeMap<Kind, u64>) {
    for (kind, n) in from {
        *into.entry(*kind).or_default() += n;
    }
}

/// `rmw 120, add 4, …` over every kind, zeros included, so two runs' lines line up.
fn by_kind(counts: &BTreeMap<Kind, u64>) -> String {
    let parts: Vec<String> =
        KINDS.iter().map(|k| format!("{} {}", k.label(), counts.get(k).copied().unwrap_or(0))).collect();
    parts.join(", ")
}

/// The one line printed after each round.
pub fn round_line(index: u64, of: usize, round: &Round) -> String {
    let found: &Findings = &round.findings;
    let how = match round.fault {
        Fault::ClearCache => "clear-cache".to_owned(),
        Fault::Crash(point) => {
            format!("crash {}{}", point.label(), if round.fired { "" } else { " (did not fire; cleared instead)" })
        }
    };
    let how = if round.hung { format!("{how}, LazyFS hung: killed") } else { how };
    format!(
        "powerloss: round {index}/{of}: {how}: acknowledged {}, lost {}, corrupt {}, invariant broken {}, queue \
         duplicated {} unresolved {}, control lost {}",
        found.acknowledged.values().sum::<u64>(),
        found.lost.values().sum::<u64>(),
        found.corrupt.len(),
        found.invariant.len(),
        found.queue.duplicated,
        found.queue.unresolved,
        found.control_lost
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(lost: u64, control_lost: u64, invariant: usize) -> Round {
        let mut findings = Findings { control_acknowledged: 5, control_lost, ..Findings::default() };
        if lost > 0 {
            findings.lost.insert(Kind::Rm, lost);
        }
        findings.invariant = vec!["x".into(); invariant];
        Round { fault: Fault::ClearCache, fired: false, hung: false, findings }
    }

    #[test]
    fn passing_needs_no_loss_no_broken_invariant_and_a_control_that_lost() {
        let verdict = |r: Round| {
            let mut totals = Totals::default();
            totals.add(1, &r);
            totals.passed()
        };
        assert!(verdict(round(0, 3, 0)));
        assert!(!verdict(round(1, 3, 0)));
        assert!(!verdict(round(0, 0, 0)), "a control that lost nothing means the run was blind");
        assert!(!verdict(round(0, 3, 1)));
        let mut doubled = round(0, 3, 0);
        doubled.findings.queue.broken.push("k is in 2 records".into());
        assert!(!verdict(doubled), "a key held twice fails the run");
    }

    #[test]
    fn the_summary_has_the_four_figures_and_the_invariant_on_its_own_line() {
        let mut totals = Totals::default();
        totals.add(1, &round(2, 3, 1));
        let text = totals.summary(7, 1.0);
        for start in [
            "crashes: 1 ",
            "acknowledged: 0 ",
            "lost: 2 (",
            "corrupt: 0",
            "invariant (item 2",
            "queue box (2 slots",
            "queue box: lost 0, duplicated 0",
            "negative control",
        ] {
            assert!(text.lines().any(|l| l.starts_with(start)), "{start}: {text}");
        }
    }
}
