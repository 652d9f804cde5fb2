//! The webhook-spawn refusal record: a cumulative count of deferred batches (LS-9).

use std::path::{Path, PathBuf};
use std::time::Duration;

use registry::{paths::lock_path_of, time, with_file_lock};
use serde_json::{Map, Value};

use crate::error::LeaseError;

/// Lock bound of the refusal record (OV-5.5).
pub const REFUSAL_LOCK_WAIT: Duration = Duration::from_secs(2);

const NOTE: &str =
    "agent-box-webhook-spawn deferred a dispatched batch (exit 75); the receiver retries it. count is cumulative.";

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

    /// Counts one more deferred batch; `live`/`max` are the refusing admission's figures, null otherwise.
    pub fn bump(&self, live: Option<usize>, max: Option<u64>, topic: &str, key: &str) -> Result<u64, LeaseError> {
        let dir = registry::atomic::parent_dir(&self.path);
        registry::ensure_private_dir(dir).map_err(|e| LeaseError::io(dir, e))?;
        let lock_path = lock_path_of(&self.path);
        with_file_lock(&lock_path, REFUSAL_LOCK_WAIT, false, |_| self.bump_locked(live, max, topic, key))
            .map_err(|r| LeaseError::from_refusal(&lock_path, r))
            .and_then(|bumped| bumped)
    }

    fn bump_locked(&self, live: Option<usize>, max: Option<u64>, topic: &str, key: &str) -> Result<u64, LeaseError> {
        let previous = self.read();
        let at = time::format_iso((self.clock)());
        let count =
            previous.as_ref().and_then(|p| p.get("count")).and_then(Value::as_u64).unwrap_or(0).saturating_add(1);
        let first_at =
            previous.as_ref().and_then(|p| p.get("firstAt")).and_then(Value::as_str).unwrap_or(&at).to_owned();
        let mut doc = Map::new();
        doc.insert("//".into(), Value::from(NOTE));
        doc.insert("at".into(), Value::from(at.as_str()));
        doc.insert("firstAt".into(), Value::from(first_at));
        doc.insert("count".into(), Value::from(count));
        doc.insert("live".into(), live.map_or(Value::Null, Value::from));
        doc.insert("max".into(), max.map_or(Value::Null, Value::from));
        doc.insert("deferred".into(), Value::Bool(true));
        if !topic.is_empty() {
            doc.insert("topic".into(), Value::from(topic));
        }
        if !key.is_empty() {
            doc.insert("key".into(), Value::from(key));
        }
        let mut bytes = serde_json::to_vec_pretty(&doc).map_err(|e| LeaseError::io(&self.path, e.into()))?;
        bytes.push(b'\n');
        registry::write_atomic(&self.path, &bytes).map_err(|e| LeaseError::io(&self.path, e))?;
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
