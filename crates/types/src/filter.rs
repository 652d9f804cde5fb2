//! The claim filter the webhook spawner seeds for a hook session (60-webhook-spawn §6.1), pretty-printed. The
//! session may change or replace it later; only the seed is ours.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The text of the filter's `//` key.
pub const NOTE: &str = "Seeded by agent-box-webhook-spawn when it started this session: the claim below stops standing watches from starting a second session for the same work. The session may change or replace this file.";

/// The whole filter file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilterSeed {
    #[serde(rename = "//")]
    pub note: String,
    pub enabled: bool,
    pub ttl_hours: u64,
    pub topics: Vec<SeededTopic>,
}

/// The one topic of a seed: the event's own topic, with the claim's predicate when there is one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeededTopic {
    pub topic: String,
    pub note: String,
    /// The predicate in the receiver's language; absent when the META was unusable (nothing is claimed).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub include: Option<Value>,
    pub ignore_senders: Vec<String>,
    pub renew_on_event: bool,
    pub subscribed_at: String,
    pub last_activity_at: String,
}
