//! The receiver's claim predicates (60-webhook-spawn §6.3), evaluated against what a queued record knows of its
//! newest event: META's event kind, number, sha and branch (docs/intake.md IN-14). The receiver evaluates them
//! against the whole payload; the queue has only META, so a document of the payload's shape is built from it, and
//! a predicate that needs anything else does not match (a missed claim starts a session beside the owner, which
//! its prompt tells it to check; a false claim would drop the work).

use serde_json::{Map, Value, json};

use crate::claim::Meta;

/// Whether `predicate` holds for `event`. Forms: `{"any":[…]}`, `{"all":[…]}`, and `{"path":P, OP:[…]}` with OP
/// `in`, `notIn` or `contains`; any other form holds for nothing.
pub fn holds(predicate: &Value, event: &Value) -> bool {
    let Some(map) = predicate.as_object() else { return false };
    if let Some(any) = map.get("any") {
        return any.as_array().is_some_and(|items| items.iter().any(|p| holds(p, event)));
    }
    if let Some(all) = map.get("all") {
        return all.as_array().is_some_and(|items| items.iter().all(|p| holds(p, event)));
    }
    let Some(path) = map.get("path").and_then(Value::as_str) else { return false };
    let value = lookup(event, path);
    if let Some(list) = map.get("in").and_then(Value::as_array) {
        return value.is_some_and(|v| list.contains(v));
    }
    if let Some(list) = map.get("notIn").and_then(Value::as_array) {
        return !list.contains(value.unwrap_or(&Value::Null));
    }
    if let Some(list) = map.get("contains").and_then(Value::as_array) {
        return match value {
            Some(Value::String(text)) => list.iter().filter_map(Value::as_str).any(|part| text.contains(part)),
            Some(Value::Array(items)) => list.iter().any(|part| items.contains(part)),
            _ => false,
        };
    }
    false
}

fn lookup<'a>(event: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(event, |value, part| value.as_object()?.get(part)).filter(|v| !v.is_null())
}

/// The event document META stands for: the fields of its number, sha and branch where an event of its kind
/// carries them. Without a known kind, only the issue and pull request numbers and a top-level sha.
pub fn event_document(meta: &Meta, env_event: &str) -> Value {
    let kind = meta.event.as_deref().unwrap_or(env_event);
    let number = meta.number.map(Value::from);
    let sha = meta.sha.clone().map(Value::from);
    let branch = meta.branch.clone().map(Value::from);
    let object = |pairs: &[(&str, &Option<Value>)]| {
        let map: Map<String, Value> =
            pairs.iter().filter_map(|(k, v)| (*v).clone().map(|v| ((*k).to_owned(), v))).collect();
        Value::Object(map)
    };
    let ci = || object(&[("head_sha", &sha), ("head_branch", &branch)]);
    match kind {
        "issues" | "issue_comment" => json!({"issue": object(&[("number", &number)])}),
        "pull_request" | "pull_request_review" | "pull_request_review_comment" | "pull_request_target" => {
            json!({"pull_request": object(&[("number", &number)])})
        }
        "workflow_run" => json!({"workflow_run": ci()}),
        "workflow_job" => json!({"workflow_job": ci()}),
        "check_suite" => json!({"check_suite": ci()}),
        "check_run" => {
            json!({"check_run": {"head_sha": sha, "check_suite": object(&[("head_branch", &branch)])}})
        }
        "deployment" | "deployment_status" => json!({"deployment": object(&[("sha", &sha)])}),
        _ => {
            let mut map = Map::new();
            if let Some(number) = &number {
                map.insert("issue".into(), json!({"number": number}));
                map.insert("pull_request".into(), json!({"number": number}));
            }
            if let Some(sha) = &sha {
                map.insert("sha".into(), sha.clone());
            }
            Value::Object(map)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::{parse_meta, predicate};

    fn event(meta: &str, env_event: &str) -> Value {
        event_document(&parse_meta(Some(meta)).unwrap(), env_event)
    }

    #[test]
    fn our_own_claims_hold_for_their_object_only() {
        let number = predicate(parse_meta(Some(r#"{"number":42}"#)).as_ref()).unwrap();
        assert!(holds(&number, &event(r#"{"event":"issues","number":42}"#, "")));
        assert!(holds(&number, &event(r#"{"number":"42"}"#, "pull_request")));
        assert!(!holds(&number, &event(r#"{"event":"issues","number":43}"#, "")));
        let sha = predicate(parse_meta(Some(r#"{"sha":"da73cb12"}"#)).as_ref()).unwrap();
        assert!(holds(&sha, &event(r#"{"event":"check_run","sha":"da73cb12"}"#, "")));
        assert!(holds(&sha, &event(r#"{"sha":"da73cb12"}"#, "workflow_run")));
        assert!(!holds(&sha, &event(r#"{"event":"check_run","sha":"da73cb13"}"#, "")));
        let branches = predicate(parse_meta(Some("{}")).as_ref()).unwrap();
        assert!(holds(&branches, &event(r#"{"event":"workflow_run","branch":"fix/login"}"#, "")));
        assert!(!holds(&branches, &event(r#"{"event":"workflow_run","branch":"main"}"#, "")));
        assert!(!holds(&branches, &event(r#"{"event":"issues","number":1}"#, "")), "no CI object in an issue event");
    }

    #[test]
    fn unknown_forms_hold_for_nothing() {
        let doc = json!({"a": {"b": 1}, "s": "x/y"});
        assert!(holds(&json!({"path": "a.b", "in": [1]}), &doc));
        assert!(holds(&json!({"path": "a.c", "notIn": [1]}), &doc));
        assert!(!holds(&json!({"path": "a.c", "notIn": [null]}), &doc), "an absent path reads as null");
        assert!(holds(&json!({"path": "s", "contains": ["/"]}), &doc));
        assert!(holds(&json!({"all": []}), &doc) && !holds(&json!({"any": []}), &doc));
        for odd in
            [json!({"path": "a.b", "regex": ".*"}), json!({"any": 1}), json!(true), json!({"path": 3, "in": [1]})]
        {
            assert!(!holds(&odd, &doc), "{odd}");
        }
    }
}
