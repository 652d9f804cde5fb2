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

use base::SessionName;
use registry::store::write_document;
use registry::{Document, RegistryLock};
use serde_json::Value;

use crate::launch::Prepared;
use crate::side::{SideFile, SideFileIo};
use crate::supervisor::Supervisor;

/// The registry keys a start may change (SUP-11.3 and `died`).
const RECORDED_KEYS: [&str; 4] = ["hasRun", "boxSessionId", "initialPrompt", "died"];

/// What `undo_intent` restores: the side file's former bytes (`None`: there was none), the former values of the
/// recorded keys (`None`: absent) when the registry was written.
#[derive(Debug)]
pub(crate) struct Undo {
    side: Option<Option<Vec<u8>>>,
    registry: Option<Vec<(&'static str, Option<Value>)>>,
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
        let mut undo = Undo { side: None, registry: None };
        if recorded != side {
            let before = std::fs::read(&path).ok();
            if let Err(err) = recorded.write(&path) {
                self.note_write_failed(name, &path.display().to_string(), &err.to_string());
                return None;
            }
            undo.side = Some(before);
        }
        let Some(mut entry) = fresh.entry_mut(name) else { return Some(undo) };
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
            if let Err(err) = write_document(guard, fresh) {
                self.note_write_failed(name, &guard.registry().display().to_string(), &err.to_string());
                self.undo_intent(guard, name, undo);
                return None;
            }
            undo.registry = Some(before);
        }
        Some(undo)
    }

    /// `new-session` failed: the side file and the registry keys as they were before the intent.
    pub(crate) fn undo_intent(&mut self, guard: &RegistryLock, name: &SessionName, undo: Undo) {
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
