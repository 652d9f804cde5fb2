//! Black-box tests of the mutating verbs and the command line of agent-box-session (50-session-cli §15, 80 RG
//! and CL scenarios): the real binary, a temporary HOME, a private tmux socket.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "cli/env.rs"]
mod env;
#[path = "cli/more.rs"]
mod more;
#[path = "cli/queue.rs"]
mod queue;
#[path = "cli/read.rs"]
mod read;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_box_tests::fixtures::{OutputAssertExt, pane, predicate, session, stderr, stdout};
use agent_box_tests::{HeldLock, Sandbox};
use serde_json::{Value, json};

fn registry_bytes(sb: &Sandbox) -> Vec<u8> {
    fs::read(sb.registry()).unwrap()
}

#[test]
fn help_and_a_usage_error() {
    let sb = Sandbox::new();
    let help = session(&sb, &["--help"]).code(0);
    assert!(stdout(&help).contains("exit 75") || stdout(&help).contains("75 refused"));
    session(&sb, &["frobnicate"]).code(2);
    session(&sb, &[]).code(2);
}

// CL04
#[test]
fn add_names_and_validation() {
    let sb = Sandbox::new();
    let ok = "a".repeat(150);
    session(&sb, &["add", &ok]).code(0);
    session(&sb, &["add", &"b".repeat(151)])
        .code(2)
        .stderr(predicate::str::contains("is too long: at most 150 characters (it has 151)"));
    for reserved in ["settings", "downloads", "webhook", "sessions", "token", "ws", "auth"] {
        session(&sb, &["add", reserved]).code(2).stderr(predicate::str::contains("is a reserved name"));
    }
    for bad in ["a b", "é", "a/b", "..", "a;b"] {
        session(&sb, &["add", bad]).code(2).stderr(predicate::str::contains("invalid session name"));
    }
    let exists = format!("session '{ok}' already exists — 'agent-box-session rm {ok}' first");
    session(&sb, &["add", &ok]).code(2).stderr(predicate::str::starts_with(exists));
    session(&sb, &["add", "dep", "--agent", "tool"])
        .code(0)
        .stderr(predicate::str::contains("--agent is deprecated, use --harness"));
    session(&sb, &["add", "x", "--remote-control", "yes"]).code(2);
    session(&sb, &["add", "x", "--origin", "cron"]).code(2);
    session(&sb, &["add", "x", "--harness", "nope"])
        .code(2)
        .stderr("harness 'nope' is not available (available: claude codex shell tool)\n");
}

// CL04
#[test]
fn cwd_rules() {
    let sb = Sandbox::new();
    let home = sb.home();
    fs::create_dir_all(home.join("src/app")).unwrap();
    fs::write(home.join("file"), b"").unwrap();
    std::os::unix::fs::symlink(home.join("src/app"), home.join("link")).unwrap();
    let outside = sb.root().join("outside");
    fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, home.join("escape")).unwrap();
    session(&sb, &["add", "l", "--cwd", "~/link"]).code(0);
    assert_eq!(sb.entry("l").unwrap()["workingDirectory"], json!(home.join("src/app").to_str().unwrap()));
    session(&sb, &["add", "o", "--cwd", outside.to_str().unwrap()])
        .code(2)
        .stderr(predicate::str::contains("outside $HOME"));
    session(&sb, &["add", "e", "--cwd", "~/escape"]).code(2);
    session(&sb, &["add", "m", "--cwd", "~/nope"]).code(2).stderr(predicate::str::contains("does not exist"));
    session(&sb, &["add", "f", "--cwd", "~/file"]).code(2).stderr(predicate::str::contains("is not a directory"));
}

// CL04
#[test]
fn cwd_under_a_symlinked_home_is_accepted() {
    let mut sb = Sandbox::new();
    let real = sb.home().to_path_buf();
    fs::create_dir_all(real.join("work")).unwrap();
    let alias = sb.root().join("alias-home");
    std::os::unix::fs::symlink(&real, &alias).unwrap();
    sb.set_env("HOME", &alias);
    sb.set_env("AGENT_BOX_SESSIONS_FILE", real.join(".config/agent-box/sessions.json"));
    session(&sb, &["add", "w", "--cwd", "~/work"]).code(0);
    assert_eq!(sb.entry("w").unwrap()["workingDirectory"], json!(real.join("work").to_str().unwrap()));
}

// CL04
#[test]
fn the_entry_has_the_documented_shape() {
    let sb = Sandbox::new();
    fs::create_dir_all(sb.home().join("notes")).unwrap();
    let out = session(
        &sb,
        &["add", "notes", "--harness", "claude", "--cwd", "~/notes", "--prompt", "tidy up", "--", "--model", "sonnet"],
    );
    out.code(0).stdout("session 'notes' (claude) added with a kickoff prompt — the supervisor starts it within ~2s\n");
    let entry = sb.entry("notes").unwrap();
    let keys: Vec<&String> = entry.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "agent",
            "skipPermissions",
            "remoteControl",
            "whatsapp",
            "remoteControlName",
            "workingDirectory",
            "extraArgs",
            "profile",
            "initialPrompt",
            "resumePrompt",
            "boxSessionId",
            "hasRun",
            "origin",
            "createdAt",
            "life"
        ]
    );
    assert_eq!(entry["extraArgs"], json!(["--model", "sonnet"]));
    assert!(base::is_uuid(entry["boxSessionId"].as_str().unwrap()));
    let codex = session(&sb, &["add", "cx", "--harness", "codex", "--ephemeral", "--hook", "github", "acme/x"]).code(0);
    let entry = sb.entry("cx").unwrap();
    assert_eq!((&entry["remoteControl"], &entry["ephemeral"]), (&json!(false), &json!(true)));
    assert_eq!(entry["hook"], json!({"source": "github", "repository": "acme/x"}));
    codex.stdout("session 'cx' (codex) added — the supervisor starts it within ~2s\n");
}

// CL04
#[test]
fn auto_names_follow_the_harness_then_the_directory() {
    let sb = Sandbox::new();
    fs::create_dir_all(sb.home().join("my app")).unwrap();
    for _ in 0..3 {
        session(&sb, &["add", "--harness", "tool", "--cwd", "~/my app"]).code(0);
    }
    let doc = sb.read_registry();
    assert_eq!(doc.names().collect::<Vec<_>>(), ["tool", "my-app", "my-app-2"]);
}

// RG15 is checked at the end: a shell session is admitted although the box is full.
// RG14, CL05
#[test]
fn eight_concurrent_adds_at_limit_two() {
    let sb = Sandbox::new();
    sb.set_limit("2");
    let children: Vec<_> = (0..8)
        .map(|i| {
            sb.cmd("agent-box-session")
                .args(["add", &format!("s{i}"), "--harness", "claude"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut codes: Vec<i32> =
        children.into_iter().map(|c| c.wait_with_output().unwrap().status.code().unwrap()).collect();
    codes.sort_unstable();
    assert_eq!(codes, [0, 0, 75, 75, 75, 75, 75, 75]);
    assert_eq!(sb.read_registry().names().count(), 2);
    // RG15: shell is always admitted
    session(&sb, &["add", "sh", "--harness", "shell"]).code(0);
}

// CL06
#[test]
fn restart_all_over_the_limit_changes_nothing() {
    let sb = Sandbox::new();
    sb.set_limit("2");
    sb.write_registry(
        r#"{"version":1,"sessions":{"a":{"agent":"tool"},"b":{"agent":"tool"},"c":{"agent":"tool","stopped":true}}}"#,
    );
    let before = registry_bytes(&sb);
    session(&sb, &["restart", "--all"]).code(75).stderr(predicate::str::contains("Session limit reached"));
    assert_eq!(registry_bytes(&sb), before);
}

// CL06
#[test]
fn stop_frees_a_slot_and_restart_needs_one() {
    let sb = Sandbox::new();
    sb.set_limit("2");
    session(&sb, &["add", "a"]).code(0);
    session(&sb, &["add", "b"]).code(0);
    session(&sb, &["stop", "a"]).code(0);
    session(&sb, &["add", "c"]).code(0);
    session(&sb, &["restart", "a"]).code(75);
    session(&sb, &["restart", "b"]).code(0);
}

// RG03, CL07
#[test]
fn a_held_lock_means_75_and_no_change() {
    let mut sb = Sandbox::new();
    sb.set_env("REGISTRY_LOCK_WAIT", "1");
    sb.write_registry(r#"{"version":1,"sessions":{"x":{"agent":"tool"}}}"#);
    let before = registry_bytes(&sb);
    let inode = fs::metadata(sb.registry()).unwrap().ino();
    let _held = HeldLock::acquire(&sb.registry().with_extension("json.lock"), Duration::ZERO).unwrap();
    for args in [&["add", "y"][..], &["rm", "x"], &["stop", "x"], &["restart", "x"]] {
        let start = Instant::now();
        let out = session(&sb, args);
        assert!(start.elapsed() < Duration::from_secs(10), "{args:?}: liveness");
        let out = out.code(75);
        assert_eq!(stderr(&out).lines().count(), 1, "{args:?}: {}", stderr(&out));
        out.stderr(predicate::str::contains("could not lock"));
        assert_eq!(registry_bytes(&sb), before);
        assert_eq!(fs::metadata(sb.registry()).unwrap().ino(), inode);
    }
    assert!(registry::atomic::temp_leftovers_of(&sb.registry()).is_empty());
    // read-only verbs still answer
    session(&sb, &["ls"]).code(0);
}

// RG02
#[test]
fn a_waiting_add_writes_after_release() {
    let mut sb = Sandbox::new();
    sb.set_env("REGISTRY_LOCK_WAIT", "10");
    sb.write_registry(r#"{"version":1,"sessions":{}}"#);
    let lock = sb.registry().with_extension("json.lock");
    let held = HeldLock::acquire(&lock, Duration::ZERO).unwrap();
    let mut child = sb.cmd("agent-box-session").args(["add", "x"]).stdout(Stdio::null()).spawn().unwrap();
    let target = fs::canonicalize(&lock).unwrap();
    agent_box_tests::wait_until("the add to poll the lock", || {
        fs::read_dir(format!("/proc/{}/fd", child.id()))
            .is_ok_and(|d| d.flatten().any(|e| fs::read_link(e.path()).ok() == Some(target.clone())))
    });
    assert!(child.try_wait().unwrap().is_none());
    assert_eq!(registry_bytes(&sb), b"{\"version\":1,\"sessions\":{}}");
    drop(held);
    assert!(child.wait().unwrap().success());
    assert!(sb.entry("x").is_some());
}

// RG04
#[test]
fn every_edit_replaces_the_registry_never_the_lock() {
    let sb = Sandbox::new();
    session(&sb, &["add", "x"]).code(0);
    let lock = sb.registry().with_extension("json.lock");
    let lock_inode = fs::metadata(&lock).unwrap().ino();
    let mut inodes = vec![fs::metadata(sb.registry()).unwrap().ino()];
    for i in 0..10 {
        let verb = if i % 2 == 0 { "stop" } else { "restart" };
        session(&sb, &[verb, "x"]).code(0);
        inodes.push(fs::metadata(sb.registry()).unwrap().ino());
    }
    inodes.dedup();
    assert_eq!(inodes.len(), 11, "a new registry inode per edit");
    assert_eq!(fs::metadata(&lock).unwrap().ino(), lock_inode);
    assert_eq!(fs::metadata(&lock).unwrap().mode() & 0o777, 0o600);
}

// RG05
#[test]
fn an_inherited_lock_is_adopted_and_still_held_by_the_parent_after_the_child_exits() {
    let mut sb = Sandbox::new();
    sb.set_env("REGISTRY_LOCK_WAIT", "2");
    sb.write_registry(r#"{"version":1,"sessions":{}}"#);
    let held = sb.hold_registry_lock();
    let mut cmd = sb.cmd("agent-box-session");
    cmd.args(["add", "x"]);
    held.hand_to(&mut cmd);
    cmd.assert().code(0);
    assert!(sb.read_registry().contains("x"), "the child wrote under the parent's lock");
    let other = HeldLock::acquire(&sb.registry_lock_file(), Duration::from_millis(200));
    assert!(other.is_err(), "the child exited and the parent still holds the lock");
    drop(held);
    assert!(HeldLock::acquire(&sb.registry_lock_file(), Duration::ZERO).is_ok(), "released by the parent only");
}

// RG06
#[test]
fn a_bogus_inherited_fd_is_refused() {
    let mut sb = Sandbox::new();
    sb.set_env("AGENT_BOX_REGISTRY_LOCK_FD", "9");
    sb.write_registry(r#"{"version":1,"sessions":{}}"#);
    session(&sb, &["add", "x"])
        .code(75)
        .stderr(predicate::str::contains("AGENT_BOX_REGISTRY_LOCK_FD=9 is not an open descriptor"));
    assert_eq!(registry_bytes(&sb), b"{\"version\":1,\"sessions\":{}}");
}

// RG07
#[test]
fn directories_0700_files_0600_and_existing_modes_kept() {
    let sb = Sandbox::new();
    fs::set_permissions(sb.home(), fs::Permissions::from_mode(0o755)).unwrap();
    session(&sb, &["add", "x"]).code(0);
    let mode = |p: &std::path::Path| fs::metadata(p).unwrap().mode() & 0o777;
    assert_eq!(mode(&sb.home().join(".config")), 0o700);
    assert_eq!(mode(&sb.home().join(".config/agent-box")), 0o700);
    assert_eq!(mode(&sb.registry()), 0o600);
    assert_eq!(mode(&sb.registry().with_extension("json.lock")), 0o600);
    assert_eq!(mode(sb.home()), 0o755);
}

// RG09
#[test]
fn unknown_fields_and_order_survive_every_edit() {
    let sb = Sandbox::new();
    sb.write_registry(r#"{"zTop":1,"sessions":{"m":{"zz":1,"agent":"tool","aa":{"k":[1,2]}}},"version":1,"aTop":[]}"#);
    session(&sb, &["add", "n"]).code(0);
    session(&sb, &["stop", "m"]).code(0);
    session(&sb, &["restart", "m"]).code(0);
    session(&sb, &["rm", "n"]).code(0);
    let doc: Value = serde_json::from_slice(&registry_bytes(&sb)).unwrap();
    let top: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(top, ["zTop", "sessions", "version", "aTop"]);
    let m: Vec<&String> = doc["sessions"]["m"].as_object().unwrap().keys().collect();
    assert_eq!(m, ["zz", "agent", "aa"]);
    assert_eq!(doc["sessions"]["m"]["aa"], json!({"k": [1, 2]}));
}

// RG10
#[test]
fn an_invalid_registry_is_never_written_or_quarantined() {
    for bad in [&b"not json"[..], b"{\"sessions\":{}}{}", b"\xef\xbb\xbf{\"sessions\":{}}", b"[]", b"{\"sessions\":[]}"]
    {
        let sb = Sandbox::new();
        sb.write_registry("x");
        fs::write(sb.registry(), bad).unwrap();
        for args in [&["add", "y"][..], &["stop", "x"]] {
            let out = session(&sb, args).code(1);
            assert!(stderr(&out).contains("does not parse"), "{}", stderr(&out));
            out.stderr(predicate::str::contains("the supervisor moves a corrupt registry aside on its next pass"));
        }
        assert_eq!(registry_bytes(&sb), bad);
        assert_eq!(fs::read_dir(sb.registry().parent().unwrap()).unwrap().count(), 2, "registry and lock only");
    }
}

// RG01
#[test]
fn twenty_four_gated_adds() {
    let sb = Sandbox::new();
    sb.set_limit("100");
    let gate = sb.root().join("gate");
    let bin = agent_box_tests::bins::bin("agent-box-session");
    let children: Vec<_> = (0..24)
        .map(|i| {
            // Each add waits for the gate inside its own shell, so all 24 start together.
            let script = format!(
                "while [ ! -e '{}' ]; do sleep 0.01; done; exec '{}' add w{i} --harness tool",
                gate.display(),
                bin.display()
            );
            let mut sh = sb.cmd("agent-box-session");
            let env: Vec<_> = sh.get_envs().filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))).collect();
            sh = Command::new("/bin/sh");
            sh.arg("-c").arg(script).env_clear().envs(env).stdout(Stdio::null());
            sh.spawn().unwrap()
        })
        .collect();
    fs::write(&gate, b"").unwrap();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    assert_eq!(sb.read_registry().names().count(), 24);
}

// CL09
#[test]
fn missing_registry_is_never_created_and_unknown_names_are_m25() {
    let sb = Sandbox::new();
    for verb in ["rm", "stop", "restart"] {
        let out = session(&sb, &[verb, "ghost"]);
        assert!(!sb.registry().exists(), "{verb} created the registry");
        assert!(!sb.home().join(".config").exists(), "{verb} created a directory");
        match verb {
            "rm" => drop(out.code(0).stdout("nothing to remove: no session 'ghost' is listed or live\n")),
            _ => drop(out.code(2).stderr("no such session: 'ghost' (see agent-box-session ls)\n")),
        }
    }
    session(&sb, &["restart", "--all"]).code(0);
}

// CL09
#[test]
fn restart_of_a_died_session_keeps_died() {
    let sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"d":{"agent":"tool","died":3,"stopped":true}}}"#);
    pane(&sb, "d");
    session(&sb, &["restart", "d"]).code(0).stdout("session 'd' killed — the supervisor restarts it within ~2s\n");
    let entry = sb.entry("d").unwrap();
    assert_eq!((entry.get("died"), entry.get("stopped")), (Some(&json!(3)), None));
    assert!(!sb.is_live("d"));
}

// CL13
#[test]
fn rm_of_a_live_hook_session_writes_the_end_before_the_lease_goes() {
    let sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"hook-a":{"agent":"tool"},"hook-b":{"agent":"tool"}}}"#);
    pane(&sb, "hook-a");
    sb.create_lease("hook-a");
    let filters = sb.home().join(".local/state/local-webhook");
    fs::create_dir_all(&filters).unwrap();
    fs::write(filters.join("filter.agent-hook-a.json"), b"{}").unwrap();
    fs::write(filters.join("filter.agent-hook-b.json"), b"{}").unwrap();
    session(&sb, &["rm", "hook-a"]).code(0);
    assert!(!sb.is_live("hook-a") && sb.entry("hook-a").is_none());
    assert!(sb.lease("hook-a").is_none());
    assert!(!filters.join("filter.agent-hook-a.json").exists() && filters.join("filter.agent-hook-b.json").exists());
    let log = sb.hook_log();
    assert_eq!(log.len(), 1);
    assert_eq!(
        (&log[0]["how"], log[0]["lifeSeconds"].is_u64()),
        (&json!("rm"), true),
        "written while the lease existed"
    );
    session(&sb, &["rm", "hook-a"]).code(0);
    assert_eq!(sb.hook_log().len(), 1, "LS06: exactly one end record");
}

#[test]
fn stop_flags_then_kills_with_the_right_message() {
    let sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"p":{"agent":"tool"},"e":{"agent":"tool","ephemeral":true}}}"#);
    pane(&sb, "p");
    let out = session(&sb, &["stop", "p"]);
    out.stdout("session 'p' stopped — still listed, not respawned; 'agent-box-session restart p' revives it\n");
    assert!(!sb.is_live("p"));
    assert_eq!(sb.entry("p").unwrap()["stopped"], json!(true));
    session(&sb, &["stop", "e"])
        .stdout(predicate::str::contains("one-shot (--ephemeral), so the supervisor delists it within ~2s"));
}

/// A side file recording lease gen `lease_gen` for `name`, as the supervisor writes it at a spawn.
fn side_file_with_gen(sb: &Sandbox, name: &str, lease_gen: &str) {
    let dir = sb.state_dir().join("session");
    fs::create_dir_all(&dir).unwrap();
    let side = format!(r#"{{"launchSessionId":"0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90","leaseGen":"{lease_gen}"}}"#);
    fs::write(dir.join(format!("{name}.json")), side + "\n").unwrap();
}

/// A tmux wrapper that copies `name`'s lease to `<root>/lease-at-kill.json` when `kill-session` runs, so a test
/// can see what the lease said at the moment of the kill.
fn copy_lease_at_kill(sb: &mut Sandbox, name: &str) -> std::path::PathBuf {
    let snapshot = sb.root().join("lease-at-kill.json");
    let wrapper = sb.root().join("bin/tmux-copy-at-kill");
    let script = format!(
        "#!/bin/sh\ncase \" $* \" in *\" kill-session \"*) cp '{lease}' '{snapshot}' ;; esac\nexec '{real}' \"$@\"\n",
        lease = sb.lease_path(name).display(),
        snapshot = snapshot.display(),
        real = sb.env_var("AGENT_BOX_TMUX_BIN").unwrap().to_string_lossy(),
    );
    fs::write(&wrapper, script).unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    sb.set_env("AGENT_BOX_TMUX_BIN", &wrapper);
    snapshot
}

/// 50 §10 step 5 (new), 20 LS-6.3: `stop` of a leased session marks the open lease `stopped` against the side
/// file's gen, after the flag write and before the kill; it writes no end record (the reap does).
#[test]
fn stop_marks_an_open_lease_stopped_before_the_kill() {
    let mut sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"hook-s":{"agent":"tool","ephemeral":true}}}"#);
    let lease_gen = sb.create_lease("hook-s");
    side_file_with_gen(&sb, "hook-s", &lease_gen);
    pane(&sb, "hook-s");
    let at_kill = copy_lease_at_kill(&mut sb, "hook-s");
    session(&sb, &["stop", "hook-s"]).code(0).stderr("");
    let lease = sb.lease("hook-s").unwrap();
    assert_eq!((&lease["outcome"], &lease["gen"]), (&json!("stopped"), &json!(lease_gen)));
    assert!(lease["endedAt"].is_string(), "endedAt comes with the first outcome");
    let seen: Value = serde_json::from_slice(&fs::read(at_kill).unwrap()).unwrap();
    assert_eq!(seen["outcome"], json!("stopped"), "marked before the kill");
    assert_eq!(sb.entry("hook-s").unwrap()["stopped"], json!(true));
    assert!(!sb.is_live("hook-s"));
    assert!(sb.hook_log().is_empty(), "stop writes no end record; the reap does");
}

/// The first outcome wins, a lease of another gen is never touched, and a lease with no side file is marked
/// under `Any` (a pane started by the old supervisor).
#[test]
fn stop_keeps_a_first_outcome_and_never_touches_a_newer_gen() {
    let sb = Sandbox::new();
    sb.write_registry(
        r#"{"version":1,"sessions":{"hook-d":{"agent":"tool","ephemeral":true},"hook-n":{"agent":"tool","ephemeral":true},"hook-a":{"agent":"tool","ephemeral":true}}}"#,
    );
    let died = sb.create_lease("hook-d");
    side_file_with_gen(&sb, "hook-d", &died);
    let leases = lease::LeaseDir::new(sb.state_dir().join("lease"));
    let name = base::SessionName::parse("hook-d").unwrap();
    leases.mark_outcome(&name, &lease::Outcome::Died(1), &lease::Expect::Any).unwrap();
    sb.create_lease("hook-n");
    side_file_with_gen(&sb, "hook-n", "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f");
    sb.create_lease("hook-a");
    let before = fs::read(sb.lease_path("hook-n")).unwrap();
    let died_before = fs::read(sb.lease_path("hook-d")).unwrap();
    for name in ["hook-d", "hook-n", "hook-a"] {
        session(&sb, &["stop", name]).code(0).stderr("");
    }
    assert_eq!(fs::read(sb.lease_path("hook-d")).unwrap(), died_before, "died:1 stays, endedAt unchanged");
    assert_eq!(fs::read(sb.lease_path("hook-n")).unwrap(), before, "a newer gen is byte-identical");
    assert_eq!(sb.lease("hook-a").unwrap()["outcome"], json!("stopped"), "no side file: Any");
}

#[test]
fn restart_of_an_unlisted_live_session_kills_it() {
    let sb = Sandbox::new();
    pane(&sb, "stray");
    let killed = "session 'stray' killed — unlisted, so nothing restarts it\n";
    session(&sb, &["restart", "stray"]).code(0).stdout(killed);
}

#[test]
fn out_of_scope_verbs_and_options_are_refused() {
    let sb = Sandbox::new();
    for (args, text) in [
        (&["whatsapp"][..], "'whatsapp' is not part of this build (WhatsApp routing is not included)"),
        (&["profile", "x"], "'profile' is not part of this build (profiles need the external profile tool)"),
        (
            &["add", "x", "--profile", "p"],
            "'--profile' is not part of this build (profiles need the external profile tool)",
        ),
        (
            &["add", "x", "--whatsapp", "on"],
            "'--whatsapp' is not part of this build (WhatsApp routing is not included)",
        ),
    ] {
        session(&sb, args).code(2).stderr(format!("agent-box-session: {text}\n"));
    }
    assert!(!sb.registry().exists());
}

#[test]
fn kill_failure_is_exit_1_and_never_reported_as_success() {
    let mut sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"x":{"agent":"tool"}}}"#);
    sb.set_env("AGENT_BOX_TMUX_BIN", "/nonexistent/tmux");
    session(&sb, &["stop", "x"])
        .code(1)
        .stderr(predicate::str::contains(
            "session 'x' is marked stopped in the registry; its tmux session could not be killed: tmux did not run (/nonexistent/tmux cannot be started",
        ));
    let add = session(&sb, &["add", "y"]);
    // capacity cannot be checked without tmux
    add.code(75).stderr(predicate::str::contains("cannot check session capacity"));
}

#[test]
fn configuration_errors_are_exit_2() {
    let mut sb = Sandbox::new();
    sb.set_env("HOME", "relative/home");
    session(&sb, &["ls"]).code(2).stderr("agent-box-session: HOME must be an absolute path (it is 'relative/home')\n");
    let mut sb = Sandbox::new();
    sb.set_env("USER", "../x");
    session(&sb, &["ls"]).code(2).stderr(predicate::str::contains("cannot tell a usable user name (USER='../x'"));
    let mut sb = Sandbox::new();
    sb.remove_env("AGENT_BOX_AGENTS");
    session(&sb, &["add", "x"]).code(2);
}

#[test]
fn eight_processes_adding_forty_distinct_names_lose_none() {
    let sb = Sandbox::new();
    sb.set_limit("64");
    let bin = agent_box_tests::bins::bin("agent-box-session");
    let env: Vec<_> =
        sb.cmd("agent-box-session").get_envs().filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))).collect();
    let children: Vec<_> = (0..8)
        .map(|p| {
            // Each process adds its five names one after another, all eight at once.
            let adds: Vec<String> =
                (0..5).map(|i| format!("'{}' add p{p}n{i} --harness tool", bin.display())).collect();
            Command::new("/bin/sh")
                .arg("-c")
                .arg(adds.join(" && "))
                .env_clear()
                .envs(env.clone())
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let doc = sb.read_registry();
    assert_eq!(doc.names().count(), 40);
}

// Issue 25 (docs/reference.md, "Extra arguments for claude"): extra arguments that end in an option of claude's that
// takes a value would hand it the `--` and the prompt that agent-box puts after them; `add` refuses them (M60, exit
// 2, nothing written). With its value, or for another harness, they are taken as given.
#[test]
fn add_refuses_claude_extra_args_that_end_in_a_value_option() {
    let sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{}}"#);
    let before = registry_bytes(&sb);
    for (option, rest) in [("--add-dir", &["--model", "sonnet"][..]), ("--allowed-tools", &[]), ("--model", &["-p"])] {
        let mut args = vec!["add", "x", "--harness", "claude", "--prompt", "go", "--"];
        args.extend(rest);
        args.push(option);
        session(&sb, &args).code(2).stdout("").stderr(format!(
            "agent-box-session: the extra arguments end in '{option}', which takes a value: claude would take the prompt that follows them for it and exit; give the value after it or leave it out\n"
        ));
        assert_eq!(registry_bytes(&sb), before, "nothing written for {option}");
    }
    session(&sb, &["add", "x", "--harness", "claude", "--", "--add-dir", "/srv/a"]).code(0);
    session(&sb, &["add", "y", "--harness", "tool", "--", "--add-dir"]).code(0);
}
