//! How a record leaves the queue without a session (docs/intake.md IN-8): `claimed` by a live session,
//! `expired` past a bound, `removed` by the operator. Each first records that the end is begun (`<stem>.end`, so
//! the next tick finishes an end a crash interrupted, IN-12), then writes its end record to the hook log (durable),
//! then the tombstones of its keys, then removes the record; an expired record is kept under `ended/` as an
//! unresolved row until the operator removes it, and the outcome notifier is told of it.

use agent_box_types::intake::{How, IntakeLine, Record};
use lease::HookLog;

use crate::queue::{EndIntent, Queue, RecordId};

/// The hook-log line of an intake step for `record`.
pub fn line(record: &Record, id: &RecordId, how: &str, now: i64, by: Option<&str>) -> IntakeLine {
    IntakeLine {
        at: base::time::format_iso(now),
        what: "intake".to_owned(),
        how: how.to_owned(),
        key: record.key.clone(),
        assignment: record.assignment.clone(),
        topic: crate::session::own(record),
        object: record.object.clone(),
        events: record.batches.len(),
        waited_seconds: (now - id.accepted_secs()).max(0),
        by: by.map(str::to_owned),
    }
}

/// Ends queued record `id` as `how` (claimed, expired or removed): the end intent, the end record, tombstones,
/// the ended row for an expired record, then the record removed. An error after the intent leaves the record
/// queued with its intent, and the next tick's [`crate::admit::recover`] ends it again (the end record may then
/// appear twice, never not at all); an error writing the intent changes nothing.
pub fn end(
    queue: &Queue,
    log: &HookLog,
    id: &RecordId,
    record: &Record,
    how: How,
    now: i64,
    by: Option<&str>,
) -> std::io::Result<()> {
    let at = base::time::format_iso(now);
    queue.write_end(id, &EndIntent { how, by: by.map(str::to_owned), at: at.clone() })?;
    drop(log.append_intake(&line(record, id, how.as_str(), now, by)));
    if how == How::Expired {
        let ended = Record { outcome: Some("expired".to_owned()), ended_at: Some(at.clone()), ..record.clone() };
        queue.keep_ended(id, &ended)?;
    }
    queue.bury(record, how, by, &at)?;
    queue.remove(id)
}

/// Removes an ended row the operator has seen (`queue rm`), with a `removed` line saying so.
pub fn remove_ended(queue: &Queue, log: &HookLog, id: &RecordId, record: &Record, now: i64) -> std::io::Result<()> {
    drop(log.append_intake(&line(record, id, "removed", now, None)));
    queue.remove_ended(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> Record {
        serde_json::from_value(serde_json::json!({
            "//": "x", "version": 1, "key": "d-1", "assignment": "key:d-1", "source": "github",
            "routingKey": "acme/x", "nameStem": "acme-x", "topic": "t", "note": "", "object": null, "harness": "tool",
            "args": [], "seed": false, "filterDir": "/nonexistent", "user": "agent", "acceptedAt": "t", "batches": []
        }))
        .unwrap()
    }

    // IN-10: an expired record is kept under ended/ as an unresolved row, with its outcome and when it ended.
    #[test]
    fn in10_an_expired_record_is_kept_with_its_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let (queue, log) = (Queue::new(dir.path().join("queue")), HookLog::new(dir.path().join("hook.jsonl")));
        let id = RecordId::new(1, "key:d-1");
        queue.create(&id, &record()).unwrap();
        end(&queue, &log, &id, &record(), How::Expired, 1_600, None).unwrap();
        let kept = queue.read_ended(&id).unwrap();
        assert_eq!(kept.outcome.as_deref(), Some("expired"));
        assert_eq!(kept.ended_at, Some(base::time::format_iso(1_600)));
    }

    // IN-15: `queue rm` of an expired row removes it, with a `removed` line.
    #[test]
    fn in15_removing_an_ended_row_deletes_it_with_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let (queue, log) = (Queue::new(dir.path().join("queue")), HookLog::new(dir.path().join("hook.jsonl")));
        let id = RecordId::new(1, "key:d-1");
        queue.keep_ended(&id, &record()).unwrap();
        remove_ended(&queue, &log, &id, &record(), 1_600).unwrap();
        assert!(queue.ended().unwrap().is_empty());
        let text = std::fs::read_to_string(dir.path().join("hook.jsonl")).unwrap();
        assert!(text.contains(r#""how":"removed""#), "{text}");
    }

    // IN-10: an end line says how long the record waited since it was accepted (never a negative time).
    #[test]
    fn in10_an_end_line_says_how_long_the_record_waited() {
        let record = record();
        let id = RecordId::new(1_000 * 1_000_000_000, &record.assignment);
        assert_eq!(line(&record, &id, "expired", 1_600, None).waited_seconds, 600);
        assert_eq!(line(&record, &id, "expired", 400, None).waited_seconds, 0, "a clock set back");
    }
}
