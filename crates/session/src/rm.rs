//! `rm NAME` (50-session-cli §9): delist first, then kill, then clean up, so a spawn prepared from an older read
//! is killed by the supervisor's post-check instead of coming back.

use lease::{EndHow, Expect, HookLog, LeaseDir, LeaseState};
use registry::{SessionName, exit};

use crate::context::{Context, KillResult};
use crate::locked::{Stop, checked_name, read_locked, with_locked, write_locked};
use crate::messages;
use crate::out::{Out, say};

pub fn rm(ctx: &Context, name: &str, out: &mut Out) -> u8 {
    match run(ctx, name, out) {
        Ok(code) | Err(Stop(code)) => code,
    }
}

fn run(ctx: &Context, raw: &str, out: &mut Out) -> Result<u8, Stop> {
    let name = checked_name(raw)?;
    let was_key = if ctx.paths.registry().exists() { delist(ctx, &name)? } else { false };
    let killed = ctx.kill(&name);
    clean_up(ctx, &name, was_key);
    if let KillResult::Failed(reason) = killed {
        say(&messages::kill_failed(raw, &reason));
        return Ok(exit::FAILURE);
    }
    out.line(&messages::removed(raw));
    Ok(exit::OK)
}

/// Under the lock: drop the key; true when it was one.
fn delist(ctx: &Context, name: &SessionName) -> Result<bool, Stop> {
    with_locked(ctx, |guard| {
        let mut doc = read_locked(guard)?;
        let was_key = doc.remove(name);
        if was_key {
            write_locked(guard, &doc)?;
        }
        Ok(was_key)
    })
}

/// Best effort and silent (§9 step 4); the lease's end record is written before the lease is deleted.
fn clean_up(ctx: &Context, name: &SessionName, was_key: bool) {
    let paths = &ctx.paths;
    for file in [paths.filter_file(name), paths.codex_wake(name), paths.side_file(name), paths.launch_file(name)] {
        let _ = std::fs::remove_file(file);
    }
    let leases = LeaseDir::new(paths.lease_dir());
    let has_lease = !matches!(leases.read(name), LeaseState::Absent);
    let log = HookLog::new(paths.hook_log());
    let log = (was_key || has_lease).then_some(&log);
    if let Err(err) = leases.finish(name, &EndHow::Rm, &Expect::Any, log) {
        say(&format!("lease of '{name}' not cleared: {err}"));
    }
}
