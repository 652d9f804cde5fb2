//! The claim seed (60-webhook-spawn §6): META's fields, the predicate in the receiver's language and the note of
//! the filter document (`agent_box_types::filter::FilterSeed`) that makes the dispatcher route matching events to
//! this session.

use serde_json::{Value, json};

use crate::prose::prose;

/// META larger than this is not read (§6.2).
pub const META_LIMIT: usize = 64 * 1024;

/// What META says, after the validity tests of §6.2.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    /// The canonical number (no leading zeros), when valid.
    pub number: Option<u64>,
    /// The sha, when valid.
    pub sha: Option<String>,
    pub event: Option<String>,
    pub action: Option<String>,
    pub branch: Option<String>,
}

/// META unset or empty reads as `{}`; anything over 64 KiB, not JSON, or not an object is `None` (unusable).
pub fn parse_meta(raw: Option<&str>) -> Option<Meta> {
    let raw = raw.filter(|r| !r.is_empty()).unwrap_or("{}");
    if raw.len() > META_LIMIT {
        return None;
    }
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(raw) else { return None };
    let text = |key: &str| map.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    Some(Meta {
        number: map.get("number").and_then(number),
        sha: map.get("sha").and_then(Value::as_str).filter(|s| is_sha(s)).map(str::to_owned),
        event: text("event"),
        action: text("action"),
        branch: text("branch"),
    })
}

/// A string of 1–18 ASCII digits or a non-negative integer below 10^18.
fn number(value: &Value) -> Option<u64> {
    const BOUND: u64 = 1_000_000_000_000_000_000;
    match value {
        Value::String(s) if (1..=18).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
        Value::Number(n) => n.as_u64().filter(|v| *v < BOUND),
        _ => None,
    }
}

fn is_sha(text: &str) -> bool {
    (7..=40).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

const SHA_PATHS: [&str; 6] = [
    "workflow_run.head_sha",
    "workflow_job.head_sha",
    "check_run.head_sha",
    "check_suite.head_sha",
    "deployment.sha",
    "sha",
];

/// §6.3: number, else sha, else the topic-branch fallback; `None` when META is unusable.
pub fn predicate(meta: Option<&Meta>) -> Option<Value> {
    let meta = meta?;
    if let Some(n) = meta.number {
        return Some(json!({"any": [{"path": "issue.number", "in": [n]}, {"path": "pull_request.number", "in": [n]}]}));
    }
    if let Some(sha) = &meta.sha {
        let any: Vec<Value> = SHA_PATHS.iter().map(|p| json!({"path": p, "in": [sha]})).collect();
        return Some(json!({"any": any}));
    }
    Some(json!({"all": [
        {"any": [
            {"path": "workflow_run", "notIn": [null]},
            {"path": "check_run", "notIn": [null]},
            {"path": "check_suite", "notIn": [null]},
            {"path": "workflow_job", "notIn": [null]}
        ]},
        {"any": [
            {"path": "workflow_run.head_branch", "contains": ["/"]},
            {"path": "workflow_job.head_branch", "contains": ["/"]},
            {"path": "check_suite.head_branch", "contains": ["/"]},
            {"path": "check_run.check_suite.head_branch", "contains": ["/"]}
        ]}
    ]}))
}

/// §6.4; `key` and `own` are already in prose form, `env_event` is `LOCAL_WEBHOOK_SPAWN_EVENT`.
pub fn note(meta: Option<&Meta>, key: &str, own: &str, env_event: &str) -> String {
    let Some(meta) = meta else {
        return format!(
            "seeded at spawn: started for an event on {own}; nothing is claimed, so matching events may start other sessions"
        );
    };
    let event = meta.event.clone().or_else(|| Some(env_event.to_owned()).filter(|e| !e.is_empty()));
    let what = match (event.map(|e| prose(&e, 64)), meta.action.as_deref().map(|a| prose(a, 64))) {
        (Some(event), Some(action)) => format!(" ({event}.{action})"),
        (Some(event), None) => format!(" ({event})"),
        (None, _) => String::new(),
    };
    if let Some(n) = meta.number {
        return format!(
            "seeded at spawn: started for {key}#{n}{what}; this session claims the events of that issue or pull request while it lives"
        );
    }
    if let Some(sha) = &meta.sha {
        let short: String = sha.chars().take(8).collect();
        let on = meta.branch.as_deref().map(|b| format!(" on {}", prose(b, 1000))).unwrap_or_default();
        return format!(
            "seeded at spawn: started for {key}@{short}{on}{what}; this session claims every CI outcome reported for THAT COMMIT, and a run on another commit gets its own session"
        );
    }
    format!(
        "seeded at spawn: started for {key}{what}; this session claims the repository's CI outcomes on TOPIC BRANCHES (never the default branch or a tag)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(raw: &str) -> Option<Meta> {
        parse_meta(Some(raw))
    }

    #[test]
    fn number_rules() {
        assert_eq!(meta(r#"{"number":"4242"}"#).unwrap().number, Some(4242));
        assert_eq!(meta(r#"{"number":4242}"#).unwrap().number, Some(4242));
        assert_eq!(meta(r#"{"number":"007"}"#).unwrap().number, Some(7));
        for bad in [
            r#"{"number":"n/a"}"#,
            r#"{"number":"1234567890123456789"}"#,
            r#"{"number":-1}"#,
            r#"{"number":true}"#,
            r#"{"number":1000000000000000000}"#,
            r#"{"number":""}"#,
            r#"{"number":1.5}"#,
        ] {
            assert_eq!(meta(bad).unwrap().number, None, "{bad}");
        }
    }

    #[test]
    fn sha_rules() {
        assert!(meta(r#"{"sha":"da73cb12"}"#).unwrap().sha.is_some());
        for bad in [r#"{"sha":"HEAD"}"#, r#"{"sha":"DA73CB12"}"#, r#"{"sha":"abc"}"#, r#"{"sha":7}"#] {
            assert_eq!(meta(bad).unwrap().sha, None, "{bad}");
        }
    }

    #[test]
    fn unusable_meta() {
        assert!(parse_meta(None).is_some() && parse_meta(Some("")).is_some());
        for bad in ["not json", "[1]", "\"x\"", "3"] {
            assert!(parse_meta(Some(bad)).is_none(), "{bad}");
        }
        let huge = format!("{{\"x\":\"{}\"}}", "a".repeat(META_LIMIT));
        assert!(parse_meta(Some(&huge)).is_none());
    }

    // 60-webhook-spawn §6.2: META up to 64 KiB is read; only a larger one is unusable.
    #[test]
    fn meta_of_up_to_64_kib_is_read() {
        let padded = |len: usize| format!("{{\"number\":7,\"x\":\"{}\"}}", "a".repeat(len - 19));
        let exact = padded(64 * 1024);
        assert_eq!(exact.len(), 64 * 1024);
        assert_eq!(parse_meta(Some(&exact)).and_then(|m| m.number), Some(7));
        assert_eq!(parse_meta(Some(&padded(64 * 1024 + 1))), None);
    }

    #[test]
    fn predicate_shapes() {
        let number = predicate(meta(r#"{"number":"4242","sha":"da73cb12"}"#).as_ref()).unwrap();
        assert_eq!(
            number,
            json!({"any":[{"path":"issue.number","in":[4242]},{"path":"pull_request.number","in":[4242]}]})
        );
        let sha = predicate(meta(r#"{"sha":"da73cb12"}"#).as_ref()).unwrap();
        let paths: Vec<&str> = sha["any"].as_array().unwrap().iter().map(|c| c["path"].as_str().unwrap()).collect();
        assert_eq!(paths, SHA_PATHS);
        assert!(sha.get("all").is_none());
        let fallback = predicate(meta("{}").as_ref()).unwrap();
        assert_eq!(fallback["all"][1]["any"][3]["path"], "check_run.check_suite.head_branch");
        assert_eq!(predicate(None), None);
    }

    #[test]
    fn notes_follow_the_claim() {
        let n = note(
            meta(r#"{"event":"issues","action":"assigned","number":"4242"}"#).as_ref(),
            "acme/numbered",
            "github:acme/numbered",
            "",
        );
        assert!(n.starts_with("seeded at spawn: started for acme/numbered#4242 (issues.assigned);"));
        let s = note(meta(r#"{"sha":"da73cb1234","branch":"master"}"#).as_ref(), "acme/shaclaim", "x", "check_run");
        assert_eq!(
            s,
            "seeded at spawn: started for acme/shaclaim@da73cb12 on master (check_run); this session claims every CI outcome reported for THAT COMMIT, and a run on another commit gets its own session"
        );
        let f = note(meta(r#"{"number":"n/a"}"#).as_ref(), "k", "x", "");
        assert!(f.contains("TOPIC BRANCHES") && !f.contains('#'));
        let u = note(None, "k", "github:k", "");
        assert!(u.starts_with("seeded at spawn: started for an event on github:k;"));
    }
}
