//! What an admitted record becomes (60-webhook-spawn §4.1, §6, §7): the claim filter, the kickoff prompt and the
//! ephemeral registry entry, built from the record alone, so webhook-spawn and the supervisor make the same
//! session from the same record.

use std::path::PathBuf;

use agent_box_types::filter::{FilterSeed, SeededTopic};
use agent_box_types::intake::Record;
use base::{SessionName, new_uuid_v4};
use serde_json::{Map, Value};

use crate::claim::{Meta, note, parse_meta, predicate};
use crate::prompt::{Parts, assign_sentence, assignment_armed, bounded_batch, render};
use crate::prose::prose;

/// `<SOURCE>:<raw KEY>`, the event's own topic.
pub fn own(record: &Record) -> String {
    format!("{}:{}", record.source, record.routing_key)
}

/// The META of the newest batch (what the receiver describes), `None` when unusable.
pub fn newest_meta(record: &Record) -> Option<Meta> {
    parse_meta(record.batches.last().and_then(|b| b.meta.as_deref()))
}

/// The newest batch's event type.
pub fn newest_event(record: &Record) -> &str {
    record.batches.last().map_or("", |b| b.event.as_str())
}

/// Every batch's lines, oldest first.
pub fn batch_text(record: &Record) -> String {
    record.batches.iter().map(|b| b.text.as_str()).collect::<Vec<_>>().join("\n")
}

/// The lines of the record's batches: each batch's `count`, summed when every batch has one.
pub fn count(record: &Record) -> Option<u64> {
    record.batches.iter().map(|b| b.count).sum::<Option<u64>>()
}

/// The lease object (digits only, LS-8.2): the number of the newest META.
pub fn lease_object(record: &Record) -> Option<String> {
    newest_meta(record).and_then(|m| m.number).map(|n| n.to_string())
}

/// `<filterDir>/filter.<user>-<name>.json` (§6.1).
pub fn filter_path(record: &Record, name: &SessionName) -> PathBuf {
    PathBuf::from(&record.filter_dir).join(format!("filter.{}-{name}.json", record.user))
}

/// Writes the claim filter (§6.1); the reason when it could not be written (W7).
pub fn write_filter(record: &Record, name: &SessionName, now: i64) -> Result<(), String> {
    let key = prose(&record.routing_key, 1000);
    let own_prose = format!("{}:{key}", record.source);
    let meta = newest_meta(record);
    let stamp = base::time::format_iso_millis(now);
    let topic = SeededTopic {
        topic: own(record),
        note: note(meta.as_ref(), &key, &own_prose, &prose(newest_event(record), 64)),
        include: predicate(meta.as_ref()),
        ignore_senders: vec!["@self".to_owned()],
        renew_on_event: true,
        subscribed_at: stamp.clone(),
        last_activity_at: stamp,
    };
    let seed =
        FilterSeed { note: agent_box_types::filter::NOTE.to_owned(), enabled: true, ttl_hours: 2, topics: vec![topic] };
    agent_box_types::pretty(&seed)
        .map_err(std::io::Error::other)
        .and_then(|text| registry::write_atomic(&filter_path(record, name), text.as_bytes()))
        .map(drop)
        .map_err(|err| err.to_string())
}

/// How long a record's events waited, for the prompt (IN-16): `waited 3 h 20 min`, `waited 45 s`.
pub fn waited_text(secs: i64) -> String {
    let secs = secs.max(0);
    match (secs / 3600, (secs % 3600) / 60, secs % 60) {
        (0, 0, s) => format!("{s} s"),
        (0, m, _) => format!("{m} min"),
        (h, 0, _) => format!("{h} h"),
        (h, m, _) => format!("{h} h {m} min"),
    }
}

/// The kickoff prompt (§7.4) for `name`; `waited` is the time since acceptance when the record waited in the
/// queue (a record admitted at once gets the prompt of before, byte for byte); `taken_over` the box whose claim
/// ran out (issue 26, docs/boxes.md BX-7).
pub fn prompt(
    record: &Record,
    name: &SessionName,
    seeded: bool,
    peers: &str,
    waited: Option<i64>,
    taken_over: Option<&str>,
) -> String {
    let topic = Some(prose(&record.topic, 1000)).filter(|t| !t.is_empty()).unwrap_or_else(|| "?".into());
    let own = format!("{}:{}", record.source, prose(&record.routing_key, 1000));
    let key = prose(&record.routing_key, 1000);
    let text = batch_text(record);
    let waited = waited.map(|secs| {
        format!(
            "These events waited {} in this box's intake queue (the first was accepted at {}) until a session slot freed: check that each still needs doing before you act on it.",
            waited_text(secs),
            record.accepted_at
        )
    });
    render(&Parts {
        topic: &topic,
        note: &prose(&record.note, 1000),
        assign: assignment_armed(&text).then(assign_sentence),
        name: name.as_str(),
        ownership: seeded.then_some((own.as_str(), key.as_str())),
        claude: record.harness == "claude",
        peers,
        batch: &bounded_batch(&text),
        waited: waited.as_deref(),
        taken_over: taken_over.map(taken_over_sentence).as_deref(),
    })
}

/// BX-7: what a session taken over from a box that stopped answering is told.
pub fn taken_over_sentence(from: &str) -> String {
    format!(
        "This assignment was claimed by box {}, which stopped answering (its claim ran out before this box took it over): check what was already done there (comments, branches, pull requests) before you start again.",
        prose(from, 200)
    )
}

/// §4.1: the shared constructor, ephemeral, origin webhook, `hook` only with the seed; `life` is the lease gen.
pub fn entry(record: &Record, prompt: &str, life: &str, now: i64) -> Map<String, Value> {
    let id = new_uuid_v4();
    let entry = registry::NewEntry {
        extra_args: &record.args,
        initial_prompt: Some(prompt),
        ephemeral: true,
        ..registry::NewEntry::new(&record.harness, &id, "webhook", now, life)
    };
    registry::new_entry(&entry.with_hook(record.seed.then_some((record.source.as_str(), record.routing_key.as_str()))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_read_as_a_person_says_them() {
        assert_eq!(waited_text(-3), "0 s");
        assert_eq!(waited_text(45), "45 s");
        assert_eq!(waited_text(200), "3 min");
        assert_eq!(waited_text(7200), "2 h");
        assert_eq!(waited_text(12_060), "3 h 21 min");
    }
}
