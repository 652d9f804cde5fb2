//! `restart NAME` and `restart --all` (50-session-cli §11): admission, clear `stopped` (never `died`), then kill,
//! so the supervisor starts the session again.
//!
//! Issue 17: a leased session's restart is recorded on its lease before anything is killed, in the same
//! registry-lock section that clears `stopped` (as `stop` records `stopped`): `restartPending`, so the supervisor
//! reads the absence of the pane as the operator's restart and not as a loss, and for a hook name a `restart` line
//! in the hook log. A lease the operator `stopped` is revived (its outcome back to null), so what becomes of the
//! revived assignment is recorded again. A crash or a loss already on the lease stays, and so does the lease of a
//! session whose pane was already gone (nothing is restarted there that a loss did not end first): when the kill
//! finds no pane of a session that was not stopped, the mark is taken back.

use base::SessionName;
use lease::{Changed, Expect, HookLog, LeaseDir};
use registry::Document;
use view::{Context, KillResult};

use crate::error::{KillFailure, SessionError};
use crate::locked::{checked_name, lease_expectation, read_locked, registry_present, with_locked, write_locked};
use crate::messages;
use crate::out::Out;

/// Runs `restart NAME`, or `restart --all` when `name` is `None`.
pub fn restart(ctx: &Context, name: Option<&str>, out: &mut Out) -> Result<(), SessionError> {
    match name {
        Some(name) => one(ctx, name, out),
        None => all(ctx, out),
    }
}

fn is_shell(doc: &Document, key: &str) -> bool {
    doc.entry(key).and_then(|e| e.agent()) == Some("shell")
}

/// What `restart NAME` found under the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listed {
    No,
    Yes,
    /// Listed, and its `stopped` flag was just removed.
    Unstopped,
}

/// A restart recorded on a lease, with the expectation to take it back by.
#[derive(Debug)]
struct Marked {
    name: SessionName,
    expect: Expect,
    unstopped: bool,
}

fn one(ctx: &Context, raw: &str, out: &mut Out) -> Result<(), SessionError> {
    let name = checked_name(raw)?;
    let (listed, marked) = if registry_present(ctx)? { relisted(ctx, &name, out)? } else { (Listed::No, None) };
    let killed = ctx.kill(&name);
    settle_marks(ctx, marked.as_slice(), &[(&name, &killed)], out);
    let line = match (listed, killed) {
        (Listed::Unstopped, KillResult::Failed(reason)) => {
            return Err(SessionError::PartlyDone(messages::unstopped_but_not_killed(raw, &reason)));
        }
        (_, KillResult::Failed(reason)) => {
            return Err(SessionError::KillFailed(vec![KillFailure { name: raw.to_owned(), reason }]));
        }
        (Listed::No, KillResult::AlreadyGone) => return Err(SessionError::NoSuchSession(raw.to_owned())),
        (Listed::No, KillResult::Killed) => messages::killed_unlisted(raw),
        (_, KillResult::Killed) => messages::restarted(raw),
        (Listed::Unstopped, KillResult::AlreadyGone) => messages::unstopped(raw),
        (Listed::Yes, KillResult::AlreadyGone) => messages::had_no_pane(raw),
    };
    out.line(&line);
    Ok(())
}

/// Under the lock: admission for a listed name, then `stopped` removed, then the restart on its lease.
fn relisted(ctx: &Context, name: &SessionName, out: &mut Out) -> Result<(Listed, Option<Marked>), SessionError> {
    let (listed, marked, warning) = with_locked(ctx, out, |guard| {
        let mut doc = read_locked(guard)?;
        if !doc.contains(name.as_str()) {
            return Ok((Listed::No, None, None));
        }
        if !is_shell(&doc, name.as_str()) {
            ctx.check_capacity(doc.sessions(), &[name.as_str()])?;
        }
        let unstopped = doc.entry_mut(name).is_some_and(|mut e| e.remove_key("stopped"));
        if unstopped {
            write_locked(guard, &doc)?;
        }
        let (marked, warning) = mark_restart(ctx, &doc, name, unstopped);
        Ok((if unstopped { Listed::Unstopped } else { Listed::Yes }, marked, warning))
    })?;
    if let Some(warning) = warning {
        out.warn(warning);
    }
    Ok((listed, marked))
}

/// Records the restart on the lease of `name` (not for a crashed entry: its lease keeps the crash, and the
/// supervisor never reads a crashed session's absence as a loss). The expectation: the entry's life, which is
/// its lease's gen; the side file's gen, or any lease, for an entry without one.
fn mark_restart(
    ctx: &Context,
    doc: &Document,
    name: &SessionName,
    unstopped: bool,
) -> (Option<Marked>, Option<String>) {
    let Some(entry) = doc.entry(name.as_str()).filter(|e| e.died().is_none()) else { return (None, None) };
    let expect = lease_expectation(ctx, name, entry);
    let log = HookLog::new(ctx.paths.hook_log());
    match LeaseDir::new(ctx.paths.lease_dir()).record_restart(name, &expect, Some(&log)) {
        Ok(Changed::RestartRecorded { .. }) => (Some(Marked { name: name.clone(), expect, unstopped }), None),
        Ok(_) => (None, None),
        Err(err) => (None, Some(format!("lease of '{name}': restart not recorded: {err}"))),
    }
}

/// A restart recorded on a lease whose pane turned out to be gone already (not stopped: a loss, not the restart)
/// or could not be killed is taken back, so the supervisor still reads that absence as what it is.
fn settle_marks(ctx: &Context, marks: &[Marked], kills: &[(&SessionName, &KillResult)], out: &mut Out) {
    let leases = LeaseDir::new(ctx.paths.lease_dir());
    for mark in marks {
        let Some((_, killed)) = kills.iter().find(|(name, _)| **name == mark.name) else { continue };
        let keep = match killed {
            KillResult::Killed => true,
            KillResult::AlreadyGone => mark.unstopped,
            KillResult::Failed(_) => false,
        };
        if !keep && let Err(err) = leases.withdraw_restart(&mark.name, &mark.expect) {
            out.warn(format!("lease of '{}': restart mark not taken back: {err}", mark.name));
        }
    }
}

fn all(ctx: &Context, out: &mut Out) -> Result<(), SessionError> {
    if nothing_listed(ctx) {
        out.line(messages::NOTHING_TO_RESTART);
        return Ok(());
    }
    let (keys, cleared, marks, warnings) = with_locked(ctx, out, |guard| {
        let mut doc = read_locked(guard)?;
        let keys: Vec<String> = doc.names().map(str::to_owned).collect();
        let targets: Vec<&str> = keys.iter().map(String::as_str).filter(|k| !is_shell(&doc, k)).collect();
        if !targets.is_empty() {
            ctx.check_capacity(doc.sessions(), &targets)?;
        }
        let mut unstopped = Vec::new();
        for name in keys.iter().filter_map(|k| SessionName::parse(k).ok()) {
            if doc.entry_mut(&name).is_some_and(|mut e| e.remove_key("stopped")) {
                unstopped.push(name);
            }
        }
        if !unstopped.is_empty() {
            write_locked(guard, &doc)?;
        }
        let (mut marks, mut warnings) = (Vec::new(), Vec::new());
        for name in keys.iter().filter_map(|k| SessionName::parse(k).ok()) {
            let (marked, warning) = mark_restart(ctx, &doc, &name, unstopped.contains(&name));
            marks.extend(marked);
            warnings.extend(warning);
        }
        Ok((keys, unstopped.len(), marks, warnings))
    })?;
    for warning in warnings {
        out.warn(warning);
    }
    let (mut killed, mut without_pane, mut failures) = (0, 0, Vec::new());
    let mut kills = Vec::new();
    for name in keys.iter().filter_map(|k| SessionName::parse(k).ok()) {
        let result = ctx.kill(&name);
        match &result {
            KillResult::Failed(reason) => failures.push(KillFailure { name: name.to_string(), reason: reason.clone() }),
            KillResult::Killed => killed += 1,
            KillResult::AlreadyGone => without_pane += 1,
        }
        kills.push((name, result));
    }
    let kill_refs: Vec<(&SessionName, &KillResult)> = kills.iter().map(|(n, k)| (n, k)).collect();
    settle_marks(ctx, &marks, &kill_refs, out);
    if !failures.is_empty() {
        return Err(SessionError::KillsFailedAfterWrite { failures, cleared });
    }
    // "killed" only when every session had a pane: a stopped or starting one was not killed (issue 11).
    if without_pane == 0 {
        out.line(messages::ALL_RESTARTED);
    } else {
        out.line(&messages::all_restarting(killed, without_pane));
    }
    Ok(())
}

/// A missing registry, or one without keys (§11 `--all` step 1); an unusable one is reported under the lock.
fn nothing_listed(ctx: &Context) -> bool {
    match registry::read(ctx.paths.registry()) {
        registry::ReadOutcome::Missing | registry::ReadOutcome::Empty => true,
        registry::ReadOutcome::Valid(doc) => doc.names().next().is_none(),
        registry::ReadOutcome::Invalid(_) | registry::ReadOutcome::Unreadable(_) => false,
    }
}
