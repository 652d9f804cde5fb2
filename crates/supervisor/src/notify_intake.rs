//! Issue 24 (docs/intake.md IN-10): an expired intake record is reported to `AGENT_BOX_ON_OUTCOME` like a lease
//! outcome (docs/notification.md), so the loss of a batch that never got a session reaches the people who look at
//! the issue. The record under `queue/ended/` carries the delivery record itself (`notifiedAt`, `notify`, as a
//! lease does), written under the registry lock like every other queue write; the program gets the document of N-2
//! with `name` and `gen` null and an `intake` object, and runs one at a time with the lease outcomes (leases first).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use agent_box_types::intake::Record;
use base::SessionName;
use intake::RecordId;
use lease::{OutcomeKey, retry_delay};
use serde_json::{Value, json};

use crate::messages;
use crate::notify::{DOCUMENT_VERSION, Run};
use crate::supervisor::{Supervisor, Tick};

/// Which expired record a run reports, and the end it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IntakeSubject {
    pub id: RecordId,
    pub key: String,
    pub ended_at: Option<String>,
}

impl Supervisor {
    /// Starts the program for the oldest due expired record, if any (no lease outcome was due).
    pub(crate) fn notify_intake(&mut self, now: i64) {
        let Ok(ids) = self.queue.ended() else { return };
        let mut due: Vec<(RecordId, Record, u64)> = Vec::new();
        for id in ids {
            let Ok(record) = self.queue.read_ended(&id) else { continue };
            if record.notified_at.is_some() || record.outcome.is_none() {
                continue;
            }
            let (attempts, next_at) = self.intake_attempts(&id, &record);
            if next_at.is_none_or(|at| at <= now) {
                due.push((id, record, attempts));
            }
        }
        due.sort_by(|a, b| a.1.ended_at.cmp(&b.1.ended_at));
        if let Some((id, record, attempts)) = due.into_iter().next() {
            self.start_intake_notifier(id, &record, attempts, now);
        }
    }

    /// Failed attempts so far and the next time: what this process saw, else what the record says.
    fn intake_attempts(&self, id: &RecordId, record: &Record) -> (u64, Option<i64>) {
        if let Some((attempts, next_at)) = self.notifier.intake_retry.get(&id.stem()) {
            return (*attempts, Some(*next_at));
        }
        let notify = record.notify.as_ref().and_then(Value::as_object);
        let attempts = notify.and_then(|n| n.get("attempts")).and_then(Value::as_u64).unwrap_or(0);
        let next_at = notify.and_then(|n| n.get("nextAt")).and_then(Value::as_str).and_then(base::time::parse_iso);
        (attempts, next_at)
    }

    fn start_intake_notifier(&mut self, id: RecordId, record: &Record, attempts: u64, now: i64) {
        let Some(on) = self.config.on_outcome.clone() else { return };
        let document = self.intake_document(record, attempts);
        let output = Arc::new(Mutex::new(Vec::new()));
        let subject = IntakeSubject { id, key: record.key.clone(), ended_at: record.ended_at.clone() };
        match self.spawn_notifier(&on, &document, &output) {
            Ok(child) => {
                self.notifier.running = Some(Run {
                    child,
                    name: placeholder_name(),
                    key: OutcomeKey {
                        lease_gen: None,
                        outcome: "expired".to_owned(),
                        ended_at: subject.ended_at.clone(),
                    },
                    attempts,
                    started: Instant::now(),
                    output,
                    intake: Some(subject),
                });
            }
            Err(err) => self.note_intake_failure(&subject, attempts, &format!("could not be started ({err})"), now),
        }
    }

    /// The document of N-2 for an expired record: no session, no gen; what the batch was about in `intake`.
    fn intake_document(&self, record: &Record, attempts: u64) -> Vec<u8> {
        let document = json!({
            "version": DOCUMENT_VERSION,
            "name": null,
            "host": self.config.host_label,
            "topic": intake::session::own(record),
            "object": record.object,
            "gen": null,
            "claimedAt": record.accepted_at,
            "outcome": record.outcome,
            "endedAt": record.ended_at,
            "lastSeenAt": null,
            "restartedAt": null,
            "attempt": attempts + 1,
            "spawn": null,
            "intake": {
                "key": record.key,
                "assignment": record.assignment,
                "events": record.batches.len(),
                "acceptedAt": record.accepted_at,
            },
        });
        let mut bytes = serde_json::to_vec(&document).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    pub(crate) fn settle_intake_run(&mut self, run: Run, result: Result<(), String>, now: i64) {
        let Some(subject) = run.intake else { return };
        match result {
            Ok(()) => self.record_intake_delivery(&subject, run.attempts),
            Err(reason) => {
                let tail = run.output.lock().map(|t| crate::notify::last_line(&t)).unwrap_or_default();
                let reason = if tail.is_empty() { reason } else { format!("{reason}; its last output: {tail}") };
                self.note_intake_failure(&subject, run.attempts, &reason, now);
            }
        }
    }

    /// N-4 for a record: `notifiedAt` written under the registry lock, while the row still carries that end.
    fn record_intake_delivery(&mut self, subject: &IntakeSubject, attempts: u64) {
        self.notifier.intake_retry.remove(&subject.id.stem());
        self.notifier.intake_failing.remove(&subject.id.stem());
        let at = base::time::format_iso((self.clock)());
        let written = self.edit_ended(subject, |record| {
            record.notified_at = Some(at.clone());
            record.notify = None;
        });
        let program = self.notifier_program();
        self.log.line(&messages::intake_reported(&subject.key, &program, attempts, written));
    }

    /// N-5 for a record: the backoff kept in the record (and in memory, should its write fail).
    fn note_intake_failure(&mut self, subject: &IntakeSubject, attempts: u64, reason: &str, now: i64) {
        let attempts = attempts + 1;
        let next_at = now + retry_delay(attempts);
        self.notifier.intake_retry.insert(subject.id.stem(), (attempts, next_at));
        let next = base::time::format_iso(next_at);
        self.edit_ended(subject, |record| record.notify = Some(json!({"attempts": attempts, "nextAt": next})));
        if self.notifier.intake_failing.insert(subject.id.stem()) {
            let program = self.notifier_program();
            self.log.warn(&messages::intake_not_reported(&subject.key, &program, reason, next_at));
        }
    }

    /// Rewrites the ended row under the registry lock when it still is the end `subject` is about; whether it did.
    fn edit_ended(&mut self, subject: &IntakeSubject, edit: impl FnOnce(&mut Record)) -> bool {
        let mut tick = Tick::default();
        self.locked(&mut tick, |me, _, _| {
            let Ok(mut record) = me.queue.read_ended(&subject.id) else { return false };
            if record.ended_at != subject.ended_at {
                return false;
            }
            edit(&mut record);
            me.queue.keep_ended(&subject.id, &record).is_ok()
        })
        .unwrap_or(false)
    }
}

/// A run for a record has no session; its `name` is never read (the `intake` subject is).
fn placeholder_name() -> SessionName {
    SessionName::parse("intake").unwrap_or_else(|_| unreachable!("'intake' is a session name"))
}
