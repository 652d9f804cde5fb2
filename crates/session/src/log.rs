//! `log [-n N]` (50-session-cli §7.5, §7.6): the newest hook-log records, oldest first, one line each. Takes no
//! lock (the log is trimmed by rename, so a reader always sees a whole file) and creates nothing.

use agent_box_types::report::LogReport;
use agent_box_types::{VERSION, pretty};
use lease::{HookLog, LogLine};
use serde_json::Value;
use view::Context;
use view::text::{compact, visible};

use crate::error::SessionError;
use crate::messages;
use crate::out::Out;

/// Records shown when `-n` is not given.
pub const DEFAULT_COUNT: usize = 20;

/// Characters of an unrecognised line that are shown.
const RAW_LIMIT: usize = 200;

/// Runs `log [--json]`; `count` is the raw `-n` value (M36, exit 2, when it is not a count). An unreadable log is
/// a warning; an empty or missing one says so in text mode (M51), and is an empty `records` list in JSON.
pub fn log(ctx: &Context, count: Option<&str>, json: bool, out: &mut Out) -> Result<(), SessionError> {
    let count = match count {
        None => DEFAULT_COUNT,
        Some(text) => parse_count(text).ok_or_else(|| SessionError::Usage(messages::bad_count(text)))?,
    };
    let log = HookLog::new(ctx.paths.hook_log());
    let lines = match log.tail(count) {
        Ok(lines) => lines,
        Err(err) => {
            out.warn(format!("cannot read {} ({err})", log.path().display()));
            Vec::new()
        }
    };
    if json {
        let records = lines.into_iter().map(json_record).collect();
        let text = pretty(&LogReport { version: VERSION, records }).map_err(|e| SessionError::Failed(e.to_string()))?;
        out.bytes(text.as_bytes());
    } else if lines.is_empty() && !log.path().metadata().is_ok_and(|m| m.len() > 0) {
        out.warn(messages::log_empty(&log.path().display().to_string()));
    } else {
        lines.iter().for_each(|line| out.line(&render(line)));
    }
    Ok(())
}

/// One record of `log --json`: the parsed line as written, or `{"raw": "<line>"}`.
fn json_record(line: LogLine) -> Value {
    match line {
        LogLine::Parsed(value) => value,
        LogLine::Raw(text) => serde_json::json!({ "raw": text }),
    }
}

/// `-n`: ASCII digits only, fitting a u32, at least 1.
pub fn parse_count(text: &str) -> Option<usize> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u32 = text.parse().ok()?;
    usize::try_from(n).ok().filter(|n| *n >= 1)
}

/// One record as a line of §7.6, control characters shown as `?`.
pub fn render(line: &LogLine) -> String {
    match line {
        LogLine::Parsed(record) => match record.get("what").and_then(Value::as_str) {
            Some("spawn") => spawn_line(record),
            Some("end") => end_line(record),
            Some("restart") => restart_line(record),
            _ => other_line(at(record), &compact(record)),
        },
        LogLine::Raw(text) => other_line("?".to_owned(), text),
    }
}

fn spawn_line(record: &Value) -> String {
    format!(
        "{} spawn {} topic={} event={} object={} count={}",
        at(record),
        field(record, "name"),
        field(record, "topic"),
        field(record, "event"),
        field(record, "object"),
        field(record, "count")
    )
}

fn end_line(record: &Value) -> String {
    let life = match record.get("lifeSeconds") {
        None | Some(Value::Null) => "-".to_owned(),
        Some(_) => format!("{}s", field(record, "lifeSeconds")),
    };
    format!(
        "{} end   {} how={} life={life} outcome={}",
        at(record),
        field(record, "name"),
        field(record, "how"),
        field(record, "outcome")
    )
}

/// Issue 17: an operator's restart of a leased hook session, with the lease's outcome before it (`stopped` when the
/// restart revived the assignment).
fn restart_line(record: &Value) -> String {
    format!("{} restart {} outcome={}", at(record), field(record, "name"), field(record, "outcome"))
}

fn other_line(at: String, raw: &str) -> String {
    let cut: String = raw.chars().take(RAW_LIMIT).collect();
    format!("{at} ?     {}", visible(&cut))
}

/// `at`, or `?` when the record has none.
fn at(record: &Value) -> String {
    match record.get("at") {
        None | Some(Value::Null) => "?".to_owned(),
        Some(_) => field(record, "at"),
    }
}

/// A value as shown: `-` for absent, null or empty; strings as they are; anything else as compact JSON.
fn field(record: &Value, key: &str) -> String {
    match record.get(key) {
        None | Some(Value::Null) => "-".to_owned(),
        Some(Value::String(s)) if s.is_empty() => "-".to_owned(),
        Some(Value::String(s)) => visible(s),
        Some(other) => visible(&compact(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_are_whole_numbers_of_at_least_one() {
        assert_eq!(parse_count("3"), Some(3));
        assert_eq!(parse_count("007"), Some(7));
        assert_eq!(parse_count("4294967295"), Some(4_294_967_295));
        for bad in ["0", "", "x", "-1", "+3", " 3", "3 ", "4294967296", "٣"] {
            assert_eq!(parse_count(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_record_forms() {
        let spawn = json!({"at":"2026-11-29T14:03:11Z","what":"spawn","name":"hook-acme-widgets-3fa9",
            "topic":"github:acme/widgets","event":"issues","object":"4242","count":1});
        assert_eq!(
            render(&LogLine::Parsed(spawn)),
            "2026-11-29T14:03:11Z spawn hook-acme-widgets-3fa9 topic=github:acme/widgets event=issues object=4242 count=1"
        );
        let spawn = json!({"at":"2026-11-29T14:03:11Z","what":"spawn","name":"h","topic":"t","event":"","object":null,"count":null});
        assert_eq!(render(&LogLine::Parsed(spawn)), "2026-11-29T14:03:11Z spawn h topic=t event=- object=- count=-");
        let end = json!({"at":"2026-11-29T14:31:02Z","what":"end","name":"hook-x","how":"died:1","lifeSeconds":1671,"outcome":"died:1"});
        assert_eq!(
            render(&LogLine::Parsed(end)),
            "2026-11-29T14:31:02Z end   hook-x how=died:1 life=1671s outcome=died:1"
        );
        let end = json!({"at":"2026-11-29T14:31:02Z","what":"end","name":"hook-x","how":"exited","lifeSeconds":null,"outcome":null});
        assert_eq!(render(&LogLine::Parsed(end)), "2026-11-29T14:31:02Z end   hook-x how=exited life=- outcome=-");
    }

    #[test]
    fn other_lines_are_shown_raw_cut_and_safe() {
        assert_eq!(render(&LogLine::Raw("torn {\"at\u{1b}".into())), "? ?     torn {\"at?");
        let restart = json!({"at":"2026-11-29T14:31:02Z","what":"restart","name":"hook-x","outcome":"stopped"});
        assert_eq!(render(&LogLine::Parsed(restart)), "2026-11-29T14:31:02Z restart hook-x outcome=stopped");
        let odd = json!({"at":"2026-11-29T14:31:02Z","what":"resize","n":1});
        assert_eq!(
            render(&LogLine::Parsed(odd)),
            "2026-11-29T14:31:02Z ?     {\"at\":\"2026-11-29T14:31:02Z\",\"what\":\"resize\",\"n\":1}"
        );
        let long = render(&LogLine::Raw("x".repeat(300)));
        assert_eq!(long.len(), "? ?     ".len() + 200);
    }
}
