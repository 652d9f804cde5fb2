//! Black-box tests of the read-only verbs of agent-box-session (`ls`, `peers`, `capacity`, `leases`, `log`;
//! 50-session-cli §15 items 1, 2, 3, 10 and 80 CL12, CL14, RG08): the real binary, a temporary HOME, a private
//! tmux socket.

use std::fs;
use std::path::{Path, PathBuf};

use agent_box_tests::fixtures::{predicate, session, stderr, stdout};
use agent_box_tests::{Sandbox, wait_until};
use base::SessionName;
use lease::{Expect, LeaseDir, Outcome};
use serde_json::{Value, json};
use tmux::{NewSession, TmuxApi};

const FOOTER: &str = "\n\
A note is what a session says about itself, and a CLAIM stops the standing watches from starting another session for matching events.
Neither proves that the session is busy or idle right now.
To see what one is doing, read its pane (tmux -L agent-box capture-pane -pt NAME | tail -40) or ask it.
";

/// The warning `ls` prints while no supervisor holds the registry (M52, issue 11); the sandboxes of these tests
/// run none.
fn no_supervisor(sb: &Sandbox) -> String {
    format!(
        "agent-box-session: no supervisor is running for {}: nothing is started or restarted until one is (systemctl --user start agent-box.service, or run agent-box-supervisor)\n",
        sb.registry().display()
    )
}

/// Runs a verb that must succeed without a word on stderr (but M52 for `ls`); returns its stdout.
fn quiet(sb: &Sandbox, args: &[&str]) -> String {
    let expected = match args {
        ["ls", ..] => no_supervisor(sb),
        ["log", ..] if !args.contains(&"--json") && !sb.state_dir().join("hook-sessions.jsonl").exists() => format!(
            "agent-box-session: no hook-session record yet ({}): no dispatched session has started or ended on this box\n",
            sb.state_dir().join("hook-sessions.jsonl").display()
        ),
        _ => String::new(),
    };
    stdout(&session(sb, args).code(0).stderr(expected))
}

/// Starts a pane that idles, with an optional shell command run first.
fn pane_running(sb: &Sandbox, name: &str, first: &str) {
    let script = format!("{first}\nexec sleep 600");
    let argv = vec!["/bin/sh".into(), "-c".into(), script.into()];
    let request = NewSession { name: SessionName::parse(name).unwrap(), cwd: sb.home().into(), env: vec![], argv };
    sb.tmux().new_session(&request).unwrap();
}

fn pane(sb: &Sandbox, name: &str) {
    pane_running(sb, name, ":");
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn filter_path(sb: &Sandbox, name: &str) -> PathBuf {
    sb.home().join(format!(".local/state/local-webhook/filter.agent-{name}.json"))
}

/// A lease created by the lease library, then marked with `outcome` when given.
fn lease_with(sb: &Sandbox, name: &str, outcome: Option<&str>) {
    sb.create_lease(name);
    if let Some(outcome) = outcome {
        let dir = LeaseDir::new(sb.state_dir().join("lease"));
        dir.mark_outcome(&SessionName::parse(name).unwrap(), &Outcome::parse(outcome), &Expect::Any).unwrap();
    }
}

fn parse_json(text: &str) -> Value {
    assert!(text.ends_with('\n') && !text.ends_with("\n\n"), "exactly one trailing newline: {text:?}");
    assert!(text.starts_with("{\n  \"version\": 1,\n"), "pretty, version first: {text}");
    let value: Value = serde_json::from_str(text).unwrap();
    assert_eq!(value["version"], 1);
    value
}

fn json_of(sb: &Sandbox, verb: &str) -> Value {
    parse_json(&quiet(sb, &[verb, "--json"]))
}

/// Every file and directory under `root` with its size, sorted (a "tree listing").
fn tree(root: &Path) -> Vec<String> {
    let line = |path: &PathBuf| {
        let meta = fs::symlink_metadata(path).unwrap();
        let rel = path.strip_prefix(root).unwrap().display();
        format!("{rel} {} {}", if meta.is_dir() { "d" } else { "f" }, meta.len())
    };
    let mut out: Vec<String> = agent_box_tests::tree::below(root).iter().map(line).collect();
    out.sort();
    out
}

/// The world of 50-session-cli §4.4: five listed entries, four live panes, two unresolved leases.
fn example_world(sb: &Sandbox) {
    sb.write_registry(
        r#"{"version": 1, "sessions": {
  "main": {"agent": "claude", "origin": "user", "workingDirectory": "/home/agent/src"},
  "helper": {"agent": "codex", "stopped": true},
  "hook-acme-widget-3fa9": {"agent": "claude", "origin": "webhook", "workingDirectory": null, "ephemeral": true, "died": 1},
  "hook-acme-widget-77c0": {"agent": "claude", "origin": "webhook", "ephemeral": true},
  "notes": {"agent": "shell"}
}}"#,
    );
    for name in ["main", "hook-acme-widget-3fa9", "hook-acme-widget-77c0", "scratch"] {
        pane(sb, name);
    }
    lease_with(sb, "hook-acme-widget-3fa9", Some("died:1"));
    lease_with(sb, "hook-acme-widget-77c0", Some("vanished"));
}

// CL01
#[test]
fn ls_reproduces_the_example_layout_in_text_and_json() {
    let sb = Sandbox::new();
    example_world(&sb);
    let expected = "\
NAME                     HARNESS  STATE
main                     claude   live
helper                   codex    stopped
hook-acme-widget-3fa9    claude   died(1), UNRESOLVED ASSIGNMENT (died:1)
hook-acme-widget-77c0    claude   live, UNRESOLVED ASSIGNMENT (vanished)
notes                    shell    starting
scratch                  -        unmanaged
";
    assert_eq!(quiet(&sb, &["ls"]), expected);
    let row = |name: &str, harness: Value, state: &str, listed: bool| {
        json!({"name": name, "harness": harness, "state": state, "listed": listed, "stopped": false, "died": null,
               "ephemeral": false, "origin": null, "workingDirectory": null, "unresolved": null, "backoffUntil": null, "harnessMissing": null, "notification": null})
    };
    let mut rows = vec![
        row("main", json!("claude"), "live", true),
        row("helper", json!("codex"), "stopped", true),
        row("hook-acme-widget-3fa9", json!("claude"), "died", true),
        row("hook-acme-widget-77c0", json!("claude"), "live", true),
        row("notes", json!("shell"), "starting", true),
        row("scratch", Value::Null, "unmanaged", false),
    ];
    rows[0]["origin"] = json!("user");
    rows[0]["workingDirectory"] = json!("/home/agent/src");
    rows[1]["stopped"] = json!(true);
    for (i, outcome) in [(2, "died:1"), (3, "vanished")] {
        rows[i]["origin"] = json!("webhook");
        rows[i]["ephemeral"] = json!(true);
        rows[i]["unresolved"] = json!(outcome);
        // Issue 21: no supervisor wrote the notifier marker, so an undelivered outcome reads "off".
        rows[i]["notification"] = json!({"state": "off", "at": null, "attempts": 0, "nextAt": null});
    }
    rows[2]["died"] = json!(1);
    let queue = json!({"queued": 0, "expired": 0});
    let expected = json!({"version": 1, "registry": "ok", "tmux": "ok", "supervisor": "stopped", "sessions": rows, "queue": queue});
    let mut expected_text = serde_json::to_string_pretty(&expected).unwrap();
    expected_text.push('\n');
    assert_eq!(quiet(&sb, &["ls", "--json"]), expected_text);
}

// CL01
#[test]
fn died_without_a_pane_starts_and_stopped_with_a_pane_is_live() {
    let sb = Sandbox::new();
    sb.write_registry(
        r#"{"version":1,"sessions":{"crashed":{"agent":"claude","died":3},"parked":{"agent":"codex","stopped":true}}}"#,
    );
    pane(&sb, "parked");
    let text = quiet(&sb, &["ls"]);
    assert!(text.contains("\ncrashed                  claude   starting\n"), "{text}");
    assert!(text.contains("\nparked                   codex    live\n"), "{text}");
    let json = json_of(&sb, "ls");
    assert_eq!(json["sessions"][0]["state"], "starting");
    assert_eq!(json["sessions"][0]["died"], 3);
    assert_eq!(json["sessions"][1]["state"], "live");
    assert_eq!(json["sessions"][1]["stopped"], true);
}

// CL01
#[test]
fn a_future_backoff_is_shown_and_a_past_one_is_not() {
    let sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"looping":{"agent":"tool"},"recovered":{"agent":"tool"}}}"#);
    let now = base::time::now_epoch();
    let future = base::time::format_iso(now + 250);
    let past = base::time::format_iso(now - 5);
    let side = |name: &str, until: &str| {
        write(&sb.side_file(name), &format!(r#"{{"launchSessionId":"x","backoffUntil":"{until}","quickExits":4}}"#));
    };
    side("looping", &future);
    side("recovered", &past);
    let text = quiet(&sb, &["ls"]);
    let hms = &future[11..19];
    assert!(
        text.contains(&format!("\nlooping                  tool     starting, backoff until {hms} UTC\n")),
        "{text}"
    );
    assert!(text.contains("\nrecovered                tool     starting\n"), "{text}");
    let json = json_of(&sb, "ls");
    assert_eq!(json["sessions"][0]["state"], "starting");
    assert_eq!(json["sessions"][0]["backoffUntil"], future.as_str());
    assert_eq!(json["sessions"][1]["backoffUntil"], Value::Null);
}

// CL01
#[test]
fn an_unparseable_registry_warns_m33_and_exits_0() {
    let sb = Sandbox::new();
    sb.write_registry("{\"sessions\": {\"a\": {}}} trailing");
    pane(&sb, "a");
    let out = session(&sb, &["ls"]).code(0);
    let registry = sb.registry().display().to_string();
    let warning = stderr(&out);
    assert!(
        warning.starts_with(&format!("agent-box-session: {registry} does not parse or cannot be read (")),
        "{warning}"
    );
    let warning = warning.strip_suffix(&no_supervisor(&sb)).unwrap_or(&warning).to_owned();
    assert!(warning.ends_with("); showing no listed session\n") && warning.lines().count() == 1, "{warning}");
    out.stdout("NAME                     HARNESS  STATE\na                        -        unmanaged\n");
    let json = session(&sb, &["ls", "--json"]).code(0);
    assert_eq!(parse_json(&stdout(&json))["registry"], "unreadable");
}

// CL01
#[test]
fn tmux_unavailable_warns_m32_and_assumes_no_pane() {
    let mut sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"a":{"agent":"tool"}}}"#);
    sb.set_env("AGENT_BOX_TMUX_BIN", "/nonexistent/tmux");
    let out = session(&sb, &["ls", "--json"]).code(0).stderr(predicate::str::starts_with(
        "agent-box-session: cannot ask tmux which sessions are live (tmux did not run (/nonexistent/tmux cannot be started: No such file or directory; install tmux (Debian: apt-get install tmux) or point AGENT_BOX_TMUX_BIN at it)); every state below assumes no pane is up\n",
    ));
    let json = parse_json(&stdout(&out));
    assert_eq!((json["tmux"].clone(), json["sessions"][0]["state"].clone()), (json!("unavailable"), json!("starting")));
}

// CL02
#[test]
fn peers_excludes_the_webhook_session() {
    let mut sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"main":{"agent":"claude"},"helper":{"agent":"codex"}}}"#);
    pane(&sb, "main");
    pane(&sb, "helper");
    sb.set_env("LOCAL_WEBHOOK_SESSION", "agent-main");
    let expected = format!(
        "1 live session(s) beside you, and what each one says it is working on:\n\
         helper — codex, interactive, cwd $HOME (its default)\n    \
         claims nothing — no subscription file, so an event on its work spawns a session beside it\n{FOOTER}"
    );
    assert_eq!(quiet(&sb, &["peers"]), expected);
    assert_eq!(json_of(&sb, "peers")["self"], "main");
    sb.set_env("LOCAL_WEBHOOK_SESSION", "agent-helper");
    assert!(quiet(&sb, &["peers"]).contains("\nmain — claude, interactive"));
}

// CL02
#[test]
fn peers_inside_a_pane_excludes_its_own_session() {
    let sb = Sandbox::new();
    pane(&sb, "other");
    let report = sb.root().join("peers.out");
    let keys =
        ["HOME", "USER", "AGENT_BOX_TMUX_SOCKET", "AGENT_BOX_TMUX_TMPDIR", "AGENT_BOX_TMUX_BIN", "AGENT_BOX_TMUX_CONF"];
    let env: Vec<(String, String)> =
        keys.iter().map(|k| ((*k).to_owned(), sb.env_var(k).unwrap().to_string_lossy().into_owned())).collect();
    let bin = agent_box_tests::bins::bin("agent-box-session");
    let script = format!(
        "'{}' peers --json > '{}.tmp' 2>&1; mv '{}.tmp' '{}'; exec sleep 600",
        bin.display(),
        report.display(),
        report.display(),
        report.display()
    );
    let argv = vec!["/bin/sh".into(), "-c".into(), script.into()];
    let request = NewSession { name: SessionName::parse("inside").unwrap(), cwd: sb.home().into(), env, argv };
    sb.tmux().new_session(&request).unwrap();
    wait_until("peers to report from inside the pane", || report.exists());
    let json = parse_json(&fs::read_to_string(&report).unwrap());
    assert_eq!(json["self"], "inside");
    let names: Vec<&str> = json["sessions"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["other"]);
}

// CL02
#[test]
fn tmux_of_our_socket_names_self_and_another_socket_is_ignored() {
    let mut sb = Sandbox::new();
    pane(&sb, "alpha");
    pane(&sb, "beta");
    let pane_id = sb.tmux().display(&SessionName::parse("beta").unwrap(), "#{pane_id}").unwrap();
    sb.set_env("TMUX", format!("{},1,0", sb.tmux().socket_path().display()));
    sb.set_env("TMUX_PANE", pane_id.trim());
    assert_eq!(json_of(&sb, "peers")["self"], "beta");
    let elsewhere = sb.root().join("other-socket");
    fs::write(&elsewhere, "").unwrap();
    sb.set_env("TMUX", format!("{},1,0", elsewhere.display()));
    let json = json_of(&sb, "peers");
    assert_eq!(json["self"], Value::Null, "a pane of another server must not name one of ours");
    assert_eq!(json["sessions"].as_array().unwrap().len(), 2);
}

// CL02
#[test]
fn notes_fold_and_switched_off_filters_claim_nothing() {
    let sb = Sandbox::new();
    sb.write_registry(
        r#"{"version":1,"sessions":{"a":{"agent":"claude","workingDirectory":"/home/agent/w"},"b":{"agent":"codex"}}}"#,
    );
    pane(&sb, "a");
    pane(&sb, "b");
    write(
        &filter_path(&sb, "a"),
        r#"{"topics":[{"topic":"github:acme/widget","include":{"any":[]},"note":"line one\tstill one\nand two"}]}"#,
    );
    write(&filter_path(&sb, "b"), r#"{"enabled":false,"topics":[{"topic":"github:acme/api","include":{}}]}"#);
    let text = quiet(&sb, &["peers"]);
    assert!(
        text.contains("\na — claude, interactive, cwd /home/agent/w\n    CLAIMS github:acme/widget — note: \"line one still one and two\"\n"),
        "{text}"
    );
    assert!(text.contains("\nb — codex, interactive, cwd $HOME (its default)\n    claims nothing — its subscriptions are switched off\n"), "{text}");
    assert!(!text.contains("github:acme/api"), "a disabled filter's topics are not claims: {text}");
    let json = json_of(&sb, "peers");
    assert_eq!(json["sessions"][0]["claims"]["topics"][0]["note"], "line one still one and two");
    assert_eq!(json["sessions"][1]["claims"], json!({"filter": "ok", "enabled": false, "topics": []}));
}

// CL02
#[test]
fn hostile_pane_names_never_reach_a_path() {
    let sb = Sandbox::new();
    let tmux = sb.env_var("AGENT_BOX_TMUX_BIN").unwrap().to_string_lossy().into_owned();
    // The pane renames its own session: the adapter only creates panes with valid names.
    pane_running(&sb, "p1", &format!("'{tmux}' rename-session 'x/evil'"));
    pane_running(&sb, "p2", &format!("'{tmux}' rename-session 'hostile name;$(x)'"));
    wait_until("the panes to rename themselves", || {
        let live = sb.live();
        live.contains(&"x/evil".to_owned()) && live.contains(&"hostile name;$(x)".to_owned())
    });
    let claim = r#"{"topics":[{"topic":"github:leak/leak","include":{}}]}"#;
    write(&filter_path(&sb, "x").with_extension("").join("evil.json"), claim);
    write(&filter_path(&sb, "hostile name;$(x)"), claim);
    write(&sb.state_dir().join("lease/x/evil.json"), r#"{"outcome":"died:9"}"#);
    let text = quiet(&sb, &["peers"]);
    assert!(!text.contains("leak") && !text.contains("died:9"), "read a file through a hostile name: {text}");
    let absent = "    claims nothing — no subscription file, so an event on its work spawns a session beside it\n";
    assert!(
        text.contains(&format!("x/evil — harness unknown, interactive, cwd -, not in the registry\n{absent}")),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "hostile name;$(x) — harness unknown, interactive, cwd -, not in the registry\n{absent}"
        ))
    );
}

// CL02
#[test]
fn a_missing_tmux_binary_is_exit_1_with_m34_and_no_output() {
    let mut sb = Sandbox::new();
    sb.set_env("AGENT_BOX_TMUX_BIN", "/nonexistent/tmux");
    for args in [&["peers"][..], &["peers", "--json"][..]] {
        let out = session(&sb, args).code(1);
        assert_eq!(stdout(&out), "", "{args:?}");
        out.stderr("agent-box-session: cannot ask tmux which sessions are live (tmux did not run (/nonexistent/tmux cannot be started: No such file or directory; install tmux (Debian: apt-get install tmux) or point AGENT_BOX_TMUX_BIN at it))\n");
    }
}

// CL02
#[test]
fn nobody_else_live() {
    let mut sb = Sandbox::new();
    assert_eq!(quiet(&sb, &["peers"]), "No other session is live on this box.\n");
    pane(&sb, "main");
    sb.set_env("LOCAL_WEBHOOK_SESSION", "agent-main");
    assert_eq!(quiet(&sb, &["peers"]), "No other session is live on this box.\n");
}

// RG08, CL03
#[test]
fn read_only_verbs_on_a_fresh_home_create_nothing() {
    let sb = Sandbox::new();
    assert!(!sb.home().join(".config").exists());
    let before = tree(sb.home());
    for args in [
        &["ls"][..],
        &["ls", "--json"],
        &["peers"],
        &["peers", "--json"],
        &["capacity"],
        &["capacity", "--json"],
        &["leases"],
        &["leases", "--json"],
        &["log"],
        &["log", "-n", "5"],
    ] {
        session(&sb, args).code(0);
    }
    assert_eq!(tree(sb.home()), before, "a read-only verb created something under HOME");
    assert_eq!(quiet(&sb, &["capacity"]), "{\"used\": 0, \"max\": 8, \"queued\": 0}\n");
    assert!(!sb.registry().exists());
}

// CL03
#[test]
fn read_only_verbs_take_no_lock_and_create_no_lock_file() {
    let sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"a":{"agent":"tool"}}}"#);
    let before = tree(sb.home());
    for verb in ["ls", "peers", "capacity", "leases", "log"] {
        quiet(&sb, &[verb]);
    }
    assert_eq!(tree(sb.home()), before);
    assert!(!sb.home().join(".config/agent-box/sessions.json.lock").exists());
}

#[test]
fn capacity_json_lists_the_sets_and_a_policy_error_is_75() {
    let sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"a":{"agent":"tool"},"d":{"agent":"tool","died":1},"s":{"agent":"tool","stopped":true}}}"#);
    pane(&sb, "d");
    pane(&sb, "_connect-x");
    let json = json_of(&sb, "capacity");
    assert_eq!(
        json,
        json!({"version": 1, "used": 1, "max": 8, "free": 7, "live": ["d"], "counted": ["a"], "died": ["d"], "queued": 0})
    );
    sb.set_limit("many");
    let refusal = "agent-box-session: cannot check session capacity: the session limit must be";
    session(&sb, &["capacity"]).code(75).stdout("").stderr(predicate::str::starts_with(refusal));
}

// CL10
#[test]
fn leases_order_and_footer() {
    let sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"hook-b":{"agent":"claude"}}}"#);
    let dir = sb.state_dir().join("lease");
    let lease = |name: &str, claimed: &str, outcome: Value| {
        let doc = json!({"//": "x", "topic": "github:acme/widget", "object": "535", "claimedAt": claimed,
                         "gen": null, "outcome": outcome, "lastSeenAt": null});
        write(&dir.join(format!("{name}.json")), &serde_json::to_string_pretty(&doc).unwrap());
    };
    lease("hook-open-late", "2026-11-29T12:00:00Z", Value::Null);
    lease("hook-open-early", "2026-11-29T08:00:00Z", Value::Null);
    lease("hook-b", "2026-11-29T10:00:00Z", json!("vanished"));
    lease("hook-a", "2026-11-29T10:00:00Z", json!("died:1"));
    lease("hook-c", "2026-11-29T09:00:00Z", json!("died:2"));
    write(&dir.join("hook-torn.json"), "{\"topic\": ");
    write(&dir.join("not a name.json"), "{}");
    write(&dir.join(".lock"), "");
    let text = quiet(&sb, &["leases"]);
    let names: Vec<&str> = text.lines().skip(1).map_while(|l| l.split(' ').next().filter(|n| !n.is_empty())).collect();
    assert_eq!(names, ["hook-c", "hook-a", "hook-b", "hook-torn", "hook-open-early", "hook-open-late"], "{text}");
    assert!(text.contains("\nhook-torn                unreadable -                          -                    -                    -                    -        -\n"), "{text}");
    assert!(text.contains("\nhook-open-late           open       -                          2026-11-29T12:00:00Z -                    -                    535      github:acme/widget\n"), "{text}");
    assert!(text.ends_with(
        "\n\n3 unresolved assignment(s): work this box accepted and cannot say finished. Check each, then 'agent-box-session rm NAME' clears it.\n"
    ));
    let json = json_of(&sb, "leases");
    let rows = json["leases"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    assert_eq!(rows[2]["name"], "hook-b");
    assert_eq!(rows[2]["listed"], true);
    assert_eq!(
        rows[3],
        json!({"name": "hook-torn", "readable": false, "topic": null, "object": null, "claimedAt": null,
        "outcome": null, "endedAt": null, "lastSeenAt": null, "gen": null, "listed": false, "unresolved": false, "notification": null})
    );
    fs::remove_dir_all(&dir).unwrap();
    let text = quiet(&sb, &["leases"]);
    assert_eq!(text.lines().count(), 1, "a missing directory has no rows and no footer: {text}");
    assert!(!dir.exists());
}

// CL10
#[test]
fn log_prints_the_newest_records_oldest_first() {
    let sb = Sandbox::new();
    let mut lines = Vec::new();
    for i in 1..=5 {
        lines.push(format!(
            r#"{{"at":"2026-11-29T14:0{i}:00Z","what":"end","name":"hook-{i}","how":"rm","lifeSeconds":{i}0,"outcome":null}}"#
        ));
    }
    lines.insert(2, "torn line".to_owned());
    write(&sb.state_dir().join("hook-sessions.jsonl"), &(lines.join("\n") + "\n"));
    assert_eq!(
        quiet(&sb, &["log", "-n", "3"]),
        "2026-11-29T14:03:00Z end   hook-3 how=rm life=30s outcome=-\n\
         2026-11-29T14:04:00Z end   hook-4 how=rm life=40s outcome=-\n\
         2026-11-29T14:05:00Z end   hook-5 how=rm life=50s outcome=-\n"
    );
    let all = quiet(&sb, &["log"]);
    assert_eq!(all.lines().count(), 6);
    assert_eq!(all.lines().nth(2), Some("? ?     torn line"));
    for bad in ["0", "x", "+3", "99999999999"] {
        session(&sb, &["log", "-n", bad])
            .code(2)
            .stdout("")
            .stderr(format!("agent-box-session: -n wants a whole number of at least 1, not '{bad}'\n"));
    }
}

// CL12
#[test]
fn every_json_report_parses_with_version_1_and_one_newline() {
    let sb = Sandbox::new();
    example_world(&sb);
    write(&filter_path(&sb, "main"), r#"{"topics":[{"topic":"github:acme/widget","include":{},"note":"n"}]}"#);
    for verb in ["ls", "peers", "capacity", "leases"] {
        json_of(&sb, verb);
    }
    assert_eq!(json_of(&sb, "leases")["leases"].as_array().unwrap().len(), 2);
    assert_eq!(json_of(&sb, "peers")["sessions"].as_array().unwrap().len(), 4);
}

// CL14
#[test]
fn control_characters_show_as_question_marks_and_json_stays_raw() {
    let sb = Sandbox::new();
    let key = "bad\u{1b}[31mkey";
    let registry = json!({"version": 1, "sessions": {"main": {"agent": "claude"}, key: {"agent": "tool\r"}}});
    sb.write_registry(&serde_json::to_string_pretty(&registry).unwrap());
    pane(&sb, "main");
    let note = "fixing\u{1b}[2J the\rthing";
    write(
        &filter_path(&sb, "main"),
        &json!({"topics": [{"topic": "github:acme/widget", "include": {}, "note": note}]}).to_string(),
    );
    lease_with(&sb, "main", Some("died:1\u{1b}[2J"));

    let ls = quiet(&sb, &["ls"]);
    assert!(!ls.contains('\u{1b}') && !ls.contains('\r'), "{ls:?}");
    assert!(ls.contains("\nmain                     claude   live, UNRESOLVED ASSIGNMENT (died:1?[2J)\n"), "{ls}");
    assert!(ls.contains("\nbad?[31mkey              tool?    starting\n"), "{ls}");
    let peers = quiet(&sb, &["peers"]);
    assert!(!peers.contains('\u{1b}') && !peers.contains('\r'), "{peers:?}");
    assert!(peers.contains("UNRESOLVED ASSIGNMENT (died:1?[2J)"), "{peers}");
    assert!(peers.contains("— note: \"fixing [2J the thing\""), "{peers}");
    let leases = quiet(&sb, &["leases"]);
    assert!(!leases.contains('\u{1b}'), "{leases:?}");
    assert!(leases.contains("\nmain                     died:1?[2J "), "{leases}");

    let ls = json_of(&sb, "ls");
    assert_eq!(ls["sessions"][0]["unresolved"], "died:1\u{1b}[2J");
    assert_eq!(ls["sessions"][1]["name"], key);
    assert_eq!(ls["sessions"][1]["harness"], "tool\r");
    let peers = json_of(&sb, "peers");
    assert_eq!(peers["sessions"][0]["unresolved"], "died:1\u{1b}[2J");
    assert_eq!(peers["sessions"][0]["claims"]["topics"][0]["note"], "fixing [2J the thing", "notes are folded (12.3)");
    assert_eq!(json_of(&sb, "leases")["leases"][0]["outcome"], "died:1\u{1b}[2J");
}

// N-8 (issue 25): the notifier marker that cannot be looked at is not "no notifier": `ls` and `leases` (text and
// JSON) stop with one line and exit 1 instead of showing an undelivered outcome as `off`.
#[test]
fn a_notifier_marker_that_cannot_be_read_is_an_error_not_off() {
    let sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"hook-a":{"agent":"claude"}}}"#);
    lease_with(&sb, "hook-a", Some("died:1"));
    let marker = sb.state_dir().join("on-outcome.json");
    fs::create_dir_all(&marker).unwrap();
    let line = format!(
        "agent-box-session: cannot tell whether lease outcomes are reported: {} is not a regular file; nothing was listed — make it a readable file again or remove it, then restart the supervisor (systemctl --user restart agent-box.service), which writes it again\n",
        marker.display()
    );
    for verb in [&["leases"][..], &["leases", "--json"], &["ls"], &["ls", "--json"]] {
        session(&sb, verb).code(1).stdout("").stderr(line.clone());
    }
    fs::remove_dir(&marker).unwrap();
    assert!(quiet(&sb, &["leases"]).contains("\nhook-a                   died:1     off "), "absent: off");
}
