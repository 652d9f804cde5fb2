//! Adopting, once at start-up, live panes whose launch no side file records (30-supervisor §2 step 6a, new).
//!
//! A supervisor killed between its `new-session` and the side-file record (SUP-7.1 steps 5 and 7) leaves a live
//! pane of a listed entry that nothing says was launched. Were that pane then killed, the next tick would read
//! the entry as a first spawn (D10) instead of D12, and the lease would never be marked `vanished`. So the first
//! tick of every supervisor records such panes itself, from what can be known without the lost record: the
//! launch id the pane was started with (its session environment's `AGENT_BOX_SESSION_ID`, else the entry's
//! UUID-shaped `boxSessionId`), and the lease's gen, read under the registry lock exactly as a spawn reads it
//! (SUP-8.2). The mirrors a first spawn writes (SUP-11.3) are written too, so the kickoff prompt never fires
//! twice. The order of SUP-7 is untouched: nothing is recorded before a pane exists, and only panes of entries
//! that are still listed and not stopped under the lock are adopted.
//!
//! Only the first tick looks (one side-file read per live listed entry, once per process): a running supervisor
//! records every spawn it makes, so only a predecessor can have left such a pane, and an idle tick stays as
//! cheap as SUP-4.1 wants it.

use std::collections::BTreeSet;

use base::{SessionName, is_uuid};
use registry::store::{read_for_write, write_document};
use registry::{Document, RegistryLock};
use serde_json::Value;

use crate::launch::gen_argument;
use crate::side::{SideFile, SideFileIo};
use crate::supervisor::{Supervisor, Tick};

/// The pane environment variable that carries the launch id (30 §12.7).
const LAUNCH_ID_VAR: &str = "AGENT_BOX_SESSION_ID";

/// A live pane to adopt, with the launch id it was started with.
#[derive(Debug)]
struct Orphan {
    name: SessionName,
    launch_id: String,
}

impl Supervisor {
    /// Runs in the first tick that has a snapshot and a document; a lock refusal leaves it due for the next tick.
    pub(crate) fn adopt_unrecorded(&mut self, tick: &mut Tick, doc: &Document, snapshot: &BTreeSet<String>) {
        if !self.adoption_due || tick.lock_refused {
            return;
        }
        let orphans = self.orphans(doc, snapshot);
        if orphans.is_empty() {
            self.adoption_due = false;
            return;
        }
        if self.locked(tick, |me, _, guard| me.adopt_locked(guard, &orphans)).is_some() {
            self.adoption_due = false;
        }
    }

    /// Listed, not stopped, pane live, and no valid launch id in the side file; the launch id from the pane.
    fn orphans(&self, doc: &Document, snapshot: &BTreeSet<String>) -> Vec<Orphan> {
        doc.names()
            .filter(|key| snapshot.contains(*key))
            .filter_map(|key| {
                let name = SessionName::parse(key).ok()?;
                let entry = doc.entry(key).filter(|e| !e.stopped())?;
                let side = SideFile::read(&self.config.paths.side_file(&name)).of_life(entry.life());
                if side.launch_session_id.is_some() {
                    return None;
                }
                let from_pane = self.tmux.session_environment(&name, LAUNCH_ID_VAR).ok().flatten();
                let launch_id =
                    from_pane.or_else(|| entry.box_session_id().map(str::to_owned)).filter(|id| is_uuid(id))?;
                Some(Orphan { name, launch_id })
            })
            .collect()
    }

    /// Under the lock: the side file of each orphan still listed and not stopped, then one registry edit with the
    /// mirrors of a first spawn.
    fn adopt_locked(&mut self, guard: &RegistryLock, orphans: &[Orphan]) {
        let Ok(mut fresh) = read_for_write(guard.registry()) else { return };
        let mut changed = Vec::new();
        for orphan in orphans {
            let name = &orphan.name;
            let Some(mut entry) = fresh.entry_mut(name).filter(|e| !e.view().stopped()) else { continue };
            let life = entry.view().life().map(str::to_owned);
            let (_, lease_gen) = gen_argument(&self.leases.read(name), life.as_deref());
            let side =
                SideFile { life, launch_session_id: Some(orphan.launch_id.clone()), lease_gen, ..SideFile::default() };
            self.record_side_file(name, &side);
            if !entry.view().has_run() {
                entry.set("hasRun", Value::Bool(true));
                entry.set("boxSessionId", Value::from(orphan.launch_id.as_str()));
                entry.set("initialPrompt", Value::Null);
                changed.push(name);
            }
            self.log.warn(&crate::messages::adopted_unrecorded(name, orphan.launch_id.as_str()));
        }
        let Some(first) = changed.first() else { return };
        if let Err(err) = write_document(guard, &fresh)
            && self.latches.write_failed.raise(first.as_str())
        {
            self.log.error(&crate::messages::cannot_write(first, guard.registry().display(), err));
        }
    }
}
