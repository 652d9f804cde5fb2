//! One observation of a chaos world, and how it compares with the model: the live panes, the listed names, every
//! lease, each name's hook-log lines split by life (a life's lines run from its spawn line to the next one), and
//! each fake agent's starts with how many of them carried the kickoff prompt.

use std::collections::{BTreeMap, BTreeSet};

use lease::{LeaseDir, LeaseState};
use serde_json::Value;

use super::model::{Expected, Incarnation};
use super::watch::Watch;
use super::world::World;

/// One observation of the box: the live set, every lease, the registry keys and the hook log.
#[derive(Debug)]
pub(super) struct Seen {
    live: BTreeSet<String>,
    listed: BTreeSet<String>,
    leases: BTreeMap<String, LeaseState>,
    /// Per name, its hook-log lines as `(what, how, outcome)`, in order.
    lines: BTreeMap<String, Vec<(String, String, Option<String>)>>,
    /// Per agent: how often it started, and how many of those starts carried a prompt.
    starts: BTreeMap<String, (usize, usize)>,
}

impl Seen {
    pub(super) fn now(world: &World, watch: &Watch, cache: &mut BTreeMap<String, bool>) -> Self {
        let sb = &world.sb;
        let live: BTreeSet<String> = sb.live().into_iter().collect();
        let listed = registry::read(&sb.registry())
            .document_or_empty()
            .map(|d| d.names().map(str::to_owned).collect())
            .unwrap_or_default();
        let leases =
            LeaseDir::new(sb.paths().lease_dir()).list().into_iter().map(|(n, s)| (n.to_string(), s)).collect();
        let mut lines: BTreeMap<String, Vec<(String, String, Option<String>)>> = BTreeMap::new();
        for line in watch.lines() {
            let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
            let text = |k: &str| v[k].as_str().map(str::to_owned);
            if let Some(name) = text("name") {
                let record = (text("what").unwrap_or_default(), text("how").unwrap_or_default(), text("outcome"));
                lines.entry(name).or_default().push(record);
            }
        }
        Self { live, listed, leases, lines, starts: agent_starts(&sb.root().join("agents"), cache) }
    }

    /// This incarnation's lease: `None` when there is none of its gen, else its outcome.
    fn lease_of(&self, inc: &Incarnation) -> Option<Option<String>> {
        match self.leases.get(&inc.name)? {
            LeaseState::Present(l) if l.gen_value() == Some(inc.lease_gen.as_str()) => {
                Some(l.outcome_text().map(str::to_owned))
            }
            LeaseState::Unreadable => Some(Some("<unreadable>".into())),
            _ => None,
        }
    }

    /// The lines `what` of this incarnation as `(how, outcome)`: those after its spawn line, up to the next
    /// life's spawn line.
    fn lines_of(&self, inc: &Incarnation, all: &[Incarnation], what: &str) -> Vec<(String, Option<String>)> {
        let life = all.iter().filter(|i| i.name == inc.name).position(|i| std::ptr::eq(i, inc)).unwrap_or(0);
        let lines = self.lines.get(&inc.name).map(Vec::as_slice).unwrap_or_default();
        let mut spawns = 0;
        let mut found = Vec::new();
        for (kind, how, outcome) in lines {
            if kind == "spawn" {
                spawns += 1;
            } else if kind == what && spawns == life + 1 {
                found.push((how.clone(), outcome.clone()));
            }
        }
        found
    }

    fn observed(&self, inc: &Incarnation, all: &[Incarnation]) -> Expected {
        Expected {
            lease: self.lease_of(inc),
            ends: self.lines_of(inc, all, "end"),
            restarts: self.lines_of(inc, all, "restart").into_iter().map(|(_, outcome)| outcome).collect(),
            listed: self.listed.contains(&inc.name),
        }
    }

    pub(super) fn matches(&self, inc: &Incarnation, all: &[Incarnation]) -> bool {
        let observed = self.observed(inc, all);
        let (starts, kickoffs) = self.starts.get(&inc.agent).copied().unwrap_or_default();
        let started = starts >= inc.min_starts && kickoffs == inc.kickoffs;
        if inc.superseded {
            let e = &inc.expected;
            return observed.lease == e.lease && observed.ends == e.ends && observed.restarts == e.restarts && started;
        }
        observed == inc.expected && started && self.live.contains(&inc.name) == inc.pane_expected()
    }

    pub(super) fn describe(&self, inc: &Incarnation, all: &[Incarnation]) -> String {
        let (starts, kickoffs) = self.starts.get(&inc.agent).copied().unwrap_or_default();
        format!(
            "expected {:?}, {} starts ({} with the kickoff prompt), pane {}; observed {:?}, {starts} starts ({kickoffs} with the kickoff prompt), pane {}",
            inc.expected,
            inc.min_starts,
            inc.kickoffs,
            inc.pane_expected(),
            self.observed(inc, all),
            self.live.contains(&inc.name)
        )
    }
}

/// How often each fake agent started (the `<agent>.<k>.argv` records of 80 I8), and how many of those starts got
/// a prompt: an argument after `--as <agent>` (the tool harness passes the prompt last, and nothing when it
/// resumes). `cache` keeps what each record said, since a record is complete once it has its name.
fn agent_starts(dir: &std::path::Path, cache: &mut BTreeMap<String, bool>) -> BTreeMap<String, (usize, usize)> {
    let mut starts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = file.strip_suffix(".argv")
            && let Some((agent, _)) = stem.rsplit_once('.')
        {
            let prompted = *cache.entry(file.clone()).or_insert_with(|| {
                let argv = std::fs::read(entry.path()).unwrap_or_default();
                argv.iter().filter(|b| **b == 0).count() > 2
            });
            let counts = starts.entry(agent.to_owned()).or_default();
            counts.0 += 1;
            counts.1 += usize::from(prompted);
        }
    }
    starts
}
