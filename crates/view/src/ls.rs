//! The `ls` listing as a model (50-session-cli §4): every registry entry in file order, then the unmanaged live
//! names, each with the state the operator needs. The rows are the report's own type
//! ([`agent_box_types::report::LsSession`]) holding raw values; the session CLI renders them as text or JSON.

use agent_box_types::report::{LsSession, SessionState};
use registry::{Document, Entry};
use serde_json::Value;

use crate::context::Context;
use crate::read;

/// The rows of a registry `doc` and a live set `live` (tmux order) at time `now`; `notifier` is
/// [`crate::notification::configured`]'s answer, asked once by the caller (who reports when it has none).
pub fn rows(ctx: &Context, doc: &Document, live: &[String], now: i64, notifier: bool) -> Vec<LsSession> {
    let is_live = |name: &str| live.iter().any(|l| l == name);
    let mut rows: Vec<LsSession> =
        doc.names().map(|name| listed_row(ctx, doc.entry(name), name, is_live(name), now, notifier)).collect();
    rows.extend(live.iter().filter(|name| !doc.contains(name)).map(|name| unmanaged_row(name)));
    rows
}

fn listed_row(ctx: &Context, entry: Option<Entry<'_>>, name: &str, live: bool, now: i64, notifier: bool) -> LsSession {
    let stopped = entry.is_some_and(|e| e.stopped());
    let died = entry.and_then(|e| e.died()).cloned();
    let state = listed_state(stopped, died.is_some(), live);
    let starting = state == SessionState::Starting;
    // The side file's value verbatim, and only while it is a time later than now (what the text row shows).
    let backoff_until = if starting { read::backoff(&ctx.paths, name, now).map(|b| b.raw) } else { None };
    let harness = entry.and_then(|e| e.agent()).map(str::to_owned);
    let harness_missing = if starting { read::harness_missing(&ctx.paths, name, harness.as_deref()) } else { None };
    LsSession {
        name: name.to_owned(),
        listed: true,
        state,
        harness,
        harness_missing,
        stopped,
        died,
        ephemeral: entry.is_some_and(|e| e.ephemeral()),
        origin: entry.and_then(|e| e.origin()).map(str::to_owned),
        working_directory: entry.and_then(|e| e.get("workingDirectory")).and_then(Value::as_str).map(str::to_owned),
        unresolved: read::unresolved_outcome(&ctx.paths, name),
        notification: crate::notification::report_of_name(&ctx.paths, name, notifier),
        backoff_until,
    }
}

/// §4.3: a live pane decides between `live` and `died`; otherwise the intent decides.
pub fn listed_state(stopped: bool, died: bool, live: bool) -> SessionState {
    match (live, died, stopped) {
        (true, true, _) => SessionState::Died,
        (true, false, _) => SessionState::Live,
        (false, _, true) => SessionState::Stopped,
        (false, _, false) => SessionState::Starting,
    }
}

/// A live session the registry does not list.
pub fn unmanaged_row(name: &str) -> LsSession {
    LsSession {
        name: name.to_owned(),
        listed: false,
        state: SessionState::Unmanaged,
        harness: None,
        stopped: false,
        died: None,
        ephemeral: false,
        origin: None,
        working_directory: None,
        unresolved: None,
        backoff_until: None,
        harness_missing: None,
        notification: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::context;
    use agent_box_tests::fake_tmux::FakeTmux;

    #[test]
    fn live_panes_decide_before_intent() {
        assert_eq!(listed_state(false, false, false), SessionState::Starting);
        assert_eq!(listed_state(true, false, false), SessionState::Stopped);
        assert_eq!(listed_state(true, false, true), SessionState::Live, "a stopped entry whose pane runs is live");
        assert_eq!(listed_state(false, true, false), SessionState::Starting, "a died entry without a pane respawns");
        assert_eq!(listed_state(false, true, true), SessionState::Died);
    }

    #[test]
    fn rows_follow_file_order_then_tmux_order() {
        let home = tempfile::tempdir().unwrap();
        let ctx = context(home.path(), FakeTmux::live(&["zeta", "b", "alpha"]), &[]);
        let doc = Document::parse(br#"{"sessions":{"b":{"agent":"x"},"a":7}}"#).unwrap();
        let rows = rows(&ctx, &doc, &["zeta".into(), "b".into(), "alpha".into()], 0, false);
        let names: Vec<(&str, SessionState)> = rows.iter().map(|r| (r.name.as_str(), r.state)).collect();
        assert_eq!(
            names,
            [
                ("b", SessionState::Live),
                ("a", SessionState::Starting),
                ("zeta", SessionState::Unmanaged),
                ("alpha", SessionState::Unmanaged)
            ]
        );
        assert_eq!(rows[1].harness, None, "a non-object entry has no harness");
    }
}
