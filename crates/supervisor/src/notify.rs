//! Issue 21: every recorded lease outcome is reported to the operator's program `AGENT_BOX_ON_OUTCOME`, at least
//! once, exactly once when nothing crashes (docs/notification.md, rules N-1…N-10).
//!
//! The loop never waits for the program: it is a child that each tick polls (N-3). One runs at a time, with no lock
//! of ours held and none of our descriptors open but its own stdin (a file with the document, already unlinked)
//! and one pipe for stdout and stderr that a thread drains into a small tail, so a program that reads nothing or
//! writes megabytes blocks nobody.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base::SessionName;
use lease::{Changed, LogLine, OutcomeKey, PendingOutcome, TRIM_ABOVE_LINES, on_outcome_marker, retry_delay};
use serde_json::{Value, json};

use crate::config::{Problem, absolute, is_executable_file};
use crate::messages;
use crate::supervisor::Supervisor;

/// The program's path (absolute, executable).
pub const ON_OUTCOME_ENV: &str = "AGENT_BOX_ON_OUTCOME";
/// Its bound in whole seconds.
pub const ON_OUTCOME_TIMEOUT_ENV: &str = "AGENT_BOX_ON_OUTCOME_TIMEOUT";
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The version of the document on the program's stdin.
pub const DOCUMENT_VERSION: u32 = 1;
/// How much of the program's output is kept for the failure line.
const OUTPUT_TAIL_BYTES: usize = 2048;

/// `AGENT_BOX_ON_OUTCOME` and its bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnOutcome {
    pub program: PathBuf,
    pub timeout: Duration,
}

impl OnOutcome {
    /// Unset = off; a relative or non-executable path, or a bad bound, is a start-up problem (exit 2).
    pub(crate) fn from_lookup(set: &impl Fn(&str) -> Option<OsString>, problems: &mut Vec<Problem>) -> Option<Self> {
        let program = absolute(ON_OUTCOME_ENV, set(ON_OUTCOME_ENV), false, problems)?;
        if !is_executable_file(&program) {
            problems.push(Problem::NotifierNotExecutable(program.display().to_string()));
            return None;
        }
        let timeout = match set(ON_OUTCOME_TIMEOUT_ENV).map(|v| v.to_string_lossy().into_owned()) {
            None => DEFAULT_TIMEOUT,
            Some(text) => match text.parse::<u64>() {
                Ok(secs @ 1..=3600) => Duration::from_secs(secs),
                _ => {
                    problems.push(Problem::NotifierTimeout(text));
                    return None;
                }
            },
        };
        Some(Self { program, timeout })
    }
}

/// What the loop remembers about notification between ticks.
#[derive(Debug, Default)]
pub(crate) struct Notifier {
    pub(crate) running: Option<Run>,
    /// Failures this process saw, per name: the attempts and the next time, for the outcome they are about (the
    /// lease holds the same unless its write failed).
    retry: BTreeMap<String, (OutcomeKey, u64, i64)>,
    /// Delivered (exit 0) but the record could not be written yet: recorded at the next tick, never run again.
    unrecorded: BTreeMap<String, OutcomeKey>,
    /// Names whose failure streak was logged (one line per streak).
    failing: BTreeSet<String>,
    /// Issue 24: failed attempts of expired intake records, by record stem (the record holds the same unless its
    /// write failed), and the stems whose failure streak was logged.
    pub(crate) intake_retry: BTreeMap<String, (u64, i64)>,
    pub(crate) intake_failing: BTreeSet<String>,
    /// Each lease file as last read, by its stamp: a file is read again only after a writer replaced or touched it
    /// (every lease writer renames a new file into place), so an idle tick with many pending outcomes costs one stat
    /// per lease, not one read and parse.
    seen: BTreeMap<SessionName, (FileStamp, Option<PendingOutcome>)>,
}

/// Inode, size and mtime of a lease file.
type FileStamp = (u64, u64, std::time::SystemTime);

/// The program running for one outcome.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) child: Child,
    pub(crate) name: SessionName,
    pub(crate) key: OutcomeKey,
    pub(crate) attempts: u64,
    pub(crate) started: Instant,
    pub(crate) output: Arc<Mutex<Vec<u8>>>,
    /// Issue 24: the run is for an expired intake record (`notify_intake.rs`), not for a lease.
    pub(crate) intake: Option<crate::notify_intake::IntakeSubject>,
}

impl Supervisor {
    /// Start-up: the marker that tells `leases` whether outcomes are being reported (N-8).
    pub(crate) fn write_notify_marker(&mut self) {
        let marker = on_outcome_marker(self.config.paths.state_dir());
        let Some(on) = &self.config.on_outcome else {
            let _ = std::fs::remove_file(&marker);
            return;
        };
        let body = json!({"version": DOCUMENT_VERSION, "program": on.program.display().to_string(),
            "timeoutSecs": on.timeout.as_secs()});
        let mut bytes = serde_json::to_vec_pretty(&body).unwrap_or_default();
        bytes.push(b'\n');
        let written = registry::ensure_private_dir(self.config.paths.state_dir())
            .and_then(|()| registry::write_atomic(&marker, &bytes).map(drop));
        if let Err(err) = written {
            self.log.warn(&messages::notify_marker_failed(&marker, &err));
        }
    }

    /// The tick's notification step (N-3): poll the running program; when none runs, start the next due outcome.
    pub(crate) fn notify_outcomes(&mut self, now: i64) {
        if self.config.on_outcome.is_none() {
            return;
        }
        if !self.poll_notifier(now) {
            return;
        }
        let pending = self.scan_pending();
        self.forget_settled(&pending);
        for outcome in pending {
            let name = outcome.name.to_string();
            if self.notifier.unrecorded.get(&name) == Some(&outcome.key) {
                self.record_delivery(&outcome.name, &outcome.key, 0);
                continue;
            }
            let (attempts, next_at) = match self.notifier.retry.get(&name) {
                Some((key, attempts, next_at)) if *key == outcome.key => (*attempts, Some(*next_at)),
                _ => (outcome.attempts, outcome.next_at),
            };
            if next_at.is_some_and(|at| at > now) {
                continue;
            }
            self.start_notifier(&outcome, attempts, now);
            return;
        }
        self.notify_intake(now);
    }

    /// N-6: the undelivered outcomes of the lease directory, re-reading only the files that changed since last tick.
    fn scan_pending(&mut self) -> Vec<PendingOutcome> {
        let Ok(entries) = std::fs::read_dir(self.leases.path()) else {
            self.notifier.seen.clear();
            return Vec::new();
        };
        let mut present = BTreeMap::new();
        for entry in entries.flatten() {
            let file_name = entry.file_name();
            let Some(name) = file_name.to_str().and_then(|n| n.strip_suffix(".json")) else { continue };
            let (Ok(name), Ok(meta)) = (SessionName::parse(name), entry.metadata()) else { continue };
            if !meta.is_file() {
                continue;
            }
            let stamp = (meta.ino(), meta.size(), meta.modified().unwrap_or(std::time::UNIX_EPOCH));
            let known = self.notifier.seen.remove(&name).filter(|(seen, _)| *seen == stamp);
            let pending = match known {
                Some((_, pending)) => pending,
                None => self.leases.pending_outcome(&name),
            };
            present.insert(name, (stamp, pending));
        }
        self.notifier.seen = present;
        let mut pending: Vec<PendingOutcome> = self.notifier.seen.values().filter_map(|(_, p)| p.clone()).collect();
        lease::sort_pending(&mut pending);
        pending
    }

    /// Memory of names whose outcome is no longer pending (delivered elsewhere, removed, revived) goes.
    fn forget_settled(&mut self, pending: &[PendingOutcome]) {
        let open: BTreeSet<String> = pending.iter().map(|p| p.name.to_string()).collect();
        self.notifier.retry.retain(|name, _| open.contains(name));
        self.notifier.unrecorded.retain(|name, _| open.contains(name));
        self.notifier.failing.retain(|name| open.contains(name));
    }

    /// True when no program runs any more (it had ended, or it was killed for the bound).
    fn poll_notifier(&mut self, now: i64) -> bool {
        let Some(run) = self.notifier.running.as_mut() else { return true };
        let timeout = self.config.on_outcome.as_ref().map_or(DEFAULT_TIMEOUT, |on| on.timeout);
        let result = match end_group_of_exited(&mut run.child) {
            Ok(Some(status)) => exit_result(status),
            Ok(None) if run.started.elapsed() < timeout => return false,
            Ok(None) => {
                kill_group(&mut run.child);
                Err(format!("did not finish within {}s and was killed", timeout.as_secs()))
            }
            Err(err) => {
                kill_group(&mut run.child);
                Err(format!("could not be waited for ({err})"))
            }
        };
        if let Some(run) = self.notifier.running.take() {
            self.settle_run(run, result, now);
        }
        true
    }

    fn start_notifier(&mut self, outcome: &PendingOutcome, attempts: u64, now: i64) {
        let Some(on) = self.config.on_outcome.clone() else { return };
        let document = self.outcome_document(outcome, attempts);
        let output = Arc::new(Mutex::new(Vec::new()));
        match self.spawn_notifier(&on, &document, &output) {
            Ok(child) => {
                self.notifier.running = Some(Run {
                    child,
                    name: outcome.name.clone(),
                    key: outcome.key.clone(),
                    attempts,
                    started: Instant::now(),
                    output,
                    intake: None,
                });
            }
            Err(err) => {
                let run_less = (outcome.name.clone(), outcome.key.clone(), attempts);
                self.note_failure(run_less, &format!("could not be started ({err})"), now);
            }
        }
    }

    /// The document of N-2: the lease's facts, the host, and the hook log's spawn record of this lease.
    fn outcome_document(&self, outcome: &PendingOutcome, attempts: u64) -> Vec<u8> {
        let raw = |key: &str| outcome.lease.raw().get(key).cloned().unwrap_or(Value::Null);
        let spawn = self.spawn_record_of(&outcome.name, outcome.lease.claimed_at());
        let document = json!({
            "version": DOCUMENT_VERSION,
            "name": outcome.name.as_str(),
            "host": self.config.host_label,
            "topic": raw("topic"),
            "object": raw("object"),
            "gen": raw("gen"),
            "claimedAt": raw("claimedAt"),
            "outcome": outcome.key.outcome,
            "endedAt": raw("endedAt"),
            "lastSeenAt": raw("lastSeenAt"),
            "restartedAt": raw("restartedAt"),
            "attempt": attempts + 1,
            "spawn": spawn,
        });
        let mut bytes = serde_json::to_vec(&document).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// The newest `spawn` line of `name` written no later than the lease's claim (webhook-spawn writes it first).
    fn spawn_record_of(&self, name: &SessionName, claimed_at: Option<&str>) -> Value {
        let Ok(lines) = self.hook_log.tail(TRIM_ABOVE_LINES) else { return Value::Null };
        lines
            .into_iter()
            .rev()
            .filter_map(|line| if let LogLine::Parsed(value) = line { Some(value) } else { None })
            .find(|line| {
                line.get("what") == Some(&Value::from("spawn"))
                    && line.get("name").and_then(Value::as_str) == Some(name.as_str())
                    && claimed_at
                        .is_none_or(|claim| line.get("at").and_then(Value::as_str).is_some_and(|at| at <= claim))
            })
            .unwrap_or(Value::Null)
    }

    /// N-1: stdin the document (an unlinked 0600 file, so a reader that never reads blocks nothing), stdout and
    /// stderr one pipe drained by a thread, the unit's environment plus the env store, its own process group.
    pub(crate) fn spawn_notifier(
        &self,
        on: &OnOutcome,
        document: &[u8],
        output: &Arc<Mutex<Vec<u8>>>,
    ) -> std::io::Result<Child> {
        let stdin = self.document_file(document)?;
        let (reader, writer) = std::io::pipe()?;
        let mut command = Command::new(&on.program);
        command
            .stdin(Stdio::from(stdin))
            .stdout(Stdio::from(writer.try_clone()?))
            .stderr(Stdio::from(writer))
            .current_dir(self.config.paths.home())
            .env_remove(registry::lock::INHERITED_LOCK_ENV)
            .process_group(0);
        for (key, value) in self.env_store_pairs() {
            command.env(key, OsStr::from_bytes(&value));
        }
        let child = command.spawn()?;
        drop(command);
        drain(reader, Arc::clone(output));
        Ok(child)
    }

    fn document_file(&self, document: &[u8]) -> std::io::Result<File> {
        let dir = self.config.paths.state_dir();
        registry::ensure_private_dir(dir)?;
        let path = dir.join("on-outcome.stdin");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&path)?;
        let _ = std::fs::remove_file(&path);
        file.write_all(document)?;
        file.rewind()?;
        Ok(file)
    }

    /// The env store's pairs the unit's own `AGENT_BOX_*` and the loader's names win over (env-store.md).
    fn env_store_pairs(&self) -> Vec<(String, Vec<u8>)> {
        let path = registry::envstore::store_path(self.config.paths.home());
        let Ok(Some(store)) = registry::envstore::read(&path) else { return Vec::new() };
        store.pairs().into_iter().filter(|(key, _)| !registry::envstore::is_reserved(key)).collect()
    }

    fn settle_run(&mut self, run: Run, result: Result<(), String>, now: i64) {
        if run.intake.is_some() {
            return self.settle_intake_run(run, result, now);
        }
        match result {
            Ok(()) => self.record_delivery(&run.name, &run.key, run.attempts),
            Err(reason) => {
                let tail = run.output.lock().map(|t| last_line(&t)).unwrap_or_default();
                let reason = if tail.is_empty() { reason } else { format!("{reason}; its last output: {tail}") };
                self.note_failure((run.name, run.key, run.attempts), &reason, now);
            }
        }
    }

    /// N-4: exit 0 is a delivery; it is recorded on the lease while the lease still carries this outcome.
    fn record_delivery(&mut self, name: &SessionName, key: &OutcomeKey, attempts: u64) {
        let program = self.notifier_program();
        self.notifier.retry.remove(name.as_str());
        self.notifier.failing.remove(name.as_str());
        let first = self.notifier.unrecorded.remove(name.as_str()).is_none();
        match self.leases.record_delivered(name, key) {
            Ok(Changed::Written | Changed::AlreadySet) if first => {
                self.log.line(&messages::outcome_delivered(name, &key.outcome, &program, attempts));
            }
            Ok(Changed::Written | Changed::AlreadySet) => {}
            Ok(_) if first => self.log.line(&messages::outcome_delivered_unrecorded(name, &key.outcome, &program)),
            Ok(_) => {}
            Err(err) => {
                if first {
                    self.log.line(&messages::outcome_delivered(name, &key.outcome, &program, attempts));
                }
                self.warn_lease(&err);
                self.notifier.unrecorded.insert(name.to_string(), key.clone());
            }
        }
    }

    /// N-5: a failed attempt waits 10 s, doubling up to 10 min; one line per streak.
    fn note_failure(&mut self, (name, key, attempts): (SessionName, OutcomeKey, u64), reason: &str, now: i64) {
        let attempts = attempts + 1;
        let next_at = now + retry_delay(attempts);
        self.notifier.retry.insert(name.to_string(), (key.clone(), attempts, next_at));
        if let Err(err) = self.leases.record_failed_attempt(&name, &key, attempts, next_at) {
            self.warn_lease(&err);
        }
        if self.notifier.failing.insert(name.to_string()) {
            let program = self.notifier_program();
            self.log.warn(&messages::outcome_not_delivered(&name, &key.outcome, &program, reason, next_at));
        }
    }

    pub(crate) fn notifier_program(&self) -> String {
        self.config.on_outcome.as_ref().map(|on| on.program.display().to_string()).unwrap_or_default()
    }

    /// Stop and `--once`: give a running program up to `grace` to end and record what it did; after that it is
    /// killed and its outcome stays pending (the next supervisor runs it again).
    pub fn settle_notifier(&mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while self.notifier.running.is_some() {
            let now = (self.clock)();
            let done = self.notifier.running.as_ref().is_some_and(|run| matches!(has_exited(&run.child), Ok(true)));
            if done || Instant::now() >= deadline {
                if !done && let Some(mut run) = self.notifier.running.take() {
                    kill_group(&mut run.child);
                    return;
                }
                self.poll_notifier(now);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn exit_result(status: ExitStatus) -> Result<(), String> {
    match (status.code(), status.signal()) {
        (Some(0), _) => Ok(()),
        (Some(code), _) => Err(format!("exited with status {code}")),
        (None, Some(signal)) => Err(format!("was killed by signal {signal}")),
        (None, None) => Err("ended without a status".to_owned()),
    }
}

/// Whether the program has exited, asked without reaping it (`waitid` with `WNOWAIT`): while it is not reaped its
/// pid cannot be given to another process, so it still names only its own process group.
fn has_exited(child: &Child) -> std::io::Result<bool> {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).map_err(std::io::Error::other)?);
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    match waitid(Id::Pid(pid), flags) {
        Ok(WaitStatus::StillAlive) => Ok(false),
        Ok(_) => Ok(true),
        Err(errno) => Err(errno.into()),
    }
}

/// N-3: once the program has exited (whatever its status), what remains of its process group (a child it left in
/// the background) is killed before the program is reaped, so nothing of a delivery outlives it; `None` while the
/// program still runs.
fn end_group_of_exited(child: &mut Child) -> std::io::Result<Option<ExitStatus>> {
    if !has_exited(child)? {
        return Ok(None);
    }
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    child.wait().map(Some)
}

/// SIGKILL to the program's whole process group (a `gh` it started included), then reap it.
fn kill_group(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Reads the program's output to its end, keeping only the newest [`OUTPUT_TAIL_BYTES`].
fn drain(mut reader: std::io::PipeReader, tail: Arc<Mutex<Vec<u8>>>) {
    std::thread::spawn(move || {
        let mut buffer = [0u8; 8192];
        while let Ok(n @ 1..) = reader.read(&mut buffer) {
            let Ok(mut kept) = tail.lock() else { return };
            kept.extend_from_slice(&buffer[..n]);
            let excess = kept.len().saturating_sub(OUTPUT_TAIL_BYTES);
            kept.drain(..excess);
        }
    });
}

/// The last non-blank line of the output, as a JSON string of at most 200 characters (never raw text in the log).
pub(crate) fn last_line(output: &[u8]) -> String {
    let text = String::from_utf8_lossy(output);
    let Some(line) = text.lines().rev().map(str::trim).find(|l| !l.is_empty()) else { return String::new() };
    let cut: String = line.chars().take(200).collect();
    serde_json::to_string(&cut).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_last_line_of_the_output_is_kept_quoted() {
        assert_eq!(last_line(b"one\ntwo \"x\"\n\n"), "\"two \\\"x\\\"\"");
        assert_eq!(last_line(b""), "");
        assert_eq!(last_line("\u{1b}[2J".as_bytes()), "\"\\u001b[2J\"");
    }

    #[test]
    fn exit_zero_alone_is_a_delivery() {
        assert_eq!(exit_result(ExitStatus::from_raw(0)), Ok(()));
        assert_eq!(exit_result(ExitStatus::from_raw(1 << 8)), Err("exited with status 1".into()));
        assert_eq!(exit_result(ExitStatus::from_raw(9)), Err("was killed by signal 9".into()));
    }

    #[test]
    fn the_program_and_its_bound() {
        let lookup = |pairs: Vec<(&'static str, &'static str)>| {
            move |k: &str| pairs.iter().find(|(key, _)| *key == k).map(|(_, v)| OsString::from(v))
        };
        let mut problems = Vec::new();
        assert_eq!(OnOutcome::from_lookup(&lookup(vec![]), &mut problems), None);
        let on = OnOutcome::from_lookup(&lookup(vec![(ON_OUTCOME_ENV, "/bin/true")]), &mut problems);
        assert_eq!(on.map(|o| o.timeout), Some(DEFAULT_TIMEOUT));
        assert!(problems.is_empty());
        let set = lookup(vec![(ON_OUTCOME_ENV, "/bin/true"), (ON_OUTCOME_TIMEOUT_ENV, "5")]);
        assert_eq!(OnOutcome::from_lookup(&set, &mut problems).map(|o| o.timeout), Some(Duration::from_secs(5)));
        for bad in [vec![(ON_OUTCOME_ENV, "true")], vec![(ON_OUTCOME_ENV, "/etc/passwd")]] {
            assert_eq!(OnOutcome::from_lookup(&lookup(bad), &mut problems), None);
        }
        let set = lookup(vec![(ON_OUTCOME_ENV, "/bin/true"), (ON_OUTCOME_TIMEOUT_ENV, "0")]);
        assert_eq!(OnOutcome::from_lookup(&set, &mut problems), None);
        assert!(matches!(
            problems[..],
            [Problem::NotAbsolute { .. }, Problem::NotifierNotExecutable(_), Problem::NotifierTimeout(_)]
        ));
    }
}
