//! `stop NAME` (50-session-cli §10): flag first, then kill, so the supervisor's post-spawn check sees the flag.

use serde_json::Value;
use view::{Context, KillResult};

use crate::error::{KillFailure, SessionError};
use crate::locked::{checked_name, read_locked, with_locked, write_locked};
use crate::messages;
use crate::out::Out;

/// Runs `stop NAME`; M26 or M27 on stdout.
pub fn stop(ctx: &Context, raw: &str, out: &mut Out) -> Result<(), SessionError> {
    let name = checked_name(raw)?;
    if !ctx.paths.registry().exists() {
        return Err(SessionError::NoSuchSession(raw.to_owned()));
    }
    let (ephemeral, flagged) = with_locked(ctx, out, |guard| {
        let mut doc = read_locked(guard)?;
        let Some(mut entry) = doc.entry_mut(&name) else { return Err(SessionError::NoSuchSession(raw.to_owned())) };
        let ephemeral = entry.view().ephemeral();
        let flagged = entry.set("stopped", Value::Bool(true));
        if flagged {
            write_locked(guard, &doc)?;
        }
        Ok((ephemeral, flagged))
    })?;
    match ctx.kill(&name) {
        KillResult::Failed(reason) if flagged => {
            return Err(SessionError::PartlyDone(messages::stopped_but_not_killed(raw, &reason)));
        }
        KillResult::Failed(reason) => {
            return Err(SessionError::KillFailed(vec![KillFailure { name: raw.to_owned(), reason }]));
        }
        KillResult::Killed | KillResult::AlreadyGone => {}
    }
    out.line(&if ephemeral { messages::stopped_ephemeral(raw) } else { messages::stopped(raw) });
    Ok(())
}
