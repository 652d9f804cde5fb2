//! Supervisor scenarios (80-acceptance §5, 30-supervisor §18): real tmux on a private socket, fake agents, the
//! real baked epilogue where a pane must report its end (slots), `--once` for counted single steps.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent_box_tests::fixtures::stderr;
use agent_box_tests::{HeldLock, Sandbox, wait_until};
use base::SessionName;
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use tmux::{NewSession, TmuxApi};

fn side_launch_id(sb: &Sandbox, name: &str) -> Option<String> {
    let side: Value = serde_json::from_slice(&fs::read(sb.side_file(name)).ok()?).ok()?;
    side["launchSessionId"].as_str().map(str::to_owned)
}

fn mode(path: &std::path::Path) -> u32 {
    fs::metadata(path).unwrap().mode() & 0o777
}

// SV01, 30 I1
#[test]
fn first_spawn_installs_the_seed_and_mirrors() {
    let sb = Sandbox::new();
    sb.write_seed(r#"{"version":1,"sessions":{"main":{"agent":"claude","initialPrompt":"Review open PRs"}}}"#);
    sb.once();
    assert_eq!(mode(&sb.home().join(".config")), 0o700);
    assert_eq!(mode(&sb.home().join(".config/agent-box")), 0o700);
    assert_eq!(mode(&sb.registry()), 0o600);
    sb.wait_live("main");
    let id = side_launch_id(&sb, "main").expect("side file with a launch id");
    assert!(base::is_uuid(&id));
    let entry = sb.entry("main").unwrap();
    assert_eq!(
        (&entry["hasRun"], &entry["initialPrompt"], &entry["boxSessionId"]),
        (&json!(true), &Value::Null, &json!(id))
    );
    let agent = sb.agent("main");
    wait_until("the agent to start", || agent.starts() == 1);
    let argv = agent.last().argv_strings();
    assert_eq!(argv[argv.len() - 2..], ["--", "Review open PRs"]);
    let at = argv.iter().position(|a| a == "--session-id").unwrap();
    assert_eq!(argv[at + 1], id);
    assert_eq!(mode(&sb.launch_file("main")), 0o600);
}

// SV02
#[test]
fn a_seed_with_a_list_gives_the_empty_registry_and_one_message() {
    let sb = Sandbox::new();
    sb.write_seed(r#"{"version":1,"sessions":[]}"#);
    let stderr = stderr(&sb.once());
    assert_eq!(stderr.matches("ignoring seed").count(), 1, "{stderr}");
    assert_eq!(fs::read(sb.registry()).unwrap(), b"{\"version\":1,\"sessions\":{}}\n");
    assert!(sb.live().is_empty());
}

// SV03
#[test]
fn an_existing_registry_is_never_replaced_by_the_seed() {
    let sb = Sandbox::new();
    sb.write_seed(r#"{"version":1,"sessions":{"main":{"agent":"tool"}}}"#);
    sb.write_registry(&registry_with(&[("x", json!({"agent": "tool", "stopped": true}))]));
    sb.once();
    assert!(sb.entry("main").is_none());
    assert!(sb.entry("x").is_some());
}

// SV05, 30 I3
#[test]
fn a_clean_exit_parks_and_is_not_respawned() {
    let sb = Sandbox::in_slot();
    sb.agent("main").control("exit 0");
    sb.write_registry(&registry_with(&[("main", tool(json!({}))), ("other", tool(json!({})))]));
    sb.once();
    wait_until("main to park", || sb.entry("main").is_some_and(|e| e["stopped"] == json!(true)));
    sb.wait_gone("main");
    sb.ticks(3);
    assert_eq!(sb.agent("main").starts(), 1);
    assert!(!sb.is_live("main"));
}

// SV06, 30 I4
#[test]
fn a_crash_is_recorded_and_its_pane_kept() {
    let sb = Sandbox::in_slot();
    sb.agent("main").control("exit 3");
    sb.write_registry(&registry_with(&[("main", tool(json!({})))]));
    sb.once();
    wait_until("died:3", || sb.entry("main").is_some_and(|e| e["died"] == json!(3)));
    sb.ticks(3);
    assert_eq!(sb.agent("main").starts(), 1, "the post-mortem shell is never respawned over");
    assert!(sb.is_live("main"), "the post-mortem pane stays");
    assert!(sb.entry("main").unwrap().get("stopped").is_none());
}

// SV08, 30 I4
#[test]
fn restart_of_a_died_session_respawns_then_clears_died() {
    let sb = Sandbox::in_slot();
    sb.agent("main").control("exit 3");
    sb.write_registry(&registry_with(&[("main", tool(json!({})))]));
    sb.create_lease("main");
    sb.once();
    wait_until("died:3", || sb.entry("main").is_some_and(|e| e["died"] == json!(3)));
    sb.agent("main").control("run");
    sb.restart("main");
    assert_eq!(sb.entry("main").unwrap()["died"], json!(3), "restart never clears died");
    sb.once();
    sb.wait_live("main");
    wait_until("the second start", || sb.agent("main").starts() == 2);
    assert!(sb.entry("main").unwrap().get("died").is_none(), "died removed after the respawn");
    assert_eq!(sb.lease("main").unwrap()["outcome"], json!("died:3"), "no vanished over the crash");
}

// SV07, 30 I6
#[test]
fn a_killed_leased_pane_is_marked_vanished_and_respawned() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[("hook-x", tool(json!({"ephemeral": true})))]));
    let g = sb.create_lease("hook-x");
    sb.once();
    wait_until("the first start", || sb.agent("hook-x").starts() == 1);
    assert_eq!(side_file_gen(&sb, "hook-x").as_deref(), Some(g.as_str()));
    sb.kill_pane("hook-x");
    sb.once();
    let lease = sb.lease("hook-x").unwrap();
    assert_eq!(lease["outcome"], json!("vanished"));
    assert!(lease["endedAt"].is_string());
    sb.wait_live("hook-x");
    wait_until("the respawn", || sb.agent("hook-x").starts() == 2);
}

/// The timer's period in the wake scenarios: far beyond any wait of a test (20 s × AGENT_BOX_TEST_SLOW), so
/// whatever happens there happened because something woke the loop, never because the timer ran out.
const TIMER_OUT_OF_THE_WAY: &str = "3600";

/// Starts the loop with the timer out of the way and waits until it is idle: the first tick spawned `hook-x` and
/// wrote its mirrors into the registry, which woke exactly one more tick; after that nothing but a wake runs one.
fn start_idle_with_the_timer_out_of_the_way(sb: &mut Sandbox) -> u32 {
    sb.use_counting_tmux();
    sb.set_env("AGENT_BOX_TICK_SECS", TIMER_OUT_OF_THE_WAY);
    sb.write_registry(&registry_with(&[("hook-x", tool(json!({"ephemeral": true, "extraArgs": ["--as", "hook-x"]})))]));
    sb.create_lease("hook-x");
    let pid = sb.start_supervisor();
    wait_until("the first start", || sb.agent("hook-x").starts() == 1);
    wait_until("the tick the mirrors' write woke", || sb.ticks_of(pid) >= 2);
    pid
}

/// Issue 12: tmux's session-closed hook wakes the loop. With the timer put out of the way, a killed leased pane is
/// still marked `vanished` and respawned; the hook was installed by one `set-hook` call, in the first tick.
// SV07
#[test]
fn a_killed_pane_is_marked_and_respawned_by_the_session_closed_wake() {
    let mut sb = Sandbox::new();
    let pid = start_idle_with_the_timer_out_of_the_way(&mut sb);
    let ticks = sb.ticks_of(pid);
    sb.kill_pane("hook-x");
    wait_until("the lease to read vanished", || sb.lease("hook-x").is_some_and(|l| l["outcome"] == json!("vanished")));
    wait_until("the respawn", || sb.agent("hook-x").starts() == 2);
    assert!(sb.ticks_of(pid) > ticks, "a tick ran after the kill");
    let hooks: Vec<String> = sb.tmux_calls_of(pid).into_iter().filter(|c| c.contains("set-hook")).collect();
    assert_eq!(hooks.len(), 1, "{hooks:#?}");
    assert!(hooks[0].contains("-g session-closed[4242] run-shell -b"), "{}", hooks[0]);
    assert!(fs::read(sb.paths().tmux_wake()).unwrap().is_empty(), "the wake writes nothing");
    assert_eq!(mode(&sb.paths().tmux_wake()), 0o600);
}

/// Issue 12: a HOME holding quotes, `$(…)`, backquotes, `#(…)` and `#{…}` reaches the session-closed hook only as
/// the wake file's path: killing a session still wakes the loop (timer out of the way), and nothing else runs.
// H04
#[test]
fn a_hostile_home_reaches_the_session_closed_wake_only_as_a_path() {
    let marker_dir = tempfile::tempdir().unwrap();
    let marker = |n: u32| marker_dir.path().join(format!("M{n}"));
    let home = format!(
        "h 'q' $(touch {}) `touch {}` #(touch {}) #{{pane_pid}} \"d\" ;x",
        marker(1).display(),
        marker(2).display(),
        marker(3).display()
    );
    let mut sb = Sandbox::with_home(&home);
    start_idle_with_the_timer_out_of_the_way(&mut sb);
    sb.kill_pane("hook-x");
    wait_until("the lease to read vanished", || sb.lease("hook-x").is_some_and(|l| l["outcome"] == json!("vanished")));
    wait_until("the respawn", || sb.agent("hook-x").starts() == 2);
    assert!(sb.paths().tmux_wake().starts_with(sb.home()));
    assert!((1..=3).all(|n| !marker(n).exists()), "a marker exists: text of HOME ran as a command");
    assert!(!sb.supervisor_log().contains("session-closed"), "{}", sb.supervisor_log());
}

fn side_file_gen(sb: &Sandbox, name: &str) -> Option<String> {
    let side: Value = serde_json::from_slice(&fs::read(sb.side_file(name)).ok()?).ok()?;
    side["leaseGen"].as_str().map(str::to_owned)
}

// SV09
#[test]
fn stopped_entries_are_never_started_or_touched() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[
        ("parked", tool(json!({"stopped": true}))),
        ("kept", tool(json!({"stopped": true}))),
    ]));
    let kept = SessionName::parse("kept").unwrap();
    let argv = vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()];
    sb.tmux().new_session(&NewSession { name: kept, cwd: sb.home().into(), env: vec![], argv }).unwrap();
    sb.ticks(3);
    assert!(!sb.is_live("parked"));
    assert!(sb.is_live("kept"));
    assert_eq!(sb.agent("parked").starts(), 0);
}

// SV10, 30 I5
#[test]
fn every_shell_exit_parks() {
    let sb = Sandbox::in_slot();
    sb.write_registry(&registry_with(&[
        ("sh0", json!({"agent": "shell", "extraArgs": ["-c", "exit 0"]})),
        ("sh7", json!({"agent": "shell", "extraArgs": ["-c", "exit 7"]})),
    ]));
    sb.once();
    for name in ["sh0", "sh7"] {
        wait_until(&format!("{name} to park"), || sb.entry(name).is_some_and(|e| e["stopped"] == json!(true)));
        assert!(sb.entry(name).unwrap().get("died").is_none(), "{name}");
    }
}

// SV11, 30 I10
#[test]
fn an_ephemeral_clean_exit_is_reaped_without_a_reaped_line() {
    let sb = Sandbox::in_slot();
    sb.agent("hook-e").control("exit 0");
    sb.write_registry(&registry_with(&[("hook-e", tool(json!({"ephemeral": true})))]));
    sb.create_lease("hook-e");
    sb.once();
    wait_until("hook-e to park", || sb.entry("hook-e").is_some_and(|e| e["stopped"] == json!(true)));
    sb.wait_gone("hook-e");
    sb.once();
    assert!(sb.entry("hook-e").is_none(), "reaped");
    assert!(!sb.side_file("hook-e").exists() && !sb.launch_file("hook-e").exists(), "side files swept");
    assert!(sb.lease("hook-e").is_none());
    let hows: Vec<Value> = sb.hook_log().iter().map(|l| l["how"].clone()).collect();
    assert_eq!(hows, vec![json!("exited")]);
}

// SV12, 30 I11
#[test]
fn stop_of_a_leased_ephemeral_session_is_reaped_with_one_line() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[("hook-s", tool(json!({"ephemeral": true})))]));
    sb.create_lease("hook-s");
    sb.once();
    sb.wait_live("hook-s");
    sb.stop("hook-s");
    sb.once();
    sb.once();
    assert!(sb.entry("hook-s").is_none());
    assert!(sb.lease("hook-s").is_none());
    let ends: Vec<(Value, Value)> = sb.hook_log().iter().map(|l| (l["how"].clone(), l["outcome"].clone())).collect();
    assert_eq!(ends, vec![(json!("reaped"), json!("stopped"))], "the reap carries the operator's stop");
}

// SV13
#[test]
fn an_ephemeral_crash_is_never_reaped() {
    let sb = Sandbox::in_slot();
    sb.agent("hook-c").control("exit 1");
    sb.write_registry(&registry_with(&[("hook-c", tool(json!({"ephemeral": true})))]));
    sb.once();
    wait_until("died:1", || sb.entry("hook-c").is_some_and(|e| e["died"] == json!(1)));
    sb.ticks(2);
    assert_eq!(sb.entry("hook-c").unwrap()["died"], json!(1));
}

// SV14, 30 I21
#[test]
fn unmanaged_and_connect_panes_are_never_touched() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[]));
    for name in ["scratch", "_connect-x"] {
        let argv = vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()];
        let request = NewSession { name: SessionName::parse(name).unwrap(), cwd: sb.home().into(), env: vec![], argv };
        sb.tmux().new_session(&request).unwrap();
    }
    sb.ticks(5);
    assert!(sb.is_live("scratch") && sb.is_live("_connect-x"));
}

// SV16, 30 I25
#[test]
fn an_empty_registry_keeps_the_server_up() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[]));
    sb.once();
    assert!(sb.tmux().list_sessions().is_ok());
    assert_eq!(sb.tmux().show_global_option("exit-empty").unwrap().as_deref(), Some("off"));
}

// SV18, 30 I20
#[test]
fn an_unreadable_registry_is_left_alone() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    fs::create_dir_all(sb.registry()).unwrap();
    fs::create_dir_all(sb.state_dir().join("session")).unwrap();
    fs::write(sb.side_file("ghost"), b"{}").unwrap();
    let pid = sb.start_supervisor();
    sb.wait_ticks(pid, 3);
    assert_eq!(sb.log_count("cannot read"), 1, "{}", sb.supervisor_log());
    assert!(sb.registry().is_dir());
    assert!(sb.side_file("ghost").exists(), "no sweep without a document");
    assert!(!sb.supervisor_log().contains("corrupt"));
}

// SV20
#[test]
fn an_idle_tick_runs_one_tmux_process_and_writes_nothing() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    let entries: Vec<(String, Value)> = (0..5).map(|i| (format!("s{i}"), tool(json!({})))).collect();
    let refs: Vec<(&str, Value)> = entries.iter().map(|(n, e)| (n.as_str(), e.clone())).collect();
    sb.write_registry(&registry_with(&refs));
    let pid = sb.start_supervisor();
    wait_until("all five live", || (0..5).all(|i| sb.is_live(&format!("s{i}"))));
    sb.wait_ticks(pid, 2);
    let meta = fs::metadata(sb.registry()).unwrap();
    let before = sb.tmux_calls_of(pid).len();
    let ticks_before = sb.ticks_of(pid);
    sb.wait_ticks(pid, 5);
    let calls = sb.tmux_calls_of(pid);
    let window: Vec<&String> = calls[before..].iter().collect();
    let ticks = sb.ticks_of(pid) - ticks_before;
    assert_eq!(window.len(), ticks, "exactly one tmux process per tick: {window:#?}");
    assert!(window.iter().all(|c| c.contains("start-server") && c.contains("list-sessions")));
    let after = fs::metadata(sb.registry()).unwrap();
    assert_eq!((meta.ino(), meta.mtime_nsec()), (after.ino(), after.mtime_nsec()), "no registry write");
}

// SV21, 30 I14
#[test]
fn a_held_lock_stops_spawns_with_one_l9() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_registry(&registry_with(&[]));
    let pid = sb.start_supervisor();
    sb.wait_ticks(pid, 1);
    sb.with_registry_locked(|guard| {
        registry::edit(guard, |doc| {
            doc.insert_new(&SessionName::parse("z").unwrap(), tool(json!({})).as_object().cloned().unwrap())
                .map(|()| ((), true))
        })
        .unwrap();
        sb.wait_ticks(pid, 3);
        assert!(!sb.is_live("z"), "no spawn without the lock");
        assert_eq!(sb.log_count("registry lock not obtained"), 1, "{}", sb.supervisor_log());
    });
    sb.wait_live("z");
}

// SV22, 30 I16
#[test]
fn the_lock_is_free_right_after_a_spawn_that_started_the_server() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[("main", tool(json!({})))]));
    sb.once();
    let start = Instant::now();
    let lock = HeldLock::acquire(&sb.registry().with_extension("json.lock"), Duration::from_secs(2));
    assert!(lock.is_ok() && start.elapsed() < Duration::from_secs(2), "a tmux server holding the lock");
    let server_pid: u32 =
        sb.tmux().display(&SessionName::parse("main").unwrap(), "#{pid}").unwrap().trim().parse().unwrap();
    let lock_file = fs::canonicalize(sb.registry().with_extension("json.lock")).unwrap();
    let held = fs::read_dir(format!("/proc/{server_pid}/fd"))
        .unwrap()
        .flatten()
        .any(|e| fs::read_link(e.path()).ok() == Some(lock_file.clone()));
    assert!(!held, "the tmux server has the lock file open");
}

// SV23, 30 I13
#[test]
fn the_queue_drains_in_name_order_and_shell_is_exempt() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.set_limit("2");
    sb.write_registry(&registry_with(&[("c", tool(json!({}))), ("b", tool(json!({}))), ("a", tool(json!({})))]));
    let pid = sb.start_supervisor();
    sb.wait_live("a");
    sb.wait_live("b");
    sb.wait_ticks(pid, 3);
    assert!(!sb.is_live("c"));
    assert_eq!(sb.log_count("c waiting: Session limit reached"), 1, "{}", sb.supervisor_log());
    sb.stop("a");
    sb.wait_live("c");
    sb.add_entry("sh", json!({"agent": "shell", "extraArgs": ["-c", "sleep 600"]}));
    sb.wait_live("sh");
}

// SV24
#[test]
fn died_entries_hold_no_slot() {
    let sb = Sandbox::new();
    sb.set_limit("2");
    sb.write_registry(&registry_with(&[("a", tool(json!({"died": 1, "hasRun": true}))), ("b", tool(json!({})))]));
    let argv = vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()];
    sb.tmux()
        .new_session(&NewSession { name: SessionName::parse("a").unwrap(), cwd: sb.home().into(), env: vec![], argv })
        .unwrap();
    sb.once();
    sb.wait_live("b");
    sb.add_entry("c", tool(json!({})));
    sb.once();
    sb.wait_live("c");
}

// SV25, 30 I19
#[test]
fn ghost_side_files_are_swept_and_others_kept() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[("parked", tool(json!({"stopped": true})))]));
    let side = sb.state_dir().join("session");
    fs::create_dir_all(&side).unwrap();
    for file in ["ghost.json", "ghost.launch", "parked.json", "parked.launch", "bad name.json"] {
        fs::write(side.join(file), b"{}").unwrap();
    }
    sb.once();
    assert!(!side.join("ghost.json").exists() && !side.join("ghost.launch").exists());
    for kept in ["parked.json", "parked.launch", "bad name.json"] {
        assert!(side.join(kept).exists(), "{kept}");
    }
}

// SV26, 30 I22
#[test]
fn an_illegal_key_is_never_started_and_logged_once() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_registry(&registry_with(&[("bad name!", tool(json!({})))]));
    let side = sb.state_dir().join("session");
    fs::create_dir_all(&side).unwrap();
    fs::write(side.join("bad name!.json"), b"{}").unwrap();
    let pid = sb.start_supervisor();
    sb.wait_ticks(pid, 3);
    assert_eq!(
        sb.log_count("ignoring registry key \"bad name!\": names are [A-Za-z0-9_-]+"),
        1,
        "{}",
        sb.supervisor_log()
    );
    assert!(sb.live().is_empty());
    assert!(side.join("bad name!.json").exists());
}

// SV27, 30 I26
#[test]
fn the_dry_run_equals_the_real_spawn() {
    let sb = Sandbox::new();
    let id = "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90";
    sb.write_registry(&registry_with(&[(
        "main",
        json!({"agent": "claude", "boxSessionId": id, "initialPrompt": "it's $(id) time", "extraArgs": ["--as", "dry"]}),
    )]));
    let before = fs::read(sb.registry()).unwrap();
    let out = sb.cmd("agent-box-supervisor").args(["--print-command", "main"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(fs::read(sb.registry()).unwrap(), before, "the dry run writes nothing");
    assert!(!sb.launch_file("main").exists() && sb.live().is_empty());
    let text = out.stdout;
    let at = text.windows(8).position(|w| w == b"\nscript\n").unwrap() + 8;
    let script_file = sb.root().join("dry.launch");
    fs::write(&script_file, &text[at..]).unwrap();
    sb.agent("dry").control("exit 0");
    let ran = std::process::Command::new("/bin/sh")
        .arg(&script_file)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert!(ran.status.success());
    let dry = sb.agent("dry").last().argv;
    sb.agent("dry").control("run");
    sb.once();
    wait_until("the real start", || sb.agent("dry").starts() == 2);
    assert_eq!(sb.agent("dry").last().argv, dry);
}

// SV28, 30 I32
#[test]
fn pane_environment_with_and_without_webhook() {
    for webhook in [false, true] {
        let mut sb = Sandbox::new();
        let state = sb.root().join("hooks #{pane_pid}");
        fs::create_dir_all(&state).unwrap();
        sb.set_env("LOCAL_WEBHOOK_STATE_DIR", &state);
        sb.set_env("AGENT_BOX_REGISTRY_LOCK_FD", "9");
        if webhook {
            sb.set_env("AGENT_BOX_WEBHOOK_REPO", "1");
        }
        sb.write_registry(&registry_with(&[("main", tool(json!({})))]));
        sb.once();
        wait_until("the agent", || sb.agent("main").starts() == 1);
        let start = sb.agent("main").last();
        let bid = side_launch_id(&sb, "main").unwrap();
        assert_eq!(start.env_var("AGENT_BOX_SESSION_ID"), Some(bid.as_str()));
        assert_eq!(start.env_var("TMUX_TMPDIR"), Some(sb.tmux_dir().to_str().unwrap()));
        assert_eq!(start.env_var("AGENT_BOX_REGISTRY_LOCK_FD"), None);
        if webhook {
            assert_eq!(start.env_var("LOCAL_WEBHOOK_SESSION"), Some("agent-main"));
            assert_eq!(start.env_var("LOCAL_WEBHOOK_STATE_DIR"), Some(state.to_str().unwrap()));
            assert_eq!(start.env_var("LOCAL_WEBHOOK_PORT"), Some("0"));
        } else {
            assert_eq!(start.env_var("LOCAL_WEBHOOK_SESSION"), None);
        }
    }
}

// SV29, 30 I9
#[test]
fn the_pane_reports_against_its_own_gen() {
    let sb = Sandbox::in_slot();
    sb.write_registry(&registry_with(&[("hook-g", tool(json!({})))]));
    let g1 = sb.create_lease("hook-g");
    sb.once();
    wait_until("the agent", || sb.agent("hook-g").starts() == 1);
    let script = fs::read_to_string(sb.launch_file("hook-g")).unwrap();
    assert!(script.contains(&format!("hook-g 0 {g1}")) && script.contains(&format!("hook-g \"$s\" {g1}")));
    let leases = lease::LeaseDir::new(sb.state_dir().join("lease"));
    let name = SessionName::parse("hook-g").unwrap();
    leases.finish(&name, &lease::EndHow::Rm, &lease::Expect::Any, None).unwrap();
    sb.create_lease("hook-g");
    let g2_bytes = fs::read(sb.lease_path("hook-g")).unwrap();
    let pid = sb.agent("hook-g").pid(1);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), Signal::SIGTERM).unwrap();
    wait_until("died", || sb.entry("hook-g").is_some_and(|e| e.get("died").is_some()));
    assert_eq!(fs::read(sb.lease_path("hook-g")).unwrap(), g2_bytes, "the newer lease is untouched");
}

// SV30, 30 I2
#[test]
fn a_killed_pane_resumes_its_transcript_without_a_prompt() {
    let sb = Sandbox::new();
    let id = "11111111-2222-4333-8444-555555555555";
    sb.write_registry(&registry_with(&[(
        "main",
        json!({"agent": "claude", "boxSessionId": id, "hasRun": true, "initialPrompt": null}),
    )]));
    let project = sb.home().join(".claude/projects/-home-agent");
    fs::create_dir_all(&project).unwrap();
    let turn = json!({"type": "assistant", "message": {"model": "claude-x", "stop_reason": "end_turn", "content": []}});
    fs::write(project.join(format!("{id}.jsonl")), format!("{turn}\n")).unwrap();
    sb.once();
    wait_until("the agent", || sb.agent("main").starts() == 1);
    let argv = sb.agent("main").last().argv_strings();
    let at = argv.iter().position(|a| a == "--resume").expect("resume argv");
    assert_eq!(argv[at + 1], id);
    assert!(!argv.contains(&"--".to_string()), "no prompt: {argv:?}");
}

// SV31, 30 I33
#[test]
fn sigterm_ends_the_loop_and_leaves_sessions_running() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_registry(&registry_with(&[("main", tool(json!({})))]));
    let pid = sb.start_supervisor();
    sb.wait_live("main");
    sb.wait_ticks(pid, 1);
    sb.signal(pid, Signal::SIGTERM);
    assert_eq!(sb.wait_exit(pid, Duration::from_secs(30)), Some(0));
    assert!(sb.is_live("main"));
    assert_eq!(sb.log_count("SIGTERM received; exiting after this tick (sessions keep running)"), 1);
    assert!(HeldLock::acquire(&sb.registry().with_extension("json.lock"), Duration::ZERO).is_ok());
}

// SV32, 30 I23
#[test]
fn panes_that_keep_vanishing_back_off() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.set_env("AGENT_BOX_MARK_STOPPED", "/bin/true");
    sb.agent("flap").control("exit 0");
    sb.write_registry(&registry_with(&[("flap", tool(json!({})))]));
    let pid = sb.start_supervisor();
    wait_until("the first start", || sb.agent("flap").starts() >= 1);
    sb.wait_ticks(pid, 8);
    let starts = sb.agent("flap").starts();
    assert!(starts <= 6, "{starts} starts in 8 ticks: no backoff");
    let side: Value = serde_json::from_slice(&fs::read(sb.side_file("flap")).unwrap()).unwrap();
    assert!(side["backoffUntil"].is_string() && side["quickExits"].is_u64(), "{side}");
    assert!(sb.log_count("'flap' keeps exiting") >= 1);
}

// SV33, 30 I30
#[test]
fn a_missing_working_directory_starts_in_home() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_registry(&registry_with(&[("main", tool(json!({"workingDirectory": "/nonexistent/dir"})))]));
    let pid = sb.start_supervisor();
    wait_until("the agent", || sb.agent("main").starts() == 1);
    assert_eq!(sb.agent("main").last().cwd, sb.home().to_str().unwrap());
    sb.wait_ticks(pid, 2);
    assert_eq!(sb.log_count("working directory '/nonexistent/dir' is not usable"), 1);
}

// SV34
#[test]
fn orphan_filters_are_swept_at_start_up_after_their_grace() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[("main", tool(json!({"stopped": true})))]));
    let dir = sb.home().join(".local/state/local-webhook");
    fs::create_dir_all(&dir).unwrap();
    for file in [
        "filter.agent-ghost.json",
        "filter.agent-young.json",
        "filter.agent-main.json",
        "filter.dispatch.json",
        "filter.json",
        "filter.other-ghost.json",
    ] {
        fs::write(dir.join(file), b"{}").unwrap();
    }
    let old = fs::File::options().append(true).open(dir.join("filter.agent-ghost.json")).unwrap();
    old.set_modified(std::time::SystemTime::now() - Duration::from_secs(31)).unwrap();
    sb.once();
    assert!(!dir.join("filter.agent-ghost.json").exists());
    for kept in [
        "filter.agent-young.json",
        "filter.agent-main.json",
        "filter.dispatch.json",
        "filter.json",
        "filter.other-ghost.json",
    ] {
        assert!(dir.join(kept).exists(), "{kept}");
    }
}

// H04, 30 I27
#[test]
fn a_hostile_working_directory_runs_nothing() {
    let sb = Sandbox::new();
    let marker = sb.root().join("M4");
    let dir = sb.home().join(format!("w #(touch {}) #{{pane_pid}} 'q'", marker.display()));
    fs::create_dir_all(&dir).unwrap();
    let args = json!(["--as", "h", "'; touch m2; '", "$(touch m3)"]);
    sb.write_registry(&registry_with(&[(
        "h",
        tool(json!({"workingDirectory": dir.to_str().unwrap(), "extraArgs": args})),
    )]));
    sb.once();
    wait_until("the agent", || sb.agent("h").starts() == 1);
    let start = sb.agent("h").last();
    assert_eq!(start.cwd, dir.to_str().unwrap());
    assert_eq!(start.argv_strings(), ["--as", "h", "'; touch m2; '", "$(touch m3)"]);
    assert!(!marker.exists());
}

// H05
#[test]
fn a_95_kib_prompt_reaches_the_agent_byte_for_byte() {
    let sb = Sandbox::new();
    let prompt: String = (0..95 * 1024).map(|i| ['a', '\'', ' ', '\n', 'é', '$'][i % 6]).collect();
    sb.write_registry(&registry_with(&[("big", json!({"agent": "tool", "initialPrompt": prompt.clone()}))]));
    sb.once();
    wait_until("the agent", || sb.agent("big").starts() == 1);
    let argv = sb.agent("big").last().argv;
    assert_eq!(argv.last().unwrap(), prompt.as_bytes());
    assert_eq!(mode(&sb.launch_file("big")), 0o600);
}

// X01, 30 I12
#[test]
fn removed_sessions_never_come_back() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_registry(&registry_with(&[]));
    let pid = sb.start_supervisor();
    let seed: u64 = rand::random();
    eprintln!("x01 seed {seed}");
    let mut state = seed;
    for round in 0..20 {
        sb.add_entry("racer", tool(json!({})));
        sb.wait_live("racer");
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis((state >> 33) % 96));
        sb.rm("racer");
        sb.wait_gone("racer");
        assert!(sb.entry("racer").is_none(), "round {round}");
    }
    sb.wait_ticks(pid, 3);
    assert!(sb.entry("racer").is_none());
    assert!(!sb.is_live("racer"));
}

// SV04
#[test]
fn a_new_entry_starts_on_the_early_wake() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_registry(&registry_with(&[]));
    sb.start_supervisor();
    wait_until("the loop to start", || sb.log_count("started (tmux socket") == 1);
    sb.add_entry("y", tool(json!({})));
    sb.wait_live("y");
}

// SV15, 30 I24
#[test]
fn a_killed_server_comes_back_with_every_session() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_registry(&registry_with(&[("a", tool(json!({}))), ("b", tool(json!({}))), ("hook-l", tool(json!({})))]));
    sb.create_lease("hook-l");
    let pid = sb.start_supervisor();
    wait_until("all live", || ["a", "b", "hook-l"].iter().all(|n| sb.agent(n).starts() == 1));
    sb.wait_ticks(pid, 1);
    sb.tmux().kill_server().unwrap();
    wait_until("all respawned", || ["a", "b", "hook-l"].iter().all(|n| sb.agent(n).starts() == 2));
    assert_eq!(sb.tmux().show_global_option("exit-empty").unwrap().as_deref(), Some("off"));
    assert_eq!(sb.lease("hook-l").unwrap()["outcome"], json!("vanished"));
    assert_eq!(sb.log_count("managed sessions disappeared at once"), 1, "{}", sb.supervisor_log());
}

// SV17, 30 I18
#[test]
fn a_corrupt_registry_is_quarantined_and_its_leases_spared() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_seed(r#"{"version":1,"sessions":{"main":{"agent":"tool"}}}"#);
    sb.write_registry(&registry_with(&[("hook-old", tool(json!({"stopped": true})))]));
    sb.create_lease("hook-old");
    let old = fs::File::options().append(true).open(sb.lease_path("hook-old")).unwrap();
    old.set_modified(std::time::SystemTime::now() - Duration::from_secs(120)).unwrap();
    let pid = sb.start_supervisor();
    sb.wait_ticks(pid, 1);
    let staged = sb.registry().with_extension("staged");
    fs::write(&staged, b"not json").unwrap();
    fs::set_permissions(&staged, fs::Permissions::from_mode(0o640)).unwrap();
    fs::rename(&staged, sb.registry()).unwrap();
    sb.wait_live("main");
    let dir = sb.registry().parent().unwrap().to_path_buf();
    let kept: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
        .collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(fs::read(kept[0].path()).unwrap(), b"not json");
    assert_eq!(mode(&kept[0].path()), 0o640);
    sb.wait_ticks(pid, 3);
    assert!(sb.lease("hook-old").is_some(), "the quarantine pauses lease sweeps");
    assert_eq!(sb.log_count("is not a valid sessions.json"), 1, "{}", sb.supervisor_log());
}

use agent_box_tests::fixtures::{registry_with, tool};
use std::os::unix::fs::PermissionsExt;

// LS04
#[test]
fn a_crash_after_vanished_keeps_vanished() {
    let sb = Sandbox::in_slot();
    sb.write_registry(&registry_with(&[("hook-v", tool(json!({})))]));
    sb.create_lease("hook-v");
    sb.once();
    wait_until("the first start", || sb.agent("hook-v").starts() == 1);
    sb.kill_pane("hook-v");
    sb.agent("hook-v").control("exit 1");
    sb.once();
    let ended = sb.lease("hook-v").unwrap()["endedAt"].clone();
    wait_until("died:1", || sb.entry("hook-v").is_some_and(|e| e["died"] == json!(1)));
    let lease = sb.lease("hook-v").unwrap();
    assert_eq!((&lease["outcome"], &lease["endedAt"]), (&json!("vanished"), &ended));
}

// LS09
#[test]
fn heartbeat_sets_last_seen_once_a_minute_and_freezes_with_an_outcome() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[("hook-h", tool(json!({})))]));
    sb.create_lease("hook-h");
    sb.once();
    sb.wait_live("hook-h");
    assert_eq!(sb.lease("hook-h").unwrap()["lastSeenAt"], Value::Null, "not seen before the spawn tick");
    sb.once();
    let seen = sb.lease("hook-h").unwrap()["lastSeenAt"].clone();
    assert!(seen.is_string());
    sb.once();
    assert_eq!(sb.lease("hook-h").unwrap()["lastSeenAt"], seen, "unchanged within a minute");
}

// LS10, 30 I19
#[test]
fn unlisted_leases_are_swept_after_30s_and_listed_ones_kept() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[
        ("hook-st", tool(json!({"stopped": true}))),
        ("hook-di", tool(json!({"stopped": true, "died": 1}))),
    ]));
    for (name, age) in [("hook-old", 31), ("hook-young", 20), ("hook-st", 600), ("hook-di", 600)] {
        sb.create_lease(name);
        let file = fs::File::options().append(true).open(sb.lease_path(name)).unwrap();
        file.set_modified(std::time::SystemTime::now() - Duration::from_secs(age)).unwrap();
    }
    sb.once();
    assert!(sb.lease("hook-old").is_none());
    for kept in ["hook-young", "hook-st", "hook-di"] {
        assert!(sb.lease(kept).is_some(), "{kept}");
    }
    let swept: Vec<Value> = sb.hook_log().into_iter().filter(|l| l["how"] == json!("swept")).collect();
    assert_eq!(swept.len(), 1);
    assert_eq!(swept[0]["name"], json!("hook-old"));
}

// X03
#[test]
fn a_stop_written_while_the_supervisor_waits_for_the_lock_wins() {
    for control in [false, true] {
        let mut sb = Sandbox::new();
        sb.use_counting_tmux();
        sb.write_registry(&registry_with(&[]));
        let pid = sb.start_supervisor();
        sb.wait_ticks(pid, 1);
        let z = SessionName::parse("z").unwrap();
        sb.with_registry_locked(|guard| {
            registry::edit(guard, |doc| {
                doc.insert_new(&z, tool(json!({})).as_object().cloned().unwrap()).map(|()| ((), true))
            })
            .unwrap();
            sb.wait_ticks(pid, 1);
            if !control {
                registry::edit(guard, |doc| {
                    let changed = doc.entry_mut(&z).is_some_and(|mut e| e.set("stopped", Value::Bool(true)));
                    Ok(((), changed))
                })
                .unwrap();
            }
        });
        if control {
            sb.wait_live("z");
        } else {
            sb.wait_ticks(pid, 3);
            assert!(!sb.is_live("z"), "a stopped entry appeared in tmux");
        }
    }
}

// X05
#[test]
fn restart_of_a_crashed_leased_session_keeps_died_until_a_clean_exit() {
    let sb = Sandbox::in_slot();
    sb.agent("hook-r").control("exit 1");
    sb.write_registry(&registry_with(&[("hook-r", tool(json!({"ephemeral": true})))]));
    sb.create_lease("hook-r");
    sb.once();
    wait_until("died:1", || sb.entry("hook-r").is_some_and(|e| e["died"] == json!(1)));
    sb.agent("hook-r").control("poll");
    sb.restart("hook-r");
    sb.once();
    wait_until("the second start", || sb.agent("hook-r").starts() == 2);
    assert_eq!(sb.lease("hook-r").unwrap()["outcome"], json!("died:1"));
    assert!(sb.entry("hook-r").unwrap().get("died").is_none());
    sb.agent("hook-r").control("exit-now 0");
    wait_until("the clean exit", || sb.lease("hook-r").is_none());
    let hows: Vec<Value> = sb.hook_log().iter().map(|l| l["how"].clone()).collect();
    assert_eq!(hows, vec![json!("died:1"), json!("exited")]);
    sb.once();
    assert!(sb.entry("hook-r").is_none(), "reaped after the clean exit");
}

// X10
#[test]
fn a_new_supervisor_adopts_live_panes_without_respawning() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_registry(&registry_with(&[("a", tool(json!({}))), ("hook-x", tool(json!({})))]));
    sb.create_lease("hook-x");
    let first = sb.start_supervisor();
    wait_until("both started", || sb.agent("a").starts() == 1 && sb.agent("hook-x").starts() == 1);
    sb.signal(first, Signal::SIGTERM);
    assert_eq!(sb.wait_exit(first, Duration::from_secs(30)), Some(0));
    let second = sb.start_supervisor();
    sb.wait_ticks(second, 3);
    assert_eq!((sb.agent("a").starts(), sb.agent("hook-x").starts()), (1, 1), "no respawn of live panes");
    assert_eq!(sb.lease("hook-x").unwrap()["outcome"], Value::Null, "no vanished");
    assert_eq!(sb.tmux_calls_of(second).iter().filter(|c| c.contains("new-session")).count(), 0);
}

/// 30 SUP-2 step 6a (new): a supervisor SIGKILLed between `new-session` and the side-file record leaves a live
/// pane whose launch nobody recorded. The next supervisor adopts it at start-up (launch id from the pane's
/// `AGENT_BOX_SESSION_ID`, the lease gen), so when that pane is then killed the lease reads `vanished` and the
/// respawn resumes the same launch instead of a first spawn.
#[test]
fn sup_2_6a_a_spawn_the_dying_supervisor_never_recorded_is_adopted_then_marked_vanished() {
    let mut sb = Sandbox::new();
    sb.write_registry(&registry_with(&[("hook-k", tool(json!({"ephemeral": true})))]));
    let lease_gen = sb.create_lease("hook-k");
    let plain_tmux = sb.env_var("AGENT_BOX_TMUX_BIN").unwrap().to_owned();
    sb.kill_caller_after_new_session("hook-k");
    let doomed = sb.start_supervisor();
    assert_eq!(sb.wait_exit(doomed, Duration::from_secs(30)), None, "SIGKILLed right after new-session");
    assert!(sb.is_live("hook-k"));
    assert!(side_launch_id(&sb, "hook-k").is_some(), "the intent was recorded before new-session (issue 17)");
    sb.set_env("AGENT_BOX_TMUX_BIN", plain_tmux);
    sb.use_counting_tmux();
    let second = sb.start_supervisor();
    sb.wait_ticks(second, 2);
    sb.kill_pane("hook-k");
    wait_until("the next start", || sb.agent("hook-k").starts() == 2);
    assert_eq!(sb.lease("hook-k").unwrap()["outcome"], json!("vanished"), "the killed pane is accounted for");
    let launch_id = sb.agent("hook-k").start(1).env_var("AGENT_BOX_SESSION_ID").unwrap().to_owned();
    assert_eq!(sb.agent("hook-k").last().env_var("AGENT_BOX_SESSION_ID"), Some(launch_id.as_str()), "a respawn");
    assert_eq!(side_launch_id(&sb, "hook-k"), Some(launch_id), "the adopted launch id");
    assert_eq!(side_file_gen(&sb, "hook-k"), Some(lease_gen), "and the lease gen");
}

// X04
#[test]
fn the_post_check_kills_a_spawn_whose_entry_vanished_meanwhile() {
    let mut sb = Sandbox::new();
    sb.write_registry(&registry_with(&[("z", tool(json!({})))]));
    let without_z = sb.root().join("without-z.json");
    fs::write(&without_z, registry_with(&[])).unwrap();
    let real = sb.env_var("AGENT_BOX_TMUX_BIN").unwrap().to_owned();
    let wrapper = sb.root().join("bin/tmux-hook");
    let script = format!(
        "#!/bin/sh\n'{real}' \"$@\"; s=$?\ncase \" $* \" in *\" new-session \"*\" z \"*) cp '{copy}' '{reg}.x' && mv '{reg}.x' '{reg}' ;; esac\nexit $s\n",
        real = real.to_string_lossy(),
        copy = without_z.display(),
        reg = sb.registry().display()
    );
    fs::write(&wrapper, script).unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    sb.set_env("AGENT_BOX_TMUX_BIN", &wrapper);
    let out = sb.once();
    let stderr = stderr(&out);
    assert_eq!(
        stderr.matches("'z' was removed or stopped while it was starting; killed the new pane").count(),
        1,
        "{stderr}"
    );
    assert!(!sb.is_live("z"));
    assert!(!sb.side_file("z").exists());
}

// SV20
#[test]
fn two_hundred_live_entries_idle_tick_one_tmux_process_no_write() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.set_limit("256");
    let entries: Vec<(String, Value)> = (0..200).map(|i| (format!("e{i:03}"), tool(json!({})))).collect();
    let refs: Vec<(&str, Value)> = entries.iter().map(|(n, e)| (n.as_str(), e.clone())).collect();
    sb.write_registry(&registry_with(&refs));
    let pid = sb.start_supervisor();
    agent_box_tests::wait::wait_until_or(
        "200 live panes",
        Duration::from_secs(120),
        || sb.live().len() == 200,
        String::new,
    );
    sb.wait_ticks(pid, 2);
    let registry_meta = fs::metadata(sb.registry()).unwrap();
    let side_mtime = fs::metadata(sb.side_file("e100")).unwrap().mtime_nsec();
    let (calls_before, ticks_before) = (sb.tmux_calls_of(pid).len(), sb.ticks_of(pid));
    sb.wait_ticks(pid, 3);
    let calls = sb.tmux_calls_of(pid);
    let ticks = sb.ticks_of(pid) - ticks_before;
    assert_eq!(calls.len() - calls_before, ticks, "one tmux process per idle tick");
    let after = fs::metadata(sb.registry()).unwrap();
    assert_eq!((registry_meta.ino(), registry_meta.mtime_nsec()), (after.ino(), after.mtime_nsec()));
    assert_eq!(fs::metadata(sb.side_file("e100")).unwrap().mtime_nsec(), side_mtime);
}

// RG13, SUP-10.5
#[test]
fn temps_of_killed_writers_are_swept_under_their_locks() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[]));
    let filters = sb.home().join(".local/state/local-webhook");
    fs::create_dir_all(&filters).unwrap();
    fs::create_dir_all(sb.state_dir().join("lease")).unwrap();
    let ours = [
        sb.registry().with_extension("json.tmp-ab12cd34"),
        filters.join("filter.agent-hook-x.json.tmp-ab12cd34"),
        sb.state_dir().join("lease/hook-x.json.tmp-ab12cd34"),
        sb.state_dir().join("hook-sessions.jsonl.tmp-ab12cd34"),
        sb.state_dir().join("webhook-spawn-refused.json.tmp-ab12cd34"),
    ];
    let foreign = [
        sb.registry().with_extension("json.XXXXXX"),
        filters.join("filter.agent-hook-x.json.tmp-ABCDEFGH"),
        filters.join("filter.other-hook-x.json.tmp-ab12cd34"),
        filters.join("filter.json.tmp-ab12cd34"),
    ];
    for file in ours.iter().chain(&foreign) {
        fs::write(file, b"t").unwrap();
    }
    sb.once();
    for file in &ours {
        assert!(!file.exists(), "{file:?} left behind");
    }
    for file in &foreign {
        assert!(file.exists(), "{file:?} is not ours to delete");
    }
}

#[test]
fn sup_4_1_l2_once_while_tmux_cannot_be_reached_then_l3() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    let counting = PathBuf::from(sb.env_var("AGENT_BOX_TMUX_BIN").unwrap());
    let down = sb.root().join("tmux-down");
    let flaky = sb.root().join("bin/tmux-flaky");
    let script = format!(
        "#!/bin/sh\nif [ -e '{down}' ]; then printf '%s %s\\n' \"$PPID\" \"$*\" >> '{log}'; echo 'boom: socket trouble' >&2; exit 1; fi\nexec '{real}' \"$@\"\n",
        down = down.display(),
        log = sb.root().join("tmux.log").display(),
        real = counting.display()
    );
    fs::write(&flaky, script).unwrap();
    fs::set_permissions(&flaky, fs::Permissions::from_mode(0o755)).unwrap();
    sb.set_env("AGENT_BOX_TMUX_BIN", &flaky);
    fs::write(&down, b"").unwrap();
    sb.write_registry(&registry_with(&[("main", tool(json!({})))]));
    let pid = sb.start_supervisor();
    sb.wait_ticks(pid, 3);
    assert_eq!(sb.log_count("cannot reach tmux (boom: socket trouble); no session can be started or checked"), 1);
    assert!(!sb.is_live("main"), "nothing starts while tmux cannot be asked");
    fs::remove_file(&down).unwrap();
    sb.wait_live("main");
    assert_eq!(sb.log_count("tmux is reachable again"), 1, "{}", sb.supervisor_log());
}

#[test]
fn sup_1_l19_an_inherited_lock_fd_is_ignored_and_said_once() {
    let mut sb = Sandbox::new();
    sb.set_env("AGENT_BOX_REGISTRY_LOCK_FD", "9");
    sb.write_registry(&registry_with(&[("main", tool(json!({})))]));
    let stderr = stderr(&sb.once());
    assert_eq!(stderr.matches("agent-box-supervisor: ignoring inherited AGENT_BOX_REGISTRY_LOCK_FD").count(), 1);
    sb.wait_live("main");
}
