//! `rm NAME` (50-session-cli §9): delist first, then kill, then clean up, so a spawn prepared from an older read
//! is killed by the supervisor's post-check instead of coming back.

use lease::{EndHow, Expect, HookLog, LeaseDir, LeaseState};
use registry::SessionName;
use view::{Context, KillResult};

use crate::error::{KillFailure, SessionError};
use crate::locked::{checked_name, read_locked, with_locked, write_locked};
use crate::messages;
use crate::out::Out;

/// Runs `rm NAME`; M23 on stdout, or M24 when the kill failed (the name is delisted either way).
pub fn rm(ctx: &Context, raw: &str, out: &mut Out) -> Result<(), SessionError> {
    let name = checked_name(raw)?;
    let was_key = if ctx.paths.registry().exists() { delist(ctx, &name, out)? } else { false };
    let killed = ctx.kill(&name);
    clean_up(ctx, &name, was_key, out);
    if let KillResult::Failed(reason) = killed {
        return Err(SessionError::KillFailed(vec![KillFailure { name: raw.to_owned(), reason }]));
    }
    out.line(&messages::removed(raw));
    Ok(())
}

/// Under the lock: drop the key; true when it was one.
fn delist(ctx: &Context, name: &SessionName, out: &mut Out) -> Result<bool, SessionError> {
    with_locked(ctx, out, |guard| {
        let mut doc = read_locked(guard)?;
        let was_key = doc.remove(name);
        if was_key {
            write_locked(guard, &doc)?;
        }
        Ok(was_key)
    })
}

/// Best effort (§9 step 4); the lease's end record is written before the lease is deleted.
fn clean_up(ctx: &Context, name: &SessionName, was_key: bool, out: &mut Out) {
    let paths = &ctx.paths;
    for file in [paths.filter_file(name), paths.codex_wake(name), paths.side_file(name), paths.launch_file(name)] {
        let _ = std::fs::remove_file(file);
    }
    let leases = LeaseDir::new(paths.lease_dir());
    let has_lease = !matches!(leases.read(name), LeaseState::Absent);
    let log = HookLog::new(paths.hook_log());
    let log = (was_key || has_lease).then_some(&log);
    if let Err(err) = leases.finish(name, &EndHow::Rm, &Expect::Any, log) {
        out.warn(format!("lease of '{name}' not cleared: {err}"));
    }
}
