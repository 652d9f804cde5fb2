//! The claims marker `~/.local/state/agent-box/claims.json` (issue 26, docs/boxes.md BX-1): the supervisor writes it
//! at its start while a claims database is configured and removes it otherwise. webhook-spawn, which never talks to
//! the database, reads it to know that it must only queue: admitting a batch itself would start work no claim
//! covers.

use std::io;
use std::path::{Path, PathBuf};

pub fn path(state_dir: &Path) -> PathBuf {
    state_dir.join("claims.json")
}

/// Whether a claims database is configured on this box: the marker is there. Any error but "no such file" counts as
/// configured (an error is not absence: queueing is always safe, admitting without a claim is not).
pub fn configured(state_dir: &Path) -> bool {
    !registry::atomic::is_absent(&path(state_dir))
}

/// Writes the marker (the box's label and the term), durably.
pub fn write(state_dir: &Path, label: &str, term_secs: u64) -> io::Result<()> {
    let body = serde_json::json!({"version": 1, "box": label, "termSecs": term_secs});
    let mut bytes = serde_json::to_vec_pretty(&body).map_err(io::Error::other)?;
    bytes.push(b'\n');
    registry::ensure_private_dir(state_dir)?;
    registry::write_atomic(&path(state_dir), &bytes).map(drop)
}

/// Removes the marker of an earlier start with a database.
pub fn remove(state_dir: &Path) -> io::Result<()> {
    registry::remove_durable(&path(state_dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    // BX-1: the marker says a claims database is configured while it is there, under the state directory.
    #[test]
    fn bx1_the_marker_says_a_claims_database_is_configured() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        assert!(!configured(&state), "no marker, no database");
        write(&state, "box-a", 300).unwrap();
        assert_eq!(path(&state), state.join("claims.json"));
        let body: serde_json::Value = serde_json::from_slice(&std::fs::read(path(&state)).unwrap()).unwrap();
        assert_eq!(body, serde_json::json!({"version": 1, "box": "box-a", "termSecs": 300}));
        assert!(configured(&state));
        remove(&state).unwrap();
        assert!(!configured(&state));
    }
}
