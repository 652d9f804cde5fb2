//! The intake queue after the remount (issue 24, docs/intake.md): every record, intent and tombstone parses;
//! one supervisor tick (`agent-box-supervisor --once`) finishes or takes back every admission a crash interrupted
//! (IN-12); then every delivery id webhook-spawn acknowledged with exit 0 is queued (a record under `queue/` holds
//! it), admitted (its tombstone names a session that left a trace: a spawn line or lease carrying the `intake` key,
//! or its entry) or ended (its tombstone says claimed, expired or removed, or an intake end line names it), and
//! never twice: in no two records, not queued and ended at once, no key carried by two sessions.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use agent_box_types::intake::{How, Record, Tombstone};
use serde_json::Value;

use super::super::ledger::{Kind, QueueAck};
use super::super::world::World;
use super::Findings;

/// How long the `--once` after the remount may take.
const ONCE_LIMIT: Duration = Duration::from_secs(30);

/// What the queue box's check found, for the report.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct QueueFindings {
    /// Exits 0 by what webhook-spawn said (admitted at once, queued, coalesced, duplicate, claimed).
    pub acked: BTreeMap<&'static str, u64>,
    /// Distinct acknowledged delivery ids, by what they were after the tick: queued, admitted, ended.
    pub queued: u64,
    pub admitted: u64,
    pub ended: u64,
    /// Keys held twice (two records, queued and ended, two sessions).
    pub duplicated: u64,
    /// Admission intents found after the remount, and what the tick did with them.
    pub intents: u64,
    pub finished: u64,
    pub taken_back: u64,
    /// End intents found after the remount, and the ends the tick finished.
    pub end_intents: u64,
    pub ends_finished: u64,
    /// Intents (admission or end) still there after the tick (IN-12 broken).
    pub unresolved: u64,
    pub supervisor_kills: u64,
    /// One line per broken promise (a key twice, an intent left, an admission without a trace).
    pub broken: Vec<String>,
}

/// What a box's queue, leases, registry and hook log hold.
#[derive(Debug, Default)]
pub struct QueueState {
    /// Key → the records (file stems) that hold it.
    records: BTreeMap<String, Vec<String>>,
    intents: Vec<String>,
    ends: Vec<String>,
    tombstones: BTreeMap<String, Tombstone>,
    /// Intake key → the sessions whose spawn line carries it and that were not taken back (`refused`).
    spawned: BTreeMap<String, BTreeSet<String>>,
    /// Intake key → the sessions whose lease carries it.
    leased: BTreeMap<String, BTreeSet<String>>,
    /// Keys that an intake end line (claimed, expired, removed) names.
    ended_lines: BTreeSet<String>,
    entries: BTreeSet<String>,
}

impl QueueState {
    /// Reads `paths`; a file that does not parse is corrupt.
    pub fn read(paths: &registry::Paths, log: &[Value], found: &mut Findings) -> Self {
        let mut state = Self::default();
        let queue = paths.queue_dir();
        for (stem, ext) in names(&queue, found) {
            let path = queue.join(format!("{stem}.{ext}"));
            match ext.as_str() {
                "json" => match parse::<Record>(&path) {
                    Ok(record) => record.batches.iter().flat_map(|b| &b.keys).for_each(|key| {
                        state.records.entry(key.clone()).or_default().push(stem.clone());
                    }),
                    Err(why) => found.corrupt.push(format!("queue record {}: {why}", path.display())),
                },
                "admit" => match parse::<Value>(&path) {
                    Ok(intent) if intent["name"].is_string() && intent["gen"].is_string() => state.intents.push(stem),
                    _ => found.corrupt.push(format!("admission intent {} does not parse", path.display())),
                },
                "end" => match parse::<Value>(&path) {
                    Ok(intent) if intent["how"].is_string() && intent["at"].is_string() => state.ends.push(stem),
                    _ => found.corrupt.push(format!("end intent {} does not parse", path.display())),
                },
                _ => {}
            }
        }
        state.read_tombstones(&queue.join("keys"), found);
        state.read_sessions(paths, log);
        state
    }

    fn read_tombstones(&mut self, dir: &Path, found: &mut Findings) {
        for (stem, ext) in names(dir, found).into_iter().filter(|(_, ext)| ext == "json") {
            let path = dir.join(format!("{stem}.{ext}"));
            match parse::<Tombstone>(&path) {
                Ok(stone) => drop(self.tombstones.insert(stone.key.clone(), stone)),
                Err(why) => found.corrupt.push(format!("tombstone {}: {why}", path.display())),
            }
        }
    }

    /// Spawn and end lines of the hook log, leases and entries: who carries which intake key.
    fn read_sessions(&mut self, paths: &registry::Paths, log: &[Value]) {
        let text = |line: &Value, key: &str| line.get(key).and_then(Value::as_str).map(str::to_owned);
        let refused: BTreeSet<String> = log
            .iter()
            .filter(|l| l["what"] == "end" && l["how"] == "refused")
            .filter_map(|l| text(l, "name"))
            .collect();
        for line in log {
            match (text(line, "what").as_deref(), text(line, "intake"), text(line, "name"), text(line, "key")) {
                (Some("spawn"), Some(key), Some(name), _) if !refused.contains(&name) => {
                    self.spawned.entry(key).or_default().insert(name);
                }
                (Some("intake"), _, _, Some(key))
                    if matches!(line["how"].as_str(), Some("claimed" | "expired" | "removed")) =>
                {
                    self.ended_lines.insert(key);
                }
                _ => {}
            }
        }
        for (name, state) in lease::LeaseDir::new(paths.lease_dir()).list() {
            if let lease::LeaseState::Present(lease) = state
                && let Some(key) = lease.raw().get("intake").and_then(Value::as_str)
            {
                self.leased.entry(key.to_owned()).or_default().insert(name.to_string());
            }
        }
        if let Some(doc) = registry::read(paths.registry()).document_or_empty() {
            self.entries = doc.names().map(str::to_owned).collect();
        }
    }

    /// The sessions whose spawn line (not taken back) or lease carries `key` as its intake key.
    fn sessions_of(&self, key: &str) -> BTreeSet<&str> {
        let spawned = self.spawned.get(key).into_iter().flatten();
        spawned.chain(self.leased.get(key).into_iter().flatten()).map(String::as_str).collect()
    }

    fn has_trace(&self, name: &str) -> bool {
        let carries = |map: &BTreeMap<String, BTreeSet<String>>| map.values().any(|names| names.contains(name));
        carries(&self.spawned) || carries(&self.leased) || self.entries.contains(name)
    }
}

/// What became of one acknowledged key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    Queued,
    Admitted,
    Ended,
    Lost(String),
    Twice(String),
}

impl QueueState {
    /// The fate of `key`, by the rules of the module comment.
    pub fn fate(&self, key: &str) -> Fate {
        let records = self.records.get(key).map_or(&[][..], Vec::as_slice);
        let stone = self.tombstones.get(key);
        match (records, stone) {
            ([_, _, ..], _) => Fate::Twice(format!("{key} is in {} records: {}", records.len(), records.join(", "))),
            ([record], Some(stone)) => Fate::Twice(format!("{key} is queued ({record}) and {}", stone.how.as_str())),
            ([_], None) => Fate::Queued,
            ([], Some(stone)) if stone.how == How::Admitted => match stone.name.as_deref() {
                Some(name) if self.has_trace(name) => Fate::Admitted,
                name => Fate::Lost(format!("{key}'s tombstone says admitted as {name:?}, which left no trace")),
            },
            ([], Some(stone)) => match self.sessions_of(key) {
                names if names.is_empty() => Fate::Ended,
                names => Fate::Twice(format!("{key} ended {} and is carried by {names:?}", stone.how.as_str())),
            },
            ([], None) if self.ended_lines.contains(key) => Fate::Ended,
            ([], None) => Fate::Lost(format!("{key} is neither queued nor admitted nor ended")),
        }
    }

    /// Keys that two sessions carry (spawn lines not taken back, or leases).
    pub fn twice_admitted(&self) -> Vec<String> {
        let twice = |map: &BTreeMap<String, BTreeSet<String>>, what: &str| -> Vec<String> {
            map.iter()
                .filter(|(_, names)| names.len() > 1)
                .map(|(key, names)| format!("{key} is carried by the {what} of {names:?}"))
                .collect()
        };
        let mut out = twice(&self.spawned, "spawn lines");
        out.extend(twice(&self.leased, "leases"));
        out
    }
}

/// The queue box: parse, one tick, then every acknowledged key's fate.
pub fn check_queue_box(world: &World, acks: &[QueueAck], lazyfs: Option<u32>, found: &mut Findings) {
    let qbox = &world.queue;
    let before = QueueState::read(&qbox.paths, &super::hook_log(&qbox.paths.hook_log(), found), found);
    found.queue.intents = before.intents.len() as u64;
    found.queue.end_intents = before.ends.len() as u64;
    match tick_once(world, lazyfs) {
        Ok(log) => {
            found.queue.finished = log.matches("finished the interrupted admission").count() as u64;
            found.queue.taken_back = log.matches("took back the interrupted admission").count() as u64;
            found.queue.ends_finished = log.matches("finished the interrupted end").count() as u64;
        }
        Err(why) => found.queue.broken.push(format!("the tick after the remount did not run: {why}")),
    }
    let log = super::hook_log(&qbox.paths.hook_log(), found);
    let after = QueueState::read(&qbox.paths, &log, found);
    for (intent, what) in after.intents.iter().map(|i| (i, "admission")).chain(after.ends.iter().map(|i| (i, "end"))) {
        found.queue.unresolved += 1;
        found.queue.broken.push(format!("the {what} intent {intent} is still there after a tick (IN-12)"));
    }
    judge(&after, acks, Kind::Queue, found);
}

/// Every acknowledged key's fate, counted; a lost one is a lost update of `kind`, a doubled one broken.
pub fn judge(state: &QueueState, acks: &[QueueAck], kind: Kind, found: &mut Findings) {
    for ack in acks {
        *found.queue.acked.entry(ack.accepted.label()).or_default() += 1;
    }
    let keys: BTreeSet<&str> = acks.iter().map(|a| a.key.as_str()).collect();
    for key in keys {
        match state.fate(key) {
            Fate::Queued => found.queue.queued += 1,
            Fate::Admitted => found.queue.admitted += 1,
            Fate::Ended => found.queue.ended += 1,
            Fate::Lost(why) => found.lose(kind, 1, || why),
            Fate::Twice(why) => {
                found.queue.duplicated += 1;
                found.queue.broken.push(why);
            }
        }
    }
    for why in state.twice_admitted() {
        found.queue.duplicated += 1;
        found.queue.broken.push(why);
    }
}

/// The main box's batches that queued (no supervisor runs there: the record, or an admission it got that far
/// with, must be there as the power loss left it).
pub fn check_main_box_queued(world: &World, log: &[Value], acks: &[QueueAck], found: &mut Findings) {
    if acks.is_empty() {
        return;
    }
    let state = QueueState::read(&world.paths, log, found);
    for ack in acks {
        let admitted = state.spawned.contains_key(&ack.key) || state.leased.contains_key(&ack.key);
        if !admitted && !matches!(state.fate(&ack.key), Fate::Queued | Fate::Admitted | Fate::Ended) {
            found.lose(Kind::Spawn, 1, || {
                format!("{} was acknowledged as {} and is gone", ack.key, ack.accepted.label())
            });
        }
    }
}

/// `agent-box-supervisor --once` on the queue box, on a tmux server of its own; its stderr. Every process of the
/// box is killed afterwards (the tick may have started panes).
fn tick_once(world: &World, lazyfs: Option<u32>) -> Result<String, String> {
    let qbox = &world.queue;
    let mut server = qbox.start_server().map_err(|e| e.to_string())?;
    let log = fs::File::create(qbox.once_log()).map_err(|e| e.to_string())?;
    let mut cmd = qbox.product("agent-box-supervisor");
    cmd.arg("--once").stderr(Stdio::from(log));
    let outcome = cmd.spawn().map_err(|e| e.to_string()).and_then(|child| wait_bounded(child, ONCE_LIMIT));
    let _ = server.kill();
    let _ = server.wait();
    qbox.kill_strays(lazyfs);
    outcome?;
    fs::read_to_string(qbox.once_log()).map_err(|e| e.to_string())
}

fn wait_bounded(mut child: Child, limit: Duration) -> Result<(), String> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("agent-box-supervisor --once exited with {status}")),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("agent-box-supervisor --once took longer than {} s", limit.as_secs()));
            }
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, String> {
    let bytes = fs::read(path).map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| e.to_string())
}

/// `(stem, extension)` of the files in `dir` (temp files of a killed writer are `<name>.tmp-<8>`: their extension
/// is neither `json` nor `admit`); a missing directory has none.
fn names(dir: &Path, found: &mut Findings) -> Vec<(String, String)> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Vec::new(),
        Err(err) => {
            found.corrupt.push(format!("{} cannot be listed: {err}", dir.display()));
            return Vec::new();
        }
    };
    let mut out: Vec<(String, String)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.rsplit_once('.')).map(|(s, x)| (s.into(), x.into())))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::super::super::ledger::Accepted;
    use super::*;

    fn stone(key: &str, how: How, name: Option<&str>) -> Tombstone {
        Tombstone {
            key: key.into(),
            assignment: "a".into(),
            how,
            at: "t".into(),
            accepted_at: "t".into(),
            name: name.map(str::to_owned),
        }
    }

    fn state() -> QueueState {
        let mut state = QueueState::default();
        state.records.insert("q".into(), vec!["r1".into()]);
        state.records.insert("both".into(), vec!["r1".into()]);
        state.records.insert("two".into(), vec!["r1".into(), "r2".into()]);
        for (key, how, name) in [
            ("adm", How::Admitted, Some("hook-a")),
            ("ghost", How::Admitted, Some("hook-gone")),
            ("exp", How::Expired, None),
            ("both", How::Admitted, Some("hook-a")),
        ] {
            state.tombstones.insert(key.into(), stone(key, how, name));
        }
        state.spawned.entry("adm".into()).or_default().insert("hook-a".into());
        state.tombstones.insert("ran".into(), stone("ran", How::Expired, None));
        state.leased.entry("ran".into()).or_default().insert("hook-r".into());
        state.ended_lines.insert("line".into());
        state
    }

    #[test]
    fn each_key_is_queued_admitted_ended_lost_or_twice() {
        let state = state();
        assert_eq!(state.fate("q"), Fate::Queued);
        assert_eq!(state.fate("adm"), Fate::Admitted);
        assert_eq!(state.fate("exp"), Fate::Ended);
        assert_eq!(state.fate("line"), Fate::Ended, "an end line without a tombstone yet");
        assert!(matches!(state.fate("ghost"), Fate::Lost(_)), "admitted as a session that left no trace");
        assert!(matches!(state.fate("nothing"), Fate::Lost(_)));
        assert!(matches!(state.fate("two"), Fate::Twice(_)));
        assert!(matches!(state.fate("both"), Fate::Twice(_)), "queued and admitted");
        assert!(matches!(state.fate("ran"), Fate::Twice(_)), "expired, and a session carries it");
    }

    #[test]
    fn a_key_of_two_sessions_is_twice_unless_one_was_taken_back() {
        let spawn = |name: &str| serde_json::json!({"what": "spawn", "name": name, "intake": "k"});
        let mut state = QueueState::default();
        let dir = tempfile::tempdir().unwrap();
        let paths = registry::Paths::for_root(dir.path(), "agent");
        let refused = serde_json::json!({"what": "end", "how": "refused", "name": "hook-a"});
        state.read_sessions(&paths, &[spawn("hook-a"), refused, spawn("hook-b")]);
        assert!(state.twice_admitted().is_empty(), "{:?}", state.spawned);
        let mut state = QueueState::default();
        state.read_sessions(&paths, &[spawn("hook-a"), spawn("hook-b")]);
        assert_eq!(state.twice_admitted().len(), 1);
    }

    #[test]
    fn acknowledgements_are_counted_by_what_they_said_and_keys_once() {
        let acks = [
            QueueAck { key: "q".into(), accepted: Accepted::Queued },
            QueueAck { key: "q".into(), accepted: Accepted::Duplicate },
            QueueAck { key: "nothing".into(), accepted: Accepted::Coalesced },
        ];
        let mut found = Findings::default();
        judge(&state(), &acks, Kind::Queue, &mut found);
        assert_eq!((found.queue.queued, found.queue.duplicated), (1, 0));
        assert_eq!(found.lost.get(&Kind::Queue), Some(&1));
        assert_eq!(found.queue.acked.get("duplicate"), Some(&1));
    }
}
