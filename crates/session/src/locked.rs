//! What every mutating verb shares (50-session-cli §3.11): the lock with its refusal, the re-read under the lock
//! with M20/M20b, and the durable write with M21.

use base::SessionName;
use registry::store::{read_for_write, write_document};
use registry::{Document, RegistryError, RegistryLock, with_lock};
use view::Context;

use crate::error::SessionError;
use crate::out::Out;

/// Runs `section` under the registry lock (creating its directory when missing); a refusal is M17, exit 75.
pub fn with_locked<T>(
    ctx: &Context,
    out: &mut Out,
    section: impl FnOnce(&RegistryLock) -> Result<T, SessionError>,
) -> Result<T, SessionError> {
    if let Some(value) = &ctx.ignored_lock_wait {
        out.warn(format!("ignoring REGISTRY_LOCK_WAIT='{value}': not a number of seconds; using 10"));
    }
    with_lock(ctx.paths.registry(), ctx.lock_wait, registry::LockPolicy::FRONT_END, section)
        .map_err(SessionError::Lock)?
}

/// Whether the registry file exists. Only "no such file" means absent (issue 18): any other error of the stat
/// (EIO, ENOTCONN, EACCES on a parent) is M20b, exit 1, so a verb never acknowledges what it could not check.
pub fn registry_present(ctx: &Context) -> Result<bool, SessionError> {
    let path = ctx.paths.registry();
    match std::fs::metadata(path) {
        Ok(_) => Ok(true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(SessionError::RegistryUnreadable { file: path.display().to_string(), error: err.to_string() }),
    }
}

/// The registry as read under `guard`: Missing and Empty read as no entries; M20 or M20b otherwise (exit 1).
pub fn read_locked(guard: &RegistryLock) -> Result<Document, SessionError> {
    let file = || guard.registry().display().to_string();
    read_for_write(guard.registry()).map_err(|err| match err {
        RegistryError::Invalid { reason, .. } => SessionError::RegistryInvalid { file: file(), detail: reason },
        RegistryError::Unreadable { source, .. } => {
            SessionError::RegistryUnreadable { file: file(), error: source.to_string() }
        }
        other => SessionError::Failed(other.to_string()),
    })
}

/// Writes `doc` durably; M21 on failure (exit 1).
pub fn write_locked(guard: &RegistryLock, doc: &Document) -> Result<(), SessionError> {
    write_document(guard, doc).map_err(|err| {
        let reason = match &err {
            RegistryError::Write { source, .. } => source.to_string(),
            other => other.to_string(),
        };
        SessionError::RegistryWrite { file: guard.registry().display().to_string(), reason }
    })
}

/// Charset check for `rm`, `stop`, `restart` (M1, exit 2).
pub fn checked_name(name: &str) -> Result<SessionName, SessionError> {
    SessionName::parse(name).map_err(|reason| SessionError::BadName { raw: name.to_owned(), reason })
}

/// The expectation a verb settles a listed entry's lease with (issue 17, docs/lives.md L-3): the entry's life, which
/// is the gen of the only lease a pane of that life can hold; for an entry without one, the gen its side file
/// recorded, else any lease.
pub fn lease_expectation(ctx: &Context, name: &SessionName, entry: registry::Entry<'_>) -> lease::Expect {
    entry
        .life()
        .and_then(lease::Gen::parse)
        .or_else(|| view::read::side_lease_gen(&ctx.paths, name))
        .map_or(lease::Expect::Any, lease::Expect::Gen)
}
