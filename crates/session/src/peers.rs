//! `peers [--json]` (50-session-cli §5): who else is live on this box, on what, and what each one claims. It
//! never locks (it once ran inside another writer's critical section) and creates nothing. The text report is
//! also rendered in-process by agent-box-webhook-spawn through [`report_text`].

use serde_json::{Map, Value};

use crate::claims::{self, Claims};
use crate::context::Context;
use crate::messages;
use crate::out::{Out, say};
use crate::text::visible;
use crate::view::{self, RegistryStatus, compact, string_or_null};

/// The last three lines of a non-empty report, after an empty line (§5.5).
pub const FOOTER: [&str; 3] = [
    "A note is what a session says about itself, and a CLAIM stops the standing watches from starting another session for matching events.",
    "Neither proves that the session is busy or idle right now.",
    "To see what one is doing, read its pane (tmux -L agent-box capture-pane -pt NAME | tail -40) or ask it.",
];

/// The whole report when nobody else is live.
pub const NOBODY: &str = "No other session is live on this box.";

/// Runs `peers [--json]`; returns the exit code (1 when tmux could not be asked, with nothing on stdout).
pub fn peers(ctx: &Context, json: bool, out: &mut Out) -> u8 {
    let me = self_name(ctx);
    let report = match collect(ctx, me.as_deref()) {
        Ok(report) => report,
        Err(reason) => {
            say(&messages::live_unknown(&reason));
            return 1;
        }
    };
    if let Some(warning) = &report.registry_warning {
        say(warning);
    }
    let text = if json { render_json(&report) } else { render_text(&report.peers) };
    out.bytes(text.as_bytes());
    0
}

/// The text report exactly as `peers` prints it, leaving out `exclude` (webhook-spawn passes `None`); `Err` is
/// the "unavailable" reason of the live set. Prints nothing, not even the registry warning.
pub fn report_text(ctx: &Context, exclude: Option<&str>) -> Result<String, String> {
    collect(ctx, exclude).map(|report| render_text(&report.peers))
}

/// Everything both renderings need.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub me: Option<String>,
    pub registry: RegistryStatus,
    pub registry_warning: Option<String>,
    pub peers: Vec<Peer>,
}

/// One live session other than the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct Peer {
    pub name: String,
    pub listed: bool,
    pub harness: Option<String>,
    /// `.workingDirectory` when a non-empty string.
    pub working_directory: Option<String>,
    pub died: Option<Value>,
    pub unresolved: Option<String>,
    pub claims: Claims,
}

impl Peer {
    fn dispatched(&self) -> bool {
        self.name.starts_with("hook-")
    }
}

/// Reads the live set first, so that "could not ask" never turns into "nobody is live" (§5.1).
pub fn collect(ctx: &Context, exclude: Option<&str>) -> Result<Report, String> {
    let live = ctx.live_set()?;
    let registry = view::read_registry(&ctx.paths);
    let peers =
        live.iter().filter(|name| Some(name.as_str()) != exclude).map(|name| peer(ctx, &registry, name)).collect();
    Ok(Report { me: exclude.map(str::to_owned), registry: registry.status, registry_warning: registry.warning, peers })
}

fn peer(ctx: &Context, registry: &view::RegistryView, name: &str) -> Peer {
    let entry = registry.doc.entry(name);
    Peer {
        name: name.to_owned(),
        listed: registry.lists(name),
        harness: entry.and_then(|e| e.agent()).map(str::to_owned),
        working_directory: entry.and_then(|e| e.working_directory()).map(str::to_owned),
        died: entry.and_then(|e| e.died()).cloned(),
        unresolved: view::unresolved_outcome(&ctx.paths, name),
        claims: claims::read(&ctx.paths, name),
    }
}

/// `me` of §5.2: the session of the caller's pane when `$TMUX` points at our server, else the webhook
/// session's name without its `<user>-` prefix, else nobody.
pub fn self_name(ctx: &Context) -> Option<String> {
    pane_session(ctx).or_else(|| webhook_session(ctx.webhook_session.as_deref()?, ctx.paths.user()))
}

/// Asks tmux only when `$TMUX` names our socket file: without it tmux would answer with the most recent
/// session, and a pane of another server would name a session of that server.
fn pane_session(ctx: &Context) -> Option<String> {
    let socket = tmux_socket(ctx.tmux_env.as_deref()?);
    if !view::same_file(std::path::Path::new(socket), &ctx.tmux.socket_path()) {
        return None;
    }
    ctx.tmux.current_session(ctx.tmux_pane.as_deref()).ok().filter(|name| !name.is_empty())
}

/// The socket path of a `$TMUX` value (`<socket>,<pid>,<session>`).
pub fn tmux_socket(tmux_env: &str) -> &str {
    tmux_env.split(',').next().unwrap_or(tmux_env)
}

/// `LOCAL_WEBHOOK_SESSION` with one leading `<user>-` removed.
pub fn webhook_session(value: &str, user: &str) -> Option<String> {
    let name = value.strip_prefix(&format!("{user}-")).unwrap_or(value);
    (!value.is_empty()).then(|| name.to_owned())
}

/// The text report of §5.5, every line newline-terminated.
pub fn render_text(peers: &[Peer]) -> String {
    if peers.is_empty() {
        return format!("{NOBODY}\n");
    }
    let mut text = format!("{} live session(s) beside you, and what each one says it is working on:\n", peers.len());
    for peer in peers {
        text.push_str(&row_text(peer));
        text.push('\n');
        for line in claims::lines(&peer.claims) {
            text.push_str(&format!("    {line}\n"));
        }
    }
    text.push('\n');
    for line in FOOTER {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// One row of §5.3, control characters shown as `?`.
pub fn row_text(peer: &Peer) -> String {
    let harness = peer.harness.as_deref().map_or_else(|| "harness unknown".to_owned(), visible);
    let kind = if peer.dispatched() { "dispatched (hook session)" } else { "interactive" };
    let cwd = match (&peer.working_directory, peer.listed) {
        (Some(cwd), _) => visible(cwd),
        (None, true) => "$HOME (its default)".to_owned(),
        (None, false) => "-".to_owned(),
    };
    let mut row = format!("{} — {harness}, {kind}, cwd {cwd}", visible(&peer.name));
    if !peer.listed {
        row.push_str(", not in the registry");
    }
    if let Some(died) = &peer.died {
        let died = visible(&compact(died));
        row.push_str(&format!(", DIED (exit {died}) — its pane is a post-mortem shell, so nobody is working in it"));
    }
    if let Some(outcome) = &peer.unresolved {
        let outcome = visible(outcome);
        row.push_str(&format!(", UNRESOLVED ASSIGNMENT ({outcome}) — this box accepted work it cannot say finished"));
    }
    row
}

/// The JSON report of §12.3.
pub fn render_json(report: &Report) -> String {
    let mut doc = view::versioned();
    doc.insert("self".into(), string_or_null(report.me.as_deref()));
    doc.insert("registry".into(), report.registry.as_str().into());
    doc.insert("sessions".into(), Value::Array(report.peers.iter().map(json_peer).collect()));
    view::json_document(doc)
}

fn json_peer(peer: &Peer) -> Value {
    let mut map = Map::new();
    map.insert("name".into(), peer.name.clone().into());
    map.insert("kind".into(), if peer.dispatched() { "dispatched" } else { "interactive" }.into());
    map.insert("listed".into(), peer.listed.into());
    map.insert("harness".into(), string_or_null(peer.harness.as_deref()));
    map.insert("workingDirectory".into(), string_or_null(peer.working_directory.as_deref()));
    map.insert("died".into(), peer.died.clone().unwrap_or(Value::Null));
    map.insert("unresolved".into(), string_or_null(peer.unresolved.as_deref()));
    map.insert("claims".into(), claims::to_json(&peer.claims));
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::fake::{FakeTmux, context};
    use tmux::TmuxError;

    fn write(path: &std::path::Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn the_example_of_the_spec_renders_byte_for_byte() {
        let home = tempfile::tempdir().unwrap();
        let ctx = context(home.path(), FakeTmux::live(&["helper", "hook-acme-widget-3fa9"]), &[]);
        write(
            ctx.paths.registry(),
            r#"{"version":1,"sessions":{
                "helper":{"agent":"codex","workingDirectory":"/home/agent/src/widget"},
                "hook-acme-widget-3fa9":{"agent":"claude","workingDirectory":null,"died":1}}}"#,
        );
        write(
            &ctx.paths.lease_dir().join("hook-acme-widget-3fa9.json"),
            r#"{"topic":"github:acme/widget","outcome":"died:1"}"#,
        );
        write(
            &ctx.paths.webhook_state_dir().join("filter.agent-helper.json"),
            r#"{"topics":[{"topic":"github:acme/widget","include":{"any":[]},"note":"fixing the flaky login test"},
                          {"topic":"github:acme/other"}]}"#,
        );
        let expected = "\
2 live session(s) beside you, and what each one says it is working on:
helper — codex, interactive, cwd /home/agent/src/widget
    CLAIMS github:acme/widget — note: \"fixing the flaky login test\"
    listens to (no predicate, so not a claim) github:acme/other
hook-acme-widget-3fa9 — claude, dispatched (hook session), cwd $HOME (its default), DIED (exit 1) — its pane is a post-mortem shell, so nobody is working in it, UNRESOLVED ASSIGNMENT (died:1) — this box accepted work it cannot say finished
    claims nothing — no subscription file, so an event on its work spawns a session beside it

A note is what a session says about itself, and a CLAIM stops the standing watches from starting another session for matching events.
Neither proves that the session is busy or idle right now.
To see what one is doing, read its pane (tmux -L agent-box capture-pane -pt NAME | tail -40) or ask it.
";
        assert_eq!(report_text(&ctx, None).unwrap(), expected);
        assert_eq!(
            report_text(&ctx, Some("helper")).unwrap().lines().next(),
            Some("1 live session(s) beside you, and what each one says it is working on:")
        );
    }

    #[test]
    fn nobody_else_and_unavailable() {
        let home = tempfile::tempdir().unwrap();
        let ctx = context(home.path(), FakeTmux::live(&["me"]), &[]);
        assert_eq!(report_text(&ctx, Some("me")).unwrap(), "No other session is live on this box.\n");
        let broken = FakeTmux { live: Err(TmuxError::Timeout), ..FakeTmux::live(&[]) };
        let ctx = context(home.path(), broken, &[]);
        assert_eq!(report_text(&ctx, None), Err("tmux timed out".to_owned()));
        assert!(!home.path().join(".config").exists() && !home.path().join(".local").exists());
    }

    #[test]
    fn unmanaged_rows_and_hostile_values_are_shown_safely() {
        let peer = Peer {
            name: "x\u{1b}y".into(),
            listed: false,
            harness: None,
            working_directory: None,
            died: None,
            unresolved: Some("died:1\u{1b}[2J".into()),
            claims: claims::parse(b"{}"),
        };
        assert_eq!(
            row_text(&peer),
            "x?y — harness unknown, interactive, cwd -, not in the registry, UNRESOLVED ASSIGNMENT (died:1?[2J) — this box accepted work it cannot say finished"
        );
    }

    #[test]
    fn self_comes_from_the_webhook_session_without_the_user_prefix() {
        assert_eq!(webhook_session("agent-main", "agent"), Some("main".into()));
        assert_eq!(webhook_session("agent-agent-x", "agent"), Some("agent-x".into()), "one prefix only");
        assert_eq!(webhook_session("other-main", "agent"), Some("other-main".into()));
        assert_eq!(webhook_session("", "agent"), None);
        assert_eq!(tmux_socket("/tmp/tmux-0/default,12,0"), "/tmp/tmux-0/default");
        assert_eq!(tmux_socket("/tmp/odd"), "/tmp/odd");
    }

    #[test]
    fn tmux_is_asked_only_when_tmux_names_our_socket() {
        let home = tempfile::tempdir().unwrap();
        let socket = home.path().join("sock");
        std::fs::write(&socket, "").unwrap();
        let tmux = FakeTmux { current: Ok("main".into()), socket: socket.clone(), ..FakeTmux::live(&[]) };
        let ours = format!("{},1,0", socket.display());
        let ctx = context(home.path(), tmux.clone(), &[("TMUX", &ours), ("LOCAL_WEBHOOK_SESSION", "agent-hook")]);
        assert_eq!(self_name(&ctx), Some("main".into()));
        let other = format!("{},1,0", home.path().display());
        let ctx = context(home.path(), tmux.clone(), &[("TMUX", &other), ("LOCAL_WEBHOOK_SESSION", "agent-hook")]);
        assert_eq!(self_name(&ctx), Some("hook".into()), "another socket falls back to the webhook session");
        let failing = FakeTmux { current: Err(TmuxError::Timeout), ..tmux };
        let ctx = context(home.path(), failing, &[("TMUX", &ours)]);
        assert_eq!(self_name(&ctx), None);
    }

    #[test]
    fn json_shape_and_order() {
        let home = tempfile::tempdir().unwrap();
        let ctx = context(home.path(), FakeTmux::live(&["hook-a", "b"]), &[]);
        let report = collect(&ctx, Some("b")).unwrap();
        let value: Value = serde_json::from_str(&render_json(&report)).unwrap();
        assert_eq!(value["version"], 1);
        assert_eq!(value["self"], "b");
        assert_eq!(value["registry"], "missing");
        let row = value["sessions"][0].as_object().unwrap();
        let keys: Vec<&String> = row.keys().collect();
        assert_eq!(keys, ["name", "kind", "listed", "harness", "workingDirectory", "died", "unresolved", "claims"]);
        assert_eq!(row["kind"], "dispatched");
        assert_eq!(row["claims"], serde_json::json!({"filter": "missing", "enabled": false, "topics": []}));
    }
}
