//! The supervisor's side file `session/<name>.json` (30-supervisor §11): one compact line; a key is present only
//! when it has a value.

use serde::{Deserialize, Serialize};

/// What the supervisor remembers about a session's launch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SideFile {
    /// The life token of the entry this file belongs to (issue 17): a file of another life says nothing about the
    /// entry now listed under the name. Absent in files of older supervisors, which belong to whatever life.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub life: Option<String>,
    /// The `AGENT_BOX_SESSION_ID` of the pane the supervisor started (a UUID).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub launch_session_id: Option<String>,
    /// The lease gen the pane was started with.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub lease_gen: Option<String>,
    /// The end of a crash-loop backoff, `YYYY-MM-DDTHH:MM:SSZ`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub backoff_until: Option<String>,
    /// Quick exits in a row.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub quick_exits: Option<u64>,
    /// The harness the entry names could not be found (L6), so the session cannot start (issue 11: `ls` shows
    /// `starting, harness 'X' not installed`); dropped by the next successful spawn.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub harness_missing: Option<String>,
}
