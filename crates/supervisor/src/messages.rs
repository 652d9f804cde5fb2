//! Log lines of the supervisor that issue 17 added; one function per line, so the wording lives in one place.

use registry::SessionName;

/// The locked pre-check found the entry changed since the tick document (issue 17 row 10).
pub fn changed_while_preparing(name: &SessionName) -> String {
    format!("'{name}' changed while its start was being prepared; preparing it again")
}

/// D12 found the operator's `restart` recorded on the lease: not a loss (issue 17 row 4).
pub fn restarted_by_operator(name: &SessionName) -> String {
    format!("'{name}' was restarted by the operator; its assignment goes on in a new pane, its lease open")
}
