//! Render mode, `--preamble TOPIC [NOTE] [WATCH_NAME]` (60-webhook-spawn §10): what a standing watch would launch,
//! with placeholders for what only an event can tell. Reads no stdin, takes no lock, runs no tmux, writes nothing.

use std::ffi::OsString;
use std::path::PathBuf;

use base::quote::quote_arg;
use serde_json::Value;

use crate::error::SpawnError;
use crate::inputs::{dangling_for, extra_args};
use crate::messages;
use crate::prompt::{Parts, assign_sentence, render};
use crate::prose::prose;

/// Dispatch files larger than this are not read.
const DISPATCH_LIMIT: u64 = 1024 * 1024;

/// The rendered text, or W10 (exit 2) when HOME is unusable.
pub fn preamble(
    env: &impl Fn(&str) -> Option<OsString>,
    topic: &str,
    note: &str,
    watch: &str,
) -> Result<String, SpawnError> {
    let text = |k: &str| env(k).map(|v| v.to_string_lossy().into_owned()).filter(|v| !v.is_empty());
    let home = text("HOME").map(PathBuf::from).filter(|h| h.is_absolute());
    let Some(home) = home else {
        return Err(SpawnError::Usage(messages::not_absolute("HOME", &text("HOME").unwrap_or_default())));
    };
    let state_dir =
        text("LOCAL_WEBHOOK_STATE_DIR").map(PathBuf::from).unwrap_or_else(|| home.join(".local/state/local-webhook"));
    let harness = text("AGENT_BOX_DEFAULT_AGENT").unwrap_or_else(|| "<the box default harness>".to_owned());
    let label = text("AGENT_BOX_HOOK_ARGS_OPTION_NAME").unwrap_or_else(|| "the fleet-wide default".to_owned());
    let raw_args = text("AGENT_BOX_HOOK_SESSION_ARGS");
    let (mut args, args_ok) = extra_args(raw_args.as_deref());
    let ignored = if !args_ok {
        Some("not a JSON array of strings".to_owned())
    } else {
        dangling_for(&harness, &args)
            .map(|option| format!("they end in '{option}', which takes a value: claude would take the prompt for it"))
    };
    if ignored.is_some() {
        args.clear();
    }
    let mut out = String::from("Launch command — what a match starts, with the prompt below:\n  ");
    out.push_str(&harness);
    for arg in &args {
        out.push(' ');
        out.push_str(&quote_arg(arg));
    }
    out.push('\n');
    let watch_profile = dispatch_profile(&state_dir.join("filter.dispatch.json"), topic, watch);
    out.push_str(&profile_lines(watch_profile.as_deref(), text("AGENT_BOX_HOOK_PROFILE").as_deref()));
    out.push_str(&args_line(raw_args.is_some() && !args.is_empty(), ignored.as_deref(), &label));
    out.push('\n');
    out.push_str(&placeholder_prompt(topic, note, harness == "claude"));
    out.push('\n');
    Ok(out)
}

fn profile_lines(watch: Option<&str>, env_profile: Option<&str>) -> String {
    let named: Vec<(&str, &str)> =
        [(watch, "the watch's spawnConfig"), (env_profile, "the AGENT_BOX_HOOK_PROFILE environment variable")]
            .into_iter()
            .filter_map(|(p, from)| p.filter(|p| !p.is_empty()).map(|p| (p, from)))
            .collect();
    if named.is_empty() {
        return "Hook sessions start the box default harness; agent profiles are not part of this build.\n".to_owned();
    }
    named
        .iter()
        .map(|(p, from)| {
            format!(
                "A profile was named but is not used: '{}' from {from} — IGNORED, agent profiles are not part of this build.\n",
                prose(p, 1000)
            )
        })
        .collect()
}

fn args_line(non_empty_valid: bool, ignored: Option<&str>, label: &str) -> String {
    if let Some(why) = ignored {
        format!("The arguments after the harness would come from {label} — IGNORED, {why}.\n")
    } else if non_empty_valid {
        format!("The arguments after the harness come from {label}.\n")
    } else {
        format!("No arguments follow the harness; {label} can add some.\n")
    }
}

fn placeholder_prompt(topic: &str, note: &str, claude: bool) -> String {
    let topic = Some(prose(topic, 1000)).filter(|t| !t.is_empty()).unwrap_or_else(|| "?".into());
    let assign = format!(" [only when an event assigns an issue or PR to this box:]{}", assign_sentence());
    render(&Parts {
        waited: None,
        taken_over: None,
        topic: &topic,
        note: &prose(note, 1000),
        assign: Some(&assign),
        name: "hook-<key>-<hex>",
        ownership: Some(("<source>:<key>", "<key>")),
        claude,
        peers: "<the live sessions, as agent-box-session peers reports them when the session starts>",
        batch: "[UNTRUSTED webhook:<source> …] <one line per event in the batch>",
    })
}

/// The watch's `spawnConfig.profile` from the dispatch file: first `topics[]` object with this topic and name.
fn dispatch_profile(path: &std::path::Path, topic: &str, watch: &str) -> Option<String> {
    if std::fs::metadata(path).ok()?.len() > DISPATCH_LIMIT {
        return None;
    }
    let doc: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let entry = doc.get("topics")?.as_array()?.iter().find(|t| {
        t.get("topic").and_then(Value::as_str) == Some(topic)
            && t.get("name").and_then(Value::as_str).unwrap_or("") == watch
    })?;
    entry.get("spawnConfig")?.get("profile")?.as_str().filter(|p| !p.is_empty()).map(str::to_owned)
}
