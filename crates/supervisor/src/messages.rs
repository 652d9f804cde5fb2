//! Every log line of the supervisor, one function (or constant) per line, so the wording lives in one place and
//! golden/supervisor pins it. Arguments that only need printing are `impl Display`.

use std::path::Path;

use base::SessionName;

use std::fmt::Display;

// Start-up and the loop (main.rs, run.rs).

/// An inherited registry lock descriptor is not the supervisor's to use.
pub const INHERITED_LOCK_IGNORED: &str = "ignoring inherited AGENT_BOX_REGISTRY_LOCK_FD";

pub fn lock_wait_ignored(value: &str) -> String {
    format!("ignoring REGISTRY_LOCK_WAIT='{value}': not a number of seconds; using 1s")
}

pub fn tick_secs_ignored(value: &str) -> String {
    format!("ignoring AGENT_BOX_TICK_SECS='{value}': not a number of seconds from 0.05 to 86400; using 2s")
}

/// F20: another supervisor holds the single-instance lock; `pid` is what its lock file says.
pub fn already_running(pid: Option<u32>, registry: &str, lock: &Path) -> String {
    let who =
        pid.map_or_else(|| "another agent-box-supervisor".to_owned(), |p| format!("agent-box-supervisor pid {p}"));
    let stop_it = pid.map_or_else(String::new, |p| format!(", or kill {p}"));
    format!(
        "not starting: {who} already serves registry {registry} (lock {}); stop it first (systemctl --user stop agent-box.service{stop_it})",
        lock.display()
    )
}

pub fn running_without_instance_lock(err: impl Display) -> String {
    format!("cannot take the single-instance lock ({err}); running without it")
}

pub fn instance_lock_failed(lock: &Path, err: impl Display) -> String {
    format!("cannot take the single-instance lock {}: {err}", lock.display())
}

pub fn tmux_too_old(major: impl Display, minor: impl Display) -> String {
    format!("tmux {major}.{minor} is too old: 3.2 or newer is required")
}

pub fn signal_handlers_failed(err: impl Display) -> String {
    format!("cannot install signal handlers: {err}")
}

pub fn wake_not_installed(err: impl Display) -> String {
    format!("not installing the session-closed wake ({err}); a killed session is noticed at the next tick")
}

pub fn cannot_watch_registry(dir: &str, err: impl Display) -> String {
    format!("cannot watch {dir} for changes ({err}); polling every 2s")
}

/// L37: the queue directory cannot be watched (once per streak).
pub fn cannot_watch_queue(dir: &str, err: impl Display) -> String {
    format!("cannot watch {dir} for queued batches ({err}); they are admitted at the next tick")
}

pub fn cannot_watch_closed(file: &str, err: impl Display) -> String {
    format!("cannot watch {file} for ended sessions ({err}); a killed session is noticed at the next tick")
}

pub fn signal_received(signal: &str) -> String {
    format!("{signal} received; exiting after this tick (sessions keep running)")
}

// The tick (supervisor.rs).

/// L1.
pub fn started(socket: &str, dir: &str, registry: &str) -> String {
    format!("started (tmux socket {socket} in {dir}, registry {registry})")
}

pub const TMUX_REACHABLE_AGAIN: &str = "tmux is reachable again";

/// UP-3.1: an external server is down; its unit starts it.
pub const TMUX_SERVER_ABSENT: &str = "tmux server is not running; its unit starts it \u{2014} waiting";

pub fn tmux_unreachable(reason: &str) -> String {
    format!("cannot reach tmux ({reason}); no session can be started or checked; retrying every tick")
}

/// L4.
pub fn all_sessions_disappeared(lost: usize) -> String {
    format!("all {lost} managed sessions disappeared at once (tmux server restarted?); respawning them")
}

/// L22.
pub fn server_changed(old: u32, new: u32) -> String {
    format!("the tmux server changed (pid {old}, now {new})")
}

pub fn wake_hook_refused(reason: &str) -> String {
    format!("tmux did not accept the session-closed hook ({reason}); a killed session is noticed at the next tick")
}

/// L9.
pub fn lock_not_obtained(reason: &str) -> String {
    format!("registry lock not obtained ({reason}); no session started or reaped this tick")
}

/// L13: `quoted` is the key as a JSON string.
pub fn bad_registry_key(quoted: &str) -> String {
    format!("ignoring registry key {quoted}: names are [A-Za-z0-9_-]+")
}

/// L14.
pub fn entry_not_an_object(key: &str) -> String {
    format!("session '{key}': its entry is not a JSON object - skipping")
}

/// L21: `status` is the `died` value as JSON.
pub fn exited_with_status(name: &SessionName, status: &str) -> String {
    format!(
        "'{name}' exited with status {status}; its pane is kept for inspection, not restarted (agent-box-session restart {name} starts it again)"
    )
}

/// L24: `lease` says what happened to its lease.
pub fn vanished(name: &SessionName, lease: &str) -> String {
    format!("'{name}' vanished: its pane ended without recording how (killed, reboot or out of memory); {lease}")
}

pub fn backoff_over(name: &SessionName) -> String {
    format!("'{name}' backoff is over; starting it again")
}

pub fn keeps_exiting(name: &SessionName, streak: impl Display, at: &str) -> String {
    format!("'{name}' keeps exiting ({streak} quick exits in a row); next start not before {at}")
}

pub fn backoff_reset(name: &SessionName) -> String {
    format!("'{name}' has stayed up for 10 minutes; backoff reset")
}

pub fn lease_update_skipped(err: impl Display) -> String {
    format!("lease update skipped: {err}")
}

// Starting a session (spawn.rs, adopt.rs, intent.rs, life.rs).

/// L15.
pub fn cannot_write(name: impl Display, path: impl Display, err: impl Display) -> String {
    format!("session '{name}': cannot write {path} ({err})")
}

pub fn waiting(name: &SessionName, err: impl Display) -> String {
    format!("{name} waiting: {err}")
}

pub fn codex_remote_control_ignored(name: &SessionName) -> String {
    format!("session '{name}': codex remote control is not supported here; starting the codex TUI")
}

/// L6.
pub fn agent_not_installed(name: &SessionName, agent: &str) -> String {
    format!("session '{name}': agent '{agent}' is not installed - skipping")
}

pub fn entry_problem(name: &SessionName, problem: &str) -> String {
    format!("session '{name}': {problem} - skipping")
}

pub fn cwd_unusable(name: &SessionName, dir: &str, home: &str) -> String {
    format!("session '{name}': working directory '{dir}' is not usable; starting in {home}")
}

pub fn new_session_failed(name: &SessionName, reason: &str) -> String {
    format!("session '{name}': tmux new-session failed: {reason}")
}

/// L20: `kind` is first start, respawn or resume; `lease` is `lease gen G` or `no lease`.
pub fn started_pane(name: &SessionName, kind: &str, agent: &str, pid: &str, lease: &str) -> String {
    format!("started '{name}' ({kind}, harness {agent}, pane pid {pid}, {lease})")
}

pub fn removed_while_starting(name: &SessionName) -> String {
    format!("'{name}' was removed or stopped while it was starting; killed the new pane")
}

pub fn adopted_unrecorded(name: &SessionName, launch_id: &str) -> String {
    format!(
        "'{name}' was already running but its start was never recorded (a supervisor stopped mid-spawn); adopted it as launch {launch_id}"
    )
}

// Sweeps (sweep.rs).

pub fn reaped_parked(name: impl Display) -> String {
    format!("reaped '{name}': a parked one-shot session whose pane is gone")
}

pub fn swept_lease(name: impl Display) -> String {
    format!("swept the lease of '{name}': no longer listed")
}

pub fn swept_side_file(name: impl Display) -> String {
    format!("swept the supervisor state of '{name}': no longer listed")
}

pub fn swept_filter(stem: impl Display) -> String {
    format!("swept the claim filter of '{stem}': no longer listed")
}

/// The locked pre-check found the entry changed since the tick document (issue 17 row 10).
pub fn changed_while_preparing(name: &SessionName) -> String {
    format!("'{name}' changed while its start was being prepared; preparing it again")
}

/// D12 found the operator's `restart` recorded on the lease: not a loss (issue 17 row 4).
pub fn restarted_by_operator(name: &SessionName) -> String {
    format!("'{name}' was restarted by the operator; its assignment goes on in a new pane, its lease open")
}

/// Issue 20: a spawn found no env store; panes start with the unit's variables only.
pub fn env_store_missing(path: &Path) -> String {
    format!("no env store at {}: sessions start without it (agent-box-session env set KEY adds one)", path.display())
}

/// Issue 20: the env store exists but cannot be read; panes start without it.
pub fn env_store_unreadable(err: &registry::envstore::StoreError) -> String {
    format!("the env store is not loaded: {err}; sessions start without it")
}

/// Issue 20: a store key names a variable the supervisor sets itself; the pane's own value wins.
pub fn env_store_override(path: &Path, key: &str) -> String {
    format!(
        "{} sets {key}, which agent-box sets itself (AGENT_BOX_*, the loader's _abx_* and the pane's own variables always win); \
         the store's value is not loaded",
        path.display()
    )
}

/// Issue 21 (N-9): the notifier exited 0 for an outcome and the lease records it.
pub fn outcome_delivered(name: &SessionName, outcome: &str, program: &str, failed_before: u64) -> String {
    let after = match failed_before {
        0 => String::new(),
        1 => " after 1 failed attempt".to_owned(),
        n => format!(" after {n} failed attempts"),
    };
    format!("reported the outcome of '{name}' ({outcome}) to {program}{after}")
}

/// Issue 21: the notifier exited 0, but the lease no longer carried that outcome (removed or revived meanwhile).
pub fn outcome_delivered_unrecorded(name: &SessionName, outcome: &str, program: &str) -> String {
    format!("reported the outcome of '{name}' ({outcome}) to {program}; its lease changed meanwhile, nothing recorded")
}

/// Issue 21 (N-9): the first failure of a streak; later ones are silent until a delivery.
pub fn outcome_not_delivered(name: &SessionName, outcome: &str, program: &str, reason: &str, next_at: i64) -> String {
    let at = base::time::format_iso(next_at);
    format!(
        "could not report the outcome of '{name}' ({outcome}): {program} {reason}; retrying from {at}, backing off up to \
         10 minutes (agent-box-session leases shows it pending)"
    )
}

/// Issue 21 (N-8): the marker that tells `leases` outcomes are reported could not be written.
pub fn notify_marker_failed(path: &Path, err: &std::io::Error) -> String {
    format!("cannot write {} ({err}); agent-box-session leases will show outcomes as not reported", path.display())
}

// The intake queue (intake.rs, issue 24, docs/intake.md).

/// L27: the end of an L26 streak.
pub const QUEUE_READABLE_AGAIN: &str = "the intake queue can be read again";

/// L26: the queue cannot be listed (once per streak).
pub fn queue_unreadable(err: impl Display) -> String {
    format!("{err}; no queued batch is admitted until it can be read")
}

/// L28, IN-11: a record became a session.
pub fn intake_admitted(key: &str, name: &SessionName, waited: &str) -> String {
    format!("admitted queued batch '{key}' as '{name}' after {waited} in the queue")
}

/// L29: a warning of an admitted record's start (W2, W7 of webhook-spawn).
pub fn admission_note(name: &SessionName, note: &str) -> String {
    format!("'{name}': {note}")
}

/// L30, IN-14: a live session claims the record's work.
pub fn intake_claimed(key: &str, by: &str) -> String {
    format!("queued batch '{key}' ended claimed: live session '{by}' already claims its work")
}

/// L31, IN-9: a record past a bound.
pub fn intake_expired(key: &str, assignment: &str, waited: &str) -> String {
    format!(
        "queued batch '{key}' ({assignment}) expired after {waited} without a free slot; it is kept as an unresolved row (agent-box-session queue)"
    )
}

/// L32: an ending that could not be written.
pub fn intake_not_ended(key: &str, err: impl Display) -> String {
    format!("queued batch '{key}' could not be ended ({err}); it stays queued")
}

/// L33: no record can be admitted (the registry, the limit or tmux cannot be read); once per streak.
pub fn intake_undecided(why: &str) -> String {
    format!("queued batches wait: {why}")
}

/// L34: one record could not be admitted; once per record per streak.
pub fn intake_failed(key: &str, why: &str) -> String {
    format!("queued batch '{key}' was not admitted: {why}; it stays queued and is tried again")
}

/// L35, IN-12: an admission a crash interrupted, finished or taken back (L36).
pub fn admission_finished(key: &str, name: &str) -> String {
    format!("finished the interrupted admission of queued batch '{key}' as '{name}'")
}

pub fn admission_taken_back(key: &str, name: &str) -> String {
    format!(
        "took back the interrupted admission of queued batch '{key}' as '{name}' (nothing of it had started); it waits again"
    )
}

/// L38, IN-10: an expired intake record was reported to the notifier; `recorded` false when its row changed or was
/// removed meanwhile (nothing was recorded).
pub fn intake_reported(key: &str, program: &str, failed_before: u64, recorded: bool) -> String {
    let after = match failed_before {
        0 => String::new(),
        1 => " after 1 failed attempt".to_owned(),
        n => format!(" after {n} failed attempts"),
    };
    let note = if recorded { "" } else { "; its row changed meanwhile, nothing recorded" };
    format!("reported the expired batch '{key}' to {program}{after}{note}")
}

/// L39, IN-10: the first failure of a streak for an expired intake record.
pub fn intake_not_reported(key: &str, program: &str, reason: &str, next_at: i64) -> String {
    let at = base::time::format_iso(next_at);
    format!(
        "could not report the expired batch '{key}': {program} {reason}; retrying from {at}, backing off up to 10 minutes (agent-box-session queue shows it pending)"
    )
}

// The claims database (boxes.rs, issue 26, docs/boxes.md).

/// L40: the database did not answer; nothing is admitted, claims are not renewed (once per streak).
pub fn claims_unreachable(err: impl Display) -> String {
    format!("{err}; no queued batch is admitted and no claim renewed until it answers")
}

/// L41: the end of an L40 streak.
pub const CLAIMS_REACHABLE_AGAIN: &str = "the claims database answers again";

/// L42, BX-8: another box holds the claim now; the local session ended.
pub fn claim_moved(name: &SessionName, assignment: &str, by: &str) -> String {
    format!(
        "'{name}' ended: box '{by}' holds the claim of {assignment} now (this box could not renew it in time); nothing is resumed here"
    )
}

/// L43, BX-9: half a term without a renewal; the claimed panes are stopped until one succeeds.
pub fn claims_fenced(stopped: usize) -> String {
    format!(
        "the claims could not be renewed for half a term: {stopped} claimed pane(s) stopped, and none starts until the claims database confirms it"
    )
}

/// L44, BX-4: a record that waited for another box's claim ended, that box having finished the assignment.
pub fn intake_elsewhere_done(key: &str, by: &str) -> String {
    format!("queued batch '{key}' ended elsewhere: box '{by}' ran its assignment")
}

/// L45, BX-1: the claims marker could not be written (webhook-spawn may then admit without a claim).
pub fn claims_marker_failed(err: &std::io::Error) -> String {
    format!("cannot write the claims marker ({err}); webhook-spawn cannot tell that only this supervisor may admit")
}

/// L46, IN-12: an end (claimed, expired, removed) a crash interrupted, finished.
pub fn end_finished(key: &str, how: &str) -> String {
    format!("finished the interrupted end of queued batch '{key}' ({how}); its end record is written again")
}
