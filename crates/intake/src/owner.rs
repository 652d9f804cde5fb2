//! The ownership re-check of an admission (docs/intake.md IN-14): a topic a live session now claims is not
//! started again. The receiver checked when it accepted the batch; the slot may have freed hours later, by when a
//! session started meanwhile (by an operator, or by an earlier record) may own the work. A session admitted a moment
//! ago owns it too, though tmux does not list it until the supervisor's next tick starts it: its filter is written
//! (the receiver already routes the object's events to it), its lease is open and its entry listed.

use agent_box_types::intake::Record;
use base::SessionName;
use lease::{LeaseDir, LeaseState};
use registry::{Document, Paths};
use serde_json::Value;

use crate::claim::parse_meta;
use crate::predicate::{event_document, holds};

/// The session that claims `record`'s work, if any: one that is listed, not stopped and not crashed (live in tmux,
/// or still to be started by the supervisor, which starts every such entry), whose open lease is for the same
/// topic and object, or whose claim filter holds a predicate on the record's own topic that matches the record's
/// newest event.
pub fn claimed_by(paths: &Paths, doc: &Document, record: &Record) -> Option<String> {
    if !record.seed {
        return None;
    }
    let own = format!("{}:{}", record.source, record.routing_key);
    let newest = record.batches.last()?;
    let meta = parse_meta(newest.meta.as_deref())?;
    let event = event_document(&meta, &newest.event);
    let leases = LeaseDir::new(paths.lease_dir());
    doc.names()
        .filter(|name| doc.entry(name).is_some_and(|e| !e.stopped() && e.died().is_none()))
        .filter_map(|name| SessionName::parse(name).ok())
        .find(|name| {
            holds_lease(&leases, name, &own, record.object.as_deref()) || filter_claims(paths, name, &own, &event)
        })
        .map(|name| name.to_string())
}

fn holds_lease(leases: &LeaseDir, name: &SessionName, own: &str, object: Option<&str>) -> bool {
    let (Some(object), LeaseState::Present(lease)) = (object, leases.read(name)) else { return false };
    let raw = lease.raw();
    !lease.outcome_is_set()
        && raw.get("topic").and_then(Value::as_str) == Some(own)
        && raw.get("object").and_then(Value::as_str) == Some(object)
}

fn filter_claims(paths: &Paths, name: &SessionName, own: &str, event: &Value) -> bool {
    let Ok(bytes) = std::fs::read(paths.filter_file(name)) else { return false };
    let Ok(Value::Object(filter)) = serde_json::from_slice::<Value>(&bytes) else { return false };
    if filter.get("enabled") == Some(&Value::Bool(false)) {
        return false;
    }
    let topics = filter.get("topics").and_then(Value::as_array).into_iter().flatten();
    topics.filter_map(Value::as_object).any(|topic| {
        topic.get("topic").and_then(Value::as_str) == Some(own)
            && topic.get("include").is_some_and(|include| holds(include, event))
    })
}
