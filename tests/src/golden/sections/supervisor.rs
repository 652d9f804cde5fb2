//! `golden/supervisor/`: `--print-command NAME` for every entry of the launch world (70 GD-3), and the stderr
//! lines of the supervisor (30 §13, and the seed and quarantine lines of 10 RG-10.3 and RG-12) from one
//! `--once` run per case, each in a world of its own.

use std::fs;
use std::time::Duration;

use base::SessionName;
use nix::sys::signal::Signal;
use tmux::{NewSession, TmuxApi};

use crate::golden::artefacts::Artefacts;
use crate::golden::capture::Invocation;
use crate::golden::world::World;
use crate::wait::wait_until;

/// Every entry of `tests/fixtures/golden/launch/home/.config/agent-box/sessions.json`, with the variables that
/// case sets on top of the fixture world.
const LAUNCH_CASES: [(&str, &[(&str, &str)]); 18] = [
    ("claude-first", &[]),
    ("claude-resume", &[]),
    ("claude-notice", &[("AGENT_BOX_ENV_EXEC", "/run/wrappers/ab-env-exec")]),
    ("claude-variadic", &[("AGENT_BOX_CLAUDE_SETTINGS", "/etc/agent-box/claude-settings.json")]),
    ("claude-dangling", &[]),
    ("codex-first", &[]),
    ("codex-resume", &[]),
    ("codex-guarded", &[("AGENT_BOX_CODEX_FULL_ACCESS", "1")]),
    ("notes", &[]),
    ("tool-prompt", &[]),
    ("hook-acme-widget-5a5a", &[]),
    // Issue 17: the lease left beside this entry is an older life's (another gen): the pane starts unleased.
    ("hook-acme-widget-5b5b", &[]),
    ("webhook-on", &[("AGENT_BOX_WEBHOOK_REPO", "1")]),
    ("hostile", &[]),
    ("missing-cwd", &[]),
    ("parked", &[]),
    ("not-installed", &[]),
    ("bad-shape", &[]),
];

/// Every artefact of `golden/supervisor/`.
pub fn render(out: &mut Artefacts) {
    print_command(out);
    log_lines(out);
}

fn supervisor() -> Invocation {
    Invocation::product("agent-box-supervisor")
}

fn print_command(out: &mut Artefacts) {
    let world = World::new();
    world.install_home("launch");
    for (case, env) in LAUNCH_CASES {
        let mut inv = supervisor().args(["--print-command", case]);
        for (key, value) in env {
            inv = inv.env(key, value);
        }
        out.capture(&format!("supervisor/print-command/{case}.txt"), &world, &inv);
    }
    out.capture("supervisor/print-command/unknown.txt", &world, &supervisor().args(["--print-command", "nosuch"]));
    out.capture("supervisor/print-command/bad-name.txt", &world, &supervisor().args(["--print-command", "a b"]));
}

/// A registry with these entries (raw JSON object text per name), as the settings daemon might write it.
fn registry(entries: &[(&str, &str)]) -> String {
    let body: Vec<String> = entries.iter().map(|(name, entry)| format!("    {}: {entry}", quoted(name))).collect();
    format!("{{\n  \"version\": 1,\n  \"sessions\": {{\n{}\n  }}\n}}\n", body.join(",\n"))
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

const TOOL_A: &str = r#"{"agent": "tool", "extraArgs": ["--as", "a"]}"#;
const TOOL_B: &str = r#"{"agent": "tool", "extraArgs": ["--as", "b"]}"#;
const PARKED_SEED: &str = r#"{"version": 1, "sessions": {"parked": {"agent": "tool", "stopped": true}}}"#;

/// One `--once` case: its file name, the registry (None: missing), the seed, and extra variables; `adopt` starts
/// a pane for entry `a` by hand, with this launch id in its environment and no side file (L20).
struct OnceCase {
    file: &'static str,
    registry: Option<String>,
    seed: &'static str,
    env: Vec<(&'static str, String)>,
    hold_lock: bool,
    adopt: Option<&'static str>,
    /// Also rendered with stderr as the journal, into `<file>-journal.txt` (issue 18: the priority prefixes).
    journal: bool,
}

fn once_cases() -> Vec<OnceCase> {
    let case = |file, registry: Option<String>| OnceCase {
        file,
        registry,
        seed: PARKED_SEED,
        env: vec![],
        hold_lock: false,
        adopt: None,
        journal: false,
    };
    let empty = Some(registry(&[]));
    let with_env = |file, registry: Option<String>, key: &'static str, value: &str| OnceCase {
        env: vec![(key, value.to_owned())],
        ..case(file, registry)
    };
    vec![
        OnceCase { journal: true, ..case("L1", empty.clone()) },
        case("seed", None),
        OnceCase { seed: r#"{"version": 1, "sessions": []}"#, ..case("seed-invalid", None) },
        case("corrupt-registry", Some("not json\n".to_owned())),
        OnceCase { journal: true, ..with_env("L2", empty.clone(), "AGENT_BOX_TMUX_BIN", "@ROOT@/bin/no-such-tmux") },
        with_env(
            "L5",
            Some(registry(&[("a", TOOL_A), ("b", TOOL_B)])),
            "AGENT_BOX_SESSION_LIMIT_FILE",
            "@ROOT@/limit-1",
        ),
        OnceCase { journal: true, ..case("L6", Some(registry(&[("emacs", r#"{"agent": "emacs"}"#)]))) },
        OnceCase { hold_lock: true, ..case("L9", Some(registry(&[("a", TOOL_A)]))) },
        case("L13", Some(registry(&[("bad name!", TOOL_A)]))),
        case("L14", Some(registry(&[("a", r#"{"agent": "tool", "extraArgs": "rm -rf /"}"#)]))),
        case("L16", Some(registry(&[("a", r#"{"agent": "tool", "workingDirectory": "/nonexistent/dir"}"#)]))),
        case(
            "L17",
            Some(registry(&[("c", r#"{"agent": "codex", "remoteControl": true, "extraArgs": ["--as", "c"]}"#)])),
        ),
        with_env("L19", empty, "AGENT_BOX_REGISTRY_LOCK_FD", "9"),
        OnceCase {
            adopt: Some("0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90"),
            ..case("L20", Some(registry(&[("a", TOOL_A)])))
        },
    ]
}

fn log_lines(out: &mut Artefacts) {
    for case in once_cases() {
        let world = World::new();
        let root = world.sb.root().to_string_lossy().into_owned();
        fs::write(world.sb.root().join("limit-1"), "1\n").unwrap();
        fs::write(world.sb.root().join("seed.json"), case.seed).unwrap();
        if let Some(text) = &case.registry {
            world.write_home_file(".config/agent-box/sessions.json", text.as_bytes());
        }
        let mut inv = supervisor().arg("--once");
        for (key, value) in &case.env {
            inv = inv.env(key, value.replace("@ROOT@", &root));
        }
        if let Some(launch_id) = case.adopt {
            unrecorded_pane(&world, "a", launch_id);
        }
        let held = case.hold_lock.then(|| world.sb.hold_registry_lock());
        out.capture(&format!("supervisor/log/{}.txt", case.file), &world, &inv);
        if case.journal {
            out.capture(&format!("supervisor/log/{}-journal.txt", case.file), &world, &inv.clone().as_if_journal());
        }
        drop(held);
        if case.file == "seed" {
            out.document("documents/registry-after-seed.json", &world, &world.sb.registry());
        }
    }
    signal_line(out);
    refusals(out);
}

/// Issue 11: every missing required variable in one line (the debug build's epilogue is unbaked, so this is not
/// installed mode), and a second supervisor on the same registry refused with the running one named.
fn refusals(out: &mut Artefacts) {
    let world = World::new();
    let missing = supervisor()
        .arg("--once")
        .unset("AGENT_BOX_SESSIONS_SEED")
        .unset("AGENT_BOX_AGENT_BINS")
        .unset("AGENT_BOX_MARK_STOPPED");
    out.capture("supervisor/log/config-missing.txt", &world, &missing);
    world.write_home_file(".config/agent-box/sessions.json", registry(&[]).as_bytes());
    let pid = world.sb.start_supervisor();
    wait_until("the supervisor's start line", || world.sb.log_count("started (") == 1);
    out.capture("supervisor/log/already-running.txt", &world, &supervisor().arg("--once"));
    world.sb.signal(pid, Signal::SIGTERM);
    let _ = world.sb.wait_exit(pid, Duration::from_secs(30));
}

/// A pane for listed entry `name` as a spawn whose supervisor died before its record leaves it (30 §2 step 6a).
fn unrecorded_pane(world: &World, name: &str, launch_id: &str) {
    let request = NewSession {
        name: SessionName::parse(name).unwrap(),
        cwd: world.sb.home().to_path_buf(),
        env: vec![("AGENT_BOX_SESSION_ID".into(), launch_id.into())],
        argv: vec!["/bin/sh".into(), "-c".into(), "sleep 600".into()],
    };
    world.sb.tmux().new_session(&request).unwrap();
}

/// L18: the loop started, then SIGTERM once it has logged L1.
fn signal_line(out: &mut Artefacts) {
    let world = World::new();
    world.write_home_file(".config/agent-box/sessions.json", registry(&[]).as_bytes());
    let pid = world.sb.start_supervisor();
    wait_until("the supervisor's start line", || world.sb.log_count("started (") == 1);
    world.sb.signal(pid, Signal::SIGTERM);
    let code = world.sb.wait_exit(pid, Duration::from_secs(30));
    let text = format!(
        "$ agent-box-supervisor\n[signal] SIGTERM after the start line\n[exit] {}\n[stderr]\n{}",
        code.map_or_else(|| "?".to_owned(), |c| c.to_string()),
        world.sb.supervisor_log()
    );
    out.add("supervisor/log/L18.txt", text.into_bytes(), &world);
}
