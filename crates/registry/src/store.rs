//! Writing under the lock: the edit protocol (RG-9), ensure and seed (RG-10), and temp-leftover cleanup.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::atomic::{temp_leftovers_of, write_atomic};
use crate::document::{Document, EMPTY_DOCUMENT};
use crate::error::RegistryError;
use crate::lock::RegistryLock;
use crate::read::{ReadOutcome, read};

/// Re-reads the registry under `guard`, runs `f`, and writes atomically when `f` reports a change.
/// Missing or Empty reads as the empty document (so one write creates the file with the caller's entry);
/// Invalid and Unreadable are errors and nothing is written.
pub fn edit<T>(
    guard: &RegistryLock,
    f: impl FnOnce(&mut Document) -> Result<(T, bool), RegistryError>,
) -> Result<T, RegistryError> {
    let path = guard.registry();
    let mut doc = read_for_write(path)?;
    let (result, changed) = f(&mut doc)?;
    if changed {
        write_document(guard, &doc)?;
    }
    Ok(result)
}

/// The registry as a writer must see it under the lock.
pub fn read_for_write(path: &Path) -> Result<Document, RegistryError> {
    match read(path) {
        ReadOutcome::Missing | ReadOutcome::Empty => Ok(Document::empty()),
        ReadOutcome::Valid(doc) => Ok(doc),
        ReadOutcome::Invalid(reason) => Err(RegistryError::Invalid { path: path.to_path_buf(), reason }),
        ReadOutcome::Unreadable(source) => Err(RegistryError::Unreadable { path: path.to_path_buf(), source }),
    }
}

/// Writes `doc` over the registry guarded by `guard`.
pub fn write_document(guard: &RegistryLock, doc: &Document) -> Result<(), RegistryError> {
    write_bytes(guard, &doc.to_bytes())
}

fn write_bytes(guard: &RegistryLock, bytes: &[u8]) -> Result<(), RegistryError> {
    let path = guard.registry();
    write_atomic(path, bytes).map(drop).map_err(|source| RegistryError::Write { path: path.to_path_buf(), source })
}

/// What [`ensure`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Ensured {
    /// The registry held bytes already (valid or not); nothing was written.
    Existing,
    /// The seed was installed byte for byte.
    Seeded,
    /// The empty document was written; `rejected_seed` names a seed that was unreadable or invalid.
    WroteEmpty { rejected_seed: Option<PathBuf> },
}

impl Ensured {
    /// The RG-10.3 line to print (without the program prefix) when a seed was rejected.
    pub fn seed_message(&self) -> Option<String> {
        match self {
            Self::WroteEmpty { rejected_seed: Some(seed) } => Some(format!(
                "ignoring seed {}: not a sessions.json with \"version\": 1 and a \"sessions\" object; writing an empty registry",
                seed.display()
            )),
            _ => None,
        }
    }
}

/// Under the lock: when the registry is Missing or Empty, write the seed (if valid) or the empty document.
pub fn ensure(guard: &RegistryLock, seed: Option<&Path>) -> Result<Ensured, RegistryError> {
    if !matches!(read(guard.registry()), ReadOutcome::Missing | ReadOutcome::Empty) {
        return Ok(Ensured::Existing);
    }
    let Some(seed) = seed else {
        write_bytes(guard, EMPTY_DOCUMENT)?;
        return Ok(Ensured::WroteEmpty { rejected_seed: None });
    };
    match std::fs::read(seed).ok().filter(|bytes| is_valid_seed(bytes)) {
        Some(bytes) => {
            write_bytes(guard, &bytes)?;
            Ok(Ensured::Seeded)
        }
        None => {
            write_bytes(guard, EMPTY_DOCUMENT)?;
            Ok(Ensured::WroteEmpty { rejected_seed: Some(seed.to_path_buf()) })
        }
    }
}

/// RG-10.3: a valid registry whose `version` is the number 1.
pub fn is_valid_seed(bytes: &[u8]) -> bool {
    Document::parse(bytes).is_ok_and(|doc| doc.version().and_then(Value::as_u64) == Some(1))
}

/// Deletes `<registry>.tmp-XXXXXXXX` leftovers of killed writers; only a lock holder may (RG-8.4).
pub fn remove_temp_leftovers(guard: &RegistryLock) -> usize {
    temp_leftovers_of(guard.registry()).iter().filter(|p| std::fs::remove_file(p).is_ok()).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lock::{LockPolicy, with_lock};
    use base::name::SessionName;
    use std::time::Duration;

    /// Runs `section` under the epilogue's lock of `path`.
    fn under_lock(path: &Path, section: impl FnOnce(&RegistryLock)) {
        with_lock(path, Duration::from_secs(5), LockPolicy::EPILOGUE, section).unwrap();
    }

    #[test]
    fn ensure_variants() {
        let dir = tempfile::tempdir().unwrap();
        let registry = dir.path().join("sessions.json");
        let seed = dir.path().join("seed.json");
        std::fs::write(&seed, b"{\"version\":1,\"sessions\":{\"main\":{}}}").unwrap();
        under_lock(&registry, |guard| {
            assert_eq!(ensure(guard, Some(&seed)).unwrap(), Ensured::Seeded);
            assert_eq!(std::fs::read(&registry).unwrap(), std::fs::read(&seed).unwrap(), "byte for byte");
            assert_eq!(ensure(guard, None).unwrap(), Ensured::Existing);
            std::fs::remove_file(&registry).unwrap();
            assert_eq!(ensure(guard, None).unwrap(), Ensured::WroteEmpty { rejected_seed: None });
            assert_eq!(std::fs::read(&registry).unwrap(), EMPTY_DOCUMENT);
            for bad in ["{\"version\":1,\"sessions\":[]}", "[]", "{\"sessions\":{}}", "{\"version\":2,\"sessions\":{}}"]
            {
                std::fs::write(&registry, b"").unwrap();
                std::fs::write(&seed, bad).unwrap();
                let done = ensure(guard, Some(&seed)).unwrap();
                assert_eq!(done, Ensured::WroteEmpty { rejected_seed: Some(seed.clone()) }, "{bad}");
                assert!(done.seed_message().unwrap().contains(&seed.display().to_string()));
                assert_eq!(std::fs::read(&registry).unwrap(), EMPTY_DOCUMENT);
            }
            std::fs::write(&registry, b"not json").unwrap();
            assert_eq!(ensure(guard, None).unwrap(), Ensured::Existing, "ensure never repairs");
        });
    }

    #[test]
    fn no_op_edit_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let registry = dir.path().join("sessions.json");
        std::fs::write(&registry, b"{\"sessions\":{\"a\":{\"stopped\":true}}}").unwrap();
        let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&registry).unwrap());
        let name = SessionName::parse("a").unwrap();
        under_lock(&registry, |guard| {
            edit(guard, |doc| {
                let changed = doc.entry_mut(&name).is_some_and(|mut e| e.set("stopped", Value::Bool(true)));
                Ok(((), changed))
            })
            .unwrap();
        });
        let after = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&registry).unwrap());
        assert_eq!(inode, after, "no rewrite");
    }

    #[test]
    fn edit_refuses_invalid_and_creates_missing_only_on_change() {
        let dir = tempfile::tempdir().unwrap();
        let registry = dir.path().join("sessions.json");
        under_lock(&registry, |guard| {
            edit(guard, |_| Ok(((), false))).unwrap();
            assert!(!registry.exists(), "nothing to change, nothing created");
            let name = SessionName::parse("x").unwrap();
            edit(guard, |doc| doc.insert_new(&name, serde_json::Map::new()).map(|()| ((), true))).unwrap();
            assert!(read_for_write(&registry).unwrap().contains("x"));
            std::fs::write(&registry, b"[]").unwrap();
            let err = edit(guard, |_| Ok(((), true))).unwrap_err();
            assert!(matches!(err, RegistryError::Invalid { .. }));
            assert_eq!(std::fs::read(&registry).unwrap(), b"[]");
        });
    }
}
