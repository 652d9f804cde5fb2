//! The `--json` reports of `agent-box-session` (50-session-cli §12): `ls`, `peers`, `capacity`, `leases` and
//! `log`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How the registry read went (`registry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RegistryStatus {
    Ok,
    /// Missing or empty: no entries, nothing to warn about.
    Missing,
    /// Invalid or unreadable: no entries, and a warning.
    Unreadable,
}

/// Whether tmux answered (`ls`'s `tmux`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TmuxStatus {
    Ok,
    Unavailable,
}

/// A session's state in `ls` (§4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionState {
    Starting,
    Stopped,
    Live,
    Died,
    Unmanaged,
}

/// Whether a supervisor holds this registry's single-instance lock (`ls`'s `supervisor`, issue 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SupervisorStatus {
    Running,
    /// Nobody holds the lock: nothing is started or restarted.
    Stopped,
    /// The lock file could not be read.
    Unknown,
}

/// `ls --json` (§12.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LsReport {
    pub version: u32,
    pub registry: RegistryStatus,
    pub tmux: TmuxStatus,
    pub supervisor: SupervisorStatus,
    pub sessions: Vec<LsSession>,
    /// Issue 24: the intake queue; null when it could not be read (a warning says why).
    pub queue: Option<QueueCounts>,
}

/// How many batches wait in the intake queue and how many expired ones need a person (issue 24).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueCounts {
    pub queued: usize,
    pub expired: usize,
}

/// `log --json` (issue 11): the newest records of the hook log, oldest first, each as written; a line that is not
/// JSON is `{"raw": "<line>"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogReport {
    pub version: u32,
    pub records: Vec<Value>,
}

/// One row of `ls --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LsSession {
    pub name: String,
    pub harness: Option<String>,
    pub state: SessionState,
    pub listed: bool,
    pub stopped: bool,
    /// The registry's raw `died` value.
    pub died: Option<Value>,
    pub ephemeral: bool,
    pub origin: Option<String>,
    pub working_directory: Option<String>,
    pub unresolved: Option<String>,
    /// The side file's `backoffUntil`, verbatim, exactly when the text row shows the backoff.
    pub backoff_until: Option<String>,
    /// The harness the supervisor could not find, exactly when the text row says `harness 'X' not installed`.
    pub harness_missing: Option<String>,
    /// Issue 21: whether the lease's outcome was reported; null exactly when `unresolved` is.
    pub notification: Option<OutcomeReport>,
}

/// Whether a live session was started by a dispatch (`hook-*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PeerKind {
    Interactive,
    Dispatched,
}

/// `peers --json` (§12.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeersReport {
    pub version: u32,
    /// The caller's own session, left out of `sessions`.
    #[serde(rename = "self")]
    pub me: Option<String>,
    pub registry: RegistryStatus,
    pub sessions: Vec<Peer>,
    /// Issue 24: the intake queue; null when it could not be read.
    pub queue: Option<QueueCounts>,
}

/// One live session of `peers --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Peer {
    pub name: String,
    pub kind: PeerKind,
    pub listed: bool,
    pub harness: Option<String>,
    pub working_directory: Option<String>,
    /// The registry's raw `died` value.
    pub died: Option<Value>,
    pub unresolved: Option<String>,
    pub claims: Claims,
}

/// How a session's webhook filter file was found (`claims.filter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FilterStatus {
    Ok,
    /// Absent, 0 bytes, or the name cannot have one.
    Missing,
    /// Unreadable, not JSON, or not an object.
    Unreadable,
}

/// What a session claims, as its filter file states it (50-session-cli §5.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub filter: FilterStatus,
    /// False for a missing or unreadable filter and for `.enabled == false`.
    pub enabled: bool,
    /// Empty unless enabled: a disabled filter claims nothing and listens to nothing.
    pub topics: Vec<Topic>,
}

/// One object entry of the filter's `topics`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topic {
    /// The raw topic.
    pub topic: Option<String>,
    /// True when the entry has a predicate (`include`), which makes it a claim.
    pub claim: bool,
    /// The note, folded to one line and cut to 200 characters.
    pub note: Option<String>,
}

/// `capacity --json` (§12.4); every name list is sorted (byte order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapacityReport {
    pub version: u32,
    pub used: u64,
    pub max: u64,
    pub free: u64,
    pub live: Vec<String>,
    pub counted: Vec<String>,
    pub died: Vec<String>,
    /// Issue 24: batches waiting in the intake queue for a slot; null when the queue could not be read.
    pub queued: Option<usize>,
}

/// `leases --json` (§12.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeasesReport {
    pub version: u32,
    pub leases: Vec<LeaseRow>,
}

/// One lease file; its fields carry the file's raw values (null when absent or when the file is unreadable).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseRow {
    pub name: String,
    pub readable: bool,
    pub topic: Value,
    pub object: Value,
    pub claimed_at: Value,
    pub outcome: Value,
    pub ended_at: Value,
    pub last_seen_at: Value,
    /// The gen when it is a string (`gen` is a keyword in Rust 2024).
    #[serde(rename = "gen")]
    pub lease_gen: Option<String>,
    pub listed: bool,
    pub unresolved: bool,
    /// Issue 21: null while the lease has no outcome.
    pub notification: Option<OutcomeReport>,
}

/// Whether a lease's outcome was reported to the operator's notifier (issue 21, docs/notification.md N-8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReportState {
    /// The notifier exited 0 for this outcome.
    Delivered,
    /// Not yet delivered; the supervisor tries again at `nextAt` (null: at its next tick).
    Pending,
    /// No supervisor with `AGENT_BOX_ON_OUTCOME` has run on this box since it was last started without one.
    Off,
}

/// `notification` of a lease with an outcome in `leases --json` and `ls --json`; every key always present.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutcomeReport {
    pub state: ReportState,
    /// `notifiedAt` of a delivered outcome.
    pub at: Option<String>,
    /// Failed attempts so far.
    pub attempts: u64,
    /// When a pending outcome is tried next, as the lease records it.
    pub next_at: Option<String>,
}
