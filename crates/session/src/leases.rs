//! `leases [--json]` (50-session-cli §7.1–7.4): every assignment lease, unresolved and unreadable ones first.
//! A read-only verb: takes no lock and creates nothing (a missing lease directory simply has no rows).

use std::cmp::Ordering;

use lease::{LeaseDir, LeaseState};
use serde_json::{Map, Value};

use crate::context::Context;
use crate::out::{Out, say};
use crate::text::visible;
use crate::view::{self, compact, pad};

/// Runs `leases [--json]`; returns the exit code (always 0, §7.4).
pub fn leases(ctx: &Context, json: bool, out: &mut Out) -> u8 {
    let registry = view::read_registry(&ctx.paths);
    if let Some(warning) = &registry.warning {
        say(warning);
    }
    let mut rows: Vec<Row> = LeaseDir::new(ctx.paths.lease_dir())
        .list()
        .into_iter()
        .filter_map(|(name, state)| Row::new(name.as_str(), state, registry.lists(name.as_str())))
        .collect();
    rows.sort_by(order);
    let text = if json { render_json(&rows) } else { render_text(&rows) };
    out.bytes(text.as_bytes());
    0
}

/// One lease file: its document when it parsed as one, `None` when unreadable.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub name: String,
    pub lease: Option<Map<String, Value>>,
    pub listed: bool,
}

impl Row {
    /// `None` for a file that vanished between listing and reading.
    pub fn new(name: &str, state: LeaseState, listed: bool) -> Option<Self> {
        let lease = match state {
            LeaseState::Absent => return None,
            LeaseState::Unreadable => None,
            LeaseState::Present(lease) => Some(lease.raw().clone()),
        };
        Some(Self { name: name.to_owned(), lease, listed })
    }

    fn field(&self, key: &str) -> Option<&Value> {
        self.lease.as_ref()?.get(key).filter(|v| !v.is_null())
    }

    /// First group: an outcome is set, or the file cannot be read (§7.2).
    fn needs_attention(&self) -> bool {
        self.lease.is_none() || self.field("outcome").is_some()
    }

    /// Unresolved per §3.13: the outcome is a non-empty string.
    pub fn unresolved(&self) -> bool {
        self.field("outcome").and_then(Value::as_str).is_some_and(|o| !o.is_empty())
    }

    fn claimed_at(&self) -> Option<&str> {
        self.field("claimedAt").and_then(Value::as_str)
    }
}

/// Unresolved and unreadable first, then open; by `claimedAt` text (missing last), then by name.
pub fn order(a: &Row, b: &Row) -> Ordering {
    let by_claim = match (a.claimed_at(), b.claimed_at()) {
        (Some(x), Some(y)) => x.cmp(y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    b.needs_attention().cmp(&a.needs_attention()).then(by_claim).then_with(|| a.name.cmp(&b.name))
}

/// A text cell: `-` for absent, null or empty, compact JSON for a value that is not a string.
fn cell(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "-".to_owned(),
        Some(Value::String(s)) if s.is_empty() => "-".to_owned(),
        Some(Value::String(s)) => visible(s),
        Some(other) => visible(&compact(other)),
    }
}

fn line(columns: [&str; 7]) -> String {
    let [name, outcome, claimed, ended, seen, object, topic] = columns;
    format!(
        "{} {} {} {} {} {} {topic}\n",
        pad(name, 24),
        pad(outcome, 10),
        pad(claimed, 20),
        pad(ended, 20),
        pad(seen, 20),
        pad(object, 8)
    )
}

fn row_line(row: &Row) -> String {
    let name = visible(&row.name);
    if row.lease.is_none() {
        return line([&name, "unreadable", "-", "-", "-", "-", "-"]);
    }
    let outcome = if row.field("outcome").is_none() { "open".to_owned() } else { cell(row.field("outcome")) };
    let cells = ["claimedAt", "endedAt", "lastSeenAt", "object", "topic"].map(|key| cell(row.field(key)));
    let [claimed, ended, seen, object, topic] = &cells;
    line([&name, &outcome, claimed, ended, seen, object, topic])
}

/// The text report of §7.3, with the footer when any row is unresolved.
pub fn render_text(rows: &[Row]) -> String {
    let mut text = line(["NAME", "OUTCOME", "CLAIMED", "ENDED", "LAST SEEN", "OBJECT", "TOPIC"]);
    for row in rows {
        text.push_str(&row_line(row));
    }
    let unresolved = rows.iter().filter(|r| r.unresolved()).count();
    if unresolved > 0 {
        text.push_str(&format!(
            "\n{unresolved} unresolved assignment(s): work this box accepted and cannot say finished. Check each, then 'agent-box-session rm NAME' clears it.\n"
        ));
    }
    text
}

/// The JSON report of §12.5; fields carry the file's raw values (a non-string `gen` reads as null, LS-2.2).
pub fn render_json(rows: &[Row]) -> String {
    let mut doc = view::versioned();
    doc.insert("leases".into(), Value::Array(rows.iter().map(json_row).collect()));
    view::json_document(doc)
}

fn json_row(row: &Row) -> Value {
    let raw = |key: &str| row.field(key).cloned().unwrap_or(Value::Null);
    let mut map = Map::new();
    map.insert("name".into(), row.name.clone().into());
    map.insert("readable".into(), row.lease.is_some().into());
    for key in ["topic", "object", "claimedAt", "outcome", "endedAt", "lastSeenAt"] {
        map.insert(key.into(), raw(key));
    }
    map.insert("gen".into(), row.field("gen").filter(|g| g.is_string()).cloned().unwrap_or(Value::Null));
    map.insert("listed".into(), row.listed.into());
    map.insert("unresolved".into(), row.unresolved().into());
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(name: &str, lease: Option<Value>) -> Row {
        Row { name: name.into(), lease: lease.map(|v| v.as_object().unwrap().clone()), listed: false }
    }

    fn sample() -> Vec<Row> {
        vec![
            row(
                "hook-acme-api-0b1e",
                Some(json!({"topic": "github:acme/api", "object": "612", "claimedAt": "2026-11-29T11:20:00Z",
                            "outcome": null, "lastSeenAt": "2026-11-29T11:48:31Z"})),
            ),
            row(
                "hook-acme-widget-77c0",
                Some(json!({"topic": "github:acme/widget", "object": null, "claimedAt": "2026-11-29T10:02:44Z",
                            "outcome": "vanished", "lastSeenAt": "2026-11-29T10:30:40Z",
                            "endedAt": "2026-11-29T10:31:02Z"})),
            ),
            row(
                "hook-acme-widget-3fa9",
                Some(json!({"topic": "github:acme/widget", "object": "535", "claimedAt": "2026-11-29T09:12:03Z",
                            "outcome": "died:1", "lastSeenAt": "2026-11-29T09:40:12Z",
                            "endedAt": "2026-11-29T09:40:55Z"})),
            ),
        ]
    }

    #[test]
    fn the_example_of_the_spec() {
        let mut rows = sample();
        rows.sort_by(order);
        let expected = "\
NAME                     OUTCOME    CLAIMED              ENDED                LAST SEEN            OBJECT   TOPIC
hook-acme-widget-3fa9    died:1     2026-11-29T09:12:03Z 2026-11-29T09:40:55Z 2026-11-29T09:40:12Z 535      github:acme/widget
hook-acme-widget-77c0    vanished   2026-11-29T10:02:44Z 2026-11-29T10:31:02Z 2026-11-29T10:30:40Z -        github:acme/widget
hook-acme-api-0b1e       open       2026-11-29T11:20:00Z -                    2026-11-29T11:48:31Z 612      github:acme/api

2 unresolved assignment(s): work this box accepted and cannot say finished. Check each, then 'agent-box-session rm NAME' clears it.
";
        assert_eq!(render_text(&rows), expected);
    }

    #[test]
    fn unreadable_files_join_the_first_group_and_missing_claims_sort_last() {
        let mut rows = vec![
            row("open-b", Some(json!({"claimedAt": "2026-01-01T00:00:00Z"}))),
            row("open-a", Some(json!({}))),
            row("open-c", Some(json!({"claimedAt": "2025-01-01T00:00:00Z"}))),
            row("broken", None),
            row("odd", Some(json!({"outcome": 5, "claimedAt": "2027-01-01T00:00:00Z"}))),
        ];
        rows.sort_by(order);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["odd", "broken", "open-c", "open-b", "open-a"]);
        let text = render_text(&rows);
        assert!(text.contains("\nbroken                   unreadable -"), "{text}");
        assert!(text.contains("\nodd                      5          2027"), "{text}");
        assert!(!text.contains("unresolved assignment(s)"), "a non-string outcome is not unresolved: {text}");
    }

    #[test]
    fn json_carries_raw_values_and_nulls() {
        let mut rows = vec![row("x", Some(json!({"outcome": "died:1\u{1b}[2J", "gen": 3}))), row("u", None)];
        rows[0].listed = true;
        let text = render_json(&rows);
        let value: Value = serde_json::from_str(&text).unwrap();
        let first = value["leases"][0].as_object().unwrap();
        let keys: Vec<&String> = first.keys().collect();
        assert_eq!(
            keys,
            [
                "name",
                "readable",
                "topic",
                "object",
                "claimedAt",
                "outcome",
                "endedAt",
                "lastSeenAt",
                "gen",
                "listed",
                "unresolved"
            ]
        );
        assert_eq!(first["outcome"], "died:1\u{1b}[2J");
        assert_eq!(first["gen"], Value::Null);
        assert_eq!((first["listed"].clone(), first["unresolved"].clone()), (json!(true), json!(true)));
        assert_eq!(value["leases"][1]["readable"], false);
        assert!(render_text(&rows).contains("died:1?[2J"));
    }
}
