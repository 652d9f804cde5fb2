//! `restart NAME` and `restart --all` (50-session-cli §11): admission, clear `stopped` (never `died`), then kill,
//! so the supervisor starts the session again.

use registry::{Document, SessionName, exit};

use crate::context::{Context, KillResult};
use crate::locked::{Stop, capacity_refused, checked_name, read_locked, with_locked, write_locked};
use crate::messages;
use crate::out::{Out, say, say_bare};

pub fn restart(ctx: &Context, name: Option<&str>, out: &mut Out) -> u8 {
    let result = match name {
        Some(name) => one(ctx, name, out),
        None => all(ctx, out),
    };
    match result {
        Ok(code) | Err(Stop(code)) => code,
    }
}

fn is_shell(doc: &Document, key: &str) -> bool {
    doc.entry(key).and_then(|e| e.agent()) == Some("shell")
}

fn one(ctx: &Context, raw: &str, out: &mut Out) -> Result<u8, Stop> {
    let name = checked_name(raw)?;
    let listed = ctx.paths.registry().exists() && relisted(ctx, &name)?;
    let killed = ctx.kill(&name);
    match (listed, killed) {
        (_, KillResult::Failed(reason)) => {
            say(&messages::kill_failed(raw, &reason));
            Ok(exit::FAILURE)
        }
        (true, _) => {
            out.line(&messages::restarted(raw));
            Ok(exit::OK)
        }
        (false, KillResult::AlreadyGone) => {
            say_bare(&messages::no_such_session(raw));
            Ok(exit::USAGE)
        }
        (false, KillResult::Killed) => {
            out.line(&messages::killed_unlisted(raw));
            Ok(exit::OK)
        }
    }
}

/// Under the lock: admission for a listed name, then `stopped` removed; false when the name is not listed.
fn relisted(ctx: &Context, name: &SessionName) -> Result<bool, Stop> {
    with_locked(ctx, |guard| {
        let mut doc = read_locked(guard)?;
        if !doc.contains(name.as_str()) {
            return Ok(false);
        }
        if !is_shell(&doc, name.as_str()) {
            ctx.check_capacity(doc.sessions(), &[name.as_str()]).map_err(|e| capacity_refused(&e))?;
        }
        if doc.entry_mut(name).is_some_and(|mut e| e.remove_key("stopped")) {
            write_locked(guard, &doc)?;
        }
        Ok(true)
    })
}

fn all(ctx: &Context, out: &mut Out) -> Result<u8, Stop> {
    if nothing_listed(ctx) {
        out.line(messages::NOTHING_TO_RESTART);
        return Ok(exit::OK);
    }
    let keys = with_locked(ctx, |guard| {
        let mut doc = read_locked(guard)?;
        let keys: Vec<String> = doc.names().map(str::to_owned).collect();
        let targets: Vec<&str> = keys.iter().map(String::as_str).filter(|k| !is_shell(&doc, k)).collect();
        if !targets.is_empty() {
            ctx.check_capacity(doc.sessions(), &targets).map_err(|e| capacity_refused(&e))?;
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
    let mut failed = false;
    for name in keys.iter().filter_map(|k| SessionName::parse(k).ok()) {
        if let KillResult::Failed(reason) = ctx.kill(&name) {
            say(&messages::kill_failed(name.as_str(), &reason));
            failed = true;
        }
    }
    if failed {
        return Ok(exit::FAILURE);
    }
    out.line(messages::ALL_RESTARTED);
    Ok(exit::OK)
}

/// A missing registry, or one without keys (§11 `--all` step 1); an unusable one is reported under the lock.
fn nothing_listed(ctx: &Context) -> bool {
    match registry::read(ctx.paths.registry()) {
        registry::ReadOutcome::Missing | registry::ReadOutcome::Empty => true,
        registry::ReadOutcome::Valid(doc) => doc.names().next().is_none(),
        registry::ReadOutcome::Invalid(_) | registry::ReadOutcome::Unreadable(_) => false,
    }
}
