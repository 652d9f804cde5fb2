//! The durable intake queue (issue 24, docs/intake.md): every batch `agent-box-webhook-spawn` acknowledges with
//! exit 0 is on disk, as a session admitted at once or as a record under `~/.local/state/agent-box/queue/`
//! that the supervisor admits, oldest first, when a slot frees. A redelivered batch is acknowledged once, a batch
//! for an assignment already waiting is appended to it, and nothing leaves the queue without an end record.
//!
//! The steps are library functions both programs call inside their registry-lock section: [`accept::accept`]
//! (webhook-spawn) and [`admit::admit_next`] (the supervisor, and webhook-spawn for the record it just queued
//! when nothing waits before it). What a session is made of (its name, claim filter, kickoff prompt) lives here
//! too, moved from webhook-spawn so that both programs build it the same way (60-webhook-spawn §4–§7).

pub mod accept;
pub mod admit;
pub mod bounds;
pub mod claim;
pub mod end;
pub mod error;
pub mod key;
pub mod marker;
pub mod name;
pub mod owner;
pub mod predicate;
pub mod prompt;
pub mod prose;
pub mod queue;
pub mod session;

pub use accept::{Accepted, Incoming, accept};
pub use admit::{Admission, Site, admit_next};
pub use bounds::Bounds;
pub use error::IntakeError;
pub use queue::{Queue, RecordId};
