//! Self-heal (RG-12), supervisor only: seed a missing registry, quarantine an invalid one, never touch an
//! unreadable one.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};

use crate::document::Document;
use crate::error::RegistryError;
use crate::lock::{LockPolicy, RegistryLock, with_lock};
use crate::read::{ReadOutcome, read};
use crate::store::ensure;
use base::time::stamp_compact_utc;

/// Once-per-streak memory of the warnings; a valid read clears it.
#[derive(Debug, Default, Clone)]
pub struct HealLatches {
    unreadable_warned: bool,
    unmovable_warned: bool,
}

/// The result of one self-heal pass.
#[derive(Debug, Default)]
pub struct HealOutcome {
    /// The tick document, or `None` when this tick has no document (RG-12.2, SUP-4.5).
    pub document: Option<Document>,
    /// Lines to print, without the program prefix.
    pub messages: Vec<String>,
    /// Where an invalid registry was moved during this pass.
    pub quarantined: Option<PathBuf>,
    /// The repair lock was refused; nothing was repaired this pass.
    pub lock_refused: Option<RegistryError>,
}

/// Reads the registry lock-free; repairs Missing, Empty or Invalid under the lock (with `wait` as the bound).
pub fn self_heal(registry: &Path, seed: Option<&Path>, wait: Duration, latches: &mut HealLatches) -> HealOutcome {
    let mut outcome = HealOutcome::default();
    match read(registry) {
        ReadOutcome::Valid(doc) => {
            *latches = HealLatches::default();
            outcome.document = Some(doc);
        }
        ReadOutcome::Unreadable(err) => note_unreadable(registry, &err, latches, &mut outcome),
        ReadOutcome::Missing | ReadOutcome::Empty | ReadOutcome::Invalid(_) => {
            let repaired = with_lock(registry, wait, LockPolicy::SUPERVISOR, |guard| {
                repair_locked(guard, seed, latches, &mut outcome);
            });
            if let Err(err) = repaired {
                outcome.lock_refused = Some(err);
            }
        }
    }
    outcome
}

fn repair_locked(guard: &RegistryLock, seed: Option<&Path>, latches: &mut HealLatches, outcome: &mut HealOutcome) {
    let registry = guard.registry();
    match read(registry) {
        ReadOutcome::Valid(doc) => {
            *latches = HealLatches::default();
            outcome.document = Some(doc);
            return;
        }
        ReadOutcome::Unreadable(err) => return note_unreadable(registry, &err, latches, outcome),
        ReadOutcome::Missing | ReadOutcome::Empty => {}
        ReadOutcome::Invalid(reason) => match quarantine(registry) {
            Ok(kept) => {
                outcome.messages.push(format!(
                    "{} is not a valid sessions.json ({reason}); kept it as {} and wrote a fresh registry",
                    registry.display(),
                    kept.display()
                ));
                outcome.quarantined = Some(kept);
            }
            Err(err) => {
                if !latches.unmovable_warned {
                    outcome.messages.push(format!(
                        "{} is not a valid sessions.json and could not be set aside ({err}); no session will start until it is fixed",
                        registry.display()
                    ));
                }
                latches.unmovable_warned = true;
                return;
            }
        },
    }
    match ensure(guard, seed) {
        Ok(ensured) => outcome.messages.extend(ensured.seed_message()),
        Err(err) => outcome.messages.push(err.to_string()),
    }
    if let ReadOutcome::Valid(doc) = read(registry) {
        *latches = HealLatches::default();
        outcome.document = Some(doc);
    }
}

fn note_unreadable(registry: &Path, err: &io::Error, latches: &mut HealLatches, outcome: &mut HealOutcome) {
    if !latches.unreadable_warned {
        outcome.messages.push(format!(
            "cannot read {} ({err}); leaving it alone: no session is started, reaped or swept until it can be read",
            registry.display()
        ));
    }
    latches.unreadable_warned = true;
}

/// Moves the registry to `<registry>.corrupt-<UTC stamp>[-N]` without ever replacing a file (RG-12.4).
pub fn quarantine(registry: &Path) -> io::Result<PathBuf> {
    let base = format!("{}.corrupt-{}", registry.display(), stamp_compact_utc());
    for n in 1..=1000 {
        let target = if n == 1 { PathBuf::from(&base) } else { PathBuf::from(format!("{base}-{n}")) };
        match rename_no_replace(registry, &target) {
            Ok(()) => return Ok(target),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "no free quarantine name"))
}

fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    match renameat2(AT_FDCWD, from, AT_FDCWD, to, RenameFlags::RENAME_NOREPLACE) {
        Ok(()) => Ok(()),
        // File systems without RENAME_NOREPLACE: a hard link also refuses an existing name.
        Err(Errno::EINVAL | Errno::ENOSYS) => {
            std::fs::hard_link(from, to)?;
            std::fs::remove_file(from)
        }
        Err(errno) => Err(io::Error::from(errno)),
    }
}
