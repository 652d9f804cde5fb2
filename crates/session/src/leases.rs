//! `leases [--json]` (50-session-cli §7.1–7.4): every assignment lease, unresolved and unreadable ones first.
//! A read-only verb: takes no lock and creates nothing (a missing lease directory simply has no rows).

use agent_box_types::report::{LeaseRow, LeasesReport};
use agent_box_types::{VERSION, pretty};
use serde_json::Value;
use view::Context;
use view::leases::{Row, rows};
use view::notification;
use view::read::read_registry;
use view::text::{compact, pad, visible};

use crate::error::SessionError;
use crate::ls::{notifier_configured, warn_unusable};
use crate::out::Out;

/// Runs `leases [--json]`; every problem is a warning (§7.4) but a notifier marker that cannot be looked at (M59).
pub fn leases(ctx: &Context, json: bool, out: &mut Out) -> Result<(), SessionError> {
    let registry = read_registry(&ctx.paths);
    warn_unusable(ctx, &registry, out);
    let configured = notifier_configured(ctx)?;
    let rows = rows(&ctx.paths, &registry);
    let text = if json { render_json(&rows, configured)? } else { render_text(&rows, configured) };
    out.bytes(text.as_bytes());
    Ok(())
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

fn line(columns: [&str; 8]) -> String {
    let [name, outcome, reported, claimed, ended, seen, object, topic] = columns;
    format!(
        "{} {} {} {} {} {} {} {topic}\n",
        pad(name, 24),
        pad(outcome, 10),
        pad(reported, 26),
        pad(claimed, 20),
        pad(ended, 20),
        pad(seen, 20),
        pad(object, 8)
    )
}

fn row_line(row: &Row, configured: bool) -> String {
    let name = visible(&row.name);
    let Some(lease) = &row.lease else {
        return line([&name, "unreadable", "-", "-", "-", "-", "-", "-"]);
    };
    let reported = notification::cell(notification::report_of(lease, configured).as_ref());
    let outcome = if row.field("outcome").is_none() { "open".to_owned() } else { cell(row.field("outcome")) };
    let cells = ["claimedAt", "endedAt", "lastSeenAt", "object", "topic"].map(|key| cell(row.field(key)));
    let [claimed, ended, seen, object, topic] = &cells;
    line([&name, &outcome, &reported, claimed, ended, seen, object, topic])
}

/// The text report of §7.3, with the footer when any row is unresolved; REPORTED is issue 21's column.
pub fn render_text(rows: &[Row], configured: bool) -> String {
    let mut text = line(["NAME", "OUTCOME", "REPORTED", "CLAIMED", "ENDED", "LAST SEEN", "OBJECT", "TOPIC"]);
    for row in rows {
        text.push_str(&row_line(row, configured));
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
pub fn render_json(rows: &[Row], configured: bool) -> Result<String, SessionError> {
    let report = LeasesReport { version: VERSION, leases: rows.iter().map(|r| json_row(r, configured)).collect() };
    pretty(&report).map_err(|e| SessionError::Failed(e.to_string()))
}

fn json_row(row: &Row, configured: bool) -> LeaseRow {
    let raw = |key: &str| row.field(key).cloned().unwrap_or(Value::Null);
    LeaseRow {
        name: row.name.clone(),
        readable: row.lease.is_some(),
        topic: raw("topic"),
        object: raw("object"),
        claimed_at: raw("claimedAt"),
        outcome: raw("outcome"),
        ended_at: raw("endedAt"),
        last_seen_at: raw("lastSeenAt"),
        lease_gen: row.field("gen").and_then(Value::as_str).map(str::to_owned),
        listed: row.listed,
        unresolved: row.unresolved(),
        notification: row.lease.as_ref().and_then(|lease| notification::report_of(lease, configured)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use view::leases::order;

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
                            "endedAt": "2026-11-29T10:31:02Z", "notifiedAt": "2026-11-29T10:31:03Z"})),
            ),
            row(
                "hook-acme-widget-3fa9",
                Some(json!({"topic": "github:acme/widget", "object": "535", "claimedAt": "2026-11-29T09:12:03Z",
                            "outcome": "died:1", "lastSeenAt": "2026-11-29T09:40:12Z",
                            "endedAt": "2026-11-29T09:40:55Z",
                            "notify": {"attempts": 3, "nextAt": "2026-11-29T09:42:05Z"}})),
            ),
        ]
    }

    #[test]
    fn the_example_of_the_spec() {
        let mut rows = sample();
        rows.sort_by(order);
        let expected = "\
NAME                     OUTCOME    REPORTED                   CLAIMED              ENDED                LAST SEEN            OBJECT   TOPIC
hook-acme-widget-3fa9    died:1     retry 2026-11-29T09:42:05Z 2026-11-29T09:12:03Z 2026-11-29T09:40:55Z 2026-11-29T09:40:12Z 535      github:acme/widget
hook-acme-widget-77c0    vanished   delivered                  2026-11-29T10:02:44Z 2026-11-29T10:31:02Z 2026-11-29T10:30:40Z -        github:acme/widget
hook-acme-api-0b1e       open       -                          2026-11-29T11:20:00Z -                    2026-11-29T11:48:31Z 612      github:acme/api

2 unresolved assignment(s): work this box accepted and cannot say finished. Check each, then 'agent-box-session rm NAME' clears it.
";
        assert_eq!(render_text(&rows, true), expected);
    }

    #[test]
    fn unreadable_and_odd_rows_in_text() {
        let rows =
            vec![row("odd", Some(json!({"outcome": 5, "claimedAt": "2027-01-01T00:00:00Z"}))), row("broken", None)];
        let text = render_text(&rows, false);
        assert!(text.contains("\nbroken                   unreadable -"), "{text}");
        assert!(text.contains("unreadable -                          -"), "{text}");
        assert!(text.contains("\nodd                      5          -                          2027"), "{text}");
        assert!(!text.contains("unresolved assignment(s)"), "a non-string outcome is not unresolved: {text}");
    }

    #[test]
    fn json_carries_raw_values_and_nulls() {
        let mut rows = vec![row("x", Some(json!({"outcome": "died:1\u{1b}[2J", "gen": 3}))), row("u", None)];
        rows[0].listed = true;
        let text = render_json(&rows, true).unwrap();
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
                "unresolved",
                "notification"
            ]
        );
        assert_eq!(first["outcome"], "died:1\u{1b}[2J");
        assert_eq!(first["gen"], Value::Null);
        assert_eq!((first["listed"].clone(), first["unresolved"].clone()), (json!(true), json!(true)));
        assert_eq!(value["leases"][1]["readable"], false);
        assert!(render_text(&rows, true).contains("died:1?[2J"));
    }
}
