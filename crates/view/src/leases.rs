//! The `leases` listing as a model (50-session-cli §7.1–7.2): every assignment lease, unresolved and unreadable
//! ones first. Read without a lock; a missing lease directory simply has no rows.
//!
//! Every non-empty outcome is unresolved, `stopped` included: an operator's `stop` ends the session, but the box
//! still cannot say the work finished, so that lease is listed in the first group with the crashes and vanished
//! panes until the reap, a clean exit or `rm` resolves it.

use std::cmp::Ordering;

use lease::{LeaseDir, LeaseState};
use registry::Paths;
use serde_json::{Map, Value};

use crate::read::RegistryView;

/// One lease file: its document when it parsed as one, `None` when unreadable.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub name: String,
    pub lease: Option<Map<String, Value>>,
    pub listed: bool,
}

impl Row {
    /// `None` for a file that vanished between listing and reading.
    pub fn new(name: &str, state: LeaseState, listed: bool) -> Option<Self> {
        let lease = match state {
            LeaseState::Absent => return None,
            LeaseState::Unreadable => None,
            LeaseState::Present(lease) => Some(lease.raw().clone()),
        };
        Some(Self { name: name.to_owned(), lease, listed })
    }

    /// The field `key` unless absent or null.
    pub fn field(&self, key: &str) -> Option<&Value> {
        self.lease.as_ref()?.get(key).filter(|v| !v.is_null())
    }

    /// First group: an outcome is set, or the file cannot be read (§7.2).
    fn needs_attention(&self) -> bool {
        self.lease.is_none() || self.field("outcome").is_some()
    }

    /// Unresolved per §3.13: the outcome is a non-empty string.
    pub fn unresolved(&self) -> bool {
        self.field("outcome").and_then(Value::as_str).is_some_and(|o| !o.is_empty())
    }

    fn claimed_at(&self) -> Option<&str> {
        self.field("claimedAt").and_then(Value::as_str)
    }
}

/// Every lease under `paths`, in report order; `registry` says which names are listed.
pub fn rows(paths: &Paths, registry: &RegistryView) -> Vec<Row> {
    let mut rows: Vec<Row> = LeaseDir::new(paths.lease_dir())
        .list()
        .into_iter()
        .filter_map(|(name, state)| Row::new(name.as_str(), state, registry.lists(name.as_str())))
        .collect();
    rows.sort_by(order);
    rows
}

/// Unresolved and unreadable first, then open; by `claimedAt` text (missing last), then by name.
pub fn order(a: &Row, b: &Row) -> Ordering {
    let by_claim = match (a.claimed_at(), b.claimed_at()) {
        (Some(x), Some(y)) => x.cmp(y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    b.needs_attention().cmp(&a.needs_attention()).then(by_claim).then_with(|| a.name.cmp(&b.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(name: &str, lease: Option<Value>) -> Row {
        Row { name: name.into(), lease: lease.map(|v| v.as_object().unwrap().clone()), listed: false }
    }

    #[test]
    fn unreadable_files_join_the_first_group_and_missing_claims_sort_last() {
        let mut rows = [
            row("open-b", Some(json!({"claimedAt": "2026-01-01T00:00:00Z"}))),
            row("open-a", Some(json!({}))),
            row("open-c", Some(json!({"claimedAt": "2025-01-01T00:00:00Z"}))),
            row("broken", None),
            row("odd", Some(json!({"outcome": 5, "claimedAt": "2027-01-01T00:00:00Z"}))),
        ];
        rows.sort_by(order);
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["odd", "broken", "open-c", "open-b", "open-a"]);
        assert!(!rows[0].unresolved(), "a non-string outcome is not unresolved");
    }
}
