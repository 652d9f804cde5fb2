//! Inputs of one spawn (60-webhook-spawn §3): the environment, the extra arguments, the harness, profiles named
//! but not used, and the batch on stdin.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;

use serde_json::Value;

use crate::messages;
use crate::out::Out;
use crate::prose::prose;

/// Kept of stdin at most (§3.5).
pub const STDIN_LIMIT: usize = 16 * 1024 * 1024;
/// AGENT_BOX_HOOK_SESSION_ARGS and CONFIG larger than this are ignored.
pub const JSON_LIMIT: usize = 64 * 1024;

/// The `LOCAL_WEBHOOK_SPAWN_*` description of one batch, plus the hook-session variables.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    pub source: String,
    /// The raw key bytes (names are made from them, §5.2).
    pub key: Vec<u8>,
    pub event: String,
    pub topic: String,
    pub note: String,
    pub count: Option<u64>,
    pub meta: Option<String>,
    pub config: Option<String>,
}

impl Batch {
    pub fn from_env(env: &impl Fn(&str) -> Option<OsString>) -> Self {
        let text = |k: &str| env(k).map(|v| v.to_string_lossy().into_owned()).unwrap_or_default();
        let source =
            Some(text("LOCAL_WEBHOOK_SPAWN_SOURCE")).filter(|s| !s.is_empty()).unwrap_or_else(|| "github".into());
        Self {
            source,
            key: env("LOCAL_WEBHOOK_SPAWN_KEY").map(|v| v.as_bytes().to_vec()).unwrap_or_default(),
            event: text("LOCAL_WEBHOOK_SPAWN_EVENT"),
            topic: text("LOCAL_WEBHOOK_SPAWN_TOPIC"),
            note: text("LOCAL_WEBHOOK_SPAWN_NOTE"),
            count: lease::parse_count(&text("LOCAL_WEBHOOK_SPAWN_COUNT")),
            meta: env("LOCAL_WEBHOOK_SPAWN_META").map(|v| v.to_string_lossy().into_owned()),
            config: env("LOCAL_WEBHOOK_SPAWN_CONFIG").map(|v| v.to_string_lossy().into_owned()),
        }
    }

    /// The raw key as text (lossy), as it goes into JSON values.
    pub fn key_text(&self) -> String {
        String::from_utf8_lossy(&self.key).into_owned()
    }

    /// The key's prose form (§9.3).
    pub fn key_prose(&self) -> String {
        prose(&self.key_text(), 1000)
    }

    /// `<SOURCE>:<raw KEY>`, the event's own topic.
    pub fn own(&self) -> String {
        format!("{}:{}", self.source, self.key_text())
    }
}

/// Whether the claim seed is on (§4 step 3): KEY non-empty and at most 1024 bytes, SOURCE `[A-Za-z0-9_.-]{1,64}`.
pub fn seed_problem(batch: &Batch, key_set: bool, source_set: bool) -> Result<(), Option<String>> {
    let source_ok = (1..=64).contains(&batch.source.len())
        && batch.source.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if batch.key.is_empty() {
        return Err(None);
    }
    if batch.key.len() > 1024 {
        return Err(Some(format!("the key is {} bytes, more than 1024", batch.key.len())));
    }
    if !source_ok {
        let why = format!("source '{}' is not [A-Za-z0-9_.-]{{1,64}}", prose(&batch.source, 64));
        return Err(Some(why).filter(|_| source_set || key_set));
    }
    Ok(())
}

/// AGENT_BOX_HOOK_SESSION_ARGS: a JSON array of strings without NUL, at most 64 KiB; else W4 and no args.
pub fn extra_args(raw: Option<&str>) -> (Vec<String>, bool) {
    let Some(raw) = raw.filter(|r| !r.is_empty()) else { return (Vec::new(), true) };
    let parsed = (raw.len() <= JSON_LIMIT).then(|| serde_json::from_str::<Value>(raw).ok()).flatten();
    let args = parsed.as_ref().and_then(Value::as_array).and_then(|items| {
        items.iter().map(|v| v.as_str().filter(|s| !s.contains('\0')).map(str::to_owned)).collect::<Option<Vec<_>>>()
    });
    match args {
        Some(args) => (args, true),
        None => (Vec::new(), false),
    }
}

/// Issue 25: the option that leaves the extra arguments of a claude session waiting for a value; claude would take
/// the `--` before the prompt, and the prompt, for it. W26 then, and the session starts without them (like W4).
pub fn dangling_for(harness: &str, args: &[String]) -> Option<&'static str> {
    if harness == "claude" { base::claude_args::dangling_value_option(args) } else { None }
}

/// The harness (§3.3): W12 when unset or not a name, W13 when not installed; both exit 2.
pub fn harness(default_agent: Option<&str>, agents: Option<&str>) -> Result<String, String> {
    let harness = default_agent.map(str::trim).filter(|h| !h.is_empty()).ok_or(messages::NO_HARNESS.to_owned())?;
    if !harness.bytes().all(base::name::is_name_byte) {
        return Err(messages::NO_HARNESS.to_owned());
    }
    if let Some(agents) = agents.filter(|a| !a.trim().is_empty())
        && !agents.split_whitespace().any(|w| w == harness)
    {
        return Err(messages::harness_unavailable(harness, agents));
    }
    Ok(harness.to_owned())
}

/// W5 and W6 (§3.4): profiles are reported as ignored and never fail a spawn.
pub fn report_profiles(config: Option<&str>, env_profile: Option<&str>, harness: &str, out: &mut Out) {
    if let Some(raw) = config.filter(|c| !c.is_empty()) {
        let parsed = (raw.len() <= JSON_LIMIT).then(|| serde_json::from_str::<Value>(raw).ok()).flatten();
        match parsed {
            Some(Value::Object(map)) => {
                if let Some(profile) = map.get("profile").and_then(Value::as_str).filter(|p| !p.is_empty()) {
                    out.warn(messages::profile_ignored(&prose(profile, 1000), "the watch's spawnConfig", harness));
                }
            }
            _ => out.warn(messages::CONFIG_UNUSABLE),
        }
    }
    if let Some(profile) = env_profile.filter(|p| !p.is_empty()) {
        out.warn(messages::profile_ignored(&prose(profile, 1000), "AGENT_BOX_HOOK_PROFILE", harness));
    }
}

/// §3.5: read to EOF, keep 16 MiB, decode lossily, NUL → U+FFFD, drop trailing line breaks.
/// `Ok(None)` is an empty batch (exit 0, nothing written).
pub fn read_batch(input: &mut impl Read) -> std::io::Result<Option<String>> {
    let mut kept = Vec::new();
    input.by_ref().take(STDIN_LIMIT as u64).read_to_end(&mut kept)?;
    std::io::copy(input, &mut std::io::sink())?;
    let text = String::from_utf8_lossy(&kept).replace('\0', "\u{fffd}");
    let text = text.trim_end_matches(['\n', '\r']);
    if text.trim().is_empty() { Ok(None) } else { Ok(Some(text.to_owned())) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_rules() {
        assert_eq!(extra_args(Some(r#"["--model","sonnet"]"#)), (vec!["--model".into(), "sonnet".into()], true));
        assert_eq!(extra_args(Some("[\"a\\nb\"]")).0, vec!["a\nb".to_string()]);
        for bad in ["not json", "{}", "[1]", "[\"a\\u0000b\"]"] {
            assert_eq!(extra_args(Some(bad)), (vec![], false), "{bad}");
        }
        assert_eq!(extra_args(None), (vec![], true));
        let huge = format!("[\"{}\"]", "a".repeat(JSON_LIMIT));
        assert_eq!(extra_args(Some(&huge)), (vec![], false));
    }

    // W4: arguments up to 64 KiB of JSON are used; only a larger value is ignored.
    #[test]
    fn w4_args_of_up_to_64_kib_are_used() {
        let exact = format!("[\"{}\"]", "a".repeat(JSON_LIMIT - 4));
        assert_eq!(exact.len(), 64 * 1024);
        assert_eq!(extra_args(Some(&exact)), (vec!["a".repeat(JSON_LIMIT - 4)], true));
    }

    // W1 (60-webhook-spawn §9.3): the key a warning names is in prose form, control characters made spaces.
    #[test]
    fn w1_names_the_key_in_prose_form() {
        let batch = Batch { key: b"acme/x\n\tgo".to_vec(), ..Batch::default() };
        assert_eq!(batch.key_prose(), "acme/x  go");
    }

    fn profile_notes(config: Option<&str>, env_profile: Option<&str>) -> Vec<String> {
        let mut out = Out::new();
        report_profiles(config, env_profile, "claude", &mut out);
        out.notes().to_vec()
    }

    // W6: a profile named by the watch's spawnConfig or by AGENT_BOX_HOOK_PROFILE is reported as not used; an
    // empty one names nothing.
    #[test]
    fn w6_a_named_profile_is_reported_as_not_used() {
        let from_config = profile_notes(Some(r#"{"profile":"fast"}"#), None);
        assert_eq!(
            from_config,
            [
                "profile 'fast' (from the watch's spawnConfig) is not used: agent profiles are not part of this build; starting claude"
            ]
        );
        let from_env = profile_notes(None, Some("slow"));
        assert_eq!(from_env, [messages::profile_ignored("slow", "AGENT_BOX_HOOK_PROFILE", "claude")]);
        assert!(profile_notes(Some(r#"{"profile":""}"#), Some("")).is_empty());
        assert!(profile_notes(Some(r#"{"other":1}"#), None).is_empty(), "a config object without a profile");
    }

    // W5: a CONFIG that is not a JSON object is ignored with a warning.
    #[test]
    fn w5_a_config_that_is_not_an_object_is_reported() {
        assert_eq!(profile_notes(Some("[1]"), None), [messages::CONFIG_UNUSABLE]);
        assert_eq!(profile_notes(Some("not json"), None), [messages::CONFIG_UNUSABLE]);
        assert!(profile_notes(Some(""), None).is_empty(), "empty reads as unset");
    }

    #[test]
    fn harness_rules() {
        assert_eq!(harness(Some("claude"), Some("claude codex")), Ok("claude".into()));
        assert!(harness(None, None).is_err());
        assert!(harness(Some("a b"), None).is_err());
        assert!(harness(Some("tool"), Some("claude")).unwrap_err().contains("is not available"));
        assert_eq!(harness(Some("tool"), None), Ok("tool".into()), "AGENT_BOX_AGENTS unchecked when unset");
    }

    #[test]
    fn batches() {
        assert_eq!(read_batch(&mut "".as_bytes()).unwrap(), None);
        assert_eq!(read_batch(&mut "\n\n".as_bytes()).unwrap(), None);
        assert_eq!(read_batch(&mut "  \n".as_bytes()).unwrap(), None);
        assert_eq!(read_batch(&mut "a\0b\n".as_bytes()).unwrap().as_deref(), Some("a\u{fffd}b"));
        assert_eq!(read_batch(&mut &b"x\xffy\r\n"[..]).unwrap().as_deref(), Some("x\u{fffd}y"));
    }

    #[test]
    fn seed_rules() {
        let batch =
            |key: &str, source: &str| Batch { key: key.as_bytes().to_vec(), source: source.into(), ..Batch::default() };
        assert_eq!(seed_problem(&batch("acme/x", "github"), true, false), Ok(()));
        assert_eq!(seed_problem(&batch("", "github"), false, false), Err(None));
        assert!(matches!(seed_problem(&batch(&"k".repeat(1025), "github"), true, false), Err(Some(_))));
        assert_eq!(seed_problem(&batch(&"k".repeat(1024), "github"), true, false), Ok(()), "1024 bytes is claimable");
        assert!(matches!(seed_problem(&batch("acme/x", "git hub"), true, true), Err(Some(_))));
    }
}
