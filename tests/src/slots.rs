//! Slots (80 I9): fixed sandbox roots whose epilogue is baked once, claimed with an flock so scenarios that need
//! the real epilogue run one at a time, across test processes too.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::held::HeldLock;
use crate::target_dir;

/// A claimed slot: its root is wiped on claim and on release.
#[derive(Debug)]
pub struct Slot {
    root: PathBuf,
    _lock: HeldLock,
}

impl Slot {
    /// Claims a free slot, waiting for one when all are taken.
    pub fn claim() -> Self {
        let count =
            std::env::var("AGENT_BOX_TEST_SLOTS").ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(1).max(1);
        let base = target_dir().join("tmp/slots");
        fs::create_dir_all(&base).unwrap();
        let free = (0..count).find_map(|k| try_claim(&base, k, Duration::ZERO));
        let (root, lock) = free.unwrap_or_else(|| {
            try_claim(&base, 0, Duration::from_secs(3600)).expect("no test slot became free within an hour")
        });
        wipe(&root);
        fs::create_dir_all(&root).unwrap();
        Self { root, _lock: lock }
    }

    /// Issue 26: box slot `k` of a test that runs several boxes at once (`tmp/box-slots/<k>`, with an epilogue of
    /// its own baked once for its fixed root), claimed with its own lock so that such tests run one at a time.
    pub fn claim_box(k: usize) -> Self {
        let base = target_dir().join("tmp/box-slots");
        fs::create_dir_all(&base).unwrap();
        let (root, lock) =
            try_claim(&base, k, Duration::from_secs(3600)).expect("no box slot became free within an hour");
        wipe(&root);
        fs::create_dir_all(&root).unwrap();
        Self { root, _lock: lock }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if std::env::var_os("AGENT_BOX_TEST_KEEP").is_none() {
            wipe(&self.root);
        }
    }
}

fn try_claim(base: &Path, k: usize, wait: Duration) -> Option<(PathBuf, HeldLock)> {
    let lock = HeldLock::acquire(&base.join(format!("{k}.lock")), wait).ok()?;
    Some((base.join(k.to_string()), lock))
}

fn wipe(root: &Path) {
    if root.exists() {
        make_writable(root);
        let _ = fs::remove_dir_all(root);
    }
}

/// Restores owner write permission below `root` so a test that made a directory read-only cannot block cleanup.
pub fn make_writable(root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = fs::symlink_metadata(root) else { return };
    if meta.is_dir() {
        let _ = fs::set_permissions(root, fs::Permissions::from_mode(0o700));
        if let Ok(entries) = fs::read_dir(root) {
            for entry in entries.flatten() {
                make_writable(&entry.path());
            }
        }
    }
}
