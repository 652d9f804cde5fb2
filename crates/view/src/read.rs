//! Lock-free reading shared by the read-only views (50-session-cli §3.10): the registry, a lease's outcome and the
//! supervisor's side file. Nothing here creates a file or a directory.

use std::path::Path;

use agent_box_types::report::RegistryStatus;
use base::SessionName;
use registry::{Document, Paths, ReadOutcome};
use serde_json::Value;

/// The registry as a read-only view sees it: a document (empty unless valid), and why it could not be used. The
/// caller decides whether and how to warn (50-session-cli M33).
#[derive(Debug)]
pub struct RegistryView {
    pub status: RegistryStatus,
    pub doc: Document,
    /// The parse or read error of an Invalid or Unreadable registry.
    pub unusable: Option<String>,
}

impl RegistryView {
    /// Whether `name` is a key of `sessions` (an entry that is not an object is still listed).
    pub fn lists(&self, name: &str) -> bool {
        self.doc.contains(name)
    }
}

/// Reads the registry without a lock; a missing file is not created (RG-6.4).
pub fn read_registry(paths: &Paths) -> RegistryView {
    let unusable = |reason: String| RegistryView {
        status: RegistryStatus::Unreadable,
        doc: Document::empty(),
        unusable: Some(reason),
    };
    match registry::read(paths.registry()) {
        ReadOutcome::Valid(doc) => RegistryView { status: RegistryStatus::Ok, doc, unusable: None },
        ReadOutcome::Missing | ReadOutcome::Empty => {
            RegistryView { status: RegistryStatus::Missing, doc: Document::empty(), unusable: None }
        }
        ReadOutcome::Invalid(reason) => unusable(reason),
        ReadOutcome::Unreadable(err) => unusable(err.to_string()),
    }
}

/// The outcome of `name`'s lease when it is unresolved (§3.13); a name failing the charset has none (§3.5).
pub fn unresolved_outcome(paths: &Paths, name: &str) -> Option<String> {
    let name = SessionName::parse(name).ok()?;
    lease::LeaseDir::new(paths.lease_dir()).outcome(&name).map(|o| o.to_string())
}

/// A crash-loop backoff that is still running: the side file's `backoffUntil`, verbatim, and its instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff {
    pub raw: String,
    pub until: i64,
}

/// The backoff of `name` from its supervisor side file, when it ends after `now` (§4.3).
pub fn backoff(paths: &Paths, name: &str, now: i64) -> Option<Backoff> {
    let name = SessionName::parse(name).ok()?;
    let bytes = std::fs::read(paths.side_file(&name)).ok()?;
    backoff_in(&bytes, now)
}

/// The `backoffUntil` of a side file's bytes when it is a `YYYY-MM-DDTHH:MM:SSZ` time later than `now`. Read
/// key by key rather than as an `agent_box_types::side::SideFile`, so one odd key does not hide the others.
pub fn backoff_in(side_file: &[u8], now: i64) -> Option<Backoff> {
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(side_file) else { return None };
    let raw = map.get("backoffUntil")?.as_str()?;
    let until = base::time::parse_iso(raw)?;
    (until > now).then(|| Backoff { raw: raw.to_owned(), until })
}

/// The harness the supervisor recorded as missing in `name`'s side file (`harnessMissing`, issue 11), when it is
/// still the entry's harness `agent`: a harness installed meanwhile is tried again at the next tick.
pub fn harness_missing(paths: &Paths, name: &str, agent: Option<&str>) -> Option<String> {
    let name = SessionName::parse(name).ok()?;
    let bytes = std::fs::read(paths.side_file(&name)).ok()?;
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(&bytes) else { return None };
    let missing = map.get("harnessMissing")?.as_str()?;
    (Some(missing) == agent).then(|| missing.to_owned())
}

/// Whether a supervisor holds the registry's single-instance lock (F20); asked without waiting or creating.
pub fn supervisor_status(paths: &Paths) -> agent_box_types::report::SupervisorStatus {
    use agent_box_types::report::SupervisorStatus;
    match registry::lock::is_held(&paths.supervisor_lock()) {
        Ok(true) => SupervisorStatus::Running,
        Ok(false) => SupervisorStatus::Stopped,
        Err(_) => SupervisorStatus::Unknown,
    }
}

/// The lease gen the supervisor recorded in `name`'s side file at its last spawn (`leaseGen`, UUID-shaped), the
/// expectation an operator's `stop` marks the lease against (20-lease LS-6.3); `None` when there is none.
pub fn side_lease_gen(paths: &Paths, name: &SessionName) -> Option<lease::Gen> {
    let bytes = std::fs::read(paths.side_file(name)).ok()?;
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(&bytes) else { return None };
    map.get("leaseGen").and_then(Value::as_str).and_then(lease::Gen::parse)
}

/// True when `a` and `b` name the same file (device and inode); false when either cannot be examined.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_future_backoff_is_kept_verbatim_and_a_past_or_odd_one_is_ignored() {
        let now = base::time::parse_iso("2026-11-29T14:00:00Z").unwrap();
        let future = br#"{"launchSessionId":"x","backoffUntil":"2026-11-29T14:03:11Z","quickExits":3}"#;
        assert_eq!(backoff_in(future, now), Some(Backoff { raw: "2026-11-29T14:03:11Z".into(), until: now + 191 }));
        assert_eq!(backoff_in(br#"{"backoffUntil":"2026-11-29T13:59:59Z"}"#, now), None);
        assert_eq!(backoff_in(br#"{"backoffUntil":"2026-11-29T14:00:00Z"}"#, now), None, "now is not later");
        assert_eq!(backoff_in(br#"{"backoffUntil":"2026-11-29 14:03:11"}"#, now), None);
        assert_eq!(backoff_in(br#"{"backoffUntil":1795944123}"#, now), None);
        assert_eq!(backoff_in(b"not json", now), None);
        assert_eq!(backoff_in(b"[]", now), None);
    }

    #[test]
    fn registry_outcomes_map_to_the_report_status() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::for_root(dir.path(), "agent");
        let view = read_registry(&paths);
        assert_eq!((view.status, view.unusable.is_none()), (RegistryStatus::Missing, true));
        assert!(!paths.registry().exists(), "reading never creates the registry");
        std::fs::create_dir_all(paths.registry().parent().unwrap()).unwrap();
        std::fs::write(paths.registry(), "").unwrap();
        assert_eq!(read_registry(&paths).status, RegistryStatus::Missing);
        std::fs::write(paths.registry(), "not json").unwrap();
        let view = read_registry(&paths);
        assert_eq!(view.status, RegistryStatus::Unreadable);
        assert!(view.unusable.unwrap().starts_with("not JSON"));
        std::fs::write(paths.registry(), r#"{"sessions":{"a":3}}"#).unwrap();
        let view = read_registry(&paths);
        assert_eq!(view.status, RegistryStatus::Ok);
        assert!(view.lists("a") && !view.lists("b"));
    }

    #[test]
    fn lookups_by_a_name_failing_the_charset_answer_none() {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths::for_root(dir.path(), "agent");
        assert_eq!(unresolved_outcome(&paths, "../x"), None);
        assert_eq!(backoff(&paths, "a b", 0), None);
    }
}
