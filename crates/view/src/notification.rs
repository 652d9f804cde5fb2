//! Issue 21: whether a lease's outcome was reported to the operator's notifier, as `leases` and `ls --json` show
//! it (docs/notification.md N-8). "Configured" is the supervisor's marker file in the state directory, written at
//! its start when `AGENT_BOX_ON_OUTCOME` is set and removed at a start without it.

use agent_box_types::report::{OutcomeReport, ReportState};
use base::{SessionName, time};
use lease::{Lease, LeaseState, Notification};
use registry::Paths;
use serde_json::{Map, Value};

/// The marker could not be looked at, so whether outcomes are reported is not known: an error, never "off".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path} {problem}")]
pub struct MarkerUnknown {
    pub path: String,
    /// `is not a regular file` or `cannot be read (<error>)`.
    pub problem: String,
}

/// True when the last supervisor started on this box reports outcomes (its marker is a regular file), false when
/// there is no marker (or no state directory); anything else (another kind of file, an error other than "not
/// found") is [`MarkerUnknown`] (N-8).
pub fn configured(paths: &Paths) -> Result<bool, MarkerUnknown> {
    let marker = lease::on_outcome_marker(paths.state_dir());
    let unknown = |problem: String| MarkerUnknown { path: marker.display().to_string(), problem };
    match std::fs::symlink_metadata(&marker) {
        Ok(meta) if meta.is_file() => Ok(true),
        Ok(_) => Err(unknown("is not a regular file".to_owned())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(unknown(format!("cannot be read ({err})"))),
    }
}

/// The report of a lease document; `None` while it has no outcome.
pub fn report_of(lease: &Map<String, Value>, configured: bool) -> Option<OutcomeReport> {
    let lease = Lease::parse(&serde_json::to_vec(lease).ok()?)?;
    match lease.notification() {
        Notification::Nothing => None,
        Notification::Delivered { at } => {
            Some(OutcomeReport { state: ReportState::Delivered, at: Some(at), attempts: 0, next_at: None })
        }
        Notification::Pending { attempts, next_at } => Some(OutcomeReport {
            state: if configured { ReportState::Pending } else { ReportState::Off },
            at: None,
            attempts,
            next_at: next_at.filter(|_| configured).map(time::format_iso),
        }),
    }
}

/// The report of `name`'s lease file, for `ls`.
pub fn report_of_name(paths: &Paths, name: &str, configured: bool) -> Option<OutcomeReport> {
    let name = SessionName::parse(name).ok()?;
    let LeaseState::Present(lease) = lease::LeaseDir::new(paths.lease_dir()).read(&name) else { return None };
    report_of(lease.raw(), configured)
}

/// The text cell of `leases`: `-`, `delivered`, `pending`, `retry <time>` or `off`.
pub fn cell(report: Option<&OutcomeReport>) -> String {
    match report {
        None => "-".to_owned(),
        Some(OutcomeReport { state: ReportState::Delivered, .. }) => "delivered".to_owned(),
        Some(OutcomeReport { state: ReportState::Off, .. }) => "off".to_owned(),
        Some(OutcomeReport { state: ReportState::Pending, next_at: Some(at), .. }) => format!("retry {at}"),
        Some(OutcomeReport { state: ReportState::Pending, .. }) => "pending".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn states_from_the_lease_and_the_marker() {
        assert_eq!(report_of(&map(json!({"outcome": null})), true), None);
        let died = map(json!({"outcome": "died:1", "notify": {"attempts": 2, "nextAt": "2026-11-29T10:00:00Z"}}));
        let pending = report_of(&died, true).unwrap();
        assert_eq!((pending.state, pending.attempts), (ReportState::Pending, 2));
        assert_eq!(cell(Some(&pending)), "retry 2026-11-29T10:00:00Z");
        assert_eq!(report_of(&died, false).unwrap().state, ReportState::Off, "no notifier: not configured");
        let done = map(json!({"outcome": "vanished", "notifiedAt": "2026-11-29T10:00:05Z"}));
        assert_eq!(report_of(&done, false).unwrap().at.as_deref(), Some("2026-11-29T10:00:05Z"));
        assert_eq!(cell(report_of(&map(json!({"outcome": "stopped"})), true).as_ref()), "pending");
        assert_eq!(cell(None), "-");
    }

    #[test]
    fn the_marker_is_on_off_or_unknown() {
        let home = tempfile::tempdir().unwrap();
        let paths = Paths::for_root(home.path(), "agent");
        assert_eq!(configured(&paths), Ok(false), "no state directory: no notifier");
        let marker = lease::on_outcome_marker(paths.state_dir());
        std::fs::create_dir_all(&marker).unwrap();
        let err = configured(&paths).unwrap_err();
        assert_eq!(err.to_string(), format!("{} is not a regular file", marker.display()));
        std::fs::remove_dir(&marker).unwrap();
        std::fs::write(&marker, b"{}").unwrap();
        assert_eq!(configured(&paths), Ok(true));
        std::fs::remove_dir_all(paths.state_dir()).unwrap();
        std::fs::write(paths.state_dir(), b"").unwrap();
        let err = configured(&paths).unwrap_err();
        assert!(err.problem.starts_with("cannot be read ("), "a state directory that is a file: {err}");
    }
}
