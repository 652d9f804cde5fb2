//! The lines of the hook log `hook-sessions.jsonl` (20-lease LS-8): one compact JSON object per line, a `spawn`
//! when webhook-spawn starts a hook session and an `end` when one ends.

use serde::{Deserialize, Serialize};

/// The kind of a line (`what`), second after `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum What {
    Spawn,
    End,
    /// An operator's `restart` of a leased hook session (issue 17): the assignment goes on in a new pane.
    Restart,
}

/// A `spawn` line, written only by webhook-spawn (LS-8.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpawnLine {
    pub at: String,
    /// Always [`What::Spawn`].
    pub what: What,
    pub name: String,
    pub topic: String,
    pub event: String,
    /// The issue or PR number: digits only, else null.
    pub object: Option<String>,
    pub count: Option<u64>,
    /// Issue 24: the key of the intake record the session was admitted from; absent on records of older writers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intake: Option<String>,
    /// Issue 26: the box that holds the assignment's claim (only with a claims database).
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "box")]
    pub box_label: Option<String>,
}

/// An `end` line (LS-8.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndLine {
    pub at: String,
    /// Always [`What::End`].
    pub what: What,
    pub name: String,
    /// `exited`, `died:N`, `rm`, `reaped`, `swept`, …
    pub how: String,
    /// Seconds since the lease's `claimedAt`; null without a lease or with a claim in the future.
    pub life_seconds: Option<i64>,
    /// The lease's outcome at the end.
    pub outcome: Option<String>,
    /// Issue 21: present only when this end deletes a lease that carried an outcome (not on `died:N`, written with
    /// the outcome): whether the notifier had been told of it (N-7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notified: Option<bool>,
    /// Issue 26: present only on an `elsewhere` end: the box that holds the assignment's claim now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// A `restart` line (issue 17): written by `agent-box-session restart` before it ends the pane of a leased hook
/// session, so the audit tells an operator's restart from a loss; `outcome` is the lease's outcome before it
/// (null for a running assignment, `stopped` for one the restart revives).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestartLine {
    pub at: String,
    /// Always [`What::Restart`].
    pub what: What,
    pub name: String,
    pub outcome: Option<String>,
}
