//! The bodies of the fuzz targets `lease_read` and `hooklog_line` (90-quality §9, Q9). Each panics when a
//! property fails, so cargo-fuzz (nightly, `fuzz/`) and the stable property tests (corpus plus seeded inputs)
//! check the same thing and report the input that broke it.

use serde_json::Value;

use crate::hooklog::{LogLine, newest_records};
use crate::model::{Gen, Lease, Outcome};

/// `lease_read`: bytes as a lease file, read per LS-2.2. A lease exactly when the bytes are a JSON object; every
/// missing or non-string key reads as null; `gen` counts only as a string and is handed out only when
/// UUID-shaped; an outcome is unresolved exactly when it is a non-empty string, and any outcome string is kept
/// verbatim (it prints back as read, and only `null` leaves it unset).
pub fn check_lease_read(data: &[u8]) {
    let lease = Lease::parse(data);
    let value = serde_json::from_slice::<Value>(data).ok();
    let Some(Value::Object(map)) = value else {
        assert!(lease.is_none(), "only a JSON object is a lease");
        return;
    };
    let Some(lease) = lease else { panic!("a JSON object did not read as a lease") };
    let text = |key: &str| map.get(key).and_then(Value::as_str);
    assert_eq!(lease.topic(), text("topic"));
    assert_eq!(lease.object(), text("object"));
    assert_eq!(lease.claimed_at(), text("claimedAt"));
    assert_eq!(lease.ended_at(), text("endedAt"));
    assert_eq!(lease.last_seen_at(), text("lastSeenAt"));
    assert_eq!(lease.gen_value(), text("gen"));
    assert_eq!(lease.valid_gen().map(|g| g.to_string()), text("gen").and_then(Gen::parse).map(|g| g.to_string()));
    if let Some(g) = lease.valid_gen() {
        assert!(base::is_uuid(g.as_str()), "a gen handed to a pane is UUID-shaped");
    }
    let outcome = text("outcome").filter(|o| !o.is_empty());
    assert_eq!(lease.outcome().map(|o| o.to_string()).as_deref(), outcome, "unresolved outcomes are kept verbatim");
    if let Some(o) = outcome {
        assert_eq!(Outcome::parse(o).to_string(), o);
    }
    assert_eq!(lease.outcome_is_set(), map.get("outcome").is_some_and(|v| !v.is_null()), "the first outcome wins");
}

/// `hooklog_line`: bytes as the hook log, read per LS-8.7. Every non-blank line gives exactly one record in file
/// order; a line that is a JSON object is parsed, any other line comes back verbatim as raw text; asking for
/// the newest `n` gives the last `n` of them.
pub fn check_hooklog_line(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let all = newest_records(data, usize::MAX);
    assert_eq!(all.len(), lines.len(), "one record per non-blank line");
    for (record, line) in all.iter().zip(&lines) {
        match (record, serde_json::from_str::<Value>(line)) {
            (LogLine::Parsed(parsed), Ok(value @ Value::Object(_))) => assert_eq!(*parsed, value),
            (LogLine::Raw(raw), Ok(Value::Object(_))) => panic!("an object line came back raw: {raw}"),
            (LogLine::Raw(raw), _) => assert_eq!(raw, line, "raw lines are verbatim"),
            (LogLine::Parsed(parsed), _) => panic!("a non-object line was parsed: {parsed}"),
        }
    }
    let newest = newest_records(data, 3);
    assert_eq!(newest.as_slice(), &all[all.len().saturating_sub(3)..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_inputs_hold() {
        for lease in [&br#"{"gen":7,"outcome":"","x":1}"#[..], b"{\"topic\":", b"[]", br#"{"outcome":"stopped"}"#] {
            check_lease_read(lease);
        }
        check_hooklog_line(b"{\"what\":\"end\"}\n\nnot json\n[1]\r\n{\"a\":\n\xff\n");
    }
}
