//! The figures of a power-loss run, summed over its rounds, and the lines that print them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::check::Findings;
use super::faults::{CRASH_POINTS, Fault};
use super::ledger::{KINDS, Kind};
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
    /// Per fault: rounds, and (for a crash) how many fired at the armed syscall.
    faults: BTreeMap<&'static str, (u64, u64)>,
    details: Vec<String>,
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
        for line in found.corrupt.iter().chain(&found.invariant) {
            self.details.push(format!("round {index}: {line}"));
        }
    }

    pub fn lost_total(&self) -> u64 {
        self.lost.values().sum()
    }

    /// Exit 0 needs 0 lost, 0 corrupt, item 2's invariant held, and a control that lost data (else the run could
    /// not have seen a missing fsync at all).
    pub fn passed(&self) -> bool {
        self.lost_total() == 0 && self.corrupt == 0 && self.invariant == 0 && self.control_lost > 0
    }

    /// The summary: one line per figure, the invariant on its own line.
    pub fn summary(&self, seed: u64, secs: f64) -> String {
        let mut out = String::new();
        for line in self.details.iter().take(PRINTED_DETAILS) {
            let _ = writeln!(out, "powerloss: {line}");
        }
        if self.details.len() > PRINTED_DETAILS {
            let _ = writeln!(out, "powerloss: … and {} more", self.details.len() - PRINTED_DETAILS);
        }
        let _ = writeln!(out, "powerloss: faults: {}", self.fault_list());
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
pub fn round_line(index: u64, of: u64, round: &Round) -> String {
    let found: &Findings = &round.findings;
    let how = match round.fault {
        Fault::ClearCache => "clear-cache".to_owned(),
        Fault::Crash(point) => {
            format!("crash {}{}", point.label(), if round.fired { "" } else { " (did not fire: cleared)" })
        }
    };
    format!(
        "powerloss: round {index}/{of}: {how}: acknowledged {}, lost {}, corrupt {}, invariant broken {}, control lost {}",
        found.acknowledged.values().sum::<u64>(),
        found.lost.values().sum::<u64>(),
        found.corrupt.len(),
        found.invariant.len(),
        found.control_lost
    )
}
