//! Assignment leases, the hook log and the webhook refusal record (20-lease).
//!
//! All three are best effort for their callers (no failure here changes an exit code) but are never torn or
//! interleaved: every mutation runs under its own flock and replaces files by the registry's atomic write.
//!
//! Choices where the specification is silent:
//! - An operation that finds no lease file before taking the lock returns at once (`Absent`/`NothingToClear`)
//!   without opening the lock; it is ordered before any later create, which mints a fresh gen anyway.
//! - A GEN argument that is neither a UUID nor `-` becomes [`Expect::Nothing`]: no lease change and no end record.
//! - The hook log never creates a directory; the refusal record creates the state directory (0700), because a
//!   deferred batch on a fresh box must still be counted.

mod dir;
mod error;
#[doc(hidden)]
pub mod fuzz;
mod hooklog;
mod life;
mod model;
mod notified;
mod refusal;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use dir::{HEARTBEAT_EVERY_SECS, LEASE_LOCK_WAIT, LeaseDir, ListedNames, SWEEP_GRACE_SECS, SweepReport};
pub use error::LeaseError;
pub use hooklog::{Appended, HookLog, KEEP_LINES, LogLine, SpawnRecord, TRIM_ABOVE_LINES, parse_count};
pub use model::{Changed, EndHow, Expect, Gen, Lease, LeaseState, Outcome};
pub use notified::{
    Notification, OutcomeKey, PendingOutcome, RETRY_FIRST_SECS, RETRY_MAX_SECS, on_outcome_marker, retry_delay,
    sort_pending,
};
pub use refusal::RefusalRecord;

/// Deletes the temp files `list` finds, under the lock at `lock`, listing again once the lock is held; an
/// empty first listing takes no lock (LS-5.8: an idle supervisor tick stays lock-free).
fn remove_temps_under_lock(list: impl Fn() -> Vec<PathBuf>, lock: &Path, wait: Duration) -> usize {
    if list().is_empty() {
        return 0;
    }
    registry::with_file_lock(lock, wait, false, |_| list().iter().filter(|p| std::fs::remove_file(p).is_ok()).count())
        .unwrap_or(0)
}
