//! The checks of spec 90 Q-7.2, run after every writer ends (killed or not), and the temp-file census of Q-7.3.
//! Each check counts into a tally and describes what it found, so a failure can be reported with the iteration
//! that caused it.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_box_tests::HeldLock;
use lease::Lease;
use registry::Document;
use serde_json::Value;

use super::super::world::BenchRoot;
use super::writers::COUNTER;

/// How long a lock found held after its writer died is watched, to tell a transient holder from a leaked lock.
pub const HELD_LOCK_GRACE_MS: u64 = 100;

/// Counts of what the checks found.
#[derive(Debug, Default)]
pub struct Tally {
    pub killed: usize,
    pub invalid_registry: usize,
    pub counter_off: usize,
    pub held_locks: usize,
    /// Of `held_locks`, those free again within [`HELD_LOCK_GRACE_MS`]: a transient holder, not a leaked lock.
    pub held_locks_freed_soon: usize,
    pub torn_leases: usize,
    pub bad_log_lines: usize,
    /// Distinct unterminated last hook-log lines seen: how often the fresh-line rule of the next append was put
    /// to the test.
    pub torn_tails: usize,
    pub unexpected_exits: usize,
    pub lost_results: usize,
}

/// What the checks remember between runs.
#[derive(Debug, Default)]
pub struct Checks {
    /// The counter value every check so far agrees on.
    counter: u64,
    /// Unterminated last hook-log lines seen so far: once the next append starts a fresh line, such a torn line
    /// stays unparseable in the middle of the file, and that is allowed (20 LS-8.5).
    torn_tails: HashSet<String>,
    /// Unparseable lines and torn leases already counted, so a defect left in place is counted once.
    reported: HashSet<String>,
    pub tally: Tally,
}

impl Checks {
    /// Q-7.2 after a run: registry Valid, counter within [committed, committed + 1], no lock held, leases Valid
    /// or absent, hook-log lines parse except a torn last one. Returns the registry (when Valid) and one line per
    /// defect found.
    pub fn after_run(&mut self, root: &BenchRoot, committed: Option<u64>) -> (Option<Document>, Vec<String>) {
        let mut found = Vec::new();
        let doc = fs::read(root.paths.registry()).ok().and_then(|b| Document::parse(&b).ok());
        match &doc {
            Some(doc) => self.check_counter(doc, committed, &mut found),
            None => {
                self.tally.invalid_registry += 1;
                found.push(format!("the registry {} is not Valid", root.paths.registry().display()));
            }
        }
        for lock in lock_files(root).iter().filter(|l| l.exists() && !lock_is_free(l)) {
            self.tally.held_locks += 1;
            found.push(self.held_lock(lock));
        }
        self.check_leases(&root.paths.lease_dir(), &mut found);
        self.check_hook_log(&root.paths.hook_log(), &mut found);
        (doc, found)
    }

    /// Describes a lock that outlived its writer: who has the file open right now (a child caught between fork
    /// and exec still shares the dead writer's open file description), and whether it frees itself soon after.
    /// It stays counted either way: Q-7.2 asks for a free lock right after the writer died.
    fn held_lock(&mut self, lock: &Path) -> String {
        let holders = super::super::procfs::processes_with_open(lock);
        let holders =
            if holders.is_empty() { "no process has it open any more".to_owned() } else { holders.join(", ") };
        let freed = (1..=HELD_LOCK_GRACE_MS).find(|_| {
            std::thread::sleep(Duration::from_millis(1));
            lock_is_free(lock)
        });
        let after = match freed {
            Some(ms) => {
                self.tally.held_locks_freed_soon += 1;
                format!("free again within {ms} ms")
            }
            None => format!("still held after {HELD_LOCK_GRACE_MS} ms"),
        };
        format!("{} is still locked right after the writer was reaped; open in: {holders}; {after}", lock.display())
    }

    fn check_counter(&mut self, doc: &Document, committed: Option<u64>, found: &mut Vec<String>) {
        let value = doc.entry(COUNTER).and_then(|e| e.get("count")).and_then(Value::as_u64).unwrap_or(0);
        let floor = committed.unwrap_or(0).max(self.counter);
        if value < floor || value > floor + 1 {
            self.tally.counter_off += 1;
            found.push(format!("counter {value}, expected {floor} or {}", floor + 1));
        }
        self.counter = value.max(floor);
    }

    fn check_leases(&mut self, dir: &Path, found: &mut Vec<String>) {
        for (path, bytes) in torn_leases(dir) {
            let text = format!("torn lease {}: {:?}", path.display(), String::from_utf8_lossy(&bytes));
            if self.reported.insert(text.clone()) {
                self.tally.torn_leases += 1;
                found.push(text);
            }
        }
    }

    fn check_hook_log(&mut self, path: &Path, found: &mut Vec<String>) {
        let text = fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        let (complete, tail) = match text.rfind('\n') {
            Some(end) => (&text[..end], &text[end + 1..]),
            None => ("", text.as_str()),
        };
        for line in complete.lines().filter(|l| !l.is_empty()) {
            let parses = serde_json::from_str::<Value>(line).is_ok();
            if !parses && !self.torn_tails.contains(line) && self.reported.insert(line.to_owned()) {
                self.tally.bad_log_lines += 1;
                found.push(format!("hook-log line does not parse (and is no earlier torn tail): {line:?}"));
            }
        }
        if !tail.is_empty() && self.torn_tails.insert(tail.to_owned()) {
            self.tally.torn_tails += 1;
        }
    }
}

/// Every lock file of Q-7.2: the registry's, the lease directory's, the hook log's and the refusal record's.
fn lock_files(root: &BenchRoot) -> [PathBuf; 4] {
    let with_lock = |p: PathBuf| {
        let mut os = p.into_os_string();
        os.push(".lock");
        PathBuf::from(os)
    };
    [
        with_lock(root.paths.registry().to_path_buf()),
        root.paths.lease_dir().join(".lock"),
        with_lock(root.paths.hook_log()),
        with_lock(root.paths.refusal_record()),
    ]
}

/// A lock dies with its process: a fresh non-blocking flock must succeed (Q-7.2).
fn lock_is_free(lock: &Path) -> bool {
    HeldLock::acquire(lock, Duration::ZERO).is_ok()
}

/// Lease files present but not a Valid lease, with their bytes.
fn torn_leases(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".json")))
        .map(|e| (e.path(), fs::read(e.path()).unwrap_or_default()))
        .filter(|(_, bytes)| Lease::parse(bytes).is_none())
        .collect()
}

/// Every `<file>.tmp-<8 [a-z0-9]>` next to the registry, the hook log and the refusal record, and in the lease
/// directory: where the supervisor's temp sweep looks (Q-7.3).
pub fn temp_files(root: &BenchRoot) -> Vec<PathBuf> {
    let mut found = registry::atomic::temp_leftovers_of(root.paths.registry());
    found.extend(registry::atomic::temp_leftovers_of(&root.paths.hook_log()));
    found.extend(registry::atomic::temp_leftovers_of(&root.paths.refusal_record()));
    found.extend(registry::atomic::temp_leftovers_in(&root.paths.lease_dir()));
    found
}

/// Temps of claim filters in the receiver's state directory: webhook-spawn writes them, and Q-7.3's list (so the
/// supervisor's sweep) does not include that directory; reported, not judged.
pub fn filter_temp_files(root: &BenchRoot) -> Vec<PathBuf> {
    registry::atomic::temp_leftovers_in(root.paths.webhook_state_dir())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base::SessionName;
    use lease::LeaseDir;

    #[test]
    fn a_lock_held_elsewhere_is_not_free() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("x.lock");
        let held = HeldLock::acquire(&lock, Duration::ZERO).unwrap();
        assert!(!lock_is_free(&lock));
        drop(held);
        assert!(lock_is_free(&lock));
    }

    #[test]
    fn a_held_lock_is_described_and_a_transient_one_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("x.lock");
        let held = HeldLock::acquire(&lock, Duration::ZERO).unwrap();
        let mut checks = Checks::default();
        let text = checks.held_lock(&lock);
        assert!(text.contains(&format!("pid {}", std::process::id())) && text.contains("still held after"), "{text}");
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            drop(held);
        });
        let text = checks.held_lock(&lock);
        release.join().unwrap();
        assert!(text.contains("free again within"), "{text}");
        assert_eq!(checks.tally.held_locks_freed_soon, 1);
    }

    #[test]
    fn torn_and_valid_leases() {
        let dir = tempfile::tempdir().unwrap();
        let leases = LeaseDir::new(dir.path().to_path_buf());
        leases.create(&SessionName::parse("hook-a").unwrap(), "t", None, None).unwrap();
        assert!(torn_leases(dir.path()).is_empty());
        fs::write(dir.path().join("hook-b.json"), b"{\"gen\":").unwrap();
        assert_eq!(torn_leases(dir.path()).len(), 1);
    }

    #[test]
    fn a_torn_tail_is_allowed_only_when_the_next_append_starts_a_fresh_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("hook-sessions.jsonl");
        let mut checks = Checks::default();
        let mut found = Vec::new();
        fs::write(&log, "{\"a\":1}\n{\"b\":").unwrap();
        checks.check_hook_log(&log, &mut found);
        fs::write(&log, "{\"a\":1}\n{\"b\":\n{\"c\":3}\n").unwrap();
        checks.check_hook_log(&log, &mut found);
        assert!(found.is_empty(), "{found:?}");
        fs::write(&log, "{\"a\":1}\n{\"b\":\n{\"c\":3}\n{\"d\":{\"e\":5}\n").unwrap();
        checks.check_hook_log(&log, &mut found);
        assert_eq!(checks.tally.bad_log_lines, 1, "{found:?}");
    }

    #[test]
    fn the_counter_may_hold_one_uncommitted_update() {
        let mut checks = Checks::default();
        let mut found = Vec::new();
        let doc =
            |n: u64| Document::parse(format!(r#"{{"sessions":{{"{COUNTER}":{{"count":{n}}}}}}}"#).as_bytes()).unwrap();
        checks.check_counter(&doc(3), Some(2), &mut found);
        checks.check_counter(&doc(3), None, &mut found);
        assert!(found.is_empty(), "{found:?}");
        checks.check_counter(&doc(2), None, &mut found);
        assert_eq!(checks.tally.counter_off, 1);
    }

    #[test]
    fn temp_files_are_found_where_the_sweep_looks() {
        let dir = tempfile::tempdir().unwrap();
        let root = BenchRoot::at(dir.path());
        root.reset().unwrap();
        fs::create_dir_all(root.paths.lease_dir()).unwrap();
        fs::create_dir_all(root.paths.webhook_state_dir()).unwrap();
        fs::write(registry::atomic::temp_path_for(root.paths.registry()), b"").unwrap();
        fs::write(root.paths.lease_dir().join("hook-a.json.tmp-abcd1234"), b"").unwrap();
        fs::write(root.paths.state_dir().join("other.tmp-abcd1234"), b"").unwrap();
        fs::write(root.paths.webhook_state_dir().join("filter.agent-hook-a.json.tmp-abcd1234"), b"").unwrap();
        assert_eq!(temp_files(&root).len(), 2);
        assert_eq!(filter_temp_files(&root).len(), 1);
    }
}
