//! The message table of 50-session-cli §14, in one place: every text a user or a script may match.

use registry::NameError;

use view::text::echoed_name;

/// M1, M2 or M3 for a name that failed the charset or creation check.
pub fn bad_name(name: &str, err: &NameError) -> String {
    let shown = echoed_name(name);
    match err {
        NameError::Empty | NameError::BadChar { .. } => {
            format!("invalid session name '{shown}': use only letters, digits, '-' and '_'")
        }
        NameError::TooLong { len } => {
            format!("session name '{shown}' is too long: at most 150 characters (it has {len})")
        }
        NameError::Reserved(_) => {
            format!("'{shown}' is a reserved name (settings, downloads, webhook, sessions, token, ws, auth)")
        }
    }
}

/// M4 (printed without the prefix).
pub fn exists(name: &str) -> String {
    format!("session '{name}' already exists — 'agent-box-session rm {name}' first, or 'restart {name}' to bounce it")
}

pub const AGENT_DEPRECATED: &str = "--agent is deprecated, use --harness (it picks the CLI program)";
pub const BAD_REMOTE_CONTROL: &str = "--remote-control must be 'true' or 'false'";
pub const BAD_ORIGIN: &str = "--origin must be user, agent or webhook";
pub const NO_AGENTS: &str = "AGENT_BOX_AGENTS is not set; run agent-box-session through its installed wrapper";
pub const NO_DEFAULT_AGENT: &str = "AGENT_BOX_DEFAULT_AGENT is not set and no --harness was given";

/// M8 (printed without the prefix).
pub fn harness_unavailable(harness: &str, agents: &str) -> String {
    format!("harness '{}' is not available (available: {agents})", echoed_name(harness))
}

pub fn cwd_missing(expanded: &str) -> String {
    format!("--cwd '{expanded}' does not exist")
}
pub fn cwd_not_utf8(expanded: &str) -> String {
    format!("--cwd '{expanded}' is not valid UTF-8")
}
pub fn cwd_not_dir(expanded: &str) -> String {
    format!("--cwd '{expanded}' is not a directory")
}
pub fn cwd_outside_home(expanded: &str, resolved: &str, home: &str) -> String {
    format!("--cwd '{expanded}' resolves to '{resolved}', outside $HOME ('{home}')")
}
pub fn home_unusable(home: &str) -> String {
    format!("HOME ('{home}') does not resolve to a directory")
}
pub fn no_free_name(harness: &str) -> String {
    format!("could not find a free name for a {harness} session; give one explicitly")
}

/// M20.
pub fn does_not_parse(file: &str, detail: &str) -> String {
    format!(
        "{file} does not parse ({detail}); nothing was changed — the supervisor moves a corrupt registry aside on its next pass"
    )
}
/// M20b.
pub fn cannot_read(file: &str, error: &str) -> String {
    format!("cannot read {file} ({error}); nothing was changed")
}
/// M21.
pub fn could_not_write(file: &str, reason: &str) -> String {
    format!("could not write {file}: {reason}; nothing was changed")
}

/// M22 (stdout).
pub fn added(name: &str, harness: &str, with_prompt: bool) -> String {
    let prompt = if with_prompt { " with a kickoff prompt" } else { "" };
    format!("session '{name}' ({harness}) added{prompt} — the supervisor starts it within ~2s")
}
/// M23 (stdout).
pub fn removed(name: &str) -> String {
    format!("session '{}' removed", echoed_name(name))
}
/// M24.
pub fn kill_failed(name: &str, reason: &str) -> String {
    format!("could not kill tmux session '{}': {reason}", echoed_name(name))
}
/// M25 (printed without the prefix).
pub fn no_such_session(name: &str) -> String {
    format!("no such session: '{}' (see agent-box-session ls)", echoed_name(name))
}
/// M26 (stdout).
pub fn stopped_ephemeral(name: &str) -> String {
    format!(
        "session '{name}' stopped — one-shot (--ephemeral), so the supervisor delists it within ~2s; its transcript is kept"
    )
}
/// M27 (stdout).
pub fn stopped(name: &str) -> String {
    format!("session '{name}' stopped — still listed, not respawned; 'agent-box-session restart {name}' revives it")
}
/// M28 (stdout).
pub fn restarted(name: &str) -> String {
    format!("session '{name}' killed — the supervisor restarts it within ~2s")
}
/// M29 (stdout).
pub fn killed_unlisted(name: &str) -> String {
    format!("session '{}' killed — unlisted, so nothing restarts it", echoed_name(name))
}
pub const ALL_RESTARTED: &str = "all sessions killed — the supervisor restarts each within ~2s (re-reading env)";
pub const NOTHING_TO_RESTART: &str = "no session is listed, so there is nothing to restart";

/// M32.
pub fn live_unknown_assumed(reason: &str) -> String {
    format!("cannot ask tmux which sessions are live ({reason}); every state below assumes no pane is up")
}
/// M33.
pub fn registry_unusable(file: &str, reason: &str) -> String {
    format!("{file} does not parse or cannot be read ({reason}); showing no listed session")
}
/// M34.
pub fn live_unknown(reason: &str) -> String {
    format!("cannot ask tmux which sessions are live ({reason})")
}
/// M36.
pub fn bad_count(value: &str) -> String {
    format!("-n wants a whole number of at least 1, not '{}'", echoed_name(value))
}
/// M37.
pub fn not_in_build(what: &str, why: &str) -> String {
    format!("'{what}' is not part of this build ({why})")
}
