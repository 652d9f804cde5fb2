//! agent-box-supervisor as a library: configuration, side files, harness launch and the reconcile loop.
//! The binary in `main.rs` is a thin front over it.
//!
//! Choices where the specification is silent:
//! - Claim-filter temps (`filter.<user>-<name>.json.tmp-XXXXXXXX`) are swept with the registry temps, under the
//!   registry lock: webhook-spawn writes the filter inside its registry-lock section, so one a lock holder can see
//!   was left by a killed spawner.
//! - A first start (an entry never launched) begins a new backoff record: nothing of an earlier life of the
//!   same name carries over.
//! - `new-session` answering "duplicate session" logs nothing: the pane appeared between the snapshot and the
//!   spawn, and the next tick sees it running.
//! - A supervisor killed between `new-session` and the side-file record (SUP-7.1 steps 5 and 7) leaves a live
//!   pane nothing says was launched. The first tick of the next supervisor adopts such panes (`adopt.rs`, proposed
//!   as 30 §2 step 6a and line L20), so a later kill of one is D12 (`vanished`), not a first spawn.

mod adopt;
pub mod backoff;
pub mod cli;
pub mod config;
pub mod decide;
pub mod launch;
pub mod log;
pub mod print;
pub mod run;
pub mod side;
mod spawn;
pub mod supervisor;
mod sweep;
mod wake;

pub use supervisor::Supervisor;
