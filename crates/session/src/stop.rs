//! `stop NAME` (50-session-cli §10): flag first, then kill, so the supervisor's post-spawn check sees the flag.

use registry::exit;
use serde_json::Value;

use crate::context::{Context, KillResult};
use crate::locked::{Stop, checked_name, read_locked, with_locked, write_locked};
use crate::messages;
use crate::out::{Out, say, say_bare};

pub fn stop(ctx: &Context, name: &str, out: &mut Out) -> u8 {
    match run(ctx, name, out) {
        Ok(code) | Err(Stop(code)) => code,
    }
}

fn run(ctx: &Context, raw: &str, out: &mut Out) -> Result<u8, Stop> {
    let name = checked_name(raw)?;
    if !ctx.paths.registry().exists() {
        return no_such(raw);
    }
    let ephemeral = with_locked(ctx, |guard| {
        let mut doc = read_locked(guard)?;
        let Some(mut entry) = doc.entry_mut(&name) else { return no_such(raw).map(|_| false) };
        let ephemeral = entry.view().ephemeral();
        if entry.set("stopped", Value::Bool(true)) {
            write_locked(guard, &doc)?;
        }
        Ok(ephemeral)
    })?;
    if let KillResult::Failed(reason) = ctx.kill(&name) {
        say(&messages::kill_failed(raw, &reason));
        return Ok(exit::FAILURE);
    }
    out.line(&if ephemeral { messages::stopped_ephemeral(raw) } else { messages::stopped(raw) });
    Ok(exit::OK)
}

fn no_such(raw: &str) -> Result<u8, Stop> {
    say_bare(&messages::no_such_session(raw));
    Err(Stop(exit::USAGE))
}
