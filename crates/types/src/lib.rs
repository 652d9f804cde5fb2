//! The JSON documents the agent-box programs own and emit, as types: the `--json` reports of the session listings,
//! the hook-log lines, the supervisor's side file, and the webhook spawner's claim-filter seed and refusal record.
//! Programs serialize these; tests and the golden renderer deserialize into them. (The bench report is the bench's
//! own, in `bench/`: no product emits it.)
//!
//! Rules every type here keeps, because readers match on them:
//! - Field order is key order: serde writes fields in declaration order, so reordering fields changes the
//!   documents (golden/ pins their bytes).
//! - An `Option` field is written as `null`, never left out, unless it carries `skip_serializing_if` because
//!   its document defines an absent key (the side file, the refusal record's `topic`/`key`, the filter's
//!   `include`).
//! - Values the programs pass through from files other programs write (a registry's `died`, a lease's fields)
//!   stay `serde_json::Value`, so they come out exactly as they were read.
//! - Adding a field keeps [`VERSION`]; renaming, removing or retyping one raises it (50-session-cli §12.1).
//!
//! The registry and lease files are not here: they keep the order-preserving `Value` model of the registry and
//! lease crates, because other programs write keys into them that we must carry over unread.

pub mod filter;
pub mod hooklog;
pub mod intake;
pub mod refusal;
pub mod report;
pub mod side;

/// The `"version"` of every versioned report.
pub const VERSION: u32 = 1;

/// `value` as a document: pretty-printed with two-space indentation and exactly one trailing newline
/// (50-session-cli §12.1; also the claim filter and the refusal record).
pub fn pretty(value: &impl serde::Serialize) -> Result<String, serde_json::Error> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    Ok(text)
}

/// `value` as one compact line with a trailing newline (the side file, a hook-log line).
pub fn line(value: &impl serde::Serialize) -> Result<Vec<u8>, serde_json::Error> {
    let mut bytes = serde_json::to_vec(value)?;
    bytes.push(b'\n');
    Ok(bytes)
}
