//! `rm NAME` (50-session-cli §9): delist first, then kill, then clean up, so a spawn prepared from an older read
//! is killed by the supervisor's post-check instead of coming back.

use base::SessionName;
use lease::{EndHow, Expect, HookLog, LeaseDir, LeaseState};
use view::{Context, KillResult};

use crate::error::{KillFailure, SessionError};
use crate::locked::{checked_name, read_locked, registry_present, with_locked, write_locked};
use crate::messages;
use crate::out::Out;

/// Runs `rm NAME`: M23 on stdout when the name was listed or live; M40/M41 when it was neither (exit 0, `rm` is
/// idempotent); M42 when it was delisted but its pane could not be killed, M24 when nothing was delisted and the
/// kill failed (exit 1 both).
pub fn rm(ctx: &Context, raw: &str, out: &mut Out) -> Result<(), SessionError> {
    let name = checked_name(raw)?;
    let was_key = if registry_present(ctx)? { delist(ctx, &name, out)? } else { false };
    let killed = ctx.kill(&name);
    let cleaned = clean_up(ctx, &name, was_key, out);
    match (killed, was_key) {
        (KillResult::Failed(reason), true) => {
            Err(SessionError::PartlyDone(messages::removed_but_not_killed(raw, &reason)))
        }
        (KillResult::Failed(reason), false) => {
            Err(SessionError::KillFailed(vec![KillFailure { name: raw.to_owned(), reason }]))
        }
        (KillResult::AlreadyGone, false) => {
            out.line(&if cleaned { messages::removed_leftovers(raw) } else { messages::nothing_to_remove(raw) });
            Ok(())
        }
        (KillResult::Killed, _) | (KillResult::AlreadyGone, true) => {
            out.line(&messages::removed(raw));
            Ok(())
        }
    }
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

/// Best effort (§9 step 4); the lease's end record is written before the lease is deleted. True when a file of
/// the name was there to delete.
fn clean_up(ctx: &Context, name: &SessionName, was_key: bool, out: &mut Out) -> bool {
    let paths = &ctx.paths;
    let mut cleaned = false;
    for file in [paths.filter_file(name), paths.codex_wake(name), paths.side_file(name), paths.launch_file(name)] {
        cleaned |= std::fs::remove_file(file).is_ok();
    }
    let leases = LeaseDir::new(paths.lease_dir());
    let has_lease = !matches!(leases.read(name), LeaseState::Absent);
    let log = HookLog::new(paths.hook_log());
    let log = (was_key || has_lease).then_some(&log);
    if let Err(err) = leases.finish(name, &EndHow::Rm, &Expect::Any, log) {
        out.warn(format!("lease of '{name}' not cleared: {err}"));
    }
    cleaned || has_lease
}
