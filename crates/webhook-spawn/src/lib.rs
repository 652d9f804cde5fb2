//! agent-box-webhook-spawn as a library (60-webhook-spawn): one dispatched event batch becomes one ephemeral
//! `hook-*` session with its claim filter, lease and hook-log line, all in one registry-lock section. It reads the
//! box through crate `view` (the context, the peers report) like the session CLI does; a spawn collects what it
//! has to say in an [`out::Out`] and fails with an [`error::SpawnError`], and only `main` prints.
//!
//! Choices where the specification is silent or disagrees with itself:
//! - The refusal record carries `live`/`max` only for a capacity refusal and null for every other cause, as
//!   20-lease LS-9.3 says (60 §8.4 mentions a best-effort snapshot; the lease spec owns the record).
//! - An empty `LOCAL_WEBHOOK_SPAWN_KEY` reads like an unset one: the name uses `event`, no claim, no W15.

pub mod cli;
pub mod error;
#[doc(hidden)]
pub mod fuzz;
pub mod inputs;
pub mod messages;
pub mod out;
pub mod preamble;
pub mod spawn;

// Moved to the intake crate (issue 24), which the supervisor's admission shares; kept under their old paths.
pub use intake::{claim, name, prompt, prose};
