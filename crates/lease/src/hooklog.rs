//! The hook log: append-only JSON lines of hook sessions starting and ending, under its own lock, bounded.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_box_types::hooklog::{EndLine, RestartLine, SpawnLine, What};
use agent_box_types::intake::IntakeLine;
use base::{SessionName, time};
use registry::{paths::lock_path_of, with_file_lock};
use serde_json::Value;

use crate::model::{EndHow, Lease};

/// Lock bound of the hook log (OV-5.5).
pub const HOOK_LOG_LOCK_WAIT: Duration = Duration::from_secs(2);
/// Past this many lines an append trims the file…
pub const TRIM_ABOVE_LINES: usize = 400;
/// …to its newest this many lines.
pub const KEEP_LINES: usize = 200;

/// A `spawn` record, written only by webhook-spawn (LS-8.2).
#[derive(Debug, Clone)]
pub struct SpawnRecord<'a> {
    pub name: &'a SessionName,
    pub topic: &'a str,
    pub event: &'a str,
    pub object: Option<&'a str>,
    pub count: Option<u64>,
    /// Issue 24: the intake key of the queued record this session was admitted from (docs/intake.md); also
    /// written into the lease.
    pub intake: Option<&'a str>,
    /// Issue 26: the assignment's claim in the claims database (assignment, box), written into the lease as
    /// `"claim"` and the box into the spawn record.
    pub claim: Option<(&'a str, &'a str)>,
}

/// The result of one append; never a reason to change an exit code.
#[derive(Debug)]
pub enum Appended {
    Written,
    WrittenAndTrimmed,
    /// The lock was busy or could not be opened: the line was not written (never unlocked).
    Skipped,
    Failed(io::Error),
}

/// One line of the log as a reader sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum LogLine {
    Parsed(Value),
    Raw(String),
}

/// `hook-sessions.jsonl` with its `.lock` sidecar; never creates a directory.
#[derive(Debug, Clone)]
pub struct HookLog {
    path: PathBuf,
    clock: fn() -> i64,
}

impl HookLog {
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

    pub fn append_spawn(&self, record: &SpawnRecord<'_>) -> Appended {
        let line = SpawnLine {
            at: time::format_iso((self.clock)()),
            what: What::Spawn,
            name: record.name.to_string(),
            topic: record.topic.to_owned(),
            event: record.event.to_owned(),
            object: canonical_object(record.object).map(str::to_owned),
            count: record.count,
            intake: record.intake.map(str::to_owned),
            box_label: record.claim.map(|(_, label)| label.to_owned()),
        };
        self.append(serde_json::to_vec(&line))
    }

    /// An `end` record; `lease` is the lease as read just before it was deleted or marked (LS-8.3).
    pub fn append_end(&self, name: &SessionName, how: &EndHow, lease: Option<&Lease>) -> Appended {
        self.append(serde_json::to_vec(&self.end_record(name, how, lease)))
    }

    /// A `restart` record (issue 17); `outcome` is the lease's outcome before the restart.
    pub fn append_restart(&self, name: &SessionName, outcome: Option<&str>) -> Appended {
        let line = RestartLine {
            at: time::format_iso((self.clock)()),
            what: What::Restart,
            name: name.to_string(),
            outcome: outcome.map(str::to_owned),
        };
        self.append(serde_json::to_vec(&line))
    }

    /// An intake step of issue 24 (`what: "intake"`): queued, coalesced, duplicate, or a record's end without a
    /// session (claimed, expired, removed).
    pub fn append_intake(&self, line: &IntakeLine) -> Appended {
        self.append(serde_json::to_vec(line))
    }

    pub(crate) fn end_record(&self, name: &SessionName, how: &EndHow, lease: Option<&Lease>) -> EndLine {
        let now = (self.clock)();
        let life = lease
            .and_then(Lease::claimed_at)
            .and_then(time::parse_iso)
            .map(|claimed| now - claimed)
            .filter(|secs| *secs >= 0);
        EndLine {
            at: time::format_iso(now),
            what: What::End,
            name: name.to_string(),
            how: how.to_string(),
            life_seconds: life,
            outcome: lease.and_then(Lease::outcome_text).map(str::to_owned),
            // Only an end that deletes the lease can leave an outcome unreported (a `died:N` record is written as
            // the outcome is, before anyone could be told of it).
            notified: lease
                .filter(|_| !matches!(how, EndHow::Died(_)))
                .and_then(|l| l.outcome().map(|_| l.notified_at().is_some())),
            by: match how {
                EndHow::Elsewhere(label) => Some(label.clone()),
                _ => None,
            },
        }
    }

    /// One locked step: newline repair, one write, mode fix, fsync, trim (LS-8.5). `record` is the line's JSON.
    ///
    /// Issue 18 item 2: the log is an audit trail that must survive a power loss, so each append is made durable
    /// (`fdatasync`, and the directory's fsync when the append created the file) before the lock is released and
    /// before the caller goes on (an end record is durable before its lease is deleted). A trim rewrites the file
    /// with the atomic helper under the same lock, so it never drops a line another locked writer appended.
    fn append(&self, record: serde_json::Result<Vec<u8>>) -> Appended {
        let record = match record {
            Ok(record) => record,
            Err(err) => return Appended::Failed(io::Error::other(err)),
        };
        match with_file_lock(&lock_path_of(&self.path), HOOK_LOG_LOCK_WAIT, false, |_| self.append_locked(&record)) {
            Err(_) => Appended::Skipped,
            Ok(Ok(true)) => Appended::WrittenAndTrimmed,
            Ok(Ok(false)) => Appended::Written,
            Ok(Err(err)) => Appended::Failed(err),
        }
    }

    fn append_locked(&self, record: &[u8]) -> io::Result<bool> {
        let created = registry::atomic::is_absent(&self.path);
        let mut file = OpenOptions::new().read(true).append(true).create(true).mode(0o600).open(&self.path)?;
        let mut existing = Vec::new();
        file.read_to_end(&mut existing)?;
        let mut line = Vec::with_capacity(256);
        if existing.last().is_some_and(|b| *b != b'\n') {
            line.push(b'\n');
        }
        line.extend_from_slice(record);
        line.push(b'\n');
        file.write_all(&line)?;
        fix_mode(&file)?;
        file.sync_data()?;
        if created {
            File::open(registry::atomic::parent_dir(&self.path))?.sync_all()?;
        }
        existing.extend_from_slice(&line);
        let lines = existing.iter().filter(|b| **b == b'\n').count();
        if lines <= TRIM_ABOVE_LINES {
            return Ok(false);
        }
        registry::write_atomic(&self.path, newest_lines(&existing, KEEP_LINES))?;
        Ok(true)
    }

    /// The newest `n` lines, oldest first, without a lock; unparseable lines come back raw (LS-8.7).
    pub fn tail(&self, n: usize) -> io::Result<Vec<LogLine>> {
        match std::fs::read(&self.path) {
            Ok(bytes) => Ok(newest_records(&bytes, n)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(err) => Err(err),
        }
    }

    /// Removes `hook-sessions.jsonl.tmp-XXXXXXXX` leftovers; takes the lock only when a listing finds one.
    pub fn remove_temp_leftovers(&self) -> usize {
        crate::remove_temps_under_lock(
            || registry::atomic::temp_leftovers_of(&self.path),
            &lock_path_of(&self.path),
            HOOK_LOG_LOCK_WAIT,
        )
    }
}

/// The newest `n` non-blank lines of a log's bytes, each read on its own (LS-8.7).
pub(crate) fn newest_records(bytes: &[u8], n: usize) -> Vec<LogLine> {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(n);
    lines[start..].iter().map(|l| parse_line(l)).collect()
}

fn parse_line(line: &str) -> LogLine {
    match serde_json::from_str::<Value>(line) {
        Ok(value @ Value::Object(_)) => LogLine::Parsed(value),
        _ => LogLine::Raw(line.to_owned()),
    }
}

fn fix_mode(file: &File) -> io::Result<()> {
    let mode = file.metadata()?.permissions().mode() & 0o7777;
    if mode != 0o600 { file.set_permissions(Permissions::from_mode(0o600)) } else { Ok(()) }
}

fn newest_lines(bytes: &[u8], keep: usize) -> &[u8] {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let start = body.iter().enumerate().rev().filter(|(_, b)| **b == b'\n').nth(keep - 1).map_or(0, |(i, _)| i + 1);
    &bytes[start..]
}

/// Digits only, else null (LS-8.2 and the lease's `object`).
pub(crate) fn canonical_object(object: Option<&str>) -> Option<&str> {
    object.filter(|o| !o.is_empty() && o.bytes().all(|b| b.is_ascii_digit()))
}

/// `count` as a JSON integer when the text is ASCII digits within u64, else none.
pub fn parse_count(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_lines_keeps_the_tail() {
        assert_eq!(newest_lines(b"a\nb\nc\n", 2), b"b\nc\n");
        assert_eq!(newest_lines(b"a\nb\n", 5), b"a\nb\n");
    }

    #[test]
    fn count_and_object_rules() {
        assert_eq!(parse_count("3"), Some(3));
        assert_eq!(parse_count("x"), None);
        assert_eq!(parse_count(""), None);
        assert_eq!(parse_count("+5"), None, "digits only, though u64's parser takes a sign");
        assert_eq!(parse_count("99999999999999999999"), None);
        assert_eq!(canonical_object(Some("")), None);
        assert_eq!(canonical_object(Some("n/a")), None);
        assert_eq!(canonical_object(Some("4242")), Some("4242"));
    }

    #[test]
    fn a_missing_log_has_no_lines_and_an_unreadable_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(HookLog::new(dir.path().join("none.jsonl")).tail(5).unwrap().is_empty());
        std::fs::create_dir(dir.path().join("dir.jsonl")).unwrap();
        assert!(HookLog::new(dir.path().join("dir.jsonl")).tail(5).is_err());
    }

    #[test]
    fn the_temp_leftovers_of_the_log_are_removed_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let log = HookLog::new(dir.path().join("hook-sessions.jsonl"));
        for name in ["hook-sessions.jsonl.tmp-ab12cd34", "hook-sessions.jsonl.tmp-zz99yy88", "other.tmp-ab12cd34"] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        assert_eq!(log.remove_temp_leftovers(), 2);
        assert!(!dir.path().join("hook-sessions.jsonl.tmp-ab12cd34").exists());
        assert!(dir.path().join("other.tmp-ab12cd34").exists());
        assert_eq!(log.remove_temp_leftovers(), 0);
    }
}
