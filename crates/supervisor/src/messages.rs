//! Log lines of the supervisor that issues 17 and 20 added; one function per line, so the wording lives in one place.

use std::path::Path;

use base::SessionName;

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
