//! `golden/session/`: the operator CLI over the box world of 70 GD-3 (the example of 50-session-cli §4.4 with
//! live panes started by the renderer), text and `--json`, and one capture per reachable message of 50 §14.

use std::ffi::OsString;
use std::fs;
use std::os::unix::ffi::OsStringExt;

use crate::fixtures::pane;
use crate::golden::artefacts::Artefacts;
use crate::golden::capture::Invocation;
use crate::golden::world::World;

/// The panes of the box world: listed `main` and both hook sessions, unmanaged `scratch` and `_connect-abc`.
const PANES: [&str; 5] = ["main", "hook-acme-widget-3fa9", "hook-acme-widget-77c0", "scratch", "_connect-abc"];

/// The box world, with its files installed and its panes live.
pub fn box_world() -> World {
    let world = World::new();
    reset(&world);
    world
}

/// Puts the box world back: fixture files rewritten, every fixture pane live again.
fn reset(world: &World) {
    let registry = world.sb.registry();
    if registry.is_dir() {
        fs::remove_dir_all(&registry).unwrap();
    }
    world.install_home("box");
    let live = world.sb.live();
    for name in PANES.iter().filter(|n| !live.iter().any(|l| l == *n)) {
        pane(&world.sb, name);
    }
}

fn session() -> Invocation {
    Invocation::product("agent-box-session")
}

/// Every artefact of `golden/session/`.
pub fn render(out: &mut Artefacts) {
    let world = box_world();
    listings(&world, out);
    messages(&world, out);
    env_store(&world, out);
    queue_listings(&world, out);
}

/// A queued record as webhook-spawn writes it (docs/intake.md IN-2), accepted `age` seconds before the render, under
/// `dir` (`queue` or `queue/ended`); `ended` adds the expired row's keys.
fn write_record(
    world: &World,
    dir: &str,
    key: &str,
    assignment: &str,
    batches: &[&str],
    age: i64,
    ended: Option<&str>,
) {
    let accepted = base::time::now_epoch() - age;
    let at = base::time::format_iso(accepted);
    let stem = format!("{:020}-{}", accepted * 1_000_000_000, &base::digest::sha256_hex(assignment.as_bytes())[..16]);
    let batches: Vec<serde_json::Value> = batches
        .iter()
        .map(|text| serde_json::json!({"keys": [key], "at": at, "event": "issues", "count": 1, "meta": null, "text": text}))
        .collect();
    let mut record = serde_json::json!({
        "//": "agent-box intake record (golden fixture)", "version": 1, "key": key, "assignment": assignment,
        "source": "github", "routingKey": "acme/widgets", "nameStem": "acme-widgets", "topic": "github:acme/*",
        "note": "", "object": assignment.rsplit_once('#').map(|(_, o)| o), "harness": "claude", "args": [],
        "seed": true, "filterDir": world.home().join(".local/state/local-webhook").display().to_string(),
        "user": "agent", "acceptedAt": at, "batches": batches,
    });
    if let Some(ended_at) = ended {
        record["outcome"] = "expired".into();
        record["endedAt"] = ended_at.into();
    }
    let text = serde_json::to_string_pretty(&record).unwrap();
    world.write_home_file(&format!(".local/state/agent-box/{dir}/{stem}.json"), format!("{text}\n").as_bytes());
}

/// Issue 24: `queue` with two records waiting and one expired, what `ls`, `peers` and `capacity` say of them, and
/// `queue rm` of each kind and its refusals (M53–M56).
fn queue_listings(world: &World, out: &mut Artefacts) {
    let fill = |world: &World| {
        let _ = fs::remove_dir_all(world.home().join(".local/state/agent-box/queue"));
        let delivery = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
        let lines = [
            "[UNTRUSTED webhook:github 2001-01-01T13:00:00Z] issue #536 opened",
            "[UNTRUSTED webhook:github 2001-01-01T13:05:00Z] comment on issue #536",
        ];
        write_record(world, "queue", delivery, "github:acme/widgets#536", &lines, 7210, None);
        let digest = "sha256:9f2b1c0d4e5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e";
        write_record(world, "queue", digest, &format!("key:{digest}"), &lines[..1], 310, None);
        let expired = "sha256:0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9a0b1c2d3e4f5";
        let ended_at = base::time::format_iso(base::time::now_epoch() - 610);
        write_record(world, "queue/ended", expired, "github:acme/widgets#77", &lines[..1], 3_610, Some(&ended_at));
    };
    reset(world);
    fill(world);
    out.capture("session/queue.txt", world, &session().arg("queue"));
    out.capture("session/queue-json.txt", world, &session().args(["queue", "--json"]));
    out.capture("session/ls-queued.txt", world, &session().arg("ls"));
    out.capture("session/peers-queued.txt", world, &session().arg("peers"));
    out.capture("session/capacity-queued.txt", world, &session().arg("capacity"));
    let cases: [(&str, Invocation); 4] = [
        ("M53", session().args(["queue", "rm", "72d3162e-cc78-11e3-81ab-4c9367dc0958"])),
        ("M54", session().args(["queue", "rm", "sha256:0c1d2e"])),
        ("M55", session().args(["queue", "rm", "nosuchkey"])),
        ("M56", session().args(["queue", "rm", "sha256:"])),
    ];
    for (id, inv) in cases {
        fill(world);
        out.capture(&format!("session/messages/{id}.txt"), world, &inv);
    }
    let _ = fs::remove_dir_all(world.home().join(".local/state/agent-box/queue"));
    out.capture("session/queue-empty.txt", world, &session().arg("queue"));
    reset(world);
}

/// The store's path under HOME.
const ENV_STORE: &str = ".config/agent-box/env";

/// `env ls|set|rm` (issue 20): on a box without a store, then on one shaped as the settings daemon and the old CLI
/// leave it (header, quotes, a malformed line, a key written twice). No value is ever on a command line here or
/// in any output: `env set KEY ''` pins the command-line warning with an empty one.
fn env_store(world: &World, out: &mut Artefacts) {
    let env = |args: &[&str]| session().arg("env").args(args.iter().copied());
    let _ = fs::remove_file(world.home().join(ENV_STORE));
    out.capture("session/env/ls-no-store.txt", world, &env(&["ls"]));
    out.capture("session/env/ls-no-store-json.txt", world, &env(&["ls", "--json"]));
    out.capture("session/env/rm-no-store.txt", world, &env(&["rm", "GH_TOKEN"]));
    out.capture("session/env/set-new-store.txt", world, &env(&["set", "GH_TOKEN"]).stdin_fixture("env/value"));
    let store = world.home().join(ENV_STORE);
    world.write_home_file(ENV_STORE, &crate::golden::world::fixture("env/store"));
    out.capture("session/env/ls.txt", world, &env(&["ls"]));
    out.capture("session/env/ls-json.txt", world, &env(&["ls", "--json"]));
    let cases: [(&str, Invocation); 9] = [
        ("set-replace", env(&["set", "GH_TOKEN"]).stdin_fixture("env/value")),
        ("set-argument", env(&["set", "EMPTY_ONE", ""])),
        ("set-bad-key", env(&["set", "1BAD"]).stdin_fixture("env/value")),
        ("set-hyphen-key", env(&["set", "GH-TOKEN"]).stdin_fixture("env/value")),
        ("set-reserved", env(&["set", "AGENT_BOX_SESSION_ID"]).stdin_fixture("env/value")),
        ("set-newline", env(&["set", "MULTI"]).stdin_fixture("env/two-lines")),
        ("set-empty-stdin", env(&["set", "NOTHING"])),
        ("rm", env(&["rm", "OPENAI_API_KEY"])),
        ("rm-absent", env(&["rm", "NEVER_SET"])),
    ];
    for (id, inv) in cases {
        world.write_home_file(ENV_STORE, &crate::golden::world::fixture("env/store"));
        out.capture(&format!("session/env/{id}.txt"), world, &inv);
    }
    let _ = fs::remove_file(&store);
}

fn listings(world: &World, out: &mut Artefacts) {
    for verb in ["ls", "peers", "capacity", "leases"] {
        out.capture(&format!("session/{verb}.txt"), world, &session().arg(verb));
        out.capture(&format!("session/{verb}-json.txt"), world, &session().args([verb, "--json"]));
    }
    reported_outcomes(world, out);
    out.capture("session/log.txt", world, &session().arg("log"));
    out.capture("session/log-n3.txt", world, &session().args(["log", "-n", "3"]));
    out.capture("session/log-json.txt", world, &session().args(["log", "-n", "3", "--json"]));
    for shell in ["bash", "zsh", "fish"] {
        out.capture(&format!("session/completions-{shell}.txt"), world, &session().args(["completions", shell]));
    }
    world.write_home_file(".local/state/agent-box/session/notes.json", br#"{"harnessMissing":"shell"}"#);
    out.capture("session/ls-harness-missing.txt", world, &session().arg("ls"));
    out.capture("session/ls-harness-missing-json.txt", world, &session().args(["ls", "--json"]));
    let _ = fs::remove_file(world.home().join(".local/state/agent-box/session/notes.json"));
    out.capture("session/peers-self.txt", world, &session().arg("peers").env("LOCAL_WEBHOOK_SESSION", "agent-main"));
    fs::write(world.sb.registry(), "not json\n").unwrap();
    out.capture("session/ls-invalid-registry.txt", world, &session().arg("ls"));
    reset(world);
}

/// Issue 21: `leases` and `ls --json` with a notifier configured (the supervisor's marker), one outcome delivered
/// and one waiting for its retry; the plain listings above show the same leases as not configured (`off`).
fn reported_outcomes(world: &World, out: &mut Artefacts) {
    const LEASES: &str = ".local/state/agent-box/lease";
    let edits = [
        ("hook-acme-widget-77c0", r#""notifiedAt": "2001-01-01T02:31:04Z""#),
        ("hook-acme-widget-3fa9", r#""notify": {"attempts": 3, "nextAt": "2001-01-01T01:29:15Z"}"#),
    ];
    let mut originals = Vec::new();
    for (name, key) in edits {
        let path = format!("{LEASES}/{name}.json");
        let original = fs::read_to_string(world.home().join(&path)).unwrap();
        let edited = format!("{},\n  {key}\n}}\n", original.trim_end().trim_end_matches('}').trim_end());
        world.write_home_file(&path, edited.as_bytes());
        originals.push((path, original));
    }
    let marker = ".local/state/agent-box/on-outcome.json";
    world.write_home_file(marker, br#"{"version": 1, "program": "/opt/notify-gh", "timeoutSecs": 60}"#);
    out.capture("session/leases-reported.txt", world, &session().arg("leases"));
    out.capture("session/leases-reported-json.txt", world, &session().args(["leases", "--json"]));
    out.capture("session/ls-reported-json.txt", world, &session().args(["ls", "--json"]));
    let _ = fs::remove_file(world.home().join(marker));
    for (path, original) in originals {
        world.write_home_file(&path, original.as_bytes());
    }
}

/// One invocation per message of 50 §14 that a black-box run reaches, each on a freshly reset box world.
/// M16 (auto-naming exhausted) is not reachable: it needs 64 random draws to hit taken names.
fn messages(world: &World, out: &mut Artefacts) {
    let root = world.sb.root().to_path_buf();
    let no_tmux = root.join("bin/no-such-tmux");
    let no_kill = no_kill_tmux(world);
    let main_only = r#"{"version": 1, "sessions": {"main": {"agent": "claude"}}}"#;
    fs::write(root.join("main-only.json"), main_only).unwrap();
    fs::write(root.join("limit-1"), "1\n").unwrap();
    fs::write(root.join("limit-8"), "8\n").unwrap();
    fs::write(root.join("limit-bad"), "lots\n").unwrap();
    let add = || session().arg("add");
    let cases: Vec<(&str, Invocation)> = vec![
        ("M1", add().arg("a b")),
        ("M2", add().arg("a".repeat(151))),
        ("M3", add().arg("settings")),
        ("M4", add().arg("main")),
        ("M5", add().args(["extra", "--agent", "tool"]).env("AGENT_BOX_SESSION_LIMIT_FILE", root.join("limit-8"))),
        ("M6", add().args(["x", "--remote-control", "yes"])),
        ("M7", add().args(["x", "--origin", "cron"])),
        ("M8", add().args(["x", "--harness", "emacs"])),
        ("M9", add().arg("x").unset("AGENT_BOX_AGENTS")),
        ("M10", add().arg("x").unset("AGENT_BOX_DEFAULT_AGENT")),
        ("M11", add().args(["x", "--cwd", "~/nope"])),
        ("M11b", add().args([OsString::from("x"), "--cwd".into(), OsString::from_vec(b"~/caf\xe9".to_vec())])),
        ("M12", add().args(["x", "--cwd", "~/src/app/.keep"])),
        ("M13", add().args(["x", "--cwd", "/"])),
        ("M14", add().arg("x").env("AGENT_BOX_SESSIONS_FILE", "relative/sessions.json")),
        ("M15", add().args(["x", "--cwd", "/"]).env("HOME", root.join("no-such-home"))),
        ("M18", add().arg("x").env("AGENT_BOX_SESSION_LIMIT_FILE", root.join("limit-1"))),
        ("M19", add().arg("x").env("AGENT_BOX_SESSION_LIMIT_FILE", root.join("limit-bad"))),
        ("M21", session().args(["stop", "notes"]).no_file_growth()),
        (
            "M22",
            add()
                .args([
                    "extra",
                    "--harness",
                    "claude",
                    "--cwd",
                    "~/notes",
                    "--prompt",
                    "tidy up",
                    "--",
                    "--model",
                    "sonnet",
                ])
                .env("AGENT_BOX_SESSION_LIMIT_FILE", root.join("limit-8")),
        ),
        ("M23", session().args(["rm", "notes"])),
        ("M24", session().args(["rm", "scratch"]).env("AGENT_BOX_TMUX_BIN", &no_tmux)),
        ("M25", session().args(["stop", "nosuch"])),
        ("M26", session().args(["stop", "hook-acme-widget-77c0"])),
        ("M27", session().args(["stop", "main"])),
        ("M28", session().args(["restart", "main"])),
        ("M29", session().args(["restart", "scratch"])),
        (
            "M30",
            session()
                .args(["restart", "--all"])
                .env("AGENT_BOX_SESSION_LIMIT_FILE", root.join("limit-8"))
                .env("AGENT_BOX_SESSIONS_FILE", root.join("main-only.json")),
        ),
        ("M31", session().args(["restart", "--all"]).env("AGENT_BOX_SESSIONS_FILE", root.join("no-registry.json"))),
        ("M32", session().arg("ls").env("AGENT_BOX_TMUX_BIN", &no_tmux)),
        ("M34", session().arg("peers").env("AGENT_BOX_TMUX_BIN", &no_tmux)),
        ("M35", session().arg("peers").env("AGENT_BOX_TMUX_SOCKET", format!("{}-idle", world.sb.socket()))),
        ("M36", session().args(["log", "-n", "0"])),
        ("M37", session().args(["whatsapp", "list"])),
        ("M38", session().arg("leases")),
        ("M39", add().arg("x").env("USER", "a/b")),
        ("M40", session().args(["rm", "nosuch"])),
        ("M42", session().args(["rm", "notes"]).env("AGENT_BOX_TMUX_BIN", &no_tmux)),
        ("M43", session().args(["stop", "main"]).env("AGENT_BOX_TMUX_BIN", &no_tmux)),
        ("M45", session().args(["restart", "helper"]).env("AGENT_BOX_SESSION_LIMIT_FILE", root.join("limit-8"))),
        ("M46", session().args(["restart", "notes"])),
        ("M47", session().args(["restart", "--all"]).env("AGENT_BOX_SESSION_LIMIT_FILE", root.join("limit-8"))),
        (
            "M48",
            session()
                .args(["restart", "--all"])
                .env("AGENT_BOX_SESSION_LIMIT_FILE", root.join("limit-8"))
                .env("AGENT_BOX_TMUX_BIN", &no_kill),
        ),
        ("M49", session().args(["attach", "nosuch"])),
        ("M52", session().arg("ls")),
        ("M60", add().args(["x", "--harness", "claude", "--prompt", "go", "--", "--model", "sonnet", "--add-dir"])),
    ];
    for (id, inv) in cases {
        reset(world);
        out.capture(&format!("session/messages/{id}.txt"), world, &inv);
    }
    reset(world);
    let held = world.sb.hold_registry_lock();
    out.capture("session/messages/M17.txt", world, &add().arg("x").env("REGISTRY_LOCK_WAIT", "0"));
    drop(held);
    for (id, args) in [("M20", &["stop", "main"][..]), ("M33", &["ls"][..])] {
        reset(world);
        fs::write(world.sb.registry(), "not json\n").unwrap();
        out.capture(&format!("session/messages/{id}.txt"), world, &session().args(args));
    }
    reset(world);
    fs::remove_file(world.sb.registry()).unwrap();
    fs::create_dir(world.sb.registry()).unwrap();
    out.capture("session/messages/M20b.txt", world, &session().args(["stop", "main"]));
    reset(world);
    let marker = world.home().join(".local/state/agent-box/on-outcome.json");
    fs::create_dir_all(&marker).unwrap();
    out.capture("session/messages/M59.txt", world, &session().arg("leases"));
    fs::remove_dir(&marker).unwrap();
    messages_with_setup(world, out, &no_kill);
    reset(world);
    // A missing socket directory means "no server": nothing is live, and capacity and ls answer (issue 11).
    let no_dir = root.join("no-socket-dir");
    out.capture(
        "session/capacity-no-socket-dir.txt",
        world,
        &session().arg("capacity").env("AGENT_BOX_TMUX_TMPDIR", &no_dir),
    );
    out.capture("session/ls-no-socket-dir.txt", world, &session().arg("ls").env("AGENT_BOX_TMUX_TMPDIR", &no_dir));
    reset(world);
}

/// Messages whose world needs one change first: leftover state of an unlisted name (M41), a stopped entry whose
/// pane still runs and cannot be killed (M44), an empty hook log (M51).
fn messages_with_setup(world: &World, out: &mut Artefacts, no_kill: &std::path::Path) {
    reset(world);
    world.write_home_file(".local/state/agent-box/session/ghost.json", br#"{"launchSessionId":"x"}"#);
    out.capture("session/messages/M41.txt", world, &session().args(["rm", "ghost"]));
    reset(world);
    world.sb.edit_registry(|doc| {
        if let Ok(name) = base::SessionName::parse("main")
            && let Some(mut entry) = doc.entry_mut(&name)
        {
            entry.set("stopped", serde_json::Value::Bool(true));
        }
    });
    let limit = world.sb.root().join("limit-8");
    let inv = session()
        .args(["restart", "main"])
        .env("AGENT_BOX_TMUX_BIN", no_kill)
        .env("AGENT_BOX_SESSION_LIMIT_FILE", limit);
    out.capture("session/messages/M44.txt", world, &inv);
    reset(world);
    fs::write(world.home().join(".local/state/agent-box/hook-sessions.jsonl"), "").unwrap();
    out.capture("session/messages/M51.txt", world, &session().arg("log"));
}

/// A tmux that does everything but `kill-session`, which it refuses (also inside the `if-shell` of a kill by
/// identity, issue 25): how a kill that did not happen is reached while the session is still there.
fn no_kill_tmux(world: &World) -> std::path::PathBuf {
    let real = world.sb.env_var("AGENT_BOX_TMUX_BIN").map(std::path::PathBuf::from).unwrap_or_default();
    let path = world.sb.root().join("bin/tmux-nokill");
    let script = format!(
        "#!/bin/sh\nfor word in \"$@\"; do\n  case \"$word\" in *kill-session*) echo 'the server refused the kill' >&2; exit 1 ;; esac\ndone\nexec {} \"$@\"\n",
        base::quote::quote_arg(&real.to_string_lossy())
    );
    fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}
