//! The box's own record of the claims it holds (docs/boxes.md BX-5, BX-6): `~/.local/state/agent-box/claims/
//! <gen>.json`, one file per claim, written right after the lease it belongs to. A lease is deleted when its
//! assignment is resolved, so only this file still says, afterwards, that the claim must be marked done.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One claim this box holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub assignment: String,
    /// The session it became, and the gen of its lease (the claim's `life`).
    pub name: String,
    #[serde(rename = "gen")]
    pub lease_gen: String,
    #[serde(rename = "box")]
    pub box_label: String,
}

/// The ledger directory.
#[derive(Debug, Clone)]
pub struct Ledger {
    dir: PathBuf,
}

impl Ledger {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, lease_gen: &str) -> Option<PathBuf> {
        base::is_uuid(lease_gen).then(|| self.dir.join(format!("{lease_gen}.json")))
    }

    /// Writes the file of a claim, durably.
    pub fn hold(&self, held: &Held) -> io::Result<()> {
        let path = self.path(&held.lease_gen).ok_or_else(|| io::Error::other("a gen that is no UUID"))?;
        registry::ensure_private_dir(&self.dir)?;
        let bytes = serde_json::to_vec(held).map_err(io::Error::other)?;
        registry::write_atomic(&path, &bytes).map(drop)
    }

    pub fn forget(&self, lease_gen: &str) -> io::Result<()> {
        match self.path(lease_gen) {
            Some(path) => registry::remove_durable(&path),
            None => Ok(()),
        }
    }

    /// Every claim held; an unreadable file is skipped (it names no claim the box could act on).
    pub fn all(&self) -> Vec<Held> {
        let Ok(entries) = fs::read_dir(&self.dir) else { return Vec::new() };
        let mut held: Vec<Held> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".json")))
            .filter_map(|e| serde_json::from_slice(&fs::read(e.path()).ok()?).ok())
            .collect();
        held.sort_by(|a, b| a.name.cmp(&b.name));
        held
    }
}
