//! The queue directory (docs/intake.md IN-1): one file per queued record, named so that a listing alone gives the
//! order of acceptance and the assignment of every record, plus the tombstones of keys whose records left, the
//! admission intents, and the ended records kept for the operator. Every write is durable (fsync of the file and
//! of its directory) before the caller acknowledges anything; every writer holds the registry lock.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
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

/// The end in progress of a record leaving the queue without a session (IN-8, IN-12): written before its end line,
/// removed with the record, so that the next tick finishes an end a crash interrupted instead of admitting the
/// record after its end was announced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndIntent {
    pub how: How,
    pub by: Option<String>,
    pub at: String,
}

/// What a listing of the queue directory found, each list in order of acceptance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub queued: Vec<RecordId>,
    pub intents: Vec<RecordId>,
    /// Records whose end was begun (`<stem>.end`).
    pub ends: Vec<RecordId>,
}

impl Listing {
    /// Whether `id` is being admitted or ended: neither admitted nor joined nor expired as a plain queued record.
    pub fn in_progress(&self, id: &RecordId) -> bool {
        self.intents.contains(id) || self.ends.contains(id)
    }
}

/// The identity of the queue directory as `stat(2)` gives it: any entry created, removed or renamed in it changes
/// its modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirStamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
}

impl DirStamp {
    fn of(meta: &fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self { dev: meta.dev(), ino: meta.ino(), mtime: (meta.mtime(), meta.mtime_nsec()) }
    }

    /// Whether a change after `now` is sure to give another stamp: the file system's clock may lag by a tick, so a
    /// change in the same instant as the one stamped could leave the stamp as it was; one a second old cannot.
    fn settled(&self, now: SystemTime) -> bool {
        let secs = now.duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        self.mtime.0 < secs - 1
    }
}

/// The last listing of the queue directory, kept while the directory is unchanged (issue 24, Q14): an idle tick
/// on a full box then costs one `stat` instead of reading the names of every queued record.
#[derive(Debug, Default)]
pub struct ListingCache {
    stamp: Option<DirStamp>,
    listing: Arc<Listing>,
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

    fn end_path(&self, id: &RecordId) -> PathBuf {
        self.dir.join(format!("{}.end", id.stem()))
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
                (Some(id), "end") => listing.ends.push(id),
                _ => {}
            }
        }
        listing.queued.sort();
        listing.intents.sort();
        listing.ends.sort();
        Ok(listing)
    }

    /// [`Queue::list`], or the listing in `cache` when the directory has not changed since it was taken. The
    /// directory is stamped before it is read, so a change during the read gives the next call another stamp; a
    /// stamp younger than a second is not kept (see [`DirStamp::settled`]).
    pub fn list_cached(&self, cache: &mut ListingCache, now: SystemTime) -> Result<Arc<Listing>, IntakeError> {
        let stamp = match fs::metadata(&self.dir) {
            Ok(meta) => DirStamp::of(&meta),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                *cache = ListingCache::default();
                return Ok(Arc::default());
            }
            Err(err) => return Err(IntakeError::list(&self.dir, err)),
        };
        if cache.stamp == Some(stamp) {
            return Ok(Arc::clone(&cache.listing));
        }
        let listing = Arc::new(self.list()?);
        *cache = ListingCache { stamp: Some(stamp).filter(|s| s.settled(now)), listing: Arc::clone(&listing) };
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
        let newest =
            listing.queued.iter().chain(&listing.intents).chain(&listing.ends).map(|id| id.seq).max().unwrap_or(0);
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

    /// Removes a queued record and its intents (admission, end), durably.
    pub fn remove(&self, id: &RecordId) -> io::Result<()> {
        registry::remove_durable(&self.record_path(id))?;
        registry::remove_durable(&self.intent_path(id))?;
        registry::remove_durable(&self.end_path(id))
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

    /// Records that `id` is being ended as `intent.how`, durably, before anything of the end is written.
    pub fn write_end(&self, id: &RecordId, intent: &EndIntent) -> io::Result<()> {
        let bytes = serde_json::to_vec(intent).map_err(io::Error::other)?;
        registry::write_atomic(&self.end_path(id), &bytes).map(drop)
    }

    pub fn read_end(&self, id: &RecordId) -> Option<EndIntent> {
        fs::read(self.end_path(id)).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok())
    }

    pub fn remove_end(&self, id: &RecordId) -> io::Result<()> {
        registry::remove_durable(&self.end_path(id))
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

    fn record(key: &str) -> Record {
        serde_json::from_value(serde_json::json!({
            "//": "x", "version": 1, "key": key, "assignment": format!("key:{key}"), "source": "github",
            "routingKey": "acme/x", "nameStem": "acme-x", "topic": "t", "note": "", "object": null, "harness": "tool",
            "args": [], "seed": false, "filterDir": "/nonexistent", "user": "agent", "acceptedAt": "t", "batches": []
        }))
        .unwrap()
    }

    // issue 24, Q14: an unchanged directory is not read again; any change is seen at the next call.
    #[test]
    fn a_listing_is_kept_while_the_directory_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let queue = Queue::new(dir.path().join("queue"));
        let mut cache = ListingCache::default();
        assert!(queue.list_cached(&mut cache, SystemTime::now()).unwrap().queued.is_empty(), "no directory yet");
        queue.create(&RecordId::new(1, "key:a"), &record("a")).unwrap();
        let later = SystemTime::now() + Duration::from_secs(10);
        assert_eq!(queue.list_cached(&mut cache, later).unwrap().queued.len(), 1);
        // A name put there behind the cache's back, the stamp set back as it was: the kept listing is returned,
        // so the directory was not read again.
        let stamp = fs::metadata(queue.dir()).unwrap().modified().unwrap();
        fs::write(queue.dir().join(format!("{}.json", RecordId::new(2, "key:b").stem())), b"{}").unwrap();
        fs::File::open(queue.dir()).unwrap().set_modified(stamp).unwrap();
        assert_eq!(queue.list_cached(&mut cache, later).unwrap().queued.len(), 1);
        // A real change moves the stamp: seen at once.
        queue.create(&RecordId::new(3, "key:c"), &record("c")).unwrap();
        assert_eq!(queue.list_cached(&mut cache, later).unwrap().queued.len(), 3);
    }

    #[test]
    fn a_stamp_younger_than_a_second_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let queue = Queue::new(dir.path().to_path_buf());
        let mut cache = ListingCache::default();
        queue.list_cached(&mut cache, SystemTime::now()).unwrap();
        assert_eq!(cache.stamp, None, "just made: a change this instant could keep its stamp");
        queue.list_cached(&mut cache, SystemTime::now() + Duration::from_secs(5)).unwrap();
        assert!(cache.stamp.is_some());
    }

    #[test]
    fn stamps_only_grow() {
        let listing = Listing { queued: vec![RecordId::new(u64::from(u32::MAX) * 1000, "a")], ..Listing::default() };
        assert_eq!(Queue::next_seq(&listing, UNIX_EPOCH), u64::from(u32::MAX) * 1000 + 1);
        let later = UNIX_EPOCH + Duration::from_secs(2_000_000_000);
        assert_eq!(Queue::next_seq(&listing, later), 2_000_000_000 * 1_000_000_000);
    }
}
