//! Cross-program and hostile-input scenarios with the supervisor (80-acceptance SV19, X02, X06, X08, X11, CL08,
//! H03, H07–H10, H12): the real CLI, spawner and epilogue against a real loop or counted `--once` ticks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agent_box_tests::fixtures::{
    Assert, OutputAssertExt, ok, registry_with, session, stderr, stdout, tool, walk_all, webhook_spawn, with_stdin,
};
use agent_box_tests::privilege::{NOBODY, chown_tree, unprivileged};
use agent_box_tests::{HeldLock, Sandbox, kill, wait_until};
use agent_box_types::report::LsReport;
use base::SessionName;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use rand::{RngExt, SeedableRng};
use registry::ReadOutcome;
use serde_json::{Value, json};
use tmux::{NewSession, Tmux, TmuxApi, TmuxConfig};

fn seed() -> u64 {
    std::env::var("AGENT_BOX_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random)
}

fn lock_file(sb: &Sandbox) -> PathBuf {
    sb.registry().with_extension("json.lock")
}

fn registry_is_valid(sb: &Sandbox) -> bool {
    matches!(registry::read(&sb.registry()), ReadOutcome::Valid(_))
}

fn side_launch_id(sb: &Sandbox, name: &str) -> Option<String> {
    let side: Value = serde_json::from_slice(&fs::read(sb.side_file(name)).ok()?).ok()?;
    side["launchSessionId"].as_str().map(str::to_owned)
}

/// Names and bytes of every file below `dir` (directories as empty entries), sorted.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                out.insert(path.clone(), Vec::new());
                walk(&path, out);
            } else {
                out.insert(path.clone(), fs::read(&path).unwrap_or_default());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, &mut out);
    out
}

/// Every `*.tmp-*` file of the writers' directories (registry, lease dir, hook log and refusal record).
fn temp_files(sb: &Sandbox) -> Vec<PathBuf> {
    let mut found = registry::atomic::temp_leftovers_of(&sb.registry());
    found.extend(registry::atomic::temp_leftovers_in(&sb.state_dir().join("lease")));
    found.extend(registry::atomic::temp_leftovers_of(&sb.state_dir().join("hook-sessions.jsonl")));
    found.extend(registry::atomic::temp_leftovers_of(&sb.state_dir().join("webhook-spawn-refused.json")));
    found
}

/// Runs `cmd` with `fd` (a descriptor this process holds the registry lock on) inherited as fd 7 and
/// A child's output, or a panic when it has not finished before `limit` (a liveness check, never a timing one).
fn output_within(cmd: Command, limit: Duration) -> Assert {
    assert_cmd::Command::from_std(cmd).timeout(limit).assert()
}

/// A tmux server on the sandbox socket started by [`NOBODY`] (an unprivileged supervisor), which the
/// sandbox's own teardown (as root) cannot reach. Dropping this first ends the supervisor `pid` (so it cannot
/// start the server again), then kills the server through the adapter, running tmux as [`NOBODY`].
struct NobodyServer {
    tmux: Option<Tmux>,
    pid: u32,
}

impl NobodyServer {
    fn new(sb: &Sandbox, pid: u32) -> Self {
        if !nix::unistd::geteuid().is_root() {
            return Self { tmux: None, pid };
        }
        let real = tmux::find_on_path("tmux", std::env::var_os("PATH").as_deref()).unwrap();
        let wrapper = sb.root().join("bin/tmux-as-nobody");
        let script = format!(
            "#!/bin/sh\nexec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups '{}' \"$@\"\n",
            real.display()
        );
        fs::write(&wrapper, script).unwrap();
        fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
        let config = TmuxConfig::new(wrapper, sb.socket(), sb.tmux_dir()).with_conf("/dev/null");
        let tmux = Tmux::new(config).with_parent_env(vec![("PATH".into(), "/usr/bin:/bin".into())]);
        Self { tmux: Some(tmux), pid }
    }
}

impl Drop for NobodyServer {
    fn drop(&mut self) {
        if let Some(tmux) = &self.tmux {
            let _ = kill(Pid::from_raw(i32::try_from(self.pid).unwrap_or(0)), Signal::SIGKILL);
            let deadline = Instant::now() + Duration::from_secs(5);
            while alive(self.pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = tmux.kill_server();
        }
    }
}

/// The process exists and is not a zombie waiting to be reaped.
fn alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rfind(')').is_some_and(|at| !stat[at..].starts_with(") Z")))
}

// SV19
#[test]
fn an_invalid_registry_that_cannot_be_moved_aside_is_left_alone() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_registry("not json");
    fs::write(lock_file(&sb), b"").unwrap();
    sb.create_lease("hook-old");
    let old = fs::File::options().append(true).open(sb.lease_path("hook-old")).unwrap();
    old.set_modified(std::time::SystemTime::now() - Duration::from_secs(120)).unwrap();
    fs::create_dir_all(sb.state_dir().join("session")).unwrap();
    fs::write(sb.side_file("ghost"), b"{}").unwrap();
    fs::write(sb.root().join("tmux.log"), b"").unwrap();
    chown_tree(sb.root());
    chown_tree(sb.tmux_dir());
    let conf = sb.registry().parent().unwrap().to_path_buf();
    let (conf_before, state_before) = (snapshot(&conf), snapshot(&sb.state_dir()));
    fs::set_permissions(&conf, fs::Permissions::from_mode(0o500)).unwrap();
    let log = fs::File::create(sb.supervisor_log_path()).unwrap();
    let mut cmd = unprivileged(&sb.cmd("agent-box-supervisor"));
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
    let pid = sb.spawn_tracked(cmd);
    let _server = NobodyServer::new(&sb, pid);
    sb.wait_ticks(pid, 3);
    let (conf_after, mut state_after) = (snapshot(&conf), snapshot(&sb.state_dir()));
    fs::set_permissions(&conf, fs::Permissions::from_mode(0o700)).unwrap();
    // The loop's own session-closed wake file (F21) is created at start whatever the registry holds; it is empty and
    // says nothing about sessions.
    assert_eq!(state_after.remove(&sb.paths().tmux_wake()), Some(Vec::new()));
    assert_eq!(sb.log_count("could not be set aside"), 1, "{}", sb.supervisor_log());
    assert_eq!(conf_after, conf_before, "nothing written, moved or deleted next to the registry");
    assert_eq!(state_after, state_before, "no sweep, no side file, no lease change without a document");
    assert!(!sb.supervisor_log().contains("kept it as"), "{}", sb.supervisor_log());
}

// X06
#[test]
fn an_invalid_registry_refuses_cli_writes_until_the_supervisor_repairs_it() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_seed(r#"{"version":1,"sessions":{}}"#);
    sb.write_registry(&registry_with(&[("a", tool(json!({})))]));
    let pid = sb.start_supervisor();
    sb.wait_live("a");
    sb.wait_ticks(pid, 1);
    // The test holds the lock, so the loop cannot repair before the CLI has run (the "before the next
    // tick" half); the CLI gets the lock the way a settings daemon hands it over.
    let held = HeldLock::acquire(&lock_file(&sb), Duration::from_secs(10)).unwrap();
    let staged = sb.registry().with_extension("staged");
    fs::write(&staged, b"not json").unwrap();
    fs::rename(&staged, sb.registry()).unwrap();
    let mut add = sb.cmd("agent-box-session");
    add.args(["add", "y", "--harness", "tool"]);
    add.env("REGISTRY_LOCK_WAIT", "2").stdin(Stdio::null());
    held.hand_to(&mut add);
    let out = add.assert().code(1);
    assert!(stderr(&out).contains("does not parse"), "{}", stderr(&out));
    assert_eq!(fs::read(sb.registry()).unwrap(), b"not json", "nothing written");
    assert!(temp_files(&sb).is_empty());
    let conf = sb.registry().parent().unwrap().to_path_buf();
    let quarantines = || -> Vec<PathBuf> {
        let mut q: Vec<PathBuf> = fs::read_dir(&conf)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
            .map(|e| e.path())
            .collect();
        q.sort();
        q
    };
    assert!(quarantines().is_empty(), "the CLI never quarantines");
    drop(held);
    wait_until("the supervisor's repair", || quarantines().len() == 1 && registry_is_valid(&sb));
    let kept = quarantines().remove(0);
    let meta = fs::metadata(&kept).unwrap();
    let fixed = (fs::read(&kept).unwrap(), meta.ino(), meta.mtime(), meta.mtime_nsec(), meta.mode());
    assert_eq!(fixed.0, b"not json");
    session(&sb, &["add", "y", "--harness", "tool"]).code(0);
    sb.wait_live("y");
    sb.wait_ticks(pid, 3);
    assert_eq!(quarantines(), vec![kept.clone()]);
    let meta = fs::metadata(&kept).unwrap();
    assert_eq!(
        (fs::read(&kept).unwrap(), meta.ino(), meta.mtime(), meta.mtime_nsec(), meta.mode()),
        fixed,
        "the quarantine file never changes again"
    );
}

// X08
#[test]
fn a_restart_queued_behind_the_lock_beats_the_reap() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[(
        "eph",
        tool(json!({"ephemeral": true, "stopped": true, "hasRun": true, "extraArgs": ["--as", "eph"]})),
    )]));
    let held = HeldLock::acquire(&lock_file(&sb), Duration::from_secs(10)).unwrap();
    let mut restart = sb.cmd("agent-box-session");
    restart.args(["restart", "eph"]).env("REGISTRY_LOCK_WAIT", "60").stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = restart.spawn().unwrap();
    let target = fs::canonicalize(lock_file(&sb)).unwrap();
    wait_until("the restart to queue behind the lock", || {
        fs::read_dir(format!("/proc/{}/fd", child.id()))
            .is_ok_and(|d| d.flatten().any(|e| fs::read_link(e.path()).ok() == Some(target.clone())))
    });
    // A tick while the restart waits: it sees a reap candidate but cannot take the lock.
    let tick = stderr(&sb.once());
    assert!(tick.contains("registry lock not obtained"), "{tick}");
    assert!(sb.entry("eph").is_some(), "no reap without the lock");
    drop(held);
    child
        .wait_with_output()
        .unwrap()
        .assert()
        .code(0)
        .stdout("session 'eph' is no longer stopped — the supervisor starts it within ~2s\n");
    assert!(sb.entry("eph").unwrap().get("stopped").is_none());
    sb.once();
    assert!(sb.entry("eph").is_some(), "not reaped");
    sb.wait_live("eph");
    wait_until("the respawn", || sb.agent("eph").starts() == 1);
    sb.once();
    assert!(sb.entry("eph").is_some() && sb.is_live("eph"));
}

// CL08, X01
#[test]
fn real_add_and_rm_races_never_resurrect_and_rm_logs_before_clearing() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_registry(&registry_with(&[]));
    let pid = sb.start_supervisor();
    let seed = seed();
    eprintln!("cl08 seed {seed} (AGENT_BOX_TEST_SEED replays)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let name = "hook-racer";
    for round in 0..20 {
        sb.create_lease(name);
        ok(&sb, &["add", name, "--harness", "tool", "--", "--as", name]);
        sb.wait_live(name);
        std::thread::sleep(Duration::from_millis(rng.random_range(0..96)));
        ok(&sb, &["rm", name]).stdout(format!("session '{name}' removed\n"));
        assert!(sb.entry(name).is_none(), "round {round}");
        assert!(sb.lease(name).is_none(), "round {round}: lease cleared");
        sb.wait_gone(name);
    }
    sb.wait_ticks(pid, 3);
    assert!(sb.entry(name).is_none(), "never reappears in the registry");
    assert!(!sb.is_live(name), "never reappears in tmux");
    let ends: Vec<Value> = sb.hook_log().into_iter().filter(|l| l["what"] == json!("end")).collect();
    assert_eq!(ends.len(), 20, "one end record per rm: {ends:#?}");
    for end in &ends {
        assert_eq!(end["how"], json!("rm"));
        assert!(end["lifeSeconds"].is_u64(), "written while the lease still existed: {end}");
        assert_eq!(end["outcome"], Value::Null, "no false vanished: {end}");
    }
}

// X02, 30 I15
#[test]
fn concurrent_cli_writers_while_spawning_lose_nothing() {
    let mut sb = Sandbox::in_slot();
    sb.use_counting_tmux();
    sb.set_limit("64");
    let parked =
        json!({"agent": "tool", "extraArgs": ["--as", "parked"], "keep": {"x": [1, 2]}, "workingDirectory": null});
    sb.write_registry(&registry_with(&[("parked", parked.clone())]));
    let pid = sb.start_supervisor();
    sb.wait_live("parked");
    let done = AtomicBool::new(false);
    let mut first = Vec::new();
    let sb = &sb;
    std::thread::scope(|s| {
        // Set on every way out of this scope, a panic included: a reader left waiting would hang the test.
        let stop_reader = StopOnDrop(&done);
        let reader = s.spawn(|| {
            let mut reads = 0;
            while !done.load(Ordering::SeqCst) {
                let bytes = fs::read(sb.registry()).unwrap();
                if registry::Document::parse(&bytes).is_err() {
                    return Err(String::from_utf8_lossy(&bytes).into_owned());
                }
                reads += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            Ok(reads)
        });
        for round in 0..2 {
            sb.agent("parked").control("exit-after 0.3 1");
            let starts_before = sb.agent("parked").starts();
            std::thread::scope(|w| {
                for i in 0..6 {
                    let name = format!("f{round}-{i}");
                    let prompt = format!("kickoff {round}.{i}: it's $(id) time");
                    first.push((name.clone(), prompt.clone()));
                    w.spawn(move || {
                        ok(sb, &["add", &name, "--harness", "tool", "--prompt", &prompt, "--", "--as", &name]);
                    });
                }
                for _ in 0..3 {
                    w.spawn(|| {
                        for _ in 0..6 {
                            ok(sb, &["stop", "parked"]);
                            ok(sb, &["restart", "parked"]);
                        }
                    });
                }
                w.spawn(move || {
                    for n in 0..6 {
                        let tmp = format!("tmp{round}{n}");
                        ok(sb, &["add", &tmp, "--harness", "tool", "--", "--as", &tmp]);
                        ok(sb, &["rm", &tmp]);
                    }
                });
            });
            // The three stop/restart threads may leave parked stopped (the last of their commands can be any
            // thread's stop); one more restart and waiting for that revival to start (and, under the control,
            // crash) makes the "crashed and restarted meanwhile" below a fact rather than a race with the tick.
            ok(sb, &["restart", "parked"]);
            wait_until("parked revived after the round", || sb.agent("parked").starts() > starts_before);
        }
        sb.agent("parked").control("run");
        ok(sb, &["restart", "parked"]);
        wait_until("parked back and running", || {
            sb.entry("parked").is_some_and(|e| e.get("died").is_none() && e.get("stopped").is_none())
                && sb.is_live("parked")
        });
        for (name, _) in &first {
            wait_until(&format!("{name} first-spawned"), || {
                sb.entry(name).is_some_and(|e| e["hasRun"] == json!(true)) && sb.agent(name).starts() >= 1
            });
        }
        sb.wait_ticks(pid, 2);
        drop(stop_reader);
        let reads = reader.join().unwrap().unwrap_or_else(|bad| panic!("the registry did not parse: {bad:?}"));
        assert!(reads > 0);
    });
    for (name, prompt) in &first {
        let entry = sb.entry(name).unwrap();
        assert_eq!((&entry["hasRun"], &entry["initialPrompt"]), (&json!(true), &Value::Null), "{name}: {entry}");
        let id = side_launch_id(sb, name).unwrap_or_else(|| panic!("{name}: no side file"));
        assert_eq!(entry["boxSessionId"], json!(id), "{name}");
        let argv = sb.agent(name).start(1).argv_strings();
        assert_eq!(argv, ["--as", name.as_str(), prompt.as_str()], "{name}: the kickoff prompt reached the agent");
    }
    let doc = sb.read_registry();
    assert!(doc.names().all(|n| !n.starts_with("tmp")), "every tmp entry was removed");
    for n in doc.names() {
        assert!(n == "parked" || n.starts_with('f'), "{n}");
    }
    let entry = sb.entry("parked").unwrap();
    for key in ["agent", "extraArgs", "keep", "workingDirectory"] {
        assert_eq!(entry[key], parked[key], "parked.{key} intact: {entry}");
    }
    assert!(sb.agent("parked").starts() > 2, "parked was crashed and restarted meanwhile");
}

// X11
#[test]
fn writers_killed_at_random_points_leave_a_valid_registry_and_no_temp() {
    let mut sb = Sandbox::in_slot();
    sb.use_counting_tmux();
    sb.set_limit("64");
    sb.write_registry(&registry_with(&[
        ("p0", tool(json!({"extraArgs": ["--as", "p0"]}))),
        ("p1", tool(json!({"extraArgs": ["--as", "p1"]}))),
        ("p2", tool(json!({"extraArgs": ["--as", "p2"]}))),
        ("hook-m", json!({"agent": "not-installed-anywhere"})),
    ]));
    let pid = sb.start_supervisor();
    for p in ["p0", "p1", "p2"] {
        sb.wait_live(p);
    }
    let hook_m = SessionName::parse("hook-m").unwrap();
    let reset_hook_m = || {
        sb.edit_registry(|doc| {
            if let Some(mut e) = doc.entry_mut(&hook_m) {
                e.remove_key("stopped");
                e.remove_key("died");
            }
        });
    };
    let gen_of_hook_m = || -> String {
        match sb.lease("hook-m") {
            Some(lease) if lease["gen"].is_string() => lease["gen"].as_str().unwrap().to_owned(),
            _ => sb.create_lease("hook-m"),
        }
    };
    // writer 0..4: add, stop, restart, mark-stopped
    let writer = |kind: usize, round: usize, pick: usize, status: u32, g: &str| -> Command {
        match kind {
            0 => {
                let name = format!("k{round}");
                let mut cmd = sb.cmd("agent-box-session");
                cmd.args(["add", &name, "--harness", "tool", "--", "--as", &name]);
                cmd
            }
            1 | 2 => {
                let mut cmd = sb.cmd("agent-box-session");
                cmd.args([if kind == 1 { "stop" } else { "restart" }, &format!("p{pick}")]);
                cmd
            }
            _ => {
                let mut cmd = Command::new(sb.epilogue());
                cmd.args(["hook-m", &status.to_string(), g]).env_clear();
                cmd
            }
        }
    };
    let mut bounds = Vec::new();
    for kind in 0..4 {
        let times: Vec<Duration> = (0..3)
            .map(|i| {
                if kind == 3 {
                    reset_hook_m();
                }
                let g = gen_of_hook_m();
                let start = Instant::now();
                let out = writer(kind, 1000 + i, 0, 3, &g).stdin(Stdio::null()).assert();
                let took = start.elapsed();
                out.code(0);
                if kind == 0 {
                    ok(&sb, &["rm", &format!("k{}", 1000 + i)]);
                }
                if kind == 1 {
                    ok(&sb, &["restart", "p0"]);
                }
                took
            })
            .collect();
        bounds.push(kill::median(times).mul_f64(1.5));
    }
    eprintln!("x11 kill bounds, 1.5 x median (add, stop, restart, mark-stopped): {bounds:?}");
    let seed = kill::test_seed();
    eprintln!("x11 seed {seed} (AGENT_BOX_TEST_SEED replays)");
    let mut leftovers_seen = 0;
    // The harness's kill engine draws the writer and the kill point; the writer's arguments come after.
    let mut kills = kill::KillLoop::new(seed);
    kills
        .run::<()>(100, &bounds, |rng, kill::Pick { iteration: round, writer: kind, delay, .. }| {
            let pick = rng.random_range(0..3usize);
            let status = if rng.random_range(0..2) == 0 { 0 } else { rng.random_range(1..250u32) };
            let g = if kind == 3 {
                reset_hook_m();
                gen_of_hook_m()
            } else {
                String::new()
            };
            let mut cmd = writer(kind, round, pick, status, &g);
            cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
            kill::run_killed(&mut cmd, Some(delay)).unwrap();
            leftovers_seen += temp_files(&sb).len();
            let what = ["add", "stop", "restart", "mark-stopped"][kind];
            assert!(registry_is_valid(&sb), "round {round} ({what} killed after {delay:?}): registry not Valid");
            if let Ok(bytes) = fs::read(sb.lease_path("hook-m")) {
                assert!(lease::Lease::parse(&bytes).is_some(), "round {round}: torn lease {bytes:?}");
            }
            let log = fs::read_to_string(sb.state_dir().join("hook-sessions.jsonl")).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            for line in lines.iter().take(lines.len().saturating_sub(1)) {
                assert!(serde_json::from_str::<Value>(line).is_ok(), "round {round}: torn hook-log line {line:?}");
            }
            let free = HeldLock::acquire(&lock_file(&sb), Duration::from_secs(10));
            assert!(free.is_ok(), "round {round}: a killed writer's flock must die with it");
            drop(free);
            match kind {
                0 => drop(ok(&sb, &["rm", &format!("k{round}")])),
                1 => drop(ok(&sb, &["restart", &format!("p{pick}")])),
                _ => {}
            }
            Ok(())
        })
        .unwrap();
    eprintln!("x11: {leftovers_seen} temp files seen right after a kill");
    sb.wait_ticks(pid, 2);
    let registry_guard = HeldLock::acquire(&lock_file(&sb), Duration::from_secs(10)).unwrap();
    let lease_guard = HeldLock::acquire(&sb.state_dir().join("lease/.lock"), Duration::from_secs(10)).ok();
    let left = temp_files(&sb);
    drop(lease_guard);
    drop(registry_guard);
    assert!(left.is_empty(), "temp files survived the next tick: {left:?}");
    assert!(registry_is_valid(&sb));
}

/// Strings that a shell, a printf or tmux's format expander would act on.
fn hostile(root: &Path) -> Vec<String> {
    let r = root.display();
    vec![
        format!("$(touch {r}/M1)"),
        format!("`touch {r}/M5`"),
        format!("'; touch {r}/M2; '"),
        "\"".into(),
        "\\".into(),
        "%s%n".into(),
        "#{pane_pid}".into(),
        format!("#(touch {r}/M3)"),
        "line\nfeed".into(),
        "carriage\rreturn".into(),
        "tab\there".into(),
        "ctl\u{1}x".into(),
    ]
}

fn markers(root: &Path) -> Vec<PathBuf> {
    ["M1", "M2", "M3", "M5"].iter().map(|m| root.join(m)).filter(|p| p.exists()).collect()
}

/// Every JSON document and JSON-lines file under `dir` parses (lock files and temps aside).
fn assert_json_files_valid(dir: &Path) {
    for path in walk_all(dir) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !fs::symlink_metadata(&path).unwrap().is_file() {
            continue;
        }
        if name.ends_with(".json") {
            let bytes = fs::read(&path).unwrap();
            assert!(serde_json::from_slice::<Value>(&bytes).is_ok(), "{} is not valid JSON", path.display());
        } else if name.ends_with(".jsonl") {
            for line in fs::read_to_string(&path).unwrap().lines() {
                assert!(serde_json::from_str::<Value>(line).is_ok(), "{}: bad line {line:?}", path.display());
            }
        }
    }
}

// H03
#[test]
fn hostile_text_reaches_the_agent_verbatim_and_runs_nothing() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    fs::create_dir_all(sb.home().join(".local/state/local-webhook")).unwrap();
    sb.write_registry(&registry_with(&[]));
    let bad = hostile(sb.root());
    let joined = bad.join(" | ");
    let mut hook_args = vec!["--as".to_owned(), "hooked".to_owned()];
    hook_args.extend(bad.iter().cloned());
    let meta = json!({"number": "7", "event": joined, "action": bad[0], "branch": bad[7], "sha": bad[2]});
    let mut batch = Vec::new();
    for line in &bad {
        batch.extend_from_slice(format!("[github] {line}\n").as_bytes());
    }
    batch.extend_from_slice(b"[github] nul\0and invalid \xff\xfe utf-8\n[github] the newest line\n");
    let vars: Vec<(&str, OsString)> = vec![
        ("LOCAL_WEBHOOK_SPAWN_KEY", "acme/widgets".into()),
        ("LOCAL_WEBHOOK_SPAWN_TOPIC", format!("github:acme/* {joined}").into()),
        ("LOCAL_WEBHOOK_SPAWN_NOTE", joined.clone().into()),
        ("LOCAL_WEBHOOK_SPAWN_EVENT", bad[6].clone().into()),
        ("LOCAL_WEBHOOK_SPAWN_META", meta.to_string().into()),
        ("AGENT_BOX_HOOK_SESSION_ARGS", serde_json::to_string(&hook_args).unwrap().into()),
    ];
    let refs: Vec<(&str, &OsString)> = vars.iter().map(|(k, v)| (*k, v)).collect();
    webhook_spawn(&sb, &refs, &batch).code(0);
    let hook = sb.read_registry().names().find(|n| n.starts_with("hook-")).unwrap().to_owned();
    let stored = sb.entry(&hook).unwrap()["initialPrompt"].as_str().unwrap().to_owned();
    let expected_batch = String::from_utf8_lossy(&batch).replace('\0', "\u{fffd}");
    assert!(stored.ends_with(expected_batch.trim_end_matches('\n')), "the batch, NUL and invalid UTF-8 as U+FFFD");
    assert!(!stored.contains('\0'));
    let prose: String = joined.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    assert!(stored.contains(&format!("(\"{prose}\")")), "the note in prose form");

    let pid = sb.start_supervisor();
    let prompt = format!("{joined} and a 'quote' $HOME");
    let mut add: Vec<&str> = vec!["add", "h3", "--harness", "tool", "--prompt", &prompt, "--", "--as", "h3"];
    add.extend(bad.iter().map(String::as_str));
    ok(&sb, &add);
    wait_until("both agents", || sb.agent("h3").starts() == 1 && sb.agent("hooked").starts() == 1);
    let mut expected: Vec<Vec<u8>> = vec![b"--as".to_vec(), b"h3".to_vec()];
    expected.extend(bad.iter().map(|b| b.as_bytes().to_vec()));
    expected.push(prompt.as_bytes().to_vec());
    assert_eq!(sb.agent("h3").last().argv, expected, "the CLI session's argv, byte for byte");
    let mut expected: Vec<Vec<u8>> = hook_args.iter().map(|a| a.as_bytes().to_vec()).collect();
    expected.push(stored.as_bytes().to_vec());
    assert_eq!(sb.agent("hooked").last().argv, expected, "the hook session's argv, byte for byte");
    sb.wait_ticks(pid, 2);
    assert!(markers(sb.root()).is_empty(), "a hostile string ran: {:?}", markers(sb.root()));
    assert_json_files_valid(sb.home());
}

// H07
#[test]
fn odd_field_values_are_read_by_the_documented_rules() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_registry(&registry_with(&[
        ("e1", json!({"agent": "../../bin/sh"})),
        ("e2", tool(json!({"extraArgs": "rm -rf /"}))),
        ("e3", tool(json!({"workingDirectory": 7, "extraArgs": ["--as", "e3"]}))),
        ("e4", tool(json!({"died": "x", "extraArgs": ["--as", "e4"]}))),
        ("e5", tool(json!({"stopped": "true", "extraArgs": ["--as", "e5"]}))),
        ("ok", tool(json!({"extraArgs": ["--as", "ok"]}))),
    ]));
    // e4 keeps a post-mortem pane, as after a crash: a died entry's pane is never respawned over.
    let argv = vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()];
    let e4 = NewSession { name: SessionName::parse("e4").unwrap(), cwd: sb.home().into(), env: vec![], argv };
    sb.tmux().new_session(&e4).unwrap();
    let pid = sb.start_supervisor();
    sb.wait_live("ok");
    sb.wait_ticks(pid, 3);
    assert!(alive(pid), "the loop survived");
    assert_eq!(
        sb.log_count("session 'e1': agent '../../bin/sh' is not installed - skipping"),
        1,
        "{}",
        sb.supervisor_log()
    );
    assert!(!sb.is_live("e1"));
    assert!(sb.log_count("session 'e2': extraArgs is not an array of strings - skipping") >= 1, "L14");
    assert!(!sb.is_live("e2") && sb.agent("e2").starts() == 0);
    assert_eq!(sb.agent("e3").last().cwd, sb.home().to_str().unwrap(), "a non-string directory reads as HOME");
    assert_eq!(sb.agent("e4").starts(), 0, "died \"x\" counts as died");
    assert!(sb.is_live("e4"));
    assert_eq!(sb.agent("e5").starts(), 1, "stopped \"true\" is not stopped");
    assert_eq!(sb.agent("ok").starts(), 1, "the other sessions keep running");
    let ls = ok(&sb, &["ls"]);
    let text = stdout(&ls);
    for (name, harness, state) in [
        ("e1", "../../bin/sh", "starting, harness '../../bin/sh' not installed"),
        ("e2", "tool", "starting"),
        ("e3", "tool", "live"),
        ("e4", "tool", "died(\"x\")"),
        ("e5", "tool", "live"),
        ("ok", "tool", "live"),
    ] {
        let row = format!("{name:<24} {harness:<8} {state}");
        assert!(text.lines().any(|l| l == row), "missing {row:?} in\n{text}");
    }
    assert_eq!(sb.entry("e4").unwrap()["died"], json!("x"), "raw values never rewritten");
    assert_eq!(sb.entry("e5").unwrap()["stopped"], json!("true"));
}

// H07
#[test]
fn a_fatal_shape_is_logged_once_per_streak() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_registry(&registry_with(&[
        ("e2", tool(json!({"extraArgs": "rm -rf /"}))),
        ("e6", tool(json!({"extraArgs": ["a\u{0}b"]}))),
        ("ok", tool(json!({"extraArgs": ["--as", "ok"]}))),
    ]));
    let pid = sb.start_supervisor();
    sb.wait_live("ok");
    sb.wait_ticks(pid, 3);
    // 30 §13: L14 `session '<name>': <problem> - skipping`, once per name per streak.
    assert_eq!(sb.log_count("session 'e2': "), 1, "{}", sb.supervisor_log());
    assert_eq!(sb.log_count("session 'e6': "), 1, "{}", sb.supervisor_log());
    assert_eq!(sb.agent("e2").starts() + sb.agent("e6").starts(), 0);
}

// H08
#[test]
fn symlinked_lease_and_filter_never_write_through_to_their_decoys() {
    let sb = Sandbox::in_slot();
    let decoys = sb.root().join("decoys");
    fs::create_dir_all(&decoys).unwrap();
    let filters = sb.home().join(".local/state/local-webhook");
    fs::create_dir_all(&filters).unwrap();
    fs::create_dir_all(sb.state_dir().join("lease")).unwrap();
    sb.write_registry(&registry_with(&[("hook-x", tool(json!({"extraArgs": ["--as", "hook-x"]})))]));
    // Real leases, moved out of the lease directory and linked back.
    let mut links = Vec::new();
    for name in ["hook-x", "hook-y"] {
        sb.create_lease(name);
        let decoy = decoys.join(format!("{name}.lease.json"));
        fs::rename(sb.lease_path(name), &decoy).unwrap();
        std::os::unix::fs::symlink(&decoy, sb.lease_path(name)).unwrap();
        let filter_decoy = decoys.join(format!("{name}.filter.json"));
        fs::write(&filter_decoy, r#"{"topics":[{"topic":"github:acme/widgets","include":{}}]}"#).unwrap();
        let filter = filters.join(format!("filter.agent-{name}.json"));
        std::os::unix::fs::symlink(&filter_decoy, &filter).unwrap();
        links.push(sb.lease_path(name));
        links.push(filter);
    }
    let old = std::time::SystemTime::now() - Duration::from_secs(120);
    let secs = i64::try_from(old.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()).unwrap();
    for link in &links {
        let when = nix::sys::time::TimeVal::new(secs, 0);
        nix::sys::stat::lutimes(link.as_path(), &when, &when).unwrap();
    }
    let before = snapshot(&decoys);
    let decoy_times: Vec<(PathBuf, i64, i64)> = walk_all(&decoys)
        .into_iter()
        .map(|p| {
            let m = fs::metadata(&p).unwrap();
            (p, m.mtime(), m.mtime_nsec())
        })
        .collect();
    sb.agent("hook-x").control("exit 1");
    sb.once();
    wait_until("the crash of hook-x", || sb.entry("hook-x").is_some_and(|e| e["died"] == json!(1)));
    let lease_x = fs::symlink_metadata(sb.lease_path("hook-x")).unwrap();
    assert!(lease_x.is_file(), "the crash replaced the link with a regular lease file");
    assert_eq!(sb.lease("hook-x").unwrap()["outcome"], json!("died:1"));
    sb.ticks(2);
    ok(&sb, &["rm", "hook-x"]).stdout("session 'hook-x' removed\n");
    assert!(fs::symlink_metadata(sb.lease_path("hook-x")).is_err(), "rm removed the lease");
    assert!(fs::symlink_metadata(filters.join("filter.agent-hook-x.json")).is_err(), "rm removed the filter link");
    sb.ticks(2);
    for link in [sb.lease_path("hook-y"), filters.join("filter.agent-hook-y.json")] {
        // The sweeps consider regular files only (20 LS-5.7): an unlisted link is removed or left alone,
        // never followed.
        match fs::symlink_metadata(&link) {
            Err(_) => {}
            Ok(meta) => assert!(meta.file_type().is_symlink(), "{} was written through", link.display()),
        }
    }
    assert_eq!(snapshot(&decoys), before, "the decoys are byte-identical");
    for (path, secs, nsec) in decoy_times {
        let m = fs::metadata(&path).unwrap();
        assert_eq!((m.mtime(), m.mtime_nsec()), (secs, nsec), "{} was touched", path.display());
    }
}

/// `cmd` run through `/bin/sh` with umask 000 first (the test process's own umask is shared by every thread).
fn umask_000(cmd: &Command) -> Command {
    let mut sh = Command::new("/bin/sh");
    sh.arg("-c").arg("umask 000 && exec \"$0\" \"$@\"").arg(cmd.get_program()).args(cmd.get_args());
    sh.env_clear();
    for (key, value) in cmd.get_envs() {
        if let Some(value) = value {
            sh.env(key, value);
        }
    }
    if let Some(dir) = cmd.get_current_dir() {
        sh.current_dir(dir);
    }
    sh
}

fn run_umask_000(sb: &Sandbox, args: &[&str]) -> Assert {
    let mut cmd = sb.cmd("agent-box-session");
    cmd.args(args);
    umask_000(&cmd).stdin(Stdio::null()).assert()
}

// H09
#[test]
fn under_umask_000_every_writer_creates_0600_files_and_0700_directories() {
    let mut sb = Sandbox::in_slot();
    sb.use_counting_tmux();
    sb.set_env("AGENT_BOX_DEFAULT_AGENT", "tool");
    let filters = sb.home().join(".local/state/local-webhook");
    fs::create_dir_all(&filters).unwrap();
    for dir in [sb.home().join(".local"), sb.home().join(".local/state"), filters.clone()] {
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    }
    let preexisting: Vec<PathBuf> = vec![sb.home().join(".local"), sb.home().join(".local/state"), filters.clone()];
    run_umask_000(&sb, &["add", "a", "--harness", "tool", "--", "--as", "a"]).code(0);
    for verb in ["stop", "restart"] {
        run_umask_000(&sb, &[verb, "a"]).code(0);
    }
    let spawn_env = |cmd: &mut Command| {
        cmd.env("LOCAL_WEBHOOK_SPAWN_KEY", "acme/widgets")
            .env("LOCAL_WEBHOOK_SPAWN_TOPIC", "github:acme/*")
            .env("LOCAL_WEBHOOK_SPAWN_COUNT", "1")
            .env("AGENT_BOX_HOOK_SESSION_ARGS", r#"["--as","hooked"]"#);
    };
    let mut spawn = sb.cmd("agent-box-webhook-spawn");
    spawn_env(&mut spawn);
    with_stdin(umask_000(&spawn), b"[github] issue #1 opened\n").code(0);
    let hook = sb.read_registry().names().find(|n| n.starts_with("hook-")).unwrap().to_owned();
    sb.agent("hooked").control("exit 1");
    let log = fs::File::create(sb.supervisor_log_path()).unwrap();
    let mut sup = umask_000(&sb.cmd("agent-box-supervisor"));
    sup.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
    let pid = sb.spawn_tracked(sup);
    sb.wait_live("a");
    wait_until("the hook session's crash", || sb.entry(&hook).is_some_and(|e| e["died"] == json!(1)));
    sb.wait_ticks(pid, 1);
    run_umask_000(&sb, &["rm", &hook]).code(0);
    sb.set_limit("1");
    let mut spawn = sb.cmd("agent-box-webhook-spawn");
    spawn_env(&mut spawn);
    // a full box queues the batch (issue 24): the queue directory and the record
    with_stdin(umask_000(&spawn), b"[github] issue #2 opened\n").code(0);
    sb.wait_ticks(pid, 1);
    // a refusal (the registry lock held) writes the refusal record
    {
        let _held = HeldLock::acquire(&lock_file(&sb), Duration::ZERO).unwrap();
        spawn.env("REGISTRY_LOCK_WAIT", "0.2");
        with_stdin(umask_000(&spawn), b"[github] issue #3 opened\n").code(75);
    }
    let mut checked = 0;
    for path in walk_all(sb.home()) {
        let meta = fs::symlink_metadata(&path).unwrap();
        let mode = meta.mode() & 0o777;
        if meta.is_dir() {
            if !preexisting.contains(&path) {
                assert_eq!(mode, 0o700, "directory {}", path.display());
            }
        } else {
            assert!(meta.is_file(), "{} is neither file nor directory", path.display());
            assert_eq!(mode, 0o600, "file {}", path.display());
        }
        checked += 1;
    }
    for must in [
        sb.registry(),
        lock_file(&sb),
        sb.side_file("a"),
        sb.launch_file("a"),
        sb.state_dir().join("hook-sessions.jsonl"),
        sb.state_dir().join("lease/.lock"),
        sb.state_dir().join("webhook-spawn-refused.json"),
        sb.paths().queue_dir(),
    ] {
        assert!(must.exists(), "{} was not written", must.display());
    }
    assert_eq!(sb.queue_records().len(), 1, "the queued record was checked too");
    assert!(checked > 10);
}

// H10
#[test]
fn a_registry_of_10000_entries_is_listed_and_ticked() {
    let sb = Sandbox::new();
    let mut sessions = serde_json::Map::new();
    for i in 0..10_000 {
        let entry = match i % 100 {
            0 => tool(json!({"extraArgs": ["--as", format!("e{i:05}")]})),
            1 => tool(json!({"died": 1, "stopped": true})),
            _ => tool(json!({"stopped": true, "hasRun": true})),
        };
        sessions.insert(format!("e{i:05}"), entry);
    }
    sb.write_registry(&serde_json::to_string(&json!({"version": 1, "sessions": sessions})).unwrap());
    let limit = Duration::from_secs(120);
    let mut tick = sb.cmd("agent-box-supervisor");
    tick.arg("--once");
    output_within(tick, limit).code(0);
    assert_eq!(sb.live().len(), 8, "the limit holds: 8 of the 100 runnable entries start");
    let mut ls = sb.cmd("agent-box-session");
    ls.arg("ls");
    let out = output_within(ls, limit).code(0);
    assert_eq!(stdout(&out).lines().count(), 10_001);
    let mut ls = sb.cmd("agent-box-session");
    ls.args(["ls", "--json"]);
    let out = output_within(ls, limit);
    let report: LsReport = serde_json::from_str(&stdout(&out.code(0))).unwrap();
    assert_eq!(report.sessions.len(), 10_000);
    let mut tick = sb.cmd("agent-box-supervisor");
    tick.arg("--once");
    // a second tick completes too
    output_within(tick, limit).code(0);
}

/// A tmux server on the default socket name inside the sandbox's private directory: where a call that forgot
/// `-L` would land. Killed through the adapter when dropped.
struct Canary(Tmux);

impl Canary {
    fn new(sb: &Sandbox) -> Self {
        let bin = PathBuf::from(sb.env_var("AGENT_BOX_TMUX_BIN").unwrap());
        let config = TmuxConfig::new(bin, "default", sb.tmux_dir()).with_conf("/dev/null");
        let tmux = Tmux::new(config)
            .with_parent_env(vec![("PATH".into(), "/usr/bin:/bin".into()), ("HOME".into(), sb.home().into())]);
        let argv = vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()];
        let request =
            NewSession { name: SessionName::parse("canary").unwrap(), cwd: sb.home().into(), env: vec![], argv };
        tmux.new_session(&request).unwrap();
        Self(tmux)
    }
    fn state(&self) -> (Vec<String>, String, Option<String>) {
        let name = SessionName::parse("canary").unwrap();
        (
            self.0.list_sessions().unwrap(),
            self.0.display(&name, "#{pane_pid} #{session_windows}").unwrap(),
            self.0.show_global_option("exit-empty").unwrap(),
        )
    }
}

impl Drop for Canary {
    fn drop(&mut self) {
        let _ = self.0.kill_server();
    }
}

// H12
#[test]
fn the_default_socket_is_never_reached() {
    let mut sb = Sandbox::new();
    sb.set_env("AGENT_BOX_DEFAULT_AGENT", "tool");
    fs::create_dir_all(sb.home().join(".local/state/local-webhook")).unwrap();
    let canary = Canary::new(&sb);
    let before = canary.state();
    assert_eq!(before.0, ["canary"]);
    // SV01: first spawn from the seed, starting the box server.
    sb.write_seed(r#"{"version":1,"sessions":{"main":{"agent":"claude","initialPrompt":"Review open PRs"}}}"#);
    sb.once();
    sb.wait_live("main");
    // SV07: a leased pane killed from outside is marked vanished and respawned.
    sb.add_entry("hook-l", tool(json!({"extraArgs": ["--as", "hook-l"]})));
    sb.create_lease("hook-l");
    sb.once();
    sb.wait_live("hook-l");
    sb.kill_pane("hook-l");
    sb.once();
    sb.wait_live("hook-l");
    assert_eq!(sb.lease("hook-l").unwrap()["outcome"], json!("vanished"));
    // SV15: the box server killed, everything respawned.
    sb.tmux().kill_server().unwrap();
    sb.once();
    sb.wait_live("main");
    sb.wait_live("hook-l");
    // The CLI's mutating verbs.
    ok(&sb, &["stop", "main"]);
    ok(&sb, &["restart", "main"]);
    ok(&sb, &["rm", "hook-l"]);
    sb.once();
    sb.wait_live("main");
    ok(&sb, &["ls"]);
    ok(&sb, &["peers"]);
    // WH01 and an accepted batch.
    let key: OsString = "acme/widgets".into();
    webhook_spawn(&sb, &[("LOCAL_WEBHOOK_SPAWN_KEY", &key)], b"\n\n").code(0).stdout("");
    webhook_spawn(&sb, &[("LOCAL_WEBHOOK_SPAWN_KEY", &key)], b"[github] issue #1 opened\n").code(0);
    sb.once();
    wait_until("the hook session", || sb.live().iter().any(|n| n.starts_with("hook-acme")));
    assert_eq!(canary.state(), before, "the canary server is untouched");
}

/// Sets its flag when dropped, so a thread polling the flag ends whichever way the scope is left.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
