//! What a burst must have done, checked from outside: the receiver's answer to each delivery, the hook log's every
//! line (spawn records carry the intake key of the record a session was admitted from; intake lines say what
//! became of the others), each fake agent's starts and kickoff prompt, and what the queue directory still holds.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use super::plan::Plan;
use super::report::Report;
use crate::chaos::watch::Watch;
use crate::receiver::Fate;
use crate::sandbox::Sandbox;

/// What webhook-spawn answered (its stdout line, W20–W23 of docs/reference.md).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    AtOnce,
    Queued,
    /// Joined the queued record of this key.
    Coalesced(String),
    Duplicate,
    Claimed,
    Other(String),
}

fn answer(stdout: &str) -> Answer {
    if stdout.starts_with("session '") && stdout.contains(" added with a kickoff prompt") {
        Answer::AtOnce
    } else if stdout.starts_with("batch queued at position ") {
        Answer::Queued
    } else if let Some(rest) = stdout.strip_prefix("batch added to the queued assignment '") {
        Answer::Coalesced(rest.split('\'').next().unwrap_or_default().to_owned())
    } else if stdout.starts_with("delivery '") && stdout.contains("' was already accepted (") {
        Answer::Duplicate
    } else if stdout.contains("already claims this work") {
        Answer::Claimed
    } else {
        Answer::Other(stdout.to_owned())
    }
}

/// The hook log's lines that matter here, in order.
#[derive(Debug, Default)]
struct Log {
    /// `(line index, session name, intake key)` of every spawn record.
    spawns: Vec<(usize, String, String)>,
    /// The index of each name's first end record.
    ends: BTreeMap<String, usize>,
    /// Record keys in the order they were accepted: a `queued` line, or the spawn record of one admitted at once.
    accepted: Vec<String>,
    /// `key → by` of every `claimed` end line; the keys of every `expired` one.
    claimed: BTreeMap<String, String>,
    expired: Vec<String>,
    /// The line at which each batch key was accepted (queued, coalesced, or admitted at once).
    order: BTreeMap<String, usize>,
}

fn read_log(lines: &[String]) -> Log {
    let mut log = Log::default();
    let mut seen = BTreeSet::new();
    for (at, line) in lines.iter().enumerate() {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        let text = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        match (text("what").as_str(), text("how").as_str()) {
            ("spawn", _) => {
                log.spawns.push((at, text("name"), text("intake")));
                log.order.entry(text("intake")).or_insert(at);
                if seen.insert(text("intake")) {
                    log.accepted.push(text("intake"));
                }
            }
            ("end", _) => {
                log.ends.entry(text("name")).or_insert(at);
            }
            ("intake", "queued") if seen.insert(text("key")) => {
                log.order.entry(text("key")).or_insert(at);
                log.accepted.push(text("key"));
            }
            ("intake", "coalesced") => {
                log.order.entry(text("key")).or_insert(at);
            }
            ("intake", "claimed") => {
                log.claimed.insert(text("key"), text("by"));
            }
            ("intake", "expired") => log.expired.push(text("key")),
            _ => {}
        }
    }
    log
}

/// Every check and figure of the burst, into `report`.
pub(super) fn check(sb: &Sandbox, plan: &Plan, fates: &[Fate], watch: &Watch, report: &mut Report) {
    let lines = watch.lines();
    if let Ok(seen) = watch.log.lock() {
        (report.log_lines, report.log_trims, report.log_gaps) = (seen.lines.len(), seen.trims, seen.gaps);
    }
    if let Ok(samples) = watch.samples.lock() {
        report.registry_invalid = samples.registry_invalid;
        report.lease_unreadable = samples.lease_unreadable;
    }
    let log = read_log(&lines);
    let records = answers(plan, fates, &log, report);
    admitted_once(&log, &records, report);
    in_order(&log, &records, report);
    one_session_at_a_time(plan, &log, report);
    prompts_and_waits(sb, plan, fates, &log, &records, report);
    leftovers(sb, report);
}

/// The record each accepted delivery made or joined: record key → the plan positions of its batches, in the
/// order they were accepted (the record's own first). Counts the answers.
fn answers(plan: &Plan, fates: &[Fate], log: &Log, report: &mut Report) -> BTreeMap<String, Vec<usize>> {
    let mut records: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (at, (delivery, fate)) in plan.deliveries.iter().zip(fates).enumerate() {
        if !fate.is_done() {
            report.wrong.push(format!("delivery {} was not acknowledged: {fate:?}", delivery.label));
            continue;
        }
        match answer(fate.stdout()) {
            Answer::AtOnce => report.at_once += 1,
            Answer::Queued => report.queued += 1,
            Answer::Coalesced(into) => {
                report.coalesced += 1;
                records.entry(into).or_default().push(at);
                continue;
            }
            Answer::Duplicate => {
                report.duplicates += 1;
                continue;
            }
            Answer::Claimed => report.claimed += 1,
            Answer::Other(text) => {
                report.wrong.push(format!("delivery {} was answered {text:?}", delivery.label));
                continue;
            }
        }
        records.entry(delivery.label.clone()).or_default().push(at);
    }
    for (key, members) in &mut records {
        let order = |m: &usize| {
            let label = &plan.deliveries[*m].label;
            (label != key, log.order.get(label).copied().unwrap_or(usize::MAX))
        };
        members.sort_by_key(order);
    }
    report.accepted = report.at_once + report.queued + report.coalesced + report.claimed;
    let redelivered = plan.deliveries.iter().filter(|d| d.kind == super::Kind::Redelivery).count();
    if report.duplicates != redelivered {
        report.wrong.push(format!("{} duplicates for {redelivered} redeliveries", report.duplicates));
    }
    records
}

/// Each record left the queue exactly once: one spawn record, or (its work claimed by a live session) one claimed
/// end line; none expired.
fn admitted_once(log: &Log, records: &BTreeMap<String, Vec<usize>>, report: &mut Report) {
    let mut spawned: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, _, key) in &log.spawns {
        *spawned.entry(key.as_str()).or_default() += 1;
    }
    report.admitted = log.spawns.len();
    for key in records.keys() {
        let ends = spawned.get(key.as_str()).copied().unwrap_or(0) + usize::from(log.claimed.contains_key(key));
        if ends != 1 {
            report.wrong.push(format!("record {key} left the queue {ends} times (spawns and claims)"));
        }
    }
    if let Some(stray) = spawned.keys().find(|k| !records.contains_key(**k)) {
        report.wrong.push(format!("a session was admitted from record {stray}, which no answer named"));
    }
    for key in &log.expired {
        report.wrong.push(format!("record {key} expired"));
    }
    report.claimed_later =
        log.claimed.keys().filter(|k| records.contains_key(*k)).count().saturating_sub(report.claimed);
}

/// Sessions were admitted in the order their records were accepted (IN-11: oldest first).
fn in_order(log: &Log, records: &BTreeMap<String, Vec<usize>>, report: &mut Report) {
    let admitted: Vec<&str> = log.spawns.iter().map(|(_, _, k)| k.as_str()).collect();
    let accepted: Vec<&str> =
        log.accepted.iter().map(String::as_str).filter(|k| admitted.contains(k) && records.contains_key(*k)).collect();
    if admitted != accepted {
        let first = admitted.iter().zip(&accepted).position(|(a, b)| a != b).unwrap_or(0);
        report.wrong.push(format!(
            "admitted out of the order accepted from position {first}: admitted {:?}…, accepted {:?}…",
            &admitted[first..(first + 5).min(admitted.len())],
            &accepted[first..(first + 5).min(accepted.len())]
        ));
    }
}

/// No two sessions of one assignment lived at once; every assignment got a session. Counts the assignments
/// admitted again after their session had ended (a later event of a finished issue is new work).
fn one_session_at_a_time(plan: &Plan, log: &Log, report: &mut Report) {
    let assignment_of: BTreeMap<&str, usize> =
        plan.deliveries.iter().map(|d| (d.label.as_str(), d.assignment)).collect();
    let mut lives: BTreeMap<usize, Vec<(usize, usize, &str)>> = BTreeMap::new();
    for (at, name, key) in &log.spawns {
        let Some(&assignment) = assignment_of.get(key.as_str()) else { continue };
        let end = log.ends.get(name).copied().unwrap_or(usize::MAX);
        lives.entry(assignment).or_default().push((*at, end, name.as_str()));
    }
    for (assignment, spans) in &lives {
        for pair in spans.windows(2) {
            if pair[1].0 < pair[0].1 {
                let what = &plan.assignments[*assignment];
                report.wrong.push(format!("{what}: {} started while {} still ran", pair[1].2, pair[0].2));
            }
        }
        report.readmitted += spans.len() - 1;
    }
    report.assignments = plan.assignments.len();
    report.assignments_admitted = lives.len();
    if lives.len() != plan.assignments.len() {
        report.wrong.push(format!("{} of {} assignments got a session", lives.len(), plan.assignments.len()));
    }
}

/// Each admitted record's agent started once with every line of its batches, oldest first; no other agent ran;
/// the wait from the acceptance of each record to its agent's start.
fn prompts_and_waits(
    sb: &Sandbox,
    plan: &Plan,
    fates: &[Fate],
    log: &Log,
    records: &BTreeMap<String, Vec<usize>>,
    report: &mut Report,
) {
    let mut waits = Vec::new();
    for (_, _, key) in &log.spawns {
        let Some(members) = records.get(key) else { continue };
        let agent = sb.agent(key);
        if agent.starts() != 1 {
            report.wrong.push(format!("the agent of record {key} started {} times", agent.starts()));
            continue;
        }
        let prompt = agent.start(1).argv_strings().last().cloned().unwrap_or_default();
        let at: Vec<Option<usize>> =
            members.iter().map(|m| prompt.find(&plan.deliveries[*m].batch.events[0].line)).collect();
        if at.iter().any(Option::is_none) || !at.windows(2).all(|w| w[0] < w[1]) {
            report.wrong.push(format!("the prompt of record {key} lacks a line of its batches, or their order"));
        }
        if let (Fate::Done { at: accepted, .. }, Some(started)) = (&fates[members[0]], agent.started_at(1)) {
            waits.push(started.duration_since(*accepted).unwrap_or(Duration::ZERO));
        }
    }
    let ran: BTreeSet<&str> = log.spawns.iter().map(|(_, _, k)| k.as_str()).collect();
    let strays = plan.deliveries.iter().filter(|d| !ran.contains(d.label.as_str()) && sb.agent(&d.label).starts() > 0);
    for stray in strays {
        report.wrong.push(format!("agent {} started without a session admitted for it", stray.label));
    }
    waits.sort();
    report.max_wait = waits.last().copied().unwrap_or_default();
    report.median_wait = waits.get(waits.len() / 2).copied().unwrap_or_default();
}

/// Nothing is left in the queue: no record, no intent, no temp, no ended row.
fn leftovers(sb: &Sandbox, report: &mut Report) {
    let queue = sb.paths().queue_dir().to_path_buf();
    let left: Vec<String> = [queue.clone(), queue.join("ended")]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).into_iter().flatten().flatten())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if !left.is_empty() {
        report.wrong.push(format!("the queue still holds {left:?}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_from_webhook_spawns_result_lines() {
        let cases = [
            (
                "session 'hook-a-1234' (tool) added with a kickoff prompt — the supervisor starts it within ~2s",
                Answer::AtOnce,
            ),
            (
                "batch queued at position 3 of 3 (the box is full: 2 of 2 session slots in use); the supervisor …",
                Answer::Queued,
            ),
            (
                "batch added to the queued assignment 'd7' (position 2, 2 batches); one session …",
                Answer::Coalesced("d7".into()),
            ),
            ("delivery 'd7' was already accepted (queued); nothing changed", Answer::Duplicate),
            (
                "session 'hook-a-1234' already claims this work; no session was started (the batch ended claimed)",
                Answer::Claimed,
            ),
        ];
        for (line, expected) in cases {
            assert_eq!(answer(line), expected, "{line}");
        }
    }
}
