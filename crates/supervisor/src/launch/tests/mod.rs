//! Unit tests of harness launch against temporary HOME trees: a fixture that builds the configuration, fake
//! binaries and harness files, shared by the table tests and the script-running tests.

mod argv;
mod facts;
mod notice;
mod run;
mod script;

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use base::SessionName;
use registry::Entry;
use serde_json::{Map, Value};
use tempfile::TempDir;

use super::{PrepareError, Prepared, prepare};
use crate::config::Config;
use crate::side::SideFile;

pub const BID: &str = "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90";
pub const OTHER: &str = "11111111-2222-4333-8444-555555555555";
pub const GEN: &str = "9f1c2d3e-4a5b-4c6d-8e7f-0a1b2c3d4e5f";

/// Claude transcript records.
pub const USER: &str = r#"{"type":"user","message":{"role":"user","content":"hi"}}"#;
pub const DONE: &str = r#"{"type":"assistant","message":{"model":"claude-x","stop_reason":"end_turn"}}"#;
pub const TOOL: &str = r#"{"type":"assistant","message":{"model":"claude-x","stop_reason":"tool_use"}}"#;
pub const SYNTH: &str = r#"{"type":"assistant","message":{"model":"<synthetic>","stop_reason":"stop_sequence"}}"#;

/// Harnesses every fixture installs through `AGENT_BOX_AGENT_BINS`.
const HARNESSES: [&str; 4] = ["claude", "codex", "shell", "tool"];

/// A temporary HOME with fake binaries and the environment `Config::from_lookup` reads.
pub struct Fixture {
    pub dir: TempDir,
    pub home: PathBuf,
    pub bins: PathBuf,
    env: Vec<(String, OsString)>,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let bins = dir.path().join("bin");
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(&bins).unwrap();
        for harness in HARNESSES.iter().chain(&["mark-stopped"]) {
            executable(&bins.join(harness), "#!/bin/sh\nexit 0\n");
        }
        let agent_bins: Vec<String> = HARNESSES.iter().map(|h| format!("{h}={}", bins.join(h).display())).collect();
        let (home_var, mark_stopped) = (home.clone(), bins.join("mark-stopped"));
        let mut fixture = Self { dir, home, bins, env: Vec::new() };
        fixture
            .set("HOME", home_var)
            .set("USER", "agent")
            .set("AGENT_BOX_SESSIONS_SEED", "/etc/agent-box/seed.json")
            .set("AGENT_BOX_AGENT_BINS", agent_bins.join(" "))
            .set("AGENT_BOX_MARK_STOPPED", mark_stopped)
            .set("AGENT_BOX_TMUX_TMPDIR", "/tmp")
            .set("AGENT_BOX_HOST_LABEL", "box");
        fixture
    }

    /// Sets (or replaces) one environment variable of the configuration.
    pub fn set(&mut self, key: &str, value: impl Into<OsString>) -> &mut Self {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.into()));
        self
    }

    pub fn unset(&mut self, key: &str) -> &mut Self {
        self.env.retain(|(k, _)| k != key);
        self
    }

    pub fn config(&self) -> Config {
        let env = self.env.clone();
        Config::from_lookup(move |k| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone())).unwrap()
    }

    pub fn bin(&self, harness: &str) -> String {
        self.bins.join(harness).display().to_string()
    }

    pub fn home_str(&self) -> String {
        self.home.display().to_string()
    }

    pub fn prepare(&self, entry: Value) -> Result<Prepared, PrepareError> {
        self.prepare_with(&self.config(), entry, &SideFile::default())
    }

    pub fn prepare_with(&self, config: &Config, entry: Value, side: &SideFile) -> Result<Prepared, PrepareError> {
        let map = object(entry);
        prepare(config, &name("main"), Entry::of(&map), side)
    }

    /// A transcript `<id>.jsonl` in a claude project directory.
    pub fn transcript(&self, id: &str, lines: &[&str]) -> PathBuf {
        let dir = self.home.join(".claude/projects/-home-agent-src");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{id}.jsonl"));
        fs::write(&path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        path
    }

    /// What claude's session-start hook writes after `/clear`.
    pub fn live_id(&self, bid: &str, newer: &str) {
        let dir = self.home.join(".local/state/agent-box/live-session-id");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(bid), format!("{newer}\n")).unwrap();
    }

    /// A codex rollout under `~/.codex/sessions/2025/01/01`, `age_secs` old.
    pub fn rollout(&self, session_id: &str, body: &str, age_secs: u64) -> PathBuf {
        let dir = self.home.join(".codex/sessions/2025/01/01");
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("rollout-2025-01-01T10-00-00-{session_id}.jsonl"));
        fs::write(&path, body).unwrap();
        let mtime = SystemTime::now() - Duration::from_secs(age_secs);
        fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
        path
    }

    pub fn lease(&self, session: &str, body: &str) {
        let dir = self.home.join(".local/state/agent-box/lease");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(format!("{session}.json")), body).unwrap();
    }

    pub fn filter(&self, session: &str, body: &str) {
        let dir = self.home.join(".local/state/local-webhook");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(format!("filter.agent-{session}.json")), body).unwrap();
    }
}

pub fn name(text: &str) -> SessionName {
    SessionName::parse(text).unwrap()
}

pub fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// Writes an executable file (mode 0755), creating its directory.
pub fn executable(path: &Path, body: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, body).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// The argv as strings (lossy; the tests use UTF-8).
pub fn argv(prepared: &Prepared) -> Vec<String> {
    prepared.argv.iter().map(|a| String::from_utf8_lossy(a.as_bytes()).into_owned()).collect()
}

/// Builds an expected argv from a program and its words.
pub fn words(bin: &str, rest: &[&str]) -> Vec<String> {
    std::iter::once(bin).chain(rest.iter().copied()).map(str::to_owned).collect()
}
