//! `restart NAME` and `restart --all` (50-session-cli §11): admission, clear `stopped` (never `died`), then kill,
//! so the supervisor starts the session again.
//!
//! Issue 17: a leased session's restart is recorded on its lease before anything is killed, in the same
//! registry-lock section that clears `stopped` (as `stop` records `stopped`): `restartPending`, so the supervisor
//! reads the absence of the pane as the operator's restart and not as a loss, and for a hook name a `restart` line
//! in the hook log. A lease the operator `stopped` is revived (its outcome back to null), so what becomes of the
//! revived assignment is recorded again. A crash or a loss already on the lease stays.
//!
//! Issue 25 (L-16): which pane the restart ends is decided in that same section, because the supervisor needs the
//! registry lock to start one. The section lists the live sessions with their identities (the capacity check's
//! probe, one tmux call); the kill after it ends only the session found then, by its identity, so a pane the
//! supervisor started for the unstopped entry in between is never the one killed. A session that had no pane then
//! is killed by nobody, and is marked only when this restart unstopped it: its absence was the stop, and the
//! supervisor's start ends it (L-15). A session that was neither stopped nor had a pane is a loss the restart did
//! not cause: no mark. The one mark taken back is that of a kill that failed (the pane still runs).

use base::SessionName;
use lease::{Changed, Expect, HookLog, LeaseDir};
use registry::Document;
use view::{Context, KillResult};

use crate::error::{KillFailure, SessionError};
use crate::locked::{checked_name, lease_expectation, read_locked, registry_present, with_locked, write_locked};
use crate::messages;
use crate::out::Out;
use crate::pane::Pane;

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

/// Whether the absence that follows `pane` is this restart's: the pane it ends, or the stop it just took back.
fn absence_is_the_restart(pane: &Pane, unstopped: bool) -> bool {
    matches!((pane, unstopped), (Pane::Live(_), _) | (Pane::None, true))
}

/// A restart recorded on a lease, with the expectation to take it back by.
#[derive(Debug)]
struct Marked {
    name: SessionName,
    expect: Expect,
}

fn one(ctx: &Context, raw: &str, out: &mut Out) -> Result<(), SessionError> {
    let name = checked_name(raw)?;
    let (listed, marked, pane) = if registry_present(ctx)? {
        relisted(ctx, &name, out)?
    } else {
        (Listed::No, None, Pane::of(&ctx.live_panes(), &name))
    };
    let killed = pane.end(ctx);
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

/// Under the lock: the live panes, admission for a listed name, then `stopped` removed, then the restart on its
/// lease when the absence to come is this restart's.
fn relisted(ctx: &Context, name: &SessionName, out: &mut Out) -> Result<(Listed, Option<Marked>, Pane), SessionError> {
    let (listed, marked, warning, pane) = with_locked(ctx, out, |guard| {
        let mut doc = read_locked(guard)?;
        let panes = ctx.live_panes();
        let pane = Pane::of(&panes, name);
        if !doc.contains(name.as_str()) {
            return Ok((Listed::No, None, None, pane));
        }
        if !is_shell(&doc, name.as_str()) {
            ctx.check_capacity_over(doc.sessions(), &[name.as_str()], panes.map(|p| p.names()))?;
        }
        let unstopped = doc.entry_mut(name).is_some_and(|mut e| e.remove_key("stopped"));
        if unstopped {
            write_locked(guard, &doc)?;
        }
        let (marked, warning) =
            if absence_is_the_restart(&pane, unstopped) { mark_restart(ctx, &doc, name) } else { (None, None) };
        Ok((if unstopped { Listed::Unstopped } else { Listed::Yes }, marked, warning, pane))
    })?;
    if let Some(warning) = warning {
        out.warn(warning);
    }
    Ok((listed, marked, pane))
}

/// Records the restart on the lease of `name` (not for a crashed entry: its lease keeps the crash, and the
/// supervisor never reads a crashed session's absence as a loss). The expectation: the entry's life, which is
/// its lease's gen; the side file's gen, or any lease, for an entry without one.
fn mark_restart(ctx: &Context, doc: &Document, name: &SessionName) -> (Option<Marked>, Option<String>) {
    let Some(entry) = doc.entry(name.as_str()).filter(|e| e.died().is_none()) else { return (None, None) };
    let expect = lease_expectation(ctx, name, entry);
    let log = HookLog::new(ctx.paths.hook_log());
    match LeaseDir::new(ctx.paths.lease_dir()).record_restart(name, &expect, Some(&log)) {
        Ok(Changed::RestartRecorded { .. }) => (Some(Marked { name: name.clone(), expect }), None),
        Ok(_) => (None, None),
        Err(err) => (None, Some(format!("lease of '{name}': restart not recorded: {err}"))),
    }
}

/// L-14: the mark of a pane that could not be killed is taken back, so the supervisor still reads a later absence
/// of that pane as what it is. A kill that found its pane gone keeps the mark: the pane the restart was to end
/// has ended, and the mark may already be consumed or taken by the start that followed (L-13, L-15), which no
/// later withdrawal may contradict.
fn settle_marks(ctx: &Context, marks: &[Marked], kills: &[(&SessionName, &KillResult)], out: &mut Out) {
    let leases = LeaseDir::new(ctx.paths.lease_dir());
    for mark in marks {
        let Some((_, killed)) = kills.iter().find(|(name, _)| **name == mark.name) else { continue };
        if matches!(killed, KillResult::Failed(_))
            && let Err(err) = leases.withdraw_restart(&mark.name, &mark.expect)
        {
            out.warn(format!("lease of '{}': restart mark not taken back: {err}", mark.name));
        }
    }
}

/// What the `--all` section decided: the names, how many were unstopped, the marks, the warnings, the panes.
type AllDecided = (Vec<SessionName>, usize, Vec<Marked>, Vec<String>, Vec<Pane>);

fn all(ctx: &Context, out: &mut Out) -> Result<(), SessionError> {
    if nothing_listed(ctx) {
        out.line(messages::NOTHING_TO_RESTART);
        return Ok(());
    }
    let (names, cleared, marks, warnings, panes) = with_locked(ctx, out, |guard| all_locked(ctx, guard))?;
    for warning in warnings {
        out.warn(warning);
    }
    let (mut killed, mut without_pane, mut failures) = (0, 0, Vec::new());
    let kills: Vec<KillResult> = panes.iter().map(|pane| pane.end(ctx)).collect();
    for (name, result) in names.iter().zip(&kills) {
        match result {
            KillResult::Failed(reason) => failures.push(KillFailure { name: name.to_string(), reason: reason.clone() }),
            KillResult::Killed => killed += 1,
            KillResult::AlreadyGone => without_pane += 1,
        }
    }
    let kill_refs: Vec<(&SessionName, &KillResult)> = names.iter().zip(&kills).collect();
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

/// The `--all` section: the live panes, admission, every `stopped` removed, then each restart on its lease.
fn all_locked(ctx: &Context, guard: &registry::RegistryLock) -> Result<AllDecided, SessionError> {
    let mut doc = read_locked(guard)?;
    let keys: Vec<String> = doc.names().map(str::to_owned).collect();
    let live = ctx.live_panes();
    let targets: Vec<&str> = keys.iter().map(String::as_str).filter(|k| !is_shell(&doc, k)).collect();
    if !targets.is_empty() {
        ctx.check_capacity_over(doc.sessions(), &targets, live.clone().map(|p| p.names()))?;
    }
    let names: Vec<SessionName> = keys.iter().filter_map(|k| SessionName::parse(k).ok()).collect();
    let mut unstopped = Vec::new();
    for name in &names {
        if doc.entry_mut(name).is_some_and(|mut e| e.remove_key("stopped")) {
            unstopped.push(name.clone());
        }
    }
    if !unstopped.is_empty() {
        write_locked(guard, &doc)?;
    }
    let (mut marks, mut warnings, mut panes) = (Vec::new(), Vec::new(), Vec::new());
    for name in &names {
        let pane = Pane::of(&live, name);
        if absence_is_the_restart(&pane, unstopped.contains(name)) {
            let (marked, warning) = mark_restart(ctx, &doc, name);
            marks.extend(marked);
            warnings.extend(warning);
        }
        panes.push(pane);
    }
    Ok((names, unstopped.len(), marks, warnings, panes))
}

/// A missing registry, or one without keys (§11 `--all` step 1); an unusable one is reported under the lock.
fn nothing_listed(ctx: &Context) -> bool {
    match registry::read(ctx.paths.registry()) {
        registry::ReadOutcome::Missing | registry::ReadOutcome::Empty => true,
        registry::ReadOutcome::Valid(doc) => doc.names().next().is_none(),
        registry::ReadOutcome::Invalid(_) | registry::ReadOutcome::Unreadable(_) => false,
    }
}
