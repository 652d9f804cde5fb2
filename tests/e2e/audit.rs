//! The hook log as an audit trail (issue 18 item 2, docs/audit-trail.md A-2, A-3): the order of the durable
//! writes, observed with strace on the real binaries. A power loss keeps exactly what was fsynced, so "the end
//! record is durable before the lease is deleted" is the order of `fdatasync(hook log)` and `unlink(lease)`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::fs;
use std::process::{Command, Stdio};

use agent_box_tests::Sandbox;
use agent_box_tests::fixtures::{registry_with, tool};
use serde_json::json;

const TRACED: &str = "trace=write,fdatasync,fsync,unlink,unlinkat,rename,renameat,renameat2";

/// `cmd` run under `strace -f -y` with its program, arguments, environment and directory; the trace's lines.
fn traced(sb: &Sandbox, cmd: &Command, stdin: &[u8]) -> Option<Vec<String>> {
    let strace = tmux::find_on_path("strace", std::env::var_os("PATH").as_deref())?;
    let out = sb.root().join(format!("strace-{}.out", std::process::id()));
    let mut run = Command::new(strace);
    run.args(["-f", "-y", "-s", "200", "-e", TRACED, "-o"]).arg(&out).arg(cmd.get_program()).args(cmd.get_args());
    run.env_clear();
    for (key, value) in cmd.get_envs() {
        if let Some(value) = value {
            run.env(key, value);
        }
    }
    if let Some(dir) = cmd.get_current_dir() {
        run.current_dir(dir);
    }
    let mut child = run.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), stdin).unwrap();
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    Some(fs::read_to_string(&out).unwrap().lines().map(str::to_owned).collect())
}

/// The index of the first trace line that `is` accepts; panics with the trace when there is none.
fn first(trace: &[String], what: &str, is: impl Fn(&str) -> bool) -> usize {
    trace.iter().position(|l| is(l)).unwrap_or_else(|| panic!("no {what} in the trace:\n{}", trace.join("\n")))
}

fn on_hook_log(line: &str, call: &str) -> bool {
    line.contains(&format!("{call}(")) && line.contains("hook-sessions.jsonl>")
}

/// A-2: the epilogue's `exited` end record is written and fdatasync'ed before the lease file is unlinked.
#[test]
fn an_end_record_is_durable_before_its_lease_is_deleted() {
    let sb = Sandbox::in_slot();
    sb.write_registry(&registry_with(&[("hook-x", tool(json!({"ephemeral": true})))]));
    let lease_gen = sb.create_lease("hook-x");
    let mut cmd = Command::new(sb.epilogue());
    cmd.args(["hook-x", "0", &lease_gen]).env_clear();
    let Some(trace) = traced(&sb, &cmd, b"") else {
        println!("SKIP: strace is not installed");
        return;
    };
    let write = first(&trace, "write of the end record", |l| on_hook_log(l, "write") && l.contains("exited"));
    let synced = first(&trace, "fdatasync of the hook log", |l| on_hook_log(l, "fdatasync"));
    let unlinked = first(&trace, "unlink of the lease", |l| l.contains("unlink") && l.contains("lease/hook-x.json\""));
    assert!(
        write < synced && synced < unlinked,
        "write {write}, fdatasync {synced}, unlink {unlinked}:\n{}",
        trace.join("\n")
    );
    assert!(sb.lease("hook-x").is_none());
}

/// A-3: webhook-spawn's spawn record is durable before the lease exists (its temp renamed into place).
#[test]
fn a_spawn_record_is_durable_before_its_lease_exists() {
    let mut sb = Sandbox::new();
    sb.set_env("AGENT_BOX_DEFAULT_AGENT", "claude");
    fs::create_dir_all(sb.home().join(".local/state/local-webhook")).unwrap();
    let mut cmd = sb.cmd("agent-box-webhook-spawn");
    let vars: [(&str, OsString); 4] = [
        ("LOCAL_WEBHOOK_SPAWN_KEY", "acme/widgets".into()),
        ("LOCAL_WEBHOOK_SPAWN_TOPIC", "github:acme/*".into()),
        ("LOCAL_WEBHOOK_SPAWN_EVENT", "issues".into()),
        ("LOCAL_WEBHOOK_SPAWN_META", r#"{"number":"7"}"#.into()),
    ];
    cmd.envs(vars);
    let Some(trace) = traced(&sb, &cmd, b"[github] issue #7 opened on acme/widgets by alice: flaky\n") else {
        println!("SKIP: strace is not installed");
        return;
    };
    let write = first(&trace, "write of the spawn record", |l| on_hook_log(l, "write") && l.contains("spawn"));
    let synced = first(&trace, "fdatasync of the hook log", |l| on_hook_log(l, "fdatasync"));
    let leased = first(&trace, "rename onto the lease", |l| {
        l.contains("rename") && l.contains("/lease/hook-") && l.trim_end().ends_with("= 0")
    });
    assert!(
        write < synced && synced < leased,
        "write {write}, fdatasync {synced}, lease {leased}:\n{}",
        trace.join("\n")
    );
}
