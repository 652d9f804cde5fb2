//! Lease files under one directory lock: create, mark an outcome, record a death, finish, heartbeat, sweep.

use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use base::{SessionName, time};
use registry::{Document, with_file_lock};
use serde_json::{Map, Value};

use crate::error::LeaseError;
use crate::hooklog::{HookLog, SpawnRecord, canonical_object};
use crate::model::{Changed, EndHow, Expect, Gen, Lease, LeaseState, Outcome};

/// Lock bound of the lease directory (OV-5.5).
pub const LEASE_LOCK_WAIT: Duration = Duration::from_secs(2);
/// A lease younger than this may belong to an add still in flight; sweeps spare it (LS-5.7).
pub const SWEEP_GRACE_SECS: i64 = 30;
/// Heartbeats closer together than this change nothing (LS-5.6).
pub const HEARTBEAT_EVERY_SECS: i64 = 60;

const NOTE: &str = "agent-box assignment lease: present = this box accepted the work below; outcome null = not yet accounted for; outcome set = the box cannot say the work finished. Removed on a clean exit or rm.";

/// Names a valid registry lists, each with the life its entry names (issue 17); the only input a sweep accepts
/// (so an unreadable registry cannot sweep).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedNames(BTreeMap<String, Option<String>>);

impl ListedNames {
    pub fn from_document(doc: &Document) -> Self {
        Self(doc.names().map(|n| (n.to_owned(), doc.entry(n).and_then(|e| e.life()).map(str::to_owned))).collect())
    }
    /// Drops names reaped this tick.
    pub fn without(mut self, reaped: &[SessionName]) -> Self {
        for name in reaped {
            self.0.remove(name.as_str());
        }
        self
    }
    /// Adds the names admissions in progress are making (issue 24, docs/intake.md IN-12), each with the gen of
    /// its lease as its life: such a name is not listed yet, and its lease is the admission's to finish or take
    /// back, never a sweep's.
    pub fn with_admitting(mut self, admitting: &BTreeMap<String, String>) -> Self {
        for (name, life) in admitting {
            self.0.entry(name.clone()).or_insert_with(|| Some(life.clone()));
        }
        self
    }
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
    /// A lease of `name` with `gen` belongs to an older life: the name is listed with another life.
    fn is_foreign(&self, name: &str, lease_gen: Option<&str>) -> bool {
        matches!((self.0.get(name), lease_gen), (Some(Some(life)), Some(lease_gen)) if life != lease_gen)
    }
}

/// What one sweep deleted, and the error that stopped it, if any.
#[derive(Debug, Default)]
pub struct SweepReport {
    pub swept: Vec<SessionName>,
    pub error: Option<LeaseError>,
}

/// The lease directory (`~/.local/state/agent-box/lease`, baked into the epilogue).
#[derive(Debug, Clone)]
pub struct LeaseDir {
    dir: PathBuf,
    clock: fn() -> i64,
    /// The gens of leases of listed names as last read, by file identity (issue 17): the sweep compares every such
    /// lease with its entry's life each tick, and reads a file again only after it was replaced.
    seen_gens: Arc<Mutex<SeenGens>>,
}

/// Per name: the lease file's stamp when its gen was read, and that gen.
type SeenGens = BTreeMap<SessionName, (FileStamp, Option<String>)>;

/// What tells one version of a lease file from the next: every writer replaces the file by rename (a new inode) or
/// at least changes its mtime.
type FileStamp = (u64, std::time::SystemTime);

/// The lease file as read under the lock.
pub(crate) enum Found {
    Absent,
    Unreadable,
    Present(Lease),
}

impl LeaseDir {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir, clock: time::now_epoch, seen_gens: Arc::default() }
    }

    /// Replaces the clock (tests).
    pub fn with_clock(mut self, clock: fn() -> i64) -> Self {
        self.clock = clock;
        self
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn now(&self) -> i64 {
        (self.clock)()
    }

    pub fn lease_path(&self, name: &SessionName) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    fn lock_path(&self) -> PathBuf {
        self.dir.join(".lock")
    }

    /// Runs `section` under the directory lock (busy for 2 s: [`LeaseError::Busy`]).
    pub(crate) fn locked<R>(&self, section: impl FnOnce() -> Result<R, LeaseError>) -> Result<R, LeaseError> {
        let path = self.lock_path();
        with_file_lock(&path, LEASE_LOCK_WAIT, false, |_| section())
            .map_err(|r| LeaseError::from_refusal(&path, r))
            .and_then(|result| result)
    }

    /// Lock-free read; never errors, never creates anything.
    pub fn read(&self, name: &SessionName) -> LeaseState {
        match self.find(name) {
            Found::Absent => LeaseState::Absent,
            Found::Unreadable => LeaseState::Unreadable,
            Found::Present(lease) => LeaseState::Present(lease),
        }
    }

    pub(crate) fn find(&self, name: &SessionName) -> Found {
        match std::fs::read(self.lease_path(name)) {
            Err(err) if err.kind() == io::ErrorKind::NotFound => Found::Absent,
            Err(_) => Found::Unreadable,
            Ok(bytes) => Lease::parse(&bytes).map_or(Found::Unreadable, Found::Present),
        }
    }

    /// The outcome when the lease exists and its outcome is a non-empty string.
    pub fn outcome(&self, name: &SessionName) -> Option<Outcome> {
        match self.find(name) {
            Found::Present(lease) => lease.outcome(),
            _ => None,
        }
    }

    /// Every `<name>.json` whose stem passes the charset, sorted by name.
    pub fn list(&self) -> Vec<(SessionName, LeaseState)> {
        let mut names: Vec<SessionName> = self.candidate_files().into_iter().map(|(name, _)| name).collect();
        names.sort();
        names.into_iter().map(|name| (name.clone(), self.read(&name))).collect()
    }

    fn candidate_files(&self) -> Vec<(SessionName, PathBuf)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| {
                let file_name = e.file_name();
                let stem = file_name.to_str()?.strip_suffix(".json")?;
                Some((SessionName::parse(stem).ok()?, e.path()))
            })
            .collect()
    }

    /// Creates the lease of a new assignment with a fresh gen (LS-5.1); replaces an old one, logging `swept`.
    pub fn create(
        &self,
        name: &SessionName,
        topic: &str,
        object: Option<&str>,
        log: Option<&HookLog>,
    ) -> Result<Gen, LeaseError> {
        self.create_with_gen(name, topic, object, Gen::random(), log)
    }

    /// [`LeaseDir::create`] with a gen chosen by the caller: webhook-spawn makes the lease's gen the life token of
    /// the entry it adds (issue 17), so the pane of that life and no other settles it.
    pub fn create_with_gen(
        &self,
        name: &SessionName,
        topic: &str,
        object: Option<&str>,
        new_gen: Gen,
        log: Option<&HookLog>,
    ) -> Result<Gen, LeaseError> {
        registry::ensure_private_dir(&self.dir).map_err(|e| LeaseError::io(&self.dir, e))?;
        self.locked(|| self.create_locked(name, topic, object, new_gen, log.map(|log| (log, None))))
    }

    /// webhook-spawn's create (issue 18): in one step under the lease lock, the `swept` record of an older lease of
    /// the name, then `spawn` (durable), then the lease, so every lease has its spawn record after any crash; a
    /// lease that cannot be written gets a `refused` end record after its spawn record. A busy lease lock writes
    /// nothing at all.
    pub fn create_with_spawn(&self, spawn: &SpawnRecord<'_>, new_gen: Gen, log: &HookLog) -> Result<Gen, LeaseError> {
        registry::ensure_private_dir(&self.dir).map_err(|e| LeaseError::io(&self.dir, e))?;
        let (name, topic, object) = (spawn.name, spawn.topic, spawn.object);
        self.locked(|| self.create_locked(name, topic, object, new_gen, Some((log, Some(spawn)))))
    }

    fn create_locked(
        &self,
        name: &SessionName,
        topic: &str,
        object: Option<&str>,
        new_gen: Gen,
        log: Option<(&HookLog, Option<&SpawnRecord<'_>>)>,
    ) -> Result<Gen, LeaseError> {
        let spawn = log.and_then(|(log, spawn)| Some((log, spawn?)));
        let log = log.map(|(log, _)| log);
        if let (Some(log), true) = (log, name.is_hook()) {
            match self.find(name) {
                Found::Absent => {}
                Found::Unreadable => drop(log.append_end(name, &EndHow::Swept, None)),
                Found::Present(old) => drop(log.append_end(name, &EndHow::Swept, Some(&old))),
            }
        }
        let mut map = Map::new();
        map.insert("//".into(), Value::from(NOTE));
        map.insert("topic".into(), Value::from(topic));
        map.insert("object".into(), canonical_object(object).map_or(Value::Null, Value::from));
        map.insert("claimedAt".into(), Value::from(time::format_iso((self.clock)())));
        map.insert("gen".into(), Value::from(new_gen.as_str()));
        map.insert("outcome".into(), Value::Null);
        map.insert("lastSeenAt".into(), Value::Null);
        if let Some(key) = spawn.and_then(|(_, record)| record.intake) {
            map.insert("intake".into(), Value::from(key));
        }
        if let Some((assignment, label)) = spawn.and_then(|(_, record)| record.claim) {
            map.insert("claim".into(), serde_json::json!({"assignment": assignment, "box": label}));
        }
        if let Some((log, record)) = spawn {
            drop(log.append_spawn(record));
        }
        if let Err(err) = self.write(name, &Lease::from_map(map)) {
            if let Some((log, _)) = spawn {
                drop(log.append_end(name, &EndHow::Refused, None));
            }
            return Err(err);
        }
        Ok(new_gen)
    }

    pub(crate) fn write(&self, name: &SessionName, lease: &Lease) -> Result<(), LeaseError> {
        let path = self.lease_path(name);
        registry::write_atomic(&path, &lease.to_bytes()).map(drop).map_err(|e| LeaseError::io(&path, e))
    }

    /// True when there is no lease file to act on, checked before any lock or directory is touched: an
    /// operation that finds nothing is linearised before any later create.
    pub(crate) fn nothing_there(&self, name: &SessionName) -> bool {
        matches!(std::fs::symlink_metadata(self.lease_path(name)), Err(e) if e.kind() == io::ErrorKind::NotFound)
    }

    /// Records the first outcome (LS-5.3).
    pub fn mark_outcome(&self, name: &SessionName, outcome: &Outcome, expect: &Expect) -> Result<Changed, LeaseError> {
        if self.nothing_there(name) {
            return Ok(Changed::Absent);
        }
        self.locked(|| self.mark_locked(name, outcome, expect)).map(|(changed, _)| changed)
    }

    pub(crate) fn mark_locked(
        &self,
        name: &SessionName,
        outcome: &Outcome,
        expect: &Expect,
    ) -> Result<(Changed, Option<Lease>), LeaseError> {
        let mut lease = match self.find(name) {
            Found::Absent => return Ok((Changed::Absent, None)),
            Found::Unreadable => return Ok((Changed::Unreadable, None)),
            Found::Present(lease) => lease,
        };
        if !expect.met_by(&lease) {
            return Ok((Changed::Stale, None));
        }
        if lease.outcome_is_set() {
            return Ok((Changed::AlreadySet, Some(lease)));
        }
        let now = time::format_iso((self.clock)());
        lease.raw_mut().insert("outcome".into(), Value::from(outcome.to_string()));
        lease.raw_mut().insert("endedAt".into(), Value::from(now));
        self.write(name, &lease)?;
        Ok((Changed::Written, Some(lease)))
    }

    /// The epilogue's crash report: mark `died:N` and log it, in one locked step (LS-5.4).
    pub fn record_death(
        &self,
        name: &SessionName,
        status: u32,
        expect: &Expect,
        log: Option<&HookLog>,
    ) -> Result<Changed, LeaseError> {
        if *expect == Expect::Nothing {
            return Ok(Changed::Stale);
        }
        let log = log.filter(|_| name.is_hook());
        if self.nothing_there(name) {
            // A report for gen G when no lease is there comes from a life whose lease was already resolved (and
            // logged) by rm, a sweep or a reap: a stale report writes no record (issue 17 row 2).
            if let Some(log) = log.filter(|_| !matches!(expect, Expect::Gen(_))) {
                drop(log.append_end(name, &EndHow::Died(status), None));
            }
            return Ok(Changed::Absent);
        }
        let (changed, lease) = self.locked(|| self.mark_locked(name, &Outcome::Died(status), expect))?;
        let changed = match (changed, expect) {
            (Changed::Unreadable, Expect::Gen(_)) => Changed::Unverifiable,
            (Changed::Unreadable, Expect::NoLease | Expect::Nothing) => Changed::Stale,
            (other, _) => other,
        };
        let stale = matches!(changed, Changed::Stale | Changed::Unverifiable)
            || (changed == Changed::Absent && matches!(expect, Expect::Gen(_)));
        if let Some(log) = log.filter(|_| !stale) {
            drop(log.append_end(name, &EndHow::Died(status), lease.as_ref()));
        }
        Ok(changed)
    }

    /// Resolves a lease by deleting it, logging the end first (LS-5.5).
    pub fn finish(
        &self,
        name: &SessionName,
        how: &EndHow,
        expect: &Expect,
        log: Option<&HookLog>,
    ) -> Result<Changed, LeaseError> {
        if *expect == Expect::Nothing {
            return Ok(Changed::Stale);
        }
        let log = log.filter(|_| name.is_hook());
        if self.nothing_there(name) {
            if let Some(log) = log.filter(|_| end_is_logged(how, false)) {
                drop(log.append_end(name, how, None));
            }
            return Ok(Changed::NothingToClear);
        }
        self.locked(|| self.finish_locked(name, how, expect, log))
    }

    pub(crate) fn finish_locked(
        &self,
        name: &SessionName,
        how: &EndHow,
        expect: &Expect,
        log: Option<&HookLog>,
    ) -> Result<Changed, LeaseError> {
        let (present, lease) = match (self.find(name), expect) {
            (Found::Absent, _) => (false, None),
            (Found::Unreadable, Expect::Gen(_)) => return Ok(Changed::Unverifiable),
            (Found::Unreadable, Expect::Any) => (true, None),
            (Found::Unreadable, _) => return Ok(Changed::Stale),
            (Found::Present(lease), _) if !expect.met_by(&lease) => return Ok(Changed::Stale),
            (Found::Present(lease), _) => (true, Some(lease)),
        };
        if let Some(log) = log.filter(|_| end_is_logged(how, present)) {
            drop(log.append_end(name, how, lease.as_ref()));
        }
        match std::fs::remove_file(self.lease_path(name)) {
            Ok(()) => Ok(Changed::Cleared),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Changed::NothingToClear),
            Err(err) => Err(LeaseError::io(&self.lease_path(name), err)),
        }
    }

    /// `finish` without a log record.
    pub fn clear(&self, name: &SessionName, expect: &Expect) -> Result<Changed, LeaseError> {
        self.finish(name, &EndHow::Rm, expect, None)
    }

    /// Records that the pane was seen alive, at most once a minute, never after an outcome (LS-5.6).
    pub fn heartbeat(&self, name: &SessionName, expect: &Expect) -> Result<Changed, LeaseError> {
        if self.nothing_there(name) {
            return Ok(Changed::Absent);
        }
        self.locked(|| self.heartbeat_locked(name, expect))
    }

    fn heartbeat_locked(&self, name: &SessionName, expect: &Expect) -> Result<Changed, LeaseError> {
        let mut lease = match self.find(name) {
            Found::Absent => return Ok(Changed::Absent),
            Found::Unreadable => return Ok(Changed::Unreadable),
            Found::Present(lease) if !expect.met_by(&lease) => return Ok(Changed::Stale),
            Found::Present(lease) => lease,
        };
        if lease.outcome_is_set() {
            return Ok(Changed::Frozen);
        }
        let now = (self.clock)();
        let age = lease.last_seen_at().and_then(time::parse_iso).map(|seen| now - seen);
        if age.is_some_and(|age| (0..HEARTBEAT_EVERY_SECS).contains(&age)) {
            return Ok(Changed::Fresh);
        }
        lease.raw_mut().insert("lastSeenAt".into(), Value::from(time::format_iso(now)));
        self.write(name, &lease)?;
        Ok(Changed::Touched)
    }

    /// Deletes leases of names the registry no longer lists, once they are 30 s old (LS-5.7); and (issue 17) the
    /// lease of an older life of a listed name, once as old: nothing settles it any more, so an open one is
    /// marked `vanished` first and the `swept` record says so.
    pub fn sweep(&self, listed: &ListedNames, log: Option<&HookLog>) -> SweepReport {
        let mut report = SweepReport::default();
        let now = (self.clock)();
        let candidates = self.candidate_files();
        if let Ok(mut seen) = self.seen_gens.lock() {
            let present: std::collections::BTreeSet<&SessionName> = candidates.iter().map(|(name, _)| name).collect();
            seen.retain(|name, _| present.contains(name));
        }
        let due: Vec<SessionName> = candidates
            .into_iter()
            .filter(|(name, path)| old_enough(path, now) && self.sweepable(listed, name, path))
            .map(|(name, _)| name)
            .collect();
        if due.is_empty() {
            return report;
        }
        let swept = self.locked(|| {
            for name in due {
                if !old_enough(&self.lease_path(&name), now) {
                    continue;
                }
                match self.sweep_locked(listed, &name, log) {
                    Ok(Changed::Cleared) => report.swept.push(name),
                    Ok(_) => {}
                    Err(err) => report.error = Some(err),
                }
            }
            Ok(())
        });
        if let Err(err) = swept {
            report.error = Some(err);
        }
        report
    }

    /// Unlisted, or listed with another life than the lease's gen (read lock-free, the gen remembered until the file
    /// changes; checked again under the lock).
    fn sweepable(&self, listed: &ListedNames, name: &SessionName, path: &Path) -> bool {
        if !listed.contains(name.as_str()) {
            return true;
        }
        let Ok(meta) = std::fs::symlink_metadata(path) else { return false };
        let stamp = (meta.ino(), meta.modified().unwrap_or(UNIX_EPOCH));
        let Ok(mut seen) = self.seen_gens.lock() else { return false };
        let lease_gen = match seen.get(name) {
            Some((known, lease_gen)) if *known == stamp => lease_gen.clone(),
            _ => {
                let lease_gen = match self.find(name) {
                    Found::Present(lease) => lease.gen_value().map(str::to_owned),
                    _ => None,
                };
                seen.insert(name.clone(), (stamp, lease_gen.clone()));
                lease_gen
            }
        };
        listed.is_foreign(name.as_str(), lease_gen.as_deref())
    }

    fn sweep_locked(
        &self,
        listed: &ListedNames,
        name: &SessionName,
        log: Option<&HookLog>,
    ) -> Result<Changed, LeaseError> {
        if !listed.contains(name.as_str()) {
            return self.finish_locked(name, &EndHow::Swept, &Expect::Any, log);
        }
        let Found::Present(lease) = self.find(name) else { return Ok(Changed::Stale) };
        let Some(lease_gen) = lease.valid_gen().filter(|g| listed.is_foreign(name.as_str(), Some(g.as_str()))) else {
            return Ok(Changed::Stale);
        };
        let expect = Expect::Gen(lease_gen);
        self.mark_locked(name, &Outcome::Vanished, &expect)?;
        self.finish_locked(name, &EndHow::Swept, &expect, log)
    }

    /// Removes `*.tmp-XXXXXXXX` leftovers of killed writers; takes the lock only when a listing finds one.
    pub fn remove_temp_leftovers(&self) -> usize {
        crate::remove_temps_under_lock(
            || registry::atomic::temp_leftovers_in(&self.dir),
            &self.lock_path(),
            LEASE_LOCK_WAIT,
        )
    }
}

/// LS-8.4: `reaped` and `swept` are recorded only when a lease was there; every other ending always is.
fn end_is_logged(how: &EndHow, lease_present: bool) -> bool {
    lease_present || !matches!(how, EndHow::Reaped | EndHow::Swept)
}

/// A regular file whose mtime is at least the grace in the past (a failed stat or a future mtime keeps it).
fn old_enough(path: &Path, now: i64) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return false };
    if !meta.is_file() {
        return false;
    }
    let Ok(mtime) = meta.modified() else { return false };
    let mtime = match mtime.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(_) => return false,
    };
    now - mtime >= SWEEP_GRACE_SECS
}
