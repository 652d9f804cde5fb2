//! The sessions.json document: strict validity, order-preserving edits, typed views over raw entries.

use serde_json::{Map, Value};

use crate::error::RegistryError;
use base::id::is_uuid;
use base::name::SessionName;

/// Exact bytes of the empty registry (RG-4.3).
pub const EMPTY_DOCUMENT: &[u8] = b"{\"version\":1,\"sessions\":{}}\n";

/// A valid registry: a JSON object whose `sessions` is an object; everything else kept as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    root: Map<String, Value>,
}

impl Document {
    /// Applies RG-6.3: UTF-8, exactly one JSON value, an object, with a `sessions` object.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
        let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let Value::Object(root) = value else {
            return Err("the top level is not a JSON object".into());
        };
        match root.get("sessions") {
            Some(Value::Object(_)) => Ok(Self { root }),
            Some(_) => Err("\"sessions\" is not an object".into()),
            None => Err("there is no \"sessions\" object".into()),
        }
    }

    /// `{"version":1,"sessions":{}}`.
    pub fn empty() -> Self {
        let mut root = Map::new();
        root.insert("version".into(), Value::from(1));
        root.insert("sessions".into(), Value::Object(Map::new()));
        Self { root }
    }

    /// Pretty JSON with two-space indent and a trailing newline; the empty document compact (RG-4.3).
    pub fn to_bytes(&self) -> Vec<u8> {
        if *self == Self::empty() && self.root.keys().eq(["version", "sessions"]) {
            return EMPTY_DOCUMENT.to_vec();
        }
        let mut bytes = serde_json::to_vec_pretty(&self.root).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// The `version` value as read, if any.
    pub fn version(&self) -> Option<&Value> {
        self.root.get("version")
    }

    /// The raw `sessions` object.
    pub fn sessions(&self) -> &Map<String, Value> {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        match self.root.get("sessions") {
            Some(Value::Object(map)) => map,
            _ => EMPTY.get_or_init(Map::new),
        }
    }

    fn sessions_mut(&mut self) -> Option<&mut Map<String, Value>> {
        self.root.get_mut("sessions").and_then(Value::as_object_mut)
    }

    /// Every key of `sessions`, in file order, valid or not.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.sessions().keys().map(String::as_str)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.sessions().contains_key(name)
    }

    /// The entry at `name` when it is an object.
    pub fn entry(&self, name: &str) -> Option<Entry<'_>> {
        self.sessions().get(name).and_then(Value::as_object).map(|map| Entry { map })
    }

    /// Update-only access: `None` when the entry is gone or not an object, never a stub (RG-9.2).
    pub fn entry_mut(&mut self, name: &SessionName) -> Option<EntryMut<'_>> {
        self.sessions_mut()?.get_mut(name.as_str()).and_then(Value::as_object_mut).map(|map| EntryMut { map })
    }

    /// Adds a new entry at the end; an existing key is `Exists`.
    pub fn insert_new(&mut self, name: &SessionName, entry: Map<String, Value>) -> Result<(), RegistryError> {
        let sessions = self.sessions_mut().ok_or_else(|| RegistryError::Exists(name.to_string()))?;
        if sessions.contains_key(name.as_str()) {
            return Err(RegistryError::Exists(name.to_string()));
        }
        sessions.insert(name.to_string(), Value::Object(entry));
        Ok(())
    }

    /// Deletes an entry, keeping the order of the others; true when it existed.
    pub fn remove(&mut self, name: &SessionName) -> bool {
        self.sessions_mut().is_some_and(|s| s.shift_remove(name.as_str()).is_some())
    }
}

/// Why an entry field cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    #[error("extraArgs is not an array of strings")]
    ExtraArgsShape,
}

/// Read-only typed view of one entry; reading never changes the raw value (RG-3.2).
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Entry<'a> {
    /// Wraps a raw entry object (for callers that hold one outside a document).
    pub fn of(map: &'a Map<String, Value>) -> Self {
        Self { map }
    }
    pub fn raw(&self) -> &'a Map<String, Value> {
        self.map
    }
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }
    fn non_empty_str(&self, key: &str) -> Option<&'a str> {
        self.map.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
    }
    /// The harness name when it is a string.
    pub fn agent(&self) -> Option<&'a str> {
        self.map.get("agent").and_then(Value::as_str)
    }
    /// Only JSON `true` parks an entry.
    pub fn stopped(&self) -> bool {
        self.map.get("stopped") == Some(&Value::Bool(true))
    }
    /// The `died` value when present and not null (any type).
    pub fn died(&self) -> Option<&'a Value> {
        self.map.get("died").filter(|v| !v.is_null())
    }
    pub fn ephemeral(&self) -> bool {
        self.map.get("ephemeral") == Some(&Value::Bool(true))
    }
    pub fn has_run(&self) -> bool {
        self.map.get("hasRun") == Some(&Value::Bool(true))
    }
    /// Anything except literal `false` means true.
    pub fn skip_permissions(&self) -> bool {
        self.map.get("skipPermissions") != Some(&Value::Bool(false))
    }
    /// Anything except literal `false` means true.
    pub fn remote_control(&self) -> bool {
        self.map.get("remoteControl") != Some(&Value::Bool(false))
    }
    pub fn remote_control_name(&self) -> Option<&'a str> {
        self.non_empty_str("remoteControlName")
    }
    /// The raw `workingDirectory` when it is a non-empty string (`None` means `$HOME`).
    pub fn working_directory(&self) -> Option<&'a str> {
        self.non_empty_str("workingDirectory")
    }
    /// Absent or null is empty; any other shape is an error that keeps the entry from launching.
    pub fn extra_args(&self) -> Result<Vec<String>, FieldError> {
        match self.map.get("extraArgs") {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => {
                items.iter().map(|v| v.as_str().map(str::to_owned).ok_or(FieldError::ExtraArgsShape)).collect()
            }
            Some(_) => Err(FieldError::ExtraArgsShape),
        }
    }
    /// A usable profile name (`[A-Za-z0-9_-]+`), else none.
    pub fn profile(&self) -> Option<&'a str> {
        self.non_empty_str("profile").filter(|p| p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
    }
    pub fn initial_prompt(&self) -> Option<&'a str> {
        self.map.get("initialPrompt").and_then(Value::as_str)
    }
    pub fn resume_prompt(&self) -> Option<&'a str> {
        self.map.get("resumePrompt").and_then(Value::as_str)
    }
    /// The mirror `boxSessionId`, only when UUID-shaped.
    pub fn box_session_id(&self) -> Option<&'a str> {
        self.map.get("boxSessionId").and_then(Value::as_str).filter(|s| is_uuid(s))
    }
    pub fn origin(&self) -> Option<&'a str> {
        self.map.get("origin").and_then(Value::as_str)
    }
    /// The life token (issue 17), only when UUID-shaped: which life of this name the entry is. Writers that hand
    /// out none (the settings daemon, the old implementation) leave it absent; the supervisor then gives one.
    pub fn life(&self) -> Option<&'a str> {
        self.map.get(LIFE_KEY).and_then(Value::as_str).filter(|s| is_uuid(s))
    }
}

/// The entry key of the life token (issue 17).
pub const LIFE_KEY: &str = "life";

/// Update-only mutable view: existing keys change in place, new keys are appended (RG-4.2).
#[derive(Debug)]
pub struct EntryMut<'a> {
    map: &'a mut Map<String, Value>,
}

impl<'a> EntryMut<'a> {
    /// Wraps a raw entry object held outside a document (the epilogue's one-entry edit, `splice`).
    pub fn of(map: &'a mut Map<String, Value>) -> Self {
        Self { map }
    }
    pub fn view(&self) -> Entry<'_> {
        Entry { map: self.map }
    }
    /// Sets `key`; true when the value changed.
    pub fn set(&mut self, key: &str, value: Value) -> bool {
        if self.map.get(key) == Some(&value) {
            return false;
        }
        self.map.insert(key.to_owned(), value);
        true
    }
    /// Deletes `key`, keeping the order of the rest; true when it existed.
    pub fn remove_key(&mut self, key: &str) -> bool {
        self.map.shift_remove(key).is_some()
    }
}

/// A new entry as `add` and webhook-spawn write it (50-session-cli §8.5): the fields are its keys, in the
/// documented order, so each key is written once, here. [`NewEntry::new`] gives the defaults; callers change
/// the fields they decide with struct update syntax.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewEntry<'a> {
    pub agent: &'a str,
    pub skip_permissions: bool,
    pub remote_control: bool,
    pub whatsapp: bool,
    pub remote_control_name: Option<&'a str>,
    pub working_directory: Option<&'a str>,
    pub extra_args: &'a [String],
    pub profile: Option<&'a str>,
    pub initial_prompt: Option<&'a str>,
    pub resume_prompt: Option<&'a str>,
    pub box_session_id: &'a str,
    pub has_run: bool,
    pub origin: &'a str,
    pub created_at: i64,
    /// Set through [`NewEntry::with_hook`], which leaves it out unless both parts are non-empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook: Option<Hook<'a>>,
    /// Written only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ephemeral: bool,
    /// The life token ([`LIFE_KEY`]): webhook-spawn's lease gen, `add`'s fresh UUID (issue 17).
    pub life: &'a str,
}

/// The `hook` object of an entry a webhook (or `add --hook`) created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Hook<'a> {
    pub source: &'a str,
    pub repository: &'a str,
}

impl<'a> NewEntry<'a> {
    /// The defaults of §8.5 for `agent`, with what every entry must be given: its launch id, origin, creation
    /// time and life token.
    pub fn new(agent: &'a str, box_session_id: &'a str, origin: &'a str, created_at: i64, life: &'a str) -> Self {
        Self {
            agent,
            skip_permissions: true,
            remote_control: default_remote_control(agent),
            whatsapp: false,
            remote_control_name: None,
            working_directory: None,
            extra_args: &[],
            profile: None,
            initial_prompt: None,
            resume_prompt: None,
            box_session_id,
            has_run: false,
            origin,
            created_at,
            hook: None,
            ephemeral: false,
            life,
        }
    }

    /// The entry with `hook` set to `(source, repository)` when both are non-empty, else without one.
    pub fn with_hook(self, hook: Option<(&'a str, &'a str)>) -> Self {
        let hook = hook.filter(|(s, r)| !s.is_empty() && !r.is_empty());
        Self { hook: hook.map(|(source, repository)| Hook { source, repository }), ..self }
    }
}

/// The default of `remoteControl` for a harness: codex runs remote control through a separate wrapper.
pub fn default_remote_control(agent: &str) -> bool {
    agent != "codex"
}

/// The entry's object, keys in the order of [`NewEntry`]'s fields.
pub fn new_entry(spec: &NewEntry<'_>) -> Map<String, Value> {
    match serde_json::to_value(spec) {
        Ok(Value::Object(map)) => map,
        // A struct of strings, booleans, numbers and options always serialises to an object: serde_json fails
        // only on non-string map keys and on a Serialize impl that reports an error, and NewEntry has neither.
        other => unreachable!("a new entry serialised to {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    /// Fuzz finding (registry_validate, corpus `finding-float-roundtrip`): without serde_json's exact float
    /// parsing, a number like this one came back one unit in the last place off after a rewrite, so every Rust
    /// writer would have changed a value it never touched (OV-10.4).
    #[test]
    fn a_float_keeps_its_exact_value_through_a_rewrite() {
        let bytes = br#"{"version":1,"sessions":{"s1":198818.75152792604,"s4":218148051038365949508}}"#;
        let doc = Document::parse(bytes).unwrap();
        assert_eq!(Document::parse(&doc.to_bytes()).unwrap(), doc);
    }

    use super::*;

    fn parse(text: &str) -> Result<Document, String> {
        Document::parse(text.as_bytes())
    }

    #[test]
    fn validity_rules_of_rg_6_3() {
        for bad in [
            "{}",
            "{\"sessions\":[]}",
            "[]",
            "{\"sessions\":{}} {}",
            "{\"sessions\":{}}x",
            "not json",
            "",
            "\u{feff}{\"sessions\":{}}",
            "{\"sessions\":{}}\n{\"sessions\":{}}",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert!(Document::parse(b"{\"sessions\":{\"a\":\"\xff\"}}").is_err());
        assert!(parse("{\"sessions\":{}} \n\t\r\n").is_ok());
        assert!(parse("{\"version\":\"x\",\"sessions\":{}}").is_ok(), "version is not checked here");
    }

    #[test]
    fn order_and_unknown_fields_survive_an_edit() {
        let text = r#"{"z":1,"sessions":{"b":{"q":[1,{"y":2,"x":3}],"agent":"tool","zz":null},"a":3},"version":1,"m":{"k":"é"}}"#;
        let mut doc = parse(text).unwrap();
        let b = SessionName::parse("b").unwrap();
        assert!(doc.entry_mut(&b).unwrap().set("stopped", Value::Bool(true)));
        assert!(doc.entry_mut(&b).unwrap().set("agent", Value::from("claude")));
        let again = Document::parse(&doc.to_bytes()).unwrap();
        let keys: Vec<_> = again.root.keys().cloned().collect();
        assert_eq!(keys, ["z", "sessions", "version", "m"]);
        let entry_keys: Vec<_> = again.entry("b").unwrap().raw().keys().cloned().collect();
        assert_eq!(entry_keys, ["q", "agent", "zz", "stopped"]);
        assert_eq!(again.entry("b").unwrap().raw()["q"], serde_json::json!([1, {"y": 2, "x": 3}]));
        assert_eq!(again.names().collect::<Vec<_>>(), ["b", "a"]);
        assert!(String::from_utf8(doc.to_bytes()).unwrap().contains("\"k\": \"é\""), "non-ASCII stays UTF-8");
    }

    #[test]
    fn pretty_output_shape_and_compact_empty_document() {
        assert_eq!(Document::empty().to_bytes(), EMPTY_DOCUMENT);
        let doc = parse("{\"version\":1,\"sessions\":{\"a\":{\"n\":[]}}}").unwrap();
        let text = String::from_utf8(doc.to_bytes()).unwrap();
        assert_eq!(text, "{\n  \"version\": 1,\n  \"sessions\": {\n    \"a\": {\n      \"n\": []\n    }\n  }\n}\n");
    }

    #[test]
    fn removal_keeps_the_order_of_the_rest() {
        let mut doc = parse(r#"{"sessions":{"a":{},"b":{},"c":{},"d":{}}}"#).unwrap();
        assert!(doc.remove(&SessionName::parse("b").unwrap()));
        assert!(!doc.remove(&SessionName::parse("b").unwrap()));
        assert_eq!(doc.names().collect::<Vec<_>>(), ["a", "c", "d"]);
    }

    #[test]
    fn duplicate_keys_collapse_to_the_last_value() {
        let doc = parse(r#"{"sessions":{"a":{"agent":"x","agent":"y"}},"sessions":{"a":{"agent":"z"}}}"#).unwrap();
        assert_eq!(doc.entry("a").unwrap().agent(), Some("z"));
        let inner = parse(r#"{"sessions":{"a":{"agent":"x","agent":"y"}}}"#).unwrap();
        assert_eq!(inner.entry("a").unwrap().agent(), Some("y"));
        assert_eq!(inner.entry("a").unwrap().raw().len(), 1);
    }

    #[test]
    fn big_integers_round_trip_exactly() {
        let doc = parse(r#"{"sessions":{},"n":18446744073709551615,"m":-9223372036854775808}"#).unwrap();
        let text = String::from_utf8(doc.to_bytes()).unwrap();
        assert!(text.contains("18446744073709551615") && text.contains("-9223372036854775808"));
    }

    #[test]
    fn reading_rules_of_rg_3_2() {
        let doc = parse(
            r#"{"sessions":{"e":{"agent":7,"stopped":"true","died":null,"ephemeral":1,"skipPermissions":0,
            "remoteControl":false,"extraArgs":"rm -rf /","profile":"a/b","boxSessionId":"nope","workingDirectory":""},
            "n":3, "d":{"died":"x","extraArgs":null,"stopped":true,"profile":"p-1"}}}"#,
        )
        .unwrap();
        let e = doc.entry("e").unwrap();
        assert_eq!(e.agent(), None);
        assert!(!e.stopped() && e.died().is_none() && !e.ephemeral());
        assert!(e.skip_permissions() && !e.remote_control());
        assert_eq!(e.extra_args(), Err(FieldError::ExtraArgsShape));
        assert_eq!((e.profile(), e.box_session_id(), e.working_directory()), (None, None, None));
        assert!(doc.entry("n").is_none(), "non-object entries have no view");
        let d = doc.entry("d").unwrap();
        assert_eq!(d.died(), Some(&Value::from("x")));
        assert_eq!(d.extra_args(), Ok(vec![]));
        assert!(d.stopped());
        assert_eq!(d.profile(), Some("p-1"));
    }

    #[test]
    fn update_only_edits_never_create_stubs() {
        let mut doc = parse(r#"{"sessions":{"n":3}}"#).unwrap();
        assert!(doc.entry_mut(&SessionName::parse("gone").unwrap()).is_none());
        assert!(doc.entry_mut(&SessionName::parse("n").unwrap()).is_none());
        assert_eq!(doc.sessions().len(), 1);
        let name = SessionName::parse("n").unwrap();
        assert!(matches!(doc.insert_new(&name, Map::new()), Err(RegistryError::Exists(_))));
    }

    #[test]
    fn set_reports_no_change_for_equal_values() {
        let mut doc = parse(r#"{"sessions":{"a":{"stopped":true}}}"#).unwrap();
        let name = SessionName::parse("a").unwrap();
        let mut entry = doc.entry_mut(&name).unwrap();
        assert!(!entry.set("stopped", Value::Bool(true)));
        assert!(entry.remove_key("stopped"));
        assert!(!entry.remove_key("stopped"));
    }

    #[test]
    fn new_entry_has_the_documented_keys_in_order() {
        let args = vec!["--model".to_string(), "sonnet".to_string()];
        let life = "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f";
        let entry = new_entry(
            &NewEntry {
                working_directory: Some("/home/agent/notes"),
                extra_args: &args,
                initial_prompt: Some("tidy up"),
                ephemeral: true,
                ..NewEntry::new("claude", "0f6c2a9e-3b1d-4c57-9a0e-5d2f8b7c1e43", "webhook", 1_795_944_123, life)
            }
            .with_hook(Some(("github", "acme/widgets"))),
        );
        let keys: Vec<_> = entry.keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "agent",
                "skipPermissions",
                "remoteControl",
                "whatsapp",
                "remoteControlName",
                "workingDirectory",
                "extraArgs",
                "profile",
                "initialPrompt",
                "resumePrompt",
                "boxSessionId",
                "hasRun",
                "origin",
                "createdAt",
                "hook",
                "ephemeral",
                "life"
            ]
        );
        assert_eq!(entry["hook"], serde_json::json!({"source": "github", "repository": "acme/widgets"}));
        assert_eq!(
            (&entry["skipPermissions"], &entry["remoteControl"], &entry["whatsapp"], &entry["hasRun"]),
            (&Value::Bool(true), &Value::Bool(true), &Value::Bool(false), &Value::Bool(false))
        );
        assert_eq!((&entry["remoteControlName"], &entry["profile"]), (&Value::Null, &Value::Null));
        assert_eq!(entry["createdAt"], Value::from(1_795_944_123));
        assert!(!default_remote_control("codex"));
        assert!(!NewEntry::new("codex", "x", "user", 0, life).remote_control);
        let plain = new_entry(
            &NewEntry { resume_prompt: Some(""), ..NewEntry::new("tool", "x", "user", 0, life) }
                .with_hook(Some(("github", ""))),
        );
        assert!(!plain.contains_key("hook") && !plain.contains_key("ephemeral"));
        assert_eq!(plain["resumePrompt"], Value::from(""));
        assert_eq!(plain["workingDirectory"], Value::Null);
        assert_eq!(plain["extraArgs"], serde_json::json!([]));
    }

    #[test]
    fn only_json_true_makes_an_entry_ephemeral_or_launched() {
        use serde_json::json;
        let flags = |value: Value| {
            let entry = value.as_object().cloned().unwrap();
            (Entry::of(&entry).ephemeral(), Entry::of(&entry).has_run())
        };
        assert_eq!(flags(json!({"ephemeral": true, "hasRun": true})), (true, true));
        assert_eq!(flags(json!({"ephemeral": true})), (true, false));
        assert_eq!(flags(json!({"hasRun": true})), (false, true));
        assert_eq!(flags(json!({"ephemeral": "true", "hasRun": 1})), (false, false));
        assert_eq!(flags(json!({})), (false, false));
    }

    /// Each typed view reads its key as the launch needs it: strings only when non-empty (or any string for the
    /// prompts), the two opt-outs true unless literally false.
    #[test]
    fn entry_views_read_their_keys() {
        use serde_json::json;
        let full = json!({
            "skipPermissions": false, "remoteControl": false, "remoteControlName": "rc",
            "workingDirectory": "src", "initialPrompt": "go", "resumePrompt": "again",
            "boxSessionId": "11111111-2222-4333-8444-555555555555", "origin": "webhook",
            "life": "66666666-7777-4888-9999-aaaaaaaaaaaa", "profile": "p_1-x",
        });
        let full = full.as_object().cloned().unwrap();
        let entry = Entry::of(&full);
        assert!(!entry.skip_permissions() && !entry.remote_control());
        assert_eq!((entry.remote_control_name(), entry.working_directory()), (Some("rc"), Some("src")));
        assert_eq!((entry.initial_prompt(), entry.resume_prompt()), (Some("go"), Some("again")));
        assert_eq!(entry.box_session_id(), Some("11111111-2222-4333-8444-555555555555"));
        assert_eq!((entry.origin(), entry.profile()), (Some("webhook"), Some("p_1-x")));
        assert_eq!(entry.life(), Some("66666666-7777-4888-9999-aaaaaaaaaaaa"));
        let odd = json!({
            "skipPermissions": "false", "remoteControl": 0, "remoteControlName": "", "workingDirectory": "",
            "initialPrompt": "", "boxSessionId": "not-a-uuid", "life": "x", "profile": "a b",
        });
        let odd = odd.as_object().cloned().unwrap();
        let entry = Entry::of(&odd);
        assert!(entry.skip_permissions() && entry.remote_control());
        assert_eq!((entry.remote_control_name(), entry.working_directory()), (None, None));
        assert_eq!((entry.initial_prompt(), entry.resume_prompt()), (Some(""), None));
        assert_eq!((entry.box_session_id(), entry.life(), entry.profile(), entry.origin()), (None, None, None, None));
    }

    #[test]
    fn contains_names_exactly_the_listed_keys() {
        let doc = Document::parse(br#"{"version":1,"sessions":{"a":{},"odd":3}}"#).unwrap();
        assert!(doc.contains("a") && doc.contains("odd"));
        assert!(!doc.contains("b"));
    }
}
