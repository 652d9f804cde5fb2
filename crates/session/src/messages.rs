//! The message table of 50-session-cli §14, in one place: every text a user or a script may match.

use base::NameError;

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
pub const NO_AGENTS: &str = "AGENT_BOX_AGENTS is not set; run the agent-box-session that `cargo xtask install` or the NixOS module puts on PATH (a wrapper that sets it), or set it yourself, e.g. AGENT_BOX_AGENTS='claude shell'";
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

/// M20: a registry that does not parse stops every writer (exit 1), so no edit is made on a guess.
pub fn does_not_parse(file: &str, detail: &str) -> String {
    format!(
        "{file} does not parse ({detail}); nothing was changed — the supervisor moves a corrupt registry aside on its next pass"
    )
}
/// M20b: a registry that exists but cannot be read is not an empty one; nothing is changed (exit 1).
pub fn cannot_read(file: &str, error: &str) -> String {
    format!("cannot read {file} ({error}); nothing was changed")
}
/// M21: the durable write failed; the old registry is still in place, so the line says nothing changed.
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
/// M40 (stdout): `rm` of a name that is neither listed nor live, and nothing of it was left.
pub fn nothing_to_remove(name: &str) -> String {
    format!("nothing to remove: no session '{}' is listed or live", echoed_name(name))
}
/// M41 (stdout): `rm` of a name that is neither listed nor live, whose leftover state it deleted.
pub fn removed_leftovers(name: &str) -> String {
    format!("no session '{}' was listed or live; removed its leftover state", echoed_name(name))
}
/// M42: `rm` delisted the session but could not kill its pane.
pub fn removed_but_not_killed(name: &str, reason: &str) -> String {
    format!("session '{}' removed from the registry; its tmux session could not be killed: {reason}", echoed_name(name))
}
/// M43: `stop` flagged the session but could not kill its pane.
pub fn stopped_but_not_killed(name: &str, reason: &str) -> String {
    format!(
        "session '{}' is marked stopped in the registry; its tmux session could not be killed: {reason}",
        echoed_name(name)
    )
}
/// M44: `restart` cleared `stopped` but could not kill the pane.
pub fn unstopped_but_not_killed(name: &str, reason: &str) -> String {
    format!(
        "session '{}' is no longer stopped in the registry; its tmux session could not be killed: {reason}",
        echoed_name(name)
    )
}
/// M45 (stdout): `restart` of a stopped session, which had no pane to kill.
pub fn unstopped(name: &str) -> String {
    format!("session '{name}' is no longer stopped — the supervisor starts it within ~2s")
}
/// M46 (stdout): `restart` of a listed session whose pane was already gone.
pub fn had_no_pane(name: &str) -> String {
    format!("session '{name}' had no pane to kill — the supervisor starts it within ~2s")
}
/// M47 (stdout): `restart --all` when some sessions had no pane.
pub fn all_restarting(killed: usize, without_pane: usize) -> String {
    format!(
        "all sessions restart within ~2s: {killed} killed, {without_pane} had no pane — the supervisor starts each (re-reading the env store)"
    )
}
/// M48: `restart --all` cleared `stopped` on some entries although kills failed.
pub fn all_unstopped_kills_failed(cleared: usize) -> String {
    format!("'stopped' was cleared in the registry for {cleared} session(s); the kills above did not happen")
}
/// M49: `attach` of a name that is not live.
pub fn not_live(name: &str) -> String {
    format!(
        "no live session '{}' to attach to; agent-box-session ls shows what is live (a listed session is started within ~2s while a supervisor runs)",
        echoed_name(name)
    )
}
/// M50: tmux could not be started for `attach`.
pub fn cannot_attach(name: &str, reason: &str) -> String {
    format!("cannot attach to '{}': {reason}", echoed_name(name))
}
/// M51: `log` with no record yet.
pub fn log_empty(path: &str) -> String {
    format!("no hook-session record yet ({path}): no dispatched session has started or ended on this box")
}
/// M59: the notifier marker (N-8) is there but is no file, or cannot be looked at: whether an undelivered outcome
/// is being reported is unknown, and `ls`/`leases` say so instead of `off` (exit 1).
pub fn notifier_unknown(marker_problem: &str) -> String {
    format!(
        "cannot tell whether lease outcomes are reported: {marker_problem}; nothing was listed — make it a readable file again or remove it, then restart the supervisor (systemctl --user restart agent-box.service), which writes it again"
    )
}
/// M60: `add` with claude extra arguments that end in an option taking a value (issue 25): claude would take the
/// prompt agent-box puts after them for that value (exit 2, nothing written).
pub fn extra_args_dangling(option: &str) -> String {
    format!(
        "the extra arguments end in '{option}', which takes a value: claude would take the prompt that follows them for it and exit; give the value after it or leave it out"
    )
}
/// M52: `ls` while no supervisor holds this registry.
pub fn no_supervisor(registry: &str) -> String {
    format!(
        "no supervisor is running for {registry}: nothing is started or restarted until one is (systemctl --user start agent-box.service, or run agent-box-supervisor)"
    )
}

/// M24: the registry was edited but the pane could not be killed; the caller says which edit stands.
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
pub const ALL_RESTARTED: &str =
    "all sessions killed — the supervisor restarts each within ~2s (re-reading the env store)";
pub const NOTHING_TO_RESTART: &str = "no session is listed, so there is nothing to restart";

/// M32: `ls` still answers without tmux, but says that every state it shows assumes no pane is up.
pub fn live_unknown_assumed(reason: &str) -> String {
    format!("cannot ask tmux which sessions are live ({reason}); every state below assumes no pane is up")
}
/// M33: `ls` of an unusable registry shows no listed session and says why (exit 0, so scripts still get a list).
pub fn registry_unusable(file: &str, reason: &str) -> String {
    format!("{file} does not parse or cannot be read ({reason}); showing no listed session")
}
/// M34: `peers` and `attach` need the live set; without it they fail (exit 1) instead of guessing.
pub fn live_unknown(reason: &str) -> String {
    format!("cannot ask tmux which sessions are live ({reason})")
}
/// M36: `log -n` takes a count of at least 1; anything else is a usage error (exit 2).
pub fn bad_count(value: &str) -> String {
    format!("-n wants a whole number of at least 1, not '{}'", echoed_name(value))
}
/// M37: a verb or option of the old tool that this build leaves out (`whatsapp`, `profile`) is refused with its reason
/// (exit 2) instead of being accepted and ignored.
pub fn not_in_build(what: &str, why: &str) -> String {
    format!("'{what}' is not part of this build ({why})")
}

// The intake queue (issue 24, docs/intake.md IN-15).

/// `queue` with nothing queued or expired.
pub const QUEUE_EMPTY: &str = "No batch waits in the intake queue.";

pub fn queue_heading(queued: usize, max: u64, age: &str) -> String {
    format!(
        "{queued} batch(es) wait for a session slot, oldest first (the queue holds at most {max}, each for at most {age}):"
    )
}

pub fn expired_heading(expired: usize) -> String {
    format!(
        "{expired} expired batch(es) need a person: no session ever started for them (agent-box-session queue rm KEY once handled):"
    )
}

/// M53: a queued record ended by the operator.
pub fn queued_removed(record: &agent_box_types::intake::Record) -> String {
    format!(
        "batch '{}' removed from the intake queue ({}, {} batch(es)); no session will start for it",
        view::text::visible(&record.key),
        view::text::visible(&record.assignment),
        record.batches.len()
    )
}

/// M54: an expired row removed.
pub fn expired_removed(key: &str) -> String {
    format!("expired batch '{}' removed from the intake queue", view::text::visible(key))
}

/// M55 (exit 2).
pub fn no_queued_key(key: &str) -> String {
    format!("no batch in the intake queue has the key '{}' (agent-box-session queue lists them)", echoed_name(key))
}

/// M56 (exit 2).
pub fn ambiguous_key(key: &str, keys: &[String]) -> String {
    let keys: Vec<String> = keys.iter().map(|k| view::text::visible(k)).collect();
    format!("'{}' is the start of several keys ({}); give more of it", echoed_name(key), keys.join(", "))
}

/// M57: the queue could not be read (exit 1).
pub fn queue_unreadable(why: &str) -> String {
    why.to_owned()
}

/// M58: an ending that could not be written (exit 1; the record stays).
pub fn queue_not_removed(key: &str, reason: &str) -> String {
    format!(
        "could not remove batch '{}' from the intake queue ({reason}); it is still queued",
        view::text::visible(key)
    )
}
