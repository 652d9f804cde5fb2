//! What a boxes burst must have done, checked from outside: each receiver's answers, each box's hook log as its
//! tail saw it (spawn records carry the intake key of the record a session was admitted from), each fake agent's
//! starts on each box, and the claims table at the end.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::report::{BoxFigures, Report};
use super::{Member, Options};
use crate::boxes::claims_table;
use crate::intake_burst::{Kind, Plan};
use crate::postgres::{Postgres, ROLE};
use crate::receiver::Fate;

/// L43's words: the claimed panes were stopped because the claims could not be renewed (BX-9).
const FENCED: &str = "could not be renewed for half a term";

/// Every check and figure of the burst, into `report`.
pub(super) fn check(server: &Postgres, plan: &Plan, members: &[Member], fates: &[Vec<Fate>], report: &mut Report) {
    let mut admitted_on: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (m, fates) in members.iter().zip(fates) {
        let figures = box_figures(plan, m, fates, &mut admitted_on, report);
        report.per_box.push(figures);
    }
    report.assignments = plan.assignments.len();
    for (assignment, name) in plan.assignments.iter().enumerate() {
        match admitted_on.get(&assignment).map(Vec::as_slice) {
            Some([_]) => report.admitted_once += 1,
            None | Some([]) => report.wrong.push(format!("{name} was admitted on no box")),
            Some(many) => report.wrong.push(format!("{name} was admitted {} times: on {many:?}", many.len())),
        }
    }
    agents_ran_only_where_admitted(plan, members, &admitted_on, report);
    claims_all_done(server, report);
}

/// One box's answers and hook-log lines; each admission into `admitted_on` (assignment → boxes).
fn box_figures(
    plan: &Plan,
    m: &Member,
    fates: &[Fate],
    admitted_on: &mut BTreeMap<usize, Vec<String>>,
    report: &mut Report,
) -> BoxFigures {
    let mut figures = BoxFigures { label: m.label.clone(), ..BoxFigures::default() };
    for (delivery, fate) in plan.deliveries.iter().zip(fates) {
        if !fate.is_done() {
            report.wrong.push(format!("{}: delivery {} was not acknowledged: {fate:?}", m.label, delivery.label));
        }
    }
    let assignment_of: BTreeMap<&str, usize> =
        plan.deliveries.iter().map(|d| (d.label.as_str(), d.assignment)).collect();
    for line in m.watch.lines().iter().filter_map(|l| serde_json::from_str::<Value>(l).ok()) {
        let text = |k: &str| line[k].as_str().unwrap_or_default().to_owned();
        match (text("what").as_str(), text("how").as_str()) {
            ("spawn", _) => {
                figures.admitted += 1;
                match assignment_of.get(text("intake").as_str()) {
                    Some(a) => admitted_on.entry(*a).or_default().push(m.label.clone()),
                    None => report.wrong.push(format!("{}: a spawn record names no delivery: {line}", m.label)),
                }
            }
            ("end", "exited") => figures.exited += 1,
            ("end", how) => {
                report.wrong.push(format!("{}: a session ended {how}, not exited: {line}", m.label));
            }
            ("intake", "elsewhere") => figures.elsewhere += 1,
            ("intake", "coalesced") => figures.coalesced += 1,
            ("intake", "duplicate") => figures.duplicates += 1,
            ("intake", "claimed") => figures.claimed += 1,
            ("intake", how @ ("expired" | "removed")) => {
                report.wrong.push(format!("{}: a record ended {how}: {line}", m.label));
            }
            _ => {}
        }
    }
    let redelivered = plan.deliveries.iter().filter(|d| d.kind == Kind::Redelivery).count();
    if figures.duplicates != redelivered {
        report.wrong.push(format!("{}: {} duplicates for {redelivered} redeliveries", m.label, figures.duplicates));
    }
    figures.fenced = m.sb.log_count(FENCED);
    figures.panes_stopped =
        m.sb.supervisor_log()
            .lines()
            .filter_map(|l| l.split_once(FENCED)?.1.strip_prefix(": ")?.split(' ').next()?.parse::<usize>().ok())
            .sum();
    figures.restarts = plan.deliveries.iter().map(|d| m.sb.agent(&d.label).starts().saturating_sub(1)).sum();
    figures
}

/// No agent started on a box its assignment was not admitted on: no box ran another box's work.
fn agents_ran_only_where_admitted(
    plan: &Plan,
    members: &[Member],
    admitted_on: &BTreeMap<usize, Vec<String>>,
    report: &mut Report,
) {
    for m in members {
        for d in &plan.deliveries {
            let here = admitted_on.get(&d.assignment).is_some_and(|on| on.contains(&m.label));
            if !here && m.sb.agent(&d.label).starts() > 0 {
                let name = &plan.assignments[d.assignment];
                report.wrong.push(format!("{}: the agent of {} ({name}) ran there unadmitted", m.label, d.label));
            }
        }
    }
}

/// Every claim ends done (BX-6): a renewal or two after the last session exited.
fn claims_all_done(server: &Postgres, report: &mut Report) {
    let count = |filter: &str| {
        let sql = format!("SELECT count(*) FROM agent_box_claims {filter}");
        server.sql(ROLE, &sql).ok().and_then(|n| n.trim().parse::<usize>().ok())
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while count("WHERE done_at IS NULL").is_none_or(|open| open > 0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
    }
    report.claims = count("").unwrap_or(0);
    report.claims_done = count("WHERE done_at IS NOT NULL").unwrap_or(0);
    report.taken_over = count("WHERE previous_box IS NOT NULL").unwrap_or(0);
    if report.claims_done != report.claims || report.claims != report.assignments {
        report.wrong.push(format!(
            "{} claims, {} done, for {} assignments:\n{}",
            report.claims,
            report.claims_done,
            report.assignments,
            claims_table(server)
        ));
    }
}

impl Report {
    pub fn new(options: &Options) -> Self {
        Self { options: options.clone(), ..Self::default() }
    }
}
