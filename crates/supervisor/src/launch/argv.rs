//! The harness argv of §12.4 and the pane environment of §12.7.

use std::ffi::OsString;

use base::SessionName;
use registry::Entry;

use super::facts::Facts;
use super::{Harness, HarnessKind, codex};
use crate::config::Config;

/// The claude channel that delivers webhook events into the session.
const WEBHOOK_CHANNEL: &str = "plugin:local-webhook@local-channels";

/// Everything the argv depends on besides the configuration.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub name: &'a SessionName,
    pub entry: Entry<'a>,
    pub harness: &'a Harness,
    pub facts: &'a Facts,
    pub extra_args: &'a [String],
    /// Empty means no prompt.
    pub prompt: &'a str,
}

/// The argv, program first.
pub fn build(config: &Config, inputs: &Inputs<'_>) -> Vec<OsString> {
    let mut argv = vec![inputs.harness.bin.clone().into_os_string()];
    let words = match inputs.harness.kind {
        HarnessKind::Claude => claude(config, inputs),
        HarnessKind::Codex => codex_words(config, inputs),
        HarnessKind::Shell => inputs.extra_args.to_vec(),
        HarnessKind::Generic => generic(inputs),
    };
    argv.extend(words.into_iter().map(OsString::from));
    argv
}

fn claude(config: &Config, inputs: &Inputs<'_>) -> Vec<String> {
    let mut words = Vec::new();
    if inputs.entry.skip_permissions() {
        words.push("--dangerously-skip-permissions".to_owned());
    }
    if inputs.entry.remote_control() {
        words.extend(["--remote-control".to_owned(), remote_control_name(config, inputs.name, inputs.entry)]);
    }
    if let Some(settings) = &config.claude_settings {
        words.extend(["--settings".to_owned(), settings.clone()]);
    }
    if config.webhook {
        words.extend(["--channels".to_owned(), WEBHOOK_CHANNEL.to_owned()]);
    }
    let id_flag = if inputs.facts.resuming { "--resume" } else { "--session-id" };
    words.extend([id_flag.to_owned(), inputs.facts.bid.clone()]);
    words.extend(inputs.extra_args.iter().cloned());
    // `--` ends the values of a variadic option last in extraArgs (`--add-dir DIR`), so the prompt is no directory.
    // An option left without its value would take the `--` itself: fields.rs refuses that (issue 25).
    if !inputs.prompt.is_empty() {
        words.extend(["--".to_owned(), inputs.prompt.to_owned()]);
    }
    words
}

/// `remoteControlName`, else `<user>-<name>@<host>`, else `<user>-<name>`.
pub fn remote_control_name(config: &Config, name: &SessionName, entry: Entry<'_>) -> String {
    if let Some(explicit) = entry.remote_control_name() {
        return explicit.to_owned();
    }
    let base = webhook_session(config, name);
    match &config.host_label {
        Some(host) => format!("{base}@{host}"),
        None => base,
    }
}

fn codex_words(config: &Config, inputs: &Inputs<'_>) -> Vec<String> {
    let mut words = Vec::new();
    let target = inputs.facts.codex_target.as_ref().filter(|_| inputs.facts.resuming);
    if target.is_some() {
        words.push("resume".to_owned());
    }
    words.extend(codex_autonomy(config, inputs.entry).iter().map(|w| (*w).to_owned()));
    words.extend(inputs.extra_args.iter().cloned());
    match target {
        Some(target) => {
            words.extend(["--".to_owned(), target.clone()]);
            if !inputs.prompt.is_empty() {
                words.push(inputs.prompt.to_owned());
            }
        }
        // The stamp rides only on a prompt: it is how a later resume finds this rollout.
        None if !inputs.prompt.is_empty() => {
            words.extend(["--".to_owned(), format!("{} {}", codex::stamp(&inputs.facts.bid), inputs.prompt)]);
        }
        None => {}
    }
    words
}

fn codex_autonomy(config: &Config, entry: Entry<'_>) -> &'static [&'static str] {
    if entry.skip_permissions() {
        &["--dangerously-bypass-approvals-and-sandbox"]
    } else if config.codex_full_access {
        &["-c", "approval_policy=on-request", "-c", "sandbox_mode=workspace-write"]
    } else {
        &[]
    }
}

fn generic(inputs: &Inputs<'_>) -> Vec<String> {
    let mut words = inputs.extra_args.to_vec();
    if !inputs.prompt.is_empty() {
        words.push(inputs.prompt.to_owned());
    }
    words
}

/// `<user>-<name>`: the session's identity towards the webhook receiver.
fn webhook_session(config: &Config, name: &SessionName) -> String {
    format!("{}-{name}", config.paths.user())
}

/// The `new-session -e` pairs, in the order of §12.7.
pub fn pane_env(config: &Config, name: &SessionName, entry: Entry<'_>, bid: &str) -> Vec<(String, String)> {
    let mut env = vec![("AGENT_BOX_SESSION_ID".to_owned(), bid.to_owned())];
    if config.webhook {
        let state_dir = config.paths.webhook_state_dir().to_string_lossy().into_owned();
        env.push(("LOCAL_WEBHOOK_SESSION".to_owned(), webhook_session(config, name)));
        env.push(("LOCAL_WEBHOOK_STATE_DIR".to_owned(), state_dir));
        env.push(("LOCAL_WEBHOOK_PORT".to_owned(), "0".to_owned()));
    }
    if let Some(profile) = entry.profile() {
        env.push(("AGENT_BOX_PROFILE".to_owned(), profile.to_owned()));
    }
    env
}
