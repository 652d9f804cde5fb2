//! Small helpers every scenario file needs: registry fixtures, running the CLI, reading an `Output`, and a plain
//! pane that is not managed by anyone.

use std::process::{Output, Stdio};

use registry::SessionName;
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
pub fn session(sb: &Sandbox, args: &[&str]) -> Output {
    sb.cmd("agent-box-session").args(args).stdin(Stdio::null()).output().unwrap()
}

pub fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A pane that sleeps, started directly on the private server (unmanaged unless the registry lists it).
pub fn pane(sb: &Sandbox, name: &str) {
    let argv = vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()];
    let request = NewSession { name: SessionName::parse(name).unwrap(), cwd: sb.home().into(), env: vec![], argv };
    sb.tmux().new_session(&request).unwrap();
}
