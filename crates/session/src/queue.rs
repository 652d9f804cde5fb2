//! `queue [--json]` and `queue rm KEY` (issue 24, docs/intake.md IN-15): the batches that wait for a session slot,
//! the expired ones that need a person, and the operator's way to end one. Listing takes no lock and creates
//! nothing; `rm` works under the registry lock, like every writer of the queue.

use agent_box_types::intake::{How, QueueReport, QueueRow, Record};
use agent_box_types::{VERSION, pretty};
use intake::{Bounds, Queue};
use lease::HookLog;
use view::Context;
use view::queue::{Listed, QueueView, read, rows};
use view::text::{pad, visible};

use crate::error::SessionError;
use crate::locked::with_locked;
use crate::messages;
use crate::out::Out;

/// The shortest prefix of a key `rm` accepts for it.
const PREFIX_MIN: usize = 6;

/// Runs `queue [--json]`; a queue that cannot be read is M57 (exit 1), never an empty list.
pub fn queue(ctx: &Context, json: bool, out: &mut Out) -> Result<(), SessionError> {
    let bounds = bounds(out);
    let view = read(&ctx.paths).map_err(|why| SessionError::Failed(messages::queue_unreadable(&why)))?;
    let configured = crate::ls::notifier_configured(ctx)?;
    let rows = rows(&view, &bounds, base::time::now_epoch(), configured);
    let text = if json { render_json(&bounds, &rows)? } else { render_text(&bounds, &rows) };
    out.bytes(text.as_bytes());
    Ok(())
}

/// The bounds the queue runs with, as this process's environment says (the installed wrapper sets them).
fn bounds(out: &mut Out) -> Bounds {
    let (bounds, problems) = Bounds::from_lookup(&|key| std::env::var_os(key));
    problems.iter().for_each(|problem| out.warn(format!("{problem}; showing the default")));
    bounds
}

pub fn render_json(bounds: &Bounds, rows: &[QueueRow]) -> Result<String, SessionError> {
    let queued = rows.iter().filter(|r| r.position.is_some()).count();
    let report = QueueReport {
        version: VERSION,
        max_records: bounds.max_records,
        max_age_seconds: bounds.max_age_secs,
        queued,
        expired: rows.len() - queued,
        rows: rows.to_vec(),
    };
    pretty(&report).map_err(|e| SessionError::Failed(e.to_string()))
}

/// The text of `queue`: the waiting records, oldest first, then the expired ones.
pub fn render_text(bounds: &Bounds, rows: &[QueueRow]) -> String {
    let (queued, ended): (Vec<&QueueRow>, Vec<&QueueRow>) = rows.iter().partition(|r| r.position.is_some());
    if rows.is_empty() {
        return format!("{}\n", messages::QUEUE_EMPTY);
    }
    let mut text = String::new();
    if !queued.is_empty() {
        let age = intake::session::waited_text(bounds.max_age());
        text.push_str(&messages::queue_heading(queued.len(), bounds.max_records, &age));
        text.push('\n');
        text.push_str(&format!(
            "{} {} {} {} {} EXPIRES\n",
            pad("POS", 4),
            pad("KEY", 40),
            pad("ASSIGNMENT", 36),
            pad("EVENTS", 6),
            pad("WAITING", 10)
        ));
        for row in queued {
            let position = row.position.map(|p| p.to_string()).unwrap_or_default();
            let expires = row.expires_at.as_deref().unwrap_or("-");
            text.push_str(&format!("{} {}\n", pad(&position, 4), cells(row, expires)));
        }
    }
    if !ended.is_empty() {
        text.push_str(&messages::expired_heading(ended.len()));
        text.push('\n');
        text.push_str(&format!(
            "{} {} {} {} {} {} REPORTED\n",
            pad("", 4),
            pad("KEY", 40),
            pad("ASSIGNMENT", 36),
            pad("EVENTS", 6),
            pad("WAITED", 10),
            pad("ENDED", 20)
        ));
        for row in ended {
            let reported = row.notification.as_ref().and_then(|n| serde_json::from_value(n.clone()).ok());
            let ended_at = pad(row.ended_at.as_deref().unwrap_or("-"), 20);
            let cell = view::notification::cell(reported.as_ref());
            text.push_str(&format!("{} {} {cell}\n", pad("", 4), cells(row, &ended_at)));
        }
    }
    text
}

/// Characters of a key or assignment shown in a column; `queue rm` takes any unique prefix of six or more.
const SHOWN: usize = 40;

/// KEY, ASSIGNMENT (`-` for a batch that is an assignment of its own, IN-5), EVENTS, WAITING and the last cell.
fn cells(row: &QueueRow, last: &str) -> String {
    let waited = intake::session::waited_text(row.age_seconds);
    let assignment = if row.assignment.starts_with("key:") { "-" } else { row.assignment.as_str() };
    format!(
        "{} {} {} {} {last}",
        pad(&shortened(&row.key), SHOWN),
        pad(&shortened(assignment), 36),
        pad(&row.events.to_string(), 6),
        pad(&waited, 10)
    )
}

/// `text` shown safely, cut to [`SHOWN`] characters with `…` when longer.
fn shortened(text: &str) -> String {
    let shown = visible(text);
    if shown.chars().count() <= SHOWN {
        return shown;
    }
    let mut cut: String = shown.chars().take(SHOWN - 1).collect();
    cut.push('…');
    cut
}

/// Runs `queue rm KEY`: a queued record ends `removed` (its end line, the tombstones of its keys, the record gone);
/// an expired row is removed with a `removed` line. KEY is any key of the record, or a unique prefix of at least
/// six characters of its own key.
pub fn rm(ctx: &Context, key: &str, out: &mut Out) -> Result<(), SessionError> {
    let queue = Queue::new(ctx.paths.queue_dir());
    let log = HookLog::new(ctx.paths.hook_log());
    let line = with_locked(ctx, out, |_| {
        let view = read(&ctx.paths).map_err(|why| SessionError::Failed(messages::queue_unreadable(&why)))?;
        let now = base::time::now_epoch();
        let (found, ended) = find(&view, key)?;
        let (id, record) = (&found.id, found.record.as_ref().map_err(|why| SessionError::Failed(why.clone()))?);
        let written = if ended {
            intake::end::remove_ended(&queue, &log, id, record, now)
        } else {
            intake::end::end(&queue, &log, id, record, How::Removed, now, None)
        };
        written.map_err(|err| SessionError::Failed(messages::queue_not_removed(&record.key, &err.to_string())))?;
        // M53, M54; M58 above.
        Ok(if ended { messages::expired_removed(&record.key) } else { messages::queued_removed(record) })
    })?;
    out.line(&line);
    Ok(())
}

/// The one record `key` names, and whether it is an expired row; M55 (none) or M56 (several), exit 2.
fn find<'a>(view: &'a QueueView, key: &str) -> Result<(&'a Listed, bool), SessionError> {
    let all = || view.queued.iter().map(|l| (l, false)).chain(view.ended.iter().map(|l| (l, true)));
    let keys = |record: &Record| record.batches.iter().flat_map(|b| b.keys.clone()).collect::<Vec<String>>();
    let exact: Vec<_> =
        all().filter(|(l, _)| l.record.as_ref().is_ok_and(|r| keys(r).iter().any(|k| k == key))).collect();
    let matches = if exact.is_empty() && key.len() >= PREFIX_MIN {
        all().filter(|(l, _)| l.record.as_ref().is_ok_and(|r| r.key.starts_with(key))).collect()
    } else {
        exact
    };
    match matches.as_slice() {
        [one] => Ok(*one),
        [] => Err(SessionError::Usage(messages::no_queued_key(key))),
        several => {
            let keys: Vec<String> =
                several.iter().filter_map(|(l, _)| l.record.as_ref().ok()).map(|r| r.key.clone()).collect();
            Err(SessionError::Usage(messages::ambiguous_key(key, &keys)))
        }
    }
}
