//! What a session claims, read from its webhook filter file (50-session-cli §5.4) for the `peers` report, and its
//! claim lines. The file is read only for a name that passed the charset check (§3.5), without a lock, and never
//! created. The model is the report's own type, [`agent_box_types::report::Claims`].

pub use agent_box_types::report::{Claims, FilterStatus, Topic};
use base::SessionName;
use registry::Paths;
use serde_json::{Map, Value};

use crate::text::{folded_note, visible};

/// Claims of a filter that says nothing: missing, unreadable.
fn without(filter: FilterStatus) -> Claims {
    Claims { filter, enabled: false, topics: Vec::new() }
}

/// Reads the claims of live session `name`.
pub fn read(paths: &Paths, name: &str) -> Claims {
    let Ok(name) = SessionName::parse(name) else { return without(FilterStatus::Missing) };
    match std::fs::read(paths.filter_file(&name)) {
        Ok(bytes) if bytes.is_empty() => without(FilterStatus::Missing),
        Ok(bytes) => parse(&bytes),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => without(FilterStatus::Missing),
        Err(_) => without(FilterStatus::Unreadable),
    }
}

/// The claims of a non-empty filter file's bytes.
pub fn parse(bytes: &[u8]) -> Claims {
    let Ok(Value::Object(filter)) = serde_json::from_slice::<Value>(bytes) else {
        return without(FilterStatus::Unreadable);
    };
    let enabled = filter.get("enabled") != Some(&Value::Bool(false));
    let topics = if enabled { topics_of(&filter) } else { Vec::new() };
    Claims { filter: FilterStatus::Ok, enabled, topics }
}

fn topics_of(filter: &Map<String, Value>) -> Vec<Topic> {
    let Some(Value::Array(entries)) = filter.get("topics") else { return Vec::new() };
    entries.iter().filter_map(Value::as_object).map(topic_of).collect()
}

fn topic_of(entry: &Map<String, Value>) -> Topic {
    let claim = entry.get("include").is_some_and(|v| !v.is_null() && *v != Value::Bool(false));
    let note = entry.get("note").and_then(Value::as_str).filter(|n| !n.is_empty()).map(folded_note);
    Topic { topic: entry.get("topic").and_then(Value::as_str).map(str::to_owned), claim, note }
}

/// The claim lines of §5.4, without their four-space indent.
pub fn lines(claims: &Claims) -> Vec<String> {
    let nothing = |why: &str| vec![format!("claims nothing — {why}")];
    match (claims.filter, claims.enabled) {
        (FilterStatus::Missing, _) => {
            nothing("no subscription file, so an event on its work spawns a session beside it")
        }
        (FilterStatus::Unreadable, _) => nothing("its filter file is unreadable"),
        (FilterStatus::Ok, false) => nothing("its subscriptions are switched off"),
        (FilterStatus::Ok, true) if claims.topics.is_empty() => nothing("subscribed to no topic"),
        (FilterStatus::Ok, true) => claims.topics.iter().map(topic_line).collect(),
    }
}

fn topic_line(topic: &Topic) -> String {
    let name = topic.topic.as_deref().map_or_else(|| "?".to_owned(), visible);
    let head = if topic.claim {
        format!("CLAIMS {name}")
    } else {
        format!("listens to (no predicate, so not a claim) {name}")
    };
    match &topic.note {
        Some(note) => format!("{head} — note: \"{note}\""),
        None => head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(text: &str) -> Vec<String> {
        lines(&parse(text.as_bytes()))
    }

    #[test]
    fn a_filter_without_usable_topics_claims_nothing() {
        assert_eq!(lines_of("[1]"), ["claims nothing — its filter file is unreadable"]);
        assert_eq!(lines_of("{not json"), ["claims nothing — its filter file is unreadable"]);
        let off = r#"{"enabled":false,"topics":[{"topic":"a","include":{}}]}"#;
        assert_eq!(lines_of(off), ["claims nothing — its subscriptions are switched off"]);
        for none in [r#"{}"#, r#"{"topics":{}}"#, r#"{"topics":[1,"x",null]}"#] {
            assert_eq!(lines_of(none), ["claims nothing — subscribed to no topic"], "{none}");
        }
        assert_eq!(
            lines(&without(FilterStatus::Missing)),
            ["claims nothing — no subscription file, so an event on its work spawns a session beside it"]
        );
    }

    #[test]
    fn claims_listens_and_notes() {
        let filter = r#"{"enabled":"yes","topics":[
            {"topic":"github:acme/widget","include":{"any":[]},"note":"fixing the flaky login test"},
            {"topic":"github:acme/other"},
            {"topic":"x","include":false,"note":""},
            {"topic":7,"include":null,"note":"a\tb\r\nc\u001b[2J"}]}"#;
        assert_eq!(
            lines_of(filter),
            [
                "CLAIMS github:acme/widget — note: \"fixing the flaky login test\"",
                "listens to (no predicate, so not a claim) github:acme/other",
                "listens to (no predicate, so not a claim) x",
                "listens to (no predicate, so not a claim) ? — note: \"a b  c [2J\"",
            ]
        );
    }

    #[test]
    fn long_notes_are_cut_and_topics_shown_safely() {
        let filter = format!(r#"{{"topics":[{{"topic":"t\u001b","include":1,"note":"{}"}}]}}"#, "n".repeat(300));
        let claims = parse(filter.as_bytes());
        assert_eq!(claims.topics[0].note.as_ref().map(String::len), Some(200));
        assert!(lines(&claims)[0].starts_with("CLAIMS t? — note: \"nnn"));
        assert_eq!(claims.topics[0].topic.as_deref(), Some("t\u{1b}"), "the model carries the raw topic");
        assert_eq!((claims.filter, claims.enabled), (FilterStatus::Ok, true));
    }

    #[test]
    fn names_failing_the_charset_have_no_filter() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::for_root(dir.path(), "agent");
        std::fs::create_dir_all(paths.webhook_state_dir().join("filter.agent-x")).unwrap();
        std::fs::write(paths.webhook_state_dir().join("filter.agent-x/y.json"), r#"{"topics":[{"topic":"leak"}]}"#)
            .unwrap();
        assert_eq!(read(&paths, "x/y"), without(FilterStatus::Missing));
        std::fs::write(paths.webhook_state_dir().join("filter.agent-e.json"), "").unwrap();
        assert_eq!(read(&paths, "e"), without(FilterStatus::Missing), "0 bytes reads as absent");
    }
}
