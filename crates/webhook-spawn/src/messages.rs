//! The messages of 60-webhook-spawn §11, in one place; `main` prints every stderr line after the program prefix.

pub const PREFIX: &str = "agent-box-webhook-spawn: ";
pub const RESOLVED_PROFILE: &str =
    "'--resolved-profile' is not part of this build (profiles need the external profile tool)";

pub fn key_too_long(key: &str) -> String {
    format!("event key '{key}' does not fit a session name (at most 150 characters)")
}
pub const META_UNUSABLE: &str = "LOCAL_WEBHOOK_SPAWN_META is not a JSON object; this session claims nothing";
pub const ARGS_UNUSABLE: &str =
    "AGENT_BOX_HOOK_SESSION_ARGS is not a JSON array of strings; starting without extra arguments";
/// W26 (issue 25): the claude option at the end would take the prompt; the session starts without the arguments.
pub fn args_dangling(option: &str) -> String {
    format!(
        "AGENT_BOX_HOOK_SESSION_ARGS ends in '{option}', which takes a value: claude would take the prompt for it; starting without extra arguments"
    )
}
pub const CONFIG_UNUSABLE: &str = "LOCAL_WEBHOOK_SPAWN_CONFIG is not a JSON object; ignoring it";
pub fn profile_ignored(profile: &str, source: &str, harness: &str) -> String {
    format!(
        "profile '{profile}' (from {source}) is not used: agent profiles are not part of this build; starting {harness}"
    )
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
pub fn record_failed(record: &str, reason: &str) -> String {
    format!("could not update {record} ({reason})")
}
pub fn added(name: &str, harness: &str) -> String {
    format!("session '{name}' ({harness}) added with a kickoff prompt — the supervisor starts it within ~2s")
}

/// W20, issue 24 (docs/intake.md IN-6): the batch is durably queued; the supervisor starts its session when a slot frees.
pub fn queued(position: usize, queued: usize, why: Option<&str>) -> String {
    let why = why.map(|why| format!(" ({why})")).unwrap_or_default();
    format!(
        "batch queued at position {position} of {queued}{why}; the supervisor starts a session for it when a slot frees (agent-box-session queue lists it)"
    )
}
/// W21, IN-5: the batch joined the queued record of its assignment.
pub fn coalesced(into: &str, position: usize, events: usize) -> String {
    format!(
        "batch added to the queued assignment '{into}' (position {position}, {events} batches); one session starts for all of them"
    )
}
/// W22, IN-3: the batch's keys were accepted before; nothing changed.
pub fn duplicate(key: &str, how: &str, name: Option<&str>) -> String {
    let name = name.map(|name| format!(" as '{name}'")).unwrap_or_default();
    format!("delivery '{key}' was already accepted ({how}{name}); nothing changed")
}
/// W23, IN-14: a live session already claims the work.
pub fn claimed(by: &str) -> String {
    format!("session '{by}' already claims this work; no session was started (the batch ended claimed)")
}
/// W24, IN-9: a bound variable that is not a number in its range; the default is used.
pub fn bound_ignored(problem: &str) -> String {
    format!("{problem}; using the default")
}
