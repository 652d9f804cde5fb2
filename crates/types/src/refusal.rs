//! The webhook spawner's refusal record `webhook-spawn-refused.json` (20-lease LS-9): a cumulative count of
//! deferred batches, pretty-printed.

use serde::{Deserialize, Serialize};

/// The text of the record's `//` key.
pub const NOTE: &str =
    "agent-box-webhook-spawn deferred a dispatched batch (exit 75); the receiver retries it. count is cumulative.";

/// The record after the latest deferred batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefusalRecord {
    #[serde(rename = "//")]
    pub note: String,
    pub at: String,
    pub first_at: String,
    pub count: u64,
    /// The refusing admission's figures for a capacity refusal; null for every other cause.
    pub live: Option<u64>,
    pub max: Option<u64>,
    pub deferred: bool,
    /// Present only when the batch named one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub topic: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub key: Option<String>,
    /// Why this batch was deferred (issue 18), the cause webhook-spawn printed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
}
