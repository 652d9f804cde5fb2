//! One life, one identity (issue 17, docs/lives.md): a reused session name is never the same instance, so no
//! actor of an older life changes a newer one. One scenario per row of the issue's table, on real tmux; races are
//! reached deterministically (a tmux wrapper that SIGKILLs the supervisor right after `new-session`, the epilogue
//! run by the test with an old pane's arguments, a FIFO the supervisor blocks on, the registry lock held here).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use agent_box_tests::fixtures::{ok, registry_with, stderr, tool};
use agent_box_tests::kill_gate::KillGate;
use agent_box_tests::{HeldLock, Sandbox, deadline, wait_until};
use base::SessionName;
use serde_json::{Value, json};
use tmux::TmuxApi;

/// The words the pane of `name`'s current launch file passes its epilogue after the status (`GEN`, `-` or `any`,
/// then `LIFE` where the supervisor renders one): what that pane will report, however late.
fn pane_report_words(sb: &Sandbox, name: &str) -> Vec<String> {
    let script = fs::read_to_string(sb.launch_file(name)).unwrap();
    let marker = format!(" {name} \"$s\"");
    let at = script.find(&marker).unwrap_or_else(|| panic!("no crash-branch epilogue of {name} in:\n{script}"));
    let rest = &script[at + marker.len()..];
    let words = &rest[..rest.find(';').unwrap_or(rest.len())];
    words.split_whitespace().map(|w| w.trim_matches('\'').to_owned()).collect()
}

/// Runs the real (baked) epilogue with `args`, as a late pane would; it always exits 0.
fn epilogue(sb: &Sandbox, args: &[String]) {
    let out = Command::new(sb.epilogue()).args(args).env_clear().output().unwrap();
    assert!(out.status.success(), "epilogue {args:?}: {out:?}");
}

/// `NAME STATUS WORDS…`: the report of a pane whose epilogue words are `words`.
fn report(name: &str, status: u32, words: &[String]) -> Vec<String> {
    [name.to_owned(), status.to_string()].into_iter().chain(words.iter().cloned()).collect()
}

/// The side file as JSON (`Null` when absent or not JSON).
fn side(sb: &Sandbox, name: &str) -> Value {
    fs::read(sb.side_file(name)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or(Value::Null)
}

/// Sets the mtime of `name`'s lease `secs` into the past (the sweep's 30 s grace is then over).
fn age_lease(sb: &Sandbox, name: &str, secs: u64) {
    let file = fs::File::options().append(true).open(sb.lease_path(name)).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(secs)).unwrap();
}

fn entry_map(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap()
}

// issue 17 row 1
#[test]
fn a_late_epilogue_of_an_old_life_changes_nothing_of_the_new_one() {
    let sb = Sandbox::in_slot();
    sb.write_registry(&registry_with(&[]));
    ok(&sb, &["add", "hook-a", "--harness", "tool", "--ephemeral"]);
    ok(&sb, &["add", "main", "--harness", "tool"]);
    sb.create_lease("hook-a");
    sb.once();
    wait_until("both first lives to start", || sb.agent("hook-a").starts() == 1 && sb.agent("main").starts() == 1);
    let (old_hook, old_main) = (pane_report_words(&sb, "hook-a"), pane_report_words(&sb, "main"));
    for name in ["hook-a", "main"] {
        ok(&sb, &["rm", name]);
    }
    ok(&sb, &["add", "hook-a", "--harness", "tool", "--ephemeral"]);
    ok(&sb, &["add", "main", "--harness", "tool"]);
    sb.create_lease("hook-a");
    sb.once();
    wait_until("both new lives to start", || sb.agent("hook-a").starts() == 2 && sb.agent("main").starts() == 2);
    let before = (sb.entry("hook-a"), sb.entry("main"), fs::read(sb.lease_path("hook-a")).unwrap(), sb.hook_log());

    epilogue(&sb, &report("hook-a", 0, &old_hook));
    epilogue(&sb, &report("hook-a", 1, &old_hook));
    epilogue(&sb, &report("main", 1, &old_main));

    let after = (sb.entry("hook-a"), sb.entry("main"), fs::read(sb.lease_path("hook-a")).unwrap(), sb.hook_log());
    assert_eq!(after.0, before.0, "the new hook-a entry changed (old pane reported {old_hook:?})");
    assert_eq!(after.1, before.1, "the new main entry changed (old pane reported {old_main:?})");
    assert_eq!(String::from_utf8_lossy(&after.2), String::from_utf8_lossy(&before.2), "the new life's lease changed");
    assert_eq!(after.3, before.3, "the hook log changed");
    sb.once();
    assert!(sb.entry("hook-a").is_some() && sb.is_live("hook-a"), "the new life was reaped: {:?}", sb.entry("hook-a"));
    assert_eq!(sb.lease("hook-a").unwrap()["outcome"], Value::Null);
}

// issue 17 row 2
#[test]
fn a_late_death_report_for_a_resolved_lease_writes_no_end_record() {
    let sb = Sandbox::in_slot();
    sb.write_registry(&registry_with(&[]));
    ok(&sb, &["add", "hook-b", "--harness", "tool"]);
    sb.create_lease("hook-b");
    sb.once();
    wait_until("the first life to start", || sb.agent("hook-b").starts() == 1);
    let old = pane_report_words(&sb, "hook-b");
    ok(&sb, &["rm", "hook-b"]);
    ok(&sb, &["add", "hook-b", "--harness", "tool"]);
    assert!(sb.lease("hook-b").is_none());
    let before = sb.hook_log();
    assert_eq!(before.last().map(|l| l["how"].clone()), Some(json!("rm")), "rm resolved the old lease: {before:#?}");
    let entry = sb.entry("hook-b");

    // The old pane's own report, and the same from a pane of an older supervisor (`NAME 1 G_old`, no LIFE).
    epilogue(&sb, &report("hook-b", 1, &old));
    epilogue(&sb, &report("hook-b", 1, &old[..1]));

    assert_eq!(sb.hook_log(), before, "a stale report appended a record (old pane reported {old:?})");
    assert_eq!(sb.entry("hook-b"), entry, "a GEN of another life than the entry's changes nothing of it (L-6)");
}

// issue 17 row 3
#[test]
fn a_name_added_again_within_the_sweep_grace_never_binds_the_old_lease() {
    let sb = Sandbox::in_slot();
    sb.write_registry(&registry_with(&[("hook-c", tool(json!({})))]));
    let old_gen = sb.create_lease("hook-c");
    sb.once();
    wait_until("the first life to start", || sb.agent("hook-c").starts() == 1);
    let name = SessionName::parse("hook-c").unwrap();
    sb.edit_registry(|doc| {
        doc.remove(&name);
    });
    sb.kill_pane("hook-c");
    sb.agent("hook-c").control("exit 0");
    ok(&sb, &["add", "hook-c", "--harness", "tool"]);
    sb.once();
    wait_until("the new life's clean exit", || sb.entry("hook-c").is_some_and(|e| e["stopped"] == json!(true)));

    let side = side(&sb, "hook-c");
    assert!(side["launchSessionId"].is_string(), "the new life's start is not recorded: {side}");
    assert_ne!(side["leaseGen"], json!(old_gen), "the new life's side file carries the old lease gen: {side}");
    let words = pane_report_words(&sb, "hook-c");
    assert_eq!(words.first().map(String::as_str), Some("-"), "the new life's epilogue words: {words:?}");
    let script = fs::read_to_string(sb.launch_file("hook-c")).unwrap();
    assert!(!script.contains(&old_gen), "the launch file carries the old gen {old_gen}:\n{script}");
    let lease = sb.lease("hook-c").expect("the new life's clean exit deleted the old life's lease");
    assert_eq!((&lease["gen"], &lease["outcome"]), (&json!(old_gen), &Value::Null));
    assert!(sb.hook_log().iter().all(|l| l["how"] != json!("exited")), "{:#?}", sb.hook_log());

    age_lease(&sb, "hook-c", 60);
    sb.once();
    assert!(sb.lease("hook-c").is_none(), "the old lease was not swept: {:?}", sb.lease("hook-c"));
    let swept: Vec<Value> = sb.hook_log().into_iter().filter(|l| l["how"] == json!("swept")).collect();
    assert_eq!(swept.len(), 1, "{:#?}", sb.hook_log());
    assert_eq!((&swept[0]["name"], &swept[0]["outcome"]), (&json!("hook-c"), &json!("vanished")), "{}", swept[0]);
}

// issue 17 row 4
#[test]
fn an_operator_restart_of_a_leased_session_keeps_its_lease_open() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[("hook-d", tool(json!({"ephemeral": true})))]));
    let lease_gen = sb.create_lease("hook-d");
    sb.once();
    wait_until("the first start", || sb.agent("hook-d").starts() == 1);
    ok(&sb, &["restart", "hook-d"]);
    sb.wait_gone("hook-d");
    let marked = sb.lease("hook-d").unwrap();
    let tick = stderr(&sb.once());

    let lease = sb.lease("hook-d").unwrap();
    assert_eq!(lease["outcome"], Value::Null, "the restart was read as a loss: {lease}\n{tick}");
    assert_eq!(marked["restartPending"], json!(true), "the restart was not recorded before it acted: {marked}");
    assert!(lease.get("restartPending").is_none(), "the tick did not consume the mark: {lease}");
    assert!(lease["restartedAt"].is_string(), "{lease}");
    assert!(tick.contains("'hook-d' was restarted by the operator"), "{tick}");
    wait_until("the respawn", || sb.agent("hook-d").starts() == 2);
    assert_eq!(side(&sb, "hook-d")["leaseGen"], json!(lease_gen), "the respawn binds the same lease");
    let restarts: Vec<Value> = sb.hook_log().into_iter().filter(|l| l["what"] == json!("restart")).collect();
    assert_eq!(restarts.len(), 1, "{:#?}", sb.hook_log());
    assert_eq!((&restarts[0]["name"], &restarts[0]["outcome"]), (&json!("hook-d"), &Value::Null));
    sb.once();
    let lease = sb.lease("hook-d").unwrap();
    assert!(lease["lastSeenAt"].is_string(), "no heartbeat after the restart: {lease}");
    assert_eq!(lease["outcome"], Value::Null, "{lease}");
}

// issue 17 row 5
#[test]
fn a_revived_assignment_that_crashes_says_so_on_its_lease() {
    let sb = Sandbox::in_slot();
    sb.write_registry(&registry_with(&[("hook-e", tool(json!({})))]));
    sb.create_lease("hook-e");
    sb.once();
    wait_until("the first start", || sb.agent("hook-e").starts() == 1);
    sb.stop("hook-e");
    assert_eq!(sb.lease("hook-e").unwrap()["outcome"], json!("stopped"));
    sb.agent("hook-e").control("exit 1");
    ok(&sb, &["restart", "hook-e"]);
    sb.once();
    // The epilogue writes the entry first, then the lease, then the hook log's end line: wait for the last.
    let ended = || sb.hook_log().iter().any(|l| l["what"] == json!("end") && l["name"] == json!("hook-e"));
    wait_until("the revived agent's crash", || sb.entry("hook-e").is_some_and(|e| e["died"] == json!(1)) && ended());

    let lease = sb.lease("hook-e").unwrap();
    assert_eq!(lease["outcome"], json!("died:1"), "{lease}");
    let log = sb.hook_log();
    let restart = log.iter().find(|l| l["what"] == json!("restart"));
    assert_eq!(restart.map(|l| l["outcome"].clone()), Some(json!("stopped")), "no restart line: {log:#?}");
    let crash = log.iter().find(|l| l["how"] == json!("died:1"));
    assert_eq!(crash.map(|l| l["outcome"].clone()), Some(json!("died:1")), "no died:1 record: {log:#?}");
}

// issue 17 row 6
#[test]
fn a_spawn_killed_before_any_record_is_marked_vanished_and_not_prompted_again() {
    let mut sb = Sandbox::new();
    let prompt = "Kick off the review of PR 7";
    sb.write_registry(&registry_with(&[("hook-k", tool(json!({"initialPrompt": prompt})))]));
    sb.create_lease("hook-k");
    let plain_tmux = sb.env_var("AGENT_BOX_TMUX_BIN").unwrap().to_owned();
    sb.kill_caller_after_new_session("hook-k");
    let doomed = sb.start_supervisor();
    assert_eq!(sb.wait_exit(doomed, Duration::from_secs(30)), None, "SIGKILLed right after new-session");
    wait_until("the first start", || sb.agent("hook-k").starts() == 1);
    sb.set_env("AGENT_BOX_TMUX_BIN", plain_tmux);
    sb.kill_pane("hook-k");
    let tick = stderr(&sb.once());

    let lease = sb.lease("hook-k").unwrap();
    assert_eq!(lease["outcome"], json!("vanished"), "the loss is not recorded: {lease}\n{tick}");
    wait_until("the second start", || sb.agent("hook-k").starts() == 2);
    let (first, second) = (sb.agent("hook-k").start(1).argv_strings(), sb.agent("hook-k").start(2).argv_strings());
    assert!(first.iter().any(|a| a == prompt), "the first start had the kickoff prompt: {first:?}");
    assert!(!second.iter().any(|a| a.contains(prompt)), "the kickoff prompt was sent again: {second:?}");
    let id = |k| sb.agent("hook-k").start(k).env_var("AGENT_BOX_SESSION_ID").map(str::to_owned);
    assert_eq!(id(2), id(1), "the start resumes the same launch");
}

// issue 17 row 7
#[test]
fn an_interrupted_respawn_after_a_crash_leaves_no_died_on_the_healthy_pane() {
    let mut sb = Sandbox::new();
    let bid = "3d2c1b0a-9f8e-4d7c-8b6a-5f4e3d2c1b0a";
    sb.write_registry(&registry_with(&[("hook-r", tool(json!({"hasRun": true, "boxSessionId": bid, "died": 3})))]));
    sb.create_lease("hook-r");
    let plain_tmux = sb.env_var("AGENT_BOX_TMUX_BIN").unwrap().to_owned();
    sb.kill_caller_after_new_session("hook-r");
    let doomed = sb.start_supervisor();
    assert_eq!(sb.wait_exit(doomed, Duration::from_secs(30)), None, "SIGKILLed right after new-session");
    wait_until("the respawn", || sb.agent("hook-r").starts() == 1);
    sb.set_env("AGENT_BOX_TMUX_BIN", plain_tmux);

    assert!(sb.is_live("hook-r"));
    let entry = sb.entry("hook-r").unwrap();
    assert!(entry.get("died").is_none(), "the healthy pane shows the old crash: {entry}");
    sb.once();
    assert!(sb.entry("hook-r").unwrap().get("died").is_none(), "{:?}", sb.entry("hook-r"));
    sb.kill_pane("hook-r");
    let tick = stderr(&sb.once());
    let lease = sb.lease("hook-r").unwrap();
    assert_eq!(lease["outcome"], json!("vanished"), "the killed healthy pane is not accounted for: {lease}\n{tick}");
}

// issue 17 row 8
#[test]
fn no_pane_starts_while_its_side_file_cannot_be_written_and_it_is_recorded_once_it_can() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    sb.write_registry(&registry_with(&[("hook-w", tool(json!({})))]));
    let lease_gen = sb.create_lease("hook-w");
    let blocker = sb.side_file("hook-w");
    fs::create_dir_all(&blocker).unwrap();
    let pid = sb.start_supervisor();
    sb.wait_ticks(pid, 3);
    let line = format!("session 'hook-w': cannot write {}", blocker.display());
    assert!(!sb.is_live("hook-w"), "a pane started that nothing records:\n{}", sb.supervisor_log());
    assert_eq!(sb.agent("hook-w").starts(), 0);
    assert_eq!(sb.log_count(&line), 1, "{}", sb.supervisor_log());

    fs::remove_dir(&blocker).unwrap();
    sb.wait_live("hook-w");
    wait_until("the start", || sb.agent("hook-w").starts() == 1);
    let side = side(&sb, "hook-w");
    let launch_id = sb.agent("hook-w").start(1).env_var("AGENT_BOX_SESSION_ID").map(str::to_owned);
    assert_eq!(side["launchSessionId"].as_str().map(str::to_owned), launch_id, "{side}");
    assert_eq!(side["leaseGen"], json!(lease_gen), "{side}");
}

// issue 17 row 9
#[test]
fn an_entry_replaced_while_no_supervisor_runs_starts_fresh_with_its_own_prompt() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[("main", tool(json!({"initialPrompt": "the first life's prompt"})))]));
    sb.once();
    wait_until("the first life's start", || sb.agent("main").starts() == 1);
    assert!(side(&sb, "main")["launchSessionId"].is_string(), "{}", side(&sb, "main"));
    sb.kill_pane("main");
    let new_id = "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d";
    let replacement =
        tool(json!({"boxSessionId": new_id, "hasRun": false, "initialPrompt": "the second life's prompt"}));
    let name = SessionName::parse("main").unwrap();
    sb.edit_registry(|doc| {
        doc.remove(&name);
        doc.insert_new(&name, entry_map(replacement)).unwrap();
    });
    sb.once();
    wait_until("the second life's start", || sb.agent("main").starts() == 2);

    let start = sb.agent("main").start(2);
    let argv = start.argv_strings();
    assert_eq!(argv.last().map(String::as_str), Some("the second life's prompt"), "{argv:?}");
    assert_eq!(start.env_var("AGENT_BOX_SESSION_ID"), Some(new_id), "started as the old launch");
    assert_eq!(sb.entry("main").unwrap()["boxSessionId"], json!(new_id));
}

// issue 17 row 10
#[test]
fn a_start_prepared_for_a_replaced_life_is_prepared_again_for_the_new_one() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    let (id1, id2) = ("11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222");
    let life1 = "33333333-3333-4333-8333-333333333333";
    let first = tool(json!({"boxSessionId": id1, "initialPrompt": "life one", "life": life1}));
    sb.write_registry(&registry_with(&[("main", first)]));
    let limit = sb.root().join("session-limit");
    fs::remove_file(&limit).unwrap();
    let made = sb.sh(&format!("mkfifo '{}'", limit.display()));
    assert!(made.status.success(), "{made:?}");
    let pid = sb.start_supervisor();
    // A writer can open the FIFO without blocking only once a reader has it open: the supervisor is then inside
    // the unlocked admission pre-check, after it read the tick document and before the locked section.
    let mut feed = None;
    wait_until("the supervisor to read the limit FIFO", || {
        feed = fs::OpenOptions::new().write(true).custom_flags(nix::libc::O_NONBLOCK).open(&limit).ok();
        feed.is_some()
    });
    let name = SessionName::parse("main").unwrap();
    let second = tool(json!({"boxSessionId": id2, "initialPrompt": "life two"}));
    sb.edit_registry(|doc| {
        doc.remove(&name);
        doc.insert_new(&name, entry_map(second)).unwrap();
    });
    let regular = sb.root().join("session-limit.regular");
    fs::write(&regular, "8\n").unwrap();
    fs::rename(&regular, &limit).unwrap();
    let mut feed = feed.unwrap();
    feed.write_all(b"8\n").unwrap();
    drop(feed);

    wait_until("a start", || sb.agent("main").starts() == 1);
    sb.wait_ticks(pid, 2);
    assert_eq!(sb.agent("main").starts(), 1, "{}", sb.supervisor_log());
    let start = sb.agent("main").start(1);
    let argv = start.argv_strings();
    assert_eq!(argv.last().map(String::as_str), Some("life two"), "life one's start: {argv:?}");
    assert_eq!(start.env_var("AGENT_BOX_SESSION_ID"), Some(id2), "{argv:?}");
    let entry = sb.entry("main").unwrap();
    assert_eq!(entry["boxSessionId"], json!(id2), "life two's entry was overwritten: {entry}");
    assert_eq!(sb.log_count("'main' changed while its start was being prepared"), 1, "{}", sb.supervisor_log());
}

// issue 17 row 11
#[test]
fn a_regular_file_at_the_registry_directory_is_said_once_as_unwatchable() {
    let mut sb = Sandbox::new();
    sb.use_counting_tmux();
    let dir = sb.registry().parent().unwrap().to_path_buf();
    fs::create_dir_all(dir.parent().unwrap()).unwrap();
    fs::write(&dir, b"not a directory").unwrap();
    let pid = sb.start_supervisor();
    sb.wait_ticks(pid, 3);
    let line = format!("cannot watch {} for changes", dir.display());
    assert_eq!(sb.log_count(&line), 1, "{}", sb.supervisor_log());
    assert_eq!(sb.log_count("cannot watch"), 1, "{}", sb.supervisor_log());
}

// issue 25 item 1 (a), L-15
#[test]
fn a_restart_mark_the_absence_could_not_consume_is_consumed_by_the_start_so_a_later_loss_reads_vanished() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[("hook-m", tool(json!({"ephemeral": true})))]));
    sb.create_lease("hook-m");
    sb.once();
    wait_until("the first start", || sb.agent("hook-m").starts() == 1);
    ok(&sb, &["restart", "hook-m"]);
    sb.wait_gone("hook-m");
    assert_eq!(sb.lease("hook-m").unwrap()["restartPending"], json!(true), "the restart was not recorded");

    // The lease lock held from here: the supervisor's D12 cannot consume the mark (LeaseError::Busy after 2 s).
    let held = HeldLock::now(&sb.paths().lease_dir().join(".lock"));
    sb.start_supervisor();
    let unmarked = "'hook-m' vanished: its pane ended without recording how (killed, reboot or out of memory); its lease could not be marked";
    wait_until("the absence to find the lease lock busy", || sb.log_count(unmarked) == 1);
    drop(held);
    wait_until("the new pane", || sb.agent("hook-m").starts() == 2 && sb.is_live("hook-m"));
    // Its L20 line comes after everything the start logs.
    wait_until("the supervisor to log the new pane", || sb.log_count("started 'hook-m'") == 1);
    let lease = sb.lease("hook-m").unwrap();
    assert_eq!(lease["outcome"], Value::Null, "the restart was read as a loss: {lease}\n{}", sb.supervisor_log());

    // A real loss of the new pane: killed from outside, no epilogue, no restart asked for.
    let restarted = "'hook-m' was restarted by the operator";
    let marked = "'hook-m' vanished: its pane ended without recording how (killed, reboot or out of memory); its lease is marked vanished";
    let consumed_before = sb.log_count(restarted);
    sb.kill_pane("hook-m");
    // The lease is written before the log line: wait for the line (or for the reading the bug gave).
    wait_until("the supervisor to account for the lost pane", || {
        sb.log_count(marked) == 1 || sb.log_count(restarted) > consumed_before
    });
    let lease = sb.lease("hook-m").unwrap();
    let log = sb.supervisor_log();
    assert_eq!(lease["outcome"], json!("vanished"), "the loss of the new pane was hidden: {lease}\n{log}");
    assert_eq!(sb.log_count(restarted), consumed_before, "the loss was read as the operator's restart:\n{log}");
    assert_eq!(sb.log_count(marked), 1, "{log}");
}

/// `agent-box-session ARGS` started in the background with its kills held at a [`KillGate`], once it reached its
/// first kill or ended: the supervisor's tick can then run in the instant between the verb's lock section and its
/// kill. Returns the gate and the pid; [`finish`] opens the gate and returns what the verb printed.
fn gated_session(sb: &Sandbox, args: &[&str]) -> (KillGate, u32) {
    let gate = KillGate::new(sb);
    let mut cmd = sb.cmd("agent-box-session");
    cmd.args(args).env("AGENT_BOX_TMUX_BIN", gate.tmux_bin()).stdin(Stdio::null());
    cmd.stdout(fs::File::create(sb.root().join("gated.out")).unwrap());
    cmd.stderr(fs::File::create(sb.root().join("gated.err")).unwrap());
    let pid = sb.spawn_tracked(cmd);
    wait_until("the verb to reach its kill or to end", || gate.holds_a_kill() || sb.exited(pid).is_some());
    (gate, pid)
}

/// Opens the gate, waits for the verb to exit 0, returns its stdout.
fn finish(sb: &Sandbox, gate: &KillGate, pid: u32) -> String {
    gate.open();
    let stderr = || fs::read_to_string(sb.root().join("gated.err")).unwrap();
    assert_eq!(sb.wait_exit(pid, deadline()), Some(0), "{}", stderr());
    fs::read_to_string(sb.root().join("gated.out")).unwrap()
}

/// The identity of `name`'s pane (tmux session id and pane pid), `None` when it has none.
fn pane_of(sb: &Sandbox, name: &str) -> Option<String> {
    sb.tmux().display(&SessionName::parse(name).unwrap(), "#{session_id} #{pane_pid}").ok()
}

/// A listed hook session `name` with an open lease whose first pane has started.
fn started_hook(sb: &Sandbox, name: &str) {
    sb.write_registry(&registry_with(&[(name, tool(json!({})))]));
    sb.create_lease(name);
    sb.once();
    wait_until("the first start", || sb.agent(name).starts() == 1);
}

// issue 25 item 1 (b), L-16
#[test]
fn a_restart_of_a_stopped_session_never_kills_the_pane_the_supervisor_started_for_it() {
    let sb = Sandbox::new();
    started_hook(&sb, "hook-s");
    sb.stop("hook-s");
    sb.wait_gone("hook-s");
    assert_eq!(sb.lease("hook-s").unwrap()["outcome"], json!("stopped"));

    // The supervisor's tick runs while the restart's kill (if it makes one) waits, as the registry write that
    // removed `stopped` would have woken it.
    let (gate, restart) = gated_session(&sb, &["restart", "hook-s"]);
    let tick = stderr(&sb.once());
    wait_until("the supervisor's new pane", || sb.agent("hook-s").starts() == 2 && sb.is_live("hook-s"));
    let started = pane_of(&sb, "hook-s");
    let printed = finish(&sb, &gate, restart);
    let log = format!("{tick}{}", stderr(&sb.once()));

    assert_eq!(pane_of(&sb, "hook-s"), started, "the restart killed the supervisor's new pane:\n{log}");
    let lease = sb.lease("hook-s").unwrap();
    assert_eq!(lease["outcome"], Value::Null, "the operator's restart was recorded as a loss: {lease}\n{log}");
    assert!(!log.contains("vanished"), "{log}");
    assert!(log.contains("'hook-s' was restarted by the operator"), "{log}");
    assert_eq!(printed, "session 'hook-s' is no longer stopped — the supervisor starts it within ~2s\n");
}

// issue 25 item 1 (b), L-16: `restart --all` ends the panes its lock section found, and only those
#[test]
fn restart_all_ends_only_the_panes_it_found_and_never_one_started_after() {
    let sb = Sandbox::new();
    sb.write_registry(&registry_with(&[("hook-s", tool(json!({}))), ("main", tool(json!({})))]));
    sb.create_lease("hook-s");
    sb.once();
    wait_until("the first starts", || sb.agent("hook-s").starts() == 1 && sb.agent("main").starts() == 1);
    sb.stop("hook-s");
    sb.wait_gone("hook-s");
    let main_before = pane_of(&sb, "main");

    let (gate, restart) = gated_session(&sb, &["restart", "--all"]);
    assert!(gate.holds_a_kill(), "the running session's pane is to be killed");
    let tick = stderr(&sb.once());
    wait_until("the supervisor's new pane", || sb.agent("hook-s").starts() == 2 && sb.is_live("hook-s"));
    let started = pane_of(&sb, "hook-s");
    let printed = finish(&sb, &gate, restart);
    wait_until("main's pane to be gone", || pane_of(&sb, "main") != main_before);
    let log = format!("{tick}{}", stderr(&sb.once()));

    assert_eq!(pane_of(&sb, "hook-s"), started, "restart --all killed the supervisor's new pane:\n{log}");
    let lease = sb.lease("hook-s").unwrap();
    assert_eq!(lease["outcome"], Value::Null, "the operator's restart was recorded as a loss: {lease}\n{log}");
    assert!(!log.contains("'hook-s' vanished"), "{log}");
    let expected = "all sessions restart within ~2s: 1 killed, 1 had no pane — the supervisor starts each (re-reading the env store)\n";
    assert_eq!(printed, expected);
}

// issue 25 item 1 (audit), L-16: a restart never turns a loss it did not cause into its own
#[test]
fn a_restart_of_a_session_whose_pane_was_lost_leaves_the_loss_recorded() {
    let sb = Sandbox::new();
    started_hook(&sb, "hook-l");
    sb.kill_pane("hook-l");
    let restarts_before = sb.hook_log().iter().filter(|l| l["what"] == json!("restart")).count();

    // The supervisor's tick runs while the restart would take its mark back (before: its kill found no pane).
    let (gate, restart) = gated_session(&sb, &["restart", "hook-l"]);
    let tick = stderr(&sb.once());
    let lease = sb.lease("hook-l").unwrap();
    assert_eq!(lease["outcome"], json!("vanished"), "the loss was read as the operator's restart: {lease}\n{tick}");
    wait_until("the supervisor's new pane", || sb.agent("hook-l").starts() == 2 && sb.is_live("hook-l"));
    let started = pane_of(&sb, "hook-l");
    let printed = finish(&sb, &gate, restart);

    assert_eq!(pane_of(&sb, "hook-l"), started, "the restart killed the supervisor's new pane");
    assert_eq!(printed, "session 'hook-l' had no pane to kill — the supervisor starts it within ~2s\n");
    let restarts = sb.hook_log().iter().filter(|l| l["what"] == json!("restart")).count();
    assert_eq!(restarts, restarts_before, "a restart that restarted nothing is in the hook log");
}

// issue 25 item 1 (audit), L-16: `stop` ends only the pane its lock section found
#[test]
fn a_stop_never_kills_the_pane_started_for_a_restart_that_came_after_it() {
    let sb = Sandbox::new();
    started_hook(&sb, "hook-t");
    let (gate, stop) = gated_session(&sb, &["stop", "hook-t"]);
    assert!(gate.holds_a_kill(), "the stop's kill of the running pane waits");
    let restarted = ok(&sb, &["restart", "hook-t"]);
    assert_eq!(
        String::from_utf8_lossy(&restarted.get_output().stdout),
        "session 'hook-t' killed — the supervisor restarts it within ~2s\n"
    );
    let tick = stderr(&sb.once());
    wait_until("the supervisor's new pane", || sb.agent("hook-t").starts() == 2 && sb.is_live("hook-t"));
    let started = pane_of(&sb, "hook-t");
    let printed = finish(&sb, &gate, stop);
    let log = format!("{tick}{}", stderr(&sb.once()));

    assert_eq!(pane_of(&sb, "hook-t"), started, "the stop killed the pane started after the restart:\n{log}");
    let lease = sb.lease("hook-t").unwrap();
    assert_eq!(lease["outcome"], Value::Null, "the restarted assignment was recorded as lost: {lease}\n{log}");
    assert!(!log.contains("'hook-t' vanished"), "{log}");
    let stopped =
        "session 'hook-t' stopped — still listed, not respawned; 'agent-box-session restart hook-t' revives it\n";
    assert_eq!(printed, stopped);
}
