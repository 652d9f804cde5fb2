//! The prompt of one start and the restart notice (§12.3).

use base::SessionName;
use registry::Paths;
use serde_json::Value;

use super::facts::Facts;
use super::fields::Fields;
use super::files::{self, MAX_READ};
use super::{HarnessKind, claude};
use crate::config::{Config, NoticePolicy};

/// The notice sent to a resumed session, `{bid}` replaced by the launch id and `{check}` by [`CHECK_CHANNEL`] or
/// [`CHECK_NO_CHANNEL`] (golden-tested, exact).
const NOTICE_TEMPLATE: &str = "[agent-box] This session was stopped unexpectedly and restarted automatically \
(launch {bid}). Your transcript is back, but nothing that happened while you were down was replayed. Re-check \
what you were waiting for (CI runs, reviews, issues you claimed), {check}, then carry on. If the work was \
already finished, say so in one line and stop.";

/// Issue 20 item 4: a claude session started with the webhook channel holds its subscriptions in the receiver
/// plugin, whose own tools list and add them (there is no `agent-box-webhook status` on a box running these
/// programs).
const CHECK_CHANNEL: &str = "list your webhook subscriptions with your webhook_subscriptions tool and add any \
that are missing with webhook_subscribe";
/// Any other session receives no webhook events, so nothing tells it when what it waits for changes.
const CHECK_NO_CHANNEL: &str = "looking each one up yourself: this session receives no webhook events";

/// The restart notice for launch `bid`; `channel` when the session runs the webhook channel (claude with
/// `AGENT_BOX_WEBHOOK_REPO` set).
pub fn restart_notice(bid: &str, channel: bool) -> String {
    let check = if channel { CHECK_CHANNEL } else { CHECK_NO_CHANNEL };
    NOTICE_TEMPLATE.replace("{bid}", bid).replace("{check}", check)
}

/// The prompt a start passes (empty = none), and whether it is the restart notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub text: String,
    pub notice: bool,
}

impl Choice {
    fn prompt(text: &str) -> Self {
        Self { text: text.to_owned(), notice: false }
    }
}

/// Rules 1–5 of §12.3.
pub fn choose(config: &Config, name: &SessionName, kind: HarnessKind, facts: &Facts, fields: &Fields<'_>) -> Choice {
    if kind == HarnessKind::Shell {
        return Choice::prompt("");
    }
    if !facts.resuming {
        return Choice::prompt(fields.initial_prompt);
    }
    if !fields.resume_prompt.is_empty() {
        return Choice::prompt(fields.resume_prompt);
    }
    let transcript = facts.transcript.as_deref().filter(|_| kind == HarnessKind::Claude);
    if transcript.is_some_and(|t| !claude::has_real_assistant(t)) {
        return Choice::prompt(fields.initial_prompt);
    }
    let notice_applies = match kind {
        HarnessKind::Claude => true,
        HarnessKind::Codex => facts.codex_target.is_some(),
        HarnessKind::Shell | HarnessKind::Generic => false,
    };
    if notice_applies && notice_wanted(config, name, transcript) {
        let channel = kind == HarnessKind::Claude && config.webhook;
        return Choice { text: restart_notice(&facts.bid, channel), notice: true };
    }
    Choice::prompt("")
}

/// `AGENT_BOX_RESTART_NOTICE`; `auto` asks, in order, the lease, the filter, and (claude) the transcript.
fn notice_wanted(config: &Config, name: &SessionName, transcript: Option<&std::path::Path>) -> bool {
    match config.restart_notice {
        NoticePolicy::Never => false,
        NoticePolicy::Always => true,
        NoticePolicy::Auto => {
            holds_lease(&config.paths, name)
                || has_claims(&config.paths, name)
                || transcript.is_some_and(claude::last_turn_open)
        }
    }
}

/// The session holds an assignment: its lease file exists and is non-empty.
fn holds_lease(paths: &Paths, name: &SessionName) -> bool {
    let lease = paths.lease_dir().join(format!("{name}.json"));
    std::fs::metadata(lease).is_ok_and(|m| m.is_file() && m.len() > 0)
}

/// The session subscribed to events: its filter parses, is not disabled and has topics (TTL ignored).
fn has_claims(paths: &Paths, name: &SessionName) -> bool {
    let Some((bytes, false)) = files::read_head(&paths.filter_file(name), MAX_READ) else { return false };
    let Ok(Value::Object(filter)) = serde_json::from_slice::<Value>(&bytes) else { return false };
    filter.get("enabled") != Some(&Value::Bool(false))
        && filter.get("topics").and_then(Value::as_array).is_some_and(|topics| !topics.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_text_is_exact() {
        let bid = "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90";
        let head = "[agent-box] This session was stopped unexpectedly and restarted automatically (launch \
                    0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90). Your transcript is back, but nothing that happened while \
                    you were down was replayed. Re-check what you were waiting for (CI runs, reviews, issues you \
                    claimed), ";
        let tail = ", then carry on. If the work was already finished, say so in one line and stop.";
        assert_eq!(
            restart_notice(bid, true),
            format!(
                "{head}list your webhook subscriptions with your webhook_subscriptions tool and add any that are \
                 missing with webhook_subscribe{tail}"
            )
        );
        assert_eq!(
            restart_notice(bid, false),
            format!("{head}looking each one up yourself: this session receives no webhook events{tail}")
        );
        for channel in [true, false] {
            let notice = restart_notice(bid, channel);
            assert!(!notice.contains("  ") && !notice.contains('\n') && !notice.contains("agent-box-webhook "));
        }
    }
}
