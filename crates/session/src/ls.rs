//! `ls [--json]` (50-session-cli §4): every registry entry in file order, then the unmanaged live names, each
//! with the state the operator needs. A read-only verb: takes no lock and creates nothing.

use agent_box_types::report::{LsReport, LsSession, SessionState, SupervisorStatus, TmuxStatus};
use agent_box_types::{VERSION, pretty};
use view::Context;
use view::ls::rows;
use view::read::{RegistryView, read_registry};
use view::text::{compact, pad, visible};

use crate::error::SessionError;
use crate::messages;
use crate::out::Out;

/// Runs `ls [--json]`; every problem is a warning (§4.2) but a notifier marker that cannot be looked at (M59).
pub fn ls(ctx: &Context, json: bool, out: &mut Out) -> Result<(), SessionError> {
    let registry = read_registry(&ctx.paths);
    warn_unusable(ctx, &registry, out);
    let notifier = notifier_configured(ctx)?;
    let (live, tmux) = match ctx.live_set() {
        Ok(live) => (live, TmuxStatus::Ok),
        Err(reason) => {
            out.warn(messages::live_unknown_assumed(&reason));
            (Vec::new(), TmuxStatus::Unavailable)
        }
    };
    let supervisor = view::read::supervisor_status(&ctx.paths);
    if supervisor == SupervisorStatus::Stopped {
        out.warn(messages::no_supervisor(&ctx.paths.registry().display().to_string()));
    }
    let rows = rows(ctx, &registry.doc, &live, base::time::now_epoch(), notifier);
    let queue = queue_counts(ctx, out);
    let text = if json {
        render_json(&registry, tmux, supervisor, &rows, queue)?
    } else {
        let mut text = render_text(&rows);
        queue_lines(&mut text, queue);
        text
    };
    out.bytes(text.as_bytes());
    Ok(())
}

/// Issue 24: the intake queue's counts; a queue that cannot be read is a warning (M57), never "nothing waits".
pub fn queue_counts(ctx: &Context, out: &mut Out) -> Option<view::queue::Counts> {
    view::queue::counts(&ctx.paths).map_err(|why| out.warn(messages::queue_unreadable(&why))).ok()
}

/// The queue's lines after a listing, after an empty line (none when nothing is queued).
pub fn queue_lines(text: &mut String, counts: Option<view::queue::Counts>) {
    let lines = counts.map(|c| view::queue::summary_lines(&c)).unwrap_or_default();
    if !lines.is_empty() {
        text.push('\n');
        lines.iter().for_each(|line| {
            text.push_str(line);
            text.push('\n');
        });
    }
}

/// Whether outcomes are reported (N-8); a marker that cannot be looked at stops the listing (M59, exit 1) rather
/// than show an undelivered outcome as `off`.
pub fn notifier_configured(ctx: &Context) -> Result<bool, SessionError> {
    view::notification::configured(&ctx.paths).map_err(SessionError::NotifierUnknown)
}

/// M33 when the registry could not be used.
pub fn warn_unusable(ctx: &Context, registry: &RegistryView, out: &mut Out) {
    if let Some(reason) = &registry.unusable {
        out.warn(messages::registry_unusable(&ctx.paths.registry().display().to_string(), reason));
    }
}

/// The text report: header and one `%-24s %-8s %s` line per row.
pub fn render_text(rows: &[LsSession]) -> String {
    let mut text = format!("{} {} STATE\n", pad("NAME", 24), pad("HARNESS", 8));
    for row in rows {
        let harness = match (&row.harness, row.listed) {
            (Some(h), _) => visible(h),
            (None, true) => "?".to_owned(),
            (None, false) => "-".to_owned(),
        };
        text.push_str(&format!(
            "{} {} {}\n",
            pad(&visible(&row.name), 24),
            pad(&harness, 8),
            visible(&state_text(row))
        ));
    }
    text
}

/// The STATE column: the state word, `died(<value>)`, the backoff and the unresolved suffix.
pub fn state_text(row: &LsSession) -> String {
    let mut text = match (row.state, &row.died) {
        (SessionState::Died, Some(died)) => format!("died({})", compact(died)),
        (state, _) => state_word(state).to_owned(),
    };
    if let Some(agent) = &row.harness_missing {
        text.push_str(&format!(", harness '{agent}' not installed"));
    }
    // view sets `backoff_until` only to a time it parsed, so a value that does not parse is never shown.
    if let Some(until) = row.backoff_until.as_deref().and_then(base::time::parse_iso) {
        text.push_str(&format!(", backoff until {} UTC", base::time::format_hms(until)));
    }
    if let Some(outcome) = &row.unresolved {
        text.push_str(&format!(", UNRESOLVED ASSIGNMENT ({outcome})"));
    }
    text
}

fn state_word(state: SessionState) -> &'static str {
    match state {
        SessionState::Starting => "starting",
        SessionState::Stopped => "stopped",
        SessionState::Live => "live",
        SessionState::Died => "died",
        SessionState::Unmanaged => "unmanaged",
    }
}

/// The JSON report of §12.2.
pub fn render_json(
    registry: &RegistryView,
    tmux: TmuxStatus,
    supervisor: SupervisorStatus,
    rows: &[LsSession],
    queue: Option<view::queue::Counts>,
) -> Result<String, SessionError> {
    let sessions = rows.to_vec();
    let report = LsReport { version: VERSION, registry: registry.status, tmux, supervisor, sessions, queue };
    pretty(&report).map_err(|e| SessionError::Failed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use view::ls::unmanaged_row;

    fn row(name: &str, harness: Option<&str>, state: SessionState) -> LsSession {
        LsSession { harness: harness.map(str::to_owned), state, ..unmanaged_row(name) }
    }

    #[test]
    fn the_text_layout_of_the_example() {
        let rows = vec![
            LsSession { listed: true, ..row("main", Some("claude"), SessionState::Live) },
            LsSession { listed: true, stopped: true, ..row("helper", Some("codex"), SessionState::Stopped) },
            LsSession {
                listed: true,
                died: Some(Value::from(1)),
                unresolved: Some("died:1".into()),
                ..row("hook-acme-widget-3fa9", Some("claude"), SessionState::Died)
            },
            LsSession {
                listed: true,
                unresolved: Some("vanished".into()),
                ..row("hook-acme-widget-77c0", Some("claude"), SessionState::Live)
            },
            LsSession { listed: true, ..row("notes", Some("shell"), SessionState::Starting) },
            row("scratch", None, SessionState::Unmanaged),
        ];
        let expected = "\
NAME                     HARNESS  STATE
main                     claude   live
helper                   codex    stopped
hook-acme-widget-3fa9    claude   died(1), UNRESOLVED ASSIGNMENT (died:1)
hook-acme-widget-77c0    claude   live, UNRESOLVED ASSIGNMENT (vanished)
notes                    shell    starting
scratch                  -        unmanaged
";
        assert_eq!(render_text(&rows), expected);
    }

    #[test]
    fn backoff_odd_values_and_control_characters_in_text() {
        let backing_off = LsSession {
            listed: true,
            backoff_until: Some("2026-11-29T14:03:11Z".into()),
            ..row("n", Some("claude"), SessionState::Starting)
        };
        assert_eq!(state_text(&backing_off), "starting, backoff until 14:03:11 UTC");
        let missing =
            LsSession { harness_missing: Some("claude".into()), ..row("m", Some("claude"), SessionState::Starting) };
        assert_eq!(state_text(&missing), "starting, harness 'claude' not installed");
        let odd = LsSession { listed: true, ..row("a\u{1b}[2Jb", None, SessionState::Starting) };
        let died_text =
            LsSession { listed: true, died: Some(Value::from("x")), ..row("d", Some("c"), SessionState::Died) };
        let text = render_text(&[odd, died_text]);
        assert!(text.contains("\na?[2Jb                   ?        starting\n"), "{text}");
        assert!(text.contains("died(\"x\")"), "{text}");
    }

    #[test]
    fn json_rows_carry_raw_values_in_the_documented_order() {
        let rows = vec![LsSession {
            listed: true,
            origin: Some("webhook".into()),
            backoff_until: Some("2026-11-29T14:03:11Z".into()),
            ..row("k\u{7}", Some("claude"), SessionState::Starting)
        }];
        let dir = tempfile::tempdir().unwrap();
        let registry = read_registry(&registry::Paths::for_root(dir.path(), "agent"));
        let text = render_json(&registry, TmuxStatus::Unavailable, SupervisorStatus::Stopped, &rows, None).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        let keys: Vec<&String> = value["sessions"][0].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "name",
                "harness",
                "state",
                "listed",
                "stopped",
                "died",
                "ephemeral",
                "origin",
                "workingDirectory",
                "unresolved",
                "backoffUntil",
                "harnessMissing",
                "notification"
            ]
        );
        let report: LsReport = serde_json::from_str(&text).unwrap();
        assert_eq!(report.sessions[0].name, "k\u{7}");
        assert_eq!(report.sessions[0].backoff_until.as_deref(), Some("2026-11-29T14:03:11Z"));
        assert_eq!((report.version, report.tmux), (1, TmuxStatus::Unavailable));
        assert!(text.ends_with("}\n") && !text.ends_with("\n\n"));
    }
}
