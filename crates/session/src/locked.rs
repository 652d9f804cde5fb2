//! What every mutating verb shares (50-session-cli §3.11): the lock with its refusal line, the re-read under the
//! lock with M20/M20b, and the durable write with M21.

use registry::store::{read_for_write, write_document};
use registry::{Document, RegistryError, RegistryLock, exit, with_lock};

use crate::context::Context;
use crate::messages;
use crate::out::say;

/// A verb that stopped early, with the exit code it chose (its message is already printed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stop(pub u8);

/// Runs `section` under the registry lock (creating its directory when missing); a refusal prints M17 and means
/// 75.
pub fn with_locked<T>(ctx: &Context, section: impl FnOnce(&RegistryLock) -> Result<T, Stop>) -> Result<T, Stop> {
    if let Some(value) = &ctx.ignored_lock_wait {
        say(&format!("ignoring REGISTRY_LOCK_WAIT='{value}': not a number of seconds; using 10"));
    }
    with_lock(&ctx.paths, ctx.lock_wait, section).unwrap_or_else(|err| {
        say(&err.to_string());
        Err(Stop(err.exit_code()))
    })
}

/// The registry as read under `guard`: Missing and Empty read as no entries; M20 or M20b otherwise (exit 1).
pub fn read_locked(guard: &RegistryLock) -> Result<Document, Stop> {
    read_for_write(guard.registry()).map_err(|err| {
        let file = guard.registry().display().to_string();
        match err {
            RegistryError::Invalid { reason, .. } => say(&messages::does_not_parse(&file, &reason)),
            RegistryError::Unreadable { source, .. } => say(&messages::cannot_read(&file, &source.to_string())),
            other => say(&other.to_string()),
        }
        Stop(exit::FAILURE)
    })
}

/// Writes `doc` durably; M21 on failure (exit 1).
pub fn write_locked(guard: &RegistryLock, doc: &Document) -> Result<(), Stop> {
    write_document(guard, doc).map_err(|err| {
        let reason = match &err {
            RegistryError::Write { source, .. } => source.to_string(),
            other => other.to_string(),
        };
        say(&messages::could_not_write(&guard.registry().display().to_string(), &reason));
        Stop(exit::FAILURE)
    })
}

/// Charset check for `rm`, `stop`, `restart` (M1, exit 2).
pub fn checked_name(name: &str) -> Result<registry::SessionName, Stop> {
    registry::SessionName::parse(name).map_err(|err| {
        say(&messages::bad_name(name, &err));
        Stop(exit::USAGE)
    })
}

/// Prints a capacity refusal or policy error (exit 75).
pub fn capacity_refused(err: &registry::CapacityError) -> Stop {
    say(&err.to_string());
    Stop(exit::TEMPFAIL)
}
