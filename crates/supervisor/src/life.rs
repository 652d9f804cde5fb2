//! Life tokens for entries written without one (issue 17): the settings daemon and the old implementation add
//! entries with no `life`, so the supervisor gives each one under the registry lock the first time it sees it.
//!
//! Which token: a side file that names a life belongs to another life of the name, so this entry is a new one and
//! gets a fresh token (the co-writer replaced the entry). Otherwise a lease of the name that carries a valid gen
//! and was not marked orphaned is taken over (an entry and lease of an older webhook-spawn, or of a test or tool
//! that writes both by hand); anything else gets a fresh token. A side file of an older supervisor (no `life`)
//! joins the entry's life in the same step, so a later replacement of the entry is told from it.

use base::{SessionName, new_uuid_v4};
use lease::LeaseState;
use registry::store::{read_for_write, write_document};
use registry::{Document, LIFE_KEY, RegistryLock};
use serde_json::Value;

use crate::side::{SideFile, SideFileIo};
use crate::supervisor::{Supervisor, Tick};

impl Supervisor {
    /// Gives every object entry with a legal name and no life token one; `doc` becomes the document written. Takes
    /// the lock only when such an entry exists, so an idle tick stays lock-free.
    pub(crate) fn give_lives(&mut self, tick: &mut Tick, doc: &mut Document) {
        let without: Vec<SessionName> = doc
            .names()
            .filter(|key| doc.entry(key).is_some_and(|e| e.life().is_none()))
            .filter_map(|key| SessionName::parse(key).ok())
            .collect();
        if without.is_empty() || tick.lock_refused {
            return;
        }
        if let Some(Some(written)) = self.locked(tick, |me, _, guard| me.give_lives_locked(guard, &without)) {
            *doc = written;
        }
    }

    fn give_lives_locked(&mut self, guard: &RegistryLock, names: &[SessionName]) -> Option<Document> {
        let mut fresh = read_for_write(guard.registry()).ok()?;
        let mut joined = Vec::new();
        for name in names {
            let Some(mut entry) = fresh.entry_mut(name).filter(|e| e.view().life().is_none()) else { continue };
            let side = SideFile::read(&self.config.paths.side_file(name));
            let life = self.life_for(name, &side);
            entry.set(LIFE_KEY, Value::from(life.as_str()));
            if side.life.is_none() && side != SideFile::default() {
                joined.push((name.clone(), SideFile { life: Some(life), ..side }));
            }
        }
        if let Err(err) = write_document(guard, &fresh) {
            let first = names.first().map(SessionName::as_str).unwrap_or_default();
            if self.latches.write_failed.raise(first) {
                self.log.error(&crate::messages::cannot_write(first, guard.registry().display(), err));
            }
            return None;
        }
        for (name, side) in joined {
            self.record_side_file(&name, &side);
        }
        Some(fresh)
    }

    fn life_for(&self, name: &SessionName, side: &SideFile) -> String {
        if side.life.is_some() {
            return new_uuid_v4();
        }
        match self.leases.read(name) {
            LeaseState::Present(lease) if !lease.orphaned() => {
                lease.valid_gen().map_or_else(new_uuid_v4, |g| g.to_string())
            }
            _ => new_uuid_v4(),
        }
    }
}
