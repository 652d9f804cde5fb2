//! The messages of 60-webhook-spawn §11, in one place; `main` prints every stderr line after the program prefix.

pub const PREFIX: &str = "agent-box-webhook-spawn: ";
pub const RESOLVED_PROFILE: &str =
    "'--resolved-profile' is not part of this build (profiles need the external profile tool)";

pub fn key_too_long(key: &str) -> String {
    format!("event key '{key}' does not fit a session name (at most 150 characters)")
}
pub fn called_instead(name: &str) -> String {
    format!("this session is called '{name}' instead")
}
pub const META_UNUSABLE: &str = "LOCAL_WEBHOOK_SPAWN_META is not a JSON object; this session claims nothing";
pub const ARGS_UNUSABLE: &str =
    "AGENT_BOX_HOOK_SESSION_ARGS is not a JSON array of strings; starting without extra arguments";
pub const CONFIG_UNUSABLE: &str = "LOCAL_WEBHOOK_SPAWN_CONFIG is not a JSON object; ignoring it";
pub fn profile_ignored(profile: &str, source: &str, harness: &str) -> String {
    format!(
        "profile '{profile}' (from {source}) is not used: agent profiles are not part of this build; starting {harness}"
    )
}
pub fn filter_failed(path: &str, reason: &str) -> String {
    format!("could not write {path} ({reason}); the session starts unsubscribed, so its CI may start a duplicate")
}
/// Issue 18 item 3: the lease could not be created, so the batch is deferred rather than run untracked.
pub fn lease_failed(name: &str, reason: &str) -> String {
    format!("could not create the lease for '{name}' ({reason}); not starting work the box could not account for")
}
pub const DEFERRED: &str = "session start deferred; receiver will retry";
pub fn not_absolute(var: &str, value: &str) -> String {
    format!("{var} must be an absolute path (it is '{value}')")
}
pub const NO_HARNESS: &str = "AGENT_BOX_DEFAULT_AGENT is not set to a harness name; cannot start a dispatched session";
pub fn harness_unavailable(harness: &str, agents: &str) -> String {
    format!("harness '{harness}' is not available (available: {agents})")
}
pub fn stdin_failed(reason: &str) -> String {
    format!("could not read the event batch from stdin ({reason})")
}
pub fn unclaimable(why: &str) -> String {
    format!("the event key or source cannot be claimed ({why}); starting without a claim, lease or log line")
}
pub fn registry_unusable(registry: &str, reason: &str) -> String {
    format!("{registry} does not parse or cannot be read ({reason}); the supervisor repairs it, so this batch waits")
}
pub fn no_free_name(key: &str) -> String {
    format!("could not find a free session name for key '{key}'")
}
pub fn registry_write_failed(registry: &str, reason: &str) -> String {
    format!("could not write {registry} ({reason}); nothing of this batch was kept")
}
pub fn record_failed(record: &str, reason: &str) -> String {
    format!("could not update {record} ({reason})")
}
pub fn added(name: &str, harness: &str) -> String {
    format!("session '{name}' ({harness}) added with a kickoff prompt — the supervisor starts it within ~2s")
}
