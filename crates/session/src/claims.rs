//! What a session claims, read from its webhook filter file (50-session-cli §5.4) for the `peers` report. The
//! file is read only for a name that passed the charset check (§3.5), without a lock, and never created.

use registry::{Paths, SessionName};
use serde_json::{Map, Value};

use crate::text::{folded_note, visible};

/// How the filter file was found (`claims.filter` in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterState {
    Ok,
    /// Absent, 0 bytes, or the name cannot have one.
    Missing,
    /// Unreadable, not JSON, or not an object.
    Unreadable,
}

impl FilterState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Missing => "missing",
            Self::Unreadable => "unreadable",
        }
    }
}

/// One object entry of `.topics`: raw topic, whether it is a claim, and the note already folded and cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topic {
    pub topic: Option<String>,
    pub claim: bool,
    pub note: Option<String>,
}

/// A session's claims as its filter file states them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub filter: FilterState,
    /// False for a missing or unreadable filter and for `.enabled == false`.
    pub enabled: bool,
    /// Empty unless enabled: a disabled filter claims nothing and listens to nothing.
    pub topics: Vec<Topic>,
}

impl Claims {
    fn without(filter: FilterState) -> Self {
        Self { filter, enabled: false, topics: Vec::new() }
    }
}

/// Reads the claims of live session `name`.
pub fn read(paths: &Paths, name: &str) -> Claims {
    let Ok(name) = SessionName::parse(name) else { return Claims::without(FilterState::Missing) };
    match std::fs::read(paths.filter_file(&name)) {
        Ok(bytes) if bytes.is_empty() => Claims::without(FilterState::Missing),
        Ok(bytes) => parse(&bytes),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Claims::without(FilterState::Missing),
        Err(_) => Claims::without(FilterState::Unreadable),
    }
}

/// The claims of a non-empty filter file's bytes.
pub fn parse(bytes: &[u8]) -> Claims {
    let Ok(Value::Object(filter)) = serde_json::from_slice::<Value>(bytes) else {
        return Claims::without(FilterState::Unreadable);
    };
    let enabled = filter.get("enabled") != Some(&Value::Bool(false));
    let topics = if enabled { topics_of(&filter) } else { Vec::new() };
    Claims { filter: FilterState::Ok, enabled, topics }
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
        (FilterState::Missing, _) => {
            nothing("no subscription file, so an event on its work spawns a session beside it")
        }
        (FilterState::Unreadable, _) => nothing("its filter file is unreadable"),
        (FilterState::Ok, false) => nothing("its subscriptions are switched off"),
        (FilterState::Ok, true) if claims.topics.is_empty() => nothing("subscribed to no topic"),
        (FilterState::Ok, true) => claims.topics.iter().map(topic_line).collect(),
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

/// `claims` as §12.3 shapes it.
pub fn to_json(claims: &Claims) -> Value {
    let topics = claims
        .topics
        .iter()
        .map(|t| {
            let mut map = Map::new();
            map.insert("topic".into(), t.topic.clone().map_or(Value::Null, Value::from));
            map.insert("claim".into(), t.claim.into());
            map.insert("note".into(), t.note.clone().map_or(Value::Null, Value::from));
            Value::Object(map)
        })
        .collect();
    let mut map = Map::new();
    map.insert("filter".into(), claims.filter.as_str().into());
    map.insert("enabled".into(), claims.enabled.into());
    map.insert("topics".into(), Value::Array(topics));
    Value::Object(map)
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
            lines(&Claims::without(FilterState::Missing)),
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
        let json = to_json(&claims);
        assert_eq!(json["topics"][0]["topic"], "t\u{1b}", "JSON carries the raw topic");
        assert_eq!(json["filter"], "ok");
        assert_eq!(json["enabled"], true);
    }

    #[test]
    fn names_failing_the_charset_have_no_filter() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::for_root(dir.path(), "agent");
        std::fs::create_dir_all(paths.webhook_state_dir().join("filter.agent-x")).unwrap();
        std::fs::write(paths.webhook_state_dir().join("filter.agent-x/y.json"), r#"{"topics":[{"topic":"leak"}]}"#)
            .unwrap();
        assert_eq!(read(&paths, "x/y"), Claims::without(FilterState::Missing));
        std::fs::write(paths.webhook_state_dir().join("filter.agent-e.json"), "").unwrap();
        assert_eq!(read(&paths, "e"), Claims::without(FilterState::Missing), "0 bytes reads as absent");
    }
}
