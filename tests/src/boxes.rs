//! Several boxes on one machine (issue 26, docs/boxes.md): each a box slot sandbox (its own home, tmux server,
//! supervisor and baked epilogue) sharing the claims database of one real PostgreSQL server the harness started,
//! with the password in its env store (BX-1), never on a command line. Used by the e2e tests, the boxes burst and
//! the chaos run across boxes.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use crate::postgres::{PASSWORD, Postgres, ROLE};
use crate::sandbox::Sandbox;

/// A server, or `None` after a SKIP line naming what would enable it (`what` says which check skipped).
pub fn server(what: &str) -> Option<Postgres> {
    match Postgres::start() {
        Ok(server) => Some(server),
        Err(why) => {
            eprintln!("SKIP: {what}: {why}");
            None
        }
    }
}

/// Box slot `k`, labelled `label`, with `slots` session slots and claim term `term_secs`, sharing `server`'s
/// claims database; its default agent the harness's fake one.
pub fn a_box(server: &Postgres, k: usize, label: &str, slots: usize, term_secs: u64) -> Sandbox {
    let mut sb = Sandbox::in_box_slot(k);
    sb.set_env("AGENT_BOX_CLAIMS", server.connection(ROLE));
    sb.set_env("AGENT_BOX_HOST_LABEL", label);
    sb.set_env("AGENT_BOX_CLAIM_TERM", term_secs.to_string());
    sb.set_env("AGENT_BOX_DEFAULT_AGENT", "tool");
    sb.set_limit(&slots.to_string());
    fs::create_dir_all(sb.home().join(".local/state/local-webhook")).unwrap();
    let store = sb.home().join(".config/agent-box/env");
    fs::create_dir_all(store.parent().unwrap()).unwrap();
    fs::write(&store, format!("PGPASSWORD={PASSWORD}\n")).unwrap();
    fs::set_permissions(&store, fs::Permissions::from_mode(0o600)).unwrap();
    sb
}

/// Every claim row as `assignment box done` lines, for a failure's dump.
pub fn claims_table(server: &Postgres) -> String {
    server
        .sql(ROLE, "SELECT assignment || ' ' || box || ' ' || (done_at IS NOT NULL) FROM agent_box_claims ORDER BY 1")
        .unwrap_or_else(|err| format!("(the claims table could not be read: {err})"))
}
