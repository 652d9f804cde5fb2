//! The operator-facing behaviour of issue 11 that needs real processes: a second supervisor refused, `ls` with and
//! without a supervisor, the harness-not-installed state, the completion script parsed by bash, and a missing
//! socket directory read as "no server".

use std::process::{Command, Stdio};

use agent_box_tests::fixtures::{session, stderr, stdout};
use agent_box_tests::{Sandbox, wait_until};

#[test]
fn a_second_supervisor_is_refused_naming_the_first_and_ls_tells_whether_one_runs() {
    let sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{}}"#);
    let ls = stderr(&session(&sb, &["ls"]).code(0));
    assert!(ls.contains("no supervisor is running for"), "{ls}");
    let pid = sb.start_supervisor();
    wait_until("the start line", || sb.log_count("started (") == 1);
    let second = sb.cmd("agent-box-supervisor").arg("--once").stdin(Stdio::null()).output().unwrap();
    assert_eq!(second.status.code(), Some(2));
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(said.contains(&format!("agent-box-supervisor pid {pid} already serves registry")), "{said}");
    let ls = session(&sb, &["ls", "--json"]).code(0).stderr("");
    assert!(stdout(&ls).contains("\"supervisor\": \"running\""));
}

#[test]
fn an_entry_whose_harness_is_missing_reads_so_in_ls() {
    let sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"ed":{"agent":"emacs"}}}"#);
    sb.once();
    let ls = stdout(&session(&sb, &["ls"]).code(0));
    assert!(ls.contains("ed                       emacs    starting, harness 'emacs' not installed"), "{ls}");
}

#[test]
fn the_bash_completion_script_parses() {
    let sb = Sandbox::new();
    let script = stdout(&session(&sb, &["completions", "bash"]).code(0));
    let file = sb.root().join("completion.bash");
    std::fs::write(&file, script).unwrap();
    let out = Command::new("bash").arg("-n").arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_missing_socket_directory_is_no_server_for_reads_and_a_plain_answer_for_rm() {
    let mut sb = Sandbox::new();
    sb.write_registry(r#"{"version":1,"sessions":{"a":{"agent":"tool"}}}"#);
    sb.set_env("AGENT_BOX_TMUX_TMPDIR", sb.root().join("no-socket-dir"));
    session(&sb, &["capacity"]).code(0).stdout("{\"used\": 1, \"max\": 8, \"queued\": 0}\n");
    let ls = session(&sb, &["ls"]).code(0);
    assert!(stdout(&ls).contains("a                        tool     starting"));
    assert!(!stderr(&ls).contains("cannot ask tmux"), "{}", stderr(&ls));
    session(&sb, &["peers"]).code(0).stdout("No other session is live on this box.\n");
    session(&sb, &["rm", "a"]).code(0).stdout("session 'a' removed\n");
    session(&sb, &["rm", "a"]).code(0).stdout("nothing to remove: no session 'a' is listed or live\n");
}
