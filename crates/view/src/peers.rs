//! The peers report (50-session-cli §5): who else is live on this box, on what, and what each one claims, and
//! its text. It never locks (it once ran inside another writer's critical section) and creates nothing. The
//! session CLI prints it (`peers`); agent-box-webhook-spawn puts its text into a hook session's prompt through
//! [`report_text`]. Each row is the report's own type, [`agent_box_types::report::Peer`].

use agent_box_types::report::{Peer, PeerKind, RegistryStatus};

use crate::claims;
use crate::context::Context;
use crate::read::{self, RegistryView};
use crate::text::{compact, visible};

/// The last three lines of a non-empty report, after an empty line (§5.5).
pub const FOOTER: [&str; 3] = [
    "A note is what a session says about itself, and a CLAIM stops the standing watches from starting another session for matching events.",
    "Neither proves that the session is busy or idle right now.",
    "To see what one is doing, read its pane (tmux -L agent-box capture-pane -pt NAME | tail -40) or ask it.",
];

/// The whole report when nobody else is live.
pub const NOBODY: &str = "No other session is live on this box.";

/// The text report exactly as `peers` prints it, leaving out `exclude` (webhook-spawn passes `None`); `Err` is
/// the "unavailable" reason of the live set. Prints nothing, not even the registry warning.
pub fn report_text(ctx: &Context, exclude: Option<&str>) -> Result<String, String> {
    collect(ctx, exclude).map(|report| render_text(&report.peers))
}

/// The text report of everyone in `live` (issue 24: the supervisor's admission, which has the live set it probed
/// under the registry lock and no front end's context).
pub fn report_text_for(paths: &registry::Paths, live: &[String]) -> String {
    let registry = read::read_registry(paths);
    let peers: Vec<Peer> = live.iter().map(|name| peer(paths, &registry, name)).collect();
    render_text(&peers)
}

/// Everything both renderings need.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub me: Option<String>,
    pub registry: RegistryStatus,
    /// Why the registry could not be used (the caller's warning).
    pub registry_unusable: Option<String>,
    pub peers: Vec<Peer>,
}

/// Reads the live set first, so that "could not ask" never turns into "nobody is live" (§5.1).
pub fn collect(ctx: &Context, exclude: Option<&str>) -> Result<Report, String> {
    let live = ctx.live_set()?;
    let registry = read::read_registry(&ctx.paths);
    let peers = live
        .iter()
        .filter(|name| Some(name.as_str()) != exclude)
        .map(|name| peer(&ctx.paths, &registry, name))
        .collect();
    Ok(Report {
        me: exclude.map(str::to_owned),
        registry: registry.status,
        registry_unusable: registry.unusable,
        peers,
    })
}

fn peer(paths: &registry::Paths, registry: &RegistryView, name: &str) -> Peer {
    let entry = registry.doc.entry(name);
    // A session a dispatch started is named `hook-*`.
    let kind = if name.starts_with("hook-") { PeerKind::Dispatched } else { PeerKind::Interactive };
    Peer {
        name: name.to_owned(),
        kind,
        listed: registry.lists(name),
        harness: entry.and_then(|e| e.agent()).map(str::to_owned),
        working_directory: entry.and_then(|e| e.working_directory()).map(str::to_owned),
        died: entry.and_then(|e| e.died()).cloned(),
        unresolved: read::unresolved_outcome(paths, name),
        claims: claims::read(paths, name),
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
    if !read::same_file(std::path::Path::new(socket), &ctx.tmux.socket_path()) {
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
    let kind = match peer.kind {
        PeerKind::Dispatched => "dispatched (hook session)",
        PeerKind::Interactive => "interactive",
    };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::context;
    use agent_box_tests::fake_tmux::FakeTmux;
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
        let broken = FakeTmux::unreachable(TmuxError::Timeout);
        let ctx = context(home.path(), broken, &[]);
        assert_eq!(report_text(&ctx, None), Err("tmux timed out".to_owned()));
        assert!(!home.path().join(".config").exists() && !home.path().join(".local").exists());
    }

    #[test]
    fn unmanaged_rows_and_hostile_values_are_shown_safely() {
        let peer = Peer {
            name: "x\u{1b}y".into(),
            kind: PeerKind::Interactive,
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
        let tmux = FakeTmux::live(&[]).answering_current(Ok("main".into())).with_socket(socket.clone());
        let ours = format!("{},1,0", socket.display());
        let ctx = context(home.path(), tmux.clone(), &[("TMUX", &ours), ("LOCAL_WEBHOOK_SESSION", "agent-hook")]);
        assert_eq!(self_name(&ctx), Some("main".into()));
        let other = format!("{},1,0", home.path().display());
        let ctx = context(home.path(), tmux.clone(), &[("TMUX", &other), ("LOCAL_WEBHOOK_SESSION", "agent-hook")]);
        assert_eq!(self_name(&ctx), Some("hook".into()), "another socket falls back to the webhook session");
        let failing = FakeTmux::live(&[]).answering_current(Err(TmuxError::Timeout)).with_socket(socket);
        let ctx = context(home.path(), failing, &[("TMUX", &ours)]);
        assert_eq!(self_name(&ctx), None);
    }
}
