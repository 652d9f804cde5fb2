//! Black-box tests of the lease crate: the edge cases of 20-lease §11, with real files, locks and processes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use agent_box_tests::{HeldLock, privilege};
use base::SessionName;
use lease::*;
use registry::Document;
use serde_json::{Value, json};

const T0: i64 = 1_764_424_991; // 2025-11-29T14:03:11Z
fn at_t0() -> i64 {
    T0
}
fn at_t0_plus_59() -> i64 {
    T0 + 59
}
fn at_t0_plus_61() -> i64 {
    T0 + 61
}
fn at_t0_plus_100() -> i64 {
    T0 + 100
}

struct Fixture {
    _root: tempfile::TempDir,
    state: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let state = root.path().join("state");
        fs::create_dir(&state).unwrap();
        Self { _root: root, state }
    }
    fn dir(&self) -> LeaseDir {
        LeaseDir::new(self.state.join("lease"))
    }
    fn log(&self) -> HookLog {
        HookLog::new(self.state.join("hook-sessions.jsonl"))
    }
    fn log_lines(&self) -> Vec<Value> {
        fs::read_to_string(self.state.join("hook-sessions.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
    fn lease_file(&self, name: &str) -> PathBuf {
        self.state.join("lease").join(format!("{name}.json"))
    }
}

fn name(text: &str) -> SessionName {
    SessionName::parse(text).unwrap()
}

fn example(bin: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.parent().unwrap().parent().unwrap().join("examples").join(bin);
    if !path.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "agent-box-lease", "--example", bin])
            .status()
            .unwrap();
        assert!(status.success(), "could not build example {bin}");
    }
    path
}

fn set_mtime_back(path: &Path, secs: u64) {
    let file = fs::File::options().append(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(secs)).unwrap();
}

fn fds_open_on(path: &Path) -> usize {
    let target = fs::canonicalize(path).unwrap();
    fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| fs::read_link(e.unwrap().path()).ok())
        .filter(|p| *p == target)
        .count()
}

#[test]
fn create_writes_the_documented_keys_modes_and_a_fresh_gen() {
    let fx = Fixture::new();
    let leases = fx.dir().with_clock(at_t0);
    let g1 = leases.create(&name("hook-a"), "github:acme/widgets", Some("4242"), None).unwrap();
    let g2 = leases.create(&name("hook-b"), "github:acme/widgets", Some("n/a"), None).unwrap();
    assert_ne!(g1, g2);
    let lease: serde_json::Map<String, Value> =
        serde_json::from_slice(&fs::read(fx.lease_file("hook-a")).unwrap()).unwrap();
    let keys: Vec<_> = lease.keys().cloned().collect();
    assert_eq!(keys, ["//", "topic", "object", "claimedAt", "gen", "outcome", "lastSeenAt"]);
    assert_eq!(lease["object"], json!("4242"));
    assert_eq!(lease["claimedAt"], json!("2025-11-29T14:03:11Z"));
    assert_eq!(lease["gen"], json!(g1.as_str()));
    assert_eq!((&lease["outcome"], &lease["lastSeenAt"]), (&Value::Null, &Value::Null));
    let b = LeaseDir::new(fx.state.join("lease"));
    assert!(matches!(b.read(&name("hook-b")), LeaseState::Present(l) if l.object().is_none()));
    let mode = |p: &Path| fs::metadata(p).unwrap().mode() & 0o777;
    assert_eq!(mode(&fx.state.join("lease")), 0o700);
    assert_eq!(mode(&fx.lease_file("hook-a")), 0o600);
    assert_eq!(mode(&fx.state.join("lease/.lock")), 0o600);
}

#[test]
fn ls_11_1_gen_mismatch_interleaving_changes_nothing() {
    let fx = Fixture::new();
    let leases = fx.dir();
    let hook = name("hook-a");
    let g1 = leases.create(&hook, "github:x", None, None).unwrap();
    let lock_file = fx.state.join("lease/.lock");
    let held = HeldLock::acquire(&lock_file, Duration::ZERO).unwrap();
    let worker = {
        let leases = leases.clone();
        let hook = hook.clone();
        std::thread::spawn(move || leases.mark_outcome(&hook, &Outcome::Died(1), &Expect::Gen(g1)))
    };
    // Once the worker has the lock file open it is polling for the lock: any read it does is now under it.
    agent_box_tests::wait_until("the worker to wait for the lease lock", || fds_open_on(&lock_file) >= 2);
    let g2_doc = br#"{"topic":"github:x","gen":"11111111-2222-4333-8444-555555555555","outcome":null}"#;
    let staged = fx.state.join("lease/staged");
    fs::write(&staged, g2_doc).unwrap();
    fs::rename(&staged, fx.lease_file("hook-a")).unwrap();
    drop(held);
    assert_eq!(worker.join().unwrap().unwrap(), Changed::Stale);
    assert_eq!(fs::read(fx.lease_file("hook-a")).unwrap(), g2_doc);
}

#[test]
fn ls_11_3_first_outcome_wins() {
    let fx = Fixture::new();
    let hook = name("hook-a");
    let g = fx.dir().with_clock(at_t0).create(&hook, "github:x", None, None).unwrap();
    let expect = Expect::Gen(g);
    assert_eq!(fx.dir().with_clock(at_t0).mark_outcome(&hook, &Outcome::Vanished, &expect).unwrap(), Changed::Written);
    let later = fx.dir().with_clock(at_t0_plus_100);
    assert_eq!(later.mark_outcome(&hook, &Outcome::Died(1), &expect).unwrap(), Changed::AlreadySet);
    let LeaseState::Present(lease) = later.read(&hook) else { panic!("lease gone") };
    assert_eq!(lease.outcome(), Some(Outcome::Vanished));
    assert_eq!(lease.ended_at(), Some("2025-11-29T14:03:11Z"));
    assert_eq!(lease.raw().keys().next_back().map(String::as_str), Some("endedAt"));
}

#[test]
fn ls_11_4_half_written_or_garbage_lease() {
    for garbage in [&b"{\"topic\":"[..], b"[]", b""] {
        let fx = Fixture::new();
        let leases = fx.dir();
        let hook = name("hook-g");
        leases.create(&name("hook-other"), "t", None, None).unwrap();
        fs::write(fx.lease_file("hook-g"), garbage).unwrap();
        let other_gen = Expect::Gen(Gen::random());
        assert_eq!(leases.outcome(&hook), None);
        assert_eq!(leases.read(&hook), LeaseState::Unreadable);
        assert_eq!(leases.mark_outcome(&hook, &Outcome::Vanished, &Expect::Any).unwrap(), Changed::Unreadable);
        assert_eq!(leases.heartbeat(&hook, &Expect::Any).unwrap(), Changed::Unreadable);
        assert_eq!(leases.finish(&hook, &EndHow::Exited, &other_gen, Some(&fx.log())).unwrap(), Changed::Unverifiable);
        assert_eq!(leases.record_death(&hook, 2, &other_gen, Some(&fx.log())).unwrap(), Changed::Unverifiable);
        assert_eq!(fs::read(fx.lease_file("hook-g")).unwrap(), garbage, "byte-identical");
        assert!(fx.log_lines().is_empty(), "nothing logged for an unverifiable report");
        assert_eq!(leases.record_death(&hook, 2, &Expect::Any, Some(&fx.log())).unwrap(), Changed::Unreadable);
        assert_eq!(leases.finish(&hook, &EndHow::Exited, &Expect::Any, Some(&fx.log())).unwrap(), Changed::Cleared);
        assert!(!fx.lease_file("hook-g").exists());
        let lines = fx.log_lines();
        assert_eq!(lines.len(), 2);
        for line in &lines {
            assert_eq!((&line["lifeSeconds"], &line["outcome"]), (&Value::Null, &Value::Null));
        }
        assert_eq!((&lines[0]["how"], &lines[1]["how"]), (&json!("died:2"), &json!("exited")));
    }
}

#[test]
fn garbage_lease_is_swept_after_the_grace() {
    let fx = Fixture::new();
    let leases = fx.dir();
    leases.create(&name("hook-other"), "t", None, None).unwrap();
    fs::write(fx.lease_file("hook-g"), b"{\"topic\":").unwrap();
    set_mtime_back(&fx.lease_file("hook-g"), 31);
    let listed = ListedNames::from_document(&Document::parse(br#"{"sessions":{"hook-other":{}}}"#).unwrap());
    let report = leases.sweep(&listed, Some(&fx.log()));
    assert_eq!(report.swept, vec![name("hook-g")]);
    assert_eq!(fx.log_lines()[0]["how"], json!("swept"));
}

#[test]
fn ls_11_5_missing_directory_is_never_created_except_by_create() {
    let fx = Fixture::new();
    let leases = fx.dir();
    let n = name("main");
    assert_eq!(leases.read(&n), LeaseState::Absent);
    assert!(leases.list().is_empty());
    assert_eq!(leases.outcome(&n), None);
    assert_eq!(leases.mark_outcome(&n, &Outcome::Died(1), &Expect::Any).unwrap(), Changed::Absent);
    assert_eq!(leases.finish(&n, &EndHow::Exited, &Expect::Any, None).unwrap(), Changed::NothingToClear);
    assert_eq!(leases.heartbeat(&n, &Expect::Any).unwrap(), Changed::Absent);
    assert_eq!(leases.record_death(&n, 1, &Expect::Any, None).unwrap(), Changed::Absent);
    assert!(leases.sweep(&ListedNames::default(), None).swept.is_empty());
    assert!(!fx.state.join("lease").exists());
}

#[test]
fn ls_11_6_read_only_directory_changes_nothing_even_as_root() {
    let fx = Fixture::new();
    let leases = fx.dir();
    let hook = name("hook-a");
    leases.create(&hook, "t", None, None).unwrap();
    let before = fs::read(fx.lease_file("hook-a")).unwrap();
    let dir = fx.state.join("lease");
    let unprivileged = |op: &str| -> (bool, String) {
        let mut cmd = Command::new(example("leasectl"));
        cmd.arg(&dir).arg(fx.state.join("hook-sessions.jsonl")).args([op, "hook-a"]);
        let out = privilege::unprivileged(&cmd).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    std::os::unix::fs::chown(fx.state.as_path(), Some(65534), Some(65534)).unwrap();
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    std::os::unix::fs::chown(dir.join(".lock"), Some(65534), Some(65534)).unwrap();
    std::os::unix::fs::chown(fx.lease_file("hook-a"), Some(65534), Some(65534)).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o500)).unwrap();
    let (ok, out) = unprivileged("died");
    assert!(!ok && out.starts_with("error:"), "mark_outcome must fail: {out}");
    assert_eq!(fs::read(fx.lease_file("hook-a")).unwrap(), before);
    let (ok, out) = unprivileged("create");
    assert!(!ok, "create must fail: {out}");
    assert!(registry::atomic::temp_leftovers_in(&dir).is_empty(), "no temp left");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
}

#[test]
fn ls_11_7_clear_is_idempotent() {
    let fx = Fixture::new();
    let leases = fx.dir();
    let hook = name("hook-a");
    leases.create(&hook, "t", None, None).unwrap();
    assert_eq!(leases.finish(&hook, &EndHow::Rm, &Expect::Any, None).unwrap(), Changed::Cleared);
    assert_eq!(leases.finish(&hook, &EndHow::Rm, &Expect::Any, None).unwrap(), Changed::NothingToClear);
    assert_eq!(leases.clear(&name("never"), &Expect::Any).unwrap(), Changed::NothingToClear);
}

#[test]
fn ls_11_8_end_record_is_written_before_the_delete() {
    let fx = Fixture::new();
    let hook = name("hook-a");
    fx.dir().with_clock(at_t0).create(&hook, "t", None, None).unwrap();
    fx.dir().mark_outcome(&hook, &Outcome::Died(1), &Expect::Any).unwrap();
    let leases = fx.dir().with_clock(at_t0_plus_100);
    let log = fx.log().with_clock(at_t0_plus_100);
    assert_eq!(leases.finish(&hook, &EndHow::Rm, &Expect::Any, Some(&log)).unwrap(), Changed::Cleared);
    let last = fx.log_lines().pop().unwrap();
    assert_eq!(
        last,
        json!({"at": "2025-11-29T14:04:51Z", "what": "end", "name": "hook-a", "how": "rm",
        "lifeSeconds": 100, "outcome": "died:1", "notified": false})
    );
    let raw = fs::read_to_string(fx.state.join("hook-sessions.jsonl")).unwrap();
    assert!(raw.ends_with("{\"at\":\"2025-11-29T14:04:51Z\",\"what\":\"end\",\"name\":\"hook-a\",\"how\":\"rm\",\"lifeSeconds\":100,\"outcome\":\"died:1\",\"notified\":false}\n"));
}

#[test]
fn ls_11_8_busy_hook_log_skips_the_line_but_still_deletes() {
    let fx = Fixture::new();
    let hook = name("hook-a");
    fx.dir().create(&hook, "t", None, None).unwrap();
    let held = HeldLock::acquire(&fx.state.join("hook-sessions.jsonl.lock"), Duration::ZERO).unwrap();
    let start = Instant::now();
    assert_eq!(fx.dir().finish(&hook, &EndHow::Rm, &Expect::Any, Some(&fx.log())).unwrap(), Changed::Cleared);
    assert!(start.elapsed() < Duration::from_secs(10), "liveness: the busy log lock is bounded");
    drop(held);
    assert!(!fx.lease_file("hook-a").exists());
    assert!(fx.log_lines().is_empty(), "never appended unlocked");
}

#[test]
fn ls_11_9_legacy_lease() {
    let fx = Fixture::new();
    fs::create_dir(fx.state.join("lease")).unwrap();
    let legacy = br#"{"//":"old","topic":"github:x","zz":1,"object":null,"claimedAt":"2025-11-28T09:00:00Z","gen":null,"outcome":null}"#;
    fs::write(fx.lease_file("hook-old"), legacy).unwrap();
    let leases = fx.dir().with_clock(at_t0);
    let hook = name("hook-old");
    assert_eq!(leases.mark_outcome(&hook, &Outcome::Vanished, &Expect::Gen(Gen::random())).unwrap(), Changed::Stale);
    assert_eq!(leases.heartbeat(&hook, &Expect::Any).unwrap(), Changed::Touched);
    let LeaseState::Present(lease) = leases.read(&hook) else { panic!() };
    let keys: Vec<_> = lease.raw().keys().cloned().collect();
    assert_eq!(keys, ["//", "topic", "zz", "object", "claimedAt", "gen", "outcome", "lastSeenAt"]);
    assert_eq!(leases.mark_outcome(&hook, &Outcome::Vanished, &Expect::Any).unwrap(), Changed::Written);
    let LeaseState::Present(lease) = leases.read(&hook) else { panic!() };
    let keys: Vec<_> = lease.raw().keys().cloned().collect();
    assert_eq!(keys, ["//", "topic", "zz", "object", "claimedAt", "gen", "outcome", "lastSeenAt", "endedAt"]);
    assert_eq!(lease.outcome(), Some(Outcome::Vanished));
}

#[test]
fn ls_11_10_heartbeat_rules() {
    let fx = Fixture::new();
    let hook = name("hook-a");
    let g = fx.dir().with_clock(at_t0).create(&hook, "t", None, None).unwrap();
    let expect = Expect::Gen(g);
    let beat = |clock: fn() -> i64| fx.dir().with_clock(clock).heartbeat(&hook, &expect).unwrap();
    assert_eq!(beat(at_t0), Changed::Touched, "null is set");
    assert_eq!(beat(at_t0_plus_59), Changed::Fresh);
    assert_eq!(beat(at_t0_plus_61), Changed::Touched);
    let seen = || match fx.dir().read(&hook) {
        LeaseState::Present(l) => l.last_seen_at().map(str::to_owned),
        _ => None,
    };
    assert_eq!(seen().as_deref(), Some("2025-11-29T14:04:12Z"));
    assert_eq!(beat(at_t0), Changed::Touched, "a future lastSeenAt is rewritten");
    assert_eq!(fx.dir().heartbeat(&hook, &Expect::Gen(Gen::random())).unwrap(), Changed::Stale);
    fx.dir().mark_outcome(&hook, &Outcome::Vanished, &expect).unwrap();
    let frozen = fs::read(fx.lease_file("hook-a")).unwrap();
    assert_eq!(beat(at_t0_plus_100), Changed::Frozen);
    assert_eq!(fs::read(fx.lease_file("hook-a")).unwrap(), frozen);
}

#[test]
fn ls_11_11_sweep_grace_listing_and_untouchables() {
    let fx = Fixture::new();
    let leases = fx.dir();
    for n in ["hook-old", "hook-young", "hook-stopped", "hook-died"] {
        leases.create(&name(n), "t", None, None).unwrap();
    }
    set_mtime_back(&fx.lease_file("hook-old"), 31);
    set_mtime_back(&fx.lease_file("hook-young"), 29);
    set_mtime_back(&fx.lease_file("hook-stopped"), 3600);
    set_mtime_back(&fx.lease_file("hook-died"), 3600);
    let dir = fx.state.join("lease");
    fs::write(dir.join("x.json.tmp-ab12cd34"), b"t").unwrap();
    fs::write(dir.join("bad name.json"), b"{}").unwrap();
    fs::create_dir(dir.join("d.json")).unwrap();
    for p in ["x.json.tmp-ab12cd34", "bad name.json"] {
        set_mtime_back(&dir.join(p), 3600);
    }
    let doc = Document::parse(br#"{"sessions":{"hook-stopped":{"stopped":true},"hook-died":{"died":1}}}"#).unwrap();
    let report = leases.sweep(&ListedNames::from_document(&doc), Some(&fx.log()));
    assert_eq!(report.swept, vec![name("hook-old")]);
    assert!(report.error.is_none());
    let lines = fx.log_lines();
    assert_eq!(lines.len(), 1);
    assert_eq!((&lines[0]["name"], &lines[0]["how"]), (&json!("hook-old"), &json!("swept")));
    for kept in [
        "hook-young.json",
        "hook-stopped.json",
        "hook-died.json",
        ".lock",
        "x.json.tmp-ab12cd34",
        "bad name.json",
        "d.json",
    ] {
        assert!(dir.join(kept).exists(), "{kept} must survive the sweep");
    }
    let reaped = ListedNames::from_document(&doc).without(&[name("hook-stopped")]);
    assert_eq!(leases.sweep(&reaped, None).swept, vec![name("hook-stopped")]);
}

#[test]
fn temp_leftovers_are_removed_only_under_the_lock() {
    let fx = Fixture::new();
    let leases = fx.dir();
    leases.create(&name("hook-a"), "t", None, None).unwrap();
    let dir = fx.state.join("lease");
    fs::write(dir.join("hook-a.json.tmp-ab12cd34"), b"t").unwrap();
    fs::write(dir.join("hook-a.json.tmp-ABCDEFGH"), b"t").unwrap();
    let held = HeldLock::acquire(&dir.join(".lock"), Duration::ZERO).unwrap();
    assert_eq!(leases.remove_temp_leftovers(), 0, "busy lock: left for the next tick");
    drop(held);
    assert_eq!(leases.remove_temp_leftovers(), 1);
    assert!(dir.join("hook-a.json.tmp-ABCDEFGH").exists(), "not our temp name");
    assert_eq!(leases.remove_temp_leftovers(), 0);
}

#[test]
fn ls_11_12_hook_log_trims_repairs_and_fixes_mode() {
    let fx = Fixture::new();
    let path = fx.state.join("hook-sessions.jsonl");
    let old: String = (0..400).map(|i| format!("{{\"n\":{i}}}\n")).collect();
    fs::write(&path, &old).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let hook = name("hook-a");
    let record = SpawnRecord {
        name: &hook,
        topic: "github:x",
        event: "issues",
        object: Some(""),
        count: parse_count("x"),
        intake: None,
        claim: None,
    };
    assert!(matches!(fx.log().append_spawn(&record), Appended::WrittenAndTrimmed));
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 200);
    assert_eq!(lines[0], "{\"n\":201}");
    let last: Value = serde_json::from_str(lines[199]).unwrap();
    assert_eq!((&last["what"], &last["object"], &last["count"]), (&json!("spawn"), &Value::Null, &Value::Null));
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);

    fs::write(&path, b"{\"torn\":").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let record = SpawnRecord {
        name: &hook,
        topic: "github:x",
        event: "",
        object: Some("7"),
        count: parse_count("3"),
        intake: None,
        claim: None,
    };
    assert!(matches!(fx.log().append_spawn(&record), Appended::Written));
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "{\"torn\":");
    let record: Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!((&record["object"], &record["count"]), (&json!("7"), &json!(3)));
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    let tail = fx.log().tail(5).unwrap();
    assert_eq!(tail[0], LogLine::Raw("{\"torn\":".into()));
    assert!(matches!(&tail[1], LogLine::Parsed(v) if v["what"] == "spawn"));
}

#[test]
fn ls_11_12_spawn_record_shape() {
    let fx = Fixture::new();
    let hook = name("hook-acme-widgets-3fa9");
    let record = SpawnRecord {
        name: &hook,
        topic: "github:acme/widgets",
        event: "issues",
        object: Some("4242"),
        count: Some(1),
        intake: None,
        claim: None,
    };
    fx.log().with_clock(at_t0).append_spawn(&record);
    assert_eq!(
        fs::read_to_string(fx.state.join("hook-sessions.jsonl")).unwrap(),
        "{\"at\":\"2025-11-29T14:03:11Z\",\"what\":\"spawn\",\"name\":\"hook-acme-widgets-3fa9\",\"topic\":\"github:acme/widgets\",\"event\":\"issues\",\"object\":\"4242\",\"count\":1}\n"
    );
}

#[test]
fn ls_11_12_non_hook_names_get_no_end_record() {
    let fx = Fixture::new();
    let leases = fx.dir();
    let main = name("main");
    leases.create(&main, "t", None, Some(&fx.log())).unwrap();
    leases.record_death(&main, 1, &Expect::Any, Some(&fx.log())).unwrap();
    leases.finish(&main, &EndHow::Exited, &Expect::Any, Some(&fx.log())).unwrap();
    assert!(fx.log_lines().is_empty());
}

// LS13, 20 §11.12
#[test]
fn concurrent_appends_never_interleave() {
    let fx = Fixture::new();
    let path = fx.state.join("hook-sessions.jsonl");
    let children: Vec<_> = (0..16)
        .map(|i| {
            Command::new(example("append"))
                .arg(&path)
                .arg("50")
                .arg(format!("hook-w{i}"))
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut skipped = 0;
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        skipped += String::from_utf8_lossy(&out.stdout).trim().trim_start_matches("skipped ").parse::<usize>().unwrap();
    }
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() <= TRIM_ABOVE_LINES, "bounded: {} lines", lines.len());
    assert!(lines.len() >= KEEP_LINES.min(800 - skipped));
    for line in lines {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("torn line {line:?}: {e}"));
        assert_eq!(v["what"], "spawn");
    }
}

#[test]
fn ls_11_13_clock_skew_gives_null_life() {
    let fx = Fixture::new();
    fs::create_dir(fx.state.join("lease")).unwrap();
    for claimed in ["2099-01-01T00:00:00Z", "yesterday"] {
        let doc = json!({"topic": "t", "claimedAt": claimed, "gen": null, "outcome": null});
        fs::write(fx.lease_file("hook-s"), serde_json::to_vec(&doc).unwrap()).unwrap();
        fx.dir().finish(&name("hook-s"), &EndHow::Rm, &Expect::Any, Some(&fx.log())).unwrap();
        assert_eq!(fx.log_lines().pop().unwrap()["lifeSeconds"], Value::Null, "{claimed}");
    }
}

#[test]
fn ls_11_14_eight_processes_one_outcome_wins() {
    let fx = Fixture::new();
    fx.dir().create(&name("hook-a"), "t", None, None).unwrap();
    let children: Vec<_> = (1..=8)
        .map(|status| {
            Command::new(example("leasectl"))
                .arg(fx.state.join("lease"))
                .arg(fx.state.join("hook-sessions.jsonl"))
                .args(["died", "hook-a", &status.to_string()])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let results: Vec<String> =
        children.into_iter().map(|c| String::from_utf8(c.wait_with_output().unwrap().stdout).unwrap()).collect();
    assert_eq!(results.iter().filter(|r| r.trim() == "Written").count(), 1, "{results:?}");
    assert_eq!(results.iter().filter(|r| r.trim() == "AlreadySet").count(), 7, "{results:?}");
    assert!(
        matches!(fx.dir().read(&name("hook-a")), LeaseState::Present(l) if matches!(l.outcome(), Some(Outcome::Died(_))))
    );
}

#[test]
fn ls_11_15_lock_descriptors_do_not_leak_into_children() {
    let fx = Fixture::new();
    fx.dir().create(&name("hook-a"), "t", None, None).unwrap();
    let lease_lock = fx.state.join("lease/.lock");
    let log_lock = fx.state.join("hook-sessions.jsonl.lock");
    fs::write(&log_lock, b"").unwrap();
    let a = HeldLock::acquire(&lease_lock, Duration::ZERO).unwrap();
    let b = HeldLock::acquire(&log_lock, Duration::ZERO).unwrap();
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    drop((a, b));
    for lock in [&lease_lock, &log_lock] {
        let out = Command::new(example("leasectl"))
            .arg(fx.state.join("lease"))
            .arg(fx.state.join("hook-sessions.jsonl"))
            .args(["heartbeat", "hook-a"])
            .output()
            .unwrap();
        let answer = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(matches!(answer.trim(), "Touched" | "Fresh"), "{lock:?}: {answer}");
        let start = Instant::now();
        let again = HeldLock::acquire(lock, Duration::from_secs(2));
        assert!(again.is_ok() && start.elapsed() < Duration::from_secs(2), "{lock:?} still held by the child");
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

// LS14, 20 §11.16
#[test]
fn refusal_record_counts_each_refusal_and_restarts_from_garbage() {
    let fx = Fixture::new();
    let record = RefusalRecord::new(fx.state.join("webhook-spawn-refused.json")).with_clock(at_t0);
    assert_eq!(record.bump(Some(4), Some(4), "github:acme/*", "acme/widgets", "").unwrap(), 1);
    let doc = record.read().unwrap();
    let keys: Vec<_> = doc.keys().cloned().collect();
    assert_eq!(keys, ["//", "at", "firstAt", "count", "live", "max", "deferred", "topic", "key"]);
    assert_eq!(doc["firstAt"], doc["at"]);
    assert_eq!(doc["deferred"], json!(true));
    let later = RefusalRecord::new(fx.state.join("webhook-spawn-refused.json")).with_clock(at_t0_plus_100);
    assert_eq!(later.bump(None, None, "", "", "").unwrap(), 2);
    let doc = later.read().unwrap();
    assert_eq!(doc["firstAt"], json!("2025-11-29T14:03:11Z"));
    assert_eq!((&doc["live"], &doc["max"]), (&Value::Null, &Value::Null));
    assert!(!doc.contains_key("topic") && !doc.contains_key("key"));
    fs::write(record.path(), br#"{"count":"7","firstAt":5}"#).unwrap();
    assert_eq!(later.bump(None, None, "", "", "").unwrap(), 1);
    assert_eq!(later.read().unwrap()["firstAt"], json!("2025-11-29T14:04:51Z"));
    fs::write(record.path(), b"garbage").unwrap();
    assert_eq!(later.bump(None, None, "", "", "").unwrap(), 1);
    assert_eq!(fs::metadata(record.path()).unwrap().mode() & 0o777, 0o600);
    let held = HeldLock::acquire(&fx.state.join("webhook-spawn-refused.json.lock"), Duration::ZERO).unwrap();
    assert!(matches!(later.bump(None, None, "", "", ""), Err(LeaseError::Busy { .. })));
    drop(held);
}

#[test]
fn create_replacing_an_old_hook_lease_logs_swept() {
    let fx = Fixture::new();
    let hook = name("hook-a");
    fx.dir().create(&hook, "t", None, None).unwrap();
    fx.dir().create(&hook, "t", None, Some(&fx.log())).unwrap();
    let lines = fx.log_lines();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["how"], json!("swept"));
}

#[test]
fn record_death_marks_then_logs_and_respects_expectations() {
    let fx = Fixture::new();
    let hook = name("hook-a");
    let g = fx.dir().with_clock(at_t0).create(&hook, "t", None, None).unwrap();
    let before = fs::read(fx.lease_file("hook-a")).unwrap();
    assert_eq!(fx.dir().record_death(&hook, 2, &Expect::NoLease, Some(&fx.log())).unwrap(), Changed::Stale);
    assert_eq!(fx.dir().record_death(&hook, 2, &Expect::Nothing, Some(&fx.log())).unwrap(), Changed::Stale);
    assert_eq!(fx.dir().record_death(&hook, 2, &Expect::Gen(Gen::random()), Some(&fx.log())).unwrap(), Changed::Stale);
    assert_eq!(fs::read(fx.lease_file("hook-a")).unwrap(), before);
    assert!(fx.log_lines().is_empty());
    let leases = fx.dir().with_clock(at_t0_plus_100);
    let log = fx.log().with_clock(at_t0_plus_100);
    assert_eq!(leases.record_death(&hook, 2, &Expect::Gen(g), Some(&log)).unwrap(), Changed::Written);
    let line = fx.log_lines().pop().unwrap();
    assert_eq!(
        (&line["how"], &line["outcome"], &line["lifeSeconds"]),
        (&json!("died:2"), &json!("died:2"), &json!(100))
    );
    assert_eq!(leases.outcome(&hook), Some(Outcome::Died(2)));
}

// Issue 17 (docs/lives.md): the lease operations that tell one life of a name from another.

/// L-7: a crash report for gen G when no lease is there is a late one; its lease was resolved and logged.
#[test]
fn a_death_reported_for_a_gen_whose_lease_is_gone_writes_no_record() {
    let fx = Fixture::new();
    let dir = fx.dir();
    let hook = name("hook-a");
    let old = dir.create(&hook, "github:a/b", None, None).unwrap();
    dir.finish(&hook, &EndHow::Rm, &Expect::Any, Some(&fx.log())).unwrap();
    let lines = fx.log_lines().len();
    assert_eq!(dir.record_death(&hook, 1, &Expect::Gen(old), Some(&fx.log())).unwrap(), Changed::Absent);
    assert_eq!(fx.log_lines().len(), lines, "no died:1 record for a resolved life");
    assert_eq!(dir.record_death(&hook, 1, &Expect::NoLease, Some(&fx.log())).unwrap(), Changed::Absent);
    assert_eq!(fx.log_lines().len(), lines + 1, "an unleased hook session's crash is still recorded");
}

/// L-11, L-13: a restart recorded on an open lease is consumed by the next absence instead of `vanished`; the
/// absence after that is a loss again.
#[test]
fn a_recorded_restart_is_consumed_by_the_next_absence_and_only_that_one() {
    let fx = Fixture::new();
    let dir = fx.dir();
    let hook = name("hook-a");
    let g = dir.create(&hook, "github:a/b", None, None).unwrap();
    let expect = Expect::Gen(g.clone());
    let recorded = dir.record_restart(&hook, &expect, Some(&fx.log())).unwrap();
    assert_eq!(recorded, Changed::RestartRecorded { revived: false });
    let line = fx.log_lines().pop().unwrap();
    assert_eq!((&line["what"], &line["name"], &line["outcome"]), (&json!("restart"), &json!("hook-a"), &Value::Null));
    let lease: Value = serde_json::from_slice(&fs::read(fx.lease_file("hook-a")).unwrap()).unwrap();
    assert!(lease["restartedAt"].is_string() && lease["restartPending"] == json!(true), "{lease}");
    assert_eq!(dir.note_absence(&hook, &expect).unwrap(), Changed::Restarted);
    assert_eq!(dir.outcome(&hook), None, "the assignment goes on");
    assert_eq!(dir.note_absence(&hook, &expect).unwrap(), Changed::Written);
    assert_eq!(dir.outcome(&hook), Some(Outcome::Vanished));
    let other = Expect::Gen(Gen::random());
    assert_eq!(dir.record_restart(&hook, &other, None).unwrap(), Changed::Stale, "another life's restart");
}

/// L-12: a restart revives a lease the operator stopped; a crash or a loss stays.
#[test]
fn a_restart_revives_a_stopped_lease_but_never_a_crash() {
    let fx = Fixture::new();
    let dir = fx.dir();
    let hook = name("hook-a");
    dir.create(&hook, "github:a/b", None, None).unwrap();
    dir.mark_outcome(&hook, &Outcome::Stopped, &Expect::Any).unwrap();
    assert_eq!(
        dir.record_restart(&hook, &Expect::Any, Some(&fx.log())).unwrap(),
        Changed::RestartRecorded { revived: true }
    );
    let lease: Value = serde_json::from_slice(&fs::read(fx.lease_file("hook-a")).unwrap()).unwrap();
    assert_eq!(lease["outcome"], Value::Null);
    assert!(lease.get("endedAt").is_none(), "{lease}");
    assert_eq!(fx.log_lines().pop().unwrap()["outcome"], json!("stopped"));
    assert_eq!(dir.record_death(&hook, 1, &Expect::Any, None).unwrap(), Changed::Written, "what became of it");
    let before = fs::read(fx.lease_file("hook-a")).unwrap();
    assert_eq!(dir.record_restart(&hook, &Expect::Any, None).unwrap(), Changed::AlreadySet);
    assert_eq!(fs::read(fx.lease_file("hook-a")).unwrap(), before, "died:1 stays");
}

/// L-14: a withdrawn restart leaves the next absence a loss.
#[test]
fn a_withdrawn_restart_leaves_the_absence_a_loss() {
    let fx = Fixture::new();
    let dir = fx.dir();
    let hook = name("hook-a");
    dir.create(&hook, "github:a/b", None, None).unwrap();
    dir.record_restart(&hook, &Expect::Any, None).unwrap();
    assert_eq!(dir.withdraw_restart(&hook, &Expect::Any).unwrap(), Changed::Written);
    assert_eq!(dir.note_absence(&hook, &Expect::Any).unwrap(), Changed::Written);
    assert_eq!(dir.outcome(&hook), Some(Outcome::Vanished));
}

/// L-15: a start takes the pending mark of its own lease, under the registry lock, and without the lease lock when
/// there is none; a start that did not happen puts it back.
#[test]
fn a_start_takes_the_restart_mark_of_its_lease_and_puts_it_back_when_it_did_not_happen() {
    let fx = Fixture::new();
    let dir = fx.dir();
    let hook = name("hook-a");
    let g = dir.create(&hook, "github:a/b", None, None).unwrap();
    let (own, other) = (Expect::Gen(g), Expect::Gen(Gen::random()));
    let registry = fx.state.join("sessions.json");
    let locked = |section: &dyn Fn(&registry::RegistryLock)| {
        registry::with_lock(&registry, Duration::from_secs(2), registry::LockPolicy::SUPERVISOR, |held| section(held))
            .unwrap();
    };
    locked(&|held| {
        let lease_lock = HeldLock::now(&fx.state.join("lease/.lock"));
        assert!(!dir.take_restart_mark(&hook, &own, held).unwrap(), "no mark: the lease lock is not needed");
        drop(lease_lock);
    });
    dir.record_restart(&hook, &own, None).unwrap();
    locked(&|held| {
        assert!(!dir.take_restart_mark(&hook, &other, held).unwrap(), "another life's start takes nothing");
        let lease_lock = HeldLock::now(&fx.state.join("lease/.lock"));
        assert!(matches!(dir.take_restart_mark(&hook, &own, held), Err(LeaseError::Busy { .. })));
        drop(lease_lock);
        assert!(dir.take_restart_mark(&hook, &own, held).unwrap());
        assert!(!dir.take_restart_mark(&hook, &own, held).unwrap(), "taken once");
    });
    assert_eq!(dir.note_absence(&hook, &own).unwrap(), Changed::Written, "the next absence is a loss");
    let h2 = name("hook-b");
    let g2 = dir.create(&h2, "github:a/b", None, None).unwrap();
    let own2 = Expect::Gen(g2);
    dir.record_restart(&h2, &own2, None).unwrap();
    locked(&|held| {
        assert!(dir.take_restart_mark(&h2, &own2, held).unwrap());
        dir.put_back_restart_mark(&h2, &own2, held).unwrap();
    });
    assert_eq!(dir.note_absence(&h2, &own2).unwrap(), Changed::Restarted, "the mark was put back");
}

/// L-4: the lease of an older life of a listed name is marked vanished and swept after the grace; the lease of
/// the listed life is kept; L-5: `orphanedAt` is written only for the gen named.
#[test]
fn the_lease_of_an_older_life_of_a_listed_name_is_marked_and_swept() {
    let fx = Fixture::new();
    let dir = fx.dir();
    let (old_name, own_name) = (name("hook-a"), name("hook-b"));
    let old = dir.create(&old_name, "github:a/b", None, None).unwrap();
    let own = dir.create(&own_name, "github:a/b", None, None).unwrap();
    let registry = format!(
        r#"{{"version":1,"sessions":{{"hook-a":{{"agent":"tool","life":"{}"}},"hook-b":{{"agent":"tool","life":"{own}"}}}}}}"#,
        Gen::random()
    );
    let listed = ListedNames::from_document(&Document::parse(registry.as_bytes()).unwrap());
    assert!(dir.sweep(&listed, Some(&fx.log())).swept.is_empty(), "within the grace");
    set_mtime_back(&fx.lease_file("hook-a"), 31);
    set_mtime_back(&fx.lease_file("hook-b"), 31);
    assert_eq!(dir.mark_orphaned(&old_name, &Gen::random()).unwrap(), Changed::Stale);
    assert_eq!(dir.mark_orphaned(&old_name, &old).unwrap(), Changed::Written);
    set_mtime_back(&fx.lease_file("hook-a"), 31);
    let report = dir.sweep(&listed, Some(&fx.log()));
    assert_eq!(report.swept, std::slice::from_ref(&old_name));
    let line = fx.log_lines().pop().unwrap();
    assert_eq!((&line["how"], &line["outcome"]), (&json!("swept"), &json!("vanished")));
    assert!(fx.lease_file("hook-b").exists(), "the listed life's lease stays");
}

// Tests that kill mutants which survived this crate's other tests (docs/mutants.md).

/// `restartedAt` and `orphanedAt` are the lease directory's clock, like every other time it writes.
#[test]
fn restart_and_orphan_marks_carry_the_clock_time() {
    let fx = Fixture::new();
    let dir = fx.dir().with_clock(at_t0);
    let hook = name("hook-a");
    let g = dir.create(&hook, "github:a/b", None, None).unwrap();
    dir.record_restart(&hook, &Expect::Any, None).unwrap();
    dir.mark_orphaned(&hook, &g).unwrap();
    let lease: Value = serde_json::from_slice(&fs::read(fx.lease_file("hook-a")).unwrap()).unwrap();
    assert_eq!(lease["restartedAt"], json!("2025-11-29T14:03:11Z"));
    assert_eq!(lease["orphanedAt"], json!("2025-11-29T14:03:11Z"));
}

/// A lease path that cannot be read (here a directory) is unreadable, never absent; finishing it is an error.
#[test]
fn an_unreadable_lease_is_not_absent_and_cannot_be_cleared() {
    let fx = Fixture::new();
    let dir = fx.dir();
    dir.create(&name("hook-other"), "t", None, None).unwrap();
    fs::create_dir(fx.lease_file("hook-a")).unwrap();
    assert!(matches!(dir.read(&name("hook-a")), LeaseState::Unreadable));
    assert!(dir.finish(&name("hook-a"), &EndHow::Rm, &Expect::Any, None).is_err());
    assert!(fx.lease_file("hook-a").is_dir());
}

/// Finishing with the gen of another life is stale: the lease of the current life stays.
#[test]
fn finishing_another_gen_is_stale_and_keeps_the_lease() {
    let fx = Fixture::new();
    let dir = fx.dir();
    let hook = name("hook-a");
    dir.create(&hook, "t", None, None).unwrap();
    let other = Expect::Gen(Gen::random());
    assert_eq!(dir.finish(&hook, &EndHow::Rm, &other, Some(&fx.log())).unwrap(), Changed::Stale);
    assert!(fx.lease_file("hook-a").exists());
    assert!(fx.log_lines().iter().all(|line| line["what"] != json!("end")), "no end record for a stale finish");
}

/// Two finishers of one lease: the one that gets the lock second finds it gone, and that is nothing to clear,
/// not an error.
#[test]
fn a_lease_finished_by_another_while_waiting_for_the_lock_is_nothing_to_clear() {
    let fx = Fixture::new();
    let dir = fx.dir();
    let hook = name("hook-a");
    dir.create(&hook, "t", None, None).unwrap();
    let lock_file = fx.state.join("lease/.lock");
    let held = HeldLock::acquire(&lock_file, Duration::ZERO).unwrap();
    let worker = {
        let (dir, hook) = (dir.clone(), hook.clone());
        std::thread::spawn(move || dir.finish(&hook, &EndHow::Rm, &Expect::Any, None))
    };
    agent_box_tests::wait_until("the worker to wait for the lease lock", || fds_open_on(&lock_file) >= 2);
    fs::remove_file(fx.lease_file("hook-a")).unwrap();
    drop(held);
    assert_eq!(worker.join().unwrap().unwrap(), Changed::NothingToClear);
}

/// A sweep with nothing due (a young unlisted lease, an old lease of the listed life) takes no lock, so a busy
/// lease lock costs it nothing and is no error.
#[test]
fn a_sweep_with_nothing_due_takes_no_lock() {
    let fx = Fixture::new();
    let dir = fx.dir();
    let own = dir.create(&name("hook-own"), "t", None, None).unwrap();
    dir.create(&name("hook-young"), "t", None, None).unwrap();
    set_mtime_back(&fx.lease_file("hook-own"), 3600);
    let registry = format!(r#"{{"version":1,"sessions":{{"hook-own":{{"agent":"tool","life":"{own}"}}}}}}"#);
    let listed = ListedNames::from_document(&Document::parse(registry.as_bytes()).unwrap());
    let _held = HeldLock::acquire(&fx.state.join("lease/.lock"), Duration::ZERO).unwrap();
    let report = dir.sweep(&listed, None);
    assert!(report.error.is_none(), "{:?}", report.error);
    assert!(report.swept.is_empty());
}

/// The sweep remembers a lease's gen until the file changes: a lease replaced by one of an older life (a new
/// inode) is read again and swept.
#[test]
fn a_replaced_lease_is_read_again_by_the_sweep() {
    let fx = Fixture::new();
    let dir = fx.dir();
    let hook = name("hook-a");
    let own = dir.create(&hook, "t", None, None).unwrap();
    set_mtime_back(&fx.lease_file("hook-a"), 3600);
    let registry = format!(r#"{{"version":1,"sessions":{{"hook-a":{{"agent":"tool","life":"{own}"}}}}}}"#);
    let listed = ListedNames::from_document(&Document::parse(registry.as_bytes()).unwrap());
    assert!(dir.sweep(&listed, None).swept.is_empty(), "the listed life's lease stays");
    let older = format!(r#"{{"topic":"t","gen":"{}","outcome":null}}"#, Gen::random());
    let staged = fx.state.join("lease/staged");
    fs::write(&staged, older).unwrap();
    fs::rename(&staged, fx.lease_file("hook-a")).unwrap();
    set_mtime_back(&fx.lease_file("hook-a"), 3600);
    assert_eq!(dir.sweep(&listed, None).swept, vec![hook]);
}

/// LS-8.4: `reaped` and `swept` of a name without a lease record nothing; `rm` of one still records its end.
#[test]
fn without_a_lease_only_an_end_other_than_reaped_or_swept_is_recorded() {
    let fx = Fixture::new();
    let dir = fx.dir();
    dir.create(&name("hook-other"), "t", None, None).unwrap();
    for how in [EndHow::Reaped, EndHow::Swept] {
        assert_eq!(dir.finish(&name("hook-a"), &how, &Expect::Any, Some(&fx.log())).unwrap(), Changed::NothingToClear);
    }
    assert!(fx.log_lines().is_empty(), "{:?}", fx.log_lines());
    assert_eq!(
        dir.finish(&name("hook-a"), &EndHow::Rm, &Expect::Any, Some(&fx.log())).unwrap(),
        Changed::NothingToClear
    );
    let lines = fx.log_lines();
    assert_eq!((lines.len(), &lines[0]["how"]), (1, &json!("rm")));
}

/// L-14: only the life that recorded a restart takes it back, and only while it is pending.
#[test]
fn a_restart_is_withdrawn_only_by_its_own_life_while_pending() {
    let fx = Fixture::new();
    let dir = fx.dir();
    let hook = name("hook-a");
    let g = dir.create(&hook, "t", None, None).unwrap();
    assert_eq!(dir.withdraw_restart(&hook, &Expect::Gen(g.clone())).unwrap(), Changed::Stale, "nothing pending");
    dir.record_restart(&hook, &Expect::Any, None).unwrap();
    assert_eq!(dir.withdraw_restart(&hook, &Expect::Gen(Gen::random())).unwrap(), Changed::Stale, "another life");
    assert_eq!(dir.note_absence(&hook, &Expect::Gen(g)).unwrap(), Changed::Restarted, "the mark stayed");
}

/// The refusal record's temp leftovers (a killed webhook-spawn's) are removed and counted; other files stay.
#[test]
fn the_refusal_record_s_temp_leftovers_are_removed_and_counted() {
    let fx = Fixture::new();
    let record = RefusalRecord::new(fx.state.join("webhook-spawn-refused.json"));
    for leftover in ["webhook-spawn-refused.json.tmp-ab12cd34", "webhook-spawn-refused.json.tmp-zz99yy88"] {
        fs::write(fx.state.join(leftover), b"{").unwrap();
    }
    fs::write(fx.state.join("sessions.json.tmp-ab12cd34"), b"{").unwrap();
    assert_eq!(record.remove_temp_leftovers(), 2);
    assert!(!fx.state.join("webhook-spawn-refused.json.tmp-ab12cd34").exists());
    assert!(fx.state.join("sessions.json.tmp-ab12cd34").exists());
    assert_eq!(record.remove_temp_leftovers(), 0);
}

/// LS-8.7's trim counts lines, not bytes: a log of exactly 400 long lines after the append stays whole.
#[test]
fn the_hook_log_is_trimmed_by_its_line_count_not_its_size() {
    let fx = Fixture::new();
    let path = fx.state.join("hook-sessions.jsonl");
    let padding = "x".repeat(200);
    let old: String = (0..399).map(|i| format!("{{\"n\":{i},\"pad\":\"{padding}\"}}\n")).collect();
    fs::write(&path, &old).unwrap();
    let hook = name("hook-a");
    let record = SpawnRecord {
        name: &hook,
        topic: "github:x",
        event: "issues",
        object: None,
        count: None,
        intake: None,
        claim: None,
    };
    assert!(matches!(fx.log().append_spawn(&record), Appended::Written));
    assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 400);
}
