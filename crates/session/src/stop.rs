//! `stop NAME` (50-session-cli §10): flag first, then kill, so the supervisor's post-spawn check sees the flag.
//!
//! A leased session also gets the lease outcome `stopped` (20-lease LS-6.3) in the same registry-lock section as
//! the flag, before the kill: the audit then says an operator ended the work, and the reap that follows carries
//! it into its `reaped` end record. Like every outcome it reads as `UNRESOLVED ASSIGNMENT (stopped)` in `ls` and
//! `peers` (the box cannot say the work finished; the operator stopped it) until a clean exit, `rm` or the reap
//! resolves the lease.
//!
//! Issue 25 (docs/lives.md L-16): the pane to kill is found in that section and killed by its identity after it,
//! so a pane started after the section (a `restart` that unstopped the entry meanwhile, and the supervisor's start
//! for it) is never the one this stop ends.

use base::SessionName;
use lease::{Expect, LeaseDir, Outcome};
use serde_json::Value;
use view::{Context, KillResult};

use crate::error::{KillFailure, SessionError};
use crate::locked::{checked_name, lease_expectation, read_locked, registry_present, with_locked, write_locked};
use crate::messages;
use crate::out::Out;
use crate::pane::Pane;

/// Runs `stop NAME`; M26 or M27 on stdout.
pub fn stop(ctx: &Context, raw: &str, out: &mut Out) -> Result<(), SessionError> {
    let name = checked_name(raw)?;
    if !registry_present(ctx)? {
        return Err(SessionError::NoSuchSession(raw.to_owned()));
    }
    let (ephemeral, flagged, lease_warning, pane) = with_locked(ctx, out, |guard| {
        let mut doc = read_locked(guard)?;
        let Some(mut entry) = doc.entry_mut(&name) else { return Err(SessionError::NoSuchSession(raw.to_owned())) };
        let ephemeral = entry.view().ephemeral();
        let expect = lease_expectation(ctx, &name, entry.view());
        let flagged = entry.set("stopped", Value::Bool(true));
        if flagged {
            write_locked(guard, &doc)?;
        }
        let pane = Pane::of(&ctx.live_panes(), &name);
        Ok((ephemeral, flagged, mark_stopped(ctx, &name, &expect), pane))
    })?;
    if let Some(warning) = lease_warning {
        out.warn(warning);
    }
    match pane.end(ctx) {
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

/// LS-6.3: `mark_outcome(stopped)` against the entry's lease (its life; the side file's gen or `Any` for an entry
/// without one, `lease_expectation`). No lease, an outcome already set (the first wins) or another gen change
/// nothing; a lease error is one warning line.
fn mark_stopped(ctx: &Context, name: &SessionName, expect: &Expect) -> Option<String> {
    let leases = LeaseDir::new(ctx.paths.lease_dir());
    leases
        .mark_outcome(name, &Outcome::Stopped, expect)
        .err()
        .map(|err| format!("lease of '{name}' not marked stopped: {err}"))
}
