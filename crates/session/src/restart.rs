//! `restart NAME` and `restart --all` (50-session-cli §11): admission, clear `stopped` (never `died`), then kill,
//! so the supervisor starts the session again.

use registry::{Document, SessionName};
use view::{Context, KillResult};

use crate::error::{KillFailure, SessionError};
use crate::locked::{checked_name, read_locked, with_locked, write_locked};
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

fn one(ctx: &Context, raw: &str, out: &mut Out) -> Result<(), SessionError> {
    let name = checked_name(raw)?;
    let listed = if ctx.paths.registry().exists() { relisted(ctx, &name, out)? } else { Listed::No };
    let line = match (listed, ctx.kill(&name)) {
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

/// Under the lock: admission for a listed name, then `stopped` removed.
fn relisted(ctx: &Context, name: &SessionName, out: &mut Out) -> Result<Listed, SessionError> {
    with_locked(ctx, out, |guard| {
        let mut doc = read_locked(guard)?;
        if !doc.contains(name.as_str()) {
            return Ok(Listed::No);
        }
        if !is_shell(&doc, name.as_str()) {
            ctx.check_capacity(doc.sessions(), &[name.as_str()])?;
        }
        if doc.entry_mut(name).is_some_and(|mut e| e.remove_key("stopped")) {
            write_locked(guard, &doc)?;
            return Ok(Listed::Unstopped);
        }
        Ok(Listed::Yes)
    })
}

fn all(ctx: &Context, out: &mut Out) -> Result<(), SessionError> {
    if nothing_listed(ctx) {
        out.line(messages::NOTHING_TO_RESTART);
        return Ok(());
    }
    let (keys, cleared) = with_locked(ctx, out, |guard| {
        let mut doc = read_locked(guard)?;
        let keys: Vec<String> = doc.names().map(str::to_owned).collect();
        let targets: Vec<&str> = keys.iter().map(String::as_str).filter(|k| !is_shell(&doc, k)).collect();
        if !targets.is_empty() {
            ctx.check_capacity(doc.sessions(), &targets)?;
        }
        let mut cleared = 0;
        for name in keys.iter().filter_map(|k| SessionName::parse(k).ok()) {
            cleared += usize::from(doc.entry_mut(&name).is_some_and(|mut e| e.remove_key("stopped")));
        }
        if cleared > 0 {
            write_locked(guard, &doc)?;
        }
        Ok((keys, cleared))
    })?;
    let (mut killed, mut without_pane, mut failures) = (0, 0, Vec::new());
    for name in keys.iter().filter_map(|k| SessionName::parse(k).ok()) {
        match ctx.kill(&name) {
            KillResult::Failed(reason) => failures.push(KillFailure { name: name.to_string(), reason }),
            KillResult::Killed => killed += 1,
            KillResult::AlreadyGone => without_pane += 1,
        }
    }
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
