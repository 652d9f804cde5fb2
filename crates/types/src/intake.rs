//! The intake queue's documents (docs/intake.md): a queued record (one accepted assignment whose events wait for a
//! slot), a tombstone (a key whose record left the queue), and the hook-log lines of the intake.

use serde::{Deserialize, Serialize};

/// The text of a record's `//` key.
pub const RECORD_NOTE: &str = "agent-box intake record: this box accepted the events below (webhook-spawn exit 0) and starts one session for them when a slot frees; see docs/intake.md";

/// One queued (or, under `ended/`, expired) assignment: everything the admission needs, so the supervisor
/// starts the session with what webhook-spawn resolved when it accepted the first batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    #[serde(rename = "//")]
    pub note_text: String,
    pub version: u32,
    /// The record's own key: the first batch's first key (a delivery id, or `sha256:<hex>` of its inputs).
    pub key: String,
    /// What batches coalesce by: `<source>:<routing key>#<object>`, or `key:<key>` when there is no object.
    pub assignment: String,
    pub source: String,
    /// `LOCAL_WEBHOOK_SPAWN_KEY` as text (lossy), the repository of the hook entry and the topic's key.
    pub routing_key: String,
    /// The session name's stem, sanitised from the key's raw bytes when the batch was accepted (60 §5).
    pub name_stem: String,
    /// The matched watch topic and its note (`LOCAL_WEBHOOK_SPAWN_TOPIC`, `…_NOTE`).
    pub topic: String,
    pub note: String,
    /// The issue or PR number (canonical digits), else the commit sha, else null.
    pub object: Option<String>,
    pub harness: String,
    pub args: Vec<String>,
    /// The claim seed is on (60 §4 step 3): the session gets a filter, a lease and a spawn record.
    pub seed: bool,
    /// Where the session's claim filter goes, and the user part of its name.
    pub filter_dir: String,
    pub user: String,
    pub accepted_at: String,
    /// The accepted batches, oldest first; coalescing appends.
    pub batches: Vec<Batch>,
    /// Set only on an ended record kept under `ended/` (`expired`): what became of it, and when.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub outcome: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ended_at: Option<String>,
    /// Issue 21's delivery record, as on a lease (N-4, N-5).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub notified_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub notify: Option<serde_json::Value>,
    /// Issue 26 (docs/boxes.md BX-4): another box holds the claim of this assignment; the record waits for it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub elsewhere: Option<String>,
}

/// One accepted batch of a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Batch {
    /// Its keys: the delivery ids META names, or the digest of its inputs.
    pub keys: Vec<String>,
    pub at: String,
    /// `LOCAL_WEBHOOK_SPAWN_EVENT` and `…_COUNT`.
    pub event: String,
    pub count: Option<u64>,
    /// `LOCAL_WEBHOOK_SPAWN_META` as given (null when unset).
    pub meta: Option<String>,
    /// The batch text (60 §3.5: lossy UTF-8, no NUL, trailing line breaks removed).
    pub text: String,
}

/// What a key's record became; a tombstone keeps it for the redelivery window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum How {
    Admitted,
    Claimed,
    Expired,
    Removed,
    /// Issue 26: another box ran the assignment (its claim is done there).
    Elsewhere,
}

impl How {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Admitted => "admitted",
            Self::Claimed => "claimed",
            Self::Expired => "expired",
            Self::Removed => "removed",
            Self::Elsewhere => "elsewhere",
        }
    }
}

/// `queue/keys/<digest>.json`: a key whose record left the queue, kept 7 days after it was accepted plus the
/// queue's maximum age.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tombstone {
    pub key: String,
    pub assignment: String,
    pub how: How,
    pub at: String,
    pub accepted_at: String,
    /// The session it became (admitted) or the one that claims it (claimed).
    pub name: Option<String>,
}

/// The hook-log line of an intake step (`what: "intake"`): a batch `queued`, `coalesced` into a queued record,
/// acknowledged as a `duplicate`, or a record that left the queue without a session: `claimed`, `expired`,
/// `removed` (its end record). An admitted record's end is the `spawn` record, which carries its key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntakeLine {
    pub at: String,
    /// Always `"intake"`.
    pub what: String,
    pub how: String,
    pub key: String,
    pub assignment: String,
    pub topic: String,
    pub object: Option<String>,
    /// The batches of the record (for `queued`/`coalesced`: after this one).
    pub events: usize,
    /// Seconds since the record was accepted.
    pub waited_seconds: i64,
    /// `claimed`: the live session that claims the work; `duplicate`: what the key's record became.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub by: Option<String>,
}

/// One row of `agent-box-session queue --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueRow {
    /// 1 for the next record to be admitted; null for an ended row.
    pub position: Option<usize>,
    /// `queued`, `elsewhere` (another box holds its claim, issue 26) or `expired`.
    pub state: String,
    /// The box that holds the claim of a record waiting `elsewhere`.
    #[serde(rename = "box")]
    pub box_label: Option<String>,
    pub key: String,
    pub topic: String,
    pub assignment: String,
    pub object: Option<String>,
    pub events: usize,
    pub accepted_at: String,
    pub age_seconds: i64,
    /// When a queued record expires; when an ended one ended.
    pub expires_at: Option<String>,
    pub ended_at: Option<String>,
    /// The notifier's view of an ended row, as on a lease (N-8); null for queued rows.
    pub notification: Option<serde_json::Value>,
}

/// `agent-box-session queue --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueReport {
    pub version: u32,
    pub max_records: u64,
    pub max_age_seconds: u64,
    pub queued: usize,
    pub expired: usize,
    pub rows: Vec<QueueRow>,
}
