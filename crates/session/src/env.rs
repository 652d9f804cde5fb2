//! `env ls [--json] | set KEY [VALUE] | rm KEY` (issue 20): the env store every pane loads at each spawn. A value
//! is never printed and never taken from the command line without a warning; the store's rules live in
//! `registry::envstore` (docs/env-store.md).

use std::path::Path;

use registry::atomic::Durability;
use registry::envstore::{self, Store, StoreError};
use serde_json::json;
use view::Context;

use crate::error::SessionError;
use crate::out::Out;

/// When a change reaches the agents: every pane reads the store when it starts, never later.
pub const APPLIES: &str = "applies at the next start of each session: agent-box-session restart NAME|--all";

/// The warning of `env set KEY VALUE`.
pub const VALUE_IN_ARGV: &str = "the value was given on the command line: it is now in your shell history and was \
visible to every local user in ps while this ran; next time run `agent-box-session env set KEY` and type it, or pipe it in";

/// Where the store is for this context.
pub fn store_path(ctx: &Context) -> std::path::PathBuf {
    envstore::store_path(ctx.paths.home())
}

/// A key the store can hold, else exit 2 before anything is read or written.
pub fn checked_key(key: &str) -> Result<&str, SessionError> {
    if envstore::is_key(key) {
        Ok(key)
    } else {
        Err(SessionError::Usage(format!(
            "'{key}' is not a variable name (letters, digits and '_', not starting with a digit); nothing written"
        )))
    }
}

/// `env ls [--json]`: the key names, sorted, never a value.
pub fn ls(ctx: &Context, json: bool, out: &mut Out) -> Result<(), SessionError> {
    let path = store_path(ctx);
    let keys = envstore::read(&path).map_err(failed(&path))?.map(|s| s.keys()).unwrap_or_default();
    if json {
        let doc = json!({"version": agent_box_types::VERSION, "file": path.display().to_string(), "keys": keys});
        let text = agent_box_types::pretty(&doc).map_err(|e| SessionError::Failed(e.to_string()))?;
        out.bytes(text.as_bytes());
        return Ok(());
    }
    if keys.is_empty() {
        out.warn(format!("no variables in {}; add one with: agent-box-session env set KEY", path.display()));
    }
    keys.iter().for_each(|key| out.line(key));
    Ok(())
}

/// A key `set` may write: the pane loader never exports `AGENT_BOX_*` (nor its own `_abx_*` scratch names), so a
/// value stored under one would silently do nothing.
pub fn settable_key(key: &str) -> Result<&str, SessionError> {
    let key = checked_key(key)?;
    if envstore::is_reserved(key) {
        return Err(SessionError::Usage(format!(
            "'{key}' is reserved: names starting with AGENT_BOX_ or _abx_ are set by agent-box itself and never \
             loaded from the env store; nothing written"
        )));
    }
    Ok(key)
}

/// `env set KEY` with the value `main` read (stdin or the terminal) or took from the command line.
pub fn set(ctx: &Context, key: &str, value: &[u8], out: &mut Out) -> Result<(), SessionError> {
    let key = settable_key(key)?;
    envstore::check_value(value).map_err(|e| SessionError::Usage(format!("{key} not set: {e}; nothing written")))?;
    let path = store_path(ctx);
    let (replaced, durability) = envstore::edit(&path, envstore::LOCK_WAIT, |store: &mut Store| {
        let replaced = store.contains(key);
        store.set(key, value);
        (true, replaced)
    })
    .map_err(failed(&path))?;
    note_durability(durability, &path, out);
    let verb = if replaced { "replaced" } else { "set" };
    out.line(&format!("{key} {verb} in {}; {APPLIES}", path.display()));
    Ok(())
}

/// `env rm KEY`: every line of the key goes; an absent key changes nothing (exit 0).
pub fn rm(ctx: &Context, key: &str, out: &mut Out) -> Result<(), SessionError> {
    let key = checked_key(key)?;
    let path = store_path(ctx);
    if envstore::read(&path).map_err(failed(&path))?.is_none() {
        out.line(&format!("{key} is not set ({} does not exist)", path.display()));
        return Ok(());
    }
    let (removed, durability) = envstore::edit(&path, envstore::LOCK_WAIT, |store: &mut Store| {
        let removed = store.remove(key);
        (removed, removed)
    })
    .map_err(failed(&path))?;
    note_durability(durability, &path, out);
    match removed {
        true => out.line(&format!("{key} removed from {}; {APPLIES}", path.display())),
        false => out.line(&format!("{key} is not set in {}", path.display())),
    }
    Ok(())
}

fn note_durability(durability: Option<Durability>, path: &Path, out: &mut Out) {
    if let Some(Durability::DirectoryNotSynced(err)) = durability {
        out.warn(format!("{} written, but its directory could not be synced ({err})", path.display()));
    }
}

/// A store that cannot be read, locked or written: exit 75 for a busy lock (safe to retry), else 1.
fn failed(store: &Path) -> impl Fn(StoreError) -> SessionError + '_ {
    move |err| match err {
        StoreError::Lock(reason) => {
            SessionError::Lock(registry::RegistryError::LockRefused { path: envstore::lock_path(store), reason })
        }
        other => SessionError::Failed(other.to_string()),
    }
}
