//! The chaos run's notifier mode (issue 21, docs/notification.md): the supervisor runs a notifier that fails or
//! hangs past its 2 s bound at random (seeded by the run's seed and the document, so each retry rolls again) and
//! records every run in a file. At the end every outcome must be delivered at least once, no run may be for a life
//! the model never had, and a second delivery of one outcome is only allowed from another supervisor process
//! (one SIGKILLed between the program's exit and its record); such duplicates are counted. An outcome removed before
//! its delivery is allowed only when `rm` or the sweep removed it, never the supervisor's reap (N-11).

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use lease::{LeaseDir, LeaseState, Notification};
use serde_json::Value;

use super::model::Incarnation;

/// How long the end of a run waits for every pending outcome to be delivered (retries back off up to 10 min; with
/// a quarter of the attempts failing, four failures in a row are rare).
const DELIVERY_LIMIT: Duration = Duration::from_secs(400);

/// The notifier's bound in the chaos world, so hanging runs cost little.
pub const TIMEOUT_SECS: &str = "2";

#[derive(Debug)]
pub struct ChaosNotifier {
    _dir: tempfile::TempDir,
    runs: PathBuf,
    script: PathBuf,
}

/// One run of the program, as it recorded itself.
#[derive(Debug, Clone)]
struct Run {
    kind: String,
    supervisor: String,
    start_ns: i128,
    key: String,
}

/// What the run's notifier figures were.
#[derive(Debug, Default, Clone)]
pub struct NotifyFigures {
    pub outcomes: usize,
    pub delivered: usize,
    pub removed_first: usize,
    /// The removed-first outcomes by the end record's `how` (only `rm` and `swept` are allowed, N-7 and N-11).
    pub removed_by: BTreeMap<String, usize>,
    pub runs: usize,
    pub failed_runs: usize,
    pub hung_runs: usize,
    pub duplicates: usize,
    /// Outcome recorded (`endedAt`, whole seconds) to the first run's start, in ms: up to 1 s too high.
    pub latency_ms: Vec<f64>,
}

impl ChaosNotifier {
    /// Writes the notifier in a directory of its own; 10 % of the runs hang, 15 % fail.
    pub fn install(seed: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let runs = root.join("notifier-runs");
        fs::create_dir_all(&runs).unwrap();
        let script = root.join("chaos-notifier.sh");
        let text = format!(
            r#"#!/bin/sh
doc=$(cat)
start=$(date +%s%N)
key=$(printf '%s\n' "$doc" | jq -r '[.name, .gen, .outcome, .endedAt] | map(tostring) | join(" ")')
roll=$(printf '{seed} %s\n' "$doc" | cksum | cut -d' ' -f1)
roll=$((roll % 20))
kind=ok
[ "$roll" -lt 5 ] && kind=fail
[ "$roll" -lt 2 ] && kind=hang
printf '%s %s %s %s\n' "$kind" "$PPID" "$start" "$key" > '{runs}'/run.$$.$start
case $kind in
  hang) sleep 30 ;;
  fail) exit 1 ;;
esac
exit 0
"#,
            runs = runs.display()
        );
        fs::write(&script, text).unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        Self { _dir: dir, runs, script }
    }

    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        vec![
            ("AGENT_BOX_ON_OUTCOME", self.script.clone().into()),
            ("AGENT_BOX_ON_OUTCOME_TIMEOUT", TIMEOUT_SECS.into()),
        ]
    }

    /// Waits (tending the supervisor through `tend`) until no lease holds an undelivered outcome; false at the limit.
    pub fn settle(&self, leases: &LeaseDir, mut tend: impl FnMut()) -> bool {
        let start = Instant::now();
        while !leases.pending_outcomes().is_empty() {
            if start.elapsed() > DELIVERY_LIMIT {
                return false;
            }
            tend();
            std::thread::sleep(Duration::from_millis(100));
        }
        true
    }

    fn read_runs(&self) -> Vec<Run> {
        let mut runs: Vec<Run> = fs::read_dir(&self.runs)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| fs::read_to_string(e.path()).ok())
            .filter_map(|text| {
                let mut words = text.trim_end().splitn(4, ' ');
                let kind = words.next()?.to_owned();
                let supervisor = words.next()?.to_owned();
                let start_ns = words.next()?.parse().ok()?;
                Some(Run { kind, supervisor, start_ns, key: words.next()?.to_owned() })
            })
            .collect();
        runs.sort_by_key(|r| r.start_ns);
        runs
    }

    /// The figures, and what was wrong: an outcome never delivered, a run for a life the model never had, a
    /// duplicate delivery by the same supervisor process.
    pub fn figures(
        &self,
        leases: &LeaseDir,
        incs: &[Incarnation],
        hook_log: &[String],
    ) -> (NotifyFigures, Vec<String>) {
        let runs = self.read_runs();
        let mut figures = NotifyFigures {
            runs: runs.len(),
            failed_runs: runs.iter().filter(|r| r.kind == "fail").count(),
            hung_runs: runs.iter().filter(|r| r.kind == "hang").count(),
            ..NotifyFigures::default()
        };
        let mut wrong = Vec::new();
        let lives: BTreeSet<(String, String)> = incs.iter().map(|i| (i.name.clone(), i.lease_gen.clone())).collect();
        let mut ok_by_key: BTreeMap<&str, Vec<&Run>> = BTreeMap::new();
        let mut first_by_key: BTreeMap<&str, &Run> = BTreeMap::new();
        for run in &runs {
            let mut words = run.key.split(' ');
            let life = (words.next().unwrap_or("").to_owned(), words.next().unwrap_or("").to_owned());
            if !lives.contains(&life) {
                wrong.push(format!("the notifier ran for {} {}: a life the model never had", life.0, life.1));
            }
            first_by_key.entry(run.key.as_str()).or_insert(run);
            if run.kind == "ok" {
                ok_by_key.entry(run.key.as_str()).or_default().push(run);
            }
        }
        for (key, oks) in &ok_by_key {
            for pair in oks.windows(2) {
                figures.duplicates += 1;
                if pair[0].supervisor == pair[1].supervisor {
                    wrong
                        .push(format!("{key} was delivered twice by the same supervisor (pid {})", pair[0].supervisor));
                }
            }
        }
        for run in first_by_key.values() {
            let ended = run.key.rsplit(' ').next().and_then(base::time::parse_iso);
            if let Some(ended) = ended {
                figures.latency_ms.push((run.start_ns - i128::from(ended) * 1_000_000_000) as f64 / 1e6);
            }
        }
        self.check_leases(leases, &ok_by_key, &mut figures, &mut wrong);
        check_end_records(hook_log, &ok_by_key, &mut figures, &mut wrong);
        (figures, wrong)
    }

    /// Every lease still holding an outcome: delivered, by a run of exactly that outcome.
    fn check_leases(
        &self,
        leases: &LeaseDir,
        ok_by_key: &BTreeMap<&str, Vec<&Run>>,
        figures: &mut NotifyFigures,
        wrong: &mut Vec<String>,
    ) {
        for (name, state) in leases.list() {
            let LeaseState::Present(lease) = state else { continue };
            let Some(key) = lease::OutcomeKey::of(&lease) else { continue };
            figures.outcomes += 1;
            let text = format!(
                "{name} {} {} {}",
                key.lease_gen.as_deref().unwrap_or("null"),
                key.outcome,
                key.ended_at.as_deref().unwrap_or("null")
            );
            let recorded = matches!(lease.notification(), Notification::Delivered { .. });
            if recorded && ok_by_key.contains_key(text.as_str()) {
                figures.delivered += 1;
            } else {
                wrong.push(format!("the outcome {text} was not delivered (recorded: {recorded})"));
            }
        }
    }
}

/// Every end record of a lease with an outcome says whether it was delivered; `true` needs a run of that name, and
/// `false` is allowed only for an operator's `rm` or the sweep (N-11: the supervisor's reap waits for delivery).
fn check_end_records(
    hook_log: &[String],
    ok_by_key: &BTreeMap<&str, Vec<&Run>>,
    figures: &mut NotifyFigures,
    wrong: &mut Vec<String>,
) {
    for line in hook_log {
        let Ok(record) = serde_json::from_str::<Value>(line) else { continue };
        let Some(notified) = record.get("notified").and_then(Value::as_bool) else { continue };
        let name = record.get("name").and_then(Value::as_str).unwrap_or("");
        figures.outcomes += 1;
        if !notified {
            figures.removed_first += 1;
            let how = record.get("how").and_then(Value::as_str).unwrap_or("?");
            *figures.removed_by.entry(how.to_owned()).or_default() += 1;
            // N-7: rm and the sweep may remove an undelivered outcome; N-12: so may the assignment's own clean end.
            if !["rm", "swept", "exited"].contains(&how) {
                wrong.push(format!(
                    "the outcome of {name} was removed before delivery by '{how}' (only rm, the sweep and a clean \
                     exit may)"
                ));
            }
        } else if ok_by_key.keys().any(|k| k.starts_with(&format!("{name} "))) {
            figures.delivered += 1;
        } else {
            wrong.push(format!("the end record of {name} says notified, but no run of it exited 0"));
        }
    }
}

impl NotifyFigures {
    /// `rm 2, swept 1`, or `none`.
    pub fn removed_by_text(&self) -> String {
        if self.removed_by.is_empty() {
            return "none".into();
        }
        self.removed_by.iter().map(|(how, n)| format!("{how} {n}")).collect::<Vec<_>>().join(", ")
    }

    pub fn latency(&self, p: f64) -> f64 {
        let mut sorted = self.latency_ms.clone();
        sorted.sort_by(f64::total_cmp);
        if sorted.is_empty() {
            return f64::NAN;
        }
        let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }
}
