//! Black-box tests of the pane epilogue (40-mark-stopped MS-9, 80 MS01–MS12): a binary baked for a slot root,
//! run directly, always silent and exit 0.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_box_tests::HeldLock;
use agent_box_tests::bake::{Profile, bake, expected_paths, has_interpreter};
use agent_box_tests::bins::bin;
use agent_box_tests::fixtures::{Assert, OutputAssertExt, predicate};
use agent_box_tests::privilege::{chown_tree, unprivileged};
use agent_box_tests::slots::Slot;
use serde_json::{Value, json};

/// A slot with the epilogue baked for `<slot>/home/agent/...` (MS-9.1).
struct Baked {
    slot: Slot,
    binary: PathBuf,
}

impl Baked {
    fn new(profile: Profile) -> Self {
        let slot = Slot::claim();
        let binary = bake(&registry_of(slot.root()), &state_of(slot.root()), profile).unwrap_or_else(|e| panic!("{e}"));
        fs::create_dir_all(state_of(slot.root())).unwrap();
        fs::create_dir_all(registry_of(slot.root()).parent().unwrap()).unwrap();
        Self { slot, binary }
    }
    fn dev() -> Self {
        Self::new(Profile::Dev)
    }
    fn root(&self) -> &Path {
        self.slot.root()
    }
    fn registry(&self) -> PathBuf {
        registry_of(self.root())
    }
    fn state(&self) -> PathBuf {
        state_of(self.root())
    }
    fn lease(&self, name: &str) -> PathBuf {
        self.state().join("lease").join(format!("{name}.json"))
    }
    fn hook_log(&self) -> PathBuf {
        self.state().join("hook-sessions.jsonl")
    }
    fn log_lines(&self) -> Vec<Value> {
        fs::read_to_string(self.hook_log())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
    fn write_registry(&self, doc: &Value) {
        fs::write(self.registry(), serde_json::to_vec_pretty(doc).unwrap()).unwrap();
    }
    fn read_registry(&self) -> Value {
        serde_json::from_slice(&fs::read(self.registry()).unwrap()).unwrap()
    }
    /// Runs the epilogue with an empty environment and asserts the contract: exit 0, no output.
    fn run(&self, args: &[&str]) {
        silent_success(Command::new(&self.binary).args(args).env_clear().stdin(Stdio::null()).assert());
    }
    fn create_lease(&self, name: &str) -> String {
        let leases = lease::LeaseDir::new(self.state().join("lease"));
        leases
            .create(&base::SessionName::parse(name).unwrap(), "github:acme/widgets", Some("7"), None)
            .unwrap()
            .to_string()
    }
}

fn registry_of(root: &Path) -> PathBuf {
    root.join("home/agent/.config/agent-box/sessions.json")
}

fn state_of(root: &Path) -> PathBuf {
    root.join("home/agent/.local/state/agent-box")
}

/// The epilogue's contract (MS-1.2): exit 0, nothing on stdout or stderr.
fn silent_success(run: Assert) {
    run.code(0).stdout("").stderr("");
}

/// Every file below `root` with its bytes (a recursive listing to compare before and after).
fn tree(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                out.push((path.clone(), Vec::new()));
                walk(&path, out);
            } else {
                out.push((path.clone(), fs::read(&path).unwrap_or_default()));
            }
        }
    }
    walk(root, &mut out);
    out.sort();
    out
}

fn main_entry() -> Value {
    json!({"version": 1, "x-top": true, "sessions": {"main": {"agent": "claude", "z": 1, "workingDirectory": null}}})
}

#[test]
fn help_exits_0_and_describes_the_argv() {
    let usage = predicate::str::starts_with("usage: agent-box-mark-stopped NAME STATUS [GEN|-|any [LIFE]]");
    Command::new(bin("agent-box-mark-stopped")).arg("--help").env_clear().assert().code(0).stdout(usage);
}

/// `--version` alone prints the version, as clap's does in the other programs.
#[test]
fn version_alone_prints_the_version() {
    let expected = format!(
        "agent-box-mark-stopped {}
",
        env!("CARGO_PKG_VERSION")
    );
    Command::new(bin("agent-box-mark-stopped")).arg("--version").env_clear().assert().code(0).stdout(expected);
}

// MS01
#[test]
fn unbaked_build_says_so_once_and_records_nothing() {
    let home = tempfile::tempdir().unwrap();
    let out =
        Command::new(bin("agent-box-mark-stopped")).args(["main", "0"]).env_clear().env("HOME", home.path()).assert();
    out.code(0).stdout("").stderr(
        "agent-box-mark-stopped: built without baked paths (AGENT_BOX_BAKE_SESSIONS_FILE, AGENT_BOX_BAKE_STATE_DIR); nothing was recorded\n",
    );
    assert_eq!(fs::read_dir(home.path()).unwrap().count(), 0);
    Command::new(bin("agent-box-mark-stopped")).arg("--print-paths").env_clear().assert().code(0).stdout("unbaked\n");
}

// MS02
#[test]
fn print_paths_of_a_baked_binary() {
    let baked = Baked::dev();
    let expected = expected_paths(&baked.registry(), &baked.state());
    Command::new(&baked.binary).arg("--print-paths").env_clear().assert().code(0).stdout(expected);
}

// MS03
#[test]
fn clean_exit_appends_stopped_last_and_changes_nothing_else() {
    let baked = Baked::dev();
    baked.write_registry(&main_entry());
    baked.run(&["main", "0"]);
    let text = fs::read_to_string(baked.registry()).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&String> = doc["sessions"]["main"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["agent", "z", "workingDirectory", "stopped"]);
    assert_eq!(doc["sessions"]["main"]["stopped"], json!(true));
    assert_eq!(doc["x-top"], json!(true));
    assert!(text.starts_with("{\n  \"version\": 1,\n  \"x-top\": true,"));
}

// MS04
#[test]
fn crash_records_died_and_garbled_statuses_read_as_1() {
    let baked = Baked::dev();
    for (status, want) in [("3", 3), ("abc", 1), ("", 1), ("7", 7), ("000", 0)] {
        baked.write_registry(&main_entry());
        baked.run(&["main", status]);
        let entry = &baked.read_registry()["sessions"]["main"];
        if want == 0 {
            assert_eq!((entry.get("stopped"), entry.get("died")), (Some(&json!(true)), None), "{status:?}");
        } else {
            assert_eq!((entry.get("died"), entry.get("stopped")), (Some(&json!(want)), None), "{status:?}");
        }
    }
    for status in ["-1", "1x", "4294967296", "+3", " 1"] {
        baked.write_registry(&main_entry());
        baked.run(&["main", status]);
        assert_eq!(baked.read_registry()["sessions"]["main"]["died"], json!(1), "{status:?}");
    }
    baked.write_registry(&main_entry());
    baked.run(&["main"]);
    assert_eq!(baked.read_registry()["sessions"]["main"]["stopped"], json!(true), "absent STATUS is 0");
}

// MS05
#[test]
fn absent_entry_missing_or_invalid_registry_change_nothing() {
    let baked = Baked::dev();
    baked.write_registry(&main_entry());
    let before = fs::read(baked.registry()).unwrap();
    baked.run(&["x", "0"]);
    assert_eq!(fs::read(baked.registry()).unwrap(), before, "no stub entry");
    fs::write(baked.registry(), b"not json").unwrap();
    baked.run(&["main", "0"]);
    assert_eq!(fs::read(baked.registry()).unwrap(), b"not json");
    assert!(
        fs::read_dir(baked.registry().parent().unwrap())
            .unwrap()
            .all(|e| { !e.unwrap().file_name().to_string_lossy().contains("corrupt") })
    );
    fs::write(baked.registry(), br#"{"version":1,"sessions":{"x":3,"main":{"stopped":true}}}"#).unwrap();
    let mtime = fs::metadata(baked.registry()).unwrap().mtime_nsec();
    baked.run(&["x", "0"]);
    baked.run(&["main", "0"]);
    assert_eq!(fs::read(baked.registry()).unwrap(), br#"{"version":1,"sessions":{"x":3,"main":{"stopped":true}}}"#);
    assert_eq!(fs::metadata(baked.registry()).unwrap().mtime_nsec(), mtime, "already stopped: no write");
}

// MS05
#[test]
fn missing_registry_directory_creates_nothing_anywhere() {
    let slot = Slot::claim();
    let binary = bake(&registry_of(slot.root()), &state_of(slot.root()), Profile::Dev).unwrap();
    for args in [["main", "0"], ["hook-x", "3"]] {
        silent_success(Command::new(&binary).args(args).env_clear().assert());
    }
    assert_eq!(fs::read_dir(slot.root()).unwrap().count(), 0, "nothing created under the root");
}

// MS06
#[test]
fn clean_exit_of_a_leased_hook_session() {
    let baked = Baked::dev();
    baked.write_registry(&json!({"version": 1, "sessions": {"hook-x": {"agent": "claude", "ephemeral": true}}}));
    let g = baked.create_lease("hook-x");
    baked.run(&["hook-x", "0", &g]);
    assert!(!baked.lease("hook-x").exists());
    let lines = baked.log_lines();
    assert_eq!(lines.len(), 1);
    assert_eq!((&lines[0]["how"], &lines[0]["what"]), (&json!("exited"), &json!("end")));
    assert!(lines[0]["lifeSeconds"].is_u64());
    assert_eq!(fs::metadata(baked.hook_log()).unwrap().mode() & 0o777, 0o600);
}

// MS07
#[test]
fn crash_of_a_leased_hook_session() {
    let baked = Baked::dev();
    baked.write_registry(&json!({"version": 1, "sessions": {"hook-x": {"agent": "claude"}}}));
    let g = baked.create_lease("hook-x");
    baked.run(&["hook-x", "2", &g]);
    let lease: Value = serde_json::from_slice(&fs::read(baked.lease("hook-x")).unwrap()).unwrap();
    assert_eq!(lease["outcome"], json!("died:2"));
    assert!(lease["endedAt"].is_string());
    let lines = baked.log_lines();
    assert_eq!((lines.len(), &lines[0]["how"], &lines[0]["outcome"]), (1, &json!("died:2"), &json!("died:2")));
    assert_eq!(baked.read_registry()["sessions"]["hook-x"]["died"], json!(2));
}

// MS08
#[test]
fn gen_forms_any_and_no_lease() {
    let baked = Baked::dev();
    baked.write_registry(&json!({"version": 1, "sessions": {"hook-x": {"agent": "claude"}}}));
    baked.create_lease("hook-x");
    let before = fs::read(baked.lease("hook-x")).unwrap();
    baked.run(&["hook-x", "2", "-"]);
    assert_eq!(fs::read(baked.lease("hook-x")).unwrap(), before, "NoLease: the pane started unleased");
    baked.run(&["hook-x", "2", "not-a-gen"]);
    assert_eq!(fs::read(baked.lease("hook-x")).unwrap(), before, "a mangled gen matches nothing");
    baked.run(&["hook-x", "2", "11111111-2222-4333-8444-555555555555"]);
    assert_eq!(fs::read(baked.lease("hook-x")).unwrap(), before, "another gen");
    assert!(baked.log_lines().is_empty());
    assert_eq!(baked.read_registry()["sessions"]["hook-x"]["died"], json!(2));
    baked.run(&["hook-x", "2"]);
    let lease: Value = serde_json::from_slice(&fs::read(baked.lease("hook-x")).unwrap()).unwrap();
    assert_eq!(lease["outcome"], json!("died:2"), "no GEN acts on any lease");
    baked.run(&["hook-x", "5"]);
    let lease: Value = serde_json::from_slice(&fs::read(baked.lease("hook-x")).unwrap()).unwrap();
    assert_eq!(lease["outcome"], json!("died:2"), "first outcome wins");
}

// MS08
#[test]
fn a_vanished_lease_keeps_vanished() {
    let baked = Baked::dev();
    baked.write_registry(&json!({"version": 1, "sessions": {"hook-x": {"agent": "claude"}}}));
    let g = baked.create_lease("hook-x");
    let leases = lease::LeaseDir::new(baked.state().join("lease"));
    let name = base::SessionName::parse("hook-x").unwrap();
    leases.mark_outcome(&name, &lease::Outcome::Vanished, &lease::Expect::Any).unwrap();
    baked.run(&["hook-x", "1", &g]);
    let lease: Value = serde_json::from_slice(&fs::read(baked.lease("hook-x")).unwrap()).unwrap();
    assert_eq!(lease["outcome"], json!("vanished"));
}

// LS08, 20 §11.2
#[test]
fn name_reuse_never_touches_the_new_lease() {
    let baked = Baked::dev();
    baked.write_registry(&json!({"version": 1, "sessions": {"hook-a": {"agent": "claude"}}}));
    let g1 = baked.create_lease("hook-a");
    let leases = lease::LeaseDir::new(baked.state().join("lease"));
    let name = base::SessionName::parse("hook-a").unwrap();
    leases.finish(&name, &lease::EndHow::Rm, &lease::Expect::Any, None).unwrap();
    baked.create_lease("hook-a");
    let g2_bytes = fs::read(baked.lease("hook-a")).unwrap();
    baked.run(&["hook-a", "1", &g1]);
    baked.run(&["hook-a", "0", &g1]);
    assert_eq!(fs::read(baked.lease("hook-a")).unwrap(), g2_bytes);
    assert!(baked.log_lines().is_empty(), "no end record");
}

// MS05
#[test]
fn entry_absent_means_no_end_record() {
    let baked = Baked::dev();
    baked.write_registry(&json!({"version": 1, "sessions": {}}));
    let g = baked.create_lease("hook-x");
    baked.run(&["hook-x", "0", &g]);
    assert!(baked.log_lines().is_empty(), "rm already wrote this life's end record");
    assert!(!baked.lease("hook-x").exists(), "the lease is still resolved");
}

// LS05, MS-9.2 item 6
#[test]
fn non_hook_names_get_no_end_record_and_no_lease_dir() {
    let baked = Baked::dev();
    baked.write_registry(&main_entry());
    baked.run(&["main", "3"]);
    baked.run(&["main", "0"]);
    assert!(!baked.hook_log().exists());
    assert!(!baked.state().join("lease").exists(), "LS05: no lease directory is created");
}

// MS09
#[test]
fn a_hung_lock_holder_is_outlasted_silently() {
    let baked = Baked::dev();
    baked.write_registry(&main_entry());
    let before = fs::read(baked.registry()).unwrap();
    let lock_path = baked.registry().with_extension("json.lock");
    let held = HeldLock::acquire(&lock_path, Duration::ZERO).unwrap();
    let start = Instant::now();
    baked.run(&["main", "3"]);
    assert!(start.elapsed() < Duration::from_secs(40), "liveness: 5 x the 8 s worst case");
    assert_eq!(fs::read(baked.registry()).unwrap(), before);
    // Second run: hold the lock only until the first pass gave up (its lock descriptor is gone).
    let mut child = Command::new(&baked.binary)
        .args(["main", "3"])
        .env_clear()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let holds_lock = |pid: u32| -> bool {
        let target = fs::canonicalize(&lock_path).unwrap();
        fs::read_dir(format!("/proc/{pid}/fd"))
            .map(|d| d.flatten().any(|e| fs::read_link(e.path()).ok() == Some(target.clone())))
            .unwrap_or(false)
    };
    agent_box_tests::wait_until("the first pass to open the lock", || {
        holds_lock(pid) || child.try_wait().unwrap().is_some()
    });
    agent_box_tests::wait_until("the first pass to give up", || !holds_lock(pid));
    drop(held);
    silent_success(child.wait_with_output().unwrap().assert());
    assert_eq!(baked.read_registry()["sessions"]["main"]["died"], json!(3), "a later pass landed the write");
}

// MS10
#[test]
fn concurrent_writers_keep_the_counter_and_the_crash() {
    let baked = Baked::dev();
    baked.write_registry(&json!({"version": 1, "sessions": {"main": {"agent": "claude"}, "c": {"count": 0}}}));
    let rmw = agent_box_tests::bins::bin_dir().join("examples/rmw");
    if !rmw.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "agent-box-registry", "--example", "rmw"])
            .status()
            .unwrap();
        assert!(status.success());
    }
    let writers: Vec<_> = (0..4)
        .map(|_| {
            Command::new(&rmw)
                .arg(baked.registry())
                .args(["c", "25"])
                .env_clear()
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    baked.run(&["main", "3"]);
    for mut w in writers {
        assert!(w.wait().unwrap().success());
    }
    let doc = baked.read_registry();
    assert_eq!(doc["sessions"]["main"]["died"], json!(3));
    assert_eq!(doc["sessions"]["c"]["count"], json!(100));
}

// MS11
#[test]
fn production_bake_is_static_and_records() {
    let baked = Baked::new(Profile::Epilogue);
    assert!(!has_interpreter(&baked.binary).unwrap(), "no PT_INTERP");
    match Command::new("file").arg(&baked.binary).output() {
        Ok(out) => assert!(
            String::from_utf8_lossy(&out.stdout).contains("statically linked")
                || String::from_utf8_lossy(&out.stdout).contains("static-pie linked"),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        ),
        Err(_) => eprintln!("SKIP ms11 file(1) check: file is not installed"),
    }
    let size = fs::metadata(&baked.binary).unwrap().len();
    assert!(size <= 1_572_864, "Q2: {size} bytes is over 1.5 MiB");
    baked.write_registry(&main_entry());
    baked.run(&["main", "0"]);
    assert_eq!(baked.read_registry()["sessions"]["main"]["stopped"], json!(true));
    baked.write_registry(&main_entry());
    baked.run(&["main", "4"]);
    assert_eq!(baked.read_registry()["sessions"]["main"]["died"], json!(4));
}

// MS12
#[test]
fn read_only_directories_change_nothing() {
    let baked = Baked::dev();
    baked.write_registry(&json!({"version": 1, "sessions": {"hook-x": {"agent": "claude"}}}));
    fs::write(baked.registry().with_extension("json.lock"), b"").unwrap();
    let g = baked.create_lease("hook-x");
    chown_tree(baked.root());
    let (conf, leases) = (baked.registry().parent().unwrap().to_path_buf(), baked.state().join("lease"));
    let before = tree(baked.root());
    for dir in [&conf, &leases] {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o500)).unwrap();
    }
    let start = Instant::now();
    let mut cmd = Command::new(&baked.binary);
    cmd.args(["hook-x", "2", &g]).env_clear();
    let out = unprivileged(&cmd).assert();
    for dir in [&conf, &leases] {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).unwrap();
    }
    silent_success(out);
    assert!(start.elapsed() < Duration::from_secs(40));
    let after: Vec<_> = tree(baked.root())
        .into_iter()
        .filter(|(p, _)| !p.ends_with("hook-sessions.jsonl") && !p.ends_with("hook-sessions.jsonl.lock"))
        .collect();
    let before: Vec<_> = before.into_iter().filter(|(p, _)| !p.ends_with("hook-sessions.jsonl")).collect();
    assert_eq!(after, before, "registry and lease unchanged");
}

// H06, MS-9.3 item 1
#[test]
fn hostile_environment_changes_only_baked_files() {
    let baked = Baked::dev();
    let hostile = baked.root().join("hostile");
    fs::create_dir_all(hostile.join("bin")).unwrap();
    let marker = hostile.join("marker");
    for tool in ["sh", "jq", "flock"] {
        let path = hostile.join("bin").join(tool);
        fs::write(&path, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    fs::write(hostile.join("s.json"), br#"{"version":1,"sessions":{"hook-x":{}}}"#).unwrap();
    let decoys = tree(&hostile);
    let setup = |baked: &Baked| {
        baked.write_registry(&json!({"version": 1, "sessions": {"hook-x": {"agent": "claude"}}}));
        let _ = fs::remove_file(baked.hook_log());
        baked.create_lease("hook-x")
    };
    let normalise = |baked: &Baked| {
        let mut lease: Value = serde_json::from_slice(&fs::read(baked.lease("hook-x")).unwrap()).unwrap();
        lease["endedAt"] = json!("T");
        lease["claimedAt"] = json!("T");
        lease["gen"] = json!("G");
        (baked.read_registry(), lease)
    };
    let g = setup(&baked);
    baked.run(&["hook-x", "2", &g]);
    let clean = normalise(&baked);
    let g = setup(&baked);
    let held = HeldLock::acquire(&baked.registry().with_extension("json.lock"), Duration::ZERO).unwrap();
    let out = {
        let mut cmd = Command::new(&baked.binary);
        cmd.args(["hook-x", "2", &g]).env_clear();
        cmd.env("HOME", &hostile).env("USER", "root").env("PATH", hostile.join("bin"));
        cmd.env("AGENT_BOX_SESSIONS_FILE", hostile.join("s.json")).env("REGISTRY_LOCK_WAIT", "0");
        cmd.env("TMPDIR", &hostile).env("LD_PRELOAD", hostile.join("x.so")).env("LD_LIBRARY_PATH", &hostile);
        cmd.env("LEASE_DIR", &hostile).env("HOOKLOG", hostile.join("log")).env("IFS", "x");
        drop(held);
        cmd.assert()
    };
    out.code(0).stdout("");
    // A dynamic loader complains about the preload on stderr; the static production build is silent (MS11).
    assert_eq!(normalise(&baked), clean, "the same files change as in a clean run");
    assert_eq!(tree(&hostile), decoys, "no decoy changed");
    assert!(!marker.exists());
}

#[test]
fn ms_9_3_2_an_inherited_lock_fd_is_never_adopted() {
    let baked = Baked::dev();
    baked.write_registry(&main_entry());
    let before = fs::read(baked.registry()).unwrap();
    let held = HeldLock::acquire(&baked.registry().with_extension("json.lock"), Duration::ZERO).unwrap();
    let fd = held.raw_fd();
    let mut cmd = Command::new(&baked.binary);
    cmd.args(["main", "3"]).env_clear().env("AGENT_BOX_REGISTRY_LOCK_FD", "3");
    agent_box_tests::held::pass_fd(&mut cmd, fd, 3);
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert_eq!(fs::read(baked.registry()).unwrap(), before, "written while the test held the lock");
        assert!(start.elapsed() < Duration::from_secs(40));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(fs::read(baked.registry()).unwrap(), before);
    drop(held);
}

// H01, MS-9.3 item 3
#[test]
fn hostile_names_are_refused_before_any_path() {
    let baked = Baked::dev();
    baked.write_registry(&main_entry());
    let before = tree(baked.root().parent().unwrap());
    for name in ["..", ".", "../x", "a/b", "/etc/passwd", "x y", "é", "", "-rf", "a;b", "$(id)", "a\nb"] {
        baked.run(&[name, "0"]);
        baked.run(&[name, "3", "-"]);
    }
    let long = "a".repeat(300);
    baked.run(&[&long, "3"]);
    assert_eq!(tree(baked.root().parent().unwrap()), before);
}

#[test]
fn ms_9_2_9_random_argv_never_breaks_the_contract() {
    use rand::{RngExt, SeedableRng};
    let seed: u64 = std::env::var("AGENT_BOX_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    eprintln!("argv fuzz seed {seed} (AGENT_BOX_TEST_SEED replays)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let baked = Baked::dev();
    baked.write_registry(&main_entry());
    let pick = ["main", "0", "1", "-", "--help", "--print-paths", "hook-x", "2147483648", ""];
    for _ in 0..2000 {
        let args: Vec<std::ffi::OsString> = (0..rng.random_range(0..5))
            .map(|_| match rng.random_range(0..3) {
                0 => std::ffi::OsString::from(pick[rng.random_range(0..pick.len())]),
                1 => {
                    use std::os::unix::ffi::OsStringExt;
                    let len = rng.random_range(1..40);
                    std::ffi::OsString::from_vec((0..len).map(|_| rng.random_range(1..=255u8)).collect())
                }
                _ => std::ffi::OsString::from("x".repeat(rng.random_range(0..5000))),
            })
            .collect();
        let out = Command::new(&baked.binary).args(&args).env_clear().assert().code(0);
        let single_mode = args.len() == 1 && (args[0] == "--help" || args[0] == "--print-paths");
        if !single_mode {
            out.stdout("").stderr("");
        }
    }
    assert!(registry::Document::parse(&fs::read(baked.registry()).unwrap()).is_ok());
}

// L-6 (issue 25): `NAME STATUS G` without LIFE comes from a pane bound to the lease of gen G. Against an entry that
// names no life (a co-writer's) only that lease, still there and not orphaned, and a side file naming no life (the
// evidence L-1 gives a life by) say the pane is this entry's; anything else is a late report of an older life.
#[test]
fn a_gen_report_without_life_changes_an_entry_without_life_only_for_its_own_lease() {
    let baked = Baked::dev();
    let entry = json!({"version": 1, "sessions": {"hook-x": {"agent": "claude", "ephemeral": true}}});
    let old_gen = "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90";
    let leases = lease::LeaseDir::new(baked.state().join("lease"));
    let name = base::SessionName::parse("hook-x").unwrap();

    // G_old's lease is gone (rm resolved it); a co-writer added the name again.
    baked.write_registry(&entry);
    let before = fs::read(baked.registry()).unwrap();
    baked.run(&["hook-x", "1", old_gen]);
    assert!(baked.log_lines().is_empty(), "L-7: {:?}", baked.log_lines());
    baked.run(&["hook-x", "0", old_gen]);
    assert_eq!(String::from_utf8_lossy(&fs::read(baked.registry()).unwrap()), String::from_utf8_lossy(&before));

    // Another life's lease is there: still not G_old's entry, and that lease is untouched.
    let other = baked.create_lease("hook-x");
    let lease_before = fs::read(baked.lease("hook-x")).unwrap();
    baked.run(&["hook-x", "1", old_gen]);
    assert_eq!(fs::read(baked.registry()).unwrap(), before, "a lease of gen {other} does not vouch for {old_gen}");
    assert_eq!(fs::read(baked.lease("hook-x")).unwrap(), lease_before);

    // The lease of the gen is there but orphaned (L-5): its life was delisted; the entry is a new one.
    let g = other;
    leases.mark_orphaned(&name, &lease::Gen::parse(&g).unwrap()).unwrap();
    baked.run(&["hook-x", "1", &g]);
    assert_eq!(fs::read(baked.registry()).unwrap(), before, "an orphaned lease does not vouch for the entry");
    let lease: Value = serde_json::from_slice(&fs::read(baked.lease("hook-x")).unwrap()).unwrap();
    assert_eq!(lease["outcome"], json!("died:1"), "the report still settles its own lease");

    // A side file that names a life: a newer supervisor's record of another entry; this one replaced it (L-1).
    leases.finish(&name, &lease::EndHow::Rm, &lease::Expect::Any, None).unwrap();
    let g = baked.create_lease("hook-x");
    let side = baked.state().join("session/hook-x.json");
    fs::create_dir_all(side.parent().unwrap()).unwrap();
    fs::write(&side, format!(r#"{{"life":"{g}","leaseGen":"{g}"}}"#)).unwrap();
    baked.run(&["hook-x", "1", &g]);
    assert_eq!(fs::read(baked.registry()).unwrap(), before, "the side file names a life: the entry is a new one");

    // The pane's own lease, and a side file of an older supervisor (no life): the pane is this entry's.
    fs::write(&side, format!(r#"{{"leaseGen":"{g}"}}"#)).unwrap();
    leases.finish(&name, &lease::EndHow::Rm, &lease::Expect::Any, None).unwrap();
    let g = baked.create_lease("hook-x");
    baked.run(&["hook-x", "3", &g]);
    assert_eq!(baked.read_registry()["sessions"]["hook-x"]["died"], json!(3), "its own life's crash");
    fs::remove_file(&side).unwrap();
    baked.write_registry(&entry);
    baked.run(&["hook-x", "0", &g]);
    assert_eq!(baked.read_registry()["sessions"]["hook-x"]["stopped"], json!(true), "its own life's clean exit");
    assert!(!baked.lease("hook-x").exists());
}

/// L-6: a late report of an older life (the entry names another) changes nothing of the entry; it still settles
/// the lease of its own gen, and without a gen it touches no lease at all.
#[test]
fn a_late_report_of_an_older_life_settles_only_the_lease_of_its_gen() {
    let baked = Baked::dev();
    let lease_gen = baked.create_lease("hook-x");
    let (entry_life, old_life) = ("66666666-7777-4888-9999-aaaaaaaaaaaa", "11111111-2222-4333-8444-555555555555");
    baked.write_registry(&json!({"version": 1, "sessions": {"hook-x": {"agent": "claude", "life": entry_life}}}));
    let before = fs::read(baked.registry()).unwrap();
    let outcome = || -> Value {
        serde_json::from_slice::<Value>(&fs::read(baked.lease("hook-x")).unwrap()).unwrap()["outcome"].clone()
    };
    baked.run(&["hook-x", "3", "any", old_life]);
    assert_eq!(outcome(), Value::Null, "no gen: no lease is settled");
    baked.run(&["hook-x", "3", &lease_gen, old_life]);
    assert_eq!(outcome(), json!("died:3"), "its own gen's lease is settled");
    assert_eq!(fs::read(baked.registry()).unwrap(), before, "the entry of the newer life is untouched");
}

/// L-6: without LIFE, the GEN stands in for it against an entry that names a life: another life's entry is left
/// alone, its own life's entry records the crash. The same in the workspace's own layout (`Document::to_bytes`,
/// spliced) and in a compact one another writer may leave (parsed whole).
#[test]
fn without_a_life_the_gen_stands_in_for_it_in_either_layout() {
    for compact in [false, true] {
        let baked = Baked::dev();
        let lease_gen = baked.create_lease("hook-x");
        let write = |life: &str| {
            let doc = json!({"version": 1, "sessions": {"hook-x": {"agent": "claude", "life": life}}});
            let compact_bytes = serde_json::to_vec(&doc).unwrap();
            let bytes =
                if compact { compact_bytes } else { registry::Document::parse(&compact_bytes).unwrap().to_bytes() };
            fs::write(baked.registry(), bytes).unwrap();
        };
        write("66666666-7777-4888-9999-aaaaaaaaaaaa");
        let before = fs::read(baked.registry()).unwrap();
        baked.run(&["hook-x", "3", &lease_gen]);
        assert_eq!(fs::read(baked.registry()).unwrap(), before, "another life's entry (compact: {compact})");
        write(&lease_gen);
        baked.run(&["hook-x", "3", &lease_gen]);
        assert_eq!(baked.read_registry()["sessions"]["hook-x"]["died"], json!(3), "its own life (compact: {compact})");
    }
}

/// An entry that is not an object is there (nothing is written to it), unlike an absent one: its crash still gets
/// its end record, in either layout of the registry.
#[test]
fn an_entry_that_is_not_an_object_is_not_an_absent_one() {
    for compact in [false, true] {
        let baked = Baked::dev();
        let doc = json!({"version": 1, "sessions": {"hook-x": 3}});
        let compact_bytes = serde_json::to_vec(&doc).unwrap();
        let bytes = if compact { compact_bytes } else { registry::Document::parse(&compact_bytes).unwrap().to_bytes() };
        fs::write(baked.registry(), &bytes).unwrap();
        let g = baked.create_lease("hook-x");
        baked.run(&["hook-x", "3", &g]);
        assert_eq!(fs::read(baked.registry()).unwrap(), bytes, "compact: {compact}");
        let lines = baked.log_lines();
        assert_eq!((lines.len(), &lines[0]["outcome"]), (1, &json!("died:3")), "compact: {compact}: {lines:?}");
    }
}
