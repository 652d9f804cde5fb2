//! Upgrades never end a session (75-upgrades §4, UP01–UP05): the tmux server runs in a unit of its own, stood in for
//! by a `tmux -D` process the sandbox tracks; the supervisor runs with `AGENT_BOX_TMUX_SERVER=external`; an
//! "upgrade" is SIGTERM to the supervisor and a copy of its binary, at another path, started in its place.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use agent_box_tests::fixtures::{registry_with, tool};
use agent_box_tests::fleet::{Fleet, replace_in_place};
use agent_box_tests::{Sandbox, wait_until};
use nix::sys::signal::Signal;
use serde_json::{Value, json};
use tmux::{TmuxApi, TmuxError};

const WAITING: &str = "tmux server is not running; its unit starts it \u{2014} waiting";

/// The epilogue at a stable path (UP-3.3), which every launch file names; returns that path.
fn stable_epilogue(sb: &mut Sandbox) -> PathBuf {
    let stable = sb.root().join("etc/mark-stopped");
    replace_in_place(&sb.epilogue(), &stable);
    sb.set_env("AGENT_BOX_MARK_STOPPED", &stable);
    stable
}

/// The parent pid of `pid`, from `/proc/<pid>/stat`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..].split(' ').nth(1)?.parse().ok()
}

/// True when `ancestor` is `pid`'s parent, grandparent or great-grandparent (agent ← pane shell ← server).
fn descends_from(pid: u32, ancestor: u32) -> bool {
    std::iter::successors(parent_of(pid), |&p| parent_of(p)).take(3).any(|p| p == ancestor)
}

fn alive(pid: u32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()), None).is_ok()
}

/// Sets every lease's `lastSeenAt` ten minutes back, so the next heartbeat shows as a change.
fn age_heartbeats(sb: &Sandbox, names: &[String]) -> String {
    let old = base::time::format_iso(base::time::now_epoch() - 600);
    for name in names {
        let mut lease = sb.lease(name).unwrap();
        lease["lastSeenAt"] = json!(old);
        fs::write(sb.lease_path(name), serde_json::to_vec(&lease).unwrap()).unwrap();
    }
    old
}

/// The tmux calls of `pid` after the first `from` of them.
fn calls_after(sb: &Sandbox, pid: u32, from: usize) -> Vec<String> {
    sb.tmux_calls_of(pid).into_iter().skip(from).collect()
}

// UP01, UP02, UP03
#[test]
fn an_upgrade_keeps_every_pane_and_old_panes_report_through_the_stable_path() {
    let mut sb = Sandbox::in_slot();
    Fleet::prepare(&mut sb, "16");
    let baked = sb.epilogue();
    let stable = stable_epilogue(&mut sb);
    // UP01: the tmux unit, then the supervisor of its server, over 10 sessions of which 4 are leased hook sessions.
    let unit = sb.start_tmux_unit();
    sb.set_env("AGENT_BOX_TMUX_SERVER", "external");
    let plain: Vec<String> = (0..6).map(|i| format!("s{i}")).collect();
    let hooks: Vec<String> = (0..4).map(|i| format!("hook-{i}")).collect();
    let mut entries: Vec<(&str, Value)> = plain.iter().map(|n| (n.as_str(), tool(json!({})))).collect();
    entries.extend(hooks.iter().map(|n| (n.as_str(), tool(json!({"ephemeral": true})))));
    sb.agent("hook-3").control("poll");
    let all: Vec<String> = plain.iter().chain(&hooks).cloned().collect();
    let mut fleet = Fleet::start(sb, &registry_with(&entries), all.clone(), &hooks);
    assert!(all.iter().all(|n| fleet.sandbox.agent(n).starts() == 1), "each agent started once");
    let pids: BTreeMap<String, u32> = all.iter().map(|n| (n.clone(), fleet.sandbox.agent(n).pid(1))).collect();
    assert!(pids.values().all(|&p| descends_from(p, unit)), "every pane belongs to the tmux unit's server");

    // UP02: SIGTERM, then the copy at another path, with a changed unit environment (UP-3.2).
    assert_eq!(fleet.stop_supervisor(), Some(0));
    let aged = age_heartbeats(&fleet.sandbox, &hooks);
    let hook_log_before = fleet.sandbox.hook_log().len();
    let dir = fleet.copy_supervisor_to_upgrade_dir();
    replace_in_place(&baked, &stable);
    let sb = &mut fleet.sandbox;
    let new_path = format!("{}:{}", dir.display(), sb.env_var("PATH").unwrap().to_string_lossy());
    sb.set_env("PATH", &new_path);
    sb.set_env("AGENT_BOX_CLAUDE_SETTINGS", "/etc/agent-box/after-the-upgrade.json");
    fleet.restart_supervisor();
    let (sb, new) = (&fleet.sandbox, fleet.pid);
    sb.wait_ticks(new, 3);
    let calls = sb.tmux_calls_of(new);
    assert!(calls.iter().all(|c| !c.contains("new-session") && !c.contains("start-server")), "{calls:#?}");
    for (name, pid) in &pids {
        assert_eq!(sb.agent(name).starts(), 1, "{name} was not started again");
        assert!(alive(*pid), "{name}'s agent (pid {pid}) still runs");
    }
    for name in &hooks {
        let lease = sb.lease(name).unwrap();
        assert!(lease.get("outcome").is_none_or(Value::is_null), "no outcome for {name}: {lease}");
        assert_ne!(lease["lastSeenAt"], json!(aged), "the new supervisor's heartbeat reached {name}");
    }
    assert_eq!(sb.hook_log().len(), hook_log_before, "no end record");
    let log = sb.supervisor_log();
    assert!(!log.contains("vanished") && !log.contains("started '"), "{log}");

    // UP-3.2: a pane started after the upgrade sees the new values, although the server started with the old ones.
    sb.add_entry("late", tool(json!({})));
    wait_until("the late agent", || sb.agent("late").starts() == 1);
    let late = sb.agent("late").last();
    assert_eq!(late.env_var("PATH"), Some(new_path.as_str()));
    assert_eq!(late.env_var("AGENT_BOX_CLAUDE_SETTINGS"), Some("/etc/agent-box/after-the-upgrade.json"));
    assert!(descends_from(sb.agent("late").pid(1), unit), "started in the unit's server");

    // UP03: an agent started before the upgrade exits 3; its old launch file reaches the new epilogue file.
    let launch = fs::read_to_string(sb.launch_file("hook-3")).unwrap();
    assert!(launch.contains(&stable.display().to_string()), "{launch}");
    sb.agent("hook-3").control("exit-now 3");
    wait_until("died:3 recorded", || sb.entry("hook-3").is_some_and(|e| e["died"] == json!(3)));
    // The epilogue settles the lease after the registry write: wait for it too, do not race it.
    wait_until("the lease outcome died:3", || sb.lease("hook-3").is_some_and(|l| l["outcome"] == json!("died:3")));
    assert_eq!(sb.agent("hook-3").starts(), 1, "a crash is kept for inspection, not respawned");
}

// UP04
#[test]
fn a_lost_tmux_unit_is_waited_for_then_every_session_respawns_once() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    let unit = sb.start_tmux_unit();
    sb.set_env("AGENT_BOX_TMUX_SERVER", "external");
    let names = ["a", "b", "hook-l"];
    sb.write_registry(&registry_with(&[
        ("a", tool(json!({}))),
        ("b", tool(json!({}))),
        ("hook-l", tool(json!({"ephemeral": true}))),
    ]));
    sb.create_lease("hook-l");
    let sup = sb.start_supervisor();
    wait_until("all live", || names.iter().all(|n| sb.agent(n).starts() == 1));
    sb.wait_ticks(sup, 1);

    sb.signal(unit, Signal::SIGTERM);
    sb.wait_exit(unit, Duration::from_secs(30));
    let from = sb.tmux_calls_of(sup).len();
    sb.wait_ticks(sup, 3);
    assert_eq!(sb.log_count(WAITING), 1, "{}", sb.supervisor_log());
    let down = calls_after(&sb, sup, from);
    assert!(down.iter().all(|c| !c.contains("new-session") && !c.contains("start-server")), "{down:#?}");
    assert_eq!(sb.tmux().list_server(), Err(TmuxError::NoServer), "the supervisor started no server");
    assert!(sb.lease("hook-l").unwrap().get("outcome").is_none_or(Value::is_null), "nothing marked while down");

    let unit = sb.start_tmux_unit();
    wait_until("all respawned", || names.iter().all(|n| sb.agent(n).starts() == 2));
    sb.wait_ticks(sup, 2);
    assert!(names.iter().all(|n| sb.agent(n).starts() == 2), "respawned once");
    assert!(names.iter().all(|n| descends_from(sb.agent(n).pid(2), unit)), "in the new unit's server");
    assert_eq!(sb.lease("hook-l").unwrap()["outcome"], json!("vanished"));
    assert_eq!(sb.log_count("tmux is reachable again"), 1);
    assert_eq!(sb.log_count("managed sessions disappeared at once"), 1, "{}", sb.supervisor_log());
}

// UP04
#[test]
fn with_an_external_server_the_supervisor_never_starts_one() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.set_env("AGENT_BOX_TMUX_SERVER", "external");
    sb.write_registry(&registry_with(&[("a", tool(json!({}))), ("b", tool(json!({})))]));
    let sup = sb.start_supervisor();
    sb.wait_ticks(sup, 4);
    // `-V` (once, at start-up) asks the program, not a server.
    let calls: Vec<String> = sb.tmux_calls_of(sup).into_iter().filter(|c| c != "-V").collect();
    assert!(!calls.is_empty());
    assert!(calls.iter().all(|c| !c.contains("start-server") && !c.contains("new-session")), "{calls:#?}");
    assert!(calls.iter().all(|c| c.contains("-N ")), "every client refuses to start a server: {calls:#?}");
    assert!(!sb.tmux().socket_path().exists(), "no server socket");
    assert_eq!(sb.log_count(WAITING), 1, "{}", sb.supervisor_log());
    assert_eq!(sb.log_count("cannot reach tmux"), 0);

    let unit = sb.start_tmux_unit();
    wait_until("both started", || ["a", "b"].iter().all(|n| sb.agent(n).starts() == 1));
    assert!(["a", "b"].iter().all(|n| descends_from(sb.agent(n).pid(1), unit)));
}

/// The `Key=value` lines of a unit file, in order.
fn directives(unit: &str) -> Vec<(String, String)> {
    unit.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn has(directives: &[(String, String)], key: &str, value: &str) -> bool {
    directives.iter().any(|(k, v)| k == key && v == value)
}

fn golden(rel: &str) -> String {
    fs::read_to_string(agent_box_tests::workspace_root().join("golden").join(rel)).unwrap()
}

// UP05
#[test]
fn the_installed_user_units_are_two_and_the_supervisor_s_has_no_stop_command() {
    let tmux = directives(&golden("install/agent-box-tmux.service"));
    for (key, value) in [
        ("Type", "simple"),
        ("ExecStart", "/usr/bin/tmux -D -L agent-box"),
        ("RuntimeDirectory", "agent-box"),
        ("RuntimeDirectoryMode", "0700"),
        ("RuntimeDirectoryPreserve", "yes"),
        ("KillMode", "control-group"),
        ("TimeoutStopSec", "15s"),
        ("Restart", "always"),
        ("RestartSec", "1s"),
        ("UMask", "0077"),
        ("OOMScoreAdjust", "500"),
        ("Environment", "TMUX_TMPDIR=%t/agent-box"),
        ("EnvironmentFile", "<HOME>/.config/agent-box/agent-box.env"),
    ] {
        assert!(has(&tmux, key, value), "agent-box-tmux.service lacks {key}={value}: {tmux:?}");
    }
    let supervisor = directives(&golden("install/agent-box.service"));
    for (key, value) in [
        ("Wants", "agent-box-tmux.service"),
        ("After", "agent-box-tmux.service"),
        ("Environment", "AGENT_BOX_TMUX_SERVER=external"),
        ("KillMode", "control-group"),
        ("Restart", "always"),
    ] {
        assert!(has(&supervisor, key, value), "agent-box.service lacks {key}={value}: {supervisor:?}");
    }
    assert!(supervisor.iter().all(|(k, _)| k != "ExecStop" && !k.starts_with("RuntimeDirectory")), "{supervisor:?}");
    let env = golden("install/agent-box.env");
    assert!(env.contains("AGENT_BOX_MARK_STOPPED=<ROOT>/prefix/bin/agent-box-mark-stopped\n"), "{env}");
}

// UP05
#[test]
fn the_nixos_module_gives_each_user_two_units_and_the_stable_epilogue() {
    for case in ["a-one-user-defaults", "b-two-users-webhook"] {
        let doc: Value = serde_json::from_str(&golden(&format!("nix/{case}.json"))).unwrap();
        for (name, user) in doc["users"].as_object().unwrap() {
            let (unit, tmux) = (&user["unit"], &user["tmuxUnit"]);
            let service = &unit["serviceConfig"];
            assert!(service.get("ExecStop").is_none() && service.get("RuntimeDirectory").is_none(), "{case} {name}");
            assert_eq!(service["KillMode"], json!("control-group"));
            let tmux_unit = format!("agent-box-tmux-{name}.service");
            assert!(unit["wants"].as_array().unwrap().contains(&json!(tmux_unit)), "{case} {name}: {unit}");
            assert!(unit["after"].as_array().unwrap().contains(&json!(tmux_unit)), "{case} {name}: {unit}");
            assert_eq!(unit["environment"]["AGENT_BOX_TMUX_SERVER"], json!("external"));
            let stable = format!("/etc/agent-box/users/{name}/mark-stopped");
            assert_eq!(unit["environment"]["AGENT_BOX_MARK_STOPPED"], json!(stable));
            assert_eq!(tmux["environment"]["AGENT_BOX_MARK_STOPPED"], json!(stable));
            assert_eq!(user["epilogue"]["path"], json!(stable));
            assert!(user["epilogue"]["source"].as_str().unwrap().ends_with("/bin/agent-box-mark-stopped"));

            assert_eq!((&tmux["restartIfChanged"], &tmux["stopIfChanged"]), (&json!(false), &json!(false)));
            let tmux_service = &tmux["serviceConfig"];
            assert!(tmux_service["ExecStart"].as_str().unwrap().ends_with("/bin/tmux -D -L agent-box"), "{tmux}");
            assert_eq!(tmux_service["Type"], json!("simple"));
            assert_eq!(tmux_service["RuntimeDirectory"], json!(format!("agent-box-{name}")));
            assert_eq!(tmux_service["Restart"], json!("always"));
            assert_eq!(tmux_service["RestartSec"], json!("1s"));
            assert_eq!(tmux_service["KillMode"], json!("control-group"));
            assert_eq!(tmux["environment"]["TMUX_TMPDIR"], json!(format!("/run/agent-box-{name}")));
            assert!(tmux["environment"].get("AGENT_BOX_TMUX_SERVER").is_none());
        }
    }
}
