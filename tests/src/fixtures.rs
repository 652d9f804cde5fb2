//! Small helpers every scenario file needs: registry fixtures, running the products through assert_cmd (so a
//! failing assertion prints the command, its exit code, stdout and stderr), reading what they printed, and a plain
//! pane that is not managed by anyone.

use std::ffi::OsStr;
use std::process::{Command, Output, Stdio};

pub use assert_cmd::assert::{Assert, OutputAssertExt};
pub use predicates::prelude::predicate;

use base::SessionName;
use serde_json::{Value, json};
use tmux::{NewSession, TmuxApi};

use crate::Sandbox;

/// An entry of the fake `tool` harness with `extra` fields added.
pub fn tool(extra: Value) -> Value {
    let mut entry = json!({"agent": "tool"});
    if let Some(fields) = extra.as_object() {
        for (k, v) in fields {
            entry[k] = v.clone();
        }
    }
    entry
}

/// A registry document with these entries, in this order.
pub fn registry_with(entries: &[(&str, Value)]) -> String {
    let mut sessions = serde_json::Map::new();
    for (name, entry) in entries {
        sessions.insert((*name).to_owned(), entry.clone());
    }
    serde_json::to_string(&json!({"version": 1, "sessions": sessions})).unwrap_or_default()
}

/// `agent-box-session ARGS` in the sandbox, stdin from /dev/null.
pub fn session(sb: &Sandbox, args: &[&str]) -> Assert {
    sb.cmd("agent-box-session").args(args).stdin(Stdio::null()).assert()
}

/// `agent-box-session ARGS`, which must exit 0.
pub fn ok(sb: &Sandbox, args: &[&str]) -> Assert {
    session(sb, args).code(0)
}

/// Runs `cmd` with `input` on its stdin (written while the output is read, so no size can deadlock); the one
/// stdin helper of the workspace's tests.
pub fn with_stdin(cmd: Command, input: impl Into<Vec<u8>>) -> Assert {
    assert_cmd::Command::from_std(cmd).write_stdin(input).assert()
}

/// One batch through the real spawner: `agent-box-webhook-spawn` with `vars` added to the sandbox environment
/// and `batch` on stdin.
pub fn webhook_spawn<K: AsRef<OsStr>, V: AsRef<OsStr>>(sb: &Sandbox, vars: &[(K, V)], batch: &[u8]) -> Assert {
    let mut cmd = sb.cmd("agent-box-webhook-spawn");
    for (key, value) in vars {
        cmd.env(key, value);
    }
    with_stdin(cmd, batch)
}

/// A finished run whose output a test reads: assert_cmd's `Assert`, or a plain `Output`.
pub trait Ran {
    fn output(&self) -> &Output;
}

impl Ran for Output {
    fn output(&self) -> &Output {
        self
    }
}

impl Ran for Assert {
    fn output(&self) -> &Output {
        self.get_output()
    }
}

/// The exit code (-1 for a signal).
pub fn code(out: &impl Ran) -> i32 {
    out.output().status.code().unwrap_or(-1)
}

pub fn stdout(out: &impl Ran) -> String {
    String::from_utf8_lossy(&out.output().stdout).into_owned()
}

pub fn stderr(out: &impl Ran) -> String {
    String::from_utf8_lossy(&out.output().stderr).into_owned()
}

/// Every path below `dir`, depth first, without following symlinks (a missing or unreadable directory has none).
pub fn walk_all(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            out.push(path.clone());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(walk_all(&path));
            }
        }
    }
    out
}

/// A pane that sleeps, started directly on the private server (unmanaged unless the registry lists it).
pub fn pane(sb: &Sandbox, name: &str) {
    let argv = vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()];
    let request = NewSession { name: SessionName::parse(name).unwrap(), cwd: sb.home().into(), env: vec![], argv };
    sb.tmux().new_session(&request).unwrap();
}
