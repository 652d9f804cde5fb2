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

fn one(ctx: &Context, raw: &str, out: &mut Out) -> Result<(), SessionError> {
    let name = checked_name(raw)?;
    let listed = ctx.paths.registry().exists() && relisted(ctx, &name, out)?;
    match (listed, ctx.kill(&name)) {
        (_, KillResult::Failed(reason)) => {
            Err(SessionError::KillFailed(vec![KillFailure { name: raw.to_owned(), reason }]))
        }
        (true, _) => {
            out.line(&messages::restarted(raw));
            Ok(())
        }
        (false, KillResult::AlreadyGone) => Err(SessionError::NoSuchSession(raw.to_owned())),
        (false, KillResult::Killed) => {
            out.line(&messages::killed_unlisted(raw));
            Ok(())
        }
    }
}

/// Under the lock: admission for a listed name, then `stopped` removed; false when the name is not listed.
fn relisted(ctx: &Context, name: &SessionName, out: &mut Out) -> Result<bool, SessionError> {
    with_locked(ctx, out, |guard| {
        let mut doc = read_locked(guard)?;
        if !doc.contains(name.as_str()) {
            return Ok(false);
        }
        if !is_shell(&doc, name.as_str()) {
            ctx.check_capacity(doc.sessions(), &[name.as_str()])?;
        }
        if doc.entry_mut(name).is_some_and(|mut e| e.remove_key("stopped")) {
            write_locked(guard, &doc)?;
        }
        Ok(true)
    })
}

fn all(ctx: &Context, out: &mut Out) -> Result<(), SessionError> {
    if nothing_listed(ctx) {
        out.line(messages::NOTHING_TO_RESTART);
        return Ok(());
    }
    let keys = with_locked(ctx, out, |guard| {
        let mut doc = read_locked(guard)?;
        let keys: Vec<String> = doc.names().map(str::to_owned).collect();
        let targets: Vec<&str> = keys.iter().map(String::as_str).filter(|k| !is_shell(&doc, k)).collect();
        if !targets.is_empty() {
            ctx.check_capacity(doc.sessions(), &targets)?;
        }
        let mut changed = false;
        for name in keys.iter().filter_map(|k| SessionName::parse(k).ok()) {
            changed |= doc.entry_mut(&name).is_some_and(|mut e| e.remove_key("stopped"));
        }
        if changed {
            write_locked(guard, &doc)?;
        }
        Ok(keys)
    })?;
    let failures: Vec<KillFailure> = keys
        .iter()
        .filter_map(|k| SessionName::parse(k).ok())
        .filter_map(|name| match ctx.kill(&name) {
            KillResult::Failed(reason) => Some(KillFailure { name: name.to_string(), reason }),
            KillResult::Killed | KillResult::AlreadyGone => None,
        })
        .collect();
    if !failures.is_empty() {
        return Err(SessionError::KillFailed(failures));
    }
    out.line(messages::ALL_RESTARTED);
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
