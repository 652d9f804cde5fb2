//! Log lines of the supervisor that issues 17, 20 and 21 added; one function per line, so the wording lives in one place.

use std::path::Path;

use registry::SessionName;

/// The locked pre-check found the entry changed since the tick document (issue 17 row 10).
pub fn changed_while_preparing(name: &SessionName) -> String {
    format!("'{name}' changed while its start was being prepared; preparing it again")
}

/// D12 found the operator's `restart` recorded on the lease: not a loss (issue 17 row 4).
pub fn restarted_by_operator(name: &SessionName) -> String {
    format!("'{name}' was restarted by the operator; its assignment goes on in a new pane, its lease open")
}

/// Issue 20: a spawn found no env store; panes start with the unit's variables only.
pub fn env_store_missing(path: &Path) -> String {
    format!("no env store at {}: sessions start without it (agent-box-session env set KEY adds one)", path.display())
}

/// Issue 20: the env store exists but cannot be read; panes start without it.
pub fn env_store_unreadable(err: &registry::envstore::StoreError) -> String {
    format!("the env store is not loaded: {err}; sessions start without it")
}

/// Issue 20: a store key names a variable the supervisor sets itself; the pane's own value wins.
pub fn env_store_override(path: &Path, key: &str) -> String {
    format!(
        "{} sets {key}, which agent-box sets itself (AGENT_BOX_*, the loader's _abx_* and the pane's own variables always win); \
         the store's value is not loaded",
        path.display()
    )
}

/// Issue 21 (N-9): the notifier exited 0 for an outcome and the lease records it.
pub fn outcome_delivered(name: &SessionName, outcome: &str, program: &str, failed_before: u64) -> String {
    let after = match failed_before {
        0 => String::new(),
        1 => " after 1 failed attempt".to_owned(),
        n => format!(" after {n} failed attempts"),
    };
    format!("reported the outcome of '{name}' ({outcome}) to {program}{after}")
}

/// Issue 21: the notifier exited 0, but the lease no longer carried that outcome (removed or revived meanwhile).
pub fn outcome_delivered_unrecorded(name: &SessionName, outcome: &str, program: &str) -> String {
    format!("reported the outcome of '{name}' ({outcome}) to {program}; its lease changed meanwhile, nothing recorded")
}

/// Issue 21 (N-9): the first failure of a streak; later ones are silent until a delivery.
pub fn outcome_not_delivered(name: &SessionName, outcome: &str, program: &str, reason: &str, next_at: i64) -> String {
    let at = registry::time::format_iso(next_at);
    format!(
        "could not report the outcome of '{name}' ({outcome}): {program} {reason}; retrying from {at}, backing off up to \
         10 minutes (agent-box-session leases shows it pending)"
    )
}

/// Issue 21 (N-8): the marker that tells `leases` outcomes are reported could not be written.
pub fn notify_marker_failed(path: &Path, err: &std::io::Error) -> String {
    format!("cannot write {} ({err}); agent-box-session leases will show outcomes as not reported", path.display())
}
