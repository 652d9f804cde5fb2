//! The intake queue as the front ends show it (issue 24, docs/intake.md IN-15): read without a lock (every record
//! is replaced by rename, so a reader sees a whole file), never created. [`counts`] lists names only, for `ls`,
//! `peers` and `capacity`; [`rows`] reads every record, for `queue`.

use agent_box_types::intake::{QueueRow, Record};
use intake::{Bounds, Queue, RecordId};
use registry::Paths;

use crate::notification;

pub use agent_box_types::report::QueueCounts as Counts;

/// How many records wait and how many expired rows await the operator, by two directory listings; an error says
/// why the queue could not be read (never "nothing waits").
pub fn counts(paths: &Paths) -> Result<Counts, String> {
    let queue = Queue::new(paths.queue_dir());
    let queued = queue.list().map_err(|e| e.to_string())?.queued.len();
    let expired = queue.ended().map_err(|e| e.to_string())?.len();
    Ok(Counts { queued, expired })
}

/// A record as listed, or the reason its file could not be read.
#[derive(Debug, Clone)]
pub struct Listed {
    pub id: RecordId,
    pub record: Result<Record, String>,
}

/// Every queued record (in order of acceptance) and every expired row.
#[derive(Debug, Clone, Default)]
pub struct QueueView {
    pub queued: Vec<Listed>,
    pub ended: Vec<Listed>,
}

pub fn read(paths: &Paths) -> Result<QueueView, String> {
    let queue = Queue::new(paths.queue_dir());
    let listing = queue.list().map_err(|e| e.to_string())?;
    let queued = listing.queued.into_iter().map(|id| Listed { record: queue.read(&id).map_err(|e| e.0), id }).collect();
    let ended = queue
        .ended()
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|id| Listed { record: queue.read_ended(&id).map_err(|e| e.0), id })
        .collect();
    Ok(QueueView { queued, ended })
}

/// The rows of `queue`: queued records with their position and expiry, then the expired rows with their
/// notification state (`configured`: whether outcomes are reported, N-8, which the caller read). An unreadable
/// record is a row of its own (`state` `unreadable`), never left out.
pub fn rows(view: &QueueView, bounds: &Bounds, now: i64, configured: bool) -> Vec<QueueRow> {
    let queued = view.queued.iter().enumerate().map(|(at, listed)| {
        let mut row = row(listed, now);
        row.position = Some(at + 1);
        row.expires_at = Some(base::time::format_iso(listed.id.accepted_secs() + bounds.max_age()));
        row
    });
    let ended = view.ended.iter().map(|listed| {
        let mut row = row(listed, now);
        if let Ok(record) = &listed.record {
            row.ended_at = record.ended_at.clone();
            let map = serde_json::to_value(record).ok().and_then(|v| v.as_object().cloned()).unwrap_or_default();
            row.notification =
                notification::report_of(&map, configured).and_then(|report| serde_json::to_value(report).ok());
        }
        row
    });
    queued.chain(ended).collect()
}

fn row(listed: &Listed, now: i64) -> QueueRow {
    let age_seconds = (now - listed.id.accepted_secs()).max(0);
    let accepted_at = base::time::format_iso(listed.id.accepted_secs());
    match &listed.record {
        Ok(record) => QueueRow {
            position: None,
            state: record.outcome.clone().unwrap_or_else(|| {
                if record.elsewhere.is_some() { "elsewhere".to_owned() } else { "queued".to_owned() }
            }),
            box_label: record.elsewhere.clone(),
            key: record.key.clone(),
            topic: format!("{}:{}", record.source, record.routing_key),
            assignment: record.assignment.clone(),
            object: record.object.clone(),
            events: record.batches.len(),
            accepted_at,
            age_seconds,
            expires_at: None,
            ended_at: None,
            notification: None,
        },
        Err(reason) => QueueRow {
            position: None,
            state: "unreadable".to_owned(),
            box_label: None,
            key: listed.id.stem(),
            topic: String::new(),
            assignment: reason.clone(),
            object: None,
            events: 0,
            accepted_at,
            age_seconds,
            expires_at: None,
            ended_at: None,
            notification: None,
        },
    }
}

/// The lines `ls` and `peers` end with when something is in the queue (none for an empty one).
pub fn summary_lines(counts: &Counts) -> Vec<String> {
    let mut lines = Vec::new();
    if counts.queued > 0 {
        lines.push(format!(
            "{} batch(es) of events wait in the intake queue for a session slot (agent-box-session queue)",
            counts.queued
        ));
    }
    if counts.expired > 0 {
        lines.push(format!(
            "UNRESOLVED INTAKE: {} expired batch(es) never got a session (agent-box-session queue)",
            counts.expired
        ));
    }
    lines
}
