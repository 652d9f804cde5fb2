//! `ls [--json]` (50-session-cli §4): every registry entry in file order, then the unmanaged live names, each
//! with the state the operator needs. A read-only verb: takes no lock and creates nothing.

use registry::Entry;
use serde_json::{Map, Value};

use crate::context::Context;
use crate::messages;
use crate::out::{Out, say};
use crate::text::visible;
use crate::view::{self, Backoff, RegistryStatus, compact, pad, string_or_null};

/// Runs `ls [--json]`; returns the exit code (always 0: every problem is a warning, §4.2).
pub fn ls(ctx: &Context, json: bool, out: &mut Out) -> u8 {
    let registry = view::read_registry(&ctx.paths);
    if let Some(warning) = &registry.warning {
        say(warning);
    }
    let (live, tmux_ok) = match ctx.live_set() {
        Ok(live) => (live, true),
        Err(reason) => {
            say(&messages::live_unknown_assumed(&reason));
            (Vec::new(), false)
        }
    };
    let now = registry::time::now_epoch();
    let rows = rows(ctx, &registry.doc, &live, now);
    if json {
        out.bytes(render_json(registry.status, tmux_ok, &rows).as_bytes());
    } else {
        out.bytes(render_text(&rows).as_bytes());
    }
    0
}

/// The state column's kind (`state` in JSON, §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Starting,
    Stopped,
    Live,
    Died,
    Unmanaged,
}

impl State {
    fn as_str(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Stopped => "stopped",
            Self::Live => "live",
            Self::Died => "died",
            Self::Unmanaged => "unmanaged",
        }
    }
}

/// One row of the listing, holding raw values; text rendering makes them safe (§3.8).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub name: String,
    pub listed: bool,
    pub state: State,
    pub harness: Option<String>,
    pub stopped: bool,
    pub died: Option<Value>,
    pub ephemeral: bool,
    pub origin: Option<String>,
    pub working_directory: Option<String>,
    pub unresolved: Option<String>,
    pub backoff: Option<Backoff>,
}

fn rows(ctx: &Context, doc: &registry::Document, live: &[String], now: i64) -> Vec<Row> {
    let is_live = |name: &str| live.iter().any(|l| l == name);
    let mut rows: Vec<Row> =
        doc.names().map(|name| listed_row(ctx, doc.entry(name), name, is_live(name), now)).collect();
    rows.extend(live.iter().filter(|name| !doc.contains(name)).map(|name| unmanaged_row(name)));
    rows
}

fn listed_row(ctx: &Context, entry: Option<Entry<'_>>, name: &str, live: bool, now: i64) -> Row {
    let stopped = entry.is_some_and(|e| e.stopped());
    let died = entry.and_then(|e| e.died()).cloned();
    let state = listed_state(stopped, died.is_some(), live);
    let backoff = if state == State::Starting { view::backoff(&ctx.paths, name, now) } else { None };
    Row {
        name: name.to_owned(),
        listed: true,
        state,
        harness: entry.and_then(|e| e.agent()).map(str::to_owned),
        stopped,
        died,
        ephemeral: entry.is_some_and(|e| e.ephemeral()),
        origin: entry.and_then(|e| e.origin()).map(str::to_owned),
        working_directory: entry.and_then(|e| e.get("workingDirectory")).and_then(Value::as_str).map(str::to_owned),
        unresolved: view::unresolved_outcome(&ctx.paths, name),
        backoff,
    }
}

/// §4.3: a live pane decides between `live` and `died`; otherwise the intent decides.
pub fn listed_state(stopped: bool, died: bool, live: bool) -> State {
    match (live, died, stopped) {
        (true, true, _) => State::Died,
        (true, false, _) => State::Live,
        (false, _, true) => State::Stopped,
        (false, _, false) => State::Starting,
    }
}

fn unmanaged_row(name: &str) -> Row {
    Row {
        name: name.to_owned(),
        listed: false,
        state: State::Unmanaged,
        harness: None,
        stopped: false,
        died: None,
        ephemeral: false,
        origin: None,
        working_directory: None,
        unresolved: None,
        backoff: None,
    }
}

/// The text report: header and one `%-24s %-8s %s` line per row.
pub fn render_text(rows: &[Row]) -> String {
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
pub fn state_text(row: &Row) -> String {
    let mut text = match (row.state, &row.died) {
        (State::Died, Some(died)) => format!("died({})", compact(died)),
        (state, _) => state.as_str().to_owned(),
    };
    if let Some(backoff) = &row.backoff {
        text.push_str(&format!(", backoff until {} UTC", registry::time::format_hms(backoff.until)));
    }
    if let Some(outcome) = &row.unresolved {
        text.push_str(&format!(", UNRESOLVED ASSIGNMENT ({outcome})"));
    }
    text
}

/// The JSON report of §12.2.
pub fn render_json(status: RegistryStatus, tmux_ok: bool, rows: &[Row]) -> String {
    let mut doc = view::versioned();
    doc.insert("registry".into(), status.as_str().into());
    doc.insert("tmux".into(), if tmux_ok { "ok" } else { "unavailable" }.into());
    doc.insert("sessions".into(), Value::Array(rows.iter().map(json_row).collect()));
    view::json_document(doc)
}

fn json_row(row: &Row) -> Value {
    let mut map = Map::new();
    map.insert("name".into(), row.name.clone().into());
    map.insert("harness".into(), string_or_null(row.harness.as_deref()));
    map.insert("state".into(), row.state.as_str().into());
    map.insert("listed".into(), row.listed.into());
    map.insert("stopped".into(), row.stopped.into());
    map.insert("died".into(), row.died.clone().unwrap_or(Value::Null));
    map.insert("ephemeral".into(), row.ephemeral.into());
    map.insert("origin".into(), string_or_null(row.origin.as_deref()));
    map.insert("workingDirectory".into(), string_or_null(row.working_directory.as_deref()));
    map.insert("unresolved".into(), string_or_null(row.unresolved.as_deref()));
    map.insert("backoffUntil".into(), string_or_null(row.backoff.as_ref().map(|b| b.raw.as_str())));
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::fake::{FakeTmux, context};

    fn row(name: &str, harness: Option<&str>, state: State) -> Row {
        Row { harness: harness.map(str::to_owned), state, ..unmanaged_row(name) }
    }

    #[test]
    fn live_panes_decide_before_intent() {
        assert_eq!(listed_state(false, false, false), State::Starting);
        assert_eq!(listed_state(true, false, false), State::Stopped);
        assert_eq!(listed_state(true, false, true), State::Live, "a stopped entry whose pane runs is live");
        assert_eq!(listed_state(false, true, false), State::Starting, "a died entry without a pane is respawned");
        assert_eq!(listed_state(false, true, true), State::Died);
    }

    #[test]
    fn the_text_layout_of_the_example() {
        let rows = vec![
            Row { listed: true, ..row("main", Some("claude"), State::Live) },
            Row { listed: true, stopped: true, ..row("helper", Some("codex"), State::Stopped) },
            Row {
                listed: true,
                died: Some(Value::from(1)),
                unresolved: Some("died:1".into()),
                ..row("hook-acme-widget-3fa9", Some("claude"), State::Died)
            },
            Row {
                listed: true,
                unresolved: Some("vanished".into()),
                ..row("hook-acme-widget-77c0", Some("claude"), State::Live)
            },
            Row { listed: true, ..row("notes", Some("shell"), State::Starting) },
            row("scratch", None, State::Unmanaged),
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
        let until = registry::time::parse_iso("2026-11-29T14:03:11Z").unwrap();
        let backing_off = Row {
            listed: true,
            backoff: Some(Backoff { raw: "2026-11-29T14:03:11Z".into(), until }),
            ..row("n", Some("claude"), State::Starting)
        };
        assert_eq!(state_text(&backing_off), "starting, backoff until 14:03:11 UTC");
        let odd = Row { listed: true, ..row("a\u{1b}[2Jb", None, State::Starting) };
        let died_text = Row { listed: true, died: Some(Value::from("x")), ..row("d", Some("c"), State::Died) };
        let text = render_text(&[odd, died_text]);
        assert!(text.contains("\na?[2Jb                   ?        starting\n"), "{text}");
        assert!(text.contains("died(\"x\")"), "{text}");
    }

    #[test]
    fn json_rows_carry_raw_values_in_the_documented_order() {
        let until = registry::time::parse_iso("2026-11-29T14:03:11Z").unwrap();
        let rows = vec![Row {
            listed: true,
            origin: Some("webhook".into()),
            backoff: Some(Backoff { raw: "2026-11-29T14:03:11Z".into(), until }),
            ..row("k\u{7}", Some("claude"), State::Starting)
        }];
        let text = render_json(RegistryStatus::Ok, false, &rows);
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
                "backoffUntil"
            ]
        );
        assert_eq!(value["sessions"][0]["name"], "k\u{7}");
        assert_eq!(value["sessions"][0]["backoffUntil"], "2026-11-29T14:03:11Z");
        assert_eq!(value["tmux"], "unavailable");
        assert!(text.ends_with("}\n") && !text.ends_with("\n\n"));
    }

    #[test]
    fn rows_follow_file_order_then_tmux_order() {
        let home = tempfile::tempdir().unwrap();
        let ctx = context(home.path(), FakeTmux::live(&["zeta", "b", "alpha"]), &[]);
        let doc = registry::Document::parse(br#"{"sessions":{"b":{"agent":"x"},"a":7}}"#).unwrap();
        let rows = rows(&ctx, &doc, &["zeta".into(), "b".into(), "alpha".into()], 0);
        let names: Vec<(&str, State)> = rows.iter().map(|r| (r.name.as_str(), r.state)).collect();
        assert_eq!(
            names,
            [("b", State::Live), ("a", State::Starting), ("zeta", State::Unmanaged), ("alpha", State::Unmanaged)]
        );
        assert_eq!(rows[1].harness, None, "a non-object entry has no harness");
    }
}
