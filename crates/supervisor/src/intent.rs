//! The spawn intent (issue 17): what a start records before `new-session` runs, under the same registry-lock hold,
//! and how it is taken back when `new-session` fails.
//!
//! A supervisor killed right after `new-session` used to leave a pane that nothing said was started: were that
//! pane then killed, the next supervisor read the entry as never launched (no `vanished`, the kickoff prompt sent
//! again), and a respawn over a crash left `died` on the healthy new pane. So the record comes first: the side file
//! (launch id, lease gen, life) and the registry edit of SUP-7.1 step 8 (the mirrors of a first start or a
//! rotation, `died` removed) are durable before the pane exists. The intent is complete, so nothing is written
//! after a successful `new-session`: a later supervisor that finds the pane alive treats it as started, and one
//! that finds it gone treats it as vanished, which is what it is. Only this process can know that `new-session`
//! failed, and it puts the side file and the four registry keys back as they were.
//!
//! Issue 25 (L-15): the start also takes any pending restart mark of the lease its pane is bound to. The mark is
//! about the absence this start ends; left there (a D12 that found the lease lock busy), it would make a later real
//! loss of the new pane read as the operator's restart. It is part of the intent: written before `new-session`,
//! put back when the start did not happen, and a start whose mark cannot be taken does not happen.

use base::SessionName;
use lease::Expect;
use registry::store::write_document;
use registry::{Document, RegistryLock};
use serde_json::Value;

use crate::launch::Prepared;
use crate::side::{SideFile, SideFileIo};
use crate::supervisor::Supervisor;

/// The registry keys a start may change (SUP-11.3 and `died`).
const RECORDED_KEYS: [&str; 4] = ["hasRun", "boxSessionId", "initialPrompt", "died"];

/// What `undo_intent` restores: the side file's former bytes (`None`: there was none), the former values of the
/// recorded keys (`None`: absent) when the registry was written, and the restart mark the start took (L-15).
#[derive(Debug)]
pub(crate) struct Undo {
    side: Option<Option<Vec<u8>>>,
    registry: Option<Vec<(&'static str, Option<Value>)>>,
    mark: Option<Expect>,
}

impl Undo {
    /// The start took an operator's restart mark: its absence was that restart (L-13's line is due).
    pub(crate) fn took_restart_mark(&self) -> bool {
        self.mark.is_some()
    }
}

impl Supervisor {
    /// Writes the intent; `None` (after L15) when any part of it could not be written, with what was written
    /// taken back: no pane may start that nothing records.
    pub(crate) fn record_intent(
        &mut self,
        guard: &RegistryLock,
        fresh: &mut Document,
        prepared: &Prepared,
        side: &SideFile,
        recorded: &SideFile,
    ) -> Option<Undo> {
        let name = &prepared.name;
        let path = self.config.paths.side_file(name);
        let mut undo = Undo { side: None, registry: None, mark: None };
        if recorded != side {
            let before = std::fs::read(&path).ok();
            if let Err(err) = recorded.write(&path) {
                self.note_write_failed(name, &path.display().to_string(), &err.to_string());
                return None;
            }
            undo.side = Some(before);
        }
        if let Err(err) = record_registry_keys(guard, fresh, prepared, &mut undo) {
            self.note_write_failed(name, &guard.registry().display().to_string(), &err.to_string());
            self.undo_intent(guard, name, undo);
            return None;
        }
        let expect = recorded.lease_gen.as_deref().and_then(lease::Gen::parse).map(Expect::Gen);
        match expect.map(|expect| (self.leases.take_restart_mark(name, &expect, guard), expect)) {
            None | Some((Ok(false), _)) => {}
            Some((Ok(true), expect)) => undo.mark = Some(expect),
            Some((Err(err), _)) => {
                self.note_write_failed(name, &self.leases.lease_path(name).display().to_string(), &err.to_string());
                self.undo_intent(guard, name, undo);
                return None;
            }
        }
        Some(undo)
    }

    /// `new-session` failed: the side file, the registry keys and the restart mark as they were before the intent.
    pub(crate) fn undo_intent(&mut self, guard: &RegistryLock, name: &SessionName, undo: Undo) {
        if let Some(expect) = &undo.mark
            && let Err(err) = self.leases.put_back_restart_mark(name, expect, guard)
        {
            self.note_write_failed(name, &self.leases.lease_path(name).display().to_string(), &err.to_string());
        }
        let path = self.config.paths.side_file(name);
        let side_back = match undo.side {
            None => Ok(()),
            Some(None) => std::fs::remove_file(&path)
                .or_else(|e| if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) }),
            Some(Some(bytes)) => registry::write_atomic(&path, &bytes).map(drop),
        };
        if let Err(err) = side_back {
            self.note_write_failed(name, &path.display().to_string(), &err.to_string());
        }
        let Some(before) = undo.registry else { return };
        let Ok(mut fresh) = registry::store::read_for_write(guard.registry()) else { return };
        let Some(mut entry) = fresh.entry_mut(name) else { return };
        for (key, value) in before {
            match value {
                Some(value) => entry.set(key, value),
                None => entry.remove_key(key),
            };
        }
        if let Err(err) = write_document(guard, &fresh) {
            self.note_write_failed(name, &guard.registry().display().to_string(), &err.to_string());
        }
    }

    /// L15 once per name per streak.
    pub(crate) fn note_write_failed(&mut self, name: &SessionName, path: &str, err: &str) {
        if self.latches.write_failed.raise(name.as_str()) {
            self.log.error(&crate::messages::cannot_write(name, path, err));
        }
    }
}

/// SUP-7.1 step 8 as part of the intent: the mirrors of a first start or a rotation, `died` removed; the former
/// values go to `undo` when the registry was written.
fn record_registry_keys(
    guard: &RegistryLock,
    fresh: &mut Document,
    prepared: &Prepared,
    undo: &mut Undo,
) -> Result<(), registry::RegistryError> {
    let Some(mut entry) = fresh.entry_mut(&prepared.name) else { return Ok(()) };
    let before: Vec<(&'static str, Option<Value>)> =
        RECORDED_KEYS.iter().map(|key| (*key, entry.view().get(key).cloned())).collect();
    let mut changed = false;
    if !prepared.launched || prepared.rotated {
        changed |= entry.set("hasRun", Value::Bool(true));
        changed |= entry.set("boxSessionId", Value::from(prepared.bid.as_str()));
        changed |= entry.set("initialPrompt", Value::Null);
    }
    changed |= entry.remove_key("died");
    if changed {
        write_document(guard, fresh)?;
        undo.registry = Some(before);
    }
    Ok(())
}
