//! The queue directory (docs/intake.md IN-1): one file per queued record, named so that a listing alone gives the
//! order of acceptance and the assignment of every record, plus the tombstones of keys whose records left, the
//! admission intents, and the ended records kept for the operator. Every write is durable (fsync of the file and
//! of its directory) before the caller acknowledges anything; every writer holds the registry lock.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agent_box_types::intake::{How, Record, Tombstone};
use serde::{Deserialize, Serialize};

use crate::bounds::REDELIVERY_WINDOW_SECS;
use crate::error::IntakeError;
use crate::key::digest_name;

/// Hex digits of the assignment digest in a record's file name.
const ASSIGNMENT_DIGITS: usize = 16;
/// Hex digits of a key's digest in its tombstone's name.
const KEY_DIGITS: usize = 32;
/// Digits of the acceptance stamp (nanoseconds since the epoch, zero-padded so names sort by it).
const SEQ_DIGITS: usize = 20;

/// A record's name: when it was accepted (strictly increasing within the queue) and the digest of its assignment.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RecordId {
    pub seq: u64,
    pub assignment: String,
}

impl RecordId {
    pub fn new(seq: u64, assignment: &str) -> Self {
        Self { seq, assignment: digest_name(assignment, ASSIGNMENT_DIGITS) }
    }

    /// `<seq>-<digest>`, the stem of the record's files.
    pub fn stem(&self) -> String {
        format!("{:0width$}-{}", self.seq, self.assignment, width = SEQ_DIGITS)
    }

    /// The stem of a file name, when it is one of ours.
    pub fn parse(stem: &str) -> Option<Self> {
        let (seq, digest) = stem.split_once('-')?;
        let hex = |s: &str| s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        let valid = seq.len() == SEQ_DIGITS
            && seq.bytes().all(|b| b.is_ascii_digit())
            && digest.len() == ASSIGNMENT_DIGITS
            && hex(digest);
        let seq = seq.parse().ok().filter(|_| valid)?;
        Some(Self { seq, assignment: digest.to_owned() })
    }

    /// Whether this record's file name stands for `assignment`.
    pub fn is_for(&self, assignment: &str) -> bool {
        self.assignment == digest_name(assignment, ASSIGNMENT_DIGITS)
    }

    /// When it was accepted, in whole seconds since the epoch.
    pub fn accepted_secs(&self) -> i64 {
        i64::try_from(self.seq / 1_000_000_000).unwrap_or(i64::MAX)
    }
}

/// The admission in progress for a record (IN-12): written before its spawn record, removed with the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intent {
    pub name: String,
    #[serde(rename = "gen")]
    pub lease_gen: String,
    pub at: String,
}

/// What a listing of the queue directory found, each list in order of acceptance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub queued: Vec<RecordId>,
    pub intents: Vec<RecordId>,
}

/// A record file that exists but does not read as a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable(pub String);

/// The queue under one directory.
#[derive(Debug, Clone)]
pub struct Queue {
    dir: PathBuf,
}

impl Queue {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn record_path(&self, id: &RecordId) -> PathBuf {
        self.dir.join(format!("{}.json", id.stem()))
    }

    fn intent_path(&self, id: &RecordId) -> PathBuf {
        self.dir.join(format!("{}.admit", id.stem()))
    }

    pub fn ended_dir(&self) -> PathBuf {
        self.dir.join("ended")
    }

    pub fn ended_path(&self, id: &RecordId) -> PathBuf {
        self.ended_dir().join(format!("{}.json", id.stem()))
    }

    fn keys_dir(&self) -> PathBuf {
        self.dir.join("keys")
    }

    fn tombstone_path(&self, key: &str) -> PathBuf {
        self.keys_dir().join(format!("{}.json", digest_name(key, KEY_DIGITS)))
    }

    /// The queued records and the intents, by a listing alone (no file is read). A missing directory is an empty
    /// queue; any other error is reported (IN-1: an error is never read as "nothing waits").
    pub fn list(&self) -> Result<Listing, IntakeError> {
        let mut listing = Listing::default();
        for (stem, ext) in self.names(&self.dir)? {
            match (RecordId::parse(&stem), ext.as_str()) {
                (Some(id), "json") => listing.queued.push(id),
                (Some(id), "admit") => listing.intents.push(id),
                _ => {}
            }
        }
        listing.queued.sort();
        listing.intents.sort();
        Ok(listing)
    }

    /// The ended records kept for the operator, in order of acceptance.
    pub fn ended(&self) -> Result<Vec<RecordId>, IntakeError> {
        let mut ids: Vec<RecordId> = self
            .names(&self.ended_dir())?
            .into_iter()
            .filter(|(_, ext)| ext == "json")
            .filter_map(|(stem, _)| RecordId::parse(&stem))
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// `(stem, extension)` of every regular file in `dir`.
    fn names(&self, dir: &Path) -> Result<Vec<(String, String)>, IntakeError> {
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(IntakeError::list(dir, err)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|err| IntakeError::list(dir, err))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
            if let Some((stem, ext)) = name.rsplit_once('.') {
                names.push((stem.to_owned(), ext.to_owned()));
            }
        }
        Ok(names)
    }

    pub fn read(&self, id: &RecordId) -> Result<Record, Unreadable> {
        read_record(&self.record_path(id))
    }

    pub fn read_ended(&self, id: &RecordId) -> Result<Record, Unreadable> {
        read_record(&self.ended_path(id))
    }

    /// The next stamp: now, or one past the newest queued record when the clock did not move (or went back), so
    /// the names keep the order in which the records were accepted under the lock.
    pub fn next_seq(listing: &Listing, now: SystemTime) -> u64 {
        let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let newest = listing.queued.iter().chain(&listing.intents).map(|id| id.seq).max().unwrap_or(0);
        now.max(newest.saturating_add(1))
    }

    /// Creates a new record durably (IN-1: temp, fsync, create-if-absent under its name, fsync of the directory).
    pub fn create(&self, id: &RecordId, record: &Record) -> Result<(), IntakeError> {
        registry::ensure_private_dir(&self.dir).map_err(|err| IntakeError::write(&self.dir, err))?;
        let path = self.record_path(id);
        match registry::create_durable(&path, &document(record)) {
            Ok(true) => Ok(()),
            Ok(false) => Err(IntakeError::write(&path, io::Error::from(io::ErrorKind::AlreadyExists))),
            Err(err) => Err(IntakeError::write(&path, err)),
        }
    }

    /// Replaces a queued record durably (a coalesced batch appended).
    pub fn replace(&self, id: &RecordId, record: &Record) -> Result<(), IntakeError> {
        let path = self.record_path(id);
        registry::write_atomic(&path, &document(record)).map(drop).map_err(|err| IntakeError::write(&path, err))
    }

    /// Removes a queued record and its intent, durably.
    pub fn remove(&self, id: &RecordId) -> io::Result<()> {
        registry::remove_durable(&self.record_path(id))?;
        registry::remove_durable(&self.intent_path(id))
    }

    /// Keeps an ended record for the operator under `ended/` (IN-10), durably.
    pub fn keep_ended(&self, id: &RecordId, record: &Record) -> io::Result<()> {
        registry::ensure_private_dir(&self.ended_dir())?;
        registry::write_atomic(&self.ended_path(id), &document(record)).map(drop)
    }

    pub fn remove_ended(&self, id: &RecordId) -> io::Result<()> {
        registry::remove_durable(&self.ended_path(id))
    }

    pub fn write_intent(&self, id: &RecordId, intent: &Intent) -> io::Result<()> {
        let bytes = serde_json::to_vec(intent).map_err(io::Error::other)?;
        registry::write_atomic(&self.intent_path(id), &bytes).map(drop)
    }

    pub fn read_intent(&self, id: &RecordId) -> Option<Intent> {
        fs::read(self.intent_path(id)).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok())
    }

    pub fn remove_intent(&self, id: &RecordId) -> io::Result<()> {
        registry::remove_durable(&self.intent_path(id))
    }

    /// The tombstone of `key`, if one was written within the redelivery window (an older one not yet pruned is
    /// no longer a reason to call a batch a duplicate).
    pub fn tombstone(&self, key: &str, now: SystemTime) -> Option<Tombstone> {
        let path = self.tombstone_path(key);
        let fresh = fs::metadata(&path).ok()?.modified().ok().is_some_and(|at| within_window(at, now));
        let tombstone: Tombstone = serde_json::from_slice(&fs::read(&path).ok()?).ok()?;
        (fresh && tombstone.key == key).then_some(tombstone)
    }

    /// Writes the tombstone of every key of `record` (IN-4), durably.
    pub fn bury(&self, record: &Record, how: How, name: Option<&str>, at: &str) -> io::Result<()> {
        registry::ensure_private_dir(&self.keys_dir())?;
        for key in record.batches.iter().flat_map(|b| &b.keys) {
            let tombstone = Tombstone {
                key: key.clone(),
                assignment: record.assignment.clone(),
                how,
                at: at.to_owned(),
                accepted_at: record.accepted_at.clone(),
                name: name.map(str::to_owned),
            };
            let bytes = serde_json::to_vec(&tombstone).map_err(io::Error::other)?;
            registry::write_atomic(&self.tombstone_path(key), &bytes)?;
        }
        Ok(())
    }

    /// Removes the tombstones written before the redelivery window (IN-4); returns how many.
    pub fn prune_tombstones(&self, now: SystemTime) -> usize {
        let Ok(entries) = fs::read_dir(self.keys_dir()) else { return 0 };
        let old = |path: &Path| fs::metadata(path).and_then(|m| m.modified()).is_ok_and(|at| !within_window(at, now));
        entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|path| old(path))
            .filter(|path| fs::remove_file(path).is_ok())
            .count()
    }

    /// The temp files in the queue and its subdirectories, by a lock-free listing: a writer's in flight, or a
    /// leftover of one killed mid-write.
    pub fn temp_files(&self) -> Vec<PathBuf> {
        [self.dir.clone(), self.keys_dir(), self.ended_dir()]
            .iter()
            .flat_map(|dir| registry::atomic::temp_leftovers_in(dir))
            .collect()
    }

    /// Removes the temp files of writers killed mid-write. Every writer of the queue holds the registry lock, so
    /// the caller must hold it too: a temp found without it may be a writer's between its write and its link.
    pub fn remove_temp_leftovers(&self, _guard: &registry::RegistryLock) -> usize {
        self.temp_files().iter().filter(|path| fs::remove_file(path).is_ok()).count()
    }
}

fn within_window(at: SystemTime, now: SystemTime) -> bool {
    now.duration_since(at).map_or(true, |age| age < Duration::from_secs(REDELIVERY_WINDOW_SECS))
}

fn read_record(path: &Path) -> Result<Record, Unreadable> {
    let bytes = fs::read(path).map_err(|err| Unreadable(err.to_string()))?;
    serde_json::from_slice(&bytes).map_err(|err| Unreadable(err.to_string()))
}

/// A record as written: pretty, one trailing newline.
fn document(record: &Record) -> Vec<u8> {
    agent_box_types::pretty(record).map(String::into_bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_sort_by_acceptance() {
        let id = RecordId::new(1_764_681_600_123_456_789, "github:acme/x#7");
        assert_eq!(id.stem().len(), SEQ_DIGITS + 1 + ASSIGNMENT_DIGITS);
        assert_eq!(RecordId::parse(&id.stem()), Some(id.clone()));
        assert!(id.is_for("github:acme/x#7") && !id.is_for("github:acme/x#8"));
        assert_eq!(id.accepted_secs(), 1_764_681_600);
        for bad in ["", "1-2", "x0000000000000000001-0123456789abcdef", "00000000000000000001-0123456789ABCDEF"] {
            assert_eq!(RecordId::parse(bad), None, "{bad}");
        }
        assert!(RecordId::new(9, "b") < RecordId::new(10, "a"), "zero-padded stamps sort as numbers");
    }

    #[test]
    fn stamps_only_grow() {
        let listing = Listing { queued: vec![RecordId::new(u64::from(u32::MAX) * 1000, "a")], intents: vec![] };
        assert_eq!(Queue::next_seq(&listing, UNIX_EPOCH), u64::from(u32::MAX) * 1000 + 1);
        let later = UNIX_EPOCH + Duration::from_secs(2_000_000_000);
        assert_eq!(Queue::next_seq(&listing, later), 2_000_000_000 * 1_000_000_000);
    }
}
