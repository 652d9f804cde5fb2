//! More black-box scenarios of agent-box-session (80 CL11, RG11, LS06, LS07, H11): the exit-code table, a
//! read-only registry directory, lease clean-up on `rm`, torn leases, and a decoy tmux environment.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use agent_box_tests::fixtures::{OutputAssertExt, code, pane, session, stderr, stdout};
use agent_box_tests::privilege::{chown_tree, unprivileged};
use agent_box_tests::{HeldLock, Sandbox, wait_until};
use agent_box_types::report::{LsReport, PeersReport};
use base::SessionName;
use serde_json::{Value, json};
use tmux::TmuxApi;

/// Names and bytes of every file below `dir`, sorted.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(dir).unwrap().flatten() {
        out.insert(entry.path(), fs::read(entry.path()).unwrap_or_default());
    }
    out
}

/// The worlds of the exit-code table (CL11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum World {
    /// `main` live, `parked` stopped, `crashed` died, `sh` a stopped shell entry; limit 8.
    Normal,
    /// Normal, with the registry lock held by the test and `REGISTRY_LOCK_WAIT=1`.
    LockBusy,
    /// Normal at limit 1: `main` takes the only slot.
    Full,
    /// Normal, but the tmux binary does not run.
    NoTmux,
    /// The registry does not parse.
    BadRegistry,
    /// The limit file holds no number.
    BadLimit,
    /// HOME is relative.
    BadHome,
}

const FIXTURE: &str = r#"{"version":1,"sessions":{
  "main":{"agent":"tool"},
  "parked":{"agent":"tool","stopped":true},
  "crashed":{"agent":"tool","died":3,"stopped":true},
  "sh":{"agent":"shell","stopped":true}
}}"#;

/// Builds `world`: the sandbox, the lock to keep alive while the row runs, and variables for the command only
/// (set on the sandbox they would also break its teardown, which reaches tmux the same way).
fn build(world: World) -> (Sandbox, Option<HeldLock>, Vec<(&'static str, &'static str)>) {
    let sb = Sandbox::new();
    sb.write_registry(FIXTURE);
    pane(&sb, "main");
    let (mut held, mut vars) = (None, Vec::new());
    match world {
        World::Normal => {}
        World::LockBusy => {
            vars.push(("REGISTRY_LOCK_WAIT", "1"));
            let lock = sb.registry().with_extension("json.lock");
            held = Some(HeldLock::acquire(&lock, Duration::from_secs(10)).unwrap());
        }
        World::Full => sb.set_limit("1"),
        World::NoTmux => vars.push(("AGENT_BOX_TMUX_BIN", "/nonexistent/tmux")),
        World::BadRegistry => fs::write(sb.registry(), b"not json").unwrap(),
        World::BadLimit => sb.set_limit("lots"),
        World::BadHome => vars.push(("HOME", "relative/home")),
    }
    (sb, held, vars)
}

// CL11
#[test]
fn every_verb_good_and_bad_exits_with_its_documented_code() {
    use World::*;
    let table: &[(World, &[&str], i32)] = &[
        // read-only verbs
        (Normal, &["ls"], 0),
        (Normal, &["ls", "--json"], 0),
        (Normal, &["ls", "surplus"], 2),
        (Normal, &["peers"], 0),
        (Normal, &["peers", "--json"], 0),
        (Normal, &["peers", "--bogus"], 2),
        (Normal, &["capacity"], 0),
        (Normal, &["capacity", "--json"], 0),
        (Normal, &["leases"], 0),
        (Normal, &["leases", "--json"], 0),
        (Normal, &["log"], 0),
        (Normal, &["log", "-n", "3"], 0),
        (Normal, &["log", "-n", "0"], 2),
        (Normal, &["log", "-n"], 2),
        // add
        (Normal, &["add", "fresh", "--harness", "tool"], 0),
        (Normal, &["add", "main"], 2),
        (Normal, &["add", "a b"], 2),
        (Normal, &["add", "settings"], 2),
        (Normal, &["add", &"n".repeat(151)], 2),
        (Normal, &["add", "x", "--harness", "nope"], 2),
        (Normal, &["add", "x", "--remote-control", "maybe"], 2),
        (Normal, &["add", "x", "--origin", "cron"], 2),
        (Normal, &["add", "x", "--cwd", "/nonexistent/dir"], 2),
        (Normal, &["add", "x", "--profile", "p"], 2),
        (Normal, &["add", "x", "--harness", "tool", "--agent", "tool"], 2),
        // rm, stop, restart
        (Normal, &["rm", "main"], 0),
        (Normal, &["rm", "ghost"], 0),
        (Normal, &["rm", "a/b"], 2),
        (Normal, &["rm"], 2),
        (Normal, &["stop", "main"], 0),
        (Normal, &["stop", "ghost"], 2),
        (Normal, &["stop", "bad name"], 2),
        (Normal, &["restart", "parked"], 0),
        (Normal, &["restart", "ghost"], 2),
        (Normal, &["restart", "--all"], 0),
        (Normal, &["restart", "main", "--all"], 2),
        (Normal, &["restart"], 2),
        // the command line itself
        (Normal, &[], 2),
        (Normal, &["frobnicate"], 2),
        (Normal, &["env", "list"], 2),
        (Normal, &["whatsapp"], 2),
        (Normal, &["--help"], 0),
        (Normal, &["--version"], 0),
        // a busy lock: every mutating verb refuses with 75; reads still answer
        (LockBusy, &["add", "y", "--harness", "tool"], 75),
        (LockBusy, &["rm", "main"], 75),
        (LockBusy, &["stop", "main"], 75),
        (LockBusy, &["restart", "main"], 75),
        (LockBusy, &["restart", "--all"], 75),
        (LockBusy, &["ls"], 0),
        // a full box
        (Full, &["add", "y", "--harness", "tool"], 75),
        (Full, &["add", "s", "--harness", "shell"], 0),
        (Full, &["restart", "parked"], 75),
        (Full, &["restart", "main"], 0),
        (Full, &["restart", "--all"], 75),
        (Full, &["capacity"], 0),
        // tmux does not run
        (NoTmux, &["ls"], 0),
        (NoTmux, &["peers"], 1),
        (NoTmux, &["add", "y", "--harness", "tool"], 75),
        (NoTmux, &["stop", "main"], 1),
        (NoTmux, &["rm", "main"], 1),
        (NoTmux, &["capacity"], 75),
        // an invalid registry
        (BadRegistry, &["ls"], 0),
        (BadRegistry, &["add", "y", "--harness", "tool"], 1),
        (BadRegistry, &["stop", "main"], 1),
        (BadRegistry, &["restart", "main"], 1),
        (BadRegistry, &["rm", "main"], 1),
        (BadRegistry, &["capacity"], 75),
        // a broken limit file
        (BadLimit, &["capacity"], 75),
        (BadLimit, &["add", "y", "--harness", "tool"], 75),
        (BadLimit, &["add", "s", "--harness", "shell"], 0),
        // configuration
        (BadHome, &["ls"], 2),
        (BadHome, &["add", "y"], 2),
    ];
    let mut failures = Vec::new();
    for (world, args, expected) in table {
        let (sb, held, vars) = build(*world);
        let out = sb.cmd("agent-box-session").args(*args).envs(vars).stdin(Stdio::null()).output().unwrap();
        drop(held);
        let got = code(&out);
        assert!([0, 1, 2, 75].contains(&got), "{world:?} {args:?}: exit {got} is not a documented code");
        if got != *expected {
            failures.push(format!("{world:?} {args:?}: expected {expected}, got {got}: {}", stderr(&out).trim_end()));
        }
    }
    assert!(failures.is_empty(), "{} row(s) of {} failed:\n{}", failures.len(), table.len(), failures.join("\n"));
}

// RG11
#[test]
fn a_read_only_registry_directory_refuses_add_and_leaves_no_temp() {
    // With the lock file in place the lock works and the write fails (M21, exit 1); without it the lock
    // cannot even be opened (a lock refusal, exit 75). 10 RG-7.5, RG-9.1; 90 Q8 F1.
    for (lock_present, expected, says) in [(true, 1, "could not write"), (false, 75, "could not lock")] {
        let sb = Sandbox::new();
        sb.write_registry(r#"{"version":1,"sessions":{"x0":{"agent":"tool","stopped":true}}}"#);
        let lock = sb.registry().with_extension("json.lock");
        if lock_present {
            fs::write(&lock, b"").unwrap();
        }
        chown_tree(sb.root());
        chown_tree(sb.tmux_dir());
        let conf = sb.registry().parent().unwrap().to_path_buf();
        let before = snapshot(&conf);
        fs::set_permissions(&conf, fs::Permissions::from_mode(0o500)).unwrap();
        let mut cmd = sb.cmd("agent-box-session");
        cmd.args(["add", "x", "--harness", "tool"]);
        let out = unprivileged(&cmd).stdin(Stdio::null()).assert();
        fs::set_permissions(&conf, fs::Permissions::from_mode(0o700)).unwrap();
        let out = out.code(expected);
        assert_eq!(stderr(&out).lines().count(), 1, "one line: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
        assert_eq!(snapshot(&conf), before, "registry unchanged, no temp left");
        assert!(registry::atomic::temp_leftovers_of(&sb.registry()).is_empty());
    }
}

// LS06
#[test]
fn rm_twice_clears_the_lease_with_exactly_one_end_record() {
    let sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"hook-a":{"agent":"tool","ephemeral":true}}}"#);
    pane(&sb, "hook-a");
    sb.create_lease("hook-a");
    for round in 0..2 {
        let said = if round == 0 {
            "session 'hook-a' removed\n"
        } else {
            "nothing to remove: no session 'hook-a' is listed or live\n"
        };
        session(&sb, &["rm", "hook-a"]).code(0).stdout(said);
        assert!(sb.lease("hook-a").is_none() && !sb.lease_path("hook-a").exists(), "rm #{round}");
        assert!(sb.entry("hook-a").is_none() && !sb.is_live("hook-a"));
    }
    let ends: Vec<Value> = sb.hook_log().into_iter().filter(|l| l["what"] == json!("end")).collect();
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!((&ends[0]["name"], &ends[0]["how"]), (&json!("hook-a"), &json!("rm")));
}

// LS07
#[test]
fn a_torn_lease_reads_unreadable_never_unresolved_and_is_never_rewritten() {
    let sb = Sandbox::in_slot();
    sb.write_registry(r#"{"version":1,"sessions":{"hook-t":{"agent":"tool","extraArgs":["--as","hook-t"]}}}"#);
    let dir = sb.state_dir().join("lease");
    registry::ensure_private_dir(&dir).unwrap();
    fs::write(sb.lease_path("hook-t"), b"{\"topic\":").unwrap();
    let row = |text: &str| text.lines().find(|l| l.starts_with("hook-t ")).map(str::to_owned);
    let check = |when: &str, state: &str| {
        let ls = session(&sb, &["ls"]).code(0);
        assert_eq!(row(&stdout(&ls)), Some(format!("{:<24} {:<8} {state}", "hook-t", "tool")), "{when}");
        assert!(!stdout(&ls).contains("UNRESOLVED"), "{when}: {}", stdout(&ls));
        let leases = session(&sb, &["leases"]).code(0);
        let line = row(&stdout(&leases)).unwrap_or_default();
        assert_eq!(line.split_whitespace().nth(1), Some("unreadable"), "{when}: {}", stdout(&leases));
        let ls: LsReport = serde_json::from_str(&stdout(&session(&sb, &["ls", "--json"]).code(0))).unwrap();
        assert_eq!(ls.sessions[0].unresolved, None, "{when}");
        assert_eq!(fs::read(sb.lease_path("hook-t")).unwrap(), b"{\"topic\":", "{when}: byte-identical");
    };
    check("before the start", "starting");
    sb.agent("hook-t").control("exit 1");
    sb.once();
    wait_until("the crash", || sb.entry("hook-t").is_some_and(|e| e["died"] == json!(1)));
    sb.ticks(2);
    check("after the crash", "died(1)");
}

// H11
#[test]
fn a_decoy_tmux_environment_is_never_contacted() {
    let mut sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"main":{"agent":"tool"},"other":{"agent":"tool"}}}"#);
    pane(&sb, "main");
    pane(&sb, "other");
    // A decoy "server": listening sockets where a call that honoured TMUX_TMPDIR or TMUX would connect.
    let uid = std::os::unix::fs::MetadataExt::uid(&fs::metadata(sb.root()).unwrap());
    let decoy_dir = sb.root().join("decoy");
    let sockets = decoy_dir.join(format!("tmux-{uid}"));
    fs::create_dir_all(&sockets).unwrap();
    fs::set_permissions(&sockets, fs::Permissions::from_mode(0o700)).unwrap();
    let listeners: Vec<(PathBuf, UnixListener)> = [sb.socket(), "default"]
        .iter()
        .map(|name| {
            let path = sockets.join(name);
            let listener = UnixListener::bind(&path).unwrap();
            listener.set_nonblocking(true).unwrap();
            (path, listener)
        })
        .collect();
    let decoy_default = listeners[1].0.clone();
    sb.set_env("TMUX_TMPDIR", &decoy_dir);
    sb.set_env("TMUX", format!("{},4242,0", decoy_default.display()));
    sb.set_env("TMUX_PANE", "%0");
    let ls = session(&sb, &["ls"]).code(0);
    assert!(stdout(&ls).contains(&format!("{:<24} {:<8} live", "main", "tool")), "{}", stdout(&ls));
    let peers: PeersReport = serde_json::from_str(&stdout(&session(&sb, &["peers", "--json"]).code(0))).unwrap();
    assert_eq!(peers.me, None, "a $TMUX of another socket names nobody");
    let names: Vec<&str> = peers.sessions.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["main", "other"]);
    session(&sb, &["peers"]).code(0);
    session(&sb, &["rm", "main"]).code(0);
    assert!(!sb.is_live("main") && sb.is_live("other"), "rm acted on the box server");
    for (path, listener) in &listeners {
        match listener.accept() {
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("the decoy {} was contacted: {other:?}", path.display()),
        }
    }
    // Control: $TMUX naming our own socket does identify the caller's session (50 §5.2).
    let pane_id = sb.tmux().display(&SessionName::parse("other").unwrap(), "#{pane_id}").unwrap();
    sb.set_env("TMUX", format!("{},4242,0", sb.tmux().socket_path().display()));
    sb.set_env("TMUX_PANE", pane_id.trim());
    let peers: PeersReport = serde_json::from_str(&stdout(&session(&sb, &["peers", "--json"]).code(0))).unwrap();
    assert_eq!(peers.me.as_deref(), Some("other"));
}

/// Issue 18 item 1: a registry that cannot be reached is never read as absent. Its path runs through a regular
/// file (ENOTDIR, which `Path::exists()` answers with false, as it does for EIO, ENOTCONN or EACCES on a parent):
/// `rm` used to print `removed` with exit 0, `stop` and `restart` `unknown session` with exit 2. Each now says it
/// cannot read the registry (M20b, exit 1) and changes nothing.
#[test]
fn an_unreachable_registry_is_reported_never_read_as_absent() {
    let mut sb = Sandbox::new();
    let blocker = sb.home().join("not-a-dir");
    fs::write(&blocker, "a file where the registry's directory should be\n").unwrap();
    sb.set_env("AGENT_BOX_SESSIONS_FILE", blocker.join("sessions.json"));
    for verb in [&["rm", "main"][..], &["stop", "main"], &["restart", "main"]] {
        let out = session(&sb, verb);
        assert_eq!(code(&out), 1, "{verb:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("not-a-dir/sessions.json") && stdout(&out).is_empty(), "{verb:?}: {out:?}");
    }
    assert_eq!(fs::read(&blocker).unwrap(), b"a file where the registry's directory should be\n");
}
