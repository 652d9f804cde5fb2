//! Capacity admission (RG-11): the pure policy, plus reading the limit and the memory size it may depend on.

use std::collections::BTreeSet;
use std::fmt;
use std::io;
use std::path::Path;

use serde_json::{Map, Value};

use crate::document::Entry;

/// Live names that never hold a slot: the settings page's sign-in panes.
pub const CONNECT_PREFIX: &str = "_connect-";

/// How the policy decides (RG-11.6, RG-11.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `add`, `restart`, webhook-spawn, `capacity`: may the targets be added to what is counted?
    Check,
    /// The supervisor: is the target among the names admitted in queue order?
    Spawn,
}

/// Slots in use and the limit; renders as the old helper's `{"used": 1, "max": 2}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub used: usize,
    pub max: u64,
}

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{\"used\": {}, \"max\": {}}}", self.used, self.max)
    }
}

/// Why admission did not allow the targets; every variant means exit 75.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapacityError {
    #[error("Session limit reached ({used} of {max} slots running or queued); stop or remove a session, then retry")]
    Refused { used: usize, max: u64 },
    #[error("cannot check session capacity: {0}")]
    Limit(String),
    #[error("cannot check session capacity: {0}")]
    Probe(String),
}

/// The sets of RG-11.5 over one registry and one live probe.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sets {
    pub live: BTreeSet<String>,
    pub pending: BTreeSet<String>,
    pub died: BTreeSet<String>,
    pub used: BTreeSet<String>,
}

/// Computes `live`, `pending`, `died` and `used`.
pub fn sets(sessions: &Map<String, Value>, live: &BTreeSet<String>) -> Sets {
    let live: BTreeSet<String> = live.iter().filter(|n| !n.starts_with(CONNECT_PREFIX)).cloned().collect();
    let entries = || sessions.iter().filter_map(|(name, v)| v.as_object().map(|m| (name, Entry::of(m))));
    let pending: BTreeSet<String> = entries().filter(|(_, e)| !e.stopped()).map(|(n, _)| n.clone()).collect();
    let died: BTreeSet<String> = entries().filter(|(_, e)| e.died().is_some()).map(|(n, _)| n.clone()).collect();
    let used = live.union(&pending).filter(|n| !died.contains(*n)).cloned().collect();
    Sets { live, pending, died, used }
}

/// The admission policy: pure, no I/O.
pub fn admit(
    sessions: &Map<String, Value>,
    live: &BTreeSet<String>,
    limit: u64,
    targets: &[&str],
    mode: Mode,
) -> Result<Usage, CapacityError> {
    let sets = sets(sessions, live);
    let usage = Usage { used: sets.used.len(), max: limit };
    let allowed = match mode {
        Mode::Check => check_allows(&sets.used, limit, targets),
        Mode::Spawn => spawn_admits(&sets, limit, targets),
    };
    if allowed { Ok(usage) } else { Err(CapacityError::Refused { used: usage.used, max: limit }) }
}

fn check_allows(used: &BTreeSet<String>, limit: u64, targets: &[&str]) -> bool {
    let added: BTreeSet<&str> = targets.iter().copied().filter(|t| !used.contains(*t)).collect();
    let total = used.len() + added.len();
    added.is_empty() || u64::try_from(total).unwrap_or(u64::MAX) <= limit
}

fn spawn_admits(sets: &Sets, limit: u64, targets: &[&str]) -> bool {
    let running = sets.live.iter().filter(|n| !sets.died.contains(*n)).count();
    let available = limit.saturating_sub(u64::try_from(running).unwrap_or(u64::MAX));
    let take = usize::try_from(available).unwrap_or(usize::MAX);
    let queue = sets.pending.iter().filter(|n| !sets.live.contains(*n)).take(take);
    let admitted: BTreeSet<&str> = sets.live.iter().chain(queue).map(String::as_str).collect();
    targets.iter().all(|t| admitted.contains(t))
}

/// Reads the limit file (`auto` or a whole number ≥ 1); a missing file means `auto` (RG-11.2).
pub fn read_limit(limit_file: &Path, meminfo: &Path) -> Result<u64, CapacityError> {
    let bytes = match std::fs::read(limit_file) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return memory_limit(meminfo),
        Err(err) => {
            return Err(CapacityError::Limit(format!("cannot read {}: {err}", limit_file.display())));
        }
    };
    let found = String::from_utf8_lossy(&bytes);
    let bad = || {
        CapacityError::Limit(format!(
            "the session limit must be 'auto' or a whole number of at least 1 (found '{}')",
            found.trim_matches(|c: char| c.is_ascii_whitespace())
        ))
    };
    if !bytes.is_ascii() {
        return Err(bad());
    }
    let text = found.trim_matches(|c: char| c.is_ascii_whitespace());
    if text == "auto" {
        return memory_limit(meminfo);
    }
    match parse_digits_saturating(text) {
        Some(limit) if limit >= 1 => Ok(limit),
        _ => Err(bad()),
    }
}

fn parse_digits_saturating(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.bytes().fold(0u64, |acc, b| acc.saturating_mul(10).saturating_add(u64::from(b - b'0'))))
}

/// One slot per started GiB of `MemTotal` (RG-11.2 item 3).
fn memory_limit(meminfo: &Path) -> Result<u64, CapacityError> {
    let text = std::fs::read_to_string(meminfo)
        .map_err(|err| CapacityError::Limit(format!("cannot read {}: {err}", meminfo.display())))?;
    let unusable = || CapacityError::Limit(format!("{} has no usable MemTotal line", meminfo.display()));
    let line = text.lines().find(|l| l.split_whitespace().next() == Some("MemTotal:")).ok_or_else(unusable)?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [_, amount, unit] = fields.as_slice() else {
        return Err(unusable());
    };
    let kib = parse_digits_saturating(amount).filter(|k| *k >= 1 && *unit == "kB").ok_or_else(unusable)?;
    Ok(kib.div_ceil(1_048_576).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sessions(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    fn live(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn limit_with(limit: Option<&str>, meminfo: &str) -> Result<u64, CapacityError> {
        let dir = tempfile::tempdir().unwrap();
        let (limit_file, mem) = (dir.path().join("limit"), dir.path().join("meminfo"));
        if let Some(text) = limit {
            std::fs::write(&limit_file, text).unwrap();
        }
        std::fs::write(&mem, meminfo).unwrap();
        read_limit(&limit_file, &mem)
    }

    #[test]
    fn auto_limit_is_one_per_started_gib() {
        let mem = |kb: u64| format!("MemFree: 5 kB\nMemTotal:       {kb} kB\n");
        assert_eq!(limit_with(Some("auto"), &mem(1)), Ok(1));
        assert_eq!(limit_with(Some("auto\n"), &mem(1_048_576)), Ok(1));
        assert_eq!(limit_with(Some(" auto "), &mem(4 * 1_048_576 - 1)), Ok(4));
        assert_eq!(limit_with(Some("auto"), &mem(62 * 1_048_576 + 1)), Ok(63));
        assert_eq!(limit_with(None, &mem(2_097_152)), Ok(2), "missing limit file means auto");
    }

    #[test]
    fn numeric_limits_and_errors() {
        assert_eq!(limit_with(Some("7\n"), ""), Ok(7));
        assert_eq!(limit_with(Some("007"), ""), Ok(7));
        assert_eq!(limit_with(Some("99999999999999999999999"), ""), Ok(u64::MAX));
        for bad in ["0", "-1", "+3", "abc", "AUTO", "", "1 2", "٣"] {
            let err = limit_with(Some(bad), "MemTotal: 4 kB").unwrap_err();
            assert!(err.to_string().starts_with("cannot check session capacity: the session limit must be"), "{bad}");
        }
        for bad_mem in
            ["", "MemTotal: nope kB", "MemTotal: 4 MB", "MemTotal: 0 kB", "MemTotal: 4 kB extra", "MemTotal:4 kB"]
        {
            assert!(matches!(limit_with(Some("auto"), bad_mem), Err(CapacityError::Limit(_))), "{bad_mem:?}");
        }
    }

    #[test]
    fn an_unreadable_limit_file_fails_closed_even_where_auto_would_admit() {
        let dir = tempfile::tempdir().unwrap();
        let meminfo = dir.path().join("meminfo");
        std::fs::write(&meminfo, "MemTotal: 8388608 kB\n").unwrap();
        let err = read_limit(dir.path(), &meminfo).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("cannot check session capacity: cannot read {}", dir.path().display()))
        );
    }

    #[test]
    fn unregistered_live_names_count() {
        let reg = sessions(json!({"pending": {}}));
        let err = admit(&reg, &live(&["stranger"]), 2, &["new"], Mode::Check).unwrap_err();
        assert_eq!(err, CapacityError::Refused { used: 2, max: 2 });
        assert_eq!(
            err.to_string(),
            "Session limit reached (2 of 2 slots running or queued); stop or remove a session, then retry"
        );
    }

    #[test]
    fn stopped_entry_frees_its_slot_only_when_its_pane_is_gone() {
        let reg = sessions(json!({"old": {"stopped": true}}));
        assert!(admit(&reg, &live(&["old"]), 1, &["new"], Mode::Check).is_err());
        assert!(admit(&reg, &live(&[]), 1, &["new"], Mode::Check).is_ok());
    }

    #[test]
    fn died_entries_hold_no_slot_but_admit_themselves() {
        let reg = sessions(json!({"crashed": {"died": 1}}));
        assert!(admit(&reg, &live(&[]), 1, &["new"], Mode::Check).is_ok());
        assert!(admit(&reg, &live(&["crashed"]), 1, &["new"], Mode::Check).is_ok());
        let revived = sessions(json!({"revived": {"died": 99}}));
        assert!(admit(&revived, &live(&[]), 1, &["revived"], Mode::Spawn).is_ok());
    }

    #[test]
    fn restarting_a_counted_session_needs_no_second_slot() {
        let reg = sessions(json!({"a": {}, "b": {}}));
        assert!(admit(&reg, &live(&["a"]), 1, &["a"], Mode::Check).is_ok());
    }

    #[test]
    fn boot_queue_drains_in_name_order() {
        let reg = sessions(json!({"c": {}, "b": {}, "a": {}}));
        assert!(admit(&reg, &live(&[]), 2, &["a"], Mode::Spawn).is_ok());
        assert!(admit(&reg, &live(&["a"]), 2, &["b"], Mode::Spawn).is_ok());
        assert!(admit(&reg, &live(&["a"]), 2, &["c"], Mode::Spawn).is_err());
        let after_stop = sessions(json!({"c": {}, "b": {}, "a": {"stopped": true}}));
        assert!(admit(&after_stop, &live(&["b"]), 2, &["c"], Mode::Spawn).is_ok());
    }

    #[test]
    fn usage_counts_live_and_pending_once() {
        let reg = sessions(json!({"a": {}}));
        let usage = admit(&reg, &live(&["a"]), 4, &["b"], Mode::Check).unwrap();
        assert_eq!(usage, Usage { used: 1, max: 4 });
        assert_eq!(usage.to_string(), "{\"used\": 1, \"max\": 4}");
    }

    #[test]
    fn connect_panes_and_odd_entries_are_excluded() {
        let reg = sessions(json!({"odd": 3, "x": {"stopped": "true"}}));
        let s = sets(&reg, &live(&["_connect-x", "y"]));
        assert_eq!(s.live, live(&["y"]));
        assert_eq!(s.pending, live(&["x"]), "only JSON true parks");
        assert!(admit(&reg, &live(&["_connect-x"]), 1, &["x"], Mode::Check).is_ok());
    }

    #[test]
    fn running_panes_are_never_evicted_by_a_lowered_limit() {
        let reg = sessions(json!({"a": {}, "b": {}, "c": {}}));
        assert!(admit(&reg, &live(&["a", "b", "c"]), 1, &["b"], Mode::Spawn).is_ok());
        assert!(admit(&reg, &live(&["a", "b"]), 1, &["c"], Mode::Spawn).is_err());
    }
}
