//! The webhook-spawn refusal record: a cumulative count of deferred batches (LS-9).

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_box_types::refusal::{self, RefusalRecord as Record};
use base::time;
use registry::{paths::lock_path_of, with_file_lock};
use serde_json::{Map, Value};

use crate::error::LeaseError;

/// Lock bound of the refusal record (OV-5.5).
pub const REFUSAL_LOCK_WAIT: Duration = Duration::from_secs(2);

/// `webhook-spawn-refused.json` with its `.lock` sidecar.
#[derive(Debug, Clone)]
pub struct RefusalRecord {
    path: PathBuf,
    clock: fn() -> i64,
}

impl RefusalRecord {
    pub fn new(path: PathBuf) -> Self {
        Self { path, clock: time::now_epoch }
    }

    /// Replaces the clock (tests).
    pub fn with_clock(mut self, clock: fn() -> i64) -> Self {
        self.clock = clock;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Counts one more deferred batch; `live`/`max` are the refusing admission's figures, null otherwise; `reason`
    /// is the deferral's cause (issue 18: the record says why, e.g. a lease that could not be created).
    pub fn bump(
        &self,
        live: Option<usize>,
        max: Option<u64>,
        topic: &str,
        key: &str,
        reason: &str,
    ) -> Result<u64, LeaseError> {
        let dir = registry::atomic::parent_dir(&self.path);
        registry::ensure_private_dir(dir).map_err(|e| LeaseError::io(dir, e))?;
        let lock_path = lock_path_of(&self.path);
        with_file_lock(&lock_path, REFUSAL_LOCK_WAIT, false, |_| self.bump_locked(live, max, topic, key, reason))
            .map_err(|r| LeaseError::from_refusal(&lock_path, r))
            .and_then(|bumped| bumped)
    }

    fn bump_locked(
        &self,
        live: Option<usize>,
        max: Option<u64>,
        topic: &str,
        key: &str,
        reason: &str,
    ) -> Result<u64, LeaseError> {
        let previous = self.read();
        let at = time::format_iso((self.clock)());
        let count =
            previous.as_ref().and_then(|p| p.get("count")).and_then(Value::as_u64).unwrap_or(0).saturating_add(1);
        let first_at =
            previous.as_ref().and_then(|p| p.get("firstAt")).and_then(Value::as_str).unwrap_or(&at).to_owned();
        let record = Record {
            note: refusal::NOTE.to_owned(),
            at,
            first_at,
            count,
            live: live.map(|n| u64::try_from(n).unwrap_or(u64::MAX)),
            max,
            deferred: true,
            topic: Some(topic.to_owned()).filter(|t| !t.is_empty()),
            key: Some(key.to_owned()).filter(|k| !k.is_empty()),
            reason: Some(reason.to_owned()).filter(|r| !r.is_empty()),
        };
        let text = agent_box_types::pretty(&record).map_err(|e| LeaseError::io(&self.path, e.into()))?;
        registry::write_atomic(&self.path, text.as_bytes()).map_err(|e| LeaseError::io(&self.path, e))?;
        Ok(count)
    }

    /// The record as a JSON object, if it exists and parses.
    pub fn read(&self) -> Option<Map<String, Value>> {
        let bytes = std::fs::read(&self.path).ok()?;
        match serde_json::from_slice(&bytes) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        }
    }

    /// Removes `webhook-spawn-refused.json.tmp-XXXXXXXX` leftovers under the record's lock.
    pub fn remove_temp_leftovers(&self) -> usize {
        crate::remove_temps_under_lock(
            || registry::atomic::temp_leftovers_of(&self.path),
            &lock_path_of(&self.path),
            REFUSAL_LOCK_WAIT,
        )
    }
}
