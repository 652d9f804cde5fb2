//! A box on disk for the intake tests: a HOME with an empty registry, its queue, lease directory and hook log,
//! and the site the library steps run with under the registry lock. Shared by the test binaries of this crate.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;
use std::time::Duration;

use agent_box_types::intake::{Batch, RECORD_NOTE, Record};
use intake::admit::Site;
use intake::queue::{Intent, Queue, RecordId};
use lease::{HookLog, LeaseDir};
use registry::{LockPolicy, Paths};
use serde_json::Value;

/// The time every step runs at (2025-12-02T13:20:00Z).
pub const NOW: i64 = 1_764_681_600;

pub struct World {
    _dir: tempfile::TempDir,
    pub paths: Paths,
    pub queue: Queue,
    pub leases: LeaseDir,
    pub log: HookLog,
}

/// What the site of [`World::with`] is made of besides the box's files.
pub struct Probe {
    /// The live set tmux gave, or why it could not be asked.
    pub live: Result<BTreeSet<String>, String>,
    pub admit_at_once: bool,
}

impl Default for Probe {
    fn default() -> Self {
        Self { live: Ok(BTreeSet::new()), admit_at_once: true }
    }
}

impl World {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::for_root(&dir.path().join("home"), "agent");
        fs::create_dir_all(paths.registry().parent().unwrap()).unwrap();
        fs::create_dir_all(paths.webhook_state_dir()).unwrap();
        registry::write_atomic(paths.registry(), &registry::Document::empty().to_bytes()).unwrap();
        let queue = Queue::new(paths.queue_dir());
        let (leases, log) = (LeaseDir::new(paths.lease_dir()), HookLog::new(paths.hook_log()));
        Self { _dir: dir, paths, queue, leases, log }
    }

    /// Runs `step` with the site of an empty live set, under the registry lock.
    pub fn locked<R>(&self, step: impl FnOnce(&Site<'_>, &registry::RegistryLock) -> R) -> R {
        self.with(&Probe::default(), step)
    }

    /// Runs `step` with the site `probe` describes, under the registry lock.
    pub fn with<R>(&self, probe: &Probe, step: impl FnOnce(&Site<'_>, &registry::RegistryLock) -> R) -> R {
        let peers = || "PEERS".to_owned();
        let site = Site {
            paths: &self.paths,
            queue: &self.queue,
            leases: &self.leases,
            log: &self.log,
            live: &probe.live,
            peers: &peers,
            now: NOW,
            admit_at_once: probe.admit_at_once,
        };
        registry::with_lock(self.paths.registry(), Duration::from_secs(5), LockPolicy::SUPERVISOR, |guard| {
            step(&site, guard)
        })
        .unwrap()
    }

    /// Queues the record of issue 7 with delivery id `key`, accepted at `seq`.
    pub fn queued(&self, key: &str, seq: u64) -> RecordId {
        self.queued_record(&record(key, "7"), seq)
    }

    pub fn queued_record(&self, record: &Record, seq: u64) -> RecordId {
        let id = RecordId::new(seq, &record.assignment);
        self.queue.create(&id, record).unwrap();
        id
    }

    /// The session limit file says `limit`.
    pub fn limit(&self, limit: u64) {
        fs::create_dir_all(self.paths.limit_file().parent().unwrap()).unwrap();
        fs::write(self.paths.limit_file(), format!("{limit}\n")).unwrap();
    }

    pub fn registry(&self) -> registry::Document {
        registry::Document::parse(&fs::read(self.paths.registry()).unwrap()).unwrap()
    }

    /// The hook log's lines, parsed.
    pub fn log_lines(&self) -> Vec<Value> {
        let text = fs::read_to_string(self.paths.hook_log()).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    pub fn log_count(&self, how: &str) -> usize {
        let text = fs::read_to_string(self.paths.hook_log()).unwrap_or_default();
        text.lines().filter(|l| l.contains(&format!("\"how\":\"{how}\""))).count()
    }
}

/// A claimable batch of issue `object` with delivery id `key`; its filter goes to `filter_dir`.
pub fn record_in(key: &str, object: &str, filter_dir: &str) -> Record {
    let meta = format!(r#"{{"number":"{object}","delivery":"{key}"}}"#);
    Record {
        note_text: RECORD_NOTE.to_owned(),
        version: 1,
        key: key.to_owned(),
        assignment: format!("github:acme/x#{object}"),
        source: "github".into(),
        routing_key: "acme/x".into(),
        name_stem: "acme-x".into(),
        topic: "github:acme/*".into(),
        note: String::new(),
        object: Some(object.to_owned()),
        harness: "tool".into(),
        args: Vec::new(),
        seed: true,
        filter_dir: filter_dir.into(),
        user: "agent".into(),
        accepted_at: base::time::format_iso(NOW),
        batches: vec![Batch {
            keys: vec![key.to_owned()],
            at: base::time::format_iso(NOW),
            event: "issues".into(),
            count: Some(1),
            meta: Some(meta),
            text: format!("[github] issue #{object} opened ({key})"),
        }],
        outcome: None,
        ended_at: None,
        notified_at: None,
        notify: None,
        elsewhere: None,
    }
}

/// [`record_in`] with a filter directory that does not exist (the filter is never written).
pub fn record(key: &str, object: &str) -> Record {
    record_in(key, object, "/nonexistent")
}

/// An admission intent for `id`, as a crash after it would leave.
pub fn intent(world: &World, id: &RecordId) {
    let intent =
        Intent { name: "hook-acme-x-1a2b".into(), lease_gen: lease::Gen::random().to_string(), at: "t".into() };
    world.queue.write_intent(id, &intent).unwrap();
}
